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

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Held while a mutation or a preview reads the recorded state and plans:
/// one at a time in the process (the module's invariants say why).
static PLANNING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

use rustc_hash::FxHashMap;
use strata_core::migrate::config::{Config, TransactionScope};
use strata_core::migrate::driver::Driver;
use strata_core::migrate::fingerprint;
use strata_core::migrate::lock_wait::{self, Timeouts};
use strata_core::migrate::plan::{Direction, Plan, PlanInput, Planner, StepSet, Unit, Units, part_to_run};
use strata_core::migrate::quarantine;
use strata_core::migrate::run::{Absorption, ByOutcome, RunKind, by_outcome};
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::statements::{self, FileMode, Position, Refusals};
use strata_core::migrate::wave::{self, Wave};

use crate::db::books::Books;
use crate::db::engine::{self, Engine, Entries, Failure, Record};
use crate::db::error::{Cause, DbError, MigrationFailure};
use crate::db::types::{MutationOutcome, MutationRequest, Preview, QuarantineRow, TenantList, VersionRow};

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
    /// Lock and statement time-outs, before a file's directives.
    pub(crate) timeouts: Timeouts,
    /// Store each schema's catalog fingerprint after its unit commits.
    pub(crate) record_fingerprints: bool,
    /// What a pending migration sorting before applied ones does.
    pub(crate) out_of_order: strata_core::migrate::plan::OutOfOrderPolicy,
    /// Single-schema directories whose tables are Citus reference tables.
    pub(crate) citus_reference_tables: Vec<String>,
    /// Signs every audit row (`auth.auditKey`).
    pub(crate) audit_key: Option<strata_core::auth::audit_key::AuditKey>,
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
            timeouts: Timeouts::from_config(config),
            record_fingerprints: config.record_fingerprints,
            out_of_order: config.out_of_order,
            citus_reference_tables: config.citus_reference_tables.clone(),
            audit_key: config.auth.audit_key.clone(),
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
    // Waiting for its turn holds no connection: many reads waiting at once
    // must not take the pool a running version's fan-out needs.
    let planning = PLANNING.acquire().await;
    let mut conn = engine.connect().await?;
    let installed = engine.books().installed(&mut conn).await?;
    let tenants = match installed || !settings.default_tenant_table {
        true => engine.books().tenants(&mut conn).await?,
        false => TenantList::default(),
    };
    let selection = select_tenants(engine, &mut conn, request, tenants).await?;
    let (plan, _) = plan_read(engine, &mut conn, installed, settings, request, &selection.run).await?;
    drop(planning);
    Ok(Preview { plan, tenants: selection.run, skipped: selection.skipped, unreachable: Vec::new() })
}

/// The tenants a mutation runs in: quarantined ones skipped, or only those
/// retried (core's `quarantine::select`). A new tenant's version runs in
/// that tenant only, whatever the quarantine holds. The list's names
/// become the selection's (moved, not copied: a fleet's list is held once).
async fn select_tenants<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    request: &MutationRequest<'_>,
    tenants: TenantList,
) -> Result<quarantine::Selection, DbError> {
    let retried = request.retried();
    let held: Vec<String> = match request.skip_quarantined || retried.is_some() {
        true => engine.books().quarantined(conn).await?.into_iter().map(|row| row.tenant).collect(),
        false => Vec::new(),
    };
    let mut selection = if held.is_empty() && retried.is_none() {
        quarantine::Selection { run: tenants.names, skipped: Vec::new() }
    } else {
        quarantine::select(&tenants.names, &held, retried)?
    };
    let wave = request.wave();
    if retried.is_none() && *wave != Wave::All {
        // A named tenant that is quarantined is named wrongly: say so.
        if let Wave::Named(names) = &*wave
            && let Some(name) = names.iter().find(|name| selection.skipped.contains(name))
        {
            return Err(quarantine::RetryError::Quarantined(name.clone()).into());
        }
        selection.run = wave::select(&selection.run, &wave, &tenants.attributes)?;
    }
    Ok(selection)
}

