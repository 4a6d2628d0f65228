//! The MySQL/MariaDB driver: a tenant is a database.
//!
//! MySQL commits DDL implicitly, so a version cannot be one transaction.
//! Instead every migration is recorded right after it ran (its own commit):
//! when one fails, the run stops with an error naming the file, and the
//! version keeps exactly the migrations that were applied — the service
//! never claims one it did not apply and never forgets one it did; a re-run
//! continues from there. A dry run executes nothing and returns the summary
//! of what would be applied. `GET_LOCK` serialises mutations across
//! service instances.

mod sql;

use std::str::FromStr;

use async_trait::async_trait;
use sqlx::AssertSqlSafe;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlPool, MySqlPoolOptions};
use strata_core::config::Config;
use strata_core::datasource::normalize;
use strata_core::plan::{AppliedMigration, Plan, PlanInput, plan};

use super::{CONNECT_TIMEOUT, Database, DbError, MigrationRow, MutationOutcome, MutationRequest, VersionRow, rows};

/// The MySQL/MariaDB driver.
pub struct MysqlDatabase {
    pool: MySqlPool,
    tenant_select_sql: String,
    tenant_insert_sql: String,
    schema_placeholder: String,
}

impl MysqlDatabase {
    /// Connects to `config.data_source` (a `mysql://` URL) and creates the
    /// `svc` database and tables under the lock.
    pub async fn connect(config: &Config) -> Result<Self, DbError> {
        let url = normalize(config.driver, &config.data_source).map_err(|e| DbError::Connect(e.to_string()))?;
        let options = MySqlConnectOptions::from_str(&url)
            .map_err(|e| DbError::Connect(format!("dataSource is not a MySQL URL: {e}")))?
            .timezone(Some("+00:00".to_string()));
        let pool = MySqlPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| DbError::Connect(e.to_string()))?;
        let database = MysqlDatabase {
            pool,
            tenant_select_sql: config.tenant_select_sql.clone(),
            tenant_insert_sql: config.tenant_insert_sql.clone(),
            schema_placeholder: config.schema_placeholder.clone(),
        };
        let mut conn = database.pool.acquire().await?;
        lock(&mut conn).await?;
        let created = async {
            sqlx::raw_sql(sql::CREATE_SERVICE_TABLES).execute(&mut *conn).await?;
            if config.default_tenant_table {
                sqlx::raw_sql(sql::CREATE_TENANTS_TABLE).execute(&mut *conn).await?;
            }
            Ok::<_, sqlx::Error>(())
        }
        .await;
        unlock(&mut conn).await;
        created?;
        drop(conn);
        Ok(database)
    }

    async fn read_tenants(&self, conn: &mut MySqlConnection) -> Result<Vec<String>, DbError> {
        let rows = sqlx::query(AssertSqlSafe(self.tenant_select_sql.as_str()))
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| DbError::TenantSelectFailed(e.to_string()))?;
        rows.iter().map(rows::tenant).collect()
    }

    async fn read_applied(&self, conn: &mut MySqlConnection) -> Result<Vec<AppliedMigration>, DbError> {
        let rows = sqlx::query(sql::SELECT_APPLIED).fetch_all(&mut *conn).await?;
        rows.iter().map(rows::applied::<_, i32>).collect()
    }

    async fn run_locked(
        &self,
        conn: &mut MySqlConnection,
        request: &MutationRequest<'_>,
    ) -> Result<MutationOutcome, DbError> {
        let tenants = self.read_tenants(conn).await?;
        let applied = self.read_applied(conn).await?;
        let plan = plan(PlanInput {
            sources: request.sources,
            applied: &applied,
            tenants: &tenants,
            target: &request.target,
            action: request.action,
        })?;
        drop(applied);
        if request.dry_run || plan.is_empty() {
            return Ok(MutationOutcome { plan, version: None });
        }
        let version_id = sqlx::query(AssertSqlSafe(sql::insert_version()))
            .bind(request.version_name)
            .bind(request.created)
            .bind(request.request_id)
            .execute(&mut *conn)
            .await?
            .last_insert_id();
        let version_id = i64::try_from(version_id).map_err(|_| DbError::Connect("version id out of range".into()))?;
        let mut tenant_created = false;
        let mut result = Ok(());
        if let Some(tenant) = &plan.new_tenant {
            result = self.create_tenant(conn, tenant).await;
            tenant_created = result.is_ok();
        }
        if result.is_ok() {
            result = self.apply(conn, request, &plan, version_id).await;
        }
        if result.is_err() && !tenant_created {
            // Nothing was applied: keep no empty version. (A created tenant
            // is a change, so its version stays, with what was applied.)
            sqlx::query(sql::DELETE_EMPTY_VERSION).bind(version_id).bind(version_id).execute(&mut *conn).await?;
        }
        result?;
        let version =
            VersionRow { id: version_id, name: request.version_name.to_string(), created: request.created.to_string() };
        Ok(MutationOutcome { plan, version: Some(version) })
    }

    /// Creates a tenant's database and inserts its row; when the row cannot
    /// be inserted, drops the database again (it was created a moment ago
    /// and is empty).
    async fn create_tenant(&self, conn: &mut MySqlConnection, tenant: &str) -> Result<(), DbError> {
        let failed =
            |e: sqlx::Error| DbError::TenantInsertFailed { tenant: tenant.to_string(), message: e.to_string() };
        sqlx::raw_sql(AssertSqlSafe(sql::create_database(tenant))).execute(&mut *conn).await.map_err(failed)?;
        let inserted =
            sqlx::query(AssertSqlSafe(self.tenant_insert_sql.as_str())).bind(tenant).execute(&mut *conn).await;
        if let Err(e) = inserted {
            let _ = sqlx::raw_sql(AssertSqlSafe(sql::drop_database(tenant))).execute(&mut *conn).await;
            return Err(failed(e));
        }
        Ok(())
    }

    /// Runs and records each step in turn.
    async fn apply(
        &self,
        conn: &mut MySqlConnection,
        request: &MutationRequest<'_>,
        plan: &Plan,
        version_id: i64,
    ) -> Result<(), DbError> {
        for (recorded, step) in plan.steps.iter().enumerate() {
            let migration = &request.sources[step.migration as usize];
            let schema = plan.schema_of(step);
            if step.execute
                && let Err(e) = sqlx::raw_sql(AssertSqlSafe(migration.sql_for(&self.schema_placeholder, schema)))
                    .execute(&mut *conn)
                    .await
            {
                return Err(DbError::MigrationFailedPartway {
                    file: migration.file.clone(),
                    schema: schema.to_string(),
                    message: e.to_string(),
                    recorded,
                    version_id,
                });
            }
            sqlx::query(AssertSqlSafe(sql::insert_migration()))
                .bind(&migration.name)
                .bind(&migration.source_dir)
                .bind(&migration.file)
                .bind(migration.migration_type.code() as i32)
                .bind(schema)
                .bind(request.created)
                .bind(&migration.contents)
                .bind(&migration.checksum)
                .bind(version_id)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
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
        Err(DbError::Connect(format!(
            "another mutation held the lock {} for more than {} s",
            sql::LOCK_NAME,
            sql::LOCK_TIMEOUT_SECONDS
        )))
    }
}

