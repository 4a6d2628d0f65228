//! Backfills (`strata:backfill` files) run: one backfill on a connection,
//! driven by core's `backfill::Machine` ([`Backfiller::drive`]), and every
//! running backfill of a database taken by a runner ([`run_running`]). The
//! shell reads the keys core asks for, runs each batch in a short
//! transaction of its own with the checkpoint core hands back, and waits
//! where the server's pace says (`executor::settings::BackfillPace`).
//!
//! # Invariants
//!
//! - **Every row once.** A batch and its checkpoint commit together, and
//!   the checkpoint is written only when this runner still holds the
//!   backfill and no other batch was counted since (a compare-and-set on
//!   the holder and the count of batches): a run that stops anywhere, kill
//!   -9 included, resumes right after the last batch that committed, and
//!   two runners never both commit a batch.
//! - **Recorded with the last batch.** The file's row in `svc_migrations`
//!   (in the version that started the backfill) commits in the same
//!   transaction as its last batch, never before.
//! - **Values are bound.** Keys travel as bound parameters of the text
//!   core wrote; none is written into SQL — but an integer of an integer
//!   column, which core writes as a number it formats itself so that
//!   PostgreSQL gets a batch in one message with its `begin` (and the
//!   commit of the batch before).
//! - **A batch waits for a lock no longer than its file allows** and is
//!   retried alone after a lock time-out, up to the file's retries.
//! - **No version lock.** A backfill in a tenant of the fleet runs after
//!   its version, under its own claim (a holder and a heartbeat in its
//!   row), while other versions and `createTenant` go on; its tenant runs
//!   nothing after it until it is done.
//! - **A version's budget holds after it.** A runner's failure counts
//!   against the failure budget of the version that started the backfill;
//!   past it, that version's other backfills of the file are paused at
//!   once (core's `backfill::budget`), before the next batch of any.

use std::collections::HashSet;
use std::time::Instant;

use futures::StreamExt;
use strata_core::migrate::backfill::budget;
use strata_core::migrate::backfill::{
    self, Form, Key, KeyValue, LagStep, Machine, Next, Runners, Sizer, Slot, Spec, Target, Template,
};
use strata_core::migrate::driver::Driver;
use strata_core::migrate::lock_wait::{self, Timeouts};
use strata_core::migrate::quarantine::FailureBudget;
use strata_core::migrate::statements;
use tracing::Instrument;

use crate::db::books::Books;
use crate::db::engine::{Engine, Entries, Failure, Record, Transaction};
use crate::db::error::{Cause, DbError};
use crate::db::executor::retry_wait::jittered_wait_ms;
use crate::db::executor::settings::Settings;
use crate::db::types::{BackfillClaim, BackfillJob, BackfillRow, BackfillState, QuarantineRow, VersionFilter};

/// The ranges whose ends one read finds (core's `backfill::sql::batch_ends`):
/// a batch then takes four round trips, not five, seven times in eight.
const ENDS_AT_ONCE: u32 = 8;

/// How a backfill's run ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// Its last batch committed, with its file's row.
    Done,
    /// A batch failed (or the file cannot run as written): it is marked
    /// failed, the batches before it stay.
    Failed(Failure),
    /// It is no longer this runner's: paused, or taken by another runner
    /// after this one's heartbeat went stale.
    Released,
}

/// One backfill's end in a runner's pass ([`run_running`]).
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The schema it ran in.
    pub(crate) schema: String,
    /// Its file.
    pub(crate) file: String,
    /// How it ended.
    pub(crate) ended: Ended,
}

impl From<Outcome> for crate::db::types::BackfillEnd {
    fn from(outcome: Outcome) -> Self {
        let (state, error) = match outcome.ended {
            Ended::Done => ("done", None),
            Ended::Failed(failure) => ("failed", Some(failure.message)),
            Ended::Released => ("running", None),
        };
        crate::db::types::BackfillEnd { tenant: outcome.schema, file: outcome.file, state, error }
    }
}

/// Runs backfills on one database for one holder.
pub(crate) struct Backfiller<'a, E: Engine> {
    /// The database's engine.
    pub(crate) engine: &'a E,
    /// Its settings (the pace, the placeholder, the time-outs).
    pub(crate) settings: &'a Settings,
    /// Who runs them: unique per process and run.
    pub(crate) holder: &'a str,
    /// A runner's (not a version's): a failure quarantines a tenant before
    /// its backfill reads as failed, so no reader sees one without the
    /// other (a version's failures are its executor's to absorb).
    pub(crate) quarantines: bool,
    /// The versions (and files, and budgets) whose budget a failure could
    /// not judge: judged again before the next pass claims anything.
    pub(crate) unjudged: std::sync::Mutex<HashSet<(i64, String, Option<FailureBudget>)>>,
}

