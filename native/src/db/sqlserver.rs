//! The SQL Server driver (tiberius; sqlx has none): schema per tenant,
//! transactional DDL, SQL Server 2008 R2 and later.
//!
//! The primitives of the executor ([`Engine`]): `sp_getapplock` owned by
//! the session on a connection of its own, transactions with `xact_abort
//! on`, a tenant's schema created through `sp_executesql`. Migration files
//! are cut into batches at `GO` lines (as sqlcmd and SSMS do) and each batch
//! is sent as is; a server error's line becomes a line of the file. Each
//! connection is opened for the operation.
//!
//! Run against Babelfish for PostgreSQL, which speaks TDS and T-SQL
//! (`tests/e2e/sqlserver.rs`, `tests/sqlserver.sh`), never against
//! Microsoft's SQL Server; `sql.rs`'s tests hold its statements to SQL
//! Server 2008 R2. What Babelfish does differently and the driver handles:
//! a lock time-out is PostgreSQL's message under its catch-all number
//! (core's `failure::classify`), a null parameter is refused (none is
//! sent), `sysprocesses.open_tran` stays 0 (`BLOCKERS` reads
//! `dm_exec_sessions`).

mod backfills;
mod sql;

use async_trait::async_trait;
use strata_core::auth::audit::{Entry, Sealed};
use strata_core::auth::token::StoredToken;
use strata_core::migrate::MigrationType;
use strata_core::migrate::backfill::{Key, KeyValue};
use strata_core::migrate::batches::split_go_batches;
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::normalize;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::failure;
use strata_core::migrate::fingerprint::{CatalogObject, Digests, Stored};
use strata_core::migrate::ident::quote_string_sqlserver;
use strata_core::migrate::plan::AppliedMigration;
use strata_core::migrate::quarantine::FailureBudget;
use strata_core::migrate::repair::Repair;
use strata_core::migrate::shard::{Directory, DirectoryChanges};
use strata_core::migrate::source::SourceMigration;
use tiberius::{Client, Row, ToSql};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use crate::db::books::{AppliedSink, Books, PageOfNames, tables};
use crate::db::engine::{Catalogs, Engine, Entries, Failure, Reading, Transaction};
use crate::db::error::{Cause, DbError, one_line};
use crate::db::error::{LockError, OpenError};
use crate::db::lease;
use crate::db::types::CONNECT_TIMEOUT;
use crate::db::types::{
    Audit, AuditWindow, BackfillClaim, BackfillJob, BackfillRow, BackfillState, ClaimRoom, MigrationFilter,
    MigrationRow, NewVersion, QuarantineRow, Record, RolloutRow, TenantList, VersionFilter, VersionRow,
};
use strata_core::migrate::lock_wait::{self, Timeouts};
use strata_core::migrate::run::fence;

/// A session: tiberius's client, and how long a batch of a migration may
/// run on it (`statementTimeoutSeconds`, a file's `strata:statement-timeout`;
/// 0: no limit) — SQL Server has no statement time-out a session sets, so
/// the driver bounds each batch itself ([`Engine::execute`]).
pub(crate) struct Connection {
    client: Client<Compat<TcpStream>>,
    pub(super) statement_ms: u64,
    /// The `SET LOCK_TIMEOUT` this driver last sent on the session (`None`:
    /// none yet), sent again only when it changes: SQL Server keeps it past
    /// commits, and a file that sets it itself changes its session (core's
    /// `FileMode::changes_session`), whose connection is closed after its
    /// unit.
    lock_timeout_ms: Option<i64>,
    /// [`sql::SESSION_SETTINGS`] was sent on it.
    settings_sent: bool,
    /// What it was opened with: a batch the server does not stop when told
    /// has its session replaced ([`cancelled_past`]).
    config: tiberius::Config,
}

impl std::ops::Deref for Connection {
    type Target = Client<Compat<TcpStream>>;

    fn deref(&self) -> &Self::Target {
        &self.client
    }
}

impl std::ops::DerefMut for Connection {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.client
    }
}

/// The SQL Server engine.
pub(crate) struct SqlServerEngine {
    config: tiberius::Config,
    tenant_select_sql: String,
    tenant_insert_sql: String,
    /// The books' trace id columns (`sql::ADDED_COLUMNS_PRESENT`) were seen (they stay:
    /// asked until they are).
    traced: std::sync::atomic::AtomicBool,
    /// The database sessions begin in (read on the first connection): a
    /// unit's fence finds a file that switched away from it (`USE`).
    database: std::sync::OnceLock<String>,
    /// A session whose work ended cleanly ([`Engine::give_back`], the books'
    /// installation, the lock's end), and when: the next
    /// [`Engine::connect`] within [`SPARE_FOR`] takes it rather than
    /// opening one. A start-up's steps (the books, the rollouts, the
    /// version's first connection, the audit row after the lock) each
    /// opened a session of their own: a login, and on Babelfish a new
    /// backend reading its catalogs again, 0.3 s each.
    spare: std::sync::Mutex<Option<(std::time::Instant, Connection)>>,
}

/// How long a spare session is taken (older, it is closed: a server or
/// a network between may have ended it meanwhile).
const SPARE_FOR: std::time::Duration = std::time::Duration::from_secs(5);

/// Parses `dataSource` (ADO, JDBC, or a go-mssqldb `sqlserver://` URL).
pub(crate) fn parse_data_source(data_source: &str) -> Result<tiberius::Config, DbError> {
    let text = normalize(Driver::SqlServer, data_source)
        .map_err(|e| DbError::Open(OpenError::BadDataSource(e.to_string())))?;
    let parsed = if text.starts_with("jdbc:") {
        tiberius::Config::from_jdbc_string(&text)
    } else {
        tiberius::Config::from_ado_string(&text)
    };
    let mut config = parsed.map_err(|e| {
        DbError::Open(OpenError::BadDataSource(format!("dataSource is not a SQL Server connection string: {e}")))
    })?;
    // No client-side limit on a statement (tiberius's default gives up on a
    // result after 30 s and drops the connection): a migration runs as long
    // as it runs, as with go-mssqldb and Flyway; lock waits are bounded by
    // `lockTimeoutMillis`.
    config.command_timeout(None);
    Ok(config)
}

/// Whether `data_source` tells the driver to accept any server certificate.
fn trusts_server_certificate(data_source: &str) -> bool {
    normalize(Driver::SqlServer, data_source).is_ok_and(|text| {
        text.to_ascii_lowercase().split(';').any(|pair| pair.replace(' ', "") == "trustservercertificate=true")
    })
}

