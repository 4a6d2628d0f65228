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
//! The primitives of the executor ([`Engine`]): one writer, so tenant
//! segments never fan out; the single schemas of a version are attached on
//! its connection before its first transaction (`ATTACH` is impossible
//! inside one) and detached after its last, and each tenant's file only
//! for its own unit (`enter`/`leave`), so SQLite's limit on attached files
//! bounds a transaction, not a fleet; a transaction is `BEGIN IMMEDIATE`,
//! but for a unit sent as one message, which begins deferred and stages its
//! rows in its own file so that it commits that file alone ([`staging`]).
//! The main file uses the rollback journal (not WAL), which makes a commit
//! across attached files atomic. The cross-instance lock is a write
//! transaction held, for the whole version, on a file of its own next to
//! the main file (`svc.lock.db`; no schema can be named `svc.lock`), plus a
//! mutex for the mutations of this process; the operating system releases
//! the file lock when the process dies.

mod exec;
mod header;
mod sql;
mod staging;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, QueryBuilder, Sqlite};
use strata_core::migrate::backfill::{Key, KeyValue};
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::normalize;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::ident::quote_string_sqlite;
use strata_core::migrate::lock_wait;

use crate::db::books::{SqlxBooks, SqlxConn, tables};
use crate::db::engine::{self, Catalogs, Engine, Entries, Failure, Reading, Transaction};
use crate::db::error::{DbError, describe};
use crate::db::error::{LockError, OpenError};
use crate::db::types::Access;

/// Databases SQLite can attach besides `main` and `temp`, as compiled
/// (`SQLITE_MAX_ATTACHED`, set in `.cargo/config.toml`).
pub(crate) const MAX_ATTACHED: usize = 125;

/// How long a mutation waits for another process's version to finish: as
/// long as for the lease row of the other engines (a version may run for
/// minutes; giving up after seconds made a second `apply` fail beside it).
const LOCK_WAIT: Duration = Duration::from_secs(600);

/// The SQLite engine.
pub(crate) struct SqliteEngine {
    pool: SqlitePool,
    files: SchemaFiles,
    books: SqlxBooks<Sqlite, i64>,
    tenant_insert_sql: String,
    lock_options: SqliteConnectOptions,
    /// What the running version staged (see [`staging`]).
    staging: std::sync::Mutex<staging::Staging>,
    /// Held by the fold in progress: one at a time, so that each drains
    /// exactly the units it wrote (a backfill's batch folds too, from
    /// another task than the version's).
    folding: tokio::sync::Mutex<()>,
    /// The fingerprint of each tenant's catalog, read right after its unit
    /// committed, its file still attached (see [`Engine::catalog_prints`]);
    /// forgotten when the schema is entered again and taken when the
    /// version stores them.
    prints: std::sync::Mutex<HashMap<String, String>>,
    /// Schema files created on connections closed before the version's end
    /// ([`Engine::discard`]): removed with the others when nothing of the
    /// version stays.
    created_by_discarded: std::sync::Mutex<Vec<PathBuf>>,
}

