//! Day one for a team switching tools: migration directories of dbmate,
//! golang-migrate/sqlx, goose and Flyway applied as those tools apply them
//! (the down part never forward, versions in numeric order), a foreign
//! marker refused before anything runs, the drift → repair path that never
//! records a pending file, Sync saying what it records unrun, deleted
//! files reported and `outOfOrder: refuse` — through the CLI, on the
//! backend of this run.

use serde_json::json;

use crate::support::{
    Backend, Workspace, backend, code, create_schema_sql, json_of, mysql_turn, stderr, stdout, strata,
};

/// A workspace whose configured directories are empty, its database
/// prepared (on MySQL the caller holds the turn).
pub(crate) async fn empty_workspace() -> Workspace {
    let ws = empty_directories();
    ws.prepare_database().await;
    ws
}

/// A workspace whose configured directories are empty (its database not
/// touched: a `Server` prepares it in its turn).
pub(crate) fn empty_directories() -> Workspace {
    let ws = Workspace::new("basic");
    for dir in ["ref", "config", "tenants", "scripts/config", "scripts/tenants"] {
        for entry in std::fs::read_dir(ws.migrations().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                std::fs::remove_file(path).unwrap();
            }
        }
    }
    ws
}

/// The files recorded in a schema, in the order they were recorded.
pub(crate) async fn recorded(ws: &Workspace, schema: &str) -> Vec<String> {
    let sql = format!("select filename from svc_migrations where db_schema = '{schema}' order by id");
    ws.rows("svc", &sql).await.into_iter().map(|row| row[0].as_str().unwrap().to_string()).collect()
}

pub(crate) fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[tokio::test]
async fn directories_of_other_tools_run_forward_only_in_their_own_order() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    // ref: golang-migrate (sqlx's layout too), numbers not padded.
    ws.write_migration("ref/1_a.up.sql", &format!("{}create table {{schema}}.a (id int);\n", create_schema_sql()));
    ws.write_migration("ref/1_a.down.sql", "drop table {schema}.a;\n");
    // golang-migrate files often bring their own transaction.
    ws.write_migration("ref/2_b.up.sql", "BEGIN;\ncreate table {schema}.b (id int);\nCOMMIT;\n");
    ws.write_migration("ref/2_b.down.sql", "drop table {schema}.b;\n");
    ws.write_migration("ref/10_c.up.sql", "create table {schema}.c (id int);\n");
    // config: Flyway, 1.1 < 1.10 < 2 < 10, an undo file.
    ws.write_migration(
        "config/V1_1__one.sql",
        &format!("{}create table {{schema}}.v1_1 (id int);\n", create_schema_sql()),
    );
    ws.write_migration("config/V1.10__two.sql", "create table {schema}.v1_10 (id int);\n");
    ws.write_migration("config/V2__three.sql", "create table {schema}.v2 (id int);\n");
    ws.write_migration("config/U2__three.sql", "drop table {schema}.v2;\n");
    ws.write_migration("config/V10__four.sql", "create table {schema}.v10 (id int);\n");
    // tenants: dbmate, down sections that would drop what the up created.
    ws.write_migration(
        "tenants/20240101000000_users.sql",
        "-- migrate:up\ncreate table {schema}.users (id int);\n\n-- migrate:down\ndrop table {schema}.users;\n",
    );
    ws.write_migration(
        "tenants/20240102000000_orders.sql",
        "-- migrate:up\ncreate table {schema}.orders (id int);\n-- migrate:down\ndrop table {schema}.orders;\n",
    );
    let config = ws.write_config(&ws.config(""));

    let plan = strata(&config, &["plan"]).await;
    assert_eq!(code(&plan), 0, "{}{}", stdout(&plan), stderr(&plan));
    let text = stdout(&plan);
    assert!(text.contains("schema ref:\n  ref/1_a.up.sql\n  ref/2_b.up.sql\n  ref/10_c.up.sql\n"), "{text}");
    assert!(
        text.contains(
            "schema config:\n  config/V1_1__one.sql\n  config/V1.10__two.sql\n  config/V2__three.sql\n  \
             config/V10__four.sql\n"
        ),
        "{text}"
    );
    assert!(!text.contains("down.sql") && !text.contains("U2__"), "{text}");

    let apply = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    let tenant = strata(&config, &["apply", "--version", "t1", "--tenant", "acme"]).await;
    assert_eq!(code(&tenant), 0, "{}{}", stdout(&tenant), stderr(&tenant));

    // What the up parts created is there: no down part ran.
    assert_eq!(sorted(ws.tables("ref").await), ["a", "b", "c"]);
    assert_eq!(sorted(ws.tables("config").await), ["v10", "v1_1", "v1_10", "v2"]);
    assert_eq!(sorted(ws.tables("acme").await), ["orders", "users"]);
    assert_eq!(recorded(&ws, "ref").await, ["ref/1_a.up.sql", "ref/2_b.up.sql", "ref/10_c.up.sql"]);
    assert_eq!(
        recorded(&ws, "config").await,
        ["config/V1_1__one.sql", "config/V1.10__two.sql", "config/V2__three.sql", "config/V10__four.sql"]
    );
    assert_eq!(recorded(&ws, "acme").await, ["tenants/20240101000000_users.sql", "tenants/20240102000000_orders.sql"]);
    // The stored contents are the file's own (the down section included).
    let stored =
        ws.rows("svc", "select contents from svc_migrations where filename = 'tenants/20240101000000_users.sql'").await;
    assert!(stored[0][0].as_str().unwrap().contains("-- migrate:down"), "{stored:?}");

    // A version added later with a smaller number is out of order.
    ws.write_migration("ref/3_d.up.sql", "create table {schema}.d (id int);\n");
    let plan = stdout(&strata(&config, &["plan"]).await);
    assert!(plan.contains("ref/3_d.up.sql in ref sorts before 10_c.up.sql, already applied"), "{plan}");
    let refuse = ws.write_config(&ws.config("outOfOrder: refuse\n"));
    let refused = strata(&refuse, &["apply", "--version", "v2"]).await;
    assert_eq!(code(&refused), 13, "{}{}", stdout(&refused), stderr(&refused));
    assert!(stderr(&refused).contains("outOfOrder is refuse: ref/3_d.up.sql in ref (after 10_c.up.sql)"));
    assert!(!ws.tables("ref").await.contains(&"d".to_string()));
}

