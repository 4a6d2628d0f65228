//! The command line, run as a user runs it: `strata --config FILE <command>`
//! in a temp dir, on the backend of this run. Every subcommand, its exit
//! status, its `--json` parsed, and `apply` racing a server's `createVersion`.

use serde_json::{Value, json};

use crate::support::{Server, Workspace, code, json_of, mysql_turn, stderr, stdout, strata};

#[tokio::test]
async fn plan_apply_status_and_config_check_with_their_exit_statuses() {
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(""));

    // Before anything: two single-schema migrations pending, no tenants.
    let plan = strata(&config, &["plan", "--check"]).await;
    assert_eq!(code(&plan), 6, "{}{}", stdout(&plan), stderr(&plan));
    let text = stdout(&plan);
    assert!(text.starts_with("2 migrations and 1 script in 2 schemas (0 tenants).\n"), "{text}");
    assert!(text.contains("schema ref:\n  ref/001.sql\n"), "{text}");
    assert!(text.contains("schema config:\n  config/002.sql\n  scripts/config/"), "{text}");

    let plan = json_of(&strata(&config, &["plan", "--json"]).await);
    assert_eq!(plan["pending"], true);
    assert_eq!(plan["summary"]["singleMigrations"], 2);
    assert_eq!(plan["groups"][0]["schemas"], json!(["ref"]));
    assert_eq!(plan["groups"][0]["files"][0], json!({ "file": "ref/001.sql", "script": false, "execute": true }));

    // Apply, as JSON: the API's CreateResults.
    let apply = strata(&config, &["apply", "--version", "v1", "--json"]).await;
    assert_eq!(code(&apply), 0, "{}", stderr(&apply));
    let results = json_of(&apply);
    assert_eq!(results["summary"]["migrationsGrandTotal"], 2, "{results}");
    assert_eq!(results["version"]["id"], 1);
    assert_eq!(results["version"]["name"], "v1");
    let files: Vec<&str> =
        results["version"]["dbMigrations"].as_array().unwrap().iter().map(|m| m["file"].as_str().unwrap()).collect();
    assert_eq!(files[..2], ["ref/001.sql", "config/002.sql"]);
    assert_eq!(ws.count("ref", "countries").await, 2);

    // A tenant, with a line per schema (stdout is not a terminal).
    let tenant = strata(&config, &["apply", "--version", "t1", "--tenant", "acme"]).await;
    assert_eq!(code(&tenant), 0, "{}", stderr(&tenant));
    let text = stdout(&tenant);
    assert!(text.contains("acme: 3 file(s) done\n"), "{text}");
    assert!(
        text.contains("Version 2 \"t1\" created: 2 migration(s) and 1 script(s) over 1 tenant(s) applied"),
        "{text}"
    );

    // Nothing pending: the gate passes; status says so.
    let plan = strata(&config, &["plan", "--check"]).await;
    assert_eq!(code(&plan), 0, "{}", stdout(&plan));
    let status = json_of(&strata(&config, &["status", "--json"]).await);
    assert_eq!((status["versionCount"].as_i64(), status["tenants"].as_i64()), (Some(2), Some(1)), "{status}");
    assert_eq!(status["versions"][0]["name"], "t1");
    assert_eq!(status["pending"], json!([]));
    let status = strata(&config, &["status"]).await;
    assert!(stdout(&status).contains("2 version(s); 1 tenant(s).\n"), "{}", stdout(&status));
    assert!(stdout(&status).contains("No pending migrations."), "{}", stdout(&status));

    // A new tenant migration: pending in acme; --dry-run changes nothing.
    ws.write_migration("tenants/004.sql", "create table {schema}.audit (id integer);\n");
    let status = json_of(&strata(&config, &["status", "--json"]).await);
    assert_eq!(status["pending"], json!([{ "schema": "acme", "migrations": 1, "quarantined": false }]));
    let dry = strata(&config, &["apply", "--version", "v3", "--dry-run"]).await;
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    assert!(stdout(&dry).contains("Dry run: 1 migration(s)"), "{}", stdout(&dry));
    assert_eq!(code(&strata(&config, &["plan", "--check"]).await), 6);

    // A failing migration: exit 1, the file and schema named.
    ws.write_migration("tenants/005.sql", "insert into {schema}.nope values (1);\n");
    let failed = strata(&config, &["apply", "--version", "v3"]).await;
    assert_eq!(code(&failed), 1, "{}", stdout(&failed));
    assert!(stderr(&failed).contains("migration tenants/005.sql failed in schema acme"), "{}", stderr(&failed));
    std::fs::remove_file(ws.migrations().join("tenants/005.sql")).unwrap();

    // Drift: an applied file changed. plan and apply refuse with 3.
    ws.write_migration("ref/001.sql", "-- changed\ncreate table {schema}.other (id integer);\n");
    let plan = strata(&config, &["plan"]).await;
    assert_eq!(code(&plan), 3, "{}", stdout(&plan));
    assert!(stdout(&plan).contains("Apply refuses to run: 1 migration(s) changed"), "{}", stdout(&plan));
    assert!(stdout(&plan).contains("  ref/001.sql (recorded in ref)"), "{}", stdout(&plan));
    let drift = json_of(&strata(&config, &["plan", "--json"]).await);
    assert_eq!(drift["refused"], "DRIFT");
    assert_eq!(drift["drift"][0]["file"], "ref/001.sql");
    let apply = strata(&config, &["apply", "--version", "v4"]).await;
    assert_eq!(code(&apply), 3, "{}", stderr(&apply));
    let apply = strata(&config, &["apply", "--version", "v4", "--json"]).await;
    assert_eq!(code(&apply), 3);
    assert_eq!(json_of(&apply)["errors"][0]["extensions"]["code"], "DRIFT");

    // config check prints the effective configuration, redacted.
    let check = strata(&config, &["config", "check"]).await;
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    assert!(stdout(&check).contains("baseLocation:"), "{}", stdout(&check));
    assert!(stderr(&check).contains("the configuration is valid"), "{}", stderr(&check));
}

