//! How a unit's steps split into transactions: the shell begins, executes,
//! records and commits exactly as [`split`] says, and decides none of it.
//!
//! Invariants:
//! - Every step of the unit is in exactly one piece, in the unit's order —
//!   except, on a dry run, the steps that cannot run in a transaction,
//!   which are in none (a dry run rolls everything back).
//! - No transaction is empty: one that would commit no step and create no
//!   tenant is not begun at all (a version's row never commits alone).
//! - The new tenant is created in the first piece, never after a step.
//! - Without transactional DDL every step commits on its own and is
//!   recorded right after it; so does the new tenant, with the version's
//!   row (the version then holds the tenant).
//! - A backfill never shares a transaction: the steps before it commit
//!   first (its batches read what they made), and a dry run skips it.

/// How one step of a unit runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepMode {
    /// It executes outside any transaction (its file's directive; a step
    /// that only records never does).
    pub alone: bool,
    /// A commit follows it (its file asks for one).
    pub commit_after: bool,
    /// It is a backfill (`strata:backfill`): it runs in batches, each in a
    /// short transaction of its own with its checkpoint, and is recorded
    /// once the last batch has committed.
    pub backfill: bool,
}

/// A part of a unit, run in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// One transaction: the new tenant first when `creates_tenant`, then
    /// these steps and their rows (the version's row too, while none has
    /// committed), committed together — rolled back instead on a dry run.
    Transaction {
        /// The steps, in order.
        steps: Vec<u32>,
        /// It creates the unit's new tenant first.
        creates_tenant: bool,
    },
    /// A step executed outside any transaction, then its row committed in
    /// a transaction of its own.
    Alone(u32),
    /// The new tenant created outside any transaction, with the version's
    /// row (engines without transactional DDL).
    TenantAlone,
    /// A backfill step: its batches, each committed with its checkpoint,
    /// then its row committed in a transaction of its own.
    Backfill(u32),
}

/// What the engine and the request change about the split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// The unit creates a new tenant.
    pub new_tenant: bool,
    /// DDL takes part in transactions (not MySQL, not MariaDB).
    pub transactional_ddl: bool,
    /// A dry run: nothing commits, and a step that cannot run in a
    /// transaction is skipped.
    pub dry_run: bool,
}

/// The pieces `steps` run in, each step's mode given by `mode`.
pub fn split(steps: impl IntoIterator<Item = u32>, how: Split, mode: impl Fn(u32) -> StepMode) -> Vec<Piece> {
    let mut pieces = Vec::new();
    if !how.transactional_ddl && !how.dry_run {
        if how.new_tenant {
            pieces.push(Piece::TenantAlone);
        }
        pieces.extend(
            steps.into_iter().map(|step| if mode(step).backfill { Piece::Backfill(step) } else { Piece::Alone(step) }),
        );
        return pieces;
    }
    let mut open: Vec<u32> = Vec::new();
    let mut creates_tenant = how.new_tenant;
    let close = |pieces: &mut Vec<Piece>, open: &mut Vec<u32>, creates_tenant: &mut bool| {
        if !open.is_empty() || *creates_tenant {
            pieces.push(Piece::Transaction { steps: std::mem::take(open), creates_tenant: *creates_tenant });
        }
        *creates_tenant = false;
    };
    for step in steps {
        let StepMode { alone, commit_after, backfill } = mode(step);
        if alone || backfill {
            if how.dry_run {
                continue;
            }
            close(&mut pieces, &mut open, &mut creates_tenant);
            pieces.push(if backfill { Piece::Backfill(step) } else { Piece::Alone(step) });
            continue;
        }
        open.push(step);
        if commit_after && !how.dry_run {
            close(&mut pieces, &mut open, &mut creates_tenant);
        }
    }
    close(&mut pieces, &mut open, &mut creates_tenant);
    pieces
}

