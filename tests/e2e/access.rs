//! Who may change the fleet, on every engine: API tokens (shown once,
//! stored as a hash, revoked, expired), permissions per GraphQL field that
//! aliases, batches and fragments cannot escape, approvals that the
//! starter cannot give and that a changed file invalidates, an
//! authenticating proxy trusted only from its addresses, the throttle of
//! failed attempts, the audit log's hash chain, and where the service
//! listens without authentication.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Server, Workspace, code, json_of, stderr, stdout, strata};

const AUTH: &str = "auth:\n  tokens: true\n";

/// Posts a GraphQL body with `token` (if any): the status and the answer.
async fn post(server: &Server, token: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = server.client.post(server.url("/v2/service")).header("Content-Type", "application/json");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Posts a GraphQL query with a bearer `token`: the status and the answer.
pub(crate) async fn query(server: &Server, token: &str, query: &str) -> (u16, Value) {
    post(server, Some(token), json!({ "query": query })).await
}

/// Creates a token with the command line; its secret.
async fn token(server: &Server, name: &str, role: &str) -> String {
    let output = strata(server.config_path(), &["token", "create", "--name", name, "--role", role, "--json"]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let created = json_of(&output);
    assert_eq!((created["name"].as_str(), created["role"].as_str()), (Some(name), Some(role)));
    created["token"].as_str().unwrap().to_string()
}

fn error_code(answer: &Value) -> &str {
    answer["errors"][0]["extensions"]["code"].as_str().unwrap_or("")
}

async fn versions(server: &Server) -> i64 {
    server.ws.count("svc", "svc_versions").await
}

const CREATE: &str = r#"mutation { createVersion(input: { versionName: "by deployer" }) { version { id } } }"#;

#[tokio::test]
async fn tokens_and_roles_decide_each_field_and_nothing_escapes_them() {
    let server = Server::start("basic", AUTH).await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let deployer = token(&server, "ci", "deployer").await;
    let admin = token(&server, "ops", "admin").await;
    assert!(viewer.starts_with("strata_") && viewer.len() == 50, "{viewer}");

    // Stored as a hash only; listed without secrets.
    let stored = server.ws.rows("svc", "select name, hash from svc_tokens order by name").await;
    assert_eq!(stored.len(), 3);
    for row in &stored {
        let hash = row[1].as_str().unwrap();
        assert_eq!(hash.len(), 64);
        assert!(![&viewer, &deployer, &admin].iter().any(|secret| hash.contains(&secret[7..])));
    }
    let listed = strata(server.config_path(), &["token", "list", "--json"]).await;
    let listed_text = stdout(&listed);
    assert!(listed_text.contains("\"dashboard\"") && !listed_text.contains(&viewer[7..]), "{listed_text}");
    let duplicate = strata(server.config_path(), &["token", "create", "--name", "ci", "--role", "viewer"]).await;
    assert_ne!(code(&duplicate), 0);
    assert!(stderr(&duplicate).contains("a token named \"ci\" exists"), "{}", stderr(&duplicate));

    // No credential, a bad one, a mangled header: 401, nothing run.
    let (status, answer) = post(&server, None, json!({ "query": CREATE })).await;
    assert_eq!(
        (status, answer["errors"][0]["extensions"]["code"].as_str()),
        (401, Some("UNAUTHENTICATED")),
        "{answer}"
    );
    let (status, answer) = post(&server, Some("strata_not-a-token"), json!({ "query": "{ tenants { name } }" })).await;
    assert_eq!(status, 401, "{answer}");
    let raw = server.client.post(server.url("/v2/service")).header("Authorization", format!("Basic {viewer}"));
    let response = raw.header("Content-Type", "application/json").body("{}").send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], "Bearer realm=\"strata\"");
    // Probes stay open, without details; the schema needs a reader.
    let health: Value = server.get("/health").await.json().await.unwrap();
    assert_eq!(health, json!({ "status": "UP", "auth": "configured" }));
    assert_eq!(server.get("/v2/schema").await.status(), 401);

    // A viewer reads, and cannot mutate: not through an alias, a batch or
    // a fragment. 403 FORBIDDEN, and no version is written.
    let (status, answer) = query(&server, &viewer, "{ tenants { name } identity { actor roles } }").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["identity"], json!({ "actor": "token:dashboard", "roles": ["viewer"] }));
    let aliased = r#"mutation { harmless: createVersion(input: { versionName: "sneaky" }) { version { id } } }"#;
    let (status, answer) = query(&server, &viewer, aliased).await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    assert_eq!(answer["errors"][0]["path"], json!(["harmless"]));
    let batch = json!([{ "query": "{ tenants { name } }" }, { "query": CREATE }]);
    let (status, answer) = post(&server, Some(&viewer), batch).await;
    assert_eq!(status, 403, "{answer}");
    assert!(answer[0]["errors"].is_null() && answer[1]["errors"][0]["extensions"]["code"] == "FORBIDDEN", "{answer}");
    let fragment = r#"mutation { ...go } fragment go on Mutation { createVersion(input: { versionName: "f" }) { version { id } } }"#;
    let (status, answer) = query(&server, &viewer, fragment).await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let (status, answer) = query(&server, &viewer, "{ audit { id } }").await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    assert_eq!(versions(&server).await, 0);

    // A deployer creates versions, and may not approve or release.
    let (status, answer) = query(&server, &deployer, CREATE).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["createVersion"]["version"]["id"], 1);
    let (status, answer) = query(&server, &deployer, "mutation { approveRollout(id: 1) { id } }").await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let (status, answer) = query(&server, &deployer, r#"mutation { releaseQuarantined(tenantNames: ["a"]) }"#).await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let config = server.client.get(server.url("/v2/config")).bearer_auth(&deployer).send().await.unwrap();
    assert_eq!(config.status(), 403);
    let config = server.client.get(server.url("/v2/config")).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(config.status(), 200);
    assert_eq!(versions(&server).await, 1);

    // The audit log names each of them, the refusals too.
    let (status, answer) = query(&server, &admin, "{ audit { actor action target outcome } }").await;
    assert_eq!(status, 200, "{answer}");
    let rows = answer["data"]["audit"].as_array().unwrap().clone();
    let has = |actor: &str, action: &str, outcome: &str| {
        rows.iter().any(|r| {
            r["actor"] == actor && r["action"] == action && r["outcome"].as_str().unwrap().starts_with(outcome)
        })
    };
    assert!(has("token:ci", "createVersion", "ok"), "{rows:?}");
    assert!(has("token:dashboard", "createVersion", "refused: FORBIDDEN"), "{rows:?}");
    assert!(has("token:ci", "approveRollout", "refused: FORBIDDEN"), "{rows:?}");
    assert!(rows.iter().any(|r| r["action"] == "token create" && r["actor"].as_str().unwrap().starts_with("cli:")));
    assert!(has("unauthenticated:127.0.0.1", "authenticate", "refused: UNAUTHENTICATED"), "{rows:?}");
    // `last` and `since`, read as such from the database: the same rows as
    // the whole log's tail, the window's `since` cutting inside `last`.
    let (_, whole) = query(&server, &admin, "{ audit { id at } }").await;
    let whole = whole["data"]["audit"].as_array().unwrap().clone();
    let (_, tail) = query(&server, &admin, "{ audit(last: 3) { id at } }").await;
    assert_eq!(tail["data"]["audit"].as_array().unwrap(), &whole[whole.len() - 3..], "{tail}");
    let at = whole[whole.len() - 2]["at"].as_str().unwrap();
    let since = format!("{{ audit(since: \"{at}\", last: 5) {{ id at }} }}");
    let (_, cut) = query(&server, &admin, &since).await;
    let expected: Vec<&Value> = whole.iter().rev().take(5).rev().filter(|r| r["at"].as_str().unwrap() >= at).collect();
    assert_eq!(cut["data"]["audit"].as_array().unwrap().iter().collect::<Vec<_>>(), expected, "{cut}");
    let (_, later) = query(&server, &admin, "{ audit(since: \"2999-01-01\") { id } }").await;
    assert_eq!(later["data"]["audit"], json!([]));

    // Revoked: refused within the token cache's 2 s.
    let revoked = strata(server.config_path(), &["token", "revoke", "dashboard"]).await;
    assert_eq!(code(&revoked), 0, "{}", stderr(&revoked));
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (status, _) = query(&server, &viewer, "{ tenants { name } }").await;
    assert_eq!(status, 401);
    // Expired: refused, saying so.
    let expired = token(&server, "short", "viewer").await;
    server.ws.execute("svc", &format!("update {}svc_tokens set expires = 1 where name = 'short'", svc_prefix())).await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (status, answer) = query(&server, &expired, "{ tenants { name } }").await;
    assert_eq!(status, 401);
    assert!(answer["errors"][0]["message"].as_str().unwrap().contains("expired"), "{answer}");

    // No secret in any log line.
    let log = server.log();
    for secret in [&viewer, &deployer, &admin, &expired] {
        assert!(!log.contains(&secret[7..]), "a token's secret is in the log");
    }
}

