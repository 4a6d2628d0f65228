//! The migration loop, written once: lock, read the recorded state, plan
//! (core), check the files (core), run the plan segment by segment, record,
//! commit, summarise — over the per-dialect primitives of [`Engine`]. The
//! drivers implement primitives only.
//!
//! # Invariants
//!
//! - **The lock is held for the whole version.** Taken before the recorded
//!   state is read, released after the last commit: PostgreSQL and
//!   MySQL/MariaDB a lease row renewed in the background (it expires when
//!   its holder dies; a holder that lost it stops before its next unit,
//!   [`Engine::lock_held`]); SQL Server `sp_getapplock` with a session
//!   owner, SQLite a write transaction on a lock file, each on a dedicated
//!   connection the database releases when the process dies.
//! - **Recorded = applied, per schema, at every instant.** With
//!   `transactionScope: schema` (the default) each unit — one schema's steps
//!   of a segment, see [`strata_core::migrate::plan::Plan::segments`] — runs in one
//!   transaction together with its bookkeeping rows. A version's lock needs
//!   no longer grow with the fleet: a transaction holds one schema's locks.
//!   With `transactionScope: version` the whole version is one transaction
//!   (all or nothing; its lock needs grow with the fleet).
//! - **Plan order.** A segment starts once the previous one has committed
//!   everywhere; the units of a single-schema segment run one after another;
//!   the units of a tenant segment (one per tenant) run on up to
//!   `tenantConcurrency` connections at once.
//! - **Lock waits are bounded.** Every file runs with a lock time-out (and
//!   optionally a statement time-out), per transaction where it runs in one
//!   (so a pooler never carries it to another client); a unit that hit the
//!   lock time-out rolls back and runs again after a growing, jittered wait
//!   (core's `lock_wait`), up to its retries; what committed before (a
//!   no-transaction file, a commit after `ALTER TYPE … ADD VALUE`) is not
//!   run again. A statement that runs outside a transaction is retried
//!   alone. When a unit gives up, its error names the sessions that block
//!   it.
//! - **A failure stops the version** — unless the failure budget absorbs
//!   it. The failing unit rolls back, units already running finish, no new
//!   one starts; what committed stays applied and recorded in the version,
//!   and the error names the file, the schema, the position in the file, and
//!   the schemas committed and not. A tenant's own failure within the budget
//!   (core's `quarantine`) is written to the quarantine before anything else
//!   runs and the version goes on without that tenant: none of its later
//!   units run, later versions skip it until a retry completes it.
//! - **Non-transactional files** (`-- strata:no-transaction`) run alone,
//!   outside any transaction, between the transactions of their unit, and
//!   are recorded right after they succeed; they run statement by statement
//!   (several statements in one message would make PostgreSQL wrap them in
//!   one implicit transaction). A failed one may be partly applied: the
//!   error says so, and nothing of it is recorded.
//! - **A version row never stands empty.** It is written in the first
//!   transaction that commits something of the version (a step, or the new
//!   tenant), never before.
//! - **Engines without transactional DDL** (MySQL/MariaDB) run every step in
//!   its own implicit commit and record it right after; a dry run executes
//!   nothing there.
//! - **A unit in one round trip where the engine allows**
//!   ([`Engine::ONE_MESSAGE`]: PostgreSQL's simple query protocol; SQLite,
//!   one call to its connection's thread instead of one per statement).
//!   Once the version's row has committed, a unit whose files all run in its
//!   transaction is sent as one text: `begin`, the time-outs, each file
//!   (closed by a new line and a `;`), the unit's rows with their values
//!   written in (core's `quote_string_postgres`, `quote_string_sqlite`),
//!   `commit`. The engine stops at the first statement that fails and the
//!   executor rolls back, so the unit is still all or nothing; the failure's
//!   offset is counted back into the file it falls in. Where the engine
//!   gives no offset (SQLite), the rolled-back unit runs again file by file
//!   and that run's failure is the one reported. Files the tokenizer cannot
//!   read whole, and units with a non-transactional file or a commit
//!   directive, run file by file.
//! - **One plan is made at a time in a process** ([`PLANNING`]): making it
//!   holds every recorded row of its database, so the shards of a fleet
//!   plan one after another (then run at once) and the memory a version
//!   needs does not grow with the number of shards.

mod fingerprints;
mod progress;
pub(crate) mod reading;
pub(crate) mod settings;

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use strata_core::migrate::config::TransactionScope;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::lock_wait::{self, Timeouts};
use strata_core::migrate::plan::{Direction, Plan, StepSet, Unit, part_to_run};
use strata_core::migrate::run::schedule::{Next, OnFailure, Schedule};
use strata_core::migrate::run::transactions::{self, Piece, Split, StepMode};
use strata_core::migrate::run::{Absorption, ByOutcome, RunKind, by_outcome};
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::statements::{self, FileMode, Position};

use crate::db::books::Books;
use crate::db::engine::{self, Engine, Entries, Failure, Record};
use crate::db::error::{Cause, DbError, MigrationFailure};
use crate::db::executor::fingerprints::{committed_schemas, recorded_after, store_fingerprints};
use crate::db::executor::progress::Progress;
use crate::db::executor::reading::{PLANNING, plan_read, readable, select_tenants};
use crate::db::executor::settings::Settings;
use crate::db::types::{MutationOutcome, MutationRequest, QuarantineRow, VersionRow};

