//! One run of a wave, round by round, as the service drives it (sans-IO:
//! the shell reads the quarantine, makes each version and runs its
//! backfills; this decides what comes next and what the wave's event
//! says).
//!
//! A tenant's files after a backfill wait for it, so once the wave's
//! backfills are done the wave runs again for them — a version each round,
//! up to [`ROUNDS`] — until nothing of it waits: a rollout is never
//! complete with files of its version left pending in its tenants. A wave
//! that names its tenants runs each round without those it quarantined
//! ([`Rollout::wave_runs_without`]); those an earlier run of it put aside
//! (its runner was killed, or it failed and was resumed) count against its
//! failure budget, so a wave run twice absorbs no more than once.

use std::collections::BTreeSet;

use crate::migrate::failure::absorbed_cause;
use crate::migrate::quarantine::{FailureBudget, absorbs};
use crate::migrate::rollout::Rollout;
use crate::migrate::summary::some_of;

/// Versions of one wave's run at most: the first, then one after each
/// round of backfills for the files that waited on them (a file after a
/// backfill after a backfill… needs one each).
pub const ROUNDS: usize = 16;

/// What the shell does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Make the wave's version of this round, named `name`; over
    /// `tenants` when the wave names its tenants.
    Version {
        /// The version's name.
        name: String,
        /// The tenants it runs in (`None`: the wave's own selection).
        tenants: Option<Vec<String>>,
        /// Its failure budget, when less than the wave's: what is left of
        /// it after the failures of an earlier run.
        budget: Option<FailureBudget>,
    },
    /// The run has ended: the detail of the wave's event.
    Done(String),
    /// The wave fails: an earlier run of it quarantined more tenants than
    /// its budget absorbs (why).
    Failed(String),
    /// Tell the run how many tenants the wave selects ([`WaveRun::sized`]),
    /// then ask again: a wave that does not name its tenants, an earlier
    /// run of which put some aside.
    Size,
}

/// A quarantine row as a wave's run reads it: the tenant, the request that
/// put it aside, and why (a [`crate::migrate::failure::Cause`] name, or
/// `SHARD_UNREACHABLE`, `SCHEMA_DRIFT`, `BACKFILL_CANCELLED`). A pair is a
/// failure of the statement's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aside<'a> {
    /// The tenant.
    pub tenant: &'a str,
    /// The request that put it aside.
    pub request_id: &'a str,
    /// Why.
    pub cause: &'a str,
}

impl<'a> From<(&'a str, &'a str, &'a str)> for Aside<'a> {
    fn from((tenant, request_id, cause): (&'a str, &'a str, &'a str)) -> Self {
        Aside { tenant, request_id, cause }
    }
}

impl<'a> From<(&'a str, &'a str)> for Aside<'a> {
    fn from((tenant, request_id): (&'a str, &'a str)) -> Self {
        Aside { tenant, request_id, cause: crate::migrate::failure::Cause::Statement.name() }
    }
}

/// A wave's run in progress.
#[derive(Debug)]
pub struct WaveRun<'r> {
    rollout: &'r Rollout,
    wave: usize,
    round: usize,
    named: Option<Vec<String>>,
    budget: FailureBudget,
    held: String,
    details: Vec<String>,
    ended: bool,
    size: Option<usize>,
    /// The failures counted against the budget so far: an earlier run's,
    /// then each round's (its version's and its backfills').
    spent: usize,
}

impl<'r> WaveRun<'r> {
    /// The run of wave `wave` of `rollout`: `named`, the tenants the wave
    /// names (`None`: a share, an attribute, the rest); `held`, what the
    /// shell already held back (a desired-state wave's tenants whose plan
    /// changed), said in the first round's detail; `budget`, the wave's
    /// failure budget.
    pub fn new(
        rollout: &'r Rollout,
        wave: usize,
        named: Option<Vec<String>>,
        held: String,
        budget: FailureBudget,
    ) -> Self {
        WaveRun {
            rollout,
            wave,
            round: 0,
            named,
            budget,
            held,
            details: Vec::new(),
            ended: false,
            size: None,
            spent: 0,
        }
    }

