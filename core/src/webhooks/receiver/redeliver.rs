//! Missed deliveries. GitHub does not retry a delivery that failed (the
//! receiver was down, answered 5xx, took longer than 10 s); it can only be
//! redelivered on request, within three days. A scheduled run of the
//! receiver lists the hook's recent deliveries through GitHub's REST API,
//! page by page, and asks for a redelivery of each one that never
//! succeeded and that the receiver's de-duplication store has not seen —
//! bounded per run and per delivery, so running it again changes nothing
//! once GitHub has the new attempts.
//!
//! This module decides; the shell signs the app token ([`app_jwt`]), sends
//! the requests this module builds with the request-options builder
//! ([`crate::endpoint`], the same rules as `@strata/endpoint`), asks the
//! de-duplication store, and logs the [`Summary`].

pub mod app_jwt;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value as Json, json};

use crate::endpoint::{Endpoint, RequestOptions};
use crate::webhooks::receiver::config::{OutOfRange, is_http_url, number};

/// The GitHub App's id (with [`APP_PRIVATE_KEY`]: list the app's deliveries).
pub const APP_ID: &str = "GITHUB_APP_ID";
/// The GitHub App's private key, PEM.
pub const APP_PRIVATE_KEY: &str = "GITHUB_APP_PRIVATE_KEY";
/// The app webhook's id (`X-GitHub-Hook-ID` of its deliveries): lets the
/// run ask the de-duplication store about app deliveries.
pub const APP_HOOK_ID: &str = "GITHUB_APP_HOOK_ID";
/// A token that may read and redeliver a repository's or organization's hook.
pub const TOKEN: &str = "GITHUB_TOKEN";
/// The hook a token serves: `repos/OWNER/REPO/hooks/ID` or `orgs/ORG/hooks/ID`.
pub const HOOK: &str = "REDELIVER_HOOK";
/// The REST API's address (GitHub Enterprise Server, or a test server).
pub const API_URL: &str = "GITHUB_API_URL";
/// Redeliveries requested per run at most.
pub const MAX_PER_RUN: &str = "REDELIVER_MAX_PER_RUN";
/// Redeliveries of one delivery at most (GitHub's own attempts included).
pub const MAX_ATTEMPTS: &str = "REDELIVER_MAX_ATTEMPTS";
/// How far back deliveries are looked at, in seconds.
pub const LOOKBACK_SECONDS: &str = "REDELIVER_LOOKBACK_SECONDS";

/// GitHub redelivers only deliveries of the last three days.
pub const MAX_LOOKBACK_SECONDS: u64 = 3 * 24 * 60 * 60;
/// Pages of 100 deliveries read per run at most.
pub const MAX_PAGES: u32 = 20;
/// Deliveries per page (GitHub's maximum).
pub const PER_PAGE: u32 = 100;
/// The REST API version the requests ask for.
pub const API_VERSION: &str = "2022-11-28";

/// Why the redelivery configuration is refused; names variables, never values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedeliverConfigError {
    /// One of the app's two variables without the other.
    #[error("GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY go together")]
    IncompleteApp,
    /// The private key is unusable.
    #[error(transparent)]
    Key(#[from] app_jwt::KeyError),
    /// A token without the hook it serves.
    #[error("GITHUB_TOKEN needs REDELIVER_HOOK (repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID)")]
    MissingHook,
    /// A hook path of another form.
    #[error("REDELIVER_HOOK must be repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID")]
    BadHook,
    /// A hook path with app credentials (app tokens cannot read other hooks).
    #[error("REDELIVER_HOOK is read with GITHUB_TOKEN, not with the app's credentials")]
    HookWithApp,
    /// An API address that is not an http(s) URL.
    #[error("GITHUB_API_URL must be an absolute http:// or https:// URL with a host")]
    BadApiUrl,
    /// A number out of its range.
    #[error(transparent)]
    OutOfRange(#[from] OutOfRange),
}

/// Who the run authenticates as.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// A GitHub App: a JWT signed with its key.
    App {
        /// The app's id (the token's `iss`).
        app_id: String,
        /// The private key, PKCS#8 DER (what WebCrypto imports).
        key_der: Vec<u8>,
    },
    /// A personal or fine-grained token.
    Token(String),
}

/// Whose deliveries are listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The app's webhook (`/app/hook/deliveries`).
    App {
        /// Its hook id, when configured.
        hook_id: Option<String>,
    },
    /// A repository webhook.
    Repo {
        /// Owner.
        owner: String,
        /// Repository.
        repo: String,
        /// Hook id.
        hook_id: String,
    },
    /// An organization webhook.
    Org {
        /// Organization.
        org: String,
        /// Hook id.
        hook_id: String,
    },
}

