// sign/verify for the Webhooks class and verifyAndReceive, the same code as
// @strata/webhooks-methods (../../shared/methods.js). node.js switches the
// HMAC to Node's native one.
import { createMethods } from "../../shared/methods.js";
import { wasm } from "./wasm.js";

const TAG = "[@strata/webhooks-methods]";
let methods = createMethods({ wasm, tag: TAG });

/** Hash with the platform's HMAC from now on (the Node build calls this). */
export function useNativeHmac(nativeHmac) {
  methods = createMethods({ wasm, tag: TAG, nativeHmac });
}

export const sign = (secret, payload) => methods.sign(secret, payload);
export const verify = (secret, eventPayload, signature) => methods.verify(secret, eventPayload, signature);
export const verifyWithFallback = (secret, payload, signature, additional) => methods.verifyWithFallback(secret, payload, signature, additional);