/// Whether the driver accepts any server certificate though `data_source`
/// does not say so: go-mssqldb's URL form without `encrypt` (its default).
/// A `TrustServerCertificate=true` written out is the user's own choice,
/// not worth a warning at every command.
fn trusts_server_certificate_unasked(data_source: &str) -> bool {
    trusts_server_certificate(data_source)
        && !data_source.to_ascii_lowercase().replace(' ', "").contains("trustservercertificate=true")
}

fn db_error(error: tiberius::error::Error) -> DbError {
    DbError::SqlServer(error)
}

/// A statement's failure: a server error's message, its line counted from
/// `first_line` (the lines of the file before its batch) and its cause;
/// any other error a lost connection.
fn failure_of(error: tiberius::error::Error, first_line: u64) -> Failure {
    match error {
        tiberius::error::Error::Server(token) => Failure {
            message: token.message().to_string(),
            offset: None,
            line: (token.line() > 0).then(|| first_line + u64::from(token.line())),
            cause: failure::classify(failure::Answer {
                sqlserver_number: Some(token.code()),
                message: token.message(),
                ..failure::Answer::default()
            }),
        },
        other => Failure { message: other.to_string(), offset: None, line: None, cause: Cause::ConnectionLost },
    }
}

/// Runs `work` on the session, within its statement time-out when one is
/// set ([`Connection`]): past it the server is told to stop what runs
/// ([`cancelled_past`]) and the work fails with `STATEMENT_TIMEOUT`. A
/// failure is placed after the `lines_before` lines of the file its batch
/// follows ([`failure_of`]). A migration's batches and a backfill's batches
/// are bounded by this one rule.
async fn within_statement_timeout<T>(
    conn: &mut Connection,
    lines_before: u64,
    work: impl AsyncFnOnce(&mut Connection) -> Result<T, tiberius::error::Error>,
) -> Result<T, Failure> {
    let limit = (conn.statement_ms > 0).then(|| std::time::Duration::from_millis(conn.statement_ms));
    let result = match limit {
        None => work(conn).await,
        Some(limit) => match tokio::time::timeout(limit, work(conn)).await {
            Ok(result) => result,
            Err(_) => return Err(cancelled_past(conn, limit, lines_before).await),
        },
    };
    result.map_err(|error| failure_of(error, lines_before))
}

/// How long the server has to acknowledge that it stopped a batch.
const CANCEL_ACKNOWLEDGED_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// A batch stopped past its statement time-out `limit`: the server is told
/// to stop it (an attention). When it does not say it did within
/// [`CANCEL_ACKNOWLEDGED_WITHIN`] (Babelfish lets a running batch finish),
/// the session is closed and replaced by a new one with the same settings:
/// the server rolls the closed session's transaction back, and nothing of
/// the unit commits. The file fails at the batch's first line (after
/// `lines_before`); a session that cannot be replaced is a lost connection.
async fn cancelled_past(conn: &mut Connection, limit: std::time::Duration, lines_before: u64) -> Failure {
    let ran = format!(
        "a batch ran longer than the statement time-out ({} ms: statementTimeoutSeconds, or the file's \
         strata:statement-timeout)",
        limit.as_millis()
    );
    let failure = |message: String, cause| Failure { message, offset: None, line: Some(lines_before + 1), cause };
    if let Ok(Ok(())) = tokio::time::timeout(CANCEL_ACKNOWLEDGED_WITHIN, conn.client.cancel_query()).await {
        return failure(format!("{ran} and was cancelled"), Cause::StatementTimeout);
    }
    let replaced = async {
        let mut fresh = open_session(&conn.config).await?;
        run(&mut fresh, sql::SESSION_SETTINGS).await?;
        fresh.settings_sent = true;
        Ok::<_, DbError>(fresh)
    };
    match replaced.await {
        Ok(fresh) => {
            *conn = fresh;
            let closed = format!(
                "{ran}; the server did not stop it within {} s, so its session was closed (its transaction rolled \
                 back by the server)",
                CANCEL_ACKNOWLEDGED_WITHIN.as_secs()
            );
            failure(closed, Cause::StatementTimeout)
        }
        Err(error) => failure(format!("{ran}; its session could not be replaced: {error}"), Cause::ConnectionLost),
    }
}

/// Whether `sp_getapplock`'s code, asked not to wait, says another session
/// holds the lock: -1 on SQL Server; Babelfish answers -999 ("not
/// available"), which SQL Server keeps for a call that failed — a failure
/// the wait that follows answers again, and reports.
fn held_elsewhere(code: Option<i32>) -> bool {
    matches!(code, Some(-1 | -999))
}

/// The error for sp_getapplock's answer `code` (negative: not granted;
/// -1 is a timeout) for the lock named `lock`, waited for `seconds`.
pub(super) fn lock_not_granted(code: Option<i32>, (lock, seconds): (&str, u64)) -> DbError {
    match code {
        Some(-1) => DbError::Lock(LockError::Timeout { lock: lock.to_string(), seconds }),
        other => DbError::Lock(LockError::Refused {
            lock: lock.to_string(),
            reason: format!("sp_getapplock returned {}", other.map_or("nothing".to_string(), |c| c.to_string())),
        }),
    }
}

impl SqlServerEngine {
    /// Reads `config.data_source`; connects only when asked.
    pub(crate) fn open(config: &Config) -> Result<Self, DbError> {
        if trusts_server_certificate_unasked(&config.data_source) {
            tracing::warn!(
                "SQL Server: the server certificate is not validated (the default of a sqlserver:// dataSource \
                 without encrypt; add encrypt=true to validate it, or TrustServerCertificate=true to say so)"
            );
        }
        Ok(SqlServerEngine {
            config: parse_data_source(&config.data_source)?,
            tenant_select_sql: config.tenant_select_sql.clone(),
            tenant_insert_sql: config.tenant_insert_sql.clone(),
            traced: std::sync::atomic::AtomicBool::new(false),
            database: std::sync::OnceLock::new(),
            spare: std::sync::Mutex::new(None),
        })
    }

    /// Whether the books have the trace id columns (books of an earlier
    /// release do not until a read-write start adds them).
    async fn traced(&self, conn: &mut Connection) -> Result<bool, DbError> {
        use std::sync::atomic::Ordering;
        if self.traced.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let rows = query(conn, sql::ADDED_COLUMNS_PRESENT, &[]).await?;
        let traced = rows.first().map(|row| int(row, 0)).transpose()?.unwrap_or(0) == 1;
        self.traced.store(traced, Ordering::Relaxed);
        Ok(traced)
    }

    /// Opens a connection, following an Azure SQL gateway redirect once.
    async fn session(&self) -> Result<Connection, DbError> {
        open_session(&self.config).await
    }

    /// Keeps `conn`, whose work ended cleanly (no transaction open, its
    /// session as this driver left it), for the next [`Engine::connect`];
    /// a spare kept before is closed.
    fn keep(&self, mut conn: Connection) {
        conn.statement_ms = 0;
        if let Ok(mut spare) = self.spare.lock() {
            *spare = Some((std::time::Instant::now(), conn));
        }
    }

