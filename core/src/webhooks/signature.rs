//! `X-Hub-Signature-256`: `sha256=` and the lowercase hex HMAC-SHA256 of the
//! raw payload with the shared secret.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The prefix GitHub writes before the hex digest.
pub const PREFIX: &str = "sha256=";

const HEX: &[u8; 16] = b"0123456789abcdef";

fn mac(secret: &str, payload: &[u8]) -> Hmac<Sha256> {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).expect("HMAC accepts keys of any length");
    mac.update(payload);
    mac
}

/// `sha256=<64 lowercase hex digits>` for `payload` signed with `secret`.
pub fn sign(secret: &str, payload: &[u8]) -> String {
    let digest: [u8; 32] = mac(secret, payload).finalize().into_bytes().into();
    format_digest(&digest)
}

/// The header value for an HMAC-SHA256 digest computed elsewhere (the Node
/// build of the packages hashes with the platform's native HMAC).
pub fn format_digest(digest: &[u8; 32]) -> String {
    let mut out = String::with_capacity(PREFIX.len() + 64);
    out.push_str(PREFIX);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

fn lowercase_hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

/// The 32 digest bytes of a well-formed signature: the exact prefix and 64
/// lowercase hex digits, nothing else (what `sign` produces, and what the
/// upstream package's byte-for-byte comparison accepts).
fn parse(signature: &str) -> Option<[u8; 32]> {
    let hex = signature.strip_prefix(PREFIX)?.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = lowercase_hex_value(pair[0])? << 4 | lowercase_hex_value(pair[1])?;
    }
    Some(digest)
}

/// Whether `signature` has the form of a signature at all (the prefix and 64
/// lowercase hex digits): a shell that hashes with the platform's HMAC skips
/// hashing for one that cannot match.
pub fn is_well_formed(signature: &str) -> bool {
    parse(signature).is_some()
}

/// Whether `signature` is `payload`'s signature with `secret`. The digests
/// are compared in constant time; a malformed, truncated or prefix-less
/// signature is simply `false`.
pub fn verify(secret: &str, payload: &[u8], signature: &str) -> bool {
    match parse(signature) {
        Some(digest) => mac(secret, payload).verify_slice(&digest).is_ok(),
        None => false,
    }
}

/// Whether `signature` is the header value of `digest` (an HMAC-SHA256
/// computed elsewhere), compared in constant time; false when malformed.
pub fn digest_matches(digest: &[u8; 32], signature: &str) -> bool {
    parse(signature).is_some_and(|expected| bool::from(expected.ct_eq(digest)))
}

/// [`verify`] with `secret`, then with each of `additional_secrets` in order
/// (secret rotation); true at the first match.
pub fn verify_with_fallback<'a>(
    secret: &str,
    additional_secrets: impl IntoIterator<Item = &'a str>,
    payload: &[u8],
    signature: &str,
) -> bool {
    let Some(digest) = parse(signature) else {
        return false;
    };
    let matches = |secret: &str| mac(secret, payload).verify_slice(&digest).is_ok();
    matches(secret) || additional_secrets.into_iter().any(matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAYLOAD: &[u8] = br#"{"foo":"bar"}"#;
    const SIGNATURE: &str = "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3";

    #[test]
    fn sign_gives_githubs_format() {
        assert_eq!(sign("mysecret", PAYLOAD), SIGNATURE);
    }

    #[test]
    fn verify_accepts_only_the_exact_signature() {
        assert!(verify("mysecret", PAYLOAD, SIGNATURE));
        assert!(!verify("other", PAYLOAD, SIGNATURE));
        assert!(!verify("mysecret", br#"{"foo":"baz"}"#, SIGNATURE));
        assert!(!verify("mysecret", PAYLOAD, &SIGNATURE.to_uppercase()));
        assert!(!verify("mysecret", PAYLOAD, &SIGNATURE[..70]));
        assert!(!verify("mysecret", PAYLOAD, &SIGNATURE[7..]));
        assert!(!verify("mysecret", PAYLOAD, &format!("sha1={}", &SIGNATURE[7..])));
        assert!(!verify("mysecret", PAYLOAD, &format!("{SIGNATURE}0")));
        assert!(!verify("mysecret", PAYLOAD, ""));
        assert!(!verify("mysecret", PAYLOAD, "sha256=ü4d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3"));
    }

    #[test]
    fn digests_computed_elsewhere() {
        let digest: [u8; 32] = mac("mysecret", PAYLOAD).finalize().into_bytes().into();
        assert_eq!(format_digest(&digest), SIGNATURE);
        assert!(digest_matches(&digest, SIGNATURE));
        assert!(!digest_matches(&[0; 32], SIGNATURE));
        assert!(!digest_matches(&digest, &SIGNATURE[..70]));
    }

    #[test]
    fn fallback_secrets_are_tried_in_order() {
        assert!(verify_with_fallback("wrong", ["also wrong", "mysecret"], PAYLOAD, SIGNATURE));
        assert!(verify_with_fallback("mysecret", [], PAYLOAD, SIGNATURE));
        assert!(!verify_with_fallback("wrong", ["nope"], PAYLOAD, SIGNATURE));
        assert!(!verify_with_fallback("mysecret", ["mysecret"], PAYLOAD, "sha256=zz"));
    }

    #[test]
    fn special_characters_are_signed_as_utf8() {
        let payload = "{\"foo\":\"Foo\\n\\u001B[34mbar: ♥♥♥♥♥♥♥♥\\nthis-is-lost\\u001B[0m\\u001B[2K\"}";
        assert!(verify(
            "development",
            payload.as_bytes(),
            "sha256=afecc3caa27548bb90d51a50384cb2868b9a3327b4ad6a01c9bd4ed0f8b0b12c"
        ));
    }
}
