//! `baseLocation` parsing never panics, and directory keys stay below the prefix.
#![no_main]

include!("../bodies/location.rs");
