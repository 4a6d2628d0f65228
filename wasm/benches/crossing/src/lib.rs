//! A benchmark, never shipped: how should a call cross into WebAssembly?
//! The same URL rendering as strata-wasm's `endpoint_url` (linked in, with
//! its wire format), fed here by JSON text or by JavaScript values through
//! serde-wasm-bindgen, so the three can be compared
//! (`pkg/endpoint/scripts/bench-crossing.mjs`, BENCHMARKS.md).

use std::cell::RefCell;

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value as Json;
use strata_core::endpoint::RoutePlan;
use strata_core::endpoint::template::Value;
use wasm_bindgen::prelude::*;
// The shipped bindings, linked in: `endpoint_plan` and `endpoint_url` are
// the wire way of the comparison.
pub use strata_wasm::{endpoint_plan, endpoint_url};

thread_local! {
    static PLANS: RefCell<Vec<RoutePlan>> = const { RefCell::new(Vec::new()) };
}

/// Plans a route for the JSON and value ways; returns its index.
#[wasm_bindgen]
pub fn experiment_plan(method: &str, url: &str) -> usize {
    PLANS.with_borrow_mut(|plans| {
        plans.push(RoutePlan::new(method, Some(url)));
        plans.len() - 1
    })
}

fn with_plan(index: usize, action: impl FnOnce(&RoutePlan) -> Result<String, JsError>) -> Result<String, JsError> {
    PLANS.with_borrow(|plans| action(plans.get(index).ok_or_else(|| JsError::new("unknown route plan"))?))
}

/// The payload of `endpoint_url` as a structure.
#[derive(Deserialize)]
struct UrlInput {
    base_url: String,
    accept: Option<String>,
    format: String,
    previews: Vec<String>,
    lookups: Vec<Json>,
    query: Vec<(String, String)>,
}

fn item(value: &Json) -> Option<Cow<'_, str>> {
    match value {
        Json::Null => None,
        Json::String(text) => Some(Cow::Borrowed(text)),
        other => Some(Cow::Owned(other.to_string())),
    }
}

fn value(json: &Json) -> Value<'_> {
    match json {
        Json::Null => Value::Absent,
        Json::String(text) => Value::Scalar(Cow::Borrowed(text)),
        Json::Array(items) => Value::List(items.iter().map(item).collect()),
        Json::Object(entries) => {
            Value::Map(entries.iter().map(|(key, entry)| (Cow::Borrowed(key.as_str()), item(entry))).collect())
        }
        other => Value::Scalar(Cow::Owned(other.to_string())),
    }
}

fn render(index: usize, input: UrlInput) -> Result<String, JsError> {
    let previews: Vec<&str> = input.previews.iter().map(String::as_str).collect();
    let query = input.query.iter().map(|(name, value)| (name.as_str(), value.as_str()));
    let mut values = input.lookups.iter();
    with_plan(index, |plan| {
        let url = plan
            .url(&input.base_url, |_| values.next().map_or(Value::Absent, value), query)
            .map_err(|error| JsError::new(error.message()))?;
        let accept = input
            .accept
            .as_deref()
            .map(|accept| strata_core::endpoint::accept::rewrite(accept, &input.format, &previews, &url));
        Ok(match accept {
            Some(accept) if Some(accept.as_ref()) != input.accept.as_deref() => ["1", &accept, "\n", &url].concat(),
            _ => ["0", &url].concat(),
        })
    })
}

/// `endpoint_url` with the payload as JSON text.
#[wasm_bindgen]
pub fn experiment_url_json(index: usize, json: &str) -> Result<String, JsError> {
    let input: UrlInput = serde_json::from_str(json).map_err(|error| JsError::new(&error.to_string()))?;
    render(index, input)
}

/// `endpoint_url` with the payload as a JavaScript object.
#[wasm_bindgen]
pub fn experiment_url_value(index: usize, input: JsValue) -> Result<String, JsError> {
    let input: UrlInput = serde_wasm_bindgen::from_value(input).map_err(|error| JsError::new(&error.to_string()))?;
    render(index, input)
}
