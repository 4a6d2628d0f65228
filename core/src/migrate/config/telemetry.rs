//! The `telemetry:` section and the OpenTelemetry SDK's environment
//! variables: whether traces and metrics are exported over OTLP, where,
//! how, and what is sampled. A signal is off unless an endpoint is given
//! for it (the section's `endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`, or the
//! signal's own `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`); `OTEL_SDK_DISABLED=true` turns
//! both off, `OTEL_TRACES_EXPORTER=none` (or `traces: false`) the traces,
//! `OTEL_METRICS_EXPORTER=none` or `prometheus` (or `metrics: false`) the
//! metrics — `/metrics` serves them in every case. Each property is the section's when it sets it, else
//! its variable's, else the specification's default — the order the
//! OpenTelemetry SDKs follow for code and environment.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::migrate::config::{ConfigError, EnvValue, Environment, PortValue, RawConfig, Substituter, invalid};

/// How traces and metrics are exported, when one of them is
/// (`Config::telemetry`). Shown (`GET /v2/config`, `config check`) with the
/// section's names and the header values masked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Telemetry {
    /// The spans' export, when traces are exported.
    pub traces: Option<TraceExport>,
    /// The metrics' export, when metrics are exported over OTLP.
    pub metrics: Option<MetricExport>,
    /// The OTLP transport of both.
    pub protocol: OtlpProtocol,
    /// Headers of every export (an API key, a tenant of the collector):
    /// secrets.
    pub headers: BTreeMap<String, String>,
    /// `service.name` of the resource.
    pub service_name: String,
    /// The resource's other attributes (`OTEL_RESOURCE_ATTRIBUTES` and
    /// `resourceAttributes`).
    pub resource_attributes: BTreeMap<String, String>,
    /// How long one export may take, in milliseconds; also the most a
    /// command waits at its end for its spans to leave, and a server at
    /// its stop for its last metrics.
    pub timeout_millis: u64,
}

/// Where and how spans are exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceExport {
    /// Where traces are sent: with `http/protobuf` the whole URL (a base
    /// endpoint gains `/v1/traces`), with `grpc` the collector's address.
    pub endpoint: String,
    /// Which traces are kept.
    pub sampler: Sampler,
    /// Spans waiting for export at most; one more is dropped (and counted),
    /// never waited for.
    pub queue_size: u32,
}

/// Where and how often the service's metrics are exported: the series of
/// `/metrics`, by the same names, as cumulative sums, gauges and
/// histograms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricExport {
    /// Where metrics are sent: with `http/protobuf` the whole URL (a base
    /// endpoint gains `/v1/metrics`), with `grpc` the collector's address.
    pub endpoint: String,
    /// Milliseconds between two exports (`OTEL_METRIC_EXPORT_INTERVAL`).
    pub interval_millis: u64,
}

impl Serialize for Telemetry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        match &self.traces {
            Some(traces) => {
                map.serialize_entry("endpoint", &shown_endpoint(&traces.endpoint))?;
                map.serialize_entry("sampler", traces.sampler.name())?;
                if let RootSampler::TraceIdRatio { .. } = traces.sampler.root {
                    map.serialize_entry("samplerArg", &traces.sampler.ratio())?;
                }
                map.serialize_entry("queueSize", &traces.queue_size)?;
            }
            None => map.serialize_entry("traces", &false)?,
        }
        match &self.metrics {
            Some(metrics) => {
                map.serialize_entry("metricsEndpoint", &shown_endpoint(&metrics.endpoint))?;
                map.serialize_entry("metricsIntervalMillis", &metrics.interval_millis)?;
            }
            None => map.serialize_entry("metrics", &false)?,
        }
        map.serialize_entry("protocol", &self.protocol)?;
        if !self.headers.is_empty() {
            let masked: BTreeMap<&str, &str> = self.headers.keys().map(|name| (name.as_str(), "***")).collect();
            map.serialize_entry("headers", &masked)?;
        }
        map.serialize_entry("serviceName", &self.service_name)?;
        if !self.resource_attributes.is_empty() {
            map.serialize_entry("resourceAttributes", &self.resource_attributes)?;
        }
        map.serialize_entry("timeoutMillis", &self.timeout_millis)?;
        map.end()
    }
}

/// The OTLP transport (`protocol`, `OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum OtlpProtocol {
    /// `grpc`: the collector's port 4317, usually.
    #[serde(rename = "grpc")]
    Grpc,
    /// `http/protobuf` (the default): port 4318, usually.
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

