//! The floor of `db/`: the rows, requests and answers every other module
//! of it (and the service above) speaks in. Imports nothing of `db/`.

use std::borrow::Cow;
use strata_core::migrate::MigrationType;
use strata_core::migrate::backfill::summary::Progress;

use strata_core::migrate::operation::Operation;
use strata_core::migrate::plan::Plan;
use strata_core::migrate::quarantine::FailureBudget;
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::wave::Wave;

use crate::db::error::DbError;

/// How long a driver waits for a database connection before it reports the
/// database unreachable (at start-up: exits with the error).
pub(crate) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A row of `svc.svc_versions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VersionRow {
    /// Version id.
    pub(crate) id: i64,
    /// Caller-supplied name.
    pub(crate) name: String,
    /// RFC 3339 UTC.
    pub(crate) created: String,
    /// The `X-Request-ID` of the request that created it.
    pub(crate) request_id: String,
    /// The trace it ran in, when its spans were exported and sampled (32
    /// hex digits).
    pub(crate) trace_id: Option<String>,
    /// On a sharded fleet, its part on each shard that ran it: `(shard,
    /// served id)`, in shard order (core's `fleet::one_identity`); empty on
    /// one server.
    pub(crate) parts: Vec<(String, i64)>,
}

impl VersionRow {
    /// The served ids of its parts (none on one server).
    pub(crate) fn part_ids(&self) -> Vec<i64> {
        self.parts.iter().map(|(_, id)| *id).collect()
    }
}

/// A version row to write ([`crate::db::books::Books::insert_version`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewVersion<'a> {
    /// Caller-supplied name.
    pub(crate) name: &'a str,
    /// RFC 3339 UTC.
    pub(crate) created: &'a str,
    /// The `X-Request-ID` of the request that created it.
    pub(crate) request_id: &'a str,
    /// The trace it runs in, when there is one.
    pub(crate) trace_id: Option<&'a str>,
}

/// A row of `svc.svc_migrations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MigrationRow {
    /// Row id.
    pub(crate) id: i64,
    /// File name.
    pub(crate) name: String,
    /// Kind.
    pub(crate) migration_type: MigrationType,
    /// Configured directory.
    pub(crate) source_dir: String,
    /// `source_dir/name`.
    pub(crate) file: String,
    /// Un-substituted SQL text as read from the source.
    pub(crate) contents: String,
    /// SHA-256 of the source bytes.
    pub(crate) checksum: String,
    /// Schema it was applied to.
    pub(crate) schema: String,
    /// RFC 3339 UTC.
    pub(crate) created: String,
}

/// A mutation to carry out.
#[derive(Debug, Clone)]
pub(crate) struct MutationRequest<'a> {
    /// Source migrations, in application order.
    pub(crate) sources: &'a [SourceMigration],
    /// What it does (core's `Operation`, as the caller asked it).
    pub(crate) operation: &'a Operation,
    /// On a sharded fleet: this shard's part of a wave or a retry, its
    /// tenants among those the operation names (core's `fleet::parts`);
    /// `None`: the operation's own.
    pub(crate) part: Option<Vec<String>>,
    /// Roll back instead of committing.
    pub(crate) dry_run: bool,
    /// Name of the version to create.
    pub(crate) version_name: &'a str,
    /// The request's `X-Request-ID`, stored with the version.
    pub(crate) request_id: &'a str,
    /// Creation time of the version and its rows, RFC 3339 UTC.
    pub(crate) created: &'a str,
    /// Told what runs and what commits, when someone watches.
    pub(crate) observer: Option<&'a dyn Observer>,
    /// Tenants the version may fail in and go on (core's `quarantine`).
    pub(crate) failure_budget: FailureBudget,
    /// Quarantined tenants are left out (a version, and what it would do);
    /// `false` reads where every tenant stands (the fleet matrix).
    pub(crate) skip_quarantined: bool,
    /// Plans tenant steps only (a shard other than the home shard, which
    /// holds the single schemas).
    pub(crate) tenants_only: bool,
    /// On a sharded fleet: another shard found other tools' histories, so
    /// the fleet's Sync adopts them and a tenant here without one records
    /// nothing (core's `history::adopt`).
    pub(crate) histories_elsewhere: bool,
}

