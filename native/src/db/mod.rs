//! Database drivers: each executes what the core planner decides, in one
//! transaction per version, and answers the read queries of the API.
//!
//! The trait is the seam later drivers (PostgreSQL, MySQL, SQL Server) slot
//! into; each keeps its own SQL in one `sql` module per dialect.

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
    /// A migration failed; the whole version was rolled back.
    #[error("migration {file} failed in schema {schema}: {message}; the version was rolled back, nothing was recorded")]
    MigrationFailed {
        /// The failing source file.
        file: String,
        /// The schema it ran in.
        schema: String,
        /// The database's message.
        message: String,
    },
    /// A migration failed on a database without transactional DDL (MySQL):
    /// the steps before it stay applied and are recorded in the version.
    #[error(
        "migration {file} failed in schema {schema}: {message}; DDL commits as it runs on this database, so the \
         {recorded} migration(s) before it stay applied and are recorded in version {version_id}; fix the file and \
         run again to continue"
    )]
    MigrationFailedPartway {
        /// The failing source file.
        file: String,
        /// The schema it ran in.
        schema: String,
        /// The database's message.
        message: String,
        /// Steps applied and recorded before the failure.
        recorded: usize,
        /// The version holding them (removed when it holds nothing).
        version_id: i64,
    },
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
