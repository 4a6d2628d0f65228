// Loads the WebAssembly synchronously, on first use, from bytes embedded in
// the bundle: no fetch, no top-level await, no bundler needed.

import { initSync, endpoint_plan, endpoint_reset, endpoint_url } from "../build/strata_wasm.js";
import { decodeWasmText } from "../../shared/wasm-text.js";
import { WASM_TEXT } from "../build/wasm-text.js";

const bindings = { endpoint_plan, endpoint_reset, endpoint_url };
let ready = false;


/** The bindings, instantiated. */
export function wasm() {
  if (!ready) {
    initSync({ module: decodeWasmText(WASM_TEXT) });
    ready = true;
  }
  return bindings;
}
