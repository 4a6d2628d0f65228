//! Source files (names, directories, bytes), recorded rows and tenant names
//! from the fuzzer: ordering and planning never panic, and a plan never
//! holds the same (migration, schema) pair twice.
#![no_main]

include!("../bodies/plan.rs");
