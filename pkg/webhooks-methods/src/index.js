// @strata/webhooks-methods for every runtime: the HMAC runs in WebAssembly.
// (Node resolves the "node" condition to node.js, which hashes natively.)
import { methodsApi } from "./api.js";

/** `sign(secret, payload)`: `sha256=<hex>`; `verify(secret, payload, signature)`; `verifyWithFallback(…, additionalSecrets)`. */
export const { sign, verify, verifyWithFallback, __testPanic } = methodsApi();
