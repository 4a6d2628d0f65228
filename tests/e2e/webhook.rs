//! The webhook, received by a real HTTP listener on 127.0.0.1.

use serde_json::{Value, json};

use crate::support::{HookListener, Server};

#[tokio::test]
async fn webhook_posts_the_summary_json_with_default_content_type() {
    let hook = HookListener::start(200).await;
    let server = Server::start("basic", &format!("webHookURL: {}\n", hook.url)).await;
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    let got = hook.wait_for(1).await;
    assert_eq!(got[0].headers["content-type"], "application/json");
    let payload: Value = serde_json::from_str(&got[0].body).unwrap();
    let summary = &result["data"]["createVersion"]["summary"];
    assert_eq!(payload["versionId"], 1);
    for field in
        ["startedAt", "tenants", "singleMigrations", "migrationsGrandTotal", "singleScripts", "scriptsGrandTotal"]
    {
        assert_eq!(payload[field], summary[field], "{field}");
    }
    assert_eq!(payload.as_object().unwrap().len(), 12);
    // Served without its path: a chat service's webhook secret lives there.
    let config = server.get("/v2/config").await.text().await.unwrap();
    let origin = hook.url.strip_suffix("/hook").unwrap();
    assert!(config.contains(&format!("webHookURL: {origin}/***\n")) && !config.contains(&hook.url), "{config}");

    // No version, no webhook: dry runs and idle runs stay silent.
    server.create_version(json!({ "versionName": "dry", "dryRun": true })).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(hook.received.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn webhook_template_and_headers() {
    let hook = HookListener::start(200).await;
    let extra = format!(
        "webHookURL: {}\nwebHookTemplate: '{{\"text\": \"v${{summary.versionId}} ${{summary.migrationsGrandTotal}}\", \"summary\": \"${{summary}}\"}}'\n\
         webHookHeaders:\n  - \"Authorization: Bearer ${{HOOK_TOKEN}}\"\n  - \"Content-Type: application/vnd.test+json\"\n  - \"X-Custom: a,b\"\n",
        hook.url
    );
    let ws = crate::support::Workspace::new("basic");
    let yaml = ws.config(&extra);
    let server = start_with_env(ws, &yaml, &[("HOOK_TOKEN", "t0ken-s3cret")]).await;
    server.create_version(json!({ "versionName": "v1" })).await;
    let got = hook.wait_for(1).await;
    assert_eq!(got[0].headers["authorization"], "Bearer t0ken-s3cret");
    assert_eq!(got[0].headers["content-type"], "application/vnd.test+json");
    assert_eq!(got[0].headers["x-custom"], "a,b");
    let payload: Value = serde_json::from_str(&got[0].body).unwrap_or_else(|e| panic!("{e}: {}", got[0].body));
    assert_eq!(payload["text"], "v1 2");
    let inner: Value = serde_json::from_str(payload["summary"].as_str().unwrap()).unwrap();
    assert_eq!(inner["versionId"], 1);
    assert_eq!(inner["singleMigrations"], 2);

    // The secret is neither served nor logged.
    let config = server.get("/v2/config").await.text().await.unwrap();
    assert!(!config.contains("t0ken-s3cret"), "{config}");
    assert!(config.contains("Authorization: ***"), "{config}");
    assert!(!server.log().contains("t0ken-s3cret"));
}

async fn start_with_env(ws: crate::support::Workspace, yaml: &str, env: &[(&str, &str)]) -> Server {
    Server::start_in_with_env(ws, yaml, "", env).await
}

#[tokio::test]
async fn a_failing_webhook_is_retried_and_never_fails_the_mutation() {
    let hook = HookListener::start(500).await;
    let server = Server::start("basic", &format!("webHookURL: {}\n", hook.url)).await;
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    assert_eq!(result["data"]["createVersion"]["version"]["id"], 1);
    let got = hook.wait_for(3).await;
    assert_eq!(got.len(), 3);
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert_eq!(hook.received.lock().unwrap().len(), 3, "exactly 3 tries");
    let log = server.log();
    assert!(log.contains("webhook not delivered after 3 tries (last: HTTP 500)"), "{log}");

    // An unreachable target is the same: logged, the version stands.
    drop(server);
    let ws = crate::support::Workspace::new("basic");
    let yaml = ws.config(&format!("webHookURL: http://127.0.0.1:{}/gone\n", crate::support::free_port()));
    let server = Server::start_in(ws, &yaml, "").await;
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    assert_eq!(result["data"]["createVersion"]["version"]["id"], 1);
}

/// Core's one retry rule: a 4xx other than 408/425/429 is a refusal for
/// good, tried once; 429 is tried again.
#[tokio::test]
async fn a_webhook_refused_with_404_is_not_retried_and_429_is() {
    let hook = HookListener::start(404).await;
    let server = Server::start("basic", &format!("webHookURL: {}\n", hook.url)).await;
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    assert_eq!(result["data"]["createVersion"]["version"]["id"], 1, "{result}");
    hook.wait_for(1).await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(hook.received.lock().unwrap().len(), 1, "one try");
    let log = server.log();
    assert!(log.contains("webhook not delivered after 1 tries (last: HTTP 404)"), "{log}");
    drop(server); // one server at a time on MySQL

    let hook = HookListener::start(429).await;
    let server = Server::start("basic", &format!("webHookURL: {}\n", hook.url)).await;
    server.create_version(json!({ "versionName": "v1" })).await;
    assert_eq!(hook.wait_for(3).await.len(), 3);
}

/// A redirect is not followed: the webhook's URL and headers are secrets
/// (a chat service's path, an API key), and a receiver — or an open
/// redirect on its host — would send them, and the POST, wherever it
/// likes. Tried once (a 3xx is no answer to retry), logged as not
/// delivered, the version stands.
#[tokio::test]
async fn a_webhook_answered_with_a_redirect_is_not_followed_and_its_secrets_stay() {
    let elsewhere = HookListener::start(200).await;
    let redirector = HookListener::redirecting(&elsewhere.url).await;
    let extra = format!("webHookURL: \"{}\"\nwebHookHeaders:\n  - \"X-Api-Key: k3y-s3cret\"\n", redirector.url);
    let server = Server::start("basic", &extra).await;
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    assert_eq!(result["data"]["createVersion"]["version"]["id"], 1, "{result}");
    let got = redirector.wait_for(1).await;
    assert_eq!(got[0].headers["x-api-key"], "k3y-s3cret");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(redirector.received.lock().unwrap().len(), 1, "one try");
    assert!(elsewhere.received.lock().unwrap().is_empty(), "the redirect was followed");
    let log = server.log();
    assert!(log.contains("webhook not delivered after 1 tries (last: HTTP 307)"), "{log}");
    assert!(log.contains("redirects are not followed"), "{log}");
    assert!(!log.contains("s3cret"), "{log}");
}
