//! A fleet on three PostgreSQL servers with default settings (`shards:`;
//! PostgreSQL runs of the suite only): single schemas on the home shard,
//! tenants on all three, one version over all of them; a shard stopped in
//! the middle of a version stops nothing elsewhere, and once it is back the
//! next version completes it — per tenant and file, executed once ⇔
//! recorded once, also when the service is killed (SIGKILL) at random
//! points of a version. Health, metrics, GraphQL and the CLI name each shard.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::PgConnection;

use crate::backfills::{TOUCH_ITEMS, items_sql, settled, version_waiting};
use crate::rollouts::wait_for;
use crate::support::{Backend, Server, Workspace, backend, json_of, stdout, strata};
use crate::topologies::{admin, code, env, fresh_database, pg_ctl, run, scalar, text, with_database};

const SHARDS: [&str; 3] = ["a", "b", "c"];
const PER_SHARD: usize = 12;

/// Shard c's server: one test at a time (one stops it, another starts it
/// when it finds it down).
static SHARD_C: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The tenants of shard `index`: `a0`…, `b0`…, `c0`….
fn tenants_of(index: usize) -> Vec<String> {
    (0..PER_SHARD).map(|i| format!("{}{i}", SHARDS[index])).collect()
}

/// The workspace's configuration with `shards:` instead of `dataSource`.
fn sharded_config(ws: &Workspace, urls: &[String], extra: &str) -> String {
    let mut shards = String::from("shards:\n");
    for (name, url) in SHARDS.iter().zip(urls) {
        shards.push_str(&format!("  - name: {name}\n    dataSource: {url}\n"));
    }
    let yaml = ws.config(extra).replace(&format!("dataSource: {}\n", ws.pg_url_public()), &shards);
    assert!(yaml.contains("shards:") && !yaml.lines().any(|line| line.starts_with("dataSource:")), "{yaml}");
    yaml
}

/// Per tenant of shard `index`: the table holds `once` then `again`, each
/// file recorded once, in that shard's own books; nothing recorded twice;
/// no lease left.
async fn executed_once_recorded_once(conn: &mut PgConnection, index: usize, stamp: &str) {
    for tenant in tenants_of(index) {
        let notes: Vec<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("select note from {tenant}.f order by id")))
                .fetch_all(&mut *conn)
                .await
                .unwrap_or_else(|e| panic!("{tenant}.f: {e}"));
        assert_eq!(notes, ["once", "again"], "tenant {tenant}");
        let sql = format!(
            "select count(*) from svc.svc_migrations where db_schema = '{tenant}' and filename like 'tenants/{stamp}%'"
        );
        assert_eq!(scalar(conn, &sql).await, 2, "tenant {tenant}: recorded rows of {stamp}");
    }
    let twice = "select count(*) from (select 1 from svc.svc_migrations where filename not like 'scripts/%' \
                 group by db_schema, filename having count(*) > 1) d";
    assert_eq!(scalar(conn, twice).await, 0, "a file recorded twice in a schema on shard {}", SHARDS[index]);
    assert_eq!(scalar(conn, "select count(*) from svc.svc_lock").await, 0, "a lease was left behind");
}

/// A server over a fresh database on each of the three PostgreSQL servers
/// (shard c's started first if an earlier run left it stopped), `extra`
/// added to its configuration; with the servers' admin URLs and the
/// shards' URLs. The caller holds [`SHARD_C`].
async fn on_three_servers(extra: &str) -> (Server, Vec<String>, Vec<String>) {
    let admins: Vec<String> = env("STRATA_TEST_PG_SHARD_URLS").split(',').map(str::to_string).collect();
    assert_eq!(admins.len(), 3);
    if <PgConnection as sqlx::Connection>::connect(&admins[2]).await.is_err() {
        start_shard_c(&admins[2]).await; // an earlier run failed while it was down
    }
    let ws = Workspace::new("fleet");
    let database = format!("strata_shards_{}", ws.port);
    let urls: Vec<String> = admins.iter().map(|url| with_database(url, &database)).collect();
    for url in &admins {
        fresh_database(url, &database).await;
    }
    let yaml = sharded_config(&ws, &urls, extra);
    (Server::start_in(ws, &yaml, "").await, admins, urls)
}

/// Every tenant through `tenants(first:, after:)`, five a page (each shard
/// asked for its own page, merged): the unpaged list in byte order, each
/// with its shard.
async fn paged_is_whole(server: &Server, whole: &serde_json::Value) {
    let mut expected: Vec<serde_json::Value> = whole.as_array().unwrap().clone();
    expected.sort_by(|a, b| a["name"].as_str().unwrap().cmp(b["name"].as_str().unwrap()));
    let mut paged = Vec::new();
    let mut after = serde_json::Value::Null;
    loop {
        let query = "query($after: String) { tenants(first: 5, after: $after) { name shard } }";
        let page = server.data(query, json!({ "after": after })).await["tenants"].as_array().unwrap().clone();
        let Some(last) = page.last() else { break };
        after = last["name"].clone();
        assert!(page.len() <= 5);
        paged.extend(page);
    }
    assert_eq!(paged, expected);
}

/// Starts shard c's server again, as `tests/servers.sh` started it.
async fn start_shard_c(url: &str) {
    let data = PathBuf::from(env("STRATA_TEST_PG_SHARD_C_DATA"));
    let dir = data.parent().unwrap().display().to_string();
    let port = url.rsplit_once(':').unwrap().1.split('/').next().unwrap().to_string();
    pg_ctl(&format!(
        "-D {} -o '-c listen_addresses=127.0.0.1 -p {port} -k {dir}' -l {dir}/log -w start",
        data.display()
    ))
    .await;
}

