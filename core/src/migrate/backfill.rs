//! Fleet backfills: a migration file that changes a table's rows in many
//! short batches, in every tenant, resumably — instead of one long
//! statement holding its locks for the whole table.
//!
//! ```sql
//! -- strata:backfill table={schema}.orders key=id batch=500
//! update {schema}.orders set total_cents = (total * 100)::bigint where {range};
//! ```
//!
//! - **Two forms** ([`directive`]). *Ranged* (`table=` and `key=`): the
//!   statement's `{range}` becomes the condition of the next range of
//!   keys — the next `batch` keys after the checkpoint in key order,
//!   bounded by the largest key present when the backfill started, so rows
//!   inserted since are not chased. *Repeated* (neither): the statement's
//!   `{batch}` becomes a limit, and it runs until a run changes no row (it
//!   must be idempotent: a run must not find the rows it already changed).
//!   A backfill file holds that one statement, and runs in a transaction
//!   per batch (never under `strata:no-transaction`, never on SQL Server
//!   yet).
//! - **Bound values** ([`sql`]). `{range}` is written as a predicate over
//!   placeholders — `((id) > ($1::bigint) and (id) <= ($2::bigint))`, the
//!   first range `(id) <= ($1::bigint)`, a composite key as a row value
//!   `(a, b) > ($1, $2)` — and the shell binds the keys it read
//!   ([`KeyValue`]); no key value is ever written into SQL text.
//! - **Resumable** ([`machine`]). Each batch commits in its own short
//!   transaction with its checkpoint ([`Stored`]: the last range's end, the
//!   upper key, counts). A run stopped anywhere resumes strictly after the
//!   last committed range, with the same upper key: every key present at
//!   the start up to the upper key falls in exactly one committed range, so
//!   even a statement that is not idempotent changes each row once.
//! - **Paced** ([`pace`]). A batch's size adapts so it takes about
//!   `backfill.batchMillis`, never above the directive's `batch`; one
//!   database server's backfills share `backfill.rowsPerSecond`, and run
//!   at most `backfill.concurrency` at once
//!   ([`crate::migrate::config::BackfillSettings`]) — whichever processes
//!   run them: each takes its share of the rate, and starts one only while
//!   the server has room ([`Runners`]).
//! - **Budgeted** ([`budget`]). A version's `failureBudget` covers the
//!   backfills it started: past it, the rest of them pause.
//!
//! Core writes the statements and decides every step; the shell reads and
//! binds the keys, runs the batches and stores the checkpoints.

pub mod budget;
pub mod directive;
mod key;
pub mod machine;
pub mod pace;
mod placeholder;
pub mod sql;
mod state;
pub mod summary;

pub use directive::{Form, Spec, in_one_transaction, read, read_part};

/// Whether a backfill step runs inside its version, holding the version's
/// lock until its last batch: in a single schema (whose later files and
/// later segments rely on it) and in a tenant the version creates (its
/// tables are empty: it ends at once). A backfill in a tenant of the
/// fleet runs after the version instead, under its own claim, while other
/// versions go on; that tenant waits on it, running nothing after it in the
/// version.
pub fn runs_in_version(tenant: bool, new_tenant: bool) -> bool {
    !tenant || new_tenant
}

pub use key::{Key, KeyValue, decode_key, encode_key};
pub use machine::{Estimate, Machine, Next, Stored, estimate};
pub use pace::{LagStep, LagWatch, RowBudget, Runners, Sizer};
pub use sql::{Rendered, Slot, Target, Template};
pub use state::State;

#[cfg(test)]
mod tests {
    use super::runs_in_version;

    #[test]
    fn only_a_fleets_tenants_leave_their_backfills_to_run_after_the_version() {
        assert!(runs_in_version(false, false), "a single schema");
        assert!(runs_in_version(true, true), "a new tenant: empty tables");
        assert!(!runs_in_version(true, false), "a tenant of the fleet");
    }
}