#[tokio::test]
async fn bad_configuration_unreachable_database_and_usage_have_their_own_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let output = strata(&missing, &["plan"]).await;
    assert_eq!(code(&output), 4);
    assert!(stderr(&output).contains("cannot read configuration"), "{}", stderr(&output));

    let invalid = dir.path().join("invalid.yaml");
    std::fs::write(&invalid, "baseLocation: m\ndriver: oracle\ndataSource: x\n").unwrap();
    assert_eq!(code(&strata(&invalid, &["config", "check"]).await), 4);

    let secret = dir.path().join("secret.yaml");
    std::fs::write(
        &secret,
        format!(
            "baseLocation: {}\ndriver: postgres\ndataSource: postgres://app:s3cret-pw@127.0.0.1:1/db\n\
             singleMigrations: [ref]\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let check = strata(&secret, &["config", "check"]).await;
    assert_eq!(code(&check), 0);
    assert!(!stdout(&check).contains("s3cret-pw") && stdout(&check).contains("dataSource:"), "{}", stdout(&check));
    // Nothing listens on port 1.
    let unreachable = strata(&secret, &["status"]).await;
    assert_eq!(code(&unreachable), 5, "{}", stderr(&unreachable));
    assert!(!stderr(&unreachable).contains("s3cret-pw"), "{}", stderr(&unreachable));

    let usage = strata(&secret, &["apply"]).await;
    assert_eq!(code(&usage), 2, "--version is required");
    let help = strata(&secret, &["--help"]).await;
    assert!(stdout(&help).contains("Exit status:\n  0  done, or nothing to do"), "{}", stdout(&help));
}

/// A process that starts beside a long reader of the service's tables (a
/// `pg_dump` holds a share lock on every table until it ends) is not held
/// by it: start-up creates only what is missing, reading the catalog first,
/// so it asks for no lock on `svc_versions` or `svc_migrations` when
/// nothing is (an `alter table … add column if not exists` waited for the
/// reader's end, and every unit's record queued behind it until its lock
/// time-out). PostgreSQL: `strata apply` of a new file while the reader's
/// transaction is open finishes within 30 s, the reader still open.
#[tokio::test]
async fn a_process_starting_beside_a_long_reader_of_the_books_is_not_held_by_it() {
    if crate::support::backend() != crate::support::Backend::Postgres {
        return;
    }
    use sqlx::Connection;
    let server = Server::start("fleet", "").await;
    for i in 0..3 {
        let result = server.create_tenant(json!({ "tenantName": format!("t{i}"), "versionName": "t" })).await;
        assert!(result.get("errors").is_none(), "{result}");
    }
    server.ws.write_migration("tenants/002.sql", "create table {schema}.during_a_dump (id integer);\n");
    let mut reader = sqlx::PgConnection::connect(&server.ws.pg_url()).await.unwrap();
    sqlx::raw_sql(
        "begin isolation level repeatable read; select count(*) from svc.svc_versions; \
                   select count(*) from svc.svc_migrations",
    )
    .execute(&mut reader)
    .await
    .unwrap();
    let config = server.config_path().to_path_buf();
    let applied = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        strata(&config, &["apply", "--version", "during a dump", "--json"]),
    )
    .await
    .expect("strata apply finished beside the reader");
    assert_eq!(code(&applied), 0, "{}", stderr(&applied));
    assert_eq!(json_of(&applied)["summary"]["tenantMigrationsTotal"], json!(3), "{}", stdout(&applied));
    sqlx::raw_sql("commit").execute(&mut reader).await.unwrap();
    for i in 0..3 {
        assert!(server.ws.tables(&format!("t{i}")).await.contains(&"during_a_dump".to_string()), "t{i}");
    }
}

