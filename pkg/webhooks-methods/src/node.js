// @strata/webhooks-methods for Node (the "node" export condition): the HMAC
// is Node's native one; formatting and checking the header value stay core's.
import { createHmac } from "node:crypto";

import { createMethods } from "../../shared/methods.js";
import { VERSION } from "../build/version.js";
import { wasm } from "./wasm.js";

const methods = createMethods({
  wasm,
  tag: "[@strata/webhooks-methods]",
  nativeHmac: (secret, payload) => createHmac("sha256", secret).update(payload).digest(),
});

/** `sha256=<hex>` of `payload` with `secret`. */
export const sign = methods.sign;
/** Whether `signature` is `eventPayload`'s signature with `secret`. */
export const verify = methods.verify;
/** `verify` with `secret`, then with each of `additionalSecrets` in order. */
export const verifyWithFallback = methods.verifyWithFallback;
sign.VERSION = VERSION;
verify.VERSION = VERSION;

/** Test hook of the reliability tests: makes the WebAssembly panic on purpose. */
export function __testPanic(message) {
  return wasm().strata_test_panic(String(message));
}
