//! `GO` splitting never panics and never returns an empty batch.
#![no_main]

include!("../bodies/go_batches.rs");
