// The WebAssembly of this package (see ../../shared/loader.js). Named
// imports, so the bundler drops the glue this package does not call.
import {
  EventNameCheck,
  ReplyKind,
  RouteKind,
  __wbg_reset_state,
  initSync,
  strata_take_panic,
  webhooks_digest_matches,
  webhooks_format_digest,
  webhooks_signature_prefix,
  webhooks_listener_keys,
  webhooks_normalize_trailing_slashes,
  webhooks_check_event_name,
  webhooks_event_name_message,
  webhooks_reply,
  webhooks_route,
  webhooks_route_reply,
  webhooks_sign,
  webhooks_verify,
  webhooks_verify_with_fallback,
  strata_test_panic,
} from "../build/strata_wasm.js";
import { WASM_TEXT } from "../build/wasm-text.js";
import { createLoader } from "../../shared/loader.js";

export const { wasm } = createLoader({
  glue: { initSync, __wbg_reset_state, strata_take_panic },
  text: WASM_TEXT,
  name: "@strata/webhooks",
  bindings: { webhooks_digest_matches, webhooks_format_digest, webhooks_signature_prefix, webhooks_listener_keys, webhooks_normalize_trailing_slashes, webhooks_reply, webhooks_route, webhooks_route_reply, webhooks_sign, webhooks_check_event_name, webhooks_event_name_message, webhooks_verify, webhooks_verify_with_fallback, strata_test_panic },
});

// The kinds that cross the boundary, as wasm-bindgen exports them (frozen
// objects numbered from 1; the Rust side refuses any other number).
export { EventNameCheck, ReplyKind, RouteKind };
