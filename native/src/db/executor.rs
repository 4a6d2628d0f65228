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

pub(crate) mod backfill;
mod fingerprints;
mod progress;
pub(crate) mod reading;
mod retry_wait;
pub(crate) mod settings;
mod unit;

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::StreamExt;
use strata_core::migrate::config::TransactionScope;
use strata_core::migrate::lock_wait::Timeouts;
use strata_core::migrate::plan::{Direction, Plan, StepSet, Unit};
use strata_core::migrate::run::files::{self, FileRules, StepFiles};
use strata_core::migrate::run::schedule::{Next, OnFailure, Schedule};
use strata_core::migrate::run::{Absorption, ByOutcome, RunKind, by_outcome};
use strata_core::migrate::statements::{self, Position};

use crate::db::books::Books;
use crate::db::engine::{Engine, Failure};
use crate::db::error::{DbError, MigrationFailure, RunError};
use crate::db::executor::fingerprints::{Feed, committed_schemas, print_beside, recorded_after, store_fingerprints};
use crate::db::executor::progress::Progress;
use crate::db::executor::reading::{PLANNING, plan_read, select_tenants};
use crate::db::executor::settings::Settings;
use crate::db::types::{BackfillWait, MutationOutcome, MutationRequest, Phases, QuarantineRow, VersionRow};

/// Runs one mutation: the whole loop.
pub(crate) async fn mutate<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: MutationRequest<'_>,
) -> Result<MutationOutcome, RunError> {
    let started = Instant::now();
    let _gate = settings.gate.lock().await;
    let lock = engine.lock().await?;
    let waited = started.elapsed();
    let result = locked(engine, settings, &request, &lock).await;
    engine.unlock(lock).await;
    result.map(|mut outcome| {
        outcome.phases.lock = waited;
        outcome
    })
}

