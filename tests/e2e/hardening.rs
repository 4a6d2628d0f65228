//! Hardening, round 2: bounded GraphQL cost, requests only as JSON, the
//! retired v1 API, a dataSource that must fit its driver, tenant names that
//! cannot land in a shared or system schema, the environment read without
//! panics, any SQLite main file name, and the build revision.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Connection;

use crate::support::{Backend, Server, Workspace, backend, run_to_exit};

const SMALL_LIMITS: &str = "graphQLLimits:\n  complexity: 50\n  depth: 3\n  batch: 3\n  contentsBytes: 300\n";

fn limit_error(response: &Value) -> (&str, &str) {
    let error = &response["errors"][0];
    (error["message"].as_str().unwrap_or_default(), error["extensions"]["code"].as_str().unwrap_or_default())
}

#[tokio::test]
async fn twenty_thousand_aliases_are_refused_before_anything_runs() {
    let server = Server::start("basic", "").await;
    let mut query = String::from("{ ");
    for i in 0..20_000 {
        query.push_str(&format!("a{i}: sourceMigrations {{ contents }} "));
    }
    query.push('}');
    let body = json!({ "query": query }).to_string();
    assert!(body.len() < 1024 * 1024, "the attack fits the body limit: {}", body.len());
    let started = Instant::now();
    let response: Value = server.post_raw(body).await.json().await.unwrap();
    assert_eq!(
        limit_error(&response),
        ("the query has 120002 tokens, over the limit of 10000 (graphQLLimits.tokens)", "LIMIT_EXCEEDED")
    );
    assert_eq!(response["data"], Value::Null);
    assert!(started.elapsed() < Duration::from_secs(5), "refused in {:?}", started.elapsed());
    // The same field 60,000 times without aliases (the validator compares
    // same-named fields pairwise): refused as fast.
    let repeated = format!("{{ {} }}", "tenants { name } ".repeat(60_000));
    let response: Value = server.post_raw(json!({ "query": repeated }).to_string()).await.json().await.unwrap();
    assert_eq!(limit_error(&response).0, "the query has 240002 tokens, over the limit of 10000 (graphQLLimits.tokens)");
}

