//! The peers themselves: one dbmate directory applied by dbmate (from npm)
//! and by Strata, into two databases of the same server, gives the same
//! schema — `pg_dump --schema-only` on PostgreSQL, `SHOW CREATE TABLE` on
//! MariaDB — and so does each one's revert (`dbmate rollback`, `strata
//! revert --steps 1`), twice.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use sqlx::{Connection, MySqlConnection, PgConnection};

use crate::formats::{empty_workspace, recorded, sorted};
use crate::support::{
    Backend, backend, code, create_schema_sql, json_of, mysql_turn, server_url, stderr, stdout, strata,
};

/// The dbmate files: tables, an index built outside a transaction, a type,
/// a function whose body holds semicolons, a view — each with its down
/// section.
fn postgres_files() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "20240101000000_users.sql",
            "-- migrate:up\ncreate type mood as enum ('happy', 'sad');\ncreate table users (\n  id bigserial primary \
             key,\n  email text not null unique,\n  mood mood\n);\n\n-- migrate:down\ndrop table users;\ndrop type \
             mood;\n",
        ),
        (
            "20240102000000_orders.sql",
            "-- migrate:up\ncreate table orders (id bigserial primary key, user_id bigint not null references users \
             (id), total numeric(12, 2) not null default 0);\ncreate view big_orders as select * from orders where \
             total > 100;\n\n-- migrate:down\ndrop view big_orders;\ndrop table orders;\n",
        ),
        (
            "20240103000000_orders_index.sql",
            "-- migrate:up transaction:false\ncreate index concurrently orders_user on orders (user_id);\n\n-- \
             migrate:down transaction:false\ndrop index concurrently orders_user;\n",
        ),
        (
            "20240104000000_function.sql",
            "-- migrate:up\ncreate function order_count(u bigint) returns bigint language sql as $$\n  select \
             count(*) from orders where user_id = u;\n$$;\n\n-- migrate:down\ndrop function order_count(bigint);\n",
        ),
    ]
}

fn mysql_files() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "20240101000000_users.sql",
            "-- migrate:up\ncreate table users (\n  id bigint auto_increment primary key,\n  email varchar(200) not \
             null unique,\n  mood enum('happy', 'sad')\n);\n\n-- migrate:down\ndrop table users;\n",
        ),
        (
            "20240102000000_orders.sql",
            "-- migrate:up\ncreate table orders (id bigint auto_increment primary key, user_id bigint not null, total \
             decimal(12, 2) not null default 0, constraint orders_user foreign key (user_id) references users \
             (id));\n\n-- migrate:down\ndrop table orders;\n",
        ),
        (
            "20240103000000_orders_index.sql",
            "-- migrate:up\ncreate index orders_total on orders (total);\n\n-- migrate:down\ndrop index orders_total \
             on orders;\n",
        ),
    ]
}

fn run(command: &mut Command) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs the dbmate binary (`STRATA_TEST_DBMATE`) on `url` with `dir`'s files.
pub(crate) fn dbmate(url: &str, dir: &Path, args: &[&str]) {
    let binary = server_url("STRATA_TEST_DBMATE");
    run(Command::new(binary).arg("--url").arg(url).arg("--migrations-dir").arg(dir).arg("--no-dump-schema").args(args));
}

