//! Fleet drift: every tenant's live schema fingerprinted and compared with
//! the tenants that recorded the same migrations (`drift` in GraphQL,
//! `strata drift`), on every engine.

use serde_json::{Value, json};

use crate::support::{Backend, Server, backend, strata};

/// Fifty tenants on the `basic` set plus a tenant index whose name embeds
/// the schema's name.
async fn fleet() -> Server {
    let server = Server::start("basic", "").await;
    let index = match backend() {
        Backend::Sqlite => "create index {schema}.{schema}_users_id on users (id);\n",
        _ => "create index {schema}_users_id on {schema}.users (id);\n",
    };
    server.ws.write_migration("tenants/005.sql", index);
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    for i in 1..=50 {
        let name = format!("t{i:02}");
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server
}

/// The `basic` set's single schemas and three tenants, `t1` to `t3`.
async fn three_tenants() -> Server {
    three_tenants_with("").await
}

/// [`three_tenants`] with `extra` configuration.
async fn three_tenants_with(extra: &str) -> Server {
    let server = Server::start("basic", extra).await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    for name in ["t1", "t2", "t3"] {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server
}

const DRIFT: &str = "{ drift { tenants changed groups { fingerprint tenants outliers } \
                     outliers { tenant reference differences { kind name change expected found } } } }";

/// `sql` run as an operator would in `schema`: qualified on PostgreSQL and
/// MySQL, in the schema's own file on SQLite (`{}` is `schema.` or nothing).
async fn by_hand(server: &Server, schema: &str, sql: &str) {
    let prefix = if backend() == Backend::Sqlite { String::new() } else { format!("{schema}.") };
    // T-SQL adds a column without the word.
    let sql = if backend() == Backend::Sqlserver { sql.replace(" add column ", " add ") } else { sql.to_string() };
    server.ws.execute(schema, &sql.replace("{}", &prefix)).await;
}

/// What the first outlier has that its reference lacks: (kind, name).
fn first_outliers_additions(drift: &Value) -> Vec<(&str, &str)> {
    drift["outliers"][0]["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["change"] == "added")
        .map(|d| (d["kind"].as_str().unwrap(), d["name"].as_str().unwrap()))
        .collect()
}

fn outliers(drift: &Value) -> Vec<String> {
    drift["outliers"].as_array().unwrap().iter().map(|o| o["tenant"].as_str().unwrap().to_string()).collect()
}

/// Right after a version that created `orders` in every tenant, drift finds
/// nothing changed and no outlier; a column added to `t3.orders` by hand
/// afterwards makes `t3` changed.
async fn the_prints_judge_only_changes_made_after(server: &Server) {
    let drift = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(drift["changed"], json!([]), "{drift}");
    assert_eq!(outliers(&drift), Vec::<String>::new(), "{drift}");

    by_hand(server, "t3", "alter table {}orders add column note varchar(20)").await;
    let drift = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(drift["changed"], json!(["t3"]), "{drift}");
}

#[tokio::test]
async fn a_clean_fleet_has_no_drift_and_a_hand_made_change_is_found_and_shown() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_clean_fleet_has_no_drift_and_a_hand_made_change_is_found_and_shown",
            "its changes by hand are written per engine; SQL Server's are sqlserver.rs's fleet_drift_reads_each_tenants_catalog_and_finds_what_was_changed_by_hand",
        );
    }
    let server = fleet().await;
    let clean = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(clean["tenants"], 50, "{clean}");
    assert_eq!(clean["groups"].as_array().unwrap().len(), 1, "one group, no false outlier from t01_users_id: {clean}");
    assert_eq!(outliers(&clean), Vec::<String>::new(), "{clean}");
    assert_eq!(clean["changed"], json!([]), "{clean}");
    let cli = strata(server.config_path(), &["drift"]).await;
    assert_eq!(cli.status.code(), Some(0), "{}", String::from_utf8_lossy(&cli.stderr));
    assert!(
        String::from_utf8_lossy(&cli.stdout)
            .starts_with("50 tenant(s) in 1 group(s) by recorded migrations; 0 outlier(s).")
    );

    // A hot-fix ALTER on one tenant, an index dropped during an incident on
    // another, a third restored from a dump older than its records.
    by_hand(&server, "t17", "alter table {}users add column note varchar(20)").await;
    let drop_index = match backend() {
        Backend::Mysql => "drop index users_email on t05.users",
        Backend::Postgres => "drop index t05.users_email",
        Backend::Sqlite => "drop index users_email",
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    server.ws.execute("t05", drop_index).await;
    let restore = match backend() {
        Backend::Postgres => {
            "drop schema t09 cascade; create schema t09; \
             create table t09.users (id serial primary key, email text not null); \
             create index users_email on t09.users (email);"
        }
        Backend::Mysql => {
            "drop database t09; create database t09; \
             create table t09.users (id integer auto_increment primary key, email text not null); \
             create index users_email on t09.users (email(100));"
        }
        Backend::Sqlite => {
            "drop table users; create table users (id integer primary key, email text not null); \
             create index users_email on users (email);"
        }
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    server.ws.execute("t09", restore).await;
    // And a table made by hand in a single schema, which has no group: its
    // fingerprint, stored after its last unit, tells.
    by_hand(&server, "ref", "create table {}hand_made (id int)").await;

    let drift = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(outliers(&drift), ["t05", "t09", "t17"], "{drift}");
    assert_eq!(drift["changed"], json!(["ref", "t05", "t09", "t17"]), "{drift}");
    let group = &drift["groups"][0];
    assert_eq!(group["tenants"].as_array().unwrap().len(), 47, "{drift}");
    assert_eq!(group["outliers"], json!(["t05", "t09", "t17"]));
    let of =
        |tenant: &str| drift["outliers"].as_array().unwrap().iter().find(|o| o["tenant"] == tenant).unwrap().clone();
    let t17 = of("t17");
    assert_eq!(t17["reference"], "t01");
    let added: Vec<&Value> = t17["differences"].as_array().unwrap().iter().filter(|d| d["change"] == "added").collect();
    assert_eq!(added.len(), 1, "{t17}");
    assert_eq!(added[0]["kind"], "column", "{t17}");
    assert_eq!(added[0]["name"], "users.note");
    let found = added[0]["found"].as_str().unwrap();
    assert!(found.starts_with("varchar(20)") || found.starts_with("character varying(20)"), "{t17}");
    let t05 = of("t05");
    let missing: Vec<(&str, &str)> = t05["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["change"].as_str().unwrap(), d["name"].as_str().unwrap()))
        .collect();
    let index_name = if backend() == Backend::Mysql { "users.users_email" } else { "users_email" };
    assert!(missing.contains(&("missing", index_name)), "{t05}");
    let t09 = of("t09");
    let t09_missing: Vec<&str> = t09["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["change"] == "missing")
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    let embedded = if backend() == Backend::Mysql { "users.{schema}_users_id" } else { "{schema}_users_id" };
    assert!(t09_missing.contains(&embedded), "the restored tenant lacks tenants/005.sql's index: {t09}");

    let cli = strata(server.config_path(), &["drift"]).await;
    let out = String::from_utf8_lossy(&cli.stdout);
    assert_eq!(cli.status.code(), Some(10), "{out}");
    assert!(out.starts_with("50 tenant(s) in 1 group(s) by recorded migrations; 3 outlier(s)."), "{out}");
    assert!(out.contains("\nt17 differs from t01 (same 3 recorded migration(s)):\n"), "{out}");
    let json_cli = strata(server.config_path(), &["drift", "--json"]).await;
    let parsed: Value = serde_json::from_slice(&json_cli.stdout).unwrap();
    assert_eq!(parsed["outliers"].as_array().unwrap().len(), 3);

    // driftPolicy: refuse — a version over the fleet is refused while the
    // drift stands; the default (report) logs it and runs.
    let later = match backend() {
        Backend::Sqlite => "create table {schema}.later (id int);\n",
        _ => "create table {schema}.later (id int);\n",
    };
    server.ws.write_migration("tenants/007.sql", later);
    let refuse = server.ws.path().join("refuse.yaml");
    std::fs::write(&refuse, server.ws.config("driftPolicy: refuse\n")).unwrap();
    let refused = strata(&refuse, &["apply", "--version", "refused"]).await;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(10), "{stderr}");
    assert!(stderr.contains("fleet drift: 3 tenant(s) differ from the tenants that recorded the same migrations (t05, t09, t17), 4 schema(s) changed since their last migration (ref, t05, t09, t17)"), "{stderr}");
    let recorded =
        server.ws.rows("svc", "select count(*) from svc_migrations where filename = 'tenants/007.sql'").await;
    assert_eq!(recorded, [[json!(0)]], "nothing ran");
    let reported = server.create_version(json!({ "versionName": "reported" })).await;
    assert!(reported.get("errors").is_none(), "{reported}");
    assert!(server.log().contains("fleet drift: tenants differ"), "the default policy logs it");
}

/// A `NOT NULL` dropped by hand is one difference, the column's, on every
/// PostgreSQL major: 18 also keeps it as a constraint (`pg_constraint`),
/// which the fingerprint leaves out, so one schema fingerprints alike on 13
/// to 18 (`tests/pg-majors.sh` runs this on each).
#[tokio::test]
async fn a_not_null_dropped_by_hand_is_one_difference_on_every_postgres_major() {
    if backend() != Backend::Postgres {
        return;
    }
    let server = three_tenants().await;
    server.ws.execute("t2", "alter table t2.users alter column email drop not null").await;
    let drift = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(outliers(&drift), ["t2"], "{drift}");
    assert_eq!(drift["changed"], json!(["t2"]), "{drift}");
    assert_eq!(
        drift["outliers"][0]["differences"],
        json!([{ "kind": "column", "name": "users.email", "change": "changed", "expected": "text not null", "found": "text" }]),
        "{drift}"
    );
}

/// Tenants listed but never migrated are compared by what their files hold.
/// On SQLite a file whose schema never changed is known empty from its
/// header and is not attached — no file, an empty one, one with only a
/// setting written; one with a table made by hand is read (an outlier), and
/// so is one whose table was made and dropped (empty, like the others), or
/// one in WAL mode. Reading makes no file.
#[tokio::test]
async fn tenants_never_migrated_are_compared_by_what_their_files_hold() {
    if backend() != Backend::Sqlite {
        return;
    }
    let server = Server::start("basic", "").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    let names = ["n1", "n2", "n3", "n4", "n5", "n6"];
    let values: Vec<String> = names.iter().map(|name| format!("('{name}')")).collect();
    server.ws.execute("svc", &format!("insert into svc_tenants (name) values {}", values.join(", "))).await;
    let file = |name: &str| server.ws.path().join("db").join(format!("{name}.db"));
    std::fs::write(file("n2"), b"").unwrap();
    server.ws.execute("n3", "pragma journal_mode = delete; pragma user_version = 3").await;
    server.ws.execute("n4", "pragma journal_mode = delete; create table hand (id int)").await;
    server.ws.execute("n5", "pragma journal_mode = delete; create table gone (id int); drop table gone").await;
    server.ws.execute("n6", "pragma journal_mode = wal; pragma user_version = 6").await;

    let drift = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(drift["tenants"], 6, "{drift}");
    assert_eq!(drift["groups"].as_array().unwrap().len(), 1, "{drift}");
    assert_eq!(outliers(&drift), ["n4"], "{drift}");
    let added = first_outliers_additions(&drift);
    assert!(added.contains(&("table", "hand")), "{drift}");
    assert!(!file("n1").exists(), "reading drift made n1's file");
    assert_eq!(std::fs::metadata(file("n2")).unwrap().len(), 0, "n2's file was written");
}

/// A trigger made by hand in one tenant is drift on every engine (MySQL
/// and MariaDB find a schema's triggers by their table's schema).
/// Every kind of relation a tenant's catalog holds, made by hand, is
/// drift on every PostgreSQL major: a table, a partitioned table and its
/// partition, a view, a materialized view, a sequence, a foreign table, a
/// table moved in from another schema, a table with an identity column.
/// (A schema's relations are found through what depends on the schema, not
/// a scan of `pg_class`: none of these is missed.)
#[tokio::test]
async fn every_kind_of_relation_made_by_hand_is_drift_on_every_postgres_major() {
    if backend() != Backend::Postgres {
        return;
    }
    let server = Server::start("basic", "").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    let made = [
        ("t1", "create table t1.hand_table (id int)"),
        (
            "t2",
            "create table t2.hand_parts (id int) partition by range (id); \
             create table t2.hand_part_1 partition of t2.hand_parts for values from (0) to (10)",
        ),
        ("t3", "create view t3.hand_view as select 1 as one"),
        ("t4", "create materialized view t4.hand_matview as select 1 as one"),
        ("t5", "create sequence t5.hand_sequence"),
        (
            "t6",
            "do $$ begin create foreign data wrapper strata_test_fdw; exception when duplicate_object then null; \
             end $$; do $$ begin create server strata_test_server foreign data wrapper strata_test_fdw; \
             exception when duplicate_object then null; end $$; \
             create foreign table t6.hand_foreign (id int) server strata_test_server",
        ),
        ("t7", "create table public.hand_moved_t7 (id int); alter table public.hand_moved_t7 set schema t7"),
        ("t8", "create table t8.hand_identity (id int generated always as identity)"),
    ];
    for (tenant, _) in made {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    let clean = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(clean["changed"], json!([]), "{clean}");
    for (tenant, sql) in made {
        server.ws.execute(tenant, sql).await;
    }
    let drift = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(drift["changed"], json!(["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"]), "{drift}");
}

#[tokio::test]
async fn a_trigger_made_by_hand_is_drift_on_every_engine() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_trigger_made_by_hand_is_drift_on_every_engine",
            "the trigger is written in the other engines' dialects, not yet in T-SQL",
        );
    }
    let server = three_tenants().await;
    let trigger = match backend() {
        Backend::Postgres => {
            "create function t2.touch() returns trigger language plpgsql as $$ begin return new; end $$; \
             create trigger users_touch before insert on t2.users for each row execute function t2.touch();"
        }
        Backend::Mysql => {
            "create trigger t2.users_touch before insert on t2.users for each row set new.email = lower(new.email)"
        }
        Backend::Sqlite => "create trigger users_touch before insert on users begin select 1; end",
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    server.ws.execute("t2", trigger).await;
    let drift = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(outliers(&drift), ["t2"], "{drift}");
    let added = first_outliers_additions(&drift);
    assert!(added.iter().any(|(kind, name)| *kind == "trigger" && name.contains("users_touch")), "{drift}");
}

/// The prints stored after a version over the fleet are of the catalogs it
/// left (on SQLite each tenant's catalog is read right after its unit, its
/// file still attached): nothing reads as changed right after it, though each
/// tenant's last unit — a script that runs outside any transaction — came
/// after that read; a change made by hand afterwards does.
#[tokio::test]
async fn the_prints_stored_after_a_fleet_version_are_of_what_it_left() {
    let server = three_tenants().await;
    server.ws.write_migration("tenants/010.sql", "create table {schema}.orders (id int);\n");
    server.ws.write_migration(
        "scripts/tenants/zz.sql",
        match backend() {
            Backend::Sqlserver => {
                "-- strata:no-transaction\nif object_id(N'{schema}.made_by_script') is null \
                 create table {schema}.made_by_script (id int);\n"
            }
            _ => "-- strata:no-transaction\ncreate table if not exists {schema}.made_by_script (id int);\n",
        },
    );
    let version = server.create_version(json!({ "versionName": "orders" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    let made =
        server.ws.rows("svc", "select count(*) from svc_fingerprints where db_schema in ('t1', 't2', 't3')").await;
    assert_eq!(made, [[json!(3)]], "each tenant's print stored");
    the_prints_judge_only_changes_made_after(&server).await;
}

/// The same with the whole version in one transaction: the prints are
/// stored with what it recorded (from the plan and every step it
/// committed), so they are judged.
#[tokio::test]
async fn the_prints_stored_after_a_version_in_one_transaction_are_of_what_it_left() {
    let server = three_tenants_with("transactionScope: version").await;
    server.ws.write_migration("tenants/010.sql", "create table {schema}.orders (id int);\n");
    let version = server.create_version(json!({ "versionName": "orders" })).await;
    assert!(version.get("errors").is_none(), "{version}");
    the_prints_judge_only_changes_made_after(&server).await;
}

/// The calls of `/metrics`' `svc_http_fleet_reads` series for `read` whose
/// answer was `answer` (`read`: a read of their own, `shared`: another's).
async fn fleet_reads(server: &Server, read: &str, answer: &str) -> f64 {
    let text = server.get("/metrics").await.text().await.unwrap();
    text.lines()
        .filter(|line| line.starts_with("svc_http_fleet_reads{"))
        .filter(|line| line.contains(&format!("read=\"{read}\"")) && line.contains(&format!("answer=\"{answer}\"")))
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// Drift reads every tenant's catalog: asked under four aliases in each of
/// three requests at once, it is read at most once a request (the fields
/// of one request share a read; a request that came while a read ran
/// waits for the next, which answers every request waiting), every
/// answer alike; and an answer is never older than its request: a change
/// made by hand after the burst is seen by the next request.
#[tokio::test]
async fn drift_asked_many_times_at_once_is_read_once_a_request_and_never_older_than_it() {
    let server = three_tenants().await;
    let fields = "tenants changed groups { fingerprint tenants } outliers { tenant }";
    let query = format!(
        "{{ a: drift {{ {fields} }} b: drift {{ {fields} }} c: drift {{ {fields} }} d: drift {{ {fields} }} }}"
    );
    let answers = futures::future::join_all((0..3).map(|_| server.data(&query, json!({})))).await;
    let first = &answers[0]["a"];
    assert_eq!(first["tenants"], 3, "{first}");
    for answer in &answers {
        for alias in ["a", "b", "c", "d"] {
            assert_eq!(&answer[alias], first, "{answer}");
        }
    }
    let (read, shared) = (fleet_reads(&server, "drift", "read").await, fleet_reads(&server, "drift", "shared").await);
    assert_eq!(read + shared, 12.0, "every field answered once: {read} read, {shared} shared");
    assert!((1.0..=3.0).contains(&read), "at most one read a request: {read} read, {shared} shared");

    by_hand(&server, "t3", "alter table {}users add column note varchar(20)").await;
    let after = server.data(DRIFT, json!({})).await["drift"].clone();
    assert_eq!(after["changed"], json!(["t3"]), "a read that started after the change: {after}");
    assert_eq!(fleet_reads(&server, "drift", "read").await, read + 1.0);
}