/// Runs one mutation: the whole loop.
pub(crate) async fn mutate<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: MutationRequest<'_>,
) -> Result<MutationOutcome, DbError> {
    let _gate = settings.gate.lock().await;
    let lock = engine.lock().await?;
    let result = locked(engine, settings, &request, &lock).await;
    engine.unlock(lock).await;
    result
}

async fn locked<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: &MutationRequest<'_>,
    lock: &E::Lock,
) -> Result<MutationOutcome, DbError> {
    let mut main = engine.connect().await?;
    let planning = PLANNING.acquire().await;
    let tenants = engine.books().tenants(&mut main).await?;
    let mut selection = select_tenants(engine, &mut main, request, tenants).await?;
    let (plan, modes) = plan_read(engine, &mut main, true, settings, request, &selection.run).await?;
    drop(planning);
    if request.retried().is_none() {
        // Only a retry looks at its tenants again (to release them); the
        // plan holds the names every other version runs in.
        selection.run = Vec::new();
    }
    let mut outcome = MutationOutcome {
        plan,
        version: None,
        quarantined: Vec::new(),
        skipped: selection.skipped,
        released: Vec::new(),
        committed_counts: None,
    };
    if outcome.plan.is_empty() || (request.dry_run && !E::TRANSACTIONAL_DDL) {
        if request.retried().is_some() && !request.dry_run {
            // Nothing left to run in them (fixed and synced by hand, say).
            engine.books().release_quarantined(&mut main, &selection.run).await?;
            outcome.released = selection.run;
        }
        return Ok(outcome);
    }
    let plan = &outcome.plan;
    if let Some(observer) = request.observer {
        observer.started(plan, request.sources);
    }
    let run = Run::new(engine, settings, request, plan, &modes, lock);
    let mut conns = vec![main];
    let result = run.version(&mut conns).await;
    run.wind_down(&mut conns, &result).await;
    let absorbed = run.absorbed.into_inner().unwrap_or_else(|e| e.into_inner());
    let version = result?;
    if !absorbed.is_empty() {
        let committed = run.committed.into_inner().unwrap_or_else(|e| e.into_inner());
        outcome.committed_counts = Some(plan.counts_of(request.sources, committed.iter()));
    }
    if request.retried().is_some() {
        let released: Vec<String> =
            selection.run.into_iter().filter(|tenant| !absorbed.iter().any(|row| row.tenant == *tenant)).collect();
        engine.books().release_quarantined(&mut conns[0], &released).await?;
        outcome.released = released;
    }
    outcome.version = version;
    outcome.quarantined = absorbed;
    Ok(outcome)
}

/// How often a step's record that lost a conflict is written again.
const RECORD_CONFLICT_RETRIES: u32 = 3;

/// What follows each file in a unit sent as one message: a new line ends a
/// last line comment, the semicolon a last statement without one.
const SEPARATOR: &str = "\n;\n";

struct Run<'a, E: Engine> {
    engine: &'a E,
    lock: &'a E::Lock,
    settings: &'a Settings,
    request: &'a MutationRequest<'a>,
    plan: &'a Plan,
    modes: &'a [FileMode],
    /// Which tenant failures the version absorbs (core's `run`).
    absorption: Absorption,
    /// Tenant failures the version absorbed (each tenant quarantined).
    absorbed: Mutex<Vec<QuarantineRow>>,
    /// The steps committed, once the version is over.
    committed: Mutex<StepSet>,
    /// Per source: the tokenizer reads the text the plan runs of it whole
    /// (it may share a message with other files).
    readable: Vec<bool>,
}

/// Why a unit did not commit.
enum UnitError {
    /// A migration failed (after `attempts` attempts).
    Migration { step: u32, failure: Failure, partly: bool, attempts: u32 },
    /// Anything else (bookkeeping, connection).
    Other(DbError),
}

impl From<DbError> for UnitError {
    fn from(error: DbError) -> Self {
        UnitError::Other(error)
    }
}

impl<'a, E: Engine> Run<'a, E> {
    /// The run of `plan` for `request`, under `lock`.
    fn new(
        engine: &'a E,
        settings: &'a Settings,
        request: &'a MutationRequest<'a>,
        plan: &'a Plan,
        modes: &'a [FileMode],
        lock: &'a E::Lock,
    ) -> Self {
        Run {
            engine,
            settings,
            request,
            plan,
            modes,
            lock,
            absorption: Absorption::new(RunKind {
                budget: request.failure_budget,
                retrying: request.retried().is_some(),
                new_tenant: plan.new_tenant.is_some(),
                dry_run: request.dry_run,
                tenants: plan.counts.tenants as usize,
            }),
            absorbed: Mutex::new(Vec::new()),
            committed: Mutex::new(StepSet::default()),
            readable: readable(E::DRIVER, engine.one_message(), request.sources, plan),
        }
    }

    /// Runs the version over `conns` (the first one open): in one
    /// transaction (a dry run, `transactionScope: version`), which needs
    /// every schema at once, or per schema, with the single schemas
    /// prepared and each tenant's schema entered for its unit only.
    async fn version(&self, conns: &mut Vec<E::Conn>) -> Result<Option<VersionRow>, DbError> {
        let whole = self.request.dry_run || self.settings.scope == TransactionScope::Version;
        let prepared = if whole { self.plan.schemas.clone() } else { self.single_schemas() };
        self.engine.prepare(&mut conns[0], &prepared).await?;
        if whole { self.whole_version(&mut conns[0]).await } else { self.per_schema(conns).await }
    }