impl MutationRequest<'_> {
    /// A retry's tenants here (empty: every quarantined tenant).
    pub(crate) fn retried(&self) -> Option<&[String]> {
        self.operation.retried().map(|all| self.part.as_deref().unwrap_or(all))
    }

    /// The tenants a version over the fleet runs in here.
    pub(crate) fn wave(&self) -> Cow<'_, Wave> {
        match (&self.part, self.operation.retried()) {
            (Some(tenants), None) => Cow::Owned(Wave::Named(tenants.clone())),
            _ => self.operation.wave(),
        }
    }
}

/// A tenant put aside after a failure a version absorbed (its failure
/// budget): later versions skip it until it is retried or released.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QuarantineRow {
    /// The tenant.
    pub(crate) tenant: String,
    /// The version that committed something when it failed, if any.
    pub(crate) version_id: Option<i64>,
    /// The failing file.
    pub(crate) file: String,
    /// Where in the file, when the engine said (column 0: the line only).
    pub(crate) line: Option<i64>,
    /// The column, when known.
    pub(crate) column: Option<i64>,
    /// [`super::error::Cause::name`] of the failure.
    pub(crate) cause: String,
    /// The engine's message.
    pub(crate) message: String,
    /// The request that put it aside (kept when a failed retry counts one
    /// more failure: a rollout's wave knows its own tenants by it).
    pub(crate) request_id: String,
    /// When, RFC 3339 UTC (last).
    pub(crate) quarantined: String,
    /// How many versions failed in it (1, then one more per failed retry).
    pub(crate) failures: i64,
}

impl QuarantineRow {
    /// A tenant put aside by request `request_id` at `created` for `cause`
    /// (no file of a version failed in it yet: its shard did not answer,
    /// its schema drifted); the caller fills in the file of a failure.
    pub(crate) fn put_aside(tenant: String, cause: &str, message: String, request_id: &str, created: &str) -> Self {
        QuarantineRow {
            tenant,
            version_id: None,
            file: String::new(),
            line: None,
            column: None,
            cause: cause.to_string(),
            message,
            request_id: request_id.to_string(),
            quarantined: created.to_string(),
            failures: 1,
        }
    }

    /// The tenant of `job`, put aside at `created` by request `request_id`
    /// because its backfill failed or was cancelled (`cause`): the file is
    /// the backfill's, in the version that started it.
    pub(crate) fn of_backfill(
        job: &BackfillJob,
        cause: &str,
        message: String,
        request_id: &str,
        created: &str,
    ) -> Self {
        QuarantineRow {
            version_id: Some(job.version_id),
            file: job.migration.file.clone(),
            ..QuarantineRow::put_aside(job.row.schema.clone(), cause, message, request_id, created)
        }
    }
}

/// One shard of a sharded fleet and its tenants.
/// How far one schema's backfill of one file is (`svc.svc_backfills`):
/// core's state, as the books keep it.
pub(crate) use strata_core::migrate::backfill::State as BackfillState;

/// What `pauseBackfills`, `resumeBackfills` and `cancelBackfills` do to
/// the backfills of the tenants they name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackfillMove {
    /// Running → paused: no runner takes a batch until it is resumed.
    Pause,
    /// Paused → running, after its last committed batch.
    Resume,
    /// Running or paused → cancelled, its tenant quarantined.
    Cancel,
}

impl BackfillMove {
    /// The states it moves a backfill from.
    pub(crate) fn from(self) -> &'static [BackfillState] {
        match self {
            BackfillMove::Pause => &[BackfillState::Running],
            BackfillMove::Resume => &[BackfillState::Paused],
            BackfillMove::Cancel => &[BackfillState::Running, BackfillState::Paused],
        }
    }

    /// The state it moves it to.
    pub(crate) fn to(self) -> BackfillState {
        match self {
            BackfillMove::Pause => BackfillState::Paused,
            BackfillMove::Resume => BackfillState::Running,
            BackfillMove::Cancel => BackfillState::Cancelled,
        }
    }

    /// Its GraphQL mutation, the audit log's action.
    pub(crate) fn action(self) -> &'static str {
        match self {
            BackfillMove::Pause => "pauseBackfills",
            BackfillMove::Resume => "resumeBackfills",
            BackfillMove::Cancel => "cancelBackfills",
        }
    }
}

