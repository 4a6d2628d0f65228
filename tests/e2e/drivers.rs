//! Cases that stress what differs between drivers: several service
//! processes on one database, a crash in the middle of a version, custom
//! tenant statements.

use std::time::Duration;

use serde_json::json;

use crate::support::{Backend, Server, applied, backend, pairs};

/// A server of the `basic` example (`extra` appended to its configuration),
/// its single schemas migrated, and tenants `t1`…`tN` created, each as a
/// version of its own.
async fn tenants_on(extra: &str, n: usize) -> (Server, Vec<String>) {
    let server = Server::start("basic", extra).await;
    server.create_version(json!({ "versionName": "base" })).await;
    let names: Vec<String> = (1..=n).map(|i| format!("t{i}")).collect();
    for name in &names {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    (server, names)
}

#[tokio::test]
async fn eight_concurrent_versions_on_two_processes_apply_everything_exactly_once() {
    let server = Server::start("basic", "").await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "t" })).await;
    let twin = server.twin().await;
    let calls = (0..8).map(|i| {
        let target = if i % 2 == 0 { &server } else { &twin };
        target.create_version(json!({ "versionName": format!("v{i}") }))
    });
    let results = futures::future::join_all(calls).await;
    for result in &results {
        assert!(result.get("errors").is_none(), "{result}\n{}\n{}", server.log(), twin.log());
    }
    let twice = server.ws.migrations_recorded_twice().await;
    assert!(twice.is_empty(), "applied twice: {twice:?}");
    let migrations = server.ws.rows("svc", "select count(*) from svc_migrations where migration_type in (1, 2)").await;
    assert_eq!(migrations, [[json!(4)]], "ref/001, config/002, tenants/001 and tenants/003 in abc");
    assert_eq!(server.ws.count("ref", "countries").await, 2);
    assert_eq!(server.ws.rows("config", "select value from settings where name = 'runs'").await, [[json!("8")]]);
    assert_eq!(server.ws.count("svc", "svc_versions").await, 9);
    assert_eq!(server.ws.count("abc", "users").await, 1 + 8, "the tenant script ran once per version");
}

/// A statement that keeps the database busy for a second or two.
fn long_statement() -> &'static str {
    match backend() {
        Backend::Sqlite => {
            "with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000000) select count(*) from c;\n"
        }
        Backend::Postgres => "select pg_sleep(2);\n",
        Backend::Mysql => "do sleep(2);\n",
        Backend::Sqlserver => "declare @busy int = 0;\nwhile @busy < 1600000 set @busy = @busy + 1;\n",
    }
}

