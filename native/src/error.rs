//! `AppError`: every failure of the service, and how it reaches a client:
//! as an HTTP status on plain routes, as a GraphQL error (HTTP 200, standard
//! `errors` envelope, with an `extensions.code`) inside `/v2/service`.

use async_graphql::ErrorExtensions;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use strata_core::migrate::fleet::FleetError;
use strata_core::migrate::history::HistoryErrors;
use strata_core::migrate::plan::PlanError;
use strata_core::migrate::quarantine::RetryError;
use strata_core::migrate::repair::RepairError;
use strata_core::migrate::revert::RevertError;
use strata_core::migrate::source::SourceError;
use strata_core::migrate::statements::Refusals;
use strata_core::migrate::wave::WaveError;
use thiserror::Error;

use crate::db::DbError;
use crate::db::error::{LockError, ServerError, ShardError};
use crate::db::error::{MigrationFailure, Refusal, RunError, ShardFailure};
use crate::loader::LoaderError;

/// A failure of the service.
#[derive(Debug, Error)]
pub(crate) enum AppError {
    /// The request body is not a GraphQL request in JSON.
    #[error("{0}")]
    BadRequest(String),
    /// The request body is not sent as `application/json`.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The caller's input is invalid (e.g. an empty version name).
    #[error("{0}")]
    InvalidInput(String),
    /// A list of new tenants (`createTenants`) has problems; nothing ran.
    #[error(transparent)]
    TenantList(#[from] strata_core::migrate::tenant_list::ListError),
    /// The base location could not be read.
    #[error(transparent)]
    Loader(#[from] LoaderError),
    /// The source files are not a valid set of migrations.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The planner refused the operation (drift, out of order, a tenant
    /// that exists or a name it cannot take); nothing ran.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A revert could not be planned; nothing ran.
    #[error(transparent)]
    Revert(#[from] RevertError),
    /// `strata repair` refused a file; nothing changed.
    #[error(transparent)]
    Repair(#[from] RepairError),
    /// A retry names what is not in quarantine, or a wave a quarantined
    /// tenant; nothing ran.
    #[error(transparent)]
    Retry(#[from] RetryError),
    /// A wave names what is not a tenant, or an attribute the tenant list
    /// lacks; nothing ran.
    #[error(transparent)]
    Wave(#[from] WaveError),
    /// A sharded fleet's rules refused the request (a tenant on two shards,
    /// an unknown shard); nothing ran.
    #[error(transparent)]
    Fleet(#[from] FleetError),
    /// A migration file cannot run as written; nothing ran.
    #[error("{0}; nothing was run")]
    StatementRefused(#[from] Refusals),
    /// A Sync found another tool's history it cannot adopt (dirty, a
    /// version without its file); nothing was recorded.
    #[error("{0}; nothing was recorded")]
    History(#[from] HistoryErrors),
    /// The database failed.
    #[error(transparent)]
    Database(DbError),
    /// `driftPolicy: refuse` and a tenant's live schema differs from its
    /// group, or a schema changed since its last unit; nothing ran.
    #[error(
        "fleet drift: {} tenant(s) differ from the tenants that recorded the same migrations ({}), {} schema(s) \
         changed since their last migration ({}); driftPolicy is refuse, so nothing ran — see `strata drift`",
        .outliers.len(), .outliers.join(", "), .changed.len(), .changed.join(", ")
    )]
    SchemaDrift {
        /// The outliers.
        outliers: Vec<String>,
        /// The schemas changed since their last unit.
        changed: Vec<String>,
    },
    /// A desired schema asked for while tenant migration files are pending
    /// (the plan is made from the live schemas); nothing ran.
    #[error(transparent)]
    MigrationsPending(#[from] strata_core::migrate::desired::PendingMigrations),
    /// A desired schema whose plan loses data in some groups, neither
    /// allowed nor skipped; nothing ran.
    #[error("{file}: {groups}")]
    DestructivePlan {
        /// The desired schema, as named.
        file: String,
        /// The groups, each with its first destructive step.
        groups: strata_core::migrate::desired::DestructiveGroups,
    },
    /// A version over the fleet while rollouts are in progress; nothing ran.
    #[error(transparent)]
    RolloutInProgress(strata_core::migrate::rollout::InProgress),
    /// A retry in tenants a rollout in progress has not reached, or of
    /// files it did not start with; nothing ran.
    #[error(transparent)]
    RetryHeld(strata_core::migrate::rollout::reach::RetryHeld),
    /// No credential, or one that is not valid.
    #[error("{0}")]
    Unauthenticated(String),
    /// The identity may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// Too many failed authentications from this address.
    #[error("too many failed authentications from this address: try again in {0} s")]
    TooManyFailures(i64),
    /// An approval after the rollout's source files changed; nothing ran.
    #[error(transparent)]
    PlanChanged(strata_core::migrate::rollout::RolloutError),
    /// What the request names does not exist (a rollout id).
    #[error("{0} does not exist")]
    NotFound(String),
    /// A bug or an unexpected runtime failure.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<DbError> for AppError {
    /// A database failure; the fleet's rules broken by what the shards
    /// hold, served as the fleet's refusal of a request would be.
    fn from(error: DbError) -> Self {
        match error {
            DbError::Shard(ShardError::Placement(e)) => AppError::Fleet(e),
            other => AppError::Database(other),
        }
    }
}

impl From<RunError> for AppError {
    /// Core's refusal, served as an error of its own, or the database's
    /// failure.
    fn from(error: RunError) -> Self {
        match error {
            RunError::Refused(Refusal::Plan(e)) => AppError::Plan(e),
            RunError::Refused(Refusal::Revert(e)) => AppError::Revert(e),
            RunError::Refused(Refusal::Repair(e)) => AppError::Repair(e),
            RunError::Refused(Refusal::Retry(e)) => AppError::Retry(e),
            RunError::Refused(Refusal::Wave(e)) => AppError::Wave(e),
            RunError::Refused(Refusal::Fleet(e)) => AppError::Fleet(e),
            RunError::Refused(Refusal::Statements(e)) => AppError::StatementRefused(e),
            RunError::Refused(Refusal::History(e)) => AppError::History(e),
            RunError::Database(e) => AppError::Database(e),
        }
    }
}

impl AppError {
    /// A stable machine-readable code, served as `extensions.code`.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            AppError::BadRequest(_) => "BAD_REQUEST",
            AppError::UnsupportedMediaType(_) => "UNSUPPORTED_MEDIA_TYPE",
            AppError::InvalidInput(_) => "INVALID_INPUT",
            AppError::TenantList(_) => "INVALID_TENANT_LIST",
            AppError::Loader(_) => "LOADER_ERROR",
            AppError::Source(SourceError::Format(_)) => "INVALID_FORMAT",
            AppError::Source(_) => "INVALID_SOURCE",
            AppError::SchemaDrift { .. } => "SCHEMA_DRIFT",
            AppError::Plan(PlanError::Drift(_)) => "DRIFT",
            AppError::Plan(PlanError::OutOfOrder(_)) => "OUT_OF_ORDER",
            AppError::Plan(PlanError::Renamed(_)) => "RENAMED",
            AppError::Repair(_) => "REPAIR_REFUSED",
            AppError::Revert(_) => "REVERT_REFUSED",
            AppError::Plan(PlanError::TenantExists(_)) | AppError::Fleet(FleetError::TenantExists(_)) => {
                "TENANT_EXISTS"
            }
            AppError::Plan(PlanError::InvalidTenantName(_)) => "INVALID_TENANT_NAME",
            AppError::Plan(_) => "PLAN_ERROR",
            AppError::StatementRefused(_) => "STATEMENT_REFUSED",
            AppError::History(_) => "HISTORY_REFUSED",
            AppError::Retry(RetryError::Quarantined(_))
            | AppError::Fleet(FleetError::Retry(RetryError::Quarantined(_))) => "QUARANTINED",
            AppError::Retry(_) | AppError::Fleet(FleetError::Retry(_)) => "NOT_QUARANTINED",
            AppError::Wave(WaveError::UnknownAttribute { .. }) => "UNKNOWN_ATTRIBUTE",
            AppError::Wave(WaveError::NotATenant(_)) | AppError::Fleet(FleetError::Wave(WaveError::NotATenant(_))) => {
                "NOT_A_TENANT"
            }
            AppError::Wave(_) | AppError::Fleet(FleetError::Wave(_)) => "INVALID_INPUT",
            AppError::Fleet(FleetError::OnTwoShards { .. }) => "TENANT_ON_TWO_SHARDS",
            AppError::Fleet(FleetError::Shard(_)) => "UNKNOWN_SHARD",
            AppError::Fleet(FleetError::MustAnswer(_) | FleetError::Unknown(_)) => "SHARD_UNREACHABLE",
            AppError::Database(DbError::MigrationFailed(_)) => "MIGRATION_FAILED",
            AppError::Database(DbError::TenantInsertFailed { .. }) => "TENANT_INSERT_FAILED",
            AppError::Database(DbError::UnusableSchema { .. }) => "UNUSABLE_SCHEMA",
            AppError::Database(DbError::Server(ServerError::ReadOnly(_))) => "READ_ONLY_SERVER",
            AppError::Database(DbError::Server(ServerError::ConnectionLost(_))) => "CONNECTION_LOST",
            AppError::Database(DbError::Server(ServerError::PoolExhausted(_))) => "POOL_EXHAUSTED",
            AppError::Database(DbError::Lock(LockError::Lost)) => "LOCK_LOST",
            AppError::Database(DbError::NotSupported(_)) => "NOT_SUPPORTED",
            AppError::Database(DbError::Shard(ShardError::Unreachable { .. })) => "SHARD_UNREACHABLE",
            AppError::Database(DbError::Shard(ShardError::Failed { .. })) => "SHARDS_FAILED",
            AppError::Database(_) => "DATABASE_ERROR",
            AppError::RolloutInProgress(_) | AppError::RetryHeld(_) => "ROLLOUT_IN_PROGRESS",
            AppError::MigrationsPending(_) => "MIGRATIONS_PENDING",
            AppError::DestructivePlan { .. } => "DESTRUCTIVE_PLAN",
            AppError::NotFound(_) => "NOT_FOUND",
            AppError::Unauthenticated(_) => "UNAUTHENTICATED",
            AppError::Forbidden(_) => "FORBIDDEN",
            AppError::TooManyFailures(_) => "TOO_MANY_REQUESTS",
            AppError::PlanChanged(_) => "PLAN_CHANGED",
            AppError::Internal(_) => "INTERNAL",
        }
    }

    /// Whether the operation was refused before anything ran (the audit
    /// log's `refused` as opposed to `failed`).
    pub(crate) fn ran_nothing(&self) -> bool {
        !matches!(self, AppError::Database(_) | AppError::Internal(_) | AppError::Loader(_))
    }

    /// What a client is told: the error itself, except for internal
    /// failures, whose detail stays in the service's log.
    pub(crate) fn public_message(&self) -> String {
        match self {
            AppError::Internal(_) => INTERNAL_MESSAGE.to_string(),
            other => other.to_string(),
        }
    }

    /// The HTTP status of the error on a plain route (and of a GraphQL
    /// answer that holds it: 401, 403, 429).
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            AppError::BadRequest(_) | AppError::InvalidInput(_) | AppError::TenantList(_) => StatusCode::BAD_REQUEST,
            AppError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::TooManyFailures(_) => StatusCode::TOO_MANY_REQUESTS,
            AppError::PlanChanged(_) => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// The message of an internal failure, as a client sees it.
pub(crate) const INTERNAL_MESSAGE: &str =
    "internal error: the request could not be completed; the service log has the details under its X-Request-ID";

/// An error's code and full text, carried from where it is converted to
/// where the request is logged (the request-id middleware for plain
/// routes, the GraphQL handler for operations): conversions log nothing.
#[derive(Debug, Clone)]
pub(crate) struct ErrorDetail {
    /// [`AppError::code`].
    pub(crate) code: &'static str,
    /// The full message, internal detail included.
    pub(crate) detail: String,
}

impl std::fmt::Display for ErrorDetail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": { "code": self.code(), "message": self.public_message() } });
        let mut response = (self.status(), axum::Json(body)).into_response();
        response.extensions_mut().insert(ErrorDetail { code: self.code(), detail: self.to_string() });
        response
    }
}

impl ErrorExtensions for AppError {
    /// The GraphQL error: the message, plus `extensions.code` and, where they
    /// help a caller, the drifted `files` or the failing `file` and `schema`.
    fn extend(&self) -> async_graphql::Error {
        let code = self.code();
        let mut graphql_error =
            async_graphql::Error::new(self.public_message()).extend_with(|_, e| e.set("code", code));
        graphql_error.source = Some(std::sync::Arc::new(ErrorDetail { code, detail: self.to_string() }));
        match self {
            AppError::Plan(PlanError::Drift(drift)) => {
                let files: Vec<async_graphql::Value> =
                    drift.iter().map(|d| async_graphql::Value::String(d.file.clone())).collect();
                graphql_error.extend_with(|_, e| e.set("files", async_graphql::Value::List(files)))
            }
            AppError::Database(DbError::Shard(ShardError::Failed { failed, .. })) => {
                with_failed_shards(graphql_error, failed)
            }
            AppError::Database(DbError::MigrationFailed(failure)) => with_failure(graphql_error, failure),
            AppError::SchemaDrift { outliers, changed } => {
                let list =
                    |names: &[String]| async_graphql::Value::List(names.iter().map(|n| n.as_str().into()).collect());
                let (outliers, changed) = (list(outliers), list(changed));
                graphql_error.extend_with(|_, e| {
                    e.set("outliers", outliers.clone());
                    e.set("changed", changed.clone());
                })
            }
            AppError::StatementRefused(refused) => with_refusals(graphql_error, refused),
            _ => graphql_error,
        }
    }
}

/// Per shard that did not finish (`failedShards`): the tenants that may
/// lack the version when it could not be reached.
fn with_failed_shards(graphql_error: async_graphql::Error, failed: &[ShardFailure]) -> async_graphql::Error {
    let shards: Vec<async_graphql::Value> = failed
        .iter()
        .map(|failure| {
            let tenants = failure.tenants.iter().map(|t| async_graphql::Value::String(t.clone())).collect();
            async_graphql::Value::Object(
                [
                    (async_graphql::Name::new("shard"), async_graphql::Value::String(failure.shard.clone())),
                    (async_graphql::Name::new("tenants"), async_graphql::Value::List(tenants)),
                    (async_graphql::Name::new("quarantined"), async_graphql::Value::Boolean(failure.quarantined)),
                ]
                .into_iter()
                .collect(),
            )
        })
        .collect();
    graphql_error.extend_with(|_, e| e.set("failedShards", async_graphql::Value::List(shards)))
}

/// A failed migration's place (`file`, `schema`, `line`, `column`), its
/// version, what committed where, and its cause.
fn with_failure(graphql_error: async_graphql::Error, failure: &MigrationFailure) -> async_graphql::Error {
    let names = |list: &[String]| {
        async_graphql::Value::List(list.iter().map(|n| async_graphql::Value::String(n.clone())).collect())
    };
    graphql_error.extend_with(|_, e| {
        e.set("file", failure.file.as_str());
        e.set("schema", failure.schema.as_str());
        if let Some(at) = failure.at {
            e.set("line", at.line);
            if at.column > 0 {
                e.set("column", at.column);
            }
        }
        if let Some(id) = failure.version_id {
            e.set("versionId", id);
        }
        e.set("committedSchemas", names(&failure.committed));
        e.set("partlyCommittedSchemas", names(&failure.partly_committed));
        e.set("notCommittedSchemas", names(&failure.not_committed));
        e.set("partlyApplied", failure.partly_applied);
        e.set("cause", failure.cause.name());
    })
}

/// Every refused statement (`refusals`), the first one's place beside.
fn with_refusals(graphql_error: async_graphql::Error, refused: &Refusals) -> async_graphql::Error {
    let Some(first) = refused.0.first() else { return graphql_error };
    let refusals: Vec<async_graphql::Value> = refused
        .0
        .iter()
        .map(|r| {
            let mut place = async_graphql::indexmap::IndexMap::new();
            place.insert(async_graphql::Name::new("file"), async_graphql::Value::from(r.file()));
            place.insert(async_graphql::Name::new("line"), async_graphql::Value::from(r.at().line));
            place.insert(async_graphql::Name::new("column"), async_graphql::Value::from(r.at().column));
            place.insert(async_graphql::Name::new("message"), async_graphql::Value::from(r.to_string()));
            async_graphql::Value::Object(place)
        })
        .collect();
    graphql_error.extend_with(|_, e| {
        e.set("file", first.file());
        e.set("line", first.at().line);
        e.set("column", first.at().column);
        e.set("refusals", async_graphql::Value::List(refusals));
    })
}

impl AppError {
    /// The answer of the GraphQL endpoint to a request refused before any
    /// operation ran (401, 415, 400, 429…): the same status, in GraphQL's
    /// error shape (see [`graphql_refusal`]).
    pub(crate) fn into_graphql_response(self) -> Response {
        let mut response = graphql_refusal(self.status(), self.code(), self.public_message());
        response.extensions_mut().insert(ErrorDetail { code: self.code(), detail: self.to_string() });
        response
    }
}

/// A refusal of the GraphQL endpoint before any operation ran (a body over
/// the limit, a wrong method) in GraphQL's own shape, `{"errors":
/// [{"message", "extensions": {"code"}}]}`, as `application/json`; its
/// detail is logged once, like a plain route's error.
pub(crate) fn graphql_refusal(status: StatusCode, code: &'static str, message: String) -> Response {
    let body = serde_json::json!({ "errors": [{ "message": message, "extensions": { "code": code } }] });
    let mut response = (status, axum::Json(body)).into_response();
    response.extensions_mut().insert(ErrorDetail { code, detail: message });
    response
}

/// Converts any service error into a GraphQL error with its extensions.
pub(crate) fn graphql_error(error: impl Into<AppError>) -> async_graphql::Error {
    ErrorExtensions::extend(&error.into())
}
