//! Migrating while the application runs: lock time-outs and retries, the
//! blocking session named, and the defects real-world migration sets found
//! (statement-by-statement no-transaction files, no empty version rows,
//! disjoint committed / not-committed lists, MySQL's executable comments,
//! every refusal at once, a new enum value used by a later file).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::{AssertSqlSafe, Connection, MySqlConnection, PgConnection};

use crate::support::{Backend, Server, backend, server_url};

/// A session of "the application" outside the service.
pub(crate) enum Session {
    Postgres(PgConnection),
    Mysql(MySqlConnection),
}

impl Session {
    pub(crate) async fn open(server: &Server) -> Session {
        match backend() {
            Backend::Postgres => Session::Postgres(PgConnection::connect(&server.ws.pg_url()).await.unwrap()),
            Backend::Mysql => {
                Session::Mysql(MySqlConnection::connect(&server_url("STRATA_TEST_MYSQL_URL")).await.unwrap())
            }
            Backend::Sqlite => unreachable!("SQLite has one writer: no lock queue to bound"),
            Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
        }
    }

    pub(crate) async fn run(&mut self, sql: &str) {
        let sql = AssertSqlSafe(sql.to_string());
        match self {
            Session::Postgres(conn) => sqlx::raw_sql(sql).execute(conn).await.map(|_| ()).unwrap(),
            Session::Mysql(conn) => sqlx::raw_sql(sql).execute(conn).await.map(|_| ()).unwrap(),
        }
    }

    /// This session's id as the server's activity views show it.
    pub(crate) async fn id(&mut self) -> i64 {
        match self {
            Session::Postgres(conn) => {
                i64::from(sqlx::query_scalar::<_, i32>("select pg_backend_pid()").fetch_one(conn).await.unwrap())
            }
            Session::Mysql(conn) => {
                sqlx::query_scalar::<_, u64>("select connection_id()").fetch_one(conn).await.unwrap() as i64
            }
        }
    }
}

/// Six tenants with `users` tables, and a tenant migration altering it.
async fn fleet(extra: &str) -> Server {
    let server = Server::start("basic", extra).await;
    for name in ["t1", "t2", "t3", "t4", "t5", "t6"] {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server.ws.write_migration("tenants/900.sql", "alter table {schema}.users add column note varchar(20);\n");
    server
}

/// The lock time-out as the engine applies it (MySQL counts whole seconds).
fn effective_lock_ms(configured: u64) -> u64 {
    if backend() == Backend::Mysql { configured.div_ceil(1000).max(1) * 1000 } else { configured }
}

/// Runs `select count(*)` on t3's table in a loop until `stop`, returning
/// the longest wait of one query.
async fn reader_loop(server: &Server, stop: tokio::sync::watch::Receiver<bool>) -> Duration {
    let mut reader = Session::open(server).await;
    let mut worst = Duration::ZERO;
    while !*stop.borrow() {
        let started = Instant::now();
        reader.run("select count(*) from t3.users").await;
        worst = worst.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worst
}

/// `svc_http_lock_retries`, 0 before the first retry (the series appears
/// with it).
async fn lock_retries(server: &Server) -> f64 {
    let text = server.get("/metrics").await.text().await.unwrap();
    text.lines().find_map(|line| line.strip_prefix("svc_http_lock_retries ")).map_or(0.0, |n| n.trim().parse().unwrap())
}

#[tokio::test]
async fn a_blocked_unit_waits_out_its_blocker_while_readers_never_queue_long() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_blocked_unit_waits_out_its_blocker_while_readers_never_queue_long",
            "the lock is held from a PostgreSQL or MariaDB session; SQL Server's lock time-outs are sqlserver.rs's a_blocker_that_never_ends_fails_its_tenant_named_and_the_others_commit",
        );
    }
    if backend() == Backend::Sqlite {
        return;
    }
    let server = fleet("lockTimeoutMillis: 300\nlockRetries: 20\n").await;
    let mut blocker = Session::open(&server).await;
    blocker.run(if backend() == Backend::Mysql { "start transaction" } else { "begin" }).await;
    blocker.run("select count(*) from t3.users").await;

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let reader = reader_loop(&server, stop_rx);
    let scenario = async {
        let version = server.create_version(json!({ "versionName": "alter users" }));
        // Released once t3's unit has hit its lock time-out: after a fixed
        // 2.5 s, a loaded machine (a cached CI run, MariaDB) reached t3 only
        // after the release, and nothing waited.
        let release = async {
            let deadline = Instant::now() + Duration::from_secs(60);
            while lock_retries(&server).await < 1.0 {
                assert!(Instant::now() < deadline, "no unit hit its lock time-out in 60 s\n{}", server.log());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            blocker.run("commit").await;
        };
        let (result, ()) = tokio::join!(version, release);
        stop_tx.send(true).unwrap();
        result
    };
    let (result, worst) = tokio::join!(scenario, reader);

    assert!(result.get("errors").is_none(), "{result}\n{}", server.log());
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
    for tenant in ["t1", "t3", "t6"] {
        assert_eq!(server.ws.rows(tenant, "select count(note) from users").await, [[json!(0)]], "{tenant}");
    }
    let recorded =
        server.ws.rows("svc", "select count(*) from svc_migrations where filename = 'tenants/900.sql'").await;
    assert_eq!(recorded, [[json!(6)]]);
    let retries = server.metric("svc_http_lock_retries").await;
    assert!(retries >= 1.0, "the blocked unit was retried: {retries}\n{}", server.log());
    assert!(server.metric("svc_http_lock_timeouts").await >= retries);
    // Readers queue behind the waiting ALTER for at most its time-out.
    let bound = Duration::from_millis(effective_lock_ms(300) + 1500);
    eprintln!(
        "worst reader latency while the migration waited: {worst:?} (lock time-out {} ms)",
        effective_lock_ms(300)
    );
    assert!(worst < bound, "a reader waited {worst:?}, more than {bound:?}");
}

