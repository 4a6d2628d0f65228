//! Requests in, replies out: the Worker's side of the core's
//! `RequestHead` and `Reply`.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::{Either, select};
use strata_core::webhooks::middleware::{self, Reply, RequestHead, normalize_trailing_slashes};
use worker::{AbortController, Delay, Fetch, Headers, Request, Response, Result, Url};

/// The header values and URL parts a [`RequestHead`] borrows.
pub(crate) struct RequestHeadParts {
    method: String,
    url: String,
    pathname: Option<String>,
    content_type: Option<String>,
    event: Option<String>,
    signature: Option<String>,
    delivery: Option<String>,
    content_length: Option<u64>,
}

impl RequestHeadParts {
    /// Reads what the core needs from `request`.
    pub(crate) fn read(request: &Request) -> Self {
        let url = request.inner().url();
        let header = |name: &str| request.headers().get(name).ok().flatten();
        // The web middleware's rule: trailing slashes of the whole URL go
        // before it is parsed.
        let pathname = Url::parse(normalize_trailing_slashes(&url)).ok().map(|parsed| parsed.path().to_owned());
        Self {
            method: request.inner().method(),
            pathname,
            content_type: header("content-type"),
            event: header("x-github-event"),
            signature: header("x-hub-signature-256"),
            delivery: header("x-github-delivery"),
            content_length: header("content-length").and_then(|length| length.parse().ok()),
            url,
        }
    }

    /// The core's view of the request.
    pub(crate) fn head(&self) -> RequestHead<'_> {
        RequestHead {
            method: &self.method,
            url: &self.url,
            pathname: self.pathname.as_deref(),
            content_type: self.content_type.as_deref(),
            event: self.event.as_deref(),
            signature: self.signature.as_deref(),
            delivery: self.delivery.as_deref(),
            content_length: self.content_length,
        }
    }
}

/// Reads the body, stopping as soon as it passes `max_bytes` (a chunked
/// body declares no length up front).
pub(crate) async fn read_body(request: &mut Request, max_bytes: u64) -> std::result::Result<Vec<u8>, Reply> {
    let unreadable = |_| middleware::unreadable_body();
    if request.inner().body().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = request.stream().map_err(unreadable)?;
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.map_err(unreadable)?);
        if body.len() as u64 > max_bytes {
            return Err(middleware::too_large(max_bytes));
        }
    }
    Ok(body)
}

/// The Worker response for a core reply.
pub(crate) fn respond(reply: &Reply) -> Result<Response> {
    let headers: Headers = reply.headers.iter().collect();
    Ok(Response::from_bytes(reply.body.as_bytes().to_vec())?.with_status(reply.status).with_headers(headers))
}

/// Sends `request`, giving up (and aborting it) after `timeout`; `None` when
/// it failed or timed out.
pub(crate) async fn fetch_with_timeout(request: Request, timeout: Duration) -> Option<Response> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let fetch = Fetch::Request(request);
    let sending = std::pin::pin!(fetch.send_with_signal(&signal));
    match select(sending, Delay::from(timeout)).await {
        Either::Left((Ok(response), _)) => Some(response),
        Either::Left((Err(_), _)) => None,
        Either::Right(((), _)) => {
            controller.abort();
            None
        }
    }
}
