//! Forwarding a verified delivery after the response: to `FORWARD_URL`
//! with its original GitHub headers and body bytes, and to the queue
//! binding. Retries and their limits come from the core.

use std::time::Duration;

use futures_util::future::{Either, join, select};
use serde::Serialize;
use strata_core::retry::Attempt;
use strata_core::webhooks::receiver::ReceiverConfig;
use strata_core::webhooks::receiver::forward::{Report, forward_with_retries, is_forwarded_header};
use worker::{AbortController, Delay, Env, Fetch, Headers, Method, Request, RequestInit, console_error, console_log};

use crate::QUEUE_BINDING;

/// How long one forward attempt may take before it counts as unreachable.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(8);

/// A verified delivery, as it is forwarded.
pub(crate) struct Delivery {
    name: String,
    id: String,
    action: Option<String>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Delivery {
    /// Keeps the headers that travel with the delivery (GitHub's own,
    /// `Content-Type`, `User-Agent`) and the body bytes.
    pub(crate) fn new(request: &Request, name: &str, id: &str, action: Option<String>, body: Vec<u8>) -> Self {
        let headers = request.headers().entries().filter(|(name, _)| is_forwarded_header(name)).collect();
        Self { name: name.to_owned(), id: id.to_owned(), action, headers, body }
    }
}

/// One delivery as a queue message: the body as text (it was parsed as
/// JSON, so it is UTF-8 apart from bytes the parser replaced).
#[derive(Serialize)]
struct QueuedDelivery<'a> {
    id: &'a str,
    name: &'a str,
    action: Option<&'a str>,
    headers: &'a [(String, String)],
    body: std::borrow::Cow<'a, str>,
}

async fn post(url: &str, delivery: &Delivery) -> Attempt {
    let headers: Headers = delivery.headers.iter().collect();
    let body = js_sys::Uint8Array::from(delivery.body.as_slice());
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_headers(headers).with_body(Some(body.into()));
    let request = Request::new_with_init(url, &init);
    let Ok(request) = request else { return Attempt::Unreachable };
    let controller = AbortController::default();
    let fetch = Fetch::Request(request);
    let signal = controller.signal();
    let sending = std::pin::pin!(fetch.send_with_signal(&signal));
    match select(sending, Delay::from(ATTEMPT_TIMEOUT)).await {
        Either::Left((Ok(response), _)) => Attempt::Status(response.status_code()),
        Either::Left((Err(_), _)) => Attempt::Unreachable,
        Either::Right(((), _)) => {
            controller.abort();
            Attempt::Unreachable
        }
    }
}

async fn enqueue(env: &Env, delivery: &Delivery) -> Attempt {
    let Ok(queue) = env.queue(QUEUE_BINDING) else { return Attempt::Unreachable };
    let message = QueuedDelivery {
        id: &delivery.id,
        name: &delivery.name,
        action: delivery.action.as_deref(),
        headers: &delivery.headers,
        body: String::from_utf8_lossy(&delivery.body),
    };
    match queue.send(message).await {
        Ok(()) => Attempt::Sent,
        Err(_) => Attempt::Unreachable,
    }
}

fn log(report: &Report, destination: &str, delivery: &Delivery) {
    let line = report.log_line(destination, &delivery.name, &delivery.id);
    if report.delivered {
        console_log!("{line}");
    } else {
        console_error!("{line}");
    }
}

fn wait(milliseconds: u32) -> Delay {
    Delay::from(Duration::from_millis(milliseconds.into()))
}

/// Forwards `delivery` to every configured destination at once, each with
/// its own bounded retries, and logs how each ended (never a URL or header
/// value).
pub(crate) async fn deliver(config: ReceiverConfig, env: Env, delivery: Delivery) {
    let to_url = async {
        if let Some(url) = &config.forward_url {
            let report = forward_with_retries(config.forward_attempts, |_| post(url, &delivery), wait).await;
            log(&report, "FORWARD_URL", &delivery);
        }
    };
    let to_queue = async {
        if config.queue {
            let report = forward_with_retries(config.forward_attempts, |_| enqueue(&env, &delivery), wait).await;
            log(&report, QUEUE_BINDING, &delivery);
        }
    };
    join(to_url, to_queue).await;
}
