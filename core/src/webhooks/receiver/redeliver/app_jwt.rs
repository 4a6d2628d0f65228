//! The GitHub App JSON Web Token: RS256 over `{"iat","exp","iss"}`, issued
//! 60 s in the past (GitHub's advice against clock drift) and valid for 9
//! minutes (GitHub accepts at most 10). Core builds the signing input and
//! assembles the token; the shell signs with RSASSA-PKCS1-v1_5 / SHA-256
//! (WebCrypto) using the key [`private_key_der`] prepares.

use base64ct::{Base64UrlUnpadded, Encoding};
use pkcs8::der::{Decode, Encode};

/// Seconds the token is backdated.
pub const BACKDATE_SECONDS: u64 = 60;
/// Seconds the token is valid after it is issued.
pub const VALID_SECONDS: u64 = 9 * 60;

/// Why a private key was refused. Messages never contain key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not PEM at all.
    #[error("GITHUB_APP_PRIVATE_KEY is not a PEM private key")]
    NotPem,
    /// PEM of something else than an RSA private key.
    #[error("GITHUB_APP_PRIVATE_KEY is a PEM \"{0}\", not an RSA PRIVATE KEY")]
    WrongLabel(String),
    /// The DER inside does not parse as an RSA key.
    #[error("GITHUB_APP_PRIVATE_KEY is not a valid RSA private key")]
    Malformed,
}

/// The header of every app token, base64url.
fn header() -> String {
    Base64UrlUnpadded::encode_string(br#"{"alg":"RS256","typ":"JWT"}"#)
}

/// `base64url(header).base64url(claims)` for app `app_id` at `now_seconds`.
pub fn signing_input(app_id: &str, now_seconds: u64) -> String {
    let claims = serde_json::json!({
        "iat": now_seconds.saturating_sub(BACKDATE_SECONDS),
        "exp": now_seconds + VALID_SECONDS,
        "iss": app_id,
    });
    format!("{}.{}", header(), Base64UrlUnpadded::encode_string(claims.to_string().as_bytes()))
}

/// The token: the signing input and the base64url signature.
pub fn assemble(signing_input: &str, signature: &[u8]) -> String {
    format!("{signing_input}.{}", Base64UrlUnpadded::encode_string(signature))
}

/// The PKCS#8 DER of a PEM RSA private key: GitHub issues PKCS#1
/// (`RSA PRIVATE KEY`), which is wrapped; PKCS#8 (`PRIVATE KEY`) is checked
/// to hold an RSA key. Escaped newlines (`\n` as two characters, as some
/// secret stores keep them) are accepted.
pub fn private_key_der(pem: &str) -> Result<Vec<u8>, KeyError> {
    let pem = pem.trim().replace("\\n", "\n");
    let (label, der) = pem_rfc7468::decode_vec(pem.as_bytes()).map_err(|_| KeyError::NotPem)?;
    match label {
        "RSA PRIVATE KEY" => {
            pkcs1::RsaPrivateKey::from_der(&der).map_err(|_| KeyError::Malformed)?;
            pkcs8::PrivateKeyInfo::new(pkcs1::ALGORITHM_ID, &der).to_der().map_err(|_| KeyError::Malformed)
        }
        "PRIVATE KEY" => {
            let info = pkcs8::PrivateKeyInfo::from_der(&der).map_err(|_| KeyError::Malformed)?;
            if info.algorithm.oid != pkcs1::ALGORITHM_OID {
                return Err(KeyError::Malformed);
            }
            pkcs1::RsaPrivateKey::from_der(info.private_key).map_err(|_| KeyError::Malformed)?;
            Ok(der)
        }
        other => Err(KeyError::WrongLabel(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKCS1: &str = include_str!("../../../../../tests/data/redeliver/test-app-key.pem");
    const PKCS8_DER: &[u8] = include_bytes!("../../../../../tests/data/redeliver/test-app-key.pk8.der");

    #[test]
    fn a_github_key_becomes_the_pkcs8_openssl_makes() {
        assert_eq!(private_key_der(PKCS1).unwrap(), PKCS8_DER);
        assert_eq!(private_key_der(&PKCS1.replace('\n', "\\n")).unwrap(), PKCS8_DER);
        let pkcs8_pem = pem_rfc7468::encode_string("PRIVATE KEY", pem_rfc7468::LineEnding::LF, PKCS8_DER).unwrap();
        assert_eq!(private_key_der(&pkcs8_pem).unwrap(), PKCS8_DER);
    }

    #[test]
    fn other_text_is_refused_without_echoing_it() {
        assert_eq!(private_key_der("hunter2"), Err(KeyError::NotPem));
        let public = include_str!("../../../../../tests/data/redeliver/test-app-key.pub.pem");
        let error = private_key_der(public).unwrap_err();
        assert_eq!(error.to_string(), "GITHUB_APP_PRIVATE_KEY is a PEM \"PUBLIC KEY\", not an RSA PRIVATE KEY");
        let junk = pem_rfc7468::encode_string("RSA PRIVATE KEY", pem_rfc7468::LineEnding::LF, b"not der").unwrap();
        assert_eq!(private_key_der(&junk), Err(KeyError::Malformed));
    }

    #[test]
    fn the_token_has_githubs_claims() {
        let input = signing_input("12345", 1_700_000_000);
        let (header, claims) = input.split_once('.').unwrap();
        assert_eq!(Base64UrlUnpadded::decode_vec(header).unwrap(), br#"{"alg":"RS256","typ":"JWT"}"#);
        let claims: serde_json::Value =
            serde_json::from_slice(&Base64UrlUnpadded::decode_vec(claims).unwrap()).unwrap();
        assert_eq!(claims, serde_json::json!({"iat": 1_699_999_940u64, "exp": 1_700_000_540u64, "iss": "12345"}));
        assert_eq!(assemble("a.b", &[0xfb, 0xff]), "a.b.-_8");
    }
}