/// A tenant that waits on its backfill, which runs after the version: it
/// runs nothing after that file until the backfill is done.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub(crate) struct BackfillWait {
    /// The tenant.
    pub(crate) tenant: String,
    /// The backfill's file.
    pub(crate) file: String,
}

/// How one backfill ended in a runner's pass.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BackfillEnd {
    /// The tenant (or single schema).
    pub(crate) tenant: String,
    /// The backfill's file.
    pub(crate) file: String,
    /// `done`, `failed` (its tenant quarantined), or `running` (paused, or
    /// taken by another process while it ran).
    pub(crate) state: &'static str,
    /// Why it failed.
    pub(crate) error: Option<String>,
}

/// A runner's claim of one backfill ([`crate::db::books::Books::claim_backfill`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BackfillClaim<'a> {
    /// The schema.
    pub(crate) schema: &'a str,
    /// The backfill's file.
    pub(crate) file: &'a str,
    /// The runner (unique per process and run).
    pub(crate) holder: &'a str,
    /// Now, in milliseconds since the epoch (the runner's clock).
    pub(crate) now_ms: i64,
    /// A holder whose last heartbeat is older than this has died: its
    /// backfill may be taken.
    pub(crate) stale_before_ms: i64,
}

/// Whether a runner may claim one more backfill, shown each runner's count
/// of fresh claims on the server
/// ([`crate::db::books::Books::claim_backfill_in_turn`]).
pub(crate) type ClaimRoom<'a> = dyn for<'h> FnMut(&'h [(String, usize)]) -> bool + Send + 'a;

/// A backfill as a runner takes it: its row, the version that started it
/// (which its file's row is recorded in) and its file as it was then.
#[derive(Debug, Clone)]
pub(crate) struct BackfillJob {
    /// Its progress.
    pub(crate) row: BackfillRow,
    /// The version it runs in (its file is recorded in it): the one that
    /// started it, or the retry that started it again.
    pub(crate) version_id: i64,
    /// The version that first started it: its budget's failures are
    /// counted over the backfills of its file that version started.
    pub(crate) started_version: i64,
    /// That version's `failureBudget` (none kept by books written before
    /// it was: never judged).
    pub(crate) failure_budget: Option<FailureBudget>,
    /// Its file: name, directory, type, contents and checksum as recorded,
    /// the forward text it runs.
    pub(crate) migration: SourceMigration,
}

/// One schema's backfill of one file, as the books keep it: its
/// checkpoint (core's `backfill::Stored`) written with every batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackfillRow {
    /// The schema (tenant) it runs in.
    pub(crate) schema: String,
    /// The backfill's file.
    pub(crate) file: String,
    /// How far it is.
    pub(crate) state: BackfillState,
    /// The checkpoint and counts.
    pub(crate) progress: strata_core::migrate::backfill::Stored,
    /// The last batch's failure, while it stands.
    pub(crate) last_error: Option<String>,
    /// When it last changed, RFC 3339 UTC.
    pub(crate) updated: String,
}

/// A backfill's row as every engine's books keep it: its columns read
/// ([`BackfillRow::from_columns`]).
pub(crate) struct BackfillColumns<'a> {
    /// `db_schema`, `file`, `state`.
    pub(crate) schema: String,
    pub(crate) file: String,
    pub(crate) state: &'a str,
    /// `after_key`, `upper_key` (core's `backfill::encode_key` text).
    pub(crate) after: Option<&'a str>,
    pub(crate) upper: Option<&'a str>,
    /// `rows_done`, `batches`, `rows_estimated`, `running_ms`.
    pub(crate) counts: [i64; 4],
    /// `last_error`, `updated`.
    pub(crate) last_error: Option<String>,
    pub(crate) updated: String,
}

