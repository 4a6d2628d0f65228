//! The spans' way out: a queue of `queueSize` spans, emptied by a thread of
//! its own that exports them in batches over OTLP. Written here rather than
//! the SDK's `BatchSpanProcessor` because that one keeps what it drops to
//! itself (one log line at shutdown): here a full queue drops the span at
//! once — a tenant's unit never waits for a collector — and counts it in
//! `svc_http_trace_spans_dropped`, as it counts the spans of an export
//! that failed (a collector down).
//!
//! The spans wait in a plain buffer, and the exporting thread is woken only
//! when a batch starts (its linger begins) and when one is full: a wake-up
//! per span (a channel's) was an `eventfd` write and a thread switch each,
//! 5.6 % of a traced version's processor samples on the thread that runs
//! the units.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _, SpanProcessor};
use strata_core::migrate::config::{OtlpProtocol, Telemetry, TraceExport};
use tokio::sync::{Notify, mpsc};

/// Spans in one export at most (the specification's default).
const BATCH: usize = 512;
/// How long a span waits for others before its batch leaves.
const LINGER: Duration = Duration::from_secs(1);

/// The processor the tracer provider ends spans into.
#[derive(Debug)]
pub(super) struct Queue {
    shared: Arc<Shared>,
    handle: crate::otlp::Flusher,
}

/// What the processor and the exporting thread share.
#[derive(Debug)]
struct Shared {
    /// The spans not taken yet, at most `capacity`.
    pending: Mutex<Vec<SpanData>>,
    capacity: usize,
    /// Wakes the exporting thread: a batch's first span, a full batch, the
    /// processor gone.
    wake: Notify,
    /// The processor is gone: send what is left, stop.
    closed: AtomicBool,
}

impl Shared {
    fn pending(&self) -> usize {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn take(&self) -> Vec<SpanData> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Starts the exporting thread for `telemetry`, its spans' `resource`
/// given to the exporter (the SDK gives it to processors): the processor, and the
/// handle that flushes it. The error (an endpoint the exporter refuses)
/// is one line.
pub(super) fn start(
    telemetry: &Telemetry,
    traces: &TraceExport,
    resource: Resource,
) -> Result<(Queue, crate::otlp::Flusher), String> {
    let capacity = usize::try_from(traces.queue_size).unwrap_or(usize::MAX).max(1);
    let shared = Arc::new(Shared {
        pending: Mutex::new(Vec::new()),
        capacity,
        wake: Notify::new(),
        closed: AtomicBool::new(false),
    });
    let (handle, flush_requests) = crate::otlp::Flusher::new();
    let telemetry = telemetry.clone();
    let endpoint = traces.endpoint.clone();
    let exported = shared.clone();
    crate::otlp::exporting_thread("otlp-export", "trace exporter", move |ready| async move {
        let exporter = match exporter(&telemetry, &endpoint) {
            Ok(mut exporter) => {
                exporter.set_resource(&resource);
                exporter
            }
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        export_loop(exporter, exported, flush_requests).await;
    })?;
    Ok((Queue { shared, handle: handle.clone() }, handle))
}

/// The OTLP exporter of spans to `endpoint` that `telemetry` describes.
fn exporter(telemetry: &Telemetry, endpoint: &str) -> Result<SpanExporter, String> {
    let built = match telemetry.protocol {
        OtlpProtocol::HttpProtobuf => {
            crate::otlp::over_http(SpanExporter::builder().with_http(), telemetry, endpoint).build()
        }
        OtlpProtocol::Grpc => {
            crate::otlp::over_grpc(SpanExporter::builder().with_tonic(), telemetry, endpoint)?.build()
        }
    };
    built.map_err(|e| format!("telemetry: the OTLP exporter refuses {endpoint}: {e}"))
}

/// Why the exporting thread sends what is pending.
enum Wake {
    /// A batch is full, or its first span waited [`LINGER`].
    Ready,
    /// A flush asks for everything pending, and an answer once it is sent.
    Flush(crate::otlp::FlushRequest),
    /// The processor (or every flush handle) is gone: send what is left, stop.
    Closed,
}

/// Exports batches of [`BATCH`] spans, or fewer once the first of them
/// waited [`LINGER`], until the processor is gone; a flush request exports
/// what is pending and answers.
async fn export_loop(
    exporter: SpanExporter,
    shared: Arc<Shared>,
    mut flushes: mpsc::UnboundedReceiver<crate::otlp::FlushRequest>,
) {
    let mut failing = false;
    loop {
        let wake = next_wake(&shared, &mut flushes).await;
        let spans = shared.take();
        let mut spans = spans.into_iter().peekable();
        while spans.peek().is_some() {
            let mut batch: Vec<SpanData> = spans.by_ref().take(BATCH).collect();
            send(&exporter, &mut batch, &mut failing).await;
        }
        match wake {
            Wake::Ready => {}
            Wake::Flush(done) => {
                let _ = done.send(());
            }
            Wake::Closed => return,
        }
    }
}

/// Waits until spans are pending, then until a batch is full or the first
/// waited [`LINGER`]; or a flush, or the end.
async fn next_wake(shared: &Shared, flushes: &mut mpsc::UnboundedReceiver<crate::otlp::FlushRequest>) -> Wake {
    let flushed = |request: Option<crate::otlp::FlushRequest>| request.map_or(Wake::Closed, Wake::Flush);
    while shared.pending() == 0 {
        if shared.closed.load(Ordering::SeqCst) {
            return Wake::Closed;
        }
        tokio::select! {
            () = shared.wake.notified() => {}
            request = flushes.recv() => return flushed(request),
        }
    }
    let deadline = tokio::time::Instant::now() + LINGER;
    while shared.pending() < BATCH {
        if shared.closed.load(Ordering::SeqCst) {
            return Wake::Closed;
        }
        tokio::select! {
            () = shared.wake.notified() => {}
            () = tokio::time::sleep_until(deadline) => return Wake::Ready,
            request = flushes.recv() => return flushed(request),
        }
    }
    Wake::Ready
}

/// Exports `batch` (emptied); a failed export's spans are counted as
/// dropped, and the failure logged when exports start failing.
async fn send(exporter: &SpanExporter, batch: &mut Vec<SpanData>, failing: &mut bool) {
    if batch.is_empty() {
        return;
    }
    let spans = std::mem::take(batch);
    let count = spans.len();
    match exporter.export(spans).await {
        Ok(()) => {
            if *failing {
                tracing::info!("traces are exported again");
            }
            *failing = false;
        }
        Err(e) => {
            crate::telemetry::spans_dropped("export_failed", count as u64);
            if !*failing {
                tracing::warn!(error = %e, spans = count,
                    "traces could not be exported: spans are dropped (and counted) until the collector answers");
            }
            *failing = true;
        }
    }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        let pending = {
            let mut pending = self.shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            if pending.len() >= self.shared.capacity {
                drop(pending);
                crate::telemetry::spans_dropped("queue_full", 1);
                return;
            }
            pending.push(span);
            pending.len()
        };
        if pending == 1 || pending % BATCH == 0 {
            self.shared.wake.notify_one();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.handle.flush(Duration::from_secs(5));
        Ok(())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.handle.flush(timeout);
        Ok(())
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.wake.notify_one();
    }
}
