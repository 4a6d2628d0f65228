//! The configuration as users write it: shell defaults and required
//! variables, paths read from the file's directory (not the working one),
//! read-only commands that create nothing, the commands that never connect
//! needing no secrets, `STRATA_DATA_SOURCE`, `--wait-for-db`, `--port`, and
//! a mutation that waits for the lock (lease row or SQLite lock file) saying
//! who holds it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::{Backend, Workspace, backend, code, free_port, mysql_turn, stderr, stdout};

/// Runs `strata --config <config> <args…>` in `cwd` with `env` added.
async fn strata_in(cwd: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = tokio::process::Command::new(crate::support::strata_bin());
    command.current_dir(cwd).arg("--config").arg(config).args(args).env_remove("SVC_YAML");
    command.env_remove("STRATA_DATA_SOURCE");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), command.output()).await;
    output.expect("strata finished within 120 s").expect("strata ran")
}

/// Every file and directory under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(dir).unwrap().to_path_buf());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The workspace's configuration with `dataSource:` replaced by `line`.
fn with_data_source(ws: &Workspace, line: &str) -> (String, String) {
    let yaml = ws.config("");
    let original = yaml.lines().find(|l| l.starts_with("dataSource: ")).unwrap().to_string();
    let value = original.trim_start_matches("dataSource: ").trim_matches('"').to_string();
    (yaml.replace(&original, line), value)
}

#[tokio::test]
async fn shell_defaults_and_required_variables() {
    let ws = Workspace::new("basic");
    let dir = ws.path().display().to_string();
    let yaml = format!(
        "baseLocation: ${{MIGRATIONS_DIR:-{dir}/migrations}}\ndriver: ${{DRIVER:-sqlite}}\n\
         dataSource: ${{DB_FILE:?set DB_FILE to the main database file}}\n\
         singleMigrations: [ref, config]\nlogLevel: ${{LOG_LEVEL:-ERROR}}\n"
    );
    let config = ws.write_config(&yaml);
    let shown = config.display().to_string();

    // `:?` unset: refused before anything, the variable and its message named.
    let check = strata_in(ws.path(), &config, &["config", "check"], &[]).await;
    assert_eq!(code(&check), 4);
    assert_eq!(
        stderr(&check),
        format!(
            "strata: {shown}: property dataSource: environment variable DB_FILE is not set or empty: \
             set DB_FILE to the main database file\n"
        )
    );
    assert_eq!(stdout(&check), "");
    // Set but empty: the same for `:?`.
    let check = strata_in(ws.path(), &config, &["config", "check"], &[("DB_FILE", "")]).await;
    assert_eq!(code(&check), 4, "{}", stderr(&check));

    // Set: the defaults of `:-` fill the rest, also for a value set empty.
    let env = [("DB_FILE", "/tmp/x.db"), ("LOG_LEVEL", "")];
    let check = strata_in(ws.path(), &config, &["config", "check"], &env).await;
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    let text = stdout(&check);
    assert!(text.contains(&format!("baseLocation: {dir}/migrations\n")), "{text}");
    assert!(text.contains("driver: sqlite\n"), "{text}");
    assert!(text.contains("dataSource: /tmp/x.db\n"), "{text}");
    assert!(text.contains("logLevel: ERROR\n"), "{text}");
    // Set: the variable's value wins.
    let env = [("DB_FILE", "/tmp/x.db"), ("LOG_LEVEL", "DEBUG"), ("MIGRATIONS_DIR", "/srv/m")];
    let text = stdout(&strata_in(ws.path(), &config, &["config", "check"], &env).await);
    assert!(text.contains("baseLocation: /srv/m\n") && text.contains("logLevel: DEBUG\n"), "{text}");
}

