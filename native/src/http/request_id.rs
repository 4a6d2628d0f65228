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

/// Middleware: sets [`RequestId`], the span, and the response header.
pub(crate) async fn request_id(mut request: Request, next: Next) -> Response {
    let id = request.headers().get(HEADER).and_then(from_client).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    request.extensions_mut().insert(RequestId(id.clone()));
    let span =
        tracing::info_span!("request", request_id = %id, method = %request.method(), path = %request.uri().path());
    let mut response = next.run(request).instrument(span.clone()).await;
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
