//! The HTTP surface: routes under `pathPrefix`, request ids, metrics, body
//! limits.

mod request_id;
mod routes;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{get, post};

pub use request_id::RequestId;

use crate::graphql::ApiSchema;
use crate::service::Service;
use crate::telemetry::{self, Metrics};

/// Largest accepted request body; larger ones get 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Shared state of every handler.
pub struct AppState {
    /// The service.
    pub service: Arc<Service>,
    /// The GraphQL schema.
    pub schema: ApiSchema,
    /// The metrics registry.
    pub metrics: Metrics,
}

/// Builds the router, every path under `prefix` (`/` or `/segment…`).
pub fn router(state: Arc<AppState>, prefix: &str) -> Router {
    let at = |suffix: &str| if prefix == "/" { suffix.to_string() } else { format!("{prefix}{suffix}") };
    let mut routes = Router::new()
        .route(&at("/"), get(routes::build_info))
        .route(&at("/v2/config"), get(routes::config))
        .route(&at("/v2/schema"), get(routes::schema))
        .route(&at("/v2/service"), post(routes::graphql))
        .route(&at("/metrics"), get(routes::metrics))
        .route(&at("/health"), get(routes::health));
    if prefix != "/" {
        routes = routes.route(prefix, get(routes::build_info));
    }
    routes
        .fallback(routes::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(telemetry::http_metrics))
        .layer(middleware::from_fn(request_id::request_id))
        .with_state(state)
}

/// The answer to a handler that panicked: 500, and the server keeps serving.
pub fn panic_response(_panic: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    tracing::error!("a request handler panicked");
    crate::error::AppError::Internal("the request could not be completed".into()).into_response()
}
