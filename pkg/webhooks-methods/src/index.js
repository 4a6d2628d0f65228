// @strata/webhooks-methods: the exact API of @octokit/webhooks-methods over
// strata_core::webhooks::signature compiled to WebAssembly. The signature
// rules (format, constant-time comparison, malformed means false, fallback
// order) are core's; this file checks arguments like upstream and makes the
// functions asynchronous like upstream.

import { VERSION } from "../build/version.js";
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

/** `sha256=<hex>` of `payload` with `secret`. */
export async function sign(secret, payload) {
  if (!secret || !payload) {
    throw new TypeError(`${PREFIX} secret & payload required for sign()`);
  }
  if (typeof payload !== "string") {
    throw new TypeError(`${PREFIX} payload must be a string`);
  }
  return wasm().webhooks_sign(String(secret), encoder.encode(payload));
}
sign.VERSION = VERSION;

/** Whether `signature` is `eventPayload`'s signature with `secret`. */
export async function verify(secret, eventPayload, signature) {
  checkVerifyArguments(secret, eventPayload, signature);
  return wasm().webhooks_verify(String(secret), encoder.encode(eventPayload), String(signature));
}
verify.VERSION = VERSION;

/** `verify` with `secret`, then with each of `additionalSecrets` in order. */
export async function verifyWithFallback(secret, payload, signature, additionalSecrets) {
  checkVerifyArguments(secret, payload, signature);
  const additional = additionalSecrets === undefined ? [] : Array.from(additionalSecrets);
  if (additional.every((candidate) => candidate && typeof candidate === "string")) {
    return wasm().webhooks_verify_with_fallback(String(secret), encoder.encode(payload), String(signature), wireList(additional));
  }
  // An empty or non-string secret in the list: check one at a time, so the
  // TypeError comes exactly when upstream's would (after earlier secrets).
  if (await verify(secret, payload, signature)) return true;
  for (const candidate of additional) {
    if (await verify(candidate, payload, signature)) return true;
  }
  return false;
}