    /// Whether [`WaveRun::next`] reads the quarantine: always (a wave that
    /// does not name its tenants reads it in its first round only, for
    /// what an earlier run of it put aside).
    pub fn reads_quarantine(&self) -> bool {
        self.named.is_some() || self.round == 0
    }

    /// How many tenants the wave selects now, quarantined ones included
    /// (after [`Step::Size`], or where [`WaveRun::needs_size`]): what its
    /// failure budget is of.
    pub fn sized(&mut self, size: usize) {
        self.size = Some(size);
    }

    /// A round absorbed `failures` more (its version's tenants put aside
    /// for their own failure, then its backfills' failed ones): they count
    /// against the wave's budget in what follows, so a wave absorbs no more
    /// over its rounds than once.
    pub fn absorbed(&mut self, failures: usize) {
        self.spent += failures;
    }

    /// Whether [`WaveRun::left`] needs the wave's size first
    /// ([`WaveRun::sized`]): a wave that does not name its tenants, once a
    /// failure was counted.
    pub fn needs_size(&self) -> bool {
        self.spent > 0 && self.named.is_none() && self.size.is_none()
    }

    /// The budget left for what runs next (a round's backfills, the next
    /// round's version): the wave's own until a failure is counted, then
    /// the tenants it may still put aside (none, where the size is not
    /// known: [`WaveRun::needs_size`]).
    pub fn left(&self) -> FailureBudget {
        if self.spent == 0 {
            return self.budget;
        }
        let size = self.named.as_ref().map(Vec::len).or(self.size).unwrap_or(0);
        let left = self.budget.allowed(size).saturating_sub(self.spent);
        FailureBudget::Tenants(u32::try_from(left).unwrap_or(u32::MAX))
    }

    /// The next step, given the quarantine now (each row's tenant and the
    /// request that put it aside; read where [`WaveRun::reads_quarantine`]).
    pub fn next<'a, A: Into<Aside<'a>>>(&mut self, quarantine: impl IntoIterator<Item = A>) -> Step {
        if self.ended || self.round >= ROUNDS {
            return Step::Done(self.details.join("; then "));
        }
        let base = self.rollout.wave_version_name(self.wave);
        let name = match self.round {
            0 => base,
            round => format!("{base} (after its backfills, {})", round + 1),
        };
        let rows: Vec<Aside<'a>> = quarantine.into_iter().map(Into::into).collect();
        let without =
            self.rollout.wave_runs_without(self.wave, self.round, rows.iter().map(|r| (r.tenant, r.request_id)));
        // What counts against the budget: the failures it absorbed, not a
        // shard that did not answer, a drifted schema or an operator's cancel.
        let absorbed: BTreeSet<&str> = rows
            .iter()
            .filter(|row| without.contains(row.tenant) && absorbed_cause(row.cause))
            .map(|row| row.tenant)
            .collect();
        let Some(named) = &self.named else {
            // A share, an attribute, the rest: its version passes every
            // quarantined tenant by; those an earlier run of it put aside
            // count against its budget, of the tenants it selects.
            if self.round > 0 {
                if self.needs_size() {
                    return Step::Size;
                }
                return Step::Version { name, tenants: None, budget: (self.spent > 0).then(|| self.left()) };
            }
            if absorbed.is_empty() {
                return Step::Version { name, tenants: None, budget: None };
            }
            let Some(size) = self.size else { return Step::Size };
            let counted: Vec<String> = absorbed.iter().map(|tenant| tenant.to_string()).collect();
            return match self.budget_left(&counted, &counted, size) {
                Ok(budget) => Step::Version { name, tenants: None, budget: Some(budget) },
                Err(failed) => failed,
            };
        };
        let (left_out, tenants): (Vec<String>, Vec<String>) =
            named.iter().cloned().partition(|name| without.contains(name.as_str()));
        let mut budget = (self.spent > 0).then(|| self.left());
        if self.round == 0 && !left_out.is_empty() {
            let counted: Vec<String> = left_out.iter().filter(|t| absorbed.contains(t.as_str())).cloned().collect();
            match self.budget_left(&left_out, &counted, named.len()) {
                Ok(left) => budget = Some(left),
                Err(failed) => return failed,
            }
        }
        if tenants.is_empty() {
            if self.round == 0 {
                self.details.push(format!("nothing to apply; {}", self.held));
            }
            self.ended = true;
            return Step::Done(self.details.join("; then "));
        }
        Step::Version { name, tenants: Some(tenants), budget }
    }