    /// After the version, whatever it did: the schemas released (discarded
    /// when nothing of the version stays), the engine's deferred rows
    /// settled, the fingerprints of what committed stored.
    async fn wind_down(&self, conns: &mut [E::Conn], result: &Result<Option<VersionRow>, DbError>) {
        let discard = match result {
            Ok(version) => version.is_none(),
            Err(DbError::MigrationFailed(failure)) => failure.version_id.is_none(),
            Err(_) => true,
        };
        for conn in conns.iter_mut() {
            self.engine.release(conn, discard).await;
        }
        if let Err(error) = self.engine.settle(&mut conns[0]).await {
            tracing::error!(%error, "the version's recorded rows could not be completed; the next mutation completes them");
        }
        if !self.settings.record_fingerprints || self.request.dry_run {
            return;
        }
        if let Some((version_id, schemas)) = committed_schemas(self.plan, result) {
            let known = {
                let committed = self.committed.lock().unwrap_or_else(|e| e.into_inner());
                recorded_after(self.plan, self.request.sources, &committed)
            };
            store_fingerprints(self.engine, conns, schemas, version_id, known).await;
        }
    }

    /// Notes steps as committed, and tells the observer, schema by schema.
    fn committed(&self, progress: &Progress, steps: &[u32]) {
        progress.committed(steps);
        self.notify_committed(steps);
    }

    fn notify_committed(&self, steps: &[u32]) {
        let Some(observer) = self.request.observer else { return };
        for run in steps.chunk_by(|a, b| self.plan.steps.at(*a).schema == self.plan.steps.at(*b).schema) {
            observer.committed(self.schema(run[0]), run.len());
        }
    }

    /// The plan's schemas that are not tenants (the single schemas its
    /// steps run in), which a tenant's migrations may refer to.
    fn single_schemas(&self) -> Vec<String> {
        let mut single = vec![false; self.plan.schemas.len()];
        for step in &self.plan.steps {
            if !self.request.sources[step.migration as usize].migration_type.is_tenant() {
                single[step.schema as usize] = true;
            }
        }
        self.plan.schemas.iter().zip(single).filter(|(_, s)| *s).map(|(name, _)| name.clone()).collect()
    }

    fn migration(&self, step: u32) -> &SourceMigration {
        &self.request.sources[self.plan.steps.at(step).migration as usize]
    }

    fn schema(&self, step: u32) -> &str {
        self.plan.schema_of(self.plan.steps.at(step))
    }

    /// The text a step runs (the forward part, or the down part of a
    /// revert), with the file's own positions.
    fn text(&self, step: u32) -> &str {
        part_to_run(self.migration(step), self.plan.direction).0
    }

    /// The file a step's text comes from.
    fn file(&self, step: u32) -> &str {
        part_to_run(self.migration(step), self.plan.direction).2
    }

    fn mode(&self, step: u32) -> &FileMode {
        &self.modes[self.plan.steps.at(step).migration as usize]
    }

    fn runs_outside_transaction(&self, step: u32) -> bool {
        self.plan.steps.at(step).execute && self.mode(step).no_transaction
    }

    /// The step's file asks for a commit right after it (and runs in a
    /// transaction).
    fn commits_after(&self, step: u32) -> bool {
        self.plan.steps.at(step).execute && self.mode(step).commit_after && !self.request.dry_run
    }

    /// What Citus keeps where around the step's file (core's
    /// `migrate::citus`); nothing on another database.
    fn citus_placement(&self, step: u32) -> strata_core::migrate::citus::FilePlacement {
        if !self.engine.citus() {
            return Default::default();
        }
        let migration = self.migration(step);
        strata_core::migrate::citus::placement(
            &self.settings.citus_reference_tables,
            migration.migration_type,
            &migration.source_dir,
        )
    }

    /// The time-outs the step's file runs with.
    fn timeouts(&self, step: u32) -> Timeouts {
        self.settings.timeouts.for_file(self.mode(step))
    }

    /// Runs a step's file. Inside the unit's transaction: whole, with the
    /// file's time-outs for that transaction (set again only when they
    /// change: `current`). Outside one (the directive, or an engine without
    /// transactional DDL): statement by statement with the session's
    /// time-outs (set again only when they change where the engine keeps
    /// them, [`Engine::SESSION_TIMEOUTS_KEPT`]; else set and reset around
    /// the file), a statement that hit the lock time-out retried alone.
    async fn execute(
        &self,
        conn: &mut E::Conn,
        step: u32,
        current: &mut Option<Timeouts>,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        if !self.plan.steps.at(step).execute {
            return Ok(());
        }
        if let Some(observer) = self.request.observer {
            observer.running(self.schema(step), self.file(step));
        }
        let sql = self.text(step).replace(&self.settings.placeholder, self.schema(step));
        let timeouts = self.timeouts(step);
        let partly = self.runs_outside_transaction(step) || !E::TRANSACTIONAL_DDL;
        if !partly {
            if *current != Some(timeouts) {
                self.engine.set_timeouts(conn, timeouts, true).await?;
                *current = Some(timeouts);
            }
            let placement = self.citus_placement(step);
            if placement.on_coordinator {
                self.engine.citus_before_file(conn, placement).await?;
            }
            self.engine.execute(conn, &sql).await.map_err(|failure| UnitError::Migration {
                step,
                failure,
                partly,
                attempts: 1,
            })?;
            if placement.reference_tables {
                self.engine.citus_after_file(conn, self.schema(step), placement).await?;
            }
            return Ok(());
        }
        if !E::SESSION_TIMEOUTS_KEPT {
            self.engine.set_timeouts(conn, timeouts, false).await?;
            let result = self.execute_alone(conn, step, &sql, timeouts, progress).await;
            self.engine.reset_timeouts(conn).await;
            return result;
        }
        if *current != Some(timeouts) {
            // Forgotten first: a failed setting leaves the session unknown.
            *current = None;
            self.engine.set_timeouts(conn, timeouts, false).await?;
            *current = Some(timeouts);
        }
        self.execute_alone(conn, step, &sql, timeouts, progress).await
    }

