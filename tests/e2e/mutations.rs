//! createVersion / createTenant: apply, re-run, Sync, dryRun, fan-out,
//! drift, rollback, serialisation.

use serde_json::json;

use crate::support::{Backend, Server, applied, backend, counts, create_schema_sql, pairs};

#[tokio::test]
async fn create_version_applies_everything_in_order_and_records_it() {
    let server = Server::start("basic", "").await;
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    let created = &result["data"]["createVersion"];
    assert_eq!(
        counts(created),
        // No tenants yet: the two tenant migrations and the tenant script are
        // loaded (counted), and applied 0 times.
        json!({ "tenants": 0, "singleMigrations": 2, "tenantMigrations": 2, "tenantMigrationsTotal": 0,
                "migrationsGrandTotal": 2, "singleScripts": 1, "tenantScripts": 1, "tenantScriptsTotal": 0,
                "scriptsGrandTotal": 1 })
    );
    assert_eq!(created["version"]["id"], 1);
    assert_eq!(created["version"]["name"], "v1");
    assert_eq!(
        applied(created),
        pairs(&[("ref/001.sql", "ref"), ("config/002.sql", "config"), ("scripts/config/runs.sql", "config")])
    );
    let first = &created["version"]["dbMigrations"][0];
    assert_eq!(first["name"], "001.sql");
    assert_eq!(first["migrationType"], "SingleMigration");
    assert_eq!(first["sourceDir"], "ref");
    assert_eq!(created["version"]["dbMigrations"][2]["migrationType"], "SingleScript");
    let expected_checksum = strata_checksum(&server.ws.migrations().join("ref/001.sql"));
    assert_eq!(first["checkSum"], expected_checksum);

    // The migrations really ran: tables and rows in the schema files.
    assert_eq!(server.ws.tables("ref").await, ["countries"]);
    assert_eq!(server.ws.count("ref", "countries").await, 2);
    assert_eq!(server.ws.rows("config", "select value from settings where name = 'runs'").await, [[json!("1")]]);
    // And were recorded, with the un-substituted contents.
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    let stored =
        server.ws.rows("svc", "select contents, db_schema, migration_type from svc_migrations where id = 1").await;
    assert_eq!(stored[0][0], json!(std::fs::read_to_string(server.ws.migrations().join("ref/001.sql")).unwrap()));
    assert!(stored[0][0].as_str().unwrap().contains("{schema}.countries"));
    assert_eq!(stored[0][1], json!("ref"));
    assert_eq!(stored[0][2], json!(1));
}

