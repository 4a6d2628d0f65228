// sign/verify with the same argument checks as @strata/webhooks-methods; the
// signature rules are strata_core::webhooks::signature.
import { wasm } from "./wasm.js";

const encoder = new TextEncoder();
const PREFIX = "[@strata/webhooks-methods]";

function wireList(list) {
  let out = "l" + list.length + ":";
  for (const item of list) out += "s" + item.length + ":" + item;
  return out;
}

function checkVerifyArguments(secret, eventPayload, signature) {
  if (!secret || !eventPayload || !signature) {
    throw new TypeError(`${PREFIX} secret, eventPayload & signature required`);
  }
  if (typeof eventPayload !== "string") {
    throw new TypeError(`${PREFIX} eventPayload must be a string`);
  }
}

export async function sign(secret, payload) {
  if (!secret || !payload) throw new TypeError(`${PREFIX} secret & payload required for sign()`);
  if (typeof payload !== "string") throw new TypeError(`${PREFIX} payload must be a string`);
  return wasm().webhooks_sign(String(secret), encoder.encode(payload));
}

export async function verify(secret, eventPayload, signature) {
  checkVerifyArguments(secret, eventPayload, signature);
  return wasm().webhooks_verify(String(secret), encoder.encode(eventPayload), String(signature));
}

export async function verifyWithFallback(secret, payload, signature, additionalSecrets) {
  checkVerifyArguments(secret, payload, signature);
  const additional = additionalSecrets === undefined ? [] : Array.from(additionalSecrets);
  if (additional.every((candidate) => candidate && typeof candidate === "string")) {
    return wasm().webhooks_verify_with_fallback(String(secret), encoder.encode(payload), String(signature), wireList(additional));
  }
  if (await verify(secret, payload, signature)) return true;
  for (const candidate of additional) {
    if (await verify(candidate, payload, signature)) return true;
  }
  return false;
}
