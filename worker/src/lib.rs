//! GitHub webhook receiver for Cloudflare Workers.
//!
//! The shell around [`strata_core::webhooks::receiver`]: it reads the
//! Worker's variables and the request, checks the signature with WebCrypto's
//! HMAC (core parses and compares), lets the core decide the answer,
//! answers, and forwards verified deliveries after the response
//! (`waitUntil`) to `FORWARD_URL` and to the `WEBHOOK_QUEUE` queue binding
//! when one is bound (large bodies through the `WEBHOOK_BODIES` bucket),
//! at most once per delivery when the `WEBHOOK_DEDUP` Durable Object
//! namespace is bound. Nothing here decides anything the core could.

mod forward;
mod http;
mod ledger;
mod redeliver;
mod webcrypto;

use std::cell::RefCell;
use std::rc::Rc;

use strata_core::webhooks::receiver::dedup::DEDUP_BINDING;
use strata_core::webhooks::receiver::queue::{BODIES_BINDING, QUEUE_BINDING};
use strata_core::webhooks::receiver::{self, Bindings, ConfigError, ReceiverConfig, Step, Verdict};
use worker::{Context, Env, Request, Response, Result, ScheduleContext, ScheduledEvent, console_warn, event};

/// This build's version, served by the health route.
const VERSION: &str = concat!("strata-worker/", env!("CARGO_PKG_VERSION"));

thread_local! {
    /// The configuration, read once per isolate: a Worker's vars and secrets
    /// do not change while it runs (a new deployment is a new isolate).
    static CONFIGURATION: RefCell<Option<Rc<ConfigResult>>> = const { RefCell::new(None) };
}

type ConfigResult = std::result::Result<ReceiverConfig, ConfigError>;

fn configuration(env: &Env) -> Rc<ConfigResult> {
    CONFIGURATION.with(|cell| cell.borrow_mut().get_or_insert_with(|| Rc::new(read_configuration(env))).clone())
}

/// Reads the configuration from the Worker's vars and secrets.
fn read_configuration(env: &Env) -> ConfigResult {
    let bindings = Bindings {
        queue: env.queue(QUEUE_BINDING).is_ok(),
        bodies: env.bucket(BODIES_BINDING).is_ok(),
        dedup: env.durable_object(DEDUP_BINDING).is_ok(),
    };
    let lookup = |name: &str| env.var(name).ok().map(|value| value.to_string());
    let (config, warnings) = ReceiverConfig::from_vars(lookup, bindings)?;
    for warning in warnings {
        console_warn!("{warning}");
    }
    Ok(config)
}

#[event(fetch)]
async fn fetch(mut request: Request, env: Env, context: Context) -> Result<Response> {
    let config = configuration(&env);
    let head = http::RequestHeadParts::read(&request);
    let (config, name, signature, id) = match receiver::on_request((*config).as_ref(), &head.head(), VERSION) {
        Step::Reply(reply) => return http::respond(&reply),
        Step::ReadBody { config, name, signature, id } => (config, name, signature, id),
    };
    let body = match http::read_body(&mut request, config.max_body_bytes).await {
        Ok(body) => body,
        Err(reply) => return http::respond(&reply),
    };
    let verified = webcrypto::verify(config, signature, &body).await;
    match receiver::judge_verified(config, name, verified, &body) {
        Verdict::Refuse(reply) => http::respond(&reply),
        Verdict::Accept { reply, forward, action } => {
            if forward {
                let delivery = forward::Delivery::new(&request, name, id, action, body);
                context.wait_until(forward::deliver(config.clone(), env, delivery));
            }
            http::respond(&reply)
        }
    }
}

/// The Cron Trigger: asks GitHub to redeliver missed deliveries.
#[event(scheduled)]
async fn scheduled(_event: ScheduledEvent, env: Env, _context: ScheduleContext) {
    redeliver::run(&env).await;
}
