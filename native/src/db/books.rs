//! The service's own books in the `svc` schema — applied migrations,
//! versions, fingerprints, quarantine, rollouts, the shard directory — and
//! the tenant list: [`Books`], the one trait the store and the executor
//! read and write them through, beside the engine's primitives (an
//! engine hands out its books, `Engine::books`).
//!
//! - Every engine keeps every book: no method answers `NotSupported`.
//! - [`SqlxBooks`] keeps them for the three sqlx engines, over their
//!   dialect's statements (`sql`, written once with what differs as a
//!   parameter) and one row decoder (`rows`); SQL Server keeps its own.
//!
//! The bookkeeping rows of a unit (`Engine::record`: a multi-row insert
//! bounded by each engine's parameter limit) stay with each engine.

mod rows;
pub(crate) mod sql;
mod sqlx_books;
pub(crate) mod tables;

use rustc_hash::FxHashMap;

use async_trait::async_trait;
use strata_core::auth::audit::Sealed;
use strata_core::auth::token::StoredToken;
use strata_core::migrate::fingerprint::{Recorded, RecordedBySchema, Stored};
use strata_core::migrate::plan::{AppliedMigration, AppliedRow};
use strata_core::migrate::quarantine::FailureBudget;
use strata_core::migrate::repair::Repair;
use strata_core::migrate::shard::{Directory, DirectoryChanges};

use crate::db::error::DbError;
use strata_core::migrate::source::SourceMigration;

use crate::db::types::{
    Audit, AuditWindow, BackfillClaim, BackfillJob, BackfillRow, BackfillState, ClaimRoom, MigrationFilter,
    MigrationRow, NewVersion, QuarantineRow, Record, RolloutRow, TenantList, VersionFilter, VersionRow,
};
pub(crate) use sqlx_books::{RowsAffected, SqlxBooks, SqlxConn};

/// The page of `sorted` (names in byte order) after `after`, `first` of
/// them (every one without).
pub(crate) fn page_of(sorted: Vec<String>, after: Option<&str>, first: Option<usize>) -> Vec<String> {
    let start = after.map_or(0, |after| sorted.partition_point(|name| name.as_str() <= after));
    sorted.into_iter().skip(start).take(first.unwrap_or(usize::MAX)).collect()
}

/// A page of names (after `after`, `first` of them) kept as the names
/// stream past in any order: never more than `first` held.
pub(crate) struct PageOfNames<'a> {
    kept: std::collections::BinaryHeap<String>,
    after: Option<&'a str>,
    first: Option<usize>,
}

impl<'a> PageOfNames<'a> {
    /// An empty page after `after`, of `first` names (every one without).
    pub(crate) fn new(after: Option<&'a str>, first: Option<usize>) -> Self {
        PageOfNames { kept: std::collections::BinaryHeap::new(), after, first }
    }

    /// Keeps `name` if it belongs on the page as far as the names seen go.
    pub(crate) fn offer(&mut self, name: String) {
        if self.after.is_some_and(|after| name.as_str() <= after) {
            return;
        }
        self.kept.push(name);
        if self.first.is_some_and(|first| self.kept.len() > first) {
            self.kept.pop();
        }
    }

    /// The page, in byte order.
    pub(crate) fn into_names(self) -> Vec<String> {
        self.kept.into_sorted_vec()
    }
}

