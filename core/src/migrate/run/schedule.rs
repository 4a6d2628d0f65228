//! Which unit of a version runs when, as a state machine the executor
//! drives (the quinn-proto way: no I/O, no clock, no threads here). The
//! shell asks [`Schedule::next`] and gets a unit to start on a free
//! connection, or "wait for a running unit", or "the version is over"; it
//! reports each unit's end with [`Schedule::committed`] or
//! [`Schedule::failed`] (and, for a tenant put aside, whether its
//! quarantine row was written: [`Schedule::put_aside`]).
//!
//! Invariants ([`tests`] and the property test in `core/tests/properties.rs`
//! check them over random outcomes):
//! - Segments run in plan order, and a segment's first unit starts only once
//!   every unit of the segment before it has ended (a tenant migration may
//!   rely on a single schema changed earlier in the version).
//! - Until the version's row exists (the first transaction of the version
//!   committed), units run one at a time, so a version never exists without
//!   what it applied; then a tenant segment runs up to `concurrency` units
//!   at once, a single-schema segment one.
//! - After a failure that stops the version no unit starts; running units
//!   end, and only then is the version over.
//! - A tenant put aside by this version, or waiting on a backfill, runs
//!   nothing more in it.
//! - Every unit starts at most once.

use crate::migrate::failure::Cause;
use crate::migrate::plan::{Plan, Segment, Unit, Units};
use crate::migrate::run::Absorption;
use crate::migrate::source::SourceMigration;

/// What the shell does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Start this unit on a free connection (opening one when none is free:
    /// never more than the `concurrency` given).
    Start(Unit),
    /// Wait until a running unit ends, and report it.
    Wait,
    /// The version is over: nothing runs, nothing will start.
    Done,
}

/// What a unit's failure does to the version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// The version stops: no unit starts, running ones end.
    Stops,
    /// The tenant is put aside: the shell writes its quarantine row and
    /// reports whether it could ([`Schedule::put_aside`]).
    PutsAside,
}

/// The version's units over time.
#[derive(Debug)]
pub struct Schedule<'p> {
    plan: &'p Plan,
    absorption: Absorption,
    concurrency: usize,
    segments: Vec<Segment>,
    /// The index of the segment whose units are handed out.
    segment: usize,
    units: Option<Units<'p>>,
    /// A new tenant without tenant migrations: its creation is the one
    /// unit, not yet handed out.
    creation: bool,
    /// Whether the units running now are tenant units.
    tenants: bool,
    running: usize,
    stopped: bool,
    /// Tenants put aside by this version (by schema index), and how many.
    aside: Vec<bool>,
    aside_count: usize,
}

impl<'p> Schedule<'p> {
    /// The schedule of `plan`'s units under `absorption`, up to
    /// `concurrency` tenant units at once (at least one).
    pub fn new(plan: &'p Plan, sources: &[SourceMigration], absorption: Absorption, concurrency: usize) -> Self {
        let segments = plan.segments(sources);
        Schedule {
            creation: plan.new_tenant.is_some() && segments.is_empty(),
            plan,
            absorption,
            concurrency: concurrency.max(1),
            segments,
            segment: 0,
            units: None,
            tenants: false,
            running: 0,
            stopped: false,
            aside: vec![false; plan.schemas.len()],
            aside_count: 0,
        }
    }

    /// What to do now; `version_exists`: the version's row has committed
    /// (as the shell last saw).
    pub fn next(&mut self, version_exists: bool) -> Next {
        if self.stopped {
            return self.wait_or_done();
        }
        if self.creation {
            self.creation = false;
            self.running += 1;
            return Next::Start(Unit { schema: 0, steps: Vec::new() });
        }
        let limit = if version_exists && self.tenants { self.concurrency } else { 1 };
        if self.running >= limit {
            return Next::Wait;
        }
        loop {
            let Some(units) = &mut self.units else {
                if !self.enter_next_segment() {
                    return self.wait_or_done();
                }
                continue;
            };
            match units.next() {
                Some(unit) if self.tenants && self.aside[unit.schema as usize] => continue,
                Some(unit) => {
                    self.running += 1;
                    return Next::Start(unit);
                }
                None => {
                    // The segment's units are all handed out: the next
                    // segment waits for its running ones.
                    if self.running > 0 {
                        return Next::Wait;
                    }
                    self.units = None;
                }
            }
        }
    }

    /// Moves to the next segment, when there is one (the segment before it
    /// ended: nothing runs).
    fn enter_next_segment(&mut self) -> bool {
        let Some(segment) = self.segments.get(self.segment) else { return false };
        self.segment += 1;
        self.tenants = segment.tenants;
        self.units = Some(self.plan.units(segment));
        true
    }

    fn wait_or_done(&self) -> Next {
        if self.running > 0 { Next::Wait } else { Next::Done }
    }

    /// A unit committed everything it ran.
    pub fn committed(&mut self) {
        self.running = self.running.saturating_sub(1);
    }

