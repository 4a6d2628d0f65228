//! The service's metrics over OTLP: a `metrics` recorder that records into
//! OpenTelemetry instruments of the same names as `/metrics` (counters as
//! cumulative sums, gauges, histograms with the same buckets), installed
//! beside the Prometheus recorder, and a thread of its own that collects
//! them every `metricsIntervalMillis` and exports them. A collector that
//! is down costs an export, logged once until one succeeds again; a
//! request never waits for one.
//!
//! The bridge is written here: the `metrics`-to-OpenTelemetry crates
//! (`metrics-exporter-otel`, `metrics-exporter-opentelemetry`) are built on
//! older OpenTelemetry releases than the traces' exporter, and would bring
//! a second copy of the SDK.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use metrics::{Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, SharedString, Unit};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Meter, MeterProvider as _};
use opentelemetry_otlp::MetricExporter;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality};
use strata_core::migrate::config::{MetricExport, OtlpProtocol, Telemetry};
use tokio::sync::mpsc;

/// Starts the exporting thread: the recorder to install, and the handle
/// that exports once more before the process ends. The error is one line.
pub(super) fn start(
    telemetry: &Telemetry,
    export: &MetricExport,
    bounds: fn(&str) -> &'static [f64],
    process: metrics_process::Collector,
) -> Result<(Recorder, crate::otlp::Flusher), String> {
    let (flusher, flush_requests) = crate::otlp::Flusher::new();
    let telemetry = telemetry.clone();
    let export = export.clone();
    let meter = crate::otlp::exporting_thread("otlp-metrics", "metrics exporter", move |ready| async move {
        let exporter = match exporter(&telemetry, &export.endpoint) {
            Ok(exporter) => exporter,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let reader = SharedReader(Arc::new(ManualReader::builder().build()));
        let provider = SdkMeterProvider::builder()
            .with_reader(reader.clone())
            .with_resource(crate::otlp::resource(&telemetry))
            .build();
        let _ = ready.send(Ok(provider.meter("strata")));
        let every = Duration::from_millis(export.interval_millis);
        export_loop(&reader, &exporter, every, process, flush_requests).await;
        let _ = provider.shutdown();
    })?;
    Ok((Recorder::new(meter, bounds), flusher))
}

/// The OTLP exporter of metrics to `endpoint` that `telemetry` describes.
fn exporter(telemetry: &Telemetry, endpoint: &str) -> Result<MetricExporter, String> {
    let built = match telemetry.protocol {
        OtlpProtocol::HttpProtobuf => {
            crate::otlp::over_http(MetricExporter::builder().with_http(), telemetry, endpoint).build()
        }
        OtlpProtocol::Grpc => {
            crate::otlp::over_grpc(MetricExporter::builder().with_tonic(), telemetry, endpoint)?.build()
        }
    };
    built.map_err(|e| format!("telemetry: the OTLP metrics exporter refuses {endpoint}: {e}"))
}

/// Collects and exports every `every`, and when a flush asks (answering
/// it once sent), until every handle is gone.
async fn export_loop(
    reader: &SharedReader,
    exporter: &MetricExporter,
    every: Duration,
    process: metrics_process::Collector,
    mut flush_requests: mpsc::UnboundedReceiver<crate::otlp::FlushRequest>,
) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        let answer = tokio::select! {
            _ = ticks.tick() => None,
            request = flush_requests.recv() => match request {
                Some(answer) => Some(answer),
                None => return,
            },
        };
        process.collect();
        let mut collected = ResourceMetrics::default();
        let exported = match reader.0.collect(&mut collected) {
            Ok(()) => exporter.export(&collected).await,
            Err(e) => Err(e),
        };
        match exported {
            Ok(()) if failing => {
                failing = false;
                tracing::info!("metrics reach the OTLP collector again");
            }
            Ok(()) => {}
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, "metrics could not be exported over OTLP (said once until they can)");
            }
            Err(_) => {}
        }
        if let Some(answer) = answer {
            let _ = answer.send(());
        }
    }
}

