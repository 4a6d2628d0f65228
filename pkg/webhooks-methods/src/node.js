// @strata/webhooks-methods for Node (the "node" export condition): the HMAC
// is Node's native one; formatting and checking the header value stay core's.
import { createHmac } from "node:crypto";

import { methodsApi } from "./api.js";

/** `sign(secret, payload)`: `sha256=<hex>`; `verify(secret, payload, signature)`; `verifyWithFallback(…, additionalSecrets)`. */
export const { sign, verify, verifyWithFallback, __testPanic } = methodsApi((secret, payload) =>
  createHmac("sha256", secret).update(payload).digest(),
);