    /// The budget left after `counted`, the failures an earlier run of the
    /// wave absorbed, of its `size` tenants (`left_out`, all it put aside,
    /// said in the first round's detail); or the step that fails the wave,
    /// when they are more than it absorbs.
    fn budget_left(&mut self, left_out: &[String], counted: &[String], size: usize) -> Result<FailureBudget, Step> {
        if !absorbs(counted.len(), self.budget, size) {
            self.ended = true;
            return Err(Step::Failed(format!(
                "an earlier run of this wave quarantined {}: more than its failure budget {} absorbs over its {} \
                 tenant(s); fix them (retryQuarantined, or release them), then resume the rollout",
                some_of(counted, 20),
                self.budget,
                size
            )));
        }
        let left = self.budget.allowed(size) - counted.len();
        self.spent = counted.len();
        let note = format!("without {} (quarantined by an earlier run of this wave)", some_of(left_out, 20));
        self.held = if self.held.is_empty() { note } else { format!("{}; {note}", self.held) };
        Ok(FailureBudget::Tenants(u32::try_from(left).unwrap_or(u32::MAX)))
    }

    /// This round's version was made (`ran`: it recorded something;
    /// `waiting`: backfills it started hold files back): `None` when the
    /// run ends here unreported (a later round with nothing left to run),
    /// else what the round's detail says first (the first round's: what
    /// was held back).
    pub fn made(&mut self, ran: bool, waiting: bool) -> Option<String> {
        if self.round > 0 && !ran && !waiting {
            self.ended = true;
            return None;
        }
        Some(if self.round == 0 { self.held.clone() } else { String::new() })
    }

    /// Why the wave fails, its round's version refused or stopped with
    /// `why`: in a later round, also what the rounds before it did, which
    /// stays (a refusal says nothing of the round ran, not of the wave).
    pub fn failed(&self, why: String) -> String {
        match self.round {
            0 => why,
            round => format!(
                "round {} (after its backfills): {why}; its rounds before stay: {}",
                round + 1,
                self.details.join("; then ")
            ),
        }
    }