/// Plans (core) over the recorded rows as they are read (`installed`:
/// whether there are any), then reads every file the plan executes
/// (core's `statements::inspect`). Returns the plan and, per source, how
/// it runs. A forward plan folds the rows one by one (what it keeps is a
/// bit per file and schema); a revert looks at them whole.
async fn plan_read<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    installed: bool,
    settings: &Settings,
    request: &MutationRequest<'_>,
    tenants: &[String],
) -> Result<(Plan, Vec<FileMode>), DbError> {
    let mut plan = if let Some(extent) = request.operation.revert() {
        let applied = if installed { engine.books().applied(conn).await? } else { Vec::new() };
        strata_core::migrate::revert::plan_revert(strata_core::migrate::revert::RevertInput {
            sources: request.sources,
            applied: &applied,
            tenants,
            single_schemas: *request.wave() == Wave::All && request.retried().is_none(),
            extent,
        })?
    } else {
        let target = request.operation.target();
        let mut planner = Planner::new(PlanInput {
            sources: request.sources,
            applied: &[],
            tenants,
            target: &target,
            action: request.operation.action(),
            out_of_order: settings.out_of_order,
        })?;
        if installed {
            engine.books().each_applied(conn, &mut |row| planner.record(row)).await?;
        }
        planner.finish()?
    };
    if request.tenants_only {
        plan = strata_core::migrate::shard::tenants_only(plan, request.sources);
    }
    let modes = check_files(E::DRIVER, request.sources, &plan)?;
    Ok((plan, modes))
}

