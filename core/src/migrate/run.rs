//! A version's run, decided: what a tenant's failure does to the version
//! — put aside (quarantined) and absorbed under the failure budget, or the
//! version stops — and what a stopped version leaves, schema by schema.
//! The executor (the shell) runs the units, writes the rows and asks here;
//! nothing here waits, reads a clock or touches a database.
//!
//! Invariants the executor relies on:
//! - A failure that is not the tenant's own (a lost connection, a
//!   read-only server, a full pool, a lost lease) is never absorbed: it is
//!   the database's under every tenant, and the version stops.
//! - A new tenant's version, a dry run and a version without a budget
//!   absorb nothing; a retry absorbs every failure of its tenants (they
//!   stay quarantined, one more failure counted).
//! - Every schema of a stopped plan is in exactly one of
//!   [`ByOutcome`]'s lists.

pub mod fence;
pub mod files;
pub mod schedule;
pub mod transactions;

use crate::migrate::config::DriftPolicy;
use crate::migrate::failure::Cause;
use crate::migrate::fingerprint::DriftReport;
use crate::migrate::plan::{Plan, StepSet};
use crate::migrate::quarantine::{self, FailureBudget};

/// How a version treats its tenants' failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Absorption {
    budget: FailureBudget,
    retrying: bool,
    isolated: bool,
    tenants: usize,
}

/// What a version is, as far as its failures go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunKind {
    /// The version's failure budget.
    pub budget: FailureBudget,
    /// A retry of quarantined tenants.
    pub retrying: bool,
    /// A new tenant's version.
    pub new_tenant: bool,
    /// A dry run (rolled back whatever happens).
    pub dry_run: bool,
    /// The tenants it runs in (what a budget in percent is of).
    pub tenants: usize,
}

impl Absorption {
    /// The rules for a version of `kind`.
    pub fn new(kind: RunKind) -> Absorption {
        let RunKind { budget, retrying, new_tenant, dry_run, tenants } = kind;
        let isolated = (!budget.is_none() || retrying) && !new_tenant && !dry_run;
        Absorption { budget, retrying, isolated, tenants }
    }

    /// Whether a tenant's failure of `cause` puts the tenant aside (the
    /// shell writes its quarantine row at once, then asks
    /// [`Absorption::goes_on`]) rather than stopping the version as it is.
    pub fn quarantines(&self, cause: Cause) -> bool {
        self.isolated && cause.is_tenants_own()
    }

    /// With `failures` tenants put aside by this version (the last one
    /// included): whether the version goes on without them.
    pub fn goes_on(&self, failures: usize) -> bool {
        self.retrying || quarantine::absorbs(failures, self.budget, self.tenants)
    }
}

/// What a version does about the fleet's drift, read before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriftVerdict {
    /// It runs over the fleet as planned (no drift, `driftPolicy: report`,
    /// or a dry run).
    Runs,
    /// It is refused (`driftPolicy: refuse`): the outliers and the schemas
    /// changed since their last unit, by name.
    Refused {
        /// Tenants whose live schema differs from their group's.
        outliers: Vec<String>,
        /// Schemas changed since their last committed unit.
        changed: Vec<String>,
    },
    /// These tenants are put aside first, `(tenant, why)`
    /// (`quarantine::drift_entries`; `driftPolicy: quarantine`); it runs without them.
    Quarantines(Vec<(String, String)>),
}

/// What `policy` makes of `report` for a version (a dry run is never
/// refused and quarantines nothing: it changes nothing). `driftPolicy:
/// off` reads no report; here it runs.
pub fn drift_verdict(
    policy: DriftPolicy,
    dry_run: bool,
    report: &DriftReport,
    single_schemas: &[&str],
) -> DriftVerdict {
    if !report.has_drift() || dry_run {
        return DriftVerdict::Runs;
    }
    match policy {
        DriftPolicy::Off | DriftPolicy::Report => DriftVerdict::Runs,
        DriftPolicy::Refuse => DriftVerdict::Refused {
            outliers: report.outliers.iter().map(|o| o.schema.clone()).collect(),
            changed: report.changed.iter().map(|c| c.schema.clone()).collect(),
        },
        DriftPolicy::Quarantine => DriftVerdict::Quarantines(quarantine::drift_entries(report, single_schemas)),
    }
}

