//! The books of the three sqlx engines (PostgreSQL, MySQL/MariaDB,
//! SQLite), read and written once: [`SqlxBooks`] over a sqlx database and
//! its dialect's statements (`books::sql`). What differs between them
//! beyond their SQL is a field, not three copies:
//!
//! - `pooler_safe` (PostgreSQL): statements with the extended protocol run
//!   unprepared, and — unless the caller's transaction is open — inside a
//!   transaction of their own, so nothing depends on a prepared statement
//!   or a server session outliving one transaction, which a pooler in
//!   transaction mode (PgBouncer) cannot keep.
//! - `I`: the integer type of ids in the dialect's rows (`i32` on
//!   PostgreSQL and MySQL, `i64` on SQLite).

use rustc_hash::FxHashMap;
use std::marker::PhantomData;

use sqlx::database::HasStatementCache;
use sqlx::{AssertSqlSafe, ColumnIndex, Connection, Database, Decode, Encode, Executor, IntoArguments, Type};

use futures::TryStreamExt;
use strata_core::auth::audit::{Entry, Sealed};
use strata_core::auth::token::StoredToken;
use strata_core::migrate::MigrationType;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::fingerprint::{Digests, Recorded, RecordedBySchema, Stored};
use strata_core::migrate::quarantine::FailureBudget;
use strata_core::migrate::repair::Repair;
use strata_core::migrate::shard::{Directory, DirectoryChanges};

use crate::db::books::rows::Rows;
use crate::db::books::sql::{BackfillSql, BooksSql, Literal, written};
use crate::db::books::{AppliedSink, Books, PageOfNames};
use crate::db::error::{DbError, describe};
use strata_core::migrate::backfill;

use strata_core::migrate::source::SourceMigration;

use crate::db::types::{
    Audit, AuditWindow, BackfillClaim, BackfillJob, BackfillRow, BackfillState, ClaimRoom, MigrationFilter,
    MigrationRow, NewVersion, QuarantineRow, Record, RolloutRow, TenantList, VersionFilter, VersionRow, VersionWindow,
};

/// How many rows a statement changed, and the id it inserted where the
/// database says so, whichever the database.
pub(crate) trait RowsAffected {
    /// The count.
    fn count(&self) -> u64;
    /// The id of the row inserted (MySQL's `LAST_INSERT_ID`); `None` where
    /// an insert returns its id itself.
    fn inserted_id(&self) -> Option<u64> {
        None
    }
}

impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn count(&self) -> u64 {
        self.rows_affected()
    }
}

impl RowsAffected for sqlx::mysql::MySqlQueryResult {
    fn count(&self) -> u64 {
        self.rows_affected()
    }

    fn inserted_id(&self) -> Option<u64> {
        Some(self.last_insert_id())
    }
}

impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn count(&self) -> u64 {
        self.rows_affected()
    }
}

/// The books of one database, in its dialect.
pub(crate) struct SqlxBooks<DB, I> {
    sql: &'static BooksSql,
    pooler_safe: bool,
    tenant_select_sql: String,
    /// `tenantSelectSQL` counted in the database (when the tokenizer reads
    /// it as one statement).
    tenant_count_sql: Option<String>,
    /// A page of `tenantSelectSQL` in the database, where the dialect can
    /// (`books::sql::tenant_page`).
    tenant_page_sql: Option<String>,
    /// `svc_tokens.owner` was seen (it stays: asked until it is).
    token_owner_seen: std::sync::atomic::AtomicBool,
    /// `svc_versions.trace_id` was seen (it stays: asked until it is).
    version_trace_seen: std::sync::atomic::AtomicBool,
    /// `svc_audit.signature` was seen (it stays: asked until it is).
    audit_signature_seen: std::sync::atomic::AtomicBool,
    /// `svc_audit.trace_id` was seen (it stays: asked until it is).
    audit_trace_seen: std::sync::atomic::AtomicBool,
    _types: PhantomData<fn() -> (DB, I)>,
}

type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as Database>::Arguments>;

/// `query` with `values` bound in order (a null as text's).
fn bound<'q, DB>(mut query: Query<'q, DB>, values: &[Literal<'_>]) -> Query<'q, DB>
where
    DB: Database,
    String: for<'e> Encode<'e, DB> + Type<DB>,
    i64: for<'e> Encode<'e, DB> + Type<DB>,
    Option<String>: for<'e> Encode<'e, DB> + Type<DB>,
{
    for value in values {
        query = match *value {
            Literal::Text(text) => query.bind(text.to_string()),
            Literal::Int(n) => query.bind(n),
            Literal::Null => query.bind(None::<String>),
        };
    }
    query
}

/// Each runner's count of claims, from the rows of [`crate::db::books::sql::BackfillSql::runners`]
/// (`holder, count`).
fn runner_counts<R: sqlx::Row>(rows: &[R]) -> Result<Vec<(String, usize)>, sqlx::Error>
where
    usize: ColumnIndex<R>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    rows.iter()
        .map(|row| {
            let holder: String = row.try_get(0)?;
            let count: i64 = row.try_get(1)?;
            Ok((holder, usize::try_from(count).unwrap_or(0)))
        })
        .collect()
}

