//! WebAssembly bindings of `strata-core` for the npm packages. No logic lives
//! here: each export decodes its arguments, calls core, and encodes the result.
//!
//! # Wire format
//!
//! Crossing into WebAssembly costs per call and per argument, so values
//! travel as one string in a length-prefixed form that JavaScript builds with
//! plain concatenation and Rust reads in one pass (no JSON, no escaping):
//!
//! - `n`: `undefined` or `null`
//! - `s<len>:<text>`: a string; `len` counts UTF-16 code units, as JavaScript's
//!   `length` does
//! - `l<count>:` then `count` items (`n` or `s…`): an array
//! - `m<count>:` then `count` pairs of a key (`s…`) and a value (`n` or `s…`):
//!   an object's own enumerable entries

#[cfg(feature = "endpoint")]
mod endpoint;
mod panic;
#[cfg(feature = "webhooks")]
mod webhooks;
mod wire;

pub use panic::{start, strata_take_panic, strata_test_panic};

#[cfg(feature = "endpoint")]
pub use endpoint::{endpoint_plan, endpoint_reset, endpoint_url};
#[cfg(feature = "webhooks")]
pub use webhooks::{
    EventNameCheck, ReplyKind, RouteKind, webhooks_check_event_name, webhooks_digest_matches,
    webhooks_event_name_message, webhooks_event_names, webhooks_format_digest, webhooks_listener_keys,
    webhooks_normalize_trailing_slashes, webhooks_reply, webhooks_route, webhooks_route_reply, webhooks_sign,
    webhooks_signature_prefix, webhooks_verify, webhooks_verify_with_fallback,
};