/// `public` as `pg_dump --schema-only` writes it, dbmate's own table, the
/// dump's header comments and settings left out.
fn pg_schema(url: &str) -> String {
    let pg_dump = format!("{}/pg_dump", server_url("STRATA_TEST_PG_BIN"));
    let dump = run(Command::new(pg_dump).args([
        "--schema-only",
        "--no-owner",
        "--schema=public",
        "--exclude-table=public.schema_migrations",
        url,
    ]));
    dump.lines()
        // `\restrict` lines carry a random key per dump.
        .filter(|line| !line.starts_with("--") && !line.starts_with("SET ") && !line.contains("set_config"))
        .filter(|line| !line.starts_with("\\restrict") && !line.starts_with("\\unrestrict"))
        .filter(|line| !line.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn mysql_schema(url: &str) -> Vec<(String, String)> {
    let mut conn = MySqlConnection::connect(url).await.unwrap();
    let tables: Vec<String> =
        sqlx::query_scalar("select cast(table_name as char) from information_schema.tables where table_schema = database() and table_name <> 'schema_migrations' order by 1")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let mut out = Vec::new();
    for table in tables {
        let row: (String, String) = sqlx::query_as(sqlx::AssertSqlSafe(format!("show create table `{table}`")))
            .fetch_one(&mut conn)
            .await
            .unwrap();
        out.push(row);
    }
    out
}

#[tokio::test]
async fn a_dbmate_directory_gives_the_schema_dbmate_gives_applied_and_reverted() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_dbmate_directory_gives_the_schema_dbmate_gives_applied_and_reverted",
            "dbmate and sqlx-cli do not run on SQL Server (dbmate#65; sqlx-cli left it in 0.7)",
        );
    }
    let _turn = mysql_turn();
    if backend() == Backend::Sqlite {
        return;
    }
    // The MySQL server's `svc` database is every test's: emptied in this
    // test's turn.
    let ws = empty_workspace().await;
    let files = if backend() == Backend::Postgres { postgres_files() } else { mysql_files() };
    for (name, text) in &files {
        ws.write_migration(&format!("ref/{name}"), text);
    }
    let dir = ws.migrations().join("ref");
    // Two databases of the test server: one for each tool.
    let (admin, base) = match backend() {
        Backend::Postgres => server_url("STRATA_TEST_PG_URL"),
        _ => server_url("STRATA_TEST_MYSQL_URL"),
    }
    .rsplit_once('/')
    .map(|(base, _)| {
        (format!("{base}/{}", if backend() == Backend::Postgres { "postgres" } else { "mysql" }), base.to_string())
    })
    .unwrap();
    let (ours, theirs) = (format!("strata_peer_{}", ws.port), format!("dbmate_peer_{}", ws.port));
    for db in [&ours, &theirs] {
        let statements = [format!("drop database if exists {db}"), format!("create database {db}")];
        match backend() {
            Backend::Postgres => {
                let mut conn = PgConnection::connect(&admin).await.unwrap();
                for s in statements {
                    sqlx::raw_sql(sqlx::AssertSqlSafe(s)).execute(&mut conn).await.unwrap();
                }
            }
            _ => {
                let mut conn = MySqlConnection::connect(&admin).await.unwrap();
                for s in statements {
                    sqlx::raw_sql(sqlx::AssertSqlSafe(s)).execute(&mut conn).await.unwrap();
                }
            }
        }
    }
    let (our_url, their_url) = (format!("{base}/{ours}"), format!("{base}/{theirs}"));
    let (driver, dbmate_url) = match backend() {
        Backend::Postgres => ("postgres", format!("{their_url}?sslmode=disable")),
        _ => ("mysql", their_url.clone()),
    };
    let config = ws.write_config(&format!(
        "baseLocation: {}\ndriver: {driver}\ndataSource: {our_url}\nsingleMigrations: [ref]\n",
        ws.migrations().display()
    ));
    let same = || async {
        match backend() {
            Backend::Postgres => {
                let (a, b) = (pg_schema(&our_url), pg_schema(&their_url));
                assert_eq!(a, b);
                a
            }
            _ => {
                let (a, b) = (mysql_schema(&our_url).await, mysql_schema(&their_url).await);
                assert_eq!(a, b);
                a.into_iter().map(|(_, create)| create).collect::<Vec<_>>().join(";\n")
            }
        }
    };

    dbmate(&dbmate_url, &dir, &["up"]);
    let apply = strata(&config, &["apply", "--version", "up"]).await;
    assert_eq!(apply.status.code(), Some(0), "{}", String::from_utf8_lossy(&apply.stderr));
    let applied = same().await;
    assert!(applied.contains("orders"), "{applied}");
    let mut before = applied.clone();
    for round in 0..2 {
        dbmate(&dbmate_url, &dir, &["rollback"]);
        let revert = strata(&config, &["revert", "--version", &format!("down {round}"), "--steps", "1"]).await;
        assert_eq!(revert.status.code(), Some(0), "{}", String::from_utf8_lossy(&revert.stderr));
        let reverted = same().await;
        assert_ne!(reverted, before, "round {round}: the revert changed the schema");
        before = reverted;
    }
    // And forward again: the same as dbmate's `up`.
    dbmate(&dbmate_url, &dir, &["up"]);
    let again = strata(&config, &["apply", "--version", "again"]).await;
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(same().await, applied);
}

