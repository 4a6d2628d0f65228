//! The MySQL/MariaDB driver: a tenant is a database.
//!
//! MySQL commits DDL implicitly, so a version cannot be one transaction: the
//! executor records every migration right after it ran (its own commit).
//! When one fails, the run stops with an error naming the file, and the
//! version keeps exactly the migrations that were applied — the service
//! never claims one it did not apply and never forgets one it did; a re-run
//! continues from there. A dry run executes nothing and returns the summary
//! of what would be applied. A lease row (`db::lease`) serialises mutations
//! across service instances for the whole version, also between the nodes
//! of a Galera cluster, where `GET_LOCK` is node-local.

mod sql;

use std::str::FromStr;

use async_trait::async_trait;
use futures::TryStreamExt;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlDatabaseError, MySqlPool, MySqlPoolOptions};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, ConnectOptions, MySql};
use strata_core::migrate::backfill::{Key, KeyValue};
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::normalize;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::fingerprint::{CatalogObject, PassPrints};
use strata_core::migrate::lock_wait::Timeouts;

use crate::db::books::{SqlxBooks, tables};
use crate::db::engine::{self, Catalogs, Engine, Entries, Failure, Reading, Transaction};
use crate::db::error::{DbError, describe, one_line};
use crate::db::error::{LockError, OpenError};
use crate::db::lease::{Lease, LeaseRow};
use crate::db::types::CONNECT_TIMEOUT;

/// The MySQL/MariaDB engine.
pub(crate) struct MysqlEngine {
    pool: MySqlPool,
    lease: MysqlLeaseRow,
    lease_seconds: u64,
    books: SqlxBooks<MySql, i32>,
    tenant_insert_sql: String,
    /// MariaDB (its statement time-out is `max_statement_time`).
    mariadb: bool,
    /// The database `dataSource` names (the session's own), if any.
    database: Option<String>,
    /// The replicas whose lag backfills wait for (`backfill.replicas`).
    replicas: Vec<MySqlConnectOptions>,
}

impl MysqlEngine {
    /// Opens a pool on `config.data_source` (a `mysql://` URL); writes
    /// nothing.
    pub(crate) async fn open(config: &Config) -> Result<Self, DbError> {
        let url = normalize(config.driver, &config.data_source)
            .map_err(|e| DbError::Open(OpenError::BadDataSource(e.to_string())))?;
        let options = MySqlConnectOptions::from_str(&url)
            .map_err(|e| DbError::Open(OpenError::BadDataSource(format!("dataSource is not a MySQL URL: {e}"))))?
            .timezone(Some("+00:00".to_string()))
            // A slow migration is no warning, nor its SQL a log line.
            .disable_statement_logging();
        let database = options.get_database().map(str::to_string);
        let pool = engine::open_pool(
            MySqlPoolOptions::new()
                .max_connections(u32::try_from(config.tenant_concurrency.saturating_add(6)).unwrap_or(u32::MAX))
                .acquire_timeout(CONNECT_TIMEOUT),
            options,
        )
        .await?;
        // On a Galera node GET_LOCK would be node-local; the lease row is not.
        let galera: Option<String> = sqlx::query_scalar("select cast(@@wsrep_on as char)").fetch_one(&pool).await.ok();
        if galera.as_deref().is_some_and(|on| on.eq_ignore_ascii_case("ON") || on == "1") {
            tracing::info!(
                "a Galera node (wsrep_on=ON): mutations are serialised by the lease row svc.svc_lock, \
                 replicated to every node; DDL is replicated in total order (TOI)"
            );
        }
        let mariadb: i64 = sqlx::query_scalar(sql::IS_MARIADB).fetch_one(&pool).await?;
        let replicas = config
            .backfill
            .replicas
            .iter()
            .map(|replica| {
                let url = normalize(config.driver, replica)
                    .map_err(|e| DbError::Open(OpenError::BadDataSource(format!("backfill.replicas: {e}"))))?;
                MySqlConnectOptions::from_str(&url)
                    .map(|options| options.disable_statement_logging())
                    .map_err(|e| DbError::Open(OpenError::BadDataSource(format!("backfill.replicas: {e}"))))
            })
            .collect::<Result<Vec<_>, DbError>>()?;
        Ok(MysqlEngine {
            replicas,
            mariadb: mariadb == 1,
            database,
            lease: MysqlLeaseRow(pool.clone()),
            lease_seconds: config.lock_lease_seconds,
            pool,
            books: SqlxBooks::new(&sql::BOOKS, Driver::Mysql, false, &config.tenant_select_sql),
            tenant_insert_sql: config.tenant_insert_sql.clone(),
        })
    }
}

