//! The scheduled run that asks GitHub to redeliver missed deliveries (a
//! Cron Trigger). Core's `receiver::redeliver` reads the configuration,
//! builds every request (the request-options builder), reads the listing
//! and decides what to redeliver; this file signs the app token with
//! WebCrypto, sends, asks the de-duplication store, and logs.

use std::time::Duration;

use strata_core::endpoint::RequestOptions;
use strata_core::webhooks::receiver::dedup::DEDUP_BINDING;
use strata_core::webhooks::receiver::redeliver::{Credentials, RedeliverConfig, Run, app_jwt, next_cursor, parse_page};
use worker::{Date, Env, Headers, Method, Request, RequestInit, console_error, console_log};

use crate::{VERSION, http, ledger, webcrypto};

/// How long one API request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest listing page read (100 deliveries are about 50 KB).
const MAX_PAGE_BYTES: usize = 4 << 20;

/// An API answer: status, `Link`, body.
struct Answer {
    status: u16,
    link: Option<String>,
    body: Vec<u8>,
}

async fn send(options: &RequestOptions) -> Option<Answer> {
    let headers = Headers::new();
    for (name, value) in &options.headers {
        headers.set(name, value.as_str()?).ok()?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(options.method.clone())).with_headers(headers);
    let request = Request::new_with_init(&options.url, &init).ok()?;
    let mut response = http::fetch_with_timeout(request, REQUEST_TIMEOUT).await?;
    let link = response.headers().get("link").ok().flatten();
    let body = response.bytes().await.ok()?;
    if body.len() > MAX_PAGE_BYTES {
        return None;
    }
    Some(Answer { status: response.status_code(), link, body })
}

/// The `authorization` header: a fresh app token signed by WebCrypto, or the token.
async fn authorization(config: &RedeliverConfig, now_ms: u64) -> Option<String> {
    match &config.credentials {
        Credentials::App { app_id, key_der } => {
            let input = app_jwt::signing_input(app_id, now_ms / 1000);
            let signature = webcrypto::rsa_sha256_sign(key_der, input.as_bytes()).await.ok()?;
            Some(config.authorization(Some(&app_jwt::assemble(&input, &signature))))
        }
        Credentials::Token(_) => Some(config.authorization(None)),
    }
}

/// One scheduled run: list, decide, redeliver, log one summary line.
pub(crate) async fn run(env: &Env) {
    let lookup = |name: &str| env.var(name).ok().map(|value| value.to_string());
    let config = match RedeliverConfig::from_vars(lookup) {
        Ok(Some(config)) => config,
        Ok(None) => {
            console_log!(
                "redelivery run skipped: set GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY, or GITHUB_TOKEN and REDELIVER_HOOK"
            );
            return;
        }
        Err(error) => {
            console_error!("redelivery run not started: {error}");
            return;
        }
    };
    let now_ms = Date::now().as_millis();
    let Some(authorization) = authorization(&config, now_ms).await else {
        console_error!(
            "redelivery run not started: WebCrypto could not sign the app token with GITHUB_APP_PRIVATE_KEY"
        );
        return;
    };
    let mut listing = Run::new(&config, now_ms);
    let mut cursor: Option<String> = None;
    loop {
        let request = config.list_request(VERSION, &authorization, cursor.as_deref());
        let page = match send(&request).await {
            Some(answer) if answer.status == 200 => match parse_page(&answer.body) {
                Ok(page) => (page, next_cursor(answer.link.as_deref())),
                Err(error) => {
                    console_error!("redelivery run stopped: {error}");
                    return;
                }
            },
            Some(answer) => {
                console_error!("redelivery run stopped: listing the deliveries answered HTTP {}", answer.status);
                return;
            }
            None => {
                console_error!("redelivery run stopped: the API was unreachable while listing the deliveries");
                return;
            }
        };
        let (deliveries, next) = page;
        if !listing.add_page(&deliveries, next.is_some()) {
            break;
        }
        cursor = next;
    }
    let mut summary = listing.summary();
    let candidates = listing.candidates();
    let dedup = env.durable_object(DEDUP_BINDING).is_ok();
    for (index, candidate) in candidates.iter().enumerate() {
        if summary.redelivered + summary.refused >= config.max_per_run as usize {
            summary.deferred = candidates.len() - index;
            break;
        }
        if let Some(hook_id) = config.hook_id().filter(|_| dedup)
            && ledger::seen(env, hook_id, &candidate.guid).await
        {
            summary.seen_here += 1;
            continue;
        }
        let request = config.redeliver_request(VERSION, &authorization, candidate.delivery_id);
        let status = send(&request).await.map(|answer| answer.status);
        let line = candidate.log_line(status);
        if status.is_some_and(|status| (200..300).contains(&status)) {
            summary.redelivered += 1;
            console_log!("{line}");
        } else {
            summary.refused += 1;
            console_error!("{line}");
        }
    }
    console_log!("{}", summary.log_line());
}