#[tokio::test]
async fn paths_are_read_from_the_configuration_directory_and_read_only_commands_create_nothing() {
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    // Relative paths: the migrations, and on SQLite the database files.
    let (yaml, _) = with_data_source(&ws, "dataSource: sqlite://./db/main.db?mode=rwc");
    let yaml = if backend() == Backend::Sqlite { yaml } else { ws.config("") };
    let yaml = yaml.replace(&format!("baseLocation: {}\n", ws.migrations().display()), "baseLocation: migrations\n");
    assert!(yaml.contains("baseLocation: migrations\n"), "{yaml}");
    let config = ws.write_config(&yaml);
    let elsewhere = tempfile::tempdir().unwrap();
    let before = tree(ws.path());

    for args in [
        &["status"][..],
        &["status", "--json"],
        &["plan"],
        &["plan", "--json"],
        &["lint"],
        &["lint", "--all"],
        &["config", "check"],
        &["drift"],
        &["tenants"],
        &["quarantine"],
        &["rollout"],
        &["audit"],
    ] {
        let output = strata_in(elsewhere.path(), &config, args, &[]).await;
        assert_eq!(code(&output), 0, "{args:?}: {}{}", stdout(&output), stderr(&output));
        assert!(!stderr(&output).contains("cannot"), "{args:?}: {}", stderr(&output));
    }
    let status = stdout(&strata_in(elsewhere.path(), &config, &["status"], &[]).await);
    assert!(status.contains("Pending migrations: 2 in 2 schema(s)"), "{status}");
    // Nothing created, here or there.
    assert_eq!(tree(elsewhere.path()), Vec::<PathBuf>::new());
    assert_eq!(tree(ws.path()), before);

    // A write, from elsewhere, writes next to the configuration.
    let apply = strata_in(elsewhere.path(), &config, &["apply", "--version", "v1"], &[]).await;
    assert_eq!(code(&apply), 0, "{}", stderr(&apply));
    assert_eq!(tree(elsewhere.path()), Vec::<PathBuf>::new());
    if backend() == Backend::Sqlite {
        assert!(ws.path().join("db/main.db").is_file());
    }
    assert_eq!(ws.count("ref", "countries").await, 2);
    let status = stdout(&strata_in(elsewhere.path(), &config, &["status"], &[]).await);
    assert!(status.contains("No pending migrations."), "{status}");
}

#[tokio::test]
async fn lint_all_and_an_offline_config_check_need_no_secrets() {
    let ws = Workspace::new("basic");
    let port = free_port();
    // The set's files in the backend's own SQL (T-SQL's `GO`), linted as such.
    let (driver, data_source, shown_data_source) = match backend() {
        Backend::Sqlserver => (
            "sqlserver",
            format!("\"Server=tcp:127.0.0.1,{port};User Id=svc;Password=${{DB_PASSWORD}};Database=app\""),
            format!("Server=tcp:127.0.0.1,{port};User Id=svc;Password=***;Database=app"),
        ),
        _ => (
            "postgres",
            format!("postgres://svc:${{DB_PASSWORD}}@127.0.0.1:{port}/app"),
            format!("postgres://svc:***@127.0.0.1:{port}/app"),
        ),
    };
    let yaml = format!(
        "baseLocation: {}\ndriver: {driver}\ndataSource: {data_source}\n\
         singleMigrations: [ref, config]\nwebHookURL: ${{HOOK_URL}}\nwebHookHeaders: [\"Authorization: ${{HOOK_AUTH}}\"]\n",
        ws.migrations().display()
    );
    let config = ws.write_config(&yaml);
    let shown = config.display().to_string();

    let lint = strata_in(ws.path(), &config, &["lint", "--all"], &[]).await;
    assert_eq!(code(&lint), 0, "{}", stderr(&lint));
    assert!(stdout(&lint).starts_with("0 finding(s), 0 at or above error;"), "{}", stdout(&lint));
    assert_eq!(stderr(&lint), "");

    let check = strata_in(ws.path(), &config, &["config", "check", "--offline"], &[]).await;
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    assert_eq!(
        stderr(&check),
        format!(
            "strata: {shown}: the configuration is valid offline; to connect it needs DB_PASSWORD, HOOK_AUTH, HOOK_URL set\n"
        )
    );
    let text = stdout(&check);
    assert!(text.contains(&format!("dataSource: {shown_data_source}\n")), "{text}");

    // Not offline: the secret is needed, as for every command that connects.
    let check = strata_in(ws.path(), &config, &["config", "check"], &[]).await;
    assert_eq!(code(&check), 4);
    assert_eq!(
        stderr(&check),
        format!("strata: {shown}: property dataSource: environment variable DB_PASSWORD is not set\n")
    );
    let status = strata_in(ws.path(), &config, &["status"], &[]).await;
    assert_eq!(code(&status), 4, "{}", stderr(&status));
    // Offline still needs what the sources are read with.
    let missing = ws.write_config(&yaml.replace(&ws.migrations().display().to_string(), "${MIGRATIONS}"));
    let lint = strata_in(ws.path(), &missing, &["lint", "--all"], &[]).await;
    assert_eq!(code(&lint), 4);
    assert!(stderr(&lint).ends_with("property baseLocation: environment variable MIGRATIONS is not set\n"));
}