/// The schemas of a stopped version's plan by what committed in each:
/// every step, some, or none — each list sorted, no name in two.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ByOutcome {
    /// Every step of the schema committed.
    pub committed: Vec<String>,
    /// Some did (the failing schema, when it committed a part).
    pub partly: Vec<String>,
    /// None did.
    pub none: Vec<String>,
}

/// What `committed` (indices into the plan's steps) leaves, per schema;
/// `partly_applied`: the schema (an index into the plan's schemas) whose
/// failed file ran outside a transaction and may have left a part of it
/// (MySQL's DDL): partly committed, whatever else it committed.
pub fn by_outcome(plan: &Plan, committed: &StepSet, partly_applied: Option<u32>) -> ByOutcome {
    let schemas = plan.schemas.len();
    let (mut all, mut some, mut in_plan) = (vec![true; schemas], vec![false; schemas], vec![false; schemas]);
    if let Some(slot) = partly_applied.and_then(|schema| some.get_mut(schema as usize)) {
        *slot = true;
    }
    for (index, step) in plan.steps.indexed() {
        let done = committed.contains(index);
        all[step.schema as usize] &= done;
        some[step.schema as usize] |= done;
        in_plan[step.schema as usize] = true;
    }
    let names_where = |keep: &dyn Fn(usize) -> bool| {
        let mut names: Vec<String> =
            (0..schemas).filter(|&i| in_plan[i] && keep(i)).map(|i| plan.schemas[i].clone()).collect();
        names.sort();
        names
    };
    ByOutcome {
        committed: names_where(&|i| all[i]),
        partly: names_where(&|i| some[i] && !all[i]),
        none: names_where(&|i| !some[i]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::plan::Step;

    fn kind(budget: FailureBudget) -> RunKind {
        RunKind { budget, retrying: false, new_tenant: false, dry_run: false, tenants: 20 }
    }

    #[test]
    fn without_a_budget_the_first_failure_stops_the_version() {
        let rules = Absorption::new(kind(FailureBudget::None));
        assert!(!rules.quarantines(Cause::Statement));
    }

    #[test]
    fn a_budget_absorbs_its_tenants_then_stops() {
        let rules = Absorption::new(kind(FailureBudget::Tenants(2)));
        assert!(rules.quarantines(Cause::Statement));
        assert_eq!([1, 2, 3].map(|n| rules.goes_on(n)), [true, true, false]);
    }

    #[test]
    fn a_budget_in_percent_is_of_the_tenants_the_version_runs_in() {
        let rules = Absorption::new(kind(FailureBudget::Percent(10)));
        assert_eq!([2, 3].map(|n| rules.goes_on(n)), [true, false]);
    }

    #[test]
    fn only_the_tenants_own_failures_are_absorbed() {
        let rules = Absorption::new(kind(FailureBudget::Tenants(5)));
        let absorbed = [Cause::Statement, Cause::LockTimeout, Cause::StatementTimeout];
        let stop = [Cause::ConnectionLost, Cause::ReadOnly, Cause::PoolExhausted, Cause::LockLost];
        assert!(absorbed.iter().all(|c| rules.quarantines(*c)));
        assert!(stop.iter().all(|c| !rules.quarantines(*c)));
    }

    #[test]
    fn a_retry_absorbs_every_failure_of_its_tenants() {
        let rules = Absorption::new(RunKind { retrying: true, ..kind(FailureBudget::None) });
        assert!(rules.quarantines(Cause::Statement));
        assert!(rules.goes_on(1_000));
        assert!(!rules.quarantines(Cause::ConnectionLost));
    }

    #[test]
    fn a_new_tenant_and_a_dry_run_absorb_nothing() {
        let new = Absorption::new(RunKind { new_tenant: true, ..kind(FailureBudget::Tenants(5)) });
        let dry = Absorption::new(RunKind { dry_run: true, ..kind(FailureBudget::Tenants(5)) });
        assert!(!new.quarantines(Cause::Statement) && !dry.quarantines(Cause::Statement));
    }

    #[test]
    fn each_drift_policy_has_its_verdict_and_a_dry_run_always_runs() {
        let report = quarantine::tests::drifted_report();
        let verdict = |policy, dry| drift_verdict(policy, dry, &report, &["ref"]);
        assert_eq!(verdict(DriftPolicy::Off, false), DriftVerdict::Runs);
        assert_eq!(verdict(DriftPolicy::Report, false), DriftVerdict::Runs);
        assert_eq!(
            verdict(DriftPolicy::Refuse, false),
            DriftVerdict::Refused {
                outliers: vec!["t2".to_string()],
                changed: vec!["ref".to_string(), "t2".into(), "t3".into()]
            }
        );
        let DriftVerdict::Quarantines(entries) = verdict(DriftPolicy::Quarantine, false) else {
            panic!("quarantine policy")
        };
        assert_eq!(entries, quarantine::drift_entries(&report, &["ref"]));
        for policy in [DriftPolicy::Refuse, DriftPolicy::Quarantine] {
            assert_eq!(verdict(policy, true), DriftVerdict::Runs, "{policy:?} on a dry run");
        }
    }

    #[test]
    fn without_drift_every_policy_runs() {
        let clean = DriftReport { tenants: 3, groups: Vec::new(), outliers: Vec::new(), changed: Vec::new() };
        for policy in [DriftPolicy::Off, DriftPolicy::Report, DriftPolicy::Refuse, DriftPolicy::Quarantine] {
            assert_eq!(drift_verdict(policy, false, &clean, &[]), DriftVerdict::Runs);
        }
    }

    fn plan(steps: &[(u32, u32)]) -> Plan {
        let schemas = steps.iter().map(|(_, s)| *s).max().map_or(0, |n| n + 1);
        Plan {
            schemas: (0..schemas).map(|i| format!("s{i}")).collect(),
            steps: steps.iter().map(|&(migration, schema)| Step { migration, schema, execute: true }).collect(),
            ..Plan::default()
        }
    }

    fn set(steps: &[u32]) -> StepSet {
        let mut set = StepSet::default();
        steps.iter().for_each(|s| set.insert(*s));
        set
    }

    #[test]
    fn a_stopped_version_names_each_schema_once_by_what_committed() {
        // s0: steps 0, 1; s1: steps 2, 3; s2: step 4.
        let plan = plan(&[(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]);
        let split = by_outcome(&plan, &set(&[0, 1, 2]), None);
        assert_eq!(split.committed, ["s0"]);
        assert_eq!(split.partly, ["s1"]);
        assert_eq!(split.none, ["s2"]);
    }

    #[test]
    fn a_file_that_may_be_partly_applied_makes_its_schema_partly_committed() {
        // s1's first file failed after a part of it committed (MySQL's DDL).
        let plan = plan(&[(0, 0), (0, 1), (1, 1), (0, 2)]);
        let split = by_outcome(&plan, &set(&[0]), Some(1));
        assert_eq!(
            (split.committed, split.partly, split.none),
            (vec!["s0".into()], vec!["s1".into()], vec!["s2".into()])
        );
        // Whatever else it committed, a schema failing so is never whole.
        let split = by_outcome(&plan, &set(&[0, 1]), Some(1));
        assert_eq!(split.partly, ["s1"]);
    }

    #[test]
    fn nothing_committed_leaves_every_schema_untouched() {
        let plan = plan(&[(0, 1), (0, 0)]);
        let split = by_outcome(&plan, &StepSet::default(), None);
        assert_eq!((split.committed.len(), split.partly.len()), (0, 0));
        assert_eq!(split.none, ["s0", "s1"]);
    }

    #[test]
    fn a_schema_without_steps_in_the_plan_is_in_no_list() {
        let mut plan = plan(&[(0, 0)]);
        plan.schemas.push("unused".into());
        let split = by_outcome(&plan, &set(&[0]), None);
        assert_eq!(split, ByOutcome { committed: vec!["s0".into()], ..ByOutcome::default() });
    }
}
