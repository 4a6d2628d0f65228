//! The web console: four files embedded at build time (`native/console/`),
//! served under `<pathPrefix>/console/` with a strict Content-Security-Policy.
//! The page talks to the service's own API only (relative URLs, so any
//! `pathPrefix` works); nothing loads from anywhere else, so it works
//! air-gapped. It uses the public API only (the spec's schema and the
//! added `plan`, `fleet` and `Version.requestId`), never a route of its
//! own, and puts every value the server sends into the page as text,
//! never as HTML.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

/// The console's page, script and styles.
const INDEX_HTML: &str = include_str!("../../console/index.html");
const APP_JS: &str = include_str!("../../console/app.js");
const APP_CSS: &str = include_str!("../../console/app.css");
const FAVICON_SVG: &str = include_str!("../../console/favicon.svg");

/// What the console's page may do: its own script and styles, requests to
/// its own origin; no inline code, no frames, no other origin.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `<prefix>/console/`: the page.
pub(crate) async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

/// `<prefix>/console/app.js`.
pub(crate) async fn script() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

/// `<prefix>/console/app.css`.
pub(crate) async fn styles() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

/// `<prefix>/console/favicon.svg` (the browser asks for an icon; without
/// one it would log a 404).
pub(crate) async fn icon() -> Response {
    asset("image/svg+xml", FAVICON_SVG)
}

/// `<prefix>/console`: to the page's own directory, so its relative URLs
/// resolve under the prefix.
pub(crate) fn to_index(prefix: &str) -> Redirect {
    let target = if prefix == "/" { "/console/".to_string() } else { format!("{prefix}/console/") };
    Redirect::permanent(&target)
}