    /// The spare session, when one was kept within [`SPARE_FOR`].
    fn take_spare(&self) -> Option<Connection> {
        let spare = self.spare.lock().ok()?.take()?;
        (spare.0.elapsed() < SPARE_FOR).then_some(spare.1)
    }
}

/// Opens a connection with `config`, following an Azure SQL gateway
/// redirect once.
async fn open_session(config: &tiberius::Config) -> Result<Connection, DbError> {
    let mut config = config.clone();
    for _ in 0..2 {
        let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(config.get_addr()))
            .await
            .map_err(|_| {
                DbError::Open(OpenError::Connect(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())))
            })?
            .map_err(|e| DbError::Open(OpenError::Connect(e.to_string())))?;
        tcp.set_nodelay(true).map_err(|e| DbError::Open(OpenError::Connect(e.to_string())))?;
        match Client::connect(config.clone(), tcp.compat_write()).await {
            Ok(client) => {
                return Ok(Connection { client, statement_ms: 0, lock_timeout_ms: None, settings_sent: false, config });
            }
            Err(tiberius::error::Error::Routing { host, port }) => {
                config.host(&host);
                config.port(port);
            }
            // The server answered and refused the session: a login or a
            // database it does not let the login open (SQL Server's 18456
            // and 4060), said as such.
            Err(tiberius::error::Error::Server(token)) => {
                let refused = format!("{} (SQL Server error {})", token.message(), token.code());
                return Err(DbError::Open(OpenError::Connect(refused)));
            }
            Err(e) => return Err(db_error(e)),
        }
    }
    Err(DbError::Open(OpenError::Connect("SQL Server redirected the connection more than once".into())))
}

/// Runs a batch without parameters, draining its results.
pub(super) async fn run(client: &mut Connection, batch: &str) -> Result<(), DbError> {
    client.simple_query(batch).await.map_err(db_error)?.into_results().await.map_err(db_error)?;
    Ok(())
}

/// `SET LOCK_TIMEOUT ms` (-1 waits forever) on the session, sent only when
/// it changes ([`Connection::lock_timeout_ms`]).
async fn set_lock_timeout(conn: &mut Connection, ms: i64) -> Result<(), DbError> {
    if conn.lock_timeout_ms == Some(ms) {
        return Ok(());
    }
    conn.lock_timeout_ms = None;
    run(conn, &sql::set_lock_timeout(ms)).await?;
    conn.lock_timeout_ms = Some(ms);
    Ok(())
}

/// Runs a parameterised statement (through `sp_executesql`); the rows it
/// changed.
async fn execute(client: &mut Connection, statement: &str, params: &[&dyn ToSql]) -> Result<u64, DbError> {
    Ok(client.execute(statement, params).await.map_err(db_error)?.total())
}

/// Runs an insert written to add nothing when its key is taken; whether it
/// added the row. A duplicate key (2601, 2627) is taken too: a writer
/// racing this one got there first (Babelfish ignores the statements'
/// `updlock, holdlock`).
async fn insert_unless_taken(client: &mut Connection, statement: &str, params: &[&dyn ToSql]) -> Result<bool, DbError> {
    match client.execute(statement, params).await {
        Ok(done) => Ok(done.total() == 1),
        Err(tiberius::error::Error::Server(token)) if matches!(token.code(), 2601 | 2627) => Ok(false),
        Err(e) => Err(db_error(e)),
    }
}

/// Runs a parameterised query and returns its first result set.
async fn query(client: &mut Connection, statement: &str, params: &[&dyn ToSql]) -> Result<Vec<Row>, DbError> {
    client.query(statement, params).await.map_err(db_error)?.into_first_result().await.map_err(db_error)
}

fn text(row: &Row, index: usize) -> Result<String, DbError> {
    row.try_get::<&str, _>(index).map_err(db_error)?.map(str::to_string).ok_or_else(|| null_column(index))
}

/// Column `index` of a tenant row, as text.
fn attribute(row: &Row, index: usize) -> Result<Option<String>, DbError> {
    if let Ok(value) = row.try_get::<&str, _>(index) {
        return Ok(value.map(str::to_string));
    }
    if let Ok(value) = row.try_get::<i64, _>(index) {
        return Ok(value.map(|n| n.to_string()));
    }
    if let Ok(value) = row.try_get::<i32, _>(index) {
        return Ok(value.map(|n| n.to_string()));
    }
    if let Ok(value) = row.try_get::<bool, _>(index) {
        return Ok(value.map(|b| b.to_string()));
    }
    Err(DbError::TenantSelectFailed(format!(
        "column {:?} of the tenant list is neither text, an integer nor a boolean (cast it to text)",
        row.columns()[index].name()
    )))
}

fn int(row: &Row, index: usize) -> Result<i32, DbError> {
    row.try_get::<i32, _>(index).map_err(db_error)?.ok_or_else(|| null_column(index))
}

fn null_column(index: usize) -> DbError {
    DbError::UnexpectedAnswer(format!("NULL in column {index}"))
}

fn version_row(row: &Row) -> Result<VersionRow, DbError> {
    Ok(VersionRow {
        id: i64::from(int(row, 0)?),
        name: text(row, 1)?,
        created: text(row, 2)?,
        request_id: text(row, 3)?,
        trace_id: row.try_get::<&str, _>(4).map_err(db_error)?.map(str::to_string),
        parts: Vec::new(),
    })
}

fn migration_row(row: &Row) -> Result<MigrationRow, DbError> {
    let id = i64::from(int(row, 0)?);
    let code = i64::from(int(row, 2)?);
    Ok(MigrationRow {
        id,
        name: text(row, 1)?,
        migration_type: MigrationType::from_code(code).ok_or(DbError::UnknownMigrationType { id, code })?,
        source_dir: text(row, 3)?,
        file: text(row, 4)?,
        contents: text(row, 5)?,
        checksum: text(row, 6)?,
        schema: text(row, 7)?,
        created: text(row, 8)?,
    })
}

fn id32(id: i64) -> Option<i32> {
    i32::try_from(id).ok()
}

/// A `bigint` column.
fn big(row: &Row, index: usize) -> Result<i64, DbError> {
    row.try_get::<i64, _>(index).map_err(db_error)?.ok_or_else(|| null_column(index))
}

