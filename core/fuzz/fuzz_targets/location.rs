//! `baseLocation` parsing never panics, and directory keys stay below the prefix.
#![no_main]

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