/// Which traces are sampled, as the specification names the samplers
/// (`OTEL_TRACES_SAMPLER`): `parentbased_*` follow a caller's decision
/// (its `traceparent` flag) and apply `root` to traces that start here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampler {
    /// Whether a caller's decision is followed.
    pub parent_based: bool,
    /// The decision for a trace that starts here.
    pub root: RootSampler,
}

/// The decision of a [`Sampler`] for a trace without a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootSampler {
    /// Every trace.
    AlwaysOn,
    /// None.
    AlwaysOff,
    /// This many traces in a million, by trace id (`traceidratio`).
    TraceIdRatio {
        /// The ratio, in millionths.
        per_million: u32,
    },
}

impl Sampler {
    /// The specification's default: `parentbased_always_on`.
    pub const DEFAULT: Sampler = Sampler { parent_based: true, root: RootSampler::AlwaysOn };

    /// The specification's name of the sampler (`OTEL_TRACES_SAMPLER`).
    pub fn name(&self) -> &'static str {
        match (self.parent_based, self.root) {
            (false, RootSampler::AlwaysOn) => "always_on",
            (false, RootSampler::AlwaysOff) => "always_off",
            (false, RootSampler::TraceIdRatio { .. }) => "traceidratio",
            (true, RootSampler::AlwaysOn) => "parentbased_always_on",
            (true, RootSampler::AlwaysOff) => "parentbased_always_off",
            (true, RootSampler::TraceIdRatio { .. }) => "parentbased_traceidratio",
        }
    }

    /// The ratio as a fraction (1 for always, 0 for never).
    pub fn ratio(&self) -> f64 {
        match self.root {
            RootSampler::AlwaysOn => 1.0,
            RootSampler::AlwaysOff => 0.0,
            RootSampler::TraceIdRatio { per_million } => f64::from(per_million) / 1_000_000.0,
        }
    }
}

/// `telemetry.queueSize` and `OTEL_BSP_MAX_QUEUE_SIZE` when not set (the
/// specification's default).
pub const DEFAULT_QUEUE_SIZE: u32 = 2048;
/// `OTEL_EXPORTER_OTLP_TIMEOUT` when not set, in milliseconds: below the
/// specification's 10 s, as it is also how long a command may wait at its
/// end for a collector that does not answer.
pub const DEFAULT_TIMEOUT_MILLIS: u64 = 5000;
/// `telemetry.metricsIntervalMillis` and `OTEL_METRIC_EXPORT_INTERVAL`
/// when not set (the specification's default).
pub const DEFAULT_METRIC_INTERVAL_MILLIS: u64 = 60_000;
/// `service.name` when neither the section nor the environment names one.
pub const DEFAULT_SERVICE_NAME: &str = "strata";

/// The section as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RawTelemetry {
    endpoint: Option<String>,
    protocol: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    sampler: Option<String>,
    sampler_arg: Option<RawRatio>,
    service_name: Option<String>,
    resource_attributes: Option<BTreeMap<String, String>>,
    queue_size: Option<PortValue>,
    timeout_millis: Option<PortValue>,
    traces: Option<bool>,
    metrics: Option<bool>,
    metrics_interval_millis: Option<PortValue>,
}

/// `samplerArg`: a number, or text that may hold `${NAME}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawRatio {
    Number(f64),
    Text(String),
}