/// The values [`crate::db::books::sql::BackfillSql::claim`] binds, in order.
fn claim_values<'a>(claim: &BackfillClaim<'a>) -> [Literal<'a>; 6] {
    [
        Literal::Text(claim.holder),
        Literal::Int(claim.now_ms),
        Literal::Text(claim.schema),
        Literal::Text(claim.file),
        Literal::Text(claim.holder),
        Literal::Int(claim.stale_before_ms),
    ]
}

impl<DB, I> SqlxBooks<DB, I> {
    /// The books in `sql`'s dialect (of `driver`); `tenant_select_sql`
    /// lists the tenants.
    pub(crate) fn new(sql: &'static BooksSql, driver: Driver, pooler_safe: bool, tenant_select_sql: &str) -> Self {
        let subquery = strata_core::migrate::statements::subquery(driver, tenant_select_sql);
        SqlxBooks {
            sql,
            pooler_safe,
            tenant_select_sql: tenant_select_sql.to_string(),
            tenant_count_sql: subquery.as_deref().map(crate::db::books::sql::tenant_count),
            tenant_page_sql: subquery
                .and_then(|subquery| crate::db::books::sql::tenant_page(sql.tenant_page, &subquery)),
            token_owner_seen: std::sync::atomic::AtomicBool::new(false),
            version_trace_seen: std::sync::atomic::AtomicBool::new(false),
            audit_signature_seen: std::sync::atomic::AtomicBool::new(false),
            audit_trace_seen: std::sync::atomic::AtomicBool::new(false),
            _types: PhantomData,
        }
    }
}

