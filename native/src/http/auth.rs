//! Who sends each request: the middleware that authenticates it (an API
//! token, an OpenID Provider's JWT (`oidc`), or an authenticating proxy's
//! headers from a trusted address) and
//! puts its [`Identity`] in the request for the handlers; what each plain
//! route needs; the throttle of failed attempts (core's
//! `strata_core::auth::throttle`).
//!
//! Invariants:
//! - Without `auth` configured every request is [`Identity::anonymous`]
//!   (all roles): the service then listens on loopback unless told
//!   otherwise (core's `bind_address`).
//! - With `auth`, `/v2/*` answers 401 without a valid credential; what an
//!   identity may do is decided per GraphQL field (`graphql::guard`) and,
//!   for `/v2/config`, here. Probes and the console's static files stay
//!   open (probes: unless `auth.openProbes: false`).
//! - A proxy's headers count only from `auth.proxy.trustedSources`; from
//!   anywhere else they are ignored, as if absent.
//! - Secrets (tokens, headers) are never logged: only the identity's name.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use strata_core::auth::throttle::{Log, Throttle};
use strata_core::auth::token::{self, StoredToken};
use strata_core::auth::{Permission, Roles};
use strata_core::migrate::config::auth::Auth;

use crate::error::AppError;
use crate::http::AppState;
use crate::identity::{Identity, forbidden_message};
use crate::service::{Caller, RequestId, Service};

/// How long the token list read from the database is used before it is
/// read again (a revoked token stops working within this on every replica).
const TOKEN_CACHE: Duration = Duration::from_secs(2);
/// How soon an unknown token makes the list be read again (a token just
/// created by `strata token create` works at once; garbage cannot make
/// every request read the database).
const TOKEN_REREAD: Duration = Duration::from_millis(250);

/// What authentication needs between requests: the token list and the
/// failures per address.
pub(crate) struct Authenticator {
    auth: Auth,
    oidc: Option<super::oidc::OidcVerifier>,
    tokens: tokio::sync::Mutex<TokenCache>,
    throttle: Mutex<Throttle>,
}

#[derive(Default)]
struct TokenCache {
    tokens: Arc<Vec<StoredToken>>,
    read_at: Option<Instant>,
}

/// What a plain route needs.
enum Route {
    /// Nothing (build info, the console's files, 404s).
    Open,
    /// `/health`, `/metrics`.
    Probe,
    /// An identity with this permission.
    Needs(Permission),
    /// An identity (the GraphQL endpoint: fields decide the rest).
    Authenticated,
}

impl Authenticator {
    /// For the configured `auth`.
    pub(crate) fn new(auth: Auth) -> Authenticator {
        let oidc = auth.oidc.clone().map(super::oidc::OidcVerifier::new);
        Authenticator { auth, oidc, tokens: Default::default(), throttle: Mutex::new(Throttle::default()) }
    }

    /// Whether authentication is configured.
    pub(crate) fn configured(&self) -> bool {
        self.auth.configured()
    }

    fn route(&self, path: &str, prefix: &str) -> Route {
        let path = if prefix == "/" { path } else { path.strip_prefix(prefix).unwrap_or(path) };
        match path {
            "/health" | "/metrics" => Route::Probe,
            "/v2/config" => Route::Needs(Permission::Administer),
            "/v2/schema" => Route::Needs(Permission::Read),
            "/v2/service" => Route::Authenticated,
            _ => Route::Open,
        }
    }

