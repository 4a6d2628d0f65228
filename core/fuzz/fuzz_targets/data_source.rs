//! Connection strings: normalisation, the driver check and redaction never
//! panic; a password-looking marker never survives redaction of a URL nor
//! appears in the driver check's error; a new tenant name accepted for a
//! driver is always a valid identifier and never an engine's schema.
#![no_main]

include!("../bodies/data_source.rs");