impl BackfillRow {
    /// The row of `columns`; a key the books hold that is not one is an
    /// unexpected answer.
    pub(crate) fn from_columns(columns: BackfillColumns<'_>) -> Result<BackfillRow, DbError> {
        let key = |text: Option<&str>| {
            text.map(|text| strata_core::migrate::backfill::decode_key(text).map_err(DbError::UnexpectedAnswer))
                .transpose()
        };
        let [rows_done, batches, rows_estimated, running_ms] = columns.counts.map(|n| n.max(0) as u64);
        let state = BackfillState::parse(columns.state);
        Ok(BackfillRow {
            schema: columns.schema,
            file: columns.file,
            state,
            progress: strata_core::migrate::backfill::Stored {
                after: key(columns.after)?,
                upper: key(columns.upper)?,
                rows_done,
                batches,
                rows_estimated,
                done: state == BackfillState::Done,
                running_ms,
            },
            last_error: columns.last_error,
            updated: columns.updated,
        })
    }
}

/// The columns of a backfill's job beside its row's, as every engine's
/// books keep them ([`BackfillJob::from_columns`]).
pub(crate) struct BackfillJobColumns {
    /// `version_id`, `migration_type`.
    pub(crate) version_id: i64,
    pub(crate) migration_type: i64,
    /// `name`, `source_dir`, `contents`, `checksum`, `forward`.
    pub(crate) name: String,
    pub(crate) source_dir: String,
    pub(crate) contents: String,
    pub(crate) checksum: String,
    pub(crate) forward: String,
    /// `failure_budget` as written (`5`, `10%`), if any.
    pub(crate) failure_budget: Option<String>,
    /// `started_version` (its `version_id` in books written before it).
    pub(crate) started_version: i64,
}

impl BackfillJob {
    /// The job of `row` and its file as recorded (`columns`); a migration
    /// type the books hold that is none is an unexpected answer.
    pub(crate) fn from_columns(row: BackfillRow, columns: BackfillJobColumns) -> Result<BackfillJob, DbError> {
        let BackfillJobColumns {
            version_id,
            migration_type: code,
            name,
            source_dir,
            contents,
            checksum,
            forward,
            failure_budget,
            started_version,
        } = columns;
        let migration_type =
            MigrationType::from_code(code).ok_or(DbError::UnknownMigrationType { id: version_id, code })?;
        Ok(BackfillJob {
            row,
            version_id,
            started_version,
            failure_budget: failure_budget.and_then(|budget| budget.parse().ok()),
            migration: SourceMigration {
                file: format!("{source_dir}/{name}"),
                name,
                migration_type,
                source_dir,
                contents,
                checksum,
                forward,
                no_transaction: false,
                format: strata_core::migrate::format::Format::Strata,
                down: None,
                order: strata_core::migrate::format::SortKey::Name,
                // A backfill names its table (`table=`) and runs where
                // `{range}` puts it: never through a session schema.
                in_its_schema: false,
                repeatable: false,
            },
        })
    }
}

/// One tenant's backfill of one file as the API and the CLI show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BackfillStatus {
    /// The tenant (or single schema).
    pub(crate) tenant: String,
    /// The backfill's file.
    pub(crate) file: String,
    /// `running`, `done` or `failed`.
    pub(crate) state: &'static str,
    /// Rows its committed batches changed.
    pub(crate) rows_done: u64,
    /// Rows present at its start, up to its last key (none: a backfill
    /// repeated until it changes nothing).
    pub(crate) rows_estimated: u64,
    /// Batches committed.
    pub(crate) batches: u64,
    /// Rows per second of running (core's `backfill::estimate`).
    pub(crate) rows_per_second: Option<f64>,
    /// Seconds left at that rate (0 once done).
    pub(crate) eta_seconds: Option<u64>,
    /// The last batch's failure, while it stands.
    pub(crate) last_error: Option<String>,
    /// When it last changed, RFC 3339 UTC.
    pub(crate) updated: String,
}

