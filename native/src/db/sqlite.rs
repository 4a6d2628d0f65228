//! The embedded SQLite driver.
//!
//! SQLite has no schemas, but it can attach database files under a name. So
//! every schema (the service's `svc`, each single schema, each tenant) is a
//! file `<schema>.db` next to the main database file of `dataSource` (or
//! `<schema>.schema.db` when `<schema>.db` is the main file's own name),
//! attached under the schema's name and created on first use; SQL written as
//! `create table {schema}.users (…)` works unchanged and no `create schema`
//! statement is needed (or possible). Unqualified tables go to the main file.
//!
//! A version is one transaction over all attached files. The main file uses
//! the rollback journal (not WAL), which makes commits across attached files
//! atomic. `ATTACH` is impossible inside a transaction, so the driver plans
//! once to learn the schemas, attaches them, takes the write lock
//! (`BEGIN IMMEDIATE`), and plans again on the locked state; if another
//! process changed the tenant list in between, it starts over.

mod sql;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, Connection, QueryBuilder, Sqlite};
use strata_core::config::Config;
use strata_core::datasource::normalize;
use strata_core::plan::{AppliedMigration, Plan, PlanInput, plan};
use tokio::sync::Mutex;

use super::{Database, DbError, MigrationRow, MutationOutcome, MutationRequest, VersionRow, rows};

/// Databases SQLite can attach besides `main` and `temp`, as compiled
/// (`SQLITE_MAX_ATTACHED`, set in `.cargo/config.toml`).
pub const MAX_ATTACHED: usize = 125;

/// How many times a mutation starts over when another process changed the
/// tenant list between planning and locking.
const REPLAN_ATTEMPTS: usize = 3;

/// The SQLite driver.
pub struct SqliteDatabase {
    pool: SqlitePool,
    files: SchemaFiles,
    tenant_select_sql: String,
    tenant_insert_sql: String,
    schema_placeholder: String,
    mutation_lock: Mutex<()>,
}

