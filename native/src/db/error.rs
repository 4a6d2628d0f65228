//! Why a database operation failed ([`DbError`]), and what a failed
//! migration leaves behind ([`MigrationFailure`]).

use strata_core::migrate::driver::Driver;
use strata_core::migrate::failure;
use strata_core::migrate::fleet::FleetError;
use strata_core::migrate::history::HistoryErrors;
use strata_core::migrate::plan::PlanError;
use strata_core::migrate::quarantine::RetryError;
use strata_core::migrate::repair::RepairError;
use strata_core::migrate::revert::RevertError;
use strata_core::migrate::statements::Refusals;
use strata_core::migrate::wave::WaveError;
use thiserror::Error;

/// A shard on which a version did not finish.
#[derive(Debug)]
pub(crate) struct ShardFailure {
    /// The shard.
    pub(crate) shard: String,
    /// Why.
    pub(crate) error: RunError,
    /// Its tenants, when it could not be reached: as it listed them before
    /// the version, else as the directory last saw them.
    pub(crate) tenants: Vec<String>,
    /// Whether those tenants were quarantined (on the home shard, until
    /// the shard answers again: cause `SHARD_UNREACHABLE`).
    pub(crate) quarantined: bool,
}

/// Tenants named in a message: the first 20, then how many more.
fn some_of(tenants: &[String]) -> String {
    strata_core::migrate::summary::some_of(tenants, 20)
}

fn shards_message(failed_shards: &[ShardFailure], completed: &[(String, Option<i64>)]) -> String {
    let failed: Vec<String> = failed_shards
        .iter()
        .map(|f| match (f.tenants.is_empty(), f.quarantined) {
            (true, _) => format!("shard {}: {}", f.shard, f.error),
            (false, false) => format!(
                "shard {}: {}; its {} tenant(s) may lack this version: {}",
                f.shard,
                f.error,
                f.tenants.len(),
                some_of(&f.tenants)
            ),
            (false, true) => format!(
                "shard {}: {}; its {} tenant(s) are quarantined (SHARD_UNREACHABLE) until they are retried once it \
                 is back: {}",
                f.shard,
                f.error,
                f.tenants.len(),
                some_of(&f.tenants)
            ),
        })
        .collect();
    let completed: Vec<String> = completed
        .iter()
        .map(|(shard, version)| match version {
            Some(id) => format!("{shard} (version {id})"),
            None => format!("{shard} (nothing to do)"),
        })
        .collect();
    let completed = if completed.is_empty() { "none".to_string() } else { completed.join(", ") };
    // What brings each shard's tenants up to date: a retry for those put
    // aside (a later version skips them), a version for the others.
    let mut advice = Vec::new();
    if failed_shards.iter().any(|f| f.quarantined) {
        advice.push(
            "once a shard is back, `strata quarantine retry` (GraphQL retryQuarantined) completes its quarantined \
             tenants, in order — later versions skip them until then",
        );
    }
    if failed_shards.iter().any(|f| !f.quarantined) {
        advice.push(
            "run the version again once the others are fixed or reachable: what they missed is pending, in order",
        );
    }
    format!(
        "the version did not finish on {} shard(s) — {}; finished on: {completed}; {}",
        failed.len(),
        failed.join("; "),
        advice.join("; ")
    )
}