/// `svc.` where the backend names the schema in SQL run outside the
/// service (SQLite runs in the schema's own file).
pub(crate) fn svc_prefix() -> &'static str {
    if crate::support::backend() == crate::support::Backend::Sqlite { "" } else { "svc." }
}

const ROLLOUT: &str = "id status events { action actor }";

async fn rollout_status(server: &Server, token: &str, id: i64) -> Value {
    let (_, answer) = query(server, token, &format!("{{ rollouts {{ {ROLLOUT} }} }}")).await;
    answer["data"]["rollouts"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap()
}

async fn wait_for(server: &Server, token: &str, id: i64, status: &str) -> Value {
    for _ in 0..600 {
        let rollout = rollout_status(server, token, id).await;
        if rollout["status"] == status {
            return rollout;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("rollout {id} never reached {status}: {}", server.log());
}

/// A desired schema the caller writes is SQL the service runs on the
/// database (in a scratch schema rolled back, a scratch database dropped):
/// with a reader's token it would run a reader's SQL with the service's
/// credentials — on PostgreSQL a `DO` block reading any tenant's rows into
/// the names the diff answers, or into an error it quotes. So the argument
/// needs a deployer; a reader still diffs against the configured file.
#[tokio::test]
async fn a_desired_schema_given_as_text_is_a_deployers_sql_and_a_reader_is_refused_before_it_runs() {
    let server = Server::start("basic", AUTH).await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let deployer = token(&server, "ci", "deployer").await;
    let admin = token(&server, "ops", "admin").await;
    let body = |token_name: &str| {
        json!({
            "query": "query($desired: String) { desiredDiff(desired: $desired) { tenants differing } }",
            "variables": { "desired": format!("create table {{schema}}.{token_name}_probe (id integer primary key);\n") },
        })
    };

    let (status, answer) = post(&server, Some(&viewer), body("viewer")).await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let message = answer["errors"][0]["message"].as_str().unwrap();
    assert_eq!(message, "token:dashboard (role viewer) may not deploy", "{answer}");
    assert!(answer["data"].is_null() || answer["data"]["desiredDiff"].is_null(), "{answer}");
    // Without the argument a reader reaches the diff (and is told that no
    // desiredSchema is configured): the refusal is the argument's.
    let (status, answer) = query(&server, &viewer, "{ desiredDiff { tenants } }").await;
    assert_eq!((status, error_code(&answer)), (200, "INVALID_INPUT"), "{answer}");

    let (status, answer) = post(&server, Some(&deployer), body("deployer")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["desiredDiff"], json!({ "tenants": 0, "differing": 0 }), "{answer}");

    let (status, answer) = query(&server, &admin, "{ audit { actor action outcome } }").await;
    assert_eq!(status, 200, "{answer}");
    let rows: Vec<&Value> =
        answer["data"]["audit"].as_array().unwrap().iter().filter(|row| row["action"] == "desiredDiff").collect();
    assert_eq!(rows.len(), 2, "{answer}");
    assert_eq!(rows[0]["actor"], "token:dashboard");
    assert!(rows[0]["outcome"].as_str().unwrap().starts_with("refused: FORBIDDEN"), "{answer}");
    // The deployer's text ran on the database: on record, by its digest.
    assert_eq!((rows[1]["actor"].as_str(), rows[1]["outcome"].as_str()), (Some("token:ci"), Some("ok")), "{answer}");
}

#[tokio::test]
async fn the_starter_cannot_approve_and_a_changed_file_voids_the_approval() {
    let server = Server::start("basic", AUTH).await;
    let alice = token(&server, "alice", "admin").await;
    let bob = token(&server, "bob", "approver").await;
    for name in ["t1", "t2", "t3"] {
        let create = format!(
            r#"mutation {{ createTenant(input: {{ tenantName: "{name}", versionName: "{name}" }}) {{ version {{ id }} }} }}"#
        );
        assert_eq!(query(&server, &alice, &create).await.0, 200);
    }
    server.ws.write_migration("tenants/900.sql", "create table {schema}.rolled (id int);");
    let start = r#"mutation { startRollout(versionName: "r", waves: ["t1:approve", "rest"]) { id } }"#;
    let (status, answer) = query(&server, &alice, start).await;
    assert_eq!(status, 200, "{answer}");
    let id = answer["data"]["startRollout"]["id"].as_i64().unwrap();
    wait_for(&server, &alice, id, "AWAITING_APPROVAL").await;

    // Alice started it: her approval is refused, whatever her role.
    let approve = format!("mutation {{ approveRollout(id: {id}) {{ status }} }}");
    let (status, answer) = query(&server, &alice, &approve).await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    assert!(answer["errors"][0]["message"].as_str().unwrap().contains("token:alice started this rollout"));
    assert_eq!(rollout_status(&server, &alice, id).await["status"], "AWAITING_APPROVAL");
    // Bob approves; the event names him.
    let (status, answer) = query(&server, &bob, &approve).await;
    assert_eq!(status, 200, "{answer}");
    let done = wait_for(&server, &alice, id, "COMPLETED").await;
    let approved = done["events"].as_array().unwrap().iter().find(|e| e["action"] == "approved").unwrap();
    assert_eq!(approved["actor"], "token:bob");
    assert_eq!(done["events"][0]["actor"], "token:alice");

    // A second rollout; a file changes while it awaits approval: refused.
    server.ws.write_migration("tenants/901.sql", "create table {schema}.second (id int);");
    let start = r#"mutation { startRollout(versionName: "r2", waves: ["t1:approve", "rest"]) { id } }"#;
    let id = query(&server, &alice, start).await.1["data"]["startRollout"]["id"].as_i64().unwrap();
    wait_for(&server, &alice, id, "AWAITING_APPROVAL").await;
    server.ws.write_migration("tenants/901.sql", "create table {schema}.second (id int, changed int);");
    let approve = format!("mutation {{ approveRollout(id: {id}) {{ status }} }}");
    let (status, answer) = query(&server, &bob, &approve).await;
    assert_eq!(error_code(&answer), "PLAN_CHANGED", "{status} {answer}");
    assert!(answer["errors"][0]["message"].as_str().unwrap().contains("changed: tenants/901.sql"), "{answer}");
    assert_eq!(rollout_status(&server, &alice, id).await["status"], "AWAITING_APPROVAL");
    assert!(server.ws.tables("t2").await.iter().all(|t| t != "second"));

    // With identities configured, the in-process command line approves
    // nothing, whoever $USER says it is: approvals are the service's.
    // (The file restored first: t1 ran it.)
    server.ws.write_migration("tenants/901.sql", "create table {schema}.second (id int);");
    let cancel = strata(server.config_path(), &["rollout", "cancel", &id.to_string()]).await;
    assert_eq!(code(&cancel), 0, "{}", stderr(&cancel));
    let started = strata(
        server.config_path(),
        &["rollout", "start", "--version", "r3", "--wave", "t1:approve", "--wave", "rest", "--json"],
    )
    .await;
    assert_eq!(code(&started), 0, "{}", stderr(&started));
    let cli_id = json_of(&started)["id"].as_i64().unwrap();
    wait_for(&server, &alice, cli_id, "AWAITING_APPROVAL").await;
    let own = tokio::process::Command::new(crate::support::strata_bin())
        .arg("--config")
        .arg(server.config_path())
        .args(["rollout", "approve", &cli_id.to_string()])
        .env("USER", "bob")
        .env("LOGNAME", "bob")
        .env_remove("STRATA_SERVER")
        .output()
        .await
        .unwrap();
    assert_eq!(code(&own), 16, "{}", stderr(&own));
    assert!(
        stderr(&own).contains(&format!("auth is configured: approve rollout {cli_id} through the service")),
        "{}",
        stderr(&own)
    );
    assert_eq!(rollout_status(&server, &alice, cli_id).await["status"], "AWAITING_APPROVAL");
    // The starter as the command line recorded it is the OS account, not $USER.
    let started_by = rollout_status(&server, &alice, cli_id).await["events"][0]["actor"].clone();
    assert!(started_by.as_str().unwrap().starts_with("cli:") && !started_by.as_str().unwrap().starts_with("cli:bob@"));
    let (status, answer) =
        query(&server, &bob, &format!("mutation {{ approveRollout(id: {cli_id}) {{ status }} }}")).await;
    assert_eq!(status, 200, "{answer}");
    wait_for(&server, &alice, cli_id, "COMPLETED").await;

    // Every step is in the log, and the chain verifies — until a row is
    // edited by hand.
    let verify = strata(server.config_path(), &["audit", "verify"]).await;
    assert_eq!(code(&verify), 0, "{}", stderr(&verify));
    let rows = strata(server.config_path(), &["audit", "--json"]).await;
    let rows = json_of(&rows);
    let actions: Vec<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["actor"].as_str().unwrap(), r["action"].as_str().unwrap()))
        .collect();
    assert!(actions.contains(&("token:alice", "startRollout")) && actions.contains(&("token:bob", "approveRollout")));
    assert!(actions.iter().any(|(actor, action)| actor.starts_with("service:") && *action == "createVersionWave"));
    server.ws.execute("svc", &format!("update {}svc_audit set actor = 'token:bob' where id = 5", svc_prefix())).await;
    let verify = strata(server.config_path(), &["audit", "verify"]).await;
    assert_eq!(code(&verify), 15, "{}", stderr(&verify));
    assert!(stderr(&verify).contains("row 5 does not match its hash: it was edited"), "{}", stderr(&verify));
}

#[tokio::test]
async fn proxy_headers_count_only_from_trusted_addresses_and_failures_are_throttled() {
    let trusted = "auth:\n  proxy:\n    userHeader: X-Forwarded-User\n    rolesHeader: X-Forwarded-Groups\n    \
                   trustedSources: [127.0.0.1/32]\n    roles: { dba: admin, eng: viewer }\n";
    let server = Server::start("basic", trusted).await;
    let as_user = |user: &str, groups: &str| {
        server
            .client
            .post(server.url("/v2/service"))
            .header("Content-Type", "application/json")
            .header("X-Forwarded-User", user)
            .header("X-Forwarded-Groups", groups)
            .body(json!({ "query": CREATE }).to_string())
    };
    let response = as_user("erin", "eng").send().await.unwrap();
    assert_eq!(response.status(), 403);
    let response = as_user("dana", "eng, dba").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let rows =
        server.ws.rows("svc", "select actor, outcome from svc_audit where action = 'createVersion' order by id").await;
    assert_eq!(rows[0][0], "proxy:erin");
    assert_eq!((rows[1][0].as_str(), rows[1][1].as_str()), (Some("proxy:dana"), Some("ok")));
    // A roles header sent twice (a proxy that appends its own after the
    // client's): refused, neither copy chosen; so is a user header holding
    // two values joined. A UTF-8 name is a name.
    let refused = |response: reqwest::Response| async move {
        let status = response.status();
        let said: Value = response.json().await.unwrap();
        (status.as_u16(), said["errors"][0]["message"].as_str().unwrap_or_default().to_string())
    };
    let twice = as_user("mallory", "dba").header("X-Forwarded-Groups", "eng").send().await.unwrap();
    assert_eq!(refused(twice).await, (401, "X-Forwarded-Groups was sent more than once".to_string()));
    let joined = as_user("alice, mallory", "dba").send().await.unwrap();
    assert_eq!(refused(joined).await, (401, "X-Forwarded-User holds two values joined by a comma".to_string()));
    let zoe = server
        .client
        .post(server.url("/v2/service"))
        .header("Content-Type", "application/json")
        .header("X-Forwarded-User", reqwest::header::HeaderValue::from_bytes("zoë".as_bytes()).unwrap())
        .header("X-Forwarded-Groups", "eng")
        .body(json!({ "query": "{ identity { actor } }" }).to_string())
        .send()
        .await
        .unwrap();
    let said: Value = zoe.json().await.unwrap();
    assert_eq!(said["data"]["identity"]["actor"], "proxy:zoë", "{said}");
    drop(server);

    // The same headers from an address the proxy is not at: ignored.
    let untrusted = trusted.replace("127.0.0.1/32", "10.11.12.0/24");
    let server = Server::start("basic", &untrusted).await;
    let response = server
        .client
        .post(server.url("/v2/service"))
        .header("Content-Type", "application/json")
        .header("X-Forwarded-User", "dana")
        .header("X-Forwarded-Groups", "dba")
        .body(json!({ "query": CREATE }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    // Ten failed guesses in a minute (that request showed no credential:
    // no guess): the eleventh gets 429 with Retry-After; the flood is one
    // row in the audit log.
    for _ in 0..10 {
        let (status, _) = post(&server, Some("strata_guess"), json!({ "query": "{ tenants { name } }" })).await;
        assert_eq!(status, 401);
    }
    let (status, answer) = post(&server, Some("strata_guess"), json!({ "query": "{ tenants { name } }" })).await;
    assert_eq!(
        (status, answer["errors"][0]["extensions"]["code"].as_str()),
        (429, Some("TOO_MANY_REQUESTS")),
        "{answer}"
    );
    let response = server
        .client
        .post(server.url("/v2/service"))
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    let retry_after: i64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let logged = server.ws.count("svc", "svc_audit").await;
    assert_eq!(logged, 1, "one failure per address per minute is logged");
    assert_eq!(versions(&server).await, 0);
}

#[tokio::test]
async fn without_auth_the_service_listens_on_loopback_and_warns_when_told_otherwise() {
    let server = Server::start("basic", "").await;
    let health: Value = server.get("/health").await.json().await.unwrap();
    assert_eq!(health["auth"], "none");
    assert!(server.log().contains("listening on loopback only"), "{}", server.log());
    let port = server.ws.port;
    // Nothing answers on another address of this machine.
    if let Some(other) = other_address() {
        let reached = reqwest::Client::new()
            .get(format!("http://{other}:{port}/health"))
            .timeout(Duration::from_secs(2))
            .send()
            .await;
        assert!(reached.is_err(), "the port answered on {other}");
    }
    drop(server);

    let ws = Workspace::new("basic");
    let yaml = ws.config(&format!("listen: 0.0.0.0:{}\n", ws.port));
    let server = Server::start_in(ws, &yaml, "").await;
    assert!(server.log().contains("WITHOUT authentication"), "{}", server.log());
    assert_eq!(server.get("/health").await.json::<Value>().await.unwrap()["auth"], "none");

    // auth.required without any method: refused before it starts.
    let ws = Workspace::new("basic");
    let config = ws.write_config(&ws.config("auth:\n  required: true\n"));
    let output = strata(&config, &["config", "check"]).await;
    assert_eq!(code(&output), 4);
    assert!(stderr(&output).contains("auth.required"), "{}", stderr(&output));
}

/// An address of this machine that is not loopback, if it has one.
fn other_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let address = socket.local_addr().ok()?.ip();
    (!address.is_loopback() && !address.is_unspecified()).then_some(address)
}

/// Runs `strata --server URL args…` with `STRATA_TOKEN`, and no
/// configuration at all.
async fn client(server: &Server, token: &str, args: &[&str]) -> std::process::Output {
    let mut command = tokio::process::Command::new(crate::support::strata_bin());
    command
        .arg("--server")
        .arg(server.url(""))
        .args(args)
        .env_remove("SVC_YAML")
        .env("STRATA_TOKEN", token)
        .current_dir(std::env::temp_dir());
    tokio::time::timeout(Duration::from_secs(120), command.output()).await.unwrap().unwrap()
}

#[tokio::test]
async fn the_command_line_as_a_client_needs_a_token_not_the_database() {
    let server = Server::start("basic", AUTH).await;
    let deployer = token(&server, "ci", "deployer").await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let approver = token(&server, "release", "approver").await;

    let plan = client(&server, &viewer, &["plan", "--check"]).await;
    assert_eq!(code(&plan), 6, "{}{}", stdout(&plan), stderr(&plan));
    assert!(stdout(&plan).contains("schema ref"), "{}", stdout(&plan));

    let refused = client(&server, &viewer, &["apply", "--version", "by a viewer"]).await;
    assert_eq!(code(&refused), 16, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("may not deploy (FORBIDDEN)"), "{}", stderr(&refused));
    let unknown = client(&server, "strata_nope", &["apply", "--version", "x"]).await;
    assert_eq!(code(&unknown), 16, "{}", stderr(&unknown));
    assert_eq!(versions(&server).await, 0);

    let applied = client(&server, &deployer, &["apply", "--version", "from ci", "--json"]).await;
    assert_eq!(code(&applied), 0, "{}", stderr(&applied));
    let results = json_of(&applied);
    assert_eq!(results["version"]["name"], "from ci");
    assert!(results["summary"]["migrationsGrandTotal"].as_i64().unwrap() > 0, "{results}");
    let audit =
        server.ws.rows("svc", "select actor from svc_audit where action = 'createVersion' and outcome = 'ok'").await;
    assert_eq!(audit, vec![vec![json!("token:ci")]]);
    let plan = client(&server, &viewer, &["plan", "--check"]).await;
    assert_eq!(code(&plan), 0, "{}", stdout(&plan));
    let status = client(&server, &viewer, &["status", "--json"]).await;
    assert_eq!(code(&status), 0, "{}", stderr(&status));
    assert_eq!(json_of(&status)["versionCount"], 1);

    // A rollout through the API: the deployer starts it and may not
    // approve it; the approver does.
    for name in ["t1", "t2"] {
        let created = client(&server, &deployer, &["apply", "--version", name, "--tenant", name]).await;
        assert_eq!(code(&created), 0, "{}", stderr(&created));
    }
    server.ws.write_migration("tenants/950.sql", "create table {schema}.via_api (id int);");
    let started = client(
        &server,
        &deployer,
        &["rollout", "start", "--version", "r", "--wave", "t1:approve", "--wave", "rest", "--json"],
    )
    .await;
    assert_eq!(code(&started), 0, "{}", stderr(&started));
    let id = json_of(&started)["id"].as_i64().unwrap().to_string();
    for _ in 0..300 {
        let list = client(&server, &viewer, &["rollout", "list", "--json"]).await;
        if json_of(&list)[0]["status"] == "AWAITING_APPROVAL" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let own = client(&server, &deployer, &["rollout", "approve", &id]).await;
    assert_eq!(code(&own), 16, "{}", stderr(&own));
    let approved = client(&server, &approver, &["rollout", "approve", &id, "--json"]).await;
    assert_eq!(code(&approved), 0, "{}", stderr(&approved));
    let rollout = json_of(&approved);
    assert_eq!(rollout["startedBy"], "token:ci");
    assert_eq!(rollout["events"].as_array().unwrap().last().unwrap()["actor"], "token:release");
}

/// The audit rows as stored, for the test to rewrite as an attacker with
/// the table but not the key would.
async fn stored_audit(server: &Server) -> Vec<strata_core::auth::audit::Sealed> {
    let sql = "select id, at, actor, action, target, request_id, outcome, prev, hash, signature, trace_id from svc_audit \
         order by id";
    let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
    server
        .ws
        .rows("svc", sql)
        .await
        .iter()
        .map(|row| strata_core::auth::audit::Sealed {
            id: row[0].as_i64().unwrap(),
            entry: strata_core::auth::audit::Entry {
                at: text(&row[1]),
                actor: text(&row[2]),
                action: text(&row[3]),
                target: text(&row[4]),
                request_id: text(&row[5]),
                outcome: text(&row[6]),
                trace_id: row[10].as_str().map(str::to_string),
            },
            prev: text(&row[7]),
            hash: text(&row[8]),
            signature: row[9].as_str().map(str::to_string),
        })
        .collect()
}

/// Writes rows `from..` of `rows` back, re-sealed (and re-signed by `key`).
async fn reseal(
    server: &Server,
    mut rows: Vec<strata_core::auth::audit::Sealed>,
    from: usize,
    key: Option<&strata_core::auth::audit_key::AuditKey>,
) {
    for i in from..rows.len() {
        if i > 0 {
            rows[i].prev = rows[i - 1].hash.clone();
        }
        rows[i].hash = strata_core::auth::audit::seal(rows[i].id, &rows[i].entry, &rows[i].prev);
        let signature = key.map_or("null".to_string(), |key| format!("'{}'", key.sign(&rows[i].hash)));
        let update = format!(
            "update {}svc_audit set outcome = '{}', prev = '{}', hash = '{}', signature = {signature} where id = {}",
            svc_prefix(),
            rows[i].entry.outcome,
            rows[i].prev,
            rows[i].hash,
            rows[i].id
        );
        server.ws.execute("svc", &update).await;
    }
}

#[tokio::test]
async fn a_signed_audit_log_cannot_be_rewritten_re_signed_or_truncated_unseen_and_keys_rotate() {
    let server = Server::start("basic", AUTH).await;
    let run = |config: std::path::PathBuf, args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        strata(&config, &args).await
    };
    let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let keygen = json_of(&strata(server.config_path(), &["audit", "keygen", "--json"]).await);
    let (k1, k1_public) =
        (keygen["auditKey"].as_str().unwrap().to_string(), keygen["publicKey"].as_str().unwrap().to_string());
    let k2 = strata_core::auth::audit_key::AuditKey::from_seed([42; 32]);
    // One row before any key, two signed by k1.
    token(&server, "before", "viewer").await;
    let named = |name: &str, yaml: String| {
        let path = server.ws.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        path
    };
    let plain_config = named("plain.yaml", server.ws.config(AUTH));
    let with_k1 = named("k1.yaml", server.ws.config(&format!("auth:\n  tokens: true\n  auditKey: {k1}\n")));
    for name in ["one", "two"] {
        let created = run(with_k1.clone(), args(&["token", "create", "--name", name, "--role", "viewer"])).await;
        assert_eq!(code(&created), 0, "{}", stderr(&created));
    }
    let verify = run(with_k1.clone(), args(&["audit", "verify"])).await;
    assert_eq!(code(&verify), 0, "{}", stderr(&verify));
    let said = stdout(&verify);
    assert!(
        said.contains("3 row(s), each chained") && said.contains("2 row(s) signed, every signature verified"),
        "{said}"
    );
    assert!(said.contains("1 row(s) are UNSIGNED (written before auth.auditKey was set)"), "{said}");
    assert!(said.contains("Rows are signed from row 2 on: keep it, `--signed-from 2`"), "{said}");
    let config_shown = stdout(&run(with_k1.clone(), args(&["config", "check"])).await);
    assert!(!config_shown.contains(&k1), "the key is shown: {config_shown}");
    // Without any key, verify says what it cannot see.
    let plain = strata(&plain_config, &["audit", "verify"]).await;
    assert!(stdout(&plain).contains("2 signed row(s) NOT CHECKED: no public key given"), "{}", stdout(&plain));
    let with_public = strata(&plain_config, &["audit", "verify", "--public-key", &k1_public]).await;
    assert!(stdout(&with_public).contains("2 row(s) signed, every signature verified"), "{}", stdout(&with_public));
    let head = stdout(&run(with_k1.clone(), args(&["audit", "head"])).await).trim().to_string();
    assert!(head.starts_with("3:") && head.len() == 66, "{head}");

    // Rotated: k2 signs, k1's public key still verifies the older rows.
    let rotated = named(
        "rotated.yaml",
        server.ws.config(&format!(
            "auth:\n  tokens: true\n  auditKey: {}\n  auditPublicKeys: [{k1_public}]\n",
            k2.seed_base64()
        )),
    );
    let created = run(rotated.clone(), args(&["token", "create", "--name", "three", "--role", "viewer"])).await;
    assert_eq!(code(&created), 0, "{}", stderr(&created));
    let verify = run(rotated.clone(), args(&["audit", "verify", "--expect", &head])).await;
    assert_eq!(code(&verify), 0, "{}", stderr(&verify));
    assert!(stdout(&verify).contains("3 row(s) signed") && stdout(&verify).contains("head kept earlier is there"));
    let stale = run(with_k1.clone(), args(&["audit", "verify"])).await;
    assert_eq!(code(&stale), 15, "k1 alone does not know k2's rows");
    assert!(stderr(&stale).contains(&format!("row 4 is signed by key {}", k2.id())), "{}", stderr(&stale));

    // Truncated: the chain that is left is intact; the head kept shows it.
    let newest = stdout(&run(rotated.clone(), args(&["audit", "head"])).await).trim().to_string();
    server.ws.execute("svc", &format!("delete from {}svc_audit where id = 4", svc_prefix())).await;
    assert_eq!(code(&run(rotated.clone(), args(&["audit", "verify"])).await), 0);
    let truncated = run(rotated.clone(), args(&["audit", "verify", "--expect", &newest])).await;
    assert_eq!(code(&truncated), 15);
    assert!(stderr(&truncated).contains("row 4 is missing: the log holds 3 row(s)"), "{}", stderr(&truncated));

    // Rewritten and re-sealed with the attacker's own key: refused.
    let mut rows = stored_audit(&server).await;
    rows[1].entry.outcome = "refused: nothing to see".into();
    let mallory = strata_core::auth::audit_key::AuditKey::from_seed([66; 32]);
    reseal(&server, rows.clone(), 1, Some(&mallory)).await;
    let resigned = run(rotated.clone(), args(&["audit", "verify"])).await;
    assert_eq!(code(&resigned), 15, "{}", stdout(&resigned));
    assert!(stderr(&resigned).contains(&format!("row 2 is signed by key {}", mallory.id())), "{}", stderr(&resigned));
    // Every signature stripped and the chain re-sealed: the log now looks
    // older than the key; what it cannot hide is the first signed row and
    // the head, kept elsewhere.
    let mut rows = stored_audit(&server).await;
    rows[1].entry.outcome = "refused: nothing to see".into();
    reseal(&server, rows, 1, None).await;
    let stripped = run(rotated.clone(), args(&["audit", "verify"])).await;
    assert_eq!(code(&stripped), 0, "{}", stderr(&stripped));
    assert!(stdout(&stripped).contains("3 row(s) are UNSIGNED"), "{}", stdout(&stripped));
    let signed_from = run(rotated.clone(), args(&["audit", "verify", "--signed-from", "2"])).await;
    assert_eq!(code(&signed_from), 15, "{}", stdout(&signed_from));
    assert!(
        stderr(&signed_from).contains("row 2 is not signed, though every row from 2 on is"),
        "{}",
        stderr(&signed_from)
    );
    let caught = run(rotated.clone(), args(&["audit", "verify", "--expect", &head])).await;
    assert_eq!(code(&caught), 15, "{}", stdout(&caught));
    assert!(stderr(&caught).contains("row 3 has another seal than the head kept"), "{}", stderr(&caught));
}

/// A query of the tenants from `client` behind the proxy (its
/// `X-Forwarded-For`), with `token`.
fn forwarded(server: &Server, client: &str, token: &str) -> reqwest::RequestBuilder {
    server
        .client
        .post(server.url("/v2/service"))
        .header("Content-Type", "application/json")
        .header("X-Forwarded-For", client)
        .bearer_auth(token)
        .body(json!({ "query": "{ tenants { name } }" }).to_string())
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_throttle_keys_on_the_client_and_open_routes_are_no_oracle() {
    let yaml = "auth:\n  tokens: true\n  proxy:\n    userHeader: X-Forwarded-User\n    trustedSources: [127.0.0.1/32]\n    \
                roles: { dba: admin }\n";
    let server = Server::start("basic", yaml).await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let from = |client: &str, token: &str| forwarded(&server, client, token);
    // Mallory, behind the ingress, floods; her own header cannot move the
    // key (the proxy appends the address it saw).
    for _ in 0..10 {
        let sent = from("198.51.100.99, 203.0.113.7", "strata_guess").send().await.unwrap();
        assert_eq!(sent.status(), 401);
    }
    assert_eq!(from("203.0.113.7", "strata_guess").send().await.unwrap().status(), 429);
    assert_eq!(from("203.0.113.7", &viewer).send().await.unwrap().status(), 429, "refused whatever she shows");
    // Everyone else behind the same ingress still gets in.
    assert_eq!(from("203.0.113.8", &viewer).send().await.unwrap().status(), 200);
    let rows = server.ws.rows("svc", "select actor from svc_audit where action = 'authenticate'").await;
    assert_eq!(rows, vec![vec![json!("unauthenticated:203.0.113.7")]]);

    // A proxy that adds its own X-Forwarded-For line beside the client's:
    // the lines are one list, the client's own first line moves nothing.
    for i in 0..10 {
        let sent = server
            .client
            .post(server.url("/v2/service"))
            .header("Content-Type", "application/json")
            .header("X-Forwarded-For", format!("198.51.100.{i}"))
            .header("X-Forwarded-For", "203.0.113.12")
            .bearer_auth("strata_guess")
            .body(json!({ "query": "{ tenants { name } }" }).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(sent.status(), 401);
    }
    assert_eq!(from("203.0.113.12", &viewer).send().await.unwrap().status(), 429);

    // Requests without a credential (any web page can make a browser send
    // them) are no guesses: they lock nobody out.
    for _ in 0..15 {
        let bare = server
            .client
            .post(server.url("/v2/service"))
            .header("Content-Type", "text/plain")
            .header("X-Forwarded-For", "203.0.113.13")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(bare.status(), 401);
    }
    assert_eq!(from("203.0.113.13", &viewer).send().await.unwrap().status(), 200);

    // Two credentials in one request: refused, neither one chosen.
    let twice = server
        .client
        .post(server.url("/v2/service"))
        .header("Content-Type", "application/json")
        .header("X-Forwarded-For", "203.0.113.14")
        .header("Authorization", format!("Bearer {viewer}"))
        .header("Authorization", "Bearer strata_other")
        .body(json!({ "query": "{ tenants { name } }" }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), 401);
    let said: Value = twice.json().await.unwrap();
    assert_eq!(
        said["errors"][0]["message"].as_str().map(|m| m.contains("authorization was sent more than once")),
        Some(true),
        "{said}"
    );

    // A valid token between guesses resets nothing.
    for i in 0..11 {
        let token = if i == 5 { viewer.clone() } else { "strata_guess".to_string() };
        from("203.0.113.9", &token).send().await.unwrap();
    }
    assert_eq!(from("203.0.113.9", "strata_guess").send().await.unwrap().status(), 429);

    // /health checks a credential through the same throttle: ten bad ones
    // there and the API refuses the client too.
    let health = |client: &'static str, token: String| {
        server.client.get(server.url("/health")).header("X-Forwarded-For", client).bearer_auth(token).send()
    };
    for _ in 0..10 {
        assert_eq!(health("203.0.113.10", "strata_guess".into()).await.unwrap().status(), 200);
    }
    assert_eq!(from("203.0.113.10", &viewer).send().await.unwrap().status(), 429);
    let probe: Value = health("203.0.113.10", viewer.clone()).await.unwrap().json().await.unwrap();
    assert!(probe.get("checks").is_none(), "a throttled client's credential is not checked: {probe}");
    let probe: Value = health("203.0.113.11", viewer.clone()).await.unwrap().json().await.unwrap();
    assert!(probe.get("checks").is_some(), "{probe}");
}

#[tokio::test]
async fn two_tokens_of_one_owner_are_one_principal_for_the_starter_rule() {
    let server = Server::start("basic", AUTH).await;
    let owned = |name: &'static str, role: &'static str, owner: &'static str| {
        let config = server.config_path().to_path_buf();
        async move {
            let args = ["token", "create", "--name", name, "--role", role, "--owner", owner, "--json"];
            let output = strata(&config, &args).await;
            assert_eq!(code(&output), 0, "{}", stderr(&output));
            json_of(&output)["token"].as_str().unwrap().to_string()
        }
    };
    let ci = owned("alice-ci", "admin", "alice").await;
    let laptop = owned("alice-laptop", "approver", "alice").await;
    let bob = owned("bob", "approver", "bob").await;
    let alice_cased = owned("alice-phone", "approver", "Alice").await;
    let listed = json_of(&strata(server.config_path(), &["token", "list", "--json"]).await);
    assert_eq!(listed[0]["owner"], "alice", "{listed}");
    let refused =
        strata(server.config_path(), &["token", "create", "--name", "x", "--role", "viewer", "--owner", "a b"]).await;
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    // An owner in letters of another script (a Cyrillic о in bоb) would be
    // another person to the rule: refused; so is a name differing from a
    // token's only in case.
    let confusable =
        strata(server.config_path(), &["token", "create", "--name", "y", "--role", "approver", "--owner", "b\u{43e}b"])
            .await;
    assert_eq!(code(&confusable), 2, "{}", stderr(&confusable));
    assert!(stderr(&confusable).contains("ASCII"), "{}", stderr(&confusable));
    let cased = strata(server.config_path(), &["token", "create", "--name", "BOB", "--role", "viewer"]).await;
    assert_eq!(code(&cased), 2, "{}", stderr(&cased));
    assert!(stderr(&cased).contains("differs from \"BOB\" only in letter case"), "{}", stderr(&cased));

    let tenant = r#"mutation { createTenant(input: { tenantName: "t1", versionName: "t1" }) { version { id } } }"#;
    assert_eq!(query(&server, &ci, tenant).await.0, 200);
    let start = r#"mutation { startRollout(versionName: "r", waves: ["t1:approve", "rest"]) { id } }"#;
    let (status, answer) = query(&server, &ci, start).await;
    assert_eq!(status, 200, "{answer}");
    let id = answer["data"]["startRollout"]["id"].as_i64().unwrap();
    wait_for(&server, &ci, id, "AWAITING_APPROVAL").await;
    let approve = format!("mutation {{ approveRollout(id: {id}) {{ status }} }}");
    let (status, answer) = query(&server, &laptop, &approve).await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    assert!(
        answer["errors"][0]["message"].as_str().unwrap().contains(
            "token:alice-ci [owner:alice] started this rollout, and token:alice-laptop [owner:alice] is the same person"
        ),
        "{answer}"
    );
    // The owner written in another case is the same person to this rule.
    let (status, answer) = query(&server, &alice_cased, &approve).await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let (status, answer) = query(&server, &bob, &approve).await;
    assert_eq!(status, 200, "{answer}");
    wait_for(&server, &ci, id, "COMPLETED").await;
    let rows = server.ws.rows("svc", "select actor from svc_audit where action = 'approveRollout' order by id").await;
    assert_eq!(
        rows,
        vec![
            vec![json!("token:alice-laptop [owner:alice]")],
            vec![json!("token:alice-phone [owner:Alice]")],
            vec![json!("token:bob [owner:bob]")]
        ]
    );
}

#[tokio::test]
async fn every_refusal_of_a_change_or_of_the_log_is_on_record() {
    let server = Server::start("basic", AUTH).await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let deployer = token(&server, "ci", "deployer").await;
    let (status, answer) = query(&server, &viewer, "{ audit { id } }").await;
    assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
    let hostile =
        r#"mutation { createTenant(input: { tenantName: "x; drop table y", versionName: "v" }) { version { id } } }"#;
    let (_, answer) = query(&server, &deployer, hostile).await;
    assert_eq!(error_code(&answer), "INVALID_TENANT_NAME", "{answer}");
    let (_, answer) =
        query(&server, &deployer, "mutation { createVersion(input: { versionName: 5 }) { version { id } } }").await;
    assert_eq!(error_code(&answer), "GRAPHQL_VALIDATION_FAILED", "{answer}");
    let wave = r#"mutation { createVersionWave(input: { versionName: "w" }, share: 101) { version { id } } }"#;
    let (_, answer) = query(&server, &deployer, wave).await;
    assert_eq!(error_code(&answer), "INVALID_INPUT", "{answer}");
    let revert =
        r#"mutation { revertVersion(input: { versionName: "r", action: Sync }, steps: 1) { version { id } } }"#;
    let (_, answer) = query(&server, &deployer, revert).await;
    assert_eq!(error_code(&answer), "INVALID_INPUT", "{answer}");
    let rows = server
        .ws
        .rows("svc", "select actor, action, outcome from svc_audit where action <> 'token create' order by id")
        .await;
    let seen: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into(), r[2].as_str().unwrap().into()))
        .collect();
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert_eq!((seen[0].0.as_str(), seen[0].1.as_str()), ("token:dashboard", "audit"));
    assert!(seen[0].2.starts_with("refused: FORBIDDEN"), "{seen:?}");
    assert_eq!((seen[1].0.as_str(), seen[1].1.as_str()), ("token:ci", "createTenant"));
    assert!(seen[1].2.starts_with("refused: INVALID_TENANT_NAME"), "{seen:?}");
    assert_eq!((seen[2].0.as_str(), seen[2].1.as_str()), ("token:ci", "createVersion"));
    assert!(seen[2].2.starts_with("refused: GRAPHQL_VALIDATION_FAILED"), "{seen:?}");
    assert_eq!((seen[3].0.as_str(), seen[3].1.as_str()), ("token:ci", "createVersionWave"));
    assert!(seen[3].2.starts_with("refused: INVALID_INPUT give one of tenantNames"), "{seen:?}");
    assert_eq!((seen[4].0.as_str(), seen[4].1.as_str()), ("token:ci", "revertVersion"));
    assert!(seen[4].2.starts_with("refused: INVALID_INPUT revertVersion runs down parts"), "{seen:?}");
    assert_eq!(versions(&server).await, 0);
}