impl Telemetry {
    /// Takes the `telemetry:` section out of `raw` and completes it from
    /// the OpenTelemetry variables of `sub`'s environment; `None` when no
    /// endpoint is given or the SDK is turned off.
    pub(super) fn parse<E: Environment + ?Sized>(
        sub: &Substituter<'_, E>,
        raw: &mut RawConfig,
    ) -> Result<Option<Telemetry>, ConfigError> {
        let section = raw.telemetry.take();
        let env = Variables { env: sub.env };
        if env.get("OTEL_SDK_DISABLED")?.is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let section = section.unwrap_or_else(RawTelemetry::empty);
        let protocol = match sub.optional("telemetry.protocol", section.protocol)? {
            Some(text) => protocol("telemetry.protocol", &text)?,
            None => match env.either("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")? {
                Some((name, text)) => protocol(name, &text)?,
                None => OtlpProtocol::HttpProtobuf,
            },
        };
        let base = match sub.optional("telemetry.endpoint", section.endpoint)?.filter(|e| !e.trim().is_empty()) {
            Some(base) => Some(("telemetry.endpoint", url("telemetry.endpoint", base.trim())?)),
            None => env.get("OTEL_EXPORTER_OTLP_ENDPOINT")?.map(|base| ("OTEL_EXPORTER_OTLP_ENDPOINT", base)),
        };
        let traces = match exported(&env, "OTEL_TRACES_EXPORTER", &["none"])? && section.traces != Some(false) {
            false => None,
            true => match signal_endpoint(&env, base.as_ref(), protocol, Signal::Traces)? {
                None => None,
                Some(endpoint) => Some(TraceExport {
                    endpoint,
                    sampler: chosen_sampler(sub, &env, section.sampler, section.sampler_arg)?,
                    queue_size: match section.queue_size {
                        Some(value) => {
                            sub.number("telemetry.queueSize", Some(value), DEFAULT_QUEUE_SIZE, 1..=1_000_000)?
                        }
                        None => env.number("OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_QUEUE_SIZE, 1..=1_000_000)?,
                    },
                }),
            },
        };
        let metrics =
            match exported(&env, "OTEL_METRICS_EXPORTER", &["none", "prometheus"])? && section.metrics != Some(false) {
                false => None,
                true => match signal_endpoint(&env, base.as_ref(), protocol, Signal::Metrics)? {
                    None => None,
                    Some(endpoint) => Some(MetricExport {
                        endpoint,
                        interval_millis: metric_interval(sub, &env, section.metrics_interval_millis)?,
                    }),
                },
            };
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        let headers = headers(sub, &env, section.headers)?;
        let (service_name, resource_attributes) =
            resource(sub, &env, section.service_name, section.resource_attributes)?;
        let timeout_millis = timeout(sub, &env, section.timeout_millis)?;
        Ok(Some(Telemetry { traces, metrics, protocol, headers, service_name, resource_attributes, timeout_millis }))
    }
}

/// The two signals Strata exports.
#[derive(Clone, Copy)]
enum Signal {
    Traces,
    Metrics,
}

/// Whether the `*_EXPORTER` variable `name` leaves the signal's OTLP
/// export on: unset, empty or `otlp`; `off` lists the values that turn
/// it off; any other value is refused.
fn exported<E: Environment + ?Sized>(
    env: &Variables<'_, E>,
    name: &'static str,
    off: &[&str],
) -> Result<bool, ConfigError> {
    match env.get(name)?.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("" | "otlp") => Ok(true),
        Some(value) if off.contains(&value) => Ok(false),
        Some(other) => Err(invalid(name, format!("{other:?} is not otlp or {}", off.join(" or ")))),
    }
}

/// A signal's endpoint: the section's base, else the signal's own
/// variable (taken whole), else `OTEL_EXPORTER_OTLP_ENDPOINT`'s base; none
/// when nothing names one.
fn signal_endpoint<E: Environment + ?Sized>(
    env: &Variables<'_, E>,
    base: Option<&(&'static str, String)>,
    protocol: OtlpProtocol,
    signal: Signal,
) -> Result<Option<String>, ConfigError> {
    let (variable, path) = match signal {
        Signal::Traces => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces"),
        Signal::Metrics => ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics"),
    };
    let whole = match base {
        Some(("telemetry.endpoint", _)) => None,
        _ => env.get(variable)?,
    };
    Ok(match (whole, base) {
        (Some(whole), _) => Some(url(variable, whole.trim())?),
        (None, Some((property, base))) => Some(base_endpoint(property, base, protocol, path)?),
        (None, None) => None,
    })
}

/// The exporter's headers: the variables' (all signals', then traces'),
/// then the section's, each name checked.
fn headers<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    env: &Variables<'_, E>,
    configured: Option<BTreeMap<String, String>>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut headers = BTreeMap::new();
    for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
        if let Some(text) = env.get(name)? {
            headers.extend(pairs(name, &text)?);
        }
    }
    for (name, value) in configured.unwrap_or_default() {
        headers.insert(name, sub.text("telemetry.headers", value)?);
    }
    for name in headers.keys() {
        check_header_name(name)?;
    }
    Ok(headers)
}

