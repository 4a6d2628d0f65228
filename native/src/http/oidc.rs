//! Tokens of an OpenID Provider (`auth.oidc`): JWTs verified with the
//! provider's keys, found from its discovery document and cached by `kid`.
//!
//! - The signature is checked by `jsonwebtoken` (aws-lc-rs), against the
//!   key the header's `kid` names, with only the algorithms configured
//!   (asymmetric ones: `none` and HMAC are refused before any key is
//!   used), and the key's own `alg`, when it has one, must match.
//! - `iss`, `aud`, `exp` and a non-empty `sub` are required and checked;
//!   `nbf` is checked when present; both with `leewaySeconds` of clock
//!   skew.
//! - An unknown `kid` makes the key set be read again (a rotation), at
//!   most once per [`REFETCH_AFTER_UNKNOWN`], so garbage `kid`s cannot make
//!   every request call the provider; the set is read again at least every
//!   [`MAX_AGE`].

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::{Map, Value};
use strata_core::migrate::config::auth::OidcAuth;

use crate::identity::Identity;

/// Longest `kid` read (providers' ids are tens of bytes).
const MAX_KID_BYTES: usize = 256;

/// How soon an unknown `kid` makes the keys be read again.
const REFETCH_AFTER_UNKNOWN: Duration = Duration::from_secs(10);
/// How long a key set is used at most.
const MAX_AGE: Duration = Duration::from_secs(3600);
/// Time limit of each call to the provider.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(5);

/// Verifies one provider's tokens.
pub(crate) struct OidcVerifier {
    config: OidcAuth,
    algorithms: Vec<Algorithm>,
    client: reqwest::Client,
    keys: tokio::sync::Mutex<KeyCache>,
}

#[derive(Default)]
struct KeyCache {
    set: Option<JwkSet>,
    read_at: Option<Instant>,
}

impl OidcVerifier {
    /// For the configured provider (nothing is fetched until a token comes).
    pub(crate) fn new(config: OidcAuth) -> OidcVerifier {
        let algorithms = config.algorithms.iter().filter_map(|name| name.parse::<Algorithm>().ok()).collect();
        let client = reqwest::Client::builder().timeout(PROVIDER_TIMEOUT).build().unwrap_or_default();
        OidcVerifier { config, algorithms, client, keys: Default::default() }
    }

    /// The identity `token` proves, or why it proves none.
    pub(crate) async fn verify(&self, token: &str) -> Result<Identity, String> {
        let header = decode_header(token).map_err(|e| format!("not a JWT ({e})"))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(format!("the token's algorithm {:?} is not accepted (auth.oidc.algorithms)", header.alg));
        }
        let kid = header.kid.as_deref().ok_or("the token names no key (kid)")?;
        // A kid is the provider's short key id: a longer one is refused
        // unread, and messages quote it escaped (never a forged line).
        if kid.len() > MAX_KID_BYTES {
            return Err(format!("the token's kid is {} bytes long, over {MAX_KID_BYTES}", kid.len()));
        }
        let jwk = self.key(kid).await?;
        if let Some(key_alg) = jwk.common.key_algorithm
            && key_alg.to_string() != format!("{:?}", header.alg)
        {
            return Err(format!("key {kid:?} is for {key_alg}, the token says {:?}", header.alg));
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("key {kid:?} cannot be used: {e}"))?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[self.config.issuer.as_str(), self.config.issuer.trim_end_matches('/')]);
        validation.set_audience(&[&self.config.audience]);
        validation.leeway = self.config.leeway_seconds;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| format!("the token is not valid: {e}"))?
            .claims;
        let subject = claims.get("sub").and_then(Value::as_str).map(str::trim).unwrap_or_default();
        if subject.is_empty() {
            return Err("the token's sub claim is empty: it names no one".to_string());
        }
        let email = claims.get("email").and_then(Value::as_str);
        Ok(Identity {
            actor: OidcAuth::actor(subject, email),
            principal: OidcAuth::principal(&self.config.issuer, subject),
            roles: self.config.roles_of(claims.get(&self.config.roles_claim)),
            authenticated: true,
        })
    }

    /// The key `kid`, from the cache or the provider.
    async fn key(&self, kid: &str) -> Result<Jwk, String> {
        let mut cache = self.keys.lock().await;
        let age = cache.read_at.map(|at| at.elapsed());
        let found = cache.set.as_ref().and_then(|set| set.find(kid)).cloned();
        match (found, age) {
            (Some(jwk), Some(age)) if age < MAX_AGE => return Ok(jwk),
            (None, Some(age)) if age < REFETCH_AFTER_UNKNOWN => {
                return Err(format!("the provider has no key {kid:?}"));
            }
            _ => {}
        }
        let set = self.fetch().await?;
        cache.read_at = Some(Instant::now());
        let found = set.find(kid).cloned();
        cache.set = Some(set);
        found.ok_or_else(|| format!("the provider has no key {kid:?}"))
    }

    /// The provider's key set, through its discovery document.
    async fn fetch(&self) -> Result<JwkSet, String> {
        let discovery = format!("{}/.well-known/openid-configuration", self.config.issuer.trim_end_matches('/'));
        let document: Value = self.get(&discovery).await?;
        let jwks_uri = document
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{discovery} names no jwks_uri"))?
            .to_string();
        let set: JwkSet = serde_json::from_value(self.get(&jwks_uri).await?)
            .map_err(|e| format!("{jwks_uri} is not a key set: {e}"))?;
        tracing::info!(keys = set.keys.len(), "the OpenID Provider's keys were read");
        Ok(set)
    }

    async fn get(&self, url: &str) -> Result<Value, String> {
        let failed = |e: reqwest::Error| {
            tracing::warn!(%url, error = %e, "the OpenID Provider could not be read");
            format!("the OpenID Provider could not be read ({url})")
        };
        let response = self.client.get(url).send().await.map_err(failed)?;
        response.error_for_status().map_err(failed)?.json().await.map_err(failed)
    }
}