impl From<BackfillRow> for BackfillStatus {
    fn from(row: BackfillRow) -> Self {
        let estimate = strata_core::migrate::backfill::estimate(&row.progress);
        BackfillStatus {
            rows_per_second: estimate.rows_per_second,
            eta_seconds: estimate.seconds_left,
            tenant: row.schema,
            file: row.file,
            state: row.state.as_str(),
            rows_done: row.progress.rows_done,
            rows_estimated: row.progress.rows_estimated,
            batches: row.progress.batches,
            last_error: row.last_error,
            updated: row.updated,
        }
    }
}

impl Progress for BackfillStatus {
    fn file(&self) -> &str {
        &self.file
    }
    fn tenant(&self) -> &str {
        &self.tenant
    }
    fn state(&self) -> BackfillState {
        BackfillState::parse(self.state)
    }
    fn rows_done(&self) -> u64 {
        self.rows_done
    }
    fn rows_estimated(&self) -> u64 {
        self.rows_estimated
    }
    fn batches(&self) -> u64 {
        self.batches
    }
    fn rows_per_second(&self) -> Option<f64> {
        self.rows_per_second
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardTenants {
    /// Its name in `shards:`.
    pub(crate) name: String,
    /// Its tenants: as its `tenantSelectSQL` returns them, or, while it
    /// does not answer, as the directory last saw them.
    pub(crate) tenants: Vec<String>,
    /// Whether it answered.
    pub(crate) reachable: bool,
}

/// What `tenantSelectSQL` returned: the names (its first column) and
/// whatever else it returned of each (the attributes a wave may select
/// by).
#[derive(Debug, Clone, Default)]
pub(crate) struct TenantList {
    /// The names, in the order returned.
    pub(crate) names: Vec<String>,
    /// The other columns.
    pub(crate) attributes: strata_core::migrate::wave::Attributes,
}

/// What a mutation would do, read without the lock and without writing.
#[derive(Debug, Clone)]
pub(crate) struct Preview {
    /// The plan.
    pub(crate) plan: Plan,
    /// The tenants it was made for (`tenantSelectSQL`, quarantined ones
    /// left out).
    pub(crate) tenants: Vec<String>,
    /// Quarantined tenants the version would skip.
    pub(crate) skipped: Vec<String>,
    /// Shards that did not answer (a sharded fleet's, other than the home
    /// shard), with their tenants as last seen: the plan leaves them out.
    pub(crate) unreachable: Vec<UnreachableShard>,
}

/// A shard a preview could not reach.
#[derive(Debug, Clone)]
pub(crate) struct UnreachableShard {
    /// The shard.
    pub(crate) shard: String,
    /// Why.
    pub(crate) reason: String,
    /// Its tenants, as it listed them before or the directory last saw them.
    pub(crate) tenants: Vec<String>,
}

/// What a mutation did.
#[derive(Debug, Clone)]
pub(crate) struct MutationOutcome {
    /// The plan that was carried out (or would have been, on a dry run).
    pub(crate) plan: Plan,
    /// The committed version; `None` on a dry run or when nothing was due.
    pub(crate) version: Option<VersionRow>,
    /// Tenants whose failure the version absorbed, now quarantined.
    pub(crate) quarantined: Vec<QuarantineRow>,
    /// Tenants that wait on a backfill running after the version.
    pub(crate) waiting: Vec<BackfillWait>,
    /// Quarantined tenants it skipped.
    pub(crate) skipped: Vec<String>,
    /// Tenants a retry completed, released from quarantine.
    pub(crate) released: Vec<String>,
    /// What committed, when tenants failed (else the plan's counts hold).
    pub(crate) committed_counts: Option<strata_core::migrate::summary::Counts>,
    /// Where its time went.
    pub(crate) phases: Phases,
}

/// Where a version's time went, phase by phase (in the log's `version
/// created` line, so that a slow version over a large fleet says which
/// part grew). On a fleet of shards, each phase's longest shard.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Phases {
    /// Waiting for the version's lock.
    pub(crate) lock: std::time::Duration,
    /// Reading the tenant list and choosing the tenants that run.
    pub(crate) tenants: std::time::Duration,
    /// Reading what is recorded and planning.
    pub(crate) plan: std::time::Duration,
    /// Running the units.
    pub(crate) units: std::time::Duration,
    /// After the last unit: settling the rows and storing the fingerprints.
    pub(crate) wind_down: std::time::Duration,
}

impl Phases {
    /// Each phase's longer of `self` and `other` (shards run at once).
    pub(crate) fn longest(self, other: Phases) -> Phases {
        Phases {
            lock: self.lock.max(other.lock),
            tenants: self.tenants.max(other.tenants),
            plan: self.plan.max(other.plan),
            units: self.units.max(other.units),
            wind_down: self.wind_down.max(other.wind_down),
        }
    }
}

/// A stored rollout: core's `rollout::Rollout` as JSON, with the revision
/// an update must find to replace it.
#[derive(Debug, Clone)]
pub(crate) struct RolloutRow {
    /// Its id.
    pub(crate) id: i64,
    /// The document.
    pub(crate) doc: String,
    /// Bumped by every update.
    pub(crate) revision: i64,
}

/// Which versions a read selects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum VersionFilter<'a> {
    /// All, in id order.
    All,
    /// Those that applied (or recorded) this file, in id order.
    ApplyingFile(&'a str),
    /// The one with this id.
    Id(i64),
    /// A page of them, in id order.
    Window(VersionWindow),
}

/// Which audit rows a read takes, filtered in the database (the log only
/// grows: at 200,000 rows `audit(last: 10)` read whole took 1.2 s and 430
/// MB of the service).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct AuditWindow<'a> {
    /// Rows written at or after this time (RFC 3339 UTC, as the rows keep
    /// it); every row when none.
    pub(crate) since: Option<&'a str>,
    /// The newest this many (by id; ids follow each other from 1); every
    /// row when none.
    pub(crate) last: Option<u64>,
}

