//! The peers themselves: one dbmate directory applied by dbmate (from npm)
//! and by Strata, into two databases of the same server, gives the same
//! schema — `pg_dump --schema-only` on PostgreSQL, `SHOW CREATE TABLE` on
//! MariaDB — and so does each one's revert (`dbmate rollback`, `strata
//! revert --steps 1`), twice.

use std::path::Path;
use std::process::Command;

use sqlx::{Connection, MySqlConnection, PgConnection};

use crate::formats::empty_workspace;
use crate::support::{Backend, backend, mysql_turn, server_url, strata};

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

fn dbmate(url: &str, dir: &Path, args: &[&str]) {
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
