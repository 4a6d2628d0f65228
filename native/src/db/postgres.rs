//! The PostgreSQL driver: schema per tenant, transactional DDL.
//!
//! The primitives of the executor ([`Engine`]): a session advisory lock on
//! a dedicated connection, transactions, migration files over the simple
//! query protocol (a file may hold several statements; an error's position
//! is the character offset PostgreSQL reports, mapped back into the file by
//! the executor), the bookkeeping rows in multi-row inserts.

mod sql;

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgDatabaseError, PgErrorPosition, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, Connection, Postgres, QueryBuilder};
use std::str::FromStr;
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::normalize;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::plan::AppliedMigration;

use super::executor::{self, Engine, Failure, Record, Settings};
use super::{
    CONNECT_TIMEOUT, Database, DbError, MigrationRow, MutationOutcome, MutationRequest, Preview, VersionRow, rows,
};

/// The PostgreSQL driver.
pub(crate) struct PostgresDatabase {
    pool: PgPool,
    tenant_select_sql: String,
    tenant_insert_sql: String,
    settings: Settings,
}

impl PostgresDatabase {
    /// Connects to `config.data_source` (a `postgres://` URL) and creates the
    /// service schema and tables under the advisory lock.
    pub(crate) async fn connect(config: &Config) -> Result<Self, DbError> {
        let url = normalize(config.driver, &config.data_source).map_err(|e| DbError::BadDataSource(e.to_string()))?;
        let options = PgConnectOptions::from_str(&url)
            .map_err(|e| DbError::BadDataSource(format!("dataSource is not a PostgreSQL URL: {e}")))?;
        let settings = Settings::from_config(config, usize::MAX);
        // The lock's connection, the main one, the fan-out, and a few for
        // the API's read queries meanwhile.
        let pool = PgPoolOptions::new()
            .max_connections(u32::try_from(settings.concurrency + 6).unwrap_or(u32::MAX))
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| DbError::Connect(e.to_string()))?;
        let mut tx = pool.begin().await?;
        sqlx::query(sql::LOCK).bind(sql::LOCK_KEY).execute(&mut *tx).await?;
        sqlx::raw_sql(sql::CREATE_SERVICE_TABLES).execute(&mut *tx).await?;
        if config.default_tenant_table {
            sqlx::raw_sql(sql::CREATE_TENANTS_TABLE).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(PostgresDatabase {
            pool,
            tenant_select_sql: config.tenant_select_sql.clone(),
            tenant_insert_sql: config.tenant_insert_sql.clone(),
            settings,
        })
    }

    async fn read_tenants(&self, conn: &mut PgConnection) -> Result<Vec<String>, DbError> {
        let rows = sqlx::query(AssertSqlSafe(self.tenant_select_sql.as_str()))
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| DbError::TenantSelectFailed(e.to_string()))?;
        rows.iter().map(rows::tenant).collect()
    }

    async fn read_applied(&self, conn: &mut PgConnection) -> Result<Vec<AppliedMigration>, DbError> {
        let rows = sqlx::query(sql::SELECT_APPLIED).fetch_all(&mut *conn).await?;
        rows.iter().map(rows::applied::<_, i32>).collect()
    }
}

/// GraphQL ids are 32-bit; a bound id beyond that cannot exist in a serial column.
fn id32(id: i64) -> Option<i32> {
    i32::try_from(id).ok()
}

#[async_trait]
impl Database for PostgresDatabase {
    async fn ping(&self) -> Result<(), DbError> {
        sqlx::query(sql::PING).execute(&self.pool).await.map(|_| ()).map_err(|e| DbError::Connect(e.to_string()))
    }

    async fn tenants(&self) -> Result<Vec<String>, DbError> {
        let mut conn = self.pool.acquire().await?;
        self.read_tenants(&mut conn).await
    }

    async fn versions(&self, file: Option<&str>) -> Result<Vec<VersionRow>, DbError> {
        let rows = match file {
            Some(file) => {
                sqlx::query(AssertSqlSafe(sql::select_versions_by_file())).bind(file).fetch_all(&self.pool).await?
            }
            None => sqlx::query(AssertSqlSafe(sql::select_versions())).fetch_all(&self.pool).await?,
        };
        Ok(rows.iter().map(rows::version::<_, i32>).collect::<Result<_, _>>()?)
    }

    async fn version(&self, id: i64) -> Result<Option<VersionRow>, DbError> {
        let Some(id) = id32(id) else { return Ok(None) };
        let row = sqlx::query(AssertSqlSafe(sql::select_version())).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(rows::version::<_, i32>).transpose()
    }

    async fn version_migrations(&self, version_id: i64) -> Result<Vec<MigrationRow>, DbError> {
        let Some(version_id) = id32(version_id) else { return Ok(Vec::new()) };
        let rows =
            sqlx::query(AssertSqlSafe(sql::select_version_migrations())).bind(version_id).fetch_all(&self.pool).await?;
        rows.iter().map(rows::migration::<_, i32>).collect()
    }

    async fn db_migration(&self, id: i64) -> Result<Option<MigrationRow>, DbError> {
        let Some(id) = id32(id) else { return Ok(None) };
        let row = sqlx::query(AssertSqlSafe(sql::select_migration())).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(rows::migration::<_, i32>).transpose()
    }

