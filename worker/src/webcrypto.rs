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

async fn key(subtle: &JsValue, secret: &str) -> Result<JsValue, JsValue> {
    if let Some(key) =
        KEYS.with(|keys| keys.borrow().iter().find(|(known, _)| known == secret).map(|(_, key)| key.clone()))
    {
        return Ok(key);
    }
    let algorithm = Object::new();
    Reflect::set(&algorithm, &"name".into(), &"HMAC".into())?;
    Reflect::set(&algorithm, &"hash".into(), &"SHA-256".into())?;
    let arguments = Array::of5(
        &"raw".into(),
        &Uint8Array::from(secret.as_bytes()),
        &algorithm,
        &JsValue::FALSE,
        &Array::of1(&"sign".into()),
    );
    let promise: Promise = method(subtle, "importKey")?.apply(subtle, &arguments)?.dyn_into()?;
    let key = JsFuture::from(promise).await?;
    KEYS.with(|keys| keys.borrow_mut().push((secret.to_owned(), key.clone())));
    Ok(key)
}

/// HMAC-SHA256 of `data` with `secret`, by WebCrypto.
async fn hmac(secret: &str, data: &Uint8Array) -> Result<[u8; 32], JsValue> {
    let subtle = subtle()?;
    let key = key(&subtle, secret).await?;
    let arguments = Array::of3(&"HMAC".into(), &key, data);
    let promise: Promise = method(&subtle, "sign")?.apply(&subtle, &arguments)?.dyn_into()?;
    let digest: ArrayBuffer = JsFuture::from(promise).await?.dyn_into()?;
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
    let algorithm = Object::new();
    Reflect::set(&algorithm, &"name".into(), &"RSASSA-PKCS1-v1_5".into())?;
    Reflect::set(&algorithm, &"hash".into(), &"SHA-256".into())?;
    let arguments = Array::of5(
        &"pkcs8".into(),
        &Uint8Array::from(key_der),
        &algorithm,
        &JsValue::FALSE,
        &Array::of1(&"sign".into()),
    );
    let promise: Promise = method(&subtle, "importKey")?.apply(&subtle, &arguments)?.dyn_into()?;
    let key = JsFuture::from(promise).await?;
    let arguments = Array::of3(&"RSASSA-PKCS1-v1_5".into(), &key, &Uint8Array::from(data));
    let promise: Promise = method(&subtle, "sign")?.apply(&subtle, &arguments)?.dyn_into()?;
    let signature: ArrayBuffer = JsFuture::from(promise).await?.dyn_into()?;
    Ok(Uint8Array::new(&signature).to_vec())
}
