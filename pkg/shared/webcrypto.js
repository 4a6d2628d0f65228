// HMAC-SHA256 through WebCrypto (`crypto.subtle`), for the universal builds:
// browsers, Cloudflare Workers, Deno, Bun. Native code hashes large payloads
// several times faster than WebAssembly; core still formats and checks the
// header value (./methods.js). Where `crypto.subtle` is missing (a page
// served over plain http from another host, an old runtime) or refuses the
// key, the packages hash in WebAssembly instead.

const encoder = new TextEncoder();

/** Imported keys by secret, most recent last: importKey is the costly part of a short payload's HMAC. */
const MAX_KEYS = 16;

/** `{ digest(secret, payload) }` over WebCrypto, or undefined where there is none. */
export function webCryptoPlatform() {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle || typeof subtle.importKey !== "function" || typeof subtle.sign !== "function") return undefined;
  const keys = new Map();
  function key(secret) {
    let imported = keys.get(secret);
    if (imported === undefined) {
      imported = subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      // A refused import is not cached (the next call tries again).
      imported.catch(() => keys.delete(secret));
      if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value);
      keys.set(secret, imported);
    }
    return imported;
  }
  return {
    async digest(secret, payload) {
      return new Uint8Array(await subtle.sign("HMAC", await key(secret), encoder.encode(payload)));
    },
  };
}
