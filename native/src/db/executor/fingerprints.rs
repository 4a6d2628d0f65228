//! The fingerprints of the schemas a version committed something in,
//! stored after it — or, where the engine can, each tenant's as soon as
//! its last unit committed, beside the units still running
//! ([`print_beside`]) — fleet drift compares them with the live catalogs.

use rustc_hash::FxHashMap;
use strata_core::migrate::fingerprint;
use strata_core::migrate::plan::{Plan, StepSet, recorded_of};
use strata_core::migrate::source::SourceMigration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::db::books::Books;
use crate::db::engine::{self, Engine};
use crate::db::error::DbError;
use crate::db::types::VersionRow;

/// The version a run left and the schemas it committed something in,
/// whose fingerprints are then stored: every schema of the plan when the
/// version completed; those committed or partly when it stopped.
pub(super) fn committed_schemas(
    plan: &Plan,
    result: &Result<Option<VersionRow>, DbError>,
) -> Option<(i64, Vec<String>)> {
    match result {
        Ok(Some(version)) => Some((version.id, plan.schemas.iter().chain(&plan.new_tenant).cloned().collect())),
        Err(DbError::MigrationFailed(failure)) => failure
            .version_id
            .map(|id| (id, failure.committed.iter().chain(&failure.partly_committed).cloned().collect())),
        _ => None,
    }
}

/// Each plan schema's recorded migrations after the version, by name,
/// from the plan and the steps that committed (core's
/// `Plan::recorded_after`), when the plan knows them.
pub(super) fn recorded_after(
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
pub(super) async fn store_fingerprints<E: Engine>(
    engine: &E,
    conns: &mut [E::Conn],
    mut schemas: Vec<String>,
    version_id: i64,
    known: Option<FxHashMap<String, fingerprint::Recorded>>,
) {
    if !E::KEEPS.catalogs {
        return;
    }
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
    if let Err(error) = stored {
        tracing::warn!(%error, "the schemas' fingerprints could not be stored");
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

/// A tenant whose unit committed, for [`print_beside`]: its index in the
/// plan's schemas, the version, and what it records (core's
/// `Plan::recorded_after_unit`).
pub(super) type Finished = (u32, i64, Vec<u64>);

/// Where the executor sends each [`Finished`] tenant.
pub(super) type Feed = UnboundedSender<Finished>;

/// Stores the fingerprint of each tenant `finished` sends while the units
/// still run ([`Engine::PRINTS_BESIDE_UNITS`]; valid when core's
/// `Plan::tenant_units_are_final`): [`engine::CATALOGS_PER_READ`] tenants
/// at a time, read and written on a connection of its own, so that after
/// the last unit only the last batch is left. Returns the plan schemas it
/// stored; the wind-down stores the others as before. Best effort: after a
/// failure (logged) it stores nothing more and leaves the rest to the
/// wind-down.
pub(super) async fn print_beside<E: Engine>(
    engine: &E,
    plan: &Plan,
    sources: &[SourceMigration],
    mut finished: UnboundedReceiver<Finished>,
) -> Vec<u32> {
    let mut printed = Vec::new();
    let mut conn: Option<E::Conn> = None;
    let mut identities: FxHashMap<Vec<u64>, fingerprint::Recorded> = FxHashMap::default();
    let mut batch: Vec<Finished> = Vec::with_capacity(engine::CATALOGS_PER_READ);
    let mut failed = false;
    loop {
        let open = match finished.recv().await {
            Some(tenant) => {
                batch.push(tenant);
                true
            }
            None => false,
        };
        if failed || (open && batch.len() < engine::CATALOGS_PER_READ) || batch.is_empty() {
            if failed {
                batch.clear();
            }
            if open {
                continue;
            }
            break;
        }
        let stored = async {
            if conn.is_none() {
                conn = Some(engine.connect().await?);
            }
            let conn = conn.as_mut().expect("opened above");
            let names: Vec<String> = batch.iter().map(|(schema, ..)| plan.schemas[*schema as usize].clone()).collect();
            let prints = engine.catalog_prints(std::slice::from_mut(conn), &names).await?;
            // One run, one version: every tenant of the batch carries its id.
            let version_id = batch[0].1;
            let recorded: Vec<std::sync::Arc<str>> = batch
                .iter()
                .map(|(_, _, bits)| {
                    identities.entry(bits.clone()).or_insert_with(|| recorded_of(sources, bits)).identity.clone()
                })
                .collect();
            let rows: Vec<(&str, &str, &str)> = names
                .iter()
                .zip(&prints)
                .zip(&recorded)
                .map(|((name, print), identity)| (name.as_str(), print.as_str(), &**identity))
                .collect();
            engine.books().store_fingerprints(conn, &rows, version_id).await?;
            Ok::<_, DbError>(())
        }
        .await;
        match stored {
            Ok(()) => printed.extend(batch.drain(..).map(|(schema, ..)| schema)),
            Err(error) => {
                tracing::warn!(%error, "fingerprints could not be stored beside the units; they are stored after the last one");
                failed = true;
                batch.clear();
            }
        }
        if !open {
            break;
        }
    }
    tracing::debug!(tenants = printed.len(), "fingerprints stored while the units ran");
    printed
}
