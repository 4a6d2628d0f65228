//! What the web console stands on, on every backend: its assets under the
//! prefix with their headers, and the GraphQL fields added for it (`plan`,
//! `fleet`, `Version.requestId`). The pages themselves are driven in
//! Chromium by tests/console/test.mjs.

use serde_json::json;

use crate::support::Server;

#[tokio::test]
async fn the_console_is_served_under_the_prefix_with_a_strict_policy() {
    let ws = crate::support::Workspace::new("basic");
    let yaml = ws.config("pathPrefix: /ops\n");
    let server = Server::start_in(ws, &yaml, "/ops").await;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let redirect = client.get(server.url("/console")).send().await.unwrap();
    assert_eq!(redirect.status(), 308);
    assert_eq!(redirect.headers()["location"], "/ops/console/");
    for (path, content_type) in [
        ("/console/", "text/html; charset=utf-8"),
        ("/console/app.js", "text/javascript; charset=utf-8"),
        ("/console/app.css", "text/css; charset=utf-8"),
        ("/console/favicon.svg", "image/svg+xml"),
    ] {
        let response = server.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], content_type, "{path}");
        let policy = response.headers()["content-security-policy"].to_str().unwrap().to_string();
        assert!(policy.starts_with("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'"));
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    }
    let page = server.get("/console/").await.text().await.unwrap();
    // Nothing from another origin, nothing inline.
    assert!(!page.contains("http://") && !page.contains("https://") && !page.contains("<script>"), "{page}");
    assert_eq!(server.get("/console/nope.js").await.status(), 404);
}

#[tokio::test]
async fn fleet_plan_and_request_ids_for_the_console() {
    let server = Server::start("basic", "").await;
    let first = server
        .client
        .post(server.url("/v2/service"))
        .header("content-type", "application/json")
        .header("x-request-id", "deploy-42")
        .body(
            json!({ "query": "mutation { createVersion(input: {versionName: \"base\"}) { version { id } } }" })
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    for tenant in ["acme", "beta", "gamma"] {
        let result = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(result.get("errors").is_none(), "{result}");
    }
    let versions = server.data("{ versions { id requestId } }", json!({})).await;
    assert_eq!(versions["versions"][0], json!({ "id": 1, "requestId": "deploy-42" }));

    // Everything applied; then a new tenant migration, pending everywhere.
    let fleet = server.data("{ fleet { files tenants { name states } } }", json!({})).await;
    assert_eq!(fleet["fleet"]["files"], json!(["tenants/001.sql", "tenants/003.sql"]));
    assert_eq!(fleet["fleet"]["tenants"][0], json!({ "name": "acme", "states": ["Applied", "Applied"] }));
    server.ws.write_migration("tenants/004.sql", "create table {schema}.audit (id integer);\n");
    let fleet = server.data("{ fleet { files tenants { name states } } }", json!({})).await;
    assert_eq!(fleet["fleet"]["tenants"][2], json!({ "name": "gamma", "states": ["Applied", "Applied", "Pending"] }));
    // A page of the rows, in order of name, after the last one seen.
    let page = server.data(r#"{ fleet { tenants(first: 1, after: "acme") { name cells } } }"#, json!({})).await;
    assert_eq!(page["fleet"]["tenants"], json!([{ "name": "beta", "cells": "AAP" }]));

    let plan = server
        .data(
            "{ plan { nothingToDo refusedByDrift groups { schemas tenants files { file script execute } } } }",
            json!({}),
        )
        .await;
    let groups = plan["plan"]["groups"].as_array().unwrap();
    let tenants = groups.iter().find(|g| g["tenants"] == true).unwrap();
    assert_eq!(tenants["schemas"], json!(["acme", "beta", "gamma"]));
    assert_eq!(tenants["files"][0], json!({ "file": "tenants/004.sql", "script": false, "execute": true }));
    assert_eq!(plan["plan"]["nothingToDo"], false);

    // A changed file: drifted cells, and Apply's plan refuses (not an error).
    server.ws.write_migration("tenants/001.sql", "-- edited\ncreate table {schema}.users (id integer);\n");
    let fleet = server.data("{ fleet { tenants { states cells } } }", json!({})).await;
    assert_eq!(fleet["fleet"]["tenants"][1]["states"], json!(["Drifted", "Applied", "Pending"]));
    // The same row in one string, a letter per file (what the console reads).
    assert_eq!(fleet["fleet"]["tenants"][1]["cells"], "DAP");
    assert_eq!(fleet["fleet"]["tenants"][0]["cells"], "DAP");
    let plan = server.data("{ plan { refusedByDrift drift { file schemas } } }", json!({})).await;
    assert_eq!(
        plan["plan"],
        json!({ "refusedByDrift": true, "drift": [{ "file": "tenants/001.sql", "schemas": ["acme", "beta", "gamma"] }] })
    );
    // createTenant's preview checks the name like createTenant.
    let refused = server.graphql("{ plan(tenantName: \"svc\") { nothingToDo } }", json!({})).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "INVALID_TENANT_NAME", "{refused}");
    // Nothing of this wrote anything.
    assert_eq!(server.data("{ versions { id } }", json!({})).await["versions"].as_array().unwrap().len(), 4);
}
