//! Decoding the service's own rows, shared by the sqlx drivers: every
//! dialect selects the same columns in the same order (`books::sql`); `I` is the
//! integer type its database returns for `id` and `migration_type` (`i64` on
//! SQLite, `i32` on PostgreSQL and MySQL).

use std::marker::PhantomData;

use sqlx::{Column, ColumnIndex, Decode, Row, Type};
use strata_core::migrate::MigrationType;
use strata_core::migrate::plan::AppliedRow;
use strata_core::migrate::wave::Attributes;

use crate::db::error::DbError;

use crate::db::types::{
    BackfillColumns, BackfillJob, BackfillJobColumns, BackfillRow, MigrationRow, QuarantineRow, RolloutRow, TenantList,
    VersionRow,
};

fn get<'r, R, T>(row: &'r R, index: usize) -> Result<T, sqlx::Error>
where
    R: Row,
    usize: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get(index)
}

fn migration_type(code: i64, id: i64) -> Result<MigrationType, DbError> {
    MigrationType::from_code(code).ok_or(DbError::UnknownMigrationType { id, code })
}

/// The decoders of one dialect's rows: `R` its row, `I` its integer.
pub(crate) struct Rows<R, I>(PhantomData<fn() -> (R, I)>);

impl<R, I> Rows<R, I>
where
    R: Row,
    usize: ColumnIndex<R>,
    I: Into<i64> + for<'r> Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<I>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i32: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
{
    /// One row of `tenantSelectSQL`, added to `list` as it is read: the
    /// name from its first column, its other columns as the tenant's
    /// attributes (text, integers and booleans, read as text; NULL is no
    /// value). The first row names the attribute columns.
    pub(crate) fn push_tenant(list: &mut TenantList, row: &R) -> Result<(), DbError> {
        if list.names.is_empty() {
            list.attributes = Attributes::new(row.columns().iter().skip(1).map(|c| c.name().to_string()).collect());
        }
        let name: String = get(row, 0).map_err(|e| DbError::TenantSelectFailed(e.to_string()))?;
        if !list.attributes.columns.is_empty() {
            let values = (1..row.len()).map(|index| Self::attribute(row, index)).collect::<Result<_, _>>()?;
            list.attributes.values.insert(name.clone(), values);
        }
        list.names.push(name);
        Ok(())
    }

    /// Column `index` of a tenant row, as text.
    fn attribute(row: &R, index: usize) -> Result<Option<String>, DbError> {
        if let Ok(text) = get::<R, Option<String>>(row, index) {
            return Ok(text);
        }
        if let Ok(number) = get::<R, Option<i64>>(row, index) {
            return Ok(number.map(|n| n.to_string()));
        }
        if let Ok(number) = get::<R, Option<i32>>(row, index) {
            return Ok(number.map(|n| n.to_string()));
        }
        if let Ok(flag) = get::<R, Option<bool>>(row, index) {
            return Ok(flag.map(|b| b.to_string()));
        }
        Err(DbError::TenantSelectFailed(format!(
            "column {:?} of the tenant list is neither text, an integer nor a boolean (cast it to text)",
            row.columns()[index].name()
        )))
    }

    /// `filename, name, db_schema, migration_type, checksum`, borrowed
    /// from the row.
    pub(crate) fn applied(row: &R) -> Result<AppliedRow<'_>, DbError>
    where
        for<'r> &'r str: Decode<'r, R::Database> + Type<R::Database>,
    {
        Ok(AppliedRow {
            file: get(row, 0)?,
            name: get(row, 1)?,
            schema: get(row, 2)?,
            migration_type: migration_type(get::<R, I>(row, 3)?.into(), -1)?,
            checksum: get(row, 4)?,
        })
    }

    /// `id, name, created, request_id` (the parts of a sharded fleet are the
    /// fleet's to fill in).
    pub(crate) fn version(row: &R) -> Result<VersionRow, DbError> {
        Ok(VersionRow {
            id: get::<R, I>(row, 0)?.into(),
            name: get(row, 1)?,
            created: get(row, 2)?,
            request_id: get(row, 3)?,
            trace_id: get(row, 4)?,
            parts: Vec::new(),
        })
    }

    /// `id, name, migration_type, source_dir, filename, contents, checksum, db_schema, created`.
    pub(crate) fn migration(row: &R) -> Result<MigrationRow, DbError> {
        let id: i64 = get::<R, I>(row, 0)?.into();
        Ok(MigrationRow {
            id,
            name: get(row, 1)?,
            migration_type: migration_type(get::<R, I>(row, 2)?.into(), id)?,
            source_dir: get(row, 3)?,
            file: get(row, 4)?,
            contents: get(row, 5)?,
            checksum: get(row, 6)?,
            schema: get(row, 7)?,
            created: get(row, 8)?,
        })
    }

    /// `tenant, version_id, file, line, col, cause, message, request_id,
    /// quarantined, failures`.
    pub(crate) fn quarantine(row: &R) -> Result<QuarantineRow, DbError> {
        Ok(QuarantineRow {
            tenant: get(row, 0)?,
            version_id: get::<R, Option<I>>(row, 1)?.map(Into::into),
            file: get(row, 2)?,
            line: get::<R, Option<I>>(row, 3)?.map(Into::into),
            column: get::<R, Option<I>>(row, 4)?.map(Into::into),
            cause: get(row, 5)?,
            message: get(row, 6)?,
            request_id: get(row, 7)?,
            quarantined: get(row, 8)?,
            failures: get::<R, I>(row, 9)?.into(),
        })
    }

    /// `db_schema, file, state, after_key, upper_key, rows_done, batches,
    /// rows_estimated, last_error, updated, running_ms`.
    pub(crate) fn backfill(row: &R) -> Result<BackfillRow, DbError>
    where
        for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    {
        let (after, upper): (Option<String>, Option<String>) = (get(row, 3)?, get(row, 4)?);
        let count = |index: usize| get::<R, i64>(row, index);
        BackfillRow::from_columns(BackfillColumns {
            schema: get(row, 0)?,
            file: get(row, 1)?,
            state: &get::<R, String>(row, 2)?,
            after: after.as_deref(),
            upper: upper.as_deref(),
            counts: [count(5)?, count(6)?, count(7)?, count(10)?],
            last_error: get(row, 8)?,
            updated: get(row, 9)?,
        })
    }

    /// [`Rows::backfill`]'s columns, then `version_id, name, source_dir,
    /// migration_type, contents, checksum, forward, failure_budget`.
    pub(crate) fn backfill_job(row: &R) -> Result<BackfillJob, DbError>
    where
        for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    {
        let columns = BackfillJobColumns {
            version_id: get::<R, I>(row, 11)?.into(),
            migration_type: get::<R, I>(row, 14)?.into(),
            name: get(row, 12)?,
            source_dir: get(row, 13)?,
            contents: get(row, 15)?,
            checksum: get(row, 16)?,
            forward: get(row, 17)?,
            failure_budget: get(row, 18)?,
            started_version: get::<R, I>(row, 19)?.into(),
        };
        BackfillJob::from_columns(Self::backfill(row)?, columns)
    }

    /// `id, doc, revision`.
    pub(crate) fn rollout(row: &R) -> Result<RolloutRow, DbError> {
        Ok(RolloutRow { id: get::<R, I>(row, 0)?.into(), doc: get(row, 1)?, revision: get::<R, I>(row, 2)?.into() })
    }
}