async fn unlock(conn: &mut MySqlConnection) {
    if let Err(e) = sqlx::query(sql::RELEASE_LOCK).bind(sql::LOCK_NAME).execute(&mut *conn).await {
        tracing::warn!(error = %e, "release_lock failed; the lock ends with the connection");
    }
}

#[async_trait]
impl Database for MysqlDatabase {
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
        let row = sqlx::query(AssertSqlSafe(sql::select_version())).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(rows::version::<_, i32>).transpose()
    }

    async fn version_migrations(&self, version_id: i64) -> Result<Vec<MigrationRow>, DbError> {
        let rows =
            sqlx::query(AssertSqlSafe(sql::select_version_migrations())).bind(version_id).fetch_all(&self.pool).await?;
        rows.iter().map(rows::migration::<_, i32>).collect()
    }

    async fn db_migration(&self, id: i64) -> Result<Option<MigrationRow>, DbError> {
        let row = sqlx::query(AssertSqlSafe(sql::select_migration())).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(rows::migration::<_, i32>).transpose()
    }

    async fn mutate(&self, request: MutationRequest<'_>) -> Result<MutationOutcome, DbError> {
        let mut conn = self.pool.acquire().await?;
        lock(&mut conn).await?;
        let result = self.run_locked(&mut conn, &request).await;
        unlock(&mut conn).await;
        result
    }
}
