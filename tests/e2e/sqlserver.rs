//! SQL Server, run against a real TDS/T-SQL engine: Babelfish for
//! PostgreSQL, started by `bash tests/sqlserver.sh start` (which prints
//! `STRATA_TEST_SQLSERVER_URL`). Each test is skipped, and says so, when the
//! variable is unset — no SQL Server-compatible engine is in a registry CI
//! reaches. Each test has a database of its own on the server (`Database=`
//! of its `dataSource`), so they run side by side; the service is configured
//! as a SQL Server user configures it, `driver: sqlserver` and an ADO
//! connection string.

use std::time::Duration;

use serde_json::{Value, json};

use crate::backfills::numbered_rows;
use crate::support::{self, Server, Workspace, applied, pairs};

/// Whether the TDS server is there (and a line saying the test is skipped
/// when it is not).
fn available(test: &str) -> bool {
    let set = std::env::var("STRATA_TEST_SQLSERVER_URL").is_ok();
    if !set {
        eprintln!("{test}: skipped, STRATA_TEST_SQLSERVER_URL is not set (bash tests/sqlserver.sh start)");
    }
    set
}

/// The service on a fresh database of its own, the `basic` set's T-SQL
/// files, with `extra` configuration lines.
async fn start(extra: &str) -> Server {
    let ws = Workspace::on_sqlserver("basic");
    let yaml = ws.config(extra);
    Server::start_in(ws, &yaml, "").await
}

/// A session of "the application" holding every row of `ref.countries`
/// in an open transaction, until it commits: a file's
/// [`WAITS_ON_COUNTRIES`] waits for it. (Row locks, as Babelfish ignores
/// table hints and its readers never wait on a writer.)
async fn hold_countries(server: &Server) -> support::sqlserver::Connection {
    let mut blocker = support::sqlserver::connect(&server.ws.sqlserver_data_source()).await;
    support::sqlserver::batch(&mut blocker, "begin transaction; update ref.countries set name = name;").await;
    blocker
}

/// A file that waits for [`hold_countries`]'s session.
const WAITS_ON_COUNTRIES: &str = "update {schema}.countries set name = name;\n";

