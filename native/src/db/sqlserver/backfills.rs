//! SQL Server's backfills: their rows in `svc.svc_backfills` (the books'
//! part `Books` asks for) and the reads and batches core writes for them
//! (`backfill::sql`, `@P1`… placeholders), values bound through
//! `sp_executesql`. No parameter is ever NULL (Babelfish refuses one): an
//! absent key is bound as empty text, which `nullif` stores as NULL (a key's
//! text, `backfill::encode_key`, is never empty).

use std::borrow::Cow;

use strata_core::migrate::backfill::{self, Key, KeyValue};
use strata_core::migrate::quarantine::FailureBudget;
use strata_core::migrate::source::SourceMigration;
use tiberius::{ColumnData, Row, ToSql};

use crate::db::engine::Failure;
use crate::db::error::DbError;
use crate::db::sqlserver::{
    Connection, big, db_error, execute, failure_of, id32, int, lock_not_granted, query, run, sql, text,
    within_statement_timeout,
};
use crate::db::types::{
    BackfillClaim, BackfillColumns, BackfillJob, BackfillJobColumns, BackfillRow, BackfillState, ClaimRoom,
};

/// Whether the books have `svc.svc_backfills` (books of an earlier
/// release do not until a read-write start adds it).
async fn installed(conn: &mut Connection) -> Result<bool, DbError> {
    let rows = query(conn, sql::BACKFILLS_INSTALLED, &[]).await?;
    Ok(rows.first().map(|row| int(row, 0)).transpose()?.unwrap_or(0) == 1)
}

/// Every backfill's row, by schema and file.
pub(super) async fn rows(conn: &mut Connection) -> Result<Vec<BackfillRow>, DbError> {
    if !installed(conn).await? {
        return Ok(Vec::new());
    }
    query(conn, &sql::select_backfills(), &[]).await?.iter().map(row).collect()
}

/// Schema `schema`'s backfill of `file`, as a runner takes it.
pub(super) async fn job(conn: &mut Connection, schema: &str, file: &str) -> Result<Option<BackfillJob>, DbError> {
    let rows = query(conn, &sql::select_backfill_jobs(false), &[&schema, &file]).await?;
    rows.first().map(job_of).transpose()
}

/// Every running backfill, as a runner takes it.
pub(super) async fn running(conn: &mut Connection) -> Result<Vec<BackfillJob>, DbError> {
    if !installed(conn).await? {
        return Ok(Vec::new());
    }
    query(conn, &sql::select_backfill_jobs(true), &[]).await?.iter().map(job_of).collect()
}

/// The running backfills of `file` version `started_version` started,
/// their rows.
pub(super) async fn running_of(
    conn: &mut Connection,
    started_version: i64,
    file: &str,
) -> Result<Vec<BackfillRow>, DbError> {
    let id = id32(started_version).ok_or(DbError::IdOutOfRange(started_version))?;
    query(conn, &sql::select_running_backfills_of(), &[&id, &file]).await?.iter().map(row).collect()
}

/// Starts `migration`'s backfill in `schema`, in version `version_id`
/// under its `budget`.
pub(super) async fn register(
    conn: &mut Connection,
    schema: &str,
    migration: &SourceMigration,
    (version_id, budget): (i64, FailureBudget),
    updated: &str,
) -> Result<(), DbError> {
    let id = id32(version_id).ok_or(DbError::IdOutOfRange(version_id))?;
    let code = migration.migration_type.code() as i32;
    let budget = budget.to_string();
    let params: [&dyn ToSql; 11] = [
        &schema,
        &migration.file,
        &updated,
        &id,
        &migration.name,
        &migration.source_dir,
        &code,
        &migration.contents,
        &migration.checksum,
        &migration.forward,
        &budget,
    ];
    execute(conn, sql::REGISTER_BACKFILL, &params).await.map(drop)
}

/// Starts a failed or cancelled backfill again in version `version_id`,
/// counted with the version that started it.
pub(super) async fn restart(
    conn: &mut Connection,
    schema: &str,
    file: &str,
    version_id: i64,
    updated: &str,
) -> Result<(), DbError> {
    let id = id32(version_id).ok_or(DbError::IdOutOfRange(version_id))?;
    execute(conn, sql::RESTART_BACKFILL, &[&id, &updated, &schema, &file]).await.map(drop)
}

/// How many of the backfills of `file` version `started_version` started
/// are in each state.
pub(super) async fn tally(
    conn: &mut Connection,
    started_version: i64,
    file: &str,
) -> Result<Vec<(BackfillState, usize)>, DbError> {
    let id = id32(started_version).ok_or(DbError::IdOutOfRange(started_version))?;
    let rows = query(conn, sql::TALLY_BACKFILLS, &[&id, &file]).await?;
    rows.iter().map(|row| Ok((BackfillState::parse(&text(row, 0)?), int(row, 1)?.max(0) as usize))).collect()
}

