// The package's functions, over ../../shared/methods.js; index.js (universal)
// and node.js (native HMAC) differ only in `nativeHmac`.
import { createMethods } from "../../shared/methods.js";
import { VERSION } from "../build/version.js";
import { wasm } from "./wasm.js";

export function methodsApi(nativeHmac) {
  const { sign, verify, verifyWithFallback } = createMethods({ wasm, tag: "[@strata/webhooks-methods]", nativeHmac });
  sign.VERSION = VERSION;
  verify.VERSION = VERSION;
  /** Test hook of the reliability tests: makes the WebAssembly panic on purpose. */
  const __testPanic = (message) => wasm().strata_test_panic(String(message));
  return { sign, verify, verifyWithFallback, __testPanic };
}