    /// The round ended with `detail`; `waited`: it waited on backfills
    /// (another round is due for the files they held back).
    pub fn reported(&mut self, detail: String, waited: bool) {
        self.details.push(detail);
        self.round += 1;
        self.ended = !waited;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::rollout::WaveStep;

    fn rollout(waves: &[&str]) -> Rollout {
        let steps: Vec<WaveStep> = waves.iter().map(|w| w.parse().unwrap()).collect();
        Rollout::new("v", steps, None, 0, "req").unwrap()
    }

    fn version(name: &str, tenants: Option<&[&str]>) -> Step {
        let tenants = tenants.map(|t| t.iter().map(|n| n.to_string()).collect());
        Step::Version { name: name.into(), tenants, budget: None }
    }

    const NONE: [(&str, &str); 0] = [];

    fn names(list: &[&str]) -> Option<Vec<String>> {
        Some(list.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn a_wave_runs_again_after_its_backfills_until_nothing_waits() {
        let r = rollout(&["10%"]);
        let mut run = WaveRun::new(&r, 0, None, String::new(), FailureBudget::None);
        assert!(run.reads_quarantine(), "its first round looks for what an earlier run put aside");
        assert_eq!(run.next(NONE), version("v (wave 1/1: 10%)", None));
        assert_eq!(run.made(true, true), Some(String::new()));
        run.reported("version 3".into(), true);
        assert_eq!(run.next(NONE), version("v (wave 1/1: 10%) (after its backfills, 2)", None));
        assert_eq!(run.made(true, false), Some(String::new()));
        run.reported("version 4".into(), false);
        assert_eq!(run.next(NONE), Step::Done("version 3; then version 4".into()));
    }

    #[test]
    fn a_later_round_with_nothing_left_ends_the_run_unreported() {
        let r = rollout(&["10%"]);
        let mut run = WaveRun::new(&r, 0, None, String::new(), FailureBudget::None);
        run.next(NONE);
        run.made(true, true);
        run.reported("version 3".into(), true);
        run.next(NONE);
        assert_eq!(run.made(false, false), None);
        assert_eq!(run.next(NONE), Step::Done("version 3".into()));
        // The first round is reported even when it ran nothing.
        let mut first = WaveRun::new(&r, 0, None, "held back: t9".into(), FailureBudget::None);
        first.next(NONE);
        assert_eq!(first.made(false, false), Some("held back: t9".into()));
    }

    #[test]
    fn a_run_makes_at_most_its_rounds_of_versions() {
        let r = rollout(&["10%"]);
        let mut run = WaveRun::new(&r, 0, None, String::new(), FailureBudget::None);
        let mut versions = 0;
        while let Step::Version { .. } = run.next(NONE) {
            versions += 1;
            run.made(true, true);
            run.reported(format!("version {versions}"), true);
        }
        assert_eq!(versions, ROUNDS);
    }

    #[test]
    fn a_named_wave_goes_on_without_what_it_quarantined_and_says_so() {
        let mut r = rollout(&["t1,t2,t3"]);
        r.claim(0, 10, 70, "runner-a");
        let mut run = WaveRun::new(&r, 0, names(&["t1", "t2", "t3"]), String::new(), FailureBudget::Tenants(2));
        assert!(run.reads_quarantine());
        // t2 put aside by this wave's earlier runner, t3 by someone else: t3 stays named (and is refused);
        // t2's failure took one of the budget's two.
        let quarantine = [("t2", "runner-a"), ("t3", "req-9")];
        let first = run.next(quarantine);
        let one_left = Step::Version {
            name: "v (wave 1/1: t1,t2,t3)".into(),
            tenants: names(&["t1", "t3"]),
            budget: Some(FailureBudget::Tenants(1)),
        };
        assert_eq!(first, one_left);
        let held = run.made(true, true).unwrap();
        assert_eq!(held, "without t2 (quarantined by an earlier run of this wave)");
        run.reported(format!("version 5; {held}"), true);
        // After the backfills, every quarantined tenant is left out, and
        // what its earlier run spent of the budget stays spent.
        let second = Step::Version {
            name: "v (wave 1/1: t1,t2,t3) (after its backfills, 2)".into(),
            tenants: names(&["t1"]),
            budget: Some(FailureBudget::Tenants(1)),
        };
        assert_eq!(run.next(quarantine), second);
        run.made(true, false);
        run.reported("version 6".into(), false);
        // Every named tenant put aside by an earlier run: nothing to apply.
        let mut again = WaveRun::new(&r, 0, names(&["t2"]), String::new(), FailureBudget::Tenants(1));
        assert_eq!(
            again.next(quarantine),
            Step::Done("nothing to apply; without t2 (quarantined by an earlier run of this wave)".into())
        );
    }

    #[test]
    fn a_wave_run_again_absorbs_no_more_failures_than_its_budget() {
        let mut r = rollout(&["t1,t2,t3,t4:budget=1"]);
        r.claim(0, 10, 70, "claim-1");
        r.claim(0, 100, 160, "claim-2"); // the first runner was killed, or the wave failed and was resumed
        let quarantine = [("t2", "claim-1"), ("t3", "claim-1")];
        let mut run = WaveRun::new(&r, 0, names(&["t1", "t2", "t3", "t4"]), String::new(), FailureBudget::Tenants(1));
        let Step::Failed(why) = run.next(quarantine) else { panic!("a second failure passed the budget") };
        assert!(
            why.starts_with("an earlier run of this wave quarantined t2, t3: more than its failure budget 1"),
            "{why}"
        );
        assert!(matches!(run.next(quarantine), Step::Done(_)));
        // One failure the budget absorbed: the run goes on with none left.
        let mut run = WaveRun::new(&r, 0, names(&["t1", "t2", "t4"]), String::new(), FailureBudget::Tenants(1));
        let Step::Version { tenants, budget, .. } = run.next([("t2", "claim-1")]) else { panic!() };
        assert_eq!((tenants, budget), (names(&["t1", "t4"]), Some(FailureBudget::Tenants(0))));
        // A share of the wave: 50 % of 4 is 2, one used.
        let mut run = WaveRun::new(&r, 0, names(&["t1", "t2", "t3", "t4"]), String::new(), FailureBudget::Percent(50));
        let Step::Version { budget, .. } = run.next([("t2", "claim-2")]) else { panic!() };
        assert_eq!(budget, Some(FailureBudget::Tenants(1)));
    }

    #[test]
    fn a_share_or_the_rest_run_again_counts_what_it_quarantined_of_the_tenants_it_selects() {
        let mut r = rollout(&["t1:approve", "50%:budget=10%", "rest"]);
        r.claim(0, 10, 70, "claim-1");
        r.wave_ended(0, Ok(String::new()), 20, "claim-1");
        r.approve(30, "bob", &crate::migrate::rollout::ApprovalRules::default()).unwrap();
        r.claim(1, 40, 100, "claim-2");
        r.claim(1, 200, 260, "claim-3"); // claim-2's runner was killed
        // Put aside by wave 1 (claim-1) and by someone else: not this wave's.
        let others = [("t1", "claim-1"), ("t7", "req-9")];
        let mut run = WaveRun::new(&r, 1, None, String::new(), FailureBudget::Percent(10));
        assert_eq!(run.next(others), version("v (wave 2/3: 50%:budget=10%)", None), "nothing to count");
        // Two of its own: 10 % of the 30 tenants it selects is 3, one is left.
        let ours = [("t1", "claim-1"), ("t3", "claim-2"), ("t5", "claim-2")];
        let mut run = WaveRun::new(&r, 1, None, String::new(), FailureBudget::Percent(10));
        assert_eq!(run.next(ours), Step::Size);
        run.sized(30);
        let Step::Version { tenants: None, budget, .. } = run.next(ours) else { panic!("a version over its share") };
        assert_eq!(budget, Some(FailureBudget::Tenants(1)));
        assert_eq!(run.made(true, false).unwrap(), "without t3, t5 (quarantined by an earlier run of this wave)");
        run.reported("version 9".into(), false);
        assert_eq!(run.next(ours), Step::Done("version 9".into()));
        // Of 20 tenants, 10 % is 2: both used, none left; of 10, 1: the wave fails.
        let mut run = WaveRun::new(&r, 1, None, String::new(), FailureBudget::Percent(10));
        run.sized(20);
        let Step::Version { budget, .. } = run.next(ours) else { panic!() };
        assert_eq!(budget, Some(FailureBudget::Tenants(0)));
        let mut run = WaveRun::new(&r, 1, None, String::new(), FailureBudget::Percent(10));
        run.sized(10);
        let Step::Failed(why) = run.next(ours) else { panic!("two failures of ten passed 10 %") };
        assert!(why.starts_with("an earlier run of this wave quarantined t3, t5: more than its failure budget 10%"));
        assert!(why.contains("over its 10 tenant(s)"), "{why}");
    }

    #[test]
    fn what_an_earlier_run_put_aside_for_another_reason_than_a_failure_does_not_count() {
        let mut r = rollout(&["t1,t2,t3", "rest"]);
        r.claim(0, 10, 70, "claim-1");
        // t2's shard did not answer, t3's schema drifted: left out, not counted.
        let aside = [("t2", "claim-1", "SHARD_UNREACHABLE"), ("t3", "claim-1", "SCHEMA_DRIFT")];
        let mut run = WaveRun::new(&r, 0, names(&["t1", "t2", "t3"]), String::new(), FailureBudget::None);
        let Step::Version { tenants, budget, .. } = run.next(aside) else { panic!("a budget of none spent on them") };
        assert_eq!((tenants, budget), (names(&["t1"]), Some(FailureBudget::Tenants(0))));
        // The rest, run again after its shard came back: nothing to count, no size asked.
        r.wave_ended(0, Ok(String::new()), 20, "claim-1");
        r.claim(1, 30, 90, "claim-2");
        r.claim(1, 100, 160, "claim-3");
        let aside = [("c1", "claim-2", "SHARD_UNREACHABLE"), ("c2", "claim-2", "LOCK_TIMEOUT")];
        let mut run = WaveRun::new(&r, 1, None, String::new(), FailureBudget::None);
        assert_eq!(run.next(aside), Step::Size);
        run.sized(10);
        let Step::Failed(why) = run.next(aside) else { panic!("a lock time-out is the tenant's own") };
        assert!(why.starts_with("an earlier run of this wave quarantined c2: more than its failure budget"), "{why}");
        let mut run = WaveRun::new(&r, 1, None, String::new(), FailureBudget::None);
        assert_eq!(run.next([("c1", "claim-2", "SHARD_UNREACHABLE")]), version("v (wave 2/2: rest)", None));
    }

    #[test]
    fn a_later_rounds_failure_says_what_the_rounds_before_it_did() {
        let r = rollout(&["10%"]);
        let mut run = WaveRun::new(&r, 0, None, String::new(), FailureBudget::None);
        assert_eq!(run.failed("refused".into()), "refused");
        run.next(NONE);
        run.made(true, true);
        run.reported("version 7: 2 migration(s)".into(), true);
        run.next(NONE);
        assert_eq!(
            run.failed("the source files changed (added: x.sql): nothing of it ran".into()),
            "round 2 (after its backfills): the source files changed (added: x.sql): nothing of it ran; its rounds \
             before stay: version 7: 2 migration(s)"
        );
    }

    #[test]
    fn a_wave_absorbs_no_more_over_its_rounds_than_its_budget() {
        let r = rollout(&["t1,t2,t3,t4:budget=1"]);
        let mut run = WaveRun::new(&r, 0, names(&["t1", "t2", "t3", "t4"]), String::new(), FailureBudget::Tenants(1));
        let Step::Version { budget, .. } = run.next(NONE) else { panic!() };
        assert_eq!((budget, run.left()), (None, FailureBudget::Tenants(1)));
        // Its version put t1 aside: its backfills, then the next round, have none left.
        run.absorbed(1);
        assert_eq!(run.left(), FailureBudget::Tenants(0));
        run.made(true, true);
        run.reported("version 7; quarantined: t1".into(), true);
        let quarantine = [("t1", "other")];
        let Step::Version { budget, .. } = run.next(quarantine) else { panic!() };
        assert_eq!(budget, Some(FailureBudget::Tenants(0)), "the next round's version stops at a failure");
        // A share: 10 % of the 20 it selects is 2; one used, one left — once its size is known.
        let r = rollout(&["50%:budget=10%"]);
        let mut run = WaveRun::new(&r, 0, None, String::new(), FailureBudget::Percent(10));
        assert!(matches!(run.next(NONE), Step::Version { budget: None, .. }));
        run.absorbed(1);
        assert!(run.needs_size());
        run.made(true, true);
        run.reported("version 8".into(), true);
        assert_eq!(run.next(NONE), Step::Size);
        run.sized(20);
        assert_eq!(run.left(), FailureBudget::Tenants(1));
        let Step::Version { budget, .. } = run.next(NONE) else { panic!() };
        assert_eq!(budget, Some(FailureBudget::Tenants(1)));
    }
}
