//! `listen` and `auth`: where the service listens and who may use it.
//!
//! Invariant: without authentication configured the service binds
//! loopback only, unless `listen` names another address — then it is
//! [`Exposure::OpenWithoutAuth`], which the shell warns about on every
//! start and `/health` reports as `auth: none`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use crate::auth::Role;
use crate::auth::audit_key::{AuditKey, PublicKey};
use crate::migrate::config::{ConfigError, invalid};

/// How requests are authenticated (`auth:`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Auth {
    /// API tokens (`strata token create`) are accepted as
    /// `Authorization: Bearer`.
    pub tokens: bool,
    /// An authenticating proxy's headers are trusted from some addresses.
    pub proxy: Option<ProxyAuth>,
    /// JWTs of an OpenID Provider are accepted as `Authorization: Bearer`.
    pub oidc: Option<OidcAuth>,
    /// Refuse to start without any authentication configured.
    pub required: bool,
    /// The identity that started a rollout may approve it too.
    pub allow_self_approval: bool,
    /// `/health` and `/metrics` answer without credentials (default true;
    /// unauthenticated, `/health` names no database or shard).
    pub open_probes: bool,
    /// Signs every audit row (`auditKey`: the base64 of a 32-byte
    /// Ed25519 seed; never shown, only its id and public key).
    pub audit_key: Option<AuditKey>,
    /// The public keys that verify the log: the key's own, then
    /// `auditPublicKeys` (keys rotated out, for older rows).
    pub audit_public_keys: Vec<PublicKey>,
}

impl Auth {
    /// Whether any authentication is configured.
    pub fn configured(&self) -> bool {
        self.tokens || self.proxy.as_ref().is_some_and(|proxy| proxy.user_header.is_some()) || self.oidc.is_some()
    }

    /// Whether a rollout's starter is refused as its approver.
    pub fn forbids_self_approval(&self) -> bool {
        self.configured() && !self.allow_self_approval
    }
}

/// An authenticating proxy in front (oauth2-proxy and the like): its user
/// and roles headers are honoured only from `trusted_sources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyAuth {
    /// The header naming the user (e.g. `X-Forwarded-User`); none: the
    /// proxy authenticates nobody and only says which client it forwards
    /// (`X-Forwarded-For`, for the failed-login throttle), the requests
    /// authenticating with tokens or OIDC.
    pub user_header: Option<String>,
    /// The header listing the user's groups, comma-separated (e.g.
    /// `X-Forwarded-Groups`), if any.
    pub roles_header: Option<String>,
    /// Where the proxy connects from.
    pub trusted_sources: Vec<IpNet>,
    /// Group → role.
    pub roles: BTreeMap<String, Role>,
    /// The role of a user none of whose groups is mapped (none: refused).
    pub default_role: Option<Role>,
}

impl ProxyAuth {
    /// Whether a connection from `peer` may speak for a user.
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = match peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
            v4 => v4,
        };
        self.trusted_sources.iter().any(|net| net.contains(&peer))
    }

    /// The client a request from `peer` stands for: behind a trusted proxy,
    /// the last address of `X-Forwarded-For` (`forwarded_for`) that is not
    /// itself trusted — the hop the proxies saw, which a client cannot
    /// forge by sending its own header (proxies append); from anywhere
    /// else, or with no such address, the peer. What the throttle of failed
    /// authentications keys on, so one client's failures behind an ingress
    /// do not refuse everyone behind it.
    pub fn client_address(&self, peer: IpAddr, forwarded_for: Option<&str>) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let hops = forwarded_for.unwrap_or("").split(',').rev();
        for hop in hops.map(str::trim).filter(|hop| !hop.is_empty()) {
            match hop.parse::<IpAddr>() {
                Ok(address) if self.trusts(address) => continue,
                Ok(address) => return address,
                // Not an address: nothing further left can be trusted.
                Err(_) => return peer,
            }
        }
        peer
    }

    /// The roles of a user whose roles header says `groups`.
    pub fn roles_of(&self, groups: &str) -> crate::auth::Roles {
        let mapped: crate::auth::Roles =
            groups.split(',').filter_map(|group| self.roles.get(group.trim()).copied()).collect();
        match (mapped == crate::auth::Roles::NONE, self.default_role) {
            (true, Some(role)) => crate::auth::Roles::only(role),
            _ => mapped,
        }
    }
}

