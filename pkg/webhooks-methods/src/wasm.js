// The WebAssembly of this package (see ../../shared/loader.js). Named
// imports, so the bundler drops the glue this package does not call.
import {
  __wbg_reset_state,
  initSync,
  strata_take_panic,
  webhooks_digest_matches,
  webhooks_format_digest,
  webhooks_signature_prefix,
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
  name: "@strata/webhooks-methods",
  bindings: { webhooks_digest_matches, webhooks_format_digest, webhooks_signature_prefix, webhooks_sign, webhooks_verify, webhooks_verify_with_fallback, strata_test_panic },
});