#[tokio::test]
async fn the_audit_log_verifies_through_the_server_with_public_keys_only() {
    let key = strata_core::auth::audit_key::AuditKey::from_seed([9; 32]);
    let other = strata_core::auth::audit_key::AuditKey::from_seed([10; 32]);
    let server = Server::start("basic", &format!("auth:\n  tokens: true\n  auditKey: {}\n", key.seed_base64())).await;
    let admin = token(&server, "ops", "admin").await;
    let viewer = token(&server, "dashboard", "viewer").await;
    assert_eq!(query(&server, &admin, CREATE).await.0, 200);
    let remote = |token: &str, args: &[&str]| {
        let mut command = tokio::process::Command::new(crate::support::strata_bin());
        command.args(["--server", &server.url("")]).args(args).env("STRATA_TOKEN", token).env_remove("SVC_YAML");
        command.env_remove("STRATA_SERVER").output()
    };
    let public = key.public().to_base64();
    let verified = remote(&admin, &["audit", "verify", "--public-key", &public]).await.unwrap();
    assert_eq!(code(&verified), 0, "{}", stderr(&verified));
    assert!(stdout(&verified).contains("3 row(s) signed, every signature verified"), "{}", stdout(&verified));
    let unchecked = remote(&admin, &["audit", "verify"]).await.unwrap();
    assert!(stdout(&unchecked).contains("3 signed row(s) NOT CHECKED"), "{}", stdout(&unchecked));
    let wrong = remote(&admin, &["audit", "verify", "--public-key", &other.public().to_base64()]).await.unwrap();
    assert_eq!(code(&wrong), 15, "{}", stderr(&wrong));
    let head = remote(&admin, &["audit", "head"]).await.unwrap();
    assert!(stdout(&head).starts_with("3:"), "{}", stdout(&head));
    let listed = remote(&admin, &["audit", "--json"]).await.unwrap();
    assert_eq!(json_of(&listed).as_array().unwrap().len(), 3);
    assert!(json_of(&listed)[2]["signature"].as_str().unwrap().starts_with(&format!("{}:", key.id())));
    let refused = remote(&viewer, &["audit"]).await.unwrap();
    assert_eq!(code(&refused), 16, "{}", stderr(&refused));
}

