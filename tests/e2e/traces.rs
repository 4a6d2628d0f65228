//! Traces over OTLP, received by OTLP/HTTP and OTLP/gRPC receivers of the
//! test's own that decode with the official protobuf definitions
//! (`opentelemetry-proto`): a command under `TRACEPARENT` continues the
//! pipeline's trace into every tenant and file, a GraphQL request's
//! `traceparent` is continued, a collector that is down or never answers
//! costs nothing but the spans (counted), and sampling is honoured.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use serde_json::{Value, json};

use crate::access::svc_prefix;
use crate::fleet::tenants;
use crate::support::{Backend, Server, backend, code, json_of, stderr, stdout, strata};

/// One span as a receiver decoded it.
#[derive(Debug, Clone)]
struct Received {
    trace_id: String,
    span_id: String,
    parent: String,
    name: String,
    /// OTLP's `SpanKind` (2 server, 3 client).
    kind: i32,
    /// OTLP's `StatusCode` (2: error) and message.
    status: (i32, String),
    attributes: BTreeMap<String, String>,
    /// The attributes sent as integers (OTLP's `intValue`).
    integers: BTreeSet<String>,
    events: Vec<(String, BTreeMap<String, String>)>,
    /// The spans it links to: (trace id, span id).
    links: Vec<(String, String)>,
    resource: BTreeMap<String, String>,
}

fn text(value: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(n)) => n.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter().map(|kv| (kv.key.clone(), text(kv.value.as_ref()))).collect()
}

/// The spans of an export request, flattened.
fn decoded(request: ExportTraceServiceRequest) -> Vec<Received> {
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = attributes(resource_spans.resource.map(|r| r.attributes).unwrap_or_default().as_slice());
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(Received {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    name: span.name,
                    kind: span.kind,
                    status: span.status.map(|s| (s.code, s.message)).unwrap_or_default(),
                    attributes: attributes(&span.attributes),
                    integers: span
                        .attributes
                        .iter()
                        .filter(|kv| {
                            matches!(kv.value.as_ref().and_then(|v| v.value.as_ref()), Some(AnyValue::IntValue(_)))
                        })
                        .map(|kv| kv.key.clone())
                        .collect(),
                    events: span.events.into_iter().map(|e| (e.name, attributes(&e.attributes))).collect(),
                    links: span.links.iter().map(|l| (hex(&l.trace_id), hex(&l.span_id))).collect(),
                    resource: resource.clone(),
                });
            }
        }
    }
    spans
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP receiver on 127.0.0.1: `/v1/traces` over HTTP/protobuf, or the
/// gRPC `TraceService`; what it received, decoded.
struct Receiver {
    endpoint: String,
    spans: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Grpc(Arc<Mutex<Vec<Received>>>);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().extend(decoded(request.into_inner()));
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

impl Receiver {
    async fn http() -> Receiver {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let store = Arc::clone(&spans);
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let store = Arc::clone(&store);
                async move {
                    assert_eq!(headers["content-type"], "application/x-protobuf");
                    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body");
                    store.lock().unwrap().extend(decoded(request));
                    let answer = ExportTraceServiceResponse { partial_success: None }.encode_to_vec();
                    ([("content-type", "application/x-protobuf")], answer)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver { endpoint, spans, task }
    }

    async fn grpc() -> Receiver {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let service = TraceServiceServer::new(Grpc(Arc::clone(&spans)));
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let task = tokio::spawn(async move {
            tonic::transport::Server::builder().add_service(service).serve_with_incoming(incoming).await.unwrap();
        });
        Receiver { endpoint, spans, task }
    }

    /// The spans of `trace_id` once `ready` holds for them (within 20 s).
    async fn trace(&self, trace_id: &str, ready: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let started = Instant::now();
        loop {
            let spans: Vec<Received> =
                self.spans.lock().unwrap().iter().filter(|span| span.trace_id == trace_id).cloned().collect();
            if ready(&spans) || started.elapsed() > Duration::from_secs(20) {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn all(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }
}

/// A listener that accepts connections and never answers: a collector
/// that hangs.
async fn silent_collector() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (endpoint, task)
}

pub(crate) const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

pub(crate) fn traceparent() -> String {
    format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01")
}

/// Whether the spans received make a whole trace: the caller's child and
/// every parent among them. The exporter sends batches on its own
/// schedule; the receiver is read once they are all in (or after its
/// 20 s), never the moment the command exits.
fn whole(spans: &[Received]) -> bool {
    let ids: BTreeSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    spans.iter().any(|s| s.parent == CALLER_SPAN)
        && spans.iter().all(|s| s.parent == CALLER_SPAN || ids.contains(s.parent.as_str()))
}

/// Every span's parent is the caller's span or a span of the trace: none
/// is orphaned.
fn assert_no_orphan(spans: &[Received]) {
    let ids: BTreeSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    for span in spans {
        assert!(
            span.parent == CALLER_SPAN || ids.contains(span.parent.as_str()),
            "{} ({}) has a parent that is not in the trace: {}; the trace: {:?}",
            span.name,
            span.span_id,
            span.parent,
            spans.iter().map(|s| format!("{} {} <- {}", s.name, s.span_id, s.parent)).collect::<Vec<_>>()
        );
    }
}

fn named<'a>(spans: &'a [Received], name: &str) -> Vec<&'a Received> {
    spans.iter().filter(|span| span.name == name).collect()
}

fn children<'a>(spans: &'a [Received], parent: &Received) -> Vec<&'a Received> {
    spans.iter().filter(|span| span.parent == parent.span_id).collect()
}