/// Waits (a minute at most) until a session waits on a lock for
/// [`WAITS_ON_COUNTRIES`], as the server's own protocol shows it (the
/// engine under Babelfish); without that protocol's URL, returns.
async fn until_waiting_on_countries() {
    let Ok(url) = std::env::var("STRATA_TEST_SQLSERVER_PG_URL") else { return };
    let waiting = "select count(*) from pg_stat_activity where wait_event_type = 'Lock' \
                   and query ilike '%update%countries set name = name%' and query not ilike '%begin transaction%'";
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await.unwrap();
    for _ in 0..600 {
        let count: i64 = sqlx::query_scalar(waiting).fetch_one(&mut conn).await.unwrap();
        if count > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no session waited on ref.countries within a minute");
}

/// `(file, schema)` of every recorded migration and script, in order.
async fn recorded(server: &Server) -> Vec<Vec<Value>> {
    server.ws.rows("svc", "select filename, db_schema from svc.svc_migrations order by id").await
}

#[tokio::test]
async fn a_version_applies_every_file_once_per_schema_and_the_next_runs_only_scripts() {
    if !available("a_version_applies_every_file_once_per_schema_and_the_next_runs_only_scripts") {
        return;
    }
    let server = start("").await;
    for tenant in ["abc", "def"] {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    assert!(result.get("errors").is_none(), "{result}\n{}", server.log());
    let created = &result["data"]["createVersion"];
    assert_eq!(
        applied(created),
        pairs(&[
            ("ref/001.sql", "ref"),
            ("config/002.sql", "config"),
            ("scripts/config/runs.sql", "config"),
            ("scripts/tenants/touch.sql", "abc"),
            ("scripts/tenants/touch.sql", "def"),
        ])
    );
    assert_eq!(server.ws.tables("ref").await, ["countries"]);
    assert_eq!(server.ws.count("ref", "countries").await, 2);
    assert_eq!(server.ws.tables("abc").await, ["users"]);
    assert_eq!(server.ws.count("abc", "users").await, 2, "the tenant script ran at createTenant and now");
    // Babelfish names an index's PostgreSQL relation with a suffix (index
    // names are unique per table in SQL Server, per schema in PostgreSQL).
    let indexes = server
        .ws
        .rows(
            "svc",
            "select count(*) from sys.indexes where object_id = object_id(N'def.users') and name like N'users_email%'",
        )
        .await;
    assert_eq!(indexes, [[json!(1)]]);
    // Recorded with the un-substituted contents, each migration once.
    let stored = server.ws.rows("svc", "select contents from svc.svc_migrations where filename = N'ref/001.sql'").await;
    assert_eq!(stored, [[json!(std::fs::read_to_string(server.ws.migrations().join("ref/001.sql")).unwrap())]]);
    assert!(server.ws.migrations_recorded_twice().await.is_empty());

    let again = server.create_version(json!({ "versionName": "v2" })).await;
    assert_eq!(
        applied(&again["data"]["createVersion"]),
        pairs(&[
            ("scripts/config/runs.sql", "config"),
            ("scripts/tenants/touch.sql", "abc"),
            ("scripts/tenants/touch.sql", "def"),
        ]),
        "{again}"
    );
    assert_eq!(server.ws.rows("svc", "select value from config.settings where name = N'runs'").await, [[json!("2")]]);
    assert_eq!(server.ws.count("svc", "svc_versions").await, 4);
    let versions = server.data("{ versions { name dbMigrations { file schema } } }", json!({})).await;
    assert_eq!(versions["versions"].as_array().unwrap().len(), 4, "{versions}");
}

#[tokio::test]
async fn go_batches_and_t_sql_bodies_run_and_a_failure_rolls_back_only_its_tenant() {
    if !available("go_batches_and_t_sql_bodies_run_and_a_failure_rolls_back_only_its_tenant") {
        return;
    }
    let server = start("").await;
    for tenant in ["abc", "def"] {
        server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
    }
    // A procedure and a trigger must each be alone in their batch.
    server.ws.write_migration(
        "tenants/004.sql",
        "create table {schema}.audit (id int identity(1, 1) primary key, email nvarchar(255) not null);\n\
         GO\n\
         create procedure {schema}.add_user @email nvarchar(255) as\n\
         begin\n\
             set nocount on;\n\
             insert into {schema}.users (email) values (@email);\n\
         end;\n\
         GO\n\
         create trigger {schema}.users_audit on {schema}.users after insert as\n\
         begin\n\
             insert into {schema}.audit (email) select email from inserted;\n\
         end;\n\
         GO\n\
         exec {schema}.add_user N'proc@example.com';\n",
    );
    // def already has a table the next file creates: it fails there only.
    server.ws.execute("def", "create table def.ledger (id int);").await;
    server.ws.write_migration(
        "tenants/005.sql",
        "insert into {schema}.users (email) values (N'before@example.com');\n\
         GO\n\
         -- line 3\n\
         create table {schema}.ledger (id int primary key);\n",
    );
    let result = server.create_version(json!({ "versionName": "bodies" })).await;
    let error = &result["errors"][0];
    assert_eq!(error["extensions"]["code"], "MIGRATION_FAILED", "{result}\n{}", server.log());
    assert_eq!(error["extensions"]["file"], "tenants/005.sql");
    assert_eq!(error["extensions"]["schema"], "def");
    assert_eq!(error["extensions"]["line"], 4, "the failing statement's line in the file: {result}");
    assert_eq!(error["extensions"]["notCommittedSchemas"], json!(["def"]), "{result}");

    // abc: both files, the procedure's insert audited by the trigger.
    assert_eq!(server.ws.tables("abc").await, ["audit", "ledger", "users"]);
    let emails = server.ws.rows("abc", "select email from abc.audit order by id").await;
    assert_eq!(emails, [[json!("proc@example.com")], [json!("before@example.com")]]);
    // def: its unit rolled back whole (xact_abort), nothing of it recorded.
    assert_eq!(server.ws.tables("def").await, ["ledger", "users"]);
    assert_eq!(server.ws.count("def", "users").await, 1, "only createTenant's script row");
    let def =
        server.ws.rows("svc", "select filename from svc.svc_migrations where db_schema = N'def' order by id").await;
    assert_eq!(def, [[json!("tenants/001.sql")], [json!("tenants/003.sql")], [json!("scripts/tenants/touch.sql")]]);

    // The schema fixed by hand, the rerun applies exactly def's rest.
    server.ws.execute("def", "drop table def.ledger;").await;
    let rerun = server.create_version(json!({ "versionName": "bodies again" })).await;
    assert!(rerun.get("errors").is_none(), "{rerun}");
    let files: Vec<(String, String)> = applied(&rerun["data"]["createVersion"])
        .into_iter()
        .filter(|(file, _)| !file.starts_with("scripts/"))
        .collect();
    assert_eq!(files, pairs(&[("tenants/004.sql", "def"), ("tenants/005.sql", "def")]));
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
}

#[tokio::test]
async fn dry_run_rolls_back_and_sync_records_without_executing() {
    if !available("dry_run_rolls_back_and_sync_records_without_executing") {
        return;
    }
    let server = start("").await;
    let dry = server.create_version(json!({ "versionName": "v1", "dryRun": true })).await;
    assert_eq!(dry["data"]["createVersion"]["version"], json!(null), "{dry}\n{}", server.log());
    assert_eq!(dry["data"]["createVersion"]["summary"]["singleMigrations"], 2);
    assert!(server.ws.tables("ref").await.is_empty(), "a dry run leaves nothing");
    assert_eq!(server.ws.count("svc", "svc_migrations").await, 0);

    let sync = server.create_version(json!({ "versionName": "import", "action": "Sync" })).await;
    assert_eq!(
        applied(&sync["data"]["createVersion"]),
        pairs(&[("ref/001.sql", "ref"), ("config/002.sql", "config"), ("scripts/config/runs.sql", "config")]),
        "{sync}"
    );
    assert!(server.ws.tables("ref").await.is_empty(), "Sync executes nothing");
    assert_eq!(recorded(&server).await.len(), 3);
}

#[tokio::test]
async fn eight_concurrent_versions_on_two_processes_apply_everything_exactly_once() {
    if !available("eight_concurrent_versions_on_two_processes_apply_everything_exactly_once") {
        return;
    }
    let server = start("").await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t" })).await;
    let twin = server.twin().await;
    let calls = (0..8).map(|i| {
        let target = if i % 2 == 0 { &server } else { &twin };
        target.create_version(json!({ "versionName": format!("v{i}") }))
    });
    for result in futures::future::join_all(calls).await {
        assert!(result.get("errors").is_none(), "{result}\n{}\n{}", server.log(), twin.log());
    }
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
    let migrations =
        server.ws.rows("svc", "select count(*) from svc.svc_migrations where migration_type in (1, 2)").await;
    assert_eq!(migrations, [[json!(4)]]);
    assert_eq!(server.ws.rows("svc", "select value from config.settings where name = N'runs'").await, [[json!("8")]]);
    assert_eq!(server.ws.count("abc", "users").await, 1 + 8, "the tenant script ran once per version");
}

#[tokio::test]
async fn kill_9_in_the_middle_of_a_version_leaves_nothing_of_it_and_the_rerun_completes() {
    if !available("kill_9_in_the_middle_of_a_version_leaves_nothing_of_it_and_the_rerun_completes") {
        return;
    }
    let mut server = start("lockTimeoutMillis: 0\n").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    server.ws.write_migration("ref/100.sql", "create table {schema}.before_crash (id int);\n");
    server.ws.write_migration("ref/101.sql", WAITS_ON_COUNTRIES);
    server.ws.write_migration("ref/102.sql", "create table {schema}.after_crash (id int);\n");
    // ref/101 waits for this session (Babelfish has no WAITFOR).
    let mut blocker = hold_countries(&server).await;
    let client = server.client.clone();
    let url = server.url("/v2/service");
    let request = tokio::spawn(async move {
        let body = json!({ "query": "mutation { createVersion(input: {versionName: \"crash\"}) { version { id } } }" });
        client.post(url).json(&body).send().await
    });
    server.wait_for_mutations_started(2).await;
    // Under the version's lock, waiting on this session.
    until_waiting_on_countries().await;
    assert!(!request.is_finished(), "the version waits on ref/101");
    // A read-write start meanwhile finds the service's tables there and
    // takes no lock (it waited for the version's, up to ten minutes).
    let token =
        support::strata(server.config_path(), &["token", "create", "--name", "meanwhile", "--role", "viewer"]).await;
    assert_eq!(support::code(&token), 0, "{}", support::stderr(&token));
    if request.is_finished() {
        let answer = request.await.unwrap().unwrap().text().await.unwrap();
        panic!("the version did not wait on ref/101: {answer}\n{}", server.log());
    }
    server.kill_hard().await;
    assert!(request.await.unwrap().is_err(), "the request died with the process");
    support::sqlserver::batch(&mut blocker, "commit;").await;
    server.restart().await;

    let versions = server.ws.rows("svc", "select name from svc.svc_versions order by id").await;
    assert_eq!(versions, [[json!("v1")]], "nothing of the interrupted version persists");
    assert_eq!(server.ws.tables("ref").await, ["countries"]);

    server.ws.write_migration("ref/101.sql", "select 1;\n");
    let rerun = server.create_version(json!({ "versionName": "after restart" })).await;
    let files: Vec<String> = applied(&rerun["data"]["createVersion"]).into_iter().map(|(file, _)| file).collect();
    assert_eq!(files, ["ref/100.sql", "ref/101.sql", "ref/102.sql", "scripts/config/runs.sql"], "{rerun}");
    assert_eq!(server.ws.tables("ref").await, ["after_crash", "before_crash", "countries"]);
}

#[tokio::test]
async fn a_blocker_that_never_ends_fails_its_tenant_named_and_the_others_commit() {
    if !available("a_blocker_that_never_ends_fails_its_tenant_named_and_the_others_commit") {
        return;
    }
    let server = start("lockTimeoutMillis: 200\nlockRetries: 2\ntenantConcurrency: 2\n").await;
    for tenant in ["t1", "t2", "t3", "t4"] {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server.ws.write_migration("tenants/900.sql", "alter table {schema}.users add note nvarchar(20);\n");
    let mut blocker = support::sqlserver::connect(&server.ws.sqlserver_data_source()).await;
    let blocker_id = support::sqlserver::rows(&mut blocker, "select @@spid").await[0][0].clone();
    support::sqlserver::batch(
        &mut blocker,
        "begin transaction; select count(*) from t3.users with (tablockx, holdlock);",
    )
    .await;

    let result = server.create_version(json!({ "versionName": "alter users" })).await;
    let error = &result["errors"][0];
    let message = error["message"].as_str().unwrap();
    assert_eq!(error["extensions"]["cause"], "LOCK_TIMEOUT", "{result}\n{}", server.log());
    assert_eq!(error["extensions"]["schema"], "t3", "{result}");
    assert!(
        message.starts_with(
            "migration tenants/900.sql gave up waiting for a lock in schema t3 (another session holds it)"
        ),
        "{message}"
    );
    // Two retries at least (a wait that spans another unit's commit uses
    // none up: core's lock_wait).
    let attempts: u32 = message.split(" attempt(s))").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(attempts >= 3, "{message}");
    assert!(message.contains(&format!("blocked by: session {blocker_id} of strata (")), "{message}");
    assert_eq!(error["extensions"]["notCommittedSchemas"], json!(["t3"]), "{result}");
    let columns = "select count(*) from sys.columns where object_id = object_id(N'TENANT.users') and name = N'note'";
    for (tenant, expected) in [("t1", 1), ("t2", 1), ("t3", 0), ("t4", 1)] {
        assert_eq!(server.ws.rows("svc", &columns.replace("TENANT", tenant)).await, [[json!(expected)]], "{tenant}");
    }
    assert_eq!(server.metric("svc_http_lock_retries").await, 2.0, "counted as used");

    // Once the blocker is gone, a re-run completes t3 and nothing else.
    support::sqlserver::batch(&mut blocker, "commit;").await;
    let rerun = server.create_version(json!({ "versionName": "again" })).await;
    assert!(rerun.get("errors").is_none(), "{rerun}");
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
    let t3 = server
        .ws
        .rows(
            "svc",
            "select db_schema from svc.svc_migrations where filename = N'tenants/900.sql' \
             and version_id = (select max(id) from svc.svc_versions)",
        )
        .await;
    assert_eq!(t3, [[json!("t3")]]);
}

#[tokio::test]
async fn failing_tenants_are_quarantined_skipped_retried_and_released() {
    if !available("failing_tenants_are_quarantined_skipped_retried_and_released") {
        return;
    }
    let server = start("failureBudget: 3\ntenantConcurrency: 2\n").await;
    for i in 1..=6 {
        let name = format!("t{i:02}");
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    for tenant in ["t02", "t05"] {
        server.ws.execute(tenant, &format!("create table {tenant}.audit (id int);")).await;
    }
    server
        .ws
        .write_migration("tenants/006.sql", "create table {schema}.audit (id int primary key, at nvarchar(40));\n");
    let query = "mutation($n: String!) { createVersion(input: { versionName: $n }) { version { id } \
                 summary { tenantMigrationsTotal } skippedTenants releasedTenants \
                 quarantined { tenant versionId file line cause message failures } } }";
    let create = |name: &str| server.graphql(query, json!({ "n": name }));

    // Two tenants fail within the budget: the version goes on.
    let created = create("audit").await;
    assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    let result = &created["data"]["createVersion"];
    assert_eq!(result["summary"]["tenantMigrationsTotal"], 4, "{result}");
    let held: Vec<&str> =
        result["quarantined"].as_array().unwrap().iter().map(|t| t["tenant"].as_str().unwrap()).collect();
    assert_eq!(held, ["t02", "t05"], "{result}");
    let t02 = &result["quarantined"][0];
    assert_eq!(
        (&t02["file"], &t02["line"], &t02["cause"], &t02["failures"]),
        (&json!("tenants/006.sql"), &json!(1), &json!("STATEMENT"), &json!(1))
    );
    assert_eq!(t02["versionId"], result["version"]["id"]);
    assert!(t02["message"].as_str().unwrap().contains("audit"), "{t02}");
    let listed = server.data("{ quarantine { tenant failures } }", json!({})).await;
    assert_eq!(listed["quarantine"], json!([{ "tenant": "t02", "failures": 1 }, { "tenant": "t05", "failures": 1 }]));

    // The next version skips them.
    server.ws.write_migration("tenants/007.sql", "alter table {schema}.audit add note nvarchar(20);\n");
    let next = create("note").await;
    assert_eq!(next["data"]["createVersion"]["skippedTenants"], json!(["t02", "t05"]), "{next}");
    assert_eq!(next["data"]["createVersion"]["summary"]["tenantMigrationsTotal"], 4);

    // t02 fixed: a retry completes it in order; t05 fails again and stays.
    server.ws.execute("t02", "drop table t02.audit;").await;
    let retry = support::strata(server.config_path(), &["quarantine", "retry", "--version", "retry", "--json"]).await;
    assert_eq!(retry.status.code(), Some(11), "{}", String::from_utf8_lossy(&retry.stderr));
    let retried: Value = serde_json::from_slice(&retry.stdout).unwrap();
    assert_eq!(retried["releasedTenants"], json!(["t02"]), "{retried}");
    assert_eq!(retried["quarantined"][0]["tenant"], "t05");
    assert_eq!(retried["quarantined"][0]["failures"], 2, "{retried}");
    let t02_files = server
        .ws
        .rows(
            "svc",
            "select filename from svc.svc_migrations where db_schema = N't02' and migration_type = 2 order by id",
        )
        .await;
    assert_eq!(t02_files[t02_files.len() - 2..], [[json!("tenants/006.sql")], [json!("tenants/007.sql")]]);

    // Released, t05 is taken by the next version like any other tenant.
    server.ws.execute("t05", "drop table t05.audit;").await;
    let released = server.data(r#"mutation { releaseQuarantined(tenantNames: ["t05", "t01"]) }"#, json!({})).await;
    assert_eq!(released["releaseQuarantined"], json!(["t05"]));
    let after = create("after release").await;
    assert_eq!(after["data"]["createVersion"]["summary"]["tenantMigrationsTotal"], 2, "{after}");
    assert_eq!(server.data("{ quarantine { tenant } }", json!({})).await["quarantine"], json!([]));
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
}

#[tokio::test]
async fn every_mutation_is_in_the_audit_chain_and_an_edited_row_breaks_it() {
    if !available("every_mutation_is_in_the_audit_chain_and_an_edited_row_breaks_it") {
        return;
    }
    let server = start("").await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "abc" })).await;
    // Concurrent writers chain their rows one after the other.
    let calls = (0..4).map(|i| server.create_version(json!({ "versionName": format!("v{i}") })));
    for result in futures::future::join_all(calls).await {
        assert!(result.get("errors").is_none(), "{result}");
    }
    let refused = server.create_tenant(json!({ "tenantName": "abc", "versionName": "again" })).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "TENANT_EXISTS");

    let verify = support::strata(server.config_path(), &["audit", "verify"]).await;
    assert_eq!(support::code(&verify), 0, "{}", support::stderr(&verify));
    let rows = support::json_of(&support::strata(server.config_path(), &["audit", "--json"]).await);
    let actions: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        ["createTenant", "createVersion", "createVersion", "createVersion", "createVersion", "createTenant"],
        "{}",
        server.log()
    );
    assert!(rows[5]["outcome"].as_str().unwrap().contains("TENANT_EXISTS"), "{rows}");
    let ids: Vec<i64> = rows.as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    let listed = server.data("{ audit { action } }", json!({})).await;
    assert_eq!(listed["audit"].as_array().unwrap().len(), 6, "{listed}");
    // The newest rows and a head, read as such.
    let last = server.data("{ audit(last: 2) { id } }", json!({})).await;
    assert_eq!(last["audit"], json!([{ "id": 5 }, { "id": 6 }]), "{last}");
    let later = server.data("{ audit(since: \"2999-01-01\") { id } }", json!({})).await;
    assert_eq!(later["audit"], json!([]), "{later}");
    let head = support::strata(server.config_path(), &["audit", "head"]).await;
    assert!(support::stdout(&head).starts_with("6:"), "{}", support::stderr(&head));

    server.ws.execute("svc", "update svc.svc_audit set actor = N'token:mallory' where id = 3;").await;
    let verify = support::strata(server.config_path(), &["audit", "verify"]).await;
    assert_eq!(support::code(&verify), 15, "{}", support::stderr(&verify));
    assert!(
        support::stderr(&verify).contains("row 3 does not match its hash: it was edited"),
        "{}",
        support::stderr(&verify)
    );
}

