// The WebAssembly of this package (see ../../shared/loader.js). Named
// imports, so the bundler drops the glue this package does not call.
import {
  __wbg_reset_state,
  initSync,
  strata_take_panic,
  endpoint_plan,
  endpoint_reset,
  endpoint_url,
  strata_test_panic,
} from "../build/strata_wasm.js";
import { WASM_TEXT } from "../build/wasm-text.js";
import { createLoader } from "../../shared/loader.js";

export const { wasm, onInstanceReset } = createLoader({
  glue: { initSync, __wbg_reset_state, strata_take_panic },
  text: WASM_TEXT,
  name: "@strata/endpoint",
  bindings: { endpoint_plan, endpoint_reset, endpoint_url, strata_test_panic },
});
