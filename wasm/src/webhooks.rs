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

/// `""` for a known name, else `any:`, `error:` or `unknown:` followed by
/// the message.
#[wasm_bindgen]
pub fn webhooks_validate_event_name(name: &str) -> String {
    match webhooks::validate_event_name(name) {
        Ok(()) => String::new(),
        Err(error) => {
            let kind = match error {
                EventNameError::Any => "any:",
                EventNameError::Error => "error:",
                EventNameError::Unknown(_) => "unknown:",
            };
            [kind, &error.to_string()].concat()
        }
    }
}

/// The listener keys a delivery reaches, in order, as a wire list.
#[wasm_bindgen]
pub fn webhooks_listener_keys(name: &str, action: Option<String>) -> String {
    let keys = webhooks::listener_keys(name, action.as_deref());
    let mut out = String::new();
    write_strings(&mut out, keys.iter().map(String::as_str));
    out
}

fn write_reply(out: &mut String, reply: &Reply) {
    out.push('r');
    write_number(out, usize::from(reply.status));
    out.push(':');
    write_string(out, &reply.body);
    let flat: Vec<&str> = reply.headers.iter().flat_map(|(name, value)| [*name, *value]).collect();
    write_strings(out, flat.into_iter());
}

/// What the middleware does with a request, before reading its body: `n`
/// (not ours), `d` (deliver), or `r<status>:` + body + header list (answer).
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
) -> String {
    let head = RequestHead {
        method,
        url,
        pathname: pathname.as_deref(),
        content_type: content_type.as_deref(),
        event: event.as_deref(),
        signature: signature.as_deref(),
        delivery: delivery.as_deref(),
        content_length: content_length.filter(|length| *length >= 0.0).map(|length| length as u64),
    };
    match middleware::route(&head, path, max_body_bytes as u64) {
        Route::NotOurs => "n".into(),
        Route::Deliver { .. } => "d".into(),
        Route::Reply(reply) => {
            let mut out = String::new();
            write_reply(&mut out, &reply);
            out
        }
    }
}

/// The answers after the body: `delivered`, `still_processing`,
/// `too_large` (with `max_body_bytes`) or `failed` (with the first error's
/// status, name and message), in the form of [`webhooks_route`]'s `r…`.
#[wasm_bindgen]
pub fn webhooks_reply(kind: &str, status: Option<u16>, name: &str, message: &str, max_body_bytes: f64) -> String {
    let reply = match kind {
        "delivered" => middleware::delivered(),
        "still_processing" => middleware::still_processing(),
        "too_large" => middleware::too_large(max_body_bytes as u64),
        _ => middleware::failed(status, name, message),
    };
    let mut out = String::new();
    write_reply(&mut out, &reply);
    out
}

/// Upstream's trailing-slash normalisation of paths.
#[wasm_bindgen]
pub fn webhooks_normalize_trailing_slashes(path: &str) -> String {
    middleware::normalize_trailing_slashes(path).to_owned()
}