/// The command line and a running server share the cross-instance lock:
/// started together, each file is applied exactly once.
#[tokio::test]
async fn an_apply_racing_a_server_create_version_applies_each_file_once() {
    let server = Server::start("fleet", "").await;
    // Tenants first, so the version has work in many schemas.
    for i in 0..8 {
        let result = server.create_tenant(json!({ "tenantName": format!("t{i}"), "versionName": "t" })).await;
        assert!(result.get("errors").is_none(), "{result}");
    }
    for i in 2..=6 {
        server
            .ws
            .write_migration(&format!("tenants/{i:03}.sql"), &format!("create table {{schema}}.t{i} (id integer);\n"));
    }
    let config = server.config_path().to_path_buf();
    // Two command lines (which race each other for the database's lock
    // across processes) and the API.
    let (first, second, api) = tokio::join!(
        strata(&config, &["apply", "--version", "cli-1", "--json"]),
        strata(&config, &["apply", "--version", "cli-2", "--json"]),
        server.create_version(json!({ "versionName": "api" }))
    );
    assert!(api.get("errors").is_none(), "{api}");
    let mut applied = vec![api["data"]["createVersion"]["summary"]["migrationsGrandTotal"].as_i64().unwrap()];
    for cli in [&first, &second] {
        assert_eq!(code(cli), 0, "{}", stderr(cli));
        applied.push(json_of(cli)["summary"]["migrationsGrandTotal"].as_i64().unwrap());
    }
    // ref/001.sql, and 5 tenant migrations in each of 8 tenants.
    assert_eq!(applied.iter().sum::<i64>(), 1 + 8 * 5, "{applied:?}");
    assert_eq!(applied.iter().filter(|&&n| n > 0).count(), 1, "the first to take the lock applied it all: {applied:?}");
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    for i in 0..8 {
        assert!(server.ws.tables(&format!("t{i}")).await.contains(&"t6".to_string()));
    }
}

