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

/// The operating system's account this process runs as, on this host: who
/// runs the command line, and who holds the lock. Read from the process's
/// own uid (named by the password database when it names it), never from
/// `$USER`, which anyone can set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OsAccount {
    /// The effective uid, when `/proc` tells it.
    pub(crate) uid: Option<u32>,
    /// The account's name, else its uid, else `unknown`.
    pub(crate) user: String,
    /// The host name, else `localhost`.
    pub(crate) host: String,
}

impl OsAccount {
    /// This process's account.
    pub(crate) fn current() -> OsAccount {
        use std::os::unix::fs::MetadataExt;
        // /proc/self belongs to the process's effective uid.
        let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
        let user = match (uid.and_then(account_name), uid) {
            (Some(name), _) => name,
            (None, Some(uid)) => uid.to_string(),
            (None, None) => "unknown".to_string(),
        };
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string());
        OsAccount { uid, user, host }
    }
}

/// The name of account `uid` in `/etc/passwd`, if it has one.
fn account_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?;
        (id.parse::<u32>().ok()? == uid && !name.is_empty()).then(|| name.to_string())
    })
}