/// Four tenants, `t02` holding the table the file creates already (its
/// file fails, and the failure budget quarantines it).
async fn four_tenants_one_failing(extra: &str) -> Server {
    let server = Server::start("fleet", &format!("failureBudget: 2\n{extra}")).await;
    tenants(&server, 4).await;
    let table = if backend() == Backend::Sqlite { "items" } else { "t02.items" };
    server.ws.execute("t02", &format!("create table {table} (id integer)")).await;
    server.ws.write_migration("tenants/001_items.sql", "create table {schema}.items (id integer primary key);\n");
    server.ws.write_migration("tenants/002_more.sql", "create table {schema}.more (id integer primary key);\n");
    server
}

/// `strata apply --json` with `env`, as a pipeline step runs it.
async fn apply(server: &Server, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = tokio::process::Command::new(crate::support::strata_bin());
    command
        .arg("--config")
        .arg(server.config_path())
        .args(["apply", "--version", "from the pipeline", "--json"])
        .env_remove("SVC_YAML");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), command.output()).await;
    output.expect("strata finished within 120 s").expect("strata ran")
}

/// [`apply`] continuing `traceparent`'s trace, exporting to `receiver`,
/// with `more` variables; the command may wait 30 s for its spans to leave
/// (a loaded machine's export can outlast the default 5 s, and the spans
/// would then be dropped, as they should).
async fn apply_traced(
    server: &Server,
    traceparent: &str,
    receiver: &Receiver,
    more: &[(&str, &str)],
) -> std::process::Output {
    let mut env = vec![
        ("TRACEPARENT", traceparent),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "30000"),
    ];
    env.extend_from_slice(more);
    apply(server, &env).await
}

