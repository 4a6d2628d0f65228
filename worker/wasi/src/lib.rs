//! GitHub webhook receiver as a WASI-HTTP component (spin-sdk, WASI 0.3).
//!
//! The same receiver as `strata-worker`, for Spin and wasmtime-style
//! hosts: [`strata_core::webhooks::receiver`] decides every answer; this
//! shell reads the configuration from the component's environment
//! (`GITHUB_WEBHOOK_SECRET`, `FORWARD_URL`, … — the same names), reads the
//! request, answers, and forwards verified deliveries after the response
//! (a task spawned past the return, the component model's `waitUntil`).

use std::collections::HashMap;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http_body_util::{BodyExt, Full};
use spin_sdk::http::{HeaderMap, HeaderValue, IntoResponse, Request, StatusCode};
use spin_sdk::http_service;
use spin_sdk::wasip3::{cli::environment, clocks::monotonic_clock};
use strata_core::retry::Attempt;
use strata_core::webhooks::middleware::{self, Reply, RequestHead, normalize_trailing_slashes};
use strata_core::webhooks::receiver::forward::{Report, forward_with_retries, is_forwarded_header};
use strata_core::webhooks::receiver::{self, Bindings, ConfigError, ReceiverConfig, Step, Verdict};

/// This build's version, served by the health route.
const VERSION: &str = concat!("strata-worker-wasi/", env!("CARGO_PKG_VERSION"));

/// Reads the configuration from the component's environment. A WASI host
/// has no queue binding, so `FORWARD_URL` is required here.
fn configuration() -> Result<ReceiverConfig, ConfigError> {
    let environment: HashMap<String, String> = environment::get_environment().into_iter().collect();
    let (config, warnings) = ReceiverConfig::from_vars(|name| environment.get(name).cloned(), Bindings::default())?;
    for warning in warnings {
        eprintln!("{warning}");
    }
    Ok(config)
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|value| value.to_str().ok()).map(str::to_owned)
}

fn respond(reply: &Reply) -> spin_sdk::http::Response<Full<Bytes>> {
    let mut response = spin_sdk::http::Response::new(Full::new(Bytes::from(reply.body.clone())));
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (name.parse::<spin_sdk::http::HeaderName>(), value.parse()) {
            response.headers_mut().insert(name, value);
        }
    }
    response.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(reply.body.len()));
    response
}

/// How much of an oversized body is still read (and dropped) after the limit
/// is passed: a host that sees the answer before the body's end may close
/// the connection without sending it (wasmtime does, some of the time), so
/// a client slightly over the limit would see a reset instead of its 413.
const DRAIN_AFTER_LIMIT: usize = 1 << 20;

/// Reads the body, stopping as soon as it passes `max_bytes`.
async fn read_body<B>(mut body: B, max_bytes: u64) -> Result<Vec<u8>, Reply>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| middleware::unreadable_body())?;
        if let Some(data) = frame.data_ref() {
            bytes.extend_from_slice(data);
            if bytes.len() as u64 > max_bytes {
                drop(bytes);
                let mut drained = 0;
                while drained < DRAIN_AFTER_LIMIT {
                    match body.frame().await {
                        Some(Ok(frame)) => drained += frame.data_ref().map_or(0, Bytes::len),
                        _ => break,
                    }
                }
                return Err(middleware::too_large(max_bytes));
            }
        }
    }
    Ok(bytes)
}

/// A verified delivery, as it is forwarded.
struct Delivery {
    name: String,
    id: String,
    headers: Vec<(String, String)>,
    body: Bytes,
}

async fn post(url: &str, delivery: &Delivery) -> Attempt {
    let mut request = Request::new(Full::new(delivery.body.clone()));
    *request.method_mut() = spin_sdk::http::Method::POST;
    let Ok(uri) = url.parse() else { return Attempt::Unreachable };
    *request.uri_mut() = uri;
    for (name, value) in &delivery.headers {
        if let (Ok(name), Ok(value)) = (name.parse::<spin_sdk::http::HeaderName>(), value.parse()) {
            request.headers_mut().append(name, value);
        }
    }
    request.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(delivery.body.len()));
    match spin_sdk::http::send(request).await {
        Ok(response) => Attempt::Status(response.status().as_u16()),
        Err(_) => Attempt::Unreachable,
    }
}

async fn wait(milliseconds: u32) {
    monotonic_clock::wait_for(u64::from(milliseconds) * 1_000_000).await;
}

fn log(report: &Report, delivery: &Delivery) {
    eprintln!("{}", report.log_line("FORWARD_URL", &delivery.name, &delivery.id));
}

async fn forward(config: ReceiverConfig, delivery: Delivery) {
    if let Some(url) = &config.forward_url {
        let report = forward_with_retries(config.forward_attempts, |_| post(url, &delivery), wait).await;
        log(&report, &delivery);
    }
}

/// Answers a request; forwards a verified delivery after the answer.
#[http_service]
async fn handle(request: Request) -> impl IntoResponse {
    let config = configuration();
    let (parts, body) = request.into_parts();
    let url = parts.uri.to_string();
    let normalized = normalize_trailing_slashes(&url);
    let pathname = normalized.parse::<spin_sdk::http::Uri>().ok().map(|uri| uri.path().to_owned());
    let (content_type, event, signature, delivery) = (
        header(&parts.headers, "content-type"),
        header(&parts.headers, "x-github-event"),
        header(&parts.headers, "x-hub-signature-256"),
        header(&parts.headers, "x-github-delivery"),
    );
    let head = RequestHead {
        method: parts.method.as_str(),
        url: &url,
        pathname: pathname.as_deref(),
        content_type: content_type.as_deref(),
        event: event.as_deref(),
        signature: signature.as_deref(),
        delivery: delivery.as_deref(),
        content_length: header(&parts.headers, "content-length").and_then(|length| length.parse().ok()),
    };
    let (config, name, signature, id) = match receiver::on_request(config.as_ref(), &head, VERSION) {
        Step::Reply(reply) => return respond(&reply),
        Step::ReadBody { config, name, signature, id } => (config, name, signature, id),
    };
    let body = match read_body(body, config.max_body_bytes).await {
        Ok(body) => body,
        Err(reply) => return respond(&reply),
    };
    match receiver::judge(config, name, signature, &body) {
        Verdict::Refuse(reply) => respond(&reply),
        Verdict::Accept { reply, forward: wanted, .. } => {
            if wanted {
                let headers = parts
                    .headers
                    .iter()
                    .filter(|(name, _)| is_forwarded_header(name.as_str()))
                    .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
                    .collect();
                let delivery = Delivery { name: name.to_owned(), id: id.to_owned(), headers, body: Bytes::from(body) };
                spin_sdk::wit_bindgen::spawn(forward(config.clone(), delivery));
            }
            respond(&reply)
        }
    }
}