/// The signature algorithms an OpenID Provider's tokens may use when
/// `auth.oidc.algorithms` is not set.
pub const DEFAULT_OIDC_ALGORITHMS: [&str; 3] = ["RS256", "PS256", "ES256"];
/// The asymmetric algorithms `auth.oidc.algorithms` may name: never
/// `none`, never an HMAC (`HS256` with a public key as its secret is the
/// classic confusion attack).
pub const OIDC_ALGORITHMS: [&str; 8] = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384"];
/// Default clock skew allowed on `exp` and `nbf`, seconds.
pub const DEFAULT_OIDC_LEEWAY: u64 = 60;

/// An OpenID Provider whose JWTs (access or ID tokens) authenticate
/// requests: its keys come from its discovery document's `jwks_uri`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcAuth {
    /// The provider's issuer URL (`iss` must equal it).
    pub issuer: String,
    /// What `aud` must hold.
    pub audience: String,
    /// The claim holding the identity's groups or roles (default
    /// `groups`): a list of strings, or one string of names separated by
    /// spaces or commas.
    pub roles_claim: String,
    /// Claim value → role.
    pub roles: BTreeMap<String, Role>,
    /// The role of an identity none of whose claim values is mapped (none:
    /// it may do nothing).
    pub default_role: Option<Role>,
    /// The accepted signature algorithms (from [`OIDC_ALGORITHMS`]).
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`, seconds.
    pub leeway_seconds: u64,
}

impl OidcAuth {
    /// The roles a token's roles claim gives.
    pub fn roles_of(&self, claim: Option<&serde_json::Value>) -> crate::auth::Roles {
        let names: Vec<&str> = match claim {
            Some(serde_json::Value::Array(items)) => items.iter().filter_map(|v| v.as_str()).collect(),
            Some(serde_json::Value::String(text)) => {
                text.split([' ', ',']).map(str::trim).filter(|n| !n.is_empty()).collect()
            }
            _ => Vec::new(),
        };
        let mapped: crate::auth::Roles = names.iter().filter_map(|name| self.roles.get(*name).copied()).collect();
        match (mapped == crate::auth::Roles::NONE, self.default_role) {
            (true, Some(role)) => crate::auth::Roles::only(role),
            _ => mapped,
        }
    }

    /// The stable principal of an ID or access token: its issuer and
    /// subject (`oidc:<issuer>#<sub>`), the same whatever other claims the
    /// token carries.
    pub fn principal(issuer: &str, subject: &str) -> String {
        format!("oidc:{}#{subject}", issuer.trim_end_matches('/'))
    }

    /// The actor of a token as shown: `oidc:<subject>`, with the email
    /// when the token carries one (`oidc:<subject> <email>`).
    pub fn actor(subject: &str, email: Option<&str>) -> String {
        match email {
            Some(email) if !email.is_empty() => format!("oidc:{subject} <{email}>"),
            _ => format!("oidc:{subject}"),
        }
    }
}

/// Whether the address the service binds is reachable without credentials
/// from elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Authentication is configured.
    Authenticated,
    /// No authentication, loopback only.
    LoopbackOnly,
    /// No authentication, and `listen` names a non-loopback address.
    OpenWithoutAuth,
}

/// Where to listen: `listen` if set, else `port` on every interface with
/// authentication, on loopback without.
pub fn bind_address(listen: Option<SocketAddr>, port: u16, auth: &Auth) -> (SocketAddr, Exposure) {
    let address = listen.unwrap_or_else(|| {
        let host = if auth.configured() { Ipv4Addr::UNSPECIFIED } else { Ipv4Addr::LOCALHOST };
        SocketAddr::new(IpAddr::V4(host), port)
    });
    let exposure = match (auth.configured(), address.ip().is_loopback()) {
        (true, _) => Exposure::Authenticated,
        (false, true) => Exposure::LoopbackOnly,
        (false, false) => Exposure::OpenWithoutAuth,
    };
    (address, exposure)
}

