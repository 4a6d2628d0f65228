//! Connection strings: normalisation for every driver and redaction never
//! panic; a password-looking marker never survives redaction of a URL.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_core::config::Driver;
use strata_core::datasource::normalize;
use strata_core::redact::redact_data_source;

fuzz_target!(|text: &str| {
    for driver in [Driver::Sqlite, Driver::Postgres, Driver::Mysql, Driver::SqlServer] {
        let _ = normalize(driver, text);
    }
    let _ = redact_data_source(text);
    if !text.contains(['@', '?', '#', ';', ':', '/', ' ', '&']) && !text.is_empty() {
        let url = format!("postgres://user:SECRET{text}@host/db");
        assert!(!redact_data_source(&url).contains("SECRET"));
    }
});
