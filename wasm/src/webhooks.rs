//! `pkg/webhooks` and `pkg/webhooks-methods` bindings. Payloads cross as
//! UTF-8 bytes (`TextEncoder` on the JavaScript side, one copy), everything
//! else as strings.

use strata_core::webhooks::middleware::{self, Reply, RequestHead, Route};
use strata_core::webhooks::{self, EventNameError, signature};
use wasm_bindgen::prelude::*;

use crate::wire::{Reader, WireError, write_number, write_string, write_strings};

/// `sha256=<hex>` of `payload` with `secret`.
#[wasm_bindgen]
pub fn webhooks_sign(secret: &str, payload: &[u8]) -> String {
    signature::sign(secret, payload)
}

/// What a signature header value starts with (`sha256=`): the Node builds
/// put it before the platform's lowercase hex digest.
#[wasm_bindgen]
pub fn webhooks_signature_prefix() -> String {
    signature::PREFIX.to_owned()
}

/// The header value of a 32-byte HMAC-SHA256 digest computed by the platform.
#[wasm_bindgen]
pub fn webhooks_format_digest(digest: &[u8]) -> Result<String, JsError> {
    let digest: &[u8; 32] = digest.try_into().map_err(|_| JsError::new("strata-wasm: a digest has 32 bytes"))?;
    Ok(signature::format_digest(digest))
}

/// Whether `signature` is the header value of `digest` (constant time).
#[wasm_bindgen]
pub fn webhooks_digest_matches(digest: &[u8], signature: &str) -> bool {
    <&[u8; 32]>::try_from(digest).is_ok_and(|digest| signature::digest_matches(digest, signature))
}

/// Whether `signature` matches; false for any malformed signature.
#[wasm_bindgen]
pub fn webhooks_verify(secret: &str, payload: &[u8], signature: &str) -> bool {
    signature::verify(secret, payload, signature)
}

/// [`webhooks_verify`] with `secret`, then each secret of the wire list
/// `additional` in order.
#[wasm_bindgen]
pub fn webhooks_verify_with_fallback(
    secret: &str,
    payload: &[u8],
    signature: &str,
    additional: &str,
) -> Result<bool, JsError> {
    let secrets = Reader::new(additional).strings().map_err(|WireError(message)| JsError::new(message))?;
    Ok(signature::verify_with_fallback(secret, secrets, payload, signature))
}

/// `emitterEventNames` as a wire list.
#[wasm_bindgen]
pub fn webhooks_event_names() -> String {
    let mut out = String::new();
    write_strings(&mut out, webhooks::EMITTER_EVENT_NAMES.iter().copied());
    out
}

/// What [`webhooks_check_event_name`] found. Numbered from 1, so a value
/// JavaScript did not set (`undefined` is 0) is refused at the boundary.
#[wasm_bindgen]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventNameCheck {
    /// A name GitHub sends.
    Known = 1,
    /// `*`, which `on` does not take (`onAny` does).
    Any = 2,
    /// `error`, which `on` does not take (`onError` does).
    Error = 3,
    /// A name GitHub does not send.
    Unknown = 4,
}

/// Whether `name` may be listened to with `on`; the message of a refusal
/// is [`webhooks_event_name_message`]'s.
#[wasm_bindgen]
pub fn webhooks_check_event_name(name: &str) -> EventNameCheck {
    match webhooks::validate_event_name(name) {
        Ok(()) => EventNameCheck::Known,
        Err(EventNameError::Any) => EventNameCheck::Any,
        Err(EventNameError::Error) => EventNameCheck::Error,
        Err(EventNameError::Unknown(_)) => EventNameCheck::Unknown,
    }
}

/// The message of a refused event name (`""` for a known one).
#[wasm_bindgen]
pub fn webhooks_event_name_message(name: &str) -> String {
    webhooks::validate_event_name(name).err().map(|error| error.to_string()).unwrap_or_default()
}

/// The listener keys a delivery reaches, in order, as a wire list.
#[wasm_bindgen]
pub fn webhooks_listener_keys(name: &str, action: Option<String>) -> String {
    let keys = webhooks::listener_keys(name, action.as_deref());
    let mut out = String::new();
    write_strings(&mut out, keys.iter().map(String::as_str));
    out
}