/// The service's name (the section's, `OTEL_SERVICE_NAME`, the resource's
/// `service.name`, then the default) and the other resource attributes.
fn resource<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    env: &Variables<'_, E>,
    service_name: Option<String>,
    configured: Option<BTreeMap<String, String>>,
) -> Result<(String, BTreeMap<String, String>), ConfigError> {
    let mut attributes = match env.get("OTEL_RESOURCE_ATTRIBUTES")? {
        Some(text) => pairs("OTEL_RESOURCE_ATTRIBUTES", &text)?,
        None => BTreeMap::new(),
    };
    for (name, value) in configured.unwrap_or_default() {
        attributes.insert(name, sub.text("telemetry.resourceAttributes", value)?);
    }
    let named = attributes.remove("service.name");
    let service_name = match sub.optional("telemetry.serviceName", service_name)? {
        Some(name) => Some(name),
        None => env.get("OTEL_SERVICE_NAME")?,
    }
    .or(named)
    .filter(|name| !name.trim().is_empty())
    .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string());
    Ok((service_name, attributes))
}

/// The sampler: the section's, else `OTEL_TRACES_SAMPLER`, else the
/// default.
fn chosen_sampler<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    env: &Variables<'_, E>,
    configured: Option<String>,
    arg: Option<RawRatio>,
) -> Result<Sampler, ConfigError> {
    match sub.optional("telemetry.sampler", configured)? {
        Some(name) => {
            let arg = match arg {
                None => None,
                Some(RawRatio::Number(n)) => Some(n.to_string()),
                Some(RawRatio::Text(text)) => Some(sub.text("telemetry.samplerArg", text)?),
            };
            sampler(("telemetry.sampler", &name), ("telemetry.samplerArg", arg))
        }
        None => match env.get("OTEL_TRACES_SAMPLER")? {
            Some(name) => sampler(
                ("OTEL_TRACES_SAMPLER", &name),
                ("OTEL_TRACES_SAMPLER_ARG", env.get("OTEL_TRACES_SAMPLER_ARG")?),
            ),
            None => Ok(Sampler::DEFAULT),
        },
    }
}

/// The export's time-out: the section's, else the variables'.
fn timeout<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    env: &Variables<'_, E>,
    timeout_millis: Option<PortValue>,
) -> Result<u64, ConfigError> {
    match timeout_millis {
        Some(value) => sub.number("telemetry.timeoutMillis", Some(value), DEFAULT_TIMEOUT_MILLIS, 1..=60_000),
        None => match env.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")? {
            Some(_) => env.number("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", DEFAULT_TIMEOUT_MILLIS, 1..=60_000),
            None => env.number("OTEL_EXPORTER_OTLP_TIMEOUT", DEFAULT_TIMEOUT_MILLIS, 1..=60_000),
        },
    }
}

/// Milliseconds between two metric exports: the section's, else
/// `OTEL_METRIC_EXPORT_INTERVAL`, else a minute.
fn metric_interval<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    env: &Variables<'_, E>,
    configured: Option<PortValue>,
) -> Result<u64, ConfigError> {
    const RANGE: std::ops::RangeInclusive<i64> = 100..=86_400_000;
    match configured {
        Some(value) => {
            sub.number("telemetry.metricsIntervalMillis", Some(value), DEFAULT_METRIC_INTERVAL_MILLIS, RANGE)
        }
        None => env.number("OTEL_METRIC_EXPORT_INTERVAL", DEFAULT_METRIC_INTERVAL_MILLIS, RANGE),
    }
}

impl RawTelemetry {
    /// No section: every property from the environment.
    fn empty() -> RawTelemetry {
        RawTelemetry {
            endpoint: None,
            protocol: None,
            headers: None,
            sampler: None,
            sampler_arg: None,
            service_name: None,
            resource_attributes: None,
            queue_size: None,
            timeout_millis: None,
            traces: None,
            metrics: None,
            metrics_interval_millis: None,
        }
    }
}

/// The OpenTelemetry variables of an environment; blank counts as unset,
/// as the specification says.
struct Variables<'a, E: Environment + ?Sized> {
    env: &'a E,
}