/// Why a database operation failed.
#[derive(Debug, Error)]
pub(crate) enum DbError {
    /// Opening the database ([`OpenError`]).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The cross-instance mutation lock ([`LockError`]).
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The shards of a fleet ([`ShardError`]).
    #[error(transparent)]
    Shard(#[from] ShardError),
    /// The server, or the way to it, under a session ([`ServerError`]).
    #[error(transparent)]
    Server(#[from] ServerError),
    /// A mutation was asked of a store opened read-only (a bug of the
    /// caller: read-only commands never mutate).
    #[error("this command opened the database read-only and cannot change it")]
    OpenedReadOnly,
    /// What this engine cannot do (yet).
    #[error("not supported: {0}")]
    NotSupported(&'static str),
    /// A version id does not fit the engine's column.
    #[error("version id {0} is out of range for this database")]
    IdOutOfRange(i64),
    /// A query of the service answered something its own tables cannot hold
    /// (a NULL in a NOT NULL column, no id after an insert).
    #[error("unexpected answer from the database: {0}")]
    UnexpectedAnswer(String),
    /// SQL Server (tiberius) reported an error.
    #[cfg(feature = "sqlserver")]
    #[error("database error: {0}")]
    SqlServer(#[from] tiberius::error::Error),
    /// A bookkeeping statement of the service failed (the engine's message,
    /// never its internal source location).
    #[error("database error: {}", describe(.0))]
    Query(sqlx::Error),
    /// A bookkeeping statement sent in one message (with a unit's files;
    /// SQLite's attachments and folds) failed (the engine's message).
    #[error("database error: {0}")]
    Books(String),
    /// A unit's transaction was not the one the service began when its rows
    /// were to be written (SQL Server: a file's procedure or dynamic SQL
    /// ended it, nested another, or switched the database): nothing is
    /// recorded; `committed` when what ran before may have committed.
    #[error("{message}")]
    UnitTransaction {
        /// What the fence found.
        message: String,
        /// What ran may stay applied (its transaction was ended by a file).
        committed: bool,
    },
    /// A migration failed; see [`MigrationFailure`] for what stays.
    #[error("{0}")]
    MigrationFailed(Box<MigrationFailure>),
    /// The tenant insert statement failed.
    #[error("creating tenant {tenant} failed: {message}; nothing was recorded")]
    TenantInsertFailed {
        /// The tenant.
        tenant: String,
        /// The database's message.
        message: String,
    },
    /// The tenant select statement failed.
    #[error("tenantSelectSQL failed: {0}")]
    TenantSelectFailed(String),
    /// The plan names a schema this driver cannot use.
    #[error("schema {schema:?} cannot be used: {reason}")]
    UnusableSchema {
        /// The schema.
        schema: String,
        /// Why.
        reason: String,
    },
    /// A recorded row holds a migration type code this build does not know.
    #[error("svc_migrations row {id} has unknown migration type {code}")]
    UnknownMigrationType {
        /// Row id.
        id: i64,
        /// The stored code.
        code: i64,
    },
}

/// Why the database could not be opened: not reached, its `dataSource`
/// unreadable, or not what the service can use.
#[derive(Debug, Error)]
pub(crate) enum OpenError {
    /// The database could not be reached or opened.
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    /// The `dataSource` cannot be read as a connection string of its driver.
    #[error("{0}")]
    BadDataSource(String),
    /// `dataSource` names a Citus worker node: Citus distributes DDL from
    /// its coordinator only, and the service's books live there.
    #[error(
        "the database is a Citus worker node, not the coordinator{}: Citus runs DDL and keeps the service's tables \
         on the coordinator only; point dataSource at the coordinator",
        .coordinator.as_ref().map(|c| format!(" ({c})")).unwrap_or_default()
    )]
    CitusWorker {
        /// The coordinator's host:port, when the worker's metadata names it.
        coordinator: Option<String>,
    },
    /// `devDataSource` (its address, then why) could not be opened or
    /// reached.
    #[error("devDataSource{0}")]
    Dev(String),
    /// This build leaves the driver out (a cargo feature).
    #[cfg_attr(feature = "sqlserver", allow(dead_code))]
    #[error("this build has no {} driver (cargo feature {})", .0.name(), .0.name())]
    DriverNotBuilt(Driver),
    /// The directory for SQLite's files cannot be created.
    #[error("cannot create directory {path}: {source}")]
    Directory {
        /// The directory.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What went wrong with the cross-instance mutation lock.
#[derive(Debug, Error)]
pub(crate) enum LockError {
    /// Another mutation (in this or another process) held the cross-instance
    /// lock for longer than the service waits.
    #[error("another mutation held the lock {lock} for more than {seconds} s; try again when it has finished")]
    Timeout {
        /// The lock's name (or file).
        lock: String,
        /// How long the service waited.
        seconds: u64,
    },
    /// The lease this mutation held expired and another mutation took it
    /// (this process was cut off from the database, or paused, for longer
    /// than the lease lasts); the version stopped before its next unit.
    #[error(
        "this mutation lost its lock (it could not renew it in time and another mutation took it); \
         it stopped before its next unit: what committed stays applied and recorded, run again for the rest"
    )]
    Lost,
    /// The engine refused to grant the lock (not a timeout).
    #[error("the database refused the lock {lock}: {reason}")]
    Refused {
        /// The lock's name.
        lock: String,
        /// The engine's answer.
        reason: String,
    },
}

/// What went wrong on the shards of a fleet.
#[derive(Debug, Error)]
pub(crate) enum ShardError {
    /// `strata tenants move` was refused before anything moved.
    #[error("the tenant was not moved: {0}")]
    MoveRefused(String),
    /// A shard of the fleet could not be reached (or opened).
    #[error("shard {shard} unreachable: {reason}")]
    Unreachable {
        /// The shard's name.
        shard: String,
        /// Why.
        reason: String,
    },
    /// What the shards answered breaks the fleet's rules (a tenant on two
    /// shards, a shard whose tenants no one knows): the databases' state,
    /// met while reading it.
    #[error(transparent)]
    Placement(FleetError),
    /// A version over a sharded fleet failed on some shards; the others
    /// finished.
    #[error("{}", shards_message(.failed, .completed))]
    Failed {
        /// Each shard that did not finish, with why.
        failed: Vec<ShardFailure>,
        /// The shards that finished, with the version each created.
        completed: Vec<(String, Option<i64>)>,
    },
}

/// The server, or the way to it, failed under a session: a version stops
/// on it (never absorbed as a tenant's own failure).
#[derive(Debug, Error)]
pub(crate) enum ServerError {
    /// The server accepts no writes: a PostgreSQL standby, a MySQL/MariaDB
    /// server with `read_only`, a SQL Server secondary.
    #[error(
        "the database server is read-only ({0}): it is a standby or replica, or read_only is set; \
         point dataSource at the primary"
    )]
    ReadOnly(String),
    /// The connection broke (the server stopped or failed over, the network
    /// or a pooler cut it).
    #[error("the connection to the database was lost: {0}")]
    ConnectionLost(String),
    /// No connection came free in time: every one of the service's own
    /// pool was busy past its wait (sqlx's "pool timed out"), or a
    /// connection pooler had no server connection (PgBouncer's
    /// `query_wait_timeout`). The message names neither alone: the detail
    /// tells them apart (an earlier one blamed a pooler where none was).
    #[error(
        "no database connection came free in time ({0}): the service's pool (tenantConcurrency + 6 connections, \
         shared by a version's units and the API's reads) or a connection pooler's (PgBouncer: default_pool_size, \
         which must hold tenantConcurrency + 2 for one version) was busy; try again, or lower tenantConcurrency"
    )]
    PoolExhausted(String),
}