    /// A file outside any transaction, statement by statement (SQL Server:
    /// whole, its engine cuts `GO` batches).
    async fn execute_alone(
        &self,
        conn: &mut E::Conn,
        step: u32,
        sql: &str,
        timeouts: Timeouts,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        let statements = match E::DRIVER {
            Driver::SqlServer => std::iter::once(0..sql.len()).collect(),
            driver => engine::statements_of(driver, sql),
        };
        for range in statements {
            let mut attempts = lock_wait::Attempts::default();
            let mut mark = progress.mark(&[]);
            loop {
                let Err(mut failure) = self.engine.execute(conn, &sql[range.clone()]).await else { break };
                if failure.cause == Cause::LockTimeout {
                    let seen = self.timed_out(conn, step, progress, &mut mark, &[]).await;
                    let retry = attempts.after_time_out(timeouts.retries, seen);
                    crate::telemetry::lock_timed_out(retry.is_some(), !seen.counts());
                    if let Some(retry) = retry {
                        self.wait_before_retry(step, retry, seen).await;
                        continue;
                    }
                }
                let attempts = attempts.made;
                let before = sql[..range.start].chars().count();
                failure.offset = failure.offset.map(|offset| offset + before);
                if failure.offset.is_none() && failure.line.is_none() {
                    failure.offset = Some(before + 1);
                }
                return Err(UnitError::Migration { step, failure, partly: true, attempts });
            }
        }
        Ok(())
    }

