//! W3C Trace Context in: a request's `traceparent` and `tracestate`
//! headers, a command's `TRACEPARENT` and `TRACESTATE` variables (what CI
//! systems and `otel-cli` set), read by the SDK's propagator.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Makes `span` (not yet entered) continue the caller's trace of
/// `traceparent` and `tracestate`; a missing or malformed `traceparent`
/// leaves it the root of a trace of its own.
pub(crate) fn continue_trace(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(traceparent) = traceparent.filter(|_| !span.is_disabled()) else { return };
    // A span already started: nothing to continue.
    let _ = span.set_parent(context_of(traceparent, tracestate));
}

/// The context a `traceparent` (and `tracestate`) names, read by the SDK's
/// propagator; a malformed one gives a context without a valid span.
fn context_of(traceparent: &str, tracestate: Option<&str>) -> opentelemetry::Context {
    let mut carrier = HashMap::with_capacity(2);
    carrier.insert("traceparent".to_string(), traceparent.trim().to_string());
    if let Some(tracestate) = tracestate {
        carrier.insert("tracestate".to_string(), tracestate.trim().to_string());
    }
    TraceContextPropagator::new().extract(&carrier)
}

/// [`continue_trace`] from a command's environment.
pub(crate) fn continue_from_environment(span: &tracing::Span) {
    let traceparent = std::env::var("TRACEPARENT").ok();
    let tracestate = std::env::var("TRACESTATE").ok();
    continue_trace(span, traceparent.as_deref(), tracestate.as_deref());
}

/// The W3C `traceparent` of the current context (empty when it is not
/// exported): what a rollout keeps of the request that started or
/// approved it.
pub(crate) fn current_traceparent() -> String {
    let context = opentelemetry::Context::current();
    if !context.span().span_context().is_valid() {
        return String::new();
    }
    let mut carrier = HashMap::with_capacity(2);
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove("traceparent").unwrap_or_default()
}

/// Links `span` to the span of `traceparent` (a request that caused it,
/// in a trace of its own); a malformed one is ignored.
pub(crate) fn link(span: &tracing::Span, traceparent: &str) {
    let linked = context_of(traceparent, None).span().span_context().clone();
    if linked.is_valid() {
        span.add_link(linked);
    }
}