#[tokio::test]
async fn a_version_and_its_audit_row_keep_their_trace_and_earlier_books_gain_the_columns() {
    use crate::traces::{CALLER_TRACE, create_version_traced, traceparent};
    if !available("a_version_and_its_audit_row_keep_their_trace_and_earlier_books_gain_the_columns") {
        return;
    }
    // Sampled and traced; where the spans go (nowhere here) does not matter.
    let server = start("telemetry:\n  endpoint: http://127.0.0.1:9\n").await;
    let answer = create_version_traced(&server, &[("traceparent", &traceparent())], "traced").await;
    assert_eq!(answer["data"]["createVersion"]["traceId"], CALLER_TRACE, "{answer}");
    let id = answer["data"]["createVersion"]["version"]["id"].clone();
    let read = server.data("query($id: Int!) { version(id: $id) { traceId } }", json!({ "id": id })).await;
    assert_eq!(read["version"]["traceId"], CALLER_TRACE, "{read}");
    let audit = server.data("{ audit { action traceId } }", json!({})).await;
    assert_eq!(audit["audit"], json!([{ "action": "createVersion", "traceId": CALLER_TRACE }]), "{audit}");
    let verify = support::strata(server.config_path(), &["audit", "verify"]).await;
    assert_eq!(support::code(&verify), 0, "{}", support::stderr(&verify));

    // Books of an earlier release (the columns dropped): read-only commands
    // read them as they are — the row sealed with its trace id no longer
    // verifies without it —, a read-write command adds the columns again.
    let config = server.config_path().to_path_buf();
    server
        .ws
        .execute(
            "svc",
            "alter table svc.svc_audit drop column trace_id; alter table svc.svc_versions drop column trace_id;",
        )
        .await;
    let status = support::strata(&config, &["status", "--json"]).await;
    assert_eq!(support::code(&status), 0, "{}", support::stderr(&status));
    let listed = support::json_of(&status);
    assert_eq!(listed["versions"][0]["name"], "traced", "{listed}");
    let verify = support::strata(&config, &["audit", "verify"]).await;
    assert_eq!(support::code(&verify), 15, "{}", support::stderr(&verify));
    assert!(support::stderr(&verify).contains("row 1 does not match its hash"), "{}", support::stderr(&verify));
    let applied = support::strata(&config, &["apply", "--version", "v2", "--json"]).await;
    assert_eq!(support::code(&applied), 0, "{}", support::stderr(&applied));
    // The command traced itself (a trace of its own: no caller's).
    let own = support::json_of(&applied)["traceId"].as_str().unwrap().to_string();
    assert!(own.len() == 32 && own != CALLER_TRACE, "{own}");
    let traces = server.ws.rows("svc", "select name, trace_id from svc.svc_versions order by id").await;
    assert_eq!(traces, [[json!("traced"), Value::Null], [json!("v2"), json!(own)]]);
}

#[tokio::test]
async fn the_linters_sql_server_rules_find_what_locks_in_real_t_sql_files_that_then_apply() {
    if !available("the_linters_sql_server_rules_find_what_locks_in_real_t_sql_files_that_then_apply") {
        return;
    }
    let server = start("").await;
    let created = server.create_tenant(json!({ "tenantName": "abc", "versionName": "abc" })).await;
    assert!(created.get("errors").is_none(), "{created}");
    // An index built online, one built offline on the live table, a column
    // type changed in place, and a procedure's body: T-SQL as its authors
    // write it, in GO batches. (Babelfish refuses NOT NULL in ALTER
    // COLUMN, which SQL Server takes: the file leaves it out.)
    server.ws.write_migration(
        "tenants/004.sql",
        "create index users_email_online on {schema}.users (email) with (online = on);\nGO\n\
         create nonclustered index users_id_email on {schema}.users (id, email);\nGO\n\
         alter table {schema}.users alter column email nvarchar(400);\nGO\n\
         create procedure {schema}.user_count as begin\n  select count(*) from {schema}.users;\nend\nGO\n",
    );
    let config = server.config_path();
    let lint = support::strata(config, &["lint", "--fail-on", "warning", "--json"]).await;
    assert_eq!(support::code(&lint), 9, "{}", support::stderr(&lint));
    let report = support::json_of(&lint);
    let found: Vec<(&str, &str, i64)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["file"].as_str().unwrap(), f["at"]["line"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        found,
        [("mssql-index-without-online", "tenants/004.sql", 3), ("changing-column-type", "tenants/004.sql", 5)],
        "{report}"
    );
    assert_eq!(report["unchecked"], json!([]), "{report}");
    // What the linter read is what the engine runs: the file applies.
    let applied = support::strata(config, &["apply", "--version", "v4"]).await;
    assert_eq!(support::code(&applied), 0, "{}", support::stderr(&applied));
    // (Babelfish adds the table's name and a hash to an index's name in
    // `sys.indexes`; SQL Server keeps it as written.)
    let indexes = server.ws.rows("svc", "select name from sys.indexes where object_id = object_id(N'abc.users')").await;
    let names: Vec<&str> = indexes.iter().filter_map(|row| row[0].as_str()).collect();
    for index in ["users_email_online", "users_id_email"] {
        assert!(
            names.iter().any(|name| *name == index || name.starts_with(&format!("{index}users"))),
            "{index}: {names:?}"
        );
    }
}

/// A tenant's schema as SQL Server's own catalog describes it, one line an
/// object, sorted: columns (type, length, precision, scale, nullability,
/// identity, default), each index's key columns (names left out: the
/// server makes up those of unnamed keys), check constraints, foreign keys,
/// and the text of procedures, triggers, views and functions.
const DESCRIBE_SCHEMA: &str = "select d from (
    select concat(N'column ', t.name, N'.', c.name, N' ', ty.name, N'(', c.max_length, N',', c.precision, N',',
        c.scale, N') null=', c.is_nullable, N' identity=', c.is_identity, N' default=', dc.definition) as d
    from sys.tables t join sys.columns c on c.object_id = t.object_id
    join sys.types ty on ty.user_type_id = c.user_type_id
    left join sys.default_constraints dc on dc.object_id = c.default_object_id
    where t.schema_id = schema_id(N'$schema')
    union all
    select concat(N'index ', t.name, N' #', i.index_id, N' unique=', i.is_unique, N' primary=', i.is_primary_key,
        N' ', i.type_desc, N' key ', ic.key_ordinal, N': ', c.name)
    from sys.tables t join sys.indexes i on i.object_id = t.object_id
    join sys.index_columns ic on ic.object_id = i.object_id and ic.index_id = i.index_id
    join sys.columns c on c.object_id = ic.object_id and c.column_id = ic.column_id
    where t.schema_id = schema_id(N'$schema') and i.type > 0
    union all
    select concat(N'check ', t.name, N' ', cc.definition) from sys.check_constraints cc
    join sys.tables t on t.object_id = cc.parent_object_id where t.schema_id = schema_id(N'$schema')
    union all
    select concat(N'foreign key ', object_name(fk.parent_object_id), N' -> ', object_name(fk.referenced_object_id))
    from sys.foreign_keys fk where fk.schema_id = schema_id(N'$schema')
    union all
    select concat(o.type_desc, N' ', o.name, N': ', m.definition) from sys.sql_modules m
    join sys.objects o on o.object_id = m.object_id where o.schema_id = schema_id(N'$schema')
) described order by d;";

/// The peer check: what Strata applies is what the engine's own client
/// applies. The same T-SQL files (tables with defaults, checks and keys
/// across them, an index, a view, a procedure and a trigger in `GO`
/// batches) run by Strata into a tenant, and batch by batch over a plain
/// TDS session into the same schema of another database, leave catalogs
/// that read the same through the `sys` views.
#[tokio::test]
async fn a_tenant_migrated_by_strata_has_the_schema_the_engines_own_client_makes_of_the_same_files() {
    if !available("a_tenant_migrated_by_strata_has_the_schema_the_engines_own_client_makes_of_the_same_files") {
        return;
    }
    let server = start("").await;
    let files = [
        (
            "tenants/004.sql",
            "create table {schema}.orders (\n  id int identity(1, 1) primary key,\n  \
             user_id int not null references {schema}.users (id),\n  \
             total decimal(12, 2) not null default 0 check (total >= 0),\n  \
             placed datetime2 not null default sysutcdatetime(),\n  note nvarchar(max) null\n);\n\
             create index orders_user on {schema}.orders (user_id, placed);\n",
        ),
        (
            "tenants/005.sql",
            "create view {schema}.order_totals as\n  select user_id, sum(total) as total from {schema}.orders \
             group by user_id;\nGO\n\
             create procedure {schema}.place @user int, @total decimal(12, 2) as\nbegin\n  set nocount on;\n  \
             insert into {schema}.orders (user_id, total) values (@user, @total);\nend;\nGO\n\
             create trigger {schema}.orders_note on {schema}.orders after insert as\nbegin\n  \
             update o set note = N'placed' from {schema}.orders o join inserted i on i.id = o.id;\nend;\n",
        ),
    ];
    for (file, text) in files {
        server.ws.write_migration(file, text);
    }
    let created = server.create_tenant(json!({ "tenantName": "abc", "versionName": "abc" })).await;
    assert!(created.get("errors").is_none(), "{created}\n{}", server.log());

    // The engine's own client: the same files, in order, batch by batch.
    let peer = format!("strata_peer_{}", server.ws.port);
    support::sqlserver::create_database(&peer).await;
    let ado = format!("{};Database={peer}", support::server_url("STRATA_TEST_SQLSERVER_URL"));
    let mut conn = support::sqlserver::connect(&ado).await;
    support::sqlserver::batch(&mut conn, "exec(N'create schema abc');").await;
    let mut sources: Vec<std::path::PathBuf> =
        std::fs::read_dir(server.ws.migrations().join("tenants")).unwrap().map(|entry| entry.unwrap().path()).collect();
    sources.sort();
    for source in sources {
        let text = std::fs::read_to_string(&source).unwrap().replace("{schema}", "abc");
        let mut batch = String::new();
        for line in text.lines().chain(std::iter::once("GO")) {
            if line.trim().eq_ignore_ascii_case("go") {
                if !batch.trim().is_empty() {
                    support::sqlserver::batch(&mut conn, &batch).await;
                }
                batch.clear();
            } else {
                batch.push_str(line);
                batch.push('\n');
            }
        }
    }
    let describe = DESCRIBE_SCHEMA.replace("$schema", "abc");
    let by_peer = support::sqlserver::rows(&mut conn, &describe).await;
    let mut own = support::sqlserver::connect(&server.ws.sqlserver_data_source()).await;
    let by_strata = support::sqlserver::rows(&mut own, &describe).await;
    assert!(by_strata.len() > 12, "{by_strata:?}");
    assert_eq!(by_strata, by_peer);
}

