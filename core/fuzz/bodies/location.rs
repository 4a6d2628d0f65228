// The body of the fuzz target `location` (fuzz_targets/location.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

use libfuzzer_sys::fuzz_target;
use strata_core::migrate::location::BaseLocation;

fuzz_target!(|input: (&str, &str)| {
    let (text, directory) = input;
    if let Ok(location) = BaseLocation::parse(text)
        && let Some(key) = location.directory_key(directory)
    {
        assert!(key.ends_with(directory));
    }
});