    /// A running unit failed, of `cause` (`None`: not a migration's
    /// failure — bookkeeping, a lost lock before it started — which always
    /// stops the version).
    pub fn failed(&mut self, cause: Option<Cause>) -> OnFailure {
        self.running = self.running.saturating_sub(1);
        match cause {
            Some(cause) if self.tenants && self.absorption.quarantines(cause) => OnFailure::PutsAside,
            _ => {
                self.stopped = true;
                OnFailure::Stops
            }
        }
    }

    /// After [`OnFailure::PutsAside`]: whether the tenant's quarantine row
    /// was written (`written`). Returns whether the version goes on: not
    /// when the row could not be written, nor past the failure budget.
    pub fn put_aside(&mut self, schema: u32, written: bool) -> bool {
        if !written {
            self.stopped = true;
            return false;
        }
        if let Some(flag) = self.aside.get_mut(schema as usize)
            && !*flag
        {
            *flag = true;
            self.aside_count += 1;
        }
        let goes_on = self.absorption.goes_on(self.aside_count);
        self.stopped |= !goes_on;
        goes_on
    }

    /// A tenant's unit ended at a backfill that runs after the version
    /// (core's `backfill::runs_in_version`): what it ran before committed,
    /// and the tenant runs nothing more in this version. No failure: the
    /// budget is untouched.
    pub fn waits(&mut self, schema: u32) {
        self.running = self.running.saturating_sub(1);
        if let Some(flag) = self.aside.get_mut(schema as usize) {
            *flag = true;
        }
    }

    /// Stops the version from the shell's side (a connection for the next
    /// unit could not be opened).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Whether the version stopped.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::MigrationType;
    use crate::migrate::plan::Step;
    use crate::migrate::quarantine::FailureBudget;
    use crate::migrate::run::RunKind;

    /// Sources: 0 a single-schema migration, 1 and 2 tenant migrations.
    fn sources() -> Vec<SourceMigration> {
        vec![
            SourceMigration::plain("ref", "0.sql", MigrationType::SingleMigration, ""),
            SourceMigration::plain("tenants", "1.sql", MigrationType::TenantMigration, ""),
            SourceMigration::plain("tenants", "2.sql", MigrationType::TenantMigration, ""),
        ]
    }

    /// `ref` (schema 0) gets migration 0; tenants t1..=n get 1 and 2.
    fn plan(tenants: u32) -> Plan {
        let mut steps = vec![Step { migration: 0, schema: 0, execute: true }];
        for migration in 1..=2 {
            steps.extend((1..=tenants).map(|schema| Step { migration, schema, execute: true }));
        }
        Plan {
            schemas: std::iter::once("ref".to_string()).chain((1..=tenants).map(|i| format!("t{i}"))).collect(),
            steps: steps.into_iter().collect(),
            ..Plan::default()
        }
    }

    /// Three segments: migration 1 in t1 and t2, then 0 in `ref`, then 2
    /// in t1 and t2.
    fn tenants_ref_tenants() -> Plan {
        let steps = [(1, 1), (1, 2), (0, 0), (2, 1), (2, 2)];
        Plan {
            schemas: vec!["ref".into(), "t1".into(), "t2".into()],
            steps: steps.iter().map(|&(migration, schema)| Step { migration, schema, execute: true }).collect(),
            ..Plan::default()
        }
    }

    fn rules(budget: FailureBudget, tenants: usize) -> Absorption {
        Absorption::new(RunKind { budget, retrying: false, new_tenant: false, dry_run: false, tenants })
    }

    fn start(next: Next) -> Unit {
        match next {
            Next::Start(unit) => unit,
            other => panic!("expected a unit to start, got {other:?}"),
        }
    }

