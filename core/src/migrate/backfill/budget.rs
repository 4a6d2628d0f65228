//! A version's failure budget (`failureBudget`) over the backfills it
//! started: they run after the version, so its budget is judged again as
//! each one fails. One version's backfills of one file are counted
//! together, over the tenants it started them in; once their failures are
//! more than the budget absorbs, the version stops — the runner pauses
//! those still running, so nothing more of it changes rows until an
//! operator looks (`resumeBackfills` goes on).

use crate::migrate::backfill::State;
use crate::migrate::quarantine::{FailureBudget, absorbs};

/// One version's backfills of one file, as the budget counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    /// The tenants the version started them in.
    pub tenants: usize,
    /// Those that failed.
    pub failed: usize,
    /// Those still to run (running, not yet paused).
    pub running: usize,
}

impl Tally {
    /// Counts `states`, one per tenant.
    pub fn of(states: impl IntoIterator<Item = (State, usize)>) -> Tally {
        states.into_iter().fold(Tally::default(), |mut tally, (state, count)| {
            tally.tenants += count;
            match state {
                State::Failed => tally.failed += count,
                State::Running => tally.running += count,
                State::Paused | State::Cancelled | State::Done => {}
            }
            tally
        })
    }
}

/// Whether the version stops its backfills of the file: more failures
/// than `budget` absorbs over its tenants (none recorded, from books
/// written before the budget was kept: never), and some still to run.
pub fn stops(tally: Tally, budget: Option<FailureBudget>) -> bool {
    budget.is_some_and(|budget| tally.running > 0 && !absorbs(tally.failed, budget, tally.tenants))
}

/// Why the version's other backfills of `file` were paused.
pub fn stopped(file: &str, version_id: i64, tally: Tally, budget: FailureBudget) -> String {
    format!(
        "the backfill of {file} failed in {} of the {} tenant(s) version {version_id} started it in, more than its \
         failureBudget {budget} absorbs: its {} other running backfill(s) are paused; fix the failing tenants \
         (retryQuarantined), then resumeBackfills",
        tally.failed, tally.tenants, tally.running
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(failed: usize, running: usize, done: usize) -> Tally {
        Tally::of([(State::Failed, failed), (State::Running, running), (State::Done, done)])
    }

    #[test]
    fn the_first_failure_past_the_budget_stops_the_rest() {
        // No budget: the first failure stops the others.
        assert!(stops(tally(1, 3, 0), Some(FailureBudget::None)));
        // Two tenants of ten absorbed, the third stops it.
        assert!(!stops(tally(2, 5, 3), Some(FailureBudget::Tenants(2))));
        assert!(stops(tally(3, 4, 3), Some(FailureBudget::Tenants(2))));
        // 10% of 40 tenants is 4.
        assert!(!stops(tally(4, 30, 6), Some(FailureBudget::Percent(10))));
        assert!(stops(tally(5, 29, 6), Some(FailureBudget::Percent(10))));
    }

    #[test]
    fn nothing_left_to_run_or_no_budget_kept_stops_nothing() {
        assert!(!stops(tally(3, 0, 1), Some(FailureBudget::None)));
        assert!(!stops(tally(3, 5, 1), None));
        assert_eq!(
            Tally::of([(State::Paused, 2), (State::Cancelled, 1), (State::Failed, 1)]),
            Tally { tenants: 4, failed: 1, running: 0 }
        );
    }

    #[test]
    fn the_pause_names_the_file_the_count_and_the_way_on() {
        let text = stopped("tenants/002_touch.sql", 7, tally(3, 4, 3), FailureBudget::Tenants(2));
        assert_eq!(
            text,
            "the backfill of tenants/002_touch.sql failed in 3 of the 10 tenant(s) version 7 started it in, more \
             than its failureBudget 2 absorbs: its 4 other running backfill(s) are paused; fix the failing tenants \
             (retryQuarantined), then resumeBackfills"
        );
    }
}
