// Loads the WebAssembly synchronously, on first use, from bytes embedded in
// the bundle: no fetch, no top-level await, no bundler needed.

import {
  __wbg_reset_state,
  initSync,
  strata_take_panic,
  strata_test_panic,
  webhooks_digest_matches,
  webhooks_format_digest,
  webhooks_listener_keys,
  webhooks_normalize_trailing_slashes,
  webhooks_reply,
  webhooks_route,
  webhooks_sign,
  webhooks_validate_event_name,
  webhooks_verify,
  webhooks_verify_with_fallback,
} from "../build/strata_wasm.js";
import { guardBindings } from "../../shared/guard.js";
import { decodeWasmText } from "../../shared/wasm-text.js";
import { WASM_TEXT } from "../build/wasm-text.js";

const bindings = guardBindings({
  webhooks_digest_matches,
  webhooks_format_digest,
  webhooks_listener_keys,
  webhooks_normalize_trailing_slashes,
  webhooks_reply,
  webhooks_route,
  webhooks_sign,
  webhooks_validate_event_name,
  webhooks_verify,
  webhooks_verify_with_fallback,
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

/** Reads `s<len>:<text>` items of the wire format (see wasm/src/wire.rs). */
export function readList(text) {
  const colon = text.indexOf(":");
  const count = Number(text.slice(1, colon));
  const list = [];
  let position = colon + 1;
  for (let i = 0; i < count; i++) {
    const lengthEnd = text.indexOf(":", position);
    const length = Number(text.slice(position + 1, lengthEnd));
    list.push(text.slice(lengthEnd + 1, lengthEnd + 1 + length));
    position = lengthEnd + 1 + length;
  }
  return list;
}