/// `id, at, actor, action, target, request_id, outcome, prev, hash,
/// signature, trace_id`.
fn audit_row(row: &Row) -> Result<Sealed, DbError> {
    Ok(Sealed {
        id: big(row, 0)?,
        entry: Entry {
            at: text(row, 1)?,
            actor: text(row, 2)?,
            action: text(row, 3)?,
            target: text(row, 4)?,
            request_id: text(row, 5)?,
            outcome: text(row, 6)?,
            trace_id: row.try_get::<&str, _>(10).map_err(db_error)?.map(str::to_string),
        },
        prev: text(row, 7)?,
        hash: text(row, 8)?,
        signature: row.try_get::<&str, _>(9).map_err(db_error)?.map(str::to_string),
    })
}

/// `name, role, hash, created, expires, owner`.
fn token_row(row: &Row) -> Result<StoredToken, DbError> {
    let role = text(row, 1)?;
    Ok(StoredToken {
        name: text(row, 0)?,
        role: role.parse().map_err(|e: strata_core::auth::role::UnknownRole| {
            DbError::UnexpectedAnswer(format!("svc.svc_tokens: {e}"))
        })?,
        hash: text(row, 2)?,
        created: big(row, 3)?,
        expires: row.try_get::<i64, _>(4).map_err(db_error)?,
        owner: row.try_get::<&str, _>(5).map_err(db_error)?.map(str::to_string),
    })
}

/// An optional `int` column.
fn optional_int(row: &Row, index: usize) -> Result<Option<i64>, DbError> {
    Ok(row.try_get::<i32, _>(index).map_err(db_error)?.map(i64::from))
}

/// `tenant, version_id, file, line, col, cause, message, request_id,
/// quarantined, failures`.
fn quarantine_row(row: &Row) -> Result<QuarantineRow, DbError> {
    Ok(QuarantineRow {
        tenant: text(row, 0)?,
        version_id: optional_int(row, 1)?,
        file: text(row, 2)?,
        line: optional_int(row, 3)?,
        column: optional_int(row, 4)?,
        cause: text(row, 5)?,
        message: text(row, 6)?,
        request_id: text(row, 7)?,
        quarantined: text(row, 8)?,
        failures: i64::from(int(row, 9)?),
    })
}

fn applied_row(row: &Row) -> Result<AppliedMigration, DbError> {
    let code = i64::from(int(row, 3)?);
    Ok(AppliedMigration {
        file: text(row, 0)?,
        name: text(row, 1)?,
        schema: text(row, 2)?,
        migration_type: MigrationType::from_code(code).ok_or(DbError::UnknownMigrationType { id: -1, code })?,
        checksum: text(row, 4)?,
    })
}

/// The catalogs of `schemas`, in the order given, read by `statement` (of
/// so many schemas, `@P1`… `@Pn`) [`sql::SCHEMAS_PER_CATALOG_READ`] at a
/// time: rows of schema, kind, name and definition.
async fn read_catalogs(
    conn: &mut Connection,
    schemas: &[String],
    statement: fn(usize) -> String,
) -> Result<Catalogs, DbError> {
    let mut out: Catalogs = vec![Vec::new(); schemas.len()];
    let at: std::collections::HashMap<&str, usize> =
        schemas.iter().enumerate().map(|(index, schema)| (schema.as_str(), index)).collect();
    for chunk in schemas.chunks(sql::SCHEMAS_PER_CATALOG_READ) {
        let params: Vec<&dyn ToSql> = chunk.iter().map(|schema| schema as &dyn ToSql).collect();
        for row in query(conn, &statement(chunk.len()), &params).await? {
            let Some(&index) = at.get(text(&row, 0)?.as_str()) else { continue };
            out[index].push(CatalogObject { kind: text(&row, 1)?, name: text(&row, 2)?, definition: text(&row, 3)? });
        }
    }
    Ok(out)
}

/// SQL Server keeps its own books (tiberius, not sqlx): the reads, the
/// quarantine, rollouts, API tokens, the audit log, revert's and repair's
/// changes, the fingerprints, the shard directory.
#[async_trait]
impl Books<Connection> for SqlServerEngine {
    async fn installed(&self, conn: &mut Connection) -> Result<bool, DbError> {
        let rows = query(conn, sql::INSTALLED, &[]).await?;
        Ok(rows.first().map(|row| int(row, 0)).transpose()?.unwrap_or(0) > 0)
    }

    /// The names from the first column, the other columns as attributes
    /// (text, integers and booleans, read as text).
    async fn tenants(&self, conn: &mut Connection) -> Result<TenantList, DbError> {
        let rows =
            query(conn, &self.tenant_select_sql, &[]).await.map_err(|e| DbError::TenantSelectFailed(e.to_string()))?;
        let columns = rows.first().map(|row| row.columns().iter().skip(1).map(|c| c.name().to_string()).collect());
        let mut list = TenantList {
            names: Vec::with_capacity(rows.len()),
            attributes: strata_core::migrate::wave::Attributes::new(columns.unwrap_or_default()),
        };
        for row in &rows {
            let name = text(row, 0).map_err(|e| DbError::TenantSelectFailed(e.to_string()))?;
            if !list.attributes.columns.is_empty() {
                let values = (1..row.len()).map(|index| attribute(row, index)).collect::<Result<_, _>>()?;
                list.attributes.values.insert(name.clone(), values);
            }
            list.names.push(name);
        }
        Ok(list)
    }

    /// The names streamed from `tenantSelectSQL`, only the page's held (the
    /// whole list with its attributes held 2 MB more at 20,000 tenants).
    async fn tenant_page(
        &self,
        conn: &mut Connection,
        after: Option<&str>,
        first: Option<usize>,
    ) -> Result<Vec<String>, DbError> {
        use futures::TryStreamExt;
        let failed = |e: tiberius::error::Error| DbError::TenantSelectFailed(e.to_string());
        let mut rows = conn.query(self.tenant_select_sql.as_str(), &[]).await.map_err(failed)?.into_row_stream();
        let mut page = PageOfNames::new(after, first);
        while let Some(row) = rows.try_next().await.map_err(failed)? {
            page.offer(text(&row, 0).map_err(|e| DbError::TenantSelectFailed(e.to_string()))?);
        }
        Ok(page.into_names())
    }

    async fn each_applied(&self, conn: &mut Connection, sink: &mut AppliedSink<'_>) -> Result<(), DbError> {
        for row in query(conn, sql::SELECT_APPLIED, &[]).await? {
            sink(applied_row(&row)?.as_row());
        }
        Ok(())
    }

