//! Down migrations: `strata revert` undoes the newest migrations of each
//! schema with the down parts of their own format, over the whole fleet or
//! a wave of tenants, as a version; a missing down part is refused before
//! anything runs; a revert killed with SIGKILL leaves each schema's down
//! parts all or nothing, recorded = applied (MySQL: one file in flight).

use serde_json::json;

use crate::fleet::{clock_seed, crash_a_request, pause, recorded_equals_applied, tenants};
use crate::formats::{empty_directories, empty_workspace, recorded, sorted};
use crate::support::{Backend, Server, backend, code, create_schema_sql, mysql_turn, stderr, stdout, strata};

fn dbmate(table: &str, extra: &str) -> String {
    format!(
        "-- migrate:up\ncreate table {{schema}}.{table} (id int);\n{extra}\n-- migrate:down\ndrop table \
         {{schema}}.{table};\n{extra}"
    )
}

#[tokio::test]
async fn a_revert_undoes_the_newest_migrations_of_each_schema_or_of_a_wave() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    ws.write_migration("ref/1_a.up.sql", &format!("{}create table {{schema}}.a (id int);\n", create_schema_sql()));
    ws.write_migration("ref/2_b.up.sql", "create table {schema}.b (id int);\n");
    ws.write_migration("ref/2_b.down.sql", "drop table {schema}.b;\n");
    for (n, table) in [(1, "users"), (2, "orders"), (3, "items")] {
        ws.write_migration(&format!("tenants/2024010{n}_{table}.sql"), &dbmate(table, ""));
    }
    let config = ws.write_config(&ws.config(""));
    let apply = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    for tenant in ["t1", "t2", "t3"] {
        let created = strata(&config, &["apply", "--version", tenant, "--tenant", tenant]).await;
        assert_eq!(code(&created), 0, "{}", stderr(&created));
    }

    // Previewed, then over a wave: only t1 and t2, their newest file.
    let plan = strata(&config, &["plan", "--revert", "--steps", "1"]).await;
    let text = stdout(&plan);
    assert!(text.starts_with("REVERT: 4 migrations would be undone"), "{text}");
    let wave = strata(&config, &["revert", "--version", "r1", "--steps", "1", "--tenants", "t1,t2"]).await;
    assert_eq!(code(&wave), 0, "{}{}", stdout(&wave), stderr(&wave));
    assert!(stdout(&wave).contains("2 migration(s) and 0 script(s) over 2 tenant(s) reverted"), "{}", stdout(&wave));
    for tenant in ["t1", "t2"] {
        assert_eq!(sorted(ws.tables(tenant).await), ["orders", "users"], "{tenant}");
        assert_eq!(recorded(&ws, tenant).await, ["tenants/20240101_users.sql", "tenants/20240102_orders.sql"]);
    }
    assert_eq!(sorted(ws.tables("t3").await), ["items", "orders", "users"]);
    assert_eq!(sorted(ws.tables("ref").await), ["a", "b"]);

    // Over every schema: each undoes its own newest migration.
    let all = strata(&config, &["revert", "--version", "r2", "--steps", "1"]).await;
    assert_eq!(code(&all), 0, "{}{}", stdout(&all), stderr(&all));
    assert_eq!(sorted(ws.tables("ref").await), ["a"]);
    assert_eq!(recorded(&ws, "ref").await, ["ref/1_a.up.sql"]);
    assert_eq!(sorted(ws.tables("t1").await), ["users"]);
    assert_eq!(sorted(ws.tables("t3").await), ["orders", "users"]);
    let versions = ws.rows("svc", "select name from svc_versions order by id").await;
    let names: Vec<&str> = versions.iter().map(|row| row[0].as_str().unwrap()).collect();
    assert_eq!(names[names.len() - 2..], ["r1", "r2"]);

    // A migration without a down part is refused before anything runs.
    let refused = strata(&config, &["revert", "--version", "r3", "--steps", "1"]).await;
    assert_eq!(code(&refused), 1, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("have no down part: ref/1_a.up.sql"), "{}", stderr(&refused));
    assert_eq!(sorted(ws.tables("t1").await), ["users"]);
    let tenants_only =
        strata(&config, &["revert", "--version", "r3", "--to", "tenants/20240101_users.sql", "--tenants", "t3"]).await;
    assert_eq!(code(&tenants_only), 0, "{}", stderr(&tenants_only));
    assert_eq!(sorted(ws.tables("t3").await), ["users"]);

    // Applied again, everything is back, once.
    let again = strata(&config, &["apply", "--version", "again"]).await;
    assert_eq!(code(&again), 0, "{}{}", stdout(&again), stderr(&again));
    for tenant in ["t1", "t2", "t3"] {
        assert_eq!(sorted(ws.tables(tenant).await), ["items", "orders", "users"], "{tenant}");
    }
    assert_eq!(sorted(ws.tables("ref").await), ["a", "b"]);
    assert!(ws.migrations_recorded_twice().await.is_empty());

    // An empty down part (as `strata new` writes it) would remove the
    // record and undo nothing; a file edited since it ran may not undo
    // what ran: both refused before anything runs.
    ws.write_migration(
        "tenants/20240104_notes.sql",
        "-- migrate:up\ncreate table {schema}.notes (id int);\n-- migrate:down\n\n",
    );
    let applied = strata(&config, &["apply", "--version", "notes"]).await;
    assert_eq!(code(&applied), 0, "{}", stderr(&applied));
    let empty = strata(&config, &["revert", "--version", "r4", "--steps", "1", "--tenants", "t1"]).await;
    assert_eq!(code(&empty), 1, "{}", stderr(&empty));
    assert!(stderr(&empty).contains("have an empty down part: tenants/20240104_notes.sql"), "{}", stderr(&empty));
    assert_eq!(sorted(ws.tables("t1").await), ["items", "notes", "orders", "users"]);
    ws.write_migration(
        "tenants/20240104_notes.sql",
        "-- migrate:up\ncreate table {schema}.notes (id int, body text);\n-- migrate:down\ndrop table {schema}.notes;\n",
    );
    let changed = strata(&config, &["revert", "--version", "r4", "--steps", "1", "--tenants", "t1"]).await;
    assert_eq!(code(&changed), 1, "{}", stderr(&changed));
    assert!(
        stderr(&changed).contains("changed since they were applied: tenants/20240104_notes.sql"),
        "{}",
        stderr(&changed)
    );
    assert_eq!(sorted(ws.tables("t1").await), ["items", "notes", "orders", "users"]);
    assert_eq!(recorded(&ws, "t1").await.len(), 4);
}

