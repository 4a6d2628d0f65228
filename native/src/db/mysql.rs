//! The MySQL/MariaDB driver: a tenant is a database.
//!
//! MySQL commits DDL implicitly, so a version cannot be one transaction: the
//! executor records every migration right after it ran (its own commit).
//! When one fails, the run stops with an error naming the file, and the
//! version keeps exactly the migrations that were applied — the service
//! never claims one it did not apply and never forgets one it did; a re-run
//! continues from there. A dry run executes nothing and returns the summary
//! of what would be applied. `GET_LOCK` on a connection of its own
//! serialises mutations across service instances for the whole version.

mod sql;

use std::str::FromStr;

use async_trait::async_trait;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlPool, MySqlPoolOptions};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, Connection, MySql};
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::normalize;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::plan::AppliedMigration;

use super::engine::{self, Engine, Failure, Record};
use super::error::{DbError, describe};
use super::types::{MigrationFilter, MigrationRow, VersionFilter, VersionRow};
use super::{CONNECT_TIMEOUT, rows};

/// The MySQL/MariaDB engine.
pub(crate) struct MysqlEngine {
    pool: MySqlPool,
    tenant_select_sql: String,
    tenant_insert_sql: String,
}

impl MysqlEngine {
    /// Opens a pool on `config.data_source` (a `mysql://` URL); writes
    /// nothing.
    pub(crate) async fn open(config: &Config) -> Result<Self, DbError> {
        let url = normalize(config.driver, &config.data_source).map_err(|e| DbError::BadDataSource(e.to_string()))?;
        let options = MySqlConnectOptions::from_str(&url)
            .map_err(|e| DbError::BadDataSource(format!("dataSource is not a MySQL URL: {e}")))?
            .timezone(Some("+00:00".to_string()));
        let pool = MySqlPoolOptions::new()
            .max_connections(u32::try_from(config.tenant_concurrency.saturating_add(6)).unwrap_or(u32::MAX))
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| DbError::Connect(describe(&e)))?;
        Ok(MysqlEngine {
            pool,
            tenant_select_sql: config.tenant_select_sql.clone(),
            tenant_insert_sql: config.tenant_insert_sql.clone(),
        })
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
        Err(DbError::LockTimeout {
            lock: sql::LOCK_NAME.to_string(),
            seconds: sql::LOCK_TIMEOUT_SECONDS.unsigned_abs(),
        })
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
    type Lock = MySqlConnection;

    fn driver(&self) -> Driver {
        Driver::Mysql
    }

    /// MySQL and MariaDB commit DDL implicitly: every step is its own
    /// commit, recorded right after it ran.
    fn transactional_ddl(&self) -> bool {
        false
    }

    async fn connect(&self) -> Result<Self::Conn, DbError> {
        Ok(self.pool.acquire().await?)
    }

    async fn install(&self, tenants_table: bool) -> Result<(), DbError> {
        let mut conn = self.pool.acquire().await?;
        lock(&mut conn).await?;
        let created = async {
            sqlx::raw_sql(sql::CREATE_SERVICE_TABLES).execute(&mut *conn).await?;
            if tenants_table {
                sqlx::raw_sql(sql::CREATE_TENANTS_TABLE).execute(&mut *conn).await?;
            }
            Ok::<_, sqlx::Error>(())
        }
        .await;
        unlock(&mut conn).await;
        Ok(created?)
    }

    async fn installed(&self, conn: &mut Self::Conn) -> Result<bool, DbError> {
        let count: i64 = sqlx::query_scalar(sql::INSTALLED).fetch_one(&mut **conn).await?;
        Ok(count > 0)
    }

    async fn lock(&self) -> Result<Self::Lock, DbError> {
        let mut conn = MySqlConnection::connect_with(&self.pool.connect_options()).await?;
        lock(&mut conn).await?;
        Ok(conn)
    }

    async fn unlock(&self, mut conn: Self::Lock) {
        unlock(&mut conn).await;
        let _ = conn.close().await;
    }

    async fn begin(&self, _conn: &mut Self::Conn) -> Result<(), DbError> {
        Ok(())
    }