#[tokio::test]
async fn kill_9_in_the_middle_of_a_version_leaves_a_consistent_database() {
    let mut server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    server.ws.write_migration("ref/100.sql", "create table {schema}.before_crash (id integer);\n");
    server.ws.write_migration("ref/101.sql", long_statement());
    server.ws.write_migration("ref/102.sql", "create table {schema}.after_crash (id integer);\n");

    let client = server.client.clone();
    let url = server.url("/v2/service");
    let request = tokio::spawn(async move {
        let body = json!({ "query": "mutation { createVersion(input: {versionName: \"crash\"}) { version { id } } }" });
        client.post(url).json(&body).send().await
    });
    server.wait_for_mutations_started(2).await;
    if backend() == Backend::Mysql {
        // Recorded right after it ran: wait until the file before the long one is.
        for _ in 0..100 {
            let done =
                server.ws.rows("svc", "select count(*) from svc_migrations where filename = 'ref/100.sql'").await;
            if done == [[json!(1)]] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // Well inside the long statement (it runs about two seconds).
    tokio::time::sleep(Duration::from_millis(400)).await;
    server.kill_hard().await;
    assert!(request.await.unwrap().is_err(), "the request died with the process");
    server.restart().await;

    let versions = server.ws.rows("svc", "select name from svc_versions order by id").await;
    if backend() == Backend::Mysql {
        // Recorded = applied: the file that ran before the crash is both.
        assert_eq!(versions, [[json!("v1")], [json!("crash")]]);
        let recorded = server.ws.rows("svc", "select filename from svc_migrations where version_id = 2").await;
        assert_eq!(recorded, [[json!("ref/100.sql")]]);
        assert!(server.ws.tables("ref").await.contains(&"before_crash".to_string()));
    } else {
        // Nothing of the interrupted version persists.
        assert_eq!(versions, [[json!("v1")]]);
        assert!(!server.ws.tables("ref").await.contains(&"before_crash".to_string()));
    }
    assert!(!server.ws.tables("ref").await.contains(&"after_crash".to_string()));

    server.ws.write_migration("ref/101.sql", "select 1;\n");
    let rerun = server.create_version(json!({ "versionName": "after restart" })).await;
    let files: Vec<String> = applied(&rerun["data"]["createVersion"]).into_iter().map(|(file, _)| file).collect();
    let expected: &[&str] = if backend() == Backend::Mysql {
        &["ref/101.sql", "ref/102.sql", "scripts/config/runs.sql"]
    } else {
        &["ref/100.sql", "ref/101.sql", "ref/102.sql", "scripts/config/runs.sql"]
    };
    assert_eq!(files, expected, "{rerun}");
    let tables = server.ws.tables("ref").await;
    assert!(tables.contains(&"before_crash".to_string()) && tables.contains(&"after_crash".to_string()));
}

#[tokio::test]
async fn custom_tenant_statements_replace_the_default_table() {
    let parameter = match backend() {
        Backend::Mysql => "?",
        Backend::Sqlserver => "@P1",
        _ => "$1",
    };
    let extra = format!(
        "tenantSelectSQL: select name from svc.customers where active = 1 order by name\n\
         tenantInsertSQL: insert into svc.customers (name, active) values ({parameter}, 1)\n"
    );
    let server = Server::start("basic", &extra).await;
    assert!(!server.ws.tables("svc").await.contains(&"svc_tenants".to_string()), "no default table when overridden");
    let table = match backend() {
        Backend::Sqlite => "create table customers (name text primary key, active integer not null)",
        _ => "create table svc.customers (name varchar(64) primary key, active integer not null)",
    };
    server.ws.execute("svc", table).await;
    let qualifier = if backend() == Backend::Sqlite { "" } else { "svc." };
    server.ws.execute("svc", &format!("insert into {qualifier}customers (name, active) values ('gone', 0)")).await;

    let created = server.create_tenant(json!({ "tenantName": "acme", "versionName": "add acme" })).await;
    assert_eq!(created["data"]["createTenant"]["summary"]["tenantMigrationsTotal"], 2, "{created}");
    assert_eq!(
        server.ws.rows("svc", &format!("select name, active from {qualifier}customers order by name")).await,
        [[json!("acme"), json!(1)], [json!("gone"), json!(0)]]
    );
    assert_eq!(server.data("{ tenants { name } }", json!({})).await, json!({ "tenants": [{ "name": "acme" }] }));
    let version = server.create_version(json!({ "versionName": "v1" })).await;
    assert!(
        applied(&version["data"]["createVersion"]).contains(&pairs(&[("scripts/tenants/touch.sql", "acme")])[0]),
        "{version}"
    );
    assert_eq!(server.ws.count("acme", "users").await, 2);
}

#[tokio::test]
async fn data_source_forms_of_other_tools_work() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "data_source_forms_of_other_tools_work",
            "the forms tried are PostgreSQL's and SQLite's",
        );
    }
    let ws = crate::support::Workspace::new("basic");
    let url = ws.config("").lines().find_map(|l| l.strip_prefix("dataSource: ").map(str::to_string)).unwrap();
    // The same database, written the way migrator's own examples write it.
    let other_form = match backend() {
        Backend::Sqlite => url.trim_start_matches("sqlite://").trim_end_matches("?mode=rwc").to_string(),
        Backend::Postgres => {
            let rest = url.trim_start_matches("postgres://");
            let (user, rest) = rest.split_once('@').unwrap();
            let (host_port, database) = rest.split_once('/').unwrap();
            let (host, port) = host_port.split_once(':').unwrap();
            format!("host={host} port={port} user={user} dbname={database} sslmode=disable")
        }
        Backend::Mysql => {
            let rest = url.trim_start_matches("mysql://");
            let (user, rest) = rest.split_once('@').unwrap();
            let (host_port, database) = rest.split_once('/').unwrap();
            format!("{user}:@tcp({host_port})/{database}?parseTime=true&multiStatements=true")
        }
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    let yaml = ws.config("").replace(&format!("dataSource: {url}"), &format!("dataSource: \"{other_form}\""));
    assert!(yaml.contains(&other_form));
    let server = Server::start_in(ws, &yaml, "").await;
    let result = server.create_version(json!({ "versionName": "v1" })).await;
    assert_eq!(result["data"]["createVersion"]["summary"]["singleMigrations"], 2, "{result}");
    assert_eq!(server.ws.count("ref", "countries").await, 2);
}

