//! Traces over OTLP: the request, version, shard and backfill spans are
//! `tracing` spans of target [`TARGET`], made OpenTelemetry spans by
//! `tracing-opentelemetry`; the units' and files' (thousands a version)
//! are the SDK's, made by its tracer directly ([`spans`]); all exported by
//! `opentelemetry-otlp` from a bounded queue ([`queue`]). Core decides whether and how
//! (`Config::telemetry`); off, no layer is installed and the spans are
//! never even built (the log's filter turns [`TARGET`] off).

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use opentelemetry_sdk::trace::{Sampler as SdkSampler, SdkTracer, SdkTracerProvider};
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
static QUEUE: OnceLock<crate::otlp::Flusher> = OnceLock::new();

/// The tracer of the layer, once traces are on: the units' and files'
/// spans are made with it directly ([`spans::tenant`], [`spans::file`]).
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// The tracer, when traces are on.
pub(crate) fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get()
}

/// `work` with `cx` (a unit's or file's span) as its current context at
/// each poll; as it is when traces are off.
pub(crate) async fn within<T>(cx: Option<opentelemetry::Context>, work: impl Future<Output = T>) -> T {
    match cx {
        Some(cx) => work.with_context(cx).await,
        None => work.await,
    }
}

/// `work` within the exported `span` (a command's, a request's, a
/// version's, a shard's): the span's OpenTelemetry context is the current
/// one at each poll — what the spans made inside take as their parent, and
/// [`current_trace_id`] reads. Not entered as a `tracing` span: a version's
/// future is polled at each round trip of each of its units, and each
/// entry and exit of an exported span went through the registry and every
/// layer (the layer reading the clock at each exit). As it is when the span
/// is not exported.
pub(crate) async fn in_span<T>(span: &tracing::Span, work: impl Future<Output = T>) -> T {
    within((!span.is_disabled()).then(|| span.context()), work).await
}

/// `work` (a task to spawn) within the context current here, when traces
/// are on.
pub(crate) fn carried<T>(work: impl Future<Output = T>) -> impl Future<Output = T> {
    within(tracer().map(|_| opentelemetry::Context::current()), work)
}

/// The trace id of the current context (32 hex digits), when it is
/// exported and sampled.
pub(crate) fn current_trace_id() -> Option<String> {
    tracer()?;
    opentelemetry::Context::map_current(|context| {
        let span_context = context.span().span_context().clone();
        (span_context.is_valid() && span_context.is_sampled()).then(|| span_context.trace_id().to_string())
    })
}

/// The OpenTelemetry layer for `telemetry` (none when it is off), its
/// exporter started on a thread of its own. The error is one line.
pub(crate) fn layer<S>(telemetry: Option<&Telemetry>) -> Result<Option<Box<dyn Layer<S> + Send + Sync>>, String>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span> + Send + Sync,
{
    let Some((telemetry, traces)) = telemetry.and_then(|t| Some((t, t.traces.as_ref()?))) else { return Ok(None) };
    let resource = crate::otlp::resource(telemetry);
    let (processor, handle) = queue::start(telemetry, traces, resource.clone())?;
    let _ = QUEUE.set(handle);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(sampler(traces.sampler))
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("strata");
    let _ = TRACER.set(tracer.clone());
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_tracked_inactivity(false)
        // Nothing here reads OpenTelemetry's current context (spans find
        // their parents through tracing's, and `set_parent`): attaching it
        // at every poll of an instrumented future was the layer's largest
        // cost in a profile of a traced 3,000-tenant version.
        .with_context_activation(false)
        .with_threads(false)
        .with_location(false)
        .with_target(false)
        .with_level(false)
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE));
    Ok(Some(Box::new(layer)))
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
