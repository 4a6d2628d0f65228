// The package's functions, over ../../shared/methods.js; index.js (universal:
// WebCrypto, else WebAssembly) and node.js (node:crypto) differ only in the
// platform hashing they hand in.
import { createMethods } from "../../shared/methods.js";
import { VERSION } from "../build/version.js";
import { wasm } from "./wasm.js";

export function methodsApi(platform) {
  const { sign, verify, verifyWithFallback } = createMethods({ wasm, tag: "[@strata/webhooks-methods]", platform });
  sign.VERSION = VERSION;
  verify.VERSION = VERSION;
  /** Test hook of the reliability tests: makes the WebAssembly panic on purpose. */
  return { sign, verify, verifyWithFallback };
}
