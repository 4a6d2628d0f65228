//! Traces over OTLP (and the resource and gRPC settings the metrics'
//! export shares, `crate::telemetry::otlp`): the request, version, shard, tenant and file spans are
//! `tracing` spans of target [`TARGET`], made OpenTelemetry spans by
//! `tracing-opentelemetry` and exported by `opentelemetry-otlp` from a
//! bounded queue ([`queue`]). Core decides whether and how
//! (`Config::telemetry`); off, no layer is installed and the spans are
//! never even built (the log's filter turns [`TARGET`] off).

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler as SdkSampler, SdkTracerProvider};
use strata_core::migrate::config::{RootSampler, Sampler, Telemetry};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;

pub(crate) mod context;
mod queue;
pub(crate) mod spans;

/// The target of the spans (and span events) that are exported, and only
/// exported: the log does not show them.
pub(crate) const TARGET: &str = "strata_otel";

/// The exporting queue, once started: flushed before a command exits.
static QUEUE: OnceLock<Flusher> = OnceLock::new();

/// The OpenTelemetry layer for `telemetry` (none when it is off), its
/// exporter started on a thread of its own. The error is one line.
pub(crate) fn layer<S>(telemetry: Option<&Telemetry>) -> Result<Option<Box<dyn Layer<S> + Send + Sync>>, String>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span> + Send + Sync,
{
    let Some((telemetry, traces)) = telemetry.and_then(|t| Some((t, t.traces.as_ref()?))) else { return Ok(None) };
    let resource = resource(telemetry);
    let (processor, handle) = queue::start(telemetry, traces, resource.clone())?;
    let _ = QUEUE.set(handle);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(sampler(traces.sampler))
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("strata");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_location(false)
        .with_target(false)
        .with_level(false)
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE));
    Ok(Some(Box::new(layer)))
}

/// The resource every exported span and metric describes: the service's
/// name and version and the configured attributes.
pub(crate) fn resource(telemetry: &Telemetry) -> Resource {
    let mut attributes = vec![
        KeyValue::new("service.name", telemetry.service_name.clone()),
        KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
    ];
    attributes.extend(telemetry.resource_attributes.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())));
    Resource::builder_empty().with_attributes(attributes).build()
}

/// `telemetry.headers` as the gRPC metadata of every export; the error
/// names the header gRPC refuses.
pub(crate) fn grpc_metadata(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<opentelemetry_otlp::tonic_types::metadata::MetadataMap, String> {
    let mut map = axum::http::HeaderMap::new();
    for (name, value) in headers {
        let key = axum::http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("telemetry.headers: {name:?} is not a gRPC metadata key"))?;
        let value = axum::http::HeaderValue::from_str(value)
            .map_err(|_| format!("telemetry.headers: the value of {name:?} is not a gRPC metadata value"))?;
        map.insert(key, value);
    }
    Ok(opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(map))
}

/// Runs `work` on a thread named `name` with a runtime of its own (the
/// exporters' clients need one). `work` first makes what it needs and
/// sends it, or why it could not, through `ready` — what this returns —
/// then exports until its handles are gone. The error is one line.
pub(crate) fn exporting_thread<T, W, F>(name: &str, what: &str, work: W) -> Result<T, String>
where
    T: Send + 'static,
    W: FnOnce(std::sync::mpsc::Sender<Result<T, String>>) -> F + Send + 'static,
    F: Future<Output = ()>,
{
    let (ready, started) = std::sync::mpsc::channel();
    let failed = format!("cannot start the {what}");
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime.block_on(work(ready)),
            Err(e) => {
                let _ = ready.send(Err(format!("{failed}: {e}")));
            }
        })
        .map_err(|e| format!("cannot start the {what}: {e}"))?;
    started.recv().map_err(|_| format!("the {what} stopped as it started"))?
}

/// A flush request: answered once what was asked for is sent.
pub(crate) type FlushRequest = std::sync::mpsc::Sender<()>;

/// What asks an exporting thread to send what it holds now.
#[derive(Debug, Clone)]
pub(crate) struct Flusher {
    requests: tokio::sync::mpsc::UnboundedSender<FlushRequest>,
}

impl Flusher {
    /// A flusher, and the requests its exporting thread answers.
    pub(crate) fn new() -> (Flusher, tokio::sync::mpsc::UnboundedReceiver<FlushRequest>) {
        let (requests, received) = tokio::sync::mpsc::unbounded_channel();
        (Flusher { requests }, received)
    }

    /// Waits, at most `bound`, until the exporting thread has sent what it
    /// held when asked (or dropped it).
    pub(crate) fn flush(&self, bound: Duration) {
        let (done, finished) = std::sync::mpsc::channel();
        if self.requests.send(done).is_ok() {
            let _ = finished.recv_timeout(bound);
        }
    }
}

/// TLS for an `https://` gRPC collector, trusting the system's roots.
pub(crate) fn grpc_tls() -> opentelemetry_otlp::tonic_types::transport::ClientTlsConfig {
    opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new().with_native_roots()
}

fn sampler(sampler: Sampler) -> SdkSampler {
    let root = match sampler.root {
        RootSampler::AlwaysOn => SdkSampler::AlwaysOn,
        RootSampler::AlwaysOff => SdkSampler::AlwaysOff,
        RootSampler::TraceIdRatio { .. } => SdkSampler::TraceIdRatioBased(sampler.ratio()),
    };
    match sampler.parent_based {
        true => SdkSampler::ParentBased(Box::new(root)),
        false => root,
    }
}

/// Sends the spans still queued, waiting at most `bound` (a command's
/// last step: it never hangs on a collector that does not answer).
pub(crate) fn flush(bound: Duration) {
    if let Some(queue) = QUEUE.get() {
        queue.flush(bound);
    }
}

/// The trace id of `span` (32 hex digits), when it is exported and sampled.
pub(crate) fn trace_id(span: &tracing::Span) -> Option<String> {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    (span_context.is_valid() && span_context.is_sampled()).then(|| span_context.trace_id().to_string())
}

/// Marks `span` failed with `code` (OpenTelemetry's status ERROR).
pub(crate) fn failed(span: &tracing::Span, code: &str) {
    span.set_status(opentelemetry::trace::Status::error(code.to_string()));
}
