//! Who may change the fleet: roles and the permission each API field needs
//! ([`role`]), API tokens ([`token`]), the audit log's hash chain
//! ([`audit`]) and its signatures ([`audit_key`]), and the throttle of failed authentications ([`throttle`]).
//!
//! Like the rest of the crate, nothing here reads the clock or draws random
//! numbers: a token's random bytes, the time of an audit row and of a failed
//! authentication enter as arguments; the shell stores and serves.

pub mod audit;
pub mod audit_key;
pub mod role;
pub mod throttle;
pub mod token;

pub use role::{Permission, Role, Roles};

/// Who did something, as rows and refusals name them: the actor as shown,
/// and its principal beside it when the two differ
/// (`oidc:alice <a@x> [oidc:https://idp#alice]`).
pub fn actor_with_principal(actor: &str, principal: &str) -> String {
    if principal.is_empty() || principal == actor { actor.to_string() } else { format!("{actor} [{principal}]") }
}
