//! Metrics over OTLP, received by OTLP/HTTP and OTLP/gRPC receivers of the
//! test's own that decode with the official protobuf definitions
//! (`opentelemetry-proto`): the series of `/metrics` arrive by the same
//! names, labels and values, histograms with the same buckets; a stopped
//! server exports once more, and so does each one-shot command as it ends;
//! a collector that is down is said once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use prost::Message;
use serde_json::json;

use crate::support::Server;

/// One series as the last export carried it.
#[derive(Debug, Clone, PartialEq)]
enum Point {
    /// A sum: its value, whether it is monotonic, and its temporality
    /// (2: cumulative).
    Sum {
        value: f64,
        monotonic: bool,
        temporality: i32,
    },
    Gauge(f64),
    /// A histogram: count, sum, the bucket bounds and counts.
    Histogram {
        count: u64,
        sum: f64,
        bounds: Vec<f64>,
        buckets: Vec<u64>,
    },
}

/// What a receiver has seen: the latest point of each series (name and
/// labels), each name's unit and description, the resource, and how
/// many exports arrived.
#[derive(Debug, Default)]
struct Seen {
    points: BTreeMap<(String, BTreeMap<String, String>), Point>,
    described: BTreeMap<String, (String, String)>,
    resource: BTreeMap<String, String>,
    exports: usize,
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    let text = |kv: &KeyValue| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        other => format!("{other:?}"),
    };
    list.iter().map(|kv| (kv.key.clone(), text(kv))).collect()
}

impl Seen {
    fn take(&mut self, request: ExportMetricsServiceRequest) {
        self.exports += 1;
        for resource_metrics in request.resource_metrics {
            self.resource = attributes(&resource_metrics.resource.map(|r| r.attributes).unwrap_or_default());
            for metric in resource_metrics.scope_metrics.into_iter().flat_map(|scope| scope.metrics) {
                self.described.insert(metric.name.clone(), (metric.unit.clone(), metric.description.clone()));
                let number = |value: Option<Number>| match value {
                    Some(Number::AsInt(n)) => n as f64,
                    Some(Number::AsDouble(d)) => d,
                    None => f64::NAN,
                };
                let mut put = |labels: &[KeyValue], point: Point| {
                    self.points.insert((metric.name.clone(), attributes(labels)), point);
                };
                match metric.data {
                    Some(Data::Sum(sum)) => {
                        for p in sum.data_points {
                            let value = number(p.value);
                            let (monotonic, temporality) = (sum.is_monotonic, sum.aggregation_temporality);
                            put(&p.attributes, Point::Sum { value, monotonic, temporality });
                        }
                    }
                    Some(Data::Gauge(gauge)) => {
                        for p in gauge.data_points {
                            put(&p.attributes, Point::Gauge(number(p.value)));
                        }
                    }
                    Some(Data::Histogram(histogram)) => {
                        for p in histogram.data_points {
                            let point = Point::Histogram {
                                count: p.count,
                                sum: p.sum.unwrap_or(f64::NAN),
                                bounds: p.explicit_bounds,
                                buckets: p.bucket_counts,
                            };
                            put(&p.attributes, point);
                        }
                    }
                    other => panic!("an unexpected kind of metric {}: {other:?}", metric.name),
                }
            }
        }
    }
}

/// An OTLP receiver of metrics on 127.0.0.1: `/v1/metrics` over
/// HTTP/protobuf, or the gRPC `MetricsService`.
struct Receiver {
    endpoint: String,
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Grpc(Arc<Mutex<Seen>>);

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().take(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse { partial_success: None }))
    }
}

