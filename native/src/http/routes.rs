//! Route handlers.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::{AppError, ErrorDetail, graphql_refusal};
use crate::graphql::limits;
use crate::http::AppState;
use crate::identity::Identity;
use crate::service::RequestId;

/// Time limit of each health check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// `GET /`: build information.
pub(crate) async fn build_info() -> Json<serde_json::Value> {
    Json(json!({
        "release": option_env!("STRATA_RELEASE").unwrap_or(env!("CARGO_PKG_VERSION")),
        "sha": option_env!("STRATA_SHA").or(option_env!("STRATA_GIT_SHA")).unwrap_or("unknown"),
        "apiVersions": ["v2"],
    }))
}

/// `GET /v2/config`: the effective configuration, secrets redacted.
pub(crate) async fn config(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "application/x-yaml")], state.service.config().render_redacted()).into_response()
}

/// `GET /v2/schema`: the GraphQL schema in SDL.
pub(crate) async fn schema(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], state.schema.sdl()).into_response()
}

/// The GraphQL-over-HTTP answer type a client may ask for instead of
/// `application/json`.
const GRAPHQL_RESPONSE_JSON: &str = "application/graphql-response+json";

/// `POST /v2/service`: one GraphQL request or a batch (JSON array), sent as
/// `application/json` only: the content types a browser may send across
/// sites without a CORS preflight (`text/plain`, forms) get 415, so no web
/// page can make an operator's browser run a mutation.
pub(crate) async fn graphql(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(refused) = check_content_type(&state, &headers) {
        return refused.into_graphql_response();
    }
    let body = match read_body(&state, body).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    graphql_answer(&state, request_id, identity, &headers, body).await.unwrap_or_else(AppError::into_graphql_response)
}

/// The request's body, whole, within `bodyReadTimeoutSeconds` of its
/// headers and at most [`super::MAX_BODY_BYTES`]: a body sent a byte at a
/// time would otherwise hold its connection (and its slot) for as long as
/// its sender likes. Each refusal is an answer in GraphQL's shape.
async fn read_body(state: &AppState, body: Body) -> Result<Bytes, Response> {
    let seconds = state.service.config().body_read_timeout_seconds;
    let read = axum::body::to_bytes(body, super::MAX_BODY_BYTES);
    match tokio::time::timeout(Duration::from_secs(seconds), read).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(error))
            if std::error::Error::source(&error).is_some_and(|e| e.is::<http_body_util::LengthLimitError>()) =>
        {
            Err(graphql_refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                format!("the request body is over the limit of {} bytes", super::MAX_BODY_BYTES),
            ))
        }
        Ok(Err(_)) => {
            Err(graphql_refusal(StatusCode::BAD_REQUEST, "BAD_REQUEST", "the request body could not be read".into()))
        }
        Err(_) => Err(graphql_refusal(
            StatusCode::REQUEST_TIMEOUT,
            "REQUEST_TIMEOUT",
            format!("the request body did not arrive within {seconds} s (bodyReadTimeoutSeconds)"),
        )),
    }
}

async fn graphql_answer(
    state: &AppState,
    request_id: RequestId,
    identity: Identity,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, AppError> {
    let batch: async_graphql::BatchRequest = serde_json::from_slice(&body)
        .map_err(|e| AppError::BadRequest(format!("request body is not a GraphQL request in JSON: {e}")))?;
    let limits = state.service.config().graphql_limits;
    let fleet = match state.service.config().shards.is_empty() {
        true => limits::Fleet::OneServer,
        false => limits::Fleet::Sharded,
    };
    let checked = limits::check_request(&batch.iter().collect::<Vec<_>>(), fleet, &limits);
    let scope = Arc::new(limits::RequestScope::new(&limits, &state.answer_slots));
    let response = match checked {
        Err(error) => async_graphql::BatchResponse::Single(async_graphql::Response::from_errors(vec![error])),
        Ok(needed) => {
            // The query slot first, then the contents slot (see
            // `RequestScope::take_query_slot`).
            if needed.query {
                scope.take_query_slot().await.map_err(|e| AppError::Internal(e.message))?;
            }
            if needed.contents {
                scope.take_slot().await.map_err(|e| AppError::Internal(e.message))?;
            }
            let execution = state.schema.execute_batch(batch.data(request_id).data(identity).data(Arc::clone(&scope)));
            tokio::select! {
                response = execution => response,
                () = scope.exceeded() => {
                    async_graphql::BatchResponse::Single(async_graphql::Response::from_errors(vec![scope.exceeded_error()]))
                }
            }
        }
    };
    let mut response = response;
    cap_errors(&mut response);
    log_errors(&response);
    let answer_type = if accepts(headers, GRAPHQL_RESPONSE_JSON) { GRAPHQL_RESPONSE_JSON } else { "application/json" };
    let status = refusal_status(&response);
    let mut answer = (status, Json(response)).into_response();
    answer.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(answer_type));
    // The slots (if the request took any) are held until the answer is
    // serialised.
    drop(scope);
    Ok(answer)
}