impl SqliteDatabase {
    /// Opens the database of `config.data_source` (a SQLite URL such as
    /// `sqlite://./data/main.db?mode=rwc`), attaches `svc` and creates the
    /// service tables.
    pub async fn connect(config: &Config) -> Result<Self, DbError> {
        let url = normalize(config.driver, &config.data_source).map_err(|e| DbError::Connect(e.to_string()))?;
        let options = SqliteConnectOptions::from_str(&url)
            .map_err(|e| DbError::Connect(format!("dataSource is not a SQLite URL: {e}")))?;
        let main_file = options.get_filename().to_path_buf();
        if main_file.as_os_str().is_empty() || main_file.to_string_lossy().contains(":memory:") {
            return Err(DbError::Connect(
                "dataSource must name a database file: schemas are files in its directory".into(),
            ));
        }
        let directory = match main_file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&directory)
            .map_err(|e| DbError::Connect(format!("cannot create directory {}: {e}", directory.display())))?;
        let files = SchemaFiles { directory, main_file };
        files.check("svc")?;
        let svc_file = files.file("svc");
        let options = options.journal_mode(SqliteJournalMode::Delete).busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .after_connect(move |conn, _| {
                let svc_file = svc_file.clone();
                Box::pin(async move {
                    attach(conn, "svc", &svc_file).await?;
                    sqlx::raw_sql("pragma svc.journal_mode = delete").execute(&mut *conn).await?;
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| DbError::Connect(e.to_string()))?;
        sqlx::raw_sql(sql::CREATE_SERVICE_TABLES).execute(&pool).await?;
        if config.default_tenant_table {
            sqlx::raw_sql(sql::CREATE_TENANTS_TABLE).execute(&pool).await?;
        }
        Ok(SqliteDatabase {
            pool,
            files,
            tenant_select_sql: config.tenant_select_sql.clone(),
            tenant_insert_sql: config.tenant_insert_sql.clone(),
            schema_placeholder: config.schema_placeholder.clone(),
            mutation_lock: Mutex::new(()),
        })
    }
}

/// Where each schema's database file lives.
struct SchemaFiles {
    directory: PathBuf,
    main_file: PathBuf,
}

impl SchemaFiles {
    /// `<schema>.db` next to the main file; the one schema whose file that
    /// would be the main file itself (a main file named `svc.db`, say) uses
    /// `<schema>.schema.db` instead. Names cannot contain `.`, so no other
    /// schema's file can take that name.
    fn file(&self, schema: &str) -> PathBuf {
        let plain = format!("{schema}.db");
        let is_main =
            self.main_file.file_name().is_some_and(|main| main.to_string_lossy().eq_ignore_ascii_case(&plain));
        if is_main { self.directory.join(format!("{schema}.schema.db")) } else { self.directory.join(plain) }
    }

    /// Refuses the schema names SQLite reserves for attachments.
    fn check(&self, schema: &str) -> Result<(), DbError> {
        if schema.eq_ignore_ascii_case("main") || schema.eq_ignore_ascii_case("temp") {
            return Err(DbError::UnusableSchema {
                schema: schema.into(),
                reason: "SQLite reserves the names main and temp".into(),
            });
        }
        Ok(())
    }
}

impl SqliteDatabase {
    async fn read_tenants(&self, conn: &mut SqliteConnection) -> Result<Vec<String>, DbError> {
        let rows = sqlx::query(AssertSqlSafe(self.tenant_select_sql.as_str()))
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| DbError::TenantSelectFailed(e.to_string()))?;
        rows.iter().map(rows::tenant).collect()
    }

    async fn read_applied(&self, conn: &mut SqliteConnection) -> Result<Vec<AppliedMigration>, DbError> {
        let rows = sqlx::query(sql::SELECT_APPLIED).fetch_all(&mut *conn).await?;
        rows.iter().map(rows::applied::<_, i64>).collect()
    }

    async fn plan_on(&self, conn: &mut SqliteConnection, request: &MutationRequest<'_>) -> Result<Plan, DbError> {
        let tenants = self.read_tenants(conn).await?;
        let applied = self.read_applied(conn).await?;
        Ok(plan(PlanInput {
            sources: request.sources,
            applied: &applied,
            tenants: &tenants,
            target: &request.target,
            action: request.action,
        })?)
    }

    /// Attaches every schema of the plan that is not attached yet. Returns
    /// the schemas attached now and the files that did not exist before.
    async fn attach_schemas(
        &self,
        conn: &mut SqliteConnection,
        schemas: &[String],
    ) -> Result<(Vec<String>, Vec<PathBuf>), DbError> {
        for schema in schemas {
            self.files.check(schema)?;
        }
        let attached: HashSet<String> = sqlx::query_scalar::<_, String>(sql::LIST_ATTACHED)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .map(|name| name.to_ascii_lowercase())
            .collect();
        let missing: Vec<&String> = schemas.iter().filter(|s| !attached.contains(&s.to_ascii_lowercase())).collect();
        if attached.len() - 2 + missing.len() > MAX_ATTACHED {
            return Err(DbError::UnusableSchema {
                schema: missing.first().map(|s| s.to_string()).unwrap_or_default(),
                reason: format!(
                    "this version would touch {} schemas; SQLite attaches at most {MAX_ATTACHED} databases at once \
                     (use PostgreSQL for more tenants)",
                    attached.len() - 2 + missing.len()
                ),
            });
        }
        let mut now_attached = Vec::new();
        let mut new_files = Vec::new();
        for schema in missing {
            let file = self.files.file(schema);
            let existed = file.exists();
            if let Err(e) = attach(conn, schema, &file).await {
                self.detach_schemas(conn, &now_attached, &new_files).await;
                return Err(e.into());
            }
            now_attached.push(schema.clone());
            if !existed {
                new_files.push(file);
            }
        }
        Ok((now_attached, new_files))
    }

    /// Detaches `schemas` and removes `uncommitted_files` (schema files this
    /// mutation created but did not commit anything to).
    async fn detach_schemas(&self, conn: &mut SqliteConnection, schemas: &[String], uncommitted_files: &[PathBuf]) {
        for schema in schemas {
            if let Err(e) = sqlx::raw_sql(AssertSqlSafe(sql::detach(schema))).execute(&mut *conn).await {
                tracing::warn!(schema, error = %e, "detach failed");
            }
        }
        for file in uncommitted_files {
            let _ = std::fs::remove_file(file);
        }
    }

    async fn run_locked(
        &self,
        conn: &mut SqliteConnection,
        request: &MutationRequest<'_>,
        attached_for: &[String],
    ) -> Result<Option<MutationOutcome>, DbError> {
        let mut tx = conn.begin_with(sql::BEGIN_IMMEDIATE).await?;
        let plan = self.plan_on(&mut tx, request).await?;
        if plan.schemas.iter().any(|schema| !attached_for.contains(schema)) {
            tx.rollback().await?;
            return Ok(None);
        }
        if let Some(tenant) = &plan.new_tenant {
            sqlx::query(AssertSqlSafe(self.tenant_insert_sql.as_str()))
                .bind(tenant)
                .execute(&mut *tx)
                .await
                .map_err(|e| DbError::TenantInsertFailed { tenant: tenant.clone(), message: e.to_string() })?;
        }
        for step in plan.steps.iter().filter(|step| step.execute) {
            let migration = &request.sources[step.migration as usize];
            let schema = plan.schema_of(step);
            let text = migration.sql_for(&self.schema_placeholder, schema);
            sqlx::raw_sql(AssertSqlSafe(text)).execute(&mut *tx).await.map_err(|e| DbError::MigrationFailed {
                file: migration.file.clone(),
                schema: schema.to_string(),
                message: e.to_string(),
            })?;
        }
        if request.dry_run || plan.is_empty() {
            tx.rollback().await?;
            return Ok(Some(MutationOutcome { plan, version: None }));
        }
        let id: i64 = sqlx::query_scalar(sql::INSERT_VERSION)
            .bind(request.version_name)
            .bind(request.created)
            .bind(request.request_id)
            .fetch_one(&mut *tx)
            .await?;
        for chunk in plan.steps.chunks(sql::MIGRATION_ROWS_PER_INSERT) {
            let mut insert = QueryBuilder::<Sqlite>::new(sql::INSERT_MIGRATIONS);
            insert.push_values(chunk, |mut row, step| {
                let migration = &request.sources[step.migration as usize];
                row.push_bind(&migration.name)
                    .push_bind(&migration.source_dir)
                    .push_bind(&migration.file)
                    .push_bind(migration.migration_type.code())
                    .push_bind(plan.schema_of(step))
                    .push_bind(request.created)
                    .push_bind(&migration.contents)
                    .push_bind(&migration.checksum)
                    .push_bind(id);
            });
            insert.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        let version = VersionRow { id, name: request.version_name.to_string(), created: request.created.to_string() };
        Ok(Some(MutationOutcome { plan, version: Some(version) }))
    }
}

async fn attach(conn: &mut SqliteConnection, schema: &str, file: &Path) -> Result<(), sqlx::Error> {
    sqlx::query(AssertSqlSafe(sql::attach(schema)))
        .bind(file.to_string_lossy().into_owned())
        .execute(&mut *conn)
        .await
        .map(|_| ())
}

#[async_trait]
impl Database for SqliteDatabase {
    async fn ping(&self) -> Result<(), DbError> {
        sqlx::query_scalar::<_, i64>("select count(*) from svc.svc_versions")
            .fetch_one(&self.pool)
            .await
            .map(|_| ())
            .map_err(|e| DbError::Connect(e.to_string()))
    }

    async fn tenants(&self) -> Result<Vec<String>, DbError> {
        let mut conn = self.pool.acquire().await?;
        self.read_tenants(&mut conn).await
    }

    async fn versions(&self, file: Option<&str>) -> Result<Vec<VersionRow>, DbError> {
        let rows = match file {
            Some(file) => sqlx::query(sql::SELECT_VERSIONS_BY_FILE).bind(file).fetch_all(&self.pool).await?,
            None => sqlx::query(sql::SELECT_VERSIONS).fetch_all(&self.pool).await?,
        };
        Ok(rows.iter().map(rows::version::<_, i64>).collect::<Result<_, _>>()?)
    }

    async fn version(&self, id: i64) -> Result<Option<VersionRow>, DbError> {
        let row = sqlx::query(sql::SELECT_VERSION).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(rows::version::<_, i64>).transpose()
    }

    async fn version_migrations(&self, version_id: i64) -> Result<Vec<MigrationRow>, DbError> {
        let rows =
            sqlx::query(AssertSqlSafe(sql::select_version_migrations())).bind(version_id).fetch_all(&self.pool).await?;
        rows.iter().map(rows::migration::<_, i64>).collect()
    }

    async fn db_migration(&self, id: i64) -> Result<Option<MigrationRow>, DbError> {
        let row = sqlx::query(AssertSqlSafe(sql::select_migration())).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(rows::migration::<_, i64>).transpose()
    }

    async fn mutate(&self, request: MutationRequest<'_>) -> Result<MutationOutcome, DbError> {
        let _serialised = self.mutation_lock.lock().await;
        let mut conn = self.pool.acquire().await?;
        for _ in 0..REPLAN_ATTEMPTS {
            let first_plan = self.plan_on(&mut conn, &request).await?;
            let (attached, new_files) = self.attach_schemas(&mut conn, &first_plan.schemas).await?;
            let result = self.run_locked(&mut conn, &request, &first_plan.schemas).await;
            let committed = matches!(&result, Ok(Some(outcome)) if outcome.version.is_some());
            let remove: &[PathBuf] = if committed { &[] } else { &new_files };
            self.detach_schemas(&mut conn, &attached, remove).await;
            if let Some(outcome) = result? {
                return Ok(outcome);
            }
        }
        Err(DbError::Connect("the tenant list kept changing while this mutation waited for the write lock".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_named_like_the_main_file_gets_its_own_file() {
        let files = SchemaFiles { directory: PathBuf::from("/data"), main_file: PathBuf::from("/data/svc.db") };
        assert_eq!(files.file("svc"), PathBuf::from("/data/svc.schema.db"));
        assert_eq!(files.file("app"), PathBuf::from("/data/app.db"));
        let files = SchemaFiles { directory: PathBuf::from("d"), main_file: PathBuf::from("d/App.DB") };
        assert_eq!(files.file("app"), PathBuf::from("d/app.schema.db"));
        assert_eq!(files.file("svc"), PathBuf::from("d/svc.db"));
    }
}
