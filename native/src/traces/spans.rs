//! The spans a version makes, one constructor each, so that their names
//! and attributes are written once: version → shard → tenant → file, with
//! lock time-outs, retries and quarantine as events of the tenant's or
//! file's span. Attributes follow OpenTelemetry's database conventions
//! where one fits (`db.system.name`, `db.namespace`), `strata.*` otherwise.
//!
//! The version, shard and backfill spans are `tracing` spans (the layer
//! makes them OpenTelemetry's). A unit's and a file's — a 10,000-tenant
//! version makes 10,000 and 200,000 of them — are the SDK's own spans,
//! made by its tracer directly in an OpenTelemetry [`Context`] ([`Otel`])
//! that the unit's future carries: through the layer, each was a span of
//! `tracing`'s registry as well (its slot, extensions, attribute visitor,
//! an enter and exit through every layer at each poll), about half of
//! what a traced version cost the process (BENCHMARKS.md).
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use strata_core::migrate::driver::Driver;
use strata_core::migrate::plan::Action;
use tracing::field::Empty;

use crate::traces::TARGET;

/// A version (`createVersion`, `createTenant`, a wave, a retry, a revert).
pub(crate) fn version(name: &str, operation: &str, action: Action, dry_run: bool) -> tracing::Span {
    tracing::info_span!(target: TARGET, "version",
        otel.name = %format!("{operation} {name}"), strata.version.name = name, strata.operation = operation,
        strata.action = ?action, strata.dry_run = dry_run, strata.version.id = Empty,
        strata.migrations = Empty, strata.scripts = Empty, strata.tenants.quarantined = Empty,
        strata.tenants.waiting_on_backfills = Empty, strata.error.code = Empty)
}

/// Records what the version of `span` did.
pub(crate) fn version_done(
    span: &tracing::Span,
    id: Option<i64>,
    migrations: u64,
    scripts: u64,
    quarantined: usize,
    waiting: usize,
) {
    if let Some(id) = id {
        span.record("strata.version.id", id);
    }
    // As integers (OTLP's intValue): the layer sends unsigned values as text.
    span.record("strata.migrations", migrations as i64);
    span.record("strata.scripts", scripts as i64);
    span.record("strata.tenants.quarantined", quarantined as i64);
    span.record("strata.tenants.waiting_on_backfills", waiting as i64);
}

/// Marks the version of `span` failed with the API's error `code`.
pub(crate) fn version_failed(span: &tracing::Span, code: &str) {
    span.record("strata.error.code", code);
    crate::traces::failed(span, code);
}

/// One shard's part of a version.
pub(crate) fn shard(name: &str) -> tracing::Span {
    tracing::info_span!(target: TARGET, "shard", otel.name = %format!("shard {name}"), strata.shard = name)
}

/// A unit's or a file's span: the context that holds it (what the unit's
/// or file's future carries, and its files' spans are children of). `None`
/// when traces are off: nothing is built.
pub(crate) type Otel = Option<Context>;

/// The parent of the units' spans: the current context (the shard's, or
/// the version's); `None` when traces are off.
pub(crate) fn units_parent() -> Otel {
    crate::traces::tracer()?;
    Some(Context::current())
}

/// One unit of a version: a tenant's schema (or the single schemas), its
/// files in one transaction where the engine allows; `files` it runs there.
pub(crate) fn tenant(parent: Option<&Context>, schema: &str, tenant: bool, driver: Driver, files: usize) -> Otel {
    let (tracer, parent) = (crate::traces::tracer()?, parent?);
    let name = if tenant { format!("tenant {schema}") } else { format!("schema {schema}") };
    let mut attributes = Vec::with_capacity(4);
    if tenant {
        attributes.push(KeyValue::new("strata.tenant", schema.to_string()));
    }
    attributes.push(KeyValue::new("db.namespace", schema.to_string()));
    attributes.push(KeyValue::new("db.system.name", system(driver)));
    attributes.push(KeyValue::new("strata.files", files as i64));
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Client)
        .with_attributes(attributes)
        .start_with_context(tracer, parent);
    Some(parent.with_span(span))
}

