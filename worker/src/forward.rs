//! Forwarding a verified delivery after the response: to `FORWARD_URL`
//! with its original GitHub headers and body bytes, and to the queue
//! binding (bodies too large for a message through the bucket binding).
//! With a de-duplication store bound, a delivery is claimed first and a
//! copy of one already forwarded is not sent again. Retries, message shapes
//! and the ledger's rules come from the core.

use std::time::Duration;

use futures_util::future::join;
use strata_core::retry::Attempt;
use strata_core::webhooks::receiver::ReceiverConfig;
use strata_core::webhooks::receiver::forward::{Report, forward_with_retries, is_forwarded_header};
use strata_core::webhooks::receiver::queue::{self, BODIES_BINDING, QUEUE_BINDING, QueueMessage};
use worker::{
    Delay, Env, Headers, HttpMetadata, Method, QueueContentType, RawMessageBuilder, Request, RequestInit,
    console_error, console_log,
};

use crate::{http, ledger};

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

impl Delivery {
    fn as_queued(&self) -> queue::Delivery<'_> {
        queue::Delivery {
            id: &self.id,
            name: &self.name,
            action: self.action.as_deref(),
            headers: &self.headers,
            body: &self.body,
        }
    }
}

async fn post(url: &str, delivery: &Delivery) -> Attempt {
    let headers: Headers = delivery.headers.iter().collect();
    let body = js_sys::Uint8Array::from(delivery.body.as_slice());
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_headers(headers).with_body(Some(body.into()));
    let request = Request::new_with_init(url, &init);
    let Ok(request) = request else { return Attempt::Unreachable };
    match http::fetch_with_timeout(request, ATTEMPT_TIMEOUT).await {
        Some(response) => Attempt::Status(response.status_code()),
        None => Attempt::Unreachable,
    }
}

/// One attempt at queueing `message`: the body into the bucket first when
/// the message is a claim check (same key every attempt), then the message.
async fn enqueue(env: &Env, delivery: &Delivery, message: &QueueMessage) -> Attempt {
    let Ok(queue) = env.queue(QUEUE_BINDING) else { return Attempt::Unreachable };
    let json = match message {
        QueueMessage::Inline { json } => json,
        QueueMessage::ClaimCheck { key, json } => {
            let Ok(bucket) = env.bucket(BODIES_BINDING) else { return Attempt::Unreachable };
            let metadata = HttpMetadata { content_type: Some("application/json".to_owned()), ..Default::default() };
            if bucket.put(key.as_str(), delivery.body.clone()).http_metadata(metadata).execute().await.is_err() {
                return Attempt::Unreachable;
            }
            json
        }
        QueueMessage::TooLarge { .. } => return Attempt::Status(413),
    };
    let Ok(value) = js_sys::JSON::parse(json) else { return Attempt::Unreachable };
    match queue.send_raw(RawMessageBuilder::new(value).build_with_content_type(QueueContentType::Json)).await {
        Ok(()) => Attempt::Sent,
        Err(_) => Attempt::Unreachable,
    }
}

/// Queues `delivery` with retries; a message too large for the queue with
/// no bucket bound is not attempted (it cannot succeed) and says why.
async fn forward_to_queue(config: &ReceiverConfig, env: &Env, delivery: &Delivery) -> bool {
    let message = queue::message(&delivery.as_queued(), config.bodies);
    if let QueueMessage::TooLarge { bytes } = message {
        console_error!(
            "NOT forwarded: {} delivery {} to {QUEUE_BINDING}: its message ({bytes} bytes) does not fit the queue's \
             {} bytes less {} for the platform's framing, and no {BODIES_BINDING} bucket is bound",
            delivery.name,
            delivery.id,
            queue::MAX_MESSAGE_BYTES,
            queue::ENVELOPE_ALLOWANCE
        );
        return false;
    }
    let report = forward_with_retries(config.forward_attempts, |_| enqueue(env, delivery, &message), wait).await;
    log(&report, QUEUE_BINDING, delivery);
    report.delivered
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
/// value). With a de-duplication store, the delivery is claimed first (a
/// copy already forwarded or being forwarded stops here, logged) and the
/// claim settled after: kept when every destination took it, released
/// otherwise so that a redelivery goes through.
pub(crate) async fn deliver(config: ReceiverConfig, env: Env, delivery: Delivery) {
    let hook_id = delivery.as_queued().hook_id().map(str::to_owned);
    let ledger = match config.dedup_window_ms {
        Some(window_ms) => match ledger::claim(&env, &delivery.name, hook_id.as_deref(), &delivery.id, window_ms).await
        {
            ledger::Claimed::First(ledger) => ledger.map(|ledger| (ledger, window_ms)),
            ledger::Claimed::Duplicate(line) => {
                console_log!("{line}");
                return;
            }
        },
        None => None,
    };
    let to_url = async {
        let Some(url) = &config.forward_url else { return true };
        let report = forward_with_retries(config.forward_attempts, |_| post(url, &delivery), wait).await;
        log(&report, "FORWARD_URL", &delivery);
        report.delivered
    };
    let to_queue = async { !config.queue || forward_to_queue(&config, &env, &delivery).await };
    let (to_url, to_queue) = join(to_url, to_queue).await;
    if let Some((ledger, window_ms)) = ledger {
        ledger.settle(to_url && to_queue, window_ms).await;
    }
}