/// A range that lost a bound core gave it: a defect, not the file's.
fn lost_bound() -> Failure {
    Failure::statement("the backfill's range lost a bound (please report this)".into())
}

/// The values of `binds`, in order: the range's `lower` and `upper` keys'
/// columns, and the batch `limit`. None when a slot names a bound the
/// range does not have (core never writes one).
fn values(binds: &[Slot], lower: Option<&Key>, upper: Option<&Key>, limit: u32) -> Option<Vec<KeyValue>> {
    binds
        .iter()
        .map(|slot| match *slot {
            Slot::Lower(column) => lower?.get(column).cloned(),
            Slot::Upper(column) => upper?.get(column).cloned(),
            Slot::Limit => Some(KeyValue::Int(i64::from(limit))),
        })
        .collect()
}

/// The current time as the books store it.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The current time in milliseconds since the epoch (heartbeats).
pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A pass of [`Backfiller::drive`] as it goes: the machine, what the books
/// hold, and the statement with its table and key.
struct Drive<'j> {
    job: &'j BackfillJob,
    spec: Spec,
    /// The batch's statement (schema substituted), read once.
    statement: Template,
    table: String,
    timeouts: Timeouts,
    machine: Machine,
    row: BackfillRow,
    /// When this runner last wrote its heartbeat (claimed or saved).
    beat: Instant,
    /// Since when the running time not yet stored was counted (the pass's
    /// start, then each checkpoint).
    counted: Instant,
    /// A batch saved with its checkpoint whose commit goes with the next
    /// batch's `begin` ([`Engine::commit_and_begin_with_timeouts`]), when
    /// that batch follows at once.
    open: Option<OpenBatch>,
}

/// A batch whose transaction is still open: the rows it changed and when
/// it started (reported once it commits).
struct OpenBatch {
    rows: u64,
    started: Instant,
}

impl OpenBatch {
    /// Counted in the metrics and the trace, once committed.
    fn committed(self) {
        crate::telemetry::backfill_batch(self.rows);
        crate::traces::spans::backfill_batch(self.rows, self.started.elapsed().as_millis());
    }
}

