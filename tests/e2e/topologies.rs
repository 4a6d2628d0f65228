//! Where fleets really run (PostgreSQL runs of the suite only): behind
//! PgBouncer in transaction and in session mode (stock configuration), on a
//! standby, and across a primary stopped in the middle of a version and its
//! standby promoted. Every test checks, per tenant and file, executed once
//! ⇔ recorded once: each test migration inserts a row, so a second run of a
//! file shows as a second row.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};

use crate::support::{Backend, Workspace, backend, strata};

pub(crate) fn env(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| panic!("{variable} is not set: run `bash tests/servers.sh start`"))
}

pub(crate) fn code(output: &std::process::Output) -> i32 {
    output.status.code().expect("exited")
}

pub(crate) fn text(output: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// `url` with its database replaced by `database`.
pub(crate) fn with_database(url: &str, database: &str) -> String {
    format!("{}/{database}", url.rsplit_once('/').unwrap().0)
}

pub(crate) async fn admin(url: &str) -> PgConnection {
    PgConnection::connect(url).await.unwrap_or_else(|e| panic!("{url}: {e}"))
}

pub(crate) async fn run(conn: &mut PgConnection, sql: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string())).execute(conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

pub(crate) async fn scalar(conn: &mut PgConnection, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A fresh database `name` on the server of `admin_url`.
pub(crate) async fn fresh_database(admin_url: &str, name: &str) {
    let mut conn = admin(admin_url).await;
    run(&mut conn, &format!("drop database if exists {name} with (force)")).await;
    run(&mut conn, &format!("create database {name}")).await;
}

/// The workspace's configuration with `dataSource` set to `url`.
pub(crate) fn config_for(ws: &Workspace, url: &str, file: &str, extra: &str) -> PathBuf {
    let yaml = ws.config(extra).replace(&format!("dataSource: {}", ws.pg_url_public()), &format!("dataSource: {url}"));
    assert!(yaml.contains(url));
    let path = ws.path().join(file);
    std::fs::write(&path, yaml).unwrap();
    path
}

/// Creates `n` tenants (`t0`…) directly: their schemas and rows of the
/// default tenant table (the service's tables exist after a first apply).
async fn tenants(conn: &mut PgConnection, n: usize) {
    for i in 0..n {
        run(conn, &format!("create schema t{i}; insert into svc.svc_tenants (name) values ('t{i}')")).await;
    }
}

/// A fresh database `strata_<name>_<port>` with `n` tenants, reached
/// through the stock PgBouncer in transaction mode (strata must connect
/// without ignore_startup_parameters): its name, the configuration through
/// the pooler (the service's tables made by a first apply through it), and
/// a direct connection to it.
async fn pgbouncer_fleet(ws: &Workspace, name: &str, n: usize) -> (String, PathBuf, PgConnection) {
    let database = format!("strata_{name}_{}", ws.port);
    fresh_database(&env("STRATA_TEST_PG_DEFAULT_URL"), &database).await;
    let transaction = config_for(ws, &with_database(&env("STRATA_TEST_PGBOUNCER_TX_URL"), &database), "tx.yaml", "");
    let first = strata(&transaction, &["apply", "--version", "ref"]).await;
    assert_eq!(code(&first), 0, "{}", text(&first));
    let mut direct = admin(&with_database(&env("STRATA_TEST_PG_DEFAULT_URL"), &database)).await;
    tenants(&mut direct, n).await;
    (database, transaction, direct)
}

/// A tenant migration pair that makes a double run visible: `<stamp>a`
/// creates a table and inserts `once`, `<stamp>b` inserts `again`.
fn write_counting_migrations(ws: &Workspace, stamp: &str, table: &str, extra_sql: &str) {
    ws.write_migration(
        &format!("tenants/{stamp}a.sql"),
        &format!(
            "create table {{schema}}.{table} (id serial primary key, note text);\n\
             insert into {{schema}}.{table} (note) values ('once');\n{extra_sql}"
        ),
    );
    ws.write_migration(
        &format!("tenants/{stamp}b.sql"),
        &format!("insert into {{schema}}.{table} (note) values ('again');\n"),
    );
}

/// Per tenant: the table holds exactly `once` and `again` (each file ran
/// once) and each file is recorded exactly once; no file of the database is
/// recorded twice in a schema; no lease is left.
async fn executed_once_recorded_once(conn: &mut PgConnection, tenants: usize, stamp: &str, table: &str) {
    for i in 0..tenants {
        let notes: Vec<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("select note from t{i}.{table} order by id")))
                .fetch_all(&mut *conn)
                .await
                .unwrap_or_else(|e| panic!("t{i}.{table}: {e}"));
        assert_eq!(notes, ["once", "again"], "tenant t{i}");
        let recorded = scalar(
            conn,
            &format!(
                "select count(*) from svc.svc_migrations where db_schema = 't{i}' and filename like 'tenants/{stamp}%'"
            ),
        )
        .await;
        assert_eq!(recorded, 2, "tenant t{i}: recorded rows of {stamp}");
    }
    let twice = scalar(
        conn,
        "select count(*) from (select 1 from svc.svc_migrations where filename not like 'scripts/%' \
         group by db_schema, filename having count(*) > 1) d",
    )
    .await;
    assert_eq!(twice, 0, "a file recorded twice in a schema");
    assert_eq!(scalar(conn, "select count(*) from svc.svc_lock").await, 0, "a lease was left behind");
}