#[tokio::test]
async fn a_blocker_that_never_ends_fails_its_tenant_named_and_the_others_commit() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_blocker_that_never_ends_fails_its_tenant_named_and_the_others_commit",
            "the lock is held from a PostgreSQL or MariaDB session; SQL Server's lock time-outs are sqlserver.rs's a_blocker_that_never_ends_fails_its_tenant_named_and_the_others_commit",
        );
    }
    if backend() == Backend::Sqlite {
        return;
    }
    let server = fleet("lockTimeoutMillis: 200\nlockRetries: 2\ntenantConcurrency: 2\n").await;
    let mut blocker = Session::open(&server).await;
    let blocker_id = blocker.id().await;
    blocker.run(if backend() == Backend::Mysql { "start transaction" } else { "begin" }).await;
    blocker.run("select count(*) as blocker_probe from t3.users").await;

    let result = server.create_version(json!({ "versionName": "alter users" })).await;
    let error = &result["errors"][0];
    let message = error["message"].as_str().unwrap();
    let extensions = &error["extensions"];
    assert_eq!(extensions["cause"], "LOCK_TIMEOUT", "{result}");
    assert_eq!(extensions["schema"], "t3", "{result}");
    assert!(
        message.starts_with(
            "migration tenants/900.sql gave up waiting for a lock in schema t3 (another session holds it)"
        ),
        "{message}"
    );
    assert!(message.contains(&format!("{} attempt(s))", 3)), "{message}");
    match backend() {
        Backend::Postgres => {
            assert!(message.contains(&format!("blocked by: pid {blocker_id} (idle in transaction")), "{message}");
            assert!(message.contains("users AccessShareLock"), "{message}");
            assert!(message.contains("select count(*) as blocker_probe from t3.users"), "{message}");
        }
        _ => assert!(message.contains(&format!("blocked by: connection {blocker_id} of ")), "{message}"),
    }
    assert!(message.contains("end or wait out the blocking session"), "{message}");
    // The others applied tenants/900.sql (their tenant script, due after
    // every tenant's migrations, did not run): partly committed; t3 not
    // at all.
    assert_eq!(extensions["notCommittedSchemas"], json!(["t3"]), "{result}");
    assert_eq!(extensions["partlyCommittedSchemas"], json!(["config", "t1", "t2", "t4", "t5", "t6"]), "{result}");
    assert_eq!(
        server
            .ws
            .rows(
                "t3",
                "select count(*) from information_schema.columns where table_schema = 't3' and column_name = 'note'"
            )
            .await,
        [[json!(0)]]
    );
    assert_eq!(server.metric("svc_http_lock_retries").await, 2.0);
    assert_eq!(server.metric("svc_http_lock_timeouts").await, 3.0);

    // Once the blocker is gone, a re-run completes t3 and nothing else.
    blocker.run("commit").await;
    let rerun = server.create_version(json!({ "versionName": "again" })).await;
    assert!(rerun.get("errors").is_none(), "{rerun}");
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
    let t3 = server.ws.rows("svc", "select db_schema from svc_migrations where filename = 'tenants/900.sql' and version_id = (select max(id) from svc_versions)").await;
    assert_eq!(t3, [[json!("t3")]]);
}