#[tokio::test]
async fn revert_tenants_drift_and_lint_run_through_the_server_as_in_process() {
    let ws = crate::formats::empty_directories();
    ws.write_migration(
        "tenants/20240101_users.sql",
        "-- migrate:up\ncreate table {schema}.users (id int);\n-- migrate:down\ndrop table {schema}.users;\n",
    );
    ws.write_migration(
        "tenants/20240102_orders.sql",
        "-- migrate:up\ncreate table {schema}.orders (id int);\n-- migrate:down\ndrop table {schema}.orders;\n",
    );
    let yaml = ws.config(AUTH);
    let server = Server::start_in(ws, &yaml, "").await;
    let deployer = token(&server, "ci", "deployer").await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let list = server.ws.path().join("new-tenants.txt");
    std::fs::write(&list, "# the first customers\nt1\n\nt2\nt3\n").unwrap();

    // tenants add: createTenants, checked by the service, printed as in-process.
    let refused = client(&server, &viewer, &["tenants", "add", "t9", "--version", "by a viewer"]).await;
    assert_eq!(code(&refused), 16, "{}", stderr(&refused));
    let added =
        client(&server, &deployer, &["tenants", "add", "--from", list.to_str().unwrap(), "--version", "first"]).await;
    assert_eq!(code(&added), 0, "{}", stderr(&added));
    assert!(stdout(&added).contains("6 migration(s) and 0 script(s) over 3 tenant(s) applied"), "{}", stdout(&added));
    let twice = client(&server, &deployer, &["tenants", "add", "t2", "t3", "--version", "again", "--json"]).await;
    assert_eq!(code(&twice), 2, "{}", stderr(&twice));
    assert_eq!(json_of(&twice)["errors"][0]["extensions"]["code"], "INVALID_TENANT_LIST");
    assert!(stderr(&twice).contains("t2"), "{}", stderr(&twice));

    // tenants: the same listing, in-process and through the server.
    let remote = client(&server, &viewer, &["tenants", "--json"]).await;
    assert_eq!(code(&remote), 0, "{}", stderr(&remote));
    let local = strata(server.config_path(), &["tenants", "--json"]).await;
    assert_eq!(json_of(&remote), json_of(&local));
    assert_eq!(
        json_of(&remote)["tenants"][1],
        json!({ "name": "t2", "shard": null, "reachable": true, "quarantined": false })
    );
    let text = client(&server, &viewer, &["tenants"]).await;
    assert_eq!(stdout(&text), stdout(&strata(server.config_path(), &["tenants"]).await));

    // revert: revertVersion over the tenants named, their newest file undone.
    let refused = client(&server, &viewer, &["revert", "--version", "r", "--steps", "1"]).await;
    assert_eq!(code(&refused), 16, "{}", stderr(&refused));
    let share = client(&server, &deployer, &["revert", "--version", "r", "--steps", "1", "--share", "50%"]).await;
    assert_eq!(code(&share), 2, "{}", stderr(&share));
    let reverted =
        client(&server, &deployer, &["revert", "--version", "undo t1", "--steps", "1", "--tenants", "t1", "--json"])
            .await;
    assert_eq!(code(&reverted), 0, "{}", stderr(&reverted));
    assert_eq!(json_of(&reverted)["version"]["name"], "undo t1");
    assert_eq!(json_of(&reverted)["summary"]["tenantMigrationsTotal"], 1);
    assert_eq!(crate::formats::sorted(server.ws.tables("t1").await), ["users"]);
    assert_eq!(crate::formats::sorted(server.ws.tables("t2").await), ["orders", "users"]);
    let audit =
        server.ws.rows("svc", "select actor, outcome from svc_audit where action = 'revertVersion' order by id").await;
    assert_eq!(audit.len(), 2, "{audit:?}");
    assert_eq!(audit[0][0], json!("token:dashboard"));
    assert_eq!(audit[1], vec![json!("token:ci"), json!("ok")]);

    // drift: the API's report read back, printed as in-process (exit 10).
    let extra = match crate::support::backend() {
        crate::support::Backend::Sqlite => "create table extra (id int)",
        _ => "create table t3.extra (id int)",
    };
    server.ws.execute("t3", extra).await;
    let remote = client(&server, &viewer, &["drift", "--json"]).await;
    assert_eq!(code(&remote), 10, "{}", stderr(&remote));
    let local = strata(server.config_path(), &["drift", "--json"]).await;
    assert_eq!(code(&local), 10, "{}", stderr(&local));
    assert_eq!(json_of(&remote), json_of(&local));
    assert_eq!(json_of(&remote)["changed"][0]["schema"], "t3", "{}", stdout(&remote));
    let text = client(&server, &viewer, &["drift"]).await;
    assert_eq!(stdout(&text), stdout(&strata(server.config_path(), &["drift"]).await));
    assert!(stdout(&text).contains("extra"), "{}", stdout(&text));

    // lint: the findings of what apply would run, from the API's plan.
    server.ws.write_migration("tenants/20240103_drop.sql", "-- migrate:up\ndrop table {schema}.users;\n");
    let args = ["lint", "--fail-on", "warning", "--json"];
    let remote = client(&server, &viewer, &args).await;
    assert_eq!(code(&remote), 9, "{}{}", stdout(&remote), stderr(&remote));
    let local = strata(server.config_path(), &args).await;
    assert_eq!(json_of(&remote), json_of(&local));
    assert_eq!(json_of(&remote)["findings"][0]["rule"], "dropping-table", "{}", stdout(&remote));
    let text = client(&server, &viewer, &["lint"]).await;
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    assert_eq!(stdout(&text), stdout(&strata(server.config_path(), &["lint"]).await));
    let all = client(&server, &viewer, &["lint", "--all"]).await;
    assert_eq!(code(&all), 2, "{}", stderr(&all));
}

