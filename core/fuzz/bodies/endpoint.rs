// The body of the fuzz target `endpoint` (fuzz_targets/endpoint.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

use std::borrow::Cow;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use strata_core::endpoint::template::Value;
use strata_core::endpoint::{accept, Endpoint, EndpointError, RoutePlan};

#[derive(Arbitrary, Debug)]
enum FuzzValue<'a> {
    Absent,
    Scalar(&'a str),
    List(Vec<Option<&'a str>>),
    Map(Vec<(&'a str, Option<&'a str>)>),
}

impl<'a> FuzzValue<'a> {
    fn value(&self) -> Value<'a> {
        match self {
            Self::Absent => Value::Absent,
            Self::Scalar(text) => Value::Scalar(Cow::Borrowed(text)),
            Self::List(items) => Value::List(items.iter().map(|item| item.map(Cow::Borrowed)).collect()),
            Self::Map(entries) => {
                Value::Map(entries.iter().map(|(key, value)| (Cow::Borrowed(*key), value.map(Cow::Borrowed))).collect())
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    method: &'a str,
    url: &'a str,
    base_url: &'a str,
    values: Vec<FuzzValue<'a>>,
    query: Vec<(&'a str, &'a str)>,
    accept: &'a str,
    format: &'a str,
    previews: Vec<&'a str>,
    route: &'a str,
    options_json: &'a str,
}

fuzz_target!(|input: Input<'_>| {
    let plan = RoutePlan::new(input.method, Some(input.url));
    let mut values = input.values.iter();
    match plan.url(input.base_url, |_| values.next().map_or(Value::Absent, FuzzValue::value), input.query.iter().copied()) {
        Ok(url) => {
            let _ = accept::rewrite(input.accept, input.format, &input.previews, &url);
        }
        Err(error) => assert_eq!(error, EndpointError::MalformedUri),
    }
    let _ = plan.lookup_names().count();
    if let Ok(serde_json::Value::Object(options)) = serde_json::from_str::<serde_json::Value>(input.options_json) {
        let endpoint = Endpoint::new("fuzz/1.0");
        let _ = endpoint.request(Some(input.route), options.clone());
        let _ = endpoint.defaults(options).request(Some(input.route), Default::default());
    }
});