#[tokio::test]
async fn a_fleet_on_three_servers_finishes_elsewhere_when_one_stops_and_completes_once_back() {
    if backend() != Backend::Postgres {
        return;
    }
    let _turn = SHARD_C.lock().await;
    let (server, admins, urls) = on_three_servers("tenantConcurrency: 2\n").await;
    let config = server.config_path().to_path_buf();

    // The first version: the single schema on the home shard only, the
    // service's tables on every shard.
    let first = strata(&config, &["apply", "--version", "ref"]).await;
    assert_eq!(code(&first), 0, "{}", text(&first));
    let mut conns = Vec::new();
    for url in &urls {
        conns.push(admin(url).await);
    }
    let has_ref = "select count(*) from information_schema.tables where table_schema = 'ref' and table_name = 'roles'";
    assert_eq!(scalar(&mut conns[0], has_ref).await, 1);
    for conn in &mut conns[1..] {
        assert_eq!(scalar(conn, has_ref).await, 0, "a single schema ran on another shard");
        assert_eq!(scalar(conn, "select count(*) from svc.svc_versions").await, 0);
    }
    for (index, conn) in conns.iter_mut().enumerate() {
        for tenant in tenants_of(index) {
            run(conn, &format!("create schema {tenant}; insert into svc.svc_tenants (name) values ('{tenant}')")).await;
        }
    }

    // Every tenant with its shard, in GraphQL; the shards with their counts.
    let tenants = server.data("{ tenants { name shard } shards { name tenantCount } }", json!({})).await;
    assert_eq!(
        tenants["shards"],
        json!([
            { "name": "a", "tenantCount": PER_SHARD }, { "name": "b", "tenantCount": PER_SHARD },
            { "name": "c", "tenantCount": PER_SHARD }
        ])
    );
    let listed = tenants["tenants"].as_array().unwrap();
    assert_eq!(listed.len(), 3 * PER_SHARD);
    assert!(listed.contains(&json!({ "name": "b3", "shard": "b" })), "{tenants}");
    paged_is_whole(&server, &tenants["tenants"]).await;

    // A version over the fleet; shard c stops (immediate: like a crash)
    // once some of its tenants committed.
    server.ws.write_migration(
        "tenants/300a.sql",
        "create table {schema}.f (id serial primary key, note text);\n\
         insert into {schema}.f (note) values ('once');\nselect pg_sleep(0.15);\n",
    );
    server.ws.write_migration("tenants/300b.sql", "insert into {schema}.f (note) values ('again');\n");
    let apply = tokio::spawn({
        let config = config.clone();
        async move { strata(&config, &["apply", "--version", "interrupted"]).await }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut on_c = admin(&urls[2]).await;
    while scalar(&mut on_c, "select count(*) from svc.svc_migrations where filename like 'tenants/300%'").await < 4 {
        assert!(Instant::now() < deadline, "the version did not get going on shard c");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(on_c);
    pg_ctl(&format!("-D {} -m immediate stop", env("STRATA_TEST_PG_SHARD_C_DATA"))).await;
    let interrupted = apply.await.unwrap();
    let message = text(&interrupted);
    eprintln!("the interrupted version said: {message}");
    assert_eq!(code(&interrupted), 12, "{message}");
    assert!(message.contains("did not finish on 1 shard(s) — shard c: "), "{message}");
    assert!(message.contains("finished on: a (version "), "{message}");
    assert!(message.contains("schema(s) not committed (c"), "the tenants left on the shard that stopped: {message}");
    assert!(
        message.contains("run the version again once the others are fixed or reachable")
            && !message.contains("quarantine retry"),
        "c stopped mid-version: nothing was put aside, a version completes it: {message}"
    );
    let mut c_tenants = tenants_of(2);
    c_tenants.sort(); // as the directory lists them
    assert!(!message.contains(" at line "), "an engine source line leaked: {message}");
    for index in [0, 1] {
        executed_once_recorded_once(&mut conns[index], index, "300").await;
    }

    // While c is down: health names it, the others are up.
    let health = server.get("/health").await;
    assert_eq!(health.status().as_u16(), 503);
    let body: serde_json::Value = health.json().await.unwrap();
    let checks = body["checks"].as_array().unwrap();
    let status_of = |name: &str| checks.iter().find(|c| c["name"] == name).map(|c| c["status"].clone());
    assert_eq!(status_of("DB:a"), Some(json!("UP")), "{body}");
    assert_eq!(status_of("DB:b"), Some(json!("UP")), "{body}");
    assert_eq!(status_of("DB:c"), Some(json!("DOWN")), "{body}");
    assert_eq!(server.metric("svc_http_shard_up{shard=\"c\"}").await, 0.0);
    assert_eq!(server.metric("svc_http_shard_up{shard=\"a\"}").await, 1.0);

    // While c is down, the directory on the home shard says what it holds:
    // the tenant list keeps its tenants, and a version names them.
    let directory = "select count(*) from svc.svc_directory where shard = 'c'";
    assert_eq!(scalar(&mut conns[0], directory).await, PER_SHARD as i64);
    let c_down = json!([
        { "name": "a", "tenantCount": PER_SHARD, "reachable": true },
        { "name": "b", "tenantCount": PER_SHARD, "reachable": true },
        { "name": "c", "tenantCount": PER_SHARD, "reachable": false }
    ]);
    let listed = server.data("{ tenants { name shard } shards { name tenantCount reachable } }", json!({})).await;
    assert_eq!(listed["shards"], c_down);
    assert!(listed["tenants"].as_array().unwrap().contains(&json!({ "name": "c3", "shard": "c" })), "{listed}");
    paged_is_whole(&server, &listed["tenants"]).await;
    // The fleet matrix: a and b as they stand, c's tenants unknown.
    let matrix = server.data("{ fleet { files tenants { name shard states } } }", json!({})).await;
    let rows = matrix["fleet"]["tenants"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * PER_SHARD, "{matrix}");
    let row = |name: &str| rows.iter().find(|row| row["name"] == name).unwrap().clone();
    let files = matrix["fleet"]["files"].as_array().unwrap().len();
    assert_eq!(row("c3"), json!({ "name": "c3", "shard": "c", "states": vec!["Unknown"; files] }));
    assert_eq!(row("a3"), json!({ "name": "a3", "shard": "a", "states": vec!["Applied"; files] }));
    let blocked = server.create_version(json!({ "versionName": "while c is down" })).await;
    assert_eq!(blocked["errors"][0]["extensions"]["code"], "SHARDS_FAILED", "{blocked}");
    assert_eq!(
        blocked["errors"][0]["extensions"]["failedShards"],
        json!([{ "shard": "c", "tenants": c_tenants, "quarantined": true }]),
        "{blocked}"
    );
    let said = blocked["errors"][0]["message"].as_str().unwrap();
    assert!(said.contains("once a shard is back, `strata quarantine retry`"), "the advice names the retry: {said}");
    assert!(!said.contains("run the version again"), "a version does not complete quarantined tenants: {said}");
    assert!(
        said.contains(&format!(
            "its {PER_SHARD} tenant(s) are quarantined (SHARD_UNREACHABLE) until they are retried once it is back: {}",
            c_tenants.join(", ")
        )),
        "{said}"
    );

    // Its tenants are quarantined on the home shard while c is down: the
    // quarantine lists them (c's own is out of reach), and each version
    // that cannot reach c counts one more failure.
    let quarantine = "{ quarantine { tenant cause message failures } }";
    let held = server.data(quarantine, json!({})).await;
    let held = held["quarantine"].as_array().unwrap().clone();
    assert_eq!(held.iter().map(|q| q["tenant"].as_str().unwrap()).collect::<Vec<_>>(), c_tenants, "{held:?}");
    for row in &held {
        assert_eq!(row["cause"], "SHARD_UNREACHABLE", "{row}");
        assert!(row["message"].as_str().unwrap().starts_with("shard c unreachable: "), "{row}");
    }
    let on_home = "select count(*) from svc.svc_quarantine where cause = 'SHARD_UNREACHABLE'";
    assert_eq!(scalar(&mut conns[0], on_home).await, PER_SHARD as i64);
    let again = server.create_version(json!({ "versionName": "still down" })).await;
    assert_eq!(again["errors"][0]["extensions"]["code"], "SHARDS_FAILED", "{again}");
    let counted = server.data(quarantine, json!({})).await;
    for (before, after) in held.iter().zip(counted["quarantine"].as_array().unwrap()) {
        assert_eq!(after["failures"].as_i64().unwrap(), before["failures"].as_i64().unwrap() + 1, "{after}");
    }

    // The command line while c is down: its tenants as last seen, the
    // status of a and b; both say so with exit 12.
    let listed = strata(&config, &["tenants", "--json"]).await;
    assert_eq!(code(&listed), 12, "{}", text(&listed));
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["shards"], c_down, "the same as GraphQL's");
    let line = |name: &str| listed["tenants"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned();
    assert_eq!(line("c3"), Some(json!({ "name": "c3", "shard": "c", "reachable": false, "quarantined": true })));
    assert_eq!(line("a3"), Some(json!({ "name": "a3", "shard": "a", "reachable": true, "quarantined": false })));
    let only_c = strata(&config, &["tenants", "--shard", "c"]).await;
    let only_c_text = String::from_utf8_lossy(&only_c.stdout).into_owned();
    assert_eq!(code(&only_c), 12, "{}", text(&only_c));
    assert!(
        only_c_text.starts_with(&format!(
            "{PER_SHARD} tenant(s), {PER_SHARD} quarantined, on 1 shard(s): c {PER_SHARD}, not answering: as last seen.\n"
        )),
        "{only_c_text}"
    );
    assert!(
        only_c_text
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["c3", "@c", "unreachable", "quarantined"])
    );
    assert!(!only_c_text.contains("a3"), "{only_c_text}");
    let status = strata(&config, &["status", "--json"]).await;
    assert_eq!(code(&status), 12, "{}", text(&status));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["tenants"], 3 * PER_SHARD, "{status}");
    let unreachable = status["unreachableShards"].as_array().unwrap();
    assert_eq!(unreachable.len(), 1, "{status}");
    assert_eq!((&unreachable[0]["shard"], &unreachable[0]["tenants"]), (&json!("c"), &json!(c_tenants)), "{status}");
    assert!(status["pending"].as_array().unwrap().iter().all(|p| !p["schema"].as_str().unwrap().starts_with('c')));

    // A rollout while c is down: its wave finishes on a and b, fails on c,
    // and the rollout stops.
    server.ws.write_migration("tenants/301.sql", "create table {schema}.g (id integer);\n");
    let started =
        server.data(r#"mutation { startRollout(versionName: "g", waves: ["rest"]) { id } }"#, json!({})).await;
    let rollout = started["startRollout"]["id"].as_i64().unwrap();
    let stopped = wait_for(&server, rollout, "STOPPED").await;
    let failed = stopped["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(failed["action"], "wave-failed", "{stopped}");
    assert!(failed["detail"].as_str().unwrap().contains("shard c: shard c unreachable: "), "{failed}");
    let on_a = "select count(*) from svc.svc_migrations where filename = 'tenants/301.sql'";
    assert_eq!(scalar(&mut conns[0], on_a).await, PER_SHARD as i64, "a finished the wave");
    assert_eq!(scalar(&mut conns[1], on_a).await, PER_SHARD as i64, "b finished the wave");

    // c is back: the next version hands its tenants over to c's own
    // quarantine and skips them there (a and b have nothing left to do);
    // the rollout, resumed, runs its wave again without them; a retry
    // completes them, in order, once each. The stopped rollout holds plain
    // versions: this one overrides it, explicitly.
    start_shard_c(&admins[2]).await;
    let held = server
        .graphql("mutation { createVersion(input: { versionName: \"after restart\" }) { version { id } } }", json!({}))
        .await;
    assert_eq!(held["errors"][0]["extensions"]["code"], "ROLLOUT_IN_PROGRESS", "{held}");
    let done = server
        .graphql(
            "mutation { createVersion(input: { versionName: \"after restart\", overrideRollout: true }) { skippedTenants version { id } } }",
            json!({}),
        )
        .await;
    assert!(done.get("errors").is_none(), "{done}");
    let sorted = |list: &serde_json::Value| {
        let mut names: Vec<String> =
            list.as_array().unwrap().iter().map(|name| name.as_str().unwrap().to_string()).collect();
        names.sort();
        names
    };
    assert_eq!(sorted(&done["data"]["createVersion"]["skippedTenants"]), c_tenants, "{done}");
    let mut on_c = admin(&urls[2]).await;
    assert_eq!(scalar(&mut conns[0], "select count(*) from svc.svc_quarantine").await, 0, "handed over");
    assert_eq!(scalar(&mut on_c, on_home).await, PER_SHARD as i64, "in c's own quarantine");
    // Handed over, they stay in sight: the quarantine, the tenant list and
    // status show them with their shard and cause until a retry.
    let listed = json_of(&strata(&config, &["quarantine", "list", "--json"]).await);
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|row| row["tenant"].as_str().unwrap()).collect();
    assert_eq!(names, c_tenants, "quarantine list after the hand-over: {listed}");
    assert!(listed.as_array().unwrap().iter().all(|row| row["cause"] == "SHARD_UNREACHABLE"), "{listed}");
    let seen = server.data(quarantine, json!({})).await;
    assert_eq!(seen["quarantine"].as_array().unwrap().len(), PER_SHARD, "GraphQL after the hand-over: {seen}");
    let tenants_now = strata(&config, &["tenants"]).await;
    assert_eq!(code(&tenants_now), 0, "{}", text(&tenants_now));
    assert!(
        stdout(&tenants_now).starts_with(&format!("{} tenant(s), {PER_SHARD} quarantined", 3 * PER_SHARD)),
        "{}",
        stdout(&tenants_now)
    );
    let status_now = json_of(&strata(&config, &["status", "--json"]).await);
    for pending in status_now["pending"].as_array().unwrap() {
        let on_c = pending["schema"].as_str().unwrap().starts_with('c');
        assert_eq!(pending["quarantined"], json!(on_c), "status shows what is quarantined: {status_now}");
    }
    let resumed = server.graphql(&format!("mutation {{ resumeRollout(id: {rollout}) {{ id }} }}"), json!({})).await;
    assert!(resumed.get("errors").is_none(), "{resumed}");
    let completed = wait_for(&server, rollout, "COMPLETED").await;
    assert_eq!(scalar(&mut on_c, on_a).await, 0, "the wave skipped c's quarantined tenants: {completed}");
    let retried = server
        .graphql("mutation { retryQuarantined(input: { versionName: \"c is back\" }) { releasedTenants } }", json!({}))
        .await;
    assert!(retried.get("errors").is_none(), "{retried}");
    assert_eq!(sorted(&retried["data"]["retryQuarantined"]["releasedTenants"]), c_tenants, "{retried}");
    assert_eq!(server.data(quarantine, json!({})).await["quarantine"], json!([]));
    executed_once_recorded_once(&mut on_c, 2, "300").await;
    assert_eq!(scalar(&mut on_c, on_a).await, PER_SHARD as i64, "the retry ran the rollout's file in c's tenants");
    for index in [0, 1] {
        executed_once_recorded_once(&mut conns[index], index, "300").await;
    }
    let health = server.get("/health").await;
    assert_eq!(health.status().as_u16(), 200);

    // One version, one identity: the interrupted version is listed once,
    // under the home shard's id, with its part on each shard; any part's
    // id (the one the error named) reads the whole version.
    let versions = server.data("{ versions { id name parts { shard id } } }", json!({})).await;
    let versions = versions["versions"].as_array().unwrap().clone();
    let interrupted: Vec<&serde_json::Value> = versions.iter().filter(|v| v["name"] == "interrupted").collect();
    assert_eq!(interrupted.len(), 1, "{versions:?}");
    let parts = interrupted[0]["parts"].as_array().unwrap();
    assert_eq!(parts.iter().map(|p| p["shard"].as_str().unwrap()).collect::<Vec<_>>(), ["a", "b", "c"], "{parts:?}");
    let part_ids: Vec<i64> = parts.iter().map(|p| p["id"].as_i64().unwrap()).collect();
    assert_eq!(part_ids.iter().map(|id| id % 10).collect::<Vec<_>>(), [0, 1, 2], "{parts:?}");
    assert_eq!(interrupted[0]["id"].as_i64(), Some(part_ids[0]));
    assert!(message.contains(&format!("in version {}", part_ids[2])), "{message}");
    let names: BTreeSet<&str> = versions.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), versions.len(), "a version listed twice: {versions:?}");
    let count = json_of(&strata(&config, &["status", "--json"]).await);
    assert_eq!(count["versionCount"].as_u64(), Some(versions.len() as u64), "{count}");
    let read = server
        .data("query($id: Int!) { version(id: $id) { id name dbMigrations { schema } } }", json!({ "id": part_ids[2] }))
        .await;
    assert_eq!((&read["version"]["name"], read["version"]["id"].as_i64()), (&json!("interrupted"), Some(part_ids[0])));
    let schemas: BTreeSet<char> = read["version"]["dbMigrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["schema"].as_str().unwrap().chars().next().unwrap())
        .collect();
    assert_eq!(schemas, BTreeSet::from(['a', 'b', 'c']), "{read}");
    // Its first rows only, part after part: as the whole list has them.
    let whole = server
        .data("query($id: Int!) { version(id: $id) { dbMigrations { id schema } } }", json!({ "id": part_ids[0] }))
        .await;
    let whole = whole["version"]["dbMigrations"].as_array().unwrap().clone();
    for first in [0, 1, whole.len() / 2 + 1, whole.len(), whole.len() + 5] {
        let query = "query($id: Int!, $first: Int!) { version(id: $id) { dbMigrations(first: $first) { id schema } } }";
        let page = server.data(query, json!({ "id": part_ids[0], "first": first })).await;
        let expected = &whole[..first.min(whole.len())];
        assert_eq!(page["version"]["dbMigrations"].as_array().unwrap(), expected, "first {first}");
    }

    // A new tenant goes to the shard named, or to the one with the fewest.
    let named = strata(&config, &["apply", "--version", "new b", "--tenant", "nb", "--shard", "b"]).await;
    assert_eq!(code(&named), 0, "{}", text(&named));
    assert_eq!(scalar(&mut conns[1], "select count(*) from svc.svc_tenants where name = 'nb'").await, 1);
    let placed = server.create_tenant(json!({ "tenantName": "nx", "versionName": "new x" })).await;
    assert!(placed.get("errors").is_none(), "{placed}");
    assert_eq!(
        scalar(&mut conns[0], "select count(*) from svc.svc_tenants where name = 'nx'").await,
        1,
        "fewest: a (first of equals)"
    );
    let twice = strata(&config, &["apply", "--version", "dup", "--tenant", "nb", "--shard", "c"]).await;
    assert_eq!(code(&twice), 1, "{}", text(&twice));
    assert!(text(&twice).contains("tenant \"nb\" already exists"), "{}", text(&twice));
    let unknown = strata(&config, &["apply", "--version", "x", "--tenant", "ny", "--shard", "z"]).await;
    assert_eq!(code(&unknown), 2, "{}", text(&unknown));
    assert!(text(&unknown).contains("no shard is named \"z\""), "{}", text(&unknown));

    // Secrets stay hidden in the served configuration.
    let served = server.get("/v2/config").await.text().await.unwrap();
    assert!(served.contains("name: c"), "{served}");
}

/// Names of the databases on a MariaDB server that are not the server's own.
/// Shard `index` after a kill: each `tenants/5…` file recorded at most
/// once, and recorded exactly where its table exists (nothing applied and
/// unrecorded, nothing recorded and not applied); with `files` (after a
/// version that finished), every tenant of the shard has that many and no
/// lease is left (the killed process's lasts until it expires).
async fn recorded_is_applied_on(conn: &mut PgConnection, index: usize, files: Option<usize>) {
    let recorded: Vec<(String, String, i64)> = sqlx::query_as(
        "select db_schema, filename, count(*) from svc.svc_migrations where filename like 'tenants/5%' group by 1, 2",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let shard = SHARDS[index];
    assert!(recorded.iter().all(|(_, _, times)| *times == 1), "shard {shard}: a file recorded twice: {recorded:?}");
    let recorded: BTreeSet<(String, String)> = recorded
        .into_iter()
        .map(|(schema, file, _)| (schema, file.trim_start_matches("tenants/5").trim_end_matches(".sql").to_string()))
        .map(|(schema, stamp)| (schema, format!("k{stamp}")))
        .collect();
    let tables: BTreeSet<(String, String)> = sqlx::query_as(
        "select table_schema::text, table_name::text from information_schema.tables where table_name ~ '^k[0-9]+$'",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap()
    .into_iter()
    .collect();
    assert_eq!(recorded, tables, "shard {shard}: recorded (left) and applied (right) differ");
    if let Some(files) = files {
        for tenant in tenants_of(index) {
            let held = tables.iter().filter(|(schema, _)| *schema == tenant).count();
            assert_eq!(held, files, "shard {shard}, tenant {tenant}");
        }
        let leases = scalar(conn, "select count(*) from svc.svc_lock").await;
        assert_eq!(leases, 0, "shard {shard}: a lease was left behind");
    }
}

#[tokio::test]
async fn kill_9_at_random_points_of_a_version_over_three_servers_keeps_recorded_equal_to_applied_on_each() {
    if backend() != Backend::Postgres {
        return;
    }
    let _turn = SHARD_C.lock().await;
    let (mut server, _, urls) = on_three_servers("tenantConcurrency: 2\nlockLeaseSeconds: 3\n").await;
    let first = server.create_version(json!({ "versionName": "ref" })).await;
    assert!(first.get("errors").is_none(), "{first}");
    let mut conns = Vec::new();
    for url in &urls {
        conns.push(admin(url).await);
    }
    for (index, conn) in conns.iter_mut().enumerate() {
        for tenant in tenants_of(index) {
            run(conn, &format!("create schema {tenant}; insert into svc.svc_tenants (name) values ('{tenant}')")).await;
        }
    }
    let mut seed = crate::fleet::clock_seed();
    for round in 0..3 {
        for n in 0..3 {
            let sql =
                format!("create table {{schema}}.k{round}{n} (id integer primary key);\nselect pg_sleep(0.06);\n");
            server.ws.write_migration(&format!("tenants/5{round}{n}.sql"), &sql);
        }
        let delay = crate::fleet::crash_a_version(&mut server, &mut seed).await;
        let mut committed = Vec::new();
        for (index, conn) in conns.iter_mut().enumerate() {
            recorded_is_applied_on(conn, index, None).await;
            let sql = format!("select count(*) from svc.svc_migrations where filename like 'tenants/5{round}%'");
            committed.push(scalar(conn, &sql).await);
        }
        eprintln!("round {round}: killed after {delay} ms, files committed per shard of 36: {committed:?}");
        let rerun = server.create_version(json!({ "versionName": format!("after crash {round}") })).await;
        assert!(rerun.get("errors").is_none(), "round {round} (killed after {delay} ms): {rerun}");
        for (index, conn) in conns.iter_mut().enumerate() {
            recorded_is_applied_on(conn, index, Some(3 * (round + 1))).await;
        }
    }
}

/// A Sync over a fleet on two servers adopts dbmate's histories
/// fleet-wide: the tenants of the shard whose tenants have none record
/// nothing, as they would on one server, and the next version runs the
/// files there. Each shard decided alone: the shard without histories fell
/// back to migrator's Sync and recorded every file in its tenants, files
/// that never ran and never would.
#[tokio::test]
async fn a_sync_over_two_servers_adopts_histories_fleet_wide() {
    if backend() != Backend::Postgres {
        return;
    }
    let admins: Vec<String> = env("STRATA_TEST_PG_SHARD_URLS").split(',').map(str::to_string).collect();
    let ws = crate::formats::empty_directories();
    let database = format!("strata_adopt_{}", ws.port);
    let urls: Vec<String> = admins[..2].iter().map(|url| with_database(url, &database)).collect();
    for url in &admins[..2] {
        fresh_database(url, &database).await;
    }
    let sharded = sharded_config(&ws, &urls, "");
    let sharded =
        sharded.replace(&format!("  - name: c\n    dataSource: {}\n", with_database(&admins[2], &database)), "");
    let config = ws.write_config(&sharded);
    for tenant in ["t1", "t2", "t3", "t4"] {
        let added = strata(&config, &["apply", "--version", &format!("add {tenant}"), "--tenant", tenant]).await;
        assert_eq!(code(&added), 0, "{}", crate::support::stderr(&added));
    }
    let mut shards = Vec::new();
    for url in &urls {
        let mut conn = admin(url).await;
        let sql = "select nspname::text from pg_namespace where nspname like 't_' order by 1";
        let tenants: Vec<String> = sqlx::query_scalar(sql).fetch_all(&mut conn).await.unwrap();
        shards.push((conn, tenants));
    }
    assert!(
        shards.iter().all(|(_, tenants)| tenants.len() == 2),
        "{:?}",
        shards.iter().map(|s| &s.1).collect::<Vec<_>>()
    );
    let files = ["20240101000000_users.sql", "20240102000000_orders.sql"];
    for (name, table) in files.iter().zip(["users", "orders"]) {
        ws.write_migration(
            &format!("tenants/{name}"),
            &format!("-- migrate:up\ncreate table {table} (id int);\n\n-- migrate:down\ndrop table {table};\n"),
        );
    }
    // dbmate migrated shard a's tenants; shard b's have no history.
    let dir = ws.migrations().join("tenants");
    for tenant in &shards[0].1 {
        crate::peers::dbmate(&format!("{}?sslmode=disable&search_path={tenant}", urls[0]), &dir, &["up"]);
    }
    let recorded = |tenant: &str| {
        format!("select count(*) from svc.svc_migrations where db_schema = '{tenant}' and filename like 'tenants/%'")
    };
    // The plan says the same before anything is recorded: shard b's tenants
    // without a history, only shard a's files recorded.
    let plan = json_of(&strata(&config, &["plan", "--sync", "--json"]).await);
    let mut without = shards[1].1.clone();
    without.sort();
    assert_eq!(plan["withoutHistory"], json!(without), "{plan}");
    assert_eq!(plan["recordOnly"], json!(2 * shards[0].1.len()), "{plan}");
    let adopted = strata(&config, &["apply", "--sync", "--version", "adopt"]).await;
    assert_eq!(code(&adopted), 0, "{}{}", stdout(&adopted), crate::support::stderr(&adopted));
    for (index, expected) in [(0, 2), (1, 0)] {
        let (conn, tenants) = &mut shards[index];
        for tenant in tenants.clone() {
            assert_eq!(scalar(conn, &recorded(&tenant)).await, expected, "{tenant} on {}", SHARDS[index]);
        }
    }
    // What the Sync left is what has not run: shard b's tenants, now.
    let caught_up = strata(&config, &["apply", "--version", "catch up"]).await;
    assert_eq!(code(&caught_up), 0, "{}{}", stdout(&caught_up), crate::support::stderr(&caught_up));
    for (conn, tenants) in &mut shards {
        for tenant in tenants.clone() {
            assert_eq!(scalar(conn, &recorded(&tenant)).await, 2, "{tenant}");
            let tables = format!(
                "select count(*) from pg_tables where schemaname = '{tenant}' and tablename in ('users', 'orders')"
            );
            assert_eq!(scalar(conn, &tables).await, 2, "{tenant}");
        }
    }
}

#[tokio::test]
async fn a_fleet_grows_from_one_server_to_two_keeping_its_history() {
    if backend() != Backend::Postgres {
        return;
    }
    let admins: Vec<String> = env("STRATA_TEST_PG_SHARD_URLS").split(',').map(str::to_string).collect();
    let ws = Workspace::new("fleet");
    let database = format!("strata_grow_{}", ws.port);
    let urls: Vec<String> = admins[..2].iter().map(|url| with_database(url, &database)).collect();
    for url in &admins[..2] {
        fresh_database(url, &database).await;
    }
    // One server, as before shards: a version, four tenants, another version.
    let single = ws.config("").replace(&ws.pg_url_public(), &urls[0]);
    let sharded = sharded_config(&ws, &urls, "");
    let sharded =
        sharded.replace(&format!("  - name: c\n    dataSource: {}\n", with_database(&admins[2], &database)), "");
    assert!(sharded.contains("name: b") && !sharded.contains("name: c"), "{sharded}");
    let mut server = Server::start_in(ws, &single, "").await;
    let first = server.create_version(json!({ "versionName": "ref" })).await;
    assert!(first.get("errors").is_none(), "{first}");
    server.ws.write_migration("tenants/600.sql", "create table {schema}.g (id integer primary key);\n");
    for tenant in ["t1", "t2", "t3", "t4"] {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    let before = server.data("{ versions { id name } }", json!({})).await["versions"].clone();
    assert_eq!(before.as_array().unwrap().len(), 5, "{before}");

    // The same database becomes the home shard of two: its history stays,
    // its ids served as id × 10 (+ 0, its index).
    server.ws.write_config(&sharded);
    server.kill_hard().await;
    server.restart().await;
    let after = server.data("{ versions { id name } }", json!({})).await["versions"].clone();
    let expected: Vec<serde_json::Value> = before
        .as_array()
        .unwrap()
        .iter()
        .map(|v| json!({ "id": v["id"].as_i64().unwrap() * 10, "name": v["name"] }))
        .collect();
    assert_eq!(after, json!(expected));
    let listed = server.data("{ tenants { name shard } shards { name tenantCount reachable } }", json!({})).await;
    assert_eq!(
        listed["shards"],
        json!([{ "name": "a", "tenantCount": 4, "reachable": true }, { "name": "b", "tenantCount": 0, "reachable": true }])
    );
    // A new tenant goes to the emptier shard and gets every tenant
    // migration there; a version runs on both; the single schema stays home.
    let created = server.create_tenant(json!({ "tenantName": "t5", "versionName": "t5" })).await;
    assert!(created.get("errors").is_none(), "{created}");
    let placed = server.data("{ tenants { name shard } }", json!({})).await;
    assert!(placed["tenants"].as_array().unwrap().contains(&json!({ "name": "t5", "shard": "b" })), "{placed}");
    server.ws.write_migration("tenants/601.sql", "alter table {schema}.g add column note text;\n");
    let grown = server.create_version(json!({ "versionName": "on both" })).await;
    assert!(grown.get("errors").is_none(), "{grown}");
    let mut on_a = admin(&urls[0]).await;
    let mut on_b = admin(&urls[1]).await;
    let files = |tenant: &str| {
        format!(
            "select count(*) from svc.svc_migrations where db_schema = '{tenant}' and filename in \
             ('tenants/600.sql', 'tenants/601.sql')"
        )
    };
    for tenant in ["t1", "t2", "t3", "t4"] {
        assert_eq!(scalar(&mut on_a, &files(tenant)).await, 2, "{tenant} on a");
    }
    assert_eq!(scalar(&mut on_b, &files("t5")).await, 2, "t5 on b");
    assert_eq!(scalar(&mut on_a, &files("t5")).await, 0, "t5 is not a's");
    let note = "select count(*) from information_schema.columns where table_name = 'g' and column_name = 'note'";
    assert_eq!(scalar(&mut on_a, note).await, 4);
    assert_eq!(scalar(&mut on_b, note).await, 1);
    let has_ref = "select count(*) from information_schema.schemata where schema_name = 'ref'";
    assert_eq!((scalar(&mut on_a, has_ref).await, scalar(&mut on_b, has_ref).await), (1, 0));
    let listed = strata(server.config_path(), &["tenants"]).await;
    assert_eq!(code(&listed), 0, "{}", text(&listed));
    assert!(
        String::from_utf8_lossy(&listed.stdout).starts_with("5 tenant(s), 0 quarantined, on 2 shard(s): a 4; b 1.\n"),
        "{}",
        text(&listed)
    );

    // Many tenants at once: spread over the fewest (a 4, b 1: n1–n3 to b,
    // then n4 to a, the first of equals), each migrated on its shard in
    // one version that runs tenant migrations only (the pending single
    // schema file waits for a plain version).
    server.ws.write_migration("ref/700.sql", "create table ref.later (id integer primary key);\n");
    let many = server
        .data(
            "mutation($input: TenantsInput!) { createTenants(input: $input) { version { name } summary { tenants } } }",
            json!({ "input": { "tenantNames": ["n1", "n2", "n3", "n4"], "versionName": "four" } }),
        )
        .await;
    assert_eq!(many["createTenants"], json!({ "version": { "name": "four" }, "summary": { "tenants": 4 } }), "{many}");
    let added = strata(server.config_path(), &["tenants", "add", "m1", "m2", "--shard", "a", "--version", "two"]).await;
    assert_eq!(code(&added), 0, "{}", text(&added));
    let where_they_are = server.data("{ tenants { name shard } }", json!({})).await;
    for (tenant, shard) in [("n1", "b"), ("n2", "b"), ("n3", "b"), ("n4", "a"), ("m1", "a"), ("m2", "a")] {
        assert!(
            where_they_are["tenants"].as_array().unwrap().contains(&json!({ "name": tenant, "shard": shard })),
            "{tenant} on {shard}: {where_they_are}"
        );
        let conn = if shard == "a" { &mut on_a } else { &mut on_b };
        assert_eq!(scalar(conn, &files(tenant)).await, 2, "{tenant} migrated on {shard}");
        let schema = format!("select count(*) from information_schema.schemata where schema_name = '{tenant}'");
        let other = if shard == "a" { &mut on_b } else { &mut on_a };
        assert_eq!(scalar(other, &schema).await, 0, "{tenant} created on the other shard too");
    }
    let later = "select count(*) from information_schema.tables where table_schema = 'ref' and table_name = 'later'";
    assert_eq!(scalar(&mut on_a, later).await, 0, "createTenants ran a single schema file");
    let taken = strata(server.config_path(), &["tenants", "add", "n9", "t2", "--version", "taken"]).await;
    assert_eq!(code(&taken), 2, "{}", text(&taken));
    assert!(text(&taken).contains("t2"), "{}", text(&taken));
    let schema_n9 = "select count(*) from information_schema.schemata where schema_name = 'n9'";
    assert_eq!((scalar(&mut on_a, schema_n9).await, scalar(&mut on_b, schema_n9).await), (0, 0));
}

async fn user_databases(conn: &mut sqlx::MySqlConnection) -> Vec<String> {
    sqlx::query_scalar(
        "select cast(schema_name as char) from information_schema.schemata \
         where schema_name not in ('mysql', 'information_schema', 'performance_schema', 'sys') order by 1",
    )
    .fetch_all(conn)
    .await
    .unwrap()
}

/// Tenants of a MariaDB server that recorded `file` in its own books.
async fn recorded_on(conn: &mut sqlx::MySqlConnection, file: &str) -> Vec<String> {
    sqlx::query_scalar("select cast(db_schema as char) from svc.svc_migrations where filename = ? order by 1")
        .bind(file)
        .fetch_all(conn)
        .await
        .unwrap()
}

/// A MariaDB fleet on two servers: new tenants placed on the shard with
/// the fewest, a canary naming a tenant of each shard, then the rest; each
/// server records exactly what ran in its own databases.
#[tokio::test]
async fn a_mariadb_fleet_on_two_servers() {
    if backend() != Backend::Mysql {
        return;
    }
    use sqlx::Connection;
    let _shard_server = crate::support::mysql_shard_server_turn().await;
    let main = crate::support::server_url("STRATA_TEST_MYSQL_URL");
    let second = env("STRATA_TEST_MYSQL_SHARD_URL");
    let mut on_b = sqlx::MySqlConnection::connect(&second).await.unwrap();
    for name in user_databases(&mut on_b).await {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("drop database `{name}`"))).execute(&mut on_b).await.unwrap();
    }
    let ws = Workspace::new("basic");
    let shards = format!("shards:\n  - name: a\n    dataSource: {main}\n  - name: b\n    dataSource: {second}\n");
    let yaml = ws.config("").replace(&format!("dataSource: {main}\n"), &shards);
    assert!(yaml.contains("name: b"), "{yaml}");
    let server = Server::start_in(ws, &yaml, "").await;
    let config = server.config_path().to_path_buf();
    let singles = server.create_version(json!({ "versionName": "singles" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    for i in 1..=6 {
        let created =
            server.create_tenant(json!({ "tenantName": format!("t{i}"), "versionName": format!("t{i}") })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    let mut on_a = sqlx::MySqlConnection::connect(&main).await.unwrap();
    let tenants_of = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(recorded_on(&mut on_a, "tenants/001.sql").await, tenants_of(&["t1", "t3", "t5"]));
    assert_eq!(recorded_on(&mut on_b, "tenants/001.sql").await, tenants_of(&["t2", "t4", "t6"]));
    assert_eq!(recorded_on(&mut on_b, "config/002.sql").await, Vec::<String>::new(), "single schemas: home shard only");
    assert!(!user_databases(&mut on_b).await.contains(&"config".to_string()));

    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key);\n");
    let canary = strata(&config, &["apply", "--version", "canary", "--tenants", "t2,t3"]).await;
    assert_eq!(code(&canary), 0, "{}", text(&canary));
    assert_eq!(recorded_on(&mut on_a, "tenants/006.sql").await, tenants_of(&["t3"]));
    assert_eq!(recorded_on(&mut on_b, "tenants/006.sql").await, tenants_of(&["t2"]));
    let rest = strata(&config, &["apply", "--version", "rest"]).await;
    assert_eq!(code(&rest), 0, "{}", text(&rest));
    assert_eq!(recorded_on(&mut on_a, "tenants/006.sql").await, tenants_of(&["t1", "t3", "t5"]));
    assert_eq!(recorded_on(&mut on_b, "tenants/006.sql").await, tenants_of(&["t2", "t4", "t6"]));
    for conn in [&mut on_a, &mut on_b] {
        let twice: i64 = sqlx::query_scalar(
            "select count(*) from (select 1 from svc.svc_migrations where filename not like 'scripts/%' \
             group by db_schema, filename having count(*) > 1) d",
        )
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        assert_eq!(twice, 0);
    }
    let status = strata(&config, &["status"]).await;
    assert_eq!(code(&status), 0, "{}", text(&status));
    let listed = strata(&config, &["tenants"]).await;
    assert_eq!(code(&listed), 0, "{}", text(&listed));
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "6 tenant(s), 0 quarantined, on 2 shard(s): a 3; b 3.\nt1  @a\nt3  @a\nt5  @a\nt2  @b\nt4  @b\nt6  @b\n"
    );
    let wrong = strata(&config, &["tenants", "--shard", "z"]).await;
    assert_eq!(code(&wrong), 2);
    assert!(text(&wrong).contains("no shard is named \"z\" (the configuration has: a, b)"), "{}", text(&wrong));
}

/// Each server of a sharded fleet paces its own backfills: every server
/// holds as many rows to change as one second of its `rowsPerSecond`
/// budget, so none waits for it (one budget for the three would make
/// them wait); each shard's books hold its own tenants' backfills.
#[tokio::test]
async fn each_server_of_a_sharded_fleet_runs_its_backfills_on_its_own_budget() {
    if backend() != Backend::Postgres {
        return;
    }
    let _turn = SHARD_C.lock().await;
    let (server, _, urls) = on_three_servers("tenantConcurrency: 2\nbackfill:\n  rowsPerSecond: 200\n").await;
    let first = strata(server.config_path(), &["apply", "--version", "ref"]).await;
    assert_eq!(code(&first), 0, "{}", text(&first));
    let mut conns = Vec::new();
    for (index, url) in urls.iter().enumerate() {
        let mut conn = admin(url).await;
        for tenant in [0, 1].map(|i| format!("{}{i}", SHARDS[index])) {
            run(&mut conn, &format!("create schema {tenant}; insert into svc.svc_tenants (name) values ('{tenant}')"))
                .await;
        }
        conns.push(conn);
    }
    server.ws.write_migration("tenants/301_items.sql", &items_sql(100));
    let seeded = server.create_version(json!({ "versionName": "items" })).await;
    assert!(seeded.get("errors").is_none(), "{seeded}");
    server.ws.write_migration("tenants/302_touch.sql", TOUCH_ITEMS);
    let started = version_waiting(&server, "touch").await;
    assert_eq!(started["waitingOnBackfills"].as_array().map(Vec::len), Some(6), "{started}");

    let books = settled(&server).await;
    assert_eq!(books.len(), 6, "{books:?}");
    assert!(books.iter().all(|row| row["state"] == "DONE" && row["rowsDone"] == 100), "{books:?}");
    assert_eq!(server.metric("svc_http_backfill_rows").await, 600.0);
    assert_eq!(server.metric("svc_http_backfill_throttle_waits").await, 0.0, "one budget per server");
    for (index, conn) in conns.iter_mut().enumerate() {
        let sql = "select db_schema || ':' || state || ':' || rows_done from svc.svc_backfills order by db_schema";
        let held: Vec<String> = sqlx::query_scalar(sql).fetch_all(&mut *conn).await.unwrap();
        let expected: Vec<String> = [0, 1].map(|i| format!("{}{i}:done:100", SHARDS[index])).to_vec();
        assert_eq!(held, expected, "shard {}", SHARDS[index]);
        for tenant in [0, 1].map(|i| format!("{}{i}", SHARDS[index])) {
            let sql = format!("select count(*) from {tenant}.items where touched = 1");
            assert_eq!(scalar(conn, &sql).await, 100, "{tenant}");
        }
    }
}
