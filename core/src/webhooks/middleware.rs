//! What the webhook middleware answers, for the Node and web middleware of
//! `pkg/webhooks` and for the edge receiver alike: the shells parse the URL
//! with their platform, read headers and the body, and run handlers; every
//! status code, body and header set comes from here.

/// The default path the middleware serves.
pub const DEFAULT_PATH: &str = "/api/github/webhooks";

/// How long the middleware waits for handlers before answering 202
/// (GitHub gives up after 10 seconds).
pub const DEFAULT_TIMEOUT_MS: u32 = 9_000;

/// The largest body accepted: GitHub caps payloads at 25 MB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 25 * 1024 * 1024;

/// The delivery headers, in the order a missing-headers answer lists them.
pub const DELIVERY_HEADERS: [&str; 3] = ["x-github-event", "x-hub-signature-256", "x-github-delivery"];

const JSON: &[(&str, &str)] = &[("content-type", "application/json")];
const JSON_ACCEPT_JSON: &[(&str, &str)] = &[("content-type", "application/json"), ("accept", "application/json")];

/// An answer: status, body and headers (without `content-length`, which the
/// shell sets from the bytes it sends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Body text.
    pub body: String,
    /// Header names and values, in order.
    pub headers: &'static [(&'static str, &'static str)],
}

/// What a request gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route<'a> {
    /// Not the middleware's path: the Node middleware returns `false` (and
    /// calls `next`), the web middleware answers with an empty 200.
    NotOurs,
    /// Answer now, without reading the body.
    Reply(Reply),
    /// Read the body, verify and dispatch the delivery.
    Deliver {
        /// `X-GitHub-Event`.
        name: &'a str,
        /// `X-Hub-Signature-256`.
        signature: &'a str,
        /// `X-GitHub-Delivery`.
        id: &'a str,
    },
}

/// The parts of a request the decision needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestHead<'a> {
    /// Method as received.
    pub method: &'a str,
    /// The URL as received (quoted in the 422 answer).
    pub url: &'a str,
    /// The path of the URL with trailing slashes normalised, or `None` when
    /// the platform's URL parser refused the URL.
    pub pathname: Option<&'a str>,
    /// `Content-Type`.
    pub content_type: Option<&'a str>,
    /// `X-GitHub-Event`.
    pub event: Option<&'a str>,
    /// `X-Hub-Signature-256`.
    pub signature: Option<&'a str>,
    /// `X-GitHub-Delivery`.
    pub delivery: Option<&'a str>,
    /// `Content-Length`, when sent and numeric.
    pub content_length: Option<u64>,
}

/// A JSON string literal (what `JSON.stringify` writes for a string).
pub(crate) fn json_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            control if u32::from(control) < 0x20 => {
                let code = u32::from(control) as usize;
                out.push_str("\\u00");
                out.push(char::from(HEX[code >> 4]));
                out.push(char::from(HEX[code & 0xf]));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

/// `{"error":"<message>"}`.
pub fn error_body(message: &str) -> String {
    let mut body = String::with_capacity(message.len() + 12);
    body.push_str("{\"error\":");
    json_string(&mut body, message);
    body.push('}');
    body
}

/// Upstream's trailing-slash normalisation: `""` and `"///"` become `/`,
/// otherwise trailing slashes are dropped.
pub fn normalize_trailing_slashes(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() { "/" } else { trimmed }
}

/// JavaScript's `\s` (with the `u` flag).
fn is_js_whitespace(character: char) -> bool {
    character.is_whitespace() || character == '\u{feff}'
}

/// `application/json`, optionally followed by parameters (`; charset=utf-8`).
fn is_json_content_type(value: &str) -> bool {
    let rest = value.trim_start_matches(is_js_whitespace);
    let Some(rest) = rest.strip_prefix("application/json") else {
        return false;
    };
    let rest = rest.trim_start_matches(is_js_whitespace);
    rest.is_empty() || rest.starts_with(';')
}

/// Decides what a request gets before its body is read.
pub fn route<'a>(head: &RequestHead<'a>, path: &str, max_body_bytes: u64) -> Route<'a> {
    let Some(pathname) = head.pathname else {
        let message = ["Request URL could not be parsed: ", head.url].concat();
        return Route::Reply(Reply { status: 422, body: error_body(&message), headers: JSON });
    };
    if pathname != normalize_trailing_slashes(path) {
        return Route::NotOurs;
    }
    if head.method != "POST" {
        let message = ["Unknown route: ", head.method, " ", pathname].concat();
        return Route::Reply(Reply { status: 404, body: error_body(&message), headers: JSON });
    }
    if !head.content_type.is_some_and(is_json_content_type) {
        let message = "Unsupported \"Content-Type\" header value. Must be \"application/json\"";
        return Route::Reply(Reply { status: 415, body: error_body(message), headers: JSON_ACCEPT_JSON });
    }
    let values = [head.event, head.signature, head.delivery];
    let missing: Vec<&str> =
        DELIVERY_HEADERS.iter().zip(values).filter(|(_, value)| value.is_none()).map(|(name, _)| *name).collect();
    if !missing.is_empty() {
        let message = ["Required headers missing: ", &missing.join(", ")].concat();
        return Route::Reply(Reply { status: 400, body: error_body(&message), headers: JSON_ACCEPT_JSON });
    }
    if head.content_length.is_some_and(|length| length > max_body_bytes) {
        return Route::Reply(too_large(max_body_bytes));
    }
    match (head.event, head.signature, head.delivery) {
        (Some(name), Some(signature), Some(id)) => Route::Deliver { name, signature, id },
        _ => Route::NotOurs,
    }
}

