//! Webhook templates: validation and rendering never panic.
#![no_main]

include!("../bodies/template.rs");