/// The configuration with `dataSource` naming a user with read rights only
/// (created here; none on SQLite, whose files carry no users).
async fn read_only_config(ws: &Workspace) -> String {
    use crate::support::{Backend, backend};
    let config = ws.config("");
    match backend() {
        Backend::Sqlite => config,
        Backend::Postgres => {
            let role = format!("strata_ro_{}", ws.port);
            ws.execute(
                "public",
                &format!(
                    "drop role if exists {role}; create role {role} login; \
                     revoke create on schema public from public; revoke create on schema public from {role}"
                ),
            )
            .await;
            config.replace("postgres://postgres@", &format!("postgres://{role}@"))
        }
        Backend::Mysql => {
            ws.execute(
                "mysql",
                "drop user if exists 'strata_ro'@'localhost'; create user 'strata_ro'@'localhost'; \
                 grant select on *.* to 'strata_ro'@'localhost'",
            )
            .await;
            config.replace("mysql://root@", "mysql://strata_ro@")
        }
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    }
}

/// Grants the read-only user reading the service's tables once they exist.
async fn grant_reading_svc(ws: &Workspace) {
    use crate::support::{Backend, backend};
    if backend() == Backend::Postgres {
        let role = format!("strata_ro_{}", ws.port);
        ws.execute(
            "public",
            &format!("grant usage on schema svc to {role}; grant select on all tables in schema svc to {role}"),
        )
        .await;
    }
}

#[tokio::test]
async fn plan_and_status_never_write_and_work_with_read_rights_only() {
    if crate::support::backend() == crate::support::Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "plan_and_status_never_write_and_work_with_read_rights_only",
            "a login with read rights only is made with each engine's own statements, not yet written in T-SQL",
        );
    }
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let read_only = ws.write_config(&read_only_config(&ws).await);

    // A fresh database: plan and status answer, and create nothing.
    let plan = strata(&read_only, &["plan", "--check"]).await;
    assert_eq!(code(&plan), 6, "{}{}", stdout(&plan), stderr(&plan));
    assert!(stdout(&plan).starts_with("2 migrations and 1 script in 2 schemas (0 tenants).\n"), "{}", stdout(&plan));
    let status = strata(&read_only, &["status", "--json"]).await;
    assert_eq!(code(&status), 0, "{}", stderr(&status));
    let status = json_of(&status);
    assert_eq!((status["versionCount"].as_i64(), status["tenants"].as_i64()), (Some(0), Some(0)), "{status}");
    match crate::support::backend() {
        crate::support::Backend::Sqlite => {
            let db = ws.path().join("db");
            assert!(!db.exists(), "plan and status created {:?}", std::fs::read_dir(&db).map(|d| d.count()));
        }
        crate::support::Backend::Postgres => {
            let svc = ws.rows("public", "select count(*) from pg_namespace where nspname = 'svc'").await;
            assert_eq!(svc, vec![vec![json!(0)]]);
        }
        crate::support::Backend::Mysql => {
            let svc =
                ws.rows("mysql", "select count(*) from information_schema.schemata where schema_name = 'svc'").await;
            assert_eq!(svc, vec![vec![json!(0)]]);
        }
        crate::support::Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    }

    // Applied by a user who may write, then read by the one who may not.
    let writer = ws.path().join("writer.yaml");
    std::fs::write(&writer, ws.config("")).unwrap();
    let apply = strata(&writer, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&apply), 0, "{}", stderr(&apply));
    grant_reading_svc(&ws).await;
    let plan = strata(&read_only, &["plan", "--check"]).await;
    assert_eq!(code(&plan), 0, "{}{}", stdout(&plan), stderr(&plan));
    let status = json_of(&strata(&read_only, &["status", "--json"]).await);
    assert_eq!(status["versionCount"].as_i64(), Some(1), "{status}");
    assert_eq!(status["versions"][0]["name"], "v1");
}

/// `strata tenants | head -1` over thousands of tenants: the reader goes
/// away after one line, and the command ends quietly with its own status.
#[tokio::test]
async fn a_reader_that_goes_away_ends_the_command_quietly() {
    use std::io::BufRead;
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(""));
    let apply = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&apply), 0, "{}", stderr(&apply));
    ws.add_tenant_rows(5000).await;
    let mut child = std::process::Command::new(crate::support::strata_bin())
        .arg("--config")
        .arg(&config)
        .arg("tenants")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(!first.is_empty());
    // The reader is gone (dropped above); the rest of 5,000 lines meets a
    // closed pipe.
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert!(!said.contains("panicked") && !said.contains("Broken pipe"), "{said}");
}

