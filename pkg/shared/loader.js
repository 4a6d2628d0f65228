// The WebAssembly loader every package uses: synchronous instantiation on
// first use, from the bytes embedded in the bundle (no fetch, no top-level
// await, no bundler needed), with every binding guarded against panics.
import { guardBindings } from "./guard.js";
import { decodeWasmText } from "./wasm-text.js";

/**
 * `glue` is the wasm-bindgen module (its `initSync`, `__wbg_reset_state`,
 * `strata_take_panic`), `text` the embedded module, `bindings` the exports
 * the package calls, `name` the package's name.
 */
export function createLoader({ glue, text, bindings, name }) {
  const resetListeners = [];
  const guarded = guardBindings(bindings, {
    takePanic: glue.strata_take_panic,
    resetState: glue.__wbg_reset_state,
    onReset: () => resetListeners.forEach((listener) => listener()),
  });
  let ready = false;
  const loader = {
    /** The bindings, instantiated. */
    wasm() {
      if (!ready) {
        // The workerd build hands in a compiled WebAssembly.Module instead.
        glue.initSync({ module: typeof text === "string" ? decodeWasmText(text) : text });
        ready = true;
      }
      return guarded;
    },
    /** Runs `listener` whenever a panic replaced the instance (its state is gone). */
    onInstanceReset(listener) {
      resetListeners.push(listener);
    },
  };
  // The panic-recovery tests need a way to make the WebAssembly panic. No
  // export offers one: only when a test preloaded the registry
  // (`node --import ./test/hooks.mjs`) does a loader add itself to it.
  const testHooks = globalThis[Symbol.for("strata.testHooks")];
  if (Array.isArray(testHooks) && typeof guarded.strata_test_panic === "function") {
    testHooks.push({ name, panic: (message) => loader.wasm().strata_test_panic(String(message)) });
  }
  return loader;
}