/// A validated redelivery configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct RedeliverConfig {
    /// Who the run authenticates as.
    pub credentials: Credentials,
    /// Whose deliveries.
    pub scope: Scope,
    /// The REST API's address, without a trailing slash.
    pub api_url: String,
    /// Redeliveries requested per run at most.
    pub max_per_run: u32,
    /// Redeliveries of one delivery at most.
    pub max_attempts: u32,
    /// How far back, in milliseconds.
    pub lookback_ms: u64,
}

impl std::fmt::Debug for RedeliverConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let credentials = match &self.credentials {
            Credentials::App { app_id, .. } => format!("App({app_id}, key <redacted>)"),
            Credentials::Token(_) => "Token(<redacted>)".to_owned(),
        };
        formatter
            .debug_struct("RedeliverConfig")
            .field("credentials", &credentials)
            .field("scope", &self.scope)
            .field("api_url", &self.api_url)
            .field("max_per_run", &self.max_per_run)
            .field("max_attempts", &self.max_attempts)
            .field("lookback_ms", &self.lookback_ms)
            .finish()
    }
}

/// An owner, repository or organization name as GitHub allows them (`.github`
/// is a repository name), and never `.` or `..`.
fn plain_segment(segment: &str) -> bool {
    !matches!(segment, "" | "." | "..")
        && segment.len() <= 100
        && segment.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn parse_hook(path: &str) -> Result<Scope, RedeliverConfigError> {
    let parts: Vec<&str> = path.trim().trim_matches('/').split('/').collect();
    let numeric = |id: &str| !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit());
    match parts.as_slice() {
        ["repos", owner, repo, "hooks", id] if plain_segment(owner) && plain_segment(repo) && numeric(id) => {
            Ok(Scope::Repo { owner: (*owner).into(), repo: (*repo).into(), hook_id: (*id).into() })
        }
        ["orgs", org, "hooks", id] if plain_segment(org) && numeric(id) => {
            Ok(Scope::Org { org: (*org).into(), hook_id: (*id).into() })
        }
        _ => Err(RedeliverConfigError::BadHook),
    }
}

impl RedeliverConfig {
    /// Reads the configuration; `Ok(None)` when neither app credentials nor
    /// a token are set (no scheduled redelivery).
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, RedeliverConfigError> {
        let set = |name: &str| lookup(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty());
        let hook = set(HOOK);
        let (credentials, scope) = match (set(APP_ID), set(APP_PRIVATE_KEY), set(TOKEN)) {
            (Some(app_id), Some(key), _) => {
                if hook.is_some() {
                    return Err(RedeliverConfigError::HookWithApp);
                }
                let key_der = app_jwt::private_key_der(&key)?;
                let hook_id = set(APP_HOOK_ID);
                (Credentials::App { app_id, key_der }, Scope::App { hook_id })
            }
            (Some(_), None, _) | (None, Some(_), _) => return Err(RedeliverConfigError::IncompleteApp),
            (None, None, Some(token)) => {
                let scope = parse_hook(&hook.ok_or(RedeliverConfigError::MissingHook)?)?;
                (Credentials::Token(token), scope)
            }
            (None, None, None) => return Ok(None),
        };
        let api_url = match set(API_URL) {
            Some(url) if is_http_url(&url) => url.trim_end_matches('/').to_owned(),
            Some(_) => return Err(RedeliverConfigError::BadApiUrl),
            None => crate::endpoint::DEFAULT_BASE_URL.to_owned(),
        };
        let max_per_run = number(&lookup, MAX_PER_RUN, 25, 1, 100)? as u32;
        let max_attempts = number(&lookup, MAX_ATTEMPTS, 3, 1, 10)? as u32;
        let lookback_seconds = number(&lookup, LOOKBACK_SECONDS, MAX_LOOKBACK_SECONDS, 60, MAX_LOOKBACK_SECONDS)?;
        Ok(Some(Self { credentials, scope, api_url, max_per_run, max_attempts, lookback_ms: lookback_seconds * 1000 }))
    }

    /// The hook id the de-duplication store knows deliveries by, when known.
    pub fn hook_id(&self) -> Option<&str> {
        match &self.scope {
            Scope::App { hook_id } => hook_id.as_deref(),
            Scope::Repo { hook_id, .. } | Scope::Org { hook_id, .. } => Some(hook_id),
        }
    }

    /// The `authorization` header value for a signed app token or the token.
    pub fn authorization(&self, app_token: Option<&str>) -> String {
        match (&self.credentials, app_token) {
            (Credentials::Token(token), _) => format!("Bearer {token}"),
            (Credentials::App { .. }, Some(jwt)) => format!("Bearer {jwt}"),
            (Credentials::App { .. }, None) => String::new(),
        }
    }

