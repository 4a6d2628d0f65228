//! The webhook delivery path: request head -> middleware decision ->
//! signature verification -> listener routing, on arbitrary headers, body
//! bytes, secrets and signatures. Never panics; a delivery only verifies with
//! the signature `sign` gives.
#![no_main]

include!("../bodies/webhook_delivery.rs");
