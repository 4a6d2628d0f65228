//! The builder on `serde_json` objects: defaults, merge and parse.

use std::borrow::Cow;

use serde_json::{Map, Value as Json};

use super::template::Value;
use super::{accept, split_route, Destination, EndpointError, RoutePlan, DEFAULT_ACCEPT, DEFAULT_BASE_URL, JSON_CONTENT_TYPE};

/// Options that are not parameters.
const RESERVED_OPTIONS: [&str; 6] = ["method", "baseUrl", "url", "headers", "request", "mediaType"];

/// The result of [`parse`]: generic request options.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestOptions {
    /// Upper-cased method.
    pub method: String,
    /// Final URL.
    pub url: String,
    /// Headers, names lower-cased.
    pub headers: Map<String, Json>,
    /// Body, when there is one.
    pub body: Option<Json>,
    /// The `request` option, as passed.
    pub request: Option<Json>,
}

/// An endpoint function with its defaults; [`Endpoint::defaults`] layers more.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    defaults: Map<String, Json>,
}

impl Endpoint {
    /// The root endpoint: GET, `https://api.github.com`, GitHub's v3 `accept`
    /// and the given `user-agent` (callers know their runtime; core does not).
    pub fn new(user_agent: &str) -> Self {
        let mut defaults = Map::new();
        defaults.insert("method".into(), "GET".into());
        defaults.insert("baseUrl".into(), DEFAULT_BASE_URL.into());
        let mut headers = Map::new();
        headers.insert("accept".into(), DEFAULT_ACCEPT.into());
        headers.insert("user-agent".into(), user_agent.into());
        defaults.insert("headers".into(), Json::Object(headers));
        let mut media_type = Map::new();
        media_type.insert("format".into(), "".into());
        defaults.insert("mediaType".into(), Json::Object(media_type));
        Self { defaults }
    }

    /// The current defaults (`endpoint.DEFAULTS`).
    pub fn defaults_map(&self) -> &Map<String, Json> {
        &self.defaults
    }

    /// A new endpoint whose defaults are these merged with `options`.
    pub fn defaults(&self, options: Map<String, Json>) -> Self {
        Self { defaults: merge(Some(&self.defaults), None, options) }
    }

    /// `endpoint.merge(route, options)`.
    pub fn merge(&self, route: Option<&str>, options: Map<String, Json>) -> Map<String, Json> {
        merge(Some(&self.defaults), route, options)
    }

    /// `endpoint(route, options)`: merge, then parse.
    pub fn request(&self, route: Option<&str>, options: Map<String, Json>) -> Result<RequestOptions, EndpointError> {
        parse(&self.merge(route, options))
    }
}

/// Merges options into defaults: header names lower-cased, plain objects
/// merged deeply, everything else (arrays included) replaced. For
/// `url: "/graphql"` the previews of both sides are combined and their
/// `-preview` suffix dropped.
pub fn merge(defaults: Option<&Map<String, Json>>, route: Option<&str>, options: Map<String, Json>) -> Map<String, Json> {
    let mut given = Map::new();
    if let Some(route) = route {
        let (method, url) = split_route(route);
        if let Some(method) = method {
            given.insert("method".into(), method.into());
        }
        given.insert("url".into(), url.into());
    }
    given.extend(options);
    let headers = match given.remove("headers") {
        Some(Json::Object(headers)) => {
            headers.into_iter().map(|(name, value)| (name.to_lowercase(), value)).collect()
        }
        _ => Map::new(),
    };
    given.insert("headers".into(), Json::Object(headers));
    let is_graphql = given.get("url").and_then(Json::as_str) == Some("/graphql");
    let mut merged = merge_deep(defaults.cloned().unwrap_or_default(), given);
    if is_graphql {
        combine_previews(defaults, &mut merged);
    }
    merged
}

fn merge_deep(mut base: Map<String, Json>, overlay: Map<String, Json>) -> Map<String, Json> {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(existing), Json::Object(nested)) => {
                let inner = match existing.take() {
                    Json::Object(inner) => inner,
                    _ => Map::new(),
                };
                *existing = Json::Object(merge_deep(inner, nested));
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
    base
}

fn previews_of(options: &Map<String, Json>) -> Vec<String> {
    let previews = options.get("mediaType").and_then(|media| media.get("previews")).and_then(Json::as_array);
    previews.into_iter().flatten().filter_map(Json::as_str).map(str::to_owned).collect()
}

