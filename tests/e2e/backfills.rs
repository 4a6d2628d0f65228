//! Backfills (`strata:backfill` files) across a fleet: every row changed
//! exactly once however often the process is killed, the checkpoint equal
//! to what committed, integer, text and composite keys and the repeated
//! form, a failing tenant quarantined and resumed, the server's
//! rows-per-second budget, progress through GraphQL and the CLI.

use serde_json::{Value, json};

use crate::fleet::{clock_seed, crash_a_version, recorded, tenants};
use crate::support::{Backend, Server, backend, json_of, strata};

/// `insert into {table} ({columns}) select …` of `n` rows numbered from 1
/// (`x`), built from digits so that it reads the same on every engine;
/// `values` are the selected expressions over `x`.
fn numbered_rows(table: &str, columns: &str, values: &str, n: u32) -> String {
    let digit = "(select 0 as d union all select 1 union all select 2 union all select 3 union all select 4 \
                 union all select 5 union all select 6 union all select 7 union all select 8 union all select 9)";
    format!(
        "insert into {table} ({columns}) select {values} from (select a.d * 1000 + b.d * 100 + c.d * 10 + e.d + 1 as x \
         from {digit} a, {digit} b, {digit} c, {digit} e) numbers where x <= {n};\n"
    )
}

/// A table of `n` rows keyed `id`, each `touched` 0.
fn items_sql(n: u32) -> String {
    let engine = if backend() == Backend::Mysql { " engine = InnoDB" } else { "" };
    format!(
        "create table {{schema}}.items (id bigint primary key, touched integer not null default 0){engine};\n{}",
        numbered_rows("{schema}.items", "id", "x", n)
    )
}

/// The backfill that adds one to `touched` of every row once, in batches.
const TOUCH_ITEMS: &str = "-- strata:backfill table={schema}.items key=id batch=25\n\
                           update {schema}.items set touched = touched + 1 where {range};\n";

/// `table` of `schema` as a query outside the service names it (SQLite
/// reads the schema's own file).
fn table_of(schema: &str, table: &str) -> String {
    match backend() {
        Backend::Sqlite => table.to_string(),
        _ => format!("{schema}.{table}"),
    }
}

/// `(rows, rows touched once, rows touched more than once)` of a tenant's
/// `items`.
async fn touched(server: &Server, tenant: &str) -> (i64, i64, i64) {
    let count = |filter: &'static str| async move {
        let rows = server.ws.rows(tenant, &format!("select count(*) from items{filter}")).await;
        rows[0][0].as_i64().unwrap()
    };
    (count("").await, count(" where touched = 1").await, count(" where touched > 1").await)
}