#[tokio::test]
async fn a_revert_undoes_a_file_applied_out_of_order_before_the_files_it_was_applied_on() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    ws.write_migration("ref/1_a.up.sql", &format!("{}create table {{schema}}.a (id int);\n", create_schema_sql()));
    ws.write_migration("tenants/20240101_users.sql", &dbmate("users", ""));
    ws.write_migration("tenants/20240103_items.sql", &dbmate("items", ""));
    let config = ws.write_config(&ws.config(""));
    let created = strata(&config, &["apply", "--version", "t1", "--tenant", "t1"]).await;
    assert_eq!(code(&created), 0, "{}{}", stdout(&created), stderr(&created));

    // A file merged late sorts before one already applied: applied out of
    // order (warned), so it was applied on top of items, and is undone first.
    ws.write_migration("tenants/20240102_orders.sql", &dbmate("orders", ""));
    let late = strata(&config, &["apply", "--version", "late"]).await;
    assert_eq!(code(&late), 0, "{}{}", stdout(&late), stderr(&late));
    assert_eq!(sorted(ws.tables("t1").await), ["items", "orders", "users"]);

    let one = strata(&config, &["revert", "--version", "r1", "--steps", "1", "--tenants", "t1"]).await;
    assert_eq!(code(&one), 0, "{}{}", stdout(&one), stderr(&one));
    assert_eq!(sorted(ws.tables("t1").await), ["items", "users"]);
    assert_eq!(recorded(&ws, "t1").await, ["tenants/20240101_users.sql", "tenants/20240103_items.sql"]);

    // Applied again (out of order once more), then two steps: orders, then
    // items, users kept.
    let again = strata(&config, &["apply", "--version", "again"]).await;
    assert_eq!(code(&again), 0, "{}{}", stdout(&again), stderr(&again));
    let two = strata(&config, &["revert", "--version", "r2", "--steps", "2", "--tenants", "t1"]).await;
    assert_eq!(code(&two), 0, "{}{}", stdout(&two), stderr(&two));
    assert_eq!(sorted(ws.tables("t1").await), ["users"]);
    assert_eq!(recorded(&ws, "t1").await, ["tenants/20240101_users.sql"]);
}