/// Lowercase hex SHA-256 of a file, computed independently of the service.
fn strata_checksum(path: &std::path::Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn re_running_applies_only_scripts_and_nothing_due_creates_no_version() {
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    let again = server.create_version(json!({ "versionName": "v2" })).await;
    let created = &again["data"]["createVersion"];
    assert_eq!(applied(created), pairs(&[("scripts/config/runs.sql", "config")]));
    assert_eq!(created["summary"]["singleMigrations"], 0);
    assert_eq!(server.ws.rows("config", "select value from settings where name = 'runs'").await, [[json!("2")]]);

    // Without scripts there is nothing to do: no version.
    std::fs::remove_file(server.ws.migrations().join("scripts/config/runs.sql")).unwrap();
    let idle = server.create_version(json!({ "versionName": "v3" })).await;
    assert_eq!(idle["data"]["createVersion"]["version"], json!(null));
    assert_eq!(idle["data"]["createVersion"]["summary"]["migrationsGrandTotal"], 0);
    assert_eq!(server.ws.count("svc", "svc_versions").await, 2);
}

#[tokio::test]
async fn create_tenant_then_create_version_fans_out_to_every_tenant() {
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    for tenant in ["abc", "def_2"] {
        let result =
            server.create_tenant(json!({ "tenantName": tenant, "versionName": format!("add {tenant}") })).await;
        let created = &result["data"]["createTenant"];
        assert_eq!(
            counts(created),
            json!({ "tenants": 1, "singleMigrations": 0, "tenantMigrations": 2, "tenantMigrationsTotal": 2,
                    "migrationsGrandTotal": 2, "singleScripts": 0, "tenantScripts": 1, "tenantScriptsTotal": 1,
                    "scriptsGrandTotal": 1 })
        );
        assert_eq!(
            applied(created),
            pairs(&[("tenants/001.sql", tenant), ("tenants/003.sql", tenant), ("scripts/tenants/touch.sql", tenant)])
        );
        assert_eq!(server.ws.count(tenant, "users").await, 1);
    }
    assert_eq!(
        server.ws.rows("svc", "select name from svc_tenants order by id").await,
        [[json!("abc")], [json!("def_2")]]
    );
    let tenants = server.data("{ tenants { name } }", json!({})).await;
    assert_eq!(tenants, json!({ "tenants": [{ "name": "abc" }, { "name": "def_2" }] }));

    // A new tenant migration reaches both tenants. Tenants commit
    // concurrently, so rows of different tenants are recorded in commit
    // order; segments (tenant migrations, the single script, tenant
    // scripts) follow plan order.
    let add_column = match server.ws.sqlserver {
        true => "alter table {schema}.users add phone nvarchar(40);\n",
        false => "alter table {schema}.users add column phone text;\n",
    };
    server.ws.write_migration("tenants/004.sql", add_column);
    let result = server.create_version(json!({ "versionName": "v2" })).await;
    let created = &result["data"]["createVersion"];
    let recorded = applied(created);
    let position = |pair: (&str, &str)| recorded.iter().position(|(f, s)| f == pair.0 && s == pair.1).unwrap();
    assert!(position(("tenants/004.sql", "abc")) < position(("scripts/config/runs.sql", "config")));
    assert!(position(("tenants/004.sql", "def_2")) < position(("scripts/config/runs.sql", "config")));
    assert!(position(("scripts/config/runs.sql", "config")) < position(("scripts/tenants/touch.sql", "abc")));
    let mut recorded = recorded;
    recorded.sort();
    assert_eq!(
        recorded,
        pairs(&[
            ("scripts/config/runs.sql", "config"),
            ("scripts/tenants/touch.sql", "abc"),
            ("scripts/tenants/touch.sql", "def_2"),
            ("tenants/004.sql", "abc"),
            ("tenants/004.sql", "def_2"),
        ])
    );
    assert_eq!(created["summary"]["tenants"], 2);
    assert_eq!(created["summary"]["tenantMigrations"], 1);
    assert_eq!(created["summary"]["tenantMigrationsTotal"], 2);
    assert_eq!(created["summary"]["tenantScriptsTotal"], 2);
    // The new column exists in the second tenant (the query fails otherwise).
    assert_eq!(server.ws.rows("def_2", "select count(phone) from users").await, [[json!(0)]]);
}

#[tokio::test]
async fn create_tenant_refuses_an_existing_tenant() {
    let server = Server::start("basic", "").await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t1" })).await;
    let again = server.create_tenant(json!({ "tenantName": "abc", "versionName": "t2" })).await;
    assert_eq!(again["data"], json!(null));
    assert_eq!(again["errors"][0]["message"], "tenant \"abc\" already exists");
    assert_eq!(again["errors"][0]["extensions"]["code"], "TENANT_EXISTS");
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 1);
}

#[tokio::test]
async fn sync_records_without_executing() {
    let server = Server::start("basic", "").await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t1", "action": "Sync" })).await;
    let result = server.create_version(json!({ "versionName": "import", "action": "Sync" })).await;
    let created = &result["data"]["createVersion"];
    assert_eq!(
        applied(created),
        pairs(&[
            ("ref/001.sql", "ref"),
            ("config/002.sql", "config"),
            ("scripts/config/runs.sql", "config"),
            ("scripts/tenants/touch.sql", "abc"),
        ])
    );
    assert!(server.ws.tables("ref").await.is_empty(), "Sync must not execute");
    assert!(server.ws.tables("abc").await.is_empty(), "Sync must not execute");
    assert_eq!(server.ws.count("svc", "svc_migrations").await, 3 + 4);
    // Synced migrations are never applied afterwards: without scripts,
    // nothing is due.
    std::fs::remove_file(server.ws.migrations().join("scripts/config/runs.sql")).unwrap();
    std::fs::remove_file(server.ws.migrations().join("scripts/tenants/touch.sql")).unwrap();
    let result = server.create_version(json!({ "versionName": "after" })).await;
    assert_eq!(result["data"]["createVersion"]["version"], json!(null), "{result}");
    assert!(server.ws.tables("ref").await.is_empty());
}

