//! Who asks: the [`Identity`] a request authenticated as (`http::auth`
//! decides it; the GraphQL guard and the resolvers read it), and how a
//! refusal names it.

use strata_core::auth::{Permission, Role, Roles};

use crate::service::{ANONYMOUS, Caller};

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    /// `token:<name>`, `proxy:<user>`, `oidc:<sub> <email>`, or
    /// `anonymous`: as shown.
    pub(crate) actor: String,
    /// The stable principal rules compare (`oidc:<issuer>#<sub>`; empty
    /// when anonymous).
    pub(crate) principal: String,
    /// What it may do.
    pub(crate) roles: Roles,
    /// Whether it showed a valid credential (false: anonymous).
    pub(crate) authenticated: bool,
}

impl Identity {
    /// Every request when no authentication is configured.
    pub(crate) fn anonymous() -> Identity {
        Identity {
            actor: ANONYMOUS.to_string(),
            principal: String::new(),
            roles: Roles::only(Role::Admin),
            authenticated: false,
        }
    }

    /// A probe without credentials while authentication is configured.
    pub(crate) fn unauthenticated() -> Identity {
        Identity { actor: ANONYMOUS.to_string(), principal: String::new(), roles: Roles::NONE, authenticated: false }
    }

    /// The caller of an operation this identity asks for.
    pub(crate) fn caller(&self, request_id: &str) -> Caller {
        Caller { request_id: request_id.to_string(), actor: self.actor.clone(), principal: self.principal.clone() }
    }
}

/// Why `identity` may not do what needs `permission`.
pub(crate) fn forbidden_message(identity: &Identity, permission: Permission) -> String {
    let roles: Vec<&str> = identity.roles.list().into_iter().map(Role::name).collect();
    let held = if roles.is_empty() { "no role".to_string() } else { format!("role {}", roles.join(", ")) };
    format!("{} ({held}) may not {}", identity.actor, permission.name())
}