    /// The identity `headers` from `peer` prove: `Ok(None)` when they
    /// carry no credential.
    async fn identify(
        &self,
        service: &Service,
        headers: &HeaderMap,
        peer: SocketAddr,
    ) -> Result<Option<Identity>, String> {
        // A credential sent twice is refused: which one counts would be the
        // sender's choice, or a proxy's that added its own beside it.
        let names = [header::AUTHORIZATION.as_str(), proxy_user_header(&self.auth), proxy_roles_header(&self.auth)];
        if let Some(name) =
            names.iter().find(|name| !name.is_empty() && headers.get_all(**name).iter().nth(1).is_some())
        {
            return Err(format!("{name} was sent more than once"));
        }
        if let Some(proxy) = &self.auth.proxy
            && let Some(user_header) = &proxy.user_header
            && proxy.trusts(peer.ip())
            && let Some(user) = headers.get(user_header)
        {
            let user = header_text(user).ok_or_else(|| format!("{user_header} is not UTF-8 text"))?.trim();
            if user.is_empty() {
                return Err(format!("{user_header} is empty"));
            }
            // Two values joined as HTTP joins a repeated header: whose it is
            // would be the sender's choice.
            if user.contains(", ") {
                return Err(format!("{user_header} holds two values joined by a comma"));
            }
            let groups = match proxy.roles_header.as_ref().and_then(|name| headers.get(name)) {
                Some(value) => header_text(value).ok_or_else(|| {
                    format!("{} is not UTF-8 text", proxy.roles_header.as_deref().unwrap_or_default())
                })?,
                None => "",
            };
            return Ok(Some(Identity {
                actor: format!("proxy:{user}"),
                principal: format!("proxy:{user}"),
                roles: proxy.roles_of(groups),
                authenticated: true,
            }));
        }
        let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
        let value = value.to_str().map_err(|_| "the Authorization header is not text".to_string())?;
        let Some(presented) = bearer(value) else {
            return Err("the Authorization header is not `Bearer <token>`".to_string());
        };
        if !presented.starts_with(token::PREFIX) {
            return match &self.oidc {
                Some(oidc) => oidc.verify(presented).await.map(Some),
                None => Err("the token is not an API token, and no OpenID Provider is configured (auth.oidc)".into()),
            };
        }
        if !self.auth.tokens {
            return Err("API tokens are not enabled (auth.tokens)".to_string());
        }
        let now = chrono::Utc::now().timestamp();
        let mut cache = self.tokens.lock().await;
        let stale = |cache: &TokenCache, within: Duration| cache.read_at.is_none_or(|at| at.elapsed() >= within);
        if stale(&cache, TOKEN_CACHE) {
            self.reread(service, &mut cache).await?;
        }
        let found = match token::find(&cache.tokens, presented, now) {
            Err(token::TokenRefusal::Unknown) if stale(&cache, TOKEN_REREAD) => {
                self.reread(service, &mut cache).await?;
                token::find(&cache.tokens, presented, now).cloned()
            }
            other => other.cloned(),
        };
        let token = found.map_err(|refusal| refusal.to_string())?;
        Ok(Some(Identity {
            actor: format!("token:{}", token.name),
            principal: token.principal(),
            roles: Roles::only(token.role),
            authenticated: true,
        }))
    }

    async fn reread(&self, service: &Service, cache: &mut TokenCache) -> Result<(), String> {
        let tokens = service.tokens().await.map_err(|e| {
            tracing::error!(error = %e, "the API tokens could not be read");
            "the API tokens could not be read".to_string()
        })?;
        cache.tokens = Arc::new(tokens);
        cache.read_at = Some(Instant::now());
        Ok(())
    }

    /// The client a request stands for: behind a trusted proxy, the
    /// address it forwards (core's `ProxyAuth::client_address`); else the
    /// peer. The throttle keys on it.
    fn client(&self, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
        match &self.auth.proxy {
            Some(proxy) => {
                // Every X-Forwarded-For line, in order, as one list: a proxy
                // may add its own line rather than extend the client's, and
                // the first alone would be the client's word.
                let lines: Vec<&str> =
                    headers.get_all("x-forwarded-for").iter().filter_map(|value| value.to_str().ok()).collect();
                let forwarded = lines.join(",");
                proxy.client_address(peer.ip(), (!lines.is_empty()).then_some(forwarded.as_str()))
            }
            None => peer.ip(),
        }
    }

    /// Counts a failure from `client`, and writes it to the audit log unless
    /// one was written for that address less than a window ago.
    async fn failed(&self, service: &Service, client: IpAddr, path: &str, request_id: &str, why: &str) {
        let address = strata_core::auth::throttle::client_key(client);
        let log = self.throttle.lock().ok().map(|mut t| t.failed(&address, chrono::Utc::now().timestamp()));
        if let Some(Log::Write { left_out }) = log {
            let actor = format!("unauthenticated:{address}");
            let caller = Caller { request_id: request_id.to_string(), principal: actor.clone(), actor };
            let mut outcome = format!("refused: UNAUTHENTICATED {why}");
            if left_out > 0 {
                outcome.push_str(&format!(" ({left_out} more failure(s) from this address not logged)"));
            }
            service.audit(&caller, "authenticate", path, outcome).await;
        }
    }