/// One file run in a tenant's unit, a child of the current context's span
/// (its unit's); `statements` counted only when traces are on;
/// `one_message` when it went with the unit's other files in one round
/// trip (their spans share its time).
pub(crate) fn file(file: &str, driver: Driver, statements: impl FnOnce() -> usize, one_message: bool) -> Otel {
    let tracer = crate::traces::tracer()?;
    let mut attributes = Vec::with_capacity(4);
    attributes.push(KeyValue::new("strata.file", file.to_string()));
    attributes.push(KeyValue::new("db.system.name", system(driver)));
    attributes.push(KeyValue::new("strata.statements", statements() as i64));
    if one_message {
        attributes.push(KeyValue::new("strata.one_message", true));
    }
    let builder = tracer.span_builder(file.to_string()).with_kind(SpanKind::Client).with_attributes(attributes);
    Some(Context::map_current(|parent| parent.with_span(builder.start_with_context(tracer, parent))))
}

/// Marks the unit's or file's span of `cx` failed with `code`, `message`
/// its event.
pub(crate) fn unit_failed(cx: &Context, code: &str, message: &str) {
    let span = cx.span();
    span.set_attribute(KeyValue::new("strata.error.code", code.to_string()));
    span.set_status(Status::error(code.to_string()));
    span.add_event(
        "failed",
        vec![KeyValue::new("code", code.to_string()), KeyValue::new("message", message.to_string())],
    );
}

/// An event on the current context's span (a unit's or a file's), when
/// there is one.
fn event(name: &'static str, attributes: impl FnOnce() -> Vec<KeyValue>) {
    Context::map_current(|cx| {
        if cx.has_active_span() {
            cx.span().add_event(name, attributes());
        }
    });
}

/// One tenant's backfill of one file, run after its version (a trace of
/// its own): each committed batch an event, not a span.
pub(crate) fn backfill(schema: &str, file: &str, version_id: i64, driver: Driver) -> tracing::Span {
    tracing::info_span!(target: TARGET, "backfill", otel.name = %format!("backfill {schema} {file}"),
        otel.kind = "client", strata.tenant = schema, db.namespace = schema, db.system.name = system(driver),
        strata.file = file, strata.version.id = version_id, strata.backfill.ended = Empty,
        strata.error.code = Empty)
}

/// An event on the current (backfill) span: a batch committed.
pub(crate) fn backfill_batch(rows: u64, millis: u128) {
    tracing::info!(target: TARGET, rows = rows as i64, millis = millis as i64, "batch");
}

/// Records how the backfill of `span` ended in this runner (`done`,
/// `released`, `failed`, `stopped`), with the failure's code and message.
pub(crate) fn backfill_ended(span: &tracing::Span, how: &str, failure: Option<(&str, &str)>) {
    span.record("strata.backfill.ended", how);
    if let Some((code, message)) = failure {
        failed(span, code, message);
    }
}

/// Marks the unit's or file's `span` failed with `code`, `message` its
/// event.
pub(crate) fn failed(span: &tracing::Span, code: &str, message: &str) {
    span.record("strata.error.code", code);
    crate::traces::failed(span, code);
    span.in_scope(|| tracing::error!(target: TARGET, code, message, "failed"));
}

/// An event on the current span (a file's): a statement of `file` gave up
/// waiting for a lock; `retry` the attempt that follows (none: the unit
/// fails), `counted` whether it used up a retry (not when it queued behind
/// the version's own units).
pub(crate) fn lock_timed_out(file: &str, retry: Option<u32>, counted: bool) {
    event("lock time-out", || {
        let mut attributes = vec![KeyValue::new("file", file.to_string())];
        if let Some(retry) = retry {
            attributes.push(KeyValue::new("retry", i64::from(retry)));
        }
        attributes.push(KeyValue::new("retry_counted", counted));
        attributes
    });
}

/// An event on the current span (a file's): the sessions that held the
/// lock when the unit gave up (the engine's description of each, its pid
/// first).
pub(crate) fn blocked_by(blockers: &[String]) {
    if !blockers.is_empty() {
        event("blocked by", || vec![KeyValue::new("blockers", blockers.join("; "))]);
    }
}

/// An event on the current span (a unit's): its files sent as one message
/// failed without saying where; they run again file by file.
pub(crate) fn message_failed() {
    event("one message failed: run again file by file", Vec::new);
}

/// An event on the unit's span of `cx`: the tenant was quarantined.
pub(crate) fn quarantined(cx: &Context, cause: &str) {
    cx.span().add_event("quarantined", vec![KeyValue::new("cause", cause.to_string())]);
}

/// `db.system.name` of `driver` (OpenTelemetry's well-known values).
fn system(driver: Driver) -> &'static str {
    match driver {
        Driver::Postgres => "postgresql",
        Driver::Mysql => "mysql",
        Driver::Sqlite => "sqlite",
        Driver::SqlServer => "microsoft.sql_server",
    }
}
