//! The edge receiver (`worker/`): answers GitHub's deliveries exactly as the
//! web middleware of `@strata/webhooks` does, and decides which verified
//! deliveries are forwarded where. The shells (a Cloudflare Worker, a
//! WASI-HTTP component) read requests and variables, send and sleep.
//!
//! A request goes through [`on_request`] (health, refusals by path, method,
//! content type, headers and declared size) and, when it is a delivery, its
//! body through [`judge`] (size, signature, JSON), which says whether it is
//! forwarded.

pub mod config;
pub mod dedup;
pub mod filter;
pub mod forward;
pub mod queue;
pub mod redeliver;

pub use config::{Bindings, ConfigError, ReceiverConfig};
pub use filter::EventFilter;

use crate::webhooks::middleware::{self, Reply, RequestHead, Route, error_body, json_string};
use crate::webhooks::signature::verify_with_fallback;

/// The health route (`GET` or `HEAD`).
pub const HEALTH_PATH: &str = "/health";

/// The message of a delivery whose signature does not match, as the web
/// middleware of `@strata/webhooks` words it.
pub const SIGNATURE_MISMATCH: &str = "[@strata/webhooks] signature does not match event payload and secret";

const JSON: &[(&str, &str)] = &[("content-type", "application/json")];

/// What a request gets before its body is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<'a> {
    /// Answer now.
    Reply(Reply),
    /// A delivery: read the body (up to the configured limit) and [`judge`] it.
    ReadBody {
        /// The configuration to judge it by.
        config: &'a ReceiverConfig,
        /// `X-GitHub-Event`.
        name: &'a str,
        /// `X-Hub-Signature-256`.
        signature: &'a str,
        /// `X-GitHub-Delivery`.
        id: &'a str,
    },
}

/// What a verified or refused delivery gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Refused (too large, bad signature, not JSON): answer, forward nothing.
    Refuse(Reply),
    /// Verified: answer `reply`, then forward when `forward` says so.
    Accept {
        /// The 200 answer.
        reply: Reply,
        /// Whether the event filter lets it through.
        forward: bool,
        /// The payload's `action`, when it has one.
        action: Option<String>,
    },
}

/// `{"status":"ok","version":…}` (200), or 503 with the configuration error.
pub fn health(config: Result<&ReceiverConfig, &ConfigError>, version: &str) -> Reply {
    let mut body = String::from("{\"status\":");
    let status = match config {
        Ok(_) => {
            body.push_str("\"ok\"");
            200
        }
        Err(_) => {
            body.push_str("\"misconfigured\"");
            503
        }
    };
    body.push_str(",\"version\":");
    json_string(&mut body, version);
    if let Err(error) = config {
        body.push_str(",\"error\":");
        json_string(&mut body, &error.to_string());
    }
    body.push('}');
    Reply { status, body, headers: JSON }
}

/// Decides what a request gets before its body is read. `config` is the
/// result of [`ReceiverConfig::from_vars`]; `version` is the build's.
pub fn on_request<'a>(
    config: Result<&'a ReceiverConfig, &ConfigError>,
    head: &RequestHead<'a>,
    version: &str,
) -> Step<'a> {
    if head.pathname == Some(HEALTH_PATH) && matches!(head.method, "GET" | "HEAD") {
        return Step::Reply(health(config, version));
    }
    let config = match config {
        Ok(config) => config,
        Err(error) => {
            let body = error_body(&["receiver misconfigured: ", &error.to_string()].concat());
            return Step::Reply(Reply { status: 503, body, headers: JSON });
        }
    };
    match middleware::route(head, &config.path, config.max_body_bytes) {
        Route::Reply(reply) => Step::Reply(reply),
        Route::Deliver { name, signature, id } => Step::ReadBody { config, name, signature, id },
        Route::NotOurs => {
            let pathname = head.pathname.unwrap_or(head.url);
            let message = ["Unknown route: ", head.method, " ", pathname].concat();
            Step::Reply(Reply { status: 404, body: error_body(&message), headers: JSON })
        }
    }
}

/// The payload's `action` when it is a JSON object with a string `action`;
/// `Err` when the body is not JSON. Only `action` is kept: the rest of the
/// document is checked for syntax and skipped without building values.
fn payload_action(body: &[u8]) -> Result<Option<String>, ()> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        action: Option<serde_json::Value>,
    }
    let text = String::from_utf8_lossy(body);
    match serde_json::from_str::<Envelope>(&text) {
        Ok(envelope) => Ok(envelope.action.and_then(|action| action.as_str().map(str::to_owned))),
        // Valid JSON of another shape (an array, a repeated key): no action.
        Err(error) if error.is_data() => {
            serde_json::from_str::<serde::de::IgnoredAny>(&text).map(|_| None).map_err(|_| ())
        }
        Err(_) => Err(()),
    }
}

