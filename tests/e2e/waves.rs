//! Waves: a version over named tenants (a canary) or a stable share of the
//! fleet, then the rest — on every engine.

use std::collections::BTreeSet;

use serde_json::json;
use strata_core::migrate::wave::bucket;

use crate::support::{Server, strata};

async fn with_file(server: &Server, file: &str) -> BTreeSet<String> {
    let sql = format!("select db_schema from svc_migrations where filename = '{file}'");
    server.ws.rows("svc", &sql).await.into_iter().map(|row| row[0].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_canary_then_a_stable_share_then_the_rest() {
    let server = Server::start("basic", "").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    let names: Vec<String> = (1..=20).map(|i| format!("t{i:02}")).collect();
    for name in &names {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key);\n");
    let config = server.config_path();

    // The canary: two named tenants.
    let canary = strata(config, &["apply", "--version", "canary", "--tenants", "t07,t02"]).await;
    assert_eq!(canary.status.code(), Some(0), "{}", String::from_utf8_lossy(&canary.stderr));
    assert_eq!(with_file(&server, "tenants/006.sql").await, BTreeSet::from(["t02".to_string(), "t07".to_string()]));

    // 30 %: the tenants whose bucket is below 30, the same on every run.
    let share: BTreeSet<String> = names.iter().filter(|t| bucket(t) < 30).cloned().collect();
    let expected: BTreeSet<String> = share.iter().cloned().chain(["t02".to_string(), "t07".to_string()]).collect();
    let wave = server
        .graphql(
            "mutation { createVersionWave(input: { versionName: \"30%\" }, share: 30) { summary { tenantMigrationsTotal } } }",
            json!({}),
        )
        .await;
    assert!(wave.get("errors").is_none(), "{wave}");
    assert_eq!(with_file(&server, "tenants/006.sql").await, expected, "{wave}");
    let again = strata(config, &["apply", "--version", "30% again", "--share", "30%"]).await;
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(with_file(&server, "tenants/006.sql").await, expected, "a share is stable");

    // The rest: a plain version.
    let rest = server.create_version(json!({ "versionName": "rest" })).await;
    assert!(rest.get("errors").is_none(), "{rest}");
    assert_eq!(with_file(&server, "tenants/006.sql").await, names.iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<serde_json::Value>>::new());

    // A name that is no tenant is refused before anything runs.
    let wrong = strata(config, &["apply", "--version", "typo", "--tenants", "t99"]).await;
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("\"t99\" is not a tenant"));
    let both = server
        .graphql("mutation { createVersionWave(input: { versionName: \"x\" }, share: 10, tenantNames: [\"t01\"]) { version { id } } }", json!({}))
        .await;
    assert_eq!(both["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{both}");
}
