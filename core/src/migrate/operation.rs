//! What a mutation is: one of the API's operations, decided once where a
//! request is built (GraphQL, the command line, a rollout's driver), and
//! asked, never re-derived, everywhere after — what the audit log names
//! it, which schemas it plans, whether fleet drift and active rollouts
//! hold it, which shards a fleet sends it to.
//!
//! A field only one operation has (a new tenant's `colocate_with`, a
//! wave's `reviewed` files) lives in that variant, never as an optional
//! field every operation carries.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::migrate::fleet::Ask;
use crate::migrate::plan::{Action, Target};
use crate::migrate::quarantine::FailureBudget;
use crate::migrate::revert::Extent;
use crate::migrate::wave::Wave;

/// A mutation that runs files and creates a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// `createVersion` (`wave` all) or `createVersionWave`, and each wave
    /// of a rollout: the pending files of the single schemas and of the
    /// wave's tenants.
    Version {
        /// Apply or Sync.
        action: Action,
        /// The tenants it runs in (the single schemas run only with
        /// [`Wave::All`]).
        wave: Wave,
        /// A Sync records up to and including this file only (`apply
        /// --sync --to FILE`, Flyway's baseline).
        sync_to: Option<String>,
        /// Tenants it may fail in and go on; `None`: the configuration's.
        failure_budget: Option<FailureBudget>,
        /// A rollout's wave: the files (name → checksum) the rollout
        /// started with, checked against the files read before any runs.
        reviewed: Option<BTreeMap<String, String>>,
    },
    /// `createTenant`: a new tenant and its tenant files.
    NewTenant {
        /// The tenant, its name checked by the engine's rule.
        tenant: String,
        /// Apply or Sync.
        action: Action,
        /// On a sharded fleet: the shard to place it on (`None`: the one
        /// with the fewest tenants).
        shard: Option<String>,
        /// On Citus: the tenant whose node it goes to.
        colocate_with: Option<String>,
    },
    /// `createTenants`: new tenants created first, then their tenant files
    /// as one version.
    NewTenants {
        /// The tenants, checked whole before anything runs.
        tenants: Vec<String>,
        /// Apply or Sync.
        action: Action,
        /// On a sharded fleet: the shard to place them on.
        shard: Option<String>,
    },
    /// `retryQuarantined`: a version over quarantined tenants only.
    Retry {
        /// The tenants retried; empty: every quarantined tenant.
        tenants: Vec<String>,
    },
    /// `revertVersion`: down parts of the newest applied files.
    Revert {
        /// How far back.
        extent: Extent,
        /// The tenants it runs in (the single schemas only with
        /// [`Wave::All`]).
        wave: Wave,
    },
}

impl Operation {
    /// A plain `createVersion` over every schema.
    pub fn version(action: Action) -> Operation {
        Operation::Version { action, wave: Wave::All, sync_to: None, failure_budget: None, reviewed: None }
    }