#[tokio::test]
async fn plan_status_and_repair_print_the_same_json_through_the_server_as_in_process() {
    let ws = crate::formats::empty_directories();
    ws.write_migration("tenants/20240101_users.sql", "-- migrate:up\ncreate table {schema}.users (id int);\n");
    ws.write_migration("tenants/20240102_orders.sql", "-- migrate:up\ncreate table {schema}.orders (id int);\n");
    let yaml = ws.config(AUTH);
    let server = Server::start_in(ws, &yaml, "").await;
    let deployer = token(&server, "ci", "deployer").await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let admin = token(&server, "ops", "admin").await;
    let added = client(&server, &deployer, &["tenants", "add", "t1", "t2", "--version", "first"]).await;
    assert_eq!(code(&added), 0, "{}", stderr(&added));
    let same = |args: &'static [&'static str]| {
        let (server, viewer) = (&server, &viewer);
        async move {
            let remote = client(server, viewer, args).await;
            let local = strata(server.config_path(), args).await;
            assert_eq!(code(&remote), code(&local), "{args:?}: {}{}", stderr(&remote), stderr(&local));
            assert_eq!(json_of(&remote), json_of(&local), "{args:?}");
            (code(&remote), json_of(&remote))
        }
    };

    // A file that sorts before the applied ones, one changed, one deleted.
    server.ws.write_migration("tenants/20231231_early.sql", "-- migrate:up\ncreate table {schema}.early (id int);\n");
    server
        .ws
        .write_migration("tenants/20240101_users.sql", "-- migrate:up\ncreate table {schema}.users (id bigint);\n");
    std::fs::remove_file(server.ws.migrations().join("tenants/20240102_orders.sql")).unwrap();
    let (exit, refused) = same(&["plan", "--json"]).await;
    assert_eq!(exit, 3);
    assert_eq!(refused["refused"], "DRIFT");
    assert_eq!(refused["drift"][0]["schemas"], json!(["t1", "t2"]));
    assert_eq!(refused["drift"][0]["recordedChecksums"].as_array().unwrap().len(), 1);
    let (exit, synced) = same(&["plan", "--sync", "--json"]).await;
    assert_eq!(exit, 0);
    assert_eq!(synced["outOfOrder"][0]["file"].as_str().unwrap().rsplit('/').next(), Some("20231231_early.sql"));
    assert_eq!(synced["outOfOrder"].as_array().unwrap().len(), 2, "{synced}");
    assert_eq!(synced["missing"][0]["schemas"], json!(["t1", "t2"]));
    assert_ne!(synced["drift"][0]["sourceChecksum"], synced["drift"][0]["recordedChecksums"][0], "{synced}");
    assert_eq!((synced["recordOnly"].as_u64(), synced["pending"].as_bool()), (Some(2), Some(true)));
    assert_eq!(synced["summary"]["tenantMigrationsTotal"], 2);
    let (exit, status) = same(&["status", "--json"]).await;
    assert_eq!(exit, 0);
    assert_eq!((status["versionCount"].as_u64(), status["tenants"].as_u64()), (Some(1), Some(2)));
    assert_eq!(
        status["pending"],
        json!([
            { "schema": "t1", "migrations": 1, "quarantined": false },
            { "schema": "t2", "migrations": 1, "quarantined": false }
        ])
    );
    assert_eq!(status["missing"], synced["missing"]);
    assert_eq!(status["drift"], synced["drift"]);
    let text = client(&server, &viewer, &["status"]).await;
    assert_eq!(stdout(&text), stdout(&strata(server.config_path(), &["status"]).await));
    assert!(stdout(&text).contains("20240102_orders.sql (recorded in 2 schema(s))"), "{}", stdout(&text));

    // repair: an admin's, listed first; a viewer's and a deployer's refused.
    for token in [&viewer, &deployer] {
        let refused = client(&server, token, &["repair", "--dry-run"]).await;
        assert_eq!(code(&refused), 16, "{}", stderr(&refused));
    }
    let remote = client(&server, &admin, &["repair", "--dry-run", "--json"]).await;
    assert_eq!(code(&remote), 0, "{}", stderr(&remote));
    assert_eq!(json_of(&remote), json_of(&strata(server.config_path(), &["repair", "--dry-run", "--json"]).await));
    assert_eq!(json_of(&remote)["records"], 4, "{}", stdout(&remote));
    let pending = client(&server, &admin, &["repair", "tenants/20231231_early.sql"]).await;
    assert_eq!(code(&pending), 2, "{}", stderr(&pending));
    assert!(stderr(&pending).contains("is pending (applied nowhere)"), "{}", stderr(&pending));
    let repaired = client(&server, &admin, &["repair", "--version", "accept the edit"]).await;
    assert_eq!(code(&repaired), 0, "{}", stderr(&repaired));
    assert!(stdout(&repaired).contains("20240102_orders.sql"), "{}", stdout(&repaired));
    let (_, after) = same(&["status", "--json"]).await;
    assert_eq!((after["drift"].as_array().unwrap().len(), after["missing"].as_array().unwrap().len()), (0, 0));
    let audit = server.ws.rows("svc", "select actor, target, outcome from svc_audit where action = 'repair'").await;
    // Dry runs are on record too: the admin's, and the one the client
    // sends before each repair to preview it (two).
    let dry = audit.iter().filter(|row| row[1].as_str().is_some_and(|t| t.ends_with(", dry run"))).count();
    assert_eq!((audit.len() - dry, dry), (1 + 2 + 1, 3), "{audit:?}");
    let last = audit.last().unwrap();
    assert_eq!((last[0].clone(), last[2].clone()), (json!("token:ops"), json!("ok")), "{audit:?}");
    assert!(last[1].as_str().unwrap().contains("accept the edit"), "{audit:?}");
}

