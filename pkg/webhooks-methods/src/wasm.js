// Loads the WebAssembly synchronously, on first use, from bytes embedded in
// the bundle: no fetch, no top-level await, no bundler needed.

import {
  initSync,
  webhooks_sign,
  webhooks_verify,
  webhooks_verify_with_fallback,
} from "../build/strata_wasm.js";
import { WASM_BASE64 } from "../build/wasm-base64.js";

const bindings = { webhooks_sign, webhooks_verify, webhooks_verify_with_fallback };
let ready = false;

function decodeBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The bindings, instantiated. */
export function wasm() {
  if (!ready) {
    initSync({ module: decodeBase64(WASM_BASE64) });
    ready = true;
  }
  return bindings;
}