    /// Sleeps before retry `retry` (from 1) of `step`, jittered; a wait
    /// behind the version's own units is logged at debug level (a fleet
    /// queueing on a shared table makes many).
    async fn wait_before_retry(&self, step: u32, retry: u32, seen: lock_wait::TimedOut) {
        let jitter = (uuid::Uuid::new_v4().as_u128() >> 64) as f64 / u64::MAX as f64;
        let wait = lock_wait::wait_before_retry_ms(retry, jitter);
        if seen.counts() {
            tracing::warn!(
                file = %self.file(step),
                schema = %self.schema(step),
                retry,
                wait_ms = wait,
                "a migration statement gave up waiting for a lock; rolled back, running it again after a wait"
            );
        } else {
            tracing::debug!(
                file = %self.file(step),
                schema = %self.schema(step),
                wait_ms = wait,
                "a migration statement gave up waiting for a lock while the version's other units committed; \
                 running it again after a wait, without using up a retry"
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    }

    async fn record(&self, conn: &mut E::Conn, steps: &[u32], version_id: i64) -> Result<(), DbError> {
        let rows: Vec<Record<'_>> =
            steps.iter().map(|&s| Record { migration: self.migration(s), schema: self.schema(s) }).collect();
        match self.plan.direction {
            Direction::Forward => {
                let entries = Entries { rows: &rows, created: self.request.created, version_id };
                self.engine.record(conn, &entries).await
            }
            Direction::Revert => self.engine.books().forget(conn, &rows).await,
        }
    }

    /// Records one step that ran outside a transaction, in a transaction
    /// of its own (statements with bound values never run outside one: a
    /// pooler in transaction mode may send them to another server), with
    /// the version's row when none has committed yet.
    ///
    /// A record that lost a conflict with another session (a deadlock, say
    /// against a transaction a killed process left running) is written
    /// again, up to [`RECORD_CONFLICT_RETRIES`] times: the step ran, and
    /// only its row is missing.
    async fn record_alone(&self, conn: &mut E::Conn, step: u32, progress: &Progress) -> Result<(), DbError> {
        let mut attempt = 0;
        loop {
            self.engine.begin(conn).await?;
            let recorded = async {
                let version_id = self.version_id(conn, progress).await?;
                if !E::TRANSACTIONAL_DDL {
                    // Committed on its own already: a retry must not write it again.
                    progress.set_version(version_id);
                }
                self.record(conn, &[step], version_id).await?;
                Ok::<_, DbError>(version_id)
            }
            .await;
            match recorded {
                Ok(version_id) => {
                    self.engine.commit(conn).await?;
                    progress.set_version(version_id);
                    self.committed(progress, &[step]);
                    return Ok(());
                }
                Err(error) => {
                    let _ = self.engine.rollback(conn).await;
                    if !error.is_conflict() || attempt == RECORD_CONFLICT_RETRIES {
                        return Err(error);
                    }
                    attempt += 1;
                    tracing::warn!(attempt, %error, file = %self.file(step), "recording a step lost a conflict with another session; writing its row again");
                    tokio::time::sleep(std::time::Duration::from_millis(100 << attempt)).await;
                }
            }
        }
    }

    fn version_row(&self, id: i64) -> VersionRow {
        VersionRow {
            id,
            name: self.request.version_name.to_string(),
            created: self.request.created.to_string(),
            request_id: self.request.request_id.to_string(),
            parts: Vec::new(),
        }
    }

    /// The whole version in one transaction on one connection (dry runs,
    /// and `transactionScope: version`). A dry run skips non-transactional
    /// files (they cannot run in a transaction) and rolls everything back;
    /// otherwise the version's transaction commits before such a file (and
    /// after a file that asks for a commit) and goes on after it. A lock
    /// time-out is not retried here: the unit would be the whole version.
    async fn whole_version(&self, conn: &mut E::Conn) -> Result<Option<VersionRow>, DbError> {
        let progress = Progress::default();
        let steps = 0..self.plan.steps.len() as u32;
        let result = self.in_pieces(conn, steps, self.plan.new_tenant.as_deref(), &progress).await;
        match result {
            Ok(Some(dry_run)) => {
                self.engine.rollback(conn).await?;
                self.notify_committed(&dry_run);
                Ok(None)
            }
            Ok(None) => {
                let version = progress.version().map(|id| self.version_row(id));
                *self.committed.lock().unwrap_or_else(|e| e.into_inner()) = progress.into_committed();
                Ok(version)
            }
            Err(error) => {
                let _ = self.engine.rollback(conn).await;
                let version_id = progress.version();
                let whole = !progress.tenant_created.load(Ordering::SeqCst);
                let committed = progress.into_committed();
                let failure = self.failure(error, version_id, &committed, whole && committed.is_empty());
                *self.committed.lock().unwrap_or_else(|e| e.into_inner()) = committed;
                Err(failure)
            }
        }
    }

    /// Per-schema transactions, in the order core's `run::schedule` hands
    /// the units out: segment after segment, one unit at a time until the
    /// version's row has committed (so a version never exists without what
    /// it applied — not even after a crash), then a tenant segment's units
    /// over up to `concurrency` connections. A failure the failure budget
    /// does not absorb starts no new unit; running ones end.
    async fn per_schema(&self, conns: &mut Vec<E::Conn>) -> Result<Option<VersionRow>, DbError> {
        let mut schedule = Schedule::new(self.plan, self.request.sources, self.absorption, self.settings.concurrency);
        let mut progress = Progress::default();
        *progress.steps.get_mut().unwrap_or_else(|e| e.into_inner()) = StepSet::with_steps(self.plan.steps.len());
        let mut failed: Option<UnitError> = None;
        let mut running = futures::stream::FuturesUnordered::new();
        let progress_ref = &progress;
        loop {
            match schedule.next(progress_ref.version().is_some()) {
                Next::Start(unit) => {
                    let mut conn = match conns.pop() {
                        Some(conn) => conn,
                        None => match self.connection().await {
                            Ok(conn) => conn,
                            Err(error) => {
                                schedule.stop();
                                failed.get_or_insert(UnitError::Other(error));
                                continue;
                            }
                        },
                    };
                    running.push(async move {
                        let result = self.unit(&mut conn, &unit, progress_ref).await;
                        (conn, unit, result)
                    });
                }
                Next::Wait => {
                    let Some((mut conn, unit, result)) = running.next().await else { break };
                    self.unit_ended(&mut schedule, &mut conn, &unit, result, progress_ref, &mut failed).await;
                    conns.push(conn);
                }
                Next::Done => break,
            }
        }
        drop(running);
        let version_id = progress.version();
        let committed = progress.into_committed();
        let result = match failed {
            None => Ok(version_id.map(|id| self.version_row(id))),
            Some(error) => Err(self.failure(error, version_id, &committed, false)),
        };
        *self.committed.lock().unwrap_or_else(|e| e.into_inner()) = committed;
        result
    }

    /// One more connection for the version's units, its single schemas
    /// made usable.
    async fn connection(&self) -> Result<E::Conn, DbError> {
        let mut conn = self.engine.connect().await?;
        self.engine.prepare(&mut conn, &self.single_schemas()).await?;
        Ok(conn)
    }

    /// Tells the schedule how a unit ended. A failure it puts aside (a
    /// tenant's own, within the failure budget) is written to the
    /// quarantine at once, on `conn`; the first failure that stops the
    /// version is kept in `failed`, to report.
    async fn unit_ended(
        &self,
        schedule: &mut Schedule<'_>,
        conn: &mut E::Conn,
        unit: &Unit,
        result: Result<(), UnitError>,
        progress: &Progress,
        failed: &mut Option<UnitError>,
    ) {
        let error = match result {
            Ok(()) => return schedule.committed(),
            Err(error) => error,
        };
        let cause = match &error {
            UnitError::Migration { failure, .. } => Some(failure.cause),
            UnitError::Other(_) => None,
        };
        if schedule.failed(cause) == OnFailure::Stops {
            failed.get_or_insert(error);
            return;
        }
        let UnitError::Migration { step, failure, .. } = &error else { return };
        let row = self.quarantine_row(*step, failure, progress);
        let written = match self.engine.books().quarantine(conn, &row).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(tenant = %row.tenant, error = %e, "the tenant could not be quarantined: the version stops");
                false
            }
        };
        if written {
            tracing::warn!(tenant = %row.tenant, file = %row.file, cause = %row.cause, message = %row.message,
                "tenant failed and was quarantined: later versions skip it until it is retried or released");
            crate::telemetry::tenant_quarantined();
            self.absorbed.lock().unwrap_or_else(|e| e.into_inner()).push(row);
        }
        if !schedule.put_aside(unit.schema, written) {
            failed.get_or_insert(error);
        }
    }

