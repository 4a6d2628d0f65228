//! The fingerprints of the schemas a version committed something in,
//! stored after it (fleet drift compares them with the live catalogs).

use rustc_hash::FxHashMap;
use strata_core::migrate::fingerprint;
use strata_core::migrate::plan::{Plan, StepSet};
use strata_core::migrate::source::SourceMigration;

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