/// 413: the body is larger than the limit (answered before any hashing).
pub fn too_large(max_body_bytes: u64) -> Reply {
    let message = ["Payload too large: the limit is ", &max_body_bytes.to_string(), " bytes"].concat();
    Reply { status: 413, body: error_body(&message), headers: JSON_ACCEPT_JSON }
}

/// 400: the body could not be read (the client went away mid-upload).
pub fn unreadable_body() -> Reply {
    Reply { status: 400, body: error_body("Error: the request body could not be read"), headers: JSON }
}

/// 200: verified and every handler succeeded.
pub fn delivered() -> Reply {
    Reply {
        status: 200,
        body: "ok\n".into(),
        headers: &[("content-type", "text/plain"), ("accept", "application/json")],
    }
}

/// 202: handlers still running when the timeout fired.
pub fn still_processing() -> Reply {
    Reply {
        status: 202,
        body: "still processing\n".into(),
        headers: &[("Content-Type", "text/plain"), ("accept", "application/json")],
    }
}

/// The answer to a failed delivery, from its first error: the error's
/// `status` (500 when it has none) and `"<name>: <message>"`.
pub fn failed(status: Option<u16>, name: &str, message: &str) -> Reply {
    let text = if message.is_empty() {
        "Error: An Unspecified error occurred".to_owned()
    } else {
        [name, ": ", message].concat()
    };
    Reply { status: status.unwrap_or(500), body: error_body(&text), headers: JSON_ACCEPT_JSON }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> RequestHead<'static> {
        RequestHead {
            method: "POST",
            url: "/api/github/webhooks",
            pathname: Some("/api/github/webhooks"),
            content_type: Some("application/json"),
            event: Some("push"),
            signature: Some("sha256=x"),
            delivery: Some("123"),
            content_length: Some(10),
        }
    }

    fn reply(route: Route<'_>) -> (u16, String) {
        match route {
            Route::Reply(reply) => (reply.status, reply.body),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn a_complete_delivery_is_delivered() {
        assert_eq!(
            route(&head(), DEFAULT_PATH, DEFAULT_MAX_BODY_BYTES),
            Route::Deliver { name: "push", signature: "sha256=x", id: "123" }
        );
        let charset = RequestHead { content_type: Some(" application/json ; charset=utf-8"), ..head() };
        assert!(matches!(route(&charset, "/api/github/webhooks/", 100), Route::Deliver { .. }));
    }

    #[test]
    fn an_unreadable_body_gets_400() {
        let reply = unreadable_body();
        assert_eq!(
            (reply.status, reply.body.as_str()),
            (400, r#"{"error":"Error: the request body could not be read"}"#)
        );
        assert_eq!(reply.headers, [("content-type", "application/json")]);
    }

    #[test]
    fn other_paths_are_not_ours() {
        assert_eq!(route(&RequestHead { pathname: Some("/"), ..head() }, DEFAULT_PATH, 100), Route::NotOurs);
    }

    #[test]
    fn rejections_in_upstreams_order() {
        assert_eq!(
            reply(route(&RequestHead { pathname: None, url: "//x:y", ..head() }, DEFAULT_PATH, 100)),
            (422, r#"{"error":"Request URL could not be parsed: //x:y"}"#.into())
        );
        assert_eq!(
            reply(route(&RequestHead { method: "GET", content_type: None, ..head() }, DEFAULT_PATH, 100)),
            (404, r#"{"error":"Unknown route: GET /api/github/webhooks"}"#.into())
        );
        assert_eq!(
            reply(route(
                &RequestHead { content_type: Some("application/x-www-form-urlencoded"), event: None, ..head() },
                DEFAULT_PATH,
                100
            )),
            (415, r#"{"error":"Unsupported \"Content-Type\" header value. Must be \"application/json\""}"#.into())
        );
        assert_eq!(
            reply(route(&RequestHead { content_type: Some("application/jsonx"), ..head() }, DEFAULT_PATH, 100)).0,
            415
        );
        assert_eq!(
            reply(route(&RequestHead { event: None, delivery: None, ..head() }, DEFAULT_PATH, 100)),
            (400, r#"{"error":"Required headers missing: x-github-event, x-github-delivery"}"#.into())
        );
        assert_eq!(
            reply(route(&RequestHead { content_length: Some(101), ..head() }, DEFAULT_PATH, 100)),
            (413, r#"{"error":"Payload too large: the limit is 100 bytes"}"#.into())
        );
    }

    #[test]
    fn answers_after_the_body() {
        assert_eq!(delivered().body, "ok\n");
        assert_eq!(still_processing().status, 202);
        let failure = failed(Some(400), "Error", "signature does not match\n\"x\"");
        assert_eq!(
            (failure.status, failure.body.as_str()),
            (400, r#"{"error":"Error: signature does not match\n\"x\""}"#)
        );
        assert_eq!(failed(None, "Error", "").body, r#"{"error":"Error: An Unspecified error occurred"}"#);
    }

    #[test]
    fn trailing_slashes() {
        assert_eq!(normalize_trailing_slashes(""), "/");
        assert_eq!(normalize_trailing_slashes("///"), "/");
        assert_eq!(normalize_trailing_slashes("/a//"), "/a");
        assert_eq!(normalize_trailing_slashes("/a"), "/a");
    }
}