/// Books written by a release before `svc_audit.signature`,
/// `svc_audit.trace_id`, `svc_tokens.owner`, `svc_versions.trace_id` and
/// `svc_backfills.started_version`: their rows are kept, read-only commands read them
/// as they are, the first read-write command adds the columns, and the old
/// rows verify as unsigned, never as signed.
#[tokio::test]
async fn books_written_before_the_added_columns_are_upgraded_in_place_keeping_their_rows() {
    let _turn = crate::support::mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(AUTH));
    let created = strata(&config, &["token", "create", "--name", "ci", "--role", "deployer", "--json"]).await;
    assert_eq!(code(&created), 0, "{}", stderr(&created));
    let applied = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&applied), 0, "{}", stderr(&applied));
    // As an earlier release left them: without the columns added since.
    let drop = match crate::support::backend() {
        crate::support::Backend::Sqlite => {
            "alter table svc_audit drop column signature; alter table svc_audit drop column trace_id; \
             alter table svc_tokens drop column owner; alter table svc_versions drop column trace_id; \
             alter table svc_backfills drop column started_version"
        }
        // SQL Server's books had the signature and the owner from their
        // first release.
        crate::support::Backend::Sqlserver => {
            "alter table svc.svc_audit drop column trace_id; alter table svc.svc_versions drop column trace_id; \
             alter table svc.svc_backfills drop column started_version"
        }
        _ => {
            "alter table svc.svc_audit drop column signature; alter table svc.svc_audit drop column trace_id; \
             alter table svc.svc_tokens drop column owner; alter table svc.svc_versions drop column trace_id; \
             alter table svc.svc_backfills drop column started_version"
        }
    };
    ws.execute("svc", drop).await;
    let rows_before = ws.rows("svc", "select id, hash from svc_audit order by id").await;
    assert!(rows_before.len() >= 2, "{rows_before:?}");

    // Read-only: read as they are.
    let verify = strata(&config, &["audit", "verify"]).await;
    assert_eq!(code(&verify), 0, "{}{}", stdout(&verify), stderr(&verify));
    assert!(stdout(&verify).contains("are UNSIGNED"), "{}", stdout(&verify));
    let tokens = strata(&config, &["token", "list", "--json"]).await;
    assert_eq!(code(&tokens), 0, "{}", stderr(&tokens));
    let status = strata(&config, &["status", "--json"]).await;
    assert_eq!(code(&status), 0, "{}", stderr(&status));
    assert_eq!(json_of(&status)["versions"][0]["name"], "v1", "{}", stdout(&status));

    // Read-write: the columns are added, the rows kept, the chain goes on.
    let applied = strata(&config, &["apply", "--version", "v2"]).await;
    assert_eq!(code(&applied), 0, "{}", stderr(&applied));
    let rows_after = ws.rows("svc", "select id, hash from svc_audit order by id").await;
    assert_eq!(rows_after[..rows_before.len()], rows_before[..]);
    assert!(rows_after.len() > rows_before.len());
    let verify = strata(&config, &["audit", "verify"]).await;
    assert_eq!(code(&verify), 0, "{}{}", stdout(&verify), stderr(&verify));
    assert!(stdout(&verify).contains(&format!("{} row(s)", rows_after.len())), "{}", stdout(&verify));
    let owners = ws.rows("svc", "select name, owner from svc_tokens").await;
    assert_eq!(owners, vec![vec![json!("ci"), Value::Null]]);
    let traces = ws.rows("svc", "select name, trace_id from svc_versions order by id").await;
    assert_eq!(traces, [[json!("v1"), Value::Null], [json!("v2"), Value::Null]]);
    let started = ws.rows("svc", "select count(started_version) from svc_backfills").await;
    assert_eq!(started, [[json!(0)]]);
}