/// Runs `strata --config <config> <args…>` with its stdout a pipe whose
/// reader is gone before anything is written (`strata status | true`).
fn with_stdout_closed(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut child = std::process::Command::new(crate::support::strata_bin())
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("SVC_YAML")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// Every command that prints, with its stdout closed before it writes:
/// exit 0 and nothing on stderr (no panic, no write error).
#[tokio::test]
async fn a_closed_stdout_ends_each_command_quietly_with_exit_0() {
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(""));
    let apply = strata(&config, &["apply", "--version", "v1", "--tenant", "acme"]).await;
    assert_eq!(code(&apply), 0, "{}", stderr(&apply));
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["plan"],
        &["plan", "--json"],
        &["tenants"],
        &["tenants", "--json"],
        &["lint", "--all"],
        &["rollout"],
        &["quarantine"],
        &["audit"],
        &["apply", "--version", "v2"],
        &["--help"],
        &["--version"],
    ] {
        let output = with_stdout_closed(&config, args);
        assert_eq!((code(&output), stderr(&output).as_str()), (0, ""), "strata {}", args.join(" "));
    }
}

/// Runs `strata --config <config> <args…> serve` with its stdout and
/// stderr as given, until `/health` answers 200 (up to 10 s), then stops it
/// with SIGTERM and returns its exit status.
async fn serve_until_healthy(
    ws: &Workspace,
    config: &std::path::Path,
    args: &[&str],
    stdout: std::process::Stdio,
    stderr: std::process::Stdio,
) -> std::process::ExitStatus {
    let mut child = std::process::Command::new(crate::support::strata_bin())
        .arg("--config")
        .arg(config)
        .args(args)
        .arg("serve")
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let client = crate::support::client();
    let health = format!("http://127.0.0.1:{}/health", ws.port);
    let mut answered = None;
    for _ in 0..100 {
        if let Ok(response) = client.get(&health).send().await {
            answered = Some(response.status());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(answered, Some(reqwest::StatusCode::OK), "{status}");
    status
}

/// `strata serve | head -1`: the service keeps serving, its log goes on on
/// stderr, and SIGTERM ends it with exit 0.
#[tokio::test]
async fn a_server_whose_stdout_closes_keeps_serving_and_logs_on_stderr() {
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(""));
    let log = ws.path().join("stderr.log");
    let stderr = std::fs::File::create(&log).unwrap().into();
    // Closed before the service's first line: a pipe read by nothing yet when
    // the service wrote "strata listening" held that line, and a run whose
    // harness dropped its end only after that saw it on neither stream.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = serve_until_healthy(&ws, &config, &[], writer.into(), stderr).await;
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(said.contains("strata listening") && said.contains("strata stopped"), "{said}");
    assert!(!said.contains("Broken pipe") && !said.contains("panicked"), "{said}");
}

/// `apply --tenant NAME --shard SHARD` on a fleet without `shards:` is
/// refused before anything runs (it was ignored): exit 2, the API's
/// `UNKNOWN_SHARD` with `--json`, no tenant created.
#[tokio::test]
async fn a_shard_named_on_an_unsharded_fleet_is_refused() {
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(""));
    let refused = strata(&config, &["apply", "--version", "t1", "--tenant", "acme", "--shard", "eu"]).await;
    assert_eq!(code(&refused), 2, "{}", stdout(&refused));
    assert_eq!(
        stderr(&refused),
        "strata: no shard is named \"eu\": the configuration has no shards (one database server, dataSource)\n"
    );
    assert_eq!(stdout(&refused), "");
    let refused = strata(&config, &["apply", "--version", "t1", "--tenant", "acme", "--shard", "eu", "--json"]).await;
    assert_eq!(code(&refused), 2);
    assert_eq!(json_of(&refused)["errors"][0]["extensions"]["code"], "UNKNOWN_SHARD");
    let tenants = strata(&config, &["tenants", "--json"]).await;
    assert_eq!(json_of(&tenants)["tenants"], json!([]), "nothing created");
}