#[tokio::test]
async fn through_pgbouncer_in_transaction_and_session_mode_concurrent_applies_never_overlap() {
    if backend() != Backend::Postgres {
        return;
    }
    let ws = Workspace::new("fleet");
    let (database, transaction, mut direct) = pgbouncer_fleet(&ws, "pgbouncer", 40).await;
    let session =
        config_for(&ws, &with_database(&env("STRATA_TEST_PGBOUNCER_SESSION_URL"), &database), "session.yaml", "");

    for round in 0..4 {
        let (stamp, table) = (format!("{:03}", 100 + round), format!("r{round}"));
        write_counting_migrations(&ws, &stamp, &table, "");
        // Two clients through the transaction pooler, one through the session pooler, at once.
        let outputs = futures::future::join_all([
            strata(&transaction, &["apply", "--version", "a"]),
            strata(&transaction, &["apply", "--version", "b"]),
            strata(&session, &["apply", "--version", "c"]),
        ])
        .await;
        for output in &outputs {
            assert_eq!(code(output), 0, "round {round}: {}", text(output));
        }
        let migrated = outputs.iter().filter(|o| text(o).contains("80 migration(s)")).count();
        assert_eq!(migrated, 1, "round {round}: exactly one apply migrates: {outputs:?}");
        executed_once_recorded_once(&mut direct, 40, &stamp, &table).await;
    }
    drop(direct);
    let mut conn = admin(&env("STRATA_TEST_PG_DEFAULT_URL")).await;
    run(&mut conn, &format!("drop database if exists {database} with (force)")).await;
}

/// Per tenant `t0`…: the time-outs its `seen` table recorded.
async fn seen_time_outs(conn: &mut PgConnection, n: usize) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for i in 0..n {
        let row: (String, String) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("select lock, statement from t{i}.seen")))
                .fetch_one(&mut *conn)
                .await
                .unwrap_or_else(|e| panic!("t{i}.seen: {e}"));
        all.push(row);
    }
    all
}

