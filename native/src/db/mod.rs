//! Database drivers. The migration loop is written once, in [`executor`],
//! over each driver's [`executor::Engine`] primitives; the drivers answer
//! the read queries of the API themselves. Each keeps its own SQL in one
//! `sql` module per dialect.

pub mod executor;
pub mod mysql;
pub mod postgres;
mod rows;
pub mod sqlite;
#[cfg(feature = "sqlserver")]
pub mod sqlserver;

use async_trait::async_trait;
use strata_core::MigrationType;
use strata_core::plan::{Action, Plan, PlanError, Target};
use strata_core::source::SourceMigration;
use thiserror::Error;

/// How long a driver waits for a database connection before it reports the
/// database unreachable (at start-up: exits with the error).
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A row of `svc.svc_versions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRow {
    /// Version id.
    pub id: i64,
    /// Caller-supplied name.
    pub name: String,
    /// RFC 3339 UTC.
    pub created: String,
}

/// A row of `svc.svc_migrations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationRow {
    /// Row id.
    pub id: i64,
    /// File name.
    pub name: String,
    /// Kind.
    pub migration_type: MigrationType,
    /// Configured directory.
    pub source_dir: String,
    /// `source_dir/name`.
    pub file: String,
    /// Un-substituted SQL text as read from the source.
    pub contents: String,
    /// SHA-256 of the source bytes.
    pub checksum: String,
    /// Schema it was applied to.
    pub schema: String,
    /// RFC 3339 UTC.
    pub created: String,
}

/// A mutation to carry out.
#[derive(Debug, Clone)]
pub struct MutationRequest<'a> {
    /// Source migrations, in application order.
    pub sources: &'a [SourceMigration],
    /// Which schemas.
    pub target: Target,
    /// Apply or Sync.
    pub action: Action,
    /// Roll back instead of committing.
    pub dry_run: bool,
    /// Name of the version to create.
    pub version_name: &'a str,
    /// The request's `X-Request-ID`, stored with the version.
    pub request_id: &'a str,
    /// Creation time of the version and its rows, RFC 3339 UTC.
    pub created: &'a str,
}

/// What a mutation did.
#[derive(Debug, Clone)]
pub struct MutationOutcome {
    /// The plan that was carried out (or would have been, on a dry run).
    pub plan: Plan,
    /// The committed version; `None` on a dry run or when nothing was due.
    pub version: Option<VersionRow>,
}

/// Why a database operation failed.
#[derive(Debug, Error)]
pub enum DbError {
    /// The database could not be reached or opened.
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    /// A bookkeeping statement of the service failed.
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
    /// The planner refused the operation.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A migration failed; see [`MigrationFailure`] for what stays.
    #[error("{0}")]
    MigrationFailed(Box<MigrationFailure>),
    /// A migration file cannot run as written (hidden transaction control,
    /// or a statement that needs the no-transaction directive); nothing ran.
    #[error("{0}; nothing was run")]
    StatementRefused(#[from] strata_core::statements::StatementError),
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

/// What a failed migration leaves behind, for the error message and the
/// GraphQL `extensions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationFailure {
    /// The failing source file.
    pub file: String,
    /// The schema it ran in.
    pub schema: String,
    /// Where in the file the engine located the error, when it did.
    pub at: Option<strata_core::statements::Position>,
    /// The engine's message.
    pub message: String,
    /// The version holding what committed; `None` when nothing did.
    pub version_id: Option<i64>,
    /// Schemas whose steps of this version committed (applied and
    /// recorded), sorted.
    pub committed: Vec<String>,
    /// Schemas with steps of this version not committed, sorted (the
    /// failing one among them).
    pub not_committed: Vec<String>,
    /// The failing file ran outside a transaction (the directive, or an
    /// engine without transactional DDL) and may be partly applied.
    pub partly_applied: bool,
    /// The version was one transaction, rolled back as a whole.
    pub whole_version: bool,
    /// What the committed part applied (or recorded), counted like a
    /// summary: metrics count it as they count a version.
    pub applied: strata_core::plan::Counts,
}

/// At most this many schema names are spelt out in a message (the
/// extensions list them all).
const NAMES_IN_MESSAGE: usize = 10;

fn some_names(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(NAMES_IN_MESSAGE).map(String::as_str).collect();
    let more = names.len().saturating_sub(NAMES_IN_MESSAGE);
    if more > 0 { format!("{}, and {more} more", shown.join(", ")) } else { shown.join(", ") }
}

impl std::fmt::Display for MigrationFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "migration {} failed in schema {}", self.file, self.schema)?;
        match self.at {
            Some(at) if at.column > 0 => write!(f, " at line {}, column {}", at.line, at.column)?,
            Some(at) => write!(f, " at line {}", at.line)?,
            None => {}
        }
        write!(f, ": {}", self.message)?;
        if self.whole_version {
            return write!(f, "; the version was rolled back, nothing was recorded");
        }
        if self.partly_applied {
            write!(f, "; the file ran outside a transaction and may be partly applied; nothing of it was recorded")?;
        } else {
            write!(f, "; {}'s transaction was rolled back", self.schema)?;
        }
        match self.version_id {
            Some(id) if !self.committed.is_empty() => write!(
                f,
                "; {} schema(s) committed before the failure stay applied and recorded in version {id} ({})",
                self.committed.len(),
                some_names(&self.committed)
            )?,
            Some(id) => write!(f, "; version {id} holds the new tenant only")?,
            None => write!(f, "; nothing was recorded")?,
        }
        write!(
            f,
            "; {} schema(s) not committed ({}); fix the file and run again to apply what is left",
            self.not_committed.len(),
            some_names(&self.not_committed)
        )
    }
}

/// A database the service migrates and records versions in.
#[async_trait]
pub trait Database: Send + Sync {
    /// Checks the connection without side effects.
    async fn ping(&self) -> Result<(), DbError>;
    /// Tenant names, from `tenantSelectSQL`.
    async fn tenants(&self) -> Result<Vec<String>, DbError>;
    /// All versions in id order; with `file`, only those that applied it.
    async fn versions(&self, file: Option<&str>) -> Result<Vec<VersionRow>, DbError>;
    /// One version.
    async fn version(&self, id: i64) -> Result<Option<VersionRow>, DbError>;
    /// The migrations recorded in one version, in id order.
    async fn version_migrations(&self, version_id: i64) -> Result<Vec<MigrationRow>, DbError>;
    /// One recorded migration.
    async fn db_migration(&self, id: i64) -> Result<Option<MigrationRow>, DbError>;
    /// Plans (through the core planner) and executes a mutation, serialised
    /// against every other mutation.
    async fn mutate(&self, request: MutationRequest<'_>) -> Result<MutationOutcome, DbError>;
}
