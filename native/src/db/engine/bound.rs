//! Statements with bound values, for the sqlx drivers: a backfill's batch
//! and its reads of keys (core's `migrate::backfill::sql` writes them; the
//! values are never written into their text). Key values travel as core's
//! `KeyValue`: an integer column as `Int`, anything else as `Text`
//! (PostgreSQL's reads select every key column as text, and its batches
//! cast each placeholder back to its column's type).

use sqlx::{AssertSqlSafe, ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Row, Type};
use strata_core::migrate::backfill::{Key, KeyValue};

use crate::db::books::RowsAffected;
use crate::db::engine::Failure;

/// Runs `sql` with `values` bound, in the caller's transaction (unprepared:
/// a pooler may hand the next transaction another server); the rows it
/// changed.
pub(crate) async fn execute<DB>(conn: &mut DB::Connection, sql: &str, values: &[KeyValue]) -> Result<u64, Failure>
where
    DB: Database + sqlx::database::HasStatementCache,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments: IntoArguments<DB>,
    DB::QueryResult: RowsAffected,
    i64: for<'q> Encode<'q, DB> + Type<DB>,
    String: for<'q> Encode<'q, DB> + Type<DB>,
{
    let mut query = sqlx::query::<DB>(AssertSqlSafe(sql.to_string())).persistent(false);
    for value in values {
        query = match value {
            KeyValue::Int(n) => query.bind(*n),
            KeyValue::Text(text) => query.bind(text.clone()),
        };
    }
    query.execute(conn).await.map(|done| done.count()).map_err(|error| Failure::from_sqlx(&error))
}

/// The rows of `sql` with `values` bound, each column as a key value (an
/// integer where the column decodes as one, else text; NULL is refused —
/// a key column holds no NULL the backfill could order).
pub(crate) async fn read<DB>(conn: &mut DB::Connection, sql: &str, values: &[KeyValue]) -> Result<Vec<Key>, Failure>
where
    DB: Database + sqlx::database::HasStatementCache,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments: IntoArguments<DB>,
    usize: ColumnIndex<DB::Row>,
    i64: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    String: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
{
    let mut query = sqlx::query::<DB>(AssertSqlSafe(sql.to_string())).persistent(false);
    for value in values {
        query = match value {
            KeyValue::Int(n) => query.bind(*n),
            KeyValue::Text(text) => query.bind(text.clone()),
        };
    }
    let rows = query.fetch_all(conn).await.map_err(|error| Failure::from_sqlx(&error))?;
    keys_of(&rows)
}

/// `rows` as [`read`] reads them: each column a key value.
pub(crate) fn keys_of<R>(rows: &[R]) -> Result<Vec<Key>, Failure>
where
    R: Row,
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    rows.iter().map(|row| (0..row.len()).map(|index| key_value(row, index)).collect()).collect()
}

/// Column `index` of `row` as a key value.
fn key_value<R>(row: &R, index: usize) -> Result<KeyValue, Failure>
where
    R: Row,
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    let unreadable = |what: &str| Failure::statement(format!("a backfill's key column {} {what}", index + 1));
    if let Ok(Some(n)) = row.try_get::<Option<i64>, _>(index) {
        return Ok(KeyValue::Int(n));
    }
    match row.try_get::<Option<String>, _>(index) {
        Ok(Some(text)) => Ok(KeyValue::Text(text)),
        Ok(None) => Err(unreadable("is NULL: keys must not be NULL to be ordered")),
        Err(_) => Err(unreadable("is neither an integer nor text (select it as text)")),
    }
}
