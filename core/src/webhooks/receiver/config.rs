//! The receiver's configuration, read from named variables (a Worker's
//! vars and secrets, a component's environment) handed in by the shell.

use crate::webhooks::middleware::{DEFAULT_MAX_BODY_BYTES, DEFAULT_PATH};
use crate::webhooks::receiver::filter::{EventFilter, EventFilterError};

/// The shared secret GitHub signs deliveries with (required).
pub const SECRET: &str = "GITHUB_WEBHOOK_SECRET";
/// More secrets, comma-separated, tried after [`SECRET`] (rotation).
pub const ADDITIONAL_SECRETS: &str = "GITHUB_WEBHOOK_ADDITIONAL_SECRETS";
/// Where verified deliveries are forwarded (`http://` or `https://`).
pub const FORWARD_URL: &str = "FORWARD_URL";
/// Which deliveries are forwarded: comma-separated event names and
/// `event.action`s; unset or empty forwards every verified delivery.
pub const EVENTS: &str = "EVENTS";
/// The path deliveries are POSTed to.
pub const WEBHOOK_PATH: &str = "WEBHOOK_PATH";
/// How many times a forward is attempted before it is given up (1–10).
pub const FORWARD_ATTEMPTS: &str = "FORWARD_ATTEMPTS";
/// The largest body accepted, in bytes.
pub const MAX_PAYLOAD_BYTES: &str = "MAX_PAYLOAD_BYTES";
/// How long a forwarded delivery is remembered, in seconds: a copy of it
/// (same hook, same `X-GitHub-Delivery`) arriving within that time is
/// answered 200 and not forwarded again. Used when a de-duplication store is
/// bound.
pub const DEDUP_WINDOW_SECONDS: &str = "DEDUP_WINDOW_SECONDS";

/// [`DEDUP_WINDOW_SECONDS`] when unset: three days, as long as GitHub lets a
/// delivery be redelivered.
pub const DEFAULT_DEDUP_WINDOW_SECONDS: u64 = 3 * 24 * 60 * 60;
/// The longest [`DEDUP_WINDOW_SECONDS`] allowed (thirty days).
pub const MAX_DEDUP_WINDOW_SECONDS: u64 = 30 * 24 * 60 * 60;

/// Attempts per forward when [`FORWARD_ATTEMPTS`] is unset.
pub const DEFAULT_FORWARD_ATTEMPTS: u32 = 3;
/// The most attempts [`FORWARD_ATTEMPTS`] may ask for: a Worker's
/// `waitUntil` work is cut off 30 seconds after the response.
pub const MAX_FORWARD_ATTEMPTS: u32 = 10;

/// Why a configuration is refused. Messages name the variable, never its
/// value (values may be secrets or URLs with tokens in them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// [`SECRET`] is unset or empty.
    #[error("GITHUB_WEBHOOK_SECRET is not set: deliveries cannot be verified")]
    MissingSecret,
    /// [`FORWARD_URL`] is not an absolute `http(s)://` URL with a host.
    #[error("FORWARD_URL must be an absolute http:// or https:// URL with a host")]
    BadForwardUrl,
    /// Neither [`FORWARD_URL`] nor a queue binding: verified deliveries would
    /// be dropped.
    #[error("nowhere to forward to: set FORWARD_URL or bind a queue")]
    NoDestination,
    /// [`EVENTS`] holds something that is not an event name.
    #[error("EVENTS: {0}")]
    Events(#[from] EventFilterError),
    /// [`WEBHOOK_PATH`] does not start with `/`.
    #[error("WEBHOOK_PATH must start with \"/\"")]
    BadPath,
    /// A numeric variable is not a number in its range.
    #[error(transparent)]
    OutOfRange(#[from] OutOfRange),
}

/// A numeric variable that is not a whole number in its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{name} must be a whole number from {min} to {max}")]
pub struct OutOfRange {
    /// The variable.
    pub name: &'static str,
    /// Smallest value allowed.
    pub min: u64,
    /// Largest value allowed.
    pub max: u64,
}

/// The platform bindings the shell has (a Cloudflare Worker's queue, R2
/// bucket and Durable Object namespace; a WASI component has none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bindings {
    /// A queue verified deliveries are sent to.
    pub queue: bool,
    /// A bucket for bodies too large for a queue message (claim check).
    pub bodies: bool,
    /// A store that remembers forwarded deliveries (de-duplication).
    pub dedup: bool,
}

