//! The signature check with the platform's HMAC: WebCrypto
//! (`crypto.subtle`) hashes natively, where HMAC in WebAssembly costs CPU
//! time that Workers bill and cap. Core parses the header and compares the
//! digest in constant time (`signature::digest_matches`); where WebCrypto
//! refuses, the check runs in WebAssembly (`signature::verify_with_fallback`).
//! The GitHub App token of the redelivery run is signed here too.

use std::cell::{Cell, RefCell};

use js_sys::{Array, ArrayBuffer, Function, Object, Promise, Reflect, Uint8Array};
use strata_core::webhooks::receiver::ReceiverConfig;
use strata_core::webhooks::signature;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{console_log, console_warn};

thread_local! {
    /// Imported HMAC keys by secret: importing is most of a small payload's
    /// cost, and an isolate's secrets do not change while it runs.
    static KEYS: RefCell<Vec<(String, JsValue)>> = const { RefCell::new(Vec::new()) };
    /// Whether this isolate has said which HMAC it uses (once, in the log).
    static REPORTED: Cell<bool> = const { Cell::new(false) };
}

/// Logs once per isolate which HMAC checks signatures.
fn report(webcrypto: bool) {
    if !REPORTED.replace(true) {
        if webcrypto {
            console_log!("signatures are checked with WebCrypto's HMAC");
        } else {
            console_warn!("WebCrypto refused HMAC-SHA256: signatures are checked in WebAssembly");
        }
    }
}

fn subtle() -> Result<JsValue, JsValue> {
    let crypto = Reflect::get(&js_sys::global(), &"crypto".into())?;
    Reflect::get(&crypto, &"subtle".into())
}

fn method(subtle: &JsValue, name: &str) -> Result<Function, JsValue> {
    Reflect::get(subtle, &name.into())?.dyn_into::<Function>()
}

/// A non-extractable signing key of algorithm `name` with SHA-256, imported
/// from `bytes` in `format` (`raw`, `pkcs8`).
async fn import_key(subtle: &JsValue, format: &str, bytes: &[u8], name: &str) -> Result<JsValue, JsValue> {
    let algorithm = Object::new();
    Reflect::set(&algorithm, &"name".into(), &name.into())?;
    Reflect::set(&algorithm, &"hash".into(), &"SHA-256".into())?;
    let arguments =
        Array::of5(&format.into(), &Uint8Array::from(bytes), &algorithm, &JsValue::FALSE, &Array::of1(&"sign".into()));
    let promise: Promise = method(subtle, "importKey")?.apply(subtle, &arguments)?.dyn_into()?;
    JsFuture::from(promise).await
}

/// `crypto.subtle.sign(name, key, data)`.
async fn sign(subtle: &JsValue, name: &str, key: &JsValue, data: &Uint8Array) -> Result<ArrayBuffer, JsValue> {
    let arguments = Array::of3(&name.into(), key, data);
    let promise: Promise = method(subtle, "sign")?.apply(subtle, &arguments)?.dyn_into()?;
    JsFuture::from(promise).await?.dyn_into()
}

async fn key(subtle: &JsValue, secret: &str) -> Result<JsValue, JsValue> {
    if let Some(key) =
        KEYS.with(|keys| keys.borrow().iter().find(|(known, _)| known == secret).map(|(_, key)| key.clone()))
    {
        return Ok(key);
    }
    let key = import_key(subtle, "raw", secret.as_bytes(), "HMAC").await?;
    KEYS.with(|keys| keys.borrow_mut().push((secret.to_owned(), key.clone())));
    Ok(key)
}

/// HMAC-SHA256 of `data` with `secret`, by WebCrypto.
async fn hmac(secret: &str, data: &Uint8Array) -> Result<[u8; 32], JsValue> {
    let subtle = subtle()?;
    let key = key(&subtle, secret).await?;
    let digest = sign(&subtle, "HMAC", &key, data).await?;
    let mut bytes = [0u8; 32];
    let view = Uint8Array::new(&digest);
    if view.length() != 32 {
        return Err("an HMAC-SHA256 digest has 32 bytes".into());
    }
    view.copy_to(&mut bytes);
    Ok(bytes)
}

/// Whether `signature` signs `body` with one of the configured secrets, in
/// their order. A malformed signature is refused without hashing.
pub(crate) async fn verify(config: &ReceiverConfig, signature: &str, body: &[u8]) -> bool {
    if !signature::is_well_formed(signature) {
        return false;
    }
    let data = Uint8Array::from(body);
    for secret in config.secrets() {
        match hmac(secret, &data).await {
            Ok(digest) => {
                report(true);
                if signature::digest_matches(&digest, signature) {
                    return true;
                }
            }
            Err(_) => {
                report(false);
                let additional = config.additional_secrets.iter().map(String::as_str);
                return signature::verify_with_fallback(&config.secret, additional, body, signature);
            }
        }
    }
    false
}

/// An RSASSA-PKCS1-v1_5 / SHA-256 signature of `data` with the PKCS#8 DER
/// key `key_der` (the GitHub App token), by WebCrypto.
pub(crate) async fn rsa_sha256_sign(key_der: &[u8], data: &[u8]) -> Result<Vec<u8>, JsValue> {
    let subtle = subtle()?;
    let key = import_key(&subtle, "pkcs8", key_der, "RSASSA-PKCS1-v1_5").await?;
    let signature = sign(&subtle, "RSASSA-PKCS1-v1_5", &key, &Uint8Array::from(data)).await?;
    Ok(Uint8Array::new(&signature).to_vec())
}
