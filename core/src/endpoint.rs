//! The request-options builder: a route plus parameters in, generic HTTP
//! request options out, with the exact rules of GitHub's `@octokit/endpoint`.
//!
//! Two layers:
//! - [`RoutePlan`], [`accept::rewrite`] and [`template`]: the decisions, on
//!   borrowed strings. The WebAssembly package uses these directly: it caches
//!   one plan per `(method, url)` and sends only the values the URL needs.
//! - [`Endpoint`], [`merge`] and [`parse`]: the whole builder on
//!   `serde_json` objects (key order kept), for Rust callers and for tests
//!   stating every rule with exact outputs.

pub mod accept;
mod encode;
mod options;
mod plan;
mod query;
pub mod template;

pub use options::{Endpoint, RequestOptions, merge, parse};
pub use plan::{Destination, JSON_CONTENT_TYPE, RoutePlan};

/// The public API address of GitHub, the default `baseUrl`.
pub const DEFAULT_BASE_URL: &str = "https://api.github.com";

/// The default `accept` header.
pub const DEFAULT_ACCEPT: &str = "application/vnd.github.v3+json";

/// Why request options could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// A `{name:N}` prefix cut a character outside the Basic Multilingual
    /// Plane in half; upstream's `encodeURIComponent` throws `URIError` there.
    #[error("URI malformed: a prefix modifier cut a character in half")]
    MalformedUri,
    /// The merged options have no string `method`.
    #[error("the options have no method")]
    MissingMethod,
}

impl EndpointError {
    /// The message, without the formatting machinery (for the WebAssembly
    /// build, where `Display` would pull in `core::fmt`).
    pub fn message(&self) -> &'static str {
        match self {
            Self::MalformedUri => "URI malformed: a prefix modifier cut a character in half",
            Self::MissingMethod => "the options have no method",
        }
    }
}

/// `text[start..end]` without a panic path: every caller cuts at ASCII
/// positions, so the empty fallback is never taken. (Panicking slices pull
/// `Debug` formatting and Unicode tables into the WebAssembly build.)
pub(crate) fn cut(text: &str, start: usize, end: usize) -> &str {
    text.get(start..end).unwrap_or_default()
}

/// The first index at or after `from` where `needle` occurs in `haystack`.
pub(crate) fn find_bytes(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let tail = haystack.get(from..)?;
    tail.windows(needle.len()).position(|window| window == needle).map(|offset| from + offset)
}

/// Splits a route string like upstream: `"<METHOD> <url>"`, or only a URL.
/// Text after a second space is ignored.
pub fn split_route(route: &str) -> (Option<&str>, &str) {
    let mut parts = route.split(' ');
    let first = parts.next().unwrap_or_default();
    match parts.next() {
        Some(url) if !url.is_empty() => (Some(first), url),
        _ => (None, first),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_split_at_the_first_space() {
        assert_eq!(split_route("GET /repos"), (Some("GET"), "/repos"));
        assert_eq!(split_route("/repos"), (None, "/repos"));
        assert_eq!(split_route("GET "), (None, "GET"));
        assert_eq!(split_route("POST /a b"), (Some("POST"), "/a"));
        assert_eq!(split_route(""), (None, ""));
    }
}