#[tokio::test]
async fn apply_under_traceparent_continues_the_pipelines_trace_into_every_tenant_and_file() {
    let receiver = Receiver::http().await;
    let server = four_tenants_one_failing("").await;
    let output = apply_traced(&server, &traceparent(), &receiver, &[("OTEL_SERVICE_NAME", "deploy-fleet")]).await;
    assert_eq!(code(&output), 11, "one tenant quarantined: {}", stderr(&output));
    let printed = json_of(&output);
    assert_eq!(printed["traceId"], CALLER_TRACE, "{printed}");
    let versions = server.data("{ versions { name traceId } }", json!({})).await;
    let applied = versions["versions"].as_array().unwrap().iter().find(|v| v["name"] == "from the pipeline").cloned();
    assert_eq!(applied, Some(json!({ "name": "from the pipeline", "traceId": CALLER_TRACE })), "{versions}");
    // The command flushed its spans before it exited: they are all here.
    let spans = receiver.trace(CALLER_TRACE, whole).await;
    assert_no_orphan(&spans);
    assert!(
        spans.iter().all(|s| s.resource.get("service.name").map(String::as_str) == Some("deploy-fleet")),
        "{:?}",
        spans.first()
    );
    let command = named(&spans, "strata apply");
    assert_eq!(command.len(), 1, "{spans:#?}");
    assert_eq!(command[0].parent, CALLER_SPAN, "the command continues the pipeline's span");
    assert_eq!(command[0].status.0, 2, "exit 11 is an error status");
    let versions: Vec<&Received> = spans.iter().filter(|s| s.attributes.contains_key("strata.version.name")).collect();
    assert_eq!(versions.len(), 1, "{spans:#?}");
    let version = versions[0];
    assert_eq!(version.parent, command[0].span_id);
    assert_eq!(version.attributes["strata.tenants.quarantined"], "1");
    let units = children(&spans, version);
    let tenant_units: BTreeMap<&str, &Received> = units
        .iter()
        .filter_map(|span| span.attributes.get("strata.tenant").map(|tenant| (tenant.as_str(), *span)))
        .collect();
    assert_eq!(tenant_units.keys().copied().collect::<Vec<_>>(), ["t00", "t01", "t02", "t03"], "{units:#?}");
    for (tenant, unit) in &tenant_units {
        assert_eq!(unit.kind, 3, "a client span");
        assert_eq!(unit.attributes["db.namespace"], *tenant);
        let files: BTreeSet<&str> =
            children(&spans, unit).iter().map(|f| f.attributes["strata.file"].as_str()).collect();
        if *tenant == "t02" {
            assert_eq!(unit.status.0, 2, "the failing tenant's span is an error: {unit:#?}");
            assert!(unit.events.iter().any(|(name, _)| name == "quarantined"), "{unit:#?}");
            // (A message of several files that failed without saying
            // where is run again file by file: the failing file's span of
            // that run is the error.)
            let failed = children(&spans, unit);
            assert!(
                failed.iter().any(|f| f.attributes["strata.file"] == "tenants/001_items.sql" && f.status.0 == 2),
                "{failed:#?}"
            );
            assert!(
                !failed.iter().any(|f| f.attributes["strata.file"] == "tenants/002_more.sql"
                    && !f.attributes.contains_key("strata.one_message")),
                "nothing ran on its own after the failing file: {files:?}"
            );
        } else {
            assert_eq!(unit.status.0, 0, "{unit:#?}");
            assert_eq!(files, BTreeSet::from(["tenants/001_items.sql", "tenants/002_more.sql"]), "{tenant}");
        }
    }
}