#[tokio::test]
async fn dry_run_executes_nothing_that_persists() {
    let server = Server::start("basic", "").await;
    let result = server.create_version(json!({ "versionName": "v1", "dryRun": true })).await;
    let created = &result["data"]["createVersion"];
    assert_eq!(created["version"], json!(null));
    assert_eq!(created["summary"]["singleMigrations"], 2);
    assert_eq!(created["summary"]["singleScripts"], 1);
    let tenant = server.create_tenant(json!({ "tenantName": "dry", "versionName": "t", "dryRun": true })).await;
    assert_eq!(tenant["data"]["createTenant"]["version"], json!(null));
    assert_eq!(tenant["data"]["createTenant"]["summary"]["tenantMigrationsTotal"], 2);

    assert_eq!(server.ws.count("svc", "svc_versions").await, 0);
    assert_eq!(server.ws.count("svc", "svc_migrations").await, 0);
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 0);
    assert!(server.ws.tables("ref").await.is_empty());
    assert!(server.ws.tables("dry").await.is_empty());
    if backend() == Backend::Sqlite {
        assert!(!server.ws.path().join("db/dry.db").exists(), "a dry run leaves no tenant file behind");
    }
    assert_eq!(server.metric("svc_http_versions_created").await, 0.0);
    assert_eq!(server.metric("svc_http_tenants_created").await, 0.0);

    // A dry run on a transactional database executes, so it reports a
    // failing migration; on MySQL it executes nothing at all.
    server.ws.write_migration("ref/002.sql", "insert into {schema}.nope values (1);");
    let failing = server.create_version(json!({ "versionName": "v1", "dryRun": true })).await;
    if backend() == Backend::Mysql {
        assert_eq!(failing["data"]["createVersion"]["summary"]["singleMigrations"], 3, "{failing}");
    } else {
        assert_eq!(failing["errors"][0]["extensions"]["code"], "MIGRATION_FAILED");
    }
    assert_eq!(server.ws.count("svc", "svc_versions").await, 0);
}

/// The `failing` set with tenant `abc` created before `tenants/002.sql`
/// exists, then `createVersion` over ref/001 (single), tenants/002 (tenant
/// abc), ref/003 (single, fails).
async fn failing_version(extra: &str) -> (Server, serde_json::Value) {
    let server = Server::start("failing", extra).await;
    let tenant_file = server.ws.migrations().join("tenants/002.sql");
    let tenant_sql = std::fs::read_to_string(&tenant_file).unwrap();
    std::fs::remove_file(&tenant_file).unwrap();
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t1" })).await;
    std::fs::write(&tenant_file, tenant_sql).unwrap();
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    assert_eq!(result["data"], json!(null));
    let error = result["errors"][0].clone();
    assert_eq!(error["extensions"]["code"], "MIGRATION_FAILED");
    assert_eq!(error["extensions"]["file"], "ref/003.sql");
    assert_eq!(error["extensions"]["schema"], "ref");
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("migration ref/003.sql failed in schema ref"), "{message}");
    assert!(message.contains("no_such_table"), "{message}");
    (server, error)
}

