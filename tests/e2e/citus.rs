//! Citus schema-based sharding (a coordinator and two workers, started by
//! `bash tests/citus.sh start`, which prints `STRATA_TEST_CITUS_URL` and the
//! workers' addresses): each test is skipped, and says so, when the variable
//! is unset — Citus is in no registry CI reaches. The cluster runs as a user
//! sets it up (`citus.enable_schema_based_sharding = on` in the
//! coordinator's configuration, nothing else), and Strata is pointed at it
//! with nothing more than `driver: postgres` and the coordinator's URL.
//!
//! The tests share the cluster's one database, so they take turns; each
//! starts by dropping every schema but the system's and Citus's own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};

use crate::support::{code, free_port, strata};
use crate::topologies::{run, scalar, text};

/// One test at a time on the cluster.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The coordinator's URL, or `None` (and a line saying the test is skipped).
fn citus_url(test: &str) -> Option<String> {
    match std::env::var("STRATA_TEST_CITUS_URL") {
        Ok(url) => Some(url),
        Err(_) => {
            eprintln!("{test}: skipped, STRATA_TEST_CITUS_URL is not set (bash tests/citus.sh start)");
            None
        }
    }
}

fn list(variable: &str) -> Vec<String> {
    std::env::var(variable)
        .unwrap_or_else(|_| panic!("{variable} is not set: run `bash tests/citus.sh start`"))
        .split(',')
        .map(str::to_string)
        .collect()
}

async fn connect(url: &str) -> PgConnection {
    PgConnection::connect(url).await.unwrap_or_else(|e| panic!("{url}: {e}"))
}