/// 415 unless the request is JSON, or carries a bearer credential, or is a
/// form or text the configuration accepts: a browser sends form and text
/// bodies cross-origin, never with a bearer credential (migrator's `curl
/// -d` clients send forms: `allowFormContentType`).
fn check_content_type(state: &AppState, headers: &HeaderMap) -> Result<(), AppError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let form = is_media(content_type, "application/x-www-form-urlencoded") || is_media(content_type, "text/plain");
    if is_json(content_type) || has_bearer(headers) || (form && state.service.config().allow_form_content_type) {
        return Ok(());
    }
    let hint = if form {
        " (or carry Authorization: Bearer; allowFormContentType: true accepts JSON sent as a form or as text)"
    } else {
        ""
    };
    Err(AppError::UnsupportedMediaType(if content_type.is_empty() {
        format!("POST /v2/service takes Content-Type: application/json; the request has none{hint}")
    } else {
        format!("POST /v2/service takes Content-Type: application/json, not {}{hint}", one_line(content_type))
    }))
}

/// 403 when an operation of the answer was refused to its identity
/// (`FORBIDDEN`: the guard's, or a self-approval), else 200 as GraphQL
/// answers are.
fn refusal_status(response: &async_graphql::BatchResponse) -> StatusCode {
    let responses: Vec<&async_graphql::Response> = match response {
        async_graphql::BatchResponse::Single(one) => vec![one],
        async_graphql::BatchResponse::Batch(many) => many.iter().collect(),
    };
    let forbidden = responses.iter().flat_map(|r| &r.errors).any(|error| {
        error
            .extensions
            .as_ref()
            .and_then(|extensions| extensions.get("code"))
            .is_some_and(|code| *code == async_graphql::Value::from("FORBIDDEN"))
    });
    if forbidden { StatusCode::FORBIDDEN } else { StatusCode::OK }
}

/// Most errors one operation's answer lists: a document the validator
/// refuses for thousands of reasons (a directive repeated, an argument
/// repeated) is refused as well by the first hundred.
const MAX_ERRORS: usize = 100;

/// Each answer's errors past [`MAX_ERRORS`] left out, one more error
/// saying how many.
fn cap_errors(response: &mut async_graphql::BatchResponse) {
    let responses: Vec<&mut async_graphql::Response> = match response {
        async_graphql::BatchResponse::Single(one) => vec![one],
        async_graphql::BatchResponse::Batch(many) => many.iter_mut().collect(),
    };
    for answer in responses {
        if answer.errors.len() > MAX_ERRORS {
            let left_out = answer.errors.len() - MAX_ERRORS;
            answer.errors.truncate(MAX_ERRORS);
            answer.errors.push(limits::limit_error(format!(
                "{left_out} more errors left out: an answer lists at most {MAX_ERRORS}"
            )));
        }
    }
}

/// Logs each error of the answer once, with the detail its conversion kept
/// (an internal failure's text never reaches the client).
fn log_errors(response: &async_graphql::BatchResponse) {
    let responses: Vec<&async_graphql::Response> = match response {
        async_graphql::BatchResponse::Single(one) => vec![one],
        async_graphql::BatchResponse::Batch(many) => many.iter().collect(),
    };
    for error in responses.iter().flat_map(|r| &r.errors) {
        match error.source::<ErrorDetail>() {
            Some(detail) if detail.code == "INTERNAL" => {
                tracing::error!(code = detail.code, path = ?error.path, "{}", detail.detail)
            }
            Some(detail) => tracing::warn!(code = detail.code, path = ?error.path, "{}", detail.detail),
            None => tracing::info!(path = ?error.path, "{}", error.message),
        }
    }
}