/// `db_schema` of every record of `file` in the books of the database of
/// `ado`, in order.
async fn recorded_on(ado: &str, file: &str) -> Vec<String> {
    let mut conn = support::sqlserver::connect(ado).await;
    let sql = format!("select db_schema from svc.svc_migrations where filename = N'{file}' order by db_schema");
    support::sqlserver::rows(&mut conn, &sql).await.iter().map(|row| row[0].as_str().unwrap().to_string()).collect()
}

/// Shards on SQL Server: the second shard a database of a second server
/// when `STRATA_TEST_SQLSERVER_URL_2` names one (`tests/sqlserver.sh` run
/// twice, tests/README.md), else of the same server (each database with
/// its own books, as two servers would be): new tenants placed on the shard with
/// the fewest, single schemas on the home shard only, a canary naming a
/// tenant of each, then the rest; each records exactly what ran in it, and
/// the home shard's directory says where each tenant is.
#[tokio::test]
async fn a_fleet_on_two_shards_places_tenants_and_each_records_exactly_what_ran_there() {
    if !available("a_fleet_on_two_shards_places_tenants_and_each_records_exactly_what_ran_there") {
        return;
    }
    let ws = Workspace::on_sqlserver("basic");
    let main = ws.sqlserver_data_source();
    let second_database = format!("strata_shard_b_{}", ws.port);
    let second_server = std::env::var("STRATA_TEST_SQLSERVER_URL_2")
        .unwrap_or_else(|_| support::server_url("STRATA_TEST_SQLSERVER_URL"));
    support::sqlserver::create_database_on(&second_server, &second_database).await;
    let second = format!("{second_server};Database={second_database}");
    let shards =
        format!("shards:\n  - name: a\n    dataSource: \"{main}\"\n  - name: b\n    dataSource: \"{second}\"\n");
    let yaml = ws.config("").replace(&format!("dataSource: \"{main}\"\n"), &shards);
    assert!(yaml.contains("name: b") && !yaml.lines().any(|line| line.starts_with("dataSource:")), "{yaml}");
    let server = Server::start_in(ws, &yaml, "").await;
    let config = server.config_path().to_path_buf();
    let singles = server.create_version(json!({ "versionName": "singles" })).await;
    assert!(singles.get("errors").is_none(), "{singles}\n{}", server.log());
    for i in 1..=6 {
        let created =
            server.create_tenant(json!({ "tenantName": format!("t{i}"), "versionName": format!("t{i}") })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    assert_eq!(recorded_on(&main, "tenants/001.sql").await, ["t1", "t3", "t5"]);
    assert_eq!(recorded_on(&second, "tenants/001.sql").await, ["t2", "t4", "t6"]);
    assert_eq!(recorded_on(&second, "config/002.sql").await, Vec::<String>::new(), "single schemas: home shard only");

    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id int primary key);\n");
    let canary = support::strata(&config, &["apply", "--version", "canary", "--tenants", "t2,t3"]).await;
    assert_eq!(support::code(&canary), 0, "{}", support::stderr(&canary));
    assert_eq!(recorded_on(&main, "tenants/006.sql").await, ["t3"]);
    assert_eq!(recorded_on(&second, "tenants/006.sql").await, ["t2"]);
    let rest = support::strata(&config, &["apply", "--version", "rest"]).await;
    assert_eq!(support::code(&rest), 0, "{}", support::stderr(&rest));
    assert_eq!(recorded_on(&main, "tenants/006.sql").await, ["t1", "t3", "t5"]);
    assert_eq!(recorded_on(&second, "tenants/006.sql").await, ["t2", "t4", "t6"]);
    for ado in [&main, &second] {
        let mut conn = support::sqlserver::connect(ado).await;
        let twice = "select count(*) from (select db_schema from svc.svc_migrations where filename not like N'scripts/%' \
                     group by db_schema, filename having count(*) > 1) d";
        assert_eq!(support::sqlserver::rows(&mut conn, twice).await, [[json!(0)]]);
    }
    let listed = support::strata(&config, &["tenants"]).await;
    assert_eq!(support::code(&listed), 0, "{}", support::stderr(&listed));
    assert_eq!(
        support::stdout(&listed),
        "6 tenant(s), 0 quarantined, on 2 shard(s): a 3; b 3.\nt1  @a\nt3  @a\nt5  @a\nt2  @b\nt4  @b\nt6  @b\n"
    );
    let mut home = support::sqlserver::connect(&main).await;
    let directory =
        support::sqlserver::rows(&mut home, "select tenant, shard from svc.svc_directory order by tenant").await;
    let expected: Vec<Vec<Value>> =
        (1..=6).map(|i| vec![json!(format!("t{i}")), json!(if i % 2 == 1 { "a" } else { "b" })]).collect();
    assert_eq!(directory, expected);
}

#[tokio::test]
async fn the_example_migrations_apply_cleanly() {
    if !available("the_example_migrations_apply_cleanly") {
        return;
    }
    let ws = Workspace::on_sqlserver("basic");
    let examples = support::data_dir().join("../../examples/sqlserver/migrations").canonicalize().unwrap();
    let yaml = ws.config("").replace(
        &format!("baseLocation: {}", ws.migrations().display()),
        &format!("baseLocation: {}", examples.display()),
    );
    let server = Server::start_in(ws, &yaml, "").await;
    let first = server.create_version(json!({ "versionName": "first" })).await;
    assert_eq!(first["data"]["createVersion"]["summary"]["migrationsGrandTotal"], 2, "{first}\n{}", server.log());
    let tenant = server.create_tenant(json!({ "tenantName": "acme", "versionName": "acme" })).await;
    assert_eq!(tenant["data"]["createTenant"]["summary"]["tenantMigrationsTotal"], 2, "{tenant}");
    let again = server.create_version(json!({ "versionName": "again" })).await;
    assert_eq!(again["data"]["createVersion"]["summary"]["scriptsGrandTotal"], 2, "{again}");
    assert_eq!(server.ws.count("ref", "countries").await, 3);
    assert_eq!(server.ws.tables("acme").await, ["users"]);
}

/// A version `name` whose file `ref/100.sql` waits on [`hold_countries`]'s
/// session, sent and seen waiting: that session, and the request's answer
/// to come.
async fn a_version_waiting_on_countries(
    server: &Server,
    name: &str,
) -> (support::sqlserver::Connection, tokio::task::JoinHandle<Value>) {
    server.ws.write_migration("ref/100.sql", WAITS_ON_COUNTRIES);
    let blocker = hold_countries(server).await;
    let (client, url) = (server.client.clone(), server.url("/v2/service"));
    let body = json!({ "query": "mutation($n: String!) { createVersion(input: {versionName: $n}) { version { id } } }",
                       "variables": { "n": name } });
    let request =
        tokio::spawn(async move { client.post(url).json(&body).send().await.unwrap().json::<Value>().await.unwrap() });
    server.wait_for_mutations_started(2).await;
    until_waiting_on_countries().await;
    (blocker, request)
}

/// A file's `strata:statement-timeout` holds on SQL Server, which has no
/// statement time-out a session sets: the driver bounds each batch and
/// has the server stop it (an attention). Nothing of the unit stays, and
/// the session serves the next version (before, the batch ran to its end
/// and the version succeeded).
#[tokio::test]
async fn a_batch_past_its_statement_timeout_is_stopped_and_nothing_of_its_unit_stays() {
    if !available("a_batch_past_its_statement_timeout_is_stopped_and_nothing_of_its_unit_stays") {
        return;
    }
    let server = start("").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    server.ws.write_migration("ref/100.sql", "create table {schema}.before_timeout (id int);\n");
    // About a minute of Babelfish's processor, unbounded.
    server.ws.write_migration(
        "ref/101.sql",
        "-- strata:statement-timeout 1s\ndeclare @busy int = 0;\nwhile @busy < 50000000 set @busy = @busy + 1;\n",
    );
    let result = server.create_version(json!({ "versionName": "slow" })).await;
    let error = &result["errors"][0];
    assert_eq!(error["extensions"]["cause"], "STATEMENT_TIMEOUT", "{result}\n{}", server.log());
    // The batch's first line (a batch stops as a whole).
    assert_eq!((&error["extensions"]["file"], &error["extensions"]["line"]), (&json!("ref/101.sql"), &json!(1)));
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("a batch ran longer than the statement time-out (1000 ms"), "{message}");
    assert_eq!(server.ws.tables("ref").await, ["countries"]);
    let recorded =
        server.ws.rows("svc", "select count(*) from svc.svc_migrations where filename like N'ref/10%'").await;
    assert_eq!(recorded, [[json!(0)]]);

    server.ws.write_migration("ref/101.sql", "select 1;\n");
    let rerun = server.create_version(json!({ "versionName": "again" })).await;
    assert!(rerun.get("errors").is_none(), "{rerun}");
    assert_eq!(server.ws.tables("ref").await, ["before_timeout", "countries"]);
}

/// A statement that runs longer than the driver's default command
/// time-out (30 s: tiberius gave up on the result and dropped the
/// connection, the version failed as a lost connection) completes and is
/// recorded — here a file waiting 35 s on another session's rows.
#[tokio::test]
async fn a_statement_running_past_half_a_minute_completes_and_is_recorded() {
    if !available("a_statement_running_past_half_a_minute_completes_and_is_recorded") {
        return;
    }
    let server = start("lockTimeoutMillis: 0\n").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    let (mut blocker, request) = a_version_waiting_on_countries(&server, "slow").await;
    tokio::time::sleep(Duration::from_secs(35)).await;
    assert!(!request.is_finished(), "the version still waits on ref/100");
    support::sqlserver::batch(&mut blocker, "commit;").await;
    let answered = request.await.unwrap();
    assert_eq!(answered["data"]["createVersion"]["version"]["id"], 2, "{answered}\n{}", server.log());
    let files = server.ws.rows("svc", "select filename from svc.svc_migrations where version_id = 2 order by id").await;
    assert_eq!(files, [[json!("ref/100.sql")], [json!("scripts/config/runs.sql")]]);
}