async fn strings(conn: &mut PgConnection, sql: &str) -> Vec<String> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_all(conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// `pg_ctl` of the cluster's PostgreSQL, as user postgres.
async fn pg_ctl(args: &str) -> bool {
    let bin = std::env::var("STRATA_TEST_CITUS_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into());
    let command = format!("{bin}/pg_ctl {args}");
    let status = tokio::process::Command::new("su")
        .args(["postgres", "-c", &command])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .unwrap();
    status.success()
}

/// Starts every worker that is down (a test that stopped one and failed).
async fn workers_up() {
    let ports = list("STRATA_TEST_CITUS_WORKER_PORTS");
    for (data, port) in list("STRATA_TEST_CITUS_WORKER_DATA").iter().zip(ports) {
        if !pg_ctl(&format!("-D {data} status")).await {
            let socket = Path::new(data).parent().unwrap().display().to_string();
            let options = format!("-c listen_addresses=127.0.0.1 -p {port} -k {socket}");
            assert!(pg_ctl(&format!("-D {data} -o '{options}' -l {socket}/log -w start")).await, "{data} started");
        }
    }
}

/// Drops every schema but the system's and Citus's (distributed schemas
/// with them, on their workers).
async fn clean(url: &str) {
    workers_up().await;
    let mut conn = connect(url).await;
    let schemas = strings(
        &mut conn,
        "select nspname::text from pg_namespace where nspname not like 'pg\\_%' and nspname not in \
         ('public', 'information_schema', 'citus', 'citus_internal', 'columnar', 'columnar_internal')",
    )
    .await;
    for schema in schemas {
        run(&mut conn, &format!("drop schema \"{schema}\" cascade")).await;
    }
}

/// A configuration on the coordinator, its migrations directory.
struct Project {
    dir: tempfile::TempDir,
    port: u16,
}

impl Project {
    fn new(url: &str, extra: &str) -> Project {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["ref", "tenants"] {
            std::fs::create_dir_all(dir.path().join("migrations").join(sub)).unwrap();
        }
        let port = free_port();
        let project = Project { dir, port };
        project.config("svc.yaml", url, extra);
        project
    }

    fn config(&self, name: &str, url: &str, extra: &str) -> PathBuf {
        let yaml = format!(
            "baseLocation: {}\ndriver: postgres\ndataSource: {url}\nsingleMigrations: [ref]\n\
             tenantMigrations: [tenants]\nport: {}\n{extra}",
            self.dir.path().join("migrations").display(),
            self.port
        );
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        path
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("svc.yaml")
    }

    fn write(&self, file: &str, sql: &str) {
        std::fs::write(self.dir.path().join("migrations").join(file), sql).unwrap();
    }

    async fn strata(&self, args: &[&str]) -> std::process::Output {
        strata(&self.path(), args).await
    }

    /// `strata serve`, killed on drop.
    async fn serve(&self) -> Served {
        let log = std::fs::File::create(self.dir.path().join("serve.log")).unwrap();
        let child = Command::new(crate::support::strata_bin())
            .arg("--config")
            .arg(self.path())
            .arg("serve")
            .env_remove("SVC_YAML")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let served =
            Served { child, base: format!("http://127.0.0.1:{}", self.port), client: crate::support::client() };
        for _ in 0..200 {
            if served.client.get(format!("{}/metrics", served.base)).send().await.is_ok() {
                return served;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("strata serve did not answer: {}", std::fs::read_to_string(self.dir.path().join("serve.log")).unwrap());
    }
}

struct Served {
    child: Child,
    base: String,
    client: reqwest::Client,
}

impl Served {
    async fn create_tenant(&self, name: &str) -> Value {
        let query = "mutation($input: TenantInput!) { createTenant(input: $input) { version { id } \
                     summary { tenantMigrations } } }";
        let body = json!({ "query": query, "variables": { "input": { "tenantName": name, "versionName": name } } });
        let answer = self.client.post(format!("{}/v2/service", self.base)).json(&body).send().await.unwrap();
        answer.json().await.unwrap()
    }

    /// `createTenant` with this input.
    async fn create_tenant_with(&self, input: Value) -> Value {
        let query = "mutation($input: TenantInput!) { createTenant(input: $input) { version { id } \
                     summary { tenantMigrations } } }";
        let body = json!({ "query": query, "variables": { "input": input } });
        let answer = self.client.post(format!("{}/v2/service", self.base)).json(&body).send().await.unwrap();
        answer.json().await.unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The distributed schemas Citus lists.
async fn distributed(conn: &mut PgConnection) -> Vec<String> {
    strings(conn, "select schema_name::text from citus_schemas order by 1").await
}

/// Creates tenants `t0`… as a `psql` loop would: `create schema` on the
/// coordinator (a distributed schema, by the cluster's setting) and a row
/// of the default tenant table.
async fn tenants(conn: &mut PgConnection, n: usize) {
    for i in 0..n {
        run(conn, &format!("create schema t{i}")).await;
        run(conn, &format!("insert into svc.svc_tenants (name) values ('t{i}')")).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn starts_on_a_fresh_cluster_with_sharding_on_and_makes_tenants_distributed_schemas() {
    let Some(url) = citus_url("starts_on_a_fresh_cluster") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "");
    // CREATE INDEX and RENAME among other statements (citus#6608), and
    // each statement's error position still the file's.
    project.write(
        "tenants/001_items.sql",
        "create table {schema}.items (id bigserial primary key, note text);\n\
         create index items_note on {schema}.items (note);\n\
         insert into {schema}.items (note) values ('once');\n",
    );
    project.write(
        "tenants/002_rename.sql",
        "alter table {schema}.items rename column note to label;\nalter table {schema}.items add column n bigint;\n",
    );
    let served = project.serve().await;
    for name in ["alpha", "beta"] {
        let answer = served.create_tenant(name).await;
        assert_eq!(answer["data"]["createTenant"]["summary"]["tenantMigrations"], 2, "{answer}");
    }
    drop(served);
    let mut conn = connect(&url).await;
    // The service's schema stayed on the coordinator; the tenants are
    // distributed schemas, their tables on the workers.
    assert_eq!(distributed(&mut conn).await, ["alpha", "beta"]);
    let local = scalar(&mut conn, "select count(*) from citus_tables where table_name::text like 'svc.%'").await;
    assert_eq!(local, 0, "no svc table is a Citus table");
    let on_workers = strings(
        &mut conn,
        "select distinct nodeport::text from citus_shards where table_name::text in ('alpha.items', 'beta.items')",
    )
    .await;
    let worker_ports = list("STRATA_TEST_CITUS_WORKER_PORTS");
    assert!(!on_workers.is_empty() && on_workers.iter().all(|p| worker_ports.contains(p)), "{on_workers:?}");
    assert_eq!(scalar(&mut conn, "select count(*) from alpha.items where label = 'once'").await, 1);
    // `strata tenants` names each tenant's node.
    let listed = project.strata(&["tenants", "--json"]).await;
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap_or_else(|_| panic!("{}", text(&listed)));
    for tenant in listed["tenants"].as_array().unwrap() {
        let node = tenant["node"].as_str().unwrap_or_else(|| panic!("{tenant}"));
        assert!(worker_ports.iter().any(|p| node.ends_with(&format!(":{p}"))), "{tenant}");
    }
    assert_eq!(scalar(&mut conn, "select count(*) from svc.svc_migrations").await, 4);

    // A session whose setting is off (the dataSource's options): the new
    // tenant is distributed all the same.
    let off = format!("{url}?options=-c%20citus.enable_schema_based_sharding%3Doff");
    project.config("svc.yaml", &off, "");
    let served = project.serve().await;
    let answer = served.create_tenant("gamma").await;
    assert_eq!(answer["data"]["createTenant"]["summary"]["tenantMigrations"], 2, "{answer}");
    drop(served);
    assert_eq!(distributed(&mut conn).await, ["alpha", "beta", "gamma"]);

    // A failing statement in the middle of a file is placed in the file.
    project.write(
        "tenants/003_bad.sql",
        "create table {schema}.ok (id bigint);\ncreate index ok_id on {schema}.ok (id);\nselect * from {schema}.missing;\n",
    );
    let output = project.strata(&["apply", "--version", "bad"]).await;
    assert_eq!(code(&output), 1, "{}", text(&output));
    assert!(text(&output).contains("tenants/003_bad.sql failed in schema"), "{}", text(&output));
    assert!(text(&output).contains("at line 3, column 15"), "{}", text(&output));
    assert_eq!(scalar(&mut conn, "select count(*) from svc.svc_migrations where filename like '%003%'").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_a_worker_and_names_the_coordinator() {
    let Some(url) = citus_url("refuses_a_worker") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let worker = list("STRATA_TEST_CITUS_WORKER_URLS").remove(0);
    let project = Project::new(&worker, "");
    let coordinator = url.split('@').nth(1).unwrap().split('/').next().unwrap();
    for args in [&["status"][..], &["apply", "--version", "v"][..]] {
        let output = project.strata(args).await;
        assert_eq!(code(&output), 4, "{args:?}: {}", text(&output));
        let said = text(&output);
        assert!(said.contains("a Citus worker node, not the coordinator"), "{said}");
        assert!(said.contains(&format!("({coordinator})")), "{said}");
        assert!(said.contains("point dataSource at the coordinator"), "{said}");
    }
    // Nothing was written on the worker.
    let mut conn = connect(&worker).await;
    assert_eq!(scalar(&mut conn, "select count(*) from pg_namespace where nspname = 'svc'").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_tenants_fifteen_files_each_applied_and_recorded_exactly_once() {
    let Some(url) = citus_url("two_hundred_tenants") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "tenantConcurrency: 4\n");
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    let mut conn = connect(&url).await;
    tenants(&mut conn, 200).await;
    project.write("tenants/000_log.sql", "create table {schema}.log (id bigserial primary key, file text);\n");
    for k in 1..15 {
        project.write(
            &format!("tenants/{k:03}_step.sql"),
            &format!(
                "create table {{schema}}.s{k} (id bigint);\ncreate index s{k}_id on {{schema}}.s{k} (id);\n\
                 insert into {{schema}}.log (file) values ('{k:03}');\n"
            ),
        );
    }
    let started = Instant::now();
    let output = project.strata(&["apply", "--version", "fleet"]).await;
    assert_eq!(code(&output), 0, "{}", text(&output));
    eprintln!("200 tenants × 15 files on Citus: {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(distributed(&mut conn).await.len(), 200);
    // Recorded once per (schema, file).
    let twice = scalar(
        &mut conn,
        "select count(*) from (select db_schema, filename from svc.svc_migrations group by 1, 2 \
         having count(*) <> 1) x",
    )
    .await;
    assert_eq!(twice, 0);
    assert_eq!(scalar(&mut conn, "select count(*) from svc.svc_migrations").await, 200 * 15);
    // Applied once per (schema, file): the catalog and each file's row.
    let tables = scalar(
        &mut conn,
        "select count(*) from pg_tables where schemaname ~ '^t[0-9]+$' and (tablename = 'log' or tablename ~ '^s[0-9]+$')",
    )
    .await;
    assert_eq!(tables, 200 * 15);
    for i in 0..200 {
        let rows = scalar(&mut conn, &format!("select count(distinct file) * 100 + count(*) from t{i}.log")).await;
        assert_eq!(rows, 14 * 100 + 14, "t{i}");
    }
    // Nothing left to do.
    let again = project.strata(&["apply", "--version", "again"]).await;
    assert_eq!(code(&again), 0, "{}", text(&again));
    assert!(text(&again).contains("Nothing to do"), "{}", text(&again));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lock_held_on_a_worker_fails_the_alter_within_the_lock_time_out() {
    let Some(url) = citus_url("a_lock_held_on_a_worker") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "lockTimeoutMillis: 300\nlockRetries: 0\n");
    project.write("tenants/001_items.sql", "create table {schema}.items (id bigint);\n");
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    let mut conn = connect(&url).await;
    tenants(&mut conn, 1).await;
    assert_eq!(code(&project.strata(&["apply", "--version", "t0"]).await), 0);
    // A reader on the worker holding the shard.
    let (shard, port): (String, i32) = sqlx::query_as(
        "select shard_name(table_name, shardid)::text, nodeport from citus_shards where table_name = 't0.items'::regclass",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let workers = list("STRATA_TEST_CITUS_WORKER_URLS");
    let worker = workers.iter().find(|w| w.contains(&format!(":{port}/"))).unwrap();
    let mut reader = connect(&format!("{worker}?application_name=worker_reader")).await;
    run(&mut reader, &format!("begin; select * from {shard}")).await;
    project.write("tenants/002_alter.sql", "alter table {schema}.items add column note text;\n");
    let started = Instant::now();
    let output = tokio::time::timeout(Duration::from_secs(60), project.strata(&["apply", "--version", "alter"]))
        .await
        .expect("the ALTER gave up instead of waiting behind the reader");
    let took = started.elapsed();
    assert_eq!(code(&output), 8, "{}", text(&output));
    assert!(text(&output).contains("gave up waiting for a lock"), "{}", text(&output));
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // The blocker named is the reader on the worker, with its lock on the
    // shard (Citus's global pid: the node's id, then the pid).
    let said = text(&output);
    let reader_pid: i32 = sqlx::query_scalar("select pg_backend_pid()").fetch_one(&mut reader).await.unwrap();
    let blocked_by = said.split("blocked by: ").nth(1).unwrap_or_else(|| panic!("no blocker named: {said}"));
    assert!(
        blocked_by.contains(&format!("{reader_pid} on 127.0.0.1:{port} worker_reader (idle in transaction")),
        "{said}"
    );
    assert!(blocked_by.contains(&format!("holds {shard} AccessShareLock")), "{said}");
    eprintln!("the ALTER gave up after {:.2} s (lock time-out 300 ms, on the worker)", took.as_secs_f64());
    run(&mut reader, "rollback").await;
    assert_eq!(code(&project.strata(&["apply", "--version", "alter"]).await), 0);
}

/// For each tenant: the files whose rows its log holds, and the files
/// recorded for it, must be the same.
async fn applied_is_recorded(conn: &mut PgConnection, n: usize) -> (usize, usize) {
    let (mut applied_total, mut recorded_total) = (0, 0);
    for i in 0..n {
        let mut applied = strings(conn, &format!("select file from t{i}.log order by 1")).await;
        applied.dedup();
        let recorded = strings(
            conn,
            &format!(
                "select substr(filename, 9, 4) from svc.svc_migrations where db_schema = 't{i}' \
                 and filename <> 'tenants/000_log.sql' order by 1"
            ),
        )
        .await;
        assert_eq!(applied, recorded, "t{i}: applied vs recorded");
        applied_total += applied.len();
        recorded_total += recorded.len();
    }
    (applied_total, recorded_total)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_mid_version_is_a_lost_connection_every_time() {
    let Some(url) = citus_url("a_worker_killed_mid_version") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let rounds: usize = std::env::var("STRATA_TEST_CITUS_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(10);
    let n = 40;
    let project = Project::new(&url, "tenantConcurrency: 4\n");
    project.write("tenants/000_log.sql", "create table {schema}.log (file text);\n");
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    let mut conn = connect(&url).await;
    tenants(&mut conn, n).await;
    assert_eq!(code(&project.strata(&["apply", "--version", "tenants"]).await), 0);
    let data = list("STRATA_TEST_CITUS_WORKER_DATA");
    let victim = &data[1];
    for round in 0..rounds {
        for part in ["a", "b", "c"] {
            project.write(
                &format!("tenants/r{round:02}{part}.sql"),
                &format!(
                    "create table {{schema}}.r{round:02}{part} (id bigint);\n\
                     insert into {{schema}}.log (file) values ('r{round:02}{part}');\nselect pg_sleep(0.04);\n"
                ),
            );
        }
        let config = project.path();
        let apply = tokio::spawn(async move { strata(&config, &["apply", "--version", "round"]).await });
        // At a later point each round, within the version (about 3 s).
        tokio::time::sleep(Duration::from_millis(700 + 120 * (round % 10) as u64)).await;
        assert!(pg_ctl(&format!("-D {victim} -m immediate stop")).await, "worker stopped");
        let output = apply.await.unwrap();
        let said = text(&output);
        eprintln!("round {round}: exit {}: {}", code(&output), said.lines().last().unwrap_or_default());
        assert_eq!(code(&output), 5, "round {round}: {said}");
        assert!(said.contains("lost"), "round {round}: {said}");
        assert!(said.contains("not committed"), "round {round}: {said}");
        workers_up().await;
        // A new session (this one's connection to the worker broke), and
        // the transactions prepared on the worker before it died settled
        // by the coordinator's record (Citus does this every minute).
        conn = connect(&url).await;
        run(&mut conn, "select recover_prepared_transactions()").await;
        let (applied, recorded) = applied_is_recorded(&mut conn, n).await;
        assert_eq!(applied, recorded);
        let output = project.strata(&["apply", "--version", "rest"]).await;
        assert_eq!(code(&output), 0, "round {round}, the rest: {}", text(&output));
        let (applied, _) = applied_is_recorded(&mut conn, n).await;
        assert_eq!(applied, n * 3 * (round + 1), "round {round}: every file once everywhere");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_linter_warns_of_what_citus_refuses() {
    let Some(url) = citus_url("the_linter_warns") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "");
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    tenants(&mut connect(&url).await, 1).await;
    project.write(
        "tenants/001_refused.sql",
        "create table {schema}.a (id serial primary key, b_id bigint references shared.b (id));\n\
         create index a_id on {schema}.a (id);\n\
         update {schema}.a set id = random() * 10;\n\
         create trigger t before insert on {schema}.a for each row execute function f();\n",
    );
    // Detected on the coordinator.
    let output = project.strata(&["lint", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", text(&output)));
    let rules: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap()).collect();
    for rule in [
        "citus-small-sequence",
        "citus-foreign-key-across-schemas",
        "citus-ddl-among-statements",
        "citus-volatile-in-update",
        "citus-trigger",
    ] {
        assert!(rules.contains(&rule), "{rule} in {rules:?}");
    }
    // Configured, without a database: `lint --all`.
    let offline = project.config("offline.yaml", "postgres://nobody@127.0.0.1:1/none", "citus: true\n");
    let output = strata(&offline, &["lint", "--all", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", text(&output)));
    assert!(report["findings"].as_array().unwrap().iter().any(|f| f["rule"] == "citus-trigger"), "{report}");
    // Not on a plain configuration without Citus.
    let plain = project.config("plain.yaml", "postgres://nobody@127.0.0.1:1/none", "");
    let output = strata(&plain, &["lint", "--all", "--json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", text(&output)));
    assert!(!report["findings"].as_array().unwrap().iter().any(|f| f["rule"].as_str().unwrap().starts_with("citus-")));
}

/// The node (`host:port`) holding a tenant's shards.
async fn node_of(conn: &mut PgConnection, tenant: &str) -> String {
    let sql =
        format!("select min(nodename || ':' || nodeport) from citus_shards where table_name::text like '{tenant}.%'");
    strings(conn, &sql).await.remove(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_moves_to_another_worker_but_not_while_a_version_runs() {
    let Some(url) = citus_url("a_tenant_moves") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "");
    project.write("tenants/001_items.sql", "create table {schema}.items (id bigint primary key);\n");
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    let mut conn = connect(&url).await;
    tenants(&mut conn, 1).await;
    assert_eq!(code(&project.strata(&["apply", "--version", "t0"]).await), 0);
    let from = node_of(&mut conn, "t0").await;
    let ports = list("STRATA_TEST_CITUS_WORKER_PORTS");
    let to = format!("127.0.0.1:{}", ports.iter().find(|p| !from.ends_with(&format!(":{p}"))).unwrap());

    // While another mutation holds the lock: refused, nothing moved.
    run(&mut conn, "insert into svc.svc_lock values (1, 'another', clock_timestamp() + interval '1 minute')").await;
    let refused = project.strata(&["tenants", "move", "t0", "--to", &to, "--mode", "block_writes"]).await;
    assert_eq!(code(&refused), 1, "{}", text(&refused));
    assert!(text(&refused).contains("a version is running"), "{}", text(&refused));
    assert_eq!(node_of(&mut conn, "t0").await, from);
    run(&mut conn, "delete from svc.svc_lock").await;

    // Not a tenant.
    let unknown = project.strata(&["tenants", "move", "nobody", "--to", &to]).await;
    assert_eq!(code(&unknown), 1, "{}", text(&unknown));
    assert!(text(&unknown).contains("nobody is not a tenant"), "{}", text(&unknown));

    let moved = project.strata(&["tenants", "move", "t0", "--to", &to, "--mode", "block_writes"]).await;
    assert_eq!(code(&moved), 0, "{}", text(&moved));
    assert_eq!(node_of(&mut conn, "t0").await, to);
    let listed = text(&project.strata(&["tenants"]).await);
    assert!(listed.contains(&format!("t0  on {to}")), "{listed}");
    // The lock was given back: a version runs after the move.
    project.write("tenants/002_more.sql", "alter table {schema}.items add column note text;\n");
    assert_eq!(code(&project.strata(&["apply", "--version", "after"]).await), 0);
}

/// The worker URL of `node` (`host:port`).
fn worker_url(node: &str) -> String {
    let port = node.rsplit(':').next().unwrap();
    list("STRATA_TEST_CITUS_WORKER_URLS").into_iter().find(|w| w.contains(&format!(":{port}/"))).unwrap()
}

/// The name of the shard of `table` (`schema.table`).
async fn shard_of(conn: &mut PgConnection, table: &str) -> String {
    let sql = format!(
        "select shard_name(table_name, shardid)::text from citus_shards where table_name = '{table}'::regclass"
    );
    strings(conn, &sql).await.remove(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn drift_of_a_change_made_on_a_worker() {
    let Some(url) = citus_url("drift_of_a_change_made_on_a_worker") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "");
    project.write(
        "tenants/001_users.sql",
        "create table {schema}.orgs (id bigint primary key);\n\
         create table {schema}.users (id bigserial primary key, name text not null default 'x', \
         org bigint references {schema}.orgs (id));\n\
         create index users_name on {schema}.users (name);\n",
    );
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    let mut conn = connect(&url).await;
    tenants(&mut conn, 4).await;
    let applied = project.strata(&["apply", "--version", "users"]).await;
    assert_eq!(code(&applied), 0, "{}", text(&applied));

    // Every tenant's shards have their own ids: they compare alike all the same.
    let clean_drift = project.strata(&["drift", "--json"]).await;
    assert_eq!(code(&clean_drift), 0, "{}", text(&clean_drift));
    let parsed: Value =
        serde_json::from_slice(&clean_drift.stdout).unwrap_or_else(|_| panic!("{}", text(&clean_drift)));
    assert_eq!(parsed["outliers"], json!([]), "{parsed}");
    assert_eq!(parsed["changed"], json!([]), "{parsed}");
    assert_eq!(parsed["tenants"], 4, "{parsed}");

    // By hand, on the workers: a column added to t2's shard, an index of
    // t3's shard dropped. The coordinator's catalog knows nothing of them.
    let shard = shard_of(&mut conn, "t2.users").await;
    let mut worker = connect(&worker_url(&node_of(&mut conn, "t2").await)).await;
    run(&mut worker, &format!("alter table {shard} add column hand integer")).await;
    let shard = shard_of(&mut conn, "t3.users").await;
    let index = format!("t3.users_name_{}", shard.rsplit('_').next().unwrap());
    let mut worker = connect(&worker_url(&node_of(&mut conn, "t3").await)).await;
    run(&mut worker, &format!("drop index {index}")).await;
    assert_eq!(
        scalar(
            &mut conn,
            "select count(*) from pg_attribute where attrelid = 't2.users'::regclass and attname = 'hand'"
        )
        .await,
        0
    );

    let drift = project.strata(&["drift", "--json"]).await;
    assert_eq!(code(&drift), 10, "{}", text(&drift));
    let parsed: Value = serde_json::from_slice(&drift.stdout).unwrap_or_else(|_| panic!("{}", text(&drift)));
    let schemas = |key: &str| -> Vec<String> {
        parsed[key].as_array().unwrap().iter().map(|o| o["schema"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(schemas("outliers"), ["t2", "t3"], "{parsed}");
    assert_eq!(schemas("changed"), ["t2", "t3"], "{parsed}");
    let t2 = &parsed["outliers"][0]["differences"];
    assert_eq!(
        t2,
        &json!([{"change": "added", "kind": "shard column", "name": "users.hand", "expected": null, "found": "integer"}]),
        "{parsed}"
    );
    let t3 = &parsed["outliers"][1]["differences"][0];
    assert_eq!(
        (&t3["change"], &t3["kind"], &t3["name"]),
        (&json!("missing"), &json!("shard index"), &json!("users_name")),
        "{parsed}"
    );
    let said = text(&project.strata(&["drift"]).await);
    assert!(said.contains("t2 differs from"), "{said}");
    assert!(said.contains("+ shard column users.hand: integer"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_single_schema_directory_of_reference_tables_stays_on_the_coordinator() {
    let Some(url) = citus_url("a_single_schema_directory_of_reference_tables") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "citusReferenceTables: [ref]\n");
    project.write(
        "ref/001_countries.sql",
        "create schema if not exists {schema};\n\
         create table {schema}.countries (code text primary key, name text not null);\n\
         insert into {schema}.countries values ('FR', 'France'), ('DE', 'Germany');\n",
    );
    project.write(
        "tenants/001_addresses.sql",
        "create table {schema}.addresses (id bigint primary key, country text not null references ref.countries (code));\n",
    );
    let mut conn = connect(&url).await;
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    tenants(&mut conn, 2).await;
    let applied = project.strata(&["apply", "--version", "tenants"]).await;
    assert_eq!(code(&applied), 0, "{}", text(&applied));

    // The single schema is the coordinator's, its table a reference table
    // with a copy on every worker; the tenants are distributed schemas.
    assert_eq!(distributed(&mut conn).await, ["t0", "t1"]);
    let kind = "select citus_table_type::text from citus_tables where table_name = 'ref.countries'::regclass";
    assert_eq!(strings(&mut conn, kind).await, ["reference"]);
    let ports = list("STRATA_TEST_CITUS_WORKER_PORTS");
    let placed = "select nodeport::text from citus_shards where table_name = 'ref.countries'::regclass order by 1";
    let placed = strings(&mut conn, placed).await;
    assert!(ports.iter().all(|p| placed.contains(p)), "{placed:?}");
    for worker in list("STRATA_TEST_CITUS_WORKER_URLS") {
        let mut on_worker = connect(&worker).await;
        assert_eq!(scalar(&mut on_worker, "select count(*) from ref.countries").await, 2, "{worker}");
    }
    // The tenants' foreign key to it holds on their workers.
    run(&mut conn, "insert into t0.addresses values (1, 'FR')").await;
    let refused = sqlx::raw_sql("insert into t1.addresses values (1, 'XX')").execute(&mut conn).await.unwrap_err();
    assert!(refused.to_string().contains("foreign key"), "{refused}");

    // A later file of the directory: its new table too, the first unchanged.
    project.write("ref/002_currencies.sql", "create table {schema}.currencies (code text primary key);\n");
    assert_eq!(code(&project.strata(&["apply", "--version", "more"]).await), 0);
    let kinds = "select table_name::text || ' ' || citus_table_type from citus_tables \
                 where table_name::text like 'ref.%' order by 1";
    assert_eq!(strings(&mut conn, kinds).await, ["ref.countries reference", "ref.currencies reference"]);
    assert_eq!(scalar(&mut conn, "select count(*) from svc.svc_migrations").await, 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_tenant_colocated_with_another_lands_on_its_node() {
    let Some(url) = citus_url("a_new_tenant_colocated_with_another") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "");
    project.write("tenants/001_items.sql", "create table {schema}.items (id bigint primary key);\n");
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    let mut conn = connect(&url).await;
    tenants(&mut conn, 1).await;
    assert_eq!(code(&project.strata(&["apply", "--version", "t0"]).await), 0);
    let home = node_of(&mut conn, "t0").await;

    // Four new tenants with t0 (Citus alone spreads new schemas over both
    // workers): every one on t0's node, through the API and the CLI.
    let served = project.serve().await;
    let with = |name: &str, other: &str| json!({ "tenantName": name, "versionName": name, "colocateWith": other });
    for name in ["c1", "c2", "c3"] {
        let answer = served.create_tenant_with(with(name, "t0")).await;
        assert_eq!(answer["data"]["createTenant"]["summary"]["tenantMigrations"], 1, "{answer}");
        assert_eq!(node_of(&mut conn, name).await, home, "{name}");
    }
    // Refused before anything runs: no such tenant, nothing created.
    let unknown = served.create_tenant_with(with("c9", "nobody")).await;
    assert_eq!(unknown["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{unknown}");
    assert!(
        unknown["errors"][0]["message"].as_str().unwrap().contains("colocateWith: nobody is not a tenant"),
        "{unknown}"
    );
    drop(served);
    assert_eq!(scalar(&mut conn, "select count(*) from pg_namespace where nspname = 'c9'").await, 0);
    let cli = project.strata(&["apply", "--version", "c4", "--tenant", "c4", "--colocate-with", "t0"]).await;
    assert_eq!(code(&cli), 0, "{}", text(&cli));
    assert_eq!(node_of(&mut conn, "c4").await, home);
    let listed = text(&project.strata(&["tenants"]).await);
    for name in ["t0", "c1", "c2", "c3", "c4"] {
        assert!(listed.contains(&format!("{name}  on {home}")), "{listed}");
    }
}

/// What a tenant's file leaves in its session — a setting, the search
/// path, a session advisory lock — ends with its unit on Citus too (the
/// session is given back after the distributed commit): six tenants, one
/// connection after another (`tenantConcurrency: 1`), each file reading
/// first what the session holds, then setting all three. Every tenant
/// reads the service's own session.
#[tokio::test(flavor = "multi_thread")]
async fn a_files_session_ends_with_its_unit_on_citus() {
    let Some(url) = citus_url("a_files_session_ends_with_its_unit") else { return };
    let _turn = TURN.lock().await;
    clean(&url).await;
    let project = Project::new(&url, "tenantConcurrency: 1\n");
    assert_eq!(code(&project.strata(&["apply", "--version", "install"]).await), 0);
    let mut conn = connect(&url).await;
    tenants(&mut conn, 6).await;
    project.write("tenants/000_seen.sql", "create table {schema}.seen (app text, path text, locks bigint);\n");
    project.write(
        "tenants/001_session.sql",
        "insert into {schema}.seen select current_setting('application_name'), current_setting('search_path'), \
         count(*) from pg_locks where locktype = 'advisory' and objid = 424204 and pid = pg_backend_pid();\n\
         set application_name = 'set_by_a_file';\nset search_path = {schema};\nselect pg_advisory_lock(424204);\n",
    );
    let output = project.strata(&["apply", "--version", "session"]).await;
    assert_eq!(code(&output), 0, "{}", text(&output));
    let mut seen = Vec::new();
    for i in 0..6 {
        let rows = strings(&mut conn, &format!("select app || ' | ' || path || ' | ' || locks from t{i}.seen")).await;
        seen.push(rows.join(";"));
    }
    let first = seen[0].clone();
    assert!(first.ends_with("| \"$user\", public | 0"), "{first}");
    assert!(seen.iter().all(|s| *s == first), "a tenant's unit ran in the session another's file left: {seen:?}");
}