/// A file outside any transaction with time-outs of its own, run on 6
/// tenants at once. Directly, its session starts with them (the file reads
/// them back). Through PgBouncer in transaction mode, a `SET` before it and
/// the `RESET` after it would each be a transaction the pooler may send to
/// another server connection, leaving the time-outs on one the application
/// gets next: there the file runs without them, said once, and no server
/// connection of the pooler is left with them.
#[tokio::test]
async fn a_no_transaction_files_time_outs_are_its_own_sessions_and_never_left_on_a_pooled_server() {
    if backend() != Backend::Postgres {
        return;
    }
    let ws = Workspace::new("fleet");
    ws.write_migration(
        "tenants/300_seen.sql",
        "-- strata:no-transaction\n-- strata:lock-timeout 1234ms\n-- strata:statement-timeout 4321ms\n\
         create table {schema}.seen as select current_setting('lock_timeout') as lock, \
         current_setting('statement_timeout') as statement;\n",
    );
    let database = format!("strata_alone_{}", ws.port);
    fresh_database(&env("STRATA_TEST_PG_DEFAULT_URL"), &database).await;
    let direct_url = with_database(&env("STRATA_TEST_PG_DEFAULT_URL"), &database);
    let config = config_for(&ws, &direct_url, "direct.yaml", "tenantConcurrency: 3\n");
    assert_eq!(code(&strata(&config, &["apply", "--version", "ref"]).await), 0);
    let mut direct = admin(&direct_url).await;
    tenants(&mut direct, 6).await;
    let applied = strata(&config, &["apply", "--version", "alone"]).await;
    assert_eq!(code(&applied), 0, "{}", text(&applied));
    let expected = ("1234ms".to_string(), "4321ms".to_string());
    assert_eq!(seen_time_outs(&mut direct, 6).await, vec![expected; 6], "directly: each session started with them");
    drop(direct);

    let ws_pooled = Workspace::new("fleet");
    std::fs::copy(ws.migrations().join("tenants/300_seen.sql"), ws_pooled.migrations().join("tenants/300_seen.sql"))
        .unwrap();
    let (pooled_database, transaction, mut pooled) = pgbouncer_fleet(&ws_pooled, "alone", 6).await;
    let applied = strata(&transaction, &["apply", "--version", "alone"]).await;
    assert_eq!(code(&applied), 0, "{}", text(&applied));
    let said = text(&applied).matches("files outside a transaction run without lock_timeout").count();
    assert_eq!(said, 1, "said once: {}", text(&applied));
    let defaults = ("0".to_string(), "0".to_string());
    assert_eq!(
        seen_time_outs(&mut pooled, 6).await,
        vec![defaults; 6],
        "through the pooler: the server's own settings"
    );
    // Every server connection of the pool at once (a transaction each
    // holds one): none carries the file's time-outs.
    let pooler = with_database(&env("STRATA_TEST_PGBOUNCER_TX_URL"), &pooled_database);
    let options = pooler.parse::<sqlx::postgres::PgConnectOptions>().unwrap().extra_float_digits(None);
    let mut clients = Vec::new();
    for _ in 0..20 {
        let mut client = PgConnection::connect_with(&options).await.unwrap();
        let row = sqlx::raw_sql("begin; select current_setting('lock_timeout')").fetch_one(&mut client).await.unwrap();
        let lock: String = sqlx::Row::get(&row, 0);
        assert_ne!(lock, "1234ms", "a pooled server connection was left with the file's lock_timeout");
        clients.push(client);
    }
    drop(clients);
    drop(pooled);
    let mut conn = admin(&env("STRATA_TEST_PG_DEFAULT_URL")).await;
    for name in [&database, &pooled_database] {
        run(&mut conn, &format!("drop database if exists {name} with (force)")).await;
    }
}

/// Backfills through PgBouncer in transaction mode, two `strata apply` at
/// once, round after round: an integer key's batches go in one message with
/// their `begin` and the commit of the batch before, a text key's are bound,
/// checkpoints and claims are sent whole — and every row is changed once,
/// every backfill done with its rows counted, each file recorded once.
#[tokio::test]
async fn backfills_through_pgbouncer_in_transaction_mode_change_every_row_once() {
    if backend() != Backend::Postgres {
        return;
    }
    let ws = Workspace::new("fleet");
    let n = 6;
    let (database, transaction, mut direct) = pgbouncer_fleet(&ws, "pgbouncer_backfill", n).await;
    for i in 0..n {
        run(
            &mut direct,
            &format!(
                "create table t{i}.items (id bigint primary key, touched integer not null default 0);
                 insert into t{i}.items (id) select g from generate_series(1, 1000) g;
                 create table t{i}.codes (code text primary key, touched integer not null default 0);
                 insert into t{i}.codes (code) select 'c' || lpad(g::text, 4, '0') from generate_series(1, 300) g"
            ),
        )
        .await;
    }
    ws.write_migration(
        "tenants/200_items.sql",
        "-- strata:backfill table={schema}.items key=id batch=40\n\
         update {schema}.items set touched = touched + 1 where {range};\n",
    );
    ws.write_migration(
        "tenants/201_codes.sql",
        "-- strata:backfill table={schema}.codes key=code batch=25\n\
         update {schema}.codes set touched = touched + 1 where {range};\n",
    );
    // One version per backfill (a tenant's file after a backfill waits for
    // it), then none is due.
    for round in 0..3 {
        let (a, b) = (format!("a{round}"), format!("b{round}"));
        let outputs = futures::future::join_all([
            strata(&transaction, &["apply", "--version", &a]),
            strata(&transaction, &["apply", "--version", &b]),
        ])
        .await;
        for output in &outputs {
            assert_eq!(code(output), 0, "round {round}: {}", text(output));
            assert!(!text(output).contains("transaction in progress"), "round {round}: {}", text(output));
        }
    }
    for i in 0..n {
        for (table, rows) in [("items", 1000), ("codes", 300)] {
            let once = scalar(&mut direct, &format!("select count(*) from t{i}.{table} where touched = 1")).await;
            let all = scalar(&mut direct, &format!("select count(*) from t{i}.{table}")).await;
            assert_eq!((once, all), (rows, rows), "t{i}.{table}: rows changed once, of all");
        }
    }
    let backfills = scalar(
        &mut direct,
        "select count(*) from svc.svc_backfills where state = 'done' \
         and rows_done = case when file = 'tenants/200_items.sql' then 1000 else 300 end \
         and batches >= case when file = 'tenants/200_items.sql' then 25 else 12 end",
    )
    .await;
    assert_eq!(backfills, 2 * n as i64, "every backfill done, its rows and batches counted");
    let recorded = scalar(
        &mut direct,
        "select count(*) from svc.svc_migrations where filename in ('tenants/200_items.sql', 'tenants/201_codes.sql')",
    )
    .await;
    assert_eq!(recorded, 2 * n as i64, "each backfill's file recorded once a tenant");
    assert_eq!(scalar(&mut direct, "select count(*) from svc.svc_lock").await, 0, "a lease was left behind");
    drop(direct);
    let mut conn = admin(&env("STRATA_TEST_PG_DEFAULT_URL")).await;
    run(&mut conn, &format!("drop database if exists {database} with (force)")).await;
}

