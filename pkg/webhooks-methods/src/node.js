// @strata/webhooks-methods for Node (the "node" export condition): the HMAC,
// its hex and the constant-time comparison are node:crypto's; the header's
// form is core's (../../shared/methods.js).
import { nodeCryptoPlatform } from "../../shared/node-crypto.js";
import { methodsApi } from "./api.js";

/** `sign(secret, payload)`: `sha256=<hex>`; `verify(secret, payload, signature)`; `verifyWithFallback(…, additionalSecrets)`. */
export const { sign, verify, verifyWithFallback } = methodsApi(nodeCryptoPlatform);