    /// The quarantine row of a tenant whose `step` failed.
    fn quarantine_row(&self, step: u32, failure: &Failure, progress: &Progress) -> QuarantineRow {
        let at = self.position(step, failure);
        QuarantineRow {
            version_id: progress.version(),
            file: self.file(step).to_string(),
            line: at.map(|at| at.line as i64),
            column: at.filter(|at| at.column > 0).map(|at| at.column as i64),
            ..QuarantineRow::put_aside(
                self.schema(step).to_string(),
                failure.cause.name(),
                failure.message.clone(),
                self.request.request_id,
                self.request.created,
            )
        }
    }

    /// Where in its file a step failed: lines are the same in the file and
    /// the executed text (the placeholder and a schema name hold no line
    /// break); a column is only known from an offset (column 0: the line
    /// alone).
    fn position(&self, step: u32, failure: &Failure) -> Option<Position> {
        let schema = self.schema(step);
        failure
            .offset
            .and_then(|offset| statements::locate(self.text(step), &self.settings.placeholder, schema, offset))
            .or(failure.line.map(|line| Position { line, column: 0 }))
    }

    /// The version's id, writing its row on `conn` (in the transaction open
    /// there, if any) when no committed transaction has yet.
    async fn version_id(&self, conn: &mut E::Conn, progress: &Progress) -> Result<i64, DbError> {
        if let Some(id) = progress.version() {
            return Ok(id);
        }
        let request = self.request;
        self.engine.books().insert_version(conn, request.version_name, request.created, request.request_id).await
    }

    /// One unit: its steps in one transaction with their rows, split around
    /// non-transactional files and after files that ask for a commit; the
    /// new tenant is created in the first transaction of its unit. Engines
    /// without transactional DDL record each step right after it ran. What
    /// commits goes to `progress`. A unit that hit the lock time-out runs
    /// again after a wait (what committed is not run again), up to the
    /// failing file's retries; when it gives up, its error names the
    /// sessions that block it.
    async fn unit(&self, conn: &mut E::Conn, unit: &Unit, progress: &Progress) -> Result<(), UnitError> {
        let mut attempts = lock_wait::Attempts::default();
        let mut mark = progress.mark(&unit.steps);
        loop {
            if !self.engine.lock_held(self.lock) {
                return Err(self.placed(UnitError::Other(DbError::LockLost), unit, progress));
            }
            let schema = match self.plan.new_tenant.as_deref() {
                Some(tenant) if unit.steps.is_empty() => tenant.to_string(),
                _ => self.plan.schemas[unit.schema as usize].clone(),
            };
            self.engine.enter(conn, &schema).await?;
            let result = self.unit_entered(conn, unit, progress, attempts.made > 1).await;
            self.engine.leave(conn, &schema).await;
            match result {
                Err(UnitError::Migration { step, mut failure, partly: false, .. })
                    if failure.cause == Cause::LockTimeout =>
                {
                    let seen = self.timed_out(conn, step, progress, &mut mark, &unit.steps).await;
                    let Some(retry) = attempts.after_time_out(self.timeouts(step).retries, seen) else {
                        crate::telemetry::lock_timed_out(false, false);
                        failure.message = self.blocked(conn, step, failure.message, attempts.made).await;
                        return Err(UnitError::Migration { step, failure, partly: false, attempts: attempts.made });
                    };
                    crate::telemetry::lock_timed_out(true, !seen.counts());
                    self.wait_before_retry(step, retry, seen).await;
                }
                Err(UnitError::Migration { step, mut failure, partly: true, attempts })
                    if failure.cause == Cause::LockTimeout =>
                {
                    failure.message = self.blocked(conn, step, failure.message, attempts).await;
                    return Err(UnitError::Migration { step, failure, partly: true, attempts });
                }
                other => return other.map_err(|error| self.placed(error, unit, progress)),
            }
        }
    }

    /// What a lock time-out of `step` in a unit of `steps` saw (core's
    /// `lock_wait::TimedOut`): whether the version moved on since `mark`
    /// (moved to now), and only then — a time-out is counted anyway
    /// otherwise — whether a session holds a lock on the schema's objects.
    async fn timed_out(
        &self,
        conn: &mut E::Conn,
        step: u32,
        progress: &Progress,
        mark: &mut (u64, u64),
        steps: &[u32],
    ) -> lock_wait::TimedOut {
        let others_committed = progress.others_committed_since(mark, steps);
        let blocker_on_schema = others_committed && !self.engine.blockers(conn, self.schema(step)).await.is_empty();
        lock_wait::TimedOut { blocker_on_schema, others_committed }
    }

