//! What a route does with its parameters: the part of `parse` that depends
//! only on the method and the URL template, so shells can cache it.

use crate::endpoint::template::{self, Template, Value};
use crate::endpoint::{EndpointError, query};

/// Where parameters that the URL does not consume go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// GET and HEAD: appended to the URL as a query string.
    Query,
    /// Every other method: keys of the JSON body (or `data` as the body).
    Body,
}

/// The `content-type` given to requests that carry a body without one.
pub const JSON_CONTENT_TYPE: &str = "application/json; charset=utf-8";

/// The plan for one `(method, url)` pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutePlan {
    method: String,
    template: Template,
    destination: Destination,
}

impl RoutePlan {
    /// Plans a route. `url` is the option as given (`None` or empty means `/`);
    /// legacy `:name` placeholders are rewritten first.
    pub fn new(method: &str, url: Option<&str>) -> Self {
        // HTTP methods are ASCII tokens (RFC 9110); ASCII case mapping keeps
        // Unicode tables out of the WebAssembly build.
        let method = method.to_ascii_uppercase();
        let url = url.filter(|url| !url.is_empty()).unwrap_or("/");
        let template = Template::compile(&template::rewrite_legacy_placeholders(url));
        let destination = if method == "GET" || method == "HEAD" { Destination::Query } else { Destination::Body };
        Self { method, template, destination }
    }

    /// The method, upper-cased.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Where the parameters the URL does not consume go.
    pub fn destination(&self) -> Destination {
        self.destination
    }

    /// Whether a request without a body gets `""` as its body (PATCH and PUT:
    /// GitHub wants `content-length: 0` there).
    pub fn sends_empty_body(&self) -> bool {
        self.method == "PATCH" || self.method == "PUT"
    }

    /// Whether a parameter is consumed by the URL (and so is neither a query
    /// parameter nor a body key).
    pub fn consumes(&self, name: &str) -> bool {
        self.template.consumed_names().iter().any(|consumed| consumed == name)
    }

    /// The names upstream treats as consumed by the URL (`{?a*,b}` gives
    /// `a*` and `b`, `{v:3}` gives `v:3`).
    pub fn consumed_names(&self) -> &[String] {
        self.template.consumed_names()
    }

    /// The names whose values the URL expansion reads, one per variable.
    pub fn lookup_names(&self) -> impl Iterator<Item = &str> {
        self.template.lookup_names()
    }

    /// The final URL: the expanded template, prefixed with `base_url` unless
    /// it already starts with `http`, plus the `query` pairs for GET and HEAD
    /// (callers pass only parameters the URL does not consume).
    pub fn url<'v, 'q>(
        &self,
        base_url: &str,
        lookup: impl FnMut(&str) -> Value<'v>,
        query: impl IntoIterator<Item = (&'q str, &'q str)>,
    ) -> Result<String, EndpointError> {
        let path = self.expand(lookup)?;
        Ok(self.finish_url(base_url, path, query))
    }

    /// The first half of [`RoutePlan::url`]: the expanded template alone.
    pub fn expand<'v>(&self, lookup: impl FnMut(&str) -> Value<'v>) -> Result<String, EndpointError> {
        self.template.expand(lookup)
    }

    /// The second half of [`RoutePlan::url`]: base URL and query added to an
    /// expanded template.
    pub fn finish_url<'q>(
        &self,
        base_url: &str,
        path: String,
        query: impl IntoIterator<Item = (&'q str, &'q str)>,
    ) -> String {
        let mut url = if path.starts_with("http") {
            path
        } else {
            let mut joined = String::with_capacity(base_url.len() + path.len() + 32);
            joined.push_str(base_url);
            joined.push_str(&path);
            joined
        };
        if self.destination == Destination::Query {
            query::append(&mut url, query);
        }
        url
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn scalar(text: &str) -> Value<'_> {
        Value::Scalar(Cow::Borrowed(text))
    }

    #[test]
    fn get_appends_unconsumed_parameters_in_order() {
        let plan = RoutePlan::new("get", Some("/repos/{owner}/{repo}/issues{?state,per_page}"));
        assert_eq!(plan.method(), "GET");
        assert!(plan.consumes("owner") && plan.consumes("per_page") && !plan.consumes("labels"));
        let values = [("owner", "octokit"), ("repo", "endpoint.js"), ("state", "open"), ("per_page", "100")];
        let lookup = |name: &str| values.iter().find(|(key, _)| *key == name).map_or(Value::Absent, |(_, v)| scalar(v));
        let url = plan.url("https://api.github.com", lookup, [("labels", "bug,ui"), ("q", "a b+c:d")]).unwrap();
        assert_eq!(
            url,
            "https://api.github.com/repos/octokit/endpoint.js/issues?state=open&per_page=100&labels=bug%2Cui&q=a%20b+c%3Ad"
        );
    }

    #[test]
    fn body_methods_never_touch_the_query() {
        let plan = RoutePlan::new("post", Some("https://uploads.github.com/x{?name}"));
        assert_eq!(plan.destination(), Destination::Body);
        assert!(!plan.sends_empty_body());
        assert_eq!(
            plan.url("https://api.github.com", |_| scalar("a.zip"), [("label", "x")]).unwrap(),
            "https://uploads.github.com/x?name=a.zip"
        );
        assert!(RoutePlan::new("put", None).sends_empty_body());
    }
}