impl MysqlEngine {
    async fn install_missing(&self, tenants_table: bool) -> Result<(), sqlx::Error> {
        let present: i64 =
            sqlx::query_scalar(AssertSqlSafe(sql::SERVICE_TABLES_PRESENT.as_str())).fetch_one(&self.pool).await?;
        let lease_row: i64 = if present == sql::SERVICE_TABLES {
            sqlx::query_scalar(sql::LEASE_ROW_PRESENT).fetch_one(&self.pool).await?
        } else {
            0
        };
        let tenants: i64 = sqlx::query_scalar(sql::TENANTS_TABLE_PRESENT).fetch_one(&self.pool).await?;
        let missing_columns = || async {
            let present: Vec<String> = sqlx::query_scalar(sql::ADDED_COLUMNS_PRESENT).fetch_all(&self.pool).await?;
            Ok::<_, sqlx::Error>(
                tables::added()
                    .filter(|(table, column)| !present.contains(&tables::qualified_name(table, column)))
                    .map(|(table, column)| tables::add_column(Driver::Mysql, table, column))
                    .collect::<Vec<_>>(),
            )
        };
        if present == sql::SERVICE_TABLES
            && lease_row == 2
            && (!tenants_table || tenants == 1)
            && missing_columns().await?.is_empty()
        {
            return Ok(());
        }
        let mut conn = self.pool.acquire().await?;
        if let Err(e) = lock(&mut conn).await {
            tracing::warn!(error = %e, "the install lock was not granted; creating the missing tables anyway");
        }
        let created = async {
            sqlx::raw_sql(AssertSqlSafe(sql::creates(tenants_table))).execute(&mut *conn).await?;
            sqlx::raw_sql(sql::LEASE_ROW).execute(&mut *conn).await?;
            for add in missing_columns().await? {
                sqlx::raw_sql(AssertSqlSafe(add)).execute(&mut *conn).await?;
            }
            Ok::<_, sqlx::Error>(())
        }
        .await;
        unlock(&mut conn).await;
        created
    }
}

/// The lease's statements on the pool (see [`super::lease`]).
#[derive(Clone)]
pub(crate) struct MysqlLeaseRow(MySqlPool);

/// A conflict with a concurrent writer: InnoDB's deadlock, Galera's
/// certification failure (reported as a deadlock), a lock wait time-out.
fn is_conflict(error: &sqlx::Error) -> bool {
    error_number(error).is_some_and(|number| matches!(number, ER_LOCK_DEADLOCK | ER_LOCK_WAIT_TIMEOUT))
}

/// The server's error number.
fn error_number(error: &sqlx::Error) -> Option<u16> {
    error.as_database_error().and_then(|d| d.try_downcast_ref::<MySqlDatabaseError>()).map(|e| e.number())
}

/// InnoDB's deadlock, and Galera's certification failure.
const ER_LOCK_DEADLOCK: u16 = 1213;
/// A lock wait that timed out.
const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
/// How often a statement that lost a conflict runs again before its
/// failure is reported.
const CONFLICT_RETRIES: u32 = 3;

