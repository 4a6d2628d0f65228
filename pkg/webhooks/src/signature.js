// sign/verify for the Webhooks class and verifyAndReceive, the same code as
// @strata/webhooks-methods (../../shared/methods.js): WebCrypto where the
// runtime has it, else WebAssembly; node.js switches to node:crypto.
import { createMethods } from "../../shared/methods.js";
import { webCryptoPlatform } from "../../shared/webcrypto.js";
import { wasm } from "./wasm.js";

const TAG = "[@strata/webhooks-methods]";
let methods = createMethods({ wasm, tag: TAG, platform: webCryptoPlatform() });

/** Hash with node:crypto from now on (the Node build calls this). */
export function useNodeCrypto(platform) {
  methods = createMethods({ wasm, tag: TAG, platform });
}

export const sign = (secret, payload) => methods.sign(secret, payload);
export const verify = (secret, eventPayload, signature) => methods.verify(secret, eventPayload, signature);
export const verifyWithFallback = (secret, payload, signature, additional) => methods.verifyWithFallback(secret, payload, signature, additional);