/// `listen`: `address:port` (`0.0.0.0:8080`, `[::]:8080`).
pub(super) fn parse_listen(text: Option<String>) -> Result<Option<SocketAddr>, ConfigError> {
    text.map(|text| {
        text.trim().parse::<SocketAddr>().map_err(|_| {
            invalid("listen", format!("{text:?} is not address:port (e.g. 0.0.0.0:8080, 127.0.0.1:8080, [::]:8080)"))
        })
    })
    .transpose()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RawAuth {
    tokens: Option<bool>,
    proxy: Option<RawProxy>,
    oidc: Option<RawOidc>,
    required: Option<bool>,
    allow_self_approval: Option<bool>,
    open_probes: Option<bool>,
    audit_key: Option<String>,
    audit_public_keys: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawOidc {
    issuer: Option<String>,
    audience: Option<String>,
    roles_claim: Option<String>,
    roles: Option<BTreeMap<String, String>>,
    default_role: Option<String>,
    algorithms: Option<Vec<String>>,
    leeway_seconds: Option<u64>,
}

impl RawOidc {
    fn validate(self) -> Result<OidcAuth, ConfigError> {
        let issuer = self.issuer.filter(|i| !i.trim().is_empty()).ok_or(ConfigError::Missing("auth.oidc.issuer"))?;
        let issuer = issuer.trim().to_string();
        if !(issuer.starts_with("https://") || issuer.starts_with("http://")) {
            return Err(invalid("auth.oidc.issuer", format!("{issuer:?} is not an http(s) URL")));
        }
        let audience =
            self.audience.filter(|a| !a.trim().is_empty()).ok_or(ConfigError::Missing("auth.oidc.audience"))?;
        let algorithms = match self.algorithms {
            None => DEFAULT_OIDC_ALGORITHMS.iter().map(ToString::to_string).collect(),
            Some(list) if list.is_empty() => return Err(invalid("auth.oidc.algorithms", "name at least one")),
            Some(list) => list
                .into_iter()
                .map(|alg| match OIDC_ALGORITHMS.iter().find(|known| known.eq_ignore_ascii_case(alg.trim())) {
                    Some(known) => Ok(known.to_string()),
                    None => Err(invalid(
                        "auth.oidc.algorithms",
                        format!(
                            "{alg:?} is not accepted: use asymmetric algorithms ({}); none and HMAC never are",
                            OIDC_ALGORITHMS.join(", ")
                        ),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let leeway_seconds = self.leeway_seconds.unwrap_or(DEFAULT_OIDC_LEEWAY);
        if leeway_seconds > 300 {
            return Err(invalid("auth.oidc.leewaySeconds", format!("{leeway_seconds} is more than 300")));
        }
        let roles = self
            .roles
            .unwrap_or_default()
            .into_iter()
            .map(|(value, name)| Ok((value, role("auth.oidc.roles", &name)?)))
            .collect::<Result<BTreeMap<_, _>, ConfigError>>()?;
        let default_role = self.default_role.map(|name| role("auth.oidc.defaultRole", &name)).transpose()?;
        Ok(OidcAuth {
            issuer,
            audience: audience.trim().to_string(),
            roles_claim: self.roles_claim.unwrap_or_else(|| "groups".to_string()),
            roles,
            default_role,
            algorithms,
            leeway_seconds,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProxy {
    user_header: Option<String>,
    roles_header: Option<String>,
    trusted_sources: Option<Vec<String>>,
    roles: Option<BTreeMap<String, String>>,
    default_role: Option<String>,
}

impl RawAuth {
    /// Validated, defaults applied.
    pub(super) fn validate(raw: Option<RawAuth>) -> Result<Auth, ConfigError> {
        let Some(raw) = raw else { return Ok(Auth { open_probes: true, ..Auth::default() }) };
        let proxy = raw.proxy.map(RawProxy::validate).transpose()?;
        let oidc = raw.oidc.map(RawOidc::validate).transpose()?;
        let audit_key = raw
            .audit_key
            .filter(|key| !key.trim().is_empty())
            .map(|key| AuditKey::from_base64(&key).map_err(|e| invalid("auth.auditKey", e.to_string())))
            .transpose()?;
        let mut audit_public_keys: Vec<PublicKey> = audit_key.iter().map(AuditKey::public).collect();
        for text in raw.audit_public_keys.unwrap_or_default() {
            let key = PublicKey::from_base64(&text).map_err(|e| {
                invalid("auth.auditPublicKeys", format!("{:?}: {e}", text.chars().take(60).collect::<String>()))
            })?;
            if !audit_public_keys.contains(&key) {
                audit_public_keys.push(key);
            }
        }
        let forwards_only = proxy.as_ref().is_some_and(|proxy| proxy.user_header.is_none());
        let auth = Auth {
            tokens: raw.tokens.unwrap_or(false),
            proxy,
            oidc,
            required: raw.required.unwrap_or(false),
            allow_self_approval: raw.allow_self_approval.unwrap_or(false),
            open_probes: raw.open_probes.unwrap_or(true),
            audit_key,
            audit_public_keys,
        };
        if forwards_only && !auth.configured() {
            return Err(invalid(
                "auth.proxy",
                "without userHeader the proxy authenticates nobody (it only names the clients it forwards): set \
                 auth.tokens: true or auth.oidc, or the proxy's userHeader",
            ));
        }
        if auth.required && !auth.configured() {
            return Err(invalid(
                "auth.required",
                "is true, but no authentication is configured: set auth.tokens: true, auth.oidc or auth.proxy",
            ));
        }
        Ok(auth)
    }
}

fn header_name(property: &'static str, text: String) -> Result<String, ConfigError> {
    let fine = !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if fine { Ok(text) } else { Err(invalid(property, format!("{text:?} is not an HTTP header name"))) }
}

fn role(property: &'static str, text: &str) -> Result<Role, ConfigError> {
    text.parse().map_err(|e: crate::auth::role::UnknownRole| invalid(property, e.to_string()))
}

impl RawProxy {
    fn validate(self) -> Result<ProxyAuth, ConfigError> {
        let user_header = self.user_header.map(|h| header_name("auth.proxy.userHeader", h)).transpose()?;
        let roles_header = self.roles_header.map(|h| header_name("auth.proxy.rolesHeader", h)).transpose()?;
        let sources = self.trusted_sources.unwrap_or_default();
        if sources.is_empty() {
            return Err(invalid(
                "auth.proxy.trustedSources",
                "name the proxy's addresses (CIDR, e.g. 10.0.0.0/8 or 127.0.0.1/32): the headers are honoured from \
                 there only",
            ));
        }
        let trusted_sources = sources
            .iter()
            .map(|text| {
                text.parse::<IpNet>()
                    .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| invalid("auth.proxy.trustedSources", format!("{text:?} is not an address or CIDR")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let roles = self
            .roles
            .unwrap_or_default()
            .into_iter()
            .map(|(group, name)| Ok((group, role("auth.proxy.roles", &name)?)))
            .collect::<Result<BTreeMap<_, _>, ConfigError>>()?;
        let default_role = self.default_role.map(|name| role("auth.proxy.defaultRole", &name)).transpose()?;
        Ok(ProxyAuth { user_header, roles_header, trusted_sources, roles, default_role })
    }
}

/// `auth` as `config check` and `/v2/config` show it (no secrets in it).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AuthView {
    tokens: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy: Option<ProxyView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    oidc: Option<OidcView>,
    required: bool,
    allow_self_approval: bool,
    open_probes: bool,
    /// The signing key's id and public key, never the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    audit_key: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    audit_public_keys: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProxyView {
    #[serde(skip_serializing_if = "Option::is_none")]
    user_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    roles_header: Option<String>,
    trusted_sources: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    roles: BTreeMap<String, &'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_role: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OidcView {
    issuer: String,
    audience: String,
    roles_claim: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    roles: BTreeMap<String, &'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_role: Option<&'static str>,
    algorithms: Vec<String>,
    leeway_seconds: u64,
}

impl From<&Auth> for AuthView {
    fn from(auth: &Auth) -> AuthView {
        AuthView {
            tokens: auth.tokens,
            proxy: auth.proxy.as_ref().map(|p| ProxyView {
                user_header: p.user_header.clone(),
                roles_header: p.roles_header.clone(),
                trusted_sources: p.trusted_sources.iter().map(ToString::to_string).collect(),
                roles: p.roles.iter().map(|(g, r)| (g.clone(), r.name())).collect(),
                default_role: p.default_role.map(Role::name),
            }),
            oidc: auth.oidc.as_ref().map(|o| OidcView {
                issuer: o.issuer.clone(),
                audience: o.audience.clone(),
                roles_claim: o.roles_claim.clone(),
                roles: o.roles.iter().map(|(v, r)| (v.clone(), r.name())).collect(),
                default_role: o.default_role.map(Role::name),
                algorithms: o.algorithms.clone(),
                leeway_seconds: o.leeway_seconds,
            }),
            required: auth.required,
            allow_self_approval: auth.allow_self_approval,
            open_probes: auth.open_probes,
            audit_key: auth
                .audit_key
                .as_ref()
                .map(|key| format!("(set: key {}, public key {})", key.id(), key.public().to_base64())),
            audit_public_keys: auth.audit_public_keys.iter().map(|key| key.to_base64()).collect(),
        }
    }
}