#[async_trait]
impl LeaseRow for MysqlLeaseRow {
    async fn take(&self, holder: &str, seconds: u64) -> Result<bool, DbError> {
        let mut conn = engine::acquire(&self.0).await?;
        match sqlx::query(sql::LEASE_TAKE).bind(holder).bind(seconds).execute(&mut *conn).await {
            Ok(done) => Ok(done.rows_affected() == 1),
            Err(e) if is_conflict(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn renew(&self, holder: &str, seconds: u64) -> Result<bool, DbError> {
        let mut conn = engine::acquire(&self.0).await?;
        let done = sqlx::query(sql::LEASE_RENEW).bind(seconds).bind(holder).execute(&mut *conn).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn release(&self, holder: &str) -> Result<(), DbError> {
        let mut conn = engine::acquire(&self.0).await?;
        sqlx::query(sql::LEASE_RELEASE).bind(holder).execute(&mut *conn).await?;
        Ok(())
    }

    async fn holder(&self) -> Result<Option<String>, DbError> {
        let mut conn = engine::acquire(&self.0).await?;
        Ok(sqlx::query_scalar(sql::LEASE_HOLDER).fetch_optional(&mut *conn).await?)
    }
}

async fn lock(conn: &mut MySqlConnection) -> Result<(), DbError> {
    let taken: Option<i64> = sqlx::query_scalar(sql::GET_LOCK)
        .bind(sql::LOCK_NAME)
        .bind(sql::LOCK_TIMEOUT_SECONDS)
        .fetch_one(&mut *conn)
        .await?;
    if taken == Some(1) {
        Ok(())
    } else {
        Err(DbError::Lock(LockError::Timeout {
            lock: sql::LOCK_NAME.to_string(),
            seconds: sql::LOCK_TIMEOUT_SECONDS.unsigned_abs(),
        }))
    }
}

async fn unlock(conn: &mut MySqlConnection) {
    if let Err(e) = sqlx::query(sql::RELEASE_LOCK).bind(sql::LOCK_NAME).execute(&mut *conn).await {
        tracing::warn!(error = %e, "release_lock failed; the lock ends with the connection");
    }
}

#[async_trait]
impl Engine for MysqlEngine {
    type Conn = PoolConnection<MySql>;
    type Lock = Lease;
    type Books = SqlxBooks<MySql, i32>;
    const DRIVER: Driver = Driver::Mysql;
    const TRANSACTIONAL_DDL: bool = false;
    const SESSION_TIMEOUTS_KEPT: bool = true;
    const IN_SCHEMA_OUTLIVES_UNIT: bool = true;

    async fn open_dev(config: &Config) -> Result<Self, DbError> {
        Self::open(config).await
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    fn books(&self) -> &Self::Books {
        &self.books
    }

    async fn connect(&self) -> Result<Self::Conn, DbError> {
        engine::acquire(&self.pool).await
    }

    async fn discard(&self, conn: Self::Conn) {
        if let Err(error) = conn.close().await {
            tracing::debug!(error = %describe(&error), "a connection a file changed the session of did not close cleanly");
        }
    }

    /// Creates what is missing only: on Galera every DDL statement, even an
    /// `if not exists` that changes nothing, is replicated in total order
    /// and aborts the transactions touching its tables on every node — a
    /// running version's bookkeeping among them. What is there is checked
    /// by plain reads first; a conflict is retried.
    async fn install(&self, tenants_table: bool) -> Result<(), DbError> {
        let mut attempt = 0;
        loop {
            match self.install_missing(tenants_table).await {
                Err(e) if is_conflict(&e) && attempt < CONFLICT_RETRIES => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100 << attempt)).await;
                }
                result => return Ok(result?),
            }
        }
    }

    async fn lock(&self) -> Result<Self::Lock, DbError> {
        Lease::acquire(&self.lease, self.lease_seconds).await
    }

    fn lock_held(&self, lock: &Self::Lock) -> bool {
        lock.held()
    }

    async fn lock_in_use(&self) -> Result<bool, DbError> {
        Ok(self.lease.holder().await?.is_some())
    }

    async fn fence(&self, conn: &mut Self::Conn, lock: &Self::Lock) -> Result<(), DbError> {
        let holder: Option<String> =
            sqlx::query_scalar(sql::LEASE_FENCE).bind(lock.holder()).fetch_optional(&mut **conn).await?;
        match holder {
            Some(_) => Ok(()),
            None => Err(DbError::Lock(LockError::Lost)),
        }
    }

    async fn unlock(&self, lock: Self::Lock) {
        lock.release(&self.lease).await;
    }

    /// No transaction wraps DDL on MySQL: each step commits on its own.
    async fn transaction(&self, _conn: &mut Self::Conn, _step: Transaction) -> Result<(), DbError> {
        Ok(())
    }

    /// InnoDB's own transactions: data changes take part in them.
    async fn data_transaction(&self, conn: &mut Self::Conn, step: Transaction) -> Result<(), DbError> {
        let sql = match step {
            Transaction::Begin => "start transaction",
            Transaction::Commit => "commit",
            Transaction::Rollback => "rollback",
        };
        sqlx::raw_sql(sql).execute(&mut **conn).await?;
        Ok(())
    }

    async fn execute_bound(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<u64, Failure> {
        engine::bound::execute::<MySql>(&mut **conn, sql, values).await
    }

    async fn read_keys(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<Vec<Key>, Failure> {
        engine::bound::read::<MySql>(&mut **conn, sql, values).await
    }

    /// Each replica's `Seconds_Behind_Master`, read on a connection of its
    /// own (the primary does not know its replicas' lag); a replica that
    /// cannot be reached, or whose replication is stopped, counts as
    /// lagging without end (core's `backfill::pace::seconds_behind`): the
    /// backfills wait for it.
    async fn replica_lag(&self, _conn: &mut Self::Conn) -> Result<Result<u64, String>, Failure> {
        let mut behind = Vec::with_capacity(self.replicas.len());
        for options in &self.replicas {
            let name = format!("{}:{}", options.get_host(), options.get_port());
            let seconds = match replica_status(options).await {
                Ok(seconds) => seconds,
                Err(error) => {
                    tracing::warn!(replica = %name, error = %one_line(&describe(&error)),
                        "a replica's lag could not be read: backfills wait for it");
                    Some(None)
                }
            };
            behind.push((name, seconds));
        }
        Ok(strata_core::migrate::backfill::pace::seconds_behind(&behind))
    }

    /// Runs the file statement by statement: the failing statement's start
    /// is the error's position, or the line the server names within it
    /// ("… at line 3", which is then dropped from the message). A statement
    /// that lost a deadlock or a certification (Galera) runs again, up to
    /// 3 times; one that hit the lock time-out is the executor's to retry.
    async fn execute(&self, conn: &mut Self::Conn, text: &str) -> Result<(), Failure> {
        for range in engine::statements_of(Driver::Mysql, text) {
            let start = range.start;
            let mut attempt = 0;
            while let Err(e) = sqlx::raw_sql(AssertSqlSafe(&text[range.clone()])).execute(&mut **conn).await {
                // Each statement commits on its own here, so one that lost a
                // deadlock or Galera's certification was rolled back whole
                // and runs again, a bounded number of times.
                if error_number(&e) == Some(ER_LOCK_DEADLOCK) && attempt < CONFLICT_RETRIES {
                    attempt += 1;
                    tracing::warn!(attempt, error = %describe(&e), "a statement conflicted with another writer; running it again");
                    tokio::time::sleep(std::time::Duration::from_millis(100 << attempt)).await;
                    continue;
                }
                let mut failure = Failure::from_sqlx(&e);
                let line = split_line_suffix(&mut failure.message);
                return Err(failure.in_statement(text, start, line));
            }
        }
        Ok(())
    }

    /// The tenant's database the session's own (`USE`), as the file's tool
    /// connected to it; the connection is closed after the unit. Back:
    /// the database `dataSource` names (none named: no statement can
    /// deselect one, and the session stays in the tenant's).
    fn in_schema_text(&self, schema: Option<&str>, _local: bool) -> Option<String> {
        let database = schema.or(self.database.as_deref())?;
        Some(format!("use {}", strata_core::migrate::ident::quote_mysql(database)))
    }

    /// `lock_wait_timeout` (metadata locks) and `innodb_lock_wait_timeout`
    /// (row locks), in whole seconds (at least 1); the statement time-out
    /// (`max_statement_time` on MariaDB, `max_execution_time` on MySQL,
    /// which bounds `SELECT` only), in one statement. Session settings:
    /// MySQL commits each DDL statement on its own.
    async fn set_timeouts(&self, conn: &mut Self::Conn, timeouts: Timeouts, _local: bool) -> Result<(), DbError> {
        let lock_default = timeouts.lock_ms == 0;
        let mut set = sqlx::query(sql::set_timeouts(self.mariadb, lock_default));
        if !lock_default {
            let seconds = timeouts.lock_ms.div_ceil(1000).max(1);
            set = set.bind(seconds).bind(seconds);
        }
        set = match self.mariadb {
            true => set.bind(timeouts.statement_ms as f64 / 1000.0),
            false => set.bind(timeouts.statement_ms),
        };
        set.execute(&mut **conn).await?;
        Ok(())
    }

    async fn reset_timeouts(&self, _conn: &mut Self::Conn) {
        // Set before every file that needs others (`SESSION_TIMEOUTS_KEPT`):
        // nothing to undo between them.
    }

    /// Other sessions with an open transaction or in the schema: id, user,
    /// command, seconds in it, transaction start, statement.
    async fn blockers(&self, conn: &mut Self::Conn, schema: &str) -> Vec<String> {
        let rows: Result<Vec<(String, String, String, String, String, String)>, sqlx::Error> =
            sqlx::query_as(sql::BLOCKERS).bind(schema).fetch_all(&mut **conn).await;
        match rows {
            Ok(rows) => rows
                .into_iter()
                .map(|(id, user, command, seconds, since, query)| {
                    let transaction = if since.is_empty() {
                        "no open transaction".to_string()
                    } else {
                        format!("transaction since {since}")
                    };
                    format!(
                        "connection {id} of {user} ({command} for {seconds} s, {transaction}), statement: {}",
                        if query.is_empty() { "none".to_string() } else { one_line(&query) }
                    )
                })
                .collect(),
            Err(e) => {
                tracing::warn!(error = %describe(&e), "the blocking sessions could not be read");
                Vec::new()
            }
        }
    }

    async fn catalog(&self, conn: &mut Self::Conn, schema: &str) -> Result<Vec<CatalogObject>, DbError> {
        let mut query = sqlx::query_as::<_, CatalogRow>(AssertSqlSafe(sql::CATALOG.as_str()));
        for _ in 0..sql::CATALOG_BINDS {
            query = query.bind(schema);
        }
        let rows = query.fetch_all(&mut **conn).await?;
        Ok(rows.into_iter().map(catalog_object).collect())
    }

    /// Drift's reading one schema after another; desired state's its own
    /// ([`desired_reading`]).
    async fn catalogs(&self, conn: &mut Self::Conn, schemas: &[String], reading: Reading) -> Result<Catalogs, DbError> {
        if reading == Reading::Drift {
            return engine::catalogs_one_by_one(self, conn, schemas).await;
        }
        let mut out = Vec::with_capacity(schemas.len());
        for schema in schemas {
            out.push(desired_reading(conn, schema).await?);
        }
        Ok(out)
    }

    /// MariaDB commits each DDL statement as it runs: the file goes into a
    /// scratch database made for it and dropped afterwards on every path
    /// (core's `desired::scope` has refused any statement reaching
    /// outside it), one reading at a time on the server (a named lock on
    /// the scratch's name, waited for up to a minute).
    async fn desired_catalog(
        &self,
        conn: &mut Self::Conn,
        text: &str,
        scratch: &str,
    ) -> Result<Result<Vec<CatalogObject>, Failure>, DbError> {
        if !self.mariadb {
            return Err(DbError::NotSupported("desired state on MySQL (MariaDB's catalog is read, for now)"));
        }
        let locked: Option<i64> =
            sqlx::query_scalar(sql::GET_LOCK).bind(scratch).bind(60).fetch_one(&mut **conn).await?;
        if locked != Some(1) {
            return Ok(Err(Failure::statement(format!(
                "another desired reading held the scratch database {scratch} for a minute"
            ))));
        }
        let read = async {
            sqlx::raw_sql(AssertSqlSafe(sql::drop_database(scratch))).execute(&mut **conn).await?;
            sqlx::raw_sql(AssertSqlSafe(sql::create_database(scratch))).execute(&mut **conn).await?;
            Ok::<_, DbError>(match self.execute(conn, text).await {
                Ok(()) => Ok(desired_reading(conn, scratch).await?),
                Err(failure) => Err(failure),
            })
        }
        .await;
        let dropped = sqlx::raw_sql(AssertSqlSafe(sql::drop_database(scratch))).execute(&mut **conn).await;
        let _ = sqlx::query(sql::RELEASE_LOCK).bind(scratch).execute(&mut **conn).await;
        if let Err(e) = dropped {
            tracing::warn!(error = %describe(&e), database = scratch, "the scratch database could not be dropped");
        }
        read
    }

    /// Most of the server's databases (core's `one_pass_pays`): in one
    /// ordered pass over its whole catalog, each wanted schema's objects
    /// reduced to its print as soon as the next schema's start; a few: a
    /// lookup each, in batches over the lanes.
    async fn live_prints(&self, conns: &mut [Self::Conn], schemas: &[String]) -> Result<Vec<String>, DbError> {
        let databases: i64 = sqlx::query_scalar(sql::DATABASE_COUNT).fetch_one(&mut *conns[0]).await?;
        if !strata_core::migrate::fingerprint::one_pass_pays(schemas.len(), usize::try_from(databases).unwrap_or(0)) {
            return engine::prints_in_batches(self, conns, schemas).await;
        }
        let mut prints = PassPrints::new(schemas);
        let mut rows = sqlx::query_as::<_, CatalogRow>(AssertSqlSafe(sql::CATALOG_ALL.as_str())).fetch(&mut *conns[0]);
        while let Some((schema, kind, name, definition)) = rows.try_next().await? {
            prints.push(schema, CatalogObject { kind, name, definition });
        }
        Ok(prints.finish())
    }

    /// Creates a tenant's database and inserts its row; when the row cannot
    /// be inserted, drops the database again (it was created a moment ago
    /// and is empty).
    async fn create_tenant(&self, conn: &mut Self::Conn, tenant: &str) -> Result<(), DbError> {
        let failed = |e: sqlx::Error| DbError::TenantInsertFailed { tenant: tenant.to_string(), message: describe(&e) };
        sqlx::raw_sql(AssertSqlSafe(sql::create_database(tenant))).execute(&mut **conn).await.map_err(failed)?;
        let inserted =
            sqlx::query(AssertSqlSafe(self.tenant_insert_sql.as_str())).bind(tenant).execute(&mut **conn).await;
        if let Err(e) = inserted {
            let _ = sqlx::raw_sql(AssertSqlSafe(sql::drop_database(tenant))).execute(&mut **conn).await;
            return Err(failed(e));
        }
        Ok(())
    }

    async fn record(&self, conn: &mut Self::Conn, entries: &Entries<'_>) -> Result<(), DbError> {
        let Entries { rows, created, version_id } = *entries;
        for record in rows {
            let migration = record.migration;
            sqlx::query(sql::INSERT_MIGRATION)
                .bind(&migration.name)
                .bind(&migration.source_dir)
                .bind(&migration.file)
                .bind(migration.migration_type.code() as i32)
                .bind(record.schema)
                .bind(created)
                .bind(&migration.contents)
                .bind(&migration.checksum)
                .bind(version_id)
                .execute(&mut **conn)
                .await?;
        }
        Ok(())
    }
}

/// A row of the catalog queries: schema, kind, name, definition.
type CatalogRow = (String, String, String, String);

fn catalog_object((_, kind, name, definition): CatalogRow) -> CatalogObject {
    CatalogObject { kind, name, definition }
}

/// `schema`'s catalog as desired state reads it ([`sql::DESIRED_CATALOG`]).
async fn desired_reading(conn: &mut MySqlConnection, schema: &str) -> Result<Vec<CatalogObject>, DbError> {
    let mut query = sqlx::query_as::<_, CatalogRow>(sql::DESIRED_CATALOG);
    for _ in 0..sql::DESIRED_CATALOG_BINDS {
        query = query.bind(schema);
    }
    Ok(query.fetch_all(conn).await?.into_iter().map(catalog_object).collect())
}

/// Takes the server's " at line N" (counted within the statement) off the
/// end of `message`, and returns N.
fn split_line_suffix(message: &mut String) -> Option<u64> {
    let (head, tail) = message.rsplit_once(" at line ")?;
    let line = tail.trim().parse().ok()?;
    message.truncate(head.len());
    Some(line)
}

/// A replica's seconds behind its source: `Some(None)` while its
/// replication is stopped, `None` when it is no replica (an empty status).
async fn replica_status(options: &MySqlConnectOptions) -> Result<Option<Option<i64>>, sqlx::Error> {
    use sqlx::{Connection, Row};
    use strata_core::migrate::backfill::sql::{REPLICA_STATUS, SECONDS_BEHIND};
    let mut conn = tokio::time::timeout(CONNECT_TIMEOUT, MySqlConnection::connect_with(options))
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)??;
    // The newer name first; a server that predates it knows the older.
    let row = match sqlx::raw_sql(REPLICA_STATUS[0]).fetch_optional(&mut conn).await {
        Ok(row) => row,
        Err(_) => sqlx::raw_sql(REPLICA_STATUS[1]).fetch_optional(&mut conn).await?,
    };
    let _ = conn.close().await;
    let Some(row) = row else { return Ok(None) };
    for column in SECONDS_BEHIND {
        if let Ok(seconds) = row.try_get::<Option<u64>, _>(column) {
            return Ok(Some(seconds.map(|s| i64::try_from(s).unwrap_or(i64::MAX))));
        }
        if let Ok(seconds) = row.try_get::<Option<i64>, _>(column) {
            return Ok(Some(seconds));
        }
    }
    Ok(Some(None))
}
