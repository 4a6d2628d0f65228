//! The migration loop, written once: lock, read the recorded state, plan
//! (core), check the files (core), run the plan segment by segment, record,
//! commit, summarise — over the per-dialect primitives of [`Engine`]. The
//! drivers implement primitives only.
//!
//! # Invariants
//!
//! - **The lock is held for the whole version.** A session-level lock on a
//!   dedicated connection (PostgreSQL `pg_advisory_lock`, MySQL `GET_LOCK`,
//!   SQL Server `sp_getapplock` with a session owner, SQLite a write
//!   transaction on a lock file) is taken before the recorded state is read
//!   and released after the last commit; the database releases it when the
//!   process dies.
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
//! - **A failure stops the version.** The failing unit rolls back, units
//!   already running finish, no new one starts; what committed stays applied
//!   and recorded in the version, and the error names the file, the schema,
//!   the position in the file, and the schemas committed and not.
//! - **Non-transactional files** (`-- strata:no-transaction`) run alone,
//!   outside any transaction, between the transactions of their unit, and
//!   are recorded right after they succeed. A failed one may be partly
//!   applied: the error says so, and nothing of it is recorded.
//! - **Engines without transactional DDL** (MySQL/MariaDB) run every step in
//!   its own implicit commit and record it right after; a dry run executes
//!   nothing there.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use strata_core::migrate::MigrationType;
use strata_core::migrate::config::{Config, TransactionScope};
use strata_core::migrate::driver::Driver;
use strata_core::migrate::plan::{AppliedMigration, Plan, PlanInput, Unit, plan};
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::statements::{self, Position};
use strata_core::migrate::summary::Counts;

use super::{DbError, MigrationFailure, MutationOutcome, MutationRequest, Preview, VersionRow};

/// How a statement failed, as the engine said it.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    /// The engine's message, without its internal source location.
    pub(crate) message: String,
    /// 1-based character offset of the error in the executed text, when the
    /// engine reports one (PostgreSQL).
    pub(crate) offset: Option<usize>,
    /// 1-based line of the error in the executed text, when the engine
    /// reports a line but no offset (SQL Server).
    pub(crate) line: Option<u64>,
}

impl Failure {
    /// A failure as sqlx reports it: the database's own message (without
    /// sqlx's prefix), no position.
    pub(crate) fn from_sqlx(error: &sqlx::Error) -> Self {
        let message = error.as_database_error().map_or_else(|| error.to_string(), |d| d.message().to_string());
        Failure { message, offset: None, line: None }
    }

    /// This failure, placed at the statement starting at byte `start` of
    /// the executed `text` — or, when the engine counted lines within the
    /// statement (`line_within`, from 1), at the start of that line.
    pub(crate) fn in_statement(mut self, text: &str, start: usize, line_within: Option<u64>) -> Self {
        let start = match line_within.filter(|&line| line > 1) {
            Some(line) => text[start..]
                .match_indices('\n')
                .nth(line as usize - 2)
                .map_or(start, |(newline, _)| start + newline + 1),
            None => start,
        };
        self.offset = Some(text[..start].chars().count() + 1);
        self
    }
}

/// The statements of a file to run one at a time, as byte ranges of
/// `text`: engines that report no error position run them so the failing
/// one is known. The whole text when the tokenizer cannot read it.
pub(crate) fn statements_of(driver: Driver, text: &str) -> Vec<std::ops::Range<usize>> {
    statements::split(driver, text).unwrap_or_else(|| std::iter::once(0..text.len()).collect())
}

/// One bookkeeping row to write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a> {
    /// The migration.
    pub(crate) migration: &'a SourceMigration,
    /// The schema it was applied to (or recorded for).
    pub(crate) schema: &'a str,
}

/// The per-dialect primitives the executor runs a version with. Each
/// dialect's SQL lives in its own `sql.rs`.
#[async_trait]
pub(crate) trait Engine: Send + Sync {
    /// A connection: its own session.
    type Conn: Send;
    /// The held cross-instance lock: a session of its own, outside any pool.
    type Lock: Send;

