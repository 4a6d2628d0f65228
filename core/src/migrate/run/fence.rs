//! Whether a unit's transaction is still the one the shell began, judged
//! from what an engine without a transaction-scoped lease reports before the
//! unit's records and after each file that may end it unseen
//! (`FileMode::may_end_transaction`; SQL Server: `@@trancount`, the unit's
//! application lock, `db_name()`). A file can end that transaction unseen —
//! `COMMIT` in a procedure it calls or in dynamic SQL — and recording it
//! afterwards would record what may have committed apart from its records,
//! or not at all.
//!
//! Invariants:
//! - Only one state passes: one transaction deep, the unit's lock held, in
//!   the database the session began in (when the shell knows it).
//! - A refusal says whether what ran before may have committed
//!   ([`Broken::may_be_committed`]): the shell reports it as applied in
//!   part, never as rolled back, when it may.

use thiserror::Error;

/// What the engine reports of the unit's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionState<'a> {
    /// How many transactions are open (`@@trancount`).
    pub depth: i64,
    /// The transaction-owned lock the unit's transaction took when it began
    /// is still held (so that transaction is still the open one).
    pub holds_unit_lock: bool,
    /// The session's database now.
    pub database: &'a str,
    /// The database the session began in, when the shell knows it.
    pub expected_database: Option<&'a str>,
}

/// How a file broke the unit's transaction (nothing of it is recorded).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Broken {
    /// A file switched the session to another database (`USE`).
    #[error(
        "a file switched the session to database {0} (USE): its changes there and this schema's records do not \
         belong together; the open transaction was rolled back"
    )]
    SwitchedDatabase(String),
    /// A file began transactions it never ended.
    #[error(
        "a file left {0} transaction(s) open (BEGIN TRANSACTION in a procedure it ran or in dynamic SQL, never \
         committed): all of it was rolled back"
    )]
    LeftOpen(i64),
    /// A file ended the unit's transaction.
    #[error(
        "a file ended the unit's transaction (COMMIT or ROLLBACK in a procedure it ran or in dynamic SQL): what \
         ran before may be committed"
    )]
    Ended,
    /// A file ended the unit's transaction and began another.
    #[error(
        "a file ended the unit's transaction and began another (COMMIT or ROLLBACK, then BEGIN TRANSACTION, in a \
         procedure it ran or in dynamic SQL): what ran before may be committed; what is open was rolled back"
    )]
    EndedAndBegan,
}

impl Broken {
    /// What ran before the file may have committed apart from its records.
    pub fn may_be_committed(&self) -> bool {
        matches!(self, Broken::Ended | Broken::EndedAndBegan)
    }
}

/// Judges `state`: `Ok` only while the unit's transaction is the one open.
pub fn judge(state: TransactionState<'_>) -> Result<(), Broken> {
    if let Some(expected) = state.expected_database
        && expected != state.database
    {
        return Err(Broken::SwitchedDatabase(state.database.to_string()));
    }
    match (state.depth, state.holds_unit_lock) {
        (1, true) => Ok(()),
        (depth, true) if depth > 1 => Err(Broken::LeftOpen(depth - 1)),
        (depth, _) if depth <= 0 => Err(Broken::Ended),
        _ => Err(Broken::EndedAndBegan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(depth: i64, holds_unit_lock: bool, database: &str) -> TransactionState<'_> {
        TransactionState { depth, holds_unit_lock, database, expected_database: Some("fleet") }
    }

    #[test]
    fn only_the_units_own_transaction_one_deep_in_its_database_passes() {
        assert_eq!(judge(state(1, true, "fleet")), Ok(()));
        let unknown = TransactionState { expected_database: None, ..state(1, true, "elsewhere") };
        assert_eq!(judge(unknown), Ok(()));
    }

    #[test]
    fn a_transaction_left_open_is_rolled_back_with_the_unit() {
        let broken = judge(state(3, true, "fleet")).unwrap_err();
        assert_eq!(broken, Broken::LeftOpen(2));
        assert!(!broken.may_be_committed());
        assert!(broken.to_string().starts_with("a file left 2 transaction(s) open"), "{broken}");
    }

    #[test]
    fn an_ended_transaction_may_have_committed_what_ran_before() {
        for (depth, held) in [(0, false), (0, true), (-1, false)] {
            let broken = judge(state(depth, held, "fleet")).unwrap_err();
            assert_eq!(broken, Broken::Ended, "{depth} {held}");
            assert!(broken.may_be_committed());
        }
        for depth in [1, 2] {
            let broken = judge(state(depth, false, "fleet")).unwrap_err();
            assert_eq!(broken, Broken::EndedAndBegan, "{depth}");
            assert!(broken.may_be_committed());
            assert!(broken.to_string().contains("what is open was rolled back"), "{broken}");
        }
    }

    #[test]
    fn a_switched_database_is_named_before_anything_else() {
        let broken = judge(state(1, true, "other")).unwrap_err();
        assert_eq!(broken, Broken::SwitchedDatabase("other".into()));
        assert!(!broken.may_be_committed());
        assert!(broken.to_string().contains("database other (USE)"), "{broken}");
        assert_eq!(judge(state(0, false, "other")), Err(Broken::SwitchedDatabase("other".into())));
    }
}
