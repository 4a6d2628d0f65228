// sign / verify / verifyWithFallback with @octokit/webhooks-methods' argument
// checks, shared by @strata/webhooks-methods and @strata/webhooks (bundled
// into each). The signature rules are strata_core::webhooks::signature: the
// header format, strict parsing, constant-time comparison. The HMAC itself is
// computed either in WebAssembly (every runtime) or, in the Node build, by
// the platform's native HMAC, whose 32-byte digest core then formats or
// checks (BENCHMARKS.md has both measured).

import { wireStrings } from "./wire.js";

const encoder = new TextEncoder();

/**
 * `wasm()` returns the bindings; `tag` prefixes error messages;
 * `nativeHmac(secret, payload)`, when given, returns the digest bytes.
 */
export function createMethods({ wasm, tag, nativeHmac }) {
  function checkVerifyArguments(secret, eventPayload, signature) {
    if (!secret || !eventPayload || !signature) {
      throw new TypeError(`${tag} secret, eventPayload & signature required`);
    }
    if (typeof eventPayload !== "string") {
      throw new TypeError(`${tag} eventPayload must be a string`);
    }
  }

  function matches(secret, payload, signature) {
    if (nativeHmac) return wasm().webhooks_digest_matches(nativeHmac(String(secret), payload), String(signature));
    return wasm().webhooks_verify(String(secret), encoder.encode(payload), String(signature));
  }

  async function sign(secret, payload) {
    if (!secret || !payload) throw new TypeError(`${tag} secret & payload required for sign()`);
    if (typeof payload !== "string") throw new TypeError(`${tag} payload must be a string`);
    if (nativeHmac) return wasm().webhooks_format_digest(nativeHmac(String(secret), payload));
    return wasm().webhooks_sign(String(secret), encoder.encode(payload));
  }

  async function verify(secret, eventPayload, signature) {
    checkVerifyArguments(secret, eventPayload, signature);
    return matches(secret, eventPayload, signature);
  }

  async function verifyWithFallback(secret, payload, signature, additionalSecrets) {
    checkVerifyArguments(secret, payload, signature);
    const additional = additionalSecrets === undefined ? [] : Array.from(additionalSecrets);
    const wellFormed = additional.every((candidate) => candidate && typeof candidate === "string");
    if (wellFormed && !nativeHmac) {
      return wasm().webhooks_verify_with_fallback(String(secret), encoder.encode(payload), String(signature), wireStrings(additional));
    }
    // One secret at a time, in core's order (the secret, then the additional
    // ones): with native hashing, or when an entry is empty or not a string
    // (upstream throws its TypeError only when it reaches that entry).
    if (matches(secret, payload, signature)) return true;
    for (const candidate of additional) {
      if (await verify(candidate, payload, signature)) return true;
    }
    return false;
  }

  return { sign, verify, verifyWithFallback };
}
