//! YAML configuration text: parsing never panics; a parsed configuration's
//! redacted rendering parses again to the same non-secret values.
#![no_main]

include!("../bodies/config.rs");
