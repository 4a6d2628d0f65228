//! The spans' way out: a queue of `queueSize` spans, emptied by a thread of
//! its own that exports them in batches over OTLP. Written here rather than
//! the SDK's `BatchSpanProcessor` because that one keeps what it drops to
//! itself (one log line at shutdown): here a full queue drops the span at
//! once — a tenant's unit never waits for a collector — and counts it in
//! `svc_http_trace_spans_dropped`, as it counts the spans of an export
//! that failed (a collector down).

use std::time::Duration;

use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _, SpanProcessor};
use strata_core::migrate::config::{OtlpProtocol, Telemetry, TraceExport};
use tokio::sync::mpsc;

/// Spans in one export at most (the specification's default).
const BATCH: usize = 512;
/// How long a span waits for others before its batch leaves.
const LINGER: Duration = Duration::from_secs(1);

/// The processor the tracer provider ends spans into.
#[derive(Debug)]
pub(super) struct Queue {
    spans: mpsc::Sender<SpanData>,
    handle: crate::otlp::Flusher,
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
    let (spans, received) = mpsc::channel(capacity);
    let (handle, flush_requests) = crate::otlp::Flusher::new();
    let telemetry = telemetry.clone();
    let endpoint = traces.endpoint.clone();
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
        export_loop(exporter, received, flush_requests).await;
    })?;
    Ok((Queue { spans, handle: handle.clone() }, handle))
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

/// Why the exporting thread stops gathering spans and sends its batch.
enum Wake {
    /// The batch is full, or its first span waited [`LINGER`].
    Ready,
    /// A flush asks for everything queued, and an answer once it is sent.
    Flush(crate::otlp::FlushRequest),
    /// Every processor (or every handle) is gone: send what is left, stop.
    Closed,
}

/// Exports batches of [`BATCH`] spans, or fewer once the first of them
/// waited [`LINGER`], until every processor is gone; a flush request
/// exports what is queued and answers.
async fn export_loop(
    exporter: SpanExporter,
    mut spans: mpsc::Receiver<SpanData>,
    mut flushes: mpsc::UnboundedReceiver<crate::otlp::FlushRequest>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut failing = false;
    let deadline = tokio::time::sleep(LINGER);
    tokio::pin!(deadline);
    loop {
        let wake = loop {
            tokio::select! {
                span = spans.recv() => match span {
                    Some(span) => {
                        if batch.is_empty() {
                            deadline.as_mut().reset(tokio::time::Instant::now() + LINGER);
                        }
                        batch.push(span);
                        if batch.len() >= BATCH {
                            break Wake::Ready;
                        }
                    }
                    None => break Wake::Closed,
                },
                done = flushes.recv() => break done.map_or(Wake::Closed, Wake::Flush),
                () = &mut deadline, if !batch.is_empty() => break Wake::Ready,
            }
        };
        if !matches!(wake, Wake::Ready) {
            while let Ok(span) = spans.try_recv() {
                batch.push(span);
                if batch.len() >= BATCH {
                    send(&exporter, &mut batch, &mut failing).await;
                }
            }
        }
        send(&exporter, &mut batch, &mut failing).await;
        match wake {
            Wake::Ready => {}
            Wake::Flush(done) => {
                let _ = done.send(());
            }
            Wake::Closed => return,
        }
    }
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
        if self.spans.try_send(span).is_err() {
            crate::telemetry::spans_dropped("queue_full", 1);
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