#[tokio::test]
async fn a_failing_migration_rolls_back_its_schema_and_keeps_what_committed() {
    let (server, error) = failing_version("").await;
    let message = error["message"].as_str().unwrap();
    // ref/001 and abc's tenants/002 committed before ref/003 ran: they stay,
    // applied and recorded in version 2; ref/003 rolled back (on MySQL its
    // DDL committed as it ran, so the table it created stays, unrecorded).
    assert_eq!(error["extensions"]["versionId"], 2);
    // Three lists that never share a name: ref's first file committed, its
    // third did not.
    assert_eq!(error["extensions"]["committedSchemas"], json!(["abc"]));
    assert_eq!(error["extensions"]["partlyCommittedSchemas"], json!(["ref"]));
    assert_eq!(error["extensions"]["notCommittedSchemas"], json!([]));
    assert!(
        message.ends_with(
            "what committed before the failure stays applied and recorded in version 2; 1 schema(s) committed \
             (abc); 1 schema(s) partly committed (ref); fix the file and run again to apply what is left"
        ),
        "{message}"
    );
    assert_eq!(server.ws.count("svc", "svc_versions").await, 2);
    assert_eq!(
        server.ws.rows("svc", "select filename, db_schema from svc_migrations where version_id = 2 order by id").await,
        [[json!("ref/001.sql"), json!("ref")], [json!("tenants/002.sql"), json!("abc")]]
    );
    let ref_tables: &[&str] = if backend() == Backend::Mysql { &["a", "c"] } else { &["a"] };
    assert_eq!(server.ws.tables("ref").await, ref_tables);
    assert_eq!(server.ws.tables("abc").await, ["b"]);
    // Metrics count what committed: version 2 with one single and one tenant migration.
    assert_eq!(server.metric("svc_http_versions_created").await, 2.0);
    assert_eq!(server.metric("svc_http_migrations_applied{type=\"single_migrations\"}").await, 1.0);

    // Fixing the file and re-running applies exactly what is left.
    // (T-SQL has no `if not exists`; its unit rolled back the table anyway.)
    let fixed = match server.ws.sqlserver {
        true => "create table {schema}.c (id integer);\n",
        false => "create table if not exists {schema}.c (id integer);\n",
    };
    server.ws.write_migration("ref/003.sql", fixed);
    let fixed = server.create_version(json!({ "versionName": "v1 again" })).await;
    assert_eq!(applied(&fixed["data"]["createVersion"]), pairs(&[("ref/003.sql", "ref")]));
    assert_eq!(server.ws.tables("ref").await, ["a", "c"]);
}

#[tokio::test]
async fn with_transaction_scope_version_a_failing_migration_rolls_back_the_whole_version() {
    if backend() == Backend::Mysql {
        return; // No transactional DDL: the scope changes nothing there.
    }
    let (server, error) = failing_version("transactionScope: version\n").await;
    let message = error["message"].as_str().unwrap();
    assert!(message.ends_with("the version was rolled back, nothing was recorded"), "{message}");
    assert_eq!(error["extensions"]["committedSchemas"], json!([]));
    // Nothing of the version persists: not ref/001 (ran first), not the
    // tenant migration, not the table created by the failing file itself.
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    assert_eq!(server.ws.count("svc", "svc_migrations").await, 0);
    assert!(server.ws.tables("ref").await.is_empty());
    assert!(server.ws.tables("abc").await.is_empty());
    assert_eq!(server.metric("svc_http_versions_created").await, 1.0);

    // Fixing the file and re-running applies everything once.
    server.ws.write_migration("ref/003.sql", "create table {schema}.c (id integer);\n");
    let fixed = server.create_version(json!({ "versionName": "v1 again" })).await;
    assert_eq!(
        applied(&fixed["data"]["createVersion"]),
        pairs(&[("ref/001.sql", "ref"), ("tenants/002.sql", "abc"), ("ref/003.sql", "ref")])
    );
    assert_eq!(server.ws.tables("ref").await, ["a", "c"]);
}

