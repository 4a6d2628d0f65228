//! Panics as JavaScript errors. With `panic = "abort"` a Rust panic ends in
//! a WebAssembly trap (`RuntimeError: unreachable`) that leaves the instance
//! unusable. The hook below keeps the panic's message; the packages' facades
//! (`pkg/shared/guard.js`) catch the trap, read the message, replace the
//! instance (`__wbg_reset_state`, from wasm-bindgen's
//! `--experimental-reset-state-function`) and throw an `Error` with it.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Installs the hook when the instance starts.
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        let message = info.to_string();
        LAST_PANIC.with_borrow_mut(|last| *last = message);
    }));
}

/// The message of the last panic (empty when there was none), cleared.
#[wasm_bindgen]
pub fn strata_take_panic() -> String {
    LAST_PANIC.with_borrow_mut(std::mem::take)
}

/// Panics on purpose: the packages' reliability tests check that this
/// becomes a thrown `Error` and that the package keeps working afterwards.
#[wasm_bindgen]
pub fn strata_test_panic(message: &str) {
    panic!("strata_test_panic: {message}");
}
