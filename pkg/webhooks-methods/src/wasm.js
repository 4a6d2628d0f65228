// Loads the WebAssembly synchronously, on first use, from bytes embedded in
// the bundle: no fetch, no top-level await, no bundler needed.

import {
  initSync,
  webhooks_digest_matches,
  webhooks_format_digest,
  webhooks_sign,
  webhooks_verify,
  webhooks_verify_with_fallback,
} from "../build/strata_wasm.js";
import { decodeWasmText } from "../../shared/wasm-text.js";
import { WASM_TEXT } from "../build/wasm-text.js";

const bindings = { webhooks_digest_matches, webhooks_format_digest, webhooks_sign, webhooks_verify, webhooks_verify_with_fallback };
let ready = false;


/** The bindings, instantiated. */
export function wasm() {
  if (!ready) {
    initSync({ module: decodeWasmText(WASM_TEXT) });
    ready = true;
  }
  return bindings;
}
