//! The HTTP surface: routes under `pathPrefix` (the API, health, metrics,
//! the web console), request ids, metrics, body limits.

pub(crate) mod auth;
mod console;
pub(crate) mod listen;
mod oidc;
mod request_id;
mod routes;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{any, get, post};

use crate::graphql::ApiSchema;
use crate::service::Service;
use crate::telemetry::{self, Metrics};

/// Largest accepted request body; larger ones get 413.
pub(crate) const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Shared state of every handler.
pub(crate) struct AppState {
    /// The service.
    pub(crate) service: Arc<Service>,
    /// The GraphQL schema.
    pub(crate) schema: ApiSchema,
    /// The metrics registry.
    pub(crate) metrics: Metrics,
    /// The process-wide slots for GraphQL requests holding a query or
    /// `contents`.
    pub(crate) answer_slots: crate::graphql::limits::AnswerSlots,
    /// Who sends each request.
    pub(crate) authenticator: auth::Authenticator,
}

/// Builds the router, every path under `prefix` (`/` or `/segment…`).
pub(crate) fn router(state: Arc<AppState>, prefix: &str) -> Router {
    let at = |suffix: &str| if prefix == "/" { suffix.to_string() } else { format!("{prefix}{suffix}") };
    let mut routes = Router::new()
        .route(&at("/"), get(routes::build_info))
        .route(&at("/v2/config"), get(routes::config))
        .route(&at("/v2/schema"), get(routes::schema))
        .route(&at("/v2/service"), post(routes::graphql))
        .route(&at("/metrics"), get(routes::metrics))
        .route(&at("/health"), get(routes::health))
        .route(&at("/v1"), any(routes::v1_gone))
        .route(&at("/v1/{*rest}"), any(routes::v1_gone))
        .route(&at("/console/"), get(console::index))
        .route(&at("/console/app.js"), get(console::script))
        .route(&at("/console/app.css"), get(console::styles))
        .route(&at("/console/favicon.svg"), get(console::icon));
    let redirect = console::to_index(prefix);
    routes = routes.route(&at("/console"), get(move || std::future::ready(redirect)));
    if prefix != "/" {
        routes = routes.route(prefix, get(routes::build_info));
    }
    routes
        .method_not_allowed_fallback(routes::method_not_allowed)
        .fallback(routes::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), auth::authenticate))
        .layer(middleware::from_fn(telemetry::http_metrics))
        .layer(middleware::from_fn(request_id::request_id))
        .layer(middleware::from_fn(no_store))
        .with_state(state)
}

/// Every answer `nosniff`, and not kept by any cache unless it says how
/// (the console's files do): an answer to an authenticated request (the
/// configuration, the audit log, the fleet) is for its requester only.
async fn no_store(request: axum::extract::Request, next: middleware::Next) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The answer to a handler that panicked: 500, and the server keeps serving.
/// This layer sits outside the request-id middleware, so the panic is
/// logged here, once.
pub(crate) fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned());
    tracing::error!(panic = what.as_deref().unwrap_or("(no message)"), "a request handler panicked");
    crate::error::AppError::Internal("a request handler panicked".into()).into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;
    use tower_http::catch_panic::CatchPanicLayer;

    use super::*;

    /// The layer `main` puts around the router, around a handler that panics:
    /// the panicking request gets the 500 JSON error, the next one is served.
    #[tokio::test]
    async fn a_panicking_handler_gets_500_and_the_router_keeps_serving() {
        async fn explode() -> &'static str {
            panic!("handler bug")
        }
        let app = Router::new()
            .route("/explode", get(explode))
            .route("/fine", get(|| async { "fine" }))
            .layer(CatchPanicLayer::custom(panic_response));

        let response = app.clone().oneshot(Request::get("/explode").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["error"]["message"], crate::error::INTERNAL_MESSAGE);
        assert_eq!(json["error"]["code"], "INTERNAL");
        assert!(!String::from_utf8_lossy(&body).contains("handler bug"));

        let response = app.oneshot(Request::get("/fine").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(axum::body::to_bytes(response.into_body(), 64).await.unwrap(), "fine");
    }
}