    /// A lock time-out's message, with how long it waited and the sessions
    /// that block it (read while they still do).
    async fn blocked(&self, conn: &mut E::Conn, step: u32, message: String, attempts: u32) -> String {
        let blockers = self.engine.blockers(conn, self.schema(step)).await;
        lock_wait::blocked_message(&message, self.timeouts(step).lock_ms, attempts, &blockers)
    }

    /// A failure of the database under a unit (the connection lost, the
    /// server read-only, the pool exhausted, the lease lost) outside its
    /// migrations' statements, placed at the unit's first step not
    /// committed: reported like a failed migration, with what committed
    /// and what did not.
    fn placed(&self, error: UnitError, unit: &Unit, progress: &Progress) -> UnitError {
        let cause = match &error {
            UnitError::Other(DbError::ConnectionLost(_)) => Cause::ConnectionLost,
            UnitError::Other(DbError::ReadOnlyServer(_)) => Cause::ReadOnly,
            UnitError::Other(DbError::PoolExhausted(_)) => Cause::PoolExhausted,
            UnitError::Other(DbError::LockLost) => Cause::LockLost,
            _ => return error,
        };
        let Some(&step) = unit.steps.iter().find(|&&step| !progress.has_committed(step)) else { return error };
        let UnitError::Other(inner) = error else { return error };
        let message = match inner {
            DbError::ConnectionLost(message) | DbError::ReadOnlyServer(message) | DbError::PoolExhausted(message) => {
                message
            }
            other => other.to_string(),
        };
        let failure = Failure { message, offset: None, line: None, cause };
        UnitError::Migration { step, failure, partly: false, attempts: 1 }
    }

    /// [`Run::unit`] once its schema is usable on `conn`; `resume`: a retry,
    /// which skips what committed before.
    async fn unit_entered(
        &self,
        conn: &mut E::Conn,
        unit: &Unit,
        progress: &Progress,
        resume: bool,
    ) -> Result<(), UnitError> {
        let steps: Vec<u32> = if resume {
            unit.steps.iter().copied().filter(|&step| !progress.has_committed(step)).collect()
        } else {
            unit.steps.clone()
        };
        let tenant = self
            .plan
            .new_tenant
            .as_deref()
            .filter(|tenant| unit.steps.is_empty() || self.plan.schemas[unit.schema as usize] == *tenant)
            .filter(|_| !progress.tenant_created.load(Ordering::SeqCst));
        if let Some(version_id) = self.one_message_version(&steps, tenant, progress) {
            return self.one_message(conn, &steps, version_id, progress).await;
        }
        let result = self.in_pieces(conn, steps, tenant, progress).await.map(drop);
        if result.is_err() {
            let _ = self.engine.rollback(conn).await;
        }
        result
    }

    /// The version's id when `steps` may run as one message (see
    /// [`Engine::ONE_MESSAGE`]): the version's row committed already, no new
    /// tenant, forward steps that execute, each in the unit's transaction
    /// (no directive that commits around it) and read whole by the
    /// tokenizer — so nothing of a file can run into the next one's text.
    fn one_message_version(&self, steps: &[u32], tenant: Option<&str>, progress: &Progress) -> Option<i64> {
        let version_id = progress.version()?;
        let plain = |step: u32| {
            self.plan.steps.at(step).execute
                && !self.runs_outside_transaction(step)
                && !self.commits_after(step)
                && self.readable[self.plan.steps.at(step).migration as usize]
        };
        let fits = self.engine.one_message()
            && tenant.is_none()
            && !self.request.dry_run
            && self.plan.direction == Direction::Forward
            && !steps.is_empty()
            && steps.iter().all(|&step| plain(step));
        fits.then_some(version_id)
    }

    /// A unit in one round trip: `begin`, each file with its time-outs
    /// (written again only when they change), the unit's rows, `commit`,
    /// as one text. A failure rolls the whole unit back and is placed in
    /// the file its offset falls in, at that file's own offset — as if the
    /// file had run alone.
    async fn one_message(
        &self,
        conn: &mut E::Conn,
        steps: &[u32],
        version_id: i64,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        let mut text = String::new();
        // Characters written so far (PostgreSQL counts positions in them).
        let mut length = 0;
        let mut push = |text: &mut String, part: &str| {
            text.push_str(part);
            length += part.chars().count();
            length
        };
        push(&mut text, E::BEGIN);
        let mut start = push(&mut text, ";\n");
        // Each file's characters in the text, (start, end], and its step.
        let mut files: Vec<(usize, usize, u32)> = Vec::with_capacity(steps.len());
        let mut current = None;
        for &step in steps {
            if let Some(observer) = self.request.observer {
                observer.running(self.schema(step), self.file(step));
            }
            let timeouts = self.timeouts(step);
            if current != Some(timeouts) {
                push(&mut text, &self.engine.timeouts_text(timeouts));
                start = push(&mut text, ";\n");
                current = Some(timeouts);
            }
            let sql = self.text(step).replace(&self.settings.placeholder, self.schema(step));
            let end = push(&mut text, &sql);
            files.push((start, end, step));
            start = push(&mut text, SEPARATOR);
        }
        let rows: Vec<Record<'_>> =
            steps.iter().map(|&s| Record { migration: self.migration(s), schema: self.schema(s) }).collect();
        let entries = Entries { rows: &rows, created: self.request.created, version_id };
        text.push_str(&self.engine.record_text(&entries)?);
        text.push_str(";\ncommit");
        let failure = match self.engine.execute_message(conn, &text).await {
            Ok(()) => {
                self.committed(progress, steps);
                return Ok(());
            }
            Err(failure) => failure,
        };
        let _ = self.engine.rollback(conn).await;
        let lost = matches!(failure.cause, Cause::ConnectionLost | Cause::ReadOnly | Cause::PoolExhausted);
        if !E::MESSAGE_OFFSETS && !lost {
            // Nothing of the unit committed: run it again file by file,
            // whose failure says where it is.
            let result = self.in_pieces(conn, steps.iter().copied(), None, progress).await;
            if result.is_err() {
                let _ = self.engine.rollback(conn).await;
            }
            return result.map(drop);
        }
        let in_file = failure.offset.and_then(|offset| transactions::place_in_message(&files, SEPARATOR.len(), offset));
        Err(match (failure.cause, in_file) {
            (Cause::ConnectionLost, _) => UnitError::Other(DbError::ConnectionLost(failure.message)),
            (Cause::ReadOnly, _) => UnitError::Other(DbError::ReadOnlyServer(failure.message)),
            (Cause::PoolExhausted, _) => UnitError::Other(DbError::PoolExhausted(failure.message)),
            (_, Some((step, offset))) => {
                let failure = Failure { offset: Some(offset), ..failure };
                UnitError::Migration { step, failure, partly: false, attempts: 1 }
            }
            (_, None) => UnitError::Other(DbError::Books(failure.message)),
        })
    }