#[tokio::test]
async fn the_example_migrations_apply_cleanly() {
    let ws = crate::support::Workspace::new("basic");
    let name = match backend() {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
        Backend::Mysql => "mysql",
        Backend::Sqlserver => "sqlserver",
    };
    let examples = crate::support::data_dir().join("../../examples").join(name).join("migrations");
    let examples = examples.canonicalize().unwrap();
    let yaml = ws.config("").replace(
        &format!("baseLocation: {}", ws.migrations().display()),
        &format!("baseLocation: {}", examples.display()),
    );
    let server = Server::start_in(ws, &yaml, "").await;
    let first = server.create_version(json!({ "versionName": "first" })).await;
    assert_eq!(first["data"]["createVersion"]["summary"]["migrationsGrandTotal"], 2, "{first}");
    let tenant = server.create_tenant(json!({ "tenantName": "acme", "versionName": "acme" })).await;
    assert_eq!(tenant["data"]["createTenant"]["summary"]["tenantMigrationsTotal"], 2, "{tenant}");
    let again = server.create_version(json!({ "versionName": "again" })).await;
    assert_eq!(again["data"]["createVersion"]["summary"]["scriptsGrandTotal"], 2, "{again}");
    assert_eq!(server.ws.count("ref", "countries").await, 3);
}

#[tokio::test]
async fn sigterm_lets_a_running_version_finish_then_exits_0() {
    // The grace is far above the statement's time: SQLite's counting is
    // processor time, and the project's CI (every lane and the suite's own
    // tests beside it) once took longer than the default 30 s over it.
    let mut server = Server::start("basic", "shutdownGraceSeconds: 600\n").await;
    // Long enough to be running at the signal.
    let statement = match backend() {
        Backend::Sqlite => long_statement().replace("20000000", "3000000"),
        _ => long_statement().to_string(),
    };
    server.ws.write_migration("ref/100.sql", &statement);
    let client = server.client.clone();
    let url = server.url("/v2/service");
    let request = tokio::spawn(async move {
        let body = json!({ "query": "mutation { createVersion(input: {versionName: \"v1\"}) { version { id } } }" });
        client.post(url).json(&body).send().await.unwrap().json::<serde_json::Value>().await.unwrap()
    });
    server.wait_for_mutations_started(1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = server.terminate().await;
    let answered = request.await.unwrap();
    assert_eq!(answered["data"]["createVersion"]["version"]["id"], 1, "{answered}");
    assert!(status.success(), "exit status {status}: {}", server.log());
    assert!(server.log().contains("strata stopped"), "{}", server.log());
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    assert!(server.client.get(server.url("/health")).send().await.is_err(), "no longer listening");
}

#[tokio::test]
async fn past_the_shutdown_grace_the_process_exits_and_records_nothing_of_the_unfinished_version() {
    let mut server = Server::start("basic", "shutdownGraceSeconds: 1\n").await;
    let statement = match backend() {
        Backend::Sqlite => long_statement().replace("20000000", "2000000000"),
        Backend::Postgres => "select pg_sleep(120);\n".to_string(),
        Backend::Mysql => "do sleep(120);\n".to_string(),
        Backend::Sqlserver => "declare @busy int = 0;\nwhile @busy < 100000000 set @busy = @busy + 1;\n".to_string(),
    };
    server.ws.write_migration("ref/100.sql", &statement);
    let client = server.client.clone();
    let url = server.url("/v2/service");
    let request = tokio::spawn(async move {
        let body = json!({ "query": "mutation { createVersion(input: {versionName: \"v1\"}) { version { id } } }" });
        client.post(url).json(&body).send().await
    });
    server.wait_for_mutations_started(1).await;
    let status = server.terminate().await;
    assert!(request.await.unwrap().is_err(), "the request ends with the process, unanswered");
    assert!(status.success(), "exit status {status}: {}", server.log());
    let log = server.log();
    assert!(log.contains("requests still running 1 s after the stop signal (shutdownGraceSeconds)"), "{log}");
    assert!(log.contains("strata stopped"), "{log}");
    // What ran before the long file is recorded as it committed; the file
    // that did not finish is not.
    let recorded = server.ws.rows("svc", "select count(*) from svc_migrations where filename = 'ref/100.sql'").await;
    assert_eq!(recorded, [[json!(0)]], "the file that did not finish is not recorded");
}

#[tokio::test]
async fn a_tenant_whose_schema_exists_already_is_refused_and_leaves_nothing() {
    let create = match backend() {
        // An existing file is simply attached on SQLite: nothing to refuse there.
        Backend::Sqlite => return,
        Backend::Postgres => "create schema taken",
        Backend::Mysql => "create database taken",
        Backend::Sqlserver => "create schema taken",
    };
    let server = Server::start("basic", "").await;
    server.ws.execute("svc", create).await;
    let result = server.create_tenant(json!({ "tenantName": "taken", "versionName": "t" })).await;
    assert_eq!(result["errors"][0]["extensions"]["code"], "TENANT_INSERT_FAILED", "{result}");
    assert!(result["errors"][0]["message"].as_str().unwrap().starts_with("creating tenant taken failed: "));
    assert_eq!(server.ws.count("svc", "svc_versions").await, 0);
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 0);
}

