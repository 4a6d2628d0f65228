//! Build info, config, schema, health, metrics, request ids, pathPrefix,
//! routing.

use serde_json::{Value, json};

use crate::support::{Server, Workspace};

#[tokio::test]
async fn build_info_config_and_schema() {
    let server = Server::start("basic", "").await;
    let root = server.get("/").await;
    assert_eq!(root.status(), 200);
    let info: Value = root.json().await.unwrap();
    assert_eq!(info["apiVersions"], json!(["v2"]));
    assert!(info["release"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(info["sha"].is_string());

    let config = server.get("/v2/config").await;
    assert_eq!(config.status(), 200);
    assert_eq!(config.headers()["content-type"], "application/x-yaml");
    let text = config.text().await.unwrap();
    let driver = match crate::support::backend() {
        crate::support::Backend::Sqlite => "sqlite",
        crate::support::Backend::Postgres => "postgres",
        crate::support::Backend::Mysql => "mysql",
        crate::support::Backend::Sqlserver => "sqlserver",
    };
    assert!(text.contains(&format!("driver: {driver}\n")), "{text}");
    assert!(text.contains(&format!("port: {}", server.ws.port)), "{text}");
    assert!(text.contains("tenantSelectSQL: select name from svc.svc_tenants"), "{text}");
    assert!(text.contains("- scripts/config"), "{text}");

    let schema = server.get("/v2/schema").await;
    assert_eq!(schema.status(), 200);
    let sdl = schema.text().await.unwrap();
    for needle in [
        "interface Migration",
        "type SourceMigration implements Migration",
        "type DBMigration implements Migration",
        "scalar Time",
        "enum Action",
        "input VersionInput",
        "action: Action = Apply",
        "createVersion(input: VersionInput!): CreateResults!",
        "createTenant(input: TenantInput!): CreateResults!",
        "sourceMigrations(filters: SourceMigrationFilters): [SourceMigration!]!",
        "version: Version\n",
    ] {
        assert!(sdl.contains(needle), "missing {needle:?} in\n{sdl}");
    }
}

#[tokio::test]
async fn health_is_up_then_down_with_details_when_the_base_location_is_missing() {
    let server = Server::start("basic", "").await;
    let health = server.get("/health").await;
    assert_eq!(health.status(), 200);
    assert_eq!(
        health.json::<Value>().await.unwrap(),
        json!({ "status": "UP", "auth": "none", "checks": [{ "name": "DB", "status": "UP" }, { "name": "Loader", "status": "UP" }] })
    );
    std::fs::rename(server.ws.migrations(), server.ws.path().join("moved")).unwrap();
    let health = server.get("/health").await;
    assert_eq!(health.status(), 503);
    let body: Value = health.json().await.unwrap();
    assert_eq!(body["status"], "DOWN");
    assert_eq!(body["checks"][0], json!({ "name": "DB", "status": "UP" }));
    assert_eq!(body["checks"][1]["name"], "Loader");
    assert_eq!(body["checks"][1]["status"], "DOWN");
    let details = body["checks"][1]["data"]["details"].as_str().unwrap();
    assert!(details.contains("cannot be opened") && details.contains("No such file"), "{details}");
    // Health has no side effects: it did not create the directory.
    assert!(!server.ws.migrations().exists());
}

#[tokio::test]
async fn metrics_count_versions_tenants_and_applied_migrations() {
    let server = Server::start("basic", "").await;
    let applied = |kind: &str| format!("svc_http_migrations_applied{{type=\"{kind}\"}}");
    assert_eq!(server.metric("svc_http_versions_created").await, 0.0);
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t" })).await;
    server.create_version(json!({ "versionName": "v1" })).await;
    server.create_version(json!({ "versionName": "sync", "action": "Sync" })).await;
    assert_eq!(server.metric("svc_http_versions_created").await, 3.0);
    assert_eq!(server.metric("svc_http_tenants_created").await, 1.0);
    assert_eq!(server.metric(&applied("single_migrations")).await, 2.0);
    assert_eq!(server.metric(&applied("tenant_migrations_total")).await, 2.0);
    assert_eq!(server.metric(&applied("single_scripts")).await, 1.0);
    assert_eq!(server.metric(&applied("tenant_scripts_total")).await, 2.0);
    let text = server.get("/metrics").await.text().await.unwrap();
    assert!(text.contains("svc_http_request_total{method=\"POST\",path=\"/v2/service\",code=\"200\"}"), "{text}");
    assert!(text.contains("svc_http_request_duration_seconds_bucket"), "{text}");
    assert!(text.contains("svc_http_response_size_bytes"), "{text}");
    assert!(text.contains("process_resident_memory_bytes"), "{text}");
}

/// The `*_size_bytes` histograms have byte-sized buckets: a request of a
/// few dozen bytes and its answer land in the 256-byte bucket (with
/// second-sized buckets every size landed in `+Inf` only).
#[tokio::test]
async fn request_and_response_sizes_land_in_byte_sized_buckets() {
    let server = Server::start("basic", "").await;
    let body = json!({ "query": "{ tenants { name } }" }).to_string();
    let response = server.post_raw(body.clone()).await;
    assert_eq!(response.status(), 200);
    let answer = response.text().await.unwrap();
    assert_eq!(answer, "{\"data\":{\"tenants\":[]}}");
    let labels = "method=\"POST\",path=\"/v2/service\",code=\"200\"";
    for histogram in ["svc_http_request_size_bytes", "svc_http_response_size_bytes"] {
        for (le, count) in [("64", None), ("256", Some(1.0)), ("1024", Some(1.0)), ("16777216", Some(1.0))] {
            let series = format!("{histogram}_bucket{{{labels},le=\"{le}\"}}");
            let text = server.get("/metrics").await.text().await.unwrap();
            let found = text.lines().find_map(|line| line.strip_prefix(series.as_str())?.strip_prefix(' '));
            assert_eq!(found.map(|value| value.parse::<f64>().unwrap()), count, "{series} in\n{text}");
        }
    }
    let sum = |histogram: &str| format!("{histogram}_sum{{{labels}}}");
    assert_eq!(server.metric(&sum("svc_http_request_size_bytes")).await, body.len() as f64);
    assert_eq!(server.metric(&sum("svc_http_response_size_bytes")).await, answer.len() as f64);
}

#[tokio::test]
async fn request_id_is_echoed_generated_and_stored() {
    let server = Server::start("basic", "").await;
    let response = server
        .client
        .post(server.url("/v2/service"))
        .header("X-Request-ID", "trace-123")
        .header("Content-Type", "application/json")
        .body(
            json!({ "query": "mutation { createVersion(input: {versionName: \"v1\"}) { version { id } } }" })
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "trace-123");
    let generated = server.get("/health").await;
    let id = generated.headers()["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(id.matches('-').count(), 4);
    assert_eq!(server.ws.rows("svc", "select request_id from svc_versions").await, [[json!("trace-123")]]);
    assert!(server.log().contains("request_id=trace-123"));
    // A hostile id is replaced, not echoed.
    let odd = server.client.get(server.url("/")).header("X-Request-ID", "a b").send().await.unwrap();
    assert_ne!(odd.headers()["x-request-id"], "a b");
}

#[tokio::test]
async fn path_prefix_moves_every_route() {
    let ws = Workspace::new("basic");
    let yaml = ws.config("pathPrefix: /migrator/\n");
    let server = Server::start_in(ws, &yaml, "/migrator").await;
    for path in ["", "/", "/v2/config", "/v2/schema", "/metrics", "/health"] {
        assert_eq!(server.get(path).await.status(), 200, "{path}");
    }
    let data = server.data("{ tenants { name } }", json!({})).await;
    assert_eq!(data, json!({ "tenants": [] }));
    let bare = format!("http://127.0.0.1:{}/health", server.ws.port);
    assert_eq!(server.client.get(bare).send().await.unwrap().status(), 404);
}

#[tokio::test]
async fn unknown_routes_and_methods() {
    let server = Server::start("basic", "").await;
    assert_eq!(server.get("/v2/nothing").await.status(), 404);
    assert_eq!(server.get("/v2/service").await.status(), 405);
    let delete = server.client.delete(server.url("/health")).send().await.unwrap();
    assert_eq!(delete.status(), 405);
}

#[test]
fn the_kubernetes_example_parses_and_wires_probes_metrics_and_config() {
    let text =
        std::fs::read_to_string(crate::support::data_dir().join("../../examples/kubernetes/strata.yaml")).unwrap();
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let kinds: Vec<&str> = documents.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Secret", "Deployment", "Service", "Job"]);
    let pod = &documents[1]["spec"]["template"];
    assert_eq!(pod["metadata"]["annotations"]["prometheus.io/path"], "/metrics");
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/health");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/health");
    assert_eq!(container["volumeMounts"][0]["mountPath"], "/data");
    // The configuration in the Secret is one the service accepts.
    let svc_yaml = documents[0]["stringData"]["svc.yaml"].as_str().unwrap();
    let env = [("DB_PASSWORD", "x"), ("HOOK_TOKEN", "y")].map(|(k, v)| (k.to_string(), v.to_string()));
    let config = strata_core::migrate::config::Config::parse(
        svc_yaml,
        &env.into_iter().collect::<std::collections::BTreeMap<_, _>>(),
    )
    .unwrap();
    assert_eq!(config.base_location, "s3://my-migrations/prod");

    // The migration Job: `strata apply` on the Deployment's configuration
    // (the same Secret mounted at the same place), run once, not retried.
    let job = &documents[3];
    assert_eq!(job["metadata"]["annotations"]["helm.sh/hook"], "pre-install,pre-upgrade");
    assert_eq!(job["metadata"]["annotations"]["argocd.argoproj.io/hook"], "PreSync");
    assert_eq!(job["spec"]["backoffLimit"], 0);
    let job_pod = &job["spec"]["template"]["spec"];
    assert_eq!(job_pod["restartPolicy"], "Never");
    assert_eq!(job_pod["volumes"], pod["spec"]["volumes"]);
    let migrate = &job_pod["containers"][0];
    assert_eq!(migrate["image"], container["image"]);
    assert_eq!(migrate["volumeMounts"], container["volumeMounts"]);
    let args: Vec<&str> = migrate["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args, ["apply", "--version", "$(RELEASE)", "--config", "/data/svc.yaml"]);
    // Every variable the configuration refers to is set for the Job as for
    // the Deployment, and RELEASE (named in args) too.
    let names = |c: &Value| -> Vec<String> {
        c["env"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
    };
    let job_env = names(migrate);
    for name in ["DB_PASSWORD", "HOOK_TOKEN", "AWS_REGION", "RELEASE"] {
        assert!(job_env.contains(&name.to_string()), "{name} missing from the Job");
    }
    for name in names(container).iter().filter(|n| *n != "SVC_YAML") {
        assert!(job_env.contains(name), "{name}: the Deployment has it, the Job not");
    }
    // The arguments are the command line's own: clap parses them.
    let status = std::process::Command::new(crate::support::strata_bin())
        .args(args.iter().map(|a| a.replace("$(RELEASE)", "app-v2.4.0")))
        .arg("--help")
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
}