/// A fleet dbmate migrated tenant by tenant (`search_path` or database per
/// tenant), left at different versions as fleets are: t1 at the newest,
/// t2 one behind, t3 rolled back to nothing (its history table empty), t4
/// never reached. A Sync adopts each tenant's own history — exactly what
/// dbmate applied there — never the files a lagging tenant has not run
/// (before: all three recorded in every tenant, so t2's and t3's missing
/// tables would never have been made). A history left dirty (golang-
/// migrate's `dirty` row) refuses the whole Sync, nothing recorded.
#[tokio::test]
async fn a_fleet_dbmate_left_at_mixed_versions_is_adopted_tenant_by_tenant_as_its_history_says() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_fleet_dbmate_left_at_mixed_versions_is_adopted_tenant_by_tenant_as_its_history_says",
            "dbmate and sqlx-cli do not run on SQL Server (dbmate#65; sqlx-cli left it in 0.7)",
        );
    }
    let _turn = mysql_turn();
    if backend() == Backend::Sqlite {
        return;
    }
    let ws = empty_workspace().await;
    let config = ws.write_config(&ws.config(""));
    let tenants = ["t1", "t2", "t3", "t4"];
    for tenant in tenants {
        let added = strata(&config, &["apply", "--version", &format!("add {tenant}"), "--tenant", tenant]).await;
        assert_eq!(code(&added), 0, "{}", stderr(&added));
    }
    let files = [
        ("20240101000000_users.sql", "create table users (id int)", "drop table users"),
        ("20240102000000_orders.sql", "create table orders (id int)", "drop table orders"),
        ("20240103000000_notes.sql", "create table notes (id int)", "drop table notes"),
    ];
    for (name, up, down) in files {
        ws.write_migration(&format!("tenants/{name}"), &format!("-- migrate:up\n{up};\n\n-- migrate:down\n{down};\n"));
    }
    let dir = ws.migrations().join("tenants");
    let url = |tenant: &str| match backend() {
        Backend::Postgres => format!("{}?sslmode=disable&search_path={tenant}", ws.pg_url()),
        _ => format!("{}/{tenant}", server_url("STRATA_TEST_MYSQL_URL").rsplit_once('/').unwrap().0),
    };
    for (tenant, rollbacks) in [("t1", 0), ("t2", 1), ("t3", 3)] {
        dbmate(&url(tenant), &dir, &["up"]);
        for _ in 0..rollbacks {
            dbmate(&url(tenant), &dir, &["rollback"]);
        }
    }
    let plan = strata(&config, &["plan", "--sync"]).await;
    assert_eq!(code(&plan), 0, "{}", stderr(&plan));
    assert!(stdout(&plan).contains("dbmate (schema_migrations) in t1, t2, t3\n"), "{}", stdout(&plan));
    assert!(stdout(&plan).contains("no history in t4: nothing recorded there"), "{}", stdout(&plan));
    let plan = json_of(&strata(&config, &["plan", "--sync", "--json"]).await);
    assert_eq!(plan["histories"], json!([{ "history": "dbmate (schema_migrations)", "schemas": ["t1", "t2", "t3"] }]));
    assert_eq!(plan["withoutHistory"], json!(["t4"]));
    assert_eq!(plan["recordOnly"], json!(5));

    let adopt = strata(&config, &["apply", "--sync", "--version", "adopt"]).await;
    assert_eq!(code(&adopt), 0, "{}{}", stdout(&adopt), stderr(&adopt));
    let all: Vec<String> = files.iter().map(|(name, _, _)| format!("tenants/{name}")).collect();
    assert_eq!(recorded(&ws, "t1").await, all);
    assert_eq!(recorded(&ws, "t2").await, all[..2]);
    assert!(recorded(&ws, "t3").await.is_empty());
    assert!(recorded(&ws, "t4").await.is_empty());
    // What the Sync left is what dbmate has not run: the files still
    // missing from t2, t3 and t4, pending there.
    assert_eq!(sorted(ws.tables("t2").await), ["orders", "schema_migrations", "users"]);

    // t4 gets golang-migrate's table, left dirty at the second version.
    let dirty = "create table t4.schema_migrations (version bigint not null primary key, dirty boolean not null); \
                 insert into t4.schema_migrations values (20240102000000, true)";
    ws.execute("t4", dirty).await;
    let refused = strata(&config, &["apply", "--sync", "--version", "adopt again"]).await;
    assert_eq!(code(&refused), 1, "{}{}", stdout(&refused), stderr(&refused));
    assert!(
        stderr(&refused).contains(
            "t4: golang-migrate's history (schema_migrations) says version 20240102000000 failed or ran in part"
        ),
        "{}",
        stderr(&refused)
    );
    assert_eq!(recorded(&ws, "t2").await, all[..2]);
    assert!(recorded(&ws, "t4").await.is_empty());
}