    fn request(
        &self,
        user_agent: &str,
        authorization: &str,
        action: &str,
        mut parameters: Map<String, Json>,
    ) -> RequestOptions {
        let (prefix, scope_parameters) = match &self.scope {
            Scope::App { .. } => ("/app/hook/deliveries", json!({})),
            Scope::Repo { owner, repo, hook_id } => (
                "/repos/{owner}/{repo}/hooks/{hook_id}/deliveries",
                json!({"owner": owner, "repo": repo, "hook_id": hook_id}),
            ),
            Scope::Org { org, hook_id } => {
                ("/orgs/{org}/hooks/{hook_id}/deliveries", json!({"org": org, "hook_id": hook_id}))
            }
        };
        if let Json::Object(scope_parameters) = scope_parameters {
            parameters.extend(scope_parameters);
        }
        parameters.insert("baseUrl".into(), self.api_url.clone().into());
        parameters
            .insert("headers".into(), json!({"authorization": authorization, "x-github-api-version": API_VERSION}));
        let route = action.replace("{deliveries}", prefix);
        Endpoint::new(user_agent)
            .request(Some(&route), parameters)
            .expect("the routes have no prefix modifiers and a method")
    }

    /// One page of the hook's deliveries, newest first.
    pub fn list_request(&self, user_agent: &str, authorization: &str, cursor: Option<&str>) -> RequestOptions {
        let mut parameters = Map::new();
        parameters.insert("per_page".into(), PER_PAGE.into());
        if let Some(cursor) = cursor {
            parameters.insert("cursor".into(), cursor.into());
        }
        self.request(user_agent, authorization, "GET {deliveries}", parameters)
    }

    /// The redelivery of delivery `delivery_id` (an attempt's numeric id).
    pub fn redeliver_request(&self, user_agent: &str, authorization: &str, delivery_id: u64) -> RequestOptions {
        let mut parameters = Map::new();
        parameters.insert("delivery_id".into(), delivery_id.into());
        self.request(user_agent, authorization, "POST {deliveries}/{delivery_id}/attempts", parameters)
    }
}

/// One delivery attempt as GitHub lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Delivery {
    /// The attempt's id (what a redelivery names).
    pub id: u64,
    /// `X-GitHub-Delivery`: the same for every attempt of one delivery.
    pub guid: String,
    /// When it was attempted (RFC 3339).
    pub delivered_at: String,
    /// Whether this attempt was a redelivery.
    #[serde(default)]
    pub redelivery: bool,
    /// The receiver's HTTP status (0 when none came back).
    #[serde(default)]
    pub status_code: u16,
    /// The event.
    #[serde(default)]
    pub event: String,
    /// The payload's action, when it has one.
    #[serde(default)]
    pub action: Option<String>,
}

/// Why a page could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListingError {
    /// The body is not a list of deliveries.
    #[error("the delivery listing is not a JSON array of deliveries")]
    NotAListing,
}

/// The deliveries of one page's body.
pub fn parse_page(body: &[u8]) -> Result<Vec<Delivery>, ListingError> {
    serde_json::from_slice(body).map_err(|_| ListingError::NotAListing)
}

/// The `cursor` of the `rel="next"` link of a `Link` header. Only the
/// cursor is taken: the next request is built from the configured API
/// address again, so a link elsewhere never receives the credentials.
pub fn next_cursor(link: Option<&str>) -> Option<String> {
    link?.split(',').find_map(|part| {
        let (target, parameters) = part.trim().split_once(';')?;
        let is_next = parameters.split(';').any(|parameter| {
            let parameter = parameter.trim();
            parameter == r#"rel="next""# || parameter == "rel=next"
        });
        let url = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let query = url.split_once('?')?.1;
        let cursor = query.split('&').find_map(|pair| pair.strip_prefix("cursor="))?;
        (is_next && !cursor.is_empty()).then(|| cursor.to_owned())
    })
}

fn epoch_ms(rfc3339: &str) -> Option<u64> {
    let moment = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339).ok()?;
    u64::try_from(moment.unix_timestamp_nanos() / 1_000_000).ok()
}

/// What the listing says of one delivery (all its attempts).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    newest_id: u64,
    newest_ms: u64,
    event: String,
    action: Option<String>,
    succeeded: bool,
    attempts: u32,
}

/// A delivery to redeliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// `X-GitHub-Delivery`.
    pub guid: String,
    /// The attempt id to name in the redelivery.
    pub delivery_id: u64,
    /// The event.
    pub event: String,
    /// Attempts so far.
    pub attempts: u32,
}