impl Receiver {
    async fn http() -> Receiver {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let store = Arc::clone(&seen);
        let app = axum::Router::new().route(
            "/v1/metrics",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let store = Arc::clone(&store);
                async move {
                    assert_eq!(headers["content-type"], "application/x-protobuf");
                    let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP protobuf body");
                    store.lock().unwrap().take(request);
                    let answer = ExportMetricsServiceResponse { partial_success: None }.encode_to_vec();
                    ([("content-type", "application/x-protobuf")], answer)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver { endpoint, seen, task }
    }

    async fn grpc() -> Receiver {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let service = MetricsServiceServer::new(Grpc(Arc::clone(&seen)));
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let task = tokio::spawn(async move {
            tonic::transport::Server::builder().add_service(service).serve_with_incoming(incoming).await.unwrap();
        });
        Receiver { endpoint, seen, task }
    }

    /// The latest point of `name` with `labels`, once `ready` holds for it
    /// (within 30 s; `None` if it never arrived).
    async fn point(&self, name: &str, labels: &[(&str, &str)], ready: impl Fn(&Point) -> bool) -> Option<Point> {
        let key = (name.to_string(), labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let started = Instant::now();
        loop {
            let point = self.seen.lock().unwrap().points.get(&key).cloned();
            if point.as_ref().is_some_and(&ready) || started.elapsed() > Duration::from_secs(30) {
                return point;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn sum(value: f64) -> Point {
    Point::Sum { value, monotonic: true, temporality: 2 }
}

const SECONDS_BUCKETS: [f64; 13] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
const BYTES_BUCKETS: [f64; 9] =
    [256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262_144.0, 1_048_576.0, 4_194_304.0, 16_777_216.0];

#[tokio::test]
async fn the_service_exports_the_series_of_its_metrics_page_over_otlp() {
    let receiver = Receiver::http().await;
    let telemetry = format!(
        "telemetry:\n  endpoint: {}\n  traces: false\n  metricsIntervalMillis: 200\n  serviceName: fleet-api\n",
        receiver.endpoint
    );
    let server = Server::start("basic", &telemetry).await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t" })).await;
    server.create_version(json!({ "versionName": "v1" })).await;
    server.create_version(json!({ "versionName": "sync", "action": "Sync" })).await;

    // Counters: cumulative monotonic sums, the values /metrics shows.
    let versions = receiver.point("svc_http_versions_created", &[], |p| *p == sum(3.0)).await;
    assert_eq!(versions, Some(sum(3.0)));
    assert_eq!(server.metric("svc_http_versions_created").await, 3.0);
    for kind in ["single_migrations", "tenant_migrations_total", "single_scripts", "tenant_scripts_total"] {
        let served = server.metric(&format!("svc_http_migrations_applied{{type=\"{kind}\"}}")).await;
        let exported = receiver.point("svc_http_migrations_applied", &[("type", kind)], |p| *p == sum(served)).await;
        assert_eq!(exported, Some(sum(served)), "{kind}");
    }
    assert_eq!(receiver.point("svc_http_tenants_created", &[], |p| *p == sum(1.0)).await, Some(sum(1.0)));
    // Series registered at 0 are exported at 0, as /metrics shows them.
    assert_eq!(receiver.point("svc_http_lock_timeouts", &[], |_| true).await, Some(sum(0.0)));
    let dropped = [("reason", "queue_full")];
    assert_eq!(receiver.point("svc_http_trace_spans_dropped", &dropped, |_| true).await, Some(sum(0.0)));

    // Requests: the counter and both histograms, by the same labels, with
    // the same buckets, the unit and description given.
    let labels = [("method", "POST"), ("path", "/v2/service"), ("code", "200")];
    let requests = receiver.point("svc_http_request_total", &labels, |p| *p == sum(3.0)).await;
    assert_eq!(requests, Some(sum(3.0)));
    let three = |p: &Point| matches!(p, Point::Histogram { count: 3, .. });
    match receiver.point("svc_http_request_duration_seconds", &labels, three).await {
        Some(Point::Histogram { count, sum, bounds, buckets }) => {
            assert_eq!((count, bounds.as_slice(), buckets.len()), (3, SECONDS_BUCKETS.as_slice(), 14));
            assert_eq!(buckets.iter().sum::<u64>(), 3);
            assert!(sum > 0.0 && sum < 60.0, "{sum}");
        }
        other => panic!("no request duration histogram: {other:?}"),
    }
    match receiver.point("svc_http_request_size_bytes", &labels, three).await {
        Some(Point::Histogram { count: 3, bounds, .. }) => assert_eq!(bounds, BYTES_BUCKETS),
        other => panic!("no request size histogram: {other:?}"),
    }
    {
        let seen = receiver.seen.lock().unwrap();
        let described = |name: &str| seen.described.get(name).cloned().unwrap_or_default();
        assert_eq!(described("svc_http_request_duration_seconds"), ("s".into(), "HTTP request latency".into()));
        assert_eq!(described("svc_http_response_size_bytes"), ("By".into(), "HTTP response body sizes".into()));
        assert_eq!(described("svc_http_versions_created").1, "Versions created");
        // The process collector's gauges, and the resource.
        let resident = seen.points.get(&("process_resident_memory_bytes".to_string(), BTreeMap::new()));
        assert!(matches!(resident, Some(Point::Gauge(bytes)) if *bytes > 1_000_000.0), "{resident:?}");
        assert_eq!(seen.resource.get("service.name").map(String::as_str), Some("fleet-api"));
    }

    // Exported again and again, every 200 ms.
    let first = receiver.seen.lock().unwrap().exports;
    let started = Instant::now();
    while receiver.seen.lock().unwrap().exports < first + 2 && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(receiver.seen.lock().unwrap().exports >= first + 2, "no export after the first {first}");

    // The configuration says where metrics go and that traces do not.
    let config = server.get("/v2/config").await.text().await.unwrap();
    let metrics_endpoint = format!("metricsEndpoint: {}/v1/metrics", receiver.endpoint);
    assert!(config.contains(&metrics_endpoint) && config.contains("traces: false"), "{config}");
}

#[tokio::test]
async fn a_stopping_server_exports_once_more_and_a_collector_that_is_down_is_said_once() {
    // An hour between exports: the only export is the one at the stop.
    let receiver = Receiver::grpc().await;
    let telemetry = format!(
        "telemetry:\n  endpoint: {}\n  protocol: grpc\n  traces: false\n  metricsIntervalMillis: 3600000\n",
        receiver.endpoint
    );
    let mut server = Server::start("basic", &telemetry).await;
    server.create_version(json!({ "versionName": "v1" })).await;
    assert_eq!(receiver.seen.lock().unwrap().exports, 0);
    assert!(server.terminate().await.success());
    let versions = receiver.point("svc_http_versions_created", &[], |_| true).await;
    assert_eq!(versions, Some(sum(1.0)), "the last export, sent as the server stopped");
    assert_eq!(receiver.seen.lock().unwrap().exports, 1);
    // On MariaDB the next server waits for this one's turn on the database.
    drop(server);

    // Nothing listens: versions are made as ever, /metrics counts them,
    // and the log says once that the export fails.
    let down = crate::support::closed_port();
    let telemetry = format!(
        "telemetry:\n  endpoint: http://127.0.0.1:{}\n  traces: false\n  metricsIntervalMillis: 200\n",
        down.port
    );
    let server = Server::start("basic", &telemetry).await;
    server.create_version(json!({ "versionName": "v1" })).await;
    assert_eq!(server.metric("svc_http_versions_created").await, 1.0);
    let failing = "metrics could not be exported over OTLP";
    let started = Instant::now();
    while !server.log().contains(failing) && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Five more failed exports, none of them said again.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(server.log().matches(failing).count(), 1, "{}", server.log());
}

/// A one-shot command exports its metrics as `serve` does: each `strata
/// apply` (an hour between exports: only the one as it ends) sends the
/// counts its own JSON answer gives, its process's from 0, to the
/// collector the configuration names.
#[tokio::test]
async fn each_one_shot_apply_exports_its_own_counts_as_it_ends() {
    use crate::support::{Workspace, code, json_of, mysql_turn, stderr, strata};
    let _turn = mysql_turn();
    let receiver = Receiver::http().await;
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let telemetry = format!(
        "telemetry:\n  endpoint: {}\n  traces: false\n  metricsIntervalMillis: 3600000\n  serviceName: deploy\n",
        receiver.endpoint
    );
    let config = ws.write_config(&ws.config(&telemetry));

    let singles = strata(&config, &["apply", "--version", "v1", "--json"]).await;
    assert_eq!(code(&singles), 0, "{}", stderr(&singles));
    let summary = json_of(&singles)["summary"].clone();
    assert_eq!(summary["singleMigrations"], 2, "{summary}");
    assert_eq!(receiver.seen.lock().unwrap().exports, 1, "one export, as the command ended");
    assert_eq!(receiver.point("svc_http_versions_created", &[], |_| true).await, Some(sum(1.0)));
    let singles_applied = [("type", "single_migrations")];
    assert_eq!(receiver.point("svc_http_migrations_applied", &singles_applied, |_| true).await, Some(sum(2.0)));
    assert_eq!(receiver.point("svc_http_tenants_created", &[], |_| true).await, Some(sum(0.0)));
    assert_eq!(receiver.seen.lock().unwrap().resource.get("service.name").map(String::as_str), Some("deploy"));

    // The next command is a process of its own: its counts start from 0.
    let tenant = strata(&config, &["apply", "--version", "t1", "--tenant", "acme", "--json"]).await;
    assert_eq!(code(&tenant), 0, "{}", stderr(&tenant));
    let summary = json_of(&tenant)["summary"].clone();
    let tenant_files = summary["tenantMigrationsTotal"].as_f64().unwrap();
    assert!(tenant_files > 0.0, "{summary}");
    assert_eq!(receiver.seen.lock().unwrap().exports, 2);
    assert_eq!(receiver.point("svc_http_tenants_created", &[], |_| true).await, Some(sum(1.0)));
    assert_eq!(receiver.point("svc_http_versions_created", &[], |_| true).await, Some(sum(1.0)));
    let tenants_applied = [("type", "tenant_migrations_total")];
    let exported = receiver.point("svc_http_migrations_applied", &tenants_applied, |_| true).await;
    assert_eq!(exported, Some(sum(tenant_files)));
    assert_eq!(receiver.point("svc_http_migrations_applied", &singles_applied, |_| true).await, Some(sum(0.0)));
}