#[tokio::test]
async fn a_flyway_directory_with_a_callback_a_readme_or_a_misnamed_file_never_runs_its_undo_files() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    ws.write_migration(
        "config/V1__users.sql",
        &format!(
            "{}create table {{schema}}.users (id int);\ninsert into {{schema}}.users values (1), (2);\n",
            create_schema_sql()
        ),
    );
    ws.write_migration("config/U1__users.sql", "drop table {schema}.users;\n");
    let config = ws.write_config(&ws.config(""));
    let apply = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    assert_eq!(recorded(&ws, "config").await, ["config/V1__users.sql"]);

    // Each of these once made the directory read as Strata's own format,
    // every file a forward migration: the undo file dropped `users`.
    let refusals = [
        (
            "config/afterMigrate.sql",
            "grant select on {schema}.users to public;\n",
            "config/afterMigrate.sql: a Flyway callback (afterMigrate), which Strata does not run",
        ),
        (
            "config/V2_oops.sql",
            "create table {schema}.oops (id int);\n",
            "config is read as flyway files (config/U1__users.sql is one), but config/V2_oops.sql is not one",
        ),
    ];
    for (file, text, said) in refusals {
        ws.write_migration(file, text);
        for command in [&["plan"][..], &["apply", "--version", "v2"]] {
            let refused = strata(&config, command).await;
            assert_eq!(code(&refused), 1, "{command:?} {}{}", stdout(&refused), stderr(&refused));
            assert!(stderr(&refused).contains(said), "{}", stderr(&refused));
        }
        std::fs::remove_file(ws.migrations().join(file)).unwrap();
    }
    // A README is ignored, and said to be, once.
    ws.write_migration("config/README.md", "How to write migrations: never drop table users;\n");
    ws.write_migration("config/V2__orders.sql", "create table {schema}.orders (id int);\n");
    // A subdirectory (Flyway reads them; Strata does not): said too.
    std::fs::create_dir_all(ws.migrations().join("config/release_2")).unwrap();
    ws.write_migration("config/release_2/V3__items.sql", "create table {schema}.items (id int);\n");
    let apply = strata(&config, &["apply", "--version", "v2"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    assert_eq!(stderr(&apply).matches("not a .sql file: ignored, never run").count(), 1, "{}", stderr(&apply));
    assert!(stderr(&apply).contains("config/README.md"), "{}", stderr(&apply));
    assert!(stderr(&apply).contains("a subdirectory is not read: its files never run"), "{}", stderr(&apply));
    assert!(stderr(&apply).contains("config/release_2"), "{}", stderr(&apply));
    std::fs::remove_dir_all(ws.migrations().join("config/release_2")).unwrap();
    // A file over 64 MiB (sparse: nothing is written) is refused unread.
    let huge = std::fs::File::create(ws.migrations().join("config/V9__huge.sql")).unwrap();
    huge.set_len(65 * 1024 * 1024).unwrap();
    let refused = strata(&config, &["plan"]).await;
    assert_eq!(code(&refused), 1, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("config/V9__huge.sql"), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("over the 67108864 a migration file may have"), "{}", stderr(&refused));
    std::fs::remove_file(ws.migrations().join("config/V9__huge.sql")).unwrap();

    // Nothing was dropped, nothing recorded that did not run.
    assert_eq!(sorted(ws.tables("config").await), ["orders", "users"]);
    assert_eq!(ws.count("config", "users").await, 2);
    assert_eq!(recorded(&ws, "config").await, ["config/V1__users.sql", "config/V2__orders.sql"]);

    // Named as Strata's format, the undo file is refused by its name.
    let named = ws.write_config(&ws.config("migrationFormats: {config: strata}\n"));
    let refused = strata(&named, &["apply", "--version", "v3"]).await;
    assert_eq!(code(&refused), 1, "{}{}", stdout(&refused), stderr(&refused));
    assert!(
        stderr(&refused).contains(
            "config/U1__users.sql: a down migration in config, which is read as strata files and would run it forward"
        ),
        "{}",
        stderr(&refused)
    );
    assert_eq!(ws.count("config", "users").await, 2);
    assert_eq!(recorded(&ws, "config").await, ["config/V1__users.sql", "config/V2__orders.sql"]);
}

#[tokio::test]
async fn goose_files_run_their_up_annotation_and_foreign_markers_are_refused() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    ws.write_migration(
        "tenants/00001_users.sql",
        "-- +goose Up\n-- +goose StatementBegin\ncreate table {schema}.users (id int);\n-- +goose StatementEnd\n\n\
         -- +goose Down\ndrop table {schema}.users;\n",
    );
    ws.write_migration("tenants/00002_orders.sql", "-- +goose Up\ncreate table {schema}.orders (id int);\n");
    // A Strata-format directory holding a dbmate file: refused, nothing runs.
    ws.write_migration("ref/001.sql", &format!("{}create table {{schema}}.r (id int);\n", create_schema_sql()));
    ws.write_migration("ref/002.sql", "create table {schema}.s (id int);\n-- migrate:down\ndrop table {schema}.s;\n");
    // Detected, the directory's files disagree (002 has dbmate's markers,
    // 001 none): both are named; named as Strata's format, the marker is.
    let detected = ws.write_config(&ws.config(""));
    let refused = strata(&detected, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&refused), 1, "{}{}", stdout(&refused), stderr(&refused));
    assert!(
        stderr(&refused).contains("ref is read as dbmate files (ref/002.sql is one), but ref/001.sql is not one"),
        "{}",
        stderr(&refused)
    );
    let config = ws.write_config(&ws.config("migrationFormats: {ref: strata}\n"));
    let refused = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&refused), 1, "{}{}", stdout(&refused), stderr(&refused));
    assert!(
        stderr(&refused).contains("ref/002.sql:2: \"-- migrate:down\" is a dbmate marker, but ref is read as strata"),
        "{}",
        stderr(&refused)
    );
    assert!(ws.tables("ref").await.is_empty());
    let graphql_code = json_of(&strata(&config, &["apply", "--version", "v1", "--json"]).await);
    assert_eq!(graphql_code["errors"][0]["extensions"]["code"], "INVALID_FORMAT", "{graphql_code}");

    // Named as dbmate files, the directory reads as such.
    ws.write_migration(
        "ref/002.sql",
        "-- migrate:up\ncreate table {schema}.s (id int);\n-- migrate:down\ndrop table {schema}.s;\n",
    );
    ws.write_migration(
        "ref/001.sql",
        &format!("-- migrate:up\n{}create table {{schema}}.r (id int);\n", create_schema_sql()),
    );
    let config = ws.write_config(&ws.config("migrationFormats:\n  ref: dbmate\n  tenants: goose\n"));
    let apply = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    let tenant = strata(&config, &["apply", "--version", "t1", "--tenant", "acme"]).await;
    assert_eq!(code(&tenant), 0, "{}{}", stdout(&tenant), stderr(&tenant));
    assert_eq!(sorted(ws.tables("ref").await), ["r", "s"]);
    assert_eq!(sorted(ws.tables("acme").await), ["orders", "users"]);

    let bad = ws.write_config(&ws.config("migrationFormats:\n  ref: liquibase\n"));
    let checked = strata(&bad, &["config", "check"]).await;
    assert_eq!(code(&checked), 4, "{}{}", stdout(&checked), stderr(&checked));
    assert!(stderr(&checked).contains("\"liquibase\" for \"ref\" is not a format"), "{}", stderr(&checked));
}

