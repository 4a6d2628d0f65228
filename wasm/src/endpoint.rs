//! `pkg/endpoint`'s bindings: route plans (cached here, one per distinct
//! `(method, url)`, addressed by index) and URL rendering.

use std::cell::RefCell;

use strata_core::endpoint::{Destination, EndpointError, JSON_CONTENT_TYPE, RoutePlan, accept, template::Value};
use wasm_bindgen::prelude::*;

use crate::wire::{Reader, WireError, write_number, write_string, write_strings};

thread_local! {
    static PLANS: RefCell<Vec<RoutePlan>> = const { RefCell::new(Vec::new()) };
}

fn core_error(error: EndpointError) -> JsError {
    JsError::new(error.message())
}

impl From<WireError> for JsError {
    fn from(error: WireError) -> Self {
        JsError::new(&["strata-wasm: malformed payload: ", error.0].concat())
    }
}

/// Plans a route and returns `<index>` followed by, in wire form: the
/// upper-cased method, `q` or `b` (where unconsumed parameters go), `1` or `0`
/// (PATCH/PUT without body get `""`), the default JSON content type, the
/// consumed names and the names the URL reads.
#[wasm_bindgen]
pub fn endpoint_plan(method: &str, url: &str) -> String {
    let plan = RoutePlan::new(method, Some(url));
    let mut out = String::new();
    write_string(&mut out, plan.method());
    write_string(&mut out, if plan.destination() == Destination::Query { "q" } else { "b" });
    write_string(&mut out, if plan.sends_empty_body() { "1" } else { "0" });
    write_string(&mut out, JSON_CONTENT_TYPE);
    write_strings(&mut out, plan.consumed_names().iter().map(String::as_str));
    let lookup: Vec<&str> = plan.lookup_names().collect();
    write_strings(&mut out, lookup.into_iter());
    let index = PLANS.with_borrow_mut(|plans| {
        plans.push(plan);
        plans.len() - 1
    });
    let mut answer = String::with_capacity(out.len() + 8);
    write_number(&mut answer, index);
    answer.push(':');
    answer.push_str(&out);
    answer
}

/// Forgets every plan (the facade bounds its cache and calls this when full).
#[wasm_bindgen]
pub fn endpoint_reset() {
    PLANS.with_borrow_mut(Vec::clear);
}

/// Renders the URL of plan `index`. The payload holds, in wire form: the base
/// URL, the `accept` header (or `n`), `mediaType.format`, the previews list,
/// one value per name the URL reads, then name/value string pairs of the query.
/// Returns `0<url>` when `accept` is unchanged, `1s<len>:<accept><url>` when
/// `mediaType` rewrote it.
#[wasm_bindgen]
pub fn endpoint_url(index: usize, payload: &str) -> Result<String, JsError> {
    PLANS.with_borrow(|plans| {
        let plan = plans.get(index).ok_or_else(|| JsError::new("strata-wasm: unknown route plan"))?;
        let mut reader = Reader::new(payload);
        let base_url = reader.string()?;
        let accept_header = match reader.value()? {
            Value::Scalar(accept) => Some(accept),
            _ => None,
        };
        let format = reader.string()?;
        let previews = reader.strings()?;
        // The expansion reads one value per variable, in plan order, so the
        // values are decoded as it asks for them; then come the query pairs.
        let mut failure = None;
        let mut lookup = |_: &str| {
            reader.value().unwrap_or_else(|error| {
                failure.get_or_insert(error);
                Value::Absent
            })
        };
        let path = plan.expand(&mut lookup).map_err(core_error)?;
        let mut query = Vec::new();
        while failure.is_none() && !reader.is_empty() {
            match (reader.string(), reader.string()) {
                (Ok(name), Ok(value)) => query.push((name, value)),
                (Err(error), _) | (_, Err(error)) => failure = Some(error),
            }
        }
        if let Some(error) = failure {
            return Err(error.into());
        }
        let url = plan.finish_url(base_url, path, query);
        let rewritten =
            accept_header.as_deref().map(|current| (current, accept::rewrite(current, format, &previews, &url)));
        let mut out = String::with_capacity(url.len() + 1);
        match rewritten {
            Some((current, rewritten)) if rewritten != current => {
                out.push('1');
                write_string(&mut out, &rewritten);
            }
            _ => out.push('0'),
        }
        out.push_str(&url);
        Ok(out)
    })
}