impl<E: Engine> Backfiller<'_, E> {
    /// Claims `job` for this runner (its row, on `conn`); whether it holds
    /// it now.
    pub(crate) async fn claim(&self, conn: &mut E::Conn, job: &BackfillJob) -> Result<bool, DbError> {
        self.engine.books().claim_backfill(conn, &self.claim_now(job)).await
    }

    /// This runner's claim of `job` now: a claim whose holder has not
    /// written its heartbeat for
    /// [`crate::db::executor::settings::BackfillPace::stale_ms`] is taken over.
    fn claim_now<'a>(&'a self, job: &'a BackfillJob) -> BackfillClaim<'a> {
        let now = now_ms();
        BackfillClaim {
            schema: &job.row.schema,
            file: &job.row.file,
            holder: self.holder,
            now_ms: now,
            stale_before_ms: now - self.settings.backfill.stale_ms(),
        }
    }

    /// Runs `job` (claimed) on `conn` — its schema entered, no transaction
    /// open — from its checkpoint to its end.
    pub(crate) async fn drive(&self, conn: &mut E::Conn, job: &BackfillJob) -> Result<Ended, DbError> {
        let span = crate::traces::spans::backfill(&job.row.schema, &job.row.file, job.version_id, E::DRIVER);
        let ended = self.drive_traced(conn, job).instrument(span.clone()).await;
        let (how, failure) = match &ended {
            Ok(Ended::Done) => ("done", None),
            Ok(Ended::Released) => ("released", None),
            Ok(Ended::Failed(failure)) => ("failed", Some((failure.cause.name(), failure.message.clone()))),
            Err(error) => ("stopped", Some(("DATABASE_ERROR", error.to_string()))),
        };
        crate::traces::spans::backfill_ended(
            &span,
            how,
            failure.as_ref().map(|(code, message)| (*code, message.as_str())),
        );
        ended
    }

    /// [`Backfiller::drive`] in the backfill's span.
    async fn drive_traced(&self, conn: &mut E::Conn, job: &BackfillJob) -> Result<Ended, DbError> {
        let mut drive = match self.prepare(job) {
            Ok(drive) => drive,
            Err(message) => return self.failed(conn, job, job.row.clone(), Failure::statement(message)).await,
        };
        let drive = &mut drive;
        let _slot = self.settings.backfill.slot().await;
        if !E::TRANSACTIONAL_DDL {
            self.engine.set_timeouts(conn, drive.timeouts, false).await?;
        }
        match self.batches(conn, drive).await {
            Ok(Ended::Done) if self.quarantines && job.migration.migration_type.is_tenant() => {
                // A retry left its tenant put aside until this backfill it
                // restarted was done (committed: the books' own statement,
                // outside the batches' transactions).
                self.engine.books().release_quarantined(conn, std::slice::from_ref(&job.row.schema)).await?;
                Ok(Ended::Done)
            }
            Ok(ended) => Ok(ended),
            Err(Stop::Failed(failure)) => self.failed(conn, job, drive.row.clone(), failure).await,
            Err(Stop::Books(error)) => Err(error),
        }
    }

    /// The file's rules read again from its stored text (the runner may be
    /// another process than the version's); why not, when it holds no
    /// backfill or cannot run as written.
    fn prepare<'j>(&self, job: &'j BackfillJob) -> Result<Drive<'j>, String> {
        let migration = &job.migration;
        let (driver, file, text) = (E::DRIVER, migration.file.as_str(), migration.forward.as_str());
        let mode = statements::inspect(driver, file, text).map_err(|refusals| refusals.to_string())?;
        let spec = backfill::read(driver, file, text)
            .map_err(|refusal| refusal.to_string())?
            .ok_or_else(|| format!("{file} holds no `strata:backfill` directive"))?;
        let schema = job.row.schema.as_str();
        let placeholder = &self.settings.placeholder;
        let table = match &spec.form {
            Form::Ranged { table, .. } => table.replace(placeholder, schema),
            Form::Repeated => String::new(),
        };
        let sizer = Sizer::new(spec.batch, self.settings.backfill.batch_millis);
        let statement = text.replace(placeholder, schema);
        let statement = match spec.form {
            Form::Ranged { .. } => Template::ranged(driver, &statement),
            Form::Repeated => Template::repeated(driver, &statement),
        };
        Ok(Drive {
            job,
            statement,
            table,
            timeouts: self.settings.timeouts.for_file(&mode),
            machine: Machine::new(spec.form != Form::Repeated, Some(job.row.progress.clone()), sizer),
            row: job.row.clone(),
            spec,
            beat: Instant::now(),
            counted: Instant::now(),
            open: None,
        })
    }

    /// The loop of [`Backfiller::drive`], over its machine; a batch left
    /// open by it committed on every way out.
    async fn batches(&self, conn: &mut E::Conn, drive: &mut Drive<'_>) -> Result<Ended, Stop> {
        let ended = self.batch_loop(conn, drive).await;
        self.commit_open(conn, drive).await?;
        ended
    }

    /// Commits the batch left open, if any.
    async fn commit_open(&self, conn: &mut E::Conn, drive: &mut Drive<'_>) -> Result<(), DbError> {
        if let Some(open) = drive.open.take() {
            self.engine.data_transaction(conn, Transaction::Commit).await?;
            open.committed();
        }
        Ok(())
    }

    /// Whether the runner's claim is due for a heartbeat ([`Backfiller::keep_claim`]).
    fn claim_due(&self, drive: &Drive<'_>) -> bool {
        drive.beat.elapsed().as_millis() as i64 > self.settings.backfill.stale_ms() / 3
    }

    /// [`Backfiller::batches`]' loop. A batch's commit waits for the next
    /// batch's `begin` only when nothing comes between them: no read, no
    /// wait for the budget or the replicas, no heartbeat (each commits it
    /// first).
    async fn batch_loop(&self, conn: &mut E::Conn, drive: &mut Drive<'_>) -> Result<Ended, Stop> {
        let key: Vec<String> = match &drive.spec.form {
            Form::Ranged { key, .. } => key.clone(),
            Form::Repeated => Vec::new(),
        };
        let table = drive.table.clone();
        let casts = match drive.spec.form {
            Form::Ranged { .. } => self.key_casts(conn, &table, &key).await?,
            Form::Repeated => Vec::new(),
        };
        let target = Target { driver: E::DRIVER, table: &table, key: &key, casts: &casts };
        // The batch's statement as core renders it, from the start and
        // after a key: the same text every batch.
        let mut statements: [Option<backfill::sql::Rendered>; 2] = [None, None];
        loop {
            let next = drive.machine.next();
            let back_to_back = matches!(next, Next::Run { .. }) && self.settings.backfill.lag_watch().is_none();
            if !back_to_back {
                self.commit_open(conn, drive).await?;
            }
            let released = match next {
                Next::Done => return Ok(Ended::Done),
                Next::ReadLast => !self.read_last(conn, drive, &target).await?,
                Next::FindEnd { size } => {
                    self.find_ends(conn, drive, &target, size).await?;
                    false
                }
                Next::Run { size } => !self.run_batch(conn, drive, &target, &mut statements, size).await?,
            };
            if released {
                return Ok(Ended::Released);
            }
        }
    }

    /// PostgreSQL: each key column's type, for core to write integer keys
    /// in (`backfill::sql::key_types`); none elsewhere.
    async fn key_casts(&self, conn: &mut E::Conn, table: &str, key: &[String]) -> Result<Vec<String>, Stop> {
        if E::DRIVER != Driver::Postgres {
            return Ok(Vec::new());
        }
        let types = self.engine.read_keys_whole(conn, &backfill::sql::key_types(table, key)).await?;
        Ok(types.into_iter().next().unwrap_or_default().into_iter().map(|value| value.to_string()).collect())
    }

    /// Core's `ReadLast`: the table's last key and an estimate of the rows
    /// up to it, told to the machine; an empty table is done now, recorded.
    /// False when the backfill is no longer this runner's.
    async fn read_last(&self, conn: &mut E::Conn, drive: &mut Drive<'_>, target: &Target<'_>) -> Result<bool, Stop> {
        let last = self.engine.read_keys_whole(conn, &backfill::sql::last_key(target)).await?;
        let last = last.into_iter().next();
        let estimate = match &last {
            Some(upper) => self.count_up_to(conn, target, upper).await?,
            None => 0,
        };
        let before = drive.machine.stored().batches;
        drive.machine.last_read(last, estimate);
        // The upper key and the estimate go with the first batch's
        // checkpoint (a run stopped before it reads them again).
        if drive.machine.stored().done {
            self.engine.data_transaction(conn, Transaction::Begin).await?;
            if !self.save(conn, drive, before).await? {
                let _ = self.engine.data_transaction(conn, Transaction::Rollback).await;
                return Ok(false);
            }
            self.engine.data_transaction(conn, Transaction::Commit).await?;
        }
        Ok(true)
    }

    /// The rows with a key up to `upper`: what the backfill's progress is
    /// measured against.
    async fn count_up_to(&self, conn: &mut E::Conn, target: &Target<'_>, upper: &Key) -> Result<u64, Stop> {
        let whole = self.engine.sends_whole_batches().then(|| backfill::sql::count_up_to_with_integers(target, upper));
        let rows = match whole.flatten() {
            Some(sql) => self.engine.read_keys_whole(conn, &sql).await?,
            None => {
                let count = backfill::sql::count_up_to(target);
                let bound = values(&count.binds, None, Some(upper), 0).ok_or_else(lost_bound)?;
                self.engine.read_keys(conn, &count.sql, &bound).await?
            }
        };
        Ok(match rows.first().and_then(|row| row.first()) {
            Some(KeyValue::Int(n)) => (*n).max(0) as u64,
            _ => 0,
        })
    }

    /// Core's `FindEnd`: the ends of the next [`ENDS_AT_ONCE`] batches of
    /// `size` rows, told to the machine.
    async fn find_ends(
        &self,
        conn: &mut E::Conn,
        drive: &mut Drive<'_>,
        target: &Target<'_>,
        size: u32,
    ) -> Result<(), Stop> {
        let (lower, _) = drive.machine.range();
        let upper = drive.machine.stored().upper.as_ref();
        let whole = match upper {
            Some(upper) if self.engine.sends_whole_batches() => {
                backfill::sql::batch_ends_with_integers(target, lower, upper, size, ENDS_AT_ONCE)
            }
            _ => None,
        };
        let ends = match whole {
            Some(sql) => self.engine.read_keys_whole(conn, &sql).await?,
            None => {
                let query = backfill::sql::batch_ends(target, lower.is_none(), size, ENDS_AT_ONCE);
                let bound = values(&query.binds, lower, upper, size).ok_or_else(lost_bound)?;
                self.engine.read_keys(conn, &query.sql, &bound).await?
            }
        };
        drive.machine.ends_found(ends, ENDS_AT_ONCE as usize);
        Ok(())
    }

    /// Core's `Run`: the next batch of `size` rows, after the replicas and
    /// the budget allow it. `statements` keeps the rendered statement (from
    /// the start, after a key) for the batches after. False when the
    /// backfill is no longer this runner's.
    async fn run_batch(
        &self,
        conn: &mut E::Conn,
        drive: &mut Drive<'_>,
        target: &Target<'_>,
        statements: &mut [Option<backfill::sql::Rendered>; 2],
        size: u32,
    ) -> Result<bool, Stop> {
        let (lower, end) = drive.machine.range();
        let from_start = lower.is_none();
        // Integer keys written in (PostgreSQL), else the statement rendered
        // once and its values bound.
        let whole = match drive.spec.form {
            Form::Ranged { .. } if self.engine.sends_whole_batches() => {
                backfill::sql::batch_with_integers(target, &drive.statement, lower, end)
            }
            _ => None,
        };
        let bound;
        let text = match &whole {
            Some(whole) => BatchText::Whole(whole),
            None => {
                let batch = statements[usize::from(from_start)].get_or_insert_with(|| match drive.spec.form {
                    Form::Ranged { .. } => backfill::sql::batch(target, &drive.statement, from_start),
                    Form::Repeated => backfill::sql::repeated(E::DRIVER, &drive.statement),
                });
                bound = values(&batch.binds, lower, end, size).ok_or_else(lost_bound)?;
                BatchText::Bound(&batch.sql, &bound)
            }
        };
        if !self.wait_for_replicas(conn, drive).await? {
            return Ok(false);
        }
        if self.settings.backfill.share_due() {
            // Another process may have started or stopped running backfills.
            self.commit_open(conn, drive).await?;
            self.runners(conn).await?;
        }
        let wait = self.settings.backfill.reserve(u64::from(size));
        if wait > 0 {
            self.commit_open(conn, drive).await?;
            self.settings.backfill.wait(wait).await;
        }
        // A long wait for the budget: the claim stays fresh.
        if !self.keep_claim(conn, drive).await? {
            return Ok(false);
        }
        match self.batch(conn, drive, text).await? {
            Some(rows) => self.settings.backfill.refund(u64::from(size).saturating_sub(rows)),
            None => return Ok(false),
        }
        Ok(true)
    }

    /// The other runners holding backfills on this server now (core's
    /// `backfill::Runners`), read, kept and this process's share of the
    /// server's rate taken.
    async fn runners(&self, conn: &mut E::Conn) -> Result<Runners, DbError> {
        let fresh_after = now_ms() - self.settings.backfill.stale_ms();
        let holders = self.engine.books().backfill_runners(conn, fresh_after).await?;
        let runners = Runners::of(holders.iter().map(|(holder, claims)| (holder.as_str(), *claims)), self.holder);
        self.settings.backfill.saw(runners);
        Ok(runners)
    }

    /// Claims the backfill again when a third of the time a claim lasts has
    /// passed since this runner last wrote its heartbeat (a long wait for
    /// the budget or for the replicas), the batch left open committed
    /// first; whether it still holds it.
    async fn keep_claim(&self, conn: &mut E::Conn, drive: &mut Drive<'_>) -> Result<bool, DbError> {
        if !self.claim_due(drive) {
            return Ok(true);
        }
        self.commit_open(conn, drive).await?;
        if !self.claim(conn, drive.job).await? {
            return Ok(false);
        }
        drive.beat = Instant::now();
        Ok(true)
    }

    /// Waits while a replica of the server lags more than
    /// `backfill.maxReplicaLagSeconds` behind it (core's `LagWatch`: read
    /// at most once a second for every backfill on the server, by
    /// [`Engine::replica_lag`]),
    /// keeping the claim fresh meanwhile; whether this runner still holds
    /// the backfill. A lag the role may not read fails the backfill: it
    /// never runs unwatched.
    async fn wait_for_replicas(&self, conn: &mut E::Conn, drive: &mut Drive<'_>) -> Result<bool, Stop> {
        let pace = &self.settings.backfill;
        let Some(watch) = pace.lag_watch() else { return Ok(true) };
        let mut counted = false;
        loop {
            let mut watch = watch.lock().await;
            let now = pace.now_ms();
            match watch.step(now) {
                LagStep::Go => return Ok(true),
                LagStep::Measure => {
                    let lag = self.engine.replica_lag(conn).await?.map_err(Failure::statement)?;
                    watch.measured(lag, now);
                    if watch.lagging() && !counted {
                        tracing::info!(schema = %drive.row.schema, lag_ms = lag,
                            "a replica lags more than backfill.maxReplicaLagSeconds: backfills wait for it");
                    }
                }
                LagStep::Wait(ms) => {
                    drop(watch);
                    if !counted {
                        counted = true;
                        crate::telemetry::backfill_lag_paused();
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    if !self.keep_claim(conn, drive).await? {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// One batch in its own transaction with its checkpoint; a lock
    /// time-out rolls it back and runs it again after a wait, up to the
    /// file's retries. The rows it changed; None when the backfill is no
    /// longer this runner's (rolled back).
    async fn batch(&self, conn: &mut E::Conn, drive: &mut Drive<'_>, text: BatchText<'_>) -> Result<Option<u64>, Stop> {
        let mut attempts = lock_wait::Attempts::default();
        loop {
            let started = Instant::now();
            let ran = match text {
                BatchText::Whole(sql) => {
                    let open = drive.open.take();
                    let ran = self.engine.execute_whole_batch(conn, open.is_some(), drive.timeouts, sql).await;
                    // The commit went first: after a lock time-out (the
                    // batch's own) it happened; after another error, the
                    // books say whether.
                    if let Some(open) = open
                        && ran.as_ref().map_or_else(|failure| failure.cause == Cause::LockTimeout, |_| true)
                    {
                        open.committed();
                    }
                    ran
                }
                BatchText::Bound(sql, bound) => {
                    match drive.open.take() {
                        Some(open) => {
                            self.engine.commit_and_begin_with_timeouts(conn, drive.timeouts).await?;
                            open.committed();
                        }
                        None => self.engine.begin_with_timeouts(conn, drive.timeouts).await?,
                    }
                    self.engine.execute_bound(conn, sql, bound).await
                }
            };
            let failure = match ran {
                Ok(rows) => {
                    let before = drive.machine.stored().batches;
                    drive.machine.ran(rows, started.elapsed().as_millis() as u64);
                    if !self.save(conn, drive, before).await? {
                        let _ = self.engine.data_transaction(conn, Transaction::Rollback).await;
                        tracing::debug!(schema = %drive.row.schema, before, "backfill checkpoint lost its claim; batch rolled back");
                        return Ok(None);
                    }
                    drive.open = Some(OpenBatch { rows, started });
                    if drive.machine.stored().done {
                        // The last batch, with the file's row: committed now.
                        self.commit_open(conn, drive).await?;
                    }
                    return Ok(Some(rows));
                }
                Err(failure) => failure,
            };
            let _ = self.engine.data_transaction(conn, Transaction::Rollback).await;
            if failure.cause == Cause::LockTimeout {
                let seen = lock_wait::TimedOut { blocker_on_schema: true, others_committed: true };
                if let Some(retry) = attempts.after_time_out(drive.timeouts.retries, seen) {
                    crate::telemetry::lock_timed_out(true, false);
                    let wait = jittered_wait_ms(retry);
                    tracing::warn!(schema = %drive.row.schema, file = %drive.row.file, retry, wait_ms = wait,
                        "a backfill batch gave up waiting for a lock; rolled back, running it again after a wait");
                    tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
                    continue;
                }
                let blockers = self.engine.blockers(conn, &drive.row.schema).await;
                let message = lock_wait::blocked_message(
                    &failure.message,
                    drive.timeouts.lock_ms,
                    attempts.made.max(1),
                    &blockers,
                );
                return Err(Stop::Failed(Failure { message, ..failure }));
            }
            return Err(Stop::Failed(failure));
        }
    }

    /// Writes the machine's checkpoint in the open transaction — and, when
    /// it is the last, the file's row — if this runner still holds the
    /// backfill and `batches_before` is still its count; whether it did.
    async fn save(&self, conn: &mut E::Conn, drive: &mut Drive<'_>, batches_before: u64) -> Result<bool, DbError> {
        // Rounded up: a batch that changed rows in under a millisecond
        // (SQLite's first, small one) still gives the backfill a rate, and
        // its time left is known from its first batch on.
        drive.machine.spent(drive.counted.elapsed().as_micros().div_ceil(1000) as u64);
        drive.counted = Instant::now();
        let row = &mut drive.row;
        row.progress = drive.machine.stored().clone();
        row.state = if row.progress.done { BackfillState::Done } else { BackfillState::Running };
        row.updated = now();
        if !self.engine.books().save_backfill(conn, row, self.holder, batches_before, now_ms()).await? {
            return Ok(false);
        }
        drive.beat = Instant::now();
        if row.progress.done {
            let job = drive.job;
            let rows = [Record { migration: &job.migration, schema: &row.schema }];
            let created = now();
            self.engine.record(conn, &Entries { rows: &rows, created: &created, version_id: job.version_id }).await?;
        }
        Ok(true)
    }

    /// Marks `row`'s backfill failed with `failure` (outside any
    /// transaction): the batches before stay, and so does the checkpoint.
    async fn failed(
        &self,
        conn: &mut E::Conn,
        job: &BackfillJob,
        mut row: BackfillRow,
        failure: Failure,
    ) -> Result<Ended, DbError> {
        row.last_error = Some(failure.message.clone());
        row.updated = now();
        if self.quarantines && job.migration.migration_type.is_tenant() {
            // Put aside by the request that started the backfill, whichever
            // runner ran it: a rollout's wave run again after a kill knows
            // its own tenants by that request (core's
            // `Rollout::wave_runs_without`).
            let versions = self.engine.books().versions(conn, VersionFilter::Id(job.version_id)).await?;
            let request_id = versions.first().map_or(self.holder, |version| version.request_id.as_str());
            let quarantine = QuarantineRow::of_backfill(
                job,
                failure.cause.name(),
                failure.message.clone(),
                request_id,
                &row.updated,
            );
            self.engine.books().quarantine(conn, &quarantine).await?;
            crate::telemetry::tenant_quarantined();
        }
        self.engine.books().fail_backfill(conn, &row, self.holder).await?;
        tracing::warn!(schema = %row.schema, file = %row.file, error = %failure.message,
            "a backfill failed; its batches before stay, and running it again resumes after them");
        let mut failure = failure;
        if self.quarantines {
            // At once; when the books cannot be written now, again before
            // the next pass claims anything ([`run_running`]).
            let version = (job.started_version, job.row.file.clone(), job.failure_budget);
            match self.stop_past_budget(version.0, &version.1, version.2).await {
                Ok(Some(stopped)) => failure.message = format!("{}; {stopped}", failure.message),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, file = %job.row.file,
                        "the failure budget could not be judged yet; the runner's next pass does it");
                    self.unjudged.lock().unwrap_or_else(|e| e.into_inner()).insert(version);
                }
            }
        }
        Ok(Ended::Failed(failure))
    }

    /// When the failed backfills of `file` version `version_id` started (a
    /// retry's among them: it does not shrink the count) are more than
    /// its `budget` absorbs (core's `backfill::budget`), pauses the others
    /// still running — those in a pass stop at their next checkpoint — and
    /// says why. On a connection of its own (not a backfill's, with its
    /// file's lock time-out), each one moved by its key, as an operator's
    /// pause moves them.
    async fn stop_past_budget(
        &self,
        version_id: i64,
        file: &str,
        budget: Option<FailureBudget>,
    ) -> Result<Option<String>, DbError> {
        let Some(budget) = budget else { return Ok(None) };
        let books = self.engine.books();
        let mut conn = self.engine.connect().await?;
        let tally = budget::Tally::of(books.backfill_tally(&mut conn, version_id, file).await?);
        if !budget::stops(tally, Some(budget)) {
            return Ok(None);
        }
        let running = books.running_backfills_of(&mut conn, version_id, file).await?;
        let moved = books.move_backfills(&mut conn, &running, BackfillState::Paused, &now()).await?;
        let paused = moved.iter().filter(|moved| **moved).count();
        let stopped = budget::stopped(file, version_id, budget::Tally { running: paused, ..tally }, budget);
        tracing::warn!(file, version_id, paused, "{stopped}");
        Ok(Some(stopped))
    }
}

/// A batch as the shell sends it.
#[derive(Clone, Copy)]
enum BatchText<'s> {
    /// Its statement, the key values bound.
    Bound(&'s str, &'s [KeyValue]),
    /// Its statement whole (core's `backfill::sql::batch_with_integers`),
    /// in one message with its transaction's `begin`.
    Whole(&'s str),
}

/// Why a pass stopped before its end: a batch's failure, or the books'.
enum Stop {
    Failed(Failure),
    Books(DbError),
}

impl From<DbError> for Stop {
    fn from(error: DbError) -> Self {
        Stop::Books(error)
    }
}

impl From<Failure> for Stop {
    fn from(failure: Failure) -> Self {
        Stop::Failed(failure)
    }
}

/// Runs every running backfill of the database this `holder` can claim,
/// up to the pace's concurrency at once, each on a connection of its own
/// with its schema entered; looks again once they end (a version may have
/// started more), until a pass claims none. A tenant whose backfill fails
/// is quarantined. How each ended.
pub(crate) async fn run_running<E: Engine>(
    engine: &E,
    settings: &Settings,
    holder: &str,
) -> Result<Vec<Outcome>, DbError> {
    let backfiller = Backfiller { engine, settings, holder, quarantines: true, unjudged: Default::default() };
    let mut outcomes: Vec<Outcome> = Vec::new();
    loop {
        let mut conn = engine.connect().await?;
        let jobs = engine.books().running_backfills(&mut conn).await?;
        drop(conn);
        let ended: HashSet<(&str, &str)> = outcomes.iter().map(|o| (o.schema.as_str(), o.file.as_str())).collect();
        let fresh: Vec<BackfillJob> =
            jobs.into_iter().filter(|job| !ended.contains(&(job.row.schema.as_str(), job.row.file.as_str()))).collect();
        drop(ended);
        // A budget a failure could not judge is judged before any claim.
        let unjudged = std::mem::take(&mut *backfiller.unjudged.lock().unwrap_or_else(|e| e.into_inner()));
        for version in unjudged {
            if let Err(error) = backfiller.stop_past_budget(version.0, &version.1, version.2).await {
                tracing::warn!(%error, file = %version.1, "the failure budget could not be judged yet");
                backfiller.unjudged.lock().unwrap_or_else(|e| e.into_inner()).insert(version);
            }
        }
        let runs: Vec<_> = fresh.iter().map(|job| backfiller.run_one(job)).collect();
        let runs =
            futures::stream::iter(runs).buffer_unordered(settings.backfill.concurrency()).collect::<Vec<_>>().await;
        let mut claimed = false;
        for run in runs {
            if let Some(outcome) = run? {
                claimed = true;
                outcomes.push(outcome);
            }
        }
        if !claimed {
            return Ok(outcomes);
        }
    }
}

impl<E: Engine> Backfiller<'_, E> {
    /// Claims and drives one job on a connection of its own; None when
    /// another runner holds it. A failure quarantines its tenant.
    async fn run_one(&self, job: &BackfillJob) -> Result<Option<Outcome>, DbError> {
        let pace = &self.settings.backfill;
        // Without a place as last seen, no claim is tried (nor its lock taken).
        if pace.runners_seen().is_some_and(|runners| !pace.room(runners)) {
            return Ok(None);
        }
        let mut conn = self.engine.connect().await?;
        // The server's concurrency holds over every process running
        // backfills on it, read and claimed in turn with the others' claims;
        // each process takes its share of the server's rate.
        let claim = self.claim_now(job);
        let mut held = None;
        let mut room = |holders: &[(String, usize)]| {
            let runners = Runners::of(holders.iter().map(|(holder, claims)| (holder.as_str(), *claims)), self.holder);
            pace.saw(runners);
            held = pace.try_hold(runners);
            held.is_some()
        };
        let fresh_after = claim.now_ms - pace.stale_ms();
        if !self.engine.books().claim_backfill_in_turn(&mut conn, &claim, fresh_after, &mut room).await? {
            return Ok(None);
        }
        let _held = held;
        let schema = job.row.schema.clone();
        self.engine.prepare(&mut conn, &[]).await?;
        self.engine.enter(&mut conn, &schema).await?;
        let ended = self.drive(&mut conn, job).await;
        if ended.is_err() {
            // A failure between a batch's `begin` (sent in its text) and its
            // commit leaves that transaction open, aborted on PostgreSQL:
            // back in the pool so, the connection failed whoever took it
            // next (the audit log, the rollouts' driver: `current
            // transaction is aborted`). Rolled back first, best effort.
            let _ = self.engine.data_transaction(&mut conn, Transaction::Rollback).await;
        }
        self.engine.leave(&mut conn, &schema).await;
        let ended = ended?;
        tracing::debug!(schema = %schema, file = %job.migration.file, ?ended, "backfill pass ended");
        self.engine.release(&mut conn, false).await;
        Ok(Some(Outcome { schema, file: job.migration.file.clone(), ended }))
    }
}
