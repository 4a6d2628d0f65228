//! The service's metrics: the `metrics` facade with its Prometheus
//! exporter (`/metrics`) and `metrics-process` for `process_*`, and the
//! same series over OTLP when `telemetry:` exports metrics ([`otlp`]).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::body::HttpBody;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use strata_core::migrate::config::Telemetry;
use strata_core::migrate::summary::Counts;

mod otlp;

const VERSIONS_CREATED: &str = "svc_http_versions_created";
const TENANTS_CREATED: &str = "svc_http_tenants_created";
const MIGRATIONS_APPLIED: &str = "svc_http_migrations_applied";
const REQUEST_TOTAL: &str = "svc_http_request_total";
const REQUEST_DURATION: &str = "svc_http_request_duration_seconds";
const REQUEST_SIZE: &str = "svc_http_request_size_bytes";
const RESPONSE_SIZE: &str = "svc_http_response_size_bytes";
const LOCK_TIMEOUTS: &str = "svc_http_lock_timeouts";
const LOCK_RETRIES: &str = "svc_http_lock_retries";
const LOCK_TIMEOUTS_BEHIND_OWN_UNITS: &str = "svc_http_lock_timeouts_behind_own_units";
const TENANTS_QUARANTINED: &str = "svc_http_tenants_quarantined";
const BACKFILL_BATCHES: &str = "svc_http_backfill_batches";
const BACKFILL_ROWS: &str = "svc_http_backfill_rows";
const BACKFILL_THROTTLE_WAITS: &str = "svc_http_backfill_throttle_waits";
const BACKFILL_LAG_PAUSES: &str = "svc_http_backfill_lag_pauses";
const TRACE_SPANS_DROPPED: &str = "svc_http_trace_spans_dropped";
const FLEET_READS: &str = "svc_http_fleet_reads";
const SHARD_UP: &str = "svc_http_shard_up";
const SHARD_VERSIONS: &str = "svc_http_shard_versions_created";
const SHARD_MIGRATIONS: &str = "svc_http_shard_migrations_applied";
const SHARD_FAILURES: &str = "svc_http_shard_failures";
/// The buckets of durations (seconds): 5 ms to a minute.
const SECONDS_BUCKETS: [f64; 13] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
/// The buckets of the `*_size_bytes` histograms: 256 B to 16 MiB, powers
/// of 4 (a GraphQL request is a few hundred bytes, an answer with
/// `contents` up to `contentsBytes`, 8 MiB by default).
const BYTES_BUCKETS: [f64; 9] =
    [256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262_144.0, 1_048_576.0, 4_194_304.0, 16_777_216.0];
const APPLIED_TYPES: [&str; 4] =
    ["single_migrations", "single_scripts", "tenant_migrations_total", "tenant_scripts_total"];

/// The OTLP export of the metrics, once started: exports once more before
/// the server exits.
static OTLP: OnceLock<crate::otlp::Flusher> = OnceLock::new();

/// The buckets of the histogram `name`, for Prometheus and OTLP alike.
fn buckets(name: &str) -> &'static [f64] {
    if name.ends_with("_size_bytes") { &BYTES_BUCKETS } else { &SECONDS_BUCKETS }
}

/// The metrics registry and the process collector.
pub(crate) struct Metrics {
    handle: PrometheusHandle,
    process: metrics_process::Collector,
}