/// The same with sqlx's own migrator (the code `sqlx migrate run` runs)
/// writing `_sqlx_migrations` in each tenant: t1 ran three files, t2 the
/// first two (its directory then), t3 none (the table made, empty), t4
/// never reached. The Sync records exactly that; the next Apply's plan is
/// what each lagging tenant has not run, and it runs there.
#[tokio::test]
async fn a_fleet_sqlx_migrated_at_mixed_versions_is_adopted_as_each_tenants_history_says() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_fleet_sqlx_migrated_at_mixed_versions_is_adopted_as_each_tenants_history_says",
            "dbmate and sqlx-cli do not run on SQL Server (dbmate#65; sqlx-cli left it in 0.7)",
        );
    }
    let _turn = mysql_turn();
    if backend() == Backend::Sqlite {
        return;
    }
    let ws = empty_workspace().await;
    let config = ws.write_config(&ws.config("migrationFormats: {tenants: sqlx}\n"));
    for tenant in ["t1", "t2", "t3", "t4"] {
        let added = strata(&config, &["apply", "--version", &format!("add {tenant}"), "--tenant", tenant]).await;
        assert_eq!(code(&added), 0, "{}", stderr(&added));
    }
    let files = [
        ("1_users.sql", "create table users (id int);\n"),
        ("2_orders.sql", "create table orders (id int);\n"),
        ("3_notes.sql", "create table notes (id int);\n"),
    ];
    for (name, text) in files {
        ws.write_migration(&format!("tenants/{name}"), text);
    }
    for (tenant, count) in [("t1", 3), ("t2", 2), ("t3", 0)] {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in &files[..count] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let migrator = sqlx::migrate::Migrator::new(dir.path()).await.unwrap();
        match backend() {
            Backend::Postgres => {
                let mut conn = PgConnection::connect(&ws.pg_url()).await.unwrap();
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("set search_path to {tenant}")))
                    .execute(&mut conn)
                    .await
                    .unwrap();
                migrator.run(&mut conn).await.unwrap();
            }
            _ => {
                let base = server_url("STRATA_TEST_MYSQL_URL");
                let url = format!("{}/{tenant}", base.rsplit_once('/').unwrap().0);
                migrator.run(&mut MySqlConnection::connect(&url).await.unwrap()).await.unwrap();
            }
        }
    }
    let adopt = strata(&config, &["apply", "--sync", "--version", "adopt"]).await;
    assert_eq!(code(&adopt), 0, "{}{}", stdout(&adopt), stderr(&adopt));
    let all: Vec<String> = files.iter().map(|(name, _)| format!("tenants/{name}")).collect();
    assert_eq!(recorded(&ws, "t1").await, all);
    assert_eq!(recorded(&ws, "t2").await, all[..2]);
    assert!(recorded(&ws, "t3").await.is_empty());
    assert!(recorded(&ws, "t4").await.is_empty());
    // What each lagging tenant has not run is pending there, and nothing
    // else: the next Apply's plan.
    let plan = strata(&config, &["plan"]).await;
    assert_eq!(code(&plan), 0, "{}", stderr(&plan));
    let plan = stdout(&plan);
    assert!(plan.contains("\ntenant t2:\n  tenants/3_notes.sql\n"), "{plan}");
    assert!(
        plan.contains("\ntenants t3, t4:\n  tenants/1_users.sql\n  tenants/2_orders.sql\n  tenants/3_notes.sql\n"),
        "{plan}"
    );
    assert!(!plan.contains("tenant t1"), "{plan}");

    // And the next Apply runs them as sqlx ran them: in the tenant's own
    // schema (PostgreSQL's `search_path`) or database (MariaDB's), their
    // plain names never landing in the service's (before: t3's `users`
    // made where the connection pointed, recorded as t3's, t4's failing).
    let apply = strata(&config, &["apply", "--version", "catch up"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    for tenant in ["t1", "t2", "t3", "t4"] {
        assert_eq!(recorded(&ws, tenant).await, all, "{tenant}");
        let tables: Vec<String> =
            sorted(ws.tables(tenant).await).into_iter().filter(|t| t != "_sqlx_migrations").collect();
        assert_eq!(tables, ["notes", "orders", "users"], "{tenant}");
    }
    let outside = if backend() == Backend::Postgres { "public" } else { "mysql" };
    assert!(!ws.tables(outside).await.iter().any(|t| ["notes", "orders", "users"].contains(&t.as_str())));
}

/// A Sync records nothing a tool did not run, wherever it is asked: over a
/// wave of tenants without histories while the fleet has some, in a single
/// schema that does not exist; `plan --sync --to FILE` previews what
/// `apply --sync --to FILE` records; and an Apply refuses a renamed file
/// (dbmate knows a file by its version: renaming it runs nothing again)
/// rather than run it a second time.
#[tokio::test]
async fn a_sync_records_only_what_a_tool_ran_and_a_renamed_file_does_not_run_twice() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_sync_records_only_what_a_tool_ran_and_a_renamed_file_does_not_run_twice",
            "dbmate and sqlx-cli do not run on SQL Server (dbmate#65; sqlx-cli left it in 0.7)",
        );
    }
    let _turn = mysql_turn();
    if backend() == Backend::Sqlite {
        return;
    }
    let ws = empty_workspace().await;
    let config = ws.write_config(&ws.config(""));
    for tenant in ["t1", "t2", "t3"] {
        let added = strata(&config, &["apply", "--version", &format!("add {tenant}"), "--tenant", tenant]).await;
        assert_eq!(code(&added), 0, "{}", stderr(&added));
    }
    ws.write_migration("ref/001_ref.sql", &format!("{}create table {{schema}}.r1 (id int);\n", create_schema_sql()));
    let files = [("20240101000000_users.sql", "users"), ("20240102000000_seed.sql", "seed")];
    for (name, table) in files {
        let text = format!("-- migrate:up\ncreate table {table} (id int);\n\n-- migrate:down\ndrop table {table};\n");
        ws.write_migration(&format!("tenants/{name}"), &text);
    }
    // No history anywhere yet: `--to` cuts the preview as it cuts the Sync.
    let whole = json_of(&strata(&config, &["plan", "--sync", "--json"]).await);
    let through =
        json_of(&strata(&config, &["plan", "--sync", "--to", "tenants/20240101000000_users.sql", "--json"]).await);
    assert_eq!((whole["recordOnly"].as_i64(), through["recordOnly"].as_i64()), (Some(7), Some(4)), "{through}");
    let revert_only = strata(&config, &["plan", "--steps", "1"]).await;
    assert_eq!(code(&revert_only), 2, "{}", stderr(&revert_only));

    // dbmate ran the first file in t1 only; t2 and t3 hold no history.
    let history = "create table t1.schema_migrations (version varchar(128) primary key); \
                   insert into t1.schema_migrations values ('20240101000000'); create table t1.users (id int)";
    ws.execute("t1", history).await;
    // Over a wave of t3 alone, the fleet's histories still decide.
    let wave = strata(&config, &["apply", "--sync", "--version", "wave", "--tenants", "t3"]).await;
    assert_eq!(code(&wave), 0, "{}{}", stdout(&wave), stderr(&wave));
    assert!(recorded(&ws, "t3").await.is_empty(), "{}", stdout(&wave));
    let adopt = strata(&config, &["apply", "--sync", "--version", "adopt"]).await;
    assert_eq!(code(&adopt), 0, "{}{}", stdout(&adopt), stderr(&adopt));
    assert_eq!(recorded(&ws, "t1").await, ["tenants/20240101000000_users.sql"]);
    assert!(recorded(&ws, "t2").await.is_empty());
    // `ref` was never created: nothing of it ran, nothing is recorded.
    assert!(recorded(&ws, "ref").await.is_empty());

    let run = strata(&config, &["apply", "--version", "run"]).await;
    assert_eq!(code(&run), 0, "{}{}", stdout(&run), stderr(&run));
    assert_eq!(sorted(ws.tables("t2").await), ["seed", "users"]);
    assert_eq!(sorted(ws.tables("ref").await), ["r1"]);

    // Renamed: refused, nothing runs a second time.
    let old = ws.migrations().join("tenants/20240102000000_seed.sql");
    std::fs::rename(&old, ws.migrations().join("tenants/20240102000000_seed_rows.sql")).unwrap();
    let again = strata(&config, &["apply", "--version", "renamed"]).await;
    assert_eq!(code(&again), 1, "{}{}", stdout(&again), stderr(&again));
    assert!(
        stderr(&again)
            .contains("tenants/20240102000000_seed_rows.sql (was tenants/20240102000000_seed.sql, in 3 schema(s))"),
        "{}",
        stderr(&again)
    );
    assert_eq!(recorded(&ws, "t2").await, ["tenants/20240101000000_users.sql", "tenants/20240102000000_seed.sql"]);
}
