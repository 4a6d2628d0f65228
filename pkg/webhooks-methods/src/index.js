// @strata/webhooks-methods for every runtime: the HMAC comes from WebCrypto
// where the runtime has it, else from WebAssembly. (Node resolves the "node"
// condition to node.js, which hashes with node:crypto.)
import { webCryptoPlatform } from "../../shared/webcrypto.js";
import { methodsApi } from "./api.js";

/** `sign(secret, payload)`: `sha256=<hex>`; `verify(secret, payload, signature)`; `verifyWithFallback(…, additionalSecrets)`. */
export const { sign, verify, verifyWithFallback } = methodsApi(webCryptoPlatform());