/// Each tenant's `(state, rows_done)` of `file` in the books.
async fn progress(server: &Server, file: &str) -> Vec<(String, String, i64)> {
    let sql = format!("select db_schema, state, rows_done from svc_backfills where file = '{file}' order by db_schema");
    let rows = server.ws.rows("svc", &sql).await;
    rows.into_iter()
        .map(|row| {
            (row[0].as_str().unwrap().to_string(), row[1].as_str().unwrap().to_string(), row[2].as_i64().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn kill_9_at_random_points_of_a_backfill_changes_every_row_exactly_once() {
    let extra = "tenantConcurrency: 4\nbackfill:\n  rowsPerSecond: 3000\n";
    let mut server = Server::start("fleet", extra).await;
    let names = tenants(&server, 6).await;
    server.ws.write_migration("tenants/001_items.sql", &items_sql(2000));
    let seeded = server.create_version(json!({ "versionName": "items" })).await;
    assert!(seeded.get("errors").is_none(), "{seeded}");
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);

    let mut seed = clock_seed();
    let mut cut_short = 0;
    for round in 0..3 {
        // 12,000 rows at 3,000 a second: the kill lands in the middle.
        let delay = crash_a_version(&mut server, &mut seed).await;
        let books = progress(&server, "tenants/002_touch.sql").await;
        for tenant in &names {
            let (rows, once, twice) = touched(&server, tenant).await;
            assert_eq!((rows, twice), (2000, 0), "{tenant}, round {round} (killed after {delay} ms)");
            // The checkpoint committed with each batch: it counts exactly what changed.
            let done = books.iter().find(|(schema, ..)| schema == tenant).map_or(0, |(_, _, done)| *done);
            assert_eq!(once, done, "{tenant}, round {round} (killed after {delay} ms): {books:?}");
            let recorded = recorded(&server).await;
            let file = recorded.get(&("tenants/002_touch.sql".to_string(), tenant.clone()));
            assert_eq!(file.is_some(), once == 2000, "{tenant} recorded only when every row is, round {round}");
            cut_short += usize::from(0 < once && once < 2000);
        }
    }
    assert!(cut_short > 0, "no kill landed in the middle of a tenant's backfill");
    let rerun = server.create_version(json!({ "versionName": "the rest" })).await;
    assert!(rerun.get("errors").is_none(), "{rerun}");
    for tenant in &names {
        assert_eq!(touched(&server, tenant).await, (2000, 2000, 0), "{tenant}");
    }
    let recorded = recorded(&server).await;
    for tenant in &names {
        assert_eq!(recorded.get(&("tenants/002_touch.sql".to_string(), tenant.clone())), Some(&1), "{tenant}");
    }
    let books = progress(&server, "tenants/002_touch.sql").await;
    let expected: Vec<(String, String, i64)> = names.iter().map(|n| (n.clone(), "done".to_string(), 2000)).collect();
    assert_eq!(books, expected);
}

/// The repeated form's statement: set `flag` on at most `{batch}` rows
/// without it (MySQL and MariaDB take a limit on an update, not in an
/// `in` subquery).
fn flag_rows() -> &'static str {
    match backend() {
        Backend::Mysql => "update {schema}.flags set flag = 1 where flag = 0 limit {batch};\n",
        _ => {
            "update {schema}.flags set flag = 1 where id in (select id from {schema}.flags where flag = 0 limit {batch});\n"
        }
    }
}

/// A key read as text: the number's digits.
fn as_text(expression: &str) -> String {
    match backend() {
        Backend::Postgres => format!("cast({expression} as text)"),
        Backend::Sqlite => format!("cast({expression} as text)"),
        Backend::Mysql => format!("cast({expression} as char)"),
    }
}

#[tokio::test]
async fn text_and_composite_keys_and_the_repeated_form_change_every_row_once_and_show_their_progress() {
    let server = Server::start("fleet", "tenantConcurrency: 2\n").await;
    let names = tenants(&server, 3).await;
    let text = if backend() == Backend::Mysql { "varchar(40)" } else { "text" };
    let seed = format!(
        "create table {{schema}}.codes (code {text} primary key, touched integer not null default 0);\n{}\
         create table {{schema}}.pairs (region {text} not null, id integer not null, touched integer not null default 0, \
         primary key (region, id));\n{}{}{}\
         create table {{schema}}.flags (id integer primary key, flag integer not null default 0);\n{}",
        numbered_rows("{schema}.codes", "code", &as_text("x"), 300),
        numbered_rows("{schema}.pairs", "region, id", "'eu', x", 70),
        numbered_rows("{schema}.pairs", "region, id", "'us', x", 70),
        numbered_rows("{schema}.pairs", "region, id", "'ap', x", 70),
        numbered_rows("{schema}.flags", "id", "x", 250),
    );
    server.ws.write_migration("tenants/001_seed.sql", &seed);
    server.ws.write_migration(
        "tenants/002_codes.sql",
        "-- strata:backfill table={schema}.codes key=code batch=7\n\
         update {schema}.codes set touched = touched + 1 where {range};\n",
    );
    server.ws.write_migration(
        "tenants/003_pairs.sql",
        "-- strata:backfill table={schema}.pairs key=region,id batch=9\n\
         update {schema}.pairs set touched = touched + 1 where {range};\n",
    );
    server.ws.write_migration("tenants/004_flags.sql", &format!("-- strata:backfill batch=40\n{}", flag_rows()));
    let result = server.create_version(json!({ "versionName": "backfills" })).await;
    assert!(result.get("errors").is_none(), "{result}\n{}", server.log());

    for tenant in &names {
        for (table, rows) in [("codes", 300), ("pairs", 210)] {
            let all = server.ws.count(tenant, table).await;
            let once = server.ws.rows(tenant, &format!("select count(*) from {table} where touched = 1")).await;
            assert_eq!((all, once[0][0].as_i64().unwrap()), (rows, rows), "{tenant}.{table}");
        }
        assert_eq!(server.ws.rows(tenant, "select count(*) from flags where flag = 0").await, [[json!(0)]]);
    }

    // GraphQL and the CLI (in-process and through the service) say the same.
    let data = server
        .data("query { backfills { tenant file state rowsDone rowsEstimated batches lastError updated } }", json!({}))
        .await;
    let list = data["backfills"].as_array().unwrap();
    assert_eq!(list.len(), 9, "{data}");
    for row in list {
        let (file, rows) = (row["file"].as_str().unwrap(), row["rowsDone"].as_i64().unwrap());
        assert_eq!(row["state"], "DONE", "{row}");
        assert_eq!(row["lastError"], Value::Null, "{row}");
        let (estimated, batches) = (row["rowsEstimated"].as_i64().unwrap(), row["batches"].as_i64().unwrap());
        // Batches of at most the directive's size (fewer rows when one is slow).
        match file {
            "tenants/002_codes.sql" => assert!((rows, estimated) == (300, 300) && batches >= 43, "{row}"),
            "tenants/003_pairs.sql" => assert!((rows, estimated) == (210, 210) && batches >= 24, "{row}"),
            // Batches of 40 or fewer, and the one that changed nothing.
            "tenants/004_flags.sql" => assert!(rows == 250 && batches >= 8, "{row}"),
            other => panic!("unexpected file {other}"),
        }
    }
    let local = strata(server.config_path(), &["backfill", "list", "--json"]).await;
    assert_eq!(json_of(&local), data["backfills"], "{}", String::from_utf8_lossy(&local.stderr));
    let remote = tokio::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--server", &server.url(""), "backfill", "--json"])
        .env_remove("SVC_YAML")
        .output()
        .await
        .unwrap();
    assert_eq!(json_of(&remote), data["backfills"], "{}", String::from_utf8_lossy(&remote.stderr));
}

#[tokio::test]
async fn a_tenant_whose_backfill_fails_is_quarantined_and_its_retry_resumes_after_its_last_batch() {
    let server = Server::start("fleet", "tenantConcurrency: 2\nfailureBudget: 1\n").await;
    let names = tenants(&server, 4).await;
    let engine = if backend() == Backend::Mysql { " engine = InnoDB" } else { "" };
    server.ws.write_migration(
        "tenants/001_items.sql",
        &format!(
            "create table {{schema}}.items (id bigint primary key, touched integer not null default 0 check (touched <= 1)){engine};\n{}",
            numbered_rows("{schema}.items", "id", "x", 400)
        ),
    );
    let seeded = server.create_version(json!({ "versionName": "items" })).await;
    assert!(seeded.get("errors").is_none(), "{seeded}");
    // Row 301 of t02 is touched already: its batch breaks the check.
    server.ws.execute("t02", &format!("update {} set touched = 1 where id = 301", table_of("t02", "items"))).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);

    let result = server.create_version(json!({ "versionName": "touch" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    let quarantine = server.data("query { quarantine { tenant file } }", json!({})).await;
    assert_eq!(quarantine["quarantine"], json!([{ "tenant": "t02", "file": "tenants/002_touch.sql" }]), "{result}");
    for tenant in names.iter().filter(|t| *t != "t02") {
        assert_eq!(touched(&server, tenant).await, (400, 400, 0), "{tenant}");
    }
    // The batches before the failing one committed, with their checkpoint
    // (batches of 25 rows or fewer: the one holding row 301 failed).
    let books = progress(&server, "tenants/002_touch.sql").await;
    let (_, state, done) = books.iter().find(|(schema, ..)| schema == "t02").unwrap().clone();
    assert_eq!(state, "failed");
    assert!((276..=300).contains(&done), "{books:?}");
    assert_eq!(touched(&server, "t02").await, (400, done + 1, 0), "row 301 was touched by hand");
    let failed = server.data("query { backfills { tenant state lastError } }", json!({})).await;
    let t02 = failed["backfills"].as_array().unwrap().iter().find(|row| row["tenant"] == "t02").unwrap().clone();
    assert_eq!(t02["state"], "FAILED", "{failed}");
    assert!(t02["lastError"].as_str().is_some_and(|e| !e.is_empty()), "{failed}");

    // Fixed by hand; the retry resumes after row 300, not from the start.
    server.ws.execute("t02", &format!("update {} set touched = 0 where id = 301", table_of("t02", "items"))).await;
    let retried = server
        .graphql("mutation { retryQuarantined(input: {versionName: \"retry\"}) { version { id } } }", json!({}))
        .await;
    assert!(retried.get("errors").is_none(), "{retried}");
    assert_eq!(touched(&server, "t02").await, (400, 400, 0));
    let books = progress(&server, "tenants/002_touch.sql").await;
    assert!(books.iter().all(|(_, state, done)| state == "done" && *done == 400), "{books:?}");
    assert_eq!(recorded(&server).await.get(&("tenants/002_touch.sql".to_string(), "t02".to_string())), Some(&1));
}

#[tokio::test]
async fn a_servers_rows_per_second_budget_is_shared_by_its_tenants() {
    let server = Server::start("fleet", "tenantConcurrency: 4\nbackfill:\n  rowsPerSecond: 400\n").await;
    let names = tenants(&server, 4).await;
    server.ws.write_migration("tenants/001_items.sql", &items_sql(300));
    let seeded = server.create_version(json!({ "versionName": "items" })).await;
    assert!(seeded.get("errors").is_none(), "{seeded}");
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);

    let started = std::time::Instant::now();
    let result = server.create_version(json!({ "versionName": "touch" })).await;
    let took = started.elapsed();
    assert!(result.get("errors").is_none(), "{result}");
    // 1,200 rows, 400 a second with one second's worth at once: at least
    // two seconds whatever the four tenants' concurrency.
    assert!(took >= std::time::Duration::from_millis(1900), "took {took:?}");
    for tenant in &names {
        assert_eq!(touched(&server, tenant).await, (300, 300, 0), "{tenant}");
    }
    assert_eq!(server.metric("svc_http_backfill_rows").await, 1200.0);
    assert!(server.metric("svc_http_backfill_throttle_waits").await > 0.0);
}

#[tokio::test]
async fn a_backfill_of_a_table_that_does_not_exist_fails_naming_its_file_and_records_nothing() {
    let server = Server::start("fleet", "").await;
    tenants(&server, 1).await;
    server.ws.write_migration(
        "tenants/001_touch.sql",
        "-- strata:backfill table={schema}.missing key=id\nupdate {schema}.missing set a = 1 where {range};\n",
    );
    let result = server.create_version(json!({ "versionName": "touch" })).await;
    let message = result["errors"][0]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("tenants/001_touch.sql") && message.contains("missing"), "{result}");
    assert!(!recorded(&server).await.keys().any(|(file, _)| file == "tenants/001_touch.sql"));

    // A directive without its placeholder is refused before anything runs.
    server.ws.write_migration(
        "tenants/001_touch.sql",
        "-- strata:backfill table={schema}.missing key=id\nupdate {schema}.missing set a = 1;\n",
    );
    let refused = server.create_version(json!({ "versionName": "touch" })).await;
    let message = refused["errors"][0]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("{range}"), "{refused}");
}