#[tokio::test]
async fn a_changed_file_is_repaired_never_synced_and_a_deleted_one_is_reported() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    ws.write_migration("ref/001.sql", &format!("{}create table {{schema}}.a (id int);\n", create_schema_sql()));
    ws.write_migration("ref/002.sql", "create table {schema}.b (id int);\n");
    let config = ws.write_config(&ws.config(""));
    let apply = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));

    // 001 changes (a comment), 002 is deleted, 003 and 004 are new.
    ws.write_migration(
        "ref/001.sql",
        &format!("-- reviewed\n{}create table {{schema}}.a (id int);\n", create_schema_sql()),
    );
    std::fs::remove_file(ws.migrations().join("ref/002.sql")).unwrap();
    ws.write_migration("ref/003.sql", "create table {schema}.c (id int);\n");
    ws.write_migration("ref/004.sql", "create table {schema}.d (id int);\n");

    let refused = strata(&config, &["apply", "--version", "v2"]).await;
    assert_eq!(code(&refused), 3, "{}{}", stdout(&refused), stderr(&refused));
    let said = format!("{}{}", stdout(&refused), stderr(&refused));
    assert!(said.contains("strata repair") && !said.to_lowercase().contains("sync"), "{said}");

    // Status and plan name the deleted file.
    let status = json_of(&strata(&config, &["status", "--json"]).await);
    assert_eq!(status["missing"], json!([{ "file": "ref/002.sql", "schemas": ["ref"] }]), "{status}");
    assert_eq!(status["drift"][0]["file"], "ref/001.sql", "{status}");

    // plan --sync says what a Sync would record without running.
    let sync = strata(&config, &["plan", "--sync"]).await;
    let text = stdout(&sync);
    assert!(text.starts_with("SYNC: 2 migrations would be RECORDED AS APPLIED WITHOUT RUNNING"), "{text}");
    assert!(text.contains("ref/003.sql (record only)\n  ref/004.sql (record only)"), "{text}");
    assert_eq!(json_of(&strata(&config, &["plan", "--sync", "--json"]).await)["recordOnly"], 2);

    // Repair refuses a pending file and an unknown one, changing nothing.
    let pending = strata(&config, &["repair", "ref/003.sql"]).await;
    assert_eq!(code(&pending), 2, "{}", stderr(&pending));
    assert!(stderr(&pending).contains("ref/003.sql is pending (applied nowhere): repair never records"));
    assert_eq!(code(&strata(&config, &["repair", "ref/nope.sql"]).await), 2);

    // A dry run lists; the repair lists, then does it, as a version.
    let dry = strata(&config, &["repair", "--dry-run", "--json"]).await;
    let dry = json_of(&dry);
    assert_eq!(dry["repair"]["checksums"][0]["file"], "ref/001.sql", "{dry}");
    assert_eq!(dry["repair"]["removals"], json!([{ "file": "ref/002.sql", "schemas": ["ref"] }]), "{dry}");
    let repair = strata(&config, &["repair", "--version", "accept review comment"]).await;
    assert_eq!(code(&repair), 0, "{}{}", stdout(&repair), stderr(&repair));
    let text = stdout(&repair);
    assert!(text.starts_with("Will record the new checksum of ref/001.sql in 1 schema(s)"), "{text}");
    assert!(text.contains("Recorded the new checksum of ref/001.sql"), "{text}");
    assert!(text.contains("Removed the records of ref/002.sql (deleted from the source) in 1 schema(s)"), "{text}");

    // Nothing pending was recorded; the next apply runs 003 and 004.
    assert_eq!(recorded(&ws, "ref").await, ["ref/001.sql"]);
    let versions = ws.rows("svc", "select name, request_id from svc_versions order by id").await;
    assert_eq!(versions[1][0], "accept review comment", "{versions:?}");
    assert!(versions[1][1].as_str().unwrap().starts_with("strata-cli-"), "{versions:?}");
    let apply = strata(&config, &["apply", "--version", "v2"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    assert_eq!(recorded(&ws, "ref").await, ["ref/001.sql", "ref/003.sql", "ref/004.sql"]);
    assert_eq!(sorted(ws.tables("ref").await), ["a", "b", "c", "d"]);
    let nothing = strata(&config, &["repair"]).await;
    assert_eq!(stdout(&nothing), "Nothing to repair: no applied file changed or was deleted.\n");

    // Sync, asked for: it records without running, and says so.
    ws.write_migration("ref/005.sql", "create table {schema}.e (id int);\n");
    let sync = strata(&config, &["apply", "--version", "adopt", "--sync"]).await;
    assert_eq!(code(&sync), 0, "{}", stderr(&sync));
    assert!(stdout(&sync).contains("recorded as applied WITHOUT having run"), "{}", stdout(&sync));
    assert_eq!(recorded(&ws, "ref").await.last().map(String::as_str), Some("ref/005.sql"));
    assert!(!ws.tables("ref").await.contains(&"e".to_string()));
}

#[tokio::test]
async fn strata_new_writes_the_next_file_in_the_directory_s_convention() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    ws.write_migration("tenants/20240101000000_users.sql", "-- migrate:up\ncreate table {schema}.users (id int);\n");
    ws.write_migration("ref/0009_a.sql", &format!("{}create table {{schema}}.a (id int);\n", create_schema_sql()));
    let config = ws.write_config(&ws.config(""));

    let unnamed = strata(&config, &["new", "add orders"]).await;
    assert_eq!(code(&unnamed), 2, "{}", stderr(&unnamed));
    assert!(stderr(&unnamed).contains("name the directory with --dir (configured: ref, config, tenants)"));

    let tenants = strata(&config, &["new", "Add orders!", "--dir", "tenants"]).await;
    assert_eq!(code(&tenants), 0, "{}", stderr(&tenants));
    let path = stdout(&tenants).trim().to_string();
    let name = path.rsplit('/').next().unwrap().to_string();
    assert!(name.len() == "20261125223000_add_orders.sql".len() && name.ends_with("_add_orders.sql"), "{name}");
    assert!(name.as_str() > "20240101000000_users.sql");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "-- migrate:up\n\n\n-- migrate:down\n\n");
    let sequence = strata(&config, &["new", "b", "--dir", "ref"]).await;
    assert!(stdout(&sequence).trim().ends_with("ref/0010_b.sql"), "{}", stdout(&sequence));

    // Filled in, the new dbmate file applies like any other.
    std::fs::write(
        &path,
        "-- migrate:up\ncreate table {schema}.orders (id int);\n-- migrate:down\ndrop table {schema}.orders;\n",
    )
    .unwrap();
    ws.write_migration("ref/0010_b.sql", "create table {schema}.b (id int);\n");
    let apply = strata(&config, &["apply", "--version", "v1"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    let tenant = strata(&config, &["apply", "--version", "t1", "--tenant", "acme"]).await;
    assert_eq!(code(&tenant), 0, "{}", stderr(&tenant));
    assert_eq!(sorted(ws.tables("acme").await), ["orders", "users"]);
}

#[tokio::test]
async fn a_sync_to_a_file_records_only_up_to_it_as_flyway_s_baseline_does() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    ws.write_migration("ref/001.sql", &format!("{}create table {{schema}}.a (id int);\n", create_schema_sql()));
    ws.write_migration("ref/002.sql", "create table {schema}.b (id int);\n");
    ws.write_migration("ref/010.sql", "create table {schema}.c (id int);\n");
    let config = ws.write_config(&ws.config(""));
    // The database really is at 002: its tables exist, nothing is recorded.
    if !create_schema_sql().is_empty() {
        // One statement: the harness sends no `GO` (SQL Server's own schema statement is alone anyway).
        ws.execute("ref", &create_schema_sql().replace("{schema}", "ref").replace("GO\n", "")).await;
    }
    for table in ["a", "b"] {
        let sql = if backend() == Backend::Sqlite {
            format!("create table {table} (id int)")
        } else {
            format!("create table ref.{table} (id int)")
        };
        ws.execute("ref", &sql).await;
    }
    let unknown = strata(&config, &["apply", "--version", "adopt", "--sync", "--to", "ref/999.sql"]).await;
    assert_ne!(code(&unknown), 0);
    assert!(stderr(&unknown).contains("ref/999.sql: not a migration of the sources"), "{}", stderr(&unknown));
    let without_sync = strata(&config, &["apply", "--version", "adopt", "--to", "ref/002.sql"]).await;
    assert_eq!(code(&without_sync), 2, "{}", stderr(&without_sync));
    let adopt = strata(&config, &["apply", "--version", "adopt", "--sync", "--to", "ref/002.sql"]).await;
    assert_eq!(code(&adopt), 0, "{}{}", stdout(&adopt), stderr(&adopt));
    assert_eq!(recorded(&ws, "ref").await, ["ref/001.sql", "ref/002.sql"]);
    // The next apply runs what came after the baseline, and only that.
    let apply = strata(&config, &["apply", "--version", "v3"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    assert_eq!(recorded(&ws, "ref").await, ["ref/001.sql", "ref/002.sql", "ref/010.sql"]);
    assert_eq!(sorted(ws.tables("ref").await), ["a", "b", "c"]);
}

/// An Atlas directory (`atlas migrate`'s): its files run in name order
/// with their directives (`txmode none` outside a transaction — on
/// PostgreSQL a `create index concurrently` — and a delimiter of their
/// own), only while they are the files its `atlas.sum` sums. Without the
/// sum, and with a file added after it was written (reviewed), nothing
/// runs and the file is named; `strata hash` writes the sum (what `atlas
/// migrate hash` does) and `strata new` writes the next file and the sum
/// with it, refusing a directory that differs from its sum.
#[tokio::test]
async fn an_atlas_directory_runs_only_the_files_its_sum_sums() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    let outside = match backend() {
        Backend::Postgres => "create index concurrently users_id on {schema}.users (id);\n",
        Backend::Sqlserver => "alter table {schema}.users add flag int;\n",
        _ => "alter table {schema}.users add column flag int;\n",
    };
    ws.write_migration("tenants/20240101000000_users.sql", "create table {schema}.users (id int);\n");
    ws.write_migration("tenants/20240102000000_outside.sql", &format!("-- atlas:txmode none\n\n{outside}"));
    ws.write_migration(
        "tenants/20240103000000_orders.sql",
        "-- atlas:delimiter -- end\n\ncreate table {schema}.orders (id int)\n-- end\n\
         insert into {schema}.orders values (7)\n-- end\n",
    );
    let config = ws.write_config(&ws.config(""));
    let refused = strata(&config, &["apply", "--version", "t1", "--tenant", "acme"]).await;
    assert_eq!(code(&refused), 1, "{}{}", stdout(&refused), stderr(&refused));
    assert!(stderr(&refused).contains("tenants/atlas.sum: missing"), "{}", stderr(&refused));
    assert!(ws.tables("acme").await.is_empty());

    let hashed = strata(&config, &["hash", "--dir", "tenants"]).await;
    assert_eq!(code(&hashed), 0, "{}", stderr(&hashed));
    assert!(stdout(&hashed).trim().ends_with("tenants/atlas.sum"), "{}", stdout(&hashed));
    let apply = strata(&config, &["apply", "--version", "t1", "--tenant", "acme"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    assert_eq!(sorted(ws.tables("acme").await), ["orders", "users"]);
    assert_eq!(ws.rows("acme", "select id from orders").await, vec![vec![json!(7)]]);
    if backend() == Backend::Postgres {
        let index = "select count(*) from pg_indexes where indexname = 'users_id' and schemaname = 'acme'";
        assert_eq!(ws.rows("svc", index).await, vec![vec![json!(1)]]);
    }
    assert_eq!(recorded(&ws, "acme").await.len(), 3);

    // A file added after the sum was written: named, nothing runs.
    ws.write_migration("tenants/20240104000000_drop.sql", "drop table {schema}.users;\n");
    for command in [&["plan"][..], &["apply", "--version", "v2"]] {
        let refused = strata(&config, command).await;
        assert_eq!(code(&refused), 1, "{command:?} {}{}", stdout(&refused), stderr(&refused));
        assert!(
            stderr(&refused).contains("tenants/20240104000000_drop.sql was added since it was written"),
            "{}",
            stderr(&refused)
        );
    }
    let new = strata(&config, &["new", "add flag", "--dir", "tenants"]).await;
    assert_eq!(code(&new), 1, "{}", stderr(&new));
    assert!(sorted(ws.tables("acme").await).contains(&"users".to_string()));

    // Removed, the directory is its sum's again; `new` writes the next
    // file and the sum; the file, filled in, is a change to review.
    std::fs::remove_file(ws.migrations().join("tenants/20240104000000_drop.sql")).unwrap();
    let new = strata(&config, &["new", "add notes", "--dir", "tenants"]).await;
    assert_eq!(code(&new), 0, "{}", stderr(&new));
    let path = stdout(&new).trim().to_string();
    assert!(path.ends_with("_add_notes.sql"), "{path}");
    std::fs::write(&path, "create table {schema}.notes (id int);\n").unwrap();
    let refused = strata(&config, &["apply", "--version", "v2"]).await;
    assert_eq!(code(&refused), 1, "{}{}", stdout(&refused), stderr(&refused));
    assert!(stderr(&refused).contains("_add_notes.sql (or a file before it) was edited"), "{}", stderr(&refused));
    assert_eq!(code(&strata(&config, &["hash", "--dir", "tenants"]).await), 0);
    let apply = strata(&config, &["apply", "--version", "v2"]).await;
    assert_eq!(code(&apply), 0, "{}{}", stdout(&apply), stderr(&apply));
    assert_eq!(sorted(ws.tables("acme").await), ["notes", "orders", "users"]);
    assert_eq!(recorded(&ws, "acme").await.len(), 4);
}

/// A Strata file of a unit runs where it would have run alone, even after
/// another tool's file of the same unit ran with the tenant as the
/// session's schema: a tenant script after dbmate's tenant files sees the
/// connection's own schema, not the tenant's. It saw the tenant's (the
/// `set local search_path` or `USE` of the file before it still held), so
/// its plain names resolved, and were created, in the tenant.
#[tokio::test]
async fn a_strata_file_after_another_tools_file_in_one_unit_runs_in_the_sessions_own_schema() {
    if matches!(backend(), Backend::Sqlite | Backend::Sqlserver) {
        return; // no session schema: such files name theirs ({schema}).
    }
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    let own = match backend() {
        Backend::Postgres => "current_schema()",
        _ => "database()",
    };
    ws.write_migration(
        "tenants/20240101000000_seen.sql",
        "-- migrate:up\ncreate table seen (at varchar(64), file int);\n",
    );
    ws.write_migration("scripts/tenants/seen.sql", &format!("insert into {{schema}}.seen values ({own}, 0);\n"));
    let config = ws.write_config(&ws.config(""));
    for tenant in ["acme", "beta"] {
        let added = strata(&config, &["apply", "--version", &format!("add {tenant}"), "--tenant", tenant]).await;
        assert_eq!(code(&added), 0, "{}{}", stdout(&added), stderr(&added));
    }
    // The next version: an existing tenant's unit (one message where the
    // engine sends one), dbmate's file and then the script.
    ws.write_migration(
        "tenants/20240102000000_again.sql",
        "-- migrate:up\ninsert into seen values (current_user, 1);\n",
    );
    let again = strata(&config, &["apply", "--version", "again"]).await;
    assert_eq!(code(&again), 0, "{}{}", stdout(&again), stderr(&again));
    // The connection's own: PostgreSQL's default `search_path` (no schema
    // named after the user), the database MariaDB's `dataSource` names.
    let session_own = match backend() {
        Backend::Postgres => json!("public"),
        _ => {
            let url = crate::support::server_url("STRATA_TEST_MYSQL_URL");
            let database = url.rsplit('/').next().unwrap_or_default().split('?').next().unwrap_or_default();
            json!(database)
        }
    };
    for tenant in ["acme", "beta"] {
        assert_ne!(session_own, json!(tenant));
        let seen = ws.rows(tenant, "select at from seen where file = 0").await;
        assert_eq!(seen, vec![vec![session_own.clone()], vec![session_own.clone()]], "{tenant}");
        assert_eq!(ws.rows(tenant, "select count(*) from seen where file = 1").await, vec![vec![json!(1)]], "{tenant}");
    }
}

/// A tenant directory in another tool's format names its objects plainly,
/// as its tool ran each tenant's files with the tenant as the session's
/// schema (dbmate's `search_path`, a database per tenant): Strata runs
/// them so too — in and outside a transaction — and the service's own
/// schema, or `public`, gets nothing. Before, the first tenant's table was
/// made where the connection pointed and recorded as that tenant's, and
/// the second tenant failed (`relation "users" already exists`). A single
/// directory's plain names still land where its tool put them: the
/// connection's own schema. SQLite and SQL Server have no session schema:
/// there such a file is refused before anything runs, naming the statement.
#[tokio::test]
async fn a_tenant_file_of_another_tools_format_runs_in_its_tenant_as_its_tool_ran_it() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    let outside = match backend() {
        Backend::Postgres => "-- migrate:up transaction:false\ncreate index concurrently users_id on users (id);\n",
        _ => "-- migrate:up transaction:false\ncreate index users_id on users (id);\n",
    };
    ws.write_migration("tenants/20240101000000_users.sql", "-- migrate:up\ncreate table users (id int);\n");
    ws.write_migration("tenants/20240102000000_index.sql", outside);
    ws.write_migration("tenants/20240103000000_seed.sql", "-- migrate:up\ninsert into users values (7);\n");
    let config = ws.write_config(&ws.config(""));
    for tenant in ["acme", "beta"] {
        let added = strata(&config, &["apply", "--version", &format!("add {tenant}"), "--tenant", tenant]).await;
        if matches!(backend(), Backend::Sqlite | Backend::Sqlserver) {
            assert_eq!(code(&added), 1, "{}{}", stdout(&added), stderr(&added));
            assert!(stderr(&added).contains("tenants/20240101000000_users.sql"), "{}", stderr(&added));
            assert!(stderr(&added).contains("names no schema"), "{}", stderr(&added));
            return;
        }
        // Behind a pooler in transaction mode (tests/README.md's audit), a
        // session's schema cannot be kept for the file outside a
        // transaction: refused by name, none of it run.
        if backend() == Backend::Postgres && std::env::var_os("STRATA_TEST_PG_SERVICE_URL").is_some() {
            assert_eq!(code(&added), 1, "{}{}", stdout(&added), stderr(&added));
            let refused = "tenants/20240102000000_index.sql runs outside a transaction with its tenant as the \
                           session's schema, and this server's sessions cannot be kept to one connection";
            assert!(stderr(&added).contains(refused), "{}", stderr(&added));
            let index = "select count(*) from pg_indexes where indexname = 'users_id'";
            assert_eq!(ws.rows("svc", index).await, vec![vec![json!(0)]]);
            return;
        }
        assert_eq!(code(&added), 0, "{}{}", stdout(&added), stderr(&added));
    }
    for tenant in ["acme", "beta"] {
        assert_eq!(sorted(ws.tables(tenant).await), ["users"], "{tenant}");
        assert_eq!(ws.rows(tenant, "select id from users").await, vec![vec![json!(7)]], "{tenant}");
        assert_eq!(recorded(&ws, tenant).await.len(), 3, "{tenant}");
    }
    let outside = if backend() == Backend::Postgres { "public" } else { "mysql" };
    assert!(!ws.tables(outside).await.contains(&"users".to_string()));
}

/// Flyway's `R__` repeatable file runs as Flyway runs it: once in each
/// schema, then again only where its text changed — an unchanged one is not
/// run by the next version (its inserts would pile up), and `plan --check`
/// counts a changed one as pending.
#[tokio::test]
async fn a_flyway_repeatable_file_runs_again_only_after_its_text_changed() {
    let _turn = mysql_turn();
    let ws = empty_workspace().await;
    ws.write_migration("tenants/V1__log.sql", "create table {schema}.log (msg varchar(20));\n");
    ws.write_migration("tenants/R__stamp.sql", "insert into {schema}.log values ('one');\n");
    let config = ws.write_config(&ws.config(""));
    for tenant in ["acme", "beta"] {
        let created = strata(&config, &["apply", "--version", tenant, "--tenant", tenant]).await;
        assert_eq!(code(&created), 0, "{}{}", stdout(&created), stderr(&created));
    }
    let log = |schema: &'static str| {
        let ws = &ws;
        async move {
            let rows = ws.rows(schema, "select msg from log order by msg").await;
            rows.into_iter().map(|row| row[0].as_str().unwrap().to_string()).collect::<Vec<_>>()
        }
    };
    assert_eq!(log("acme").await, ["one"]);
    assert_eq!(log("beta").await, ["one"]);
    // Unchanged: nothing due, nothing run, nothing pending.
    let check = strata(&config, &["plan", "--check"]).await;
    assert_eq!(code(&check), 0, "{}{}", stdout(&check), stderr(&check));
    let again = strata(&config, &["apply", "--version", "unchanged"]).await;
    assert_eq!(code(&again), 0, "{}{}", stdout(&again), stderr(&again));
    assert_eq!(log("acme").await, ["one"]);
    assert_eq!(log("beta").await, ["one"]);
    // Changed: due in every tenant, once.
    ws.write_migration("tenants/R__stamp.sql", "insert into {schema}.log values ('two');\n");
    let check = strata(&config, &["plan", "--check"]).await;
    assert_eq!(code(&check), 6, "a changed repeatable is pending: {}{}", stdout(&check), stderr(&check));
    for version in ["changed", "after"] {
        let applied = strata(&config, &["apply", "--version", version]).await;
        assert_eq!(code(&applied), 0, "{}{}", stdout(&applied), stderr(&applied));
    }
    assert_eq!(log("acme").await, ["one", "two"]);
    assert_eq!(log("beta").await, ["one", "two"]);
}