#[tokio::test]
async fn drift_is_refused_with_every_file_listed() {
    let server = Server::start("basic", "").await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t1" })).await;
    server.create_version(json!({ "versionName": "v1" })).await;
    server.ws.write_migration("ref/001.sql", "create table {schema}.countries (code text);\n");
    server.ws.write_migration("tenants/001.sql", "create table {schema}.users (id integer);\n");
    server.ws.write_migration("config/005.sql", "create table {schema}.later (id integer);\n");
    let result = server.create_version(json!({ "versionName": "v2" })).await;
    assert_eq!(result["data"], json!(null));
    let error = &result["errors"][0];
    assert_eq!(error["extensions"]["code"], "DRIFT");
    assert_eq!(error["extensions"]["files"], json!(["ref/001.sql", "tenants/001.sql"]));
    assert_eq!(
        error["message"],
        "2 applied migration(s) changed since they were applied: ref/001.sql, tenants/001.sql; restore the file(s), \
         or record the change with `strata repair`"
    );
    assert_eq!(server.ws.count("svc", "svc_versions").await, 2);
    assert!(!server.ws.tables("config").await.contains(&"later".to_string()));

    // Sync goes ahead, records the new file, and leaves drifted rows alone.
    let synced = server.create_version(json!({ "versionName": "sync", "action": "Sync" })).await;
    let recorded = applied(&synced["data"]["createVersion"]);
    assert!(recorded.contains(&("config/005.sql".to_string(), "config".to_string())), "{recorded:?}");
    assert!(!recorded.iter().any(|(f, _)| f == "ref/001.sql" || f == "tenants/001.sql"), "{recorded:?}");
}

#[tokio::test]
async fn out_of_order_files_are_applied_and_logged() {
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    server.ws.write_migration("ref/000.sql", "create table {schema}.early (id integer);\n");
    let result = server.create_version(json!({ "versionName": "v2" })).await;
    assert_eq!(
        applied(&result["data"]["createVersion"]),
        pairs(&[("ref/000.sql", "ref"), ("scripts/config/runs.sql", "config")])
    );
    assert!(server.ws.tables("ref").await.contains(&"early".to_string()));
    let log = server.log();
    assert!(log.contains("out-of-order migration applied") && log.contains("ref/000.sql"), "{log}");
}

#[tokio::test]
async fn concurrent_mutations_are_serialised() {
    let server = Server::start("basic", "").await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t" })).await;
    let runs = (0..6).map(|i| server.create_version(json!({ "versionName": format!("v{i}") })));
    let results = futures::future::join_all(runs).await;
    for result in &results {
        assert!(result.get("errors").is_none(), "{result}");
    }
    let twice = server.ws.migrations_recorded_twice().await;
    assert!(twice.is_empty(), "applied twice: {twice:?}");
    assert_eq!(server.ws.count("ref", "countries").await, 2);
    assert_eq!(server.ws.rows("config", "select value from settings where name = 'runs'").await, [[json!("6")]]);
    assert_eq!(server.ws.count("svc", "svc_versions").await, 7);
}

#[tokio::test]
async fn a_large_version_records_every_row() {
    let server = Server::start("failing", "").await;
    std::fs::remove_file(server.ws.migrations().join("ref/003.sql")).unwrap();
    for i in 0..1200 {
        let create_schema = if i == 0 { create_schema_sql() } else { "" };
        let sql = format!("{create_schema}create table {{schema}}.t{i} (id integer);\n");
        server.ws.write_migration(&format!("config/{i:05}.sql"), &sql);
    }
    let result = server
        .graphql(
            "mutation { createVersion(input: {versionName: \"big\"}) { summary { singleMigrations } version { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(result["data"]["createVersion"]["summary"]["singleMigrations"], 1201, "{result}");
    assert_eq!(server.ws.count("svc", "svc_migrations").await, 1201);
    assert_eq!(
        server
            .ws
            .rows("svc", "select count(distinct filename), min(version_id), max(version_id) from svc_migrations")
            .await,
        [[json!(1201), json!(1), json!(1)]]
    );
    assert_eq!(server.ws.tables("config").await.len(), 1200);
    let last = server.ws.rows("svc", "select filename from svc_migrations order by id desc limit 1").await;
    assert_eq!(last, [[json!("config/01199.sql")]]);
}