/// The holder of the lease is killed with kill -9 at a random point of a
/// version, three times over: each time the next apply proceeds within the
/// lease's length (5 s here) and finishes the version; every file ran and is
/// recorded once.
#[tokio::test]
async fn a_holder_killed_with_kill_9_blocks_the_next_apply_no_longer_than_its_lease() {
    if backend() != Backend::Postgres {
        return;
    }
    let ws = Workspace::new("fleet");
    let database = format!("strata_lease_{}", ws.port);
    fresh_database(&env("STRATA_TEST_PG_DEFAULT_URL"), &database).await;
    let url = with_database(&env("STRATA_TEST_PGBOUNCER_TX_URL"), &database);
    let config = config_for(
        &ws,
        &url,
        "tx.yaml",
        "lockLeaseSeconds: 5
",
    );
    assert_eq!(code(&strata(&config, &["apply", "--version", "ref"]).await), 0);
    let mut direct = admin(&with_database(&env("STRATA_TEST_PG_DEFAULT_URL"), &database)).await;
    tenants(&mut direct, 8).await;
    for round in 0..3 {
        let (stamp, table) = (format!("{}", 200 + round), format!("k{round}"));
        // Each tenant's first file sleeps, so a kill lands in the middle.
        write_counting_migrations(&ws, &stamp, &table, "select pg_sleep(0.3);\n");
        let mut holder = tokio::process::Command::new(crate::support::strata_bin())
            .args(["--config", config.to_str().unwrap(), "apply", "--version", "killed"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while scalar(&mut direct, "select count(*) from svc.svc_lock").await == 0 {
            assert!(Instant::now() < deadline, "the holder never took the lease");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        tokio::time::sleep(Duration::from_millis(u64::from(nanos % 800))).await;
        holder.start_kill().unwrap();
        holder.wait().await.unwrap();
        let killed_at = Instant::now();
        let next = strata(&config, &["apply", "--version", "next"]).await;
        let waited = killed_at.elapsed();
        assert_eq!(code(&next), 0, "round {round}: {}", text(&next));
        assert!(waited < Duration::from_secs(15), "round {round}: the next apply waited {waited:?}");
        eprintln!("round {round}: killed after {} ms; the next apply finished {waited:?} later", nanos % 800);
        executed_once_recorded_once(&mut direct, 8, &stamp, &table).await;
    }
    drop(direct);
    let mut conn = admin(&env("STRATA_TEST_PG_DEFAULT_URL")).await;
    run(&mut conn, &format!("drop database if exists {database} with (force)")).await;
}

/// A pooler whose pool is too small for a version (2 server connections,
/// `query_wait_timeout = 2`, units that hold a connection for 3 s): the
/// version stops with POOL_EXHAUSTED, naming the setting and what committed.
#[tokio::test]
async fn an_exhausted_pooler_is_named_with_what_committed() {
    if backend() != Backend::Postgres {
        return;
    }
    let ws = Workspace::new("fleet");
    let database = format!("strata_pool_{}", ws.port);
    fresh_database(&env("STRATA_TEST_PG_DEFAULT_URL"), &database).await;
    let url = with_database(&env("STRATA_TEST_PGBOUNCER_SMALL_URL"), &database);
    let config = config_for(
        &ws,
        &url,
        "small.yaml",
        "tenantConcurrency: 4
",
    );
    assert_eq!(code(&strata(&config, &["apply", "--version", "ref"]).await), 0);
    let mut direct = admin(&with_database(&env("STRATA_TEST_PG_DEFAULT_URL"), &database)).await;
    tenants(&mut direct, 8).await;
    write_counting_migrations(&ws, "500", "p", "select pg_sleep(3);\n");
    let failed = strata(&config, &["apply", "--version", "too-small"]).await;
    let message = text(&failed);
    eprintln!("the version on a small pool said: {message}");
    assert_eq!(code(&failed), 1, "{message}");
    assert!(message.contains("no database connection came free in time for migration"), "{message}");
    assert!(message.contains("query_wait_timeout"), "the pooler's own words: {message}");
    assert!(message.contains("tenantConcurrency + 2"), "{message}");
    assert!(message.contains("schema(s) not committed"), "{message}");
    // Each tenant: both files or neither, recorded as run.
    for i in 0..8 {
        let exists = scalar(
            &mut direct,
            &format!("select count(*) from pg_tables where schemaname = 't{i}' and tablename = 'p'"),
        )
        .await;
        let recorded = scalar(
            &mut direct,
            &format!(
                "select count(*) from svc.svc_migrations where db_schema = 't{i}' and filename like 'tenants/500%'"
            ),
        )
        .await;
        assert_eq!(recorded, exists * 2, "tenant t{i}");
    }
    drop(direct);
    let mut conn = admin(&env("STRATA_TEST_PG_DEFAULT_URL")).await;
    run(&mut conn, &format!("drop database if exists {database} with (force)")).await;
}

/// `pg_ctl` of the test servers' binaries, as the `postgres` user.
pub(crate) async fn pg_ctl(args: &str) {
    let command = format!("{}/pg_ctl {args}", env("STRATA_TEST_PG_BIN"));
    let status = tokio::process::Command::new("su").args(["postgres", "-c", &command]).status().await.unwrap();
    assert!(status.success(), "{command}");
}

async fn wait_until_writable(url: &str) -> PgConnection {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut conn) = PgConnection::connect(url).await
            && scalar(&mut conn, "select count(*) from pg_stat_activity where not pg_is_in_recovery()").await > 0
        {
            return conn;
        }
        assert!(Instant::now() < deadline, "{url} did not become a primary");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// On a standby, the read-only commands work and `apply` is refused with
/// its own status; then the primary is stopped in the middle of a
/// 200-tenant version, the error says the connection was lost (never "fix
/// the file"), the standby is promoted, and the re-run completes with every
/// file executed once and recorded once.
#[tokio::test]
async fn a_standby_is_named_read_only_and_a_failover_mid_version_loses_nothing() {
    if backend() != Backend::Postgres {
        return;
    }
    let ws = Workspace::new("fleet");
    let database = "strata_failover";
    let primary_admin = env("STRATA_TEST_PG_PRIMARY_URL");
    let (primary, standby) =
        (with_database(&primary_admin, database), with_database(&env("STRATA_TEST_PG_STANDBY_URL"), database));
    fresh_database(&primary_admin, database).await;
    let on_primary = config_for(&ws, &primary, "primary.yaml", "tenantConcurrency: 4\n");
    let on_standby = config_for(&ws, &standby, "standby.yaml", "tenantConcurrency: 4\n");
    assert_eq!(code(&strata(&on_primary, &["apply", "--version", "ref"]).await), 0);
    let mut direct = admin(&primary).await;
    tenants(&mut direct, 200).await;
    write_counting_migrations(&ws, "300", "f", "select pg_sleep(0.05);\n");
    run(&mut direct, "select pg_sleep(0.5)").await; // replay reaches the standby

    // The standby: plan reads, apply is refused as read-only (exit 7), not "unreachable".
    let plan = strata(&on_standby, &["plan", "--check"]).await;
    assert_eq!(code(&plan), 6, "{}", text(&plan));
    let refused = strata(&on_standby, &["apply", "--version", "on-standby"]).await;
    assert_eq!(code(&refused), 7, "{}", text(&refused));
    assert!(text(&refused).contains("read-only"), "{}", text(&refused));
    assert!(!text(&refused).contains(" at line "), "an engine source line leaked: {}", text(&refused));

    // The primary stops (immediate: like a crash) once some tenants committed.
    let apply = tokio::spawn({
        let on_primary = on_primary.clone();
        async move { strata(&on_primary, &["apply", "--version", "interrupted"]).await }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while scalar(&mut direct, "select count(*) from svc.svc_migrations where filename like 'tenants/300%'").await < 40 {
        assert!(Instant::now() < deadline, "the version did not get going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(direct);
    pg_ctl(&format!("-D {} -m immediate stop", env("STRATA_TEST_PG_PRIMARY_DATA"))).await;
    let interrupted = apply.await.unwrap();
    assert_eq!(code(&interrupted), 5, "{}", text(&interrupted));
    let message = text(&interrupted);
    eprintln!("the interrupted version said: {message}");
    assert!(message.contains("what committed before the failure stays applied and recorded in version"), "{message}");
    assert!(message.contains("connection to the database was lost"), "{message}");
    assert!(!message.contains("fix the file"), "{message}");
    assert!(!message.contains(" at line "), "an engine source line leaked: {message}");

    // Promote the standby; the re-run against it completes what is left.
    pg_ctl(&format!("-D {} -w promote", env("STRATA_TEST_PG_STANDBY_DATA"))).await;
    let mut promoted = wait_until_writable(&standby).await;
    let rerun = strata(&on_standby, &["apply", "--version", "after-failover"]).await;
    assert_eq!(code(&rerun), 0, "{}", text(&rerun));
    executed_once_recorded_once(&mut promoted, 200, "300", "f").await;
}

/// Applies through different nodes of a 3-node MariaDB Galera cluster
/// (MySQL runs of the suite): `GET_LOCK` is node-local there, the lease row
/// is not. Four rounds of three concurrent applies, one through each node:
/// exactly one migrates, every file runs and is recorded once per tenant.
#[tokio::test]
async fn on_a_galera_cluster_applies_through_different_nodes_never_overlap() {
    use sqlx::MySqlConnection;
    if backend() != Backend::Mysql {
        return;
    }
    let nodes: Vec<String> = env("STRATA_TEST_GALERA_URLS").split(',').map(str::to_string).collect();
    let mut admin = MySqlConnection::connect(&nodes[0]).await.unwrap();
    let leftovers: Vec<String> = sqlx::query_scalar(
        "select cast(schema_name as char) from information_schema.schemata \
         where schema_name not in ('mysql', 'information_schema', 'performance_schema', 'sys')",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    for name in leftovers {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("drop database `{name}`"))).execute(&mut admin).await.unwrap();
    }
    let ws = Workspace::new("fleet");
    let main_url = env("STRATA_TEST_MYSQL_URL");
    let configs: Vec<PathBuf> = nodes
        .iter()
        .enumerate()
        .map(|(i, url)| {
            let yaml = ws.config("").replace(&format!("dataSource: {main_url}"), &format!("dataSource: {url}"));
            assert!(yaml.contains(url.as_str()));
            let path = ws.path().join(format!("node{i}.yaml"));
            std::fs::write(&path, yaml).unwrap();
            path
        })
        .collect();
    let first = strata(&configs[0], &["apply", "--version", "ref"]).await;
    assert_eq!(code(&first), 0, "{}", text(&first));
    const TENANTS: usize = 30;
    for i in 0..TENANTS {
        let sql = format!("create database t{i}; insert into svc.svc_tenants (name) values ('t{i}')");
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut admin).await.unwrap();
    }
    for round in 0..4 {
        let (stamp, table) = (format!("{:03}", 100 + round), format!("g{round}"));
        write_counting_migrations(&ws, &stamp, &table, "");
        let outputs = futures::future::join_all(configs.iter().enumerate().map(|(i, config)| async move {
            let name = format!("n{i}");
            strata(config, &["apply", "--version", &name]).await
        }))
        .await;
        for output in &outputs {
            assert_eq!(code(output), 0, "round {round}: {}", text(output));
        }
        let migrated = outputs.iter().filter(|o| text(o).contains(&format!("{} migration(s)", 2 * TENANTS))).count();
        assert_eq!(migrated, 1, "round {round}: exactly one apply migrates: {outputs:?}");
        for i in 0..TENANTS {
            let notes: Vec<String> =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("select note from t{i}.{table} order by id")))
                    .fetch_all(&mut admin)
                    .await
                    .unwrap_or_else(|e| panic!("t{i}.{table}: {e}"));
            assert_eq!(notes, ["once", "again"], "round {round}, tenant t{i}");
        }
        let twice: i64 = sqlx::query_scalar(
            "select count(*) from (select 1 from svc.svc_migrations where filename not like 'scripts/%' \
             group by db_schema, filename having count(*) > 1) d",
        )
        .fetch_one(&mut admin)
        .await
        .unwrap();
        assert_eq!(twice, 0, "round {round}: a file recorded twice in a schema");
        let recorded: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "select count(*) from svc.svc_migrations where filename like 'tenants/{stamp}%'"
        )))
        .fetch_one(&mut admin)
        .await
        .unwrap();
        assert_eq!(recorded, 2 * TENANTS as i64, "round {round}");
        let holder: String =
            sqlx::query_scalar("select holder from svc.svc_lock where id = 1").fetch_one(&mut admin).await.unwrap();
        assert_eq!(holder, "", "round {round}: a lease was left behind");
    }
    // Rollouts started at once through the three nodes: each node finds the
    // next id free, the cluster certifies one insert and the others read
    // again and are refused: exactly one is stored and active each round.
    for round in 0..4 {
        let outputs = futures::future::join_all(configs.iter().enumerate().map(|(i, config)| async move {
            let version = format!("race-{round}-{i}");
            strata(config, &["rollout", "start", "--version", &version, "--wave", "t0:approve", "--wave", "rest"]).await
        }))
        .await;
        let started: Vec<&std::process::Output> = outputs.iter().filter(|o| code(o) == 0).collect();
        assert_eq!(started.len(), 1, "round {round}: exactly one starts: {outputs:?}");
        for refused in outputs.iter().filter(|o| code(o) != 0) {
            assert!(text(refused).contains("a second rollout would run its files"), "round {round}: {}", text(refused));
        }
        let docs: Vec<String> =
            sqlx::query_scalar("select doc from svc.svc_rollouts order by id").fetch_all(&mut admin).await.unwrap();
        assert_eq!(docs.len(), round + 1, "round {round}: the refused starts stored nothing: {docs:?}");
        let id = docs.len().to_string();
        let cancelled = strata(&configs[round % 3], &["rollout", "cancel", &id]).await;
        assert_eq!(code(&cancelled), 0, "round {round}: {}", text(&cancelled));
    }
}