    #[test]
    fn units_run_one_at_a_time_until_the_version_exists_then_up_to_the_concurrency() {
        let (plan, sources) = (plan(4), sources());
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::None, 4), 3);
        let first = start(schedule.next(false));
        assert_eq!((first.schema, first.steps.len()), (0, 1), "the single schema first");
        assert_eq!(schedule.next(false), Next::Wait);
        schedule.committed();
        let t1 = start(schedule.next(false));
        assert_eq!(t1.steps.len(), 2, "a tenant's unit holds both its migrations");
        assert_eq!(schedule.next(false), Next::Wait, "no version row yet: one at a time");
        schedule.committed();
        let started: Vec<u32> = (0..3).map(|_| start(schedule.next(true)).schema).collect();
        assert_eq!(started, [2, 3, 4]);
        assert_eq!(schedule.next(true), Next::Wait);
        (0..3).for_each(|_| schedule.committed());
        assert_eq!(schedule.next(true), Next::Done);
    }

    #[test]
    fn a_segment_starts_once_the_one_before_has_ended() {
        let (plan, sources) = (tenants_ref_tenants(), sources());
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::None, 2), 4);
        assert_eq!(start(schedule.next(true)).schema, 1);
        assert_eq!(start(schedule.next(true)).schema, 2);
        assert_eq!(schedule.next(true), Next::Wait, "ref waits for both tenants");
        schedule.committed();
        assert_eq!(schedule.next(true), Next::Wait);
        schedule.committed();
        assert_eq!(start(schedule.next(true)).schema, 0);
        assert_eq!(schedule.next(true), Next::Wait, "the tenants' second segment waits for ref");
    }

    #[test]
    fn a_failure_without_a_budget_stops_new_units_and_lets_running_ones_end() {
        let (plan, sources) = (plan(4), sources());
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::None, 4), 2);
        start(schedule.next(true));
        schedule.committed();
        start(schedule.next(true));
        start(schedule.next(true));
        assert_eq!(schedule.failed(Some(Cause::Statement)), OnFailure::Stops);
        assert_eq!(schedule.next(true), Next::Wait, "the other unit still runs");
        schedule.committed();
        assert_eq!(schedule.next(true), Next::Done);
        assert!(schedule.is_stopped());
    }

    #[test]
    fn a_budget_puts_tenants_aside_until_it_is_spent() {
        let (plan, sources) = (plan(4), sources());
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::Tenants(1), 4), 1);
        start(schedule.next(true));
        schedule.committed();
        let t1 = start(schedule.next(true));
        assert_eq!(schedule.failed(Some(Cause::Statement)), OnFailure::PutsAside);
        assert!(schedule.put_aside(t1.schema, true), "one tenant is within the budget");
        let t2 = start(schedule.next(true));
        assert_eq!(schedule.failed(Some(Cause::LockTimeout)), OnFailure::PutsAside);
        assert!(!schedule.put_aside(t2.schema, true), "the second is past it");
        assert_eq!(schedule.next(true), Next::Done);
    }

    #[test]
    fn a_tenant_waiting_on_a_backfill_runs_nothing_more_and_spends_no_budget() {
        let (plan, sources) = (tenants_ref_tenants(), sources());
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::None, 2), 2);
        let t1 = start(schedule.next(true));
        assert_eq!(t1.schema, 1);
        start(schedule.next(true));
        schedule.waits(t1.schema);
        schedule.committed();
        assert_eq!(start(schedule.next(true)).schema, 0, "ref runs: no failure stopped the version");
        schedule.committed();
        let later: Vec<u32> = std::iter::from_fn(|| match schedule.next(true) {
            Next::Start(unit) => {
                schedule.committed();
                Some(unit.schema)
            }
            _ => None,
        })
        .collect();
        assert_eq!(later, [2], "t1 waits: its second segment does not run");
        assert!(!schedule.is_stopped());
    }

    #[test]
    fn a_failure_that_is_not_the_tenants_own_always_stops() {
        let (plan, sources) = (plan(2), sources());
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::Tenants(5), 2), 1);
        start(schedule.next(true));
        schedule.committed();
        start(schedule.next(true));
        assert_eq!(schedule.failed(Some(Cause::ConnectionLost)), OnFailure::Stops);
        assert_eq!(schedule.next(true), Next::Done);
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::Tenants(5), 2), 1);
        start(schedule.next(true));
        assert_eq!(schedule.failed(Some(Cause::Statement)), OnFailure::Stops, "a single schema is shared");
    }

    #[test]
    fn a_quarantine_row_that_cannot_be_written_stops_the_version() {
        let (plan, sources) = (plan(3), sources());
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::Tenants(5), 3), 1);
        start(schedule.next(true));
        schedule.committed();
        let t1 = start(schedule.next(true));
        assert_eq!(schedule.failed(Some(Cause::Statement)), OnFailure::PutsAside);
        assert!(!schedule.put_aside(t1.schema, false));
        assert_eq!(schedule.next(true), Next::Done);
    }

    #[test]
    fn a_tenant_put_aside_runs_nothing_more_in_the_version() {
        let (plan, sources) = (tenants_ref_tenants(), sources());
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::Tenants(5), 2), 1);
        let t1 = start(schedule.next(true));
        assert_eq!(schedule.failed(Some(Cause::Statement)), OnFailure::PutsAside);
        assert!(schedule.put_aside(t1.schema, true));
        let order: Vec<u32> = std::iter::from_fn(|| match schedule.next(true) {
            Next::Start(unit) => {
                schedule.committed();
                Some(unit.schema)
            }
            _ => None,
        })
        .collect();
        assert_eq!(order, [2, 0, 2], "t1 gets nothing of the second segment");
    }

    #[test]
    fn a_new_tenant_without_migrations_is_one_unit_of_no_steps() {
        let sources = sources();
        let plan = Plan { schemas: vec!["t9".into()], new_tenant: Some("t9".into()), ..Plan::default() };
        let mut schedule = Schedule::new(&plan, &sources, rules(FailureBudget::None, 1), 4);
        assert_eq!(schedule.next(false), Next::Start(Unit { schema: 0, steps: Vec::new() }));
        assert_eq!(schedule.next(false), Next::Wait);
        schedule.committed();
        assert_eq!(schedule.next(true), Next::Done);
    }
}
