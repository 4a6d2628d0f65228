//! Roles, permissions, and which permission each field of the API needs.
//!
//! Invariant: the check is per resolved root field of an operation (the
//! shell's GraphQL extension calls [`required`] for every field it
//! resolves), so aliases, batches and fragments reach the same rule; a
//! mutation this table does not know needs [`Permission::Administer`].

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// What an operation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Every query: versions, tenants, plans, status, drift, quarantine,
    /// rollouts.
    Read,
    /// Versions, new tenants, waves, reverts, retries; starting, pausing,
    /// resuming and cancelling rollouts.
    Deploy,
    /// Approving a rollout's next wave.
    Approve,
    /// Releasing quarantined tenants, tokens, the configuration route, the
    /// audit log.
    Administer,
}

impl Permission {
    /// The name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Deploy => "deploy",
            Permission::Approve => "approve",
            Permission::Administer => "administer",
        }
    }
}

/// A role an identity holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Reads everything.
    Viewer,
    /// Reads, and changes the fleet (versions, waves, rollouts) without
    /// approving.
    Deployer,
    /// Reads, and approves rollouts.
    Approver,
    /// Everything.
    Admin,
}

impl Role {
    /// Every role, least first.
    pub const ALL: [Role; 4] = [Role::Viewer, Role::Deployer, Role::Approver, Role::Admin];

    /// The name in configuration, tokens and messages.
    pub fn name(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Deployer => "deployer",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }

    /// Whether the role allows `permission`.
    pub fn grants(self, permission: Permission) -> bool {
        matches!(
            (self, permission),
            (Role::Admin, _)
                | (_, Permission::Read)
                | (Role::Deployer, Permission::Deploy)
                | (Role::Approver, Permission::Approve)
        )
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A role name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0:?} is not a role: expected viewer, deployer, approver or admin")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(text: &str) -> Result<Role, UnknownRole> {
        Role::ALL
            .into_iter()
            .find(|role| role.name().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| UnknownRole(text.to_string()))
    }
}

/// The roles one identity holds (an OIDC or proxy identity may hold
/// several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Roles(u8);

impl Roles {
    /// No role: every operation refused.
    pub const NONE: Roles = Roles(0);

    /// Exactly `role`.
    pub fn only(role: Role) -> Roles {
        Roles::NONE.with(role)
    }

    /// These roles and `role`.
    pub fn with(self, role: Role) -> Roles {
        Roles(self.0 | 1 << role as u8)
    }

    /// Whether `role` is held.
    pub fn holds(self, role: Role) -> bool {
        self.0 & 1 << role as u8 != 0
    }

    /// Whether any role held allows `permission`.
    pub fn grants(self, permission: Permission) -> bool {
        Role::ALL.into_iter().any(|role| self.holds(role) && role.grants(permission))
    }

    /// The roles held, least first.
    pub fn list(self) -> Vec<Role> {
        Role::ALL.into_iter().filter(|role| self.holds(*role)).collect()
    }
}

impl FromIterator<Role> for Roles {
    fn from_iter<I: IntoIterator<Item = Role>>(roles: I) -> Roles {
        roles.into_iter().fold(Roles::NONE, Roles::with)
    }
}

