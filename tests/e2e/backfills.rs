//! Backfills (`strata:backfill` files) across a fleet: run after their
//! version by the service's runner (the tenant waiting on it), every row
//! changed exactly once however often the process is killed, the
//! checkpoint equal to what committed, integer, text and composite keys and
//! the repeated form, a failing tenant quarantined and resumed, the
//! server's rows-per-second budget, pause, resume and cancel, a waiting
//! replica (PostgreSQL), progress through GraphQL and the CLI.

use std::time::Duration;

use serde_json::{Value, json};

use crate::fleet::{clock_seed, recorded, tenants};
use crate::rollouts::wait_for;
use crate::support::{Backend, Server, Workspace, backend, code, free_port, json_of, stderr, stdout, strata};
use crate::topologies::{admin, pg_ctl};

const BACKFILLS: &str = "query { backfills { tenant file state rowsDone rowsEstimated batches rowsPerSecond etaSeconds lastError updated } }";

/// `createVersion` asking which tenants wait on backfills: its answer.
pub(crate) async fn version_waiting(server: &Server, name: &str) -> Value {
    let query = "mutation($input: VersionInput!) { createVersion(input: $input) { version { id } \
                 waitingOnBackfills { tenant file } } }";
    let result = server.graphql(query, json!({ "input": { "versionName": name } })).await;
    assert!(result.get("errors").is_none(), "{result}\n{}", server.log());
    result["data"]["createVersion"].clone()
}

/// Waits (up to two minutes) until no backfill runs: the service's runner
/// ran them all (or they failed, or are paused). The backfills then.
pub(crate) async fn settled(server: &Server) -> Vec<Value> {
    for _ in 0..1200 {
        let list = server.data(BACKFILLS, json!({})).await["backfills"].as_array().unwrap().clone();
        if list.iter().all(|row| row["state"] != "RUNNING") {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("backfills still running after two minutes: {}", server.log());
}

/// Versions until none is due, each followed by the backfills it left its
/// tenants waiting on (a tenant's files after a backfill run with the next
/// version once it is done).
async fn apply_all(server: &Server) -> usize {
    for round in 0..10 {
        let result = version_waiting(server, &format!("round {round}")).await;
        settled(server).await;
        // A tenant that waited on a backfill had nothing run: its files are
        // due now that the backfill is done.
        if result["version"].is_null() && result["waitingOnBackfills"] == json!([]) {
            return round;
        }
    }
    panic!("versions still due after ten rounds");
}

/// `n` tenants, each with the table `items` holds (a version of its own):
/// their names.
async fn with_items(server: &Server, n: usize, items: &str) -> Vec<String> {
    let names = tenants(server, n).await;
    server.ws.write_migration("tenants/001_items.sql", items);
    let seeded = server.create_version(json!({ "versionName": "items" })).await;
    assert!(seeded.get("errors").is_none(), "{seeded}");
    names
}

/// `insert into {table} ({columns}) select …` of `n` rows numbered from 1
/// (`x`), built from digits so that it reads the same on every engine
/// (SQL Server's T-SQL too); `values` are the selected expressions over `x`.
pub(crate) fn numbered_rows(table: &str, columns: &str, values: &str, n: u32) -> String {
    let digit = "(select 0 as d union all select 1 union all select 2 union all select 3 union all select 4 \
                 union all select 5 union all select 6 union all select 7 union all select 8 union all select 9)";
    format!(
        "insert into {table} ({columns}) select {values} from (select a.d * 1000 + b.d * 100 + c.d * 10 + e.d + 1 as x \
         from {digit} a, {digit} b, {digit} c, {digit} e) numbers where x <= {n};\n"
    )
}

/// A table of `n` rows keyed `id`, each `touched` 0.
pub(crate) fn items_sql(n: u32) -> String {
    let engine = if backend() == Backend::Mysql { " engine = InnoDB" } else { "" };
    format!(
        "create table {{schema}}.items (id bigint primary key, touched integer not null default 0){engine};\n{}",
        numbered_rows("{schema}.items", "id", "x", n)
    )
}

/// `items_sql` whose rows refuse to be touched twice (a check constraint):
/// a row touched by hand beforehand fails the batch that holds it.
fn checked_items_sql(n: u32) -> String {
    let engine = if backend() == Backend::Mysql { " engine = InnoDB" } else { "" };
    format!(
        "create table {{schema}}.items (id bigint primary key, touched integer not null default 0 check (touched <= 1)){engine};\n{}",
        numbered_rows("{schema}.items", "id", "x", n)
    )
}

/// The backfill that adds one to `touched` of every row once, in batches.
pub(crate) const TOUCH_ITEMS: &str = "-- strata:backfill table={schema}.items key=id batch=25\n\
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
        let rows = server.ws.rows(tenant, &format!("select count(*) from {}{filter}", table_of(tenant, "items"))).await;
        rows[0][0].as_i64().unwrap()
    };
    (count("").await, count(" where touched = 1").await, count(" where touched > 1").await)
}

/// The books' `file` column as this engine's SQL names it (a reserved
/// word of T-SQL).
fn file_column() -> &'static str {
    if backend() == Backend::Sqlserver { "[file]" } else { "file" }
}

/// `(rows, rows touched once)` of `tenant`'s `items`, named by `table`.
async fn touched_once(server: &Server, tenant: &str, table: fn(&str, &str) -> String) -> (i64, i64) {
    let sql = format!("select count(*), count(case when touched = 1 then 1 end) from {}", table(tenant, "items"));
    let rows = server.ws.rows(tenant, &sql).await;
    (rows[0][0].as_i64().unwrap(), rows[0][1].as_i64().unwrap())
}

/// `retryQuarantined`: the quarantined `tenant` runs again, and waits on
/// its backfill.
async fn retry_waits_for(server: &Server, tenant: &str) {
    let query = "mutation { retryQuarantined(input: {versionName: \"retry\"}) { waitingOnBackfills { tenant } } }";
    let retried = server.graphql(query, json!({})).await;
    assert!(retried.get("errors").is_none(), "{retried}");
    assert_eq!(retried["data"]["retryQuarantined"]["waitingOnBackfills"], json!([{ "tenant": tenant }]));
}

/// Each tenant's `(state, rows_done)` of `file` in the books.
async fn progress(server: &Server, file: &str) -> Vec<(String, String, i64)> {
    let column = file_column();
    let sql =
        format!("select db_schema, state, rows_done from svc_backfills where {column} = '{file}' order by db_schema");
    let rows = server.ws.rows("svc", &sql).await;
    rows.into_iter()
        .map(|row| {
            (row[0].as_str().unwrap().to_string(), row[1].as_str().unwrap().to_string(), row[2].as_i64().unwrap())
        })
        .collect()
}