/// A validated receiver configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// The primary secret.
    pub secret: String,
    /// Secrets tried after [`Self::secret`], in order.
    pub additional_secrets: Vec<String>,
    /// Where verified deliveries go, when set.
    pub forward_url: Option<String>,
    /// Whether a queue binding receives verified deliveries too.
    pub queue: bool,
    /// Which verified deliveries are forwarded.
    pub events: EventFilter,
    /// The path deliveries are POSTed to.
    pub path: String,
    /// Attempts per forward.
    pub forward_attempts: u32,
    /// The largest body accepted, in bytes.
    pub max_body_bytes: u64,
    /// Whether bodies too large for a queue message go to a bucket.
    pub bodies: bool,
    /// How long forwarded deliveries are remembered, in milliseconds, when a
    /// de-duplication store is bound.
    pub dedup_window_ms: Option<u64>,
}

impl std::fmt::Debug for ReceiverConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ReceiverConfig")
            .field("secret", &"<redacted>")
            .field("additional_secrets", &self.additional_secrets.len())
            .field("forward_url", &self.forward_url.as_ref().map(|_| "<set>"))
            .field("queue", &self.queue)
            .field("events", &self.events)
            .field("path", &self.path)
            .field("forward_attempts", &self.forward_attempts)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("bodies", &self.bodies)
            .field("dedup_window_ms", &self.dedup_window_ms)
            .finish()
    }
}

impl ReceiverConfig {
    /// The secrets a signature is checked with, in order: the primary one,
    /// then the additional ones.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.secret.as_str()).chain(self.additional_secrets.iter().map(String::as_str))
    }
}

/// Comma-separated items, trimmed, empty ones dropped.
fn comma_list(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|item| !item.is_empty())
}

