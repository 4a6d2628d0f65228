//! Route handlers.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{AppState, RequestId};
use crate::error::AppError;

/// Time limit of each health check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// `GET /`: build information.
pub async fn build_info() -> Json<serde_json::Value> {
    Json(json!({
        "release": option_env!("STRATA_RELEASE").unwrap_or(env!("CARGO_PKG_VERSION")),
        "sha": option_env!("STRATA_SHA").unwrap_or("unknown"),
        "apiVersions": ["v2"],
    }))
}

/// `GET /v2/config`: the effective configuration, secrets redacted.
pub async fn config(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "application/x-yaml")], state.service.config().render_redacted()).into_response()
}

/// `GET /v2/schema`: the GraphQL schema in SDL.
pub async fn schema(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], state.schema.sdl()).into_response()
}

/// `POST /v2/service`: one GraphQL request or a batch (JSON array).
pub async fn graphql(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    body: Bytes,
) -> Result<Response, AppError> {
    let batch: async_graphql::BatchRequest = serde_json::from_slice(&body)
        .map_err(|e| AppError::BadRequest(format!("request body is not a GraphQL request in JSON: {e}")))?;
    let response = state.schema.execute_batch(batch.data(request_id)).await;
    Ok(Json(response).into_response())
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], state.metrics.render()).into_response()
}

/// `GET /health`: `DB` and `Loader` checks; 200 when all are UP, else 503.
pub async fn health(State(state): State<Arc<AppState>>) -> Response {
    let service = &state.service;
    let (db, loader) = tokio::join!(
        check(async { service.database().ping().await.map_err(|e| e.to_string()) }),
        check(async { service.loader().check().await.map_err(|e| e.to_string()) }),
    );
    let checks = [("DB", db), ("Loader", loader)];
    let up = checks.iter().all(|(_, result)| result.is_ok());
    let body = json!({
        "status": if up { "UP" } else { "DOWN" },
        "checks": checks.iter().map(|(name, result)| match result {
            Ok(()) => json!({ "name": name, "status": "UP" }),
            Err(details) => json!({ "name": name, "status": "DOWN", "data": { "details": details } }),
        }).collect::<Vec<_>>(),
    });
    let status = if up { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(body)).into_response()
}

async fn check(future: impl Future<Output = Result<(), String>>) -> Result<(), String> {
    tokio::time::timeout(CHECK_TIMEOUT, future)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())))
}

/// Anything else: 404.
pub async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": { "code": "NOT_FOUND", "message": "no such route" } })))
        .into_response()
}