    /// Runs `steps` on `conn` in the pieces core's
    /// `run::transactions::split` cuts them into: each transaction begun,
    /// its files executed, then committed with their rows; a file that
    /// cannot run in a transaction executed alone and recorded right after
    /// it. A new `tenant` is created in the first piece. A dry run's one
    /// transaction is left open and its steps returned, to roll back; on an
    /// error the caller rolls back what is open.
    async fn in_pieces(
        &self,
        conn: &mut E::Conn,
        steps: impl IntoIterator<Item = u32>,
        tenant: Option<&str>,
        progress: &Progress,
    ) -> Result<Option<Vec<u32>>, UnitError> {
        let how = Split {
            new_tenant: tenant.is_some(),
            transactional_ddl: E::TRANSACTIONAL_DDL,
            dry_run: self.request.dry_run,
        };
        let mode =
            |step| StepMode { alone: self.runs_outside_transaction(step), commit_after: self.commits_after(step) };
        let mut current = None;
        for piece in transactions::split(steps, how, mode) {
            match piece {
                Piece::TenantAlone => {
                    self.engine.create_tenant(conn, tenant.unwrap_or_default()).await?;
                    // The version's row with it: the version holds the tenant.
                    let version_id = self.version_id(conn, progress).await?;
                    progress.set_version(version_id);
                    progress.tenant_created.store(true, Ordering::SeqCst);
                }
                Piece::Alone(step) => {
                    self.execute(conn, step, &mut current, progress).await?;
                    self.record_alone(conn, step, progress).await?;
                }
                Piece::Transaction { steps, creates_tenant } => {
                    self.engine.begin(conn).await?;
                    current = None;
                    if creates_tenant {
                        self.engine.create_tenant(conn, tenant.unwrap_or_default()).await?;
                    }
                    for &step in &steps {
                        self.execute(conn, step, &mut current, progress).await?;
                    }
                    if self.request.dry_run {
                        return Ok(Some(steps));
                    }
                    self.close_transaction(conn, &steps, creates_tenant, progress).await?;
                }
            }
        }
        Ok(None)
    }

    /// Ends a unit's open transaction: commits `steps` with their rows (and
    /// the version's row, when none has committed yet) and the new tenant
    /// when `creates_tenant` (core's split begins none that would commit
    /// neither, so a version row never commits alone).
    async fn close_transaction(
        &self,
        conn: &mut E::Conn,
        steps: &[u32],
        creates_tenant: bool,
        progress: &Progress,
    ) -> Result<(), DbError> {
        let version_id = self.version_id(conn, progress).await?;
        self.record(conn, steps, version_id).await?;
        self.engine.commit(conn).await?;
        progress.set_version(version_id);
        self.committed(progress, steps);
        if creates_tenant {
            progress.tenant_created.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// The error of a failed version; `committed` are the steps committed.
    fn failure(&self, error: UnitError, version_id: Option<i64>, committed: &StepSet, whole: bool) -> DbError {
        let (step, failure, partly) = match error {
            UnitError::Other(error) => return error,
            UnitError::Migration { step, failure, partly, .. } => (step, failure, partly),
        };
        let file = self.file(step).to_string();
        let schema = self.schema(step).to_string();
        let at = self.position(step, &failure);
        // The failing schema is partly committed or not at all.
        let ByOutcome { committed: committed_names, partly: partly_committed, none: not_committed } =
            by_outcome(self.plan, committed);
        let applied = self.plan.counts_of(self.request.sources, committed.iter());
        DbError::MigrationFailed(Box::new(MigrationFailure {
            file,
            schema,
            at,
            message: failure.message,
            version_id,
            committed: committed_names,
            partly_committed,
            not_committed,
            partly_applied: partly,
            whole_version: whole,
            cause: failure.cause,
            applied,
        }))
    }
}