/// `application/json`, with or without parameters (`; charset=utf-8`).
fn is_json(content_type: &str) -> bool {
    is_media(content_type, "application/json")
}

/// Whether a `Content-Type` is `media` (parameters aside).
fn is_media(content_type: &str, media: &str) -> bool {
    content_type.split(';').next().is_some_and(|found| found.trim().eq_ignore_ascii_case(media))
}

/// Whether the request carries a bearer credential (which no browser
/// attaches to a cross-origin request on its own).
fn has_bearer(headers: &HeaderMap) -> bool {
    let value = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    value.and_then(super::auth::bearer).is_some_and(|credential| !credential.is_empty())
}

/// Whether the `Accept` header names `media` explicitly.
fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).any(|value| {
        value.split(',').any(|item| item.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case(media)))
    })
}

/// A header value fit for a one-line message: at most 100 characters.
fn one_line(text: &str) -> String {
    text.chars().take(100).filter(|c| !c.is_control()).collect()
}

/// `/v1/*`: the retired API; 410 with a pointer to `/v2`.
pub(crate) async fn v1_gone() -> Response {
    (
        StatusCode::GONE,
        Json(json!({ "error": { "code": "GONE", "message": "API v1 is retired; use /v2 (GraphQL at POST /v2/service)" } })),
    )
        .into_response()
}

/// `GET /metrics`: Prometheus text format.
pub(crate) async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], state.metrics.render()).into_response()
}

/// `GET /health`: `DB` and `Loader` checks; 200 when all are UP, else 503.
/// `auth` says whether authentication is configured (`none`: anyone who
/// reaches the port may change the fleet). With authentication, a probe
/// without a credential gets no details (no shard, database or path).
pub(crate) async fn health(State(state): State<Arc<AppState>>, identity: Option<Extension<Identity>>) -> Response {
    let configured = state.authenticator.configured();
    let detailed = !configured || identity.is_some_and(|Extension(identity)| identity.authenticated);
    let service = &state.service;
    let (databases, loader) = tokio::join!(
        tokio::time::timeout(CHECK_TIMEOUT, service.health()),
        check(async { service.loader().check().await.map_err(|e| e.to_string()) }),
    );
    let databases: Vec<(String, Result<(), String>)> = match databases {
        Ok(answers) => answers.into_iter().map(|(name, result)| (name, result.map_err(|e| e.to_string()))).collect(),
        Err(_) => vec![("DB".to_string(), Err(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())))],
    };
    let checks: Vec<(String, Result<(), String>)> =
        databases.into_iter().chain([("Loader".to_string(), loader)]).collect();
    let up = checks.iter().all(|(_, result)| result.is_ok());
    let body = match detailed {
        true => json!({
            "status": if up { "UP" } else { "DOWN" },
            "auth": if configured { "configured" } else { "none" },
            "checks": checks.iter().map(|(name, result)| match result {
                Ok(()) => json!({ "name": name, "status": "UP" }),
                Err(details) => json!({ "name": name, "status": "DOWN", "data": { "details": details } }),
            }).collect::<Vec<_>>(),
        }),
        false => json!({ "status": if up { "UP" } else { "DOWN" }, "auth": "configured" }),
    };
    let status = if up { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(body)).into_response()
}

async fn check(future: impl Future<Output = Result<(), String>>) -> Result<(), String> {
    tokio::time::timeout(CHECK_TIMEOUT, future)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())))
}

/// A route called with a method it does not take: 405 `METHOD_NOT_ALLOWED`
/// (with the `Allow` header axum adds), in GraphQL's error shape on the
/// GraphQL endpoint and in the plain routes' shape elsewhere.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let path = uri.path();
    let message = format!("{method} is not allowed on {}", one_line(path));
    if path.ends_with("/v2/service") {
        return graphql_refusal(StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", format!("{message} (use POST)"));
    }
    let body = json!({ "error": { "code": "METHOD_NOT_ALLOWED", "message": message } });
    let mut response = (StatusCode::METHOD_NOT_ALLOWED, Json(body)).into_response();
    response.extensions_mut().insert(ErrorDetail { code: "METHOD_NOT_ALLOWED", detail: message });
    response
}

/// Anything else: 404.
pub(crate) async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": { "code": "NOT_FOUND", "message": "no such route" } })))
        .into_response()
}
