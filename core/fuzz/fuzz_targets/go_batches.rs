//! `GO` splitting never panics and never returns an empty batch.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_core::migrate::batches::split_go_batches;

fuzz_target!(|script: &str| {
    for batch in split_go_batches(script) {
        assert!(!batch.trim().is_empty());
    }
});