    async fn mutate(&self, request: MutationRequest<'_>) -> Result<MutationOutcome, DbError> {
        executor::mutate(self, &self.settings, request).await
    }

    async fn preview(&self, request: MutationRequest<'_>) -> Result<Preview, DbError> {
        executor::preview(self, &request).await
    }
}

#[async_trait]
impl Engine for PostgresDatabase {
    type Conn = PoolConnection<Postgres>;
    type Lock = PgConnection;

    fn driver(&self) -> Driver {
        Driver::Postgres
    }

    fn transactional_ddl(&self) -> bool {
        true
    }

    async fn connect(&self) -> Result<Self::Conn, DbError> {
        Ok(self.pool.acquire().await?)
    }

    async fn lock(&self) -> Result<Self::Lock, DbError> {
        let mut conn = PgConnection::connect_with(&self.pool.connect_options()).await?;
        sqlx::query(sql::SESSION_LOCK).bind(sql::LOCK_KEY).execute(&mut conn).await?;
        Ok(conn)
    }

    async fn unlock(&self, mut conn: Self::Lock) {
        if let Err(e) = sqlx::query(sql::SESSION_UNLOCK).bind(sql::LOCK_KEY).execute(&mut conn).await {
            tracing::warn!(error = %e, "releasing the advisory lock failed; it ends with its session");
        }
        let _ = conn.close().await;
    }

    async fn begin(&self, conn: &mut Self::Conn) -> Result<(), DbError> {
        sqlx::raw_sql(sql::BEGIN).execute(&mut **conn).await?;
        Ok(())
    }

    async fn commit(&self, conn: &mut Self::Conn) -> Result<(), DbError> {
        sqlx::raw_sql(sql::COMMIT).execute(&mut **conn).await?;
        Ok(())
    }

    async fn rollback(&self, conn: &mut Self::Conn) -> Result<(), DbError> {
        sqlx::raw_sql(sql::ROLLBACK).execute(&mut **conn).await?;
        Ok(())
    }

    async fn execute(&self, conn: &mut Self::Conn, text: &str) -> Result<(), Failure> {
        sqlx::raw_sql(AssertSqlSafe(text)).execute(&mut **conn).await.map(|_| ()).map_err(|e| {
            match e.as_database_error().and_then(|d| d.try_downcast_ref::<PgDatabaseError>()) {
                Some(pg) => Failure {
                    message: pg.message().to_string(),
                    offset: match pg.position() {
                        Some(PgErrorPosition::Original(offset)) => Some(offset),
                        _ => None,
                    },
                    line: None,
                },
                None => Failure::from_sqlx(&e),
            }
        })
    }

    async fn tenants(&self, conn: &mut Self::Conn) -> Result<Vec<String>, DbError> {
        self.read_tenants(conn).await
    }

    async fn applied(&self, conn: &mut Self::Conn) -> Result<Vec<AppliedMigration>, DbError> {
        self.read_applied(conn).await
    }

    async fn create_tenant(&self, conn: &mut Self::Conn, tenant: &str) -> Result<(), DbError> {
        let failed =
            |e: sqlx::Error| DbError::TenantInsertFailed { tenant: tenant.to_string(), message: e.to_string() };
        sqlx::raw_sql(AssertSqlSafe(sql::create_schema(tenant))).execute(&mut **conn).await.map_err(failed)?;
        sqlx::query(AssertSqlSafe(self.tenant_insert_sql.as_str()))
            .bind(tenant)
            .execute(&mut **conn)
            .await
            .map_err(failed)?;
        Ok(())
    }

    async fn insert_version(
        &self,
        conn: &mut Self::Conn,
        name: &str,
        created: &str,
        request_id: &str,
    ) -> Result<i64, DbError> {
        let id: i32 = sqlx::query_scalar(sql::INSERT_VERSION)
            .bind(name)
            .bind(created)
            .bind(request_id)
            .fetch_one(&mut **conn)
            .await?;
        Ok(i64::from(id))
    }

    async fn record(
        &self,
        conn: &mut Self::Conn,
        rows: &[Record<'_>],
        created: &str,
        version_id: i64,
    ) -> Result<(), DbError> {
        let version_id = id32(version_id).ok_or(DbError::IdOutOfRange(version_id))?;
        for chunk in rows.chunks(sql::MIGRATION_ROWS_PER_INSERT) {
            let mut insert = QueryBuilder::<Postgres>::new(sql::INSERT_MIGRATIONS);
            insert.push_values(chunk, |mut row, record| {
                let migration = record.migration;
                row.push_bind(&migration.name)
                    .push_bind(&migration.source_dir)
                    .push_bind(&migration.file)
                    .push_bind(migration.migration_type.code() as i32)
                    .push_bind(record.schema)
                    .push_bind(created)
                    .push_unseparated("::timestamptz")
                    .push_bind(&migration.contents)
                    .push_bind(&migration.checksum)
                    .push_bind(version_id);
            });
            insert.build().execute(&mut **conn).await?;
        }
        Ok(())
    }

    async fn delete_empty_version(&self, conn: &mut Self::Conn, version_id: i64) -> Result<(), DbError> {
        let Some(version_id) = id32(version_id) else { return Ok(()) };
        sqlx::query(sql::DELETE_EMPTY_VERSION).bind(version_id).execute(&mut **conn).await?;
        Ok(())
    }
}