/// Where a failure of a unit sent as one message lies: `files` are each
/// file's characters in the message, `(start, end]`, with its step, in
/// order; `offset` is the failure's (characters from 1). Returns the step
/// and the offset in that file's own text. An offset in the `separator`
/// after a file (a statement the file left open, which alone would fail
/// "at end of input") is that file's, just past its last character. None:
/// the failure lies outside every file (the unit's own statements).
pub fn place_in_message(files: &[(usize, usize, u32)], separator: usize, offset: usize) -> Option<(u32, usize)> {
    files
        .iter()
        .find(|(start, end, _)| offset > *start && offset <= *end + separator)
        .map(|&(start, end, step)| (step, offset.min(end + 1) - start))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: StepMode = StepMode { alone: false, commit_after: false, backfill: false };
    const ALONE: StepMode = StepMode { alone: true, commit_after: false, backfill: false };
    const COMMIT: StepMode = StepMode { alone: false, commit_after: true, backfill: false };
    const BACKFILL: StepMode = StepMode { alone: false, commit_after: false, backfill: true };
    const RUN: Split = Split { new_tenant: false, transactional_ddl: true, dry_run: false };

    fn modes(list: &[StepMode]) -> impl Fn(u32) -> StepMode + '_ {
        move |step| list[step as usize]
    }

    fn tx(steps: &[u32]) -> Piece {
        Piece::Transaction { steps: steps.to_vec(), creates_tenant: false }
    }

    #[test]
    fn a_failure_in_one_message_is_placed_in_its_file_at_the_files_own_offset() {
        // begin;\n = 7 characters, then file A (8..=20), a separator of 3,
        // then file B (24..=30).
        let files = [(7, 20, 4), (23, 30, 9)];
        assert_eq!(place_in_message(&files, 3, 8), Some((4, 1)));
        assert_eq!(place_in_message(&files, 3, 20), Some((4, 13)));
        assert_eq!(place_in_message(&files, 3, 22), Some((4, 14)), "in the separator: just past A's end");
        assert_eq!(place_in_message(&files, 3, 24), Some((9, 1)));
        assert_eq!(place_in_message(&files, 3, 3), None, "in the unit's own begin");
        assert_eq!(place_in_message(&files, 3, 40), None, "in the unit's rows");
    }

    #[test]
    fn a_backfill_runs_after_the_steps_before_it_committed_and_before_the_next_begin() {
        let pieces = split(0..4, RUN, modes(&[PLAIN, PLAIN, BACKFILL, PLAIN]));
        assert_eq!(pieces, [tx(&[0, 1]), Piece::Backfill(2), tx(&[3])]);
        let how = Split { new_tenant: true, transactional_ddl: false, dry_run: false };
        let pieces = split(0..2, how, modes(&[PLAIN, BACKFILL]));
        assert_eq!(pieces, [Piece::TenantAlone, Piece::Alone(0), Piece::Backfill(1)]);
        let how = Split { dry_run: true, ..RUN };
        assert_eq!(split(0..3, how, modes(&[PLAIN, BACKFILL, PLAIN])), [tx(&[0, 2])], "a dry run skips it");
    }

    #[test]
    fn plain_steps_commit_together() {
        assert_eq!(split(0..3, RUN, modes(&[PLAIN; 3])), [tx(&[0, 1, 2])]);
    }

    #[test]
    fn a_step_that_cannot_run_in_a_transaction_runs_alone_between_two() {
        let pieces = split(0..4, RUN, modes(&[PLAIN, ALONE, PLAIN, PLAIN]));
        assert_eq!(pieces, [tx(&[0]), Piece::Alone(1), tx(&[2, 3])]);
    }

    #[test]
    fn no_transaction_is_begun_for_nothing() {
        assert_eq!(split(0..2, RUN, modes(&[ALONE, ALONE])), [Piece::Alone(0), Piece::Alone(1)]);
        assert_eq!(split(0..2, RUN, modes(&[PLAIN, COMMIT])), [tx(&[0, 1])]);
        assert_eq!(split(std::iter::empty(), RUN, modes(&[])), []);
    }

    #[test]
    fn a_file_that_asks_for_a_commit_ends_its_transaction() {
        let pieces = split(0..3, RUN, modes(&[COMMIT, PLAIN, PLAIN]));
        assert_eq!(pieces, [tx(&[0]), tx(&[1, 2])]);
    }

    #[test]
    fn the_new_tenant_is_created_in_the_first_transaction_only() {
        let how = Split { new_tenant: true, ..RUN };
        let pieces = split(0..3, how, modes(&[PLAIN, ALONE, PLAIN]));
        assert_eq!(pieces, [Piece::Transaction { steps: vec![0], creates_tenant: true }, Piece::Alone(1), tx(&[2])]);
        // Before a step that runs alone, the tenant still commits first.
        let pieces = split(0..1, how, modes(&[ALONE]));
        assert_eq!(pieces, [Piece::Transaction { steps: vec![], creates_tenant: true }, Piece::Alone(0)]);
        // A tenant without migrations: its creation alone.
        let pieces = split(std::iter::empty(), how, modes(&[]));
        assert_eq!(pieces, [Piece::Transaction { steps: vec![], creates_tenant: true }]);
    }

    #[test]
    fn a_dry_run_is_one_transaction_without_the_steps_that_cannot_run_in_one() {
        let how = Split { dry_run: true, ..RUN };
        let pieces = split(0..4, how, modes(&[PLAIN, ALONE, COMMIT, PLAIN]));
        assert_eq!(pieces, [tx(&[0, 2, 3])]);
    }

    #[test]
    fn without_transactional_ddl_every_step_commits_alone_after_the_tenant() {
        let how = Split { new_tenant: true, transactional_ddl: false, dry_run: false };
        let pieces = split(0..3, how, modes(&[PLAIN, COMMIT, ALONE]));
        assert_eq!(pieces, [Piece::TenantAlone, Piece::Alone(0), Piece::Alone(1), Piece::Alone(2)]);
    }

    #[test]
    fn every_step_is_in_exactly_one_piece_in_order() {
        let all = [PLAIN, ALONE, COMMIT, BACKFILL];
        // Every sequence of up to five modes.
        for length in 0..=5u32 {
            for code in 0..4u32.pow(length) {
                let list: Vec<StepMode> = (0..length).map(|i| all[(code / 4u32.pow(i) % 4) as usize]).collect();
                for new_tenant in [false, true] {
                    let how = Split { new_tenant, ..RUN };
                    let pieces = split(0..length, how, modes(&list));
                    let order: Vec<u32> = pieces
                        .iter()
                        .flat_map(|piece| match piece {
                            Piece::Transaction { steps, .. } => steps.clone(),
                            Piece::Alone(step) | Piece::Backfill(step) => vec![*step],
                            Piece::TenantAlone => vec![],
                        })
                        .collect();
                    assert_eq!(order, (0..length).collect::<Vec<_>>(), "{list:?}");
                    let creators =
                        pieces.iter().filter(|p| matches!(p, Piece::Transaction { creates_tenant: true, .. })).count();
                    assert_eq!(creators, usize::from(new_tenant), "{list:?}");
                    if new_tenant {
                        assert!(matches!(pieces[0], Piece::Transaction { creates_tenant: true, .. }));
                    }
                    assert!(pieces.iter().all(
                        |p| !matches!(p, Piece::Transaction { steps, creates_tenant: false } if steps.is_empty())
                    ));
                }
            }
        }
    }
}
