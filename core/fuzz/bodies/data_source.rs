// The body of the fuzz target `data_source` (fuzz_targets/data_source.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

use libfuzzer_sys::fuzz_target;
use strata_core::migrate::config::Driver;
use strata_core::migrate::datasource::{check_driver, normalize};
use strata_core::migrate::ident::{validate_identifier, validate_new_tenant_name};
use strata_core::migrate::redact::redact_data_source;

fuzz_target!(|text: &str| {
    for driver in Driver::ALL {
        let _ = normalize(driver, text);
        if let Err(error) = check_driver(driver, &format!("postgres://u:SECRET{text}@h/db")) {
            assert!(!error.to_string().contains("SECRET"), "{error}");
        }
        let _ = check_driver(driver, text);
        if validate_new_tenant_name(text, driver, ["ref"]).is_ok() {
            assert!(validate_identifier(text).is_ok());
            assert!(!driver.reserves_schema(text) && !text.eq_ignore_ascii_case("ref"));
        }
    }
    let _ = redact_data_source(text);
    if !text.contains(['@', '?', '#', ';', ':', '/', ' ', '&']) && !text.is_empty() {
        let url = format!("postgres://user:SECRET{text}@host/db");
        assert!(!redact_data_source(&url).contains("SECRET"));
    }
});
