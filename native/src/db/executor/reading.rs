//! What the executor reads and decides before anything runs: the tenants
//! a version selects, the recorded state, the plan (core's planner) and
//! how each file runs (core's `run::files`) — for a mutation under its
//! lock, for a preview without it, and for `strata repair`.

use rustc_hash::FxHashSet;
use strata_core::migrate::backfill::KeyValue;
use strata_core::migrate::config::TransactionScope;
use strata_core::migrate::history;
use strata_core::migrate::plan::{Plan, PlanInput, Planner};
use strata_core::migrate::quarantine;
use strata_core::migrate::run::files::{self, FileRules};
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::wave::{self, Wave};

use crate::db::books::Books;
use crate::db::engine::{Engine, Failure};
use crate::db::error::{DbError, RunError};
use crate::db::executor::settings::Settings;
use crate::db::types::{MutationRequest, Preview, RepairRequest, TenantList};

pub(super) static PLANNING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// What a mutation would do, read without the lock and without writing:
/// the recorded state, the plan, and the files' refusals (`strata plan`,
/// `strata status`). A mutation running meanwhile may change the answer.
/// Before the service's tables exist, nothing is recorded (and the default
/// tenant table holds no tenant).
pub(crate) async fn preview<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: &MutationRequest<'_>,
) -> Result<Preview, RunError> {
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
pub(super) async fn select_tenants<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    request: &MutationRequest<'_>,
    tenants: TenantList,
) -> Result<quarantine::Selection, RunError> {
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
/// (core's `run::files::check`). Returns the plan and, per source, how
/// it runs. A forward plan folds the rows one by one (what it keeps is a
/// bit per file and schema); a revert looks at them whole.
pub(super) async fn plan_read<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    installed: bool,
    settings: &Settings,
    request: &MutationRequest<'_>,
    tenants: &[String],
) -> Result<(Plan, Vec<FileRules>), RunError> {
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
    if request.operation.adopts_histories() && !plan.steps.is_empty() {
        let found = histories(engine, conn, &plan.schemas).await?;
        // Over a part of the fleet (a wave, a new tenant), whether the rest
        // holds histories decides too: the fleet adopts or not as a whole.
        let elsewhere = request.histories_elsewhere
            || (found.is_empty() && installed && histories_in_fleet(engine, conn, request).await?);
        // Which single schemas exist matters only when the fleet adopts.
        let present = match found.is_empty() && !elsewhere {
            true => Vec::new(),
            false => single_schemas_present(engine, conn, &plan, request.sources).await?,
        };
        plan = history::adopt(plan, request.sources, found, elsewhere, &present)?;
    }
    let whole_version = settings.scope == TransactionScope::Version && !request.dry_run;
    let rules = files::check(E::DRIVER, request.sources, &plan, whole_version, &settings.placeholder)?;
    Ok((plan, rules))
}

/// Every history of another tool in `schemas` (core's `history::probes`,
/// then `history::read`, many at once): what a Sync adopts. Nothing on an
/// engine whose histories Strata does not read.
async fn histories<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    schemas: &[String],
) -> Result<Vec<history::Found>, RunError> {
    let tables = history_tables(engine, conn, schemas).await?;
    let mut found = Vec::with_capacity(tables.len());
    for chunk in tables.chunks(history::READ_AT_ONCE) {
        let rows = engine.read_keys_whole(conn, &history::read(E::DRIVER, chunk)).await.map_err(unreadable)?;
        let rows = rows
            .into_iter()
            .filter_map(|row| match <[KeyValue; 4]>::try_from(row) {
                Ok([schema, version, entry, KeyValue::Int(order)]) => {
                    Some((schema.to_string(), version.to_string(), entry.to_string(), order))
                }
                _ => None,
            })
            .collect();
        found.extend(history::found(chunk, rows));
    }
    Ok(found)
}

/// Reading other tools' histories failed.
fn unreadable(failure: Failure) -> DbError {
    DbError::Books(format!("reading other tools' histories: {}", failure.message))
}

/// The history tables in `schemas` (core's `history::probes`).
async fn history_tables<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    schemas: &[String],
) -> Result<Vec<(String, history::Tool)>, RunError> {
    let wanted: FxHashSet<&str> = schemas.iter().map(String::as_str).collect();
    let mut tables: Vec<(String, history::Tool)> = Vec::new();
    for probe in history::probes(E::DRIVER, schemas) {
        for row in engine.read_keys_whole(conn, &probe).await.map_err(unreadable)? {
            if let [KeyValue::Text(schema), KeyValue::Text(table)] = &row[..]
                && wanted.contains(schema.as_str())
                && let Some(tool) = history::Tool::of_probed(table)
            {
                tables.push((schema.clone(), tool));
            }
        }
    }
    Ok(tables)
}

/// Whether a schema of the whole fleet (its tenants and the source's single
/// schemas), not only of the plan, holds another tool's history.
async fn histories_in_fleet<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    request: &MutationRequest<'_>,
) -> Result<bool, RunError> {
    // Where no history is read (SQLite, SQL Server), there is none to find.
    if !history::read_on(E::DRIVER) {
        return Ok(false);
    }
    let mut fleet = engine.books().tenants(conn).await?.names;
    fleet.extend(request.sources.iter().filter_map(SourceMigration::single_schema).map(str::to_string));
    fleet.sort_unstable();
    fleet.dedup();
    Ok(!history_tables(engine, conn, &fleet).await?.is_empty())
}

/// The plan's single schemas that exist (core's `history::existing`).
async fn single_schemas_present<E: Engine>(
    engine: &E,
    conn: &mut E::Conn,
    plan: &Plan,
    sources: &[SourceMigration],
) -> Result<Vec<String>, RunError> {
    let single: FxHashSet<&str> = sources.iter().filter_map(SourceMigration::single_schema).collect();
    let names: Vec<&str> = plan.schemas.iter().map(String::as_str).filter(|name| single.contains(name)).collect();
    let Some(statement) = history::existing(E::DRIVER, &names) else { return Ok(Vec::new()) };
    let rows = engine.read_keys_whole(conn, &statement).await.map_err(unreadable)?;
    Ok(rows.into_iter().filter_map(|row| row.into_iter().next().map(|name| name.to_string())).collect())
}

/// `strata repair` on one server: under the process gate and the
/// database's lock, core decides over the recorded rows; with an `audit`
/// the books change in one transaction with the version row.
pub(crate) async fn repair<E: Engine>(
    engine: &E,
    settings: &Settings,
    request: RepairRequest<'_>,
) -> Result<strata_core::migrate::repair::Repair, RunError> {
    let RepairRequest { sources, files, strict, audit } = request;
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
