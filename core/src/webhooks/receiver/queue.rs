//! A verified delivery as a queue message. Cloudflare Queues refuse a
//! message above [`MAX_MESSAGE_BYTES`]; GitHub sends payloads up to 25 MB.
//! A delivery whose message would pass the limit has its body stored in a
//! bucket under [`body_key`] and is queued as a message that points at it
//! (a claim check). Consumers get one documented shape either way:
//!
//! ```json
//! {"id":"…","name":"push","action":null,"hookId":"42",
//!  "headers":[["x-github-event","push"],…],
//!  "bodySize":1234,"body":"{…}"}              // inline
//!  "bodySize":912345,"bodyKey":"deliveries/42/…" // claim check, instead of body
//! ```

use serde::Serialize;
use sha2::{Digest, Sha256};

/// The queue binding verified deliveries are sent to.
pub const QUEUE_BINDING: &str = "WEBHOOK_QUEUE";
/// The bucket binding that holds bodies too large for a queue message.
pub const BODIES_BINDING: &str = "WEBHOOK_BODIES";
/// The largest message Cloudflare Queues accept, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 128_000;
/// Bytes kept free below [`MAX_MESSAGE_BYTES`] for the platform's framing of
/// a message: an inline message is at most `MAX_MESSAGE_BYTES - ENVELOPE_ALLOWANCE`.
pub const ENVELOPE_ALLOWANCE: usize = 1_024;
/// The prefix of every key in the bodies bucket.
pub const KEY_PREFIX: &str = "deliveries/";

const HOOK_ID_HEADER: &str = "x-github-hook-id";

/// A verified delivery, as the shell holds it.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// `X-GitHub-Delivery`.
    pub id: &'a str,
    /// `X-GitHub-Event`.
    pub name: &'a str,
    /// The payload's `action`, when it has one.
    pub action: Option<&'a str>,
    /// The headers forwarded with it (name, value).
    pub headers: &'a [(String, String)],
    /// The body bytes (JSON, so UTF-8).
    pub body: &'a [u8],
}

impl Delivery<'_> {
    /// `X-GitHub-Hook-ID`, when it came with the delivery.
    pub fn hook_id(&self) -> Option<&str> {
        self.headers.iter().find(|(name, _)| name.eq_ignore_ascii_case(HOOK_ID_HEADER)).map(|(_, value)| value.as_str())
    }
}

/// What to send to the queue for one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueMessage {
    /// The message carries the body: send `json`.
    Inline {
        /// The message, JSON.
        json: String,
    },
    /// Store the body in the bucket under `key`, then send `json`.
    ClaimCheck {
        /// The bucket key ([`body_key`]).
        key: String,
        /// The message, JSON, with `bodyKey` instead of `body`.
        json: String,
    },
    /// The message would pass the limit and no bucket is bound.
    TooLarge {
        /// The inline message's size in bytes.
        bytes: usize,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Message<'a> {
    id: &'a str,
    name: &'a str,
    action: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hook_id: Option<&'a str>,
    headers: &'a [(String, String)],
    body_size: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<std::borrow::Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_key: Option<&'a str>,
}

fn to_json(message: &Message<'_>) -> String {
    serde_json::to_string(message).expect("a message of strings and numbers serializes")
}

/// The message for `delivery`: inline when its JSON fits the limit (less
/// the allowance), else a claim check when `bucket` is bound, else
/// [`QueueMessage::TooLarge`]. The size counts the encoded message (JSON
/// escaping can make it much larger than the body), not the body alone.
pub fn message(delivery: &Delivery<'_>, bucket: bool) -> QueueMessage {
    let mut message = Message {
        id: delivery.id,
        name: delivery.name,
        action: delivery.action,
        hook_id: delivery.hook_id(),
        headers: delivery.headers,
        body_size: delivery.body.len(),
        body: Some(String::from_utf8_lossy(delivery.body)),
        body_key: None,
    };
    // A quick bound first: the message is never smaller than its body.
    if delivery.body.len() <= MAX_MESSAGE_BYTES {
        let json = to_json(&message);
        if json.len() <= MAX_MESSAGE_BYTES - ENVELOPE_ALLOWANCE {
            return QueueMessage::Inline { json };
        }
    }
    if !bucket {
        let bytes =
            if delivery.body.len() <= MAX_MESSAGE_BYTES { to_json(&message).len() } else { delivery.body.len() };
        return QueueMessage::TooLarge { bytes };
    }
    let key = body_key(message.hook_id, delivery.id);
    message.body = None;
    message.body_key = Some(&key);
    let json = to_json(&message);
    QueueMessage::ClaimCheck { json, key }
}