impl SqliteEngine {
    /// Opens the database of `config.data_source` (a SQLite URL such as
    /// `sqlite://./data/main.db?mode=rwc`) and attaches `svc` on every
    /// connection. Read-only, it creates nothing: no `svc` file, no table,
    /// and a database that does not exist yet is read as an empty one.
    pub(crate) async fn open(config: &Config, access: Access) -> Result<Self, DbError> {
        let (options, files) = Self::main_file(config, access).await?;
        let lock_options = SqliteConnectOptions::new()
            .filename(files.directory.join(sql::LOCK_FILE))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Delete)
            // No wait at first: a lock found held is announced, then waited for.
            .busy_timeout(Duration::ZERO)
            .disable_statement_logging();
        files.check("svc")?;
        let pool = Self::pool(options, files.file("svc"), access).await?;
        let engine = SqliteEngine {
            pool,
            files,
            books: SqlxBooks::new(&sql::BOOKS, Driver::Sqlite, false, &config.tenant_select_sql),
            tenant_insert_sql: config.tenant_insert_sql.clone(),
            lock_options,
            staging: Default::default(),
            folding: Default::default(),
            prints: Default::default(),
            created_by_discarded: Default::default(),
        };
        if access == Access::ReadWrite {
            engine.recover_at_start().await?;
        }
        Ok(engine)
    }

    /// The main database file `dataSource` names, how it opens, and the
    /// directory the schemas' files live in.
    async fn main_file(config: &Config, access: Access) -> Result<(SqliteConnectOptions, SchemaFiles), DbError> {
        let url = normalize(config.driver, &config.data_source)
            .map_err(|e| DbError::Open(OpenError::BadDataSource(e.to_string())))?;
        let options = SqliteConnectOptions::from_str(&url)
            .map_err(|e| DbError::Open(OpenError::BadDataSource(format!("dataSource is not a SQLite URL: {e}"))))?;
        let main_file = options.get_filename().to_path_buf();
        if main_file.as_os_str().is_empty() || main_file.to_string_lossy().contains(":memory:") {
            return Err(DbError::Open(OpenError::BadDataSource(
                "dataSource must name a database file: schemas are files in its directory".into(),
            )));
        }
        let directory = match main_file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Read-only, a database that does not exist yet is read as an empty
        // one, in memory: nothing is created on disk, not even its
        // directory. Otherwise the main file is opened as `dataSource` says
        // (`mode=rwc` creates it, and so its directory).
        let missing = !tokio::fs::try_exists(&main_file).await.unwrap_or(false);
        let options = match (access, missing) {
            (Access::ReadOnly, true) => SqliteConnectOptions::from_str("sqlite::memory:")
                .map_err(|e| DbError::Open(OpenError::BadDataSource(format!("in-memory database: {e}"))))?,
            _ => {
                tokio::fs::create_dir_all(&directory)
                    .await
                    .map_err(|source| DbError::Open(OpenError::Directory { path: directory.clone(), source }))?;
                options
            }
        };
        Ok((options, SchemaFiles { directory, main_file }))
    }

    /// The pool of connections to the main file, `svc` attached on each
    /// (read-only before it exists: nothing).
    async fn pool(options: SqliteConnectOptions, svc_file: PathBuf, access: Access) -> Result<SqlitePool, DbError> {
        // A slow migration is no warning, nor its SQL a log line.
        let options = options
            .journal_mode(SqliteJournalMode::Delete)
            .busy_timeout(Duration::from_secs(10))
            .disable_statement_logging();
        SqlitePoolOptions::new()
            .max_connections(4)
            .after_connect(move |conn, _| {
                let svc_file = svc_file.clone();
                Box::pin(async move {
                    if access == Access::ReadOnly && !tokio::fs::try_exists(&svc_file).await.unwrap_or(false) {
                        return Ok(());
                    }
                    attach(conn, "svc", &svc_file).await?;
                    sqlx::raw_sql("pragma svc.journal_mode = delete").execute(&mut *conn).await?;
                    Ok(())
                })
            })
            // A connection goes back to the pool with nothing but main,
            // temp and svc attached; one that has more (a unit's file left
            // attached by a version that never released it) is closed rather
            // than lent again, where entering that tenant would fail.
            .after_release(|conn, _| {
                Box::pin(async move {
                    let extra: i64 = sqlx::query_scalar(sql::COUNT_EXTRA_ATTACHED).fetch_one(&mut *conn).await?;
                    Ok(extra == 0)
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| DbError::Open(OpenError::Connect(describe(&e))))
    }
}

/// `begin immediate`: whether the write lock was taken (false: another
/// connection holds it, past the connection's busy time-out).
async fn begin_immediate(conn: &mut SqliteConnection) -> Result<bool, DbError> {
    match sqlx::raw_sql(sql::BEGIN_IMMEDIATE).execute(conn).await {
        Ok(_) => Ok(true),
        Err(sqlx::Error::Database(d)) if d.message().contains("locked") || d.message().contains("busy") => Ok(false),
        Err(e) => Err(e.into()),
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

    /// The text file naming who holds the lock file (see
    /// [`lease::new_holder`](super::lease::new_holder)).
    fn lock_holder(&self) -> PathBuf {
        self.directory.join(sql::LOCK_HOLDER_FILE)
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

impl SqliteEngine {
    /// Attaches every schema in `schemas` not attached yet on `conn`;
    /// remembers the attachments and the files created on the way.
    async fn attach_schemas(&self, conn: &mut SqliteConn, schemas: &[String]) -> Result<(), DbError> {
        for schema in schemas {
            self.files.check(schema)?;
        }
        let attached: HashSet<String> = sqlx::query_scalar::<_, String>(sql::LIST_ATTACHED)
            .fetch_all(&mut *conn.conn)
            .await?
            .into_iter()
            .map(|name| name.to_ascii_lowercase())
            .collect();
        let missing: Vec<&String> = schemas.iter().filter(|s| !attached.contains(&s.to_ascii_lowercase())).collect();
        // Every connection has `main` and `temp`, which do not count
        // against SQLite's limit of attachments.
        let attachments = attached.len().saturating_sub(2) + missing.len();
        if attachments > MAX_ATTACHED {
            return Err(too_many_attached(missing.first().map_or("", |s| s.as_str()), attachments));
        }
        for schema in missing {
            let file = self.files.file(schema);
            let existed = tokio::fs::try_exists(&file).await.unwrap_or(false);
            if !existed && recorded_in(&mut conn.conn, schema).await {
                return Err(file_gone(schema, &file));
            }
            attach(&mut conn.conn, schema, &file).await.map_err(|error| DbError::UnusableSchema {
                schema: schema.clone(),
                reason: format!("its database file {} cannot be attached: {error}", file.display()),
            })?;
            conn.attached.push(schema.clone());
            if !existed {
                conn.created_files.push(file);
            }
        }
        Ok(())
    }
}

/// A [`Reading`] as SQLite runs it: the query of one schema's catalog
/// (drift's `sql::catalog`, desired state's `sql::desired_catalog`) and how
/// many schemas one query reads.
#[derive(Clone, Copy)]
struct CatalogQuery {
    read: fn(&str) -> String,
    at_once: usize,
}

impl CatalogQuery {
    fn of(reading: Reading) -> CatalogQuery {
        match reading {
            Reading::Drift => CatalogQuery { read: sql::catalog, at_once: sql::CATALOGS_AT_ONCE },
            Reading::Desired => CatalogQuery { read: sql::desired_catalog, at_once: sql::DESIRED_CATALOGS_AT_ONCE },
        }
    }
}

/// A row of [`sql::catalog`]: schema, kind, name, definition.
type CatalogRow = (String, String, String, String);

fn catalog_object((_, kind, name, definition): CatalogRow) -> strata_core::migrate::fingerprint::CatalogObject {
    strata_core::migrate::fingerprint::CatalogObject { kind, name, definition }
}

/// The refusal of a schema whose file is gone while the books record
/// migrations in it.
fn file_gone(schema: &str, file: &Path) -> DbError {
    DbError::UnusableSchema {
        schema: schema.to_string(),
        reason: format!(
            "its database file {} is gone, though migrations are recorded for it: restore the file (a new empty \
             one would take the next files over a schema that is not there)",
            file.display()
        ),
    }
}

/// Whether the books (attached as `svc`) record a migration in `schema`;
/// no when they cannot tell (not made yet).
async fn recorded_in(conn: &mut SqliteConnection, schema: &str) -> bool {
    sqlx::query_scalar::<_, i64>(sql::RECORDED_IN_SCHEMA)
        .bind(schema)
        .fetch_one(conn)
        .await
        .is_ok_and(|found| found == 1)
}

/// The refusal of one attachment too many (`attachments` in all).
fn too_many_attached(schema: &str, attachments: usize) -> DbError {
    DbError::UnusableSchema {
        schema: schema.to_string(),
        reason: format!(
            "this version would touch {attachments} schemas; SQLite attaches at most {MAX_ATTACHED} \
             databases at once (use PostgreSQL for more tenants)"
        ),
    }
}

impl SqliteEngine {
    /// The file of `schema` when it is a schema's own file this connection
    /// has not attached (not `svc`, not a name SQLite reserves).
    fn unattached_file(&self, conn: &SqliteConn, schema: &str) -> Option<PathBuf> {
        (!conn.has_attached(schema) && self.files.check(schema).is_ok()).then(|| self.files.file(schema))
    }

    /// Catalogs read through SQLite, up to [`sql::CATALOGS_AT_ONCE`]
    /// schemas at a time: their files attached in one call, their catalogs
    /// read in one query, detached in one call (three round trips a batch,
    /// not three a schema).
    async fn read_catalogs(
        &self,
        conn: &mut SqliteConn,
        schemas: &[String],
        reading: Reading,
    ) -> Result<Catalogs, DbError> {
        let query = CatalogQuery::of(reading);
        let room = MAX_ATTACHED.saturating_sub(conn.attached.len() + 1).clamp(1, query.at_once);
        let mut out = Vec::with_capacity(schemas.len());
        for batch in schemas.chunks(room) {
            let attached = self.attach_batch(conn, batch).await?;
            let read = sqlx::query_scalar::<_, String>(AssertSqlSafe(sql::catalogs_with(batch, query.read)))
                .persistent(false)
                .fetch_one(&mut *conn.conn)
                .await;
            if !attached.is_empty()
                && let Err(e) = exec::batch(&mut conn.conn, &sql::detach_all(&attached)).await
            {
                tracing::warn!(error = %e, "detach failed");
            }
            // Each schema's first place in the batch: a schema named twice
            // reads the same file, and its later places are copies.
            let mut first: HashMap<String, usize> = HashMap::with_capacity(batch.len());
            for (index, schema) in batch.iter().enumerate() {
                first.entry(schema.to_ascii_lowercase()).or_insert(index);
            }
            let mut catalogs = vec![Vec::new(); batch.len()];
            let rows: Vec<CatalogRow> = serde_json::from_str(&read?)
                .map_err(|e| DbError::UnexpectedAnswer(format!("the catalogs' rows: {e}")))?;
            for row in rows {
                if let Some(&index) = first.get(&row.0.to_ascii_lowercase()) {
                    catalogs[index].push(catalog_object(row));
                }
            }
            for (index, schema) in batch.iter().enumerate() {
                let at = first[&schema.to_ascii_lowercase()];
                if at != index {
                    catalogs[index] = catalogs[at].clone();
                }
            }
            out.extend(catalogs);
        }
        Ok(out)
    }

    /// The catalogs of `schemas` read by `reading`: a file whose schema
    /// never changed has an empty catalog, said by its header ([`header`]:
    /// a fleet's new tenants cost an `open` each, not an attachment); the
    /// others are read by [`SqliteEngine::read_catalogs`]. A file this
    /// connection has attached is always read through SQLite (its
    /// transaction may have changed it).
    async fn catalogs_by(
        &self,
        conn: &mut SqliteConn,
        schemas: &[String],
        reading: Reading,
    ) -> Result<Catalogs, DbError> {
        self.flush(conn).await?;
        let files: Vec<Option<PathBuf>> = schemas.iter().map(|schema| self.unattached_file(conn, schema)).collect();
        let blank: Vec<bool> = exec::blocking(|| {
            files.iter().map(|file| file.as_deref().is_some_and(header::never_had_a_schema)).collect()
        });
        let unread: Vec<String> =
            schemas.iter().zip(&blank).filter(|&(_, &blank)| !blank).map(|(schema, _)| schema.clone()).collect();
        let mut read = self.read_catalogs(conn, &unread, reading).await?.into_iter();
        Ok(blank.iter().map(|&blank| if blank { Vec::new() } else { read.next().unwrap_or_default() }).collect())
    }

    /// The catalog of `text` applied into `scratch` (attached, empty)
    /// inside a transaction that is rolled back on every path.
    async fn read_scratch(
        &self,
        conn: &mut SqliteConn,
        text: &str,
        scratch: &str,
    ) -> Result<Result<Vec<strata_core::migrate::fingerprint::CatalogObject>, Failure>, DbError> {
        // Deferred, not the engine's `transaction` (immediate, after a fold):
        // only the in-memory scratch is written, so no file is locked.
        exec::batch(&mut conn.conn, "begin").await?;
        // Statement by statement, as a file runs: the failing one's line.
        if let Err(failure) = self.execute(conn, text).await {
            exec::batch(&mut conn.conn, "rollback").await?;
            return Ok(Err(failure));
        }
        let read = sqlx::query_scalar::<_, String>(AssertSqlSafe(sql::catalogs_with(
            &[scratch.to_string()],
            sql::desired_catalog,
        )))
        .persistent(false)
        .fetch_one(&mut *conn.conn)
        .await;
        exec::batch(&mut conn.conn, "rollback").await?;
        let rows: Vec<CatalogRow> = serde_json::from_str(&read?)
            .map_err(|e| DbError::UnexpectedAnswer(format!("the desired catalog's rows: {e}")))?;
        Ok(Ok(rows.into_iter().map(catalog_object).collect()))
    }

    /// Attaches, in one call, the files of the schemas of `batch` not
    /// attached on `conn` yet (outside any transaction); returns them, to
    /// detach. Files that did not exist are remembered as created, as
    /// [`Engine::enter`] does.
    async fn attach_batch(&self, conn: &mut SqliteConn, batch: &[String]) -> Result<Vec<String>, DbError> {
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        for schema in batch {
            self.files.check(schema)?;
            let known = conn.has_attached(schema) || files.iter().any(|(named, _)| named.eq_ignore_ascii_case(schema));
            if known {
                continue;
            }
            files.push((schema.clone(), self.files.file(schema)));
        }
        let schemas: Vec<String> = files.iter().map(|(schema, _)| schema.clone()).collect();
        if files.is_empty() {
            return Ok(schemas);
        }
        // One look at the directory for the whole batch (a task handed to
        // the blocking pool per file cost a wake-up each).
        let missing: Vec<PathBuf> = exec::blocking(|| {
            files.iter().filter(|(_, file)| !file.try_exists().unwrap_or(false)).map(|(_, file)| file.clone()).collect()
        });
        conn.created_files.extend(missing);
        let files: Vec<(String, String)> =
            files.into_iter().map(|(schema, file)| (schema, file.to_string_lossy().into_owned())).collect();
        // The last unit's file, unless the batch wants it, goes in the same
        // call.
        let flushed = conn.left.take_if(|left| !batch.iter().any(|schema| schema.eq_ignore_ascii_case(left)));
        self.attach_files(conn, &files, flushed).await?;
        Ok(schemas)
    }

    /// Detaches `left` and attaches `files` (schema, path) in one call; when
    /// that fails, detaches `left` alone and attaches alone, and when that
    /// fails too, detaches what was attached and fails.
    async fn attach_files(
        &self,
        conn: &mut SqliteConn,
        files: &[(String, String)],
        left: Option<String>,
    ) -> Result<(), DbError> {
        let text = sql::detach_then_attach(left.as_deref(), files);
        if exec::batch(&mut conn.conn, &text).await.is_ok() {
            return Ok(());
        }
        // The detach may be what failed (then nothing was attached): alone,
        // then the attachments alone.
        if let Some(left) = left {
            self.detach_logged(conn, left).await;
        }
        if let Err(e) = exec::batch(&mut conn.conn, &sql::attach_all(files)).await {
            // Those before the failing one are attached: detach them all
            // (the rest fail harmlessly).
            for (schema, _) in files {
                let _ = sqlx::raw_sql(AssertSqlSafe(sql::detach(schema))).execute(&mut *conn.conn).await;
            }
            return Err(e);
        }
        Ok(())
    }

    /// Runs the attachment `enter` left to the connection's next call
    /// (nothing when there is none). When it fails, it stays, to fail the
    /// next call too: what runs in the tenant's schema never runs without
    /// its file.
    async fn flush(&self, conn: &mut SqliteConn) -> Result<(), DbError> {
        let Some(mut pending) = conn.pending.take() else { return Ok(()) };
        if let Err(error) = self.attach_files(conn, &pending.files(), pending.left.take()).await {
            conn.pending = Some(pending);
            return Err(error);
        }
        Ok(())
    }
}

/// A tenant's attachment that [`Engine::enter`] left to the connection's
/// next call: the unit's own when it is one message (one hand-over of the
/// connection a unit, not two), else run first by whatever comes.
struct PendingAttach {
    schema: String,
    /// Its file's path.
    file: String,
    /// The last unit's file, detached in the same call.
    left: Option<String>,
}

impl PendingAttach {
    /// The text that detaches the last unit's file and attaches this one.
    fn text(&self) -> String {
        sql::detach_then_attach(self.left.as_deref(), &self.files())
    }

    /// Its file as [`SqliteEngine::attach_files`] takes it: (schema, path).
    fn files(&self) -> [(String, String); 1] {
        [(self.schema.clone(), self.file.clone())]
    }
}

impl SqliteConn {
    /// Whether `schema`'s file is attached on this connection (`svc`, a
    /// single schema, a unit's tenant, the last unit's not yet detached).
    fn has_attached(&self, schema: &str) -> bool {
        schema.eq_ignore_ascii_case("svc")
            || self.attached.iter().chain(&self.entered).chain(&self.left).any(|a| a.eq_ignore_ascii_case(schema))
    }

    /// Forgets an attachment that never ran: nothing was entered, and the
    /// last unit's file it was to detach stays left.
    fn drop_pending(&mut self) -> bool {
        let Some(pending) = self.pending.take() else { return false };
        self.entered = None;
        self.left = self.left.take().or(pending.left);
        true
    }
}

impl SqliteEngine {
    /// Detaches what the version attached on `conn` (its schemas, the last
    /// unit's file) and forgets an attachment that never ran.
    async fn detach_version(&self, conn: &mut SqliteConn) {
        conn.drop_pending();
        if let Some(left) = conn.left.take() {
            self.detach_logged(conn, left).await;
        }
        for schema in std::mem::take(&mut conn.attached) {
            self.detach_logged(conn, schema).await;
        }
    }

    /// Detaches `schema`'s file (a failure is logged: the file stays
    /// attached until the connection closes).
    async fn detach_logged(&self, conn: &mut SqliteConn, schema: String) {
        if let Err(e) = exec::batch(&mut conn.conn, &sql::detach(&schema)).await {
            tracing::warn!(schema, error = %e, "detach failed");
        }
    }

    /// Keeps the print of `schema`'s catalog as read right after its unit
    /// (one JSON array of [`sql::catalogs`]); a text that does not parse is
    /// dropped, and the catalog read again when the prints are stored.
    fn keep_print(&self, schema: String, read: &str) {
        let Ok(rows) = serde_json::from_str::<Vec<CatalogRow>>(read) else { return };
        let objects: Vec<_> = rows.into_iter().map(catalog_object).collect();
        let print = engine::catalog_print(&schema, &objects);
        self.prints.lock().unwrap_or_else(|e| e.into_inner()).insert(schema, print);
    }
}

async fn attach(conn: &mut SqliteConnection, schema: &str, file: &Path) -> Result<(), sqlx::Error> {
    // Not kept prepared: the text differs for every schema, and a
    // connection's cache of 100 statements would hold them.
    sqlx::query(AssertSqlSafe(sql::attach(schema)))
        .persistent(false)
        .bind(file.to_string_lossy().into_owned())
        .execute(&mut *conn)
        .await
        .map(|_| ())
}

/// A connection of the executor: a pooled connection with `svc` attached,
/// and the schemas this version attached to it.
pub(crate) struct SqliteConn {
    conn: PoolConnection<Sqlite>,
    /// Attached for the whole version (`prepare`), detached by `release`.
    attached: Vec<String>,
    /// Entered for one unit (`enter`; its attachment runs with the unit's
    /// first call, see [`PendingAttach`]), left attached by `leave`.
    entered: Option<String>,
    /// The last unit's file, left attached by `leave`: detached in the same
    /// call as the next attachment (one hand-over of the connection a
    /// unit, not two), before a transaction that locks every attached file
    /// begins, and by `release`.
    left: Option<String>,
    /// The entered tenant's attachment, not run yet (see [`PendingAttach`]).
    pending: Option<PendingAttach>,
    created_files: Vec<PathBuf>,
}

impl SqlxConn<Sqlite> for SqliteConn {
    fn sqlx(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }
}

#[async_trait]
impl Engine for SqliteEngine {
    type Conn = SqliteConn;
    type Lock = SqliteConnection;
    type Books = SqlxBooks<Sqlite, i64>;
    const DRIVER: Driver = Driver::Sqlite;
    const TRANSACTIONAL_DDL: bool = true;

    async fn close(&self) {
        self.pool.close().await;
    }

    fn books(&self) -> &Self::Books {
        &self.books
    }

    async fn connect(&self) -> Result<Self::Conn, DbError> {
        Ok(SqliteConn {
            conn: self.pool.acquire().await?,
            attached: Vec::new(),
            entered: None,
            left: None,
            pending: None,
            created_files: Vec::new(),
        })
    }

    /// A file changed the connection (a `pragma`, an attachment, a
    /// temporary table: core's `FileMode::changes_session`): what the
    /// version attached is detached and the connection closed, its pool's
    /// place left to a new one.
    async fn discard(&self, mut conn: Self::Conn) {
        self.detach_version(&mut conn).await;
        let created = std::mem::take(&mut conn.created_files);
        self.created_by_discarded.lock().unwrap_or_else(|e| e.into_inner()).extend(created);
        if let Err(error) = conn.conn.close().await {
            tracing::debug!(error = %describe(&error), "a connection a file changed did not close cleanly");
        }
    }

    async fn install(&self, tenants_table: bool) -> Result<(), DbError> {
        sqlx::raw_sql(AssertSqlSafe(sql::creates(tenants_table))).execute(&self.pool).await?;
        for (table, column) in tables::added() {
            let present: i64 = sqlx::query_scalar(sql::COLUMN_PRESENT)
                .bind(table.name)
                .bind(column.name)
                .fetch_one(&self.pool)
                .await?;
            if present == 0 {
                let add = tables::add_column(Driver::Sqlite, table, column);
                sqlx::raw_sql(AssertSqlSafe(add)).execute(&self.pool).await?;
            }
        }
        Ok(())
    }

    /// A write transaction on the lock file; when another process holds
    /// it, says once who (the holder file it wrote) and waits up to
    /// [`LOCK_WAIT`].
    async fn lock(&self) -> Result<Self::Lock, DbError> {
        let mut lock = SqliteConnection::connect_with(&self.lock_options).await?;
        if !begin_immediate(&mut lock).await? {
            let holder = tokio::fs::read_to_string(self.files.lock_holder()).await.unwrap_or_default();
            tracing::warn!("{}", lock_wait::lease_wait_message(sql::LOCK_FILE, holder.trim()));
            let wait = format!("pragma busy_timeout = {}", LOCK_WAIT.as_millis());
            sqlx::raw_sql(AssertSqlSafe(wait)).execute(&mut lock).await?;
            if !begin_immediate(&mut lock).await? {
                return Err(DbError::Lock(LockError::Timeout {
                    lock: sql::LOCK_FILE.to_string(),
                    seconds: LOCK_WAIT.as_secs(),
                }));
            }
        }
        // Only for the message above: a holder that died leaves it behind,
        // and the next one writes over it.
        let _ = tokio::fs::write(self.files.lock_holder(), super::lease::new_holder()).await;
        if let Err(error) = self.recover_staged().await {
            self.unlock(lock).await;
            return Err(error);
        }
        Ok(lock)
    }

    /// Whether a write transaction on the lock file can begin now (tried
    /// without waiting, and given back at once).
    async fn lock_in_use(&self) -> Result<bool, DbError> {
        let mut probe = SqliteConnection::connect_with(&self.lock_options).await?;
        let free = begin_immediate(&mut probe).await?;
        if free {
            sqlx::raw_sql(sql::ROLLBACK).execute(&mut probe).await?;
        }
        let _ = probe.close().await;
        Ok(!free)
    }

    async fn unlock(&self, mut lock: Self::Lock) {
        let _ = tokio::fs::remove_file(self.files.lock_holder()).await;
        let _ = sqlx::raw_sql(sql::ROLLBACK).execute(&mut lock).await;
        let _ = lock.close().await;
    }

    async fn prepare(&self, conn: &mut Self::Conn, schemas: &[String]) -> Result<(), DbError> {
        self.prints.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.attach_schemas(conn, schemas).await
    }

    /// Enters a tenant's file for its unit, unless the version attached it:
    /// its attachment is left pending, to run in the unit's own call.
    async fn enter(&self, conn: &mut Self::Conn, schema: &str) -> Result<(), DbError> {
        // What this unit does is not in the print its last unit read.
        self.prints.lock().unwrap_or_else(|e| e.into_inner()).remove(schema);
        if conn.left.as_ref().is_some_and(|left| left.eq_ignore_ascii_case(schema)) {
            conn.entered = conn.left.take();
            return Ok(());
        }
        if conn.attached.iter().any(|a| a.eq_ignore_ascii_case(schema)) {
            return Ok(());
        }
        if schema.eq_ignore_ascii_case("svc") {
            // Attached with the connection (or not at all, read-only
            // before anything was installed): as any other schema.
            let before = conn.attached.len();
            self.attach_schemas(conn, &[schema.to_string()]).await?;
            conn.entered = conn.attached.drain(before..).next();
            return Ok(());
        }
        // What is attached is known here (`svc` and the version's schemas):
        // the attachment itself is left to the unit's own call.
        let attachments = conn.attached.len() + 2;
        if attachments > MAX_ATTACHED {
            return Err(too_many_attached(schema, attachments));
        }
        self.files.check(schema)?;
        let file = self.files.file(schema);
        if !exec::blocking(|| file.try_exists().unwrap_or(false)) {
            if recorded_in(&mut conn.conn, schema).await {
                return Err(file_gone(schema, &file));
            }
            conn.created_files.push(file.clone());
        }
        conn.pending = Some(PendingAttach {
            schema: schema.to_string(),
            file: file.to_string_lossy().into_owned(),
            left: conn.left.take(),
        });
        conn.entered = Some(schema.to_string());
        Ok(())
    }

    async fn catalog(
        &self,
        conn: &mut Self::Conn,
        schema: &str,
    ) -> Result<Vec<strata_core::migrate::fingerprint::CatalogObject>, DbError> {
        self.flush(conn).await?;
        let rows: Vec<CatalogRow> =
            sqlx::query_as(AssertSqlSafe(sql::catalog(schema))).persistent(false).fetch_all(&mut *conn.conn).await?;
        Ok(rows.into_iter().map(catalog_object).collect())
    }

    /// Each schema as `reading` reads it ([`SqliteEngine::catalogs_by`]).
    async fn catalogs(&self, conn: &mut Self::Conn, schemas: &[String], reading: Reading) -> Result<Catalogs, DbError> {
        self.catalogs_by(conn, schemas, reading).await
    }

    /// The desired file applied into a private in-memory database attached
    /// as `scratch` for it, inside a transaction rolled back on every path,
    /// then detached: nothing of it reaches a file. A connection that could
    /// not detach it is closed, not handed back to the pool.
    async fn desired_catalog(
        &self,
        conn: &mut Self::Conn,
        text: &str,
        scratch: &str,
    ) -> Result<Result<Vec<strata_core::migrate::fingerprint::CatalogObject>, Failure>, DbError> {
        self.flush(conn).await?;
        let attachments = conn.attached.len() + usize::from(conn.left.is_some()) + 2;
        if attachments > MAX_ATTACHED {
            return Err(too_many_attached(scratch, attachments));
        }
        exec::batch(&mut conn.conn, &sql::attach_memory(scratch)).await?;
        let read = self.read_scratch(conn, text, scratch).await;
        if let Err(e) = exec::batch(&mut conn.conn, &sql::detach(scratch)).await {
            conn.conn.close_on_drop();
            return Err(e);
        }
        read
    }

    /// The prints the units read as they committed (see
    /// [`SqliteEngine::keep_print`]), taken; the others' catalogs read now.
    async fn catalog_prints(&self, conns: &mut [Self::Conn], schemas: &[String]) -> Result<Vec<String>, DbError> {
        let mut prints: Vec<Option<String>> = {
            let mut kept = self.prints.lock().unwrap_or_else(|e| e.into_inner());
            schemas.iter().map(|schema| kept.remove(schema)).collect()
        };
        let unread: Vec<String> = schemas
            .iter()
            .zip(&prints)
            .filter(|(_, print)| print.is_none())
            .map(|(schema, _)| schema.clone())
            .collect();
        if !unread.is_empty() {
            let mut read = self.live_prints(conns, &unread).await?.into_iter();
            for print in prints.iter_mut().filter(|print| print.is_none()) {
                *print = read.next();
            }
        }
        Ok(prints.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Leaves the unit's file attached (its transaction is over) until the
    /// next attachment detaches it in the same call.
    async fn leave(&self, conn: &mut Self::Conn, _schema: &str) {
        if conn.drop_pending() {
            // Never attached (its unit stopped before anything ran).
            return;
        }
        if let Some(entered) = conn.entered.take()
            && let Some(earlier) = conn.left.replace(entered)
        {
            self.detach_logged(conn, earlier).await;
        }
    }

    /// Detaches the version's schemas; when the version left nothing
    /// (a dry run, or nothing committed), removes the schema files it
    /// created, which are empty: nothing is left behind.
    async fn release(&self, conn: &mut Self::Conn, discard: bool) {
        self.detach_version(conn).await;
        let discarded = std::mem::take(&mut *self.created_by_discarded.lock().unwrap_or_else(|e| e.into_inner()));
        for file in std::mem::take(&mut conn.created_files).into_iter().chain(discarded) {
            if discard {
                let _ = tokio::fs::remove_file(file).await;
            }
        }
    }

    /// Before a transaction begins, the rows staged so far are folded: it
    /// may write `svc_migrations` itself, after them.
    async fn transaction(&self, conn: &mut Self::Conn, step: Transaction) -> Result<(), DbError> {
        if step == Transaction::Begin {
            self.flush(conn).await?;
            if let Some(left) = conn.left.take() {
                self.detach_logged(conn, left).await;
            }
            self.fold_pending(conn).await?;
        }
        let sql = match step {
            Transaction::Begin => sql::BEGIN_IMMEDIATE,
            Transaction::Commit => sql::COMMIT,
            Transaction::Rollback => sql::ROLLBACK,
        };
        sqlx::raw_sql(sql).execute(&mut *conn.conn).await?;
        Ok(())
    }

    const ONE_MESSAGE: bool = true;
    const MESSAGE_OFFSETS: bool = false;
    /// Deferred: only what the unit writes takes part in its commit (an
    /// immediate one makes every attached file part of it).
    const BEGIN: &'static str = "begin";

    async fn settle(&self, conn: &mut Self::Conn) -> Result<(), DbError> {
        self.fold_staged(conn).await
    }

    /// The unit's text in one call into SQLite ([`exec`]), which runs its
    /// statements in order and stops at the first that fails (with no
    /// position: the executor runs the unit again file by file to place it).
    ///
    /// A unit whose rows are staged in its own file (see [`staging`])
    /// begins deferred, so that it writes that file alone and commits it
    /// alone; before it runs, the version is marked as staging and its
    /// files described in `svc_staged_files`.
    async fn execute_message(&self, conn: &mut Self::Conn, text: &str) -> Result<(), Failure> {
        // Unmarked, the unit must not stage: failing here sends it the
        // file-by-file way, which records in `svc` itself.
        let prepared = async {
            self.mark_staging().await?;
            if self.staging_undescribed() {
                // The descriptions commit on their own first.
                self.flush(conn).await?;
            }
            self.describe_files(conn).await
        };
        prepared.await.map_err(|error| Failure::of_books(&error))?;
        match conn.entered.clone() {
            // A tenant's catalog as its unit left it, read right after it
            // while its file is attached (no attachment of its own for it
            // after the version); a read that fails leaves it to that pass.
            Some(schema) => {
                let read = sql::catalogs(std::slice::from_ref(&schema));
                let before = conn.pending.as_ref().map(PendingAttach::text);
                let print = match exec::exec_then_read(&mut conn.conn, before.as_deref(), text, &read).await {
                    Ok(print) => print,
                    // Nothing of the unit ran; the attachment stays, for
                    // the executor's next call to run again the way
                    // `flush` does, whose error it then stops on.
                    Err(exec::Stopped::Before(failure)) => return Err(failure),
                    Err(exec::Stopped::Text(failure)) => {
                        // The attachment ran: the failure is the unit's.
                        conn.pending = None;
                        return Err(failure);
                    }
                };
                conn.pending = None;
                self.staging.lock().unwrap_or_else(|e| e.into_inner()).committed();
                if let Some(print) = print {
                    self.keep_print(schema, &print);
                }
            }
            None => {
                exec::exec(&mut conn.conn, text).await?;
                self.staging.lock().unwrap_or_else(|e| e.into_inner()).committed();
            }
        }
        // Committed: a fold that fails now is done again later.
        if self.fold_due()
            && let Err(error) = self.fold_pending(conn).await
        {
            tracing::warn!(%error, "staged rows could not be folded yet; they will be");
        }
        Ok(())
    }

    /// Into `svc_staged` in the schema's own file when every row is of one
    /// schema (a unit's are): see [`staging`].
    fn record_text(&self, entries: &Entries<'_>) -> Result<String, DbError> {
        let Entries { rows, created, version_id } = *entries;
        let created = quote_string_sqlite(created);
        let one_schema = rows.first().map(|row| row.schema).filter(|first| rows.iter().all(|row| row.schema == *first));
        let Some(schema) = one_schema else {
            self.staging.lock().unwrap_or_else(|e| e.into_inner()).set_undescribed(Vec::new());
            let version = version_id.to_string();
            let values: Vec<String> = engine::row_literals(rows, quote_string_sqlite, &created, &version)
                .map(|values| format!("({values})"))
                .collect();
            return Ok(format!("{}values {}", sql::INSERT_MIGRATIONS, values.join(", ")));
        };
        let first = {
            let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
            let files = rows.iter().map(|row| row.migration.file.clone()).collect();
            let first = staging.stage(schema, version_id, files);
            let undescribed = rows
                .iter()
                .filter(|row| !staging.is_described(&row.migration.file))
                .map(|row| (row.migration.file.clone(), sql::staged_file(version_id, row.migration, &created)))
                .collect();
            staging.set_undescribed(undescribed);
            first
        };
        let values: Vec<String> = (first..)
            .zip(rows)
            .map(|(seq, row)| sql::staged_row(seq, &row.migration.file, row.schema, version_id))
            .collect();
        Ok(format!("{}values {}", sql::stage(schema, version_id), values.join(", ")))
    }

    /// After the tenant's pending attachment (`enter` leaves it to the
    /// next call).
    async fn execute_bound(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<u64, Failure> {
        self.flush(conn).await.map_err(|error| Failure::of_books(&error))?;
        engine::bound::execute::<Sqlite>(&mut conn.conn, sql, values).await
    }

    /// After the tenant's pending attachment.
    async fn read_keys(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<Vec<Key>, Failure> {
        self.flush(conn).await.map_err(|error| Failure::of_books(&error))?;
        engine::bound::read::<Sqlite>(&mut conn.conn, sql, values).await
    }

    /// Runs the file statement by statement: SQLite reports no position,
    /// so the failing statement's start is the error's position.
    async fn execute(&self, conn: &mut Self::Conn, text: &str) -> Result<(), Failure> {
        // In a transaction its `begin` ran the attachment; a no-transaction
        // file first in its unit runs it here (never the file without it).
        self.flush(conn).await.map_err(|error| Failure::of_books(&error))?;
        for range in engine::statements_of(Driver::Sqlite, text) {
            let start = range.start;
            if let Err(e) = sqlx::raw_sql(AssertSqlSafe(&text[range])).execute(&mut *conn.conn).await {
                return Err(Failure::from_sqlx(&e).in_statement(text, start, None));
            }
        }
        Ok(())
    }

    async fn create_tenant(&self, conn: &mut Self::Conn, tenant: &str) -> Result<(), DbError> {
        self.flush(conn).await?;
        // The schema is its file, created when attached.
        sqlx::query(AssertSqlSafe(self.tenant_insert_sql.as_str()))
            .bind(tenant)
            .execute(&mut *conn.conn)
            .await
            .map_err(|e| DbError::TenantInsertFailed { tenant: tenant.to_string(), message: describe(&e) })?;
        Ok(())
    }

    async fn record(&self, conn: &mut Self::Conn, entries: &Entries<'_>) -> Result<(), DbError> {
        self.flush(conn).await?;
        let Entries { rows, created, version_id } = *entries;
        for chunk in rows.chunks(sql::MIGRATION_ROWS_PER_INSERT) {
            let mut insert = QueryBuilder::<Sqlite>::new(sql::INSERT_MIGRATIONS);
            insert.push_values(chunk, |mut row, record| {
                let migration = record.migration;
                row.push_bind(&migration.name)
                    .push_bind(&migration.source_dir)
                    .push_bind(&migration.file)
                    .push_bind(migration.migration_type.code())
                    .push_bind(record.schema)
                    .push_bind(created)
                    .push_bind(&migration.contents)
                    .push_bind(&migration.checksum)
                    .push_bind(version_id);
            });
            insert.build().execute(&mut *conn.conn).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_given_back_with_a_file_still_attached_is_not_lent_again() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = format!(
            "baseLocation: {}\ndriver: sqlite\ndataSource: sqlite://{}/main.db?mode=rwc\n\
             singleMigrations: [ref]\ntenantMigrations: [tenants]\n",
            dir.path().display(),
            dir.path().display()
        );
        let config = Config::parse(&yaml, &std::collections::BTreeMap::new()).unwrap();
        let engine = SqliteEngine::open(&config, Access::ReadWrite).await.unwrap();
        let attached =
            |names: Vec<String>| names.into_iter().filter(|n| n != "main" && n != "temp").collect::<Vec<_>>();
        // Released as the executor does: lent again.
        let mut conn = engine.connect().await.unwrap();
        engine.enter(&mut conn, "t1").await.unwrap();
        engine.leave(&mut conn, "t1").await;
        engine.release(&mut conn, false).await;
        drop(conn);
        // Dropped with t2's file left attached: closed, not lent again.
        let mut conn = engine.connect().await.unwrap();
        engine.enter(&mut conn, "t2").await.unwrap();
        engine.leave(&mut conn, "t2").await;
        drop(conn);
        for _ in 0..4 {
            let mut conn = engine.connect().await.unwrap();
            let names: Vec<String> = sqlx::query_scalar(sql::LIST_ATTACHED).fetch_all(&mut *conn.conn).await.unwrap();
            assert_eq!(attached(names), ["svc"]);
            engine.enter(&mut conn, "t2").await.unwrap();
            engine.leave(&mut conn, "t2").await;
            engine.release(&mut conn, false).await;
        }
    }

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
