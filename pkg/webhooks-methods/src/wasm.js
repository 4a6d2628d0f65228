// Loads the WebAssembly synchronously, on first use, from bytes embedded in
// the bundle: no fetch, no top-level await, no bundler needed.

import {
  __wbg_reset_state,
  initSync,
  strata_take_panic,
  strata_test_panic,
  webhooks_digest_matches,
  webhooks_format_digest,
  webhooks_sign,
  webhooks_verify,
  webhooks_verify_with_fallback,
} from "../build/strata_wasm.js";
import { guardBindings } from "../../shared/guard.js";
import { decodeWasmText } from "../../shared/wasm-text.js";
import { WASM_TEXT } from "../build/wasm-text.js";

const bindings = guardBindings({ webhooks_digest_matches, webhooks_format_digest, webhooks_sign, webhooks_verify, webhooks_verify_with_fallback,
  strata_test_panic,
}, {
  takePanic: strata_take_panic,
  resetState: __wbg_reset_state,
  onReset: () => resetListeners.forEach((listener) => listener()),
});
const resetListeners = [];
let ready = false;

/** Runs `listener` whenever a panic replaced the instance (its state is gone). */
export function onInstanceReset(listener) {
  resetListeners.push(listener);
}

/** The bindings, instantiated. */
export function wasm() {
  if (!ready) {
    initSync({ module: decodeWasmText(WASM_TEXT) });
    ready = true;
  }
  return bindings;
}