/// An absolute `http://` or `https://` URL with a non-empty host and no
/// whitespace or control characters.
pub(crate) fn is_http_url(url: &str) -> bool {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let Some(rest) = rest else { return false };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = rest[..authority_end].rsplit('@').next().unwrap_or("");
    !host.is_empty() && !host.starts_with(':') && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The whole number in variable `name`, `default` when unset or blank.
pub(crate) fn number(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, OutOfRange> {
    match lookup(name).map(|text| text.trim().to_owned()).filter(|text| !text.is_empty()) {
        None => Ok(default),
        Some(text) => {
            text.parse::<u64>().ok().filter(|value| (min..=max).contains(value)).ok_or(OutOfRange { name, min, max })
        }
    }
}

impl ReceiverConfig {
    /// Reads the configuration through `lookup` (variable name → value);
    /// `bindings` says which platform bindings the shell has. Returns the
    /// configuration and warnings (event names GitHub is not known to send,
    /// which are kept: GitHub adds events; a queue without a bucket for large
    /// bodies).
    pub fn from_vars(
        lookup: impl Fn(&str) -> Option<String>,
        bindings: Bindings,
    ) -> Result<(Self, Vec<String>), ConfigError> {
        let queue = bindings.queue;
        let secret = lookup(SECRET).filter(|secret| !secret.is_empty()).ok_or(ConfigError::MissingSecret)?;
        let additional_secrets =
            lookup(ADDITIONAL_SECRETS).map(|value| comma_list(&value).map(str::to_owned).collect()).unwrap_or_default();
        let forward_url = match lookup(FORWARD_URL).map(|url| url.trim().to_owned()).filter(|url| !url.is_empty()) {
            Some(url) if is_http_url(&url) => Some(url),
            Some(_) => return Err(ConfigError::BadForwardUrl),
            None => None,
        };
        if forward_url.is_none() && !queue {
            return Err(ConfigError::NoDestination);
        }
        let (events, mut warnings) = EventFilter::parse(comma_list(&lookup(EVENTS).unwrap_or_default()))?;
        let path = match lookup(WEBHOOK_PATH).map(|path| path.trim().to_owned()).filter(|path| !path.is_empty()) {
            Some(path) if path.starts_with('/') => path,
            Some(_) => return Err(ConfigError::BadPath),
            None => DEFAULT_PATH.to_owned(),
        };
        let forward_attempts =
            number(&lookup, FORWARD_ATTEMPTS, DEFAULT_FORWARD_ATTEMPTS.into(), 1, MAX_FORWARD_ATTEMPTS.into())? as u32;
        let max_body_bytes = number(&lookup, MAX_PAYLOAD_BYTES, DEFAULT_MAX_BODY_BYTES, 1, DEFAULT_MAX_BODY_BYTES * 4)?;
        let window_seconds =
            number(&lookup, DEDUP_WINDOW_SECONDS, DEFAULT_DEDUP_WINDOW_SECONDS, 1, MAX_DEDUP_WINDOW_SECONDS)?;
        if queue && !bindings.bodies {
            warnings.push(format!(
                "a queue is bound without a {} bucket: a delivery whose queue message does not fit {} bytes \
                 cannot be queued",
                super::queue::BODIES_BINDING,
                super::queue::MAX_MESSAGE_BYTES - super::queue::ENVELOPE_ALLOWANCE
            ));
        }
        let config = Self {
            secret,
            additional_secrets,
            forward_url,
            queue,
            events,
            path,
            forward_attempts,
            max_body_bytes,
            bodies: queue && bindings.bodies,
            dedup_window_ms: bindings.dedup.then_some(window_seconds * 1000),
        };
        Ok((config, warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)], queue: bool) -> Result<(ReceiverConfig, Vec<String>), ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        ReceiverConfig::from_vars(|name| map.get(name).cloned(), Bindings { queue, bodies: queue, dedup: false })
    }

    #[test]
    fn defaults_with_only_a_secret_and_a_url() {
        let (config, warnings) = read(&[(SECRET, "s3cret"), (FORWARD_URL, " http://127.0.0.1:9/in ")], false).unwrap();
        assert_eq!(config.secret, "s3cret");
        assert!(config.additional_secrets.is_empty());
        assert_eq!(config.forward_url.as_deref(), Some("http://127.0.0.1:9/in"));
        assert!(!config.queue);
        assert_eq!(config.events, EventFilter::default());
        assert_eq!(config.path, "/api/github/webhooks");
        assert_eq!(config.forward_attempts, 3);
        assert_eq!(config.max_body_bytes, 25 * 1024 * 1024);
        assert!(warnings.is_empty());
    }

    #[test]
    fn every_variable_is_read() {
        let (config, warnings) = read(
            &[
                (SECRET, "a"),
                (ADDITIONAL_SECRETS, " b, ,c ,"),
                (FORWARD_URL, "https://user:pw@example.com"),
                (EVENTS, "push, issues.opened ,brand_new"),
                (WEBHOOK_PATH, "/hooks/"),
                (FORWARD_ATTEMPTS, "5"),
                (MAX_PAYLOAD_BYTES, "1024"),
            ],
            true,
        )
        .unwrap();
        assert_eq!(config.additional_secrets, ["b", "c"]);
        assert_eq!(config.forward_url.as_deref(), Some("https://user:pw@example.com"));
        assert!(config.queue);
        assert_eq!(config.path, "/hooks/");
        assert_eq!(config.forward_attempts, 5);
        assert_eq!(config.max_body_bytes, 1024);
        assert!(config.events.accepts("push", None));
        assert!(config.events.accepts("issues", Some("opened")));
        assert!(!config.events.accepts("issues", Some("closed")));
        assert_eq!(warnings, ["EVENTS: \"brand_new\" is not an event GitHub is known to send"]);
    }

    #[test]
    fn refusals_name_the_variable_not_the_value() {
        assert_eq!(read(&[(FORWARD_URL, "http://x")], false).unwrap_err(), ConfigError::MissingSecret);
        assert_eq!(read(&[(SECRET, ""), (FORWARD_URL, "http://x")], false).unwrap_err(), ConfigError::MissingSecret);
        assert_eq!(read(&[(SECRET, "s")], false).unwrap_err(), ConfigError::NoDestination);
        assert!(read(&[(SECRET, "s")], true).is_ok());
        for url in ["ftp://x", "http://", "http:///path", "http://:80/", "//host/x", "http://a b/", "tok3n"] {
            let error = read(&[(SECRET, "s"), (FORWARD_URL, url)], false).unwrap_err();
            assert_eq!(error, ConfigError::BadForwardUrl, "{url}");
            assert_eq!(error.to_string(), "FORWARD_URL must be an absolute http:// or https:// URL with a host");
        }
        assert_eq!(
            read(&[(SECRET, "s"), (FORWARD_URL, "http://x"), (WEBHOOK_PATH, "hooks")], false).unwrap_err(),
            ConfigError::BadPath
        );
        for attempts in ["0", "11", "-1", "three"] {
            let error = read(&[(SECRET, "s"), (FORWARD_URL, "http://x"), (FORWARD_ATTEMPTS, attempts)], false);
            assert_eq!(error.unwrap_err().to_string(), "FORWARD_ATTEMPTS must be a whole number from 1 to 10");
        }
        let error = read(&[(SECRET, "s"), (FORWARD_URL, "http://x"), (EVENTS, "push,Issues Opened")], false);
        assert_eq!(error.unwrap_err().to_string(), "EVENTS: \"Issues Opened\" is not an event name or event.action");
    }

    #[test]
    fn bindings_bucket_and_dedup_window() {
        let vars = |window: Option<&str>| {
            let mut vars = vec![(SECRET.to_owned(), "s".to_owned())];
            if let Some(window) = window {
                vars.push((DEDUP_WINDOW_SECONDS.to_owned(), window.to_owned()));
            }
            move |name: &str| vars.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone())
        };
        let queue_only = Bindings { queue: true, bodies: false, dedup: false };
        let (config, warnings) = ReceiverConfig::from_vars(vars(None), queue_only).unwrap();
        assert!(!config.bodies && config.dedup_window_ms.is_none());
        assert_eq!(
            warnings,
            [
                "a queue is bound without a WEBHOOK_BODIES bucket: a delivery whose queue message does not fit 126976 bytes \
             cannot be queued"
            ]
        );
        let all = Bindings { queue: true, bodies: true, dedup: true };
        let (config, warnings) = ReceiverConfig::from_vars(vars(None), all).unwrap();
        assert!(config.bodies && warnings.is_empty());
        assert_eq!(config.dedup_window_ms, Some(259_200_000));
        let (config, _) = ReceiverConfig::from_vars(vars(Some(" 4 ")), all).unwrap();
        assert_eq!(config.dedup_window_ms, Some(4_000));
        for bad in ["0", "2592001", "1h"] {
            let error = ReceiverConfig::from_vars(vars(Some(bad)), all).unwrap_err();
            assert_eq!(error.to_string(), "DEDUP_WINDOW_SECONDS must be a whole number from 1 to 2592000");
        }
        // A bucket without a queue is not used.
        let bucket_only = Bindings { queue: false, bodies: true, dedup: false };
        let with_url = |name: &str| match name {
            SECRET => Some("s".to_owned()),
            FORWARD_URL => Some("http://x".to_owned()),
            _ => None,
        };
        assert!(!ReceiverConfig::from_vars(with_url, bucket_only).unwrap().0.bodies);
    }

    #[test]
    fn debug_output_hides_secrets_and_the_url() {
        let (config, _) =
            read(&[(SECRET, "s3cret"), (ADDITIONAL_SECRETS, "old"), (FORWARD_URL, "http://t0ken@x")], false).unwrap();
        let debug = format!("{config:?}");
        assert!(!debug.contains("s3cret") && !debug.contains("old") && !debug.contains("t0ken"), "{debug}");
    }
}