#[tokio::test]
async fn sigterm_lets_a_running_version_finish_then_exits_0() {
    if !available("sigterm_lets_a_running_version_finish_then_exits_0") {
        return;
    }
    let mut server = start("shutdownGraceSeconds: 600\nlockTimeoutMillis: 0\n").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    let (mut blocker, request) = a_version_waiting_on_countries(&server, "v1").await;
    assert!(!request.is_finished(), "the version waits on ref/100");
    let pid = server.pid().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    // The version goes on waiting through the signal, then finishes.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!request.is_finished(), "still waiting after SIGTERM");
    support::sqlserver::batch(&mut blocker, "commit;").await;
    let answered = request.await.unwrap();
    assert_eq!(answered["data"]["createVersion"]["version"]["id"], 2, "{answered}");
    let status = server.terminate().await;
    assert!(status.success(), "exit status {status}: {}", server.log());
    let files = server.ws.rows("svc", "select filename from svc.svc_migrations where version_id = 2 order by id").await;
    assert_eq!(files, [[json!("ref/100.sql")], [json!("scripts/config/runs.sql")]]);
}

#[tokio::test]
async fn api_tokens_are_stored_hashed_decide_roles_and_end_when_revoked() {
    if !available("api_tokens_are_stored_hashed_decide_roles_and_end_when_revoked") {
        return;
    }
    let server = &start("auth:\n  tokens: true\n").await;
    let create = |name: &'static str, role: &'static str, more: &'static [&'static str]| {
        let mut args = vec!["token", "create", "--name", name, "--role", role, "--json"];
        args.extend_from_slice(more);
        async move { support::strata(server.config_path(), &args).await }
    };
    let viewer = create("dashboard", "viewer", &[]).await;
    assert_eq!(support::code(&viewer), 0, "{}", support::stderr(&viewer));
    let viewer = support::json_of(&viewer)["token"].as_str().unwrap().to_string();
    let deployer = create("ci", "deployer", &["--owner", "alice", "--expires", "2"]).await;
    assert_eq!(support::code(&deployer), 0, "{}", support::stderr(&deployer));
    let deployer = support::json_of(&deployer)["token"].as_str().unwrap().to_string();
    let duplicate = create("ci", "viewer", &[]).await;
    assert!(support::stderr(&duplicate).contains("a token named \"ci\" exists"), "{}", support::stderr(&duplicate));

    let stored = server
        .ws
        .rows("svc", "select name, hash, owner, cast(expires - created as int) from svc.svc_tokens order by name")
        .await;
    assert_eq!(stored.len(), 2);
    assert_eq!((&stored[0][0], &stored[0][2], &stored[0][3]), (&json!("ci"), &json!("alice"), &json!(2 * 86_400)));
    assert_eq!((&stored[1][0], &stored[1][2], &stored[1][3]), (&json!("dashboard"), &Value::Null, &Value::Null));
    assert!(stored.iter().all(|row| !row[1].as_str().unwrap().contains(&viewer[7..])));

    let mutation = r#"mutation { createVersion(input: { versionName: "by ci" }) { version { id } } }"#;
    let (status, answer) = crate::access::query(server, &viewer, mutation).await;
    assert_eq!((status, &answer["errors"][0]["extensions"]["code"]), (403, &json!("FORBIDDEN")), "{answer}");
    let (status, answer) = crate::access::query(server, &deployer, mutation).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["createVersion"]["version"]["id"], 1, "{answer}");
    let (_, who) = crate::access::query(server, &deployer, "{ identity { actor roles } }").await;
    assert_eq!(who["data"]["identity"], json!({ "actor": "token:ci", "roles": ["deployer"] }));

    let revoked = support::strata(server.config_path(), &["token", "revoke", "ci"]).await;
    assert_eq!(support::code(&revoked), 0, "{}", support::stderr(&revoked));
    // Within the token cache's 2 s (as on the other engines).
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (status, _) = crate::access::query(server, &deployer, "{ tenants { name } }").await;
    assert_eq!(status, 401, "a revoked token authenticates nothing");
    assert_eq!(server.ws.count("svc", "svc_tokens").await, 1);
}

/// Waits (up to 180 s) until rollout `id` has `status`; returns it.
async fn rollout_reaching(server: &Server, id: i64, status: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    loop {
        let data = server.data("{ rollouts { id status events { action wave detail } } }", json!({})).await;
        let rollout = data["rollouts"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
        if rollout["status"] == status {
            return rollout;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "rollout {id} never reached {status}: {rollout}\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_rollout_runs_its_canary_waits_for_approval_then_the_rest_and_a_failing_canary_stops_it() {
    if !available("a_rollout_runs_its_canary_waits_for_approval_then_the_rest_and_a_failing_canary_stops_it") {
        return;
    }
    let server = &start("").await;
    server.create_version(json!({ "versionName": "single schemas" })).await;
    let names: Vec<String> = (1..=6).map(|i| format!("t{i:02}")).collect();
    for name in &names {
        server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
    }
    let with_file = |file: &'static str| async move {
        let sql = format!("select db_schema from svc.svc_migrations where filename = N'{file}' order by db_schema");
        server
            .ws
            .rows("svc", &sql)
            .await
            .into_iter()
            .map(|row| row[0].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let start_rollout = |version: &'static str, waves: &'static [&'static str]| async move {
        let started = server
            .graphql(
                "mutation($v: String!, $w: [String!]!) { startRollout(versionName: $v, waves: $w, failureBudget: \"0\") { id } }",
                json!({ "v": version, "w": waves }),
            )
            .await;
        assert!(started.get("errors").is_none(), "{started}");
        started["data"]["startRollout"]["id"].as_i64().unwrap()
    };

    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id int primary key);\n");
    let id = start_rollout("audit", &["t02:approve", "rest"]).await;
    rollout_reaching(server, id, "AWAITING_APPROVAL").await;
    assert_eq!(with_file("tenants/006.sql").await, ["t02"]);
    let approved = support::strata(server.config_path(), &["rollout", "approve", &id.to_string()]).await;
    assert_eq!(support::code(&approved), 0, "{}", support::stderr(&approved));
    let done = rollout_reaching(server, id, "COMPLETED").await;
    assert_eq!(with_file("tenants/006.sql").await, names);
    let actions: Vec<&str> = done["events"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        ["started", "wave-started", "wave-completed", "approved", "wave-started", "wave-completed", "completed"]
    );

    // A canary that fails: the rollout stops before wave 2; fixed and
    // resumed, it completes.
    server.ws.execute("t03", "create table t03.clash (id int);").await;
    server.ws.write_migration("tenants/007.sql", "create table {schema}.clash (id int primary key);\n");
    let id = start_rollout("clash", &["t03", "rest"]).await;
    let stopped = rollout_reaching(server, id, "STOPPED").await;
    assert!(stopped["events"][2]["detail"].as_str().unwrap().contains("t03"), "{stopped}");
    assert!(with_file("tenants/007.sql").await.is_empty(), "wave 2 ran after a failed canary");
    server.ws.execute("t03", "drop table t03.clash;").await;
    let resumed = support::strata(server.config_path(), &["rollout", "resume", &id.to_string()]).await;
    assert_eq!(support::code(&resumed), 0, "{}", support::stderr(&resumed));
    rollout_reaching(server, id, "COMPLETED").await;
    assert_eq!(with_file("tenants/007.sql").await, names);
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
}

#[tokio::test]
async fn revert_undoes_the_newest_migrations_with_their_down_parts_and_repair_accepts_an_edit() {
    if !available("revert_undoes_the_newest_migrations_with_their_down_parts_and_repair_accepts_an_edit") {
        return;
    }
    // golang-migrate's up/down files, T-SQL inside.
    let ws = Workspace::on_sqlserver("basic");
    for dir in ["ref", "config", "tenants", "scripts/config", "scripts/tenants"] {
        for entry in std::fs::read_dir(ws.migrations().join(dir)).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
    }
    ws.write_migration("ref/1_a.up.sql", "create schema {schema};\nGO\ncreate table {schema}.a (id int);\n");
    ws.write_migration("ref/2_b.up.sql", "create table {schema}.b (id int);\n");
    ws.write_migration("ref/2_b.down.sql", "drop table {schema}.b;\n");
    for (n, table) in [(1, "users"), (2, "orders")] {
        ws.write_migration(
            &format!("tenants/{n}_{table}.up.sql"),
            &format!("create table {{schema}}.{table} (id int);\n"),
        );
        ws.write_migration(&format!("tenants/{n}_{table}.down.sql"), &format!("drop table {{schema}}.{table};\n"));
    }
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(""));
    let run = |args: &'static [&'static str]| {
        let config = config.clone();
        async move { support::strata(&config, args).await }
    };
    let apply = run(&["apply", "--version", "v1"]).await;
    assert_eq!(support::code(&apply), 0, "{}{}", support::stdout(&apply), support::stderr(&apply));
    for tenant in [["apply", "--version", "t1", "--tenant", "t1"], ["apply", "--version", "t2", "--tenant", "t2"]] {
        let created = support::strata(&config, &tenant).await;
        assert_eq!(support::code(&created), 0, "{}", support::stderr(&created));
    }

    let wave = run(&["revert", "--version", "r1", "--steps", "1", "--tenants", "t1"]).await;
    assert_eq!(support::code(&wave), 0, "{}{}", support::stdout(&wave), support::stderr(&wave));
    assert_eq!(ws.tables("t1").await, ["users"]);
    assert_eq!(ws.tables("t2").await, ["orders", "users"]);
    let t1 = ws.rows("svc", "select filename from svc.svc_migrations where db_schema = N't1' order by id").await;
    assert_eq!(t1, [[json!("tenants/1_users.up.sql")]]);
    let all = run(&["revert", "--version", "r2", "--steps", "1"]).await;
    assert_eq!(support::code(&all), 0, "{}{}", support::stdout(&all), support::stderr(&all));
    assert_eq!(ws.tables("ref").await, ["a"]);
    assert_eq!(ws.tables("t1").await, Vec::<String>::new());
    assert_eq!(ws.tables("t2").await, ["users"]);
    let last = run(&["revert", "--version", "r3", "--steps", "1", "--tenants", "t2"]).await;
    assert_eq!(support::code(&last), 0, "{}", support::stderr(&last));
    assert_eq!(ws.tables("t2").await, Vec::<String>::new());
    let again = run(&["apply", "--version", "again"]).await;
    assert_eq!(support::code(&again), 0, "{}{}", support::stdout(&again), support::stderr(&again));
    for tenant in ["t1", "t2"] {
        assert_eq!(ws.tables(tenant).await, ["orders", "users"], "{tenant}");
    }
    assert!(ws.migrations_recorded_twice().await.is_empty());

    // An applied file edited: refused as drift, then accepted by repair.
    ws.write_migration("tenants/2_orders.up.sql", "create table {schema}.orders (id int); -- reviewed\n");
    let drift = run(&["plan"]).await;
    assert_eq!(support::code(&drift), 3, "{}{}", support::stdout(&drift), support::stderr(&drift));
    let repaired = run(&["repair", "--version", "accept the edit"]).await;
    assert_eq!(support::code(&repaired), 0, "{}", support::stderr(&repaired));
    let plan = run(&["plan"]).await;
    assert_eq!(support::code(&plan), 0, "{}{}", support::stdout(&plan), support::stderr(&plan));
    let checksums = ws
        .rows(
            "svc",
            "select count(distinct checksum) from svc.svc_migrations where filename = N'tenants/2_orders.up.sql'",
        )
        .await;
    assert_eq!(checksums, [[json!(1)]]);
    let versions = ws.rows("svc", "select name from svc.svc_versions order by id").await;
    assert_eq!(versions.last().unwrap(), &vec![json!("accept the edit")]);
}

/// Fleet drift on the TDS engine (issue 62): each tenant's catalog read
/// from `sys` views, fingerprinted as its version committed. A fleet fresh
/// from its versions has no drift and no outlier, though the server names
/// each tenant's default constraint and unnamed keys differently; a
/// column added by hand, an index dropped during an incident and a trigger
/// made by hand are each found, named and shown, and `strata drift` says
/// the same.
#[tokio::test]
async fn fleet_drift_reads_each_tenants_catalog_and_finds_what_was_changed_by_hand() {
    if !available("fleet_drift_reads_each_tenants_catalog_and_finds_what_was_changed_by_hand") {
        return;
    }
    let server = start("").await;
    // Unnamed keys, a default, a check and a foreign key, a view and a
    // procedure: what the server names per tenant must not read as drift.
    server.ws.write_migration(
        "tenants/004.sql",
        "create table {schema}.orders (id int identity(1, 1) primary key, user_id int not null references {schema}.users (id), \
         total decimal(10, 2) not null default 0 check (total >= 0), code varchar(20) unique);\nGO\n\
         create view {schema}.big_orders as select id, total from {schema}.orders where total > 100;\nGO\n\
         create procedure {schema}.order_count as begin select count(*) from {schema}.orders end;\n",
    );
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}\n{}", server.log());
    let tenants: Vec<String> = (1..=6).map(|i| format!("t{i}")).collect();
    for tenant in &tenants {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    const DRIFT: &str = "{ drift { tenants changed groups { tenants outliers } \
                         outliers { tenant reference differences { kind name change } } } }";
    let clean = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(clean["tenants"], 6, "{clean}");
    assert_eq!(clean["groups"].as_array().unwrap().len(), 1, "{clean}");
    assert_eq!(clean["outliers"], json!([]), "{clean}");
    assert_eq!(clean["changed"], json!([]), "the prints stored as each tenant's version committed: {clean}");

    server.ws.execute("t3", "alter table t3.users add note nvarchar(20) null").await;
    server.ws.execute("t4", "drop index users_email on t4.users").await;
    server
        .ws
        .execute("t5", "create trigger t5.users_audit on t5.users after insert as begin set nocount on; end")
        .await;
    let drift = server.data(DRIFT, json!({})).await["drift"].clone();
    let outliers: Vec<&str> =
        drift["outliers"].as_array().unwrap().iter().map(|o| o["tenant"].as_str().unwrap()).collect();
    assert_eq!(outliers, ["t3", "t4", "t5"], "{drift}");
    assert_eq!(drift["changed"], json!(["t3", "t4", "t5"]), "{drift}");
    let differences = |tenant: &str| -> Vec<(String, String, String)> {
        let outlier = drift["outliers"].as_array().unwrap().iter().find(|o| o["tenant"] == tenant).unwrap();
        assert_eq!(outlier["reference"], "t1", "{outlier}");
        let mut found: Vec<(String, String, String)> = outlier["differences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let field = |key: &str| d[key].as_str().unwrap().to_owned();
                (field("kind"), field("name"), field("change"))
            })
            .collect();
        found.sort();
        found
    };
    let row = |kind: &str, name: &str, change: &str| (kind.to_owned(), name.to_owned(), change.to_owned());
    assert_eq!(differences("t3"), [row("column", "users.note", "added")]);
    // The index and its key column, gone (Babelfish's `sys.indexes` names
    // it with a suffix of its own: `users_emailusers…`).
    let t4 = differences("t4");
    let kinds: Vec<&str> = t4.iter().map(|(kind, _, _)| kind.as_str()).collect();
    assert_eq!(kinds, ["index", "index column"], "{t4:?}");
    assert!(t4.iter().all(|(_, name, change)| name.starts_with("users.users_email") && change == "missing"), "{t4:?}");
    assert_eq!(differences("t5"), [row("trigger", "users.users_audit", "added")]);

    let cli = support::strata(server.config_path(), &["drift"]).await;
    let stdout = String::from_utf8_lossy(&cli.stdout);
    assert!(stdout.starts_with("6 tenant(s) in 1 group(s) by recorded migrations; 3 outlier(s)."), "{stdout}");
    assert!(stdout.contains("t3") && stdout.contains("users.note"), "{stdout}");
}

