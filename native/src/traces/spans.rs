//! The spans a version makes, one constructor each, so that their names
//! and attributes are written once: version → shard → tenant → file, with
//! lock time-outs, retries and quarantine as events of the tenant's span.
//! Attributes follow OpenTelemetry's database conventions where one fits
//! (`db.system.name`, `db.namespace`), `strata.*` otherwise.

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

/// One unit of a version: a tenant's schema (or the single schemas), its
/// files in one transaction where the engine allows; `files` it runs there.
pub(crate) fn tenant(schema: &str, tenant: bool, driver: Driver, files: usize) -> tracing::Span {
    let name = if tenant { format!("tenant {schema}") } else { format!("schema {schema}") };
    tracing::info_span!(target: TARGET, "tenant", otel.name = name.as_str(), otel.kind = "client",
        strata.tenant = tenant.then_some(schema), db.namespace = schema, db.system.name = system(driver),
        strata.files = files as i64, strata.error.code = Empty)
}

/// One file run in a tenant's unit.
pub(crate) fn file(file: &str, driver: Driver) -> tracing::Span {
    // Names as `&str` (the layer copies them once; `%` would format each).
    tracing::info_span!(target: TARGET, "file", otel.name = file, otel.kind = "client", strata.file = file,
        db.system.name = system(driver), strata.statements = Empty, strata.one_message = Empty,
        strata.error.code = Empty)
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

/// An event on the current span: a statement of `file` gave up waiting
/// for a lock; `retry` the attempt that follows (none: the unit fails),
/// `counted` whether it used up a retry (not when it queued behind the
/// version's own units).
pub(crate) fn lock_timed_out(file: &str, retry: Option<u32>, counted: bool) {
    tracing::warn!(target: TARGET, file, retry = retry.map(i64::from), retry_counted = counted,
        "lock time-out");
}

/// An event on the current span: the sessions that held the lock when the
/// unit gave up (the engine's description of each, its pid first).
pub(crate) fn blocked_by(blockers: &[String]) {
    if !blockers.is_empty() {
        tracing::warn!(target: TARGET, blockers = %blockers.join("; "), "blocked by");
    }
}

/// An event on the current span: the unit's files sent as one message
/// failed without saying where; they run again file by file.
pub(crate) fn message_failed() {
    tracing::info!(target: TARGET, "one message failed: run again file by file");
}

/// An event on `span`: the tenant was quarantined.
pub(crate) fn quarantined(span: &tracing::Span, cause: &str) {
    span.in_scope(|| tracing::warn!(target: TARGET, cause, "quarantined"));
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
