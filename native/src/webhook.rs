//! The outbound webhook: after each committed mutation, POST the payload the
//! core renders. A failing target is logged and retried, and never fails
//! the mutation. Header values are secrets: they are never logged.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use strata_core::config::Config;
use strata_core::summary::{Summary, render_payload};
use tracing::Instrument;

/// Tries per delivery.
pub const ATTEMPTS: u32 = 3;
/// Time limit of one try.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Wait before the second try; doubled before each further one.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// A configured webhook target.
pub struct Webhook {
    client: reqwest::Client,
    url: String,
    template: Option<String>,
    headers: HeaderMap,
}

impl Webhook {
    /// The webhook of `config`, if `webHookURL` is set.
    pub fn from_config(config: &Config) -> Option<Webhook> {
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
        let client = match reqwest::Client::builder().timeout(TIMEOUT).build() {
            Ok(client) => client,
            Err(e) => {
                tracing::error!(error = %e, "webhook client cannot be built; no webhook will be sent");
                return None;
            }
        };
        Some(Webhook { client, url, template: config.web_hook_template.clone(), headers })
    }

    /// Posts the payload for `summary` and `version_id` in the background.
    pub fn send_in_background(&self, summary: &Summary, version_id: i64) {
        let body = render_payload(self.template.as_deref(), summary, Some(version_id));
        let client = self.client.clone();
        let url = self.url.clone();
        let headers = self.headers.clone();
        tokio::spawn(
            async move {
                let mut backoff = FIRST_BACKOFF;
                for attempt in 1..=ATTEMPTS {
                    let result = client.post(&url).headers(headers.clone()).body(body.clone()).send().await;
                    let failure = match result {
                        Ok(response) if response.status().is_success() => {
                            tracing::info!(status = response.status().as_u16(), attempt, "webhook delivered");
                            return;
                        }
                        Ok(response) => format!("HTTP {}", response.status().as_u16()),
                        Err(e) => e.without_url().to_string(),
                    };
                    tracing::warn!(attempt, of = ATTEMPTS, error = %failure, "webhook delivery failed");
                    if attempt < ATTEMPTS {
                        tokio::time::sleep(backoff).await;
                        backoff *= 2;
                    }
                }
                tracing::error!(version_id, "webhook not delivered after {ATTEMPTS} tries; the version stands");
            }
            .instrument(tracing::Span::current()),
        );
    }
}