/// The permission a field of the API needs: `parent` is the type the field
/// is resolved on (`Query`, `Mutation`); fields below the root need nothing
/// more than their root field did (`None`). `given(name)` says whether the
/// request gives the field the argument `name`: SQL text of the caller's
/// own (`desiredDiff(desired:)`) runs on the database — in a scratch schema
/// rolled back, or a scratch database dropped, but run, with the service's
/// credentials, its errors answered — so it needs what running a version's
/// files needs; a reader diffs against the configuration's `desiredSchema`.
pub fn required(parent: &str, field: &str, given: impl Fn(&str) -> bool) -> Option<Permission> {
    match parent {
        "Query" => Some(match field {
            "audit" => Permission::Administer,
            "desiredDiff" if given("desired") => Permission::Deploy,
            _ => Permission::Read,
        }),
        "Mutation" => Some(match field {
            "createVersion" | "createTenant" | "createTenants" | "createVersionWave" | "applyDesiredSchema"
            | "revertVersion" | "retryQuarantined" | "startRollout" | "pauseRollout" | "resumeRollout"
            | "cancelRollout" | "pauseBackfills" | "resumeBackfills" | "cancelBackfills" => Permission::Deploy,
            "approveRollout" => Permission::Approve,
            _ => Permission::Administer,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`required`] of a field given no argument.
    fn bare(parent: &str, field: &str) -> Option<Permission> {
        required(parent, field, |_| false)
    }

    #[test]
    fn each_role_grants_what_the_table_says() {
        use Permission::*;
        let grants = |role: Role| [Read, Deploy, Approve, Administer].map(|p| role.grants(p));
        assert_eq!(grants(Role::Viewer), [true, false, false, false]);
        assert_eq!(grants(Role::Deployer), [true, true, false, false]);
        assert_eq!(grants(Role::Approver), [true, false, true, false]);
        assert_eq!(grants(Role::Admin), [true, true, true, true]);
    }

    #[test]
    fn pausing_resuming_and_cancelling_backfills_is_a_deployers() {
        assert_eq!(bare("Mutation", "pauseBackfills"), Some(Permission::Deploy));
        assert_eq!(bare("Mutation", "cancelBackfills"), Some(Permission::Deploy));
        assert_eq!(bare("Mutation", "resumeBackfills"), Some(Permission::Deploy));
    }

    #[test]
    fn creating_tenants_one_or_many_needs_the_same_permission() {
        assert_eq!(bare("Mutation", "createTenants"), bare("Mutation", "createTenant"));
        assert_eq!(bare("Mutation", "createTenants"), Some(Permission::Deploy));
    }

    #[test]
    fn bringing_tenants_to_a_desired_schema_is_a_deployers() {
        assert_eq!(bare("Mutation", "applyDesiredSchema"), Some(Permission::Deploy));
    }

    #[test]
    fn several_roles_grant_what_any_of_them_does() {
        let both: Roles = [Role::Deployer, Role::Approver].into_iter().collect();
        assert!(both.grants(Permission::Deploy) && both.grants(Permission::Approve));
        assert!(!both.grants(Permission::Administer));
        assert!(!Roles::NONE.grants(Permission::Read));
        assert_eq!(both.list(), vec![Role::Deployer, Role::Approver]);
    }

    #[test]
    fn a_diff_against_sql_the_caller_gives_is_a_deployers_and_against_the_configured_file_a_readers() {
        assert_eq!(required("Query", "desiredDiff", |name| name == "desired"), Some(Permission::Deploy));
        assert_eq!(required("Query", "desiredDiff", |_| false), Some(Permission::Read));
        assert_eq!(required("Query", "drift", |_| true), Some(Permission::Read));
    }

    #[test]
    fn fields_need_their_permission_and_unknown_mutations_need_admin() {
        assert_eq!(bare("Query", "versions"), Some(Permission::Read));
        assert_eq!(bare("Query", "__schema"), Some(Permission::Read));
        assert_eq!(bare("Query", "audit"), Some(Permission::Administer));
        assert_eq!(bare("Mutation", "createVersion"), Some(Permission::Deploy));
        assert_eq!(bare("Mutation", "approveRollout"), Some(Permission::Approve));
        assert_eq!(bare("Mutation", "releaseQuarantined"), Some(Permission::Administer));
        assert_eq!(bare("Mutation", "somethingNew"), Some(Permission::Administer));
        assert_eq!(bare("Version", "name"), None);
    }

    #[test]
    fn roles_parse_by_name() {
        assert_eq!(" Deployer".parse::<Role>(), Ok(Role::Deployer));
        assert!("root".parse::<Role>().unwrap_err().to_string().contains("viewer, deployer, approver or admin"));
    }
}