/// What core refused before anything ran, as the database layer meets it.
#[derive(Debug, Error)]
pub(crate) enum Refusal {
    /// The planner refused the operation.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A revert could not be planned.
    #[error(transparent)]
    Revert(#[from] RevertError),
    /// `strata repair` refused a file.
    #[error(transparent)]
    Repair(#[from] RepairError),
    /// A retry names what is not in quarantine.
    #[error(transparent)]
    Retry(#[from] RetryError),
    /// A wave names what is not a tenant.
    #[error(transparent)]
    Wave(#[from] WaveError),
    /// A sharded fleet's rules refused the request.
    #[error(transparent)]
    Fleet(#[from] FleetError),
    /// A migration file cannot run as written (hidden transaction control,
    /// or a statement that needs the no-transaction directive).
    #[error("{0}; nothing was run")]
    Statements(#[from] Refusals),
    /// A Sync found another tool's history it cannot adopt.
    #[error(transparent)]
    History(#[from] HistoryErrors),
}

/// How a request of the database layer that core decides on ends when it
/// does not succeed: core refused it before anything ran ([`Refusal`]), or
/// the database failed ([`DbError`]). The service serves each refusal as
/// an error of its own (`AppError`'s flat variants).
#[derive(Debug, Error)]
pub(crate) enum RunError {
    /// Core refused the request; nothing ran.
    #[error(transparent)]
    Refused(Refusal),
    /// The database, or the way to it, failed.
    #[error(transparent)]
    Database(#[from] DbError),
}

impl<T: Into<Refusal>> From<T> for RunError {
    fn from(refusal: T) -> Self {
        RunError::Refused(refusal.into())
    }
}

impl RunError {
    /// Whether a shard of the fleet could not be reached.
    pub(crate) fn is_shard_unreachable(&self) -> bool {
        matches!(self, RunError::Database(error) if error.is_shard_unreachable())
    }
}

impl DbError {
    /// Whether a shard of the fleet could not be reached.
    pub(crate) fn is_shard_unreachable(&self) -> bool {
        matches!(self, DbError::Shard(ShardError::Unreachable { .. }))
    }

    /// Whether a statement lost a conflict with another session and its
    /// transaction was rolled back whole, so that running it again is safe:
    /// SQLSTATE 40001 (a serialization failure; MySQL's and MariaDB's
    /// deadlock, Galera's certification failure) or 40P01 (PostgreSQL's
    /// deadlock).
    pub(crate) fn is_conflict(&self) -> bool {
        let DbError::Query(error) = self else { return false };
        error.as_database_error().and_then(|d| d.code()).is_some_and(|code| code == "40001" || code == "40P01")
    }
}

impl From<sqlx::Error> for DbError {
    /// Read-only servers, lost connections and exhausted poolers have
    /// variants of their own; everything else is [`DbError::Query`].
    fn from(error: sqlx::Error) -> Self {
        match cause_of(&error) {
            Cause::ReadOnly => DbError::Server(ServerError::ReadOnly(describe(&error))),
            Cause::ConnectionLost => DbError::Server(ServerError::ConnectionLost(describe(&error))),
            Cause::PoolExhausted => DbError::Server(ServerError::PoolExhausted(describe(&error))),
            Cause::Statement | Cause::LockLost | Cause::LockTimeout | Cause::StatementTimeout => DbError::Query(error),
        }
    }
}

pub(crate) use strata_core::migrate::failure::Cause;

/// Why an sqlx error happened: a database's answer is classified by core
/// (`failure::classify`: SQLSTATEs, MySQL/MariaDB error numbers, Citus's
/// relayed node failures); I/O or protocol failures are lost connections.
pub(crate) fn cause_of(error: &sqlx::Error) -> Cause {
    match error {
        sqlx::Error::Database(database) => {
            let code = database.code().unwrap_or_default();
            // MySQL/MariaDB report an SQLSTATE too; their error number is
            // what tells the causes apart. (SQLite's numeric codes are no
            // MySQL numbers: its directory fsync failure is 1290.)
            let mysql_number =
                database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().map(|e| u32::from(e.number()));
            failure::classify(failure::Answer {
                sqlstate: &code,
                mysql_number,
                message: database.message(),
                ..failure::Answer::default()
            })
        }
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolClosed => {
            Cause::ConnectionLost
        }
        sqlx::Error::PoolTimedOut => Cause::PoolExhausted,
        _ => Cause::Statement,
    }
}

/// An sqlx error as a user reads it: the server's message and SQLSTATE,
/// without sqlx's wording or the engine's internal source line (sqlx
/// appends PostgreSQL's C source line, "at line 412", to its display).
pub(crate) fn describe(error: &sqlx::Error) -> String {
    match error.as_database_error() {
        Some(database) => match database.code() {
            Some(code) => format!("{} (SQLSTATE {code})", database.message()),
            None => database.message().to_string(),
        },
        None => match error {
            sqlx::Error::Tls(tls) => describe_tls(&tls.to_string()),
            sqlx::Error::Io(io) => describe_io(io),
            _ => error.to_string(),
        },
    }
}

/// A failed connection or read as a user reads it: what happened first
/// (refused, unknown host, no answer), the system's words after.
pub(crate) fn describe_io(error: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let text = error.to_string();
    match error.kind() {
        ErrorKind::ConnectionRefused => format!("connection refused: nothing listens at the server's address ({text})"),
        ErrorKind::TimedOut => format!("no answer from the server ({text})"),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::UnexpectedEof => {
            format!("the server closed the connection ({text})")
        }
        _ if text.contains("lookup address") => format!("unknown host: {text}"),
        _ => text,
    }
}

/// A failed TLS handshake as a user reads it. OpenSSL's text names its own
/// function, source file and line, then the verification's reason in
/// parentheses: a refused certificate keeps the reason and says which modes
/// verify; any other failure is kept whole.
fn describe_tls(text: &str) -> String {
    if !text.contains("certificate verify failed") {
        return format!("TLS handshake failed: {text}");
    }
    let reason = text.rsplit_once(" (").and_then(|(_, reason)| reason.strip_suffix(')')).unwrap_or("no reason given");
    format!(
        "TLS: the server's certificate was refused ({reason}); sslmode=verify-ca checks it against sslrootcert, \
         verify-full its host name too (prefer and require verify nothing)"
    )
}

/// `text` on one line, blanks squeezed (another session's statement in an
/// error message).
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a failed migration leaves behind, for the error message and the
/// GraphQL `extensions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MigrationFailure {
    /// The failing source file.
    pub(crate) file: String,
    /// The schema it ran in.
    pub(crate) schema: String,
    /// Where in the file the engine located the error, when it did.
    pub(crate) at: Option<strata_core::migrate::statements::Position>,
    /// The engine's message.
    pub(crate) message: String,
    /// The version holding what committed; `None` when nothing did.
    pub(crate) version_id: Option<i64>,
    /// Schemas all of whose steps of this version committed (applied and
    /// recorded), sorted.
    pub(crate) committed: Vec<String>,
    /// Schemas some of whose steps committed and some not (an earlier
    /// segment, a no-transaction file), sorted.
    pub(crate) partly_committed: Vec<String>,
    /// Schemas none of whose steps committed, sorted. The failing schema
    /// is here or among the partly committed.
    pub(crate) not_committed: Vec<String>,
    /// The failing file ran outside a transaction (the directive, or an
    /// engine without transactional DDL) and may be partly applied.
    pub(crate) partly_applied: bool,
    /// The version was one transaction, rolled back as a whole.
    pub(crate) whole_version: bool,
    /// Why it failed: the file, or the database under it.
    pub(crate) cause: Cause,
    /// What the committed part applied (or recorded), counted like a
    /// summary: metrics count it as they count a version.
    pub(crate) applied: strata_core::migrate::summary::Counts,
    /// A revert failed (the file's down part): the message says so, and
    /// what is left is undone, not applied.
    pub(crate) reverting: bool,
    /// The failing file is a backfill (`strata:backfill`): its batches
    /// before the failing one committed, each with its checkpoint.
    pub(crate) backfill: bool,
}

/// At most this many schema names are spelt out in a message (the
/// extensions list them all).
const NAMES_IN_MESSAGE: usize = 10;

fn some_names(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(NAMES_IN_MESSAGE).map(String::as_str).collect();
    let more = names.len().saturating_sub(NAMES_IN_MESSAGE);
    if more > 0 { format!("{}, and {more} more", shown.join(", ")) } else { shown.join(", ") }
}

impl MigrationFailure {
    /// What failed, by cause: the file and the schema.
    fn what_failed(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cause {
            Cause::Statement if self.reverting => {
                write!(f, "the down part of migration {} failed in schema {}", self.file, self.schema)?
            }
            Cause::Statement => write!(f, "migration {} failed in schema {}", self.file, self.schema)?,
            Cause::LockTimeout => write!(
                f,
                "migration {} gave up waiting for a lock in schema {} (another session holds it)",
                self.file, self.schema
            )?,
            Cause::StatementTimeout => {
                write!(f, "migration {} ran longer than its statement time-out in schema {}", self.file, self.schema)?
            }
            Cause::ConnectionLost => write!(
                f,
                "the connection to the database was lost while migration {} ran in schema {}",
                self.file, self.schema
            )?,
            Cause::ReadOnly => write!(
                f,
                "the database server is read-only (a standby or replica?): migration {} cannot run in schema {}",
                self.file, self.schema
            )?,
            Cause::PoolExhausted => write!(
                f,
                "no database connection came free in time for migration {} in schema {} (the service's pool \
                 was busy, or a connection pooler's: a pooler's pool must hold tenantConcurrency + 2 connections)",
                self.file, self.schema
            )?,
            Cause::LockLost if self.partly_applied => write!(
                f,
                "this mutation lost its lock (it was cut off or paused past its lease and another mutation took \
                 it) while migration {} ran outside a transaction in schema {}",
                self.file, self.schema
            )?,
            Cause::LockLost => write!(
                f,
                "this mutation lost its lock (it could not renew it in time and another mutation took it) and \
                 stopped before migration {} in schema {}",
                self.file, self.schema
            )?,
        }
        Ok(())
    }

    /// What the operator does next, by cause.
    fn advice(&self) -> &'static str {
        match self.cause {
            Cause::Statement => "fix the file and run again to apply what is left",
            Cause::ConnectionLost => "run again once the database is reachable to apply what is left",
            Cause::ReadOnly => "point dataSource at the primary and run again to apply what is left",
            Cause::PoolExhausted => "enlarge the pool or lower tenantConcurrency, and run again to apply what is left",
            Cause::LockLost => "run again to apply what is left",
            Cause::LockTimeout => {
                "end or wait out the blocking session (or raise lockTimeoutMillis / lockRetries, or the file's \
                 strata:lock-timeout), and run again to apply what is left"
            }
            Cause::StatementTimeout => {
                "raise statementTimeoutSeconds (or the file's strata:statement-timeout), and run again to apply \
                 what is left"
            }
        }
    }
}

impl std::fmt::Display for MigrationFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.what_failed(f)?;
        let placed = matches!(self.cause, Cause::Statement | Cause::LockTimeout | Cause::StatementTimeout);
        match self.at.filter(|_| placed) {
            Some(at) if at.column > 0 => write!(f, " at line {}, column {}", at.line, at.column)?,
            Some(at) => write!(f, " at line {}", at.line)?,
            None => {}
        }
        if self.cause != Cause::LockLost {
            write!(f, ": {}", self.message)?;
        }
        if self.whole_version {
            return write!(f, "; the version was rolled back, nothing was recorded");
        }
        if self.cause == Cause::LockLost && self.partly_applied {
            write!(f, "; the file may be applied (the other mutation may have run it too), unrecorded")?;
        } else if self.cause == Cause::LockLost {
            // Nothing of the file stays: the unit stopped before it, or its
            // transaction was rolled back at the fence.
        } else if self.backfill {
            write!(
                f,
                "; its batches before the failing one committed with their checkpoint, and running it again resumes \
                 after them (unrecorded until its last batch)"
            )?;
        } else if self.partly_applied {
            let part = if self.reverting {
                "its down part ran outside a transaction and may be partly done"
            } else {
                "the file ran outside a transaction and may be partly applied"
            };
            write!(f, "; {part}, unrecorded")?;
        } else {
            write!(f, "; {}'s transaction was rolled back", self.schema)?;
        }
        let applied = self.applied.migrations_grand_total() + self.applied.scripts_grand_total();
        match self.version_id {
            Some(id) if applied == 0 && self.backfill => write!(f, "; version {id} holds the backfill's start")?,
            Some(id) if applied == 0 => write!(f, "; version {id} holds the new tenant only")?,
            Some(id) if self.reverting => {
                write!(f, "; what committed before the failure stays undone, its records removed, in version {id}")?
            }
            Some(id) => write!(f, "; what committed before the failure stays applied and recorded in version {id}")?,
            None => write!(f, "; nothing was recorded")?,
        }
        if !self.committed.is_empty() {
            write!(f, "; {} schema(s) committed ({})", self.committed.len(), some_names(&self.committed))?;
        }
        if !self.partly_committed.is_empty() {
            write!(
                f,
                "; {} schema(s) partly committed ({})",
                self.partly_committed.len(),
                some_names(&self.partly_committed)
            )?;
        }
        if !self.not_committed.is_empty() {
            write!(f, "; {} schema(s) not committed ({})", self.not_committed.len(), some_names(&self.not_committed))?;
        }
        match self.reverting {
            true => write!(
                f,
                "; {}",
                self.advice()
                    .replace("fix the file", "fix the file's down part")
                    .replace("run again to apply what is left", "run the revert again to undo what is left")
            ),
            false => write!(f, "; {}", self.advice()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{describe_io, describe_tls};

    #[test]
    fn a_refused_certificate_keeps_the_reason_without_openssl_source_lines() {
        let openssl = "error:0A000086:SSL routines:tls_post_process_server_certificate:certificate verify \
                       failed:../ssl/statem/statem_clnt.c:1889: (self-signed certificate)";
        assert_eq!(
            describe_tls(openssl),
            "TLS: the server's certificate was refused (self-signed certificate); sslmode=verify-ca checks it \
             against sslrootcert, verify-full its host name too (prefer and require verify nothing)"
        );
        assert_eq!(describe_tls("handshake eof"), "TLS handshake failed: handshake eof");
    }

    #[test]
    fn an_unreachable_server_says_what_happened_first() {
        use std::io::{Error, ErrorKind};
        assert_eq!(
            describe_io(&Error::from(ErrorKind::ConnectionRefused)),
            "connection refused: nothing listens at the server's address (connection refused)"
        );
        let lookup = Error::other("failed to lookup address information: Name or service not known");
        assert_eq!(
            describe_io(&lookup),
            "unknown host: failed to lookup address information: Name or service not known"
        );
        assert_eq!(describe_io(&Error::from(ErrorKind::TimedOut)), "no answer from the server (timed out)");
        assert_eq!(describe_io(&Error::other("odd")), "odd");
    }
}