    fn refused(&self, client: IpAddr) -> Option<i64> {
        let now = chrono::Utc::now().timestamp();
        self.throttle.lock().ok().and_then(|t| t.refused(&strata_core::auth::throttle::client_key(client), now))
    }
}

/// The credential of an `Authorization` value of the `Bearer` scheme
/// (matched in any case, RFC 7235 section 2.1), trimmed; `None` for
/// another scheme.
pub(crate) fn bearer(value: &str) -> Option<&str> {
    value.split_once(' ').filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer")).map(|(_, c)| c.trim())
}

/// The middleware: authenticates the request (when `auth` is configured)
/// and puts its [`Identity`] in the request's extensions.
pub(crate) async fn authenticate(
    State(state): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let authenticator = &state.authenticator;
    if !authenticator.configured() {
        request.extensions_mut().insert(Identity::anonymous());
        return next.run(request).await;
    }
    let route = authenticator.route(request.uri().path(), &state.service.config().path_prefix);
    let client = authenticator.client(peer, request.headers());
    let request_id = request.extensions().get::<RequestId>().map(|id| id.0.clone()).unwrap_or_default();
    let path = request.uri().path().to_string();
    if matches!(route, Route::Open) || (matches!(route, Route::Probe) && authenticator.auth.open_probes) {
        // A probe with a valid credential sees details; without, none. A
        // credential shown here goes through the same throttle and log as
        // anywhere: an open route is no free oracle of tokens.
        let identity = if authenticator.refused(client).is_some() {
            Identity::unauthenticated()
        } else {
            match authenticator.identify(&state.service, request.headers(), peer).await {
                Ok(Some(identity)) => identity,
                Ok(None) => Identity::unauthenticated(),
                Err(why) => {
                    authenticator.failed(&state.service, client, &path, &request_id, &why).await;
                    Identity::unauthenticated()
                }
            }
        };
        request.extensions_mut().insert(identity);
        return next.run(request).await;
    }
    // The GraphQL endpoint answers every refusal in GraphQL's error shape.
    let graphql = matches!(route, Route::Authenticated);
    let refuse = |error: AppError| if graphql { error.into_graphql_response() } else { error.into_response() };
    if let Some(retry_after) = authenticator.refused(client) {
        let mut response = refuse(AppError::TooManyFailures(retry_after));
        if let Ok(value) = HeaderValue::from_str(&retry_after.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let identity = match authenticator.identify(&state.service, request.headers(), peer).await {
        Ok(Some(identity)) => identity,
        Ok(None) => {
            // Not a failed guess: any web page can make a browser send
            // requests without a credential, which must not lock out the
            // address's real users.
            let why = "no credential: send Authorization: Bearer <token> (strata token create)";
            return challenge(refuse(AppError::Unauthenticated(why.to_string())));
        }
        Err(why) => {
            authenticator.failed(&state.service, client, &path, &request_id, &why).await;
            return challenge(refuse(AppError::Unauthenticated(why)));
        }
    };
    if let Route::Needs(permission) = route
        && !identity.roles.grants(permission)
    {
        let caller = identity.caller(&request_id);
        let message = forbidden_message(&identity, permission);
        state.service.audit(&caller, &format!("GET {path}"), &path, format!("refused: FORBIDDEN {message}")).await;
        return refuse(AppError::Forbidden(message));
    }
    request.extensions_mut().insert(identity);
    next.run(request).await
}

/// The header a trusted proxy names its user in (empty without a proxy).
fn proxy_user_header(auth: &Auth) -> &str {
    auth.proxy.as_ref().and_then(|proxy| proxy.user_header.as_deref()).unwrap_or("")
}

/// The proxy's roles header, or "" when none is configured.
fn proxy_roles_header(auth: &Auth) -> &str {
    auth.proxy.as_ref().and_then(|proxy| proxy.roles_header.as_deref()).unwrap_or("")
}

/// A proxy header's value as text: UTF-8 (a name like `Zoë`, which
/// `HeaderValue::to_str` refuses), without control characters.
fn header_text(value: &HeaderValue) -> Option<&str> {
    std::str::from_utf8(value.as_bytes()).ok().filter(|text| !text.chars().any(char::is_control))
}

/// A 401 answer with the challenge a client expects.
fn challenge(mut response: Response) -> Response {
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"strata\""));
    response
}