/// Where [`Books::each_applied`] hands each recorded migration.
pub(crate) type AppliedSink<'s> = dyn for<'r> FnMut(AppliedRow<'r>) + Send + 's;

/// The books of one engine, over its connection type `C`.
#[async_trait]
pub(crate) trait Books<C: Send>: Send + Sync {
    /// Whether the service's tables exist (read-only stores do not create
    /// them; then nothing is recorded yet).
    async fn installed(&self, conn: &mut C) -> Result<bool, DbError>;
    /// The tenants (`tenantSelectSQL`), with their attributes.
    async fn tenants(&self, conn: &mut C) -> Result<TenantList, DbError>;
    /// A page of the tenants' names in byte order: the `first` (every one
    /// without) after `after` (from the first without), holding no more of
    /// the list than the page ([`PageOfNames`]) where the database cannot
    /// page it.
    async fn tenant_page(
        &self,
        conn: &mut C,
        after: Option<&str>,
        first: Option<usize>,
    ) -> Result<Vec<String>, DbError>;
    /// How many tenants `tenantSelectSQL` lists.
    async fn tenant_count(&self, conn: &mut C) -> Result<u64, DbError> {
        Ok(self.tenants(conn).await?.names.len() as u64)
    }
    /// The recorded migrations, each handed to `sink` as it is read (the
    /// planner folds them: a fleet's rows are never held at once).
    async fn each_applied(&self, conn: &mut C, sink: &mut AppliedSink<'_>) -> Result<(), DbError>;
    /// The recorded migrations, held (repair and revert look at them whole).
    async fn applied(&self, conn: &mut C) -> Result<Vec<AppliedMigration>, DbError> {
        let mut applied = Vec::new();
        self.each_applied(conn, &mut |row: AppliedRow<'_>| applied.push(row.into())).await?;
        Ok(applied)
    }
    /// Recorded versions.
    async fn versions(&self, conn: &mut C, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError>;
    /// How many versions there are (this reads them all; the sqlx books
    /// count them in the database).
    async fn version_count(&self, conn: &mut C) -> Result<u64, DbError> {
        Ok(self.versions(conn, VersionFilter::All).await?.len() as u64)
    }
    /// Recorded migrations, whole rows.
    async fn migrations(&self, conn: &mut C, filter: MigrationFilter) -> Result<Vec<MigrationRow>, DbError>;
    /// Inserts a version row, in the caller's open transaction; its id.
    async fn insert_version(&self, conn: &mut C, version: &NewVersion<'_>) -> Result<i64, DbError>;

    /// A cheap read of the service's tables, for health.
    async fn ping(&self, conn: &mut C) -> Result<(), DbError> {
        self.versions(conn, VersionFilter::Id(-1)).await.map(drop)
    }
    /// Each schema's recorded migrations as drift needs them (core's
    /// `RecordedBySchema`); by default folded from [`Books::applied`].
    async fn recorded(&self, conn: &mut C) -> Result<FxHashMap<String, Recorded>, DbError> {
        let mut applied = self.applied(conn).await?;
        applied.sort_by(|a, b| a.schema.cmp(&b.schema));
        let mut fold = RecordedBySchema::default();
        for row in applied {
            fold.push(&row.schema, row.file, row.checksum, row.migration_type);
        }
        Ok(fold.finish())
    }
    /// Stores schemas' fingerprints and the identities of what they
    /// recorded, `(schema, fingerprint, recorded)`, in one statement
    /// (without the table: nothing).
    async fn store_fingerprints(
        &self,
        conn: &mut C,
        rows: &[(&str, &str, &str)],
        version_id: i64,
    ) -> Result<(), DbError>;
    /// The stored fingerprints, each schema's with what it recorded, the
    /// digests held once each however many schemas share them (read row by
    /// row: 100,000 rows as text were 50 MiB at once).
    async fn fingerprints(&self, conn: &mut C) -> Result<Vec<(String, Stored)>, DbError>;
    /// Quarantines a tenant (or counts one more failure), outside any
    /// transaction.
    async fn quarantine(&self, conn: &mut C, row: &QuarantineRow) -> Result<(), DbError>;
    /// The quarantined tenants, by name (none before the table exists).
    async fn quarantined(&self, conn: &mut C) -> Result<Vec<QuarantineRow>, DbError>;
    /// Releases tenants from quarantine, outside any transaction.
    async fn release_quarantined(&self, conn: &mut C, tenants: &[String]) -> Result<(), DbError>;
    /// Stores a new rollout document as rollout `id`, outside any
    /// transaction, unless the id is taken (false then: another start won
    /// the id, read the rollouts again).
    async fn insert_rollout(&self, conn: &mut C, id: i64, doc: &str, updated: &str) -> Result<bool, DbError>;
    /// Every rollout, oldest first (none before the table exists).
    async fn rollouts(&self, conn: &mut C) -> Result<Vec<RolloutRow>, DbError>;
    /// Replaces rollout `row.id`'s document with `doc` if its revision is
    /// still `row.revision`; false when someone changed it meanwhile.
    async fn update_rollout(&self, conn: &mut C, row: &RolloutRow, doc: &str, updated: &str) -> Result<bool, DbError>;
    /// Where each tenant of a sharded fleet was last seen (none before the
    /// table exists).
    async fn directory(&self, conn: &mut C) -> Result<Directory, DbError>;
    /// Writes directory changes, in one transaction (without the table:
    /// nothing).
    async fn change_directory(&self, conn: &mut C, changes: &DirectoryChanges) -> Result<(), DbError>;
    /// Removes the records of reverted steps (file and schema), in the
    /// caller's open transaction.
    async fn forget(&self, conn: &mut C, rows: &[Record<'_>]) -> Result<(), DbError>;
    /// The API tokens, by name (none before the table exists).
    async fn tokens(&self, conn: &mut C) -> Result<Vec<StoredToken>, DbError>;
    /// Stores a new token; false when its name is taken.
    async fn insert_token(&self, conn: &mut C, token: &StoredToken) -> Result<bool, DbError>;
    /// Removes a token; false when there was none of that name.
    async fn delete_token(&self, conn: &mut C, name: &str) -> Result<bool, DbError>;
    /// The audit log's rows in `window`, oldest first (none before the
    /// table exists).
    async fn audit(&self, conn: &mut C, window: AuditWindow<'_>) -> Result<Vec<Sealed>, DbError>;
    /// The newest audit row's id and hash.
    async fn last_audit(&self, conn: &mut C) -> Result<Option<(i64, String)>, DbError>;
    /// Appends an audit row; false when another writer took its id.
    async fn append_audit(&self, conn: &mut C, row: &Sealed) -> Result<bool, DbError>;
    /// Every backfill, by schema then file (none before the table exists).
    async fn backfills(&self, conn: &mut C) -> Result<Vec<BackfillRow>, DbError>;
    /// One schema's backfill of `file` as a runner takes it, once begun.
    async fn backfill_job(&self, conn: &mut C, schema: &str, file: &str) -> Result<Option<BackfillJob>, DbError>;
    /// Every running backfill, as a runner takes it.
    async fn running_backfills(&self, conn: &mut C) -> Result<Vec<BackfillJob>, DbError>;
    /// The running backfills of `file` version `started_version` started
    /// (a retry's among them): their rows, not their texts (what a pause
    /// moves).
    async fn running_backfills_of(
        &self,
        conn: &mut C,
        started_version: i64,
        file: &str,
    ) -> Result<Vec<BackfillRow>, DbError>;
    /// Starts `migration`'s backfill in `schema` for version `version_id`
    /// under its `budget`, in the caller's open transaction.
    async fn register_backfill(
        &self,
        conn: &mut C,
        schema: &str,
        migration: &SourceMigration,
        (version_id, budget): (i64, FailureBudget),
        updated: &str,
    ) -> Result<(), DbError>;
    /// Forgets the backfill of `file` in `schema` (its checkpoint and
    /// state), in the caller's open transaction: its file was reverted, so
    /// a later version runs it again from its first key.
    async fn forget_backfill(&self, conn: &mut C, schema: &str, file: &str) -> Result<(), DbError>;
    /// Starts a failed backfill again (its checkpoint kept) in version
    /// `version_id`, in the caller's open transaction. It stays counted
    /// with the version that started it, under that version's budget: a
    /// retry does not shrink the fleet a budget's share is taken of.
    async fn restart_backfill(
        &self,
        conn: &mut C,
        schema: &str,
        file: &str,
        version_id: i64,
        updated: &str,
    ) -> Result<(), DbError>;
    /// How many of the backfills of `file` version `started_version`
    /// started (a retry's among them) are in each state.
    async fn backfill_tally(
        &self,
        conn: &mut C,
        started_version: i64,
        file: &str,
    ) -> Result<Vec<(BackfillState, usize)>, DbError>;
    /// Each runner's count of running backfills it holds with a heartbeat
    /// at or after `fresh_after` (milliseconds since the epoch): the
    /// processes running backfills on this server now.
    async fn backfill_runners(&self, conn: &mut C, fresh_after: i64) -> Result<Vec<(String, usize)>, DbError>;

    /// Claims a running backfill for `claim.holder`; whether it holds it.
    async fn claim_backfill(&self, conn: &mut C, claim: &BackfillClaim<'_>) -> Result<bool, DbError>;
    /// Claims a running backfill for `claim.holder` when `room`, shown the
    /// runners holding backfills on the server now (as
    /// [`Books::backfill_runners`] reads them, fresh after `fresh_after`),
    /// says one more may run; whether it holds it. The read and the claim
    /// are one transaction that holds the server's claim lock, so two
    /// runners never both take the server's last place.
    async fn claim_backfill_in_turn(
        &self,
        conn: &mut C,
        claim: &BackfillClaim<'_>,
        fresh_after: i64,
        room: &mut ClaimRoom<'_>,
    ) -> Result<bool, DbError>;
    /// Writes a batch's checkpoint (`row`), in the caller's open
    /// transaction, when `holder` still holds the backfill and its count of
    /// batches is still `batches_before`; whether it did.
    async fn save_backfill(
        &self,
        conn: &mut C,
        row: &BackfillRow,
        holder: &str,
        batches_before: u64,
        heartbeat: i64,
    ) -> Result<bool, DbError>;
    /// Marks a backfill `holder` holds failed, with `error`.
    async fn fail_backfill(&self, conn: &mut C, row: &BackfillRow, holder: &str) -> Result<(), DbError>;
    /// Moves each of `rows` still in the state it was read in to `to`, one
    /// statement each (a runner's open batch holds its row: one transaction
    /// over them all waited on each runner in turn while holding the rows
    /// it had moved, and runners saving theirs timed out or deadlocked);
    /// whether each moved.
    async fn move_backfills(
        &self,
        conn: &mut C,
        rows: &[BackfillRow],
        to: BackfillState,
        updated: &str,
    ) -> Result<Vec<bool>, DbError>;
    /// Writes a repair (core's `repair`) and its version row, in one
    /// transaction.
    async fn repair(&self, conn: &mut C, repair: &Repair, audit: &Audit<'_>) -> Result<(), DbError>;
}