    async fn versions(&self, conn: &mut Connection, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError> {
        let traced = self.traced(conn).await?;
        let select = |statement| sql::traced(statement, traced);
        let rows = match filter {
            VersionFilter::All => query(conn, &select(sql::SELECT_VERSIONS), &[]).await?,
            VersionFilter::ApplyingFile(file) => query(conn, &select(sql::SELECT_VERSIONS_BY_FILE), &[&file]).await?,
            VersionFilter::Id(id) => match id32(id) {
                Some(id) => query(conn, &select(sql::SELECT_VERSION), &[&id]).await?,
                None => Vec::new(),
            },
            VersionFilter::Window(window) => {
                let all = query(conn, &select(sql::SELECT_VERSIONS), &[]).await?;
                return Ok(window.of(all.iter().map(version_row).collect::<Result<_, _>>()?));
            }
        };
        rows.iter().map(version_row).collect()
    }

    async fn migrations(&self, conn: &mut Connection, filter: MigrationFilter) -> Result<Vec<MigrationRow>, DbError> {
        let (statement, id, after) = match filter {
            MigrationFilter::Version(id) | MigrationFilter::Part(id) => (sql::SELECT_VERSION_MIGRATIONS, id, None),
            MigrationFilter::Id(id) => (sql::SELECT_MIGRATION, id, None),
            MigrationFilter::Page { part, after } => (sql::SELECT_MIGRATIONS_PAGE, part, Some(after)),
        };
        let Some(id) = id32(id) else { return Ok(Vec::new()) };
        let rows = match after {
            Some(after) => {
                let after = id32(after).unwrap_or(i32::MAX);
                query(conn, statement, &[&id, &after]).await?
            }
            None => query(conn, statement, &[&id]).await?,
        };
        rows.iter().map(migration_row).collect()
    }

    async fn quarantine(&self, conn: &mut Connection, row: &QuarantineRow) -> Result<(), DbError> {
        // -1: absent (no null parameters, see sql::APPEND_AUDIT).
        let narrow = |n: Option<i64>| n.and_then(id32).unwrap_or(-1);
        let (version_id, line, column) = (narrow(row.version_id), narrow(row.line), narrow(row.column));
        let failures = id32(row.failures).unwrap_or(i32::MAX);
        let params: [&dyn ToSql; 10] = [
            &row.tenant,
            &version_id,
            &row.file,
            &line,
            &column,
            &row.cause,
            &row.message,
            &row.request_id,
            &row.quarantined,
            &failures,
        ];
        execute(conn, sql::QUARANTINE, &params).await.map(drop)
    }

    async fn store_fingerprints(
        &self,
        conn: &mut Connection,
        rows: &[(&str, &str, &str)],
        version_id: i64,
    ) -> Result<(), DbError> {
        let version_id = id32(version_id).ok_or(DbError::UnexpectedAnswer(format!("version id {version_id}")))?;
        for chunk in rows.chunks(sql::FINGERPRINTS_PER_STATEMENT) {
            let mut params: Vec<&dyn ToSql> = Vec::with_capacity(chunk.len() * 4);
            for (schema, fingerprint, recorded) in chunk {
                params.extend([schema as &dyn ToSql, fingerprint, recorded, &version_id]);
            }
            execute(conn, &sql::store_fingerprints(chunk.len()), &params).await?;
        }
        Ok(())
    }

    async fn fingerprints(&self, conn: &mut Connection) -> Result<Vec<(String, Stored)>, DbError> {
        let mut digests = Digests::default();
        let rows = query(conn, sql::SELECT_FINGERPRINTS, &[]).await?;
        rows.iter()
            .map(|row| {
                let print =
                    Stored { fingerprint: digests.intern(&text(row, 1)?), recorded: digests.intern(&text(row, 2)?) };
                Ok((text(row, 0)?, print))
            })
            .collect()
    }

    async fn quarantined(&self, conn: &mut Connection) -> Result<Vec<QuarantineRow>, DbError> {
        query(conn, sql::SELECT_QUARANTINE, &[]).await?.iter().map(quarantine_row).collect()
    }

    async fn release_quarantined(&self, conn: &mut Connection, tenants: &[String]) -> Result<(), DbError> {
        for tenant in tenants {
            execute(conn, sql::RELEASE_QUARANTINED, &[tenant]).await?;
        }
        Ok(())
    }

    async fn insert_rollout(&self, conn: &mut Connection, id: i64, doc: &str, updated: &str) -> Result<bool, DbError> {
        let id = i32::try_from(id).map_err(|_| DbError::UnexpectedAnswer(format!("rollout id {id} out of range")))?;
        insert_unless_taken(conn, sql::INSERT_ROLLOUT, &[&id, &doc, &updated]).await
    }

    async fn rollouts(&self, conn: &mut Connection) -> Result<Vec<RolloutRow>, DbError> {
        let rows = query(conn, sql::SELECT_ROLLOUTS, &[]).await?;
        rows.iter()
            .map(|row| {
                Ok(RolloutRow { id: i64::from(int(row, 0)?), doc: text(row, 1)?, revision: i64::from(int(row, 2)?) })
            })
            .collect()
    }

    async fn update_rollout(
        &self,
        conn: &mut Connection,
        row: &RolloutRow,
        doc: &str,
        updated: &str,
    ) -> Result<bool, DbError> {
        let id = id32(row.id).ok_or(DbError::IdOutOfRange(row.id))?;
        let revision = id32(row.revision).ok_or(DbError::IdOutOfRange(row.revision))?;
        Ok(execute(conn, sql::UPDATE_ROLLOUT, &[&doc, &updated, &id, &revision]).await? == 1)
    }

    async fn tokens(&self, conn: &mut Connection) -> Result<Vec<StoredToken>, DbError> {
        query(conn, sql::SELECT_TOKENS, &[]).await?.iter().map(token_row).collect()
    }

    async fn insert_token(&self, conn: &mut Connection, token: &StoredToken) -> Result<bool, DbError> {
        // -1 and "": absent (no null parameters, see sql::APPEND_AUDIT).
        let expires = token.expires.unwrap_or(-1);
        let owner = token.owner.as_deref().unwrap_or("");
        let params: [&dyn ToSql; 6] = [&token.name, &token.role.name(), &token.hash, &token.created, &expires, &owner];
        insert_unless_taken(conn, sql::INSERT_TOKEN, &params).await
    }

    async fn delete_token(&self, conn: &mut Connection, name: &str) -> Result<bool, DbError> {
        Ok(execute(conn, sql::DELETE_TOKEN, &[&name]).await? == 1)
    }

    async fn forget(&self, conn: &mut Connection, rows: &[Record<'_>]) -> Result<(), DbError> {
        for row in rows {
            execute(conn, sql::DELETE_RECORD, &[&row.migration.file.as_str(), &row.schema]).await?;
        }
        Ok(())
    }

    /// The repair's version row, new checksums and removals in one
    /// transaction (`xact_abort`: an error rolls back all of it).
    async fn repair(&self, conn: &mut Connection, repair: &Repair, audit: &Audit<'_>) -> Result<(), DbError> {
        run(conn, sql::BEGIN).await?;
        let written = async {
            // No trace id: "" (see sql::APPEND_AUDIT on null parameters).
            query(conn, sql::INSERT_VERSION, &[&audit.name, &audit.created, &audit.request_id, &""]).await?;
            for item in &repair.checksums {
                execute(conn, sql::UPDATE_CHECKSUM, &[&item.checksum.as_str(), &item.file.as_str()]).await?;
            }
            for item in &repair.removals {
                execute(conn, sql::DELETE_MIGRATIONS, &[&item.file.as_str()]).await?;
            }
            run(conn, sql::COMMIT).await
        }
        .await;
        if written.is_err() {
            let _ = run(conn, sql::ROLLBACK).await;
        }
        written
    }

    async fn directory(&self, conn: &mut Connection) -> Result<Directory, DbError> {
        let rows = query(conn, sql::SELECT_DIRECTORY, &[]).await?;
        let rows = rows.iter().map(|row| Ok((text(row, 0)?, text(row, 1)?))).collect::<Result<_, DbError>>()?;
        Ok(Directory { rows })
    }

    /// In one transaction (`xact_abort`: an error rolls back all of it).
    async fn change_directory(&self, conn: &mut Connection, changes: &DirectoryChanges) -> Result<(), DbError> {
        run(conn, sql::BEGIN).await?;
        let written = async {
            for (tenant, shard) in &changes.put {
                execute(conn, sql::PUT_DIRECTORY, &[&tenant.as_str(), &shard.as_str()]).await?;
            }
            for tenant in &changes.drop {
                execute(conn, sql::DROP_DIRECTORY, &[&tenant.as_str()]).await?;
            }
            Ok::<_, DbError>(())
        }
        .await;
        match written {
            Ok(()) => run(conn, sql::COMMIT).await,
            Err(error) => {
                let _ = run(conn, sql::ROLLBACK).await;
                Err(error)
            }
        }
    }

    async fn audit(&self, conn: &mut Connection, window: AuditWindow<'_>) -> Result<Vec<Sealed>, DbError> {
        let select = sql::traced(sql::SELECT_AUDIT, self.traced(conn).await?);
        let (since, last) = (window.since_bound(), window.last_bound());
        query(conn, &select, &[&since, &last]).await?.iter().map(audit_row).collect()
    }

    async fn last_audit(&self, conn: &mut Connection) -> Result<Option<(i64, String)>, DbError> {
        let rows = query(conn, sql::LAST_AUDIT, &[]).await?;
        rows.first().map(|row| Ok((big(row, 0)?, text(row, 1)?))).transpose()
    }

    async fn append_audit(&self, conn: &mut Connection, row: &Sealed) -> Result<bool, DbError> {
        let entry = &row.entry;
        let signature = row.signature.as_deref().unwrap_or("");
        let trace_id = entry.trace_id.as_deref().unwrap_or("");
        let params: [&dyn ToSql; 11] = [
            &row.id,
            &entry.at,
            &entry.actor,
            &entry.action,
            &entry.target,
            &entry.request_id,
            &entry.outcome,
            &row.prev,
            &row.hash,
            &signature,
            &trace_id,
        ];
        insert_unless_taken(conn, sql::APPEND_AUDIT, &params).await
    }

    async fn backfills(&self, conn: &mut Connection) -> Result<Vec<BackfillRow>, DbError> {
        backfills::rows(conn).await
    }

    async fn backfill_job(
        &self,
        conn: &mut Connection,
        schema: &str,
        file: &str,
    ) -> Result<Option<BackfillJob>, DbError> {
        backfills::job(conn, schema, file).await
    }

    async fn running_backfills(&self, conn: &mut Connection) -> Result<Vec<BackfillJob>, DbError> {
        backfills::running(conn).await
    }

    async fn running_backfills_of(
        &self,
        conn: &mut Connection,
        started_version: i64,
        file: &str,
    ) -> Result<Vec<BackfillRow>, DbError> {
        backfills::running_of(conn, started_version, file).await
    }

    async fn register_backfill(
        &self,
        conn: &mut Connection,
        schema: &str,
        migration: &SourceMigration,
        started: (i64, FailureBudget),
        updated: &str,
    ) -> Result<(), DbError> {
        backfills::register(conn, schema, migration, started, updated).await
    }

    async fn forget_backfill(&self, conn: &mut Connection, schema: &str, file: &str) -> Result<(), DbError> {
        execute(conn, sql::FORGET_BACKFILL, &[&schema, &file]).await?;
        Ok(())
    }

    async fn restart_backfill(
        &self,
        conn: &mut Connection,
        schema: &str,
        file: &str,
        version_id: i64,
        updated: &str,
    ) -> Result<(), DbError> {
        backfills::restart(conn, schema, file, version_id, updated).await
    }

    async fn backfill_tally(
        &self,
        conn: &mut Connection,
        started_version: i64,
        file: &str,
    ) -> Result<Vec<(BackfillState, usize)>, DbError> {
        backfills::tally(conn, started_version, file).await
    }

    async fn backfill_runners(&self, conn: &mut Connection, fresh_after: i64) -> Result<Vec<(String, usize)>, DbError> {
        backfills::runners(conn, fresh_after).await
    }

    async fn claim_backfill(&self, conn: &mut Connection, claim: &BackfillClaim<'_>) -> Result<bool, DbError> {
        backfills::claim(conn, claim).await
    }

    async fn claim_backfill_in_turn(
        &self,
        conn: &mut Connection,
        claim: &BackfillClaim<'_>,
        fresh_after: i64,
        room: &mut ClaimRoom<'_>,
    ) -> Result<bool, DbError> {
        backfills::claim_in_turn(conn, claim, fresh_after, room).await
    }

    async fn save_backfill(
        &self,
        conn: &mut Connection,
        row: &BackfillRow,
        holder: &str,
        batches_before: u64,
        heartbeat: i64,
    ) -> Result<bool, DbError> {
        backfills::save(conn, row, holder, batches_before, heartbeat).await
    }

    async fn fail_backfill(&self, conn: &mut Connection, row: &BackfillRow, holder: &str) -> Result<(), DbError> {
        backfills::fail(conn, row, holder).await
    }

    async fn move_backfills(
        &self,
        conn: &mut Connection,
        rows: &[BackfillRow],
        to: BackfillState,
        updated: &str,
    ) -> Result<Vec<bool>, DbError> {
        backfills::move_to(conn, rows, to, updated).await
    }

    async fn insert_version(&self, conn: &mut Connection, version: &NewVersion<'_>) -> Result<i64, DbError> {
        let trace_id = version.trace_id.unwrap_or("");
        let params: [&dyn ToSql; 4] = [&version.name, &version.created, &version.request_id, &trace_id];
        let rows = query(conn, sql::INSERT_VERSION, &params).await?;
        let id = rows
            .first()
            .map(|row| int(row, 0))
            .transpose()?
            .ok_or_else(|| DbError::UnexpectedAnswer("no version id after the insert".into()))?;
        Ok(i64::from(id))
    }
}

#[async_trait]
impl Engine for SqlServerEngine {
    type Conn = Connection;
    type Lock = Connection;
    type Books = Self;
    const DRIVER: Driver = Driver::SqlServer;
    const TRANSACTIONAL_DDL: bool = true;

    fn books(&self) -> &Self {
        self
    }

    async fn open_dev(config: &Config) -> Result<Self, DbError> {
        Self::open(config)
    }

    async fn connect(&self) -> Result<Self::Conn, DbError> {
        let mut client = match self.take_spare() {
            Some(spare) => spare,
            None => self.session().await?,
        };
        if !client.settings_sent {
            run(&mut client, sql::SESSION_SETTINGS).await?;
            client.settings_sent = true;
        }
        if self.database.get().is_none() {
            let rows = query(&mut client, sql::DATABASE, &[]).await?;
            if let Some(row) = rows.first() {
                let _ = self.database.set(text(row, 0)?);
            }
        }
        Ok(client)
    }

    const FENCE_AFTER_EACH_FILE: bool = true;

    /// The unit's transaction is still the one [`sql::BEGIN`] began: one
    /// deep, holding its application lock `strata.unit`, in the session's
    /// database.
    async fn fence(&self, conn: &mut Self::Conn, _lock: &Self::Lock) -> Result<(), DbError> {
        let rows = query(conn, sql::TRANSACTION_STATE, &[]).await?;
        let row = rows.first().ok_or_else(|| DbError::UnexpectedAnswer("no transaction state".into()))?;
        let held = row.try_get::<&str, _>(1).map_err(db_error)?.is_some_and(|mode| mode == "Shared");
        let database = text(row, 2)?;
        let state = fence::TransactionState {
            depth: i64::from(int(row, 0)?),
            holds_unit_lock: held,
            database: &database,
            expected_database: self.database.get().map(String::as_str),
        };
        fence::judge(state).map_err(|broken| DbError::UnitTransaction {
            committed: broken.may_be_committed(),
            message: broken.to_string(),
        })
    }

    async fn install(&self, tenants_table: bool) -> Result<(), DbError> {
        let mut client = self.session().await?;
        let rows = query(&mut client, &sql::service_objects_present(tenants_table), &[]).await?;
        if rows.first().map(|row| int(row, 0)).transpose()? == Some(1) {
            self.keep(client);
            return Ok(());
        }
        run(&mut client, sql::BEGIN).await?;
        let rows = query(&mut client, sql::LOCK, &[]).await?;
        match rows.first().map(|row| int(row, 0)).transpose()? {
            Some(code) if code >= 0 => {}
            other => return Err(lock_not_granted(other, (sql::LOCK_RESOURCE, sql::LOCK_TIMEOUT_SECONDS))),
        }
        for statement in tables::creates(Driver::SqlServer, tenants_table) {
            run(&mut client, &statement).await?;
        }
        run(&mut client, sql::LOCK_HOLDER_TABLE).await?;
        run(&mut client, sql::COMMIT).await?;
        self.keep(client);
        Ok(())
    }

    /// Takes the application lock at once when it is free; else says once
    /// who holds it (`sql::LOCK_HOLDER`) and waits. Then names this
    /// mutation its holder.
    async fn lock(&self) -> Result<Self::Lock, DbError> {
        let mut conn = self.session().await?;
        let granted = |rows: Vec<Row>| rows.first().map(|row| int(row, 0)).transpose();
        let mut code = granted(query(&mut conn, sql::SESSION_LOCK_NOW, &[]).await?)?;
        if held_elsewhere(code) {
            let holder = query(&mut conn, sql::LOCK_HOLDER, &[]).await?;
            let holder = holder.first().map(|row| text(row, 0)).transpose()?.unwrap_or_default();
            tracing::warn!("{}", lock_wait::lease_wait_message(sql::LOCK_RESOURCE, &holder));
            code = granted(query(&mut conn, sql::SESSION_LOCK, &[]).await?)?;
        }
        match code {
            Some(code) if code >= 0 => {
                execute(&mut conn, sql::PUT_LOCK_HOLDER, &[&lease::new_holder()]).await?;
                Ok(conn)
            }
            other => Err(lock_not_granted(other, (sql::LOCK_RESOURCE, sql::LOCK_TIMEOUT_SECONDS))),
        }
    }

    async fn unlock(&self, mut conn: Self::Lock) {
        match run(&mut conn, sql::SESSION_UNLOCK).await {
            Ok(()) => self.keep(conn),
            Err(e) => tracing::warn!(error = %e, "sp_releaseapplock failed; the lock ends with the connection"),
        }
    }

    async fn give_back(&self, conn: Self::Conn) {
        self.keep(conn);
    }

    async fn transaction(&self, conn: &mut Self::Conn, step: Transaction) -> Result<(), DbError> {
        let sql = match step {
            Transaction::Begin => sql::BEGIN,
            Transaction::Commit => sql::COMMIT,
            Transaction::Rollback => sql::ROLLBACK,
        };
        run(conn, sql).await
    }

    /// Runs the file batch by batch (cut at `GO` lines); a server error's
    /// line, counted within its batch, becomes a line of the file.
    /// `SET LOCK_TIMEOUT` (milliseconds; -1 waits forever) for the
    /// session; SQL Server has no statement time-out of its own, so
    /// `statement_ms` is kept with the session for [`Engine::execute`].
    async fn set_timeouts(&self, conn: &mut Self::Conn, timeouts: Timeouts, _local: bool) -> Result<(), DbError> {
        conn.statement_ms = timeouts.statement_ms;
        let ms = if timeouts.lock_ms == 0 { -1 } else { i64::try_from(timeouts.lock_ms).unwrap_or(i64::MAX) };
        set_lock_timeout(conn, ms).await
    }

    async fn reset_timeouts(&self, conn: &mut Self::Conn) {
        conn.statement_ms = 0;
        let _ = set_lock_timeout(conn, -1).await;
    }

    async fn catalog(&self, conn: &mut Self::Conn, schema: &str) -> Result<Vec<CatalogObject>, DbError> {
        let mut read = self.catalogs(conn, &[schema.to_owned()], Reading::Drift).await?;
        Ok(read.pop().unwrap_or_default())
    }

    async fn catalogs(&self, conn: &mut Self::Conn, schemas: &[String], reading: Reading) -> Result<Catalogs, DbError> {
        let text = match reading {
            Reading::Drift => sql::catalogs,
            Reading::Desired => sql::desired_catalogs,
        };
        read_catalogs(conn, schemas, text).await
    }

    /// The file applied, batch by batch, into the scratch schema inside a
    /// transaction rolled back on every path (SQL Server's DDL is
    /// transactional; `xact_abort` rolls back on any error).
    async fn desired_catalog(
        &self,
        conn: &mut Self::Conn,
        text: &str,
        scratch: &str,
    ) -> Result<Result<Vec<CatalogObject>, Failure>, DbError> {
        self.transaction(conn, Transaction::Begin).await?;
        let read = async {
            run(conn, &sql::create_scratch_schema(scratch)).await?;
            if let Err(failure) = self.execute(conn, text).await {
                return Ok(Err(failure));
            }
            let mut read = self.catalogs(conn, &[scratch.to_string()], Reading::Desired).await?;
            Ok::<_, DbError>(Ok(read.pop().unwrap_or_default()))
        }
        .await;
        let rolled_back = self.transaction(conn, Transaction::Rollback).await;
        let read = read?;
        rolled_back?;
        Ok(read)
    }

    /// Other sessions with an open transaction (SQL Server cannot tell
    /// cheaply which of them hold locks in `schema`), one line each.
    async fn blockers(&self, conn: &mut Self::Conn, _schema: &str) -> Vec<String> {
        let rows = match query(conn, sql::BLOCKERS, &[]).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "the blocking sessions could not be read");
                return Vec::new();
            }
        };
        rows.iter()
            .filter_map(|row| {
                let column = |i| text(row, i).ok();
                Some(format!(
                    "session {} of {} ({}, {} open transaction(s), last request {} s ago), command: {}",
                    column(0)?,
                    column(1)?,
                    column(2)?,
                    column(3)?,
                    column(4)?,
                    column(5).filter(|c| !c.is_empty()).map_or_else(|| "none".into(), |c| one_line(&c))
                ))
            })
            .collect()
    }

    /// Runs the file batch by batch, each within the statement time-out
    /// when one is set ([`within_statement_timeout`]).
    async fn execute(&self, conn: &mut Self::Conn, text: &str) -> Result<(), Failure> {
        for batch in split_go_batches(text) {
            let lines_before = text[..batch.as_ptr() as usize - text.as_ptr() as usize].matches('\n').count() as u64;
            within_statement_timeout(conn, lines_before, async |conn| {
                conn.client.simple_query(batch).await?.into_results().await.map(|_| ())
            })
            .await?;
        }
        Ok(())
    }

    async fn execute_bound(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<u64, Failure> {
        backfills::execute_bound(conn, sql, values).await
    }

    async fn read_keys(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<Vec<Key>, Failure> {
        backfills::read_keys(conn, sql, values).await
    }

    async fn create_tenant(&self, conn: &mut Self::Conn, tenant: &str) -> Result<(), DbError> {
        let failed = |e: DbError| DbError::TenantInsertFailed { tenant: tenant.to_string(), message: e.to_string() };
        execute(conn, sql::CREATE_SCHEMA, &[&tenant]).await.map_err(failed)?;
        execute(conn, &self.tenant_insert_sql, &[&tenant]).await.map_err(failed)?;
        Ok(())
    }

    async fn record(&self, conn: &mut Self::Conn, entries: &Entries<'_>) -> Result<(), DbError> {
        let Entries { rows, created, version_id } = *entries;
        let id = id32(version_id).ok_or(DbError::IdOutOfRange(version_id))?;
        for chunk in rows.chunks(sql::MIGRATION_ROWS_PER_INSERT) {
            let values: Vec<String> = chunk
                .iter()
                .map(|record| {
                    let migration = record.migration;
                    let text = quote_string_sqlserver;
                    format!(
                        "({}, {}, {}, {}, {}, convert(datetime2(6), {}, 127), {}, {}, {id})",
                        text(&migration.name),
                        text(&migration.source_dir),
                        text(&migration.file),
                        migration.migration_type.code(),
                        text(record.schema),
                        text(created),
                        text(&migration.contents),
                        text(&migration.checksum),
                    )
                })
                .collect();
            run(conn, &sql::insert_migrations_written(&values)).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{held_elsewhere, parse_data_source, trusts_server_certificate, trusts_server_certificate_unasked};

    #[test]
    fn a_lock_not_granted_without_waiting_is_held_elsewhere_on_sql_server_and_on_babelfish() {
        assert!(held_elsewhere(Some(-1)), "SQL Server");
        assert!(held_elsewhere(Some(-999)), "Babelfish");
        for code in [Some(0), Some(1), Some(-2), Some(-3), None] {
            assert!(!held_elsewhere(code), "{code:?}");
        }
    }

    #[test]
    fn the_peers_url_form_trusts_the_certificate_unless_encrypt_is_given() {
        assert!(trusts_server_certificate("sqlserver://sa:p@h?database=app&connection+timeout=1&dial+timeout=1"));
        assert!(!trusts_server_certificate("sqlserver://sa:p@h?database=app&encrypt=true"));
        assert!(trusts_server_certificate("Server=tcp:h;User Id=sa;Password=x;TrustServerCertificate = true"));
        assert!(!trusts_server_certificate("Server=tcp:h;User Id=sa;Password=x"));
    }

    #[test]
    fn only_a_trust_nobody_wrote_is_warned_about() {
        assert!(trusts_server_certificate_unasked("sqlserver://sa:p@h?database=app"));
        assert!(!trusts_server_certificate_unasked("sqlserver://sa:p@h?database=app&TrustServerCertificate=true"));
        assert!(!trusts_server_certificate_unasked("Server=tcp:h;User Id=sa;Password=x;TrustServerCertificate = true"));
        assert!(!trusts_server_certificate_unasked("sqlserver://sa:p@h?database=app&encrypt=true"));
        assert!(!trusts_server_certificate_unasked("Server=tcp:h;User Id=sa;Password=x"));
    }

    #[test]
    fn parses_ado_jdbc_and_go_mssqldb_forms() {
        for (text, address) in [
            ("Server=tcp:db.example.com,1433;User Id=sa;Password=x;Database=app", "db.example.com:1433"),
            (
                "server=tcp:10.0.0.5,14330;user=sa;password={a;b};database=app;TrustServerCertificate=true",
                "10.0.0.5:14330",
            ),
            ("jdbc:sqlserver://db.example.com:1434;databaseName=app;user=sa;password=x", "db.example.com:1434"),
            ("sqlserver://sa:p%40ss@db.example.com:1435?database=app", "db.example.com:1435"),
        ] {
            let config = parse_data_source(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(config.get_addr(), address, "{text}");
        }
    }

    #[test]
    fn refuses_what_it_cannot_read_without_echoing_it() {
        let err = parse_data_source("sqlserver://").unwrap_err().to_string();
        assert!(err.contains("missing host"), "{err}");
        assert!(parse_data_source("jdbc:nonsense").is_err());
    }
}