/// A fresh database `strata_<name>_<port>` on the server with default
/// settings, reached directly, one unit at a time under a 3 s lease: its
/// workspace, name, configuration (the service's tables made by a first
/// apply) and a connection to it, with `n` tenants.
async fn leased_fleet(name: &str, n: usize) -> (Workspace, String, PathBuf, PgConnection) {
    let ws = Workspace::new("fleet");
    let database = format!("strata_{name}_{}", ws.port);
    let admin_url = env("STRATA_TEST_PG_DEFAULT_URL");
    fresh_database(&admin_url, &database).await;
    let url = with_database(&admin_url, &database);
    let config = config_for(&ws, &url, "direct.yaml", "tenantConcurrency: 1\nlockLeaseSeconds: 5\n");
    assert_eq!(code(&strata(&config, &["apply", "--version", "ref"]).await), 0);
    let mut direct = admin(&url).await;
    tenants(&mut direct, n).await;
    (ws, database, config, direct)
}

/// A holder paused past its lease (SIGSTOP while a tenant's file sleeps on
/// the server, its whole unit sent as one message) resumes after another
/// apply took the lease: its unit's transaction meets the fence and rolls
/// back instead of committing what the new holder runs too. The paused one
/// stops with LOCK_LOST; the other finishes; every file ran and is
/// recorded once per tenant.
#[tokio::test]
async fn a_holder_paused_past_its_lease_commits_nothing_the_next_holder_runs() {
    if backend() != Backend::Postgres {
        return;
    }
    let (ws, database, config, mut direct) = leased_fleet("paused", 3).await;
    let admin_url = env("STRATA_TEST_PG_DEFAULT_URL");
    // t1's first file sleeps 10 s: longer than the lease (5 s, so that t0's
    // unit ends within it on a loaded machine). t0's unit comes first and
    // commits the version's row, so t1's goes as one message.
    write_counting_migrations(&ws, "450", "z", "select pg_sleep(case when '{schema}' = 't1' then 10 else 0 end);\n");
    let paused = tokio::process::Command::new(crate::support::strata_bin())
        .args(["--config", config.to_str().unwrap(), "apply", "--version", "paused"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = paused.id().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    // t1's own sleep: t0's statement (`when 't0' = 't1'`) is active too
    // for a moment, and a pause there stopped the holder in t0 instead.
    let sleeping = "select count(*) from pg_stat_activity where query like '%pg_sleep(case when ''t1'' = ''t1''%' \
                    and state = 'active' and pid <> pg_backend_pid()";
    while scalar(&mut direct, sleeping).await == 0 {
        assert!(Instant::now() < deadline, "t1's file never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let signal = |name: &str| {
        let status = std::process::Command::new("kill").args([name, pid.as_str()]).status().unwrap();
        assert!(status.success(), "kill {name} {pid}");
    };
    signal("-STOP");
    let first_holder: String =
        sqlx::query_scalar("select holder from svc.svc_lock where id = 1").fetch_one(&mut direct).await.unwrap();
    while scalar(&mut direct, "select count(*) from svc.svc_lock where expires < clock_timestamp()").await == 0 {
        assert!(Instant::now() < deadline, "the paused holder's lease never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let next = tokio::spawn({
        let config = config.clone();
        async move { strata(&config, &["apply", "--version", "next"]).await }
    });
    let taken = "select count(*) from svc.svc_lock where holder <> '' and holder <> $1";
    while sqlx::query_scalar::<_, i64>(taken).bind(&first_holder).fetch_one(&mut direct).await.unwrap() == 0 {
        assert!(Instant::now() < deadline + Duration::from_secs(30), "the next apply never took the lease");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal("-CONT");
    let stopped = tokio::time::timeout(Duration::from_secs(60), paused.wait_with_output()).await.unwrap().unwrap();
    let message = text(&stopped);
    eprintln!("the paused holder said: {message}");
    assert_eq!(code(&stopped), 1, "{message}");
    assert!(message.contains("lost its lock"), "{message}");
    assert!(message.contains("stopped before migration tenants/450a.sql in schema t1"), "{message}");
    let next = next.await.unwrap();
    assert_eq!(code(&next), 0, "{}", text(&next));
    executed_once_recorded_once(&mut direct, 3, "450", "z").await;
    drop(direct);
    let mut conn = admin(&admin_url).await;
    run(&mut conn, &format!("drop database if exists {database} with (force)")).await;
}

/// A holder whose lease was taken over (here: by hand, as a holder cut off
/// for longer than its lease would find it) stops before its next unit,
/// reports `LOCK_LOST` with what committed, and a re-run completes it.
#[tokio::test]
async fn a_holder_that_lost_its_lease_stops_before_its_next_unit() {
    if backend() != Backend::Postgres {
        return;
    }
    let (ws, database, config, mut direct) = leased_fleet("lost", 10).await;
    let admin_url = env("STRATA_TEST_PG_DEFAULT_URL");
    write_counting_migrations(&ws, "400", "l", "select pg_sleep(0.5);\n");
    let apply = tokio::spawn({
        let config = config.clone();
        async move { strata(&config, &["apply", "--version", "loses-its-lease"]).await }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while scalar(&mut direct, "select count(*) from svc.svc_migrations where filename like 'tenants/400%'").await == 0 {
        assert!(Instant::now() < deadline, "the version did not get going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run(&mut direct, "update svc.svc_lock set holder = 'someone else'").await;
    let stopped = apply.await.unwrap();
    let message = text(&stopped);
    eprintln!("the version that lost its lease said: {message}");
    assert_eq!(code(&stopped), 1, "{message}");
    assert!(message.contains("lost its lock"), "{message}");
    assert!(message.contains("what committed before the failure stays applied and recorded in version"), "{message}");
    let done = scalar(
        &mut direct,
        "select count(distinct db_schema) from svc.svc_migrations where filename like 'tenants/400%'",
    )
    .await;
    assert!((1..10).contains(&done), "{done} tenants committed");
    // Each tenant: both files or neither, recorded as run.
    for i in 0..10 {
        let exists = scalar(
            &mut direct,
            &format!("select count(*) from pg_tables where schemaname = 't{i}' and tablename = 'l'"),
        )
        .await;
        let recorded = scalar(
            &mut direct,
            &format!(
                "select count(*) from svc.svc_migrations where db_schema = 't{i}' and filename like 'tenants/400%'"
            ),
        )
        .await;
        assert_eq!(recorded, exists * 2, "tenant t{i}");
    }
    // The stolen lease expires; the re-run completes what is left.
    run(&mut direct, "update svc.svc_lock set expires = now() - interval '1 second'").await;
    let rerun = strata(&config, &["apply", "--version", "rest"]).await;
    assert_eq!(code(&rerun), 0, "{}", text(&rerun));
    executed_once_recorded_once(&mut direct, 10, "400", "l").await;
    drop(direct);
    let mut conn = admin(&admin_url).await;
    run(&mut conn, &format!("drop database if exists {database} with (force)")).await;
}