    async fn commit(&self, _conn: &mut Self::Conn) -> Result<(), DbError> {
        Ok(())
    }

    async fn rollback(&self, _conn: &mut Self::Conn) -> Result<(), DbError> {
        Ok(())
    }

    /// Runs the file statement by statement: the failing statement's start
    /// is the error's position, or the line the server names within it
    /// ("… at line 3", which is then dropped from the message).
    async fn execute(&self, conn: &mut Self::Conn, text: &str) -> Result<(), Failure> {
        for range in engine::statements_of(Driver::Mysql, text) {
            let start = range.start;
            if let Err(e) = sqlx::raw_sql(AssertSqlSafe(&text[range])).execute(&mut **conn).await {
                let mut failure = Failure::from_sqlx(&e);
                let line = split_line_suffix(&mut failure.message);
                return Err(failure.in_statement(text, start, line));
            }
        }
        Ok(())
    }

    async fn tenants(&self, conn: &mut Self::Conn) -> Result<Vec<String>, DbError> {
        let rows = sqlx::query(AssertSqlSafe(self.tenant_select_sql.as_str()))
            .fetch_all(&mut **conn)
            .await
            .map_err(|e| DbError::TenantSelectFailed(describe(&e)))?;
        rows.iter().map(rows::tenant).collect()
    }

    async fn applied(&self, conn: &mut Self::Conn) -> Result<Vec<AppliedMigration>, DbError> {
        let rows = sqlx::query(sql::SELECT_APPLIED).fetch_all(&mut **conn).await?;
        rows.iter().map(rows::applied::<_, i32>).collect()
    }

    async fn versions(&self, conn: &mut Self::Conn, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError> {
        let rows = match filter {
            VersionFilter::All => sqlx::query(sql::SELECT_VERSIONS).fetch_all(&mut **conn).await?,
            VersionFilter::ApplyingFile(file) => {
                sqlx::query(sql::SELECT_VERSIONS_BY_FILE).bind(file).fetch_all(&mut **conn).await?
            }
            VersionFilter::Id(id) => sqlx::query(sql::SELECT_VERSION).bind(id).fetch_all(&mut **conn).await?,
        };
        rows.iter().map(rows::version::<_, i32>).collect()
    }

    async fn migrations(&self, conn: &mut Self::Conn, filter: MigrationFilter) -> Result<Vec<MigrationRow>, DbError> {
        let (statement, id) = match filter {
            MigrationFilter::Version(id) => (sql::SELECT_VERSION_MIGRATIONS, id),
            MigrationFilter::Id(id) => (sql::SELECT_MIGRATION, id),
        };
        let rows = sqlx::query(statement).bind(id).fetch_all(&mut **conn).await?;
        rows.iter().map(rows::migration::<_, i32>).collect()
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

    async fn insert_version(
        &self,
        conn: &mut Self::Conn,
        name: &str,
        created: &str,
        request_id: &str,
    ) -> Result<i64, DbError> {
        let id = sqlx::query(sql::INSERT_VERSION)
            .bind(name)
            .bind(created)
            .bind(request_id)
            .execute(&mut **conn)
            .await?
            .last_insert_id();
        i64::try_from(id).map_err(|_| DbError::UnexpectedAnswer(format!("version id {id} after the insert")))
    }

    async fn record(
        &self,
        conn: &mut Self::Conn,
        rows: &[Record<'_>],
        created: &str,
        version_id: i64,
    ) -> Result<(), DbError> {
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

    async fn delete_empty_version(&self, conn: &mut Self::Conn, version_id: i64) -> Result<(), DbError> {
        sqlx::query(sql::DELETE_EMPTY_VERSION).bind(version_id).bind(version_id).execute(&mut **conn).await?;
        Ok(())
    }
}

/// Takes the server's " at line N" (counted within the statement) off the
/// end of `message`, and returns N.
fn split_line_suffix(message: &mut String) -> Option<u64> {
    let (head, tail) = message.rsplit_once(" at line ")?;
    let line = tail.trim().parse().ok()?;
    message.truncate(head.len());
    Some(line)
}
