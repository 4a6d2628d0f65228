//! The outbound webhook: after each committed mutation, POST the payload the
//! core renders. A failing target is logged and retried by core's rule
//! (no answer, 408, 425, 429 and 5xx; never another 4xx), and never fails
//! the mutation. Header values are secrets: they are never logged, and a
//! redirect is never followed.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use strata_core::migrate::config::Config;
use strata_core::migrate::summary::{Summary, render_payload};
use strata_core::retry::{self, Attempt};
use tracing::Instrument;

/// Tries per delivery; which answers are retried, and after how long, is
/// core's one rule ([`strata_core::retry`]).
pub(crate) const ATTEMPTS: u32 = 3;
/// Time limit of one try.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// A configured webhook target.
pub(crate) struct Webhook {
    client: reqwest::Client,
    url: String,
    template: Option<String>,
    headers: HeaderMap,
}

impl Webhook {
    /// The webhook of `config`, if `webHookURL` is set.
    pub(crate) fn from_config(config: &Config) -> Option<Webhook> {
        let url = config.web_hook_url.clone()?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for header in &config.web_hook_headers {
            // Names and values were validated by the core config parser.
            match (HeaderName::from_bytes(header.name.as_bytes()), HeaderValue::from_str(&header.value)) {
                (Ok(name), Ok(mut value)) => {
                    value.set_sensitive(true);
                    headers.insert(name, value);
                }
                _ => tracing::error!(header = %header.name, "webHookHeaders entry cannot be sent; skipped"),
            }
        }
        // No redirect is followed, and no Referer sent: the URL and headers
        // are secrets a receiver (or an open redirect on its host) could
        // otherwise send, with the POST, wherever it likes.
        let client =
            reqwest::Client::builder().timeout(TIMEOUT).redirect(reqwest::redirect::Policy::none()).referer(false);
        let client = match client.build() {
            Ok(client) => client,
            Err(e) => {
                tracing::error!(error = %e, "webhook client cannot be built; no webhook will be sent");
                return None;
            }
        };
        Some(Webhook { client, url, template: config.web_hook_template.clone(), headers })
    }

    /// Posts the payload for `summary` and `version_id` in the background.
    pub(crate) fn send_in_background(&self, summary: &Summary, version_id: i64) -> tokio::task::JoinHandle<()> {
        let body = render_payload(self.template.as_deref(), summary, Some(version_id));
        let client = self.client.clone();
        let url = self.url.clone();
        let headers = self.headers.clone();
        tokio::spawn(
            async move {
                let send = |attempt: u32| {
                    let request = client.post(&url).headers(headers.clone()).body(body.clone());
                    async move {
                        match request.send().await {
                            Ok(response) => {
                                let status = response.status().as_u16();
                                if response.status().is_redirection() {
                                    tracing::warn!(
                                        attempt,
                                        of = ATTEMPTS,
                                        status,
                                        "webhook delivery failed: the target answered a redirect, and redirects are \
                                         not followed (the URL and headers are secrets); set webHookURL to where it \
                                         points"
                                    );
                                } else if !response.status().is_success() {
                                    tracing::warn!(attempt, of = ATTEMPTS, status, "webhook delivery failed");
                                }
                                Attempt::Status(status)
                            }
                            Err(e) => {
                                let error = e.without_url().to_string();
                                tracing::warn!(attempt, of = ATTEMPTS, %error, "webhook delivery failed");
                                Attempt::Unreachable
                            }
                        }
                    }
                };
                let wait = |ms: u32| tokio::time::sleep(Duration::from_millis(u64::from(ms)));
                let tries = retry::run(ATTEMPTS, send, wait).await;
                if tries.delivered {
                    tracing::info!(attempts = tries.attempts, "webhook delivered");
                } else {
                    let last = match tries.last {
                        Attempt::Status(status) => format!("HTTP {status}"),
                        _ => "no answer".to_string(),
                    };
                    tracing::error!(
                        version_id,
                        "webhook not delivered after {} tries (last: {last}); the version stands",
                        tries.attempts
                    );
                }
            }
            .instrument(tracing::Span::current()),
        )
    }
}