impl<E: Environment + ?Sized> Variables<'_, E> {
    fn get(&self, name: &'static str) -> Result<Option<String>, ConfigError> {
        match self.env.lookup(name) {
            EnvValue::Set(value) if !value.trim().is_empty() => Ok(Some(value.to_string())),
            EnvValue::Set(_) | EnvValue::Unset => Ok(None),
            EnvValue::NotUnicode => Err(invalid(name, "is not UTF-8")),
        }
    }

    /// The first of two variables that is set, with its name.
    fn either(&self, first: &'static str, second: &'static str) -> Result<Option<(&'static str, String)>, ConfigError> {
        Ok(match self.get(first)? {
            Some(value) => Some((first, value)),
            None => self.get(second)?.map(|value| (second, value)),
        })
    }

    fn number<T: TryFrom<i64> + Copy>(
        &self,
        name: &'static str,
        default: T,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<T, ConfigError> {
        let Some(text) = self.get(name)? else { return Ok(default) };
        let n = text.trim().parse::<i64>().map_err(|_| invalid(name, format!("{text:?} is not a whole number")))?;
        match T::try_from(n) {
            Ok(number) if range.contains(&n) => Ok(number),
            _ => Err(invalid(name, format!("{n} is not between {} and {}", range.start(), range.end()))),
        }
    }
}

fn protocol(property: &'static str, text: &str) -> Result<OtlpProtocol, ConfigError> {
    match text.trim() {
        "grpc" => Ok(OtlpProtocol::Grpc),
        "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
        "http/json" => Err(invalid(property, "http/json is not supported: give http/protobuf or grpc")),
        other => Err(invalid(property, format!("{other:?} is not grpc or http/protobuf"))),
    }
}

/// An `http://` or `https://` URL, as given; user info is refused (the
/// exporters send no credentials from it: an API key goes in `headers`,
/// which are kept secret).
fn url(property: &'static str, text: &str) -> Result<String, ConfigError> {
    let rest = text.strip_prefix("http://").or_else(|| text.strip_prefix("https://"));
    let shown = || crate::migrate::redact::redact_url(text);
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !text.chars().any(char::is_whitespace) => {
            let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
            if authority.contains('@') {
                return Err(invalid(
                    property,
                    format!(
                        "{:?} holds a user name or password, which no exporter sends: give credentials in \
                         telemetry.headers (or OTEL_EXPORTER_OTLP_HEADERS)",
                        shown()
                    ),
                ));
            }
            Ok(text.to_string())
        }
        _ => Err(invalid(property, format!("{:?} is not an http:// or https:// URL", shown()))),
    }
}

/// An endpoint as `GET /v2/config` shows it: its query (where a collector
/// may take a key) masked.
fn shown_endpoint(endpoint: &str) -> String {
    match endpoint.split_once('?') {
        Some((before, _)) => format!("{before}?{}", crate::migrate::redact::MASK),
        None => endpoint.to_string(),
    }
}

/// A base endpoint: with `http/protobuf` the signal's `path` is added to
/// it (`http://collector:4318` → `http://collector:4318/v1/traces`).
fn base_endpoint(
    property: &'static str,
    text: &str,
    protocol: OtlpProtocol,
    path: &str,
) -> Result<String, ConfigError> {
    let base = url(property, text.trim())?;
    Ok(match protocol {
        OtlpProtocol::Grpc => base,
        // The signal's path goes on the path, before a query.
        OtlpProtocol::HttpProtobuf => match base.split_once(['?', '#']) {
            Some((before, _)) => format!("{}{path}{}", before.trim_end_matches('/'), &base[before.len()..]),
            None => format!("{}{path}", base.trim_end_matches('/')),
        },
    })
}

/// `name=value` pairs separated by commas, each part percent-decoded (the
/// W3C Baggage form of `OTEL_EXPORTER_OTLP_HEADERS` and
/// `OTEL_RESOURCE_ATTRIBUTES`).
fn pairs(property: &'static str, text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut found = BTreeMap::new();
    for pair in text.split(',').filter(|pair| !pair.trim().is_empty()) {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(invalid(property, format!("{:?} is not name=value", pair.trim())));
        };
        let name = percent_decoded(property, name.trim())?;
        if name.is_empty() {
            return Err(invalid(property, format!("{:?} has no name", pair.trim())));
        }
        found.insert(name, percent_decoded(property, value.trim())?);
    }
    Ok(found)
}

fn percent_decoded(property: &'static str, text: &str) -> Result<String, ConfigError> {
    let bad = || invalid(property, format!("{text:?} holds a % that is not followed by two hex digits"));
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte != b'%' {
            bytes.push(byte);
            rest = tail;
            continue;
        }
        let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok()).ok_or_else(bad)?;
        bytes.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
        rest = &tail[2..];
    }
    String::from_utf8(bytes).map_err(|_| invalid(property, format!("{text:?} decodes to bytes that are not UTF-8")))
}