/// Waits until a backfill has made progress since `done` rows (up to 30
/// s: a runner takes over a killed one's claim once it is stale), then
/// kills `strata` with SIGKILL after a random 100–1,300 ms and restarts it.
async fn crash_a_backfill(server: &mut Server, seed: &mut u64, done: i64) -> u64 {
    for _ in 0..300 {
        let list = server.data(BACKFILLS, json!({})).await["backfills"].as_array().unwrap().clone();
        let now: i64 = list.iter().map(|row| row["rowsDone"].as_i64().unwrap()).sum();
        if now > done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let delay = 100 + (*seed >> 33) % 1200;
    tokio::time::sleep(Duration::from_millis(delay)).await;
    server.kill_hard().await;
    server.restart().await;
    delay
}

/// The longest a transaction touching `items` has been open, sampled every
/// 50 ms from the server's own view (`pg_stat_activity`,
/// `information_schema.innodb_trx`) until `stop`; None on SQLite (no
/// server to ask).
fn sample_longest_transaction(
    ws: &Workspace,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<Option<f64>> {
    use sqlx::Connection;
    let url = match backend() {
        Backend::Sqlite => None,
        Backend::Postgres => Some(ws.pg_url()),
        Backend::Mysql => Some(crate::support::server_url("STRATA_TEST_MYSQL_URL")),
        Backend::Sqlserver => None,
    };
    tokio::spawn(async move {
        let url = url?;
        let mut longest: f64 = 0.0;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let age: Option<f64> = match backend() {
                Backend::Postgres => {
                    let Ok(mut conn) = sqlx::PgConnection::connect(&url).await else { continue };
                    sqlx::query_scalar(
                        "select max(extract(epoch from clock_timestamp() - xact_start))::float8 from pg_stat_activity \
                         where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle' \
                         and query ilike '%items%'",
                    )
                    .fetch_one(&mut conn)
                    .await
                    .unwrap_or(None)
                }
                _ => {
                    let Ok(mut conn) = sqlx::MySqlConnection::connect(&url).await else { continue };
                    sqlx::query_scalar(
                        "select cast(max(timestampdiff(microsecond, trx_started, now(6))) / 1e6 as double) \
                         from information_schema.innodb_trx where trx_mysql_thread_id <> connection_id() \
                         and (trx_query like '%items%' or trx_rows_modified > 0)",
                    )
                    .fetch_one(&mut conn)
                    .await
                    .unwrap_or(None)
                }
            };
            longest = longest.max(age.unwrap_or(0.0));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Some(longest)
    })
}

#[tokio::test]
async fn kill_9_at_random_points_of_a_backfill_changes_every_row_exactly_once() {
    // A killed runner's claim goes stale after 6 s (twice the lease).
    let extra = "tenantConcurrency: 4\nlockLeaseSeconds: 3\nbackfill:\n  rowsPerSecond: 25000\n";
    let mut server = Server::start("fleet", extra).await;
    // 40 tenants × 5,000 rows: 200,000 rows, eight seconds at least.
    const ROWS: i64 = 5000;
    let names = with_items(&server, 40, &items_sql(ROWS as u32)).await;
    server.ws.write_migration("tenants/002_touch.sql", &TOUCH_ITEMS.replace("batch=25", "batch=500"));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = sample_longest_transaction(&server.ws, stop.clone());
    let begun = std::time::Instant::now();
    let started = version_waiting(&server, "touch").await;
    let waiting = &started["waitingOnBackfills"];
    assert_eq!(waiting.as_array().map(Vec::len), Some(40), "every tenant waits on its backfill: {started}");

    let mut seed = clock_seed();
    let (mut cut_short, mut done, mut rounds) = (0, 0, 0);
    // Three kills at least; more (up to eight) until one has landed in the
    // middle of a tenant's backfill: under a loaded machine a tenant's
    // batches are a small part of its time (its claim, its record), and
    // three kills all landed between tenants once.
    for round in 0..8 {
        if round >= 3 && (cut_short > 0 || done == 40 * ROWS) {
            break;
        }
        rounds += 1;
        // 200,000 rows at 25,000 a second: each kill lands in the middle.
        let delay = crash_a_backfill(&mut server, &mut seed, done).await;
        // The restarted service takes up the backfills no runner holds at
        // once: paused while they are counted (a batch that had not saved
        // its checkpoint rolls back; one that had has committed).
        server.data("mutation { pauseBackfills { tenant } }", json!({})).await;
        let books = progress(&server, "tenants/002_touch.sql").await;
        let recorded = recorded(&server).await;
        for tenant in &names {
            let (rows, once, twice) = touched(&server, tenant).await;
            assert_eq!((rows, twice), (ROWS, 0), "{tenant}, round {round} (killed after {delay} ms)");
            // The checkpoint committed with each batch: it counts exactly what changed.
            let rows_done = books.iter().find(|(schema, ..)| schema == tenant).map_or(0, |(_, _, done)| *done);
            assert_eq!(once, rows_done, "{tenant}, round {round} (killed after {delay} ms): {books:?}");
            let file = recorded.get(&("tenants/002_touch.sql".to_string(), tenant.clone()));
            assert_eq!(file.is_some(), once == ROWS, "{tenant} recorded only when every row is, round {round}");
            cut_short += usize::from(0 < once && once < ROWS);
        }
        done = books.iter().map(|(_, _, done)| done).sum();
        server.data("mutation { resumeBackfills { tenant } }", json!({})).await;
    }
    assert!(cut_short > 0, "none of {rounds} kills landed in the middle of a tenant's backfill");
    // The restarted service takes the dead runner's backfills over.
    let books = settled(&server).await;
    assert!(books.iter().all(|row| row["state"] == "DONE"), "{books:?}");
    for tenant in &names {
        assert_eq!(touched(&server, tenant).await, (ROWS, ROWS, 0), "{tenant}");
    }
    let recorded = recorded(&server).await;
    for tenant in &names {
        assert_eq!(recorded.get(&("tenants/002_touch.sql".to_string(), tenant.clone())), Some(&1), "{tenant}");
    }
    let books = progress(&server, "tenants/002_touch.sql").await;
    let expected: Vec<(String, String, i64)> = names.iter().map(|n| (n.clone(), "done".to_string(), ROWS)).collect();
    assert_eq!(books, expected);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let took = begun.elapsed().as_secs_f64();
    // Each batch is a short transaction of its own (sized to 100 ms): far
    // shorter than the backfill (a loaded machine stretches both; MariaDB
    // shows a transaction's start to the second).
    if let Some(longest) = sampler.await.unwrap() {
        eprintln!("the longest transaction over items lasted {longest:.3} s of the backfill's {took:.1} s");
        // MariaDB's innodb_trx also showed 4–5 s transactions around the
        // kills, not explained yet (an orphan of the killed process?): it is
        // measured, not asserted, there.
        if backend() == Backend::Postgres {
            assert!(longest < (took / 4.0).max(2.0), "a transaction over items lasted {longest:.3} s of {took:.1} s");
        }
    }
}

/// The repeated form's statement: set `flag` on at most `{batch}` rows
/// without it (MySQL and MariaDB take a limit on an update, not in an
/// `in` subquery).
fn flag_rows() -> &'static str {
    match backend() {
        Backend::Mysql => "update {schema}.flags set flag = 1 where flag = 0 limit {batch};\n",
        Backend::Sqlserver => "update top ({batch}) {schema}.flags set flag = 1 where flag = 0;\n",
        _ => {
            "update {schema}.flags set flag = 1 where id in (select id from {schema}.flags where flag = 0 limit {batch});\n"
        }
    }
}

/// A key read as text: the number's digits.
fn as_text(expression: &str) -> String {
    match backend() {
        Backend::Mysql => format!("cast({expression} as char)"),
        Backend::Sqlserver => format!("cast({expression} as nvarchar(40))"),
        _ => format!("cast({expression} as text)"),
    }
}

#[tokio::test]
async fn a_tenants_files_after_a_backfill_wait_for_it_and_every_key_form_changes_each_row_once() {
    let server = Server::start("fleet", "tenantConcurrency: 2\n").await;
    let names = tenants(&server, 3).await;
    let text = match backend() {
        Backend::Mysql | Backend::Sqlserver => "varchar(40)",
        Backend::Postgres | Backend::Sqlite => "text",
    };
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

    // The first version seeds and starts the first backfill: nothing after
    // it runs, and its summary counts what ran (the seed in each tenant and
    // the single schema's file), not the 9 files that wait (it said 13).
    let query = "mutation($input: VersionInput!) { createVersion(input: $input) { version { id } \
                 waitingOnBackfills { tenant file } summary { tenantMigrationsTotal migrationsGrandTotal } } }";
    let first = server.graphql(query, json!({ "input": { "versionName": "first" } })).await;
    assert!(first.get("errors").is_none(), "{first}");
    let first = &first["data"]["createVersion"];
    assert_eq!(first["summary"], json!({ "tenantMigrationsTotal": 3, "migrationsGrandTotal": 4 }), "{first}");
    let waiting = first["waitingOnBackfills"].clone();
    let expected: Vec<Value> = names.iter().map(|t| json!({ "tenant": t, "file": "tenants/002_codes.sql" })).collect();
    assert_eq!(waiting, json!(expected));
    let recorded_now = recorded(&server).await;
    assert!(!recorded_now.keys().any(|(file, _)| file == "tenants/003_pairs.sql"), "{recorded_now:?}");
    settled(&server).await;
    // One version per backfill, then none is due.
    assert_eq!(apply_all(&server).await, 2);

    for tenant in &names {
        for (table, rows) in [("codes", 300), ("pairs", 210)] {
            let all = server.ws.count(tenant, table).await;
            let sql = format!("select count(*) from {} where touched = 1", table_of(tenant, table));
            let once = server.ws.rows(tenant, &sql).await;
            assert_eq!((all, once[0][0].as_i64().unwrap()), (rows, rows), "{tenant}.{table}");
        }
        let sql = format!("select count(*) from {} where flag = 0", table_of(tenant, "flags"));
        assert_eq!(server.ws.rows(tenant, &sql).await, [[json!(0)]]);
    }
    let recorded = recorded(&server).await;
    for tenant in &names {
        for file in ["tenants/002_codes.sql", "tenants/003_pairs.sql", "tenants/004_flags.sql"] {
            assert_eq!(recorded.get(&(file.to_string(), tenant.clone())), Some(&1), "{tenant} {file}");
        }
    }

    // GraphQL and the CLI (in-process and through the service) say the same.
    let data = server.data(BACKFILLS, json!({})).await;
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
    let remote = tokio::process::Command::new(crate::support::strata_bin())
        .args(["--server", &server.url(""), "backfill", "--json"])
        .env_remove("SVC_YAML")
        .output()
        .await
        .unwrap();
    assert_eq!(json_of(&remote), data["backfills"], "{}", String::from_utf8_lossy(&remote.stderr));
    // No statement out of place on the way: a tenant left waiting on its
    // backfill, or batches committed back to back, never send a `commit` or
    // `rollback` with no transaction open (PostgreSQL warns of each).
    assert!(!server.log().contains("no transaction in progress"), "{}", server.log());
}

#[tokio::test]
async fn a_tenant_whose_backfill_fails_is_quarantined_and_its_retry_resumes_after_its_last_batch() {
    // The others go on: one failure is within the budget.
    let server = Server::start("fleet", "tenantConcurrency: 2\nfailureBudget: 1\n").await;
    let names = with_items(&server, 4, &checked_items_sql(400)).await;
    // Row 301 of t02 is touched already: its batch breaks the check.
    server.ws.execute("t02", &format!("update {} set touched = 1 where id = 301", table_of("t02", "items"))).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);

    let result = server.create_version(json!({ "versionName": "touch" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    let books = settled(&server).await;
    let quarantine = server.data("query { quarantine { tenant file requestId } }", json!({})).await;
    // Put aside by the version's request, not by the server's backfill
    // runner that ran it: a rollout's wave run again knows its own
    // tenants by that request.
    let versions = server.data("query { versions { name requestId } }", json!({})).await;
    let touch = versions["versions"].as_array().unwrap().iter().find(|v| v["name"] == "touch").unwrap();
    let expected = json!([{ "tenant": "t02", "file": "tenants/002_touch.sql", "requestId": touch["requestId"] }]);
    assert_eq!(quarantine["quarantine"], expected, "{books:?}");
    for tenant in names.iter().filter(|t| *t != "t02") {
        assert_eq!(touched(&server, tenant).await, (400, 400, 0), "{tenant}");
    }
    // The batches before the failing one committed, with their checkpoint
    // (batches of 25 rows or fewer: the one holding row 301 failed).
    let t02 = books.iter().find(|row| row["tenant"] == "t02").unwrap();
    assert_eq!(t02["state"], "FAILED", "{books:?}");
    assert!(t02["lastError"].as_str().is_some_and(|e| !e.is_empty()), "{books:?}");
    let done = t02["rowsDone"].as_i64().unwrap();
    assert!((276..=300).contains(&done), "{books:?}");
    assert_eq!(touched(&server, "t02").await, (400, done + 1, 0), "row 301 was touched by hand");

    // Fixed by hand; the retry resumes after the last batch, not from the start.
    server.ws.execute("t02", &format!("update {} set touched = 0 where id = 301", table_of("t02", "items"))).await;
    retry_waits_for(&server, "t02").await;
    let books = settled(&server).await;
    assert!(books.iter().all(|row| row["state"] == "DONE" && row["rowsDone"] == 400), "{books:?}");
    assert_eq!(touched(&server, "t02").await, (400, 400, 0));
    assert_eq!(recorded(&server).await.get(&("tenants/002_touch.sql".to_string(), "t02".to_string())), Some(&1));
    let quarantine = server.data("query { quarantine { tenant } }", json!({})).await;
    assert_eq!(quarantine["quarantine"], json!([]));
}

/// A backfill refuses its format's own no-transaction marker as it refuses
/// the directive (a dbmate `transaction:false` ran it as a backfill), and
/// nothing runs; one failing in a single schema says its batches before the
/// failure stay and running it again resumes after them — not that it
/// "ran outside a transaction", nor that its version "holds the new tenant".
#[tokio::test]
async fn a_backfill_refuses_its_formats_marker_and_a_single_schemas_failure_says_it_resumes() {
    let server = Server::start("fleet", "migrationFormats: {config: dbmate}\n").await;
    server.ws.write_migration(
        "config/001_touch.sql",
        "-- migrate:up transaction:false\n-- strata:backfill table={schema}.items key=id batch=10\n\
         update {schema}.items set touched = 1 where {range};\n-- migrate:down\n",
    );
    let refused = server.create_version(json!({ "versionName": "marked" })).await;
    let message = refused["errors"][0]["message"].as_str().unwrap_or_else(|| panic!("{refused}"));
    assert!(
        message.starts_with("config/001_touch.sql:2:1: ")
            && message.contains("a backfill commits each batch in a transaction of its own")
            && message.ends_with("; nothing was run"),
        "{message}"
    );
    assert_eq!(server.data(BACKFILLS, json!({})).await["backfills"], json!([]));
    std::fs::remove_file(server.ws.migrations().join("config/001_touch.sql")).unwrap();

    server.ws.write_migration(
        "ref/002_touch.sql",
        "-- strata:backfill table={schema}.missing key=id\nupdate {schema}.missing set a = 1 where {range};\n",
    );
    let failed = server.create_version(json!({ "versionName": "touch" })).await;
    let message = failed["errors"][0]["message"].as_str().unwrap_or_else(|| panic!("{failed}"));
    assert!(message.contains("ref/002_touch.sql") && message.contains("missing"), "{message}");
    assert!(
        message.contains(
            "its batches before the failing one committed with their checkpoint, and running it again resumes after \
             them (unrecorded until its last batch)"
        ),
        "{message}"
    );
    assert!(!message.contains("outside a transaction") && !message.contains("new tenant"), "{message}");
}

/// A version's failure budget holds for the backfills it started: one
/// backfill run at a time, the first tenant's failure is absorbed, the
/// second is one more than `failureBudget: 1` and pauses the version's
/// other backfills of the file before any of their batches — nothing of
/// them changed — with the reason in the log; resumed, they finish.
#[tokio::test]
async fn a_backfill_failure_past_the_versions_budget_pauses_its_other_backfills() {
    let server = Server::start("fleet", "failureBudget: 1\nbackfill:\n  concurrency: 1\n").await;
    let names = with_items(&server, 5, &checked_items_sql(100)).await;
    // The first row of t00 and t01 is touched already: their first batch fails.
    for tenant in ["t00", "t01"] {
        server.ws.execute(tenant, &format!("update {} set touched = 1 where id = 1", table_of(tenant, "items"))).await;
    }
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    let waiting = version_waiting(&server, "touch").await;
    assert_eq!(waiting["waitingOnBackfills"].as_array().map(Vec::len), Some(5), "{waiting}");

    let books = settled(&server).await;
    let states: Vec<(&str, &str, i64)> = books
        .iter()
        .map(|row| (row["tenant"].as_str().unwrap(), row["state"].as_str().unwrap(), row["rowsDone"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        states,
        [("t00", "FAILED", 0), ("t01", "FAILED", 0), ("t02", "PAUSED", 0), ("t03", "PAUSED", 0), ("t04", "PAUSED", 0)],
        "{}",
        server.log()
    );
    for tenant in &names[2..] {
        assert_eq!(touched(&server, tenant).await, (100, 0, 0), "{tenant}");
    }
    let log = server.log();
    let said = log.lines().find(|line| line.contains("the backfill of tenants/002_touch.sql failed in 2 of the 5"));
    assert!(
        said.is_some_and(|line| line.contains(
            "started it in, more than its failureBudget 1 absorbs: its 3 other running backfill(s) are paused"
        )),
        "{log}"
    );
    let quarantine = server.data("query { quarantine { tenant } }", json!({})).await;
    assert_eq!(quarantine["quarantine"], json!([{ "tenant": "t00" }, { "tenant": "t01" }]));

    server.data("mutation { resumeBackfills { tenant } }", json!({})).await;
    let books = settled(&server).await;
    let done = books.iter().filter(|row| row["state"] == "DONE" && row["rowsDone"] == 100).count();
    assert_eq!(done, 3, "{books:?}");
    for tenant in &names[2..] {
        assert_eq!(touched(&server, tenant).await, (100, 100, 0), "{tenant}");
    }
}

/// A retry starts a failed backfill again in a version of its own, and the
/// backfill stays counted with the version that started it: under
/// `failureBudget: 50%` over four tenants, two failures are absorbed though
/// a third tenant's was retried between them. (Counted over the three the
/// version kept, the second failure was past 50 % and paused the last
/// tenant's backfill.)
#[tokio::test]
async fn a_retried_backfill_stays_counted_in_the_budget_of_the_version_that_started_it() {
    let mut server = Server::start("fleet", RETRIED_BUDGET).await;
    with_items(&server, 4, &checked_items_sql(100)).await;
    retried_backfill_stays_in_its_budget(&mut server, TOUCH_ITEMS, table_of).await;
}

/// The configuration [`retried_backfill_stays_in_its_budget`] runs under.
pub(crate) const RETRIED_BUDGET: &str = "failureBudget: 50%\nbackfill:\n  concurrency: 1\n";

/// The retried-backfill budget check over tenants `t00`–`t03` whose
/// `items` (100 rows, [`checked_items_sql`]'s check) are there: `touch`
/// is the file that backfills them, `table` names a tenant's table.
pub(crate) async fn retried_backfill_stays_in_its_budget(
    server: &mut Server,
    touch: &str,
    table: fn(&str, &str) -> String,
) {
    let set_first_row =
        |tenant: &str, to: u8| format!("update {} set touched = {to} where id = 1", table(tenant, "items"));
    server.ws.execute("t00", &set_first_row("t00", 1)).await;
    server.ws.write_migration("tenants/020_touch.sql", touch);

    // Started with no service running; all but t00's paused before any
    // runner can take them.
    server.kill_hard().await;
    let config = server.config_path().to_path_buf();
    let applied = strata(&config, &["apply", "--version", "touch", "--no-wait"]).await;
    assert_eq!(code(&applied), 0, "{}", stderr(&applied));
    let paused = strata(&config, &["backfill", "pause", "t01", "t02", "t03", "--json"]).await;
    assert_eq!(json_of(&paused).as_array().map(Vec::len), Some(3), "{}", stdout(&paused));
    server.restart().await;
    let books = settled(server).await;
    assert_eq!(books.iter().find(|row| row["tenant"] == "t00").unwrap()["state"], "FAILED", "{books:?}");

    // t00 fixed by hand and retried: its backfill runs in the retry's version.
    server.ws.execute("t00", &set_first_row("t00", 0)).await;
    retry_waits_for(server, "t00").await;
    settled(server).await;
    assert_eq!(touched_once(server, "t00", table).await, (100, 100));

    // t01 and t02 break, and the three resume, one backfill at a time.
    for tenant in ["t01", "t02"] {
        server.ws.execute(tenant, &set_first_row(tenant, 1)).await;
    }
    let resumed = server.data("mutation { resumeBackfills { tenant } }", json!({})).await;
    assert_eq!(resumed["resumeBackfills"].as_array().map(Vec::len), Some(3), "{resumed}");
    let books = settled(server).await;
    let states: Vec<(&str, &str, i64)> = books
        .iter()
        .map(|row| (row["tenant"].as_str().unwrap(), row["state"].as_str().unwrap(), row["rowsDone"].as_i64().unwrap()))
        .collect();
    let expected = [("t00", "DONE", 100), ("t01", "FAILED", 0), ("t02", "FAILED", 0), ("t03", "DONE", 100)];
    assert_eq!(states, expected, "{}", server.log());
    assert_eq!(touched_once(server, "t03", table).await, (100, 100));
    assert!(!server.log().contains("other running backfill(s) are paused"), "{}", server.log());
    let quarantine = server.data("query { quarantine { tenant } }", json!({})).await;
    assert_eq!(quarantine["quarantine"], json!([{ "tenant": "t01" }, { "tenant": "t02" }]));
}

/// `backfillFiles` sums each file up over the fleet: the same counts and
/// rows as the whole list, and its first tenants by state then name (the
/// failed one before the done ones), however many are asked for; a count
/// out of range is refused.
#[tokio::test]
async fn backfill_files_sum_the_whole_list_up_and_show_the_tenants_to_look_at_first() {
    // One failure absorbed: the others run to their end.
    let server = Server::start("fleet", "tenantConcurrency: 4\nfailureBudget: 1\n").await;
    let names = with_items(&server, 12, &checked_items_sql(120)).await;
    // t07's row 61 breaks its batch: it fails half way, the others finish.
    server.ws.execute("t07", &format!("update {} set touched = 1 where id = 61", table_of("t07", "items"))).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    let started = version_waiting(&server, "touch").await;
    assert_eq!(started["waitingOnBackfills"].as_array().map(Vec::len), Some(names.len()), "{started}");
    let list = settled(&server).await;

    let fields = "file tenants running paused failed cancelled done rowsDone rowsEstimated notStarted rowsPerSecond \
                  etaSeconds shown { tenant file state rowsDone rowsEstimated batches rowsPerSecond etaSeconds lastError updated }";
    let files = server.data(&format!("{{ backfillFiles(shown: 5) {{ {fields} }} }}"), json!({})).await;
    let files = files["backfillFiles"].as_array().unwrap().clone();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let int = |row: &Value, field: &str| row[field].as_i64().unwrap();
    let estimated: i64 = list.iter().map(|row| int(row, "rowsEstimated")).sum();
    let done: i64 = list.iter().map(|row| int(row, "rowsDone").min(int(row, "rowsEstimated"))).sum();
    let t07 = list.iter().find(|row| row["tenant"] == "t07").unwrap();
    assert_eq!(t07["state"], "FAILED", "{list:?}");
    assert_eq!(
        [
            &file["file"],
            &file["tenants"],
            &file["failed"],
            &file["done"],
            &file["running"],
            &file["paused"],
            &file["cancelled"]
        ],
        [&json!("tenants/002_touch.sql"), &json!(12), &json!(1), &json!(11), &json!(0), &json!(0), &json!(0)],
        "{file}"
    );
    assert_eq!((int(file, "rowsDone"), int(file, "rowsEstimated")), (done, estimated), "{file}");
    assert_eq!((estimated, int(file, "notStarted"), &file["etaSeconds"]), (12 * 120, 0, &Value::Null), "{file}");
    assert!((36..=60).contains(&int(t07, "rowsDone")) && done == 11 * 120 + int(t07, "rowsDone"), "{list:?}");
    // The failed tenant first, then the done ones by name: rows as the whole list has them.
    let by_tenant = |tenant: &str| list.iter().find(|row| row["tenant"] == tenant).unwrap().clone();
    let first: Vec<Value> = ["t07", "t00", "t01", "t02", "t03"].into_iter().map(by_tenant).collect();
    assert_eq!(file["shown"].as_array().unwrap(), &first, "{file}");

    // The default shows up to 200 (here all 12); none is a count too.
    let all = server.data("{ backfillFiles { tenants shown { tenant } } }", json!({})).await;
    let shown: Vec<&str> =
        all["backfillFiles"][0]["shown"].as_array().unwrap().iter().map(|r| r["tenant"].as_str().unwrap()).collect();
    let mut expected: Vec<&str> = names.iter().map(String::as_str).filter(|t| *t != "t07").collect();
    expected.insert(0, "t07");
    assert_eq!(shown, expected);
    // `strata backfill list --summary`, in-process and through the API:
    // the same 20 (here 12), and the file's line.
    let twenty = server.data(&format!("{{ backfillFiles(shown: 20) {{ {fields} }} }}"), json!({})).await;
    let local = strata(server.config_path(), &["backfill", "list", "--summary", "--json"]).await;
    assert_eq!(json_of(&local), twenty["backfillFiles"], "{}", stderr(&local));
    let remote = tokio::process::Command::new(crate::support::strata_bin())
        .args(["--server", &server.url(""), "backfill", "list", "--summary"])
        .env_remove("SVC_YAML")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&remote.stdout);
    let head = format!("tenants/002_touch.sql: 12 tenant(s), 1 failed, 11 done; {done} of 1440 row(s) (");
    assert!(text.starts_with(&head), "{text}\n{}", String::from_utf8_lossy(&remote.stderr));
    assert_eq!(text.lines().count(), 13, "{text}");
    assert!(
        text.lines().nth(1).is_some_and(|line| line.starts_with("  t07  tenants/002_touch.sql  FAILED  ")),
        "{text}"
    );
    let none = server.data("{ backfillFiles(shown: 0) { tenants shown { tenant } } }", json!({})).await;
    assert_eq!(none["backfillFiles"], json!([{ "tenants": 12, "shown": [] }]));
    for shown in [-1, 1001] {
        let refused = server.graphql(&format!("{{ backfillFiles(shown: {shown}) {{ file }} }}"), json!({})).await;
        assert_eq!(refused["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{refused}");
    }
}

/// PostgreSQL: a runner whose batch fails on the books' side — here a
/// trigger refusing t01's second checkpoint, as a lock time-out in the
/// checkpoint would — rolls the batch back before its connection goes back
/// to the pool, so every request after it works. Before, the connection
/// went back inside the aborted transaction and its next users (a query,
/// the audit log, the rollouts' driver) failed with `current transaction
/// is aborted`.
#[tokio::test]
async fn a_runner_whose_checkpoint_fails_gives_its_connection_back_clean() {
    if backend() != Backend::Postgres {
        return;
    }
    let server = Server::start("fleet", "tenantConcurrency: 2\n").await;
    with_items(&server, 3, &items_sql(200)).await;
    server
        .ws
        .execute(
            "svc",
            "create function svc.refuse_checkpoint() returns trigger language plpgsql as $$ begin \
             if new.db_schema = 't01' and new.batches >= 2 then raise exception 'checkpoint refused'; end if; \
             return new; end $$; \
             create trigger refuse_checkpoint before update on svc.svc_backfills \
             for each row execute function svc.refuse_checkpoint();",
        )
        .await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    version_waiting(&server, "touch").await;
    // The others finish; t01's runner fails at its second checkpoint (and
    // tries again at each pass).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let done = progress(&server, "tenants/002_touch.sql").await;
        let others_done = done.iter().filter(|(tenant, state, _)| tenant != "t01" && state == "done").count() == 2;
        if others_done && server.log().contains("checkpoint refused") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{done:?}\n{}", server.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for round in 0..40 {
        let answer = server.graphql("{ versions { id } tenants { name } }", json!({})).await;
        assert!(answer.get("errors").is_none(), "round {round}: {answer}\n{}", server.log());
        let dry = server.create_version(json!({ "versionName": format!("dry {round}"), "dryRun": true })).await;
        assert!(dry.get("errors").is_none(), "round {round}: {dry}\n{}", server.log());
    }
    assert!(!server.log().contains("current transaction is aborted"), "{}", server.log());
}

/// Cancelled while it runs: its batch in flight rolls back, its tenant is
/// quarantined with the file unrecorded, nothing more runs; a retry
/// resumes after its last committed batch. Cancelling needs a deployer.
#[tokio::test]
async fn a_cancelled_backfill_quarantines_its_tenant_and_its_retry_resumes_it() {
    let mut server = Server::start("fleet", "tenantConcurrency: 2\nbackfill:\n  rowsPerSecond: 50\n").await;
    with_items(&server, 2, &items_sql(200)).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    let started = version_waiting(&server, "touch").await;
    assert_eq!(started["waitingOnBackfills"].as_array().map(Vec::len), Some(2), "{started}");
    // 400 rows at 50 a second: t00 is far from done once it has begun.
    for _ in 0..300 {
        let list = server.data(BACKFILLS, json!({})).await["backfills"].as_array().unwrap().clone();
        if list.iter().any(|row| row["tenant"] == "t00" && row["rowsDone"].as_i64().unwrap() > 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled =
        server.data("mutation { cancelBackfills(tenantNames: [\"t00\"]) { tenant file } }", json!({})).await;
    assert_eq!(cancelled["cancelBackfills"], json!([{ "tenant": "t00", "file": "tenants/002_touch.sql" }]));
    let books = settled(&server).await;
    let t00 = books.iter().find(|row| row["tenant"] == "t00").unwrap().clone();
    assert_eq!(t00["state"], "CANCELLED", "{books:?}");
    let done = t00["rowsDone"].as_i64().unwrap();
    assert!(0 < done && done < 200, "{books:?}");
    assert!(t00["etaSeconds"].as_i64().unwrap() >= 1, "{t00}");
    assert_eq!(books.iter().find(|row| row["tenant"] == "t01").unwrap()["state"], "DONE", "{books:?}");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let still = settled(&server).await;
    assert_eq!(still.iter().find(|row| row["tenant"] == "t00"), Some(&t00), "nothing more ran");
    assert_eq!(touched(&server, "t00").await, (200, done, 0), "what committed is what the books count");
    assert!(!recorded(&server).await.contains_key(&("tenants/002_touch.sql".to_string(), "t00".to_string())));
    let quarantine = server.data("query { quarantine { tenant file cause } }", json!({})).await;
    let expected = json!([{ "tenant": "t00", "file": "tenants/002_touch.sql", "cause": "BACKFILL_CANCELLED" }]);
    assert_eq!(quarantine["quarantine"], expected);
    // Nothing left to cancel; a restarted service does not take it up.
    let again = strata(server.config_path(), &["backfill", "cancel", "--json"]).await;
    assert_eq!((code(&again), json_of(&again)), (0, json!([])), "{}", stderr(&again));
    server.kill_hard().await;
    server.restart().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(settled(&server).await, still);

    retry_waits_for(&server, "t00").await;
    let books = settled(&server).await;
    assert!(books.iter().all(|row| row["state"] == "DONE" && row["rowsDone"] == 200), "{books:?}");
    for tenant in ["t00", "t01"] {
        assert_eq!(touched(&server, tenant).await, (200, 200, 0), "{tenant}");
        assert_eq!(recorded(&server).await.get(&("tenants/002_touch.sql".to_string(), tenant.to_string())), Some(&1));
    }
    let audit = server.ws.rows("svc", "select action from svc_audit where action like '%Backfills' order by id").await;
    assert_eq!(audit, [[json!("cancelBackfills")], [json!("cancelBackfills")]]);
}

#[tokio::test]
async fn a_servers_rows_per_second_budget_is_shared_by_its_tenants_and_pause_holds_them() {
    let mut server = Server::start("fleet", "tenantConcurrency: 4\nbackfill:\n  rowsPerSecond: 20\n").await;
    let names = with_items(&server, 4, &items_sql(30)).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);

    // The version starts the backfills with no service running (`apply
    // --no-wait`), and they are paused before any runner can take them.
    server.kill_hard().await;
    let config = server.config_path().to_path_buf();
    let applied = strata(&config, &["apply", "--version", "touch", "--no-wait"]).await;
    assert_eq!(code(&applied), 0, "{}", stderr(&applied));
    let paused = strata(&config, &["backfill", "pause", "--json"]).await;
    assert_eq!(json_of(&paused).as_array().map(Vec::len), Some(4), "{}", stdout(&paused));
    server.restart().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let held = settled(&server).await;
    assert!(held.iter().all(|row| row["state"] == "PAUSED" && row["rowsDone"] == 0), "{held:?}");

    let started = std::time::Instant::now();
    let resumed = server.data("mutation { resumeBackfills { tenant } }", json!({})).await;
    assert_eq!(resumed["resumeBackfills"].as_array().unwrap().len(), 4);
    // Paused again while they run: those not done yet stop where their
    // last batch committed, and stay there until resumed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let paused = server.data("mutation { pauseBackfills { tenant file } }", json!({})).await;
    let paused_count = paused["pauseBackfills"].as_array().unwrap().len();
    let frozen = settled(&server).await;
    let frozen_rows: i64 = frozen.iter().map(|row| row["rowsDone"].as_i64().unwrap()).sum();
    assert!(frozen_rows < 120 && paused_count > 0, "{frozen:?}");
    // The rate counts the time runners ran each; the time left is the rows
    // left at that rate.
    for row in &frozen {
        match (row["state"].as_str().unwrap(), row["rowsDone"].as_i64().unwrap()) {
            ("DONE", _) => assert_eq!(row["etaSeconds"], 0, "{row}"),
            (_, 0) => assert!(row["rowsPerSecond"].is_null() && row["etaSeconds"].is_null(), "{row}"),
            (_, done) => {
                let rate = row["rowsPerSecond"].as_f64().unwrap();
                let eta = row["etaSeconds"].as_f64().unwrap();
                assert!(rate > 0.0 && (eta - (30 - done) as f64 / rate).abs() <= 1.5, "{row}");
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let still = settled(&server).await;
    assert_eq!(still, frozen);
    assert_eq!(still.iter().filter(|row| row["state"] == "PAUSED").count(), paused_count, "{still:?}");
    assert_eq!(still.iter().filter(|row| row["state"] == "DONE").count(), 4 - paused_count, "{still:?}");
    let resumed = server.data("mutation { resumeBackfills { tenant } }", json!({})).await;
    assert_eq!(resumed["resumeBackfills"].as_array().unwrap().len(), paused_count);
    let books = settled(&server).await;
    let took = started.elapsed();
    assert!(books.iter().all(|row| row["state"] == "DONE"), "{books:?}");
    // 120 rows, 20 a second with one second's worth at once: at least five
    // seconds of running whatever the four tenants' concurrency (and a
    // pause taken well before the last row however slow the machine).
    assert!(took >= Duration::from_millis(4900), "took {took:?}");
    assert!(
        books.iter().all(|row| row["rowsPerSecond"].as_f64().unwrap() > 0.0 && row["etaSeconds"] == 0),
        "{books:?}"
    );
    for tenant in &names {
        assert_eq!(touched(&server, tenant).await, (30, 30, 0), "{tenant}");
    }
    assert_eq!(server.metric("svc_http_backfill_rows").await, 120.0);
    // A batch (25 rows) is more than the whole budget holds (20): the first
    // reservation waits however fast or slow the machine is.
    assert!(server.metric("svc_http_backfill_throttle_waits").await > 0.0);
    let audit = server.ws.rows("svc", "select action from svc_audit where action like '%Backfills' order by id").await;
    let actions = ["pauseBackfills", "resumeBackfills", "pauseBackfills", "resumeBackfills"];
    assert_eq!(audit, actions.map(|action| [json!(action)]));
}

/// `backfill.concurrency` is the server's, whichever processes run its
/// backfills: beside a second service on the same database (whose runner
/// looks for backfills when it starts and every 5 s), one backfill at a
/// time holds a claim — sampled as often as the books answer while four
/// run one after another, never two at once. Before, each process ran its own
/// `concurrency` of them.
#[tokio::test]
async fn a_servers_backfill_concurrency_holds_over_two_processes() {
    let server = Server::start("fleet", "backfill:\n  concurrency: 1\n  rowsPerSecond: 20\n").await;
    let names = with_items(&server, 4, &items_sql(60)).await;
    let twin = server.twin().await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    version_waiting(&server, "touch").await;
    let claims = "select holder from svc_backfills where state = 'running' and holder is not null";
    let (mut most, mut samples) = (0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let held = server.ws.rows("svc", claims).await;
        most = most.max(held.len());
        samples += 1;
        let done = progress(&server, "tenants/002_touch.sql").await;
        if done.len() == 4 && done.iter().all(|(_, state, _)| state == "done") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{done:?}\n{}\n{}", server.log(), twin.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // 240 rows at 20 a second: some 11 s (the second runner looks twice),
    // each backfill some 3 s — two at once would be seen by any sampling
    // faster than that, however loaded the machine (39 samples on a
    // loaded CI run, 500 on an idle one).
    assert!(samples >= 10, "{samples} samples");
    assert_eq!(most, 1, "{}\n{}", server.log(), twin.log());
    for tenant in &names {
        assert_eq!(touched(&server, tenant).await, (60, 60, 0), "{tenant}");
    }
}

/// A Resume sent while a Pause of every backfill goes on never leaves some
/// tenants paused for good: the two happen one after the other, so at the
/// end either the Pause came last (every backfill not done is paused) or
/// the Resume did (none is). A Resume read the backfills paused so far
/// and resumed them while the Pause went on through the rest (the console
/// lost 115 of 300 tenants' backfills so).
#[tokio::test]
async fn a_resume_sent_during_a_pause_leaves_no_backfill_paused_for_good() {
    let server = Server::start("fleet", "tenantConcurrency: 8\nbackfill:\n  rowsPerSecond: 4000\n").await;
    let names = with_items(&server, 120, &items_sql(60)).await;
    server.ws.write_migration("tenants/002_touch.sql", &TOUCH_ITEMS.replace("batch=25", "batch=10"));
    let started = version_waiting(&server, "touch").await;
    assert_eq!(started["waitingOnBackfills"].as_array().map(Vec::len), Some(names.len()), "{started}");
    // 7,200 rows at 4,000 a second: the runners commit batches while the
    // pause goes on through 120 rows, and the resume is sent meanwhile.
    // (Six batches a tenant, not twenty: each batch is a commit, and under
    // the CI's load 2,400 commits took this test from 10 s alone to 250 s.)
    let pausing = server.data("mutation { pauseBackfills { tenant } }", json!({}));
    let resuming = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        server.data("mutation { resumeBackfills { tenant } }", json!({})).await
    };
    let (paused, resumed) = tokio::join!(pausing, resuming);
    let paused = paused["pauseBackfills"].as_array().map(Vec::len).unwrap_or_default();
    let resumed = resumed["resumeBackfills"].as_array().map(Vec::len).unwrap_or_default();
    let books = settled(&server).await;
    let held = books.iter().filter(|row| row["state"] == "PAUSED").count();
    let done = books.iter().filter(|row| row["state"] == "DONE").count();
    let seen = format!("paused {paused}, resumed {resumed}; at the end {held} paused, {done} done");
    assert!(paused > 0, "{seen}");
    match resumed {
        // The resume went first (nothing paused yet): the pause holds every
        // backfill not done.
        0 => assert_eq!((held, done), (paused, names.len() - paused), "{seen}"),
        // The pause went first: the resume let all of them go.
        _ => {
            assert_eq!(resumed, paused, "{seen}");
            assert_eq!((held, done), (0, names.len()), "{seen}");
        }
    }
    if held > 0 {
        let resumed = server.data("mutation { resumeBackfills { tenant } }", json!({})).await;
        assert_eq!(resumed["resumeBackfills"].as_array().map(Vec::len), Some(held), "{resumed}");
    }
    let books = settled(&server).await;
    assert!(books.iter().all(|row| row["state"] == "DONE" && row["rowsDone"] == 60), "{books:?}");
}

#[tokio::test]
async fn a_backfill_of_a_table_that_does_not_exist_fails_and_records_nothing() {
    let server = Server::start("fleet", "").await;
    tenants(&server, 1).await;
    // A directive without its placeholder is refused before anything runs.
    server.ws.write_migration(
        "tenants/001_touch.sql",
        "-- strata:backfill table={schema}.missing key=id\nupdate {schema}.missing set a = 1;\n",
    );
    let refused = server.create_version(json!({ "versionName": "touch" })).await;
    let message = refused["errors"][0]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("{range}") && message.contains("tenants/001_touch.sql"), "{refused}");
    assert_eq!(server.data(BACKFILLS, json!({})).await["backfills"], json!([]));

    server.ws.write_migration(
        "tenants/001_touch.sql",
        "-- strata:backfill table={schema}.missing key=id\nupdate {schema}.missing set a = 1 where {range};\n",
    );
    let result = server.create_version(json!({ "versionName": "touch" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    let books = settled(&server).await;
    assert_eq!(books[0]["state"], "FAILED", "{books:?}");
    assert!(books[0]["lastError"].as_str().unwrap().contains("missing"), "{books:?}");
    let quarantine = server.data("query { quarantine { tenant file } }", json!({})).await;
    assert_eq!(quarantine["quarantine"], json!([{ "tenant": "t00", "file": "tenants/001_touch.sql" }]));
    assert!(!recorded(&server).await.keys().any(|(file, _)| file == "tenants/001_touch.sql"));
}

/// Two tenants' backfills of 150 rows each at 50 rows a second on a server
/// one of whose replicas applies changes 2 s late (`maxReplicaLagSeconds:
/// 1`): they wait for it at least once (the lag pauses counted) and all end
/// done.
async fn backfill_behind_a_replica(server: &Server) {
    with_items(server, 2, &items_sql(150)).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    let started = version_waiting(server, "touch").await;
    assert_eq!(started["waitingOnBackfills"].as_array().map(Vec::len), Some(2), "{started}");
    // 300 rows at 50 a second: the replica falls 2 s behind while they run.
    let books = settled(server).await;
    assert!(books.iter().all(|row| row["state"] == "DONE" && row["rowsDone"] == 150), "{books:?}");
    assert!(server.metric("svc_http_backfill_lag_pauses").await > 0.0, "{}", server.log());
}

/// A PostgreSQL primary of its own and a streaming standby that replays
/// `delay` behind it (`recovery_min_apply_delay`), stopped when dropped.
struct DelayedStandby {
    dir: tempfile::TempDir,
    primary_url: String,
}

impl DelayedStandby {
    async fn start(delay: &str) -> DelayedStandby {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().display().to_string();
        assert!(std::process::Command::new("chown").args(["-R", "postgres", &path]).status().unwrap().success());
        let bin = std::env::var("STRATA_TEST_PG_BIN").expect("STRATA_TEST_PG_BIN (tests/servers.sh)");
        let (primary, standby) = (free_port(), free_port());
        let setup = format!(
            "{bin}/initdb -D {path}/primary -A trust -U postgres >/dev/null && \
             {bin}/pg_ctl -D {path}/primary -o '-c listen_addresses=127.0.0.1 -p {primary} -k {path} -c fsync=off' \
               -l {path}/primary.log -w start >/dev/null && \
             {bin}/pg_basebackup -h 127.0.0.1 -p {primary} -U postgres -D {path}/standby -R -X stream && \
             echo \"recovery_min_apply_delay = '{delay}'\" >> {path}/standby/postgresql.auto.conf"
        );
        let status = tokio::process::Command::new("su").args(["postgres", "-c", &setup]).status().await.unwrap();
        assert!(status.success(), "{setup}");
        pg_ctl(&format!(
            "-D {path}/standby -o '-c listen_addresses=127.0.0.1 -p {standby} -k {path}' -l {path}/standby.log -w start"
        ))
        .await;
        DelayedStandby { dir, primary_url: format!("postgres://postgres@127.0.0.1:{primary}/postgres") }
    }
}

impl Drop for DelayedStandby {
    fn drop(&mut self) {
        let bin = std::env::var("STRATA_TEST_PG_BIN").unwrap_or_default();
        for cluster in ["standby", "primary"] {
            let stop = format!("{bin}/pg_ctl -D {}/{cluster} -m immediate stop", self.dir.path().display());
            let _ = std::process::Command::new("su").args(["postgres", "-c", &stop]).output();
        }
    }
}

/// With `backfill.maxReplicaLagSeconds`, backfills stop taking batches
/// while the primary's replica replays further behind than that (the
/// standby here applies WAL 2 s late), and go on once it has caught up:
/// every row still changed once.
#[tokio::test]
async fn backfills_wait_while_a_replica_replays_too_far_behind() {
    if backend() != Backend::Postgres {
        return;
    }
    let pair = DelayedStandby::start("2s").await;
    let ws = Workspace::new("fleet");
    let extra = "tenantConcurrency: 2\nbackfill:\n  rowsPerSecond: 50\n  maxReplicaLagSeconds: 1\n";
    let yaml = ws
        .config(extra)
        .replace(&format!("dataSource: {}", ws.pg_url_public()), &format!("dataSource: {}", pair.primary_url));
    assert!(yaml.contains(&pair.primary_url));
    let server = Server::start_in(ws, &yaml, "").await;
    backfill_behind_a_replica(&server).await;
    assert!(server.log().contains("a replica lags more than backfill.maxReplicaLagSeconds"), "{}", server.log());
    let mut primary = admin(&pair.primary_url).await;
    for tenant in ["t00", "t01"] {
        let counts: (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "select count(*) filter (where touched = 1), count(*) filter (where touched <> 1) from {tenant}.items"
        )))
        .fetch_one(&mut primary)
        .await
        .unwrap();
        assert_eq!(counts, (150, 0), "{tenant}");
    }
}

/// A backfill in a rollout: a wave ends once the backfills it started
/// have, so the next wave never starts beside a canary's unfinished data
/// change; the canary's failing backfill stops the rollout before the
/// next wave, and once its tenant is retried a resume completes it.
#[tokio::test]
async fn a_rollout_wave_ends_with_its_backfills_and_a_failing_one_stops_the_rollout() {
    let server = Server::start("fleet", "tenantConcurrency: 2\n").await;
    with_items(&server, 3, &checked_items_sql(200)).await;
    server.ws.execute("t00", &format!("update {} set touched = 1 where id = 101", table_of("t00", "items"))).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);

    let rollout = "id status events { action wave detail }";
    let started = server
        .data(
            &format!("mutation {{ startRollout(versionName: \"touch\", waves: [\"t00\", \"rest\"], failureBudget: \"0\") {{ {rollout} }} }}"),
            json!({}),
        )
        .await;
    let id = started["startRollout"]["id"].as_i64().unwrap();
    let stopped = wait_for(&server, id, "STOPPED").await;
    let failed = stopped["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((failed["action"].as_str(), failed["wave"].as_i64()), (Some("wave-failed"), Some(1)), "{stopped}");
    let detail = failed["detail"].as_str().unwrap();
    assert!(
        detail.contains("1 backfill(s) of the wave did not finish") && detail.contains("t00 (tenants/002_touch.sql)"),
        "{detail}"
    );
    // Wave 2 never started: nothing of it ran.
    let books = settled(&server).await;
    assert_eq!(books.iter().map(|row| row["tenant"].as_str().unwrap()).collect::<Vec<_>>(), ["t00"], "{books:?}");
    for tenant in ["t01", "t02"] {
        assert_eq!(touched(&server, tenant).await, (200, 0, 0), "{tenant}");
    }

    server.ws.execute("t00", &format!("update {} set touched = 0 where id = 101", table_of("t00", "items"))).await;
    let retried = server
        .graphql("mutation { retryQuarantined(input: {versionName: \"retry\"}) { version { id } } }", json!({}))
        .await;
    assert!(retried.get("errors").is_none(), "{retried}");
    settled(&server).await;
    let resumed = server.data(&format!("mutation {{ resumeRollout(id: {id}) {{ {rollout} }} }}"), json!({})).await;
    assert_eq!(resumed["resumeRollout"]["id"], id);
    let done = wait_for(&server, id, "COMPLETED").await;
    let completed: Vec<&str> = done["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["action"] == "wave-completed")
        .map(|event| event["detail"].as_str().unwrap())
        .collect();
    assert_eq!(completed.len(), 2, "{done}");
    assert!(completed[1].ends_with("; backfills done in 2 tenant(s)"), "{done}");
    let books = settled(&server).await;
    assert!(books.len() == 3 && books.iter().all(|row| row["state"] == "DONE" && row["rowsDone"] == 200), "{books:?}");
    for tenant in ["t00", "t01", "t02"] {
        assert_eq!(touched(&server, tenant).await, (200, 200, 0), "{tenant}");
    }
}

/// A wave's failing backfills within its failure budget are named in the
/// wave's event and the rollout goes on: with `failureBudget: "1"` over a
/// first wave of two tenants, one failing tenant (quarantined) leaves the
/// other's backfill done and the second wave runs.
#[tokio::test]
async fn a_waves_backfill_failures_within_its_budget_let_the_rollout_go_on() {
    let server = Server::start("fleet", "tenantConcurrency: 2\n").await;
    with_items(&server, 3, &checked_items_sql(100)).await;
    server.ws.execute("t00", &format!("update {} set touched = 1 where id = 51", table_of("t00", "items"))).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);

    let rollout = "id status events { action wave detail }";
    let started = server
        .data(
            &format!(
                "mutation {{ startRollout(versionName: \"touch\", waves: [\"t00,t01\", \"rest\"], \
                 failureBudget: \"1\") {{ {rollout} }} }}"
            ),
            json!({}),
        )
        .await;
    let id = started["startRollout"]["id"].as_i64().unwrap();
    let done = wait_for(&server, id, "COMPLETED").await;
    let first = done["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["action"] == "wave-completed" && event["wave"] == 1)
        .unwrap_or_else(|| panic!("{done}"));
    let detail = first["detail"].as_str().unwrap();
    assert!(
        detail.contains("; backfills done in 1 tenant(s), 1 failed within the failure budget 1 (quarantined: t00 ("),
        "{detail}"
    );
    let books = settled(&server).await;
    let states: Vec<(&str, &str)> =
        books.iter().map(|row| (row["tenant"].as_str().unwrap(), row["state"].as_str().unwrap())).collect();
    assert_eq!(states, [("t00", "FAILED"), ("t01", "DONE"), ("t02", "DONE")], "{books:?}");
    for tenant in ["t01", "t02"] {
        assert_eq!(touched(&server, tenant).await, (100, 100, 0), "{tenant}");
    }
}

/// A wave absorbs no more over its version and its backfills than its
/// budget: with `budget=1`, t01 put aside by the wave's version spends it,
/// so t00's failing backfill stops the wave (before, the backfills were
/// judged with the whole budget again and the wave completed with two).
#[tokio::test]
async fn a_waves_version_and_backfill_failures_share_one_budget() {
    let server = Server::start("fleet", "tenantConcurrency: 2\n").await;
    with_items(&server, 3, &checked_items_sql(100)).await;
    server.ws.execute("t00", &format!("update {} set touched = 1 where id = 51", table_of("t00", "items"))).await;
    let in_the_way = match backend() {
        Backend::Sqlite => "create table clash (id integer)".to_string(),
        _ => "create table t01.clash (id integer)".to_string(),
    };
    server.ws.execute("t01", &in_the_way).await;
    server.ws.write_migration("tenants/002_clash.sql", "create table {schema}.clash (id integer primary key);\n");
    server.ws.write_migration("tenants/003_touch.sql", TOUCH_ITEMS);
    let started = server
        .data(
            "mutation { startRollout(versionName: \"touch\", waves: [\"t00,t01,t02:budget=1\", \"rest\"]) { id } }",
            json!({}),
        )
        .await;
    let id = started["startRollout"]["id"].as_i64().unwrap();
    let stopped = wait_for(&server, id, "STOPPED").await;
    let last = stopped["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["action"], "wave-failed", "{stopped}");
    let why = last["detail"].as_str().unwrap();
    assert!(
        why.starts_with("1 backfill(s) of the wave did not finish, more than its failure budget 0 absorbs"),
        "{why}"
    );
    let quarantine = server.data("query { quarantine { tenant } }", json!({})).await;
    assert_eq!(quarantine["quarantine"], json!([{ "tenant": "t00" }, { "tenant": "t01" }]));
}

/// A wave whose tenants' later files wait on its backfill runs again once
/// it is done: the rollout completes with every file of its version
/// recorded in every tenant of its waves, nothing left pending.
#[tokio::test]
async fn a_rollout_runs_the_files_after_a_backfill_in_the_wave_before_it_completes() {
    let server = Server::start("fleet", "tenantConcurrency: 2\n").await;
    let names = with_items(&server, 3, &items_sql(60)).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    server.ws.write_migration("tenants/003_after.sql", "create table {schema}.after_touch (id int);\n");
    let started = server
        .data("mutation { startRollout(versionName: \"touch\", waves: [\"t00\", \"rest\"]) { id } }", json!({}))
        .await;
    let id = started["startRollout"]["id"].as_i64().unwrap();
    let done = wait_for(&server, id, "COMPLETED").await;
    let recorded = recorded(&server).await;
    for tenant in &names {
        for file in ["tenants/002_touch.sql", "tenants/003_after.sql"] {
            assert_eq!(recorded.get(&(file.to_string(), tenant.clone())), Some(&1), "{file} in {tenant}: {done}");
        }
        assert_eq!(touched(&server, tenant).await, (60, 60, 0), "{tenant}");
    }
    let details: Vec<&str> = done["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["action"] == "wave-completed")
        .map(|event| event["detail"].as_str().unwrap())
        .collect();
    assert!(details.iter().all(|d| d.contains("; backfills done in ") && d.contains("; then version ")), "{done}");
    let plan = server.data("{ plan { nothingToDo } }", json!({})).await;
    assert_eq!(plan["plan"]["nothingToDo"], true, "{plan}");
}

/// `strata quarantine retry` runs the backfills it restarts, as `apply`
/// does, and their tenants stay quarantined until they are done: failing
/// again, one is quarantined with one failure more (exit 11); fixed, the
/// next retry finishes it and lets it go (exit 0).
#[tokio::test]
async fn a_retry_runs_its_backfills_and_lets_their_tenants_go_once_they_are_done() {
    let mut server = Server::start("fleet", "").await;
    with_items(&server, 1, &checked_items_sql(50)).await;
    server.ws.execute("t00", &format!("update {} set touched = 1 where id = 30", table_of("t00", "items"))).await;
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    version_waiting(&server, "touch").await;
    settled(&server).await;
    let failures = "select failures from svc_quarantine where tenant = 't00'";
    assert_eq!(server.ws.rows("svc", failures).await, [[json!(1)]]);

    // The service stopped: the command alone runs the backfill.
    server.kill_hard().await;
    let config = server.config_path().to_path_buf();
    let again = strata(&config, &["quarantine", "retry", "--version", "again"]).await;
    assert_eq!(code(&again), 11, "{}\n{}", stdout(&again), stderr(&again));
    assert!(
        stdout(&again).contains("Backfill of tenants/002_touch.sql in t00 failed (tenant quarantined)"),
        "{}",
        stdout(&again)
    );
    assert_eq!(server.ws.rows("svc", failures).await, [[json!(2)]]);

    server.ws.execute("t00", &format!("update {} set touched = 0 where id = 30", table_of("t00", "items"))).await;
    let fixed = strata(&config, &["quarantine", "retry", "--version", "fixed"]).await;
    assert_eq!(code(&fixed), 0, "{}\n{}", stdout(&fixed), stderr(&fixed));
    assert!(stdout(&fixed).contains("Backfill of tenants/002_touch.sql in t00 done."), "{}", stdout(&fixed));
    assert_eq!(server.ws.rows("svc", failures).await, Vec::<Vec<Value>>::new());
    assert_eq!(touched(&server, "t00").await, (50, 50, 0));
    assert_eq!(recorded(&server).await.get(&("tenants/002_touch.sql".to_string(), "t00".to_string())), Some(&1));
}

/// SQLite folds a version's staged rows into `svc_migrations` before each
/// transaction — a backfill batch's too, from the runner's task: a version
/// over the fleet running beside backfills records every file once (two
/// folds at once drained each other's units: rows lost, then a panic).
#[tokio::test]
async fn a_version_running_beside_backfills_records_every_file_once() {
    if backend() != Backend::Sqlite {
        return;
    }
    let server = Server::start("fleet", "tenantConcurrency: 4\nbackfill:\n  rowsPerSecond: 500\n").await;
    let names = tenants(&server, 40).await;
    // t36…t39 hold 2,000 rows each (sixteen seconds of backfill at least,
    // after the others: one at a time on SQLite, in order of name), the
    // others one.
    server.ws.write_migration(
        "tenants/001_items.sql",
        "create table {schema}.items (id bigint primary key, touched integer not null default 0);\n\
         insert into {schema}.items (id) with recursive n(i) as (select 1 union all select i + 1 from n where i < 2000) \
         select i from n where i = 1 or '{schema}' >= 't36';\n",
    );
    let seeded = server.create_version(json!({ "versionName": "items" })).await;
    assert!(seeded.get("errors").is_none(), "{seeded}");
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    let started = version_waiting(&server, "touch").await;
    assert_eq!(started["waitingOnBackfills"].as_array().map(Vec::len), Some(40), "{started}");
    let mut list = Vec::new();
    for _ in 0..600 {
        list = server.data(BACKFILLS, json!({})).await["backfills"].as_array().unwrap().clone();
        if list.iter().filter(|row| row["state"] == "DONE").count() >= 36 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The premise, checked before the versions rather than after them (a
    // loaded machine may take longer over four versions than the backfills
    // take to end): the small tenants are done, a large one's batches run.
    assert!(
        list.iter().filter(|row| row["state"] == "DONE").count() >= 36
            && list.iter().any(|row| row["state"] == "RUNNING"),
        "the versions would not run beside a backfill: {list:?}"
    );
    // Versions over the 36 tenants done, while the other four's batches run.
    for round in 0..4 {
        server.ws.write_migration(
            &format!("tenants/00{}_more.sql", round + 3),
            &format!("create table {{schema}}.more{round} (id integer primary key);\n"),
        );
        let result = server.create_version(json!({ "versionName": format!("more {round}") })).await;
        assert!(result.get("errors").is_none(), "{result}\n{}", server.log());
    }
    apply_all(&server).await;
    let recorded = recorded(&server).await;
    for tenant in &names {
        for file in ["tenants/001_items.sql", "tenants/002_touch.sql", "tenants/003_more.sql", "tenants/006_more.sql"] {
            let tables = server.ws.tables(tenant).await;
            let books = server.data(BACKFILLS, json!({})).await;
            assert_eq!(
                recorded.get(&(file.to_string(), tenant.clone())),
                Some(&1),
                "{tenant} {file}: tables {tables:?}, backfills {books}\n{}",
                server.log()
            );
        }
    }
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    assert!(!server.log().contains("panicked"), "{}", server.log());
}

/// A MariaDB server of its own writing its binary log, and a replica of it
/// applying events `delay` seconds late (`MASTER_DELAY`), stopped when
/// dropped.
struct DelayedReplica {
    dir: tempfile::TempDir,
    primary_url: String,
    replica_url: String,
}

impl DelayedReplica {
    async fn start(delay: u32) -> DelayedReplica {
        use sqlx::Connection;
        let dir = tempfile::tempdir().unwrap();
        let ports = [free_port(), free_port()];
        for (index, port) in ports.iter().enumerate() {
            let data = dir.path().join(format!("n{index}"));
            let install = std::process::Command::new("mariadb-install-db")
                .args(["--user=root", "--auth-root-authentication-method=normal"])
                .arg(format!("--datadir={}", data.display()))
                .output()
                .unwrap();
            assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
            let path = dir.path().display();
            // Its own tmpdir: a MariaDB starting removes every `#sql*` file
            // in its tmpdir, the suite's servers' temporary tables included.
            let tmp = dir.path().join(format!("n{index}-tmp"));
            std::fs::create_dir_all(&tmp).unwrap();
            let server = std::process::Command::new("mariadbd")
                .args([
                    "--no-defaults",
                    "--user=root",
                    "--bind-address=127.0.0.1",
                    "--innodb-flush-log-at-trx-commit=0",
                ])
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--port={port}"))
                .arg(format!("--socket={path}/n{index}.sock"))
                .arg(format!("--pid-file={path}/n{index}.pid"))
                .arg(format!("--tmpdir={}", tmp.display()))
                .arg(format!("--server-id={}", index + 1))
                .args(if index == 0 { vec!["--log-bin=primary", "--binlog-format=ROW"] } else { vec![] })
                .stdout(std::process::Stdio::null())
                .stderr(std::fs::File::create(dir.path().join(format!("n{index}.log"))).unwrap())
                .spawn()
                .unwrap();
            // Stopped by its pid file when the pair is dropped.
            drop(server);
        }
        let [primary_url, replica_url] = ports.map(|port| format!("mysql://root@127.0.0.1:{port}/mysql"));
        let mut replica = None;
        for _ in 0..150 {
            let up = (
                sqlx::MySqlConnection::connect(&primary_url).await,
                sqlx::MySqlConnection::connect(&replica_url).await,
            );
            if let (Ok(_), Ok(conn)) = up {
                replica = Some(conn);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut replica = replica.expect("the MariaDB primary and replica did not start");
        let follow = format!(
            "change master to master_host = '127.0.0.1', master_port = {}, master_user = 'root', master_delay = {delay}; start slave",
            ports[0]
        );
        sqlx::raw_sql(sqlx::AssertSqlSafe(follow)).execute(&mut replica).await.unwrap();
        DelayedReplica { dir, primary_url, replica_url }
    }
}

impl Drop for DelayedReplica {
    fn drop(&mut self) {
        for index in 0..2 {
            if let Ok(pid) = std::fs::read_to_string(self.dir.path().join(format!("n{index}.pid"))) {
                let _ = std::process::Command::new("kill").args(["-9", pid.trim()]).status();
            }
        }
    }
}

/// MySQL and MariaDB: the primary does not know its replicas' lag, so
/// `backfill.replicas` lists them. A replica whose replication is stopped
/// (`STOP SLAVE SQL_THREAD`: `Seconds_Behind_Master` is NULL) lags without
/// end: no batch starts; once it applies again and has caught up, the
/// backfills go on and every row is changed once. (How far a delayed
/// replica reports itself behind is read the same way; core's
/// `seconds_behind` turns the numbers into the wait.)
#[tokio::test]
async fn backfills_wait_while_a_listed_mysql_replica_does_not_apply() {
    use sqlx::Connection;
    if backend() != Backend::Mysql {
        return;
    }
    let pair = DelayedReplica::start(0).await;
    let ws = Workspace::new("fleet");
    let extra =
        format!("tenantConcurrency: 2\nbackfill:\n  maxReplicaLagSeconds: 1\n  replicas: [\"{}\"]\n", pair.replica_url);
    let main = crate::support::server_url("STRATA_TEST_MYSQL_URL");
    let yaml = ws.config(&extra).replace(&format!("dataSource: {main}"), &format!("dataSource: {}", pair.primary_url));
    assert!(yaml.contains(&pair.primary_url));
    let server = Server::start_in(ws, &yaml, "").await;
    with_items(&server, 2, &items_sql(150)).await;
    let mut replica = sqlx::MySqlConnection::connect(&pair.replica_url).await.unwrap();
    sqlx::raw_sql("stop slave sql_thread").execute(&mut replica).await.unwrap();
    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    let started = version_waiting(&server, "touch").await;
    assert_eq!(started["waitingOnBackfills"].as_array().map(Vec::len), Some(2), "{started}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let held = server.data(BACKFILLS, json!({})).await["backfills"].as_array().unwrap().clone();
    assert!(held.iter().all(|row| row["state"] == "RUNNING" && row["batches"] == 0), "{held:?}");
    assert!(server.metric("svc_http_backfill_lag_pauses").await > 0.0, "{}", server.log());
    sqlx::raw_sql("start slave sql_thread").execute(&mut replica).await.unwrap();
    let books = settled(&server).await;
    assert!(books.iter().all(|row| row["state"] == "DONE" && row["rowsDone"] == 150), "{books:?}");
    let shown = server.get("/v2/config").await.text().await.unwrap();
    assert!(shown.contains(&pair.replica_url), "the replica is shown (it has no password): {shown}");
    let mut primary = sqlx::MySqlConnection::connect(&pair.primary_url).await.unwrap();
    for tenant in ["t00", "t01"] {
        let sql =
            format!("select cast(sum(touched = 1) as signed), cast(sum(touched <> 1) as signed) from {tenant}.items");
        let counts: (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_one(&mut primary).await.unwrap();
        assert_eq!(counts, (150, 0), "{tenant}");
    }
}

/// A backfill reverted (dbmate's down section undoes what it changed) runs
/// again from its first key when a later version applies its file again:
/// its finished row in the books goes with the file's record, so the file
/// is neither skipped nor counted as applied without running.
#[tokio::test]
async fn a_reverted_backfill_runs_again_from_its_first_key() {
    // The server prepares its database in MySQL's turn.
    let ws = crate::formats::empty_directories();
    ws.write_migration(
        "tenants/20240101000000_items.sql",
        &format!("-- migrate:up\n{}-- migrate:down\ndrop table {{schema}}.items;\n", items_sql(100)),
    );
    ws.write_migration(
        "tenants/20240102000000_touch.sql",
        &format!("-- migrate:up\n{TOUCH_ITEMS}-- migrate:down\nupdate {{schema}}.items set touched = touched - 1;\n"),
    );
    let yaml = ws.config("");
    let server = Server::start_in(ws, &yaml, "").await;
    let created = server.create_tenant(json!({ "tenantName": "t1", "versionName": "t1" })).await;
    assert!(created.get("errors").is_none(), "{created}\n{}", server.log());
    settled(&server).await;
    assert_eq!(touched(&server, "t1").await, (100, 100, 0));

    let reverted =
        strata(server.config_path(), &["revert", "--version", "undo", "--steps", "1", "--tenants", "t1"]).await;
    assert_eq!(code(&reverted), 0, "{}{}", stdout(&reverted), stderr(&reverted));
    assert_eq!(touched(&server, "t1").await, (100, 0, 0));
    assert!(progress(&server, "tenants/20240102000000_touch.sql").await.is_empty(), "its books row went with it");

    let again = version_waiting(&server, "again").await;
    assert_eq!(again["waitingOnBackfills"], json!([{ "tenant": "t1", "file": "tenants/20240102000000_touch.sql" }]));
    settled(&server).await;
    assert_eq!(touched(&server, "t1").await, (100, 100, 0));
    let count =
        recorded(&server).await.get(&("tenants/20240102000000_touch.sql".to_string(), "t1".to_string())).copied();
    assert_eq!(count, Some(1));
}

/// A backfill that failed before its first batch (a key column that does
/// not exist) takes the file's fixed text on its retry; one that committed
/// batches of an earlier text refuses a changed file, naming it, rather
/// than run the text it started with as if it were the file.
#[tokio::test]
async fn a_fixed_backfill_file_runs_its_new_text_and_a_changed_one_mid_way_is_refused() {
    // One tenant: its failure pauses no other (no failure budget).
    let server = Server::start("fleet", "").await;
    with_items(&server, 1, &items_sql(100)).await;
    server.ws.write_migration("tenants/002_touch.sql", &TOUCH_ITEMS.replace("key=id", "key=nosuch"));
    let failing = server.create_version(json!({ "versionName": "touch" })).await;
    assert!(failing.get("errors").is_none(), "{failing}");
    let books = settled(&server).await;
    assert!(books.iter().all(|row| row["state"] == "FAILED" && row["batches"] == 0), "{books:?}");

    server.ws.write_migration("tenants/002_touch.sql", TOUCH_ITEMS);
    let query = "mutation { retryQuarantined(input: {versionName: \"fixed\"}) { waitingOnBackfills { tenant } } }";
    let retried = server.graphql(query, json!({})).await;
    assert!(retried.get("errors").is_none(), "{retried}");
    let books = settled(&server).await;
    assert!(books.iter().all(|row| row["state"] == "DONE" && row["rowsDone"] == 100), "{books:?}");
    assert_eq!(touched(&server, "t00").await, (100, 100, 0));

    // Mid-way: a backfill with batches committed, then the file changed.
    server.ws.write_migration("tenants/003_again.sql", &TOUCH_ITEMS.replace("batch=25", "batch=10"));
    let started = server.create_version(json!({ "versionName": "again" })).await;
    assert!(started.get("errors").is_none(), "{started}");
    let books = settled(&server).await;
    assert!(books.iter().any(|row| row["file"] == "tenants/003_again.sql"), "{books:?}");
    // (Its last batch failed, as it were: not done, not recorded.)
    let svc = crate::access::svc_prefix();
    let failed =
        format!("update {svc}svc_backfills set state = 'failed' where {} = 'tenants/003_again.sql'", file_column());
    server.ws.execute("svc", &failed).await;
    let unrecorded = format!("delete from {svc}svc_migrations where filename = 'tenants/003_again.sql'");
    server.ws.execute("svc", &unrecorded).await;
    server.ws.write_migration("tenants/003_again.sql", &TOUCH_ITEMS.replace("touched + 1", "touched + 100"));
    let refused = server.create_version(json!({ "versionName": "changed" })).await;
    let message = refused["errors"][0]["message"].as_str().unwrap_or_else(|| panic!("{refused}"));
    assert!(message.contains("tenants/003_again.sql changed since its backfill started in t0"), "{message}");
    // (Ten batches of ten rows; MySQL's ranges cut them otherwise.)
    assert!(message.contains("batch(es) of the earlier text committed, the backfill failed)"), "{message}");
    assert!(message.contains("write the change as a new file"), "{message}");
}