    /// The database kind.
    fn driver(&self) -> Driver;
    /// Whether DDL takes part in transactions.
    fn transactional_ddl(&self) -> bool;
    /// Opens (or takes from a pool) a connection of its own.
    async fn connect(&self) -> Result<Self::Conn, DbError>;
    /// Takes the database's cross-instance lock on a session of its own
    /// (the executor has passed this process's gate first).
    async fn lock(&self) -> Result<Self::Lock, DbError>;
    /// Releases the lock (best effort: closing the session releases it too).
    async fn unlock(&self, lock: Self::Lock);
    /// Makes `schemas` usable on `conn` (SQLite attaches their files).
    async fn prepare(&self, _conn: &mut Self::Conn, _schemas: &[String]) -> Result<(), DbError> {
        Ok(())
    }
    /// Undoes [`Engine::prepare`] once the version is over; `discard` when
    /// it left nothing (a dry run, or nothing committed).
    async fn release(&self, _conn: &mut Self::Conn, _discard: bool) {}
    /// Makes one more schema usable on `conn` for one unit, outside any
    /// transaction (SQLite attaches a tenant's file only while its unit
    /// runs, so a fleet is not bounded by how many files attach at once).
    async fn enter(&self, _conn: &mut Self::Conn, _schema: &str) -> Result<(), DbError> {
        Ok(())
    }
    /// Undoes [`Engine::enter`], outside any transaction.
    async fn leave(&self, _conn: &mut Self::Conn, _schema: &str) {}
    /// Starts a transaction.
    async fn begin(&self, conn: &mut Self::Conn) -> Result<(), DbError>;
    /// Commits it.
    async fn commit(&self, conn: &mut Self::Conn) -> Result<(), DbError>;
    /// Rolls it back.
    async fn rollback(&self, conn: &mut Self::Conn) -> Result<(), DbError>;
    /// Runs a migration file's SQL.
    async fn execute(&self, conn: &mut Self::Conn, sql: &str) -> Result<(), Failure>;
    /// The tenant names (`tenantSelectSQL`).
    async fn tenants(&self, conn: &mut Self::Conn) -> Result<Vec<String>, DbError>;
    /// The recorded migrations.
    async fn applied(&self, conn: &mut Self::Conn) -> Result<Vec<AppliedMigration>, DbError>;
    /// Creates a tenant's schema and inserts its row (`tenantInsertSQL`).
    async fn create_tenant(&self, conn: &mut Self::Conn, tenant: &str) -> Result<(), DbError>;
    /// Inserts a version row and returns its id.
    async fn insert_version(
        &self,
        conn: &mut Self::Conn,
        name: &str,
        created: &str,
        request_id: &str,
    ) -> Result<i64, DbError>;
    /// Records rows in `svc_migrations` for `version_id`.
    async fn record(
        &self,
        conn: &mut Self::Conn,
        rows: &[Record<'_>],
        created: &str,
        version_id: i64,
    ) -> Result<(), DbError>;
    /// Deletes the version when no migration row refers to it.
    async fn delete_empty_version(&self, conn: &mut Self::Conn, version_id: i64) -> Result<(), DbError>;
}

/// How the executor runs versions, from the configuration, and the gate
/// that lets one mutation of this process at a time reach for the lock (so
/// waiting mutations hold no connection).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// One mutation at a time in this process.
    gate: Arc<tokio::sync::Mutex<()>>,
    /// Per schema (default) or the whole version in one transaction.
    pub(crate) scope: TransactionScope,
    /// Connections a tenant segment fans out over.
    pub(crate) concurrency: usize,
    /// The schema placeholder of the SQL.
    pub(crate) placeholder: String,
}

impl Settings {
    /// From the configuration; `max_concurrency` is the engine's bound (1
    /// for SQLite, which has one writer).
    pub(crate) fn from_config(config: &Config, max_concurrency: usize) -> Self {
        Settings {
            gate: Arc::default(),
            scope: config.transaction_scope,
            concurrency: config.tenant_concurrency.clamp(1, max_concurrency.max(1)),
            placeholder: config.schema_placeholder.clone(),
        }
    }
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

/// What a mutation would do, read without the lock and without writing:
/// the recorded state, the plan, and the files' refusals (`strata plan`,
/// `strata status`). A mutation running meanwhile may change the answer.
pub(crate) async fn preview<E: Engine>(engine: &E, request: &MutationRequest<'_>) -> Result<Preview, DbError> {
    let mut conn = engine.connect().await?;
    let (plan, _, tenants) = read_and_plan(engine, &mut conn, request).await?;
    Ok(Preview { plan, tenants })
}

/// Reads the tenants and the recorded rows on `conn`, plans (core), and
/// reads every file the plan executes (core's `statements::inspect`).
/// Returns the plan, per source whether it runs outside a transaction, and
/// the tenants read.
async fn read_and_plan<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    request: &MutationRequest<'_>,
) -> Result<(Plan, Vec<bool>, Vec<String>), DbError> {
    let tenants = engine.tenants(conn).await?;
    let applied = engine.applied(conn).await?;
    let plan = plan(PlanInput {
        sources: request.sources,
        applied: &applied,
        tenants: &tenants,
        target: &request.target,
        action: request.action,
    })?;
    drop(applied);
    let modes = check_files(engine.driver(), request.sources, &plan)?;
    Ok((plan, modes, tenants))
}