/// `-q` leaves errors only in the log, `-v` adds the debug log (commands
/// included), over `logLevel`; both at once is a usage error.
#[tokio::test]
async fn quiet_and_verbose_override_the_log_level() {
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config("logLevel: DEBUG\n"));
    let log = ws.path().join("serve.log");
    let file = std::fs::File::create(&log).unwrap();
    let status = serve_until_healthy(&ws, &config, &["-q"], file.try_clone().unwrap().into(), file.into()).await;
    assert_eq!(status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "", "-q: no info or debug line");

    let plain = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!((code(&plain), stderr(&plain).as_str()), (0, ""));
    let verbose = strata(&config, &["--verbose", "apply", "--version", "v2"]).await;
    assert_eq!(code(&verbose), 0, "{}", stderr(&verbose));
    assert!(stderr(&verbose).contains("INFO") && stderr(&verbose).contains("mutation started"), "{}", stderr(&verbose));

    let both = strata(&config, &["-q", "-v", "status"]).await;
    assert_eq!(code(&both), 2);
    assert!(stderr(&both).contains("'--quiet' cannot be used with '--verbose'"), "{}", stderr(&both));
}

/// A migration statement that runs over a second is no warning with its SQL
/// (sqlx's slow-statement log is off).
#[tokio::test]
async fn a_slow_migration_is_not_logged_with_its_sql() {
    let server = Server::start("basic", "").await;
    let slow = match crate::support::backend() {
        crate::support::Backend::Sqlite => {
            // Over a second in the suite's optimized build (SQLite's C
            // compiled for size: 4,000,000 took 0.9 s).
            "with recursive c(x) as (select 1 union all select x + 1 from c where x < 12000000) \
             select count(*) from c;\n"
        }
        crate::support::Backend::Postgres => "select pg_sleep(1.2);\n",
        crate::support::Backend::Mysql => "select sleep(1.2);\n",
        crate::support::Backend::Sqlserver => "declare @busy int = 0;\nwhile @busy < 1000000 set @busy = @busy + 1;\n",
    };
    server.ws.write_migration("ref/003.sql", slow);
    let started = std::time::Instant::now();
    let result = server.create_version(json!({ "versionName": "slow" })).await;
    assert!(result.get("errors").is_none(), "{result}");
    assert!(started.elapsed() > std::time::Duration::from_secs(1), "the migration ran over a second");
    let log = server.log();
    assert!(!log.contains("slow statement") && !log.contains("x < 12000000"), "{log}");
    assert!(log.contains("version created"), "{log}");
}

/// `strata completions bash|zsh|fish`: each shell's script, naming every
/// subcommand; no configuration is read. Another shell is a usage error.
#[tokio::test]
async fn completions_name_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent.yaml");
    let bash = strata(&absent, &["completions", "bash"]).await;
    assert_eq!((code(&bash), stderr(&bash).as_str()), (0, ""));
    let script = stdout(&bash);
    assert!(script.contains("complete -F _strata"), "{script}");
    for command in [
        "serve",
        "plan",
        "apply",
        "status",
        "tenants",
        "drift",
        "revert",
        "repair",
        "quarantine",
        "rollout",
        "lint",
        "token",
        "audit",
        "new",
        "config",
        "completions",
    ] {
        assert!(script.contains(&format!("strata,{command})")), "{command}: {script}");
    }
    let zsh = strata(&absent, &["completions", "zsh"]).await;
    assert_eq!(code(&zsh), 0);
    assert!(stdout(&zsh).starts_with("#compdef strata\n"), "{}", stdout(&zsh));
    let fish = strata(&absent, &["completions", "fish"]).await;
    assert_eq!(code(&fish), 0);
    assert!(stdout(&fish).contains("complete -c strata "), "{}", stdout(&fish));
    let tcsh = strata(&absent, &["completions", "tcsh"]).await;
    assert_eq!(code(&tcsh), 2);
    assert!(stderr(&tcsh).contains("invalid value 'tcsh'"), "{}", stderr(&tcsh));
}