impl Candidate {
    /// The log line of its redelivery request: `status` is GitHub's answer,
    /// `None` when the request could not be sent.
    pub fn log_line(&self, status: Option<u16>) -> String {
        let attempt = self.attempts + 1;
        match status {
            Some(status) if (200..300).contains(&status) => {
                format!("redelivery requested: {} delivery {} (attempt {attempt})", self.event, self.guid)
            }
            Some(status) => format!("redelivery refused: {} delivery {}: HTTP {status}", self.event, self.guid),
            None => format!("redelivery not sent: {} delivery {}: the API was unreachable", self.event, self.guid),
        }
    }
}

/// One run's reading of the listing, page by page.
#[derive(Debug, Clone)]
pub struct Run {
    since_ms: u64,
    max_attempts: u32,
    deliveries: BTreeMap<String, Record>,
    listed: usize,
    pages: u32,
}

impl Run {
    /// A run at `now_ms` with `config`'s limits.
    pub fn new(config: &RedeliverConfig, now_ms: u64) -> Self {
        Self {
            since_ms: now_ms.saturating_sub(config.lookback_ms),
            max_attempts: config.max_attempts,
            deliveries: BTreeMap::new(),
            listed: 0,
            pages: 0,
        }
    }

    /// Takes one page; says whether to read the next one: there is one,
    /// this page reached no further back than the window, and fewer than
    /// [`MAX_PAGES`] were read.
    pub fn add_page(&mut self, page: &[Delivery], has_next: bool) -> bool {
        self.pages += 1;
        self.listed += page.len();
        let mut older_than_window = false;
        for delivery in page {
            let Some(at_ms) = epoch_ms(&delivery.delivered_at) else { continue };
            if at_ms < self.since_ms {
                older_than_window = true;
                continue;
            }
            let record = self.deliveries.entry(delivery.guid.clone()).or_insert_with(|| Record {
                newest_id: delivery.id,
                newest_ms: at_ms,
                event: delivery.event.clone(),
                action: delivery.action.clone(),
                succeeded: false,
                attempts: 0,
            });
            record.attempts += 1;
            record.succeeded |= (200..300).contains(&delivery.status_code);
            if at_ms > record.newest_ms || (at_ms == record.newest_ms && delivery.id > record.newest_id) {
                record.newest_id = delivery.id;
                record.newest_ms = at_ms;
            }
        }
        has_next && !older_than_window && !page.is_empty() && self.pages < MAX_PAGES
    }

    /// Deliveries that never succeeded and have attempts left, the oldest
    /// first (the closest to GitHub's three-day horizon).
    pub fn candidates(&self) -> Vec<Candidate> {
        let mut failed: Vec<(&String, &Record)> = self
            .deliveries
            .iter()
            .filter(|(_, record)| !record.succeeded && record.attempts <= self.max_attempts)
            .collect();
        failed.sort_by_key(|(guid, record)| (record.newest_ms, guid.as_str()));
        failed
            .into_iter()
            .map(|(guid, record)| Candidate {
                guid: guid.clone(),
                delivery_id: record.newest_id,
                event: match &record.action {
                    Some(action) => format!("{}.{action}", record.event),
                    None => record.event.clone(),
                },
                attempts: record.attempts,
            })
            .collect()
    }

    /// The run's summary so far, before any redelivery.
    pub fn summary(&self) -> Summary {
        let failed = self.deliveries.values().filter(|record| !record.succeeded).count();
        let given_up =
            self.deliveries.values().filter(|record| !record.succeeded && record.attempts > self.max_attempts).count();
        Summary { listed: self.listed, pages: self.pages, failed, given_up, ..Summary::default() }
    }
}

/// What a run did, for its one log line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Delivery attempts listed.
    pub listed: usize,
    /// Pages read.
    pub pages: u32,
    /// Deliveries that never succeeded.
    pub failed: usize,
    /// Of those, ones the de-duplication store has seen (forwarded here).
    pub seen_here: usize,
    /// Redeliveries GitHub accepted.
    pub redelivered: usize,
    /// Redelivery requests GitHub refused or that could not be sent.
    pub refused: usize,
    /// Failed deliveries past their attempts.
    pub given_up: usize,
    /// Failed deliveries left for the next run (the per-run bound).
    pub deferred: usize,
}

impl Summary {
    /// The run's log line (counts only: no token, no URL).
    pub fn log_line(&self) -> String {
        format!(
            "redelivery run: {} attempts listed on {} page(s); {} deliveries never succeeded: {} redelivered, \
             {} already forwarded here, {} refused, {} given up after their attempts, {} left for the next run",
            self.listed,
            self.pages,
            self.failed,
            self.redelivered,
            self.seen_here,
            self.refused,
            self.given_up,
            self.deferred
        )
    }
}

#[cfg(test)]
mod tests;
