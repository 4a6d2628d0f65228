// The body of the fuzz target `go_batches` (fuzz_targets/go_batches.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

use libfuzzer_sys::fuzz_target;
use strata_core::migrate::batches::split_go_batches;

fuzz_target!(|script: &str| {
    for batch in split_go_batches(script) {
        assert!(!batch.trim().is_empty());
    }
});