/// The manual reader, shared between the provider (which registers its
/// pipeline in it) and the exporting loop (which collects from it).
#[derive(Debug, Clone)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }

    fn collect(&self, metrics: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(metrics)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// The `metrics` recorder that records into OpenTelemetry instruments: one
/// instrument per name, one handle per series (name and labels), so a
/// counter's `absolute` knows what it already added.
pub(super) struct Recorder {
    meter: Meter,
    bounds: fn(&str) -> &'static [f64],
    descriptions: Mutex<HashMap<String, (Option<Unit>, SharedString)>>,
    counters: Mutex<HashMap<Key, Arc<SumOf>>>,
    gauges: Mutex<HashMap<Key, Arc<LastOf>>>,
    histograms: Mutex<HashMap<Key, Arc<SpreadOf>>>,
}

impl Recorder {
    fn new(meter: Meter, bounds: fn(&str) -> &'static [f64]) -> Recorder {
        Recorder {
            meter,
            bounds,
            descriptions: Mutex::default(),
            counters: Mutex::default(),
            gauges: Mutex::default(),
            histograms: Mutex::default(),
        }
    }

    fn describe(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        lock(&self.descriptions).insert(key.as_str().to_string(), (unit, description));
    }

    /// The description and unit (UCUM, as OTLP wants) given for `name`.
    fn described(&self, name: &str) -> (String, Option<&'static str>) {
        match lock(&self.descriptions).get(name) {
            Some((unit, description)) => (description.to_string(), unit.as_ref().map(ucum)),
            None => (String::new(), None),
        }
    }
}

/// A unit as OTLP writes it (UCUM).
fn ucum(unit: &Unit) -> &'static str {
    match unit {
        Unit::Seconds => "s",
        Unit::Milliseconds => "ms",
        Unit::Microseconds => "us",
        Unit::Nanoseconds => "ns",
        Unit::Bytes => "By",
        Unit::Percent => "%",
        _ => "1",
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A series' labels as OpenTelemetry attributes.
fn attributes(key: &Key) -> Vec<KeyValue> {
    key.labels().map(|label| KeyValue::new(label.key().to_string(), label.value().to_string())).collect()
}

impl metrics::Recorder for Recorder {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.describe(key, unit, description);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let series = Arc::clone(lock(&self.counters).entry(key.clone()).or_insert_with(|| {
            let (description, unit) = self.described(key.name());
            let mut builder = self.meter.u64_counter(key.name().to_string()).with_description(description);
            if let Some(unit) = unit {
                builder = builder.with_unit(unit);
            }
            Arc::new(SumOf { counter: builder.build(), attributes: attributes(key), total: AtomicU64::new(0) })
        }));
        Counter::from_arc(series)
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let series = Arc::clone(lock(&self.gauges).entry(key.clone()).or_insert_with(|| {
            let (description, unit) = self.described(key.name());
            let mut builder = self.meter.f64_gauge(key.name().to_string()).with_description(description);
            if let Some(unit) = unit {
                builder = builder.with_unit(unit);
            }
            Arc::new(LastOf { gauge: builder.build(), attributes: attributes(key), value: AtomicU64::new(0) })
        }));
        Gauge::from_arc(series)
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let series = Arc::clone(lock(&self.histograms).entry(key.clone()).or_insert_with(|| {
            let (description, unit) = self.described(key.name());
            let mut builder = self
                .meter
                .f64_histogram(key.name().to_string())
                .with_description(description)
                .with_boundaries((self.bounds)(key.name()).to_vec());
            if let Some(unit) = unit {
                builder = builder.with_unit(unit);
            }
            Arc::new(SpreadOf { histogram: builder.build(), attributes: attributes(key) })
        }));
        Histogram::from_arc(series)
    }
}

/// A counter's series: what it added so far, so that `absolute` adds only
/// the difference.
struct SumOf {
    counter: opentelemetry::metrics::Counter<u64>,
    attributes: Vec<KeyValue>,
    total: AtomicU64,
}

impl CounterFn for SumOf {
    fn increment(&self, value: u64) {
        self.total.fetch_add(value, Ordering::Relaxed);
        self.counter.add(value, &self.attributes);
    }

    fn absolute(&self, value: u64) {
        let before = self.total.fetch_max(value, Ordering::Relaxed);
        self.counter.add(value.saturating_sub(before), &self.attributes);
    }
}

/// A gauge's series and its value (as `f64` bits), which `increment` and
/// `decrement` move.
struct LastOf {
    gauge: opentelemetry::metrics::Gauge<f64>,
    attributes: Vec<KeyValue>,
    value: AtomicU64,
}

impl LastOf {
    fn moved(&self, by: f64) {
        let moved = self
            .value
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| Some((f64::from_bits(bits) + by).to_bits()));
        let before = f64::from_bits(moved.unwrap_or_else(|bits| bits));
        self.gauge.record(before + by, &self.attributes);
    }
}

impl GaugeFn for LastOf {
    fn increment(&self, value: f64) {
        self.moved(value);
    }

    fn decrement(&self, value: f64) {
        self.moved(-value);
    }

    fn set(&self, value: f64) {
        self.value.store(value.to_bits(), Ordering::Relaxed);
        self.gauge.record(value, &self.attributes);
    }
}

/// A histogram's series.
struct SpreadOf {
    histogram: opentelemetry::metrics::Histogram<f64>,
    attributes: Vec<KeyValue>,
}

impl HistogramFn for SpreadOf {
    fn record(&self, value: f64) {
        self.histogram.record(value, &self.attributes);
    }
}