    /// The API's name for it, as the audit log records it.
    pub fn api_name(&self) -> &'static str {
        match self {
            Operation::Version { wave: Wave::All, .. } => "createVersion",
            Operation::Version { .. } => "createVersionWave",
            Operation::NewTenant { .. } => "createTenant",
            Operation::NewTenants { .. } => "createTenants",
            Operation::Retry { .. } => "retryQuarantined",
            Operation::Revert { .. } => "revertVersion",
        }
    }

    /// The schemas the planner covers: a new tenant alone, or every schema
    /// (the wave and the quarantine then choose the tenants).
    pub fn target(&self) -> Target {
        match self {
            Operation::NewTenant { tenant, .. } => Target::NewTenant(tenant.clone()),
            _ => Target::AllSchemas,
        }
    }

    /// Apply or Sync (a retry and a revert run their SQL).
    pub fn action(&self) -> Action {
        match self {
            Operation::Version { action, .. }
            | Operation::NewTenant { action, .. }
            | Operation::NewTenants { action, .. } => *action,
            Operation::Retry { .. } | Operation::Revert { .. } => Action::Apply,
        }
    }

    /// A Sync that records what other tools' histories say ran
    /// ([`crate::migrate::history`]): every Sync but one cut by hand
    /// (`syncTo`, which records exactly what it names).
    pub fn adopts_histories(&self) -> bool {
        self.action() == Action::Sync && !matches!(self, Operation::Version { sync_to: Some(_), .. })
    }

    /// The tenants a version over the fleet runs in: new tenants are a
    /// wave of their own names; a new tenant and a retry choose theirs
    /// otherwise ([`Operation::target`], [`Operation::retried`]).
    pub fn wave(&self) -> Cow<'_, Wave> {
        match self {
            Operation::Version { wave, .. } | Operation::Revert { wave, .. } => Cow::Borrowed(wave),
            Operation::NewTenants { tenants, .. } => Cow::Owned(Wave::Named(tenants.clone())),
            Operation::NewTenant { .. } | Operation::Retry { .. } => Cow::Owned(Wave::All),
        }
    }

    /// What a fleet on several servers is asked (core's `fleet::parts`
    /// splits it by shard): a new tenant, a retry, a wave of named tenants
    /// (new tenants are one), or every tenant (a share or an attribute is
    /// chosen by each shard among its own).
    pub fn fleet_ask(&self) -> Ask<'_> {
        match self {
            Operation::NewTenant { tenant, shard, .. } => Ask::NewTenant { tenant, shard: shard.as_deref() },
            Operation::Retry { tenants } => Ask::Retry(tenants),
            Operation::NewTenants { tenants, .. } => Ask::Wave(tenants),
            Operation::Version { wave: Wave::Named(tenants), .. }
            | Operation::Revert { wave: Wave::Named(tenants), .. } => Ask::Wave(tenants),
            Operation::Version { .. } | Operation::Revert { .. } => Ask::Every,
        }
    }

    /// A retry's tenants (empty: every quarantined tenant).
    pub fn retried(&self) -> Option<&[String]> {
        match self {
            Operation::Retry { tenants } => Some(tenants),
            _ => None,
        }
    }

    /// A revert's extent.
    pub fn revert(&self) -> Option<&Extent> {
        match self {
            Operation::Revert { extent, .. } => Some(extent),
            _ => None,
        }
    }

    /// The shard the caller placed a new tenant (or new tenants) on.
    pub fn shard(&self) -> Option<&str> {
        match self {
            Operation::NewTenant { shard, .. } | Operation::NewTenants { shard, .. } => shard.as_deref(),
            _ => None,
        }
    }

    /// The tenants created before the version runs (`createTenants`); the
    /// version then plans their tenant files only.
    pub fn creates_tenants(&self) -> Option<&[String]> {
        match self {
            Operation::NewTenants { tenants, .. } => Some(tenants),
            _ => None,
        }
    }

    /// The failure budget the caller asked for (`None`: the configuration's).
    pub fn failure_budget(&self) -> Option<FailureBudget> {
        match self {
            Operation::Version { failure_budget, .. } => *failure_budget,
            _ => None,
        }
    }

    /// Whether fleet drift is judged (`driftPolicy`) before it runs: an
    /// Apply over the fleet. A retry runs where the operator said, a new
    /// tenant has no drift yet, a Sync records and runs nothing.
    pub fn judges_fleet_drift(&self) -> bool {
        match self {
            Operation::Version { action, .. } | Operation::NewTenants { action, .. } => *action == Action::Apply,
            Operation::Revert { .. } => true,
            Operation::NewTenant { .. } | Operation::Retry { .. } => false,
        }
    }

    /// Whether a rollout in progress holds it (unless it is that rollout's
    /// own wave, or overrides): a version or a revert over the fleet. New
    /// tenants are in no rollout; a retry finishes an earlier version.
    pub fn held_by_rollouts(&self) -> bool {
        matches!(self, Operation::Version { .. } | Operation::Revert { .. })
    }

    /// What it acts on, for the audit log: `version "v2"`, the id of the
    /// version it created, then the tenant, the wave or the retried tenants.
    pub fn describe(&self, version_name: &str, id: Option<i64>) -> String {
        let mut target = format!("version {version_name:?}");
        if let Some(id) = id {
            target.push_str(&format!(" (id {id})"));
        }
        if let Operation::NewTenant { tenant, .. } = self {
            target.push_str(&format!(", tenant {tenant}"));
        }
        let wave = self.wave();
        if *wave != Wave::All {
            target.push_str(&format!(", wave {wave:?}"));
        }
        if let Operation::Retry { tenants } = self {
            target.push_str(&format!(", retry {}", if tenants.is_empty() { "all".into() } else { tenants.join(",") }));
        }
        target
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every() -> Vec<Operation> {
        vec![
            Operation::version(Action::Apply),
            Operation::Version {
                action: Action::Apply,
                wave: Wave::Share(10),
                sync_to: None,
                failure_budget: None,
                reviewed: None,
            },
            Operation::NewTenant { tenant: "t9".into(), action: Action::Apply, shard: None, colocate_with: None },
            Operation::NewTenants { tenants: vec!["a".into(), "b".into()], action: Action::Apply, shard: None },
            Operation::Retry { tenants: vec![] },
            Operation::Revert { extent: Extent::Steps(1), wave: Wave::All },
        ]
    }

    #[test]
    fn each_operation_has_its_api_name() {
        let names: Vec<&str> = every().iter().map(Operation::api_name).collect();
        assert_eq!(
            names,
            [
                "createVersion",
                "createVersionWave",
                "createTenant",
                "createTenants",
                "retryQuarantined",
                "revertVersion"
            ]
        );
    }

    #[test]
    fn only_a_new_tenant_plans_one_schema_and_new_tenants_are_their_own_wave() {
        let targets: Vec<Target> = every().iter().map(Operation::target).collect();
        assert_eq!(targets.iter().filter(|t| **t != Target::AllSchemas).count(), 1);
        assert_eq!(targets[2], Target::NewTenant("t9".into()));
        assert_eq!(*every()[3].wave(), Wave::Named(vec!["a".into(), "b".into()]));
        assert_eq!(every()[3].creates_tenants(), Some(&["a".to_string(), "b".to_string()][..]));
        assert_eq!(every()[4].retried(), Some(&[][..]));
        assert_eq!(every()[5].revert(), Some(&Extent::Steps(1)));
    }

    #[test]
    fn drift_is_judged_before_an_apply_over_the_fleet_only() {
        let judged: Vec<bool> = every().iter().map(Operation::judges_fleet_drift).collect();
        assert_eq!(judged, [true, true, false, true, false, true]);
        let sync = Operation::Version {
            action: Action::Sync,
            wave: Wave::All,
            sync_to: None,
            failure_budget: None,
            reviewed: None,
        };
        assert!(!sync.judges_fleet_drift());
    }

    #[test]
    fn rollouts_hold_versions_and_reverts_not_new_tenants_or_retries() {
        let held: Vec<bool> = every().iter().map(Operation::held_by_rollouts).collect();
        assert_eq!(held, [true, true, false, false, false, true]);
    }

    #[test]
    fn a_fleet_is_asked_for_named_tenants_by_name_and_for_the_rest_whole() {
        let asks: Vec<String> = every().iter().map(|op| format!("{:?}", op.fleet_ask())).collect();
        assert_eq!(
            asks,
            [
                "Every",
                "Every",
                "NewTenant { tenant: \"t9\", shard: None }",
                "Wave([\"a\", \"b\"])",
                "Retry([])",
                "Every"
            ]
        );
        let canary = Operation::Revert { extent: Extent::Steps(1), wave: Wave::Named(vec!["c".into()]) };
        assert_eq!(format!("{:?}", canary.fleet_ask()), "Wave([\"c\"])");
    }

    #[test]
    fn a_retry_and_a_revert_run_their_sql() {
        assert!(every().iter().all(|op| op.action() == Action::Apply));
        let sync = Operation::NewTenant { tenant: "t".into(), action: Action::Sync, shard: None, colocate_with: None };
        assert_eq!(sync.action(), Action::Sync);
    }

    #[test]
    fn the_audit_target_names_the_tenant_the_wave_or_the_retry() {
        let described: Vec<String> = every().iter().map(|op| op.describe("v2", None)).collect();
        assert_eq!(described[0], "version \"v2\"");
        assert_eq!(described[1], "version \"v2\", wave Share(10)");
        assert_eq!(described[2], "version \"v2\", tenant t9");
        assert_eq!(described[3], "version \"v2\", wave Named([\"a\", \"b\"])");
        assert_eq!(described[4], "version \"v2\", retry all");
        let named = Operation::Retry { tenants: vec!["a".into(), "b".into()] };
        assert_eq!(named.describe("r", Some(7)), "version \"r\" (id 7), retry a,b");
    }
}