/// Judges a delivery's body: the size limit, the signature (with the
/// additional secrets), then JSON; answers like the web middleware.
pub fn judge(config: &ReceiverConfig, name: &str, signature: &str, body: &[u8]) -> Verdict {
    if body.len() as u64 > config.max_body_bytes {
        return Verdict::Refuse(middleware::too_large(config.max_body_bytes));
    }
    let additional = config.additional_secrets.iter().map(String::as_str);
    let verified = verify_with_fallback(&config.secret, additional, body, signature);
    judge_verified(config, name, verified, body)
}

/// [`judge`] for a shell that checked the signature itself — hashing with
/// the platform's HMAC, each of [`ReceiverConfig::secrets`] in order, and
/// checking each digest with [`crate::webhooks::signature::digest_matches`]:
/// `verified` says whether one matched.
pub fn judge_verified(config: &ReceiverConfig, name: &str, verified: bool, body: &[u8]) -> Verdict {
    if body.len() as u64 > config.max_body_bytes {
        return Verdict::Refuse(middleware::too_large(config.max_body_bytes));
    }
    if !verified {
        return Verdict::Refuse(middleware::failed(Some(400), "Error", SIGNATURE_MISMATCH));
    }
    match payload_action(body) {
        Ok(action) => {
            let forward = config.events.accepts(name, action.as_deref());
            Verdict::Accept { reply: middleware::delivered(), forward, action }
        }
        Err(()) => Verdict::Refuse(middleware::failed(Some(400), "SyntaxError", "Invalid JSON")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::signature::sign;

    fn config(events: &[&str]) -> ReceiverConfig {
        let vars = [
            (config::SECRET, "s3cret".to_owned()),
            (config::ADDITIONAL_SECRETS, "old".to_owned()),
            (config::FORWARD_URL, "http://127.0.0.1:9/in".to_owned()),
            (config::EVENTS, events.join(",")),
            (config::MAX_PAYLOAD_BYTES, "64".to_owned()),
        ];
        ReceiverConfig::from_vars(
            |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()),
            Bindings::default(),
        )
        .unwrap()
        .0
    }

    fn head(method: &'static str, path: &'static str) -> RequestHead<'static> {
        RequestHead {
            method,
            url: path,
            pathname: Some(path),
            content_type: Some("application/json"),
            event: Some("issues"),
            signature: Some("sha256=00"),
            delivery: Some("d-1"),
            content_length: Some(10),
        }
    }

    fn status_and_body(step: Step<'_>) -> (u16, String) {
        match step {
            Step::Reply(reply) => (reply.status, reply.body),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn health_reports_the_version_and_configuration_errors() {
        let config = config(&[]);
        assert_eq!(
            status_and_body(on_request(Ok(&config), &head("GET", "/health"), "1.2.3")),
            (200, r#"{"status":"ok","version":"1.2.3"}"#.into())
        );
        assert_eq!(health(Ok(&config), "a\"b\\c\n").body, r#"{"status":"ok","version":"a\"b\\c\n"}"#);
        let error = ConfigError::MissingSecret;
        assert_eq!(
            status_and_body(on_request(Err(&error), &head("HEAD", "/health"), "1.2.3")),
            (
                503,
                r#"{"status":"misconfigured","version":"1.2.3","error":"GITHUB_WEBHOOK_SECRET is not set: deliveries cannot be verified"}"#
                    .into()
            )
        );
        assert_eq!(
            status_and_body(on_request(Err(&error), &head("POST", "/api/github/webhooks"), "1")),
            (
                503,
                r#"{"error":"receiver misconfigured: GITHUB_WEBHOOK_SECRET is not set: deliveries cannot be verified"}"#
                    .into()
            )
        );
    }

    #[test]
    fn requests_are_routed_like_the_web_middleware() {
        let config = config(&[]);
        assert_eq!(
            on_request(Ok(&config), &head("POST", "/api/github/webhooks"), "1"),
            Step::ReadBody { config: &config, name: "issues", signature: "sha256=00", id: "d-1" }
        );
        assert_eq!(
            status_and_body(on_request(Ok(&config), &head("GET", "/api/github/webhooks"), "1")),
            (404, r#"{"error":"Unknown route: GET /api/github/webhooks"}"#.into())
        );
        assert_eq!(
            status_and_body(on_request(Ok(&config), &head("POST", "/elsewhere"), "1")),
            (404, r#"{"error":"Unknown route: POST /elsewhere"}"#.into())
        );
        let large = RequestHead { content_length: Some(65), ..head("POST", "/api/github/webhooks") };
        assert_eq!(
            status_and_body(on_request(Ok(&config), &large, "1")),
            (413, r#"{"error":"Payload too large: the limit is 64 bytes"}"#.into())
        );
    }

    #[test]
    fn a_shell_that_verifies_gets_the_same_verdicts() {
        use crate::webhooks::signature::{digest_matches, is_well_formed};
        let all = config(&[]);
        assert_eq!(all.secrets().collect::<Vec<_>>(), ["s3cret", "old"]);
        let hmac = |secret: &str, body: &[u8]| -> [u8; 32] {
            use hmac::{KeyInit, Mac};
            let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
            mac.update(body);
            mac.finalize().into_bytes().into()
        };
        for (body, signature) in [
            (&br#"{"action":"opened"}"#[..], sign("old", br#"{"action":"opened"}"#)),
            (br#"{"action":"opened"}"#, sign("wrong", br#"{"action":"opened"}"#)),
            (b"{nope", sign("s3cret", b"{nope")),
            (&[b' '; 65], sign("s3cret", &[b' '; 65])),
            (b"{}", "sha256=XYZ".to_owned()),
        ] {
            let verified = is_well_formed(&signature)
                && all.secrets().any(|secret| digest_matches(&hmac(secret, body), &signature));
            assert_eq!(judge_verified(&all, "issues", verified, body), judge(&all, "issues", &signature, body));
        }
        assert!(!is_well_formed("sha256=XYZ") && is_well_formed(&sign("k", b"x")));
    }

    #[test]
    fn bodies_are_verified_then_parsed_then_filtered() {
        let all = config(&[]);
        let body = br#"{"action":"opened","n":1}"#;
        let accepted = judge(&all, "issues", &sign("s3cret", body), body);
        assert_eq!(
            accepted,
            Verdict::Accept { reply: middleware::delivered(), forward: true, action: Some("opened".into()) }
        );
        assert!(matches!(judge(&all, "issues", &sign("old", body), body), Verdict::Accept { forward: true, .. }));

        let refused = |verdict: Verdict| match verdict {
            Verdict::Refuse(reply) => (reply.status, reply.body),
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(
            refused(judge(&all, "issues", &sign("wrong", body), body)),
            (400, r#"{"error":"Error: [@strata/webhooks] signature does not match event payload and secret"}"#.into())
        );
        let tampered = br#"{"action":"closed","n":1}"#;
        assert_eq!(refused(judge(&all, "issues", &sign("s3cret", body), tampered)).0, 400);
        let not_json = b"{nope";
        assert_eq!(
            refused(judge(&all, "issues", &sign("s3cret", not_json), not_json)),
            (400, r#"{"error":"SyntaxError: Invalid JSON"}"#.into())
        );
        let large = [b' '; 65];
        assert_eq!(refused(judge(&all, "issues", &sign("s3cret", &large), &large)).0, 413);

        let only_opened = config(&["issues.opened", "push"]);
        let closed = br#"{"action":"closed"}"#;
        assert_eq!(
            judge(&only_opened, "issues", &sign("s3cret", closed), closed),
            Verdict::Accept { reply: middleware::delivered(), forward: false, action: Some("closed".into()) }
        );
        assert!(matches!(
            judge(&only_opened, "issues", &sign("s3cret", body), body),
            Verdict::Accept { forward: true, .. }
        ));
        for (body, action) in [(&br#"{"action":5}"#[..], None), (br#"{"a":{"action":"x"},"action":"y"}"#, Some("y"))] {
            match judge(&all, "issues", &sign("s3cret", body), body) {
                Verdict::Accept { action: got, .. } => assert_eq!(got.as_deref(), action),
                other => panic!("{other:?}"),
            }
        }
        for broken in [&b"{\"action\":\"opened\""[..], b"[1,]", b"{} {}", b""] {
            assert!(matches!(judge(&all, "issues", &sign("s3cret", broken), broken), Verdict::Refuse(_)));
        }
        let array = b"[1]";
        assert_eq!(
            judge(&only_opened, "push", &sign("s3cret", array), array),
            Verdict::Accept { reply: middleware::delivered(), forward: true, action: None }
        );
    }
}
