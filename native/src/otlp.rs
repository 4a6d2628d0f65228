//! What the two OTLP exports — the spans' (`crate::traces`) and the
//! metrics' (`crate::telemetry`) — share: the resource they describe, how
//! their exporters reach a collector over HTTP or gRPC, the thread each
//! exports from, and the handle that asks it to send what it holds.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use strata_core::migrate::config::Telemetry;

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

/// An OTLP/HTTP exporter's builder (spans' or metrics') sending protobuf to
/// `endpoint` with `telemetry`'s headers and time-out.
pub(crate) fn over_http<B: WithExportConfig + WithHttpConfig>(builder: B, telemetry: &Telemetry, endpoint: &str) -> B {
    builder
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_millis(telemetry.timeout_millis))
        .with_headers(telemetry.headers.clone().into_iter().collect())
}

/// An OTLP/gRPC exporter's builder (spans' or metrics') for `endpoint`
/// with `telemetry`'s headers as metadata, its time-out, and TLS trusting
/// the system's roots for an `https://` collector; the error names the
/// header gRPC refuses.
pub(crate) fn over_grpc<B: WithExportConfig + WithTonicConfig>(
    builder: B,
    telemetry: &Telemetry,
    endpoint: &str,
) -> Result<B, String> {
    let mut metadata = axum::http::HeaderMap::new();
    for (name, value) in &telemetry.headers {
        let key = axum::http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("telemetry.headers: {name:?} is not a gRPC metadata key"))?;
        let value = axum::http::HeaderValue::from_str(value)
            .map_err(|_| format!("telemetry.headers: the value of {name:?} is not a gRPC metadata value"))?;
        metadata.insert(key, value);
    }
    let builder = builder
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_millis(telemetry.timeout_millis))
        .with_metadata(opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(metadata));
    Ok(match endpoint.starts_with("https://") {
        true => builder
            .with_tls_config(opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new().with_native_roots()),
        false => builder,
    })
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