#[tokio::test]
async fn a_version_in_one_transaction_has_a_span_per_tenant_and_the_failing_tenants_is_the_error() {
    let receiver = Receiver::http().await;
    let server = four_tenants_one_failing("transactionScope: version\n").await;
    let output = apply_traced(&server, &traceparent(), &receiver, &[]).await;
    assert_eq!(code(&output), 1, "the version's one transaction failed: {}", stderr(&output));
    let spans = receiver.trace(CALLER_TRACE, whole).await;
    assert_no_orphan(&spans);
    let version = spans.iter().find(|s| s.attributes.contains_key("strata.version.name")).unwrap();
    assert_eq!(version.status.0, 2, "{version:#?}");
    // The one transaction runs file by file over the tenants: t02's first
    // file fails, so no second file ran and t03 never did; each tenant's
    // files under its one span.
    let mut tenants: Vec<(&str, i32, Vec<&str>)> = children(&spans, version)
        .iter()
        .filter(|span| span.attributes.contains_key("strata.tenant"))
        .map(|span| {
            let mut files: Vec<&str> =
                children(&spans, span).iter().map(|f| f.attributes["strata.file"].as_str()).collect();
            files.sort();
            (span.attributes["strata.tenant"].as_str(), span.status.0, files)
        })
        .collect();
    tenants.sort();
    let first = vec!["tenants/001_items.sql"];
    assert_eq!(tenants, [("t00", 0, first.clone()), ("t01", 0, first.clone()), ("t02", 2, first)], "{spans:#?}");

    // Once t02 is fixed, every tenant's span holds the files it had left:
    // both (MariaDB commits each DDL file as it runs: t00's and t01's first
    // stayed, recorded, from the failed version).
    let table = if backend() == Backend::Sqlite { "items" } else { "t02.items" };
    server.ws.execute("t02", &format!("drop table {table}")).await;
    let second = "5bf92f3577b34da6a3ce929d0e0e4737";
    let output = apply_traced(&server, &format!("00-{second}-{CALLER_SPAN}-01"), &receiver, &[]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let spans = receiver.trace(second, whole).await;
    assert_no_orphan(&spans);
    let version = spans.iter().find(|s| s.attributes.contains_key("strata.version.name")).unwrap();
    let tenants: Vec<&Received> =
        children(&spans, version).into_iter().filter(|s| s.attributes.contains_key("strata.tenant")).collect();
    for tenant in &tenants {
        let mut files: Vec<&str> =
            children(&spans, tenant).iter().map(|f| f.attributes["strata.file"].as_str()).collect();
        files.sort();
        let left = match (backend(), tenant.attributes["strata.tenant"].as_str()) {
            (Backend::Mysql, "t00" | "t01") => vec!["tenants/002_more.sql"],
            _ => vec!["tenants/001_items.sql", "tenants/002_more.sql"],
        };
        assert_eq!(files, left, "{tenant:#?}");
        assert_eq!(tenant.status.0, 0, "{tenant:#?}");
        assert_eq!(tenant.attributes["strata.files"], left.len().to_string(), "{tenant:#?}");
        assert!(tenant.integers.contains("strata.files"), "counts are integers: {tenant:#?}");
        for file in children(&spans, tenant) {
            assert!(file.integers.contains("strata.statements"), "{file:#?}");
        }
    }
    assert_eq!(tenants.len(), 4, "{spans:#?}");
    assert!(children(&spans, version).iter().all(|s| s.kind == 3), "tenant spans are client spans");
}

#[tokio::test]
async fn a_failed_apply_names_its_trace_and_its_version_span_is_an_error() {
    let receiver = Receiver::http().await;
    let server = four_tenants_one_failing("").await;
    server.ws.write_migration("tenants/003_broken.sql", "create tabel {schema}.broken (id integer);\n");
    let trace = "3".repeat(32);
    let output = apply_traced(&server, &format!("00-{trace}-{CALLER_SPAN}-01"), &receiver, &[]).await;
    assert_eq!(code(&output), 1, "the failure budget (2) is spent: {}", stderr(&output));
    let printed = json_of(&output);
    assert!(printed["errors"][0]["message"].is_string(), "{printed}");
    assert_eq!(printed["traceId"], trace.as_str(), "{printed}");
    let spans = receiver.trace(&trace, whole).await;
    assert_no_orphan(&spans);
    let version = spans.iter().find(|s| s.attributes.contains_key("strata.version.name")).expect("a version span");
    assert_eq!(version.status.0, 2, "{version:#?}");
    assert!(version.attributes.contains_key("strata.error.code"), "{version:#?}");
}

#[tokio::test]
async fn a_graphql_request_with_traceparent_is_traced_over_grpc_and_the_version_names_its_trace() {
    let receiver = Receiver::grpc().await;
    let server = four_tenants_one_failing(&format!(
        "telemetry:\n  endpoint: {}\n  protocol: grpc\n  headers:\n    x-api-key: k3y-s3cret\n",
        receiver.endpoint
    ))
    .await;
    let answer = create_version_traced(&server, &[("traceparent", &traceparent())], "traced").await;
    assert_eq!(answer["data"]["createVersion"]["traceId"], CALLER_TRACE, "{answer}");
    let version_id = answer["data"]["createVersion"]["version"]["id"].clone();
    let spans = receiver
        .trace(CALLER_TRACE, |spans| {
            // The server's span ends last, after the response.
            spans.iter().filter(|s| s.attributes.contains_key("strata.tenant")).count() >= 4
                && spans.iter().any(|s| s.name == "POST /v2/service")
        })
        .await;
    assert_no_orphan(&spans);
    let http = named(&spans, "POST /v2/service");
    assert_eq!(http.len(), 1, "{spans:#?}");
    assert_eq!((http[0].kind, http[0].parent.as_str()), (2, CALLER_SPAN), "a server span under the caller's");
    assert_eq!(http[0].attributes["http.response.status_code"], "200");
    assert_eq!(http[0].attributes["http.request.method"], "POST");
    let version = spans.iter().find(|s| s.attributes.contains_key("strata.version.name")).unwrap();
    assert_eq!(version.parent, http[0].span_id);
    assert_eq!(version.attributes["strata.version.id"], version_id.to_string());
    // The version names its trace when read back later.
    let read = server.data("query($id: Int!) { version(id: $id) { traceId } }", json!({ "id": version_id })).await;
    assert_eq!(read["version"]["traceId"], CALLER_TRACE, "{read}");
    let tenants: BTreeSet<&str> = children(&spans, version)
        .iter()
        .filter_map(|s| s.attributes.get("strata.tenant"))
        .map(String::as_str)
        .collect();
    assert_eq!(tenants, BTreeSet::from(["t00", "t01", "t02", "t03"]));

    // The audit row names the trace, sealed with the row: the chain verifies
    // as stored, and not once the trace id is changed.
    let audit = server.data("{ audit { action target traceId } }", json!({})).await;
    let rows = audit["audit"].as_array().unwrap();
    let row =
        rows.iter().find(|row| row["action"] == "createVersion" && row["target"].as_str().unwrap().contains("traced"));
    assert_eq!(row.map(|row| &row["traceId"]), Some(&json!(CALLER_TRACE)), "{audit}");
    let verify = strata(server.config_path(), &["audit", "verify"]).await;
    assert_eq!(code(&verify), 0, "{}{}", stdout(&verify), stderr(&verify));
    let listed = strata(server.config_path(), &["audit"]).await;
    assert!(stdout(&listed).contains(&format!("trace {CALLER_TRACE}")), "{}", stdout(&listed));
    let other = "00000000000000000000000000000001";
    server.ws.execute("svc", &format!("update {}svc_audit set trace_id = '{other}'", svc_prefix())).await;
    let verify = strata(server.config_path(), &["audit", "verify"]).await;
    assert_eq!(code(&verify), 15, "{}{}", stdout(&verify), stderr(&verify));
    // The exporter's secret header is neither served nor logged.
    let config = server.get("/v2/config").await.text().await.unwrap();
    assert!(!config.contains("k3y-s3cret") && config.contains("x-api-key"), "{config}");
    assert!(!server.log().contains("k3y-s3cret"));
}

#[tokio::test]
async fn a_collector_that_never_answers_costs_the_spans_only_and_they_are_counted() {
    let (silent, _collector) = silent_collector().await;
    let server =
        four_tenants_one_failing(&format!("telemetry:\n  endpoint: {silent}\n  queueSize: 2\n  timeoutMillis: 3000\n"))
            .await;
    let first = server.create_version(json!({ "versionName": "one" })).await;
    assert!(first.get("errors").is_none(), "{first}");
    // Its spans' export has begun, and hangs until its time-out: what the
    // next version ends meanwhile finds a full queue.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.ws.write_migration("tenants/003_later.sql", "create table {schema}.later (id integer primary key);\n");
    let second = server.create_version(json!({ "versionName": "two" })).await;
    assert!(second.get("errors").is_none(), "{second}");
    assert!(server.metric("svc_http_trace_spans_dropped{reason=\"queue_full\"}").await > 0.0);
    let mut failed = 0.0;
    for _ in 0..100 {
        failed = server.metric("svc_http_trace_spans_dropped{reason=\"export_failed\"}").await;
        if failed > 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(failed > 0.0, "{}", server.log());
    assert!(server.log().contains("traces could not be exported"), "{}", server.log());

    // A command never waits on it beyond its bound: it exits.
    let output = apply(&server, &[("OTEL_EXPORTER_OTLP_ENDPOINT", silent.as_str())]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
}

#[tokio::test]
async fn always_off_exports_nothing_and_a_version_has_no_trace() {
    let receiver = Receiver::http().await;
    let server = four_tenants_one_failing("").await;
    let output = apply_traced(&server, &traceparent(), &receiver, &[("OTEL_TRACES_SAMPLER", "always_off")]).await;
    assert_eq!(code(&output), 11, "{}", stderr(&output));
    assert_eq!(json_of(&output).get("traceId"), None);
    let versions = server.data("{ versions { name traceId } }", json!({})).await;
    let listed = versions["versions"].as_array().unwrap();
    assert!(listed.iter().any(|v| v["name"] == "from the pipeline"), "{versions}");
    assert!(listed.iter().all(|v| v["traceId"].is_null()), "{versions}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.all().len(), 0, "{:#?}", receiver.all());
}

/// `body` posted to the GraphQL endpoint with `headers` (a caller's trace
/// context): the whole answer, its status asserted 200.
async fn post_traced(server: &Server, headers: &[(&str, &str)], body: Value) -> Value {
    let mut request = reqwest::Client::new().post(server.url("/v2/service"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200, "{headers:?}");
    response.json().await.unwrap()
}

/// `createVersion` named `name` with `headers`: the whole answer (its
/// version's id and `traceId`).
pub(crate) async fn create_version_traced(server: &Server, headers: &[(&str, &str)], name: &str) -> Value {
    let body = json!({
        "query": "mutation($input: VersionInput!) { createVersion(input: $input) { version { id } traceId } }",
        "variables": { "input": { "versionName": name } },
    });
    post_traced(server, headers, body).await
}

/// `mutation` over HTTP with `traceparent`, its answer's `data`.
async fn traced_mutation(server: &Server, traceparent: &str, mutation: &str) -> Value {
    let answer = post_traced(server, &[("traceparent", traceparent)], json!({ "query": mutation })).await;
    assert!(answer.get("errors").is_none(), "{answer}");
    answer["data"].clone()
}

#[tokio::test]
async fn a_rollouts_waves_are_traces_of_their_own_linked_to_its_start_and_approval() {
    let receiver = Receiver::http().await;
    let server = Server::start("fleet", &format!("telemetry:\n  endpoint: {}\n", receiver.endpoint)).await;
    tenants(&server, 3).await;
    server.ws.write_migration("tenants/001_items.sql", "create table {schema}.items (id integer primary key);\n");
    let (start_trace, approve_trace) = ("1".repeat(32), "2".repeat(32));
    let started = traced_mutation(
        &server,
        &format!("00-{start_trace}-{CALLER_SPAN}-01"),
        r#"mutation { startRollout(versionName: "items", waves: ["t00:approve", "rest"]) { id } }"#,
    )
    .await;
    let id = started["startRollout"]["id"].as_i64().unwrap();
    crate::rollouts::wait_for(&server, id, "AWAITING_APPROVAL").await;
    traced_mutation(
        &server,
        &format!("00-{approve_trace}-{CALLER_SPAN}-01"),
        &format!("mutation {{ approveRollout(id: {id}) {{ id }} }}"),
    )
    .await;
    crate::rollouts::wait_for(&server, id, "COMPLETED").await;
    let started = Instant::now();
    let waves = loop {
        let waves: Vec<Received> = receiver
            .all()
            .into_iter()
            .filter(|span| span.attributes.get("strata.version.name").is_some_and(|name| name.starts_with("items")))
            .collect();
        if waves.len() >= 2 || started.elapsed() > Duration::from_secs(20) {
            break waves;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(waves.len(), 2, "{waves:#?}");
    let linked = |wave: &Received| wave.links.iter().map(|(trace, _)| trace.clone()).collect::<BTreeSet<String>>();
    let (first, second) = if linked(&waves[0]).len() == 1 { (&waves[0], &waves[1]) } else { (&waves[1], &waves[0]) };
    // Each wave is a trace of its own, run by the service, not the request's.
    for wave in [first, second] {
        assert!(wave.trace_id != start_trace && wave.trace_id != approve_trace && wave.parent.is_empty(), "{wave:#?}");
    }
    assert_eq!(linked(first), BTreeSet::from([start_trace.clone()]), "{first:#?}");
    assert_eq!(linked(second), BTreeSet::from([start_trace.clone(), approve_trace.clone()]), "{second:#?}");
    // The links name the requests' own server spans.
    let requests: BTreeSet<(String, String)> = receiver
        .all()
        .iter()
        .filter(|span| span.name == "POST /v2/service")
        .map(|span| (span.trace_id.clone(), span.span_id.clone()))
        .collect();
    assert!(second.links.iter().all(|link| requests.contains(link)), "{second:#?}\n{requests:?}");
}

#[tokio::test]
async fn a_backfill_is_a_span_per_tenant_with_its_batches_as_events() {
    let receiver = Receiver::http().await;
    let server = Server::start("fleet", &format!("telemetry:\n  endpoint: {}\n", receiver.endpoint)).await;
    tenants(&server, 2).await;
    server.ws.write_migration("tenants/001_items.sql", &crate::backfills::items_sql(100));
    let seeded = server.create_version(json!({ "versionName": "items" })).await;
    assert!(seeded.get("errors").is_none(), "{seeded}");
    server.ws.write_migration("tenants/002_touch.sql", crate::backfills::TOUCH_ITEMS);
    let started = crate::backfills::version_waiting(&server, "touch").await;
    assert_eq!(started["waitingOnBackfills"].as_array().map(Vec::len), Some(2), "{started}");
    let states = crate::backfills::settled(&server).await;
    assert!(states.iter().all(|row| row["state"] == "DONE"), "{states:?}");
    let started = Instant::now();
    let backfills = loop {
        let backfills: Vec<Received> =
            receiver.all().into_iter().filter(|span| span.name.starts_with("backfill ")).collect();
        if backfills.len() >= 2 || started.elapsed() > Duration::from_secs(20) {
            break backfills;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let tenants: BTreeSet<&str> = backfills.iter().map(|span| span.attributes["strata.tenant"].as_str()).collect();
    assert_eq!(tenants, BTreeSet::from(["t00", "t01"]), "{backfills:#?}");
    for span in &backfills {
        assert_eq!(span.attributes["strata.file"], "tenants/002_touch.sql");
        assert_eq!(span.attributes["strata.backfill.ended"], "done", "{span:#?}");
        // 100 rows in batches of at most 25: four batches or more, their rows adding up.
        let batches: Vec<u64> =
            span.events.iter().filter(|(name, _)| name == "batch").map(|(_, a)| a["rows"].parse().unwrap()).collect();
        assert!(batches.len() >= 4, "{span:#?}");
        assert_eq!(batches.iter().sum::<u64>(), 100, "{span:#?}");
    }
}

/// A `traceparent` W3C Trace Context says to ignore — not hex, an all-zero
/// trace or parent id, the forbidden version `ff`, a header of 4 KB — is
/// ignored: the request is served as any other and its spans start a trace
/// of their own (never one named by the bad header, never zeros), a
/// `tracestate` beside it notwithstanding.
#[tokio::test]
async fn a_malformed_traceparent_is_ignored_and_the_request_starts_a_trace_of_its_own() {
    let receiver = Receiver::http().await;
    let server = Server::start("fleet", &format!("telemetry:\n  endpoint: {}\n", receiver.endpoint)).await;
    tenants(&server, 1).await;
    let zeros = "0".repeat(32);
    let malformed = [
        format!("00-{}-{CALLER_SPAN}-01", "z".repeat(32)),
        format!("00-{zeros}-{CALLER_SPAN}-01"),
        format!("00-{CALLER_TRACE}-0000000000000000-01"),
        format!("ff-{CALLER_TRACE}-{CALLER_SPAN}-01"),
        format!("00-{CALLER_TRACE}-{CALLER_SPAN}"),
        format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01-{}", "a".repeat(4000)),
    ];
    let mut seen = BTreeSet::new();
    for (i, header) in malformed.iter().enumerate() {
        server.ws.write_migration(
            &format!("tenants/{i:03}_case.sql"),
            &format!("create table {{schema}}.case_{i} (id integer);\n"),
        );
        let headers = [("traceparent", header.as_str()), ("tracestate", "vendor=should-be-dropped")];
        let answer = create_version_traced(&server, &headers, &format!("case {i}")).await;
        assert!(answer.get("errors").is_none(), "{header}: {answer}");
        let trace =
            answer["data"]["createVersion"]["traceId"].as_str().unwrap_or_else(|| panic!("{answer}")).to_string();
        assert_eq!(trace.len(), 32, "{trace}");
        assert!(trace.bytes().all(|b| b.is_ascii_hexdigit()), "{trace}");
        assert!(trace != zeros && trace != CALLER_TRACE, "{header}: continued as {trace}");
        assert!(seen.insert(trace.clone()), "{header}: a trace of an earlier request, {trace}");
        let spans = receiver.trace(&trace, |spans| spans.iter().any(|s| s.name == "POST /v2/service")).await;
        let http = named(&spans, "POST /v2/service");
        assert_eq!(http.len(), 1, "{header}: {spans:#?}");
        assert_eq!(http[0].parent, "", "{header}: the request's span is the root of its own trace");
        assert!(
            spans.iter().any(|s| s.attributes.get("strata.tenant").map(String::as_str) == Some("t00")),
            "{spans:#?}"
        );
    }
    // None of the bad headers' ids reached the collector.
    assert!(
        receiver.all().iter().all(|s| s.trace_id != CALLER_TRACE && s.trace_id != zeros && s.parent != CALLER_SPAN)
    );
}

/// A tenant's file that waits out its lock time-outs behind a session of
/// the application: each time-out (the retry it leads to, then none) and
/// the blocking session, named by its id, are events in that tenant's
/// trace — of its unit's span where the unit runs in one transaction and is
/// retried whole (PostgreSQL), of the file's where the file runs
/// statement by statement (MariaDB) — and the file's span is the error.
#[tokio::test]
async fn a_files_lock_time_outs_and_its_blocker_are_events_in_its_tenants_trace() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_files_lock_time_outs_and_its_blocker_are_events_in_its_tenants_trace",
            "the lock is held from a PostgreSQL or MariaDB session",
        );
    }
    if backend() == Backend::Sqlite {
        return; // One writer: no lock queue to bound.
    }
    let receiver = Receiver::http().await;
    let server = Server::start("basic", "lockTimeoutMillis: 200\nlockRetries: 1\n").await;
    for name in ["t1", "t2"] {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server.ws.write_migration("tenants/900.sql", "alter table {schema}.users add column note varchar(20);\n");
    let mut blocker = crate::live::Session::open(&server).await;
    let blocker_id = blocker.id().await;
    blocker.run(if backend() == Backend::Mysql { "start transaction" } else { "begin" }).await;
    blocker.run("select count(*) as blocker_probe from t2.users").await;
    let output = apply_traced(&server, &traceparent(), &receiver, &[]).await;
    blocker.run("commit").await;
    assert_eq!(code(&output), 8, "t2 gave up waiting for a lock: {}", stderr(&output));
    let spans = receiver.trace(CALLER_TRACE, whole).await;
    assert_no_orphan(&spans);
    let units: Vec<&Received> =
        spans.iter().filter(|s| s.attributes.get("strata.tenant").map(String::as_str) == Some("t2")).collect();
    assert_eq!(units.len(), 1, "{spans:#?}");
    let unit = units[0];
    assert_eq!(unit.status.0, 2, "{unit:#?}");
    let files = children(&spans, unit);
    // A span per attempt of the file, each an error: PostgreSQL retries
    // the unit whole, MariaDB the statement within the file's one span.
    let attempts = if backend() == Backend::Postgres { 2 } else { 1 };
    assert_eq!(files.len(), attempts, "{files:#?}");
    assert!(files.iter().all(|f| f.attributes["strata.file"] == "tenants/900.sql" && f.status.0 == 2), "{files:#?}");
    let events: Vec<&(String, BTreeMap<String, String>)> =
        unit.events.iter().chain(files.iter().flat_map(|f| f.events.iter())).collect();
    let time_outs: Vec<Option<&str>> = events
        .iter()
        .filter(|(name, _)| name == "lock time-out")
        .map(|(_, attributes)| attributes.get("retry").map(String::as_str))
        .collect();
    assert_eq!(time_outs, [Some("1"), None], "a retry, then the last time-out: {events:#?}");
    let blockers: Vec<&str> =
        events.iter().filter(|(name, _)| name == "blocked by").map(|(_, a)| a["blockers"].as_str()).collect();
    let named = match backend() {
        Backend::Postgres => format!("pid {blocker_id} "),
        _ => format!("connection {blocker_id} "),
    };
    assert!(blockers.len() == 1 && blockers[0].contains(&named), "{named}: {events:#?}");
    // t1's unit committed: no error, no lock event.
    let t1: Vec<&Received> =
        spans.iter().filter(|s| s.attributes.get("strata.tenant").map(String::as_str) == Some("t1")).collect();
    assert!(t1.len() == 1 && t1[0].status.0 == 0 && t1[0].events.is_empty(), "{t1:#?}");
}