impl Metrics {
    /// Installs the global recorder — Prometheus's, and beside it the OTLP
    /// one when `telemetry` exports metrics — and registers the service's
    /// series at 0.
    pub(crate) fn install(telemetry: Option<&Telemetry>) -> Result<Metrics, String> {
        let prometheus = PrometheusBuilder::new()
            .set_buckets(&SECONDS_BUCKETS)
            .map_err(|e| e.to_string())?
            .set_buckets_for_metric(Matcher::Suffix("_size_bytes".into()), &BYTES_BUCKETS)
            .map_err(|e| e.to_string())?
            .build_recorder();
        let handle = prometheus.handle();
        let process = metrics_process::Collector::default();
        let installed = match telemetry.and_then(|t| Some((t, t.metrics.as_ref()?))) {
            Some((telemetry, export)) => {
                let (otlp, flush) = otlp::start(telemetry, export, buckets, process.clone())?;
                let _ = OTLP.set(flush);
                let both =
                    metrics_util::layers::FanoutBuilder::default().add_recorder(prometheus).add_recorder(otlp).build();
                metrics::set_global_recorder(both).map_err(|e| e.to_string())
            }
            None => metrics::set_global_recorder(prometheus).map_err(|e| e.to_string()),
        };
        installed?;
        metrics::describe_counter!(VERSIONS_CREATED, "Versions created");
        metrics::describe_counter!(TENANTS_CREATED, "Tenants created");
        metrics::describe_counter!(MIGRATIONS_APPLIED, "Migrations and scripts applied, by type");
        metrics::describe_counter!(REQUEST_TOTAL, "HTTP requests, by method, path and status code");
        metrics::describe_histogram!(REQUEST_DURATION, metrics::Unit::Seconds, "HTTP request latency");
        metrics::describe_histogram!(REQUEST_SIZE, metrics::Unit::Bytes, "HTTP request body sizes");
        metrics::describe_histogram!(RESPONSE_SIZE, metrics::Unit::Bytes, "HTTP response body sizes");
        metrics::describe_counter!(LOCK_TIMEOUTS, "Migration statements that gave up waiting for a lock");
        metrics::describe_counter!(LOCK_RETRIES, "Units (or statements) retried after a lock time-out");
        metrics::describe_counter!(
            FLEET_READS,
            "API answers that read every tenant's catalog (drift, desired), by read: a read of their own, or shared"
        );
        metrics::counter!(VERSIONS_CREATED).absolute(0);
        metrics::counter!(LOCK_TIMEOUTS).absolute(0);
        metrics::counter!(LOCK_RETRIES).absolute(0);
        metrics::describe_counter!(
            LOCK_TIMEOUTS_BEHIND_OWN_UNITS,
            "Lock time-outs while the version's other units committed: queued behind them, no retry used up"
        );
        metrics::counter!(LOCK_TIMEOUTS_BEHIND_OWN_UNITS).absolute(0);
        metrics::describe_counter!(TENANTS_QUARANTINED, "Tenants put aside after a failure a version absorbed");
        metrics::counter!(TENANTS_QUARANTINED).absolute(0);
        metrics::counter!(TENANTS_CREATED).absolute(0);
        metrics::describe_counter!(BACKFILL_BATCHES, "Backfill batches committed");
        metrics::describe_counter!(BACKFILL_ROWS, "Rows changed by backfill batches");
        metrics::describe_counter!(
            BACKFILL_THROTTLE_WAITS,
            "Backfill batches that waited for their server's rows-per-second budget"
        );
        metrics::describe_counter!(
            BACKFILL_LAG_PAUSES,
            "Backfill batches that waited while a replica lagged more than backfill.maxReplicaLagSeconds"
        );
        for series in [BACKFILL_BATCHES, BACKFILL_ROWS, BACKFILL_THROTTLE_WAITS, BACKFILL_LAG_PAUSES] {
            metrics::counter!(series).absolute(0);
        }
        metrics::describe_counter!(
            TRACE_SPANS_DROPPED,
            "Trace spans not exported, by reason: queue_full (telemetry.queueSize spans waited) or export_failed"
        );
        for reason in ["queue_full", "export_failed"] {
            metrics::counter!(TRACE_SPANS_DROPPED, "reason" => reason).absolute(0);
        }
        metrics::describe_gauge!(SHARD_UP, "1 when the shard answered its last check or version, else 0");
        metrics::describe_counter!(SHARD_VERSIONS, "Versions created, by shard");
        metrics::describe_counter!(SHARD_MIGRATIONS, "Migrations and scripts applied, by shard and type");
        metrics::describe_counter!(SHARD_FAILURES, "Versions that did not finish on a shard, by shard");
        for kind in APPLIED_TYPES {
            metrics::counter!(MIGRATIONS_APPLIED, "type" => kind).absolute(0);
        }
        process.describe();
        Ok(Metrics { handle, process })
    }

    /// The Prometheus text exposition of every metric.
    pub(crate) fn render(&self) -> String {
        self.process.collect();
        self.handle.render()
    }
}

/// Exports the metrics over OTLP once more, when they are, waiting at most
/// `bound` (the server's last step).
pub(crate) fn flush(bound: Duration) {
    if let Some(otlp) = OTLP.get() {
        otlp.flush(bound);
    }
}

/// Accounts for a migration statement that hit its lock time-out, whether
/// it is retried, and whether it queued behind the version's own units
/// (core's `lock_wait::TimedOut::counts`: no retry used up).
pub(crate) fn lock_timed_out(retried: bool, behind_own_units: bool) {
    metrics::counter!(LOCK_TIMEOUTS).increment(1);
    if retried {
        metrics::counter!(LOCK_RETRIES).increment(1);
    }
    if behind_own_units {
        metrics::counter!(LOCK_TIMEOUTS_BEHIND_OWN_UNITS).increment(1);
    }
}

