// sign / verify / verifyWithFallback with @octokit/webhooks-methods' argument
// checks, shared by @strata/webhooks-methods and @strata/webhooks (bundled
// into each). The signature rules are strata_core::webhooks::signature: the
// header is core's prefix and the lowercase hex HMAC-SHA256 of the payload,
// parsed strictly and compared in constant time. Who computes the HMAC
// depends on the runtime (BENCHMARKS.md has each measured):
//   - no platform hashing: everything in WebAssembly (the fallback);
//   - `platform.digest` (WebCrypto, ./webcrypto.js): the platform's HMAC
//     digest, which core formats (`sign`) or checks (`verify`);
//   - `platform.hex` + `platform.equal` (node:crypto): the platform's
//     HMAC, hex encoding and constant-time comparison, with core's prefix.
//     A well-formed signature is exactly prefix + 64 lowercase hex digits,
//     so "equal, in constant time, to the expected header value" is core's
//     rule; the packages' tests check the Node build against core's own
//     sign/verify on generated payloads and malformed signatures.

import { wireStrings } from "./wire.js";

const encoder = new TextEncoder();

/**
 * `wasm()` returns the bindings; `tag` prefixes error messages; `platform`
 * (optional) hashes natively: `{ digest(secret, payload) }` returning a
 * promise of the 32 digest bytes (a refused one falls back to WebAssembly),
 * or `{ hex(secret, payload), equal(a, b) }` (see the top of this file).
 */
export function createMethods({ wasm, tag, platform }) {
  let prefix;
  const signaturePrefix = () => (prefix ??= wasm().webhooks_signature_prefix());

  function checkVerifyArguments(secret, eventPayload, signature) {
    if (!secret || !eventPayload || !signature) {
      throw new TypeError(`${tag} secret, eventPayload & signature required`);
    }
    if (typeof eventPayload !== "string") {
      throw new TypeError(`${tag} eventPayload must be a string`);
    }
  }

  /** Whether `signature` signs `payload` with `secret`: a boolean, or a promise of one. */
  function matches(secret, payload, signature) {
    if (platform?.hex) return platform.equal(String(signature), signaturePrefix() + platform.hex(String(secret), payload));
    const inWasm = () => wasm().webhooks_verify(String(secret), encoder.encode(payload), String(signature));
    if (platform) {
      return platform.digest(String(secret), payload).then((bytes) => wasm().webhooks_digest_matches(bytes, String(signature)), inWasm);
    }
    return inWasm();
  }

  async function sign(secret, payload) {
    if (!secret || !payload) throw new TypeError(`${tag} secret & payload required for sign()`);
    if (typeof payload !== "string") throw new TypeError(`${tag} payload must be a string`);
    if (platform?.hex) return signaturePrefix() + platform.hex(String(secret), payload);
    const bytes = platform && (await platform.digest(String(secret), payload).catch(() => undefined));
    if (bytes) return wasm().webhooks_format_digest(bytes);
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
    if (wellFormed && !platform) {
      return wasm().webhooks_verify_with_fallback(String(secret), encoder.encode(payload), String(signature), wireStrings(additional));
    }
    // One secret at a time, in core's order (the secret, then the additional
    // ones): with platform hashing, or when an entry is empty or not a string
    // (upstream throws its TypeError only when it reaches that entry).
    if (await matches(secret, payload, signature)) return true;
    for (const candidate of additional) {
      if (await verify(candidate, payload, signature)) return true;
    }
    return false;
  }

  return { sign, verify, verifyWithFallback };
}