/// Each runner's count of running backfills it holds with a heartbeat at
/// or after `fresh_after`.
pub(super) async fn runners(conn: &mut Connection, fresh_after: i64) -> Result<Vec<(String, usize)>, DbError> {
    if !installed(conn).await? {
        return Ok(Vec::new());
    }
    let rows = query(conn, sql::BACKFILL_RUNNERS, &[&fresh_after]).await?;
    runner_counts(&rows)
}

/// Each runner's count of claims, from the rows of [`sql::BACKFILL_RUNNERS`].
fn runner_counts(rows: &[Row]) -> Result<Vec<(String, usize)>, DbError> {
    rows.iter().map(|row| Ok((text(row, 0)?, int(row, 1)?.max(0) as usize))).collect()
}

/// Claims a running backfill; whether this holder has it.
pub(super) async fn claim(conn: &mut Connection, claim: &BackfillClaim<'_>) -> Result<bool, DbError> {
    let params: [&dyn ToSql; 5] = [&claim.holder, &claim.now_ms, &claim.schema, &claim.file, &claim.stale_before_ms];
    Ok(execute(conn, sql::CLAIM_BACKFILL, &params).await? == 1)
}

/// [`claim`] when `room`, shown the runners on the server now ([`runners`]),
/// says one more may run: read and claimed in one transaction holding the
/// claims' application lock ([`sql::CLAIMS_LOCK`]); whether this holder has
/// it.
pub(super) async fn claim_in_turn(
    conn: &mut Connection,
    claim: &BackfillClaim<'_>,
    fresh_after: i64,
    room: &mut ClaimRoom<'_>,
) -> Result<bool, DbError> {
    run(conn, sql::BEGIN_CLAIM).await?;
    let claimed = async {
        let rows = query(conn, sql::CLAIMS_LOCK, &[]).await?;
        match rows.first().map(|row| int(row, 0)).transpose()? {
            Some(code) if code >= 0 => {}
            other => return Err(lock_not_granted(other, sql::CLAIMS_LOCK_RESOURCE)),
        }
        let rows = query(conn, sql::BACKFILL_RUNNERS, &[&fresh_after]).await?;
        if !room(&runner_counts(&rows)?) {
            return Ok(false);
        }
        self::claim(conn, claim).await
    }
    .await;
    let end = match claimed {
        Ok(true) => sql::COMMIT,
        _ => sql::ROLLBACK,
    };
    match (claimed, run(conn, end).await) {
        (Err(error), _) | (Ok(_), Err(error)) => Err(error),
        (Ok(claimed), Ok(())) => Ok(claimed),
    }
}

/// Writes `row`'s checkpoint when `holder` still holds it and its batches
/// are still `batches_before`: whether it was written.
pub(super) async fn save(
    conn: &mut Connection,
    row: &BackfillRow,
    holder: &str,
    batches_before: u64,
    heartbeat: i64,
) -> Result<bool, DbError> {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let progress = &row.progress;
    let key = |key: &Option<Key>| key.as_ref().map(backfill::encode_key).unwrap_or_default();
    let (after, upper) = (key(&progress.after), key(&progress.upper));
    let counts =
        [progress.rows_done, progress.batches, progress.rows_estimated, progress.running_ms, batches_before].map(count);
    let params: [&dyn ToSql; 13] = [
        &row.state.as_str(),
        &after,
        &upper,
        &counts[0],
        &counts[1],
        &counts[2],
        &counts[3],
        &row.updated,
        &heartbeat,
        &row.schema,
        &row.file,
        &holder,
        &counts[4],
    ];
    Ok(execute(conn, sql::SAVE_BACKFILL, &params).await? == 1)
}

/// Marks `row` failed with its error, when `holder` holds it.
pub(super) async fn fail(conn: &mut Connection, row: &BackfillRow, holder: &str) -> Result<(), DbError> {
    let error = row.last_error.clone().unwrap_or_default();
    let params: [&dyn ToSql; 5] = [&error, &row.updated, &row.schema, &row.file, &holder];
    execute(conn, sql::FAIL_BACKFILL, &params).await.map(drop)
}

