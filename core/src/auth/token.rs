//! API tokens: minted from random bytes the shell draws, shown once, stored
//! as a SHA-256 hash only, and matched in constant time.
//!
//! A token is `strata_` followed by 43 base64url characters (32 random
//! bytes). Its hash is a plain SHA-256: the secret has 256 bits of entropy,
//! so a slow password hash would add cost and no strength.
//! [`find`] compares the presented secret's hash with every stored hash,
//! without stopping at a match, so its time does not depend on which token
//! (if any) matched.

use base64ct::{Base64UrlUnpadded, Encoding};
use subtle::ConstantTimeEq;
use thiserror::Error;

use crate::auth::Role;

/// What every token starts with (so secret scanners can find leaked ones).
pub const PREFIX: &str = "strata_";

/// Longest token name.
pub const MAX_NAME: usize = 64;

/// A token's secret from 32 random bytes.
pub fn mint(random: &[u8; 32]) -> String {
    format!("{PREFIX}{}", Base64UrlUnpadded::encode_string(random))
}

/// The stored form of a secret: lowercase hex SHA-256.
pub fn hash(secret: &str) -> String {
    crate::migrate::source::checksum(secret.as_bytes())
}

/// A stored token (its secret is not kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    /// Its unique name; the actor of what it does is `token:<name>`.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// [`hash`] of its secret.
    pub hash: String,
    /// When it was created (Unix seconds).
    pub created: i64,
    /// When it stops working (Unix seconds), if ever.
    pub expires: Option<i64>,
    /// Who holds it (`strata token create --owner alice`): the tokens of
    /// one owner are one principal.
    pub owner: Option<String>,
}

impl StoredToken {
    /// The principal rules compare: `owner:<owner>` for every token of one
    /// owner, else the token itself (`token:<name>`).
    pub fn principal(&self) -> String {
        match &self.owner {
            Some(owner) => format!("owner:{owner}"),
            None => format!("token:{}", self.name),
        }
    }
}

/// An owner that cannot be one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "token owner {0:?}: use 1 to 128 ASCII letters, digits or '.', '_', '-', '+', '@' (an e-mail address fits; \
     letters of other scripts that look alike would make two owners of one person)"
)]
pub struct BadOwner(pub String);

/// Checks a token's owner: ASCII only, so that the rules comparing owners
/// (a rollout's starter may not approve it) compare people, not glyphs —
/// `bоb` with a Cyrillic `о` would be another owner than `bob`.
pub fn check_owner(owner: &str) -> Result<(), BadOwner> {
    let fine = !owner.is_empty()
        && owner.len() <= 128
        && owner.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+' | b'@'));
    if fine { Ok(()) } else { Err(BadOwner(owner.to_string())) }
}

/// Why a presented token is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TokenRefusal {
    /// No stored token has this secret (or it was revoked).
    #[error("the token is not known (revoked, mistyped, or from another installation)")]
    Unknown,
    /// It matched a token that has expired.
    #[error("the token {0:?} has expired")]
    Expired(String),
}

/// The stored token whose secret is `presented`, valid at `now`.
pub fn find<'a>(tokens: &'a [StoredToken], presented: &str, now: i64) -> Result<&'a StoredToken, TokenRefusal> {
    let presented = hash(presented);
    let mut found = None;
    for token in tokens {
        if bool::from(token.hash.as_bytes().ct_eq(presented.as_bytes())) {
            found = Some(token);
        }
    }
    let token = found.ok_or(TokenRefusal::Unknown)?;
    match token.expires {
        Some(expires) if expires <= now => Err(TokenRefusal::Expired(token.name.clone())),
        _ => Ok(token),
    }
}

/// A token name that cannot be one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("token name {0:?}: use 1 to 64 letters, digits, '.', '_' or '-'")]
pub struct BadName(pub String);

/// Checks a new token's name.
pub fn check_name(name: &str) -> Result<(), BadName> {
    let fine = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if fine { Ok(()) } else { Err(BadName(name.to_string())) }
}

/// When a token created at `now` for `days` days expires.
pub fn expiry(now: i64, days: Option<u32>) -> Option<i64> {
    days.map(|days| now.saturating_add(i64::from(days) * 86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(name: &str, secret: &str, expires: Option<i64>) -> StoredToken {
        StoredToken { name: name.into(), role: Role::Viewer, hash: hash(secret), created: 0, expires, owner: None }
    }

    #[test]
    fn a_minted_token_is_the_prefix_and_43_url_safe_characters() {
        let token = mint(&[0xfb; 32]);
        assert!(token.starts_with(PREFIX));
        assert_eq!(token.len(), PREFIX.len() + 43);
        assert!(token[PREFIX.len()..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(mint(&[1; 32]), mint(&[2; 32]));
    }

    #[test]
    fn the_hash_is_stored_never_the_secret() {
        let secret = mint(&[7; 32]);
        let stored = hash(&secret);
        assert_eq!(stored.len(), 64);
        assert!(!stored.contains(&secret[PREFIX.len()..]));
    }

    #[test]
    fn find_matches_by_secret_and_refuses_expired_and_unknown_tokens() {
        let tokens = vec![stored("ci", "s1", None), stored("old", "s2", Some(100))];
        assert_eq!(find(&tokens, "s1", 1_000).unwrap().name, "ci");
        assert_eq!(find(&tokens, "s2", 99).unwrap().name, "old");
        assert_eq!(find(&tokens, "s2", 100), Err(TokenRefusal::Expired("old".into())));
        assert_eq!(find(&tokens, "s3", 0), Err(TokenRefusal::Unknown));
        assert_eq!(find(&[], "s1", 0), Err(TokenRefusal::Unknown));
    }

    #[test]
    fn names_are_short_and_plain() {
        assert!(check_name("ci-deployer.2026_a").is_ok());
        for bad in ["", "a b", "x;drop", "é", &"n".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(expiry(10, Some(2)), Some(10 + 2 * 86_400));
        assert_eq!(expiry(10, None), None);
    }
}