/// SQLite: a file's `pragma`s end with its unit. A no-transaction tenant
/// file (first of its unit) turns foreign keys off — the first of SQLite's
/// steps to rebuild a table — and `legacy_alter_table` on. Tenants t4–t6
/// run it when created; t1–t3 in the next version, just before t4–t6's
/// units of a file that reads both through the pragmas' table functions:
/// t4–t6 see the service's settings (foreign keys on: `on delete cascade`
/// fires, no orphan row is left; the legacy `alter table … rename` off),
/// not those a file of another tenant's unit left on the connection.
#[tokio::test]
async fn a_files_pragmas_end_with_its_unit_on_sqlite() {
    if backend() != Backend::Sqlite {
        return;
    }
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "base" })).await;
    let create = |names: std::ops::RangeInclusive<u32>| {
        let server = &server;
        async move {
            for i in names {
                let name = format!("t{i}");
                let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
                assert!(created.get("errors").is_none(), "{created}");
            }
        }
    };
    create(1..=3).await;
    server.ws.write_migration(
        "tenants/004.sql",
        "-- strata:no-transaction\npragma foreign_keys = off;\npragma legacy_alter_table = on;\n\
         create table {schema}.local_thing (id int);\n",
    );
    create(4..=6).await;
    server.ws.write_migration(
        "tenants/005.sql",
        "create table {schema}.seen as select (select foreign_keys from pragma_foreign_keys) as fk, \
         (select legacy_alter_table from pragma_legacy_alter_table) as legacy;\n\
         create table {schema}.parent (id int primary key);\n\
         create table {schema}.child (parent int references parent (id) on delete cascade);\n\
         insert into {schema}.parent values (1);\ninsert into {schema}.child values (1);\n\
         delete from {schema}.parent;\n",
    );
    let version = server.create_version(json!({ "versionName": "pragmas" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    for name in ["t1", "t2", "t3", "t4", "t5", "t6"] {
        assert_eq!(server.ws.count(name, "local_thing").await, 0, "{name}");
    }
    for name in ["t4", "t5", "t6"] {
        let seen = server.ws.rows(name, "select fk, legacy from seen").await;
        assert_eq!(seen, vec![vec![json!(1), json!(0)]], "the session {name}'s file ran on");
        assert_eq!(server.ws.count(name, "child").await, 0, "{name}: the cascade did not fire");
    }
    // Each file recorded once per tenant, across the connections closed.
    let recorded = server
        .ws
        .rows(
            "svc",
            "select filename, count(*), count(distinct db_schema) from svc_migrations where filename in \
                      ('tenants/004.sql', 'tenants/005.sql') group by filename order by filename",
        )
        .await;
    assert_eq!(
        recorded,
        vec![vec![json!("tenants/004.sql"), json!(6), json!(6)], vec![json!("tenants/005.sql"), json!(6), json!(6)]]
    );
}

/// MySQL and MariaDB: a file written for the `mysql` client, with
/// `DELIMITER` lines around a routine (Flyway's MySQL migrations,
/// mysqldump's `DELIMITER ;;`), runs as the client runs it: the routine
/// whole, the command lines left out; a statement that fails under a
/// delimiter of its own is named by its line in the file.
#[tokio::test]
async fn a_file_with_delimiter_lines_runs_as_the_mysql_client_runs_it() {
    if backend() != Backend::Mysql {
        return;
    }
    let (server, _) = tenants_on("", 2).await;
    server.ws.write_migration(
        "tenants/004.sql",
        "create table {schema}.counted (n int);\n\
         DELIMITER $$\n\
         create procedure {schema}.add_two()\nbegin\n  insert into {schema}.counted values (1); -- one $$ in a comment\n\
         \x20 insert into {schema}.counted values (2);\nend$$\n\
         delimiter ;;\n\
         create function {schema}.twice(x int) returns int deterministic\nbegin\n  return x * 2;\nend ;;\n\
         DELIMITER ;\n\
         call {schema}.add_two();\ninsert into {schema}.counted select {schema}.twice(21);\n",
    );
    let version = server.create_version(json!({ "versionName": "routines" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    for name in ["t1", "t2"] {
        let rows = server.ws.rows(name, "select n from counted order by n").await;
        assert_eq!(rows, vec![vec![json!(1)], vec![json!(2)], vec![json!(42)]], "{name}");
    }
    server.ws.write_migration("tenants/005.sql", "DELIMITER //\nselect 1//\n\nselect * from no_such_table//\n");
    let failed = server.create_version(json!({ "versionName": "failing" })).await;
    let error = &failed["errors"][0];
    assert_eq!(error["extensions"]["file"], "tenants/005.sql", "{failed}");
    assert_eq!(error["extensions"]["line"], 4, "{failed}");
}

/// A temporary table a file creates ends with its unit: the same file on
/// 6 tenants, one connection after another (`tenantConcurrency: 1`),
/// creates `scratch` (and prepares `strata_seven`) each time — the next
/// tenant's unit does not find the last one's; then a file outside any
/// transaction creates `scratch` (PostgreSQL: its units drop the session's
/// temporary tables and prepared statements before they commit, its
/// sessions for such files before each file; MySQL, MariaDB and SQLite:
/// such a connection is closed).
#[tokio::test]
async fn a_files_temporary_table_ends_with_its_unit() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_files_temporary_table_ends_with_its_unit",
            "SQL Server's is sqlserver.rs's a_files_temporary_table_and_session_options_end_with_its_unit",
        );
    }
    let (server, names) = tenants_on("tenantConcurrency: 1\n", 6).await;
    // A prepared statement is the session's too (SQLite has none).
    let prepare = match backend() {
        Backend::Sqlite => "",
        Backend::Postgres => "prepare strata_seven as select 7;\n",
        Backend::Mysql => "prepare strata_seven from 'select 7';\n",
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    server.ws.write_migration(
        "tenants/004.sql",
        &format!(
            "{prepare}create temporary table scratch (n int);\ninsert into scratch values (7);\n\
             create table {{schema}}.copied as select n from scratch;\n"
        ),
    );
    let version = server.create_version(json!({ "versionName": "scratch" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    // Behind a pooler in transaction mode (tests/README.md's audit) each
    // statement of a file outside a transaction may reach another server
    // connection: a temporary table cannot outlive its statement there,
    // with Strata as with psql.
    if std::env::var_os("STRATA_TEST_PG_SERVICE_URL").is_some() {
        for name in &names {
            assert_eq!(server.ws.rows(name, "select n from copied").await, vec![vec![json!(7)]], "{name}");
        }
        return;
    }
    server.ws.write_migration(
        "tenants/005.sql",
        "-- strata:no-transaction\ncreate temporary table scratch (n int);\ninsert into scratch values (8);\n\
         create table {schema}.copied_alone as select n from scratch;\n",
    );
    let version = server.create_version(json!({ "versionName": "scratch outside a transaction" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    for name in &names {
        assert_eq!(server.ws.rows(name, "select n from copied").await, vec![vec![json!(7)]], "{name}");
        assert_eq!(server.ws.rows(name, "select n from copied_alone").await, vec![vec![json!(8)]], "{name}");
    }
}

/// A migration file that changes its session changes it for its unit only:
/// the connection goes on to other tenants' units and the next version
/// (and, behind a pooler in transaction mode, to the application) with the
/// server's settings. PostgreSQL: after a version whose tenant files `set
/// search_path`, `application_name` and `role` on 8 tenants, no session of
/// the service carries the file's `application_name`, and the next
/// version's single-schema file with an unqualified name creates its table
/// where the server's search path says, in no tenant's schema, as the
/// service's own user (the unit ends with `reset all`, which leaves the
/// role, and `reset role`). MySQL and MariaDB: after files that `use` the tenant's
/// database and turn `foreign_key_checks` off, no session of the service
/// is left in a tenant's database (such a connection is closed).
#[tokio::test]
async fn a_files_session_settings_end_with_its_unit() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_files_session_settings_end_with_its_unit",
            "SQL Server's is sqlserver.rs's a_files_temporary_table_and_session_options_end_with_its_unit",
        );
    }
    let (file, leaked) = match backend() {
        Backend::Sqlite => return,
        Backend::Postgres => (
            "set search_path = {schema};\nset application_name = 'set_by_a_file';\ncreate table local_thing (id int);\n\
             set role strata_role_of_a_file;\n",
            "select count(*) from pg_stat_activity where application_name = 'set_by_a_file'",
        ),
        Backend::Mysql => (
            "use {schema};\nset foreign_key_checks = 0;\ncreate table local_thing (id int);\n",
            "select count(*) from information_schema.processlist where db regexp '^t[0-9]+$'",
        ),
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    let server = Server::start("basic", "tenantConcurrency: 4\n").await;
    if backend() == Backend::Postgres {
        // A role of the cluster, which every test's server shares: made once.
        let create = "do $$ begin create role strata_role_of_a_file superuser nologin; \
                      exception when duplicate_object then null; end $$";
        server.ws.execute("svc", create).await;
    }
    server.create_version(json!({ "versionName": "base" })).await;
    let names: Vec<String> = (1..=8).map(|i| format!("t{i}")).collect();
    for name in &names {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server.ws.write_migration("tenants/004.sql", file);
    let version = server.create_version(json!({ "versionName": "session" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    for name in &names {
        assert!(server.ws.tables(name).await.contains(&"local_thing".to_string()), "{name}");
    }
    let leaked = server.ws.rows("svc", leaked).await;
    assert_eq!(leaked[0][0], json!(0), "a session of the service kept what a file set");
    if backend() != Backend::Postgres {
        return;
    }
    server.ws.write_migration(
        "ref/002.sql",
        "create table global_thing as select (current_user = session_user)::int as own;\n",
    );
    let version = server.create_version(json!({ "versionName": "global" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    for name in &names {
        assert!(!server.ws.tables(name).await.contains(&"global_thing".to_string()), "in {name}");
    }
    let found = server.ws.rows("svc", "select count(*) from pg_tables where tablename = 'global_thing'").await;
    assert_eq!(found[0][0], json!(1));
    let own = server.ws.rows("svc", "select own from public.global_thing").await;
    assert_eq!(own, vec![vec![json!(1)]], "the file ran as the role another tenant's file set");
}

/// PostgreSQL: a `COPY … FROM STDIN` (a `pg_dump` data section, psql's way
/// of loading rows) is refused before anything runs, with its file and
/// line — outside a transaction too — where the version waited for the
/// rows for ever, its lease renewed.
#[tokio::test]
async fn a_copy_waiting_for_a_client_is_refused_before_anything_runs() {
    if backend() != Backend::Postgres {
        return;
    }
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "base" })).await;
    let created = server.create_tenant(json!({ "tenantName": "t1", "versionName": "t1" })).await;
    assert!(created.get("errors").is_none(), "{created}");
    let versions = server.ws.count("svc", "svc_versions").await;
    for (contents, line) in [
        ("create table {schema}.c (id int);\ncopy {schema}.c from stdin;\nselect 1;\n", 2),
        ("-- strata:no-transaction\ncreate table {schema}.c (id int);\nCOPY {schema}.c (id) FROM stdin;\n", 3),
    ] {
        server.ws.write_migration("tenants/004.sql", contents);
        let result =
            tokio::time::timeout(Duration::from_secs(20), server.create_version(json!({ "versionName": "copy" })))
                .await
                .expect("answered, not waiting for rows");
        let error = &result["errors"][0];
        assert_eq!(error["extensions"]["code"], "STATEMENT_REFUSED", "{result}");
        assert_eq!(
            (error["extensions"]["file"].as_str(), error["extensions"]["line"].as_i64()),
            (Some("tenants/004.sql"), Some(line))
        );
        let message = error["message"].as_str().unwrap();
        let head = format!("tenants/004.sql:{line}:1: COPY … FROM STDIN exchanges its rows with a client");
        assert!(message.starts_with(&head), "{message}");
        assert_eq!(server.ws.count("svc", "svc_versions").await, versions);
        assert!(!server.ws.tables("t1").await.contains(&"c".to_string()));
    }
}

/// A session lock a file takes (PostgreSQL's `pg_advisory_lock`, MySQL's
/// `GET_LOCK`, as tools that guard a migration with one do) and a
/// statement it prepares end with its unit — whether the unit commits,
/// fails and is rolled back (a rollback keeps both), or ran outside a
/// transaction. The service's pooled connections (and behind a pooler the
/// server connection the application gets next) hold neither: no session
/// of the service holds the lock after each version, and a later file
/// preparing the same name on the same connection (`tenantConcurrency:
/// 1`) runs (PostgreSQL refuses a name prepared twice). PostgreSQL gives
/// the session back; MySQL and MariaDB close such a connection.
#[tokio::test]
async fn a_files_session_lock_and_prepared_statement_end_with_its_unit_committed_or_not() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_files_session_lock_and_prepared_statement_end_with_its_unit_committed_or_not",
            "advisory locks and PREPARE have no T-SQL form here",
        );
    }
    type Text = fn(u32) -> String;
    let (lock, held, prepare): (Text, Text, fn(&str) -> String) = match backend() {
        Backend::Sqlite => return,
        Backend::Postgres => (
            |key| format!("select pg_advisory_lock({key});"),
            |key| format!("select count(*) from pg_locks where locktype = 'advisory' and objid = {key} and granted"),
            |name| format!("prepare {name} as select 1;"),
        ),
        Backend::Mysql => (
            |key| format!("do get_lock('strata_{key}', 0);"),
            |key| {
                format!("select count(*) from (select is_used_lock('strata_{key}') as used) l where used is not null")
            },
            |name| format!("prepare {name} from 'select 1';"),
        ),
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    let (server, names) = tenants_on("tenantConcurrency: 1\n", 3).await;
    // Committed: each tenant's unit takes the lock (it is its session's:
    // the three units share one connection) and prepares a statement.
    server.ws.write_migration(
        "tenants/004.sql",
        &format!("{}\n{}\ncreate table {{schema}}.locked (id int);\n", lock(424201), prepare("strata_held")),
    );
    let version = server.create_version(json!({ "versionName": "locked" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    assert_eq!(server.ws.rows("svc", &held(424201)).await[0][0], json!(0), "a committed unit's lock stayed");
    // Rolled back: the file fails after taking the lock and preparing.
    server.ws.write_migration(
        "tenants/005.sql",
        &format!("{}\n{}\ninsert into no_such_table values (1);\n", lock(424202), prepare("strata_failed")),
    );
    let version = server.create_version(json!({ "versionName": "fails" })).await;
    assert!(version.get("errors").is_some(), "{version}");
    assert_eq!(server.ws.rows("svc", &held(424202)).await[0][0], json!(0), "a rolled-back unit's lock stayed");
    // The same file, mended, prepares the same names again.
    server.ws.write_migration(
        "tenants/005.sql",
        &format!(
            "{}\n{}\ncreate table {{schema}}.mended (id int);\n",
            prepare("strata_held"),
            prepare("strata_failed")
        ),
    );
    let version = server.create_version(json!({ "versionName": "mended" })).await;
    assert!(version.get("errors").is_none(), "a statement prepared by an earlier unit was still there: {version}");
    // Outside a transaction.
    server.ws.write_migration(
        "tenants/006.sql",
        &format!("-- strata:no-transaction\n{}\ncreate table {{schema}}.alone (id int);\n", lock(424203)),
    );
    let version = server.create_version(json!({ "versionName": "alone" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    assert_eq!(server.ws.rows("svc", &held(424203)).await[0][0], json!(0), "a lone file's lock stayed");
    for name in &names {
        let tables = server.ws.tables(name).await;
        for table in ["locked", "mended", "alone"] {
            assert!(tables.contains(&table.to_string()), "{name}: {table}");
        }
    }
}

/// What a file opens, it closes (core's `statements::balance`): a file that
/// would roll back to an earlier file's savepoint, leave a transaction open
/// outside one, hide a `COMMIT` behind a backslash (PostgreSQL with
/// `standard_conforming_strings` off), begin an XA transaction (MySQL) or
/// set SQLite's journal mode is refused before anything runs, nothing
/// applied, nothing recorded. On MySQL a `CALL` or a user variable closes
/// its connection after its unit, as a `SET` does, so the next tenant finds
/// none of it; a file failing half-way there is reported partly committed.
#[tokio::test]
async fn a_file_leaves_the_next_nothing_of_its_transaction_or_session() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_file_leaves_the_next_nothing_of_its_transaction_or_session",
            "SQL Server's is sqlserver.rs's a_file_that_ends_its_units_transaction_unseen_is_named_and_nothing_is_recorded",
        );
    }
    let (server, names) = tenants_on("tenantConcurrency: 1\n", 3).await;
    let alone = "-- strata:no-transaction\n";
    let refused: Vec<(String, &str)> = match backend() {
        Backend::Postgres => vec![
            (
                "rollback to savepoint s;\ncreate table {schema}.b (x int);\n".into(),
                "names savepoint s, which this file did not set",
            ),
            (
                format!("{alone}begin;\ncreate table {{schema}}.b (x int);\n"),
                "BEGIN begins a transaction the file does not end",
            ),
            (
                "create table {schema}.b (x int);\nselect '\\''; commit; -- '\n".into(),
                "standard_conforming_strings off",
            ),
        ],
        Backend::Sqlite => vec![
            ("release s;\ncreate table {schema}.b (x int);\n".into(), "names savepoint s, which this file did not set"),
            (
                format!("{alone}begin;\ncreate table {{schema}}.b (x int);\n"),
                "BEGIN begins a transaction the file does not end",
            ),
            (format!("{alone}pragma {{schema}}.journal_mode = wal;\n"), "PRAGMA journal_mode would change how"),
        ],
        Backend::Mysql => vec![(
            "xa start 'x';\ncreate table {schema}.b (x int);\nxa end 'x';\nxa prepare 'x';\n".into(),
            "XA START is part of a distributed (two-phase) transaction",
        )],
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    // A savepoint a file sets and keeps open is its own business.
    let first = "savepoint s;\ncreate table {schema}.a_kept (x int);\n";
    for (text, expected) in refused {
        if backend() != Backend::Mysql {
            server.ws.write_migration("tenants/004.sql", first);
        }
        server.ws.write_migration("tenants/005.sql", &text);
        let result = server.create_version(json!({ "versionName": "refused" })).await;
        let message = result["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected) && message.contains("tenants/005.sql"), "{expected}: {result}");
        for name in &names {
            let tables = server.ws.tables(name).await;
            assert!(!tables.iter().any(|t| t == "b" || t == "a_kept"), "{name}: {tables:?}");
        }
        let files = crate::fleet::recorded(&server).await;
        assert!(files.keys().all(|(file, _)| !file.starts_with("tenants/00") || file < &"tenants/004".to_string()));
    }
    server.ws.remove_migration("tenants/004.sql");
    server.ws.remove_migration("tenants/005.sql");
    if backend() != Backend::Mysql {
        return;
    }

    // Each tenant's unit on a connection the one before did not touch.
    server
        .ws
        .write_migration("tenants/004.sql", "create procedure {schema}.fk_off() set session foreign_key_checks = 0;\n");
    server.ws.write_migration(
        "tenants/005.sql",
        "create table {schema}.seen as select cast(@@foreign_key_checks as signed) as fk, cast(coalesce(@seen, 0) as signed) as n;\n\
         call {schema}.fk_off();\n",
    );
    server.ws.write_migration(
        "tenants/006.sql",
        "create table {schema}.seen_too as select cast(coalesce(@seen, 0) as signed) as n;\nselect 1 into @seen;\n",
    );
    let version = server.create_version(json!({ "versionName": "session" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    for name in &names {
        let seen = server.ws.rows(name, "select fk, n from seen").await;
        assert_eq!(seen, [[json!(1), json!(0)]], "{name}: another tenant's CALL or variable reached it");
        let seen = server.ws.rows(name, "select n from seen_too").await;
        assert_eq!(seen, [[json!(0)]], "{name}");
    }

    // DDL commits as it runs: a file failing after it is partly committed.
    server.ws.write_migration(
        "tenants/007.sql",
        "create table {schema}.half (x int);\nselect * from {schema}.no_such_table;\n",
    );
    let failed = server.create_version(json!({ "versionName": "half" })).await;
    let extensions = &failed["errors"][0]["extensions"];
    assert_eq!(extensions["partlyApplied"], true, "{failed}");
    assert_eq!(extensions["partlyCommittedSchemas"], json!(["t1"]), "{failed}");
    assert!(!extensions["notCommittedSchemas"].as_array().unwrap().contains(&json!("t1")), "{failed}");
    let message = failed["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("may be partly applied, unrecorded; nothing was recorded;"), "{message}");
}

/// SQLite: a tenant whose database file is gone while the books record its
/// migrations is refused, named with its file — a new empty file would have
/// taken the next files over a schema that is not there, the books still
/// saying every earlier one applied.
#[tokio::test]
async fn a_sqlite_tenant_whose_file_is_gone_is_refused_not_made_again() {
    if backend() != Backend::Sqlite {
        return;
    }
    let (server, _) = tenants_on("", 2).await;
    let file = server.ws.path().join("db").join("t1.db");
    std::fs::remove_file(&file).unwrap();
    server.ws.write_migration("tenants/004.sql", "create table {schema}.extra (id integer);\n");
    let refused = server.create_version(json!({ "versionName": "after" })).await;
    let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("t1") && message.contains("is gone, though migrations are recorded for it"), "{refused}");
    assert!(!file.exists(), "the file was made again");
    let extra = server.ws.rows("svc", "select count(*) from svc_migrations where filename = 'tenants/004.sql'").await;
    assert_eq!(extra, [[json!(0)]]);
}