#[tokio::test]
async fn strata_data_source_replaces_the_files_data_source() {
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let (yaml, data_source) = with_data_source(&ws, "dataSource: ${DATABASE_PASSWORD_NOT_SET}");
    let config = ws.write_config(&yaml);
    let status = strata_in(ws.path(), &config, &["status"], &[]).await;
    assert_eq!(code(&status), 4, "{}", stderr(&status));

    let env = [("STRATA_DATA_SOURCE", data_source.as_str())];
    let apply = strata_in(ws.path(), &config, &["apply", "--version", "v1"], &env).await;
    assert_eq!(code(&apply), 0, "{}", stderr(&apply));
    assert_eq!(ws.count("ref", "countries").await, 2);
    assert_eq!(ws.rows("svc", "select name from svc_versions").await, vec![vec![serde_json::json!("v1")]]);

    // Checked like dataSource, the variable named.
    let env = [("STRATA_DATA_SOURCE", "mysql://root@127.0.0.1/x")];
    let wrong = if backend() == Backend::Mysql { [("STRATA_DATA_SOURCE", "/tmp/x.db")] } else { env };
    let status = strata_in(ws.path(), &config, &["status"], &wrong).await;
    assert_eq!(code(&status), 4);
    assert!(stderr(&status).contains(": property dataSource: STRATA_DATA_SOURCE: "), "{}", stderr(&status));
}

#[tokio::test]
async fn wait_for_db_retries_until_its_deadline_and_no_longer_then_says_why() {
    let ws = Workspace::new("basic");
    let closed = crate::support::closed_port();
    let port = closed.port;
    let yaml = format!(
        "baseLocation: {}\ndriver: postgres\ndataSource: postgres://svc:pw@127.0.0.1:{port}/app\n\
         singleMigrations: [ref, config]\n",
        ws.migrations().display()
    );
    let config = ws.write_config(&yaml);
    let started = Instant::now();
    let status = strata_in(ws.path(), &config, &["--wait-for-db", "2", "status"], &[]).await;
    let took = started.elapsed();
    assert_eq!(code(&status), 5, "{}", stderr(&status));
    // The deadline and no more: before, a last attempt of its own after it
    // took the pool's 5 s more (3 s of margin here for a loaded machine's
    // process start and exit).
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(5), "{took:?}");
    let said = stderr(&status);
    assert_eq!(said.matches("cannot connect").count(), 1, "{said}");
    assert!(said.contains(&format!("127.0.0.1:{port}: connection refused: nothing listens")), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");

    // Without a wait: the reason at once, not the pool's time-out.
    let status = strata_in(ws.path(), &config, &["status"], &[]).await;
    assert_eq!(code(&status), 5, "{}", stderr(&status));
    let said = stderr(&status);
    assert!(said.contains("cannot connect to the database: connection refused: nothing listens"), "{said}");
    assert!(!said.contains("timed out"), "{said}");
    let unknown = ws.write_config(&yaml.replace("127.0.0.1", "no-such-host.invalid"));
    let status = strata_in(ws.path(), &unknown, &["status"], &[]).await;
    assert_eq!(code(&status), 5, "{}", stderr(&status));
    assert!(stderr(&status).contains("cannot connect to the database: unknown host: "), "{}", stderr(&status));
}