/// Runs one mutation: the whole loop.
pub(crate) async fn mutate<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: MutationRequest<'_>,
) -> Result<MutationOutcome, DbError> {
    let _gate = settings.gate.lock().await;
    let lock = engine.lock().await?;
    let result = locked(engine, settings, &request).await;
    engine.unlock(lock).await;
    result
}

async fn locked<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: &MutationRequest<'_>,
) -> Result<MutationOutcome, DbError> {
    let mut main = engine.connect().await?;
    let (plan, modes, _) = read_and_plan(engine, &mut main, request).await?;
    if plan.is_empty() || (request.dry_run && !engine.transactional_ddl()) {
        return Ok(MutationOutcome { plan, version: None });
    }
    if let Some(observer) = request.observer {
        observer.started(&plan, request.sources);
    }
    let run = Run { engine, settings, request, plan: &plan, no_transaction: &modes };
    let mut conns = vec![main];
    let whole = request.dry_run || settings.scope == TransactionScope::Version;
    // One transaction for the version needs every schema at once; per
    // schema, the single schemas stay prepared and each tenant's schema is
    // entered for its unit only.
    let prepared = if whole { plan.schemas.clone() } else { run.single_schemas() };
    let result = match engine.prepare(&mut conns[0], &prepared).await {
        Err(error) => Err(error),
        Ok(()) if whole => run.whole_version(&mut conns[0]).await,
        Ok(()) => run.per_schema(&mut conns).await,
    };
    let discard = match &result {
        Ok(version) => version.is_none(),
        Err(DbError::MigrationFailed(failure)) => failure.version_id.is_none(),
        Err(_) => true,
    };
    for conn in &mut conns {
        engine.release(conn, discard).await;
    }
    Ok(MutationOutcome { plan, version: result? })
}

/// Reads every file the plan executes (core's `statements::inspect`):
/// refuses hidden transaction control and statements that need the
/// directive, before anything runs. Returns, per source, whether it runs
/// outside a transaction.
fn check_files(driver: Driver, sources: &[SourceMigration], plan: &Plan) -> Result<Vec<bool>, DbError> {
    let mut modes: Vec<Option<bool>> = vec![None; sources.len()];
    for step in plan.steps.iter().filter(|s| s.execute) {
        let index = step.migration as usize;
        if modes[index].is_none() {
            let migration = &sources[index];
            let mode = statements::inspect(driver, &migration.file, &migration.contents)?;
            modes[index] = Some(mode.no_transaction);
        }
    }
    Ok(modes.into_iter().map(|m| m.unwrap_or(false)).collect())
}

/// What has committed so far in a per-schema run.
#[derive(Default)]
struct Progress {
    /// The version's id, once a transaction holding its row committed.
    version: Mutex<Option<i64>>,
    /// Steps committed (applied and recorded).
    steps: Mutex<Vec<u32>>,
    /// The new tenant's creation committed.
    tenant_created: AtomicBool,
}

impl Progress {
    fn version(&self) -> Option<i64> {
        *self.version.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_version(&self, id: i64) {
        self.version.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(id);
    }

    fn clear_version(&self) {
        *self.version.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn committed(&self, steps: &[u32]) {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(steps);
    }
}

struct Run<'a, E: Engine> {
    engine: &'a E,
    settings: &'a Settings,
    request: &'a MutationRequest<'a>,
    plan: &'a Plan,
    no_transaction: &'a [bool],
}

/// Why a unit did not commit.
enum UnitError {
    /// A migration failed.
    Migration { step: u32, failure: Failure, partly: bool },
    /// Anything else (bookkeeping, connection).
    Other(DbError),
}

impl From<DbError> for UnitError {
    fn from(error: DbError) -> Self {
        UnitError::Other(error)
    }
}

impl<E: Engine> Run<'_, E> {
    /// Notes steps as committed, and tells the observer, schema by schema.
    fn committed(&self, progress: &Progress, steps: &[u32]) {
        progress.committed(steps);
        self.notify_committed(steps);
    }