#[tokio::test]
async fn kill_9_in_the_middle_of_a_revert_leaves_each_schema_all_or_nothing() {
    let ws = empty_directories();
    let yaml = ws.config("tenantConcurrency: 4\n");
    let mut server = Server::start_in(ws, &yaml, "").await;
    let names = tenants(&server, 8).await;
    // MySQL commits DDL as it runs: its files are re-runnable, as MySQL
    // users write them.
    let guard = if backend() == Backend::Mysql { "if exists " } else { "" };
    let mut seed = clock_seed();
    for round in 0..2 {
        for n in 0..4 {
            let table = format!("r{round}n{n}");
            server.ws.write_migration(
                &format!("tenants/{round}{n}_{table}.sql"),
                &format!(
                    "-- migrate:up\ncreate table {{schema}}.{table} (id integer primary key);\n-- migrate:down\n\
                     drop table {guard}{{schema}}.{table};\n{pause}",
                    pause = pause()
                ),
            );
        }
        let up = server.create_version(json!({ "versionName": format!("up {round}") })).await;
        assert!(up.get("errors").is_none(), "{up}");
        recorded_equals_applied(&server, &names).await;

        let query = "mutation { revertVersion(input: {versionName: \"crash\"}, steps: 2) { version { id } } }";
        let delay = crash_a_request(&mut server, &mut seed, query, 50..650).await;
        // Recorded = applied per schema; on MySQL a down part whose DDL ran
        // before its record was removed leaves one table missing.
        recorded_matches_reverted(&server, &names, usize::from(backend() == Backend::Mysql), delay).await;
        // Finishing by hand: every tenant back to the files of the rounds
        // before, whatever the kill left.
        let to = if round == 0 { None } else { Some(format!("tenants/{}3_r{}n3.sql", round - 1, round - 1)) };
        let query = match &to {
            None => {
                "mutation { revertVersion(input: {versionName: \"finish\"}, steps: 4) { version { id } } }".to_string()
            }
            Some(file) => format!(
                "mutation {{ revertVersion(input: {{versionName: \"finish\"}}, to: \"{file}\") {{ version {{ id }} }} }}"
            ),
        };
        let finish = server.graphql(&query, json!({})).await;
        assert!(finish.get("errors").is_none(), "round {round} (killed after {delay} ms): {finish}");
        recorded_equals_applied(&server, &names).await;
        for tenant in &names {
            let tables = server.ws.tables(tenant).await.len();
            assert_eq!(tables, 4 * round, "{tenant} after round {round}");
        }
        // Applied again for the next round.
        let again = server.create_version(json!({ "versionName": format!("again {round}") })).await;
        assert!(again.get("errors").is_none(), "{again}");
        recorded_equals_applied(&server, &names).await;
    }
}

/// After a killed revert: nothing recorded twice, every recorded file's
/// table present, and at most `in_flight` tables present without a record
/// — none on engines whose DDL is transactional: a schema's down parts and
/// record removals commit together.
async fn recorded_matches_reverted(server: &Server, names: &[String], in_flight: usize, delay: u64) {
    let rows = crate::fleet::recorded(server).await;
    for ((file, schema), times) in &rows {
        assert_eq!(*times, 1, "{file} recorded {times} times in {schema} (killed after {delay} ms)");
    }
    for tenant in names {
        let tables: std::collections::BTreeSet<String> = server.ws.tables(tenant).await.into_iter().collect();
        let expected: std::collections::BTreeSet<String> = rows
            .keys()
            .filter(|(file, schema)| schema == tenant && file.starts_with("tenants/"))
            .map(|(file, _)| file.trim_end_matches(".sql").rsplit('_').next().unwrap().to_string())
            .collect();
        // No table without its record: a schema's removed records took their
        // tables with them.
        assert!(tables.is_subset(&expected), "{tenant} (killed after {delay} ms): {tables:?} {expected:?}");
        // And a record without its table only where DDL commits as it runs.
        assert!(
            expected.len() - tables.len() <= in_flight,
            "{tenant} (killed after {delay} ms): {tables:?} {expected:?}"
        );
    }
}