/// Counts a backfill batch that committed and the rows it changed.
pub(crate) fn backfill_batch(rows: u64) {
    metrics::counter!(BACKFILL_BATCHES).increment(1);
    metrics::counter!(BACKFILL_ROWS).increment(rows);
}

/// Counts a backfill batch that waited for its server's rows-per-second
/// budget.
pub(crate) fn backfill_throttled() {
    metrics::counter!(BACKFILL_THROTTLE_WAITS).increment(1);
}

/// Counts a backfill batch that waited while a replica of its server
/// lagged too far behind.
pub(crate) fn backfill_lag_paused() {
    metrics::counter!(BACKFILL_LAG_PAUSES).increment(1);
}

/// Counts `spans` trace spans that were not exported, and why.
pub(crate) fn spans_dropped(reason: &'static str, spans: u64) {
    metrics::counter!(TRACE_SPANS_DROPPED, "reason" => reason).increment(spans);
}

/// An API answer of `read` (`drift`, `desired`) that read every tenant's
/// catalog, or (`shared`) was answered by another request's read.
pub(crate) fn fleet_read(read: &'static str, shared: bool) {
    let answer = if shared { "shared" } else { "read" };
    metrics::counter!(FLEET_READS, "read" => read, "answer" => answer).increment(1);
}

/// Counts a tenant put in quarantine.
pub(crate) fn tenant_quarantined() {
    metrics::counter!(TENANTS_QUARANTINED).increment(1);
}

/// Accounts for a committed version. `executed` is false for Sync, which
/// records migrations without applying them.
pub(crate) fn record_version(counts: &Counts, executed: bool, tenant_created: bool) {
    metrics::counter!(VERSIONS_CREATED).increment(1);
    if tenant_created {
        metrics::counter!(TENANTS_CREATED).increment(1);
    }
    if executed {
        for (kind, value) in applied(counts) {
            metrics::counter!(MIGRATIONS_APPLIED, "type" => kind).increment(value);
        }
    }
}

/// What a version applied, by the `type` label of the applied counters.
fn applied(counts: &Counts) -> impl Iterator<Item = (&'static str, u64)> {
    let values =
        [counts.single_migrations, counts.single_scripts, counts.tenant_migrations_total, counts.tenant_scripts_total];
    APPLIED_TYPES.into_iter().zip(values)
}

/// Whether a shard answered (`/health`, or a version over it).
pub(crate) fn shard_up(shard: &str, up: bool) {
    metrics::gauge!(SHARD_UP, "shard" => shard.to_string()).set(if up { 1.0 } else { 0.0 });
}

/// Accounts for one shard's part of a version: created (`counts`, applied
/// when `executed`) or failed (`None`).
pub(crate) fn shard_version(shard: &str, counts: Option<&Counts>, executed: bool) {
    let label = ("shard", shard.to_string());
    let Some(counts) = counts else {
        metrics::counter!(SHARD_FAILURES, &[label]).increment(1);
        return;
    };
    metrics::counter!(SHARD_VERSIONS, std::slice::from_ref(&label)).increment(1);
    if executed {
        for (kind, value) in applied(counts) {
            metrics::counter!(SHARD_MIGRATIONS, &[label.clone(), ("type", kind.to_string())]).increment(value);
        }
    }
}

/// The `method` label: one of the methods of RFC 9110, else `OTHER`, so
/// made-up methods cannot grow the metrics without bound.
fn method_label(method: &axum::http::Method) -> &'static str {
    const KNOWN: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];
    KNOWN.into_iter().find(|known| *known == method.as_str()).unwrap_or("OTHER")
}

/// Middleware recording `svc_http_request_*` and `svc_http_response_*`.
pub(crate) async fn http_metrics(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method()).to_string();
    let path =
        request.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let request_size = request.body().size_hint().exact();
    let response = next.run(request).await;
    let labels = [("method", method), ("path", path), ("code", response.status().as_u16().to_string())];
    metrics::counter!(REQUEST_TOTAL, &labels).increment(1);
    metrics::histogram!(REQUEST_DURATION, &labels).record(started.elapsed().as_secs_f64());
    if let Some(size) = request_size {
        metrics::histogram!(REQUEST_SIZE, &labels).record(size as f64);
    }
    if let Some(size) = response.body().size_hint().exact() {
        metrics::histogram!(RESPONSE_SIZE, &labels).record(size as f64);
    }
    response
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::method_label;

    #[test]
    fn made_up_methods_share_one_label() {
        assert_eq!(method_label(&Method::POST), "POST");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        assert_eq!(method_label(&Method::from_bytes(b"FOO1").unwrap()), "OTHER");
        assert_eq!(method_label(&Method::from_bytes(b"get").unwrap()), "OTHER");
    }
}