    fn notify_committed(&self, steps: &[u32]) {
        let Some(observer) = self.request.observer else { return };
        for run in steps.chunk_by(|a, b| self.plan.steps[*a as usize].schema == self.plan.steps[*b as usize].schema) {
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
        &self.request.sources[self.plan.steps[step as usize].migration as usize]
    }

    fn schema(&self, step: u32) -> &str {
        self.plan.schema_of(&self.plan.steps[step as usize])
    }

    fn runs_outside_transaction(&self, step: u32) -> bool {
        let step = &self.plan.steps[step as usize];
        step.execute && self.no_transaction[step.migration as usize]
    }

    async fn execute(&self, conn: &mut E::Conn, step: u32) -> Result<(), UnitError> {
        if !self.plan.steps[step as usize].execute {
            return Ok(());
        }
        if let Some(observer) = self.request.observer {
            observer.running(self.schema(step), &self.migration(step).file);
        }
        let sql = self.migration(step).sql_for(&self.settings.placeholder, self.schema(step));
        let partly = self.runs_outside_transaction(step) || !self.engine.transactional_ddl();
        self.engine.execute(conn, &sql).await.map_err(|failure| UnitError::Migration { step, failure, partly })
    }

    async fn record(&self, conn: &mut E::Conn, steps: &[u32], version_id: i64) -> Result<(), DbError> {
        let rows: Vec<Record<'_>> =
            steps.iter().map(|&s| Record { migration: self.migration(s), schema: self.schema(s) }).collect();
        self.engine.record(conn, &rows, self.request.created, version_id).await
    }

    fn version_row(&self, id: i64) -> VersionRow {
        VersionRow {
            id,
            name: self.request.version_name.to_string(),
            created: self.request.created.to_string(),
            request_id: self.request.request_id.to_string(),
        }
    }

    /// The whole version in one transaction on one connection (dry runs,
    /// and `transactionScope: version`). A dry run skips non-transactional
    /// files (they cannot run in a transaction) and rolls everything back;
    /// otherwise the version's transaction commits before such a file and
    /// goes on after it.
    async fn whole_version(&self, conn: &mut E::Conn) -> Result<Option<VersionRow>, DbError> {
        let dry = self.request.dry_run;
        self.engine.begin(conn).await?;
        let mut pending: Vec<u32> = Vec::new();
        let result = async {
            if let Some(tenant) = &self.plan.new_tenant {
                self.engine.create_tenant(conn, tenant).await?;
            }
            let version_id = if dry {
                0
            } else {
                let request = self.request;
                self.engine.insert_version(conn, request.version_name, request.created, request.request_id).await?
            };
            for step in 0..self.plan.steps.len() as u32 {
                if self.runs_outside_transaction(step) {
                    if dry {
                        continue;
                    }
                    self.record(conn, &pending, version_id).await?;
                    self.engine.commit(conn).await?;
                    self.notify_committed(&pending);
                    pending.clear();
                    self.execute(conn, step).await?;
                    self.record(conn, &[step], version_id).await?;
                    self.notify_committed(&[step]);
                    self.engine.begin(conn).await?;
                    continue;
                }
                self.execute(conn, step).await?;
                pending.push(step);
            }
            if !dry {
                self.record(conn, &pending, version_id).await?;
            }
            Ok::<_, UnitError>(version_id)
        }
        .await;
        match result {
            Ok(version_id) if !dry => {
                self.engine.commit(conn).await?;
                self.notify_committed(&pending);
                Ok(Some(self.version_row(version_id)))
            }
            Ok(_) => {
                self.engine.rollback(conn).await?;
                self.notify_committed(&pending);
                Ok(None)
            }
            Err(error) => {
                let _ = self.engine.rollback(conn).await;
                Err(self.failure(error, None, &[], true))
            }
        }
    }

    /// Per-schema transactions: segment after segment; tenant segments fan
    /// out over up to `concurrency` connections. The version row is written
    /// in the first transaction that commits anything (until then units run
    /// one at a time), so a version never exists without what it applied —
    /// not even after a crash.
    async fn per_schema(&self, conns: &mut Vec<E::Conn>) -> Result<Option<VersionRow>, DbError> {
        let segments = self.plan.segments(self.request.sources);
        let progress = Progress::default();
        let mut failed: Option<UnitError> = None;

        if self.plan.new_tenant.is_some() && segments.is_empty() {
            // A tenant without tenant migrations: its creation alone.
            let unit = Unit { schema: 0, steps: Vec::new() };
            if let Err(error) = self.unit(&mut conns[0], &unit, &progress).await {
                failed = Some(error);
            }
        }

        for segment in &segments {
            let mut units: &[Unit] = &segment.units;
            while failed.is_none() && progress.version().is_none() && !units.is_empty() {
                if let Err(error) = self.unit(&mut conns[0], &units[0], &progress).await {
                    failed = Some(error);
                }
                units = &units[1..];
            }
            if failed.is_some() {
                break;
            }
            let fan_out = segment.tenants && units.len() > 1 && self.settings.concurrency > 1;
            if fan_out {
                while conns.len() < self.settings.concurrency.min(units.len()) {
                    let mut conn = self.engine.connect().await?;
                    self.engine.prepare(&mut conn, &self.single_schemas()).await?;
                    conns.push(conn);
                }
                failed = self.fan_out(units, conns, &progress).await;
            } else {
                for unit in units {
                    if let Err(error) = self.unit(&mut conns[0], unit, &progress).await {
                        failed = Some(error);
                        break;
                    }
                }
            }
        }
        let version_id = progress.version();
        let committed = progress.steps.into_inner().unwrap_or_else(|e| e.into_inner());
        match failed {
            None => Ok(version_id.map(|id| self.version_row(id))),
            Some(error) => Err(self.failure(error, version_id, &committed, false)),
        }
    }

    /// Runs a tenant segment's units over `conns`; on the first failure no
    /// new unit starts and the running ones finish. Returns the failure.
    async fn fan_out(&self, units: &[Unit], conns: &mut [E::Conn], progress: &Progress) -> Option<UnitError> {
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let failure: Mutex<Option<UnitError>> = Mutex::new(None);
        let workers = conns.iter_mut().take(units.len()).map(|conn| {
            let (next, stop, failure) = (&next, &stop, &failure);
            async move {
                while !stop.load(Ordering::SeqCst) {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(unit) = units.get(index) else { break };
                    if let Err(error) = self.unit(conn, unit, progress).await {
                        stop.store(true, Ordering::SeqCst);
                        failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(error);
                    }
                }
            }
        });
        futures::future::join_all(workers).await;
        failure.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// The version's id, writing its row on `conn` (in the transaction open
    /// there, if any) when no committed transaction has yet.
    async fn version_id(&self, conn: &mut E::Conn, progress: &Progress) -> Result<i64, DbError> {
        if let Some(id) = progress.version() {
            return Ok(id);
        }
        let request = self.request;
        self.engine.insert_version(conn, request.version_name, request.created, request.request_id).await
    }

    /// One unit: its steps in one transaction with their rows, split around
    /// non-transactional files; the new tenant is created in the first
    /// transaction of its unit. Engines without transactional DDL record
    /// each step right after it ran. What commits goes to `progress`.
    async fn unit(&self, conn: &mut E::Conn, unit: &Unit, progress: &Progress) -> Result<(), UnitError> {
        let schema = match self.plan.new_tenant.as_deref() {
            Some(tenant) if unit.steps.is_empty() => tenant.to_string(),
            _ => self.plan.schemas[unit.schema as usize].clone(),
        };
        self.engine.enter(conn, &schema).await?;
        let result = self.unit_entered(conn, unit, progress).await;
        self.engine.leave(conn, &schema).await;
        result
    }

    /// [`Run::unit`] once its schema is usable on `conn`.
    async fn unit_entered(&self, conn: &mut E::Conn, unit: &Unit, progress: &Progress) -> Result<(), UnitError> {
        let tenant = self
            .plan
            .new_tenant
            .as_deref()
            .filter(|tenant| unit.steps.is_empty() || self.plan.schemas[unit.schema as usize] == *tenant);
        if !self.engine.transactional_ddl() {
            let version_id = self.version_id(conn, progress).await?;
            progress.set_version(version_id);
            let result = async {
                if let Some(tenant) = tenant {
                    self.engine.create_tenant(conn, tenant).await?;
                    progress.tenant_created.store(true, Ordering::SeqCst);
                }
                for &step in &unit.steps {
                    self.execute(conn, step).await?;
                    self.record(conn, &[step], version_id).await?;
                    self.committed(progress, &[step]);
                }
                Ok::<_, UnitError>(())
            }
            .await;
            // Nothing of the version took place: no version either.
            let nothing = progress.steps.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
                && !progress.tenant_created.load(Ordering::SeqCst);
            if result.is_err() && nothing {
                let _ = self.engine.delete_empty_version(conn, version_id).await;
                progress.clear_version();
            }
            return result;
        }
        let mut pending: Vec<u32> = Vec::new();
        self.engine.begin(conn).await?;
        let result = async {
            let mut version_id = self.version_id(conn, progress).await?;
            if let Some(tenant) = tenant {
                self.engine.create_tenant(conn, tenant).await?;
            }
            for &step in &unit.steps {
                if self.runs_outside_transaction(step) {
                    self.commit_unit(conn, &pending, version_id, tenant.is_some(), progress).await?;
                    pending.clear();
                    self.execute(conn, step).await?;
                    self.record(conn, &[step], version_id).await?;
                    self.committed(progress, &[step]);
                    self.engine.begin(conn).await?;
                    version_id = self.version_id(conn, progress).await?;
                    continue;
                }
                self.execute(conn, step).await?;
                pending.push(step);
            }
            self.commit_unit(conn, &pending, version_id, tenant.is_some(), progress).await?;
            Ok::<_, UnitError>(())
        }
        .await;
        if result.is_err() {
            let _ = self.engine.rollback(conn).await;
        }
        result
    }

    /// Records `steps` and commits the open transaction of a unit, then
    /// notes what committed (the version row with the first commit).
    async fn commit_unit(
        &self,
        conn: &mut E::Conn,
        steps: &[u32],
        version_id: i64,
        creates_tenant: bool,
        progress: &Progress,
    ) -> Result<(), DbError> {
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
    fn failure(&self, error: UnitError, version_id: Option<i64>, committed: &[u32], whole: bool) -> DbError {
        let (step, failure, partly) = match error {
            UnitError::Other(error) => return error,
            UnitError::Migration { step, failure, partly } => (step, failure, partly),
        };
        let migration = self.migration(step);
        let schema = self.schema(step).to_string();
        // Lines are the same in the file and the executed text (the
        // placeholder and a schema name hold no line break); a column is
        // only known from an offset. Column 0: the line alone.
        let at: Option<Position> = failure
            .offset
            .and_then(|offset| statements::locate(&migration.contents, &self.settings.placeholder, &schema, offset))
            .or(failure.line.map(|line| Position { line, column: 0 }));
        let mut done = vec![false; self.plan.steps.len()];
        for &step in committed {
            done[step as usize] = true;
        }
        let schemas_where = |want: bool| {
            let mut names: Vec<String> = (0..self.plan.steps.len())
                .filter(|&i| done[i] == want)
                .map(|i| self.plan.schema_of(&self.plan.steps[i]).to_string())
                .collect();
            names.sort();
            names.dedup();
            names
        };
        let (committed_names, not_committed) = (schemas_where(true), schemas_where(false));
        let mut applied = Counts::default();
        let mut files_seen = std::collections::HashSet::new();
        for &step in committed {
            let migration = self.migration(step);
            let first = files_seen.insert(migration.file.as_str());
            match migration.migration_type {
                MigrationType::SingleMigration => applied.single_migrations += 1,
                MigrationType::SingleScript => applied.single_scripts += 1,
                MigrationType::TenantMigration => {
                    applied.tenant_migrations += u64::from(first);
                    applied.tenant_migrations_total += 1;
                }
                MigrationType::TenantScript => {
                    applied.tenant_scripts += u64::from(first);
                    applied.tenant_scripts_total += 1;
                }
            }
        }
        DbError::MigrationFailed(Box::new(MigrationFailure {
            file: migration.file.clone(),
            schema,
            at,
            message: failure.message,
            version_id,
            committed: committed_names,
            not_committed,
            partly_applied: partly,
            whole_version: whole,
            applied,
        }))
    }
}
