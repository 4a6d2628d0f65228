//! The endpoint route/options path: route plans, URL template expansion with
//! arbitrary values, accept rewriting, and merge + parse of arbitrary JSON
//! options never panic; errors are only the documented ones.
#![no_main]

include!("../bodies/endpoint.rs");