#[tokio::test]
async fn a_refused_login_says_so_not_that_the_pool_timed_out() {
    if backend() == Backend::Sqlite {
        return; // A file: no login.
    }
    let ws = Workspace::new("basic");
    let (yaml, data_source) = with_data_source(&ws, "");
    // The test servers trust their users: a user they do not know is refused.
    let wrong = if backend() == Backend::Sqlserver {
        format!("\"{}\"", data_source.replace("User Id=strata", "User Id=no_such_user"))
    } else {
        let mut wrong = url::Url::parse(&data_source).unwrap();
        wrong.set_username("no_such_user").unwrap();
        wrong.to_string()
    };
    let config = ws.write_config(&yaml.replace("\n\n", &format!("\ndataSource: {wrong}\n")));
    let status = strata_in(ws.path(), &config, &["status"], &[]).await;
    assert_eq!(code(&status), 5, "{}", stderr(&status));
    let said = stderr(&status);
    let reason = match backend() {
        Backend::Postgres => "role \"no_such_user\" does not exist (SQLSTATE 28000)",
        // SQL Server: "Login failed for user 'no_such_user'. (SQL Server
        // error 18456)"; Babelfish: its own message under its catch-all
        // number.
        Backend::Sqlserver => "cannot connect to the database: role \"no_such_user\" does not exist (SQL Server error ",
        // MariaDB falls back to its anonymous account: denied all the same.
        _ => "Access denied for user ",
    };
    assert!(said.contains(reason), "{said}");
    assert!(!said.contains("timed out"), "{said}");
}