/// Moves each of `rows` from its state to `to`: whether each moved.
pub(super) async fn move_to(
    conn: &mut Connection,
    rows: &[BackfillRow],
    to: BackfillState,
    updated: &str,
) -> Result<Vec<bool>, DbError> {
    if rows.is_empty() || !installed(conn).await? {
        return Ok(vec![false; rows.len()]);
    }
    let mut moved = Vec::with_capacity(rows.len());
    for row in rows {
        let params: [&dyn ToSql; 5] = [&to.as_str(), &updated, &row.schema, &row.file, &row.state.as_str()];
        moved.push(execute(conn, sql::MOVE_BACKFILL, &params).await? == 1);
    }
    Ok(moved)
}

/// A backfill's row (`sql::select_backfills`' columns).
fn row(row: &Row) -> Result<BackfillRow, DbError> {
    let optional = |index: usize| row.try_get::<&str, _>(index).map_err(db_error);
    BackfillRow::from_columns(BackfillColumns {
        schema: text(row, 0)?,
        file: text(row, 1)?,
        state: &text(row, 2)?,
        after: optional(3)?,
        upper: optional(4)?,
        counts: [big(row, 5)?, big(row, 6)?, big(row, 7)?, big(row, 10)?],
        last_error: optional(8)?.map(str::to_string),
        updated: text(row, 9)?,
    })
}

/// [`row`]'s columns, then `version_id, name, source_dir,
/// migration_type, contents, checksum, forward, failure_budget`, the
/// started version.
fn job_of(found: &Row) -> Result<BackfillJob, DbError> {
    let columns = BackfillJobColumns {
        version_id: i64::from(int(found, 11)?),
        migration_type: i64::from(int(found, 14)?),
        name: text(found, 12)?,
        source_dir: text(found, 13)?,
        contents: text(found, 15)?,
        checksum: text(found, 16)?,
        forward: text(found, 17)?,
        failure_budget: found.try_get::<&str, _>(18).map_err(db_error)?.map(str::to_string),
        started_version: i64::from(int(found, 19)?),
    };
    BackfillJob::from_columns(row(found)?, columns)
}

/// `values` as parameters: an integer as `bigint`, text as `nvarchar`.
fn bound(values: &[KeyValue]) -> Vec<&dyn ToSql> {
    values
        .iter()
        .map(|value| match value {
            KeyValue::Int(n) => n as &dyn ToSql,
            KeyValue::Text(text) => text as &dyn ToSql,
        })
        .collect()
}

/// Runs a backfill's batch, `sql` with `values` bound, in the open
/// transaction, within the session's statement time-out: the rows it
/// changed.
pub(super) async fn execute_bound(conn: &mut Connection, sql: &str, values: &[KeyValue]) -> Result<u64, Failure> {
    let bound = bound(values);
    within_statement_timeout(conn, 0, async |conn| conn.execute(sql, &bound).await.map(|done| done.total())).await
}

/// The rows of a backfill's read, `sql` with `values` bound, each column a
/// key value.
pub(super) async fn read_keys(conn: &mut Connection, sql: &str, values: &[KeyValue]) -> Result<Vec<Key>, Failure> {
    let read = match conn.query(sql, &bound(values)).await {
        Ok(stream) => stream.into_first_result().await,
        Err(error) => Err(error),
    };
    let rows = read.map_err(|error| failure_of(error, 0))?;
    rows.iter().map(|row| row.cells().enumerate().map(|(index, (_, cell))| key_value(index, cell)).collect()).collect()
}

/// A key column's value: an integer column's as an integer; text or a
/// `uniqueidentifier` as text (the server converts it back when it is
/// bound). NULL and other types are refused.
fn key_value(index: usize, cell: &ColumnData<'_>) -> Result<KeyValue, Failure> {
    let unreadable = |what: &str| Failure::statement(format!("a backfill's key column {} {what}", index + 1));
    let value = match cell {
        ColumnData::U8(Some(n)) => KeyValue::Int(i64::from(*n)),
        ColumnData::I16(Some(n)) => KeyValue::Int(i64::from(*n)),
        ColumnData::I32(Some(n)) => KeyValue::Int(i64::from(*n)),
        ColumnData::I64(Some(n)) => KeyValue::Int(*n),
        ColumnData::String(Some(text)) => KeyValue::Text(Cow::clone(text).into_owned()),
        ColumnData::Guid(Some(guid)) => KeyValue::Text(guid.to_string()),
        ColumnData::U8(None)
        | ColumnData::I16(None)
        | ColumnData::I32(None)
        | ColumnData::I64(None)
        | ColumnData::String(None)
        | ColumnData::Guid(None) => return Err(unreadable("is NULL: keys must not be NULL to be ordered")),
        _ => return Err(unreadable("is neither an integer, text nor a uniqueidentifier (select it as text)")),
    };
    Ok(value)
}
