//! `AppError`: every failure of the service, and how it reaches a client:
//! as an HTTP status on plain routes, as a GraphQL error (HTTP 200, standard
//! `errors` envelope, with an `extensions.code`) inside `/v2/service`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use strata_core::plan::PlanError;
use strata_core::source::SourceError;
use thiserror::Error;

use crate::db::DbError;
use crate::loader::LoaderError;

/// A failure of the service.
#[derive(Debug, Error)]
pub enum AppError {
    /// The request body is not a GraphQL request in JSON.
    #[error("{0}")]
    BadRequest(String),
    /// The request body is not sent as `application/json`.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The caller's input is invalid (e.g. an empty version name).
    #[error("{0}")]
    InvalidInput(String),
    /// The base location could not be read.
    #[error(transparent)]
    Loader(#[from] LoaderError),
    /// The source files are not a valid set of migrations.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The database refused or failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// A bug or an unexpected runtime failure.
    #[error("internal error: {0}")]
    Internal(String),
}

impl AppError {
    /// A stable machine-readable code, served as `extensions.code`.
    pub fn code(&self) -> &'static str {
        match self {
            AppError::BadRequest(_) => "BAD_REQUEST",
            AppError::UnsupportedMediaType(_) => "UNSUPPORTED_MEDIA_TYPE",
            AppError::InvalidInput(_) => "INVALID_INPUT",
            AppError::Loader(_) => "LOADER_ERROR",
            AppError::Source(_) => "INVALID_SOURCE",
            AppError::Database(DbError::Plan(PlanError::Drift(_))) => "DRIFT",
            AppError::Database(DbError::Plan(PlanError::TenantExists(_))) => "TENANT_EXISTS",
            AppError::Database(DbError::Plan(PlanError::InvalidTenantName(_))) => "INVALID_TENANT_NAME",
            AppError::Database(DbError::Plan(_)) => "PLAN_ERROR",
            AppError::Database(DbError::MigrationFailed(_)) => "MIGRATION_FAILED",
            AppError::Database(DbError::StatementRefused(_)) => "STATEMENT_REFUSED",
            AppError::Database(DbError::TenantInsertFailed { .. }) => "TENANT_INSERT_FAILED",
            AppError::Database(DbError::UnusableSchema { .. }) => "UNUSABLE_SCHEMA",
            AppError::Database(_) => "DATABASE_ERROR",
            AppError::Internal(_) => "INTERNAL",
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            AppError::BadRequest(_) | AppError::InvalidInput(_) => StatusCode::BAD_REQUEST,
            AppError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(code = self.code(), error = %self, "request failed");
        }
        let body = serde_json::json!({ "error": { "code": self.code(), "message": self.to_string() } });
        (status, axum::Json(body)).into_response()
    }
}

impl async_graphql::ErrorExtensions for AppError {
    /// The GraphQL error: the message, plus `extensions.code` and, where they
    /// help a caller, the drifted `files` or the failing `file` and `schema`.
    fn extend(&self) -> async_graphql::Error {
        tracing::warn!(code = self.code(), error = %self, "operation failed");
        let code = self.code();
        let mut graphql_error = async_graphql::Error::new(self.to_string()).extend_with(|_, e| e.set("code", code));
        if let AppError::Database(DbError::Plan(PlanError::Drift(drift))) = self {
            let files: Vec<async_graphql::Value> =
                drift.iter().map(|d| async_graphql::Value::String(d.file.clone())).collect();
            graphql_error = graphql_error.extend_with(|_, e| e.set("files", async_graphql::Value::List(files)));
        }
        if let AppError::Database(DbError::MigrationFailed(failure)) = self {
            let names = |list: &[String]| {
                async_graphql::Value::List(list.iter().map(|n| async_graphql::Value::String(n.clone())).collect())
            };
            graphql_error = graphql_error.extend_with(|_, e| {
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
                e.set("notCommittedSchemas", names(&failure.not_committed));
                e.set("partlyApplied", failure.partly_applied);
            });
        }
        if let AppError::Database(DbError::StatementRefused(refused)) = self {
            use strata_core::statements::StatementError;
            let (StatementError::TransactionControl { file, at, .. }
            | StatementError::NeedsNoTransaction { file, at, .. }) = refused;
            graphql_error = graphql_error.extend_with(|_, e| {
                e.set("file", file.as_str());
                e.set("line", at.line);
                e.set("column", at.column);
            });
        }
        graphql_error
    }
}

/// Converts any service error into a GraphQL error with its extensions.
pub fn graphql_error(error: impl Into<AppError>) -> async_graphql::Error {
    async_graphql::ErrorExtensions::extend(&error.into())
}
