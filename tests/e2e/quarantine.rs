//! Failure isolation: with a failure budget a version goes on past failing
//! tenants and quarantines them; later versions skip them; a retry
//! completes them in order; a release lets the next version take them; a
//! failure past the budget stops the version — on every engine.

use serde_json::{Value, json};

use crate::support::{Backend, Server, backend, strata};

const RESULTS: &str = "version { id } summary { tenantMigrationsTotal } skippedTenants releasedTenants \
                       quarantined { tenant versionId file line column cause message failures requestId quarantined }";

/// Twelve tenants on the `basic` set, failureBudget 3.
async fn fleet() -> Server {
    let server = Server::start("basic", "failureBudget: 3\n").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    for i in 1..=12 {
        let name = format!("t{i:02}");
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server
}

/// A table `audit` made by hand in `schema`, in the way of the migration.
async fn in_the_way(server: &Server, schema: &str) {
    let sql = match backend() {
        Backend::Sqlite => "create table audit (id integer)".to_string(),
        _ => format!("create table {schema}.audit (id integer)"),
    };
    server.ws.execute(schema, &sql).await;
}

async fn out_of_the_way(server: &Server, schema: &str) {
    let sql = match backend() {
        Backend::Sqlite => "drop table audit".to_string(),
        _ => format!("drop table {schema}.audit"),
    };
    server.ws.execute(schema, &sql).await;
}

async fn recorded(server: &Server, schema: &str) -> Vec<String> {
    let sql =
        format!("select filename from svc_migrations where db_schema = '{schema}' and migration_type = 2 order by id");
    server.ws.rows("svc", &sql).await.into_iter().map(|row| row[0].as_str().unwrap().to_string()).collect()
}

async fn create(server: &Server, name: &str) -> Value {
    let query = format!("mutation($n: String!) {{ createVersion(input: {{ versionName: $n }}) {{ {RESULTS} }} }}");
    server.graphql(&query, json!({ "n": name })).await
}

fn tenants_of(list: &Value) -> Vec<&str> {
    list.as_array().unwrap().iter().map(|row| row["tenant"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn failing_tenants_are_quarantined_skipped_retried_and_released() {
    let server = fleet().await;
    in_the_way(&server, "t03").await;
    in_the_way(&server, "t07").await;
    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key, at text);\n");

    // Two tenants fail within the budget: the version goes on.
    let created = create(&server, "audit").await;
    assert!(created.get("errors").is_none(), "{created}");
    let result = &created["data"]["createVersion"];
    assert_eq!(result["summary"]["tenantMigrationsTotal"], 10, "what committed is counted: {result}");
    assert_eq!(tenants_of(&result["quarantined"]), ["t03", "t07"], "{result}");
    let t03 = &result["quarantined"][0];
    assert_eq!(t03["file"], "tenants/006.sql");
    assert_eq!(t03["cause"], "STATEMENT");
    // PostgreSQL gives no position for "already exists": the statements
    // that completed before it tell which one failed.
    // SQL Server names a line, never a column.
    let column = if backend() == Backend::Sqlserver { Value::Null } else { json!(1) };
    assert_eq!((&t03["line"], &t03["column"]), (&json!(1), &column), "{t03}");
    assert_eq!(t03["failures"], 1);
    assert!(t03["message"].as_str().unwrap().contains("audit"), "{t03}");
    // MariaDB commits DDL as it runs: the file may be partly applied, and
    // the quarantine says so (a retry runs it from its start).
    let partly = t03["message"].as_str().unwrap().contains("may be partly applied");
    assert_eq!(partly, backend() == Backend::Mysql, "{t03}");
    assert_eq!(t03["versionId"], result["version"]["id"]);
    assert_eq!(recorded(&server, "t02").await.last().unwrap(), "tenants/006.sql");
    assert!(!recorded(&server, "t03").await.contains(&"tenants/006.sql".to_string()));
    let listed = server.data("{ quarantine { tenant file failures } }", json!({})).await;
    assert_eq!(
        listed["quarantine"],
        json!([{ "tenant": "t03", "file": "tenants/006.sql", "failures": 1 },
               { "tenant": "t07", "file": "tenants/006.sql", "failures": 1 }])
    );
    // In pages, in order of name after the last one seen.
    let page = |after: Value| {
        let server = &server;
        async move {
            let query = "query($after: String) { quarantine(first: 1, after: $after) { tenant } }";
            server.data(query, json!({ "after": after })).await["quarantine"].clone()
        }
    };
    assert_eq!(tenants_of(&page(Value::Null).await), ["t03"]);
    assert_eq!(tenants_of(&page(json!("t03")).await), ["t07"]);
    assert_eq!(tenants_of(&page(json!("t04")).await), ["t07"]);
    assert!(tenants_of(&page(json!("t07")).await).is_empty());
    assert_eq!(server.metric("svc_http_tenants_quarantined").await, 2.0);
    let listed = strata(server.config_path(), &["tenants", "--json"]).await;
    assert_eq!(listed.status.code(), Some(0), "{}", String::from_utf8_lossy(&listed.stderr));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["shards"], json!([]));
    let held: Vec<&Value> = listed["tenants"].as_array().unwrap().iter().filter(|t| t["quarantined"] == true).collect();
    assert_eq!(
        held,
        [
            &json!({ "name": "t03", "shard": null, "reachable": true, "quarantined": true }),
            &json!({ "name": "t07", "shard": null, "reachable": true, "quarantined": true })
        ]
    );
    assert_eq!(listed["tenants"].as_array().unwrap().len(), 12, "{listed}");
    // The fleet matrix still shows them, behind.
    let fleet = server.data("{ fleet { files tenants { name states } } }", json!({})).await;
    let t03 = fleet["fleet"]["tenants"].as_array().unwrap().iter().find(|t| t["name"] == "t03").unwrap().clone();
    assert_eq!(t03["states"].as_array().unwrap().last().unwrap(), "Pending", "{fleet}");

    // The next version skips them: they never get 007 before 006.
    server.ws.write_migration("tenants/007.sql", "alter table {schema}.audit add note varchar(20);\n");
    let plan = strata(server.config_path(), &["plan"]).await;
    let plan_text = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(plan_text.contains("Skipped: 2 quarantined tenant(s) (t03, t07)"), "{plan_text}");
    let next = create(&server, "note").await;
    let result = &next["data"]["createVersion"];
    assert_eq!(result["skippedTenants"], json!(["t03", "t07"]), "{next}");
    assert_eq!(result["quarantined"], json!([]));
    assert_eq!(result["summary"]["tenantMigrationsTotal"], 10);
    assert!(recorded(&server, "t07").await.iter().all(|f| f != "tenants/006.sql" && f != "tenants/007.sql"));

    // t03 is fixed: a retry completes it in order; t07 fails again and stays,
    // put aside by the same request (a rollout's wave knows its own by it).
    let before = strata(server.config_path(), &["quarantine", "--json"]).await;
    let before: Value = serde_json::from_slice(&before.stdout).unwrap();
    let put_aside_by =
        before.as_array().unwrap().iter().find(|row| row["tenant"] == "t07").unwrap()["requestId"].clone();
    assert!(put_aside_by.as_str().is_some_and(|id| !id.is_empty()), "{before}");
    out_of_the_way(&server, "t03").await;
    let retry = strata(server.config_path(), &["quarantine", "retry", "--version", "retry", "--json"]).await;
    assert_eq!(retry.status.code(), Some(11), "{}", String::from_utf8_lossy(&retry.stderr));
    let retried: Value = serde_json::from_slice(&retry.stdout).unwrap();
    assert_eq!(retried["releasedTenants"], json!(["t03"]), "{retried}");
    assert_eq!(tenants_of(&retried["quarantined"]), ["t07"]);
    assert_eq!(retried["quarantined"][0]["failures"], 2, "{retried}");
    let t03 = recorded(&server, "t03").await;
    assert_eq!(t03[t03.len() - 2..], ["tenants/006.sql".to_string(), "tenants/007.sql".to_string()]);
    let listed = strata(server.config_path(), &["quarantine", "--json"]).await;
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(tenants_of(&listed), ["t07"]);
    assert_eq!(listed[0]["failures"], 2, "{listed}");
    assert_eq!(listed[0]["requestId"], put_aside_by, "{listed}");

    // Retrying a tenant that is not quarantined is a usage error.
    let wrong = strata(server.config_path(), &["quarantine", "retry", "--version", "x", "t01"]).await;
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("\"t01\" is not quarantined"));

    // Released, t07 is taken by the next version like any other tenant.
    out_of_the_way(&server, "t07").await;
    let released = server.data(r#"mutation { releaseQuarantined(tenantNames: ["t07", "t01"]) }"#, json!({})).await;
    assert_eq!(released["releaseQuarantined"], json!(["t07"]));
    let after = create(&server, "after release").await;
    assert_eq!(after["data"]["createVersion"]["summary"]["tenantMigrationsTotal"], 2, "{after}");
    let t07 = recorded(&server, "t07").await;
    assert_eq!(t07[t07.len() - 2..], ["tenants/006.sql".to_string(), "tenants/007.sql".to_string()]);
    assert_eq!(server.data("{ quarantine { tenant } }", json!({})).await["quarantine"], json!([]));
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
}

#[tokio::test]
async fn a_failure_past_the_budget_stops_the_version() {
    let server = fleet().await;
    for schema in ["t01", "t02"] {
        in_the_way(&server, schema).await;
    }
    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key, at text);\n");

    // Budget 0 (explicit): the first failure stops it, nothing quarantined.
    let stopped = strata(server.config_path(), &["apply", "--version", "strict", "--failure-budget", "0"]).await;
    assert_eq!(stopped.status.code(), Some(1), "{}", String::from_utf8_lossy(&stopped.stdout));
    assert_eq!(server.data("{ quarantine { tenant } }", json!({})).await["quarantine"], json!([]));

    // 10 % of 12 tenants is 1: the second failure stops it; both failing
    // tenants are put aside.
    let over = strata(server.config_path(), &["apply", "--version", "over", "--failure-budget", "10%", "--json"]).await;
    assert_eq!(over.status.code(), Some(1), "{}", String::from_utf8_lossy(&over.stdout));
    let errors: Value = serde_json::from_slice(&over.stdout).unwrap();
    assert_eq!(errors["errors"][0]["extensions"]["code"], "MIGRATION_FAILED", "{errors}");
    let held = server.data("{ quarantine { tenant } }", json!({})).await;
    assert_eq!(tenants_of(&held["quarantine"]), ["t01", "t02"]);
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
}

/// A version that starts while another runs judges drift once that one has
/// ended: half-way, the other's tenants are migrated but not all recorded yet
/// (SQLite's staged rows, MySQL's DDL before its rows), which read as drift —
/// and `driftPolicy: quarantine` put healthy tenants aside.
#[tokio::test]
async fn a_version_started_during_another_judges_drift_once_it_has_ended() {
    let server = Server::start("basic", "driftPolicy: quarantine\ntenantConcurrency: 1\n").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    let names: Vec<String> = (1..=12).map(|i| format!("t{i:02}")).collect();
    for name in &names {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    let slow = match backend() {
        Backend::Postgres => "select pg_sleep(0.15);",
        Backend::Mysql => "do sleep(0.15);",
        Backend::Sqlite => {
            "with recursive c(x) as (select 1 union all select x + 1 from c where x < 400000) select count(*) from c;"
        }
        Backend::Sqlserver => "declare @busy int = 0;\nwhile @busy < 120000 set @busy = @busy + 1;",
    };
    server.ws.write_migration("tenants/006.sql", &format!("create table {{schema}}.slowed (id integer);\n{slow}\n"));
    let first = create(&server, "slow");
    let second = async {
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        server.ws.write_migration("tenants/007.sql", "create table {schema}.after (id integer);\n");
        create(&server, "during").await
    };
    let (first, second) = tokio::join!(first, second);
    for (name, result) in [("slow", &first), ("during", &second)] {
        assert!(result.get("errors").is_none(), "{name}: {result}");
        assert_eq!(result["data"]["createVersion"]["quarantined"], json!([]), "{name}: {result}\n{}", server.log());
    }
    assert_eq!(server.data("{ quarantine { tenant } }", json!({})).await["quarantine"], json!([]));
    for name in &names {
        let files = recorded(&server, name).await;
        assert!(
            files.contains(&"tenants/006.sql".to_string()) && files.contains(&"tenants/007.sql".to_string()),
            "{name}: {files:?}"
        );
    }
}

#[tokio::test]
async fn drift_policy_quarantine_puts_drifted_tenants_aside_before_the_version() {
    let server = Server::start("basic", "driftPolicy: quarantine\n").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    for name in ["t01", "t02", "t03", "t04", "t05"] {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    // A hot-fix run by hand on one tenant.
    let alter = match backend() {
        Backend::Sqlite => "alter table users add note varchar(20)".to_string(),
        _ => "alter table t04.users add note varchar(20)".to_string(),
    };
    server.ws.execute("t04", &alter).await;
    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key, at text);\n");

    let created = create(&server, "audit").await;
    assert!(created.get("errors").is_none(), "{created}");
    let result = &created["data"]["createVersion"];
    assert_eq!(tenants_of(&result["quarantined"]), ["t04"], "{result}");
    let t04 = &result["quarantined"][0];
    assert_eq!(t04["cause"], "SCHEMA_DRIFT");
    assert_eq!(t04["file"], "");
    let message = t04["message"].as_str().unwrap();
    assert!(message.starts_with("its live schema differs from t01's, which recorded the same"), "{message}");
    assert!(message.contains("note"), "{message}");
    assert_eq!(result["skippedTenants"], json!(["t04"]));
    assert_eq!(result["summary"]["tenantMigrationsTotal"], 4);
    assert!(!recorded(&server, "t04").await.contains(&"tenants/006.sql".to_string()));

    // The operator reverts the hot-fix and retries: t04 gets 006, and the
    // next version finds no drift.
    let revert = match backend() {
        Backend::Sqlite => "alter table users drop column note".to_string(),
        _ => "alter table t04.users drop column note".to_string(),
    };
    server.ws.execute("t04", &revert).await;
    let retry = strata(server.config_path(), &["quarantine", "retry", "--version", "after review", "t04"]).await;
    assert_eq!(retry.status.code(), Some(0), "{}", String::from_utf8_lossy(&retry.stdout));
    assert_eq!(recorded(&server, "t04").await.last().unwrap(), "tenants/006.sql");
    assert_eq!(server.data("{ quarantine { tenant } }", json!({})).await["quarantine"], json!([]));
    server.ws.write_migration("tenants/007.sql", "create table {schema}.audit2 (id integer primary key);\n");
    let next = create(&server, "after").await;
    assert_eq!(next["data"]["createVersion"]["quarantined"], json!([]), "{next}");
    assert_eq!(next["data"]["createVersion"]["summary"]["tenantMigrationsTotal"], 5);
}