fn combine_previews(defaults: Option<&Map<String, Json>>, merged: &mut Map<String, Json>) {
    let mut previews = previews_of(merged);
    let inherited = defaults.map(previews_of).unwrap_or_default();
    if !inherited.is_empty() {
        let mut combined: Vec<String> = inherited.into_iter().filter(|preview| !previews.contains(preview)).collect();
        combined.append(&mut previews);
        previews = combined;
    }
    let stripped = previews.into_iter().map(|preview| Json::String(preview.replacen("-preview", "", 1))).collect();
    let media_type = merged.entry("mediaType").or_insert_with(|| Json::Object(Map::new()));
    if let Json::Object(media_type) = media_type {
        media_type.insert("previews".into(), Json::Array(stripped));
    }
}

/// JavaScript's `String(value)` for JSON values.
fn js_string(value: &Json) -> Cow<'_, str> {
    match value {
        Json::Null => Cow::Borrowed("null"),
        Json::Bool(flag) => Cow::Borrowed(if *flag { "true" } else { "false" }),
        Json::Number(number) => Cow::Owned(number.to_string()),
        Json::String(text) => Cow::Borrowed(text),
        Json::Array(items) => Cow::Owned(
            items.iter().map(|item| if item.is_null() { Cow::Borrowed("") } else { js_string(item) }).collect::<Vec<_>>().join(","),
        ),
        Json::Object(_) => Cow::Borrowed("[object Object]"),
    }
}

fn defined(item: &Json) -> Option<Cow<'_, str>> {
    if item.is_null() { None } else { Some(js_string(item)) }
}

fn template_value(value: Option<&Json>) -> Value<'_> {
    match value {
        None | Some(Json::Null) => Value::Absent,
        Some(Json::Array(items)) => Value::List(items.iter().map(defined).collect()),
        Some(Json::Object(entries)) => {
            Value::Map(entries.iter().map(|(name, item)| (Cow::Borrowed(name.as_str()), defined(item))).collect())
        }
        Some(scalar) => Value::Scalar(js_string(scalar)),
    }
}

fn is_truthy(value: &Json) -> bool {
    match value {
        Json::Null => false,
        Json::Bool(flag) => *flag,
        Json::Number(number) => number.as_f64().is_some_and(|number| number != 0.0),
        Json::String(text) => !text.is_empty(),
        Json::Array(_) | Json::Object(_) => true,
    }
}

/// Turns merged options into request options.
pub fn parse(options: &Map<String, Json>) -> Result<RequestOptions, EndpointError> {
    let method = options.get("method").and_then(Json::as_str).ok_or(EndpointError::MissingMethod)?;
    let plan = RoutePlan::new(method, options.get("url").and_then(Json::as_str));
    let parameters: Vec<(&String, &Json)> =
        options.iter().filter(|(name, _)| !RESERVED_OPTIONS.contains(&name.as_str())).collect();
    let remaining: Vec<(&String, &Json)> =
        parameters.iter().copied().filter(|(name, _)| !plan.consumes(name)).collect();
    let query_values: Vec<(&str, Cow<'_, str>)> =
        remaining.iter().map(|(name, value)| (name.as_str(), js_string(value))).collect();
    let lookup = |name: &str| template_value(parameters.iter().find(|(key, _)| *key == name).map(|(_, value)| *value));
    let base_url = options.get("baseUrl").map(js_string).unwrap_or_default();
    let url = plan.url(&base_url, lookup, query_values.iter().map(|(name, value)| (*name, value.as_ref())))?;

    let mut headers = match options.get("headers") {
        Some(Json::Object(headers)) => headers.clone(),
        _ => Map::new(),
    };
    let media_type = options.get("mediaType");
    let format = media_type.and_then(|media| media.get("format")).and_then(Json::as_str).unwrap_or_default();
    let previews: Vec<&str> = media_type
        .and_then(|media| media.get("previews"))
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .collect();
    if let Some(Json::String(current)) = headers.get("accept") {
        let rewritten = accept::rewrite(current, format, &previews, &url);
        if rewritten != current.as_str() {
            let rewritten = rewritten.into_owned();
            headers.insert("accept".into(), Json::String(rewritten));
        }
    }

    let mut body = match plan.destination() {
        Destination::Query => None,
        Destination::Body => match remaining.iter().find(|(name, _)| *name == "data") {
            Some((_, data)) => Some((*data).clone()),
            None if remaining.is_empty() => None,
            None => Some(Json::Object(remaining.iter().map(|(name, value)| ((*name).clone(), (*value).clone())).collect())),
        },
    };
    if body.is_some() && !headers.get("content-type").is_some_and(is_truthy) {
        headers.insert("content-type".into(), JSON_CONTENT_TYPE.into());
    }
    if body.is_none() && plan.sends_empty_body() {
        body = Some(Json::String(String::new()));
    }
    let request = options.get("request").filter(|request| is_truthy(request)).cloned();
    Ok(RequestOptions { method: plan.method().to_owned(), url, headers, body, request })
}