/// A key segment as it is when it is short and plain, else `h-` and the hex
/// SHA-256 of it (a delivery id is the sender's text: no `/`, `..` or
/// control characters reach a key).
fn key_segment(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !text.is_empty() && text.len() <= 128 && text.chars().all(plain) && !text.starts_with('.') {
        return text.to_owned();
    }
    let digest = Sha256::digest(text.as_bytes());
    let mut segment = String::from("h-");
    for byte in digest {
        segment.push_str(&format!("{byte:02x}"));
    }
    segment
}

/// The bucket key of a delivery's body: `deliveries/<hook id>/<delivery id>`
/// (`-` when the hook id is unknown). The same delivery always gets the same
/// key, so storing it again (a retry) overwrites rather than adds.
pub fn body_key(hook_id: Option<&str>, delivery_id: &str) -> String {
    let hook = hook_id.map_or_else(|| "-".to_owned(), key_segment);
    format!("{KEY_PREFIX}{hook}/{}", key_segment(delivery_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> Vec<(String, String)> {
        vec![("x-github-event".into(), "push".into()), ("X-GitHub-Hook-ID".into(), "42".into())]
    }

    fn delivery<'a>(headers: &'a [(String, String)], body: &'a [u8]) -> Delivery<'a> {
        Delivery { id: "d-1", name: "push", action: None, headers, body }
    }

    #[test]
    fn a_small_delivery_is_inline_with_the_documented_shape() {
        let headers = headers();
        let QueueMessage::Inline { json } = message(&delivery(&headers, br#"{"a":"\u00fc"}"#), true) else {
            panic!("inline expected")
        };
        assert_eq!(
            json,
            r#"{"id":"d-1","name":"push","action":null,"hookId":"42","headers":[["x-github-event","push"],["X-GitHub-Hook-ID","42"]],"bodySize":14,"body":"{\"a\":\"\\u00fc\"}"}"#
        );
    }

    #[test]
    fn the_limit_counts_the_encoded_message() {
        let headers = headers();
        // 100 KB of quotes: under the limit as bytes, twice it once escaped.
        let quotes = vec![b'"'; 100_000];
        assert_eq!(
            message(&delivery(&headers, &quotes), false),
            QueueMessage::TooLarge {
                bytes: to_json(&Message {
                    id: "d-1",
                    name: "push",
                    action: None,
                    hook_id: Some("42"),
                    headers: &headers,
                    body_size: 100_000,
                    body: Some(String::from_utf8_lossy(&quotes)),
                    body_key: None
                })
                .len()
            }
        );
        let QueueMessage::ClaimCheck { key, json } = message(&delivery(&headers, &quotes), true) else {
            panic!("claim check expected")
        };
        assert_eq!(key, "deliveries/42/d-1");
        assert_eq!(
            json,
            r#"{"id":"d-1","name":"push","action":null,"hookId":"42","headers":[["x-github-event","push"],["X-GitHub-Hook-ID","42"]],"bodySize":100000,"bodyKey":"deliveries/42/d-1"}"#
        );
    }

    #[test]
    fn the_boundary_is_exact() {
        let headers = headers();
        let overhead = match message(&delivery(&headers, b""), false) {
            QueueMessage::Inline { json } => json.len(),
            other => panic!("{other:?}"),
        };
        let limit = MAX_MESSAGE_BYTES - ENVELOPE_ALLOWANCE;
        // bodySize grows from 1 to 6 digits: measure with a body of the same length class.
        let fits = vec![b'x'; limit - overhead - 5];
        assert!(
            matches!(message(&delivery(&headers, &fits), false), QueueMessage::Inline { json } if json.len() == limit)
        );
        let one_more = vec![b'x'; limit - overhead - 4];
        assert_eq!(message(&delivery(&headers, &one_more), false), QueueMessage::TooLarge { bytes: limit + 1 });
        let huge = vec![b'x'; 25 << 20];
        assert_eq!(message(&delivery(&headers, &huge), false), QueueMessage::TooLarge { bytes: 25 << 20 });
    }

    #[test]
    fn keys_are_stable_and_plain() {
        assert_eq!(
            body_key(Some("42"), "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
            "deliveries/42/72d3162e-cc78-11e3-81ab-4c9367dc0958"
        );
        assert_eq!(body_key(None, "abc"), "deliveries/-/abc");
        for hostile in ["../../etc", "a/b", "", ".hidden", "x\ny", &"y".repeat(129)] {
            let key = body_key(Some("1"), hostile);
            let segment = key.strip_prefix("deliveries/1/").unwrap();
            assert!(segment.starts_with("h-") && segment.len() == 66, "{hostile:?} → {key}");
            assert_eq!(key, body_key(Some("1"), hostile), "stable");
        }
        assert_ne!(body_key(Some("1"), "a/b"), body_key(Some("1"), "a/c"));
    }
}
