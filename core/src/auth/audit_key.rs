//! The keys of the audit log's signatures, CloudTrail-style: the service
//! signs each row's seal with an Ed25519 key only it holds
//! (`auth.auditKey`, the base64 of a 32-byte seed); anyone verifies with
//! public keys alone. A key is named by its id, the first 16 hex digits of
//! the SHA-256 of its public key, which each signed row carries, so keys
//! rotate: older rows verify with the older public keys
//! (`auth.auditPublicKeys`).
//!
//! Invariant: what is signed is the row's seal (its SHA-256 over the id,
//! every field and the seal of the row before) behind a domain prefix, so
//! a signature vouches for the row and, through the chain, every row
//! before it. Signing is deterministic (RFC 8032): no randomness here.

use base64ct::{Base64, Encoding};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// What is signed before a row's seal, so a signature of a row can be
/// taken for nothing else.
const DOMAIN: &[u8] = b"strata audit row v1\n";

/// Why a key cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyError {
    /// Not base64.
    #[error("not base64 (strata audit keygen prints a key)")]
    NotBase64,
    /// Not 32 bytes.
    #[error("{0} bytes, where an Ed25519 key is 32 (strata audit keygen prints one)")]
    WrongLength(usize),
    /// 32 bytes that are no point of the curve (a public key only).
    #[error("not an Ed25519 public key")]
    NotAPoint,
}

fn bytes_32(text: &str) -> Result<[u8; 32], KeyError> {
    let bytes = Base64::decode_vec(text.trim()).map_err(|_| KeyError::NotBase64)?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| KeyError::WrongLength(bytes.len()))
}

fn key_id(public: &VerifyingKey) -> String {
    Sha256::digest(public.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn message(seal: &str) -> Vec<u8> {
    [DOMAIN, seal.as_bytes()].concat()
}

/// The private key that signs rows. Its `Debug` shows the id only.
#[derive(Clone)]
pub struct AuditKey {
    signing: SigningKey,
    id: String,
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuditKey({})", self.id)
    }
}

impl PartialEq for AuditKey {
    fn eq(&self, other: &AuditKey) -> bool {
        self.id == other.id
    }
}

impl Eq for AuditKey {}

impl AuditKey {
    /// The key of a 32-byte seed (the shell draws it: `strata audit keygen`).
    pub fn from_seed(seed: [u8; 32]) -> AuditKey {
        let signing = SigningKey::from_bytes(&seed);
        let id = key_id(&signing.verifying_key());
        AuditKey { signing, id }
    }

    /// The key of `auth.auditKey`: the base64 of its 32-byte seed.
    pub fn from_base64(text: &str) -> Result<AuditKey, KeyError> {
        bytes_32(text).map(AuditKey::from_seed)
    }

    /// The base64 of the seed, as `auth.auditKey` takes it.
    pub fn seed_base64(&self) -> String {
        Base64::encode_string(self.signing.as_bytes())
    }

    /// Its id, which the rows it signs carry.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The public key that verifies it.
    pub fn public(&self) -> PublicKey {
        PublicKey { key: self.signing.verifying_key(), id: self.id.clone() }
    }

    /// The signature of a row's seal: `<key id>:<base64 signature>`.
    pub fn sign(&self, seal: &str) -> String {
        let signature = self.signing.sign(&message(seal));
        format!("{}:{}", self.id, Base64::encode_string(&signature.to_bytes()))
    }
}

/// A public key that verifies rows (`auth.auditPublicKeys`,
/// `strata audit verify --public-key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
    id: String,
}

impl PublicKey {
    /// The key from its base64 (32 bytes).
    pub fn from_base64(text: &str) -> Result<PublicKey, KeyError> {
        let key = VerifyingKey::from_bytes(&bytes_32(text)?).map_err(|_| KeyError::NotAPoint)?;
        let id = key_id(&key);
        Ok(PublicKey { key, id })
    }

    /// Its base64, as `auth.auditPublicKeys` takes it.
    pub fn to_base64(&self) -> String {
        Base64::encode_string(self.key.as_bytes())
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether `signature` (base64) is this key's over `seal`.
    pub fn verifies(&self, seal: &str, signature: &str) -> bool {
        let Ok(bytes) = Base64::decode_vec(signature) else { return false };
        let Ok(bytes) = <[u8; 64]>::try_from(bytes.as_slice()) else { return false };
        self.key.verify_strict(&message(seal), &Signature::from_bytes(&bytes)).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_with_the_public_key_only_for_its_seal() {
        let key = AuditKey::from_seed([7; 32]);
        let signed = key.sign("abc");
        let (id, signature) = signed.split_once(':').unwrap();
        assert_eq!(id, key.id());
        assert_eq!(id.len(), 16);
        let public = PublicKey::from_base64(&key.public().to_base64()).unwrap();
        assert_eq!(public.id(), key.id());
        assert!(public.verifies("abc", signature));
        assert!(!public.verifies("abd", signature));
        let other = AuditKey::from_seed([8; 32]).public();
        assert!(!other.verifies("abc", signature));
        assert_ne!(other.id(), key.id());
        // Deterministic: the same row signs the same.
        assert_eq!(key.sign("abc"), signed);
    }

    #[test]
    fn keys_read_back_and_bad_ones_say_why() {
        let key = AuditKey::from_seed([9; 32]);
        assert_eq!(AuditKey::from_base64(&key.seed_base64()).unwrap(), key);
        assert_eq!(AuditKey::from_base64("not base64!"), Err(KeyError::NotBase64));
        assert_eq!(AuditKey::from_base64(&Base64::encode_string(&[1; 16])), Err(KeyError::WrongLength(16)));
        assert!(!format!("{key:?}").contains(&key.seed_base64()));
    }
}
