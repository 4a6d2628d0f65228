//! The migration loop, written once: lock, read the recorded state, plan
//! (core), check the files (core), run the plan segment by segment, record,
//! commit, summarise — over the per-dialect primitives of [`Engine`]. The
//! drivers implement primitives only.
//!
//! # Invariants
//!
//! - **The lock is held for the whole version.** Taken before the recorded
//!   state is read, released after the last commit: PostgreSQL a lease row
//!   renewed in the background (it expires when its holder dies; a holder
//!   that lost it stops before its next unit, [`Engine::lock_held`]); MySQL
//!   `GET_LOCK`, SQL Server `sp_getapplock` with a session owner, SQLite a
//!   write transaction on a lock file, each on a dedicated connection the
//!   database releases when the process dies.
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

use strata_core::migrate::config::{Config, TransactionScope};
use strata_core::migrate::driver::Driver;
use strata_core::migrate::plan::{Plan, PlanInput, Unit, plan};
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::statements::{self, Position};

use super::engine::{Engine, Failure, Record};
use super::error::{Cause, DbError, MigrationFailure};
use super::types::{MutationOutcome, MutationRequest, Preview, VersionRow};

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
    /// Tenants are the service's own `svc.svc_tenants` (no tenant
    /// statement configured): none yet when the service's tables are not.
    pub(crate) default_tenant_table: bool,
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
            default_tenant_table: config.default_tenant_table,
        }
    }
}

/// What a mutation would do, read without the lock and without writing:
/// the recorded state, the plan, and the files' refusals (`strata plan`,
/// `strata status`). A mutation running meanwhile may change the answer.
/// Before the service's tables exist, nothing is recorded (and the default
/// tenant table holds no tenant).
pub(crate) async fn preview<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: &MutationRequest<'_>,
) -> Result<Preview, DbError> {
    let mut conn = engine.connect().await?;
    let installed = engine.installed(&mut conn).await?;
    let tenants = match installed || !settings.default_tenant_table {
        true => engine.tenants(&mut conn).await?,
        false => Vec::new(),
    };
    let applied = if installed { engine.applied(&mut conn).await? } else { Vec::new() };
    let (plan, _) = plan_checked(engine.driver(), request, &tenants, &applied)?;
    Ok(Preview { plan, tenants })
}

/// Plans (core) and reads every file the plan executes (core's
/// `statements::inspect`). Returns the plan and, per source, whether it
/// runs outside a transaction.
fn plan_checked(
    driver: Driver,
    request: &MutationRequest<'_>,
    tenants: &[String],
    applied: &[strata_core::migrate::plan::AppliedMigration],
) -> Result<(Plan, Vec<bool>), DbError> {
    let plan = plan(PlanInput {
        sources: request.sources,
        applied,
        tenants,
        target: &request.target,
        action: request.action,
    })?;
    let modes = check_files(driver, request.sources, &plan)?;
    Ok((plan, modes))
}

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
    let tenants = engine.tenants(&mut main).await?;
    let applied = engine.applied(&mut main).await?;
    let (plan, modes) = plan_checked(engine.driver(), request, &tenants, &applied)?;
    drop((tenants, applied));
    if plan.is_empty() || (request.dry_run && !engine.transactional_ddl()) {
        return Ok(MutationOutcome { plan, version: None });
    }
    if let Some(observer) = request.observer {
        observer.started(&plan, request.sources);
    }
    let run = Run { engine, settings, request, plan: &plan, no_transaction: &modes, lock };
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
    lock: &'a E::Lock,
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

    /// Records one step that ran outside a transaction, in a transaction
    /// of its own (statements with bound values never run outside one: a
    /// pooler in transaction mode may send them to another server).
    async fn record_alone(&self, conn: &mut E::Conn, step: u32, version_id: i64) -> Result<(), DbError> {
        self.engine.begin(conn).await?;
        match self.record(conn, &[step], version_id).await {
            Ok(()) => self.engine.commit(conn).await,
            Err(error) => {
                let _ = self.engine.rollback(conn).await;
                Err(error)
            }
        }
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
                    self.record_alone(conn, step, version_id).await?;
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
        if !self.engine.lock_held(self.lock) {
            return Err(self.placed(UnitError::Other(DbError::LockLost), unit, progress));
        }
        let schema = match self.plan.new_tenant.as_deref() {
            Some(tenant) if unit.steps.is_empty() => tenant.to_string(),
            _ => self.plan.schemas[unit.schema as usize].clone(),
        };
        self.engine.enter(conn, &schema).await?;
        let result = self.unit_entered(conn, unit, progress).await;
        self.engine.leave(conn, &schema).await;
        result.map_err(|error| self.placed(error, unit, progress))
    }

    /// A failure of the database under a unit (the connection lost, the
    /// server read-only, the pool exhausted, the lease lost) outside its
    /// migrations' statements,
    /// placed at the unit's first step not committed: reported like a failed
    /// migration, with what committed and what did not.
    fn placed(&self, error: UnitError, unit: &Unit, progress: &Progress) -> UnitError {
        let cause = match &error {
            UnitError::Other(DbError::ConnectionLost(_)) => Cause::ConnectionLost,
            UnitError::Other(DbError::ReadOnlyServer(_)) => Cause::ReadOnly,
            UnitError::Other(DbError::PoolExhausted(_)) => Cause::PoolExhausted,
            UnitError::Other(DbError::LockLost) => Cause::LockLost,
            _ => return error,
        };
        let committed = progress.steps.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(&step) = unit.steps.iter().find(|step| !committed.contains(step)) else { return error };
        let UnitError::Other(inner) = error else { return error };
        let message = match inner {
            DbError::ConnectionLost(message) | DbError::ReadOnlyServer(message) | DbError::PoolExhausted(message) => {
                message
            }
            other => other.to_string(),
        };
        UnitError::Migration { step, failure: Failure { message, offset: None, line: None, cause }, partly: false }
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
                    self.record_alone(conn, step, version_id).await?;
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
                    self.record_alone(conn, step, version_id).await?;
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
        let applied = self.plan.counts_of(self.request.sources, committed);
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
            cause: failure.cause,
            applied,
        }))
    }
}