/// Texts that are cheap to send and were dear to answer: 300,000 unknown
/// directives on one field (3.6 s of processor time, an error each:
/// 38.7 MB), the same argument 150,000 times, 80,000 unused variables —
/// refused unparsed by their tokens; a document just under that limit
/// answers its first hundred errors and how many more there were; aliases
/// of introspection's whole schema (33 MB for 6.5 s in a batch) are
/// refused past `introspectionFields`.
#[tokio::test]
async fn documents_built_to_cost_the_parser_and_validator_are_refused_or_bounded() {
    let server = Server::start("basic", "").await;
    let directives = format!("{{ identity {} {{ actor }} }}", "@a ".repeat(300_000));
    let arguments = format!("{{ identity({}) {{ actor }} }}", "a: 1 ".repeat(150_000));
    let variables: String = (0..80_000).map(|i| format!("$v{i}: Int ")).collect();
    let variables = format!("query Q({variables}) {{ identity {{ actor }} }}");
    for query in [directives, arguments, variables] {
        let body = json!({ "query": query }).to_string();
        assert!(body.len() < 1024 * 1024, "the attack fits the body limit: {}", body.len());
        let response: Value = server.post_raw(body).await.json().await.unwrap();
        let (message, code) = limit_error(&response);
        assert_eq!(code, "LIMIT_EXCEEDED", "{response}");
        assert!(message.ends_with("over the limit of 10000 (graphQLLimits.tokens)"), "{message}");
    }

    // Under the limit: at most a hundred errors, and how many more.
    let bounded = format!("{{ identity {} {{ actor }} }}", "@a ".repeat(4_000));
    let answer = server.post_raw(json!({ "query": bounded }).to_string()).await.text().await.unwrap();
    assert!(answer.len() < 64 * 1024, "{} bytes", answer.len());
    let response: Value = serde_json::from_str(&answer).unwrap();
    let errors = response["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 101, "{response}");
    assert_eq!(errors[100]["message"], "3900 more errors left out: an answer lists at most 100");

    let schema = "{ __schema { types { name fields { name type { name } } } } }";
    let five: String = (0..5).map(|i| format!("s{i}: __schema {{ types {{ name }} }} ")).collect();
    let response: Value =
        server.post_raw(json!({ "query": format!("{{ {five} }}") }).to_string()).await.json().await.unwrap();
    assert_eq!(
        limit_error(&response),
        (
            "the request has 5 introspection fields (__schema, __type), over the limit of 4 \
             (graphQLLimits.introspectionFields): read the schema once",
            "LIMIT_EXCEEDED"
        )
    );
    let response: Value = server.post_raw(json!({ "query": schema }).to_string()).await.json().await.unwrap();
    assert!(response["data"]["__schema"]["types"].as_array().is_some_and(|types| !types.is_empty()), "{response}");
}

/// Root fields are bounded per request (`graphQLLimits.rootFields`, 16 by
/// default), over the operations of a batch: each reads or changes the
/// books on its own, so at 10,000 tenants 76 aliases of `backfills` — 988
/// of the complexity's 1,000 — took 7.8 s and 269 MB of the service. Over
/// the limit nothing runs, mutations included.
#[tokio::test]
async fn root_fields_are_bounded_per_request_over_a_batch_and_nothing_runs_over_the_limit() {
    let server = Server::start("basic", "").await;
    let aliases = |n: usize, field: &str| -> String { (0..n).map(|i| format!("a{i}: {field} ")).collect() };
    let page = "tenants(first: 5) { name }";
    let sixteen = server.data(&format!("{{ {} __typename }}", aliases(16, page)), json!({})).await;
    assert_eq!(sixteen["a15"], json!([]));
    let refused = server.graphql(&format!("{{ {} }}", aliases(17, page)), json!({})).await;
    let message = "the request has 17 root fields, over the limit of 16 (graphQLLimits.rootFields): each reads or \
                   changes the books on its own; ask for fewer at a time";
    assert_eq!(limit_error(&refused), (message, "LIMIT_EXCEEDED"));
    assert_eq!(refused["data"], Value::Null);

    // Over a batch: 9 operations of 2 fields are 18.
    let batch = |fields: usize| -> String {
        let operation = json!({ "query": format!("{{ {} }}", aliases(fields, "versionCount")) });
        Value::Array(vec![operation; 9]).to_string()
    };
    let response: Value = server.post_raw(batch(2)).await.json().await.unwrap();
    assert_eq!(limit_error(&response).0, message.replace("17", "18"), "{response}");
    let response: Value = server.post_raw(batch(1)).await.json().await.unwrap();
    assert_eq!(response.as_array().map(Vec::len), Some(9), "{response}");

    // Mutations too: none of the seventeen runs.
    let create = "createVersion(input: {versionName: \"v\"}) { version { id } }";
    let refused = server.graphql(&format!("mutation {{ {} }}", aliases(17, create)), json!({})).await;
    assert_eq!(limit_error(&refused).0, message, "{refused}");
    assert_eq!(server.ws.count("svc", "svc_versions").await, 0);
}

/// Fields that read the whole fleet (`drift`, `plan`, unpaged lists…) are
/// bounded per request (`graphQLLimits.fleetFields`, 4 by default) over a
/// batch's queries: each reads every tenant or every row, so 16 of them in
/// one request were 16 reads of the fleet. Pages and light fields do not
/// count, nor do mutations.
#[tokio::test]
async fn fields_that_read_the_whole_fleet_are_bounded_per_request() {
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    let four = "{ drift { tenants } plan { pending } tenants { name } quarantine { tenant } \
                identity { actor } tenantCount versionCount p: tenants(first: 2) { name } }";
    let answered = server.data(four, json!({})).await;
    assert_eq!((answered["drift"]["tenants"].clone(), answered["tenantCount"].clone()), (json!(0), json!(0)));
    let five = "{ drift { tenants } plan { pending } tenants { name } quarantine { tenant } backfills { tenant } }";
    let refused = server.graphql(five, json!({})).await;
    let message = "the request has 5 fields that read the whole fleet, over the limit of 4 \
                   (graphQLLimits.fleetFields): ask for fewer at a time, or for pages (`first`)";
    assert_eq!(limit_error(&refused), (message, "LIMIT_EXCEEDED"));
    assert_eq!(refused["data"], Value::Null);
    // Over a batch: three operations of two are six.
    let operation = json!({ "query": "{ a: versions { id } b: tenants { name } }" });
    let response: Value = server.post_raw(Value::Array(vec![operation; 3]).to_string()).await.json().await.unwrap();
    assert_eq!(limit_error(&response).0, message.replace("has 5", "has 6"), "{response}");
    // Configured (the first server gone first: on MariaDB it holds the
    // server's turn).
    drop(server);
    let server = Server::start("basic", "graphQLLimits:\n  fleetFields: 5\n").await;
    assert_eq!(server.data(five, json!({})).await["backfills"], json!([]));
}

#[tokio::test]
async fn configured_limits_name_themselves_and_their_values() {
    let server = Server::start("basic", SMALL_LIMITS).await;
    let created =
        server.data("mutation { createVersion(input: {versionName: \"v1\"}) { version { id } } }", json!({})).await;
    assert_eq!(created["createVersion"]["version"]["id"], 1);

    // Complexity: each `tenants` costs 10 (it reads storage) + 1 for `name`.
    let query = "{ a: tenants(first: 9) { name } b: tenants(first: 9) { name } c: tenants(first: 9) { name } \
                 d: tenants(first: 9) { name } e: tenants(first: 9) { name } }";
    let response = server.graphql(query, json!({})).await;
    assert_eq!(
        limit_error(&response),
        ("query complexity 55 is over the limit of 50 (graphQLLimits.complexity)", "LIMIT_EXCEEDED")
    );
    let four = "{ a: tenants { name } b: tenants { name } c: tenants { name } d: tenants { name } }";
    assert_eq!(server.data(four, json!({})).await["d"], json!([]));

    // Fragments spread several times count every time.
    let fragments = "{ ...T ...U } fragment T on Query { a: versions(first: 9) { id } b: versions(first: 9) { id } } \
                     fragment U on Query { c: versions(first: 9) { id } d: versions(first: 9) { id } \
                     e: versions(first: 9) { id } }";
    let response = server.graphql(fragments, json!({})).await;
    assert_eq!(limit_error(&response).0, "query complexity 55 is over the limit of 50 (graphQLLimits.complexity)");

    // Depth.
    let response = server.graphql("{ __schema { types { fields { name } } } }", json!({})).await;
    assert_eq!(server.data("{ versions { id } }", json!({})).await["versions"][0]["id"], 1);
    assert_eq!(
        limit_error(&response),
        ("query depth 4 is over the limit of 3 (graphQLLimits.depth)", "LIMIT_EXCEEDED")
    );

    // Batch: refused as a whole, one error.
    let batch: Vec<Value> = (0..4).map(|_| json!({ "query": "{ tenants { name } }" })).collect();
    let response = server.post_raw(Value::Array(batch).to_string()).await;
    assert_eq!(response.status(), 200);
    let response: Value = response.json().await.unwrap();
    assert_eq!(
        response,
        json!({ "data": null, "errors": [{ "message": "a batch of 4 operations is over the limit of 3 (graphQLLimits.batch)",
                                           "extensions": { "code": "LIMIT_EXCEEDED" } }] })
    );
    let batch: Vec<Value> = (0..3).map(|_| json!({ "query": "{ tenants { name } }" })).collect();
    let response: Value = server.post_raw(Value::Array(batch).to_string()).await.json().await.unwrap();
    assert_eq!(response.as_array().unwrap().len(), 3);

    // Contents: the basic set's six files hold more than 300 bytes, one file less.
    // Over the budget the request stops and gets that one error.
    let response = server.graphql("{ tenants { name } sourceMigrations { file contents } }", json!({})).await;
    assert_eq!(
        response,
        json!({ "data": null, "errors": [{
            "message": "the answer would hold more than 300 bytes of contents (graphQLLimits.contentsBytes); \
                        ask for fewer migrations' contents at a time",
            "extensions": { "code": "LIMIT_EXCEEDED" } }] })
    );
    let one = server.data("{ sourceMigration(file: \"ref/001.sql\") { contents } }", json!({})).await;
    let on_disk = std::fs::read_to_string(server.ws.migrations().join("ref/001.sql")).unwrap();
    assert!(on_disk.len() <= 300);
    assert_eq!(one["sourceMigration"]["contents"], on_disk);

    // Nothing was lost or added by any of it; the config shows the limits.
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    let config = server.get("/v2/config").await.text().await.unwrap();
    assert!(
        config.contains("graphQLLimits:\n  complexity: 50\n  depth: 3\n  batch: 3\n  contentsBytes: 300\n"),
        "{config}"
    );
}

#[tokio::test]
async fn introspection_fits_the_default_limits() {
    let server = Server::start("basic", "").await;
    let query = "query IntrospectionQuery { __schema { queryType { name } mutationType { name } \
        types { ...FullType } directives { name description locations args { ...InputValue } } } } \
        fragment FullType on __Type { kind name description \
          fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } \
          inputFields { ...InputValue } interfaces { ...TypeRef } \
          enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } } \
        fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue } \
        fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name \
          ofType { kind name ofType { kind name ofType { kind name } } } } } } } }";
    let data = server.data(query, json!({})).await;
    assert_eq!(data["__schema"]["queryType"]["name"], "Query");
}

#[tokio::test]
async fn graphql_is_accepted_only_as_json() {
    let server = Server::start("basic", "").await;
    let mutation =
        json!({ "query": "mutation { createVersion(input: {versionName: \"csrf\"}) { version { id } } }" }).to_string();
    for content_type in [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let response = server.post_typed(content_type, mutation.clone()).await;
        assert_eq!(response.status(), 415, "{content_type}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["errors"][0]["extensions"]["code"], "UNSUPPORTED_MEDIA_TYPE");
        let hint = if content_type.starts_with("multipart") {
            ""
        } else {
            " (or carry Authorization: Bearer; allowFormContentType: true accepts JSON sent as a form or as text)"
        };
        assert_eq!(
            body["errors"][0]["message"],
            format!("POST /v2/service takes Content-Type: application/json, not {content_type}{hint}")
        );
    }
    let none = server.client.post(server.url("/v2/service")).body(mutation.clone()).send().await.unwrap();
    assert_eq!(none.status(), 415);
    let body: Value = none.json().await.unwrap();
    assert_eq!(
        body["errors"][0]["message"],
        "POST /v2/service takes Content-Type: application/json; the request has none"
    );
    assert_eq!(server.ws.count("svc", "svc_versions").await, 0, "no mutation ran");

    let with_charset =
        server.post_typed("application/json; charset=utf-8", "{\"query\":\"{ tenants { name } }\"}").await;
    assert_eq!(with_charset.status(), 200);
    assert_eq!(with_charset.headers()["content-type"], "application/json");
    let graphql_response = server
        .client
        .post(server.url("/v2/service"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/graphql-response+json, application/json;q=0.9")
        .body("{\"query\":\"{ tenants { name } }\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(graphql_response.status(), 200);
    assert_eq!(graphql_response.headers()["content-type"], "application/graphql-response+json");
    assert_eq!(graphql_response.json::<Value>().await.unwrap(), json!({ "data": { "tenants": [] } }));

    // A bearer credential, which no browser attaches cross-origin, is
    // accepted whatever the content type (curl -d sends a form's).
    let bearer = server
        .client
        .post(server.url("/v2/service"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .bearer_auth("anything")
        .body("{\"query\":\"{ tenants { name } }\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status(), 200);
    drop(server);

    // migrator's clients: allowFormContentType accepts JSON sent as a form or text.
    let server = Server::start("basic", "allowFormContentType: true\n").await;
    for content_type in ["application/x-www-form-urlencoded", "text/plain"] {
        let response = server.post_typed(content_type, mutation.clone()).await;
        assert_eq!(response.status(), 200, "{content_type}");
    }
    assert_eq!(server.ws.count("svc", "svc_versions").await, 2);
    assert_eq!(server.post_typed("multipart/form-data; boundary=x", mutation.clone()).await.status(), 415);
}

#[tokio::test]
async fn api_v1_is_gone_with_a_pointer_to_v2() {
    let server = Server::start("basic", "").await;
    for (method, path) in [("GET", "/v1/config"), ("POST", "/v1/migrations"), ("GET", "/v1"), ("GET", "/v1/tenants")] {
        let response = server.client.request(method.parse().unwrap(), server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 410, "{method} {path}");
        assert_eq!(
            response.json::<Value>().await.unwrap(),
            json!({ "error": { "code": "GONE", "message": "API v1 is retired; use /v2 (GraphQL at POST /v2/service)" } })
        );
    }
}

fn one_line(output: &std::process::Output) -> String {
    assert!(!output.status.success(), "must exit non-zero");
    let stderr = String::from_utf8_lossy(&output.stderr).trim_end().to_string();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn a_data_source_of_another_driver_stops_start_up_and_creates_nothing() {
    let ws = Workspace::new("basic");
    let workdir = ws.path().join("work");
    std::fs::create_dir_all(&workdir).unwrap();
    for (data_source, shape, owner) in [
        ("postgres://user:s3cret@db.example.com:5432/app", "a postgres:// URL", "postgres"),
        ("mysql://user:s3cret@db.example.com:3306/app", "a mysql:// URL", "mysql"),
    ] {
        let yaml = format!(
            "baseLocation: {}\ndriver: sqlite\ndataSource: {data_source}\n{}port: {}\n",
            ws.migrations().display(),
            crate::support::DIRECTORIES,
            ws.port
        );
        let config = ws.write_config(&yaml);
        let output = Command::new(crate::support::strata_bin())
            .env("SVC_YAML", &config)
            .current_dir(&workdir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = one_line(&output);
        assert_eq!(
            stderr,
            format!(
                "strata: {}: property dataSource: is {shape}, a form of driver {owner}, but driver is sqlite; \
                 sqlite takes a sqlite: URL or a file path",
                config.display()
            )
        );
        assert!(!stderr.contains("s3cret"));
        assert_eq!(std::fs::read_dir(&workdir).unwrap().count(), 0, "nothing created in the working directory");
    }
    let yaml = format!(
        "baseLocation: {}\ndriver: postgres\ndataSource: \"svc:s3cret@tcp(127.0.0.1:3306)/app\"\n{}port: {}\n",
        ws.migrations().display(),
        crate::support::DIRECTORIES,
        ws.port
    );
    let stderr = one_line(&run_to_exit(&ws.write_config(&yaml), &[]));
    assert!(
        stderr.ends_with(
            "property dataSource: is a Go MySQL DSN, a form of driver mysql, but driver is postgres; \
                              postgres takes a postgres:// URL or libpq key=value pairs"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn tenant_names_of_single_schemas_and_engine_schemas_are_refused() {
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    let reserved: &[&str] = match backend() {
        Backend::Sqlite => &["main", "Temp"],
        Backend::Postgres => &["public", "pg_catalog", "pg_whatever", "information_schema"],
        Backend::Mysql => &["mysql", "sys", "performance_schema", "information_schema"],
        Backend::Sqlserver => &["sys", "dbo", "guest", "db_owner", "INFORMATION_SCHEMA"],
    };
    let engine = match backend() {
        Backend::Sqlite => "SQLite",
        Backend::Postgres => "PostgreSQL",
        Backend::Mysql => "MySQL and MariaDB",
        Backend::Sqlserver => "SQL Server",
    };
    let mut cases: Vec<(String, String)> = reserved
        .iter()
        .map(|name| (name.to_string(), format!("invalid tenant name: name {name:?} is reserved by {engine}")))
        .collect();
    for single in ["ref", "config", "REF"] {
        cases.push((single.into(), format!("invalid tenant name: name {single:?} is a configured single schema")));
    }
    for (name, message) in cases {
        let result = server.create_tenant(json!({ "tenantName": name, "versionName": "evil" })).await;
        assert_eq!(result["data"], Value::Null, "{name}");
        assert_eq!(result["errors"][0]["extensions"]["code"], "INVALID_TENANT_NAME", "{name}");
        assert_eq!(result["errors"][0]["message"], message, "{name}");
    }
    // Nothing was created: no version, no tenant, no tenant rows in the single schemas' bookkeeping.
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 0);
    assert_eq!(
        server.ws.rows("svc", "select count(*) from svc_migrations where db_schema not in ('ref', 'config')").await,
        [[json!(0)]]
    );
    let ok = server.create_tenant(json!({ "tenantName": "acme", "versionName": "t" })).await;
    assert!(ok.get("errors").is_none(), "{ok}");
}

/// Starts `strata` with extra raw environment variables, waits for
/// `/health`, and returns what it answered.
async fn health_with_env(ws: &Workspace, env: &[(&str, OsString)]) -> reqwest::StatusCode {
    let config = ws.write_config(&ws.config(""));
    let mut command = Command::new(crate::support::strata_bin());
    command.env("SVC_YAML", &config).stdout(Stdio::null()).stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let url = format!("http://127.0.0.1:{}/health", ws.port);
    let mut answer = None;
    for _ in 0..100 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("strata exited with {status}");
        }
        if let Ok(response) = reqwest::get(&url).await {
            answer = Some(response.status());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    answer.expect("strata did not answer")
}

#[tokio::test]
async fn a_non_utf8_variable_matters_only_when_the_config_refers_to_it() {
    if backend() != Backend::Sqlite {
        return;
    }
    let latin1 = OsString::from_vec(b"caf\xe9".to_vec());
    let ws = Workspace::new("basic");
    assert_eq!(health_with_env(&ws, &[("STRATA_TEST_LATIN1", latin1.clone())]).await, 200);

    let yaml = ws.config("").replace("port: ", "port: ${STRATA_TEST_PORT}\nlogLevel: ${STRATA_TEST_LATIN1}\n#");
    let config = ws.write_config(&yaml);
    let output = Command::new(crate::support::strata_bin())
        .env("SVC_YAML", &config)
        .env("STRATA_TEST_PORT", ws.port.to_string())
        .env("STRATA_TEST_LATIN1", &latin1)
        .output()
        .unwrap();
    assert_eq!(
        one_line(&output),
        format!(
            "strata: {}: property logLevel: environment variable STRATA_TEST_LATIN1 is not valid UTF-8",
            config.display()
        )
    );
}

#[tokio::test]
async fn a_sqlite_main_file_named_svc_db_works() {
    if backend() != Backend::Sqlite {
        return;
    }
    let ws = Workspace::new("basic");
    let yaml = ws.config("").replace("/db/main.db?mode=rwc", "/data/svc.db?mode=rwc");
    assert!(yaml.contains("/data/svc.db"), "{yaml}");
    let server = Server::start_in(ws, &yaml, "").await;
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    server.create_tenant(json!({ "tenantName": "acme", "versionName": "t" })).await;
    let mut files: Vec<String> = std::fs::read_dir(server.ws.path().join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["acme.db", "config.db", "ref.db", "svc.db", "svc.lock.db", "svc.schema.db"]);
    // The bookkeeping lives in svc.schema.db; the main file holds no service table.
    let svc =
        sqlx::SqliteConnection::connect(&format!("sqlite://{}", server.ws.path().join("data/svc.schema.db").display()));
    let mut svc = svc.await.unwrap();
    let versions: i64 = sqlx::query_scalar("select count(*) from svc_versions").fetch_one(&mut svc).await.unwrap();
    assert_eq!(versions, 2);
    let main = sqlx::SqliteConnection::connect(&format!("sqlite://{}", server.ws.path().join("data/svc.db").display()));
    let mut main = main.await.unwrap();
    let tables: i64 = sqlx::query_scalar("select count(*) from sqlite_master where name like 'svc_%'")
        .fetch_one(&mut main)
        .await
        .unwrap();
    assert_eq!(tables, 0);
}

#[tokio::test]
async fn build_info_names_the_git_revision() {
    let server = Server::start("basic", "").await;
    let info: Value = server.get("/").await.json().await.unwrap();
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    match head {
        Ok(output) if output.status.success() && std::env::var_os("STRATA_SHA").is_none() => {
            assert_eq!(info["sha"], String::from_utf8_lossy(&output.stdout).trim());
        }
        _ => assert!(info["sha"].is_string()),
    }
}

/// Every refusal of `/v2/service` before an operation runs has GraphQL's
/// error shape with an `extensions.code`, as `application/json`: a body
/// over 1 MiB (413), a wrong method (405), a query that does not parse or
/// validate, a depth or complexity over its limit (200, as GraphQL answers
/// are). A plain route's wrong method keeps the plain routes' shape.
#[tokio::test]
async fn refusals_of_the_graphql_endpoint_have_the_graphql_error_shape() {
    let server = Server::start("basic", SMALL_LIMITS).await;
    async fn answer(response: reqwest::Response) -> (u16, String, Value) {
        let status = response.status().as_u16();
        let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
        (status, content_type, response.json().await.unwrap())
    }
    let error =
        |message: &str, code: &str| json!({ "errors": [{ "message": message, "extensions": { "code": code } }] });
    let json_type = "application/json".to_string();

    let oversized = answer(server.post_raw(vec![b' '; 1024 * 1024 + 1]).await).await;
    let too_large = error("the request body is over the limit of 1048576 bytes", "PAYLOAD_TOO_LARGE");
    assert_eq!(oversized, (413, json_type.clone(), too_large));

    let get = server.get("/v2/service").await;
    assert_eq!(get.headers()["allow"], "POST");
    let not_allowed = error("GET is not allowed on /v2/service (use POST)", "METHOD_NOT_ALLOWED");
    assert_eq!(answer(get).await, (405, json_type.clone(), not_allowed));
    let delete = server.client.delete(server.url("/health")).send().await.unwrap();
    let plain = json!({ "error": { "code": "METHOD_NOT_ALLOWED", "message": "DELETE is not allowed on /health" } });
    assert_eq!(answer(delete).await, (405, json_type.clone(), plain));

    let unparsed = answer(server.post_raw(json!({ "query": "{ tenants { name }" }).to_string()).await).await;
    let parse_failed = json!({ "data": null, "errors": [{
        "message": " --> 1:19\n  |\n1 | { tenants { name }\n  |                   ^---\n  |\n  = expected selection",
        "locations": [{ "line": 1, "column": 19 }],
        "extensions": { "code": "GRAPHQL_PARSE_FAILED" },
    }] });
    assert_eq!(unparsed, (200, json_type.clone(), parse_failed));
    let invalid = answer(server.post_raw(json!({ "query": "{ zzz }" }).to_string()).await).await;
    let validation_failed = json!({ "data": null, "errors": [{
        "message": "Unknown field \"zzz\" on type \"Query\".",
        "locations": [{ "line": 1, "column": 3 }],
        "extensions": { "code": "GRAPHQL_VALIDATION_FAILED" },
    }] });
    assert_eq!(invalid, (200, json_type.clone(), validation_failed));

    let deep = json!({ "query": "{ __schema { types { fields { name } } } }" }).to_string();
    // Refused by the validation hook: `data` is null, as for any request error.
    let refused = |message: &str| {
        let mut answer = error(message, "LIMIT_EXCEEDED");
        answer["data"] = Value::Null;
        answer
    };
    let too_deep = refused("query depth 4 is over the limit of 3 (graphQLLimits.depth)");
    assert_eq!(answer(server.post_raw(deep).await).await, (200, json_type.clone(), too_deep));
    let complex = "{ a: tenants(first: 9) { name } b: tenants(first: 9) { name } c: tenants(first: 9) { name } \
                   d: tenants(first: 9) { name } e: tenants(first: 9) { name } }";
    let too_complex = refused("query complexity 55 is over the limit of 50 (graphQLLimits.complexity)");
    assert_eq!(
        answer(server.post_raw(json!({ "query": complex }).to_string()).await).await,
        (200, json_type, too_complex)
    );
}

/// Twenty-five fragments, each spreading the one before twice: 2^25
/// fields once expanded, in under 2 KB of text.
fn fragment_bomb(levels: usize) -> String {
    let mut query = String::from("{ ...F");
    query.push_str(&levels.to_string());
    query.push_str(" } fragment F0 on Query { tenants(first: 3) { name } }");
    for level in 1..=levels {
        query.push_str(&format!(" fragment F{level} on Query {{ ...F{} ...F{} }}", level - 1, level - 1));
    }
    query
}

#[tokio::test]
async fn a_fragment_bomb_is_refused_by_its_expanded_cost_before_the_validator_sees_it() {
    let server = Server::start("basic", "").await;
    let bomb = fragment_bomb(24);
    assert!(bomb.len() < 2_000, "{}", bomb.len());
    let response: Value = server.post_raw(json!({ "query": bomb }).to_string()).await.json().await.unwrap();
    assert_eq!(
        limit_error(&response),
        (
            "query complexity 33554432 is over the limit of 1000 (graphQLLimits.complexity), fragments expanded",
            "LIMIT_EXCEEDED"
        )
    );
    assert_eq!(response["data"], Value::Null);
    // 64 levels saturate instead of overflowing; a fragment that spreads
    // itself is refused by name.
    let response: Value =
        server.post_raw(json!({ "query": fragment_bomb(70) }).to_string()).await.json().await.unwrap();
    assert_eq!(limit_error(&response), ("fragment spreads nest more than 64 deep", "LIMIT_EXCEEDED"));
    let cycle = "{ ...A } fragment A on Query { ...B } fragment B on Query { versions { id } ...A }";
    let response: Value = server.post_raw(json!({ "query": cycle }).to_string()).await.json().await.unwrap();
    assert_eq!(limit_error(&response), ("fragment A spreads itself", "LIMIT_EXCEEDED"));
    // A query its fragments keep within the limit still runs.
    let fine = fragment_bomb(3);
    assert_eq!(server.data(&fine, json!({})).await["tenants"], json!([]));
}

#[tokio::test]
async fn made_up_http_methods_do_not_grow_the_metrics() {
    let server = Server::start("basic", "").await;
    let made_up = |i: usize| reqwest::Method::from_bytes(format!("M{i}X").as_bytes()).unwrap();
    let first = server.client.request(made_up(0), server.url("/health")).send().await.unwrap();
    assert_eq!(first.status(), 405);
    let before = server.get("/metrics").await.text().await.unwrap();
    for i in 1..2_000 {
        server.client.request(made_up(i), server.url("/health")).send().await.unwrap();
    }
    let after = server.get("/metrics").await.text().await.unwrap();
    assert!(after.contains("method=\"OTHER\""), "{after}");
    assert!(!after.contains("M1999X") && !after.contains("M0X"), "a made-up method is a label");
    // The same series, their counts grown by a few digits.
    assert!(after.len() < before.len() + 2_000, "{} → {} bytes", before.len(), after.len());
    // The process's processor time in fractions of a second (2,000
    // requests took some), never rounded down to whole seconds. It is read
    // in clock ticks (1/100 s), so one reading in a hundred falls on a
    // whole second: three readings, some work between them.
    let cpu_of = |text: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix("process_cpu_seconds_total "))
            .and_then(|value| value.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no process_cpu_seconds_total: {text}"))
    };
    let mut readings = vec![cpu_of(&after)];
    while readings.len() < 3 && readings.iter().all(|cpu| cpu.fract() == 0.0) {
        for i in 0..200 {
            server.client.request(made_up(i), server.url("/health")).send().await.unwrap();
        }
        readings.push(cpu_of(&server.get("/metrics").await.text().await.unwrap()));
    }
    assert!(readings.iter().all(|cpu| *cpu > 0.0), "process_cpu_seconds_total {readings:?}");
    assert!(readings.iter().any(|cpu| cpu.fract() != 0.0), "process_cpu_seconds_total {readings:?}");
}

#[tokio::test]
async fn one_command_has_one_target_and_since_must_be_a_time() {
    let server = Server::start("basic", "").await;
    let run = |args: &[&str], server_env: Option<&str>| {
        let mut command = Command::new(crate::support::strata_bin());
        command.arg("--config").arg(server.config_path()).args(args).env_remove("SVC_YAML");
        match server_env {
            Some(url) => command.env("STRATA_SERVER", url),
            None => command.env_remove("STRATA_SERVER"),
        };
        command.output().unwrap()
    };
    let url = server.url("");
    let from_env = run(&["apply", "--version", "v1"], Some(&url));
    assert_eq!(from_env.status.code(), Some(2), "{}", String::from_utf8_lossy(&from_env.stderr));
    let said = String::from_utf8_lossy(&from_env.stderr).to_string();
    assert!(
        said.contains(" and STRATA_SERVER ") && said.contains("name two targets") && said.ends_with("nothing ran\n")
    );
    let flag = run(&["--server", &url, "apply", "--version", "v1"], None);
    assert_eq!(flag.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&flag.stderr).contains(" and --server "));
    assert_eq!(server.ws.count("svc", "svc_versions").await, 0, "nothing ran anywhere");

    for since in ["yesterday", "2026-13-45", "1 hour ago"] {
        let refused = run(&["audit", "--since", since], None);
        assert_eq!(refused.status.code(), Some(2), "{since}");
        assert!(String::from_utf8_lossy(&refused.stderr).contains("is not a time"), "{since}");
    }
    let dated = run(&["audit", "--since", "2000-01-01", "--json"], None);
    assert_eq!(dated.status.code(), Some(0), "{}", String::from_utf8_lossy(&dated.stderr));
    let expires = run(&["token", "create", "--name", "t", "--role", "viewer", "--expires", "0"], None);
    assert_eq!(expires.status.code(), Some(2), "{}", String::from_utf8_lossy(&expires.stderr));
    assert_eq!(server.ws.count("svc", "svc_tokens").await, 0);
}

#[tokio::test]
async fn a_connection_whose_headers_never_end_is_closed_and_connections_are_capped() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = Server::start("basic", "headerReadTimeoutSeconds: 2\nmaxConnections: 2\n").await;
    let address = format!("127.0.0.1:{}", server.ws.port);
    let stalled = || async {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(b"GET /health HTTP/1.1\r\nHost: strata\r\nX-Never: ends").await.unwrap();
        stream
    };
    let (mut first, second) = (stalled().await, stalled().await);
    // Both slots held (or one, and the test client's pooled connection the
    // other): a new connection is not served while they stall.
    let fresh = || reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let third = fresh().get(server.url("/health")).timeout(Duration::from_millis(800)).send().await;
    assert!(third.is_err(), "served beyond maxConnections: {third:?}");
    // The server closes a stalled connection (it may say 408 first).
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), first.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the stalled connection was never closed");
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer}");
    drop(second);
    // Its slot freed, clients are served again.
    let served = fresh().get(server.url("/health")).timeout(Duration::from_secs(20)).send().await.unwrap();
    assert_eq!(served.status(), 200);
}

/// A body sent a byte at a time holds its connection no longer than
/// `bodyReadTimeoutSeconds` (408, the connection closed); one address
/// holds at most `maxConnectionsPerClient` connections (more are closed
/// as they come) while another address is still served.
#[tokio::test]
async fn a_slow_body_is_cut_off_and_one_address_holds_a_bounded_share_of_connections() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = Server::start("basic", "bodyReadTimeoutSeconds: 2\nmaxConnectionsPerClient: 3\n").await;
    let address: std::net::SocketAddr = format!("127.0.0.1:{}", server.ws.port).parse().unwrap();
    let from = |client: [u8; 4]| async move {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(std::net::SocketAddr::from((client, 0))).unwrap();
        socket.connect(address).await.unwrap()
    };

    let mut slow = from([127, 0, 0, 1]).await;
    let head =
        "POST /v2/service HTTP/1.1\r\nHost: strata\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
    slow.write_all(head.as_bytes()).await.unwrap();
    let dribble = async {
        for _ in 0..30 {
            if slow.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(4), dribble).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the slow body's connection was never closed");
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("the request body did not arrive within 2 s (bodyReadTimeoutSeconds)"), "{answer}");

    // Three open connections from 127.0.0.3: a fourth is closed at once.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = from([127, 0, 0, 3]).await;
        stream.write_all(b"GET /health HTTP/1.1\r\nHost: strata\r\n\r\n").await.unwrap();
        let mut first = [0u8; 12];
        stream.read_exact(&mut first).await.unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        held.push(stream);
    }
    let mut fourth = from([127, 0, 0, 3]).await;
    let _ = fourth.write_all(b"GET /health HTTP/1.1\r\nHost: strata\r\n\r\n").await;
    let mut closed = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), fourth.read_to_end(&mut closed)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "served beyond maxConnectionsPerClient: {read:?} {closed:?}");
    // Another address is served meanwhile.
    let mut other = from([127, 0, 0, 4]).await;
    other.write_all(b"GET /health HTTP/1.1\r\nHost: strata\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut served = Vec::new();
    other.read_to_end(&mut served).await.unwrap();
    assert!(served.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&served));
    drop(held);
}
