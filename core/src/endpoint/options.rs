//! The builder on `serde_json` objects: defaults, merge and parse.

use std::borrow::Cow;

use serde_json::{Map, Value as Json};

use crate::endpoint::template::Value;
use crate::endpoint::{
    DEFAULT_ACCEPT, DEFAULT_BASE_URL, Destination, EndpointError, JSON_CONTENT_TYPE, RoutePlan, accept, split_route,
};

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
pub fn merge(
    defaults: Option<&Map<String, Json>>,
    route: Option<&str>,
    options: Map<String, Json>,
) -> Map<String, Json> {
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
        Some(Json::Object(headers)) => headers.into_iter().map(|(name, value)| (name.to_lowercase(), value)).collect(),
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
            items
                .iter()
                .map(|item| if item.is_null() { Cow::Borrowed("") } else { js_string(item) })
                .collect::<Vec<_>>()
                .join(","),
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
            None => {
                Some(Json::Object(remaining.iter().map(|(name, value)| ((*name).clone(), (*value).clone())).collect()))
            }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Json) -> Map<String, Json> {
        match value {
            Json::Object(map) => map,
            _ => panic!("test input must be an object"),
        }
    }

    fn github() -> Endpoint {
        Endpoint::new("strata-test/1.0")
    }

    fn request(route: &str, options: Json) -> RequestOptions {
        github().request(Some(route), object(options)).unwrap()
    }

    #[test]
    fn defaults_are_githubs() {
        assert_eq!(
            Json::Object(github().defaults_map().clone()),
            json!({"method": "GET", "baseUrl": "https://api.github.com",
                   "headers": {"accept": "application/vnd.github.v3+json", "user-agent": "strata-test/1.0"},
                   "mediaType": {"format": ""}})
        );
    }

    #[test]
    fn get_puts_unconsumed_parameters_in_the_query() {
        let options = request(
            "GET /repos/{owner}/{repo}/issues",
            json!({"owner": "o", "repo": "r", "state": "open", "page": 2, "draft": null}),
        );
        assert_eq!(options.method, "GET");
        assert_eq!(options.url, "https://api.github.com/repos/o/r/issues?state=open&page=2&draft=null");
        assert_eq!(options.body, None);
        assert_eq!(options.request, None);
    }

    #[test]
    fn post_builds_a_json_body_with_content_type() {
        let options = request(
            "POST /repos/{owner}/{repo}/issues",
            json!({"owner": "o", "repo": "r", "title": "t", "labels": ["bug"]}),
        );
        assert_eq!(options.url, "https://api.github.com/repos/o/r/issues");
        assert_eq!(options.body, Some(json!({"title": "t", "labels": ["bug"]})));
        assert_eq!(options.headers.get("content-type"), Some(&json!("application/json; charset=utf-8")));
    }

    #[test]
    fn data_is_the_body_and_an_explicit_content_type_stays() {
        let options = request("POST /markdown/raw", json!({"data": "# hi", "headers": {"Content-Type": "text/plain"}}));
        assert_eq!(options.body, Some(json!("# hi")));
        assert_eq!(options.headers.get("content-type"), Some(&json!("text/plain")));
    }

    #[test]
    fn put_and_patch_without_body_send_an_empty_string_delete_nothing() {
        assert_eq!(
            request("PUT /user/starred/{owner}/{repo}", json!({"owner": "o", "repo": "r"})).body,
            Some(json!(""))
        );
        assert_eq!(request("PATCH /x", json!({})).body, Some(json!("")));
        assert_eq!(request("DELETE /x", json!({})).body, None);
        assert!(request("PUT /x", json!({})).headers.get("content-type").is_none());
    }

    #[test]
    fn absolute_urls_ignore_the_base_url() {
        let options = request("GET https://uploads.github.com/x{?name}", json!({"name": "a b", "label": "c"}));
        assert_eq!(options.url, "https://uploads.github.com/x?name=a%20b&label=c");
    }

    #[test]
    fn media_type_format_rewrites_accept() {
        let options = request(
            "GET /repos/{owner}/{repo}/readme",
            json!({"owner": "o", "repo": "r", "mediaType": {"format": "html"}}),
        );
        assert_eq!(options.headers.get("accept"), Some(&json!("application/vnd.github.v3.html")));
    }

    #[test]
    fn request_is_returned_when_truthy() {
        assert_eq!(request("GET /", json!({"request": {"timeout": 5}})).request, Some(json!({"timeout": 5})));
        assert_eq!(request("GET /", json!({"request": null})).request, None);
    }

    #[test]
    fn merge_lowercases_headers_merges_objects_and_replaces_arrays() {
        let layered = github()
            .defaults(object(json!({"headers": {"X-One": "1"}, "mediaType": {"previews": ["a"]}, "per_page": 30})));
        let merged = layered.merge(
            Some("POST /repos"),
            object(json!({"headers": {"x-one": "one", "X-Two": "2"}, "mediaType": {"previews": ["b"]}})),
        );
        assert_eq!(
            Json::Object(merged),
            json!({"method": "POST", "baseUrl": "https://api.github.com",
                   "headers": {"accept": "application/vnd.github.v3+json", "user-agent": "strata-test/1.0", "x-one": "one", "x-two": "2"},
                   "mediaType": {"format": "", "previews": ["b"]}, "per_page": 30, "url": "/repos"})
        );
    }

    #[test]
    fn route_without_method_keeps_the_default_method() {
        let merged = github().merge(Some("/orgs/{org}"), Map::new());
        assert_eq!(merged.get("method"), Some(&json!("GET")));
        assert_eq!(merged.get("url"), Some(&json!("/orgs/{org}")));
    }

    #[test]
    fn graphql_previews_are_combined_and_stripped() {
        let layered = github().defaults(object(json!({"mediaType": {"previews": ["a-preview", "b"]}})));
        let merged =
            layered.merge(Some("POST /graphql"), object(json!({"mediaType": {"previews": ["b", "c-preview"]}})));
        assert_eq!(merged["mediaType"]["previews"], json!(["a", "b", "c"]));
        let options = parse(&merged).unwrap();
        assert_eq!(
            options.headers["accept"],
            json!(
                "application/vnd.github.a-preview+json,application/vnd.github.b-preview+json,application/vnd.github.c-preview+json"
            )
        );
    }

    #[test]
    fn parse_without_method_is_an_error() {
        assert_eq!(parse(&object(json!({"url": "/"}))), Err(EndpointError::MissingMethod));
    }

    #[test]
    fn composite_values_follow_javascript_string_conversion() {
        let options =
            request("GET /x{?list}", json!({"list": ["a", null, "b"], "other": ["x", ["y", "z"]], "obj": {"k": 1}}));
        assert_eq!(options.url, "https://api.github.com/x?list=a,b&other=x%2Cy%2Cz&obj=%5Bobject%20Object%5D");
    }
}
