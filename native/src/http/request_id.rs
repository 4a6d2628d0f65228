//! `X-Request-ID`: taken from the request when it is a sane token, otherwise
//! generated (UUID v4); echoed in the response, attached to every log line of
//! the request through a tracing span, and handed to the GraphQL resolvers.
//! A plain route's error is logged here, once, with its full detail.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::error::ErrorDetail;
use crate::service::RequestId;

/// The header name.
pub(crate) const HEADER: &str = "x-request-id";
/// Longest request id taken from a client.
const MAX_LEN: usize = 128;

fn from_client(value: &HeaderValue) -> Option<String> {
    let text = value.to_str().ok()?.trim();
    let sane = !text.is_empty() && text.len() <= MAX_LEN && text.bytes().all(|b| b.is_ascii_graphic());
    sane.then(|| text.to_string())
}

/// The exported span of `request` (HTTP server conventions), under the
/// log's `request` span, continuing the caller's trace (`traceparent`).
fn server_span(log: &tracing::Span, request: &Request, id: &str) -> tracing::Span {
    let path = request.uri().path();
    let route = request.extensions().get::<axum::extract::MatchedPath>().map_or(path, |matched| matched.as_str());
    let method = request.method().as_str();
    let server = tracing::info_span!(target: crate::traces::TARGET, parent: log, "HTTP request",
        otel.name = %format!("{method} {route}"), otel.kind = "server", http.request.method = method,
        url.path = path, http.route = route, strata.request_id = id,
        http.response.status_code = tracing::field::Empty);
    let header = |name: &str| request.headers().get(name).and_then(|value| value.to_str().ok());
    crate::traces::context::continue_trace(&server, header("traceparent"), header("tracestate"));
    server
}

/// Middleware: sets [`RequestId`], the span, and the response header.
pub(crate) async fn request_id(mut request: Request, next: Next) -> Response {
    let id = request.headers().get(HEADER).and_then(from_client).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    request.extensions_mut().insert(RequestId(id.clone()));
    let span =
        tracing::info_span!("request", request_id = %id, method = %request.method(), path = %request.uri().path());
    let server = server_span(&span, &request, &id);
    let mut response = crate::traces::in_span(&server, next.run(request)).instrument(span.clone()).await;
    let status = response.status();
    server.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        crate::traces::failed(&server, status.as_str());
    }
    if let Some(error) = response.extensions().get::<ErrorDetail>() {
        let _entered = span.enter();
        if response.status().is_server_error() {
            tracing::error!(status = response.status().as_u16(), code = error.code, "{}", error.detail);
        } else {
            tracing::info!(status = response.status().as_u16(), code = error.code, "{}", error.detail);
        }
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}
