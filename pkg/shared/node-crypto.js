// The Node builds' platform hashing (see ./methods.js): node:crypto's HMAC,
// hex encoding and constant-time comparison.
import { createHmac, createSecretKey, timingSafeEqual } from "node:crypto";

/** Key objects by secret, most recent last: a KeyObject spares createHmac converting the secret on every call. */
const MAX_KEYS = 16;
const keys = new Map();

function key(secret) {
  let keyObject = keys.get(secret);
  if (keyObject === undefined) {
    keyObject = createSecretKey(Buffer.from(secret, "utf8"));
    if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value);
    keys.set(secret, keyObject);
  }
  return keyObject;
}

export const nodeCryptoPlatform = {
  hex: (secret, payload) => createHmac("sha256", key(secret)).update(payload).digest("hex"),
  /** Constant time for strings of one length; different lengths are simply unequal. */
  equal(given, expected) {
    const a = Buffer.from(given);
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  },
};