/// A fleet whose migration takes a lock its units share — a foreign key
/// to a reference table (`ShareRowExclusiveLock` on `ref.roles`, which
/// conflicts with itself) held while the unit runs on — queues its own
/// units: with a lock time-out shorter than the hold, most of them time
/// out behind another unit, again and again, while the fleet commits.
/// Those waits use up no retry: with two retries the whole fleet applies
/// (with them counted, no run of this test did). The first time-outs see
/// no commit yet and use up one; a later wait, at least 250 ms, spans a
/// 0.1 s hold, so a commit — unless a commit's sync stalls for longer, as
/// it can after a build, which the second retry absorbs.
#[tokio::test]
async fn units_queued_behind_each_other_on_a_shared_table_use_up_no_retries() {
    if backend() != Backend::Postgres {
        // MySQL's DDL takes no lock on the parent that conflicts with itself;
        // SQLite has one writer.
        return;
    }
    let server = Server::start("fleet", "lockTimeoutMillis: 50\nlockRetries: 2\ntenantConcurrency: 8\n").await;
    let names = crate::fleet::tenants(&server, 16).await;
    server.ws.write_migration(
        "tenants/500.sql",
        "create table {schema}.picks (id integer primary key, role integer references ref.roles (id));\n\
         select pg_sleep(0.1);\n",
    );
    let result = server.create_version(json!({ "versionName": "picks" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    assert_eq!(result["data"]["createVersion"]["summary"]["tenantMigrationsTotal"], 16, "{result}");
    for name in &names {
        let tables = server
            .ws
            .rows(name, &format!("select count(*) from information_schema.tables where table_schema = '{name}' and table_name = 'picks'"))
            .await;
        assert_eq!(tables, [[json!(1)]], "{name}");
    }
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
    let recorded = crate::fleet::recorded(&server).await;
    let picks: Vec<&str> =
        recorded.keys().filter(|(file, _)| file == "tenants/500.sql").map(|(_, schema)| schema.as_str()).collect();
    assert_eq!(picks, names.iter().map(String::as_str).collect::<Vec<_>>());
    // They did queue, and waits behind each other used up no retry.
    let retries = server.metric("svc_http_lock_retries").await;
    let behind = server.metric("svc_http_lock_timeouts_behind_own_units").await;
    assert!(behind > 0.0 && behind <= retries, "{behind} of {retries} retries behind the version's own units");
    assert_eq!(server.metric("svc_http_lock_timeouts").await, retries, "no unit gave up");
}

#[tokio::test]
async fn a_no_transaction_file_runs_statement_by_statement() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_no_transaction_file_runs_statement_by_statement",
            "its online index statement is written for the other engines",
        );
    }
    let server = Server::start("basic", "").await;
    let file = match backend() {
        Backend::Postgres => {
            "-- strata:no-transaction\ncreate table {schema}.nt (id int);\ncreate index concurrently nt_id on {schema}.nt (id);\n"
        }
        Backend::Sqlite => {
            "-- strata:no-transaction\ncreate table {schema}.nt (id int);\ncreate index {schema}.nt_id on nt (id);\n"
        }
        Backend::Mysql => {
            "-- strata:no-transaction\ncreate table {schema}.nt (id int);\ncreate index nt_id on {schema}.nt (id);\n"
        }
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    server.ws.write_migration("ref/500.sql", file);
    let result = server.create_version(json!({ "versionName": "index" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    assert!(server.ws.tables("ref").await.contains(&"nt".to_string()));
    assert_eq!(server.ws.count("ref", "nt").await, 0);
}

#[tokio::test]
async fn a_failed_no_transaction_file_leaves_no_empty_version() {
    let server = Server::start("basic", "").await;
    let first = server.create_version(json!({ "versionName": "v1" })).await;
    assert!(first.get("errors").is_none(), "{first}");
    let versions = server.ws.count("svc", "svc_versions").await;
    server.ws.write_migration(
        "ref/500.sql",
        "-- strata:no-transaction\ncreate table {schema}.half (id int);\ninsert into {schema}.missing values (1);\n",
    );
    let result = server.create_version(json!({ "versionName": "fails" })).await;
    let message = result["errors"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("migration ref/500.sql failed in schema ref at line 3"), "{message}");
    assert!(message.contains("may be partly applied, unrecorded; nothing was recorded"), "{message}");
    assert!(!message.contains("holds the new tenant"), "{message}");
    assert!(result["errors"][0]["extensions"].get("versionId").is_none(), "{result}");
    assert_eq!(server.ws.count("svc", "svc_versions").await, versions, "no empty version row");
}

#[tokio::test]
async fn a_tenant_failing_in_a_later_segment_is_listed_as_not_committed_only() {
    let server = Server::start("basic", "").await;
    for name in ["a1", "a2", "a3"] {
        server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
    }
    server.ws.write_migration("tenants/100.sql", "create table {schema}.first_part (id int);\n");
    server.ws.write_migration("ref/200.sql", "create table {schema}.middle (id int);\n");
    server.ws.write_migration("tenants/300.sql", "create table {schema}.only_once (id int);\n");
    server
        .ws
        .execute(
            "a2",
            match backend() {
                Backend::Sqlite => "create table only_once (id int)",
                Backend::Postgres => "create table a2.only_once (id int)",
                Backend::Mysql => "create table a2.only_once (id int)",
                Backend::Sqlserver => "create table a2.only_once (id int)",
            },
        )
        .await;
    let result = server.create_version(json!({ "versionName": "segments" })).await;
    let extensions = &result["errors"][0]["extensions"];
    assert_eq!(extensions["schema"], "a2", "{result}");
    // a2 committed tenants/100.sql, not tenants/300.sql; ref committed all
    // it had; the tenants' scripts did not run.
    assert_eq!(extensions["committedSchemas"], json!(["ref"]), "{result}");
    let partly = extensions["partlyCommittedSchemas"].as_array().unwrap();
    assert!(partly.contains(&json!("a2")), "{result}");
    assert!(!extensions["notCommittedSchemas"].as_array().unwrap().contains(&json!("a2")), "{result}");
    assert_eq!(extensions["notCommittedSchemas"], json!([]), "{result}");
    // What committed of a2 (its first segment) stays recorded.
    let a2 = server
        .ws
        .rows("svc", "select filename from svc_migrations where db_schema = 'a2' and filename like 'tenants/1%'")
        .await;
    assert_eq!(a2, [[json!("tenants/100.sql")]]);
}

#[tokio::test]
async fn mysql_executable_comments_reach_the_server_whole() {
    if backend() != Backend::Mysql {
        return;
    }
    let server = Server::start("basic", "").await;
    server.ws.write_migration(
        "ref/500.sql",
        "/*!40101 SET NAMES utf8mb4 */;\n/*!40101 SET @saved_cs_client = @@character_set_client */;\n\
         CREATE TABLE {schema}.dumped (id int) /*!50100 ENGINE=MyISAM */;\n",
    );
    let result = server.create_version(json!({ "versionName": "dump" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    let engine = server
        .ws
        .rows(
            "ref",
            "select engine from information_schema.tables where table_schema = 'ref' and table_name = 'dumped'",
        )
        .await;
    assert_eq!(engine, [[json!("MyISAM")]]);
}

#[tokio::test]
async fn every_refused_file_is_named_at_once() {
    if backend() == Backend::Mysql {
        return; // nothing is refused there: no transaction wraps a file
    }
    let server = Server::start("basic", "").await;
    let needs = match backend() {
        Backend::Postgres => "create index concurrently i{n} on {schema}.countries (name);\n",
        Backend::Sqlserver => "alter database scratch{n} set recovery simple;\n",
        _ => "vacuum;\n",
    };
    server.ws.write_migration("ref/500.sql", &needs.replace("{n}", "1"));
    server.ws.write_migration("ref/501.sql", &format!("select 1;\n{}", needs.replace("{n}", "2")));
    let result = server.create_version(json!({ "versionName": "refused" })).await;
    let error = &result["errors"][0];
    assert_eq!(error["extensions"]["code"], "STATEMENT_REFUSED", "{result}");
    let places: Vec<(Value, Value)> = error["extensions"]["refusals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["file"].clone(), r["line"].clone()))
        .collect();
    assert_eq!(places, [(json!("ref/500.sql"), json!(1)), (json!("ref/501.sql"), json!(2))], "{result}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("2 statements in 2 file(s) cannot run as written: ref/500.sql:1:1: ")
    );
}

#[tokio::test]
async fn a_new_enum_value_is_usable_by_a_later_file_of_the_same_version() {
    if backend() != Backend::Postgres {
        return;
    }
    let server = Server::start("basic", "").await;
    server.create_tenant(json!({ "tenantName": "e1", "versionName": "e1" })).await;
    server.ws.write_migration(
        "tenants/100.sql",
        "create type {schema}.mood as enum ('sad');\ncreate table {schema}.feelings (m {schema}.mood);\n",
    );
    assert!(server.create_version(json!({ "versionName": "type" })).await.get("errors").is_none());
    server.ws.write_migration("tenants/200.sql", "alter type {schema}.mood add value 'ok';\n");
    server.ws.write_migration("tenants/300.sql", "insert into {schema}.feelings values ('ok');\n");
    let result = server.create_version(json!({ "versionName": "use it" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    assert_eq!(server.ws.rows("e1", "select m::text from feelings").await, [[json!("ok")]]);
}

/// A file's `strata:statement-timeout` holds for that file only: the next
/// file of the unit runs with the configured time-outs again, and a file
/// after one with the configured time-outs gets its own (MySQL and MariaDB
/// keep a session's settings until set again, and a unit's files set only
/// what changed), so it fails when it runs past it.
#[tokio::test]
async fn a_files_statement_timeout_holds_for_that_file_only() {
    let sleep = match backend() {
        Backend::Sqlite => return, // no statement time-out on SQLite
        Backend::Postgres => "select pg_sleep(0.7);\n",
        // `select`: MariaDB interrupts a `do sleep()` quietly.
        Backend::Mysql => "select sleep(0.7);\n",
        Backend::Sqlserver => {
            return crate::support::not_on_sqlserver(
                "a_files_statement_timeout_holds_for_that_file_only",
                "a batch's time-out is sqlserver.rs's a_batch_past_its_statement_timeout_is_stopped_and_nothing_of_its_unit_stays",
            );
        }
    };
    let server = fleet("").await;
    server.ws.write_migration(
        "tenants/901.sql",
        "-- strata:statement-timeout 300ms\nalter table {schema}.users add column quick varchar(5);\n",
    );
    server.ws.write_migration("tenants/902.sql", sleep);
    let result = server.create_version(json!({ "versionName": "a short time-out, then none" })).await;
    assert!(result.get("errors").is_none(), "{result}\n{}", server.log());
    let recorded = |file: &'static str| {
        let server = &server;
        async move {
            let sql = format!("select count(*) from svc_migrations where filename = '{file}'");
            server.ws.rows("svc", &sql).await
        }
    };
    assert_eq!(recorded("tenants/902.sql").await, [[json!(6)]]);

    // A file of the configured time-outs first, so the timed-out file is
    // not the first of its unit (a unit's first file always sets them).
    server.ws.write_migration("tenants/903.sql", "alter table {schema}.users add column later varchar(5);\n");
    server.ws.write_migration("tenants/904.sql", &format!("-- strata:statement-timeout 300ms\n{sleep}"));
    let result = server.create_version(json!({ "versionName": "past its own time-out" })).await;
    let message = result["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("migration tenants/904.sql ran longer than its statement time-out in schema t"),
        "{result}"
    );
    assert_eq!(result["errors"][0]["extensions"]["cause"], "STATEMENT_TIMEOUT", "{result}");
    assert_eq!(recorded("tenants/904.sql").await, [[json!(0)]]);
    assert!(server.ws.migrations_recorded_twice().await.is_empty());
}