async fn locked<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: &MutationRequest<'_>,
    lock: &E::Lock,
) -> Result<MutationOutcome, RunError> {
    let mut phases = Phases::default();
    let mut clock = Instant::now();
    let mut lap = |phase: &mut Duration| {
        *phase = clock.elapsed();
        clock = Instant::now();
    };
    let mut main = engine.connect().await?;
    let planning = PLANNING.acquire().await;
    let tenants = engine.books().tenants(&mut main).await?;
    let mut selection = select_tenants(engine, &mut main, request, tenants).await?;
    lap(&mut phases.tenants);
    let (plan, rules) = plan_read(engine, &mut main, true, settings, request, &selection.run).await?;
    drop(planning);
    lap(&mut phases.plan);
    if request.retried().is_none() {
        // Only a retry looks at its tenants again (to release them); the
        // plan holds the names every other version runs in.
        selection.run = Vec::new();
    }
    let mut outcome = MutationOutcome {
        plan,
        version: None,
        quarantined: Vec::new(),
        waiting: Vec::new(),
        skipped: selection.skipped,
        released: Vec::new(),
        committed_counts: None,
        phases,
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
    let run = Run::new(engine, settings, request, plan, &rules, lock);
    let mut conns = vec![main];
    let result = run.version(&mut conns).await;
    lap(&mut outcome.phases.units);
    run.wind_down(&mut conns, &result).await;
    lap(&mut outcome.phases.wind_down);
    let absorbed = run.absorbed.into_inner().unwrap_or_else(|e| e.into_inner());
    let version = result?;
    let waiting = run.waiting.into_inner().unwrap_or_else(|e| e.into_inner());
    if !absorbed.is_empty() || !waiting.is_empty() {
        // What committed, not what was planned: a tenant put aside, or one
        // whose files after a backfill wait for it, ran only a part.
        let committed = run.committed.into_inner().unwrap_or_else(|e| e.into_inner());
        outcome.committed_counts = Some(plan.counts_of(request.sources, committed.iter()));
    }
    if request.retried().is_some() {
        // A tenant waiting on a backfill the retry restarted stays put
        // aside until it is done (its runner releases it then), or fails
        // again (one failure more on its row).
        let still: HashSet<&str> =
            absorbed.iter().map(|row| row.tenant.as_str()).chain(waiting.iter().map(|w| w.tenant.as_str())).collect();
        let released: Vec<String> =
            selection.run.into_iter().filter(|tenant| !still.contains(tenant.as_str())).collect();
        engine.books().release_quarantined(&mut conns[0], &released).await?;
        outcome.released = released;
    }
    outcome.version = version;
    outcome.quarantined = absorbed;
    outcome.waiting = waiting;
    // In the fleet's order, not the order units happened to end in.
    outcome.waiting.sort();
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
    /// Each step as the file it runs (its directives and backfill).
    files: StepFiles<'a>,
    /// Which tenant failures the version absorbs (core's `run`).
    absorption: Absorption,
    /// Tenant failures the version absorbed (each tenant quarantined).
    absorbed: Mutex<Vec<QuarantineRow>>,
    /// Tenants that wait on a backfill running after the version.
    waiting: Mutex<Vec<BackfillWait>>,
    /// The steps committed, once the version is over.
    committed: Mutex<StepSet>,
    /// The plan schemas whose fingerprints were stored while the units ran
    /// ([`print_beside`]).
    printed: Mutex<Vec<u32>>,
    /// Per source: the tokenizer reads the text the plan runs of it whole
    /// (it may share a message with other files).
    readable: Vec<bool>,
    /// Per source: its statements, counted once for the file spans of
    /// every schema it runs in (where spans are exported).
    statement_counts: Vec<std::sync::OnceLock<usize>>,
}

/// Why a unit did not commit (all of it).
enum UnitError {
    /// A migration failed (after `attempts` attempts).
    Migration { step: u32, failure: Failure, partly: bool, attempts: u32 },
    /// It reached a backfill that runs after the version: what it ran
    /// before committed; its tenant waits (no failure).
    Waiting { step: u32 },
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
        rules: &'a [FileRules],
        lock: &'a E::Lock,
    ) -> Self {
        Run {
            engine,
            settings,
            request,
            plan,
            files: StepFiles::new(plan, request.sources, rules, request.dry_run),
            lock,
            absorption: Absorption::new(RunKind {
                budget: request.failure_budget,
                retrying: request.retried().is_some(),
                new_tenant: plan.new_tenant.is_some(),
                dry_run: request.dry_run,
                tenants: plan.counts.tenants as usize,
            }),
            absorbed: Mutex::new(Vec::new()),
            waiting: Mutex::new(Vec::new()),
            committed: Mutex::new(StepSet::default()),
            printed: Mutex::new(Vec::new()),
            readable: files::readable(E::DRIVER, engine.one_message(), request.sources, plan),
            statement_counts: request.sources.iter().map(|_| std::sync::OnceLock::new()).collect(),
        }
    }

    /// The statements of `step`'s text, counted once per source.
    fn statement_count(&self, step: u32) -> usize {
        let source = self.plan.steps.at(step).migration as usize;
        *self.statement_counts[source]
            .get_or_init(|| crate::db::engine::statements_of(E::DRIVER, self.files.text(step)).len())
    }

    /// Runs the version over `conns` (the first one open): in one
    /// transaction (a dry run, `transactionScope: version`), which needs
    /// every schema at once, or per schema, with the single schemas
    /// prepared and each tenant's schema entered for its unit only.
    async fn version(&self, conns: &mut Vec<E::Conn>) -> Result<Option<VersionRow>, DbError> {
        let whole = self.whole();
        let prepared = if whole { self.plan.schemas.clone() } else { self.files.single_schemas() };
        self.engine.prepare(&mut conns[0], &prepared).await?;
        if whole {
            return self.whole_version(&mut conns[0]).await;
        }
        if !self.prints_beside() {
            return self.per_schema(conns, None).await;
        }
        let (feed, finished) = tokio::sync::mpsc::unbounded_channel();
        let units = async {
            let feed = feed;
            self.per_schema(conns, Some(&feed)).await
        };
        let printing = print_beside(self.engine, self.plan, self.request.sources, finished);
        let (result, printed) = tokio::join!(units, printing);
        *self.printed.lock().unwrap_or_else(|e| e.into_inner()) = printed;
        result
    }

    /// Whether the version runs in one transaction (a dry run,
    /// `transactionScope: version`), which needs every schema at once.
    fn whole(&self) -> bool {
        self.request.dry_run || self.settings.scope == TransactionScope::Version
    }

    /// Whether tenants' fingerprints are stored as their units commit
    /// ([`print_beside`]): where the engine does so, fingerprints are kept,
    /// and core says each tenant's unit is all the version does there.
    fn prints_beside(&self) -> bool {
        E::PRINTS_BESIDE_UNITS
            && E::KEEPS.catalogs
            && self.settings.record_fingerprints
            && !self.request.dry_run
            && self.plan.new_tenant.is_none()
            && self.plan.tenant_units_are_final(self.request.sources)
    }

    /// After the version, whatever it did: the schemas released (discarded
    /// when nothing of the version stays), the engine's deferred rows
    /// settled, the fingerprints of what committed stored (but those
    /// [`print_beside`] stored while the units ran).
    async fn wind_down(&self, conns: &mut [E::Conn], result: &Result<Option<VersionRow>, DbError>) {
        let discard = match result {
            Ok(version) => version.is_none(),
            Err(DbError::MigrationFailed(failure)) => failure.version_id.is_none(),
            Err(_) => true,
        };
        for conn in conns.iter_mut() {
            self.engine.release(conn, discard).await;
        }
        let Some(first) = conns.first_mut() else {
            tracing::error!(
                "no connection to complete the version's recorded rows with; the next mutation completes them"
            );
            return;
        };
        if let Err(error) = self.engine.settle(first).await {
            tracing::error!(%error, "the version's recorded rows could not be completed; the next mutation completes them");
        }
        if !self.settings.record_fingerprints || self.request.dry_run {
            return;
        }
        if let Some((version_id, mut schemas)) = committed_schemas(self.plan, result) {
            let printed = std::mem::take(&mut *self.printed.lock().unwrap_or_else(|e| e.into_inner()));
            if !printed.is_empty() {
                let printed: rustc_hash::FxHashSet<&str> =
                    printed.iter().map(|&schema| self.plan.schemas[schema as usize].as_str()).collect();
                schemas.retain(|schema| !printed.contains(schema.as_str()));
                if schemas.is_empty() {
                    return;
                }
            }
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
            observer.committed(self.files.schema(run[0]), run.len());
        }
    }

    /// Whether a file `unit` executes changes its session beyond it (core's
    /// `FileMode::changes_session`: MySQL, MariaDB and SQLite), or runs in
    /// its schema where that outlives the unit (MySQL's `USE`).
    fn changes_session(&self, unit: &Unit) -> bool {
        unit.steps.iter().any(|&step| {
            self.plan.steps.at(step).execute
                && (self.files.mode(step).changes_session
                    || (E::IN_SCHEMA_OUTLIVES_UNIT && self.files.in_its_schema(step)))
        })
    }

    /// What Citus keeps where around the step's file (core's
    /// `migrate::citus`); nothing on another database.
    fn citus_placement(&self, step: u32) -> strata_core::migrate::citus::FilePlacement {
        if !self.engine.citus() {
            return Default::default();
        }
        let migration = self.files.migration(step);
        strata_core::migrate::citus::placement(
            &self.settings.citus_reference_tables,
            migration.migration_type,
            &migration.source_dir,
        )
    }

    /// The time-outs the step's file runs with.
    fn timeouts(&self, step: u32) -> Timeouts {
        self.settings.timeouts.for_file(self.files.mode(step))
    }

    fn version_row(&self, id: i64) -> VersionRow {
        VersionRow {
            id,
            name: self.request.version_name.to_string(),
            created: self.request.created.to_string(),
            request_id: self.request.request_id.to_string(),
            trace_id: Self::trace_id(),
            parts: Vec::new(),
        }
    }

    /// The trace the version runs in (the current span's: the version's or
    /// one of its descendants'), when it is exported and sampled.
    fn trace_id() -> Option<String> {
        crate::traces::current_trace_id()
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
    /// With `feed`, each tenant whose unit committed is sent there
    /// ([`print_beside`]).
    async fn per_schema(&self, conns: &mut Vec<E::Conn>, feed: Option<&Feed>) -> Result<Option<VersionRow>, DbError> {
        let mut schedule = Schedule::new(self.plan, self.request.sources, self.absorption, self.settings.concurrency);
        let mut progress = Progress::default();
        *progress.steps.get_mut().unwrap_or_else(|e| e.into_inner()) = StepSet::with_steps(self.plan.steps.len());
        let mut failed: Option<UnitError> = None;
        let mut running = futures::stream::FuturesUnordered::new();
        let progress_ref = &progress;
        let units_parent = crate::traces::spans::units_parent();
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
                    let span = self.unit_span(units_parent.as_ref(), &unit);
                    running.push(async move {
                        let result =
                            crate::traces::within(span.clone(), self.unit(&mut conn, &unit, progress_ref)).await;
                        (conn, unit, result, span)
                    });
                }
                Next::Wait => {
                    let Some((mut conn, unit, result, span)) = running.next().await else { break };
                    if result.is_ok() {
                        self.finished(feed, &unit, progress_ref);
                    }
                    self.unit_ended(&mut schedule, &mut conn, &unit, result, span.as_ref(), progress_ref, &mut failed)
                        .await;
                    if self.changes_session(&unit) {
                        // Its session is not the server's any more: no
                        // other unit runs on it (the next opens another).
                        self.engine.discard(conn).await;
                    } else {
                        conns.push(conn);
                    }
                }
                Next::Done => break,
            }
        }
        drop(running);
        if conns.is_empty() {
            // Every connection went to a file that changed it: one more
            // for what follows the units (settling, prints, the books).
            match self.connection().await {
                Ok(conn) => conns.push(conn),
                Err(error) => _ = failed.get_or_insert(UnitError::Other(error)),
            }
        }
        let version_id = progress.version();
        let committed = progress.into_committed();
        let result = match failed {
            None => Ok(version_id.map(|id| self.version_row(id))),
            Some(error) => Err(self.failure(error, version_id, &committed, false)),
        };
        *self.committed.lock().unwrap_or_else(|e| e.into_inner()) = committed;
        result
    }

    /// Sends a tenant whose unit committed to `feed` (a single schema's
    /// unit is not sent).
    fn finished(&self, feed: Option<&Feed>, unit: &Unit, progress: &Progress) {
        let (Some(feed), Some(version_id)) = (feed, progress.version()) else { return };
        if !self.is_tenant_unit(unit) {
            return;
        }
        if let Some(bits) = self.plan.recorded_after_unit(self.request.sources, unit) {
            // The receiver lives until the units are over.
            let _ = feed.send((unit.schema, version_id, bits));
        }
    }

    /// Whether `unit` runs tenant files (else single-schema files).
    fn is_tenant_unit(&self, unit: &Unit) -> bool {
        unit.steps.first().is_some_and(|&step| self.files.migration(step).migration_type.is_tenant())
    }

    /// The span of `unit` (a child of `parent`): a tenant's, or the single
    /// schemas'.
    fn unit_span(&self, parent: Option<&opentelemetry::Context>, unit: &Unit) -> crate::traces::spans::Otel {
        let tenant = match self.plan.new_tenant.as_deref() {
            Some(tenant) if unit.steps.is_empty() => Some(tenant),
            _ => None,
        };
        let schema = tenant.unwrap_or(&self.plan.schemas[unit.schema as usize]);
        let is_tenant = tenant.is_some() || self.is_tenant_unit(unit);
        crate::traces::spans::tenant(parent, schema, is_tenant, E::DRIVER, unit.steps.len())
    }

    /// What a whole version's one transaction needs for its schemas'
    /// spans: each schema's count of files.
    fn schema_spans(&self) -> unit::SchemaSpans {
        let mut files = vec![0; self.plan.schemas.len()];
        for step in &self.plan.steps {
            files[step.schema as usize] += 1;
        }
        unit::SchemaSpans { files, ..Default::default() }
    }

    /// The span of the schema of `step`, its first, and its `files` in a
    /// whole version's one transaction (a unit's own span otherwise).
    fn schema_span(&self, step: u32, files: usize) -> crate::traces::spans::Otel {
        let tenant = self.files.migration(step).migration_type.is_tenant();
        let parent = crate::traces::spans::units_parent();
        crate::traces::spans::tenant(parent.as_ref(), self.files.schema(step), tenant, E::DRIVER, files)
    }

    /// One more connection for the version's units, its single schemas
    /// made usable.
    async fn connection(&self) -> Result<E::Conn, DbError> {
        let mut conn = self.engine.connect().await?;
        self.engine.prepare(&mut conn, &self.files.single_schemas()).await?;
        Ok(conn)
    }

    /// Tells the schedule how a unit ended. A failure it puts aside (a
    /// tenant's own, within the failure budget) is written to the
    /// quarantine at once, on `conn`; the first failure that stops the
    /// version is kept in `failed`, to report. `span`: the unit's.
    #[allow(clippy::too_many_arguments)]
    async fn unit_ended(
        &self,
        schedule: &mut Schedule<'_>,
        conn: &mut E::Conn,
        unit: &Unit,
        result: Result<(), UnitError>,
        span: Option<&opentelemetry::Context>,
        progress: &Progress,
        failed: &mut Option<UnitError>,
    ) {
        let error = match result {
            Ok(()) => return schedule.committed(),
            Err(UnitError::Waiting { step }) => {
                let wait = BackfillWait {
                    tenant: self.files.schema(step).to_string(),
                    file: self.files.file(step).to_string(),
                };
                tracing::info!(tenant = %wait.tenant, file = %wait.file,
                    "the tenant waits on its backfill, which runs after the version; its later files run with a later one");
                self.waiting.lock().unwrap_or_else(|e| e.into_inner()).push(wait);
                return schedule.waits(unit.schema);
            }
            Err(error) => error,
        };
        let cause = match &error {
            UnitError::Migration { failure, .. } => Some(failure.cause),
            UnitError::Other(_) | UnitError::Waiting { .. } => None,
        };
        match (&error, span) {
            (UnitError::Migration { failure, .. }, Some(span)) => {
                crate::traces::spans::unit_failed(span, failure.cause.name(), &failure.message)
            }
            (UnitError::Other(other), Some(span)) => {
                crate::traces::spans::unit_failed(span, "DATABASE_ERROR", &other.to_string())
            }
            _ => {}
        }
        if schedule.failed(cause) == OnFailure::Stops {
            failed.get_or_insert(error);
            return;
        }
        let UnitError::Migration { step, failure, partly, .. } = &error else { return };
        let row = self.quarantine_row(*step, failure, *partly, progress);
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
            if let Some(span) = span {
                crate::traces::spans::quarantined(span, &row.cause);
            }
            self.absorbed.lock().unwrap_or_else(|e| e.into_inner()).push(row);
        }
        if !schedule.put_aside(unit.schema, written) {
            failed.get_or_insert(error);
        }
    }

    /// The quarantine row of a tenant whose `step` failed; `partly`: the
    /// step ran outside a transaction (MySQL's DDL, a no-transaction file),
    /// and the message says what that leaves.
    fn quarantine_row(&self, step: u32, failure: &Failure, partly: bool, progress: &Progress) -> QuarantineRow {
        let at = self.position(step, failure);
        let message = match partly {
            true => format!(
                "{} (the file ran outside a transaction and may be partly applied: what it ran before the failure \
                 stays, and a retry runs it again from its start)",
                failure.message
            ),
            false => failure.message.clone(),
        };
        QuarantineRow {
            version_id: progress.version(),
            file: self.files.file(step).to_string(),
            line: at.map(|at| at.line as i64),
            column: at.filter(|at| at.column > 0).map(|at| at.column as i64),
            ..QuarantineRow::put_aside(
                self.files.schema(step).to_string(),
                failure.cause.name(),
                message,
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
        let schema = self.files.schema(step);
        failure
            .offset
            .and_then(|offset| statements::locate(self.files.text(step), &self.settings.placeholder, schema, offset))
            .or(failure.line.map(|line| Position { line, column: 0 }))
    }

    /// The error of a failed version; `committed` are the steps committed.
    fn failure(&self, error: UnitError, version_id: Option<i64>, committed: &StepSet, whole: bool) -> DbError {
        let (step, failure, partly) = match error {
            UnitError::Other(error) => return error,
            UnitError::Waiting { step } => {
                return DbError::UnexpectedAnswer(format!(
                    "{} waits on its backfill in one transaction",
                    self.files.file(step)
                ));
            }
            UnitError::Migration { step, failure, partly, .. } => (step, failure, partly),
        };
        let file = self.files.file(step).to_string();
        let schema = self.files.schema(step).to_string();
        let at = self.position(step, &failure);
        // The failing schema is partly committed or not at all; a file
        // that may be partly applied makes it partly committed.
        let ran = at.is_none_or(|at| statements::ran_before(E::DRIVER, self.files.text(step), at));
        let partly_in = (partly && ran).then(|| self.plan.steps.at(step).schema);
        let ByOutcome { committed: committed_names, partly: partly_committed, none: not_committed } =
            by_outcome(self.plan, committed, partly_in);
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
            reverting: self.plan.direction == Direction::Revert,
            backfill: self.files.backfill(step).is_some(),
        }))
    }
}