#[tokio::test]
async fn a_viewer_reads_backfills_and_only_a_deployer_pauses_resumes_or_cancels_them() {
    let server = Server::start("basic", AUTH).await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let deployer = token(&server, "ci", "deployer").await;
    let (status, answer) = query(&server, &viewer, "{ backfills { tenant state } }").await;
    assert_eq!((status, &answer["data"]["backfills"]), (200, &json!([])), "{answer}");
    for (mutation, action) in [
        ("mutation { pauseBackfills { tenant } }", "pauseBackfills"),
        ("mutation { resumeBackfills(tenantNames: [\"t1\"]) { tenant } }", "resumeBackfills"),
        ("mutation { cancelBackfills(tenantNames: [\"t1\"]) { tenant } }", "cancelBackfills"),
    ] {
        let (status, answer) = query(&server, &viewer, mutation).await;
        assert_eq!((status, error_code(&answer)), (403, "FORBIDDEN"), "{answer}");
        let (status, answer) = query(&server, &deployer, mutation).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["data"][action], json!([]), "{answer}");
    }
    let audit = server
        .ws
        .rows("svc", "select action from svc_audit where actor = 'token:ci' and action like '%Backfills' order by id")
        .await;
    assert_eq!(audit, [[json!("pauseBackfills")], [json!("resumeBackfills")], [json!("cancelBackfills")]]);
}