impl<DB, I> SqlxBooks<DB, I>
where
    DB: Database + HasStatementCache,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    DB::QueryResult: RowsAffected,
    usize: ColumnIndex<DB::Row>,
    I: TryFrom<i64> + Into<i64> + Send + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB> + 'static,
    Option<I>: for<'q> Encode<'q, DB> + Type<DB>,
    String: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    i64: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    Option<i64>: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    Option<String>: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    i32: for<'r> Decode<'r, DB> + Type<DB>,
    bool: for<'r> Decode<'r, DB> + Type<DB>,
    for<'r> &'r str: Decode<'r, DB>,
{
    fn query(&self, sql: &'static str) -> Query<'static, DB> {
        sqlx::query(sql).persistent(!self.pooler_safe)
    }

    /// `n` as the dialect's integer.
    fn int(n: i64) -> Result<I, DbError> {
        I::try_from(n).map_err(|_| DbError::IdOutOfRange(n))
    }

    /// The rows of `query`, run outside any transaction of the caller's.
    async fn rows<'q>(&self, conn: &mut DB::Connection, query: Query<'q, DB>) -> Result<Vec<DB::Row>, sqlx::Error> {
        if !self.pooler_safe {
            return query.fetch_all(conn).await;
        }
        let mut tx = conn.begin().await?;
        let rows = query.fetch_all(&mut *tx).await?;
        tx.commit().await?;
        Ok(rows)
    }

    /// Runs `query` outside any transaction of the caller's.
    async fn change<'q>(
        &self,
        conn: &mut DB::Connection,
        query: Query<'q, DB>,
    ) -> Result<DB::QueryResult, sqlx::Error> {
        if !self.pooler_safe {
            return query.execute(conn).await;
        }
        let mut tx = conn.begin().await?;
        let done = query.execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done)
    }

    /// [`SqlxBooks::change`] of `sql` with `values`: sent whole, the values
    /// written in, where the dialect says so ([`BooksSql::quote`]: one
    /// round trip, and a statement alone is its own transaction); else
    /// bound.
    async fn change_written(
        &self,
        conn: &mut DB::Connection,
        sql: &'static str,
        values: &[Literal<'_>],
    ) -> Result<DB::QueryResult, sqlx::Error> {
        match self.sql.quote {
            Some(_) => self.execute_values(conn, sql, values).await,
            None => self.change(conn, bound(self.query(sql), values)).await,
        }
    }

    /// `sql` with `values`, in the caller's transaction if one is open:
    /// sent whole, the values written in, where the dialect says so
    /// ([`BooksSql::quote`]); else bound.
    async fn execute_values(
        &self,
        conn: &mut DB::Connection,
        sql: &'static str,
        values: &[Literal<'_>],
    ) -> Result<DB::QueryResult, sqlx::Error> {
        match self.sql.quote {
            Some(quote) => sqlx::raw_sql(AssertSqlSafe(written(sql, values, quote))).execute(conn).await,
            None => bound(self.query(sql), values).execute(conn).await,
        }
    }

    /// Inserts one row and returns its id: read back by the statement's
    /// `returning id` where the dialect has it, else the connection's last
    /// insert id. `alone`: outside the caller's transaction.
    async fn insert<'q>(&self, conn: &mut DB::Connection, query: Query<'q, DB>, alone: bool) -> Result<i64, DbError> {
        let missing = || DbError::UnexpectedAnswer("no id after an insert".into());
        if self.sql.returns_id {
            let rows = match alone {
                true => self.rows(conn, query).await?,
                false => query.fetch_all(conn).await?,
            };
            let id: I = sqlx::Row::try_get(rows.first().ok_or_else(missing)?, 0)?;
            return Ok(id.into());
        }
        let done = match alone {
            true => self.change(conn, query).await?,
            false => query.execute(conn).await?,
        };
        let id = done.inserted_id().ok_or_else(missing)?;
        i64::try_from(id).map_err(|_| DbError::UnexpectedAnswer(format!("id {id} after an insert")))
    }

    /// Whether a table is there (`statement` counts it).
    async fn exists(&self, conn: &mut DB::Connection, statement: &'static str) -> Result<bool, DbError> {
        let rows = self.rows(conn, self.query(statement)).await?;
        let count: i64 = rows.first().map(|row| sqlx::Row::try_get(row, 0)).transpose()?.unwrap_or(0);
        Ok(count > 0)
    }

    /// Whether the column `column` counts is there, remembered in `seen`
    /// once it is (columns are added, never removed).
    async fn column_seen(
        &self,
        conn: &mut DB::Connection,
        (seen, column): (&std::sync::atomic::AtomicBool, &'static str),
    ) -> Result<bool, DbError> {
        use std::sync::atomic::Ordering;
        let there = seen.load(Ordering::Relaxed) || self.exists(conn, column).await?;
        seen.store(there, Ordering::Relaxed);
        Ok(there)
    }

    /// The rows of a table with a column added in a later release (none
    /// before the table exists, `table`): read with `with` once the column
    /// `column` counts is there (remembered in `seen`), else with
    /// `without` (books of an earlier release, read before a read-write
    /// start adds the column).
    async fn rows_with_added_column(
        &self,
        conn: &mut DB::Connection,
        table: &'static str,
        (seen, column): (&std::sync::atomic::AtomicBool, &'static str),
        with: &'static str,
        without: &'static str,
    ) -> Result<Vec<DB::Row>, DbError> {
        if !self.exists(conn, table).await? {
            return Ok(Vec::new());
        }
        let select = if self.column_seen(conn, (seen, column)).await? { with } else { without };
        Ok(self.rows(conn, self.query(select)).await?)
    }

    /// A window of versions, read as a page in the database (`limit`), in
    /// id order.
    async fn version_window(
        &self,
        conn: &mut DB::Connection,
        window: VersionWindow,
        traced: bool,
    ) -> Result<Vec<VersionRow>, DbError> {
        // Ids are the engine's integers: a bound past their range is none.
        let bound = |id: Option<i64>, none: i64| Self::int(id.unwrap_or(none).clamp(0, i64::from(i32::MAX)));
        let many = |count: Option<u32>| Self::int(i64::from(count.unwrap_or(i32::MAX as u32).min(i32::MAX as u32)));
        let (statement, from, count) = match window {
            VersionWindow::First { after, count } => {
                (self.sql.select_versions_after.of(traced), bound(after, 0)?, count)
            }
            VersionWindow::Last { before, count } => {
                (self.sql.select_versions_before.of(traced), bound(before, i64::from(i32::MAX))?, count)
            }
        };
        let rows = self.rows(conn, self.query(statement).bind(from).bind(many(count)?)).await?;
        let mut versions: Vec<VersionRow> = rows.iter().map(Rows::<DB::Row, I>::version).collect::<Result<_, _>>()?;
        if let VersionWindow::Last { .. } = window {
            versions.reverse();
        }
        Ok(versions)
    }

    /// The tenant list, each row folded in as it arrives (never every
    /// decoded row at once: what is held is the list, not the rows).
    async fn stream_tenants(&self, conn: &mut DB::Connection) -> Result<TenantList, DbError> {
        let query = sqlx::query(AssertSqlSafe(self.tenant_select_sql.clone())).persistent(!self.pooler_safe);
        let mut rows = query.fetch(conn);
        let mut list = TenantList::default();
        while let Some(row) = rows.try_next().await.map_err(|e| DbError::TenantSelectFailed(describe(&e)))? {
            Rows::<DB::Row, I>::push_tenant(&mut list, &row)?;
        }
        Ok(list)
    }

    /// A page of the tenant list ([`Books::tenant_page`]): asked of the
    /// database where the dialect can, else kept as the list streams by
    /// (the `first` smallest names after `after`, never the whole list).
    async fn read_tenant_page(
        &self,
        conn: &mut DB::Connection,
        after: Option<&str>,
        first: Option<usize>,
    ) -> Result<Vec<String>, DbError> {
        let failed = |e: sqlx::Error| DbError::TenantSelectFailed(describe(&e));
        if let Some(page) = &self.tenant_page_sql {
            let limit = first.map(|first| i64::try_from(first).unwrap_or(i64::MAX));
            let query = sqlx::query(AssertSqlSafe(page.clone()))
                .persistent(!self.pooler_safe)
                .bind(after.map(str::to_string))
                .bind(limit);
            let mut rows = query.fetch(conn);
            let mut names = Vec::new();
            while let Some(row) = rows.try_next().await.map_err(failed)? {
                names.push(sqlx::Row::try_get::<String, _>(&row, 0).map_err(failed)?);
            }
            return Ok(names);
        }
        let mut page = PageOfNames::new(after, first);
        let query = sqlx::query(AssertSqlSafe(self.tenant_select_sql.clone())).persistent(!self.pooler_safe);
        let mut rows = query.fetch(conn);
        while let Some(row) = rows.try_next().await.map_err(failed)? {
            page.offer(sqlx::Row::try_get(&row, 0).map_err(failed)?);
        }
        Ok(page.into_names())
    }

    /// Hands each recorded migration to `sink` as its row arrives.
    async fn stream_applied(&self, conn: &mut DB::Connection, sink: &mut AppliedSink<'_>) -> Result<(), DbError> {
        let mut rows = self.query(&self.sql.select_applied).fetch(conn);
        while let Some(row) = rows.try_next().await? {
            sink(Rows::<DB::Row, I>::applied(&row)?);
        }
        Ok(())
    }

    /// The stored fingerprints, each interned as its row arrives.
    async fn stream_fingerprints(&self, conn: &mut DB::Connection) -> Result<Vec<(String, Stored)>, DbError> {
        let mut digests = Digests::default();
        let mut stored = Vec::new();
        let mut rows = self.query(&self.sql.select_fingerprints).fetch(conn);
        while let Some(row) = rows.try_next().await? {
            let (fingerprint, recorded): (&str, &str) = (sqlx::Row::try_get(&row, 1)?, sqlx::Row::try_get(&row, 2)?);
            let print = Stored { fingerprint: digests.intern(fingerprint), recorded: digests.intern(recorded) };
            stored.push((sqlx::Row::try_get(&row, 0)?, print));
        }
        Ok(stored)
    }

    async fn fold_recorded(&self, conn: &mut DB::Connection) -> Result<FxHashMap<String, Recorded>, DbError> {
        let mut rows = self.query(&self.sql.select_recorded).fetch(conn);
        let mut fold = RecordedBySchema::default();
        while let Some(row) = rows.try_next().await? {
            let schema: String = sqlx::Row::try_get(&row, 0)?;
            let code: I = sqlx::Row::try_get(&row, 3)?;
            let code: i64 = code.into();
            let kind = MigrationType::from_code(code).ok_or(DbError::UnknownMigrationType { id: -1, code })?;
            fold.push(&schema, sqlx::Row::try_get(&row, 1)?, sqlx::Row::try_get(&row, 2)?, kind);
        }
        Ok(fold.finish())
    }
}

/// A connection of an engine the books use: the sqlx connection under it.
pub(crate) trait SqlxConn<DB: Database>: Send {
    /// The connection.
    fn sqlx(&mut self) -> &mut DB::Connection;
}

impl<DB: Database> SqlxConn<DB> for sqlx::pool::PoolConnection<DB> {
    fn sqlx(&mut self) -> &mut DB::Connection {
        self
    }
}

#[async_trait::async_trait]
impl<DB, I, C> Books<C> for SqlxBooks<DB, I>
where
    C: SqlxConn<DB> + 'static,
    DB: Database + HasStatementCache,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    DB::QueryResult: RowsAffected,
    usize: ColumnIndex<DB::Row>,
    I: TryFrom<i64> + Into<i64> + Send + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB> + 'static,
    Option<I>: for<'q> Encode<'q, DB> + Type<DB>,
    String: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    i64: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    Option<i64>: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    Option<String>: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    i32: for<'r> Decode<'r, DB> + Type<DB>,
    bool: for<'r> Decode<'r, DB> + Type<DB>,
    for<'r> &'r str: Decode<'r, DB>,
{
    async fn installed(&self, conn: &mut C) -> Result<bool, DbError> {
        let conn = conn.sqlx();
        self.exists(conn, &self.sql.installed).await
    }

    async fn tenants(&self, conn: &mut C) -> Result<TenantList, DbError> {
        let conn = conn.sqlx();
        let failed = |e: sqlx::Error| DbError::TenantSelectFailed(describe(&e));
        if !self.pooler_safe {
            return self.stream_tenants(conn).await;
        }
        let mut tx = conn.begin().await.map_err(failed)?;
        let list = self.stream_tenants(&mut tx).await?;
        tx.commit().await.map_err(failed)?;
        Ok(list)
    }

    async fn tenant_page(
        &self,
        conn: &mut C,
        after: Option<&str>,
        first: Option<usize>,
    ) -> Result<Vec<String>, DbError> {
        let conn = conn.sqlx();
        if !self.pooler_safe {
            return self.read_tenant_page(conn, after, first).await;
        }
        let failed = |e: sqlx::Error| DbError::TenantSelectFailed(describe(&e));
        let mut tx = conn.begin().await.map_err(failed)?;
        let page = self.read_tenant_page(&mut tx, after, first).await?;
        tx.commit().await.map_err(failed)?;
        Ok(page)
    }

    async fn tenant_count(&self, conn: &mut C) -> Result<u64, DbError> {
        let failed = |e: sqlx::Error| DbError::TenantSelectFailed(describe(&e));
        let Some(count) = &self.tenant_count_sql else { return Ok(self.tenants(conn).await?.names.len() as u64) };
        // No value bound: one message, no transaction needed behind a pooler.
        let row = sqlx::raw_sql(AssertSqlSafe(count.clone())).fetch_one(conn.sqlx()).await.map_err(failed)?;
        let count: i64 = sqlx::Row::try_get(&row, 0).map_err(failed)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn each_applied(&self, conn: &mut C, sink: &mut AppliedSink<'_>) -> Result<(), DbError> {
        let conn = conn.sqlx();
        if !self.pooler_safe {
            return self.stream_applied(conn, sink).await;
        }
        let mut tx = conn.begin().await?;
        self.stream_applied(&mut tx, sink).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn recorded(&self, conn: &mut C) -> Result<FxHashMap<String, Recorded>, DbError> {
        let conn = conn.sqlx();
        if !self.pooler_safe {
            return self.fold_recorded(conn).await;
        }
        let mut tx = conn.begin().await?;
        let recorded = self.fold_recorded(&mut tx).await?;
        tx.commit().await?;
        Ok(recorded)
    }

    async fn versions(&self, conn: &mut C, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError> {
        let conn = conn.sqlx();
        let traced = self.column_seen(conn, (&self.version_trace_seen, &self.sql.version_trace_installed)).await?;
        let rows = match filter {
            VersionFilter::All => self.rows(conn, self.query(self.sql.select_versions.of(traced))).await?,
            VersionFilter::ApplyingFile(file) => {
                let query = self.query(self.sql.select_versions_by_file.of(traced)).bind(file.to_string());
                self.rows(conn, query).await?
            }
            VersionFilter::Id(id) => {
                self.rows(conn, self.query(self.sql.select_version.of(traced)).bind(Self::int(id)?)).await?
            }
            VersionFilter::Window(window) => return self.version_window(conn, window, traced).await,
        };
        rows.iter().map(Rows::<DB::Row, I>::version).collect()
    }

    async fn version_count(&self, conn: &mut C) -> Result<u64, DbError> {
        let rows = self.rows(conn.sqlx(), self.query(&self.sql.count_versions)).await?;
        let count: i64 = rows.first().map(|row| sqlx::Row::try_get(row, 0)).transpose()?.unwrap_or(0);
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn migrations(&self, conn: &mut C, filter: MigrationFilter) -> Result<Vec<MigrationRow>, DbError> {
        let conn = conn.sqlx();
        let (statement, id, after) = match filter {
            MigrationFilter::Version(id) | MigrationFilter::Part(id) => {
                (self.sql.select_version_migrations.as_str(), id, None)
            }
            MigrationFilter::Id(id) => (self.sql.select_migration.as_str(), id, None),
            MigrationFilter::Page { part, after } => (self.sql.select_migrations_page.as_str(), part, Some(after)),
        };
        let query = self.query(statement).bind(Self::int(id)?);
        let query = match after {
            Some(after) => query.bind(Self::int(after)?),
            None => query,
        };
        let rows = self.rows(conn, query).await?;
        rows.iter().map(Rows::<DB::Row, I>::migration).collect()
    }

    async fn insert_version(&self, conn: &mut C, version: &NewVersion<'_>) -> Result<i64, DbError> {
        let query = self
            .query(&self.sql.insert_version)
            .bind(version.name.to_string())
            .bind(version.created.to_string())
            .bind(version.request_id.to_string())
            .bind(version.trace_id.map(str::to_string));
        self.insert(conn.sqlx(), query, false).await
    }

    async fn insert_rollout(&self, conn: &mut C, id: i64, doc: &str, updated: &str) -> Result<bool, DbError> {
        let query = self.query(&self.sql.insert_rollout).bind(id).bind(doc.to_string()).bind(updated.to_string());
        // Two nodes of a Galera cluster each find the id free; the one
        // whose commit loses the certification is told so as a deadlock.
        match self.change(conn.sqlx(), query).await.map_err(DbError::from) {
            Ok(done) => Ok(done.count() == 1),
            Err(error) if error.is_conflict() => Ok(false),
            Err(error) => Err(error),
        }
    }

    async fn store_fingerprints(
        &self,
        conn: &mut C,
        rows: &[(&str, &str, &str)],
        version_id: i64,
    ) -> Result<(), DbError> {
        if rows.is_empty() {
            return Ok(());
        }
        let conn = conn.sqlx();
        let mut query =
            sqlx::query(AssertSqlSafe(self.sql.store_fingerprints(rows.len()))).persistent(!self.pooler_safe);
        for (schema, fingerprint, recorded) in rows {
            query = query
                .bind(schema.to_string())
                .bind(fingerprint.to_string())
                .bind(recorded.to_string())
                .bind(version_id);
        }
        self.change(conn, query).await?;
        Ok(())
    }

    async fn fingerprints(&self, conn: &mut C) -> Result<Vec<(String, Stored)>, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.fingerprints_installed).await? {
            return Ok(Vec::new());
        }
        if !self.pooler_safe {
            return self.stream_fingerprints(conn).await;
        }
        let mut tx = conn.begin().await?;
        let stored = self.stream_fingerprints(&mut tx).await?;
        tx.commit().await?;
        Ok(stored)
    }

    async fn backfills(&self, conn: &mut C) -> Result<Vec<BackfillRow>, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.backfills.installed).await? {
            return Ok(Vec::new());
        }
        let rows = self.rows(conn, self.query(&self.sql.backfills.select)).await?;
        rows.iter().map(Rows::<DB::Row, I>::backfill).collect()
    }

    async fn backfill_job(&self, conn: &mut C, schema: &str, file: &str) -> Result<Option<BackfillJob>, DbError> {
        let query = self.query(&self.sql.backfills.select_job).bind(schema.to_string()).bind(file.to_string());
        let rows = self.rows(conn.sqlx(), query).await?;
        rows.first().map(Rows::<DB::Row, I>::backfill_job).transpose()
    }

    async fn running_backfills(&self, conn: &mut C) -> Result<Vec<BackfillJob>, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.backfills.installed).await? {
            return Ok(Vec::new());
        }
        let rows = self.rows(conn, self.query(&self.sql.backfills.select_running)).await?;
        rows.iter().map(Rows::<DB::Row, I>::backfill_job).collect()
    }

    async fn running_backfills_of(
        &self,
        conn: &mut C,
        started_version: i64,
        file: &str,
    ) -> Result<Vec<BackfillRow>, DbError> {
        let started = Self::int(started_version)?;
        let query = self.query(&self.sql.backfills.select_running_of).bind(started).bind(file.to_string());
        let rows = self.rows(conn.sqlx(), query).await?;
        rows.iter().map(Rows::<DB::Row, I>::backfill).collect()
    }

    async fn register_backfill(
        &self,
        conn: &mut C,
        schema: &str,
        migration: &SourceMigration,
        (version_id, budget): (i64, FailureBudget),
        updated: &str,
    ) -> Result<(), DbError> {
        let query = self
            .query(&self.sql.backfills.register)
            .bind(schema.to_string())
            .bind(migration.file.clone())
            .bind(updated.to_string())
            .bind(Self::int(version_id)?)
            .bind(migration.name.clone())
            .bind(migration.source_dir.clone())
            .bind(Self::int(migration.migration_type.code())?)
            .bind(migration.contents.clone())
            .bind(migration.checksum.clone())
            .bind(migration.forward.clone())
            .bind(budget.to_string());
        query.execute(conn.sqlx()).await?;
        Ok(())
    }

    async fn forget_backfill(&self, conn: &mut C, schema: &str, file: &str) -> Result<(), DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.backfills.installed).await? {
            return Ok(());
        }
        let query = self.query(&self.sql.backfills.forget).bind(schema.to_string()).bind(file.to_string());
        query.execute(conn).await?;
        Ok(())
    }

    async fn restart_backfill(
        &self,
        conn: &mut C,
        schema: &str,
        file: &str,
        version_id: i64,
        updated: &str,
    ) -> Result<(), DbError> {
        let query = self
            .query(&self.sql.backfills.restart)
            .bind(Self::int(version_id)?)
            .bind(updated.to_string())
            .bind(schema.to_string())
            .bind(file.to_string());
        query.execute(conn.sqlx()).await?;
        Ok(())
    }

    async fn backfill_tally(
        &self,
        conn: &mut C,
        started_version: i64,
        file: &str,
    ) -> Result<Vec<(BackfillState, usize)>, DbError> {
        let query = self.query(&self.sql.backfills.tally).bind(Self::int(started_version)?).bind(file.to_string());
        let rows = self.rows(conn.sqlx(), query).await?;
        rows.iter()
            .map(|row| {
                let state: String = sqlx::Row::try_get(row, 0)?;
                let count: i64 = sqlx::Row::try_get(row, 1)?;
                Ok((BackfillState::parse(&state), usize::try_from(count).unwrap_or(0)))
            })
            .collect()
    }

    async fn backfill_runners(&self, conn: &mut C, fresh_after: i64) -> Result<Vec<(String, usize)>, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.backfills.installed).await? {
            return Ok(Vec::new());
        }
        let rows = self.rows(conn, self.query(&self.sql.backfills.runners).bind(fresh_after)).await?;
        Ok(runner_counts(&rows)?)
    }

    async fn claim_backfill(&self, conn: &mut C, claim: &BackfillClaim<'_>) -> Result<bool, DbError> {
        let values = claim_values(claim);
        Ok(self.change_written(conn.sqlx(), &self.sql.backfills.claim, &values).await?.count() == 1)
    }

    async fn claim_backfill_in_turn(
        &self,
        conn: &mut C,
        claim: &BackfillClaim<'_>,
        fresh_after: i64,
        room: &mut ClaimRoom<'_>,
    ) -> Result<bool, DbError> {
        let sql: &'static BackfillSql = &self.sql.backfills;
        let mut tx = conn.sqlx().begin().await?;
        sqlx::raw_sql(AssertSqlSafe(sql.claims_lock)).execute(&mut *tx).await?;
        let rows = self.query(&sql.runners).bind(fresh_after).fetch_all(&mut *tx).await?;
        if !room(&runner_counts(&rows)?) {
            tx.rollback().await?;
            return Ok(false);
        }
        let query = bound(self.query(&sql.claim), &claim_values(claim));
        let claimed = query.execute(&mut *tx).await?.count() == 1;
        tx.commit().await?;
        Ok(claimed)
    }

    async fn save_backfill(
        &self,
        conn: &mut C,
        row: &BackfillRow,
        holder: &str,
        batches_before: u64,
        heartbeat: i64,
    ) -> Result<bool, DbError> {
        let count = |n: u64| Literal::Int(i64::try_from(n).unwrap_or(i64::MAX));
        let progress = &row.progress;
        let (after, upper) =
            (progress.after.as_ref().map(backfill::encode_key), progress.upper.as_ref().map(backfill::encode_key));
        let values = [
            Literal::Text(row.state.as_str()),
            Literal::text(after.as_deref()),
            Literal::text(upper.as_deref()),
            count(progress.rows_done),
            count(progress.batches),
            count(progress.rows_estimated),
            count(progress.running_ms),
            Literal::Text(&row.updated),
            Literal::Int(heartbeat),
            Literal::Text(&row.schema),
            Literal::Text(&row.file),
            Literal::Text(holder),
            count(batches_before),
        ];
        // In the caller's transaction: no transaction of its own.
        Ok(self.execute_values(conn.sqlx(), &self.sql.backfills.save, &values).await?.count() == 1)
    }

    async fn fail_backfill(&self, conn: &mut C, row: &BackfillRow, holder: &str) -> Result<(), DbError> {
        let query = self
            .query(&self.sql.backfills.fail)
            .bind(row.last_error.clone())
            .bind(row.updated.clone())
            .bind(row.schema.clone())
            .bind(row.file.clone())
            .bind(holder.to_string());
        self.change(conn.sqlx(), query).await?;
        Ok(())
    }

    async fn move_backfills(
        &self,
        conn: &mut C,
        rows: &[BackfillRow],
        to: BackfillState,
        updated: &str,
    ) -> Result<Vec<bool>, DbError> {
        let conn = conn.sqlx();
        if rows.is_empty() || !self.exists(conn, &self.sql.backfills.installed).await? {
            return Ok(vec![false; rows.len()]);
        }
        let mut moved = Vec::with_capacity(rows.len());
        for row in rows {
            let query = self
                .query(&self.sql.backfills.move_state)
                .bind(to.as_str())
                .bind(updated.to_string())
                .bind(row.schema.clone())
                .bind(row.file.clone())
                .bind(row.state.as_str());
            moved.push(self.change(conn, query).await?.count() == 1);
        }
        Ok(moved)
    }

    async fn quarantine(&self, conn: &mut C, row: &QuarantineRow) -> Result<(), DbError> {
        let conn = conn.sqlx();
        let query = self
            .query(&self.sql.quarantine)
            .bind(row.tenant.clone())
            .bind(row.version_id.map(Self::int).transpose()?)
            .bind(row.file.clone())
            .bind(row.line.map(Self::int).transpose()?)
            .bind(row.column.map(Self::int).transpose()?)
            .bind(row.cause.clone())
            .bind(row.message.clone())
            .bind(row.request_id.clone())
            .bind(row.quarantined.clone())
            .bind(Self::int(row.failures)?);
        self.change(conn, query).await?;
        Ok(())
    }

    async fn quarantined(&self, conn: &mut C) -> Result<Vec<QuarantineRow>, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.quarantine_installed).await? {
            return Ok(Vec::new());
        }
        let rows = self.rows(conn, self.query(&self.sql.select_quarantine)).await?;
        rows.iter().map(Rows::<DB::Row, I>::quarantine).collect()
    }

    async fn release_quarantined(&self, conn: &mut C, tenants: &[String]) -> Result<(), DbError> {
        let conn = conn.sqlx();
        for tenant in tenants {
            self.change(conn, self.query(&self.sql.release_quarantined).bind(tenant.clone())).await?;
        }
        Ok(())
    }

    async fn rollouts(&self, conn: &mut C) -> Result<Vec<RolloutRow>, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.rollouts_installed).await? {
            return Ok(Vec::new());
        }
        let rows = self.rows(conn, self.query(&self.sql.select_rollouts)).await?;
        rows.iter().map(Rows::<DB::Row, I>::rollout).collect()
    }

    async fn update_rollout(&self, conn: &mut C, row: &RolloutRow, doc: &str, updated: &str) -> Result<bool, DbError> {
        let conn = conn.sqlx();
        let query = self
            .query(&self.sql.update_rollout)
            .bind(doc.to_string())
            .bind(updated.to_string())
            .bind(Self::int(row.id)?)
            .bind(Self::int(row.revision)?);
        Ok(self.change(conn, query).await?.count() == 1)
    }

    async fn tokens(&self, conn: &mut C) -> Result<Vec<StoredToken>, DbError> {
        let rows = self
            .rows_with_added_column(
                conn.sqlx(),
                &self.sql.access.tokens_installed,
                (&self.token_owner_seen, &self.sql.access.token_owner_installed),
                &self.sql.access.select_tokens,
                &self.sql.access.select_tokens_without_owner,
            )
            .await?;
        rows.iter()
            .map(|row| {
                let role: String = sqlx::Row::try_get(row, 1)?;
                Ok(StoredToken {
                    name: sqlx::Row::try_get(row, 0)?,
                    role: role.parse().map_err(|e: strata_core::auth::role::UnknownRole| {
                        DbError::UnexpectedAnswer(format!("svc.svc_tokens: {e}"))
                    })?,
                    hash: sqlx::Row::try_get(row, 2)?,
                    created: sqlx::Row::try_get(row, 3)?,
                    expires: sqlx::Row::try_get(row, 4)?,
                    owner: sqlx::Row::try_get(row, 5)?,
                })
            })
            .collect()
    }

    async fn insert_token(&self, conn: &mut C, token: &StoredToken) -> Result<bool, DbError> {
        let query = self
            .query(&self.sql.access.insert_token)
            .bind(token.name.clone())
            .bind(token.role.name().to_string())
            .bind(token.hash.clone())
            .bind(token.created)
            .bind(token.expires)
            .bind(token.owner.clone());
        Ok(self.change(conn.sqlx(), query).await?.count() == 1)
    }

    async fn delete_token(&self, conn: &mut C, name: &str) -> Result<bool, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.access.tokens_installed).await? {
            return Ok(false);
        }
        Ok(self.change(conn, self.query(&self.sql.access.delete_token).bind(name.to_string())).await?.count() == 1)
    }

    async fn audit(&self, conn: &mut C, window: AuditWindow<'_>) -> Result<Vec<Sealed>, DbError> {
        let conn = conn.sqlx();
        let access = &self.sql.access;
        if !self.exists(conn, &access.audit_installed).await? {
            return Ok(Vec::new());
        }
        // Books of an earlier release, read before a read-write start adds
        // the columns: without `trace_id`, or without both.
        let select = if self.column_seen(conn, (&self.audit_trace_seen, &access.audit_trace_installed)).await? {
            &access.select_audit
        } else if self.column_seen(conn, (&self.audit_signature_seen, &access.audit_signature_installed)).await? {
            &access.select_audit_untraced
        } else {
            &access.select_audit_without_signature
        };
        let query = self.query(select).bind(window.since_bound().to_string()).bind(window.last_bound());
        let rows = self.rows(conn, query).await?;
        rows.iter()
            .map(|row| {
                let text = |i: usize| sqlx::Row::try_get::<String, _>(row, i);
                Ok(Sealed {
                    id: sqlx::Row::try_get(row, 0)?,
                    entry: Entry {
                        at: text(1)?,
                        actor: text(2)?,
                        action: text(3)?,
                        target: text(4)?,
                        request_id: text(5)?,
                        outcome: text(6)?,
                        trace_id: sqlx::Row::try_get::<Option<String>, _>(row, 10)?,
                    },
                    prev: text(7)?,
                    hash: text(8)?,
                    signature: sqlx::Row::try_get::<Option<String>, _>(row, 9)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(DbError::from)
    }

    async fn last_audit(&self, conn: &mut C) -> Result<Option<(i64, String)>, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.access.audit_installed).await? {
            return Ok(None);
        }
        let rows = self.rows(conn, self.query(&self.sql.access.last_audit)).await?;
        rows.first()
            .map(|row| Ok((sqlx::Row::try_get(row, 0)?, sqlx::Row::try_get(row, 1)?)))
            .transpose()
            .map_err(|e: sqlx::Error| DbError::from(e))
    }

    async fn append_audit(&self, conn: &mut C, row: &Sealed) -> Result<bool, DbError> {
        let entry = &row.entry;
        let query = self
            .query(&self.sql.access.append_audit)
            .bind(row.id)
            .bind(entry.at.clone())
            .bind(entry.actor.clone())
            .bind(entry.action.clone())
            .bind(entry.target.clone())
            .bind(entry.request_id.clone())
            .bind(entry.outcome.clone())
            .bind(row.prev.clone())
            .bind(row.hash.clone())
            .bind(row.signature.clone())
            .bind(entry.trace_id.clone());
        Ok(self.change(conn.sqlx(), query).await?.count() == 1)
    }

    async fn directory(&self, conn: &mut C) -> Result<Directory, DbError> {
        let conn = conn.sqlx();
        if !self.exists(conn, &self.sql.directory_installed).await? {
            return Ok(Directory::default());
        }
        let rows = self.rows(conn, self.query(&self.sql.select_directory)).await?;
        let rows = rows
            .iter()
            .map(|row| Ok((sqlx::Row::try_get(row, 0)?, sqlx::Row::try_get(row, 1)?)))
            .collect::<Result<_, sqlx::Error>>()?;
        Ok(Directory { rows })
    }

    async fn change_directory(&self, conn: &mut C, changes: &DirectoryChanges) -> Result<(), DbError> {
        let conn = conn.sqlx();
        let mut tx = conn.begin().await?;
        for (tenant, shard) in &changes.put {
            self.query(&self.sql.put_directory).bind(tenant.clone()).bind(shard.clone()).execute(&mut *tx).await?;
        }
        for tenant in &changes.drop {
            self.query(&self.sql.drop_directory).bind(tenant.clone()).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn forget(&self, conn: &mut C, rows: &[Record<'_>]) -> Result<(), DbError> {
        let conn = conn.sqlx();
        for row in rows {
            self.query(&self.sql.delete_record)
                .bind(row.migration.file.clone())
                .bind(row.schema.to_string())
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    async fn repair(&self, conn: &mut C, repair: &Repair, audit: &Audit<'_>) -> Result<(), DbError> {
        let conn = conn.sqlx();
        let mut tx = conn.begin().await?;
        self.query(&self.sql.insert_version)
            .bind(audit.name.to_string())
            .bind(audit.created.to_string())
            .bind(audit.request_id.to_string())
            .bind(None::<String>)
            .execute(&mut *tx)
            .await?;
        for item in &repair.checksums {
            self.query(&self.sql.update_checksum)
                .bind(item.checksum.clone())
                .bind(item.file.clone())
                .bind(item.checksum.clone())
                .execute(&mut *tx)
                .await?;
        }
        for item in &repair.removals {
            self.query(&self.sql.delete_migrations).bind(item.file.clone()).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