impl AuditWindow<'_> {
    /// Every row: what a verification of the chain reads.
    pub(crate) const WHOLE: AuditWindow<'static> = AuditWindow { since: None, last: None };

    /// The `since` bound: the empty text is at or before every time.
    pub(crate) fn since_bound(&self) -> &str {
        self.since.unwrap_or("")
    }

    /// The `last` bound as rows below the newest id (beyond any id when
    /// none).
    pub(crate) fn last_bound(&self) -> i64 {
        self.last.map_or(i64::MAX / 2, |last| i64::try_from(last).unwrap_or(i64::MAX / 2).min(i64::MAX / 2))
    }
}

/// A page of versions, GitHub's way, in id order either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VersionWindow {
    /// `first`: at most `count` of the lowest ids above `after`.
    First {
        /// Only ids above it.
        after: Option<i64>,
        /// At most this many.
        count: Option<u32>,
    },
    /// `last`: at most `count` of the highest ids below `before`.
    Last {
        /// Only ids below it.
        before: Option<i64>,
        /// At most this many.
        count: Option<u32>,
    },
}

impl VersionWindow {
    /// The window of `rows` (in id order), for a reader that reads them
    /// all (SQL Server, a fleet of shards).
    pub(crate) fn of(&self, rows: Vec<VersionRow>) -> Vec<VersionRow> {
        let limit = |count: Option<u32>, len: usize| count.map_or(len, |count| (count as usize).min(len));
        match *self {
            VersionWindow::First { after, count } => {
                let inside = rows.into_iter().filter(|row| after.is_none_or(|after| row.id > after));
                let inside: Vec<VersionRow> = inside.collect();
                let keep = limit(count, inside.len());
                inside.into_iter().take(keep).collect()
            }
            VersionWindow::Last { before, count } => {
                let mut inside: Vec<VersionRow> =
                    rows.into_iter().filter(|row| before.is_none_or(|before| row.id < before)).collect();
                let keep = limit(count, inside.len());
                inside.split_off(inside.len() - keep)
            }
        }
    }
}

/// Which recorded migrations a read selects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MigrationFilter {
    /// The rows of one version, in id order (on a sharded fleet: every
    /// part's).
    Version(i64),
    /// The rows of one shard's part of a version (one server: the version).
    Part(i64),
    /// The row with this id.
    Id(i64),
    /// Up to [`MIGRATIONS_PER_PAGE`] rows of one shard's part of a version
    /// (one server: the version) whose id is above `after`, in id order:
    /// a version read page by page, so a reader of a fleet's version holds
    /// one page at a time.
    Page {
        /// The part (one server: the version).
        part: i64,
        /// The last id of the page before (0 for the first page).
        after: i64,
    },
}