/// Behind an ingress that authenticates nobody (`auth.proxy` with
/// `trustedSources` only), tokens authenticate and the failed-login
/// throttle keys on the client the ingress forwards: one client's guesses
/// lock out that client, not everyone behind the ingress. A user header
/// sent anyway is no identity.
#[tokio::test]
async fn behind_an_ingress_that_only_forwards_the_throttle_keys_on_each_client() {
    let yaml = "auth:\n  tokens: true\n  proxy:\n    trustedSources: [127.0.0.1/32]\n";
    let server = Server::start("basic", yaml).await;
    let viewer = token(&server, "dashboard", "viewer").await;
    let from = |client: &str, token: &str| forwarded(&server, client, token);
    for _ in 0..10 {
        assert_eq!(from("203.0.113.20", "strata_guess").send().await.unwrap().status(), 401);
    }
    assert_eq!(from("203.0.113.20", &viewer).send().await.unwrap().status(), 429);
    assert_eq!(from("203.0.113.21", &viewer).send().await.unwrap().status(), 200);
    let posing = server
        .client
        .post(server.url("/v2/service"))
        .header("Content-Type", "application/json")
        .header("X-Forwarded-User", "admin")
        .body(json!({ "query": "{ tenants { name } }" }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(posing.status(), 401);
}

/// No answer of the API is kept by a cache unless it says so (the
/// console's files), and none is sniffed for another type.
#[tokio::test]
async fn answers_are_neither_cached_nor_sniffed() {
    let server = Server::start("basic", "").await;
    for path in ["/v2/config", "/health", "/v2/schema", "/"] {
        let response = server.get(path).await;
        assert_eq!(response.headers()["cache-control"], "no-store", "{path}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff", "{path}");
    }
    let answer = server.post_raw(serde_json::json!({ "query": "{ versionCount }" }).to_string()).await;
    assert_eq!(answer.headers()["cache-control"], "no-store");
    let console = server.get("/console/app.js").await;
    assert_eq!(console.headers()["cache-control"], "no-cache");
}