/// `strata repair` on one server: under the process gate and the
/// database's lock, core decides over the recorded rows; with an `audit`
/// the books change in one transaction with the version row.
pub(crate) async fn repair<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: super::types::RepairRequest<'_>,
) -> Result<strata_core::migrate::repair::Repair, DbError> {
    let super::types::RepairRequest { sources, files, strict, audit } = request;
    let _gate = settings.gate.lock().await;
    let lock = engine.lock().await?;
    let result = async {
        let mut conn = engine.connect().await?;
        let applied = match engine.books().installed(&mut conn).await? {
            true => engine.books().applied(&mut conn).await?,
            false => Vec::new(),
        };
        let repair = strata_core::migrate::repair::repair(sources, &applied, files, strict)?;
        if let Some(audit) = audit
            && !repair.is_empty()
        {
            engine.books().repair(&mut conn, &repair, audit).await?;
        }
        Ok(repair)
    }
    .await;
    engine.unlock(lock).await;
    result
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
    let run = Run {
        engine,
        settings,
        request,
        plan,
        modes: &modes,
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
    };
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
    if let Err(error) = engine.settle(&mut conns[0]).await {
        tracing::error!(%error, "the version's recorded rows could not be completed; the next mutation completes them");
    }
    if settings.record_fingerprints && !request.dry_run {
        let committed = match &result {
            Ok(Some(version)) => Some((version.id, plan.schemas.iter().chain(&plan.new_tenant).cloned().collect())),
            Err(DbError::MigrationFailed(failure)) => failure
                .version_id
                .map(|id| (id, failure.committed.iter().chain(&failure.partly_committed).cloned().collect())),
            _ => None,
        };
        if let Some((version_id, schemas)) = committed {
            let known = recorded_after(plan, request.sources, &run.committed.lock().unwrap_or_else(|e| e.into_inner()));
            store_fingerprints(engine, &mut conns, schemas, version_id, known).await;
        }
    }
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

/// Each plan schema's recorded migrations after the version, by name,
/// from the plan and the steps that committed (core's
/// `Plan::recorded_after`), when the plan knows them.
fn recorded_after(
    plan: &Plan,
    sources: &[SourceMigration],
    committed: &StepSet,
) -> Option<FxHashMap<String, fingerprint::Recorded>> {
    let after = plan.recorded_after(sources, committed)?;
    Some(plan.schemas.iter().cloned().zip(after).collect())
}

/// Stores the catalog fingerprint of every schema the version committed
/// something in, with the identity of what it recorded (core's
/// `fingerprint`; from the plan when it knows them, `known`, else folded from
/// the books read whole), once the version is over, [`engine::PRINTS_PER_ROUND`]
/// schemas at a time: the prints read over the connections the version
/// fanned out on ([`Engine::catalog_prints`]:
/// PostgreSQL reads 250 catalogs a query, MySQL most of a server in one
/// pass; a query per unit cost more than the migrations themselves on a
/// 2,000-tenant database), written [`engine::CATALOGS_PER_READ`] rows a
/// statement, in one transaction each, the statements spread over the same
/// connections. Best effort: a failure is logged and the version stands; a
/// fingerprint stored for another set of recorded migrations than the live
/// one is never judged.
async fn store_fingerprints<E: Engine>(
    engine: &E,
    conns: &mut [E::Conn],
    mut schemas: Vec<String>,
    version_id: i64,
    known: Option<FxHashMap<String, fingerprint::Recorded>>,
) {
    schemas.sort();
    schemas.dedup();
    let stored = async {
        // Each schema's recorded identity: the plan's, or folded as the
        // books' rows stream in.
        let recorded = match known {
            Some(known) => known,
            None => engine.books().recorded(&mut conns[0]).await?,
        };
        for round in schemas.chunks(engine::PRINTS_PER_ROUND) {
            let prints = engine.catalog_prints(conns, round).await?;
            store_prints(engine, conns, round, &prints, &recorded, version_id).await?;
        }
        Ok::<_, DbError>(())
    }
    .await;
    match stored {
        Ok(()) | Err(DbError::NotSupported(_)) => {}
        Err(error) => tracing::warn!(%error, "the schemas' fingerprints could not be stored"),
    }
}

/// Writes `schemas`' `prints` with their recorded identities,
/// [`engine::CATALOGS_PER_READ`] rows a statement, the statements spread
/// over `conns`.
async fn store_prints<E: Engine>(
    engine: &E,
    conns: &mut [E::Conn],
    schemas: &[String],
    prints: &[String],
    recorded: &FxHashMap<String, fingerprint::Recorded>,
    version_id: i64,
) -> Result<(), DbError> {
    let nothing = fingerprint::Recorded::default();
    let batches: Vec<(&[String], &[String])> =
        schemas.chunks(engine::CATALOGS_PER_READ).zip(prints.chunks(engine::CATALOGS_PER_READ)).collect();
    let lanes = conns.len().min(batches.len()).max(1);
    let (batches, nothing) = (&batches, &nothing);
    let stored = futures::future::join_all(conns.iter_mut().take(lanes).enumerate().map(|(lane, conn)| async move {
        for (schemas, prints) in batches.iter().skip(lane).step_by(lanes) {
            let rows: Vec<(&str, &str, &str)> = schemas
                .iter()
                .zip(prints.iter())
                .map(|(schema, print)| {
                    (schema.as_str(), print.as_str(), &*recorded.get(schema).unwrap_or(nothing).identity)
                })
                .collect();
            engine.books().store_fingerprints(conn, &rows, version_id).await?;
        }
        Ok::<_, DbError>(())
    }))
    .await;
    stored.into_iter().collect::<Result<Vec<()>, _>>().map(drop)
}

/// Reads every file the plan executes (core's `statements::inspect`):
/// refuses hidden transaction control, statements that need the directive
/// and unknown directives, before anything runs — every refusal of every
/// file at once. Returns, per source, how it runs.
fn check_files(driver: Driver, sources: &[SourceMigration], plan: &Plan) -> Result<Vec<FileMode>, DbError> {
    let direction = plan.direction;
    let mut modes: Vec<Option<FileMode>> = vec![None; sources.len()];
    let mut refused = Vec::new();
    for step in plan.steps.iter().filter(|s| s.execute) {
        let index = step.migration as usize;
        if modes[index].is_none() {
            let migration = &sources[index];
            let (text, no_transaction, file) = part_to_run(migration, direction);
            modes[index] = Some(match statements::inspect_part(driver, file, text, no_transaction) {
                Ok(mode) => mode,
                Err(Refusals(refusals)) => {
                    refused.extend(refusals);
                    FileMode::default()
                }
            });
        }
    }
    if !refused.is_empty() {
        return Err(Refusals(refused).into());
    }
    Ok(modes.into_iter().map(Option::unwrap_or_default).collect())
}

/// How often a step's record that lost a conflict is written again.
const RECORD_CONFLICT_RETRIES: u32 = 3;

/// What follows each file in a unit sent as one message: a new line ends a
/// last line comment, the semicolon a last statement without one.
const SEPARATOR: &str = "\n;\n";

/// Per source, whether the tokenizer reads the part `plan` runs of it whole
/// (only where a unit may run in one message: the rest say no).
fn readable(driver: Driver, one_message: bool, sources: &[SourceMigration], plan: &Plan) -> Vec<bool> {
    let mut readable = vec![false; sources.len()];
    if plan.direction == Direction::Forward && one_message {
        for (index, migration) in sources.iter().enumerate() {
            readable[index] = statements::split(driver, part_to_run(migration, plan.direction).0).is_some();
        }
    }
    readable
}

/// What has committed so far in a per-schema run.
#[derive(Default)]
struct Progress {
    /// The version's id, once a transaction holding its row committed.
    version: Mutex<Option<i64>>,
    /// Steps committed (applied and recorded), a bit each.
    steps: Mutex<StepSet>,
    /// The new tenant's creation committed.
    tenant_created: AtomicBool,
    /// Steps committed so far, counted as they commit: whether the version
    /// moved on while a unit waited for a lock.
    committed_count: AtomicU64,
}

impl Progress {
    fn version(&self) -> Option<i64> {
        *self.version.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_version(&self, id: i64) {
        self.version.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(id);
    }

    fn committed(&self, steps: &[u32]) {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).extend(steps.iter().copied());
        self.committed_count.fetch_add(steps.len() as u64, Ordering::SeqCst);
    }

    /// Where the version stands for a unit of `steps` (its own) waiting
    /// for a lock: steps committed by every unit, and by this one.
    fn mark(&self, steps: &[u32]) -> (u64, u64) {
        let own = steps.iter().filter(|&&step| self.has_committed(step)).count() as u64;
        (self.committed_count.load(Ordering::SeqCst), own)
    }

    /// Whether another unit committed a step since `mark` (taken with the
    /// same `steps`); `mark` moves to now.
    fn others_committed_since(&self, mark: &mut (u64, u64), steps: &[u32]) -> bool {
        let now = self.mark(steps);
        let others = (now.0 - mark.0).saturating_sub(now.1 - mark.1);
        *mark = now;
        others > 0
    }

    /// Whether a step has committed.
    fn has_committed(&self, step: u32) -> bool {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).contains(step)
    }

    /// What committed, once no unit runs any more.
    fn into_committed(self) -> StepSet {
        self.steps.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

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

impl<E: Engine> Run<'_, E> {
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
        let dry = self.request.dry_run;
        let progress = Progress::default();
        self.engine.begin(conn).await?;
        let steps = 0..self.plan.steps.len() as u32;
        let result = self.in_transactions(conn, steps, self.plan.new_tenant.as_deref(), &progress, dry).await;
        match result {
            Ok(_) if !dry => {
                let version = progress.version().map(|id| self.version_row(id));
                *self.committed.lock().unwrap_or_else(|e| e.into_inner()) = progress.into_committed();
                Ok(version)
            }
            Ok(pending) => {
                self.engine.rollback(conn).await?;
                self.notify_committed(&pending);
                Ok(None)
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

    /// Per-schema transactions: segment after segment; tenant segments fan
    /// out over up to `concurrency` connections. The version row is written
    /// in the first transaction that commits anything (until then units run
    /// one at a time), so a version never exists without what it applied —
    /// not even after a crash.
    async fn per_schema(&self, conns: &mut Vec<E::Conn>) -> Result<Option<VersionRow>, DbError> {
        let segments = self.plan.segments(self.request.sources);
        let mut progress = Progress::default();
        *progress.steps.get_mut().unwrap_or_else(|e| e.into_inner()) = StepSet::with_steps(self.plan.steps.len());
        let mut failed: Option<UnitError> = None;

        if self.plan.new_tenant.is_some() && segments.is_empty() {
            // A tenant without tenant migrations: its creation alone.
            let unit = Unit { schema: 0, steps: Vec::new() };
            if let Err(error) = self.unit(&mut conns[0], &unit, &progress).await {
                failed = Some(error);
            }
        }

        for segment in &segments {
            let mut units = self.plan.units(segment);
            let mut left = self.plan.unit_count(segment);
            while failed.is_none() && progress.version().is_none() && left > 0 {
                let Some(unit) = units.next() else { break };
                left -= 1;
                if let Err(error) = self.unit_of(segment.tenants, &mut conns[0], &unit, &progress).await {
                    failed = Some(error);
                }
            }
            if failed.is_some() {
                break;
            }
            let fan_out = segment.tenants && left > 1 && self.settings.concurrency > 1;
            if fan_out {
                while conns.len() < self.settings.concurrency.min(left) {
                    let mut conn = self.engine.connect().await?;
                    self.engine.prepare(&mut conn, &self.single_schemas()).await?;
                    conns.push(conn);
                }
                failed = self.fan_out(units, left, conns, &progress).await;
            } else {
                for unit in units {
                    if let Err(error) = self.unit_of(segment.tenants, &mut conns[0], &unit, &progress).await {
                        failed = Some(error);
                        break;
                    }
                }
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

    /// Runs a tenant segment's units over `conns`; on the first failure the
    /// failure budget does not absorb, no new unit starts and the running
    /// ones finish. Returns the failure.
    async fn fan_out(
        &self,
        units: Units<'_>,
        left: usize,
        conns: &mut [E::Conn],
        progress: &Progress,
    ) -> Option<UnitError> {
        // Each worker takes the next unit as it is made: no unit is held
        // before a connection is free for it.
        let next = Mutex::new(units);
        let stop = AtomicBool::new(false);
        let failure: Mutex<Option<UnitError>> = Mutex::new(None);
        let workers = conns.iter_mut().take(left).map(|conn| {
            let (next, stop, failure) = (&next, &stop, &failure);
            async move {
                while !stop.load(Ordering::SeqCst) {
                    let unit = next.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some(unit) = unit else { break };
                    if let Err(error) = self.tenant_unit(conn, &unit, progress).await {
                        stop.store(true, Ordering::SeqCst);
                        failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(error);
                    }
                }
            }
        });
        futures::future::join_all(workers).await;
        failure.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// A unit of a tenant segment (`tenants`) under the failure budget, or
    /// of a single-schema segment (a failure there always stops).
    async fn unit_of(
        &self,
        tenants: bool,
        conn: &mut E::Conn,
        unit: &Unit,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        if tenants { self.tenant_unit(conn, unit, progress).await } else { self.unit(conn, unit, progress).await }
    }

    /// One tenant's unit under the version's failure budget: a failure
    /// core's `run::Absorption` puts aside is written to the quarantine at
    /// once and, while it says the version goes on, absorbed: the version
    /// goes on without that tenant, whose later units (a later segment's,
    /// scripts) do not run.
    async fn tenant_unit(&self, conn: &mut E::Conn, unit: &Unit, progress: &Progress) -> Result<(), UnitError> {
        let schema = &self.plan.schemas[unit.schema as usize];
        if self.absorbed.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|row| row.tenant == *schema) {
            // Failed in an earlier segment of this version: nothing more runs there.
            return Ok(());
        }
        let error = match self.unit(conn, unit, progress).await {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        let UnitError::Migration { step, failure, attempts: _, partly: _ } = &error else { return Err(error) };
        if !self.absorption.quarantines(failure.cause) {
            return Err(error);
        }
        let schema = self.schema(*step).to_string();
        let at = self.position(*step, failure);
        let row = QuarantineRow {
            version_id: progress.version(),
            file: self.file(*step).to_string(),
            line: at.map(|at| at.line as i64),
            column: at.filter(|at| at.column > 0).map(|at| at.column as i64),
            ..QuarantineRow::put_aside(
                schema,
                failure.cause.name(),
                failure.message.clone(),
                self.request.request_id,
                self.request.created,
            )
        };
        if let Err(e) = self.engine.books().quarantine(conn, &row).await {
            tracing::warn!(tenant = %row.tenant, error = %e, "the tenant could not be quarantined: the version stops");
            return Err(error);
        }
        tracing::warn!(tenant = %row.tenant, file = %row.file, cause = %row.cause, message = %row.message,
            "tenant failed and was quarantined: later versions skip it until it is retried or released");
        crate::telemetry::tenant_quarantined();
        let failures = {
            let mut absorbed = self.absorbed.lock().unwrap_or_else(|e| e.into_inner());
            absorbed.push(row);
            absorbed.len()
        };
        if self.absorption.goes_on(failures) { Ok(()) } else { Err(error) }
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
        let lock_ms = self.timeouts(step).lock_ms;
        let blockers = self.engine.blockers(conn, self.schema(step)).await;
        let mut text = format!("{message} (lock time-out {lock_ms} ms, {attempts} attempt(s))");
        if blockers.is_empty() {
            text.push_str("; no blocking session is left now");
        } else {
            text.push_str("; blocked by: ");
            text.push_str(&blockers.join("; "));
        }
        text
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
        let mut current = None;
        if !E::TRANSACTIONAL_DDL {
            if let Some(tenant) = tenant {
                self.engine.create_tenant(conn, tenant).await?;
                // The version's row with it: the version holds the tenant.
                let version_id = self.version_id(conn, progress).await?;
                progress.set_version(version_id);
                progress.tenant_created.store(true, Ordering::SeqCst);
            }
            for step in steps {
                self.execute(conn, step, &mut current, progress).await?;
                self.record_alone(conn, step, progress).await?;
            }
            return Ok(());
        }
        if let Some(version_id) = self.one_message_version(&steps, tenant, progress) {
            return self.one_message(conn, &steps, version_id, progress).await;
        }
        self.engine.begin(conn).await?;
        let result = self.in_transactions(conn, steps, tenant, progress, false).await.map(drop);
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
            self.engine.begin(conn).await?;
            let result = self.in_transactions(conn, steps.iter().copied(), None, progress, false).await;
            if result.is_err() {
                let _ = self.engine.rollback(conn).await;
            }
            return result.map(drop);
        }
        // An offset in the separator after a file (a statement the file
        // left open, which alone would fail "at end of input") is that
        // file's, just past its last character.
        let in_file = failure.offset.and_then(|offset| {
            files
                .iter()
                .find(|(start, end, _)| offset > *start && offset <= *end + SEPARATOR.len())
                .map(|&(start, end, step)| (offset.min(end + 1) - start, step))
        });
        Err(match (failure.cause, in_file) {
            (Cause::ConnectionLost, _) => UnitError::Other(DbError::ConnectionLost(failure.message)),
            (Cause::ReadOnly, _) => UnitError::Other(DbError::ReadOnlyServer(failure.message)),
            (Cause::PoolExhausted, _) => UnitError::Other(DbError::PoolExhausted(failure.message)),
            (_, Some((offset, step))) => {
                let failure = Failure { offset: Some(offset), ..failure };
                UnitError::Migration { step, failure, partly: false, attempts: 1 }
            }
            (_, None) => UnitError::Other(DbError::Books(failure.message)),
        })
    }

    /// Runs `steps` on `conn`, whose transaction is open: each file in the
    /// open transaction; a non-transactional file alone, after committing
    /// what came before and recorded right after it (skipped on a dry run:
    /// it cannot run in a transaction); a commit after a file that asks for
    /// one. A new `tenant` is created first, in the first transaction.
    /// Unless `dry`, the last transaction commits; a dry run's steps still
    /// open are returned, to roll back.
    async fn in_transactions(
        &self,
        conn: &mut E::Conn,
        steps: impl IntoIterator<Item = u32>,
        tenant: Option<&str>,
        progress: &Progress,
        dry: bool,
    ) -> Result<Vec<u32>, UnitError> {
        let mut pending: Vec<u32> = Vec::new();
        let mut current = None;
        let mut tenant_in_transaction = false;
        if let Some(tenant) = tenant {
            self.engine.create_tenant(conn, tenant).await?;
            tenant_in_transaction = true;
        }
        for step in steps {
            if self.runs_outside_transaction(step) {
                if dry {
                    continue;
                }
                self.close_transaction(conn, &pending, tenant_in_transaction, progress).await?;
                (pending, tenant_in_transaction) = (Vec::new(), false);
                self.execute(conn, step, &mut current, progress).await?;
                self.record_alone(conn, step, progress).await?;
                self.engine.begin(conn).await?;
                current = None;
                continue;
            }
            self.execute(conn, step, &mut current, progress).await?;
            pending.push(step);
            if self.commits_after(step) {
                self.close_transaction(conn, &pending, tenant_in_transaction, progress).await?;
                (pending, tenant_in_transaction) = (Vec::new(), false);
                self.engine.begin(conn).await?;
                current = None;
            }
        }
        if dry {
            return Ok(pending);
        }
        self.close_transaction(conn, &pending, tenant_in_transaction, progress).await?;
        Ok(Vec::new())
    }

    /// Ends a unit's open transaction: commits `steps` with their rows (and
    /// the version's row, when none has committed yet) and the new tenant
    /// when `creates_tenant`; an empty one is rolled back, so a version row
    /// never commits alone.
    async fn close_transaction(
        &self,
        conn: &mut E::Conn,
        steps: &[u32],
        creates_tenant: bool,
        progress: &Progress,
    ) -> Result<(), DbError> {
        if steps.is_empty() && !creates_tenant {
            return self.engine.rollback(conn).await;
        }
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