/// Rows of a [`MigrationFilter::Page`].
pub(crate) const MIGRATIONS_PER_PAGE: i64 = 1000;

/// Whether a store may write. Read-only commands (`strata plan`,
/// `strata status`) open it read-only: nothing is created, not even the
/// service's own tables, so a database user with read rights only (or a
/// standby) can run them; a missing bookkeeping means nothing recorded yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads only.
    ReadOnly,
    /// Reads, mutations, and the service's tables created at open.
    ReadWrite,
}

/// Told what a version does while it runs (the command line's progress
/// bar). Called from the executor's tasks: cheap and non-blocking.
pub(crate) trait Observer: Send + Sync + std::fmt::Debug {
    /// The plan is made and about to run (not called for an empty plan).
    fn started(&self, _plan: &Plan, _sources: &[SourceMigration]) {}
    /// A file starts in a schema.
    fn running(&self, _schema: &str, _file: &str) {}
    /// `steps` steps of `schema` committed (on a dry run: ran, then rolled back).
    fn committed(&self, _schema: &str, _steps: usize) {}
}

/// `strata repair`, as the store takes it.
#[derive(Clone, Copy)]
pub(crate) struct RepairRequest<'a> {
    /// The source migrations.
    pub(crate) sources: &'a [SourceMigration],
    /// The files named (none: every change).
    pub(crate) files: &'a [String],
    /// A named file with nothing to repair is refused.
    pub(crate) strict: bool,
    /// The version row it is audited as; `None`: only say what it would
    /// change.
    pub(crate) audit: Option<&'a Audit<'a>>,
}

/// The version row a change to the books is audited as.
pub(crate) struct Audit<'a> {
    /// The version's name.
    pub(crate) name: &'a str,
    /// When (RFC 3339).
    pub(crate) created: &'a str,
    /// The request that asked.
    pub(crate) request_id: &'a str,
}

/// A unit's bookkeeping rows: what it applied, in one version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entries<'a> {
    /// The rows.
    pub(crate) rows: &'a [Record<'a>],
    /// When (RFC 3339).
    pub(crate) created: &'a str,
    /// The version they belong to.
    pub(crate) version_id: i64,
}

/// One bookkeeping row to write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a> {
    /// The migration.
    pub(crate) migration: &'a SourceMigration,
    /// The schema it was applied to (or recorded for).
    pub(crate) schema: &'a str,
}

#[cfg(test)]
mod tests {
    use super::{VersionRow, VersionWindow};

    fn rows(ids: &[i64]) -> Vec<VersionRow> {
        let row = |id| VersionRow {
            id,
            name: format!("v{id}"),
            created: String::new(),
            request_id: String::new(),
            trace_id: None,
            parts: Vec::new(),
        };
        ids.iter().copied().map(row).collect()
    }

    fn ids(window: VersionWindow) -> Vec<i64> {
        window.of(rows(&[3, 5, 8, 13])).iter().map(|row| row.id).collect()
    }

    #[test]
    fn a_window_pages_from_either_end_after_or_before_an_id_that_may_be_gone() {
        assert_eq!(ids(VersionWindow::First { after: None, count: Some(2) }), [3, 5]);
        assert_eq!(ids(VersionWindow::First { after: Some(5), count: Some(2) }), [8, 13]);
        assert_eq!(ids(VersionWindow::First { after: Some(6), count: None }), [8, 13]);
        assert_eq!(ids(VersionWindow::Last { before: None, count: Some(2) }), [8, 13]);
        assert_eq!(ids(VersionWindow::Last { before: Some(8), count: Some(5) }), [3, 5]);
        assert_eq!(ids(VersionWindow::Last { before: Some(7), count: Some(1) }), [5]);
        assert!(ids(VersionWindow::Last { before: Some(3), count: None }).is_empty());
    }
}
