//! Rollouts as stored state, driven by the service — on every engine: a
//! canary, then an approval, a soak, the rest; a canary that fails stops the
//! rollout before wave 2 and a resume completes it once fixed; a server
//! killed with SIGKILL in the middle of a wave is restarted and its driver
//! runs the wave again to the end, each file executed once ⇔ recorded once.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::{Connection, MySqlConnection};

use crate::fleet::{pause, quarantined_tenants};
use crate::support::{Backend, Server, backend, server_url, strata};

const ROLLOUT: &str = "id status completedWaves waves { wave state } events { action wave requestId detail }";

async fn tenants(server: &Server, n: usize) -> Vec<String> {
    let names: Vec<String> = (1..=n).map(|i| format!("t{i:02}")).collect();
    for name in &names {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    names
}

async fn with_file(server: &Server, file: &str) -> BTreeSet<String> {
    let sql = format!("select db_schema from svc_migrations where filename = '{file}'");
    server.ws.rows("svc", &sql).await.into_iter().map(|row| row[0].as_str().unwrap().to_string()).collect()
}

async fn start(server: &Server, version: &str, waves: &[&str], budget: Option<&str>) -> i64 {
    let started = server
        .graphql(
            &format!("mutation($v: String!, $w: [String!]!, $b: String) {{ startRollout(versionName: $v, waves: $w, failureBudget: $b) {{ {ROLLOUT} }} }}"),
            json!({ "v": version, "w": waves, "b": budget }),
        )
        .await;
    assert!(started.get("errors").is_none(), "{started}");
    started["data"]["startRollout"]["id"].as_i64().unwrap()
}

/// Waits (up to 180 s) until rollout `id` has `status`; returns it.
///
/// The bound is wide because the waits end on a state, not a time: on
/// SQLite the waves' pauses are CPU-bound (a recursive count), and beside
/// CI's other lanes on two cores a nine-tenant wave outlasted 60 s.
pub(crate) async fn wait_for(server: &Server, id: i64, status: &str) -> Value {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(180);
    loop {
        let data = server.data(&format!("{{ rollouts {{ {ROLLOUT} }} }}"), json!({})).await;
        let rollout = data["rollouts"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
        if rollout["status"] == status {
            return rollout;
        }
        assert!(
            Instant::now() < deadline,
            "rollout {id} never reached {status} in {:?}: {rollout}\n{}",
            started.elapsed(),
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn actions(rollout: &Value) -> Vec<String> {
    rollout["events"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap().to_string()).collect()
}

/// A fleet whose tenant list carries a `tier` (text) and a `priority`
/// (integer) beside each name: waves select by them, in a rollout, from
/// the API and from the command line.
#[tokio::test]
async fn waves_select_tenants_by_an_attribute_of_the_tenant_list() {
    let parameter = match backend() {
        Backend::Mysql => "?",
        Backend::Sqlserver => "@P1",
        Backend::Postgres | Backend::Sqlite => "$1",
    };
    let qualifier = if backend() == Backend::Sqlite { "" } else { "svc." };
    let extra = format!(
        "tenantSelectSQL: select name, tier, priority as Priority from svc.customers order by name\n\
         tenantInsertSQL: insert into svc.customers (name) values ({parameter})\n"
    );
    let server = Server::start("basic", &extra).await;
    server
        .ws
        .execute(
            "svc",
            &format!(
                "create table {qualifier}customers (name varchar(64) primary key, tier varchar(16), priority integer)"
            ),
        )
        .await;
    let names = tenants(&server, 6).await;
    for (tenant, tier, priority) in
        [("t01", "'internal'", "1"), ("t02", "'beta'", "2"), ("t03", "'internal'", "2"), ("t04", "null", "1")]
    {
        let update =
            format!("update {qualifier}customers set tier = {tier}, priority = {priority} where name = '{tenant}'");
        server.ws.execute("svc", &update).await;
    }
    let config = server.config_path();

    // A rollout: the internal tenants, an approval, then the rest.
    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key);\n");
    let id = start(&server, "audit", &["tier=internal:approve", "rest"], None).await;
    let waiting = wait_for(&server, id, "AWAITING_APPROVAL").await;
    assert_eq!(waiting["waves"][0], json!({ "wave": "tier=internal:approve", "state": "DONE" }));
    assert_eq!(with_file(&server, "tenants/006.sql").await, BTreeSet::from(["t01".to_string(), "t03".to_string()]));
    let approved = server.graphql(&format!("mutation {{ approveRollout(id: {id}) {{ id }} }}"), json!({})).await;
    assert!(approved.get("errors").is_none(), "{approved}");
    wait_for(&server, id, "COMPLETED").await;
    assert_eq!(with_file(&server, "tenants/006.sql").await, names.iter().cloned().collect::<BTreeSet<_>>());

    // From the API, by an integer column (named in another case), several values.
    server.ws.write_migration("tenants/007.sql", "create table {schema}.notes (id integer primary key);\n");
    let wave = server
        .graphql(
            "mutation { createVersionWave(input: { versionName: \"p1\" }, attribute: \"PRIORITY=1\") { summary { tenantMigrationsTotal } } }",
            json!({}),
        )
        .await;
    assert_eq!(wave["data"]["createVersionWave"]["summary"]["tenantMigrationsTotal"], 2, "{wave}");
    assert_eq!(with_file(&server, "tenants/007.sql").await, BTreeSet::from(["t01".to_string(), "t04".to_string()]));

    // From the command line.
    let beta = strata(config, &["apply", "--version", "beta", "--where", "tier=beta,gold", "--json"]).await;
    assert_eq!(beta.status.code(), Some(0), "{}", String::from_utf8_lossy(&beta.stderr));
    let expected = BTreeSet::from(["t01".to_string(), "t02".to_string(), "t04".to_string()]);
    assert_eq!(with_file(&server, "tenants/007.sql").await, expected);

    // A column the tenant list does not return, or a text that is no attribute: refused, nothing runs.
    let unknown = server
        .graphql("mutation { createVersionWave(input: { versionName: \"x\" }, attribute: \"plan=gold\") { version { id } } }", json!({}))
        .await;
    assert_eq!(unknown["errors"][0]["extensions"]["code"], "UNKNOWN_ATTRIBUTE", "{unknown}");
    assert!(unknown["errors"][0]["message"].as_str().unwrap().contains("(it returns tier, priority)"), "{unknown}");
    let refused = strata(config, &["apply", "--version", "x", "--where", "plan=gold"]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    let bad = strata(config, &["apply", "--version", "x", "--where", "tier"]).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("expected NAME=VALUE"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert_eq!(with_file(&server, "tenants/007.sql").await, expected);
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
}

#[tokio::test]
async fn a_canary_an_approval_a_soak_then_the_rest_and_a_failing_canary_stops_before_wave_2() {
    let server = Server::start("basic", "").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    let names = tenants(&server, 10).await;
    let config = server.config_path();
    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key);\n");

    let id = start(&server, "audit", &["t02:approve", "30%:soak=2", "rest"], None).await;
    let waiting = wait_for(&server, id, "AWAITING_APPROVAL").await;
    assert_eq!(with_file(&server, "tenants/006.sql").await, BTreeSet::from(["t02".to_string()]));
    assert_eq!(
        waiting["waves"],
        json!([
            { "wave": "t02:approve", "state": "DONE" }, { "wave": "30%:soak=2", "state": "NEXT" },
            { "wave": "rest", "state": "PENDING" }
        ])
    );
    // Nothing runs past the gate on its own, nor through a second rollout
    // (it would run the file on the tenants the gate holds back).
    let second =
        server.graphql("mutation { startRollout(versionName: \"around\", waves: [\"rest\"]) { id } }", json!({})).await;
    let said = second["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(said.contains("a second rollout would run its files on tenants whose waves are not due"), "{second}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(with_file(&server, "tenants/006.sql").await.len(), 1);

    let approved = strata(config, &["rollout", "approve", &id.to_string(), "--json"]).await;
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let soaking = wait_for(&server, id, "SOAKING").await;
    let share: BTreeSet<String> = names
        .iter()
        .filter(|t| strata_core::migrate::wave::bucket(t) < 30)
        .cloned()
        .chain(["t02".to_string()])
        .collect();
    assert_eq!(with_file(&server, "tenants/006.sql").await, share, "{soaking}");
    let done = wait_for(&server, id, "COMPLETED").await;
    assert_eq!(with_file(&server, "tenants/006.sql").await, names.iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(
        actions(&done),
        [
            "started",
            "wave-started",
            "wave-completed",
            "approved",
            "wave-started",
            "wave-completed",
            "wave-started",
            "wave-completed",
            "completed"
        ]
    );
    let approval = &done["events"][3];
    assert!(approval["requestId"].as_str().unwrap().starts_with("strata-cli-"), "who approved: {approval}");
    assert!(done["events"][2]["detail"].as_str().unwrap().starts_with("version "), "{done}");
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());

    // A canary that fails: the rollout stops, wave 2 never runs.
    let qualified = |sql: &str| match backend() {
        Backend::Sqlite => sql.replace("t03.", ""),
        _ => sql.to_string(),
    };
    server.ws.execute("t03", &qualified("create table t03.clash (id integer)")).await;
    server.ws.write_migration("tenants/007.sql", "create table {schema}.clash (id integer primary key);\n");
    let id = start(&server, "clash", &["t03", "rest"], Some("0")).await;
    let stopped = wait_for(&server, id, "STOPPED").await;
    assert_eq!(actions(&stopped), ["started", "wave-started", "wave-failed"]);
    let why = stopped["events"][2]["detail"].as_str().unwrap();
    assert!(why.contains("tenants/007.sql") && why.contains("t03"), "{why}");
    assert_eq!(with_file(&server, "tenants/007.sql").await, BTreeSet::new(), "wave 2 ran after a failed canary");
    let listed = strata(config, &["rollout"]).await;
    let text = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        text.contains(&format!("rollout {id}: clash — STOPPED")) && text.contains("last: wave-failed (wave 1)"),
        "{text}"
    );

    // Fixed by hand, resumed from the command line: the canary runs again, then the rest.
    server.ws.execute("t03", &qualified("drop table t03.clash")).await;
    let resumed = strata(config, &["rollout", "resume", &id.to_string()]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", String::from_utf8_lossy(&resumed.stderr));
    wait_for(&server, id, "COMPLETED").await;
    assert_eq!(with_file(&server, "tenants/007.sql").await, names.iter().cloned().collect::<BTreeSet<_>>());

    // A wave with its own failure budget: the canary's failure is absorbed
    // (quarantined) and the rollout goes on.
    let in_the_way = match backend() {
        Backend::Sqlite => "create table clash2 (id integer)",
        _ => "create table t04.clash2 (id integer)",
    };
    server.ws.execute("t04", in_the_way).await;
    server.ws.write_migration("tenants/008.sql", "create table {schema}.clash2 (id integer primary key);\n");
    let id_budget = start(&server, "clash2", &["t04,t05:budget=1", "rest"], Some("0")).await;
    let absorbed = wait_for(&server, id_budget, "COMPLETED").await;
    assert!(absorbed["events"][2]["detail"].as_str().unwrap().ends_with("; quarantined: t04"), "{absorbed}");
    let expected: BTreeSet<String> = names.iter().filter(|n| *n != "t04").cloned().collect();
    assert_eq!(with_file(&server, "tenants/008.sql").await, expected);

    // Operations that do not apply say why.
    let wrong = strata(config, &["rollout", "approve", &id.to_string()]).await;
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&wrong.stderr)
            .contains("the rollout is COMPLETED: approve applies to a rollout awaiting approval")
    );
    let missing = server.graphql("mutation { pauseRollout(id: 999) { id } }", json!({})).await;
    assert_eq!(missing["errors"][0]["extensions"]["code"], "NOT_FOUND", "{missing}");
    // A rollout that does not exist is named (exit 1, as `gh` and `kubectl` answer for what is not there).
    let nowhere = strata(config, &["rollout", "approve", "999"]).await;
    assert_eq!(nowhere.status.code(), Some(1), "{}", String::from_utf8_lossy(&nowhere.stderr));
    assert!(String::from_utf8_lossy(&nowhere.stderr).contains("rollout 999 does not exist"));
    let bad = server
        .graphql("mutation { startRollout(versionName: \"x\", waves: [\"rest\", \"t01\"]) { id } }", json!({}))
        .await;
    assert_eq!(bad["errors"][0]["message"], "rest must be the last wave", "{bad}");
}

/// Waits (up to 60 s) until rollout `id` has `n` events `action`; returns it.
async fn wait_for_events(server: &Server, id: i64, action: &str, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let data = server.data(&format!("{{ rollouts {{ {ROLLOUT} }} }}"), json!({})).await;
        let rollout = data["rollouts"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
        if actions(&rollout).iter().filter(|a| *a == action).count() == n {
            return rollout;
        }
        assert!(Instant::now() < deadline, "rollout {id} never had {n} {action}: {rollout}\n{}", server.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_file_added_after_the_approval_runs_nowhere_during_a_soak_nor_after_a_resume() {
    let server = Server::start("basic", "").await;
    let names = tenants(&server, 4).await;
    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key);\n");
    // A wave naming a tenant the fleet lacks is refused at the start.
    let unknown = server
        .graphql(
            "mutation { startRollout(versionName: \"x\", waves: [\"t01\", \"t99:approve\", \"rest\"]) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(unknown["errors"][0]["extensions"]["code"], "NOT_A_TENANT", "{unknown}");
    assert_eq!(server.data("{ rollouts { id } }", json!({})).await["rollouts"], json!([]));
    let id = start(&server, "audit", &["t01:approve", "t02:soak=5", "rest"], None).await;
    wait_for(&server, id, "AWAITING_APPROVAL").await;
    let approve = server.graphql(&format!("mutation {{ approveRollout(id: {id}) {{ id }} }}"), json!({})).await;
    assert!(approve.get("errors").is_none(), "{approve}");
    wait_for(&server, id, "SOAKING").await;
    let reviewed = BTreeSet::from(["t01".to_string(), "t02".to_string()]);
    assert_eq!(with_file(&server, "tenants/006.sql").await, reviewed);

    // Added while the second wave soaks: the next wave runs nothing.
    server.ws.write_migration("tenants/007.sql", "create table {schema}.unreviewed (id integer primary key);\n");
    let stopped = wait_for(&server, id, "STOPPED").await;
    let failed = stopped["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(failed["action"], "wave-failed", "{stopped}");
    let why = failed["detail"].as_str().unwrap();
    assert!(
        why.contains("(added: tenants/007.sql): the wave would run what was not reviewed, so nothing of it ran"),
        "{why}"
    );
    assert_eq!(with_file(&server, "tenants/007.sql").await, BTreeSet::new());
    assert_eq!(with_file(&server, "tenants/006.sql").await, reviewed);

    // Resumed with the file still there: stopped again, nothing ran.
    let resume = format!("mutation {{ resumeRollout(id: {id}) {{ id }} }}");
    assert!(server.graphql(&resume, json!({})).await.get("errors").is_none());
    wait_for_events(&server, id, "wave-failed", 2).await;
    assert_eq!(wait_for(&server, id, "STOPPED").await["completedWaves"], 2);
    assert_eq!(with_file(&server, "tenants/007.sql").await, BTreeSet::new());
    assert_eq!(with_file(&server, "tenants/006.sql").await, reviewed);
    for tenant in &names {
        assert!(!server.ws.tables(tenant).await.contains(&"unreviewed".to_string()), "{tenant}");
    }

    // The file gone, the reviewed files run to the end.
    std::fs::remove_file(server.ws.migrations().join("tenants/007.sql")).unwrap();
    assert!(server.graphql(&resume, json!({})).await.get("errors").is_none());
    wait_for(&server, id, "COMPLETED").await;
    assert_eq!(with_file(&server, "tenants/006.sql").await, names.iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(with_file(&server, "tenants/007.sql").await, BTreeSet::new());
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
}

#[tokio::test]
async fn a_server_killed_in_the_middle_of_a_wave_resumes_it_after_a_restart() {
    let mut server = Server::start("basic", "lockLeaseSeconds: 3\ntenantConcurrency: 2\n").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    let names = tenants(&server, 12).await;
    // The pause first. On MySQL a DDL statement commits on its own, so a
    // kill between it and its bookkeeping row would leave it run and
    // unrecorded (the service then says so and stops). That is not what
    // this test is about: there the pause is a gate per tenant — a named
    // lock the test holds for t06…t12 — and the kill waits until both
    // workers are held at one, before its DDL. (A sleep timed from the
    // process list raced a worker between its sleep and its DDL under CI's
    // load: run and unrecorded in t03.)
    let gate = format!("strata_gate_{}", std::process::id());
    let held = slow_file(&server, &gate, &names[5..], 4).await;
    let id = start(&server, "slow", &["t01", "rest"], None).await;
    // Killed once the second wave committed some tenants, not all
    // (Babelfish's catalog reads take seconds a version).
    let deadline = Instant::now() + Duration::from_secs(if backend() == Backend::Sqlserver { 240 } else { 60 });
    while with_file(&server, "tenants/006.sql").await.len() < 3 {
        assert!(Instant::now() < deadline, "the rollout did not get going: {}", server.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if let Some(mut conn) = held {
        // tenantConcurrency: 2 — both workers wait at a gate, t01…t05 done.
        while sessions_at_a_gate(&server, &gate).await < 2 {
            assert!(Instant::now() < deadline, "the workers never reached a gate: {}", server.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let first_five: BTreeSet<String> = names[..5].iter().cloned().collect();
        assert_eq!(with_file(&server, "tenants/006.sql").await, first_five);
        server.kill_hard().await;
        sqlx::query("do release_all_locks()").execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    } else {
        assert!(with_file(&server, "tenants/006.sql").await.len() < names.len(), "the wave ended before the kill");
        server.kill_hard().await;
    }
    server.restart().await;
    let done = wait_for(&server, id, "COMPLETED").await;
    assert_eq!(with_file(&server, "tenants/006.sql").await, names.iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    for name in &names {
        assert!(server.ws.tables(name).await.contains(&"slow".to_string()), "{name}");
    }
    // The second wave was started twice (before and after the kill), completed once.
    let events = actions(&done);
    assert_eq!(events.iter().filter(|a| *a == "wave-started").count(), 3, "{done}");
    assert_eq!(events.iter().filter(|a| *a == "wave-completed").count(), 2, "{done}");
}

/// A wave that names its tenants, its runner killed after the wave put
/// one of them aside (a failure its budget absorbed): run again by the
/// restarted service, it goes on without that tenant — it was refused for
/// naming a quarantined tenant, and the rollout stopped — and completes.
#[tokio::test]
async fn a_named_wave_run_again_after_a_kill_goes_on_without_the_tenant_it_quarantined() {
    let mut server = Server::start("basic", "lockLeaseSeconds: 3\ntenantConcurrency: 1\n").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    let names = tenants(&server, 6).await;
    // t02 already has the table: its unit fails, within the wave's budget.
    let in_the_way = match backend() {
        Backend::Sqlite => "create table slow (id integer)",
        _ => "create table t02.slow (id integer)",
    };
    server.ws.execute("t02", in_the_way).await;
    // On MySQL t03…t06 wait at their gates, t01 and t02 pass.
    let gate = format!("strata_named_{}", std::process::id());
    let held = slow_file(&server, &gate, &names[2..], 10).await;
    let id = start(&server, "slow", &["t01,t02,t03,t04,t05,t06:budget=1"], None).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while quarantined_tenants(&server).await.is_empty()
        || (held.is_some() && sessions_at_a_gate(&server, &gate).await < 1)
    {
        assert!(Instant::now() < deadline, "the wave never put t02 aside: {}", server.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(quarantined_tenants(&server).await, ["t02"]);
    assert!(with_file(&server, "tenants/006.sql").await.len() < names.len() - 1, "the wave ended before the kill");
    server.kill_hard().await;
    if let Some(mut conn) = held {
        sqlx::query("do release_all_locks()").execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }
    server.restart().await;
    let done = wait_for(&server, id, "COMPLETED").await;
    let expected: BTreeSet<String> = names.iter().filter(|name| *name != "t02").cloned().collect();
    assert_eq!(with_file(&server, "tenants/006.sql").await, expected);
    assert_eq!(quarantined_tenants(&server).await, ["t02"], "t02 stays aside for its operator");
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    let events = actions(&done);
    assert_eq!(events.iter().filter(|a| *a == "wave-started").count(), 2, "{done}");
    assert!(!events.contains(&"wave-failed".to_string()), "{done}");
    let rerun = done["events"].as_array().unwrap().iter().find(|e| e["action"] == "wave-completed").unwrap();
    let detail = rerun["detail"].as_str().unwrap();
    assert!(detail.contains("without t02 (quarantined by an earlier run of this wave)"), "{detail}");
}

/// A wave whose version outlasts its claim (twice `lockLeaseSeconds`)
/// keeps it: its runner renews it while the version runs, so a second
/// service on the same database never takes the wave — one
/// `wave-started`, one version of the wave, each file recorded once.
/// Before, the twin started the wave again once the claim ran out, its
/// version waiting on the lock.
#[tokio::test]
async fn a_wave_whose_version_outlasts_its_claim_is_not_taken_by_another_replica() {
    // Not on SQLite: a unit's transaction holds the service's books (one
    // writer at a time), so nothing renews a claim during a unit, and under
    // CI's load a unit of CPU work outlasted the claim (docs/executing.md
    // says so). The renewal is the same code on every engine.
    if backend() == Backend::Sqlite {
        return;
    }
    let server = Server::start("basic", "lockLeaseSeconds: 3\ntenantConcurrency: 1\n").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    // t02 and t03 take some 5 s each: the wave's version outlasts its claim
    // of 6 s.
    let pause = match backend() {
        Backend::Mysql => "do sleep(if('{schema}' = 't01', 0, 5));\n",
        // About 5 s of Babelfish's processor (it has no WAITFOR).
        Backend::Sqlserver => {
            "declare @busy int = 0;\nwhile '{schema}' <> 't01' and @busy < 4000000 set @busy = @busy + 1;\n"
        }
        _ => "select pg_sleep(case when '{schema}' = 't01' then 0 else 5 end);\n",
    };
    let names = tenants(&server, 3).await;
    let twin = server.twin().await;
    server.ws.write_migration(
        "tenants/006.sql",
        &format!("{pause}create table {{schema}}.slow (id integer primary key);\n"),
    );
    let id = start(&server, "slow", &["rest"], None).await;
    // Paused and resumed while the version runs: the wave keeps its claim
    // (a resume let the twin start it again at once).
    wait_for_events(&server, id, "wave-started", 1).await;
    let pause = format!("mutation {{ pauseRollout(id: {id}) {{ id }} }}");
    assert!(server.graphql(&pause, json!({})).await.get("errors").is_none());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let resume = format!("mutation {{ resumeRollout(id: {id}) {{ id }} }}");
    assert!(twin.graphql(&resume, json!({})).await.get("errors").is_none());
    let done = wait_for(&server, id, "COMPLETED").await;
    let started = done["events"].as_array().unwrap().iter().filter(|e| e["action"] == "wave-started").count();
    assert_eq!(started, 1, "{done}\n{}\n{}", server.log(), twin.log());
    assert_eq!(actions(&done), ["started", "wave-started", "paused", "resumed", "wave-completed", "completed"]);
    assert_eq!(with_file(&server, "tenants/006.sql").await, names.iter().cloned().collect::<BTreeSet<_>>());
    let versions = server.data("query { versions { name } }", json!({})).await;
    let waves = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["name"].as_str().unwrap().starts_with("slow"))
        .count();
    assert_eq!(waves, 1, "{versions}");
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
}

/// `create table {schema}.clash` in `tenants/006.sql`, after the table is
/// made by hand in each of `clashing`: the file fails there.
async fn clashing_file(server: &Server, clashing: &[&str]) {
    for tenant in clashing {
        let sql = match backend() {
            Backend::Sqlite => "create table clash (id integer)".to_string(),
            _ => format!("create table {tenant}.clash (id integer)"),
        };
        server.ws.execute(tenant, &sql).await;
    }
    server.ws.write_migration("tenants/006.sql", "create table {schema}.clash (id integer primary key);\n");
}

/// A tenant an earlier wave quarantined (its failure absorbed there)
/// still stops a later wave that names it: only what an earlier run of
/// the same wave put aside is passed by, however one process ran both
/// waves (a service's driver, `strata rollout drive`).
#[tokio::test]
async fn a_tenant_an_earlier_wave_quarantined_stops_a_later_wave_that_names_it() {
    let server = Server::start("basic", "").await;
    tenants(&server, 4).await;
    clashing_file(&server, &["t02"]).await;
    let id = start(&server, "clash", &["t01,t02:budget=1", "t02,t03", "rest"], None).await;
    let stopped = wait_for(&server, id, "STOPPED").await;
    assert_eq!(actions(&stopped), ["started", "wave-started", "wave-completed", "wave-started", "wave-failed"]);
    let why = stopped["events"][4]["detail"].as_str().unwrap();
    assert!(why.contains("tenant \"t02\" is quarantined"), "{why}");
    assert_eq!(with_file(&server, "tenants/006.sql").await, BTreeSet::from(["t01".to_string()]));
    // A wave of the API naming it is refused the same way, by its own code.
    let cancelled = server.graphql(&format!("mutation {{ cancelRollout(id: {id}) {{ id }} }}"), json!({})).await;
    assert!(cancelled.get("errors").is_none(), "{cancelled}");
    let wave = "mutation { createVersionWave(input: {versionName: \"w\"}, tenantNames: [\"t03\", \"t02\"]) { version { id } } }";
    let refused = server.graphql(wave, json!({})).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "QUARANTINED", "{refused}");
}

/// A first wave (of `waves`, budget 1) over six tenants, two of which fail: it
/// stops, and resumed unfixed it fails again — the tenants its first run
/// quarantined count against its budget (the resumed run passed them by
/// and completed), saying `why`. Once one is retried, the other's failure
/// fits the budget and the rollout completes: the rollout then.
async fn a_resumed_wave_fails_until_what_it_quarantined_fits_its_budget(waves: &[&str], why: &str) -> Value {
    let server = Server::start("basic", "tenantConcurrency: 1\n").await;
    let names = tenants(&server, 6).await;
    clashing_file(&server, &["t02", "t03"]).await;
    let id = start(&server, "clash", waves, None).await;
    let stopped = wait_for(&server, id, "STOPPED").await;
    assert_eq!(actions(&stopped), ["started", "wave-started", "wave-failed"]);
    assert_eq!(quarantined_tenants(&server).await, ["t02", "t03"]);
    let resume = format!("mutation {{ resumeRollout(id: {id}) {{ id }} }}");
    assert!(server.graphql(&resume, json!({})).await.get("errors").is_none());
    let again = wait_for_events(&server, id, "wave-failed", 2).await;
    let said = again["events"].as_array().unwrap().last().unwrap()["detail"].as_str().unwrap().to_string();
    assert!(said.starts_with(why), "{said}");
    assert_eq!(with_file(&server, "tenants/006.sql").await, BTreeSet::from(["t01".to_string()]), "nothing more ran");
    // t03 fixed and retried: t02's failure alone fits the budget.
    let qualified = match backend() {
        Backend::Sqlite => "drop table clash",
        _ => "drop table t03.clash",
    };
    server.ws.execute("t03", qualified).await;
    let retry =
        "mutation { retryQuarantined(input: {versionName: \"retry\", tenantNames: [\"t03\"]}) { version { id } } }";
    let retried = server.graphql(retry, json!({})).await;
    assert!(retried.get("errors").is_none(), "{retried}");
    assert!(server.graphql(&resume, json!({})).await.get("errors").is_none());
    let done = wait_for(&server, id, "COMPLETED").await;
    let expected: BTreeSet<String> = names.iter().filter(|name| *name != "t02").cloned().collect();
    assert_eq!(with_file(&server, "tenants/006.sql").await, expected);
    assert_eq!(quarantined_tenants(&server).await, ["t02"]);
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    let completed = done["events"].as_array().unwrap().iter().find(|e| e["action"] == "wave-completed").unwrap();
    let detail = completed["detail"].as_str().unwrap();
    assert!(detail.contains("without t02 (quarantined by an earlier run of this wave)"), "{detail}");
    done
}

#[tokio::test]
async fn a_resumed_wave_counts_what_its_earlier_run_quarantined_against_its_budget() {
    let why =
        "an earlier run of this wave quarantined t02, t03: more than its failure budget 1 absorbs over its 4 tenant(s)";
    let waves = ["t01,t02,t03,t04:budget=1", "rest"];
    let done = a_resumed_wave_fails_until_what_it_quarantined_fits_its_budget(&waves, why).await;
    // The rest (t05, t06) ran once the first wave completed.
    assert_eq!(actions(&done).iter().filter(|a| *a == "wave-completed").count(), 2, "{done}");
}

/// The same for a wave that does not name its tenants (the rest, a
/// share): its version passes quarantined tenants by, and its budget is
/// of the tenants it selects.
#[tokio::test]
async fn a_resumed_rest_wave_counts_what_its_earlier_run_quarantined_against_its_budget() {
    let why =
        "an earlier run of this wave quarantined t02, t03: more than its failure budget 1 absorbs over its 6 tenant(s)";
    a_resumed_wave_fails_until_what_it_quarantined_fits_its_budget(&["rest:budget=1"], why).await;
}

/// Writes `tenants/006.sql`: a pause, then `create table {schema}.slow`.
/// On MySQL the pause is a gate — a named lock per tenant, which the test
/// takes here for the tenants `gated` and returns the session holding
/// them — so that a kill lands before a DDL, which commits on its own;
/// elsewhere `repeat` times [`pause`] on PostgreSQL, and on SQLite work of
/// about a second a tenant in the suite's optimized build (4 of them
/// passed the whole wave between two looks).
async fn slow_file(server: &Server, gate: &str, gated: &[String], repeat: usize) -> Option<MySqlConnection> {
    let pause = match backend() {
        Backend::Mysql => format!("do get_lock('{gate}_{{schema}}', 300);\ndo release_lock('{gate}_{{schema}}');\n"),
        Backend::Sqlite => pause().repeat(16),
        Backend::Postgres => pause().repeat(repeat),
        Backend::Sqlserver => pause().repeat(repeat),
    };
    server.ws.write_migration(
        "tenants/006.sql",
        &format!("{pause}create table {{schema}}.slow (id integer primary key);\n"),
    );
    if backend() != Backend::Mysql {
        return None;
    }
    let mut conn = MySqlConnection::connect(&server_url("STRATA_TEST_MYSQL_URL")).await.unwrap();
    for name in gated {
        let taken: (i64,) =
            sqlx::query_as("select get_lock(?, 0)").bind(format!("{gate}_{name}")).fetch_one(&mut conn).await.unwrap();
        assert_eq!(taken.0, 1, "the test could not take the gate of {name}");
    }
    Some(conn)
}

/// MySQL: how many sessions (but this one) wait for a named lock of `gate`.
async fn sessions_at_a_gate(server: &Server, gate: &str) -> usize {
    let sql = format!(
        "select id from information_schema.processlist \
         where command = 'Query' and id <> connection_id() and info like 'do get_lock(''{gate}\\_%'"
    );
    server.ws.rows("svc", &sql).await.len()
}

/// Gates hold: while a rollout waits for its approval, a plain version
/// over the fleet (API or command line) is refused, naming the rollout;
/// `plan` and `status` show it; a dry run, a new tenant and an explicit
/// override (recorded in the rollout's events) go through; a cancelled
/// rollout holds nothing.
#[tokio::test]
async fn a_rollout_in_progress_holds_plain_versions_until_overridden_or_cancelled() {
    let server = Server::start("basic", "").await;
    let names = tenants(&server, 4).await;
    let config = server.config_path();
    server.ws.write_migration("tenants/006.sql", "create table {schema}.audit (id integer primary key);\n");
    let id = start(&server, "audit", &["t01:approve", "rest"], None).await;
    wait_for(&server, id, "AWAITING_APPROVAL").await;
    let only_canary = BTreeSet::from(["t01".to_string()]);
    assert_eq!(with_file(&server, "tenants/006.sql").await, only_canary);

    let held = format!("rollout {id} (\"audit\", 1/2 waves done, AWAITING_APPROVAL)");
    let plan = strata(config, &["plan"]).await;
    let text = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(text.contains(&format!("Rollout in progress: {held}.")), "{text}");
    let status = strata(config, &["status", "--json"]).await;
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["activeRollouts"][0]["id"], id, "{status}");
    assert_eq!(status["activeRollouts"][0]["status"], "AWAITING_APPROVAL", "{status}");

    let refused = strata(config, &["apply", "--version", "plain"]).await;
    assert_eq!(refused.status.code(), Some(14), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains(&format!("{held} is in progress")));
    let api = server.create_version(json!({ "versionName": "plain" })).await;
    assert_eq!(api["errors"][0]["extensions"]["code"], "ROLLOUT_IN_PROGRESS", "{api}");
    let wave = server
        .graphql(
            "mutation { createVersionWave(input: { versionName: \"w\" }, tenantNames: [\"t02\"]) { summary { tenants } } }",
            json!({}),
        )
        .await;
    assert_eq!(wave["errors"][0]["extensions"]["code"], "ROLLOUT_IN_PROGRESS", "{wave}");
    assert_eq!(with_file(&server, "tenants/006.sql").await, only_canary);

    // A dry run and a new tenant are not held.
    let dry = server.create_version(json!({ "versionName": "dry", "dryRun": true })).await;
    assert!(dry.get("errors").is_none(), "{dry}");
    let new = server.create_tenant(json!({ "tenantName": "t05", "versionName": "t05" })).await;
    assert!(new.get("errors").is_none(), "{new}");

    // An explicit override runs, and the rollout says who ran past it.
    let forced = strata(config, &["apply", "--version", "hotfix", "--override-rollout"]).await;
    assert_eq!(forced.status.code(), Some(0), "{}", String::from_utf8_lossy(&forced.stderr));
    let everyone: BTreeSet<String> = names.iter().cloned().chain(["t05".to_string()]).collect();
    assert_eq!(with_file(&server, "tenants/006.sql").await, everyone);
    let data = server.data(&format!("{{ rollouts {{ {ROLLOUT} }} }}"), json!({})).await;
    let rollout = data["rollouts"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
    let overridden = rollout["events"].as_array().unwrap().iter().find(|e| e["action"] == "overridden").unwrap();
    assert!(overridden["requestId"].as_str().unwrap().starts_with("strata-cli-"), "{overridden}");
    assert_eq!(overridden["detail"], "version \"hotfix\" ran past it");

    // Cancelled, it holds nothing and runs no wave.
    let cancel = strata(config, &["rollout", "cancel", &id.to_string()]).await;
    assert_eq!(cancel.status.code(), Some(0), "{}", String::from_utf8_lossy(&cancel.stderr));
    wait_for(&server, id, "CANCELLED").await;
    let again = server.graphql(&format!("mutation {{ cancelRollout(id: {id}) {{ id }} }}"), json!({})).await;
    assert!(again["errors"][0]["message"].as_str().unwrap().contains("CANCELLED"), "{again}");
    server.ws.write_migration("tenants/007.sql", "create table {schema}.notes (id integer primary key);\n");
    let plain = strata(config, &["apply", "--version", "after"]).await;
    assert_eq!(plain.status.code(), Some(0), "{}", String::from_utf8_lossy(&plain.stderr));
    assert!(!String::from_utf8_lossy(&strata(config, &["plan"]).await.stdout).contains("Rollout in progress"));
}

/// A retry runs every file pending in its tenants: in a tenant no wave of
/// a rollout in progress has reached it would run the rollout's files
/// before their wave, past the approval. It is refused there — from the
/// API and the command line, whose exit is a held version's — and runs
/// where a wave has come; an explicit override runs and is recorded.
#[tokio::test]
async fn a_retry_waits_for_the_wave_of_its_tenant_unless_it_overrides_the_rollout() {
    let server = Server::start("basic", "failureBudget: 2\n").await;
    tenants(&server, 4).await;
    let config = server.config_path();
    // t03 is put aside by a plain version: a table is in its file's way.
    clashing_file(&server, &["t03"]).await;
    let first = server.create_version(json!({ "versionName": "clash" })).await;
    assert!(first.get("errors").is_none(), "{first}");
    assert_eq!(quarantined_tenants(&server).await, ["t03"]);
    // Then a rollout of a new file: its canary puts t01 aside the same way
    // (within the wave's budget), and waits for an approval.
    for tenant in ["t01", "t03"] {
        let sql = match backend() {
            Backend::Sqlite => "create table audit (id integer)".to_string(),
            _ => format!("create table {tenant}.audit (id integer)"),
        };
        server.ws.execute(tenant, &sql).await;
    }
    server.ws.write_migration("tenants/007.sql", "create table {schema}.audit (id integer primary key);\n");
    let id = start(&server, "audit", &["t01,t02:approve:budget=1", "rest"], None).await;
    wait_for(&server, id, "AWAITING_APPROVAL").await;
    assert_eq!(with_file(&server, "tenants/007.sql").await, BTreeSet::from(["t02".to_string()]));
    assert_eq!(quarantined_tenants(&server).await, ["t01", "t03"]);
    for (tenant, table) in [("t01", "audit"), ("t03", "audit"), ("t03", "clash")] {
        let sql = match backend() {
            Backend::Sqlite => format!("drop table {table}"),
            _ => format!("drop table {tenant}.{table}"),
        };
        server.ws.execute(tenant, &sql).await;
    }

    let retry = |version: &str, more: &str| {
        format!(
            "mutation {{ retryQuarantined(input: {{versionName: \"{version}\", tenantNames: [\"t03\"]{more}}}) \
             {{ version {{ id }} }} }}"
        )
    };
    let refused = server.graphql(&retry("retry", ""), json!({})).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "ROLLOUT_IN_PROGRESS", "{refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap();
    let held = format!("rollout {id} (\"audit\", 1/2 waves done, AWAITING_APPROVAL) has not reached tenant t03 yet");
    assert!(message.starts_with(&held), "{message}");
    let cli = strata(config, &["quarantine", "retry", "--version", "retry", "t01", "t03"]).await;
    assert_eq!(cli.status.code(), Some(14), "{}", String::from_utf8_lossy(&cli.stderr));
    assert!(String::from_utf8_lossy(&cli.stderr).contains(&held), "{}", String::from_utf8_lossy(&cli.stderr));
    // Retrying every quarantined tenant is refused the same way.
    let all = strata(config, &["quarantine", "retry", "--version", "retry"]).await;
    assert_eq!(all.status.code(), Some(14), "{}", String::from_utf8_lossy(&all.stderr));
    let expected: BTreeSet<String> = ["t01", "t02", "t04"].map(String::from).into();
    assert_eq!(with_file(&server, "tenants/006.sql").await, expected);
    assert_eq!(with_file(&server, "tenants/007.sql").await, BTreeSet::from(["t02".to_string()]));
    assert_eq!(quarantined_tenants(&server).await, ["t01", "t03"], "nothing ran");

    // A name that is not quarantined gets the retry's own answer.
    let stray = strata(config, &["quarantine", "retry", "--version", "retry", "t04"]).await;
    assert_eq!(stray.status.code(), Some(2), "{}", String::from_utf8_lossy(&stray.stderr));
    assert!(String::from_utf8_lossy(&stray.stderr).contains("tenant \"t04\" is not quarantined"));
    // Its canary reached t01, but a file added since the rollout started
    // would run there unreviewed: refused until it is gone.
    let late = server.ws.migrations().join("tenants/008.sql");
    std::fs::write(&late, "create table {schema}.late (id integer primary key);\n").unwrap();
    let unreviewed = strata(config, &["quarantine", "retry", "--version", "canary", "t01"]).await;
    assert_eq!(unreviewed.status.code(), Some(14), "{}", String::from_utf8_lossy(&unreviewed.stderr));
    let said = String::from_utf8_lossy(&unreviewed.stderr).into_owned();
    let changed = format!(
        "the source files changed since rollout {id} (\"audit\", 1/2 waves done, AWAITING_APPROVAL) started \
         (added: tenants/008.sql): a retry would run them unreviewed"
    );
    assert!(said.contains(&changed), "{said}");
    std::fs::remove_file(&late).unwrap();
    // As it started: the retry runs there.
    let canary = strata(config, &["quarantine", "retry", "--version", "canary", "t01"]).await;
    assert_eq!(canary.status.code(), Some(0), "{}", String::from_utf8_lossy(&canary.stderr));
    assert_eq!(with_file(&server, "tenants/007.sql").await, BTreeSet::from(["t01".into(), "t02".into()]));
    // Overridden, t03's runs and the rollout says who ran past it.
    let forced = server.graphql(&retry("forced", ", overrideRollout: true"), json!({})).await;
    assert!(forced.get("errors").is_none(), "{forced}");
    let expected: BTreeSet<String> = ["t01", "t02", "t03"].map(String::from).into();
    assert_eq!(with_file(&server, "tenants/007.sql").await, expected);
    assert_eq!(with_file(&server, "tenants/006.sql").await.len(), 4);
    assert_eq!(quarantined_tenants(&server).await, Vec::<String>::new());
    let data = server.data(&format!("{{ rollouts {{ {ROLLOUT} }} }}"), json!({})).await;
    let rollout = data["rollouts"].as_array().unwrap().iter().find(|r| r["id"] == id).cloned().unwrap();
    let overridden = rollout["events"].as_array().unwrap().iter().find(|e| e["action"] == "overridden").unwrap();
    assert_eq!(overridden["detail"], "version \"forced\" ran past it", "{rollout}");
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
}

/// Two `startRollout` requests at the same instant both pass the check
/// that no rollout is active (each reads before the other writes): both
/// ask for the same next id, one gets it and the other is refused with the
/// winner named, so exactly one is stored and active. Five rounds, each
/// pair sent together.
#[tokio::test]
async fn two_rollouts_started_at_the_same_instant_leave_exactly_one_active() {
    let server = Server::start("basic", "").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    tenants(&server, 2).await;
    let config = server.config_path();
    let mutation = "mutation($v: String!) { startRollout(versionName: $v, waves: [\"t01:approve\", \"rest\"]) { id } }";
    for round in 0..5 {
        let (a, b) = tokio::join!(
            server.graphql(mutation, json!({ "v": format!("race-{round}-a") })),
            server.graphql(mutation, json!({ "v": format!("race-{round}-b") })),
        );
        let started: Vec<i64> =
            [&a, &b].iter().filter_map(|answer| answer["data"]["startRollout"]["id"].as_i64()).collect();
        assert_eq!(started.len(), 1, "round {round}: exactly one starts\n{a}\n{b}");
        let refused = if a["data"]["startRollout"]["id"].is_i64() { &b } else { &a };
        let said = refused["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(said.contains(&format!("rollout {} (", started[0])), "round {round}: the older is named: {refused}");
        assert!(said.contains("a second rollout would run its files"), "round {round}: {refused}");
        let listed = server.graphql("{ rollouts { id status } }", json!({})).await;
        let active: Vec<i64> = listed["data"]["rollouts"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .filter(|r| !matches!(r["status"].as_str(), Some("COMPLETED" | "CANCELLED")))
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        assert_eq!(active, started, "round {round}: {listed}");
        let stored = listed["data"]["rollouts"].as_array().map_or(0, Vec::len);
        assert_eq!(stored, round + 1, "round {round}: the refused start stored nothing: {listed}");
        let cancelled = strata(config, &["rollout", "cancel", &started[0].to_string()]).await;
        assert_eq!(cancelled.status.code(), Some(0), "{}", String::from_utf8_lossy(&cancelled.stderr));
    }
}
