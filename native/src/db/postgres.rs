//! The PostgreSQL driver: schema per tenant, transactional DDL.
//!
//! A version is one transaction: the advisory lock, reading the recorded
//! state, creating a tenant's schema, every migration and the bookkeeping
//! rows. Any failure rolls all of it back; a dry run rolls back at the end.
//! Migration files run over the simple query protocol, so a file may hold
//! several statements. Compatible engines (managed PostgreSQL, and
//! CockroachDB-style servers that implement `pg_advisory_xact_lock`) need
//! nothing special.

mod sql;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, Postgres, QueryBuilder};
use std::str::FromStr;
use strata_core::config::Config;
use strata_core::datasource::normalize;
use strata_core::plan::{AppliedMigration, plan};

use super::{CONNECT_TIMEOUT, Database, DbError, MigrationRow, MutationOutcome, MutationRequest, VersionRow, rows};

/// The PostgreSQL driver.
pub struct PostgresDatabase {
    pool: PgPool,
    tenant_select_sql: String,
    tenant_insert_sql: String,
    schema_placeholder: String,
}

impl PostgresDatabase {
    /// Connects to `config.data_source` (a `postgres://` URL) and creates the
    /// service schema and tables under the advisory lock.
    pub async fn connect(config: &Config) -> Result<Self, DbError> {
        let url = normalize(config.driver, &config.data_source).map_err(|e| DbError::Connect(e.to_string()))?;
        let options = PgConnectOptions::from_str(&url)
            .map_err(|e| DbError::Connect(format!("dataSource is not a PostgreSQL URL: {e}")))?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
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
            schema_placeholder: config.schema_placeholder.clone(),
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
        let mut tx = self.pool.begin().await?;
        sqlx::query(sql::LOCK).bind(sql::LOCK_KEY).execute(&mut *tx).await?;
        let tenants = self.read_tenants(&mut tx).await?;
        let applied = self.read_applied(&mut tx).await?;
        let plan = plan(strata_core::plan::PlanInput {
            sources: request.sources,
            applied: &applied,
            tenants: &tenants,
            target: &request.target,
            action: request.action,
        })?;
        drop(applied);
        if let Some(tenant) = &plan.new_tenant {
            sqlx::raw_sql(AssertSqlSafe(sql::create_schema(tenant)))
                .execute(&mut *tx)
                .await
                .map_err(|e| DbError::TenantInsertFailed { tenant: tenant.clone(), message: e.to_string() })?;
            sqlx::query(AssertSqlSafe(self.tenant_insert_sql.as_str()))
                .bind(tenant)
                .execute(&mut *tx)
                .await
                .map_err(|e| DbError::TenantInsertFailed { tenant: tenant.clone(), message: e.to_string() })?;
        }
        for step in plan.steps.iter().filter(|step| step.execute) {
            let migration = &request.sources[step.migration as usize];
            let schema = plan.schema_of(step);
            sqlx::raw_sql(AssertSqlSafe(migration.sql_for(&self.schema_placeholder, schema)))
                .execute(&mut *tx)
                .await
                .map_err(|e| DbError::MigrationFailed {
                file: migration.file.clone(),
                schema: schema.to_string(),
                message: e.to_string(),
            })?;
        }
        if request.dry_run || plan.is_empty() {
            tx.rollback().await?;
            return Ok(MutationOutcome { plan, version: None });
        }
        let id: i32 = sqlx::query_scalar(sql::INSERT_VERSION)
            .bind(request.version_name)
            .bind(request.created)
            .bind(request.request_id)
            .fetch_one(&mut *tx)
            .await?;
        for chunk in plan.steps.chunks(sql::MIGRATION_ROWS_PER_INSERT) {
            let mut insert = QueryBuilder::<Postgres>::new(sql::INSERT_MIGRATIONS);
            insert.push_values(chunk, |mut row, step| {
                let migration = &request.sources[step.migration as usize];
                row.push_bind(&migration.name)
                    .push_bind(&migration.source_dir)
                    .push_bind(&migration.file)
                    .push_bind(migration.migration_type.code() as i32)
                    .push_bind(plan.schema_of(step))
                    .push_bind(request.created)
                    .push_unseparated("::timestamptz")
                    .push_bind(&migration.contents)
                    .push_bind(&migration.checksum)
                    .push_bind(id);
            });
            insert.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        let version = VersionRow {
            id: i64::from(id),
            name: request.version_name.to_string(),
            created: request.created.to_string(),
        };
        Ok(MutationOutcome { plan, version: Some(version) })
    }
}