/// A header's name: an HTTP token (and for gRPC, metadata keys are such).
fn check_header_name(name: &str) -> Result<(), ConfigError> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(invalid("telemetry.headers", format!("{name:?} is not a header name")));
    }
    Ok(())
}

/// A sampler by its specification name, with its argument where it takes
/// one (a ratio from 0 to 1; 1 when not given).
fn sampler(
    (property, name): (&'static str, &str),
    (arg_property, arg): (&'static str, Option<String>),
) -> Result<Sampler, ConfigError> {
    let ratio = || -> Result<RootSampler, ConfigError> {
        let Some(text) = arg.as_deref().map(str::trim) else {
            return Ok(RootSampler::TraceIdRatio { per_million: 1_000_000 });
        };
        match text.parse::<f64>() {
            Ok(ratio) if (0.0..=1.0).contains(&ratio) => {
                // In range: the product is 0 to 1,000,000.
                Ok(RootSampler::TraceIdRatio { per_million: (ratio * 1_000_000.0).round() as u32 })
            }
            _ => Err(invalid(arg_property, format!("{text:?} is not a ratio from 0 to 1"))),
        }
    };
    let (parent_based, root) = match name.trim() {
        "always_on" => (false, RootSampler::AlwaysOn),
        "always_off" => (false, RootSampler::AlwaysOff),
        "traceidratio" => (false, ratio()?),
        "parentbased_always_on" => (true, RootSampler::AlwaysOn),
        "parentbased_always_off" => (true, RootSampler::AlwaysOff),
        "parentbased_traceidratio" => (true, ratio()?),
        other => {
            return Err(invalid(
                property,
                format!(
                    "{other:?} is not always_on, always_off, traceidratio, parentbased_always_on, \
                     parentbased_always_off or parentbased_traceidratio"
                ),
            ));
        }
    };
    Ok(Sampler { parent_based, root })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::migrate::config::{Config, ConfigError};

    use super::{MetricExport, OtlpProtocol, RootSampler, Sampler, Telemetry, TraceExport};

    const BASE: &str = "driver: sqlite\ndataSource: /tmp/x.db\nbaseLocation: /tmp\nsingleMigrations: [ref]\n";

    fn parsed(section: &str, env: &[(&str, &str)]) -> Result<Option<Telemetry>, ConfigError> {
        let env: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::parse(&format!("{BASE}{section}"), &env).map(|config| config.telemetry)
    }

    fn on(section: &str, env: &[(&str, &str)]) -> Telemetry {
        parsed(section, env).unwrap().expect("telemetry on")
    }

    fn traces(telemetry: &Telemetry) -> &TraceExport {
        telemetry.traces.as_ref().expect("traces exported")
    }

    #[test]
    fn an_endpoints_query_stays_after_the_signals_path_is_masked_when_shown_and_user_info_is_refused() {
        let telemetry = on("telemetry:\n  endpoint: http://collector:4318/base?api_key=K3y\n", &[]);
        assert_eq!(traces(&telemetry).endpoint, "http://collector:4318/base/v1/traces?api_key=K3y");
        assert_eq!(telemetry.metrics.as_ref().unwrap().endpoint, "http://collector:4318/base/v1/metrics?api_key=K3y");
        let shown = serde_saphyr::to_string(&telemetry).unwrap();
        assert!(shown.contains("endpoint: http://collector:4318/base/v1/traces?***"), "{shown}");
        assert!(!shown.contains("K3y"), "{shown}");
        let refused = parsed("telemetry:\n  endpoint: http://user:Pa55@collector:4318\n", &[]).unwrap_err().to_string();
        assert!(refused.contains("holds a user name or password") && !refused.contains("Pa55"), "{refused}");
        let from_env = parsed("", &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://u:Pa55@c/v1/traces")]);
        assert!(from_env.unwrap_err().to_string().contains("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
    }

    #[test]
    fn off_without_an_endpoint_and_when_the_sdk_is_turned_off() {
        assert_eq!(parsed("", &[]).unwrap(), None);
        assert_eq!(parsed("telemetry:\n  sampler: always_on\n", &[]).unwrap(), None);
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        assert_eq!(parsed("", &[endpoint, ("OTEL_SDK_DISABLED", "true")]).unwrap(), None);
        let exporters_off = [endpoint, ("OTEL_TRACES_EXPORTER", "none"), ("OTEL_METRICS_EXPORTER", "none")];
        assert_eq!(parsed("", &exporters_off).unwrap(), None);
        assert_eq!(
            parsed("", &[endpoint, ("OTEL_SDK_DISABLED", "false")]).unwrap().map(|t| traces(&t).queue_size),
            Some(2048)
        );
        let error = parsed("", &[endpoint, ("OTEL_TRACES_EXPORTER", "zipkin")]).unwrap_err().to_string();
        assert!(error.contains("OTEL_TRACES_EXPORTER") && error.contains("zipkin"), "{error}");
    }

    #[test]
    fn the_environment_alone_configures_it_with_the_specifications_defaults() {
        let telemetry = on("", &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")]);
        assert_eq!(traces(&telemetry).endpoint, "http://collector:4318/v1/traces");
        assert_eq!(telemetry.protocol, OtlpProtocol::HttpProtobuf);
        assert_eq!(traces(&telemetry).sampler, Sampler::DEFAULT);
        assert_eq!(telemetry.service_name, "strata");
        assert_eq!((traces(&telemetry).queue_size, telemetry.timeout_millis), (2048, 5000));
        let grpc = on(
            "",
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=a%2Cb,tenant = blue "),
                ("OTEL_RESOURCE_ATTRIBUTES", "service.name=migrator,deployment.environment=prod"),
                ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000"),
            ],
        );
        assert_eq!(traces(&grpc).endpoint, "http://collector:4317");
        assert_eq!(grpc.protocol, OtlpProtocol::Grpc);
        let headers: Vec<(&str, &str)> = grpc.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(headers, [("tenant", "blue"), ("x-api-key", "a,b")]);
        assert_eq!(grpc.service_name, "migrator");
        assert_eq!(grpc.resource_attributes.get("deployment.environment").map(String::as_str), Some("prod"));
        assert!(!grpc.resource_attributes.contains_key("service.name"));
        assert_eq!(
            traces(&grpc).sampler,
            Sampler { parent_based: true, root: RootSampler::TraceIdRatio { per_million: 250_000 } }
        );
        assert_eq!((traces(&grpc).queue_size, grpc.timeout_millis), (100, 2000));
    }

    #[test]
    fn a_traces_endpoint_is_taken_whole_and_the_section_wins_over_the_environment() {
        let whole = on("", &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://otlp.example/custom/path")]);
        assert_eq!(traces(&whole).endpoint, "https://otlp.example/custom/path");
        let section = "telemetry:\n  endpoint: http://mine:4317\n  protocol: grpc\n  serviceName: fleet\n  \
                       headers:\n    authorization: Bearer ${TOKEN}\n  sampler: traceidratio\n  samplerArg: 0.5\n  \
                       resourceAttributes:\n    team: db\n  queueSize: 10\n";
        let telemetry = on(
            section,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://theirs:4318"),
                ("OTEL_SERVICE_NAME", "other"),
                ("OTEL_TRACES_SAMPLER", "always_off"),
                ("OTEL_RESOURCE_ATTRIBUTES", "team=web,region=eu"),
                ("TOKEN", "s3cret"),
            ],
        );
        assert_eq!(traces(&telemetry).endpoint, "http://mine:4317");
        assert_eq!(telemetry.service_name, "fleet");
        assert_eq!(telemetry.headers.get("authorization").map(String::as_str), Some("Bearer s3cret"));
        assert_eq!(
            traces(&telemetry).sampler,
            Sampler { parent_based: false, root: RootSampler::TraceIdRatio { per_million: 500_000 } }
        );
        assert_eq!(telemetry.resource_attributes.get("team").map(String::as_str), Some("db"));
        assert_eq!(telemetry.resource_attributes.get("region").map(String::as_str), Some("eu"));
        assert_eq!(traces(&telemetry).queue_size, 10);
        let shown = serde_json::to_string(&telemetry).unwrap();
        assert!(!shown.contains("s3cret") && shown.contains(r#""authorization":"***""#), "{shown}");
        assert!(shown.contains(r#""sampler":"traceidratio","samplerArg":0.5"#), "{shown}");
    }

    #[test]
    fn bad_values_are_refused_naming_where_they_were_given() {
        let cases = [
            ("telemetry:\n  endpoint: collector:4318\n", vec![], "telemetry.endpoint"),
            ("", vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x")], "OTEL_EXPORTER_OTLP_ENDPOINT"),
            ("telemetry:\n  endpoint: http://c\n  protocol: http/json\n", vec![], "http/json is not supported"),
            ("telemetry:\n  endpoint: http://c\n  sampler: sometimes\n", vec![], "telemetry.sampler"),
            ("telemetry:\n  endpoint: http://c\n  sampler: traceidratio\n  samplerArg: 2\n", vec![], "samplerArg"),
            ("telemetry:\n  endpoint: http://c\n  headers:\n    \"bad name\": x\n", vec![], "telemetry.headers"),
            ("telemetry:\n  endpoint: http://c\n  queueSize: 0\n", vec![], "telemetry.queueSize"),
            ("telemetry:\n  endpoint: http://c\n  colour: red\n", vec![], "colour"),
            (
                "",
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"), ("OTEL_EXPORTER_OTLP_HEADERS", "novalue")],
                "name=value",
            ),
            ("", vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"), ("OTEL_RESOURCE_ATTRIBUTES", "a=%zz")], "two hex"),
            ("", vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"), ("OTEL_BSP_MAX_QUEUE_SIZE", "many")], "OTEL_BSP"),
        ];
        for (section, env, expected) in cases {
            let error = parsed(section, &env).unwrap_err().to_string();
            assert!(error.contains(expected), "{section:?} {env:?}: {error}");
        }
    }

    #[test]
    fn metrics_go_where_traces_go_unless_a_signal_is_turned_off_or_sent_elsewhere() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        let both = on("", &[base]);
        let metrics = MetricExport { endpoint: "http://collector:4318/v1/metrics".into(), interval_millis: 60_000 };
        assert_eq!(both.metrics.as_ref(), Some(&metrics));
        assert_eq!(traces(&both).endpoint, "http://collector:4318/v1/traces");
        // One signal off leaves the other.
        let only_metrics = on("", &[base, ("OTEL_TRACES_EXPORTER", "none")]);
        assert_eq!((only_metrics.traces.is_none(), only_metrics.metrics.as_ref()), (true, Some(&metrics)));
        for off in ["none", "prometheus"] {
            let only_traces = on("", &[base, ("OTEL_METRICS_EXPORTER", off)]);
            assert!(only_traces.metrics.is_none() && only_traces.traces.is_some(), "{off}");
        }
        let section = on("telemetry:\n  endpoint: http://c:4317\n  protocol: grpc\n  traces: false\n", &[]);
        assert_eq!(section.metrics.map(|m| m.endpoint).as_deref(), Some("http://c:4317"));
        assert!(section.traces.is_none());
        let neither = "telemetry:\n  endpoint: http://c\n  traces: false\n  metrics: false\n";
        assert_eq!(parsed(neither, &[]).unwrap(), None);
        // A signal's own endpoint is taken whole, and alone turns on that signal only.
        let own = on("", &[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://m.example/ingest")]);
        assert_eq!((own.traces.is_none(), own.metrics.unwrap().endpoint.as_str()), (true, "https://m.example/ingest"));
        // The interval: the section's, else the variable's.
        let every = |section: &str, env: &[(&str, &str)]| on(section, env).metrics.unwrap().interval_millis;
        assert_eq!(every("", &[base, ("OTEL_METRIC_EXPORT_INTERVAL", "5000")]), 5000);
        let section = "telemetry:\n  metricsIntervalMillis: 250\n";
        assert_eq!(every(section, &[base, ("OTEL_METRIC_EXPORT_INTERVAL", "5000")]), 250);
        let shown = serde_json::to_string(&only_metrics).unwrap();
        assert!(shown.contains(r#""traces":false,"metricsEndpoint":"http://collector:4318/v1/metrics""#), "{shown}");
        assert!(shown.contains(r#""metricsIntervalMillis":60000"#), "{shown}");
        let bad = [
            (vec![base, ("OTEL_METRICS_EXPORTER", "console")], "OTEL_METRICS_EXPORTER"),
            (vec![base, ("OTEL_METRIC_EXPORT_INTERVAL", "10")], "OTEL_METRIC_EXPORT_INTERVAL"),
            (vec![("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "collector:4318")], "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
        ];
        for (env, expected) in bad {
            let error = parsed("", &env).unwrap_err().to_string();
            assert!(error.contains(expected), "{env:?}: {error}");
        }
    }
}