fn encode_reply(reply: &Reply) -> String {
    let mut out = String::new();
    write_number(&mut out, usize::from(reply.status));
    out.push(':');
    write_string(&mut out, &reply.body);
    let flat: Vec<&str> = reply.headers.iter().flat_map(|(name, value)| [*name, *value]).collect();
    write_strings(&mut out, flat.into_iter());
    out
}

/// What the middleware does with a request, before reading its body.
/// Numbered from 1 (see [`EventNameCheck`]).
#[wasm_bindgen]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKind {
    /// Not the webhook path (or not POST there): the next handler's.
    NotOurs = 1,
    /// Read the body and deliver.
    Deliver = 2,
    /// Answer now, with [`webhooks_route_reply`]'s reply.
    Reply = 3,
}

/// The answers after the body. Numbered from 1 (see [`EventNameCheck`]).
#[wasm_bindgen]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    /// The listeners ran.
    Delivered = 1,
    /// The listeners outlived the timeout.
    StillProcessing = 2,
    /// The body is over the limit.
    TooLarge = 3,
    /// A listener failed.
    Failed = 4,
}

/// The request's head, as the middleware reads it.
#[allow(clippy::too_many_arguments)]
fn route<'a>(
    method: &'a str,
    url: &'a str,
    pathname: Option<&'a str>,
    content_type: Option<&'a str>,
    event: Option<&'a str>,
    signature: Option<&'a str>,
    delivery: Option<&'a str>,
    content_length: Option<f64>,
    path: &str,
    max_body_bytes: f64,
) -> Route<'a> {
    let head = RequestHead {
        method,
        url,
        pathname,
        content_type,
        event,
        signature,
        delivery,
        content_length: content_length.filter(|length| *length >= 0.0).map(|length| length as u64),
    };
    middleware::route(&head, path, max_body_bytes as u64)
}

/// What the middleware does with a request, before reading its body.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub fn webhooks_route(
    method: &str,
    url: &str,
    pathname: Option<String>,
    content_type: Option<String>,
    event: Option<String>,
    signature: Option<String>,
    delivery: Option<String>,
    content_length: Option<f64>,
    path: &str,
    max_body_bytes: f64,
) -> RouteKind {
    let decided = route(
        method,
        url,
        pathname.as_deref(),
        content_type.as_deref(),
        event.as_deref(),
        signature.as_deref(),
        delivery.as_deref(),
        content_length,
        path,
        max_body_bytes,
    );
    match decided {
        Route::NotOurs => RouteKind::NotOurs,
        Route::Deliver { .. } => RouteKind::Deliver,
        Route::Reply(_) => RouteKind::Reply,
    }
}

/// The reply of a request [`webhooks_route`] answers with
/// [`RouteKind::Reply`] (same arguments), as `<status>:` + body + header
/// list; an error for any other request. Only that path pays for it.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub fn webhooks_route_reply(
    method: &str,
    url: &str,
    pathname: Option<String>,
    content_type: Option<String>,
    event: Option<String>,
    signature: Option<String>,
    delivery: Option<String>,
    content_length: Option<f64>,
    path: &str,
    max_body_bytes: f64,
) -> Result<String, JsError> {
    let decided = route(
        method,
        url,
        pathname.as_deref(),
        content_type.as_deref(),
        event.as_deref(),
        signature.as_deref(),
        delivery.as_deref(),
        content_length,
        path,
        max_body_bytes,
    );
    match decided {
        Route::Reply(reply) => Ok(encode_reply(&reply)),
        _ => Err(JsError::new("strata-wasm: this request is not answered by the middleware")),
    }
}

/// The answers after the body: the first error's `status`, `name` and
/// `message` for [`ReplyKind::Failed`], `max_body_bytes` for
/// [`ReplyKind::TooLarge`]; in [`webhooks_route_reply`]'s form.
#[wasm_bindgen]
pub fn webhooks_reply(kind: ReplyKind, status: Option<u16>, name: &str, message: &str, max_body_bytes: f64) -> String {
    let reply = match kind {
        ReplyKind::Delivered => middleware::delivered(),
        ReplyKind::StillProcessing => middleware::still_processing(),
        ReplyKind::TooLarge => middleware::too_large(max_body_bytes as u64),
        ReplyKind::Failed => middleware::failed(status, name, message),
    };
    encode_reply(&reply)
}

/// Upstream's trailing-slash normalisation of paths.
#[wasm_bindgen]
pub fn webhooks_normalize_trailing_slashes(path: &str) -> String {
    middleware::normalize_trailing_slashes(path).to_owned()
}