/// A file's `#temporary` table and session options end with its unit: 5
/// tenants, one connection after another (`tenantConcurrency: 1`), each
/// file creates `#scratch` and turns `IDENTITY_INSERT` on for a table of
/// its tenant — the next tenant's unit, on a connection of its own (such a
/// session is closed), creates `#scratch` again and inserts an explicit
/// identity into its own table (one table of a session may have it on).
#[tokio::test]
async fn a_files_temporary_table_and_session_options_end_with_its_unit() {
    if !available("a_files_temporary_table_and_session_options_end_with_its_unit") {
        return;
    }
    let server = start("tenantConcurrency: 1\n").await;
    let names: Vec<String> = (1..=5).map(|i| format!("t{i}")).collect();
    for name in &names {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    server.ws.write_migration(
        "tenants/004.sql",
        "create table {schema}.numbered (id int identity(1, 1) primary key, n int)\n\
         create table #scratch (n int)\ninsert into #scratch values (7)\n\
         set identity_insert {schema}.numbered on\n\
         insert into {schema}.numbered (id, n) select 70, n from #scratch\n",
    );
    let version = server.create_version(json!({ "versionName": "scratch" })).await;
    assert!(version.get("errors").is_none(), "{version}\n{}", server.log());
    for name in &names {
        let rows = server.ws.rows(name, &format!("select id, n from {name}.numbered")).await;
        assert_eq!(rows, [[json!(70), json!(7)]], "{name}");
    }
}

/// A tenant directory in dbmate's format naming its table plainly, as
/// dbmate ran it connected to each tenant: SQL Server has no session
/// schema for a tenant (a plain name is the login's default schema's), so
/// the version is refused before anything runs, naming the statement — not
/// run into `dbo` and recorded as the first tenant's. Named `{schema}.`,
/// the same file runs in each tenant.
#[tokio::test]
async fn a_tenant_file_of_another_tools_format_naming_no_schema_is_refused() {
    if !available("a_tenant_file_of_another_tools_format_naming_no_schema_is_refused") {
        return;
    }
    let server = start("").await;
    // The tenant directory holds dbmate's files only (beside the basic
    // set's Strata files it would be refused as two formats), and no
    // tenant script reads the basic set's tables.
    for directory in ["tenants", "scripts/tenants"] {
        let directory = server.ws.migrations().join(directory);
        std::fs::remove_dir_all(&directory).unwrap();
        std::fs::create_dir_all(&directory).unwrap();
    }
    for name in ["t1", "t2"] {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    server.ws.write_migration("tenants/20240101000000_users.sql", "-- migrate:up\ncreate table users (id int)\n");
    let refused = server.create_version(json!({ "versionName": "plain" })).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "STATEMENT_REFUSED", "{refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("tenants/20240101000000_users.sql:2:1: CREATE names no schema"), "{message}");
    let tables = server.ws.rows("svc", "select count(*) from sys.tables where name = 'users'").await;
    assert_eq!(tables, [[json!(0)]]);
    server
        .ws
        .write_migration("tenants/20240101000000_users.sql", "-- migrate:up\ncreate table {schema}.users (id int)\n");
    let version = server.create_version(json!({ "versionName": "named" })).await;
    assert!(version.get("errors").is_none(), "{version}\n{}", server.log());
    let tables = server.ws.rows("svc", "select count(*) from sys.tables where name = 'users'").await;
    assert_eq!(tables, [[json!(2)]]);
}

/// `(rows, rows with `column` = 1)` of `schema.table`.
async fn done_once(server: &Server, schema: &str, table: &str, column: &str) -> (i64, i64) {
    let sql =
        format!("select count(*), coalesce(sum(case when {column} = 1 then 1 else 0 end), 0) from [{schema}].{table}");
    let rows = server.ws.rows("svc", &sql).await;
    (rows[0][0].as_i64().unwrap(), rows[0][1].as_i64().unwrap())
}

#[tokio::test]
async fn backfills_change_every_row_once_by_every_key_form_and_a_kill_9_resumes_after_the_last_batch() {
    if !available("backfills_change_every_row_once_by_every_key_form_and_a_kill_9_resumes_after_the_last_batch") {
        return;
    }
    // A killed runner's claim goes stale after 6 s (twice the lease); 3 ×
    // 1,500 rows at 500 a second: the kill lands in the middle.
    let mut server = start("tenantConcurrency: 2\nlockLeaseSeconds: 3\nbackfill:\n  rowsPerSecond: 500\n").await;
    let names = ["t1", "t2", "t3"];
    for tenant in names {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    let seed = format!(
        "create table {{schema}}.items (id bigint primary key, touched int not null default 0 check (touched <= 1));\n\
         {}create table {{schema}}.pairs (region nvarchar(8) not null, id int not null, touched int not null default 0, \
         primary key (region, id));\n{}{}{}\
         create table {{schema}}.tokens (id uniqueidentifier primary key default newid(), touched int not null default 0);\n{}\
         create table {{schema}}.flags (id int primary key, flag int not null default 0);\n{}",
        numbered_rows("{schema}.items", "id", "x", 1500),
        numbered_rows("{schema}.pairs", "region, id", "N'eu', x", 70),
        numbered_rows("{schema}.pairs", "region, id", "N'us', x", 70),
        numbered_rows("{schema}.pairs", "region, id", "N'ap', x", 70),
        numbered_rows("{schema}.tokens", "touched", "0", 120),
        numbered_rows("{schema}.flags", "id", "x", 250),
    );
    server.ws.write_migration("tenants/010_seed.sql", &seed);
    server.ws.write_migration(
        "tenants/011_items.sql",
        "-- strata:backfill table={schema}.items key=id batch=50\n\
         update {schema}.items set touched = touched + 1 where {range};\nGO\n",
    );
    server.ws.write_migration(
        "tenants/012_pairs.sql",
        "-- strata:backfill table={schema}.pairs key=region,id batch=9\n\
         update {schema}.pairs set touched = touched + 1 where {range}\n",
    );
    server.ws.write_migration(
        "tenants/013_tokens.sql",
        "-- strata:backfill table={schema}.tokens key=id batch=11\n\
         update {schema}.tokens set touched = touched + 1 where {range};\n",
    );
    server.ws.write_migration(
        "tenants/014_flags.sql",
        "-- strata:backfill batch=40\nupdate top ({batch}) {schema}.flags set flag = 1 where flag = 0;\n",
    );

    // The seed commits and the items' backfill starts; the files after it wait.
    let first = crate::backfills::version_waiting(&server, "seed").await;
    let expected: Vec<Value> = names.iter().map(|t| json!({ "tenant": t, "file": "tenants/011_items.sql" })).collect();
    assert_eq!(first["waitingOnBackfills"], json!(expected), "{}", server.log());

    // Killed in the middle: what committed is what the checkpoint says.
    let mut done = 0;
    for _ in 0..200 {
        let rows = server.ws.rows("svc", "select coalesce(sum(rows_done), 0) from svc.svc_backfills").await;
        done = rows[0][0].as_i64().unwrap();
        if done >= 300 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(done >= 300, "the backfill made no progress: {}", server.log());
    server.kill_hard().await;
    server.restart().await;
    server.data("mutation { pauseBackfills { tenant } }", json!({})).await;
    let books =
        server.ws.rows("svc", "select db_schema, rows_done, state from svc.svc_backfills order by db_schema").await;
    let mut cut_short = 0;
    for (tenant, row) in names.iter().zip(&books) {
        let (rows, once) = done_once(&server, tenant, "items", "touched").await;
        assert_eq!(rows, 1500, "{tenant}");
        assert_eq!(json!(once), row[1], "{tenant}: the checkpoint counts what committed, {books:?}");
        cut_short += usize::from(0 < once && once < 1500);
    }
    assert!(cut_short > 0, "the kill landed in no tenant's backfill: {books:?}");
    server.data("mutation { resumeBackfills { tenant } }", json!({})).await;

    // Versions until none is due, each one's backfills run by the runner.
    for round in 0..6 {
        let result = crate::backfills::version_waiting(&server, &format!("round {round}")).await;
        crate::backfills::settled(&server).await;
        if result["version"].is_null() && result["waitingOnBackfills"] == json!([]) {
            break;
        }
    }
    for tenant in names {
        for (table, column, rows) in
            [("items", "touched", 1500), ("pairs", "touched", 210), ("tokens", "touched", 120), ("flags", "flag", 250)]
        {
            assert_eq!(done_once(&server, tenant, table, column).await, (rows, rows), "{tenant}.{table}");
        }
    }
    let books = server
        .ws
        .rows("svc", "select db_schema, [file], state, rows_done from svc.svc_backfills order by db_schema, [file]")
        .await;
    let mut expected = Vec::new();
    for tenant in names {
        for (file, rows) in [("011_items", 1500), ("012_pairs", 210), ("013_tokens", 120), ("014_flags", 250)] {
            expected.push(json!([tenant, format!("tenants/{file}.sql"), "done", rows]));
        }
    }
    assert_eq!(json!(books), json!(expected));
    let recorded = server
        .ws
        .rows(
            "svc",
            "select db_schema, filename, count(*) from svc.svc_migrations where filename like N'tenants/01%' \
             group by db_schema, filename order by db_schema, filename",
        )
        .await;
    let mut expected = Vec::new();
    for tenant in names {
        for file in ["010_seed", "011_items", "012_pairs", "013_tokens", "014_flags"] {
            expected.push(json!([tenant, format!("tenants/{file}.sql"), 1]));
        }
    }
    assert_eq!(json!(recorded), json!(expected), "every file recorded once per tenant");
}

/// What a tenant of the `basic` set should be: its `users` with one more
/// column (a default, a named check), one more table (a named key, a
/// foreign key, an index with an included column), a view, a procedure
/// and a trigger.
const DESIRED: &str = "\
create table {schema}.users (id int identity(1, 1) primary key, email nvarchar(255) not null,
  credit decimal(10, 2) not null default 0, constraint credit_positive check (credit >= 0));
create index users_email on {schema}.users (email);
create table {schema}.notes (id bigint not null constraint notes_pk primary key, user_id int null,
  body nvarchar(400) not null, constraint notes_user foreign key (user_id) references {schema}.users (id) on delete cascade);
create index notes_user on {schema}.notes (user_id) include (body);
GO
create view {schema}.user_emails as select id, email from {schema}.users;
GO
create procedure {schema}.credit_of @id int as select credit from {schema}.users where id = @id;
GO
create trigger {schema}.notes_kept on {schema}.notes after insert as set nocount on;
";

/// A retried backfill stays counted with the version that started it, as
/// on the other engines (`backfills::retried_backfill_stays_in_its_budget`).
#[tokio::test]
async fn a_retried_backfill_stays_counted_in_the_budget_of_the_version_that_started_it() {
    if !available("a_retried_backfill_stays_counted_in_the_budget_of_the_version_that_started_it") {
        return;
    }
    let mut server = start(crate::backfills::RETRIED_BUDGET).await;
    for tenant in ["t00", "t01", "t02", "t03"] {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    let items = format!(
        "create table {{schema}}.items (id bigint primary key, touched int not null default 0 check (touched <= 1));\n{}",
        numbered_rows("{schema}.items", "id", "x", 100)
    );
    server.ws.write_migration("tenants/010_items.sql", &items);
    let seeded = server.create_version(json!({ "versionName": "items" })).await;
    assert!(seeded.get("errors").is_none(), "{seeded}");
    let table = |schema: &str, table: &str| format!("{schema}.{table}");
    crate::backfills::retried_backfill_stays_in_its_budget(&mut server, crate::backfills::TOUCH_ITEMS, table).await;
}

#[tokio::test]
async fn a_fleet_is_planned_to_its_desired_schema_grouped_and_brought_there() {
    if !available("a_fleet_is_planned_to_its_desired_schema_grouped_and_brought_there") {
        return;
    }
    let server = start("").await;
    for tenant in ["t1", "t2", "t3"] {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    server.ws.execute("t1", "insert into t1.users (email) values (N'kept@example.com');").await;
    server.ws.execute("t2", "drop index users_email on t2.users;").await;
    server.ws.execute("t3", "alter table t3.users add nickname nvarchar(20) null;").await;
    let file = server.ws.path().join("desired.sql");
    std::fs::write(&file, DESIRED).unwrap();
    let desired = file.to_str().unwrap();

    let diff = support::strata(server.config_path(), &["diff", "--desired", desired, "--json"]).await;
    assert_eq!(diff.status.code(), Some(0), "{}", String::from_utf8_lossy(&diff.stderr));
    let report: Value = serde_json::from_slice(&diff.stdout).unwrap();
    // One tenant a group (ties ordered by plan): by tenant here.
    let mut groups = report["groups"].as_array().unwrap().clone();
    groups.sort_by_key(|g| g["tenants"][0].as_str().unwrap().to_string());
    let tenants: Vec<&Value> = groups.iter().map(|g| &g["tenants"]).collect();
    assert_eq!(tenants, [&json!(["t1"]), &json!(["t2"]), &json!(["t3"])], "{report:#}");
    let steps = |group: &Value| -> Vec<String> {
        group["steps"].as_array().unwrap().iter().map(|s| s["sql"].as_str().unwrap().to_string()).collect()
    };
    let common = steps(&groups[0]);
    // Babelfish says every key and foreign key was named by the server
    // (`is_system_named`): they are made without their names.
    for expected in [
        "CREATE TABLE {schema}.[notes] (\n    [id] bigint not null,\n    [user_id] int null,\n    [body] nvarchar(400) \
         not null,\n    PRIMARY KEY NONCLUSTERED ([id])\n)",
        "ALTER TABLE {schema}.[users] ADD [credit] decimal(10, 2) not null DEFAULT 0",
        "ALTER TABLE {schema}.[users] ADD CONSTRAINT [credit_positive] CHECK ((credit >= 0))",
        "ALTER TABLE {schema}.[notes] ADD FOREIGN KEY ([user_id]) REFERENCES [{schema}].[users] ([id]) ON DELETE \
         CASCADE ON UPDATE NO ACTION",
        "CREATE NONCLUSTERED INDEX [notes_user] ON {schema}.[notes] ([user_id]) INCLUDE ([body])",
        "EXEC (N'create procedure {schema}.credit_of @id int as select credit from {schema}.users where id = @id;')",
        "EXEC (N'create view {schema}.user_emails as select id, email from {schema}.users;')",
        "EXEC (N'create trigger {schema}.notes_kept on {schema}.notes after insert as set nocount on;')",
    ] {
        assert!(common.iter().any(|step| step == expected), "{expected}: {common:#?}");
    }
    assert_eq!(common.len(), 8, "{common:#?}");
    let mut t2 = common.clone();
    t2.insert(5, "CREATE NONCLUSTERED INDEX [users_email] ON {schema}.[users] ([email])".to_string());
    assert_eq!(steps(&groups[1]), t2);
    let mut t3 = common.clone();
    t3.push("ALTER TABLE {schema}.[users] DROP COLUMN [nickname]".to_string());
    assert_eq!(steps(&groups[2]), t3);
    assert_eq!(groups.iter().map(|g| g["destructive"].as_bool().unwrap()).collect::<Vec<_>>(), [false, false, true]);
    // The scratch schema went with its transaction.
    let scratch = server.ws.rows("svc", "select count(*) from sys.schemas where name like N'strata_desired%'").await;
    assert_eq!(scratch, [[json!(0)]]);
    assert_eq!(
        support::strata(server.config_path(), &["diff", "--desired", desired, "--check"]).await.status.code(),
        Some(10)
    );

    // Applied: each group a version of its own; then no tenant differs.
    let held = support::strata(server.config_path(), &["apply", "--version", "desired", "--desired", desired]).await;
    assert_eq!(held.status.code(), Some(2), "{}", String::from_utf8_lossy(&held.stderr));
    let applied = support::strata(
        server.config_path(),
        &["apply", "--version", "desired", "--desired", desired, "--allow-destructive"],
    )
    .await;
    assert_eq!(applied.status.code(), Some(0), "{}\n{}", String::from_utf8_lossy(&applied.stderr), server.log());
    let check = support::strata(server.config_path(), &["diff", "--desired", desired, "--json", "--check"]).await;
    let after: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(check.status.code(), Some(0), "{after:#}\n{}", String::from_utf8_lossy(&check.stderr));
    assert_eq!(after["differing"], 0, "{after:#}");
    // Rows kept, the new objects work.
    assert_eq!(
        server
            .ws
            .rows("svc", "select email, cast(credit as nvarchar(20)) from t1.users where email like N'kept%'")
            .await,
        [[json!("kept@example.com"), json!("0.00")]]
    );
    server.ws.execute("t1", "insert into t1.notes (id, user_id, body) values (1, 1, N'hello');").await;
    assert_eq!(
        server.ws.rows("svc", "select (select count(*) from t1.user_emails) - (select count(*) from t1.users)").await,
        [[json!(0)]]
    );
    let recorded = server
        .ws
        .rows("svc", "select db_schema, count(*) from svc.svc_migrations where filename like N'desired/%' group by db_schema order by db_schema")
        .await;
    assert_eq!(recorded, [[json!("t1"), json!(1)], [json!("t2"), json!(1)], [json!("t3"), json!(1)]]);
}

/// `devDataSource` on SQL Server: the desired file is applied and read in
/// another database (Atlas's dev database), never the fleet's. The fleet's
/// scratch schema is held by a session of the test's (made in a
/// transaction left open), so a reading there would wait and fail; on the
/// dev database `diff` finds the one plan both tenants need, and leaves
/// nothing there.
#[tokio::test]
async fn a_dev_data_source_reads_the_desired_file_in_another_database() {
    if !available("a_dev_data_source_reads_the_desired_file_in_another_database") {
        return;
    }
    let ws = Workspace::on_sqlserver("basic");
    let fleet_database = ws.sqlserver_data_source().rsplit_once("Database=").unwrap().1.to_string();
    let dev_database = format!("{fleet_database}_dev");
    support::sqlserver::create_database(&dev_database).await;
    let dev = format!("{};Database={dev_database}", support::server_url("STRATA_TEST_SQLSERVER_URL"));
    let yaml = ws.config(&format!("devDataSource: \"{dev}\"\n"));
    let server = Server::start_in(ws, &yaml, "").await;
    for tenant in ["t1", "t2"] {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    }
    let mut holder = support::sqlserver::connect(&server.ws.sqlserver_data_source()).await;
    support::sqlserver::batch(&mut holder, "begin transaction; exec(N'create schema strata_desired');").await;
    let file = server.ws.path().join("desired.sql");
    std::fs::write(&file, DESIRED).unwrap();
    let args = ["diff", "--desired", file.to_str().unwrap(), "--json"];
    let diff = tokio::time::timeout(Duration::from_secs(120), support::strata(server.config_path(), &args))
        .await
        .expect("the reading waited for the fleet's own scratch: it did not run on devDataSource");
    assert_eq!(diff.status.code(), Some(0), "{}", String::from_utf8_lossy(&diff.stderr));
    let report: Value = serde_json::from_slice(&diff.stdout).unwrap();
    let groups = report["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{report:#}");
    assert_eq!(groups[0]["tenants"], json!(["t1", "t2"]), "{report:#}");
    assert_eq!(groups[0]["steps"].as_array().unwrap().len(), 8, "{report:#}");
    drop(holder);
    let mut dev_session = support::sqlserver::connect(&dev).await;
    let left = "select count(*) from sys.schemas where name like N'strata_desired%'";
    assert_eq!(support::sqlserver::rows(&mut dev_session, left).await, [[json!(0)]]);
}

/// A desired file is the schema a tenant should have, never something to
/// run: a batch that would run a query, change rows or reach the
/// service's own tables is refused by its line before the server sees any
/// of it (the scratch schema is rolled back, but what a batch ran is not);
/// nothing of it lands anywhere.
#[tokio::test]
async fn a_desired_file_that_would_run_something_is_refused_before_the_server_sees_it() {
    if !available("a_desired_file_that_would_run_something_is_refused_before_the_server_sees_it") {
        return;
    }
    let server = start("").await;
    let created = server.create_tenant(json!({ "tenantName": "t1", "versionName": "t1" })).await;
    assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    let versions = server.ws.rows("svc", "select count(*) from svc.svc_migrations").await;
    for (text, line) in [
        ("create table {schema}.leak (id int)\ngo\ninsert into {schema}.leak select id from svc.svc_versions\n", 3),
        ("create table {schema}.t (id int)\ndrop table svc.svc_migrations\n", 2),
        ("create table {schema}.t (id int)\ngo\nexec('select 1')\n", 3),
    ] {
        let file = server.ws.path().join("desired.sql");
        std::fs::write(&file, text).unwrap();
        let diff =
            support::strata(server.config_path(), &["diff", "--desired", file.to_str().unwrap(), "--json"]).await;
        assert_ne!(diff.status.code(), Some(0), "{text}");
        let said = support::stderr(&diff);
        assert!(said.contains(&format!("desired.sql: line {line}: ")), "{text}: {said}");
        assert!(diff.stdout.is_empty(), "{text}");
    }
    let left = "select count(*) from sys.schemas where name like N'strata_desired%'";
    assert_eq!(server.ws.rows("svc", left).await, [[json!(0)]]);
    assert_eq!(server.ws.rows("svc", "select count(*) from svc.svc_migrations").await, versions);
    assert_eq!(server.ws.rows("svc", "select count(*) from sys.tables where name = N'leak'").await, [[json!(0)]]);
}

/// A file's `SET ROWCOUNT 1` holds for its session: the version's records
/// are written whole all the same (the insert was cut to its first row,
/// the other files ran unrecorded).
#[tokio::test]
async fn a_files_set_rowcount_does_not_cut_the_records() {
    if !available("a_files_set_rowcount_does_not_cut_the_records") {
        return;
    }
    let server = start("").await;
    let created = server.create_tenant(json!({ "tenantName": "t1", "versionName": "t1" })).await;
    assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    server.ws.write_migration("tenants/004.sql", "create table {schema}.r1 (x int)\nGO\nset rowcount 1\n");
    server.ws.write_migration("tenants/005.sql", "create table {schema}.r2 (x int)\n");
    server.ws.write_migration("tenants/006.sql", "create table {schema}.r3 (x int)\n");
    let result = server.create_version(json!({ "versionName": "rowcount" })).await;
    assert!(result.get("errors").is_none(), "{result}\n{}", server.log());
    let sql = "select filename from svc.svc_migrations where db_schema = N't1' and filename like N'tenants/00[456]%' \
               order by filename";
    let files: Vec<Value> = server.ws.rows("svc", sql).await.into_iter().map(|row| row[0].clone()).collect();
    assert_eq!(files, [json!("tenants/004.sql"), json!("tenants/005.sql"), json!("tenants/006.sql")]);
}

/// [`start`]ed, with the tenant `t1`.
async fn start_with_t1() -> Server {
    let server = start("").await;
    let created = server.create_tenant(json!({ "tenantName": "t1", "versionName": "t1" })).await;
    assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    server
}

/// Runs version `version` of `tenants/005.sql` (`contents`: the table
/// `c1` given a row, then what ends the unit's transaction and begins
/// another) and `tenants/006.sql` (the table `c2`) in `t1`: the file is
/// named, what ran may be committed, nothing of the unit is recorded; what
/// the file committed stays, and the next file never ran.
async fn ends_its_transaction_unseen(server: &Server, contents: &str, version: &str) {
    server.ws.write_migration("tenants/005.sql", contents);
    server.ws.write_migration("tenants/006.sql", "create table {schema}.c2 (x int)\n");
    let ended = server.create_version(json!({ "versionName": version })).await;
    let message = ended["errors"][0]["message"].as_str().unwrap_or_else(|| panic!("{ended}"));
    assert!(message.contains("migration tenants/005.sql failed in schema t1"), "{message}");
    assert!(message.contains("a file ended the unit's transaction and began another"), "{message}");
    assert!(message.contains("may be partly applied, unrecorded"), "{message}");
    let sql = "select count(*) from svc.svc_migrations where filename in (N'tenants/005.sql', N'tenants/006.sql')";
    assert_eq!(server.ws.rows("svc", sql).await, [[json!(0)]], "nothing of the unit recorded");
    assert_eq!(server.ws.rows("t1", "select x from t1.c1").await, [[json!(1)]]);
    let c2 = "select count(*) from information_schema.tables where table_schema = 't1' and table_name = 'c2'";
    assert_eq!(server.ws.rows("t1", c2).await, [[json!(0)]]);
}

/// A file whose dynamic SQL ends the unit's transaction and begins another
/// (`exec ('commit transaction; begin transaction')`: the trancount is the
/// same after it, so the server says nothing) is named before the next
/// file runs: nothing of the unit is recorded and the message says what
/// ran may be committed. A rollback to a savepoint is no transaction
/// control: such a file applies.
#[tokio::test]
async fn a_file_that_ends_its_units_transaction_unseen_is_named_and_nothing_is_recorded() {
    if !available("a_file_that_ends_its_units_transaction_unseen_is_named_and_nothing_is_recorded") {
        return;
    }
    let server = start_with_t1().await;
    server.ws.write_migration(
        "tenants/004.sql",
        "create table {schema}.s1 (x int)\nsave tran before_two\ninsert into {schema}.s1 values (1)\n\
         rollback tran before_two\ninsert into {schema}.s1 values (2)\n",
    );
    let saved = server.create_version(json!({ "versionName": "savepoint" })).await;
    assert!(saved.get("errors").is_none(), "{saved}\n{}", server.log());
    assert_eq!(server.ws.rows("t1", "select x from t1.s1").await, [[json!(2)]]);
    let contents = "create table {schema}.c1 (x int)\ninsert into {schema}.c1 values (1)\n\
                    exec ('commit transaction; begin transaction')\n";
    ends_its_transaction_unseen(&server, contents, "ends-its-transaction").await;
}

/// A procedure called by its name alone (the first statement of a batch,
/// no `EXEC`) that ends the unit's transaction and begins another is found
/// right after its file, as an `EXEC` is. A file of plain DDL is not
/// checked after it (core's `FileMode::may_end_transaction`); the unit's
/// check before its records still runs, so the version applies.
#[tokio::test]
async fn a_procedure_called_by_name_alone_that_ends_the_transaction_is_named() {
    if !available("a_procedure_called_by_name_alone_that_ends_the_transaction_is_named") {
        return;
    }
    let server = start_with_t1().await;
    server.ws.write_migration(
        "tenants/004.sql",
        "create procedure {schema}.ends_it as exec ('commit transaction; begin transaction')\nGO\n\
         alter table {schema}.users add plain int null\n",
    );
    let plain = server.create_version(json!({ "versionName": "plain" })).await;
    assert!(plain.get("errors").is_none(), "{plain}\n{}", server.log());
    let contents = "create table {schema}.c1 (x int)\ninsert into {schema}.c1 values (1)\nGO\n{schema}.ends_it\n";
    ends_its_transaction_unseen(&server, contents, "called-by-name").await;
}