/// Forwards TCP connections on a new port to `target`, from `after` on.
async fn forward_later(target: String, after: Duration) -> u16 {
    let port = free_port();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        loop {
            let (mut inbound, _) = listener.accept().await.unwrap();
            let target = target.clone();
            tokio::spawn(async move {
                let mut outbound = tokio::net::TcpStream::connect(target).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn wait_for_db_connects_once_the_server_answers() {
    if backend() == Backend::Sqlite {
        return; // A file, always there.
    }
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let (yaml, data_source) = with_data_source(&ws, "");
    let late = if backend() == Backend::Sqlserver {
        // Server=tcp:host,port;…
        let server = data_source.split(';').find_map(|part| part.strip_prefix("Server=tcp:")).unwrap();
        let (host, server_port) = server.split_once(',').unwrap();
        let port = forward_later(format!("{host}:{server_port}"), Duration::from_millis(1500)).await;
        format!("\"{}\"", data_source.replace(server, &format!("{host},{port}")))
    } else {
        let url = url::Url::parse(&data_source).unwrap();
        let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
        let port = forward_later(target, Duration::from_millis(1500)).await;
        let mut late = url.clone();
        late.set_port(Some(port)).unwrap();
        late.to_string()
    };
    let config = ws.write_config(&yaml.replace("\n\n", &format!("\ndataSource: {late}\n")));
    let started = Instant::now();
    let apply = strata_in(ws.path(), &config, &["--wait-for-db", "30", "apply", "--version", "v1"], &[]).await;
    assert_eq!(code(&apply), 0, "{}", stderr(&apply));
    assert!(started.elapsed() >= Duration::from_millis(1500));
    assert_eq!(ws.count("ref", "countries").await, 2);
}

#[tokio::test]
async fn serve_port_overrides_the_configured_port() {
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(""));
    let port = free_port();
    let mut child = std::process::Command::new(crate::support::strata_bin())
        .args(["--config", config.to_str().unwrap(), "serve", "--port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = crate::support::client();
    let mut answered = None;
    for _ in 0..100 {
        if let Ok(response) = client.get(format!("http://127.0.0.1:{port}/health")).send().await {
            answered = Some(response.status().as_u16());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let configured = client.get(format!("http://127.0.0.1:{}/health", ws.port)).send().await;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(answered, Some(200));
    assert!(configured.is_err(), "the configured port answered too");
    // --listen and --port together: a usage error.
    let both = strata_in(ws.path(), &config, &["serve", "--port", "1", "--listen", "127.0.0.1:2"], &[]).await;
    assert_eq!(code(&both), 2);
}

#[tokio::test]
async fn a_mutation_waiting_for_the_lease_says_who_holds_it_since_when() {
    if backend() == Backend::Sqlite {
        return; // SQLite's lock is a file lock, not the lease row.
    }
    let _turn = mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let config = ws.write_config(&ws.config(""));
    let first = strata_in(ws.path(), &config, &["apply", "--version", "v1"], &[]).await;
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    // Another mutation holds the lease for 6 more seconds (3 were less
    // than the second `strata` took to reach the lease under CI's load: it
    // found it expired and never waited).
    let holder = "'0b9c ops@build-7 pid 4242 since 2026-11-26T13:20:01Z'";
    let hold = match backend() {
        Backend::Postgres => format!(
            "insert into svc.svc_lock (id, holder, expires) values (1, {holder}, clock_timestamp() + interval '6 seconds') \
             on conflict (id) do update set holder = excluded.holder, expires = excluded.expires"
        ),
        // The application lock, held by a session of the test's for 6
        // seconds, its holder named as a mutation names itself (waited
        // for: on Babelfish the lock is the server's, which other tests'
        // mutations take too).
        Backend::Sqlserver => format!(
            "declare @granted int; exec @granted = sp_getapplock @Resource = N'strata.svc', @LockMode = 'Exclusive', \
             @LockOwner = 'Session', @LockTimeout = 60000; if @granted < 0 throw 50000, 'not granted', 1; \
             update svc.svc_lock set holder = {holder} where id = 1; \
             if @@rowcount = 0 insert into svc.svc_lock (id, holder) values (1, {holder});"
        ),
        _ => format!("update svc.svc_lock set holder = {holder}, expires = now(6) + interval 6 second where id = 1"),
    };
    let lock = if backend() == Backend::Sqlserver {
        let mut session = crate::support::sqlserver::connect(&ws.sqlserver_data_source()).await;
        crate::support::sqlserver::batch(&mut session, &hold).await;
        // 20 seconds: a start reads Babelfish's slow catalogs first (over
        // 6 s under the load of other tests).
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(20)).await;
            drop(session); // Its lock ends with it.
        });
        "strata.svc"
    } else {
        ws.execute("svc", &hold).await;
        "svc.svc_lock"
    };
    let started = Instant::now();
    let second = strata_in(ws.path(), &config, &["apply", "--version", "v2"], &[]).await;
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert!(started.elapsed() >= Duration::from_secs(2), "{:?}", started.elapsed());
    let said = format!("the lock {lock} is held by ops@build-7 pid 4242 since 2026-11-26T13:20:01Z; waiting for it");
    assert_eq!(stderr(&second).matches(&said).count(), 1, "{}", stderr(&second));
    assert_eq!(stderr(&second).lines().count(), 1, "{}", stderr(&second));
}

#[tokio::test]
async fn a_sqlite_mutation_waiting_for_the_lock_file_says_who_holds_it_since_when() {
    if backend() != Backend::Sqlite {
        return;
    }
    let ws = Workspace::new("basic");
    let config = ws.write_config(&ws.config(""));
    // About 2 s of CPU on a quiet machine (CI's load made it 10 s once:
    // a second mutation waits up to 10 minutes, as on the other engines).
    ws.write_migration(
        "config/900.sql",
        "with recursive c(x) as (select 1 union all select x + 1 from c where x < 4000000) select count(*) from c;\n",
    );
    let holder_file = ws.path().join("db").join("svc.lock.holder");
    let first = tokio::spawn({
        let (path, config) = (ws.path().to_path_buf(), config.clone());
        async move { strata_in(&path, &config, &["apply", "--version", "slow"], &[]).await }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let holder = loop {
        if let Ok(text) = std::fs::read_to_string(&holder_file) {
            break text;
        }
        assert!(Instant::now() < deadline, "no holder file while the first version ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let (id, rest) = holder.split_once(' ').unwrap();
    assert!(id.len() == 12 && id.chars().all(|c| c.is_ascii_hexdigit()), "{holder}");
    let (who, since) = rest.rsplit_once(" since ").unwrap();
    assert!(since.starts_with("20") && since.ends_with('Z'), "{holder}");
    let second = strata_in(ws.path(), &config, &["apply", "--version", "next"], &[]).await;
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    let said = format!("the lock svc.lock.db is held by {who} since {since}; waiting for it");
    assert_eq!(stderr(&second).matches(&said).count(), 1, "{}", stderr(&second));
    let first = first.await.unwrap();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert!(!holder_file.exists(), "the holder file outlived its lock");
}
