//! Desired state (`strata diff --desired FILE`): a fleet's way from its
//! live schemas to one schema file, tenants grouped by identical plan —
//! on PostgreSQL and MariaDB, against the live catalogs of 50 tenants,
//! and on SQLite, whose changed tables are rebuilt.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::{Backend, Server, backend, strata};

/// A tenant migration beside the `basic` set's `users`.
const PROFILES: &str = "create table {schema}.profiles (id integer primary key, name varchar(64) not null, \
                        user_id integer references {schema}.users(id));\n\
                        create index profiles_user on {schema}.profiles (user_id);\n";

/// What a tenant should be: the migrations' schema, one more column and
/// one more table (with an identity and a generated column: made as such,
/// its identity's own sequence not planned apart).
const DESIRED: &str = "\
create table {schema}.users (id serial primary key, email text not null, created_at timestamptz default now());
create index users_email on {schema}.users (email);
create table {schema}.profiles (id integer primary key, name varchar(64) not null, user_id integer references {schema}.users(id));
create index profiles_user on {schema}.profiles (user_id);
create table {schema}.notes (id bigint generated always as identity primary key, body text not null,
  words integer generated always as (length(body)) stored);
";

/// What every tenant lacks: the new column and the new table.
const COMMON: [&str; 3] = [
    "CREATE TABLE {schema}.notes (\n    id bigint not null generated always as identity,\n    body text not null,\n    \
     words integer generated always as (length(body)) stored\n)",
    "ALTER TABLE {schema}.users ADD COLUMN created_at timestamp with time zone default now()",
    "ALTER TABLE {schema}.notes ADD CONSTRAINT notes_pkey PRIMARY KEY (id)",
];

/// The `basic` set with [`PROFILES`] ([`MARIADB_PROFILES`] on MariaDB),
/// its single schemas migrated and `names` added as tenants with every
/// file.
async fn fleet(names: &[String]) -> Server {
    fleet_with(names, "").await
}

/// [`fleet`] with `extra` configuration lines.
async fn fleet_with(names: &[String], extra: &str) -> Server {
    let profiles = if backend() == Backend::Mysql { MARIADB_PROFILES } else { PROFILES };
    fleet_of(names, extra, Some(profiles)).await
}

/// The `basic` set with `extra` configuration lines and `tenant_file` as
/// its `tenants/005.sql`, its single schemas migrated and `names` added as
/// tenants with every file.
async fn fleet_of(names: &[impl AsRef<str>], extra: &str, tenant_file: Option<&str>) -> Server {
    let server = Server::start("basic", extra).await;
    if let Some(text) = tenant_file {
        server.ws.write_migration("tenants/005.sql", text);
    }
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    let mut add = vec!["tenants", "add", "--version", "fleet"];
    add.extend(names.iter().map(AsRef::as_ref));
    let added = strata(server.config_path(), &add).await;
    assert_eq!(added.status.code(), Some(0), "{}", String::from_utf8_lossy(&added.stderr));
    server
}

/// Writes `text` as `desired.sql` beside the configuration: its path.
fn write_desired(server: &Server, text: &str) -> std::path::PathBuf {
    let file = server.ws.path().join("desired.sql");
    std::fs::write(&file, text).unwrap();
    file
}

/// Runs `strata diff --desired` on `text` (written beside the
/// configuration) with `args`.
async fn diff(server: &Server, text: &str, args: &[&str]) -> std::process::Output {
    let file = write_desired(server, text);
    let mut all = vec!["diff", "--desired", file.to_str().unwrap()];
    all.extend_from_slice(args);
    strata(server.config_path(), &all).await
}

fn report(output: &std::process::Output) -> Value {
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// `schema` as `pg_dump --schema-only` writes it, its name written
/// `{schema}`, the dump's comments, settings and `\restrict` keys left out.
fn dumped(server: &Server, schema: &str) -> Vec<String> {
    let pg_dump = format!("{}/pg_dump", crate::support::server_url("STRATA_TEST_PG_BIN"));
    let dump = std::process::Command::new(pg_dump)
        .args(["--schema-only", "--no-owner", "--no-privileges", &format!("--schema={schema}")])
        .arg(server.ws.pg_url())
        .output()
        .unwrap();
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    String::from_utf8_lossy(&dump.stdout)
        .lines()
        .filter(|line| !line.starts_with("--") && !line.starts_with("SET ") && !line.contains("set_config"))
        .filter(|line| !line.starts_with("\\restrict") && !line.starts_with("\\unrestrict"))
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            line.replace(&format!("{schema}."), "{schema}.").replace(&format!("SCHEMA {schema};"), "SCHEMA {schema};")
        })
        .collect()
}

fn steps(group: &Value) -> Vec<&str> {
    group["steps"].as_array().unwrap().iter().map(|s| s["sql"].as_str().unwrap()).collect()
}

fn tenants(group: &Value) -> Vec<&str> {
    group["tenants"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect()
}

async fn scratch_schemas(server: &Server) -> i64 {
    let rows = server.ws.rows("svc", "select count(*) from pg_namespace where nspname like 'strata_desired%'").await;
    rows[0][0].as_i64().unwrap()
}

/// The grouping tests' fleet: 50 tenants, 44 as migrated, t03, t17 and
/// t29 with an index dropped by hand (`drop_index`, `{tenant}` in it), t08
/// and t41 with an extra column, t33 with a narrower column (`narrow`);
/// `diff --desired` of `desired` over it, checked to find exactly those
/// four groups, largest first.
async fn fifty_tenants(desired: &str, drop_index: &str, narrow: &str) -> (Server, Value) {
    let names: Vec<String> = (1..=50).map(|i| format!("t{i:02}")).collect();
    let server = fleet(&names).await;
    for tenant in ["t03", "t17", "t29"] {
        server.ws.execute("svc", &drop_index.replace("{tenant}", tenant)).await;
    }
    for tenant in ["t08", "t41"] {
        server.ws.execute("svc", &format!("alter table {tenant}.users add column nickname text")).await;
    }
    server.ws.execute("svc", narrow).await;
    let found = report(&diff(&server, desired, &["--json"]).await);
    assert_eq!((found["tenants"].as_u64(), found["differing"].as_u64()), (Some(50), Some(50)), "{found}");
    let odd = ["t03", "t08", "t17", "t29", "t33", "t41"];
    let majority: Vec<&str> = names.iter().map(String::as_str).filter(|n| !odd.contains(n)).collect();
    let by_size: Vec<Vec<&str>> = found["groups"].as_array().unwrap().iter().map(tenants).collect();
    assert_eq!(by_size, [majority, vec!["t03", "t17", "t29"], vec!["t08", "t41"], vec!["t33"]], "{found}");
    (server, found)
}

/// 50 tenants: 44 as migrated, 3 with an index dropped by hand, 2 with an
/// extra column, 1 with a narrower column. `diff` gives exactly four
/// groups with those tenants, the extra column's marked destructive and
/// each plan linted; nothing of the scratch schema stays; each group's
/// steps, run in its tenants, bring all 50 to the desired schema.
#[tokio::test]
async fn a_fleet_is_grouped_by_its_way_to_the_desired_schema_and_each_plan_gets_it_there() {
    if backend() != Backend::Postgres {
        return;
    }
    let (server, found) = fifty_tenants(
        DESIRED,
        "drop index {tenant}.users_email",
        "alter table t33.profiles alter column name type varchar(20)",
    )
    .await;
    let groups = found["groups"].as_array().unwrap();
    assert_eq!(steps(&groups[0]), COMMON, "{found}");
    let with = |extra: &str| -> Vec<String> {
        let mut all: Vec<String> = COMMON.iter().map(|s| s.to_string()).collect();
        all.push(extra.to_string());
        all
    };
    assert_eq!(steps(&groups[1]), with("CREATE INDEX users_email ON {schema}.users USING btree (email)"));
    assert_eq!(steps(&groups[2]), with("ALTER TABLE {schema}.users DROP COLUMN nickname"));
    let mut widened = with("");
    widened.pop();
    widened.insert(1, "ALTER TABLE {schema}.profiles ALTER COLUMN name TYPE character varying(64)".to_string());
    assert_eq!(steps(&groups[3]), widened);
    let destructive: Vec<bool> = groups.iter().map(|g| g["destructive"].as_bool().unwrap()).collect();
    assert_eq!(destructive, [false, false, true, false]);
    let rules = |group: &Value| -> Vec<String> {
        group["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap().to_string()).collect()
    };
    assert!(rules(&groups[1]).contains(&"create-index-non-concurrently".to_string()), "{found}");
    assert!(rules(&groups[2]).contains(&"dropping-column".to_string()), "{found}");
    assert_eq!(scratch_schemas(&server).await, 0);

    // Text, and --check: 10 while a tenant differs.
    let text = diff(&server, DESIRED, &[]).await;
    assert_eq!(text.status.code(), Some(0));
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(shown.starts_with("50 of 50 tenant(s) differ from the desired schema, in 4 group(s)\n"), "{shown}");
    assert!(shown.contains("  [destructive] ALTER TABLE {schema}.users DROP COLUMN nickname;\n"), "{shown}");
    assert_eq!(diff(&server, DESIRED, &["--check"]).await.status.code(), Some(10));

    // Each group's plan, run in each of its tenants, reaches the desired schema.
    let plans: BTreeMap<String, String> = groups
        .iter()
        .flat_map(|g| {
            let text = steps(g).join(";\n");
            tenants(g).into_iter().map(move |t| (t.to_string(), text.clone()))
        })
        .collect();
    for (tenant, plan) in &plans {
        server.ws.execute("svc", &plan.replace("{schema}", tenant)).await;
    }
    let done = report(&diff(&server, DESIRED, &["--json", "--check"]).await);
    assert_eq!(done["differing"], 0, "{done}");
    assert_eq!(done["groups"].as_array().unwrap().len(), 1, "{done}");
    assert_eq!(done["groups"][0]["steps"], json!([]), "{done}");
    // And pg_dump agrees: a tenant of each group dumps as a schema made
    // from the desired file itself.
    let built = format!("create schema built_from_file;\n{}", DESIRED.replace("{schema}", "built_from_file"));
    server.ws.execute("svc", &built).await;
    let expected = dumped(&server, "built_from_file");
    assert!(expected.iter().any(|line| line.contains("GENERATED ALWAYS AS IDENTITY")), "{expected:?}");
    for tenant in ["t01", "t03", "t08", "t33"] {
        assert_eq!(dumped(&server, tenant), expected, "{tenant}");
    }
    // The extra columns went with their plan; every tenant kept its rows.
    let rows = server.ws.rows("svc", "select count(*) from t08.users").await;
    assert!(rows[0][0].as_i64().unwrap() >= 1, "{rows:?}");
}

/// A desired file the engine refuses is named with its line; one that
/// creates nothing in `{schema}` (every tenant's objects would be dropped),
/// that ends the transaction, or (PostgreSQL) that runs anything but
/// definitions or makes an object elsewhere is refused; none leaves
/// anything behind.
/// The engines without a planner refuse by name.
#[tokio::test]
async fn a_desired_file_that_fails_creates_nothing_or_commits_is_refused_and_leaves_nothing() {
    let server = Server::start("basic", "").await;
    let created = server.create_tenant(json!({ "tenantName": "t1", "versionName": "t1" })).await;
    assert!(created.get("errors").is_none(), "{created}");
    let refused = |output: &std::process::Output| -> String {
        assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stdout));
        String::from_utf8_lossy(&output.stderr).to_string()
    };
    if backend() == Backend::Sqlite {
        let failing = "create table {schema}.kept (id int);\ncreate table {schema}.bad (id int,, name text);\n";
        let message = refused(&diff(&server, failing, &[]).await);
        assert!(message.contains("line 2:") && message.contains("syntax error"), "{message}");
        let message = refused(&diff(&server, "create table kept (id int);\n", &[]).await);
        assert!(
            message.contains("line 1: `create table kept (id int)`: a desired schema names each object"),
            "{message}"
        );
        let message = refused(&diff(&server, "create table {schema}.kept (id int);\ncommit;\n", &[]).await);
        assert!(message.contains("COMMIT would end the transaction"), "{message}");
        let message = refused(&diff(&server, "attach database 'x.db' as {schema};\n", &[]).await);
        assert!(message.contains("ATTACH cannot run inside a transaction"), "{message}");
        let message = refused(&diff(&server, "pragma {schema}.user_version = 7;\n", &[]).await);
        assert!(message.contains("a desired schema holds only CREATE and ALTER"), "{message}");
        for file in ["svc", "main", "t1"] {
            let kept = server.ws.rows(file, "select count(*) from sqlite_master where name = 'kept'").await;
            assert_eq!(kept[0][0], 0, "{file}");
        }
        // The connection that read it is whole: a second reading works.
        let ok = report(
            &diff(&server, "create table {schema}.users (id integer primary key, email text not null);\n", &["--json"])
                .await,
        );
        assert_eq!(ok["tenants"], 1, "{ok}");
        return;
    }
    if backend() != Backend::Postgres {
        return;
    }
    let failing = "create table {schema}.kept (id int);\ncreate view {schema}.v as select * from {schema}.nowhere;\n";
    let message = refused(&diff(&server, failing, &[]).await);
    assert!(message.contains("line 2: relation \"{schema}.nowhere\" does not exist"), "{message}");
    let message = refused(
        &diff(&server, "create table {schema}.kept (id int);\ncreate table public.kept (id int);\n", &[]).await,
    );
    assert!(
        message.contains("line 2: `create table public.kept (id int)`: names an object of another schema"),
        "{message}"
    );
    // Nothing but definitions runs: a block that would write what the
    // service's credentials read (its own tables, another tenant's rows)
    // into a definition the plan shows is refused before anything runs,
    // as is a query.
    let leak = "create table {schema}.kept (id int);\n\
                do $$ begin execute format('create view {schema}.leak as select %L::text as x', \
                (select string_agg(filename, ',') from svc.svc_migrations)); end $$;\n";
    let message = refused(&diff(&server, leak, &[]).await);
    assert!(message.contains("line 2: `do $$ begin execute format('create view"), "{message}");
    assert!(
        message.contains("a desired schema holds only CREATE, ALTER, COMMENT ON, GRANT, REVOKE and SET statements"),
        "{message}"
    );
    let query = "create table {schema}.kept (id int);\nselect pg_terminate_backend(pid) from pg_stat_activity;\n";
    assert!(refused(&diff(&server, query, &[]).await).contains("line 2: `select pg_terminate_backend(pid) from"));
    let message = refused(&diff(&server, "set statement_timeout = 0;\n", &[]).await);
    assert!(message.contains("creates nothing in the tenant's schema"), "{message}");
    let copy = "create table {schema}.kept as select * from svc.svc_migrations;\n";
    assert!(refused(&diff(&server, copy, &[]).await).contains("CREATE TABLE … AS runs its query"));
    let message = refused(&diff(&server, "create table {schema}.kept (id int);\ncommit;\n", &[]).await);
    assert!(message.contains("COMMIT would end the transaction"), "{message}");
    assert_eq!(scratch_schemas(&server).await, 0);
    let kept = server.ws.rows("svc", "select count(*) from pg_class where relname = 'kept'").await;
    assert_eq!(kept[0][0], 0);
}

/// `strata new NAME --desired FILE` writes the majority's plan as the
/// tenants' next migration file and says how the other groups fare; once
/// applied as a version (its files recorded as any other), the majority is
/// in the desired state and only the outlier's own step is left.
#[tokio::test]
async fn new_with_desired_writes_the_majority_plan_as_the_next_file_and_apply_reaches_it() {
    if backend() != Backend::Postgres {
        return;
    }
    let server = fleet(&(1..=5).map(|i| format!("t{i}")).collect::<Vec<_>>()).await;
    server.ws.execute("svc", "drop index t5.users_email").await;
    let file = write_desired(&server, DESIRED);

    let written = strata(server.config_path(), &["new", "to desired", "--desired", file.to_str().unwrap()]).await;
    assert_eq!(written.status.code(), Some(0), "{}", String::from_utf8_lossy(&written.stderr));
    let path = String::from_utf8_lossy(&written.stdout).trim().to_string();
    assert!(path.ends_with("_to_desired.sql") && path.contains("/tenants/"), "{path}");
    let expected: String = COMMON.iter().map(|s| format!("{s};\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    let said = String::from_utf8_lossy(&written.stderr);
    assert!(said.contains("the plan of 4 tenant(s) (3 step(s))"), "{said}");
    assert!(said.contains("t5: the file runs there; 1 step(s) left after it"), "{said}");

    let applied = strata(server.config_path(), &["apply", "--version", "to desired"]).await;
    assert_eq!(applied.status.code(), Some(0), "{}", String::from_utf8_lossy(&applied.stderr));
    let after = report(&diff(&server, DESIRED, &["--json"]).await);
    let groups = after["groups"].as_array().unwrap();
    assert_eq!(groups.iter().map(tenants).collect::<Vec<_>>(), [vec!["t1", "t2", "t3", "t4"], vec!["t5"]], "{after}");
    assert_eq!(steps(&groups[0]), Vec::<&str>::new());
    assert_eq!(steps(&groups[1]), ["CREATE INDEX users_email ON {schema}.users USING btree (email)"]);

    // Nothing left to write for the whole fleet: said, no file.
    let again = strata(server.config_path(), &["new", "again", "--desired", file.to_str().unwrap()]).await;
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&again.stdout), "");
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains("no file written: most tenants are in the desired schema already; 1 differ")
    );
}

/// A single schema's desired schema (`ref`, a `singleMigrations`
/// directory's, on each engine): a column more in `countries` and a table
/// more.
fn ref_desired() -> &'static str {
    match backend() {
        Backend::Mysql => {
            "create table {schema}.countries (code varchar(2) primary key, name text not null, region text) \
             engine = InnoDB;\ncreate table {schema}.regions (name varchar(32) primary key) engine = InnoDB;\n"
        }
        // The set's own types (`tests/data/migrations/sqlserver/basic`).
        Backend::Sqlserver => {
            "create table {schema}.countries (code char(2) primary key, name nvarchar(100) not null, \
             region nvarchar(32) null);\ncreate table {schema}.regions (name nvarchar(32) primary key);\n"
        }
        _ => {
            "create table {schema}.countries (code text primary key, name text not null, region text);\n\
             create table {schema}.regions (name text primary key);\n"
        }
    }
}

/// What a team of one database (sqlx-cli's, dbmate's) has: a single
/// schema, planned to its desired schema with `--dir` naming its
/// directory — `diff` reads only, `new --desired` writes the plan as that
/// directory's next file, `apply` runs it like any file, and then the
/// schema is the desired one; the tenants are not planned, and a scripts
/// directory is refused by name.
#[tokio::test]
async fn a_single_schema_is_planned_to_its_desired_schema_written_as_its_next_file_and_applied() {
    let server = fleet_of(&["t1"], "", None).await;
    let desired = ref_desired();

    let planned = report(&diff(&server, desired, &["--dir", "ref", "--json"]).await);
    assert_eq!((&planned["tenants"], &planned["differing"]), (&json!(1), &json!(1)), "{planned}");
    let groups = planned["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{planned}");
    assert_eq!(tenants(&groups[0]), ["ref"]);
    let planned_steps = steps(&groups[0]);
    let creates = |s: &&str| s.starts_with("CREATE TABLE {schema}.") && s.contains("regions");
    assert!(planned_steps.iter().any(creates), "{planned}");
    assert!(planned_steps.iter().any(|s| s.starts_with("ALTER TABLE {schema}.") && s.contains("region")), "{planned}");
    assert_eq!(groups[0]["destructive"], false, "{planned}");
    let text = diff(&server, desired, &["--dir", "ref"]).await;
    let said = String::from_utf8_lossy(&text.stdout);
    assert!(said.starts_with("1 of 1 schema(s) differ from the desired schema, in 1 group(s)\n"), "{said}");
    assert!(said.contains(" for 1 schema(s): ref\n"), "{said}");
    assert_eq!(diff(&server, desired, &["--dir", "ref", "--check"]).await.status.code(), Some(10));

    let refused = diff(&server, desired, &["--dir", "scripts/config"]).await;
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        "strata: --dir scripts/config: a desired schema is planned for a migration directory's schema \
         (configured: ref, config, tenants)\n"
    );

    // The configuration's desired schemas: the tenants' is never planned
    // for a single schema (its plan would drop ref's tables): without one
    // of ref's own, `--dir ref` needs a file and writes none; ref's own is
    // named under its directory.
    std::fs::create_dir_all(server.ws.migrations().join("schema")).unwrap();
    server.ws.write_migration("schema/tenants.sql", "create table {schema}.only_tenants (id int primary key);\n");
    server.ws.write_migration("schema/ref.sql", desired);
    let yaml = std::fs::read_to_string(server.config_path()).unwrap();
    let tenants_only = server.ws.path().join("tenants-only.yaml");
    std::fs::write(&tenants_only, format!("{yaml}desiredSchema:\n  tenants: schema/tenants.sql\n")).unwrap();
    for command in [&["diff", "--dir", "ref"][..], &["new", "from tenants", "--dir", "ref", "--desired"]] {
        let refused = strata(&tenants_only, command).await;
        assert_eq!(refused.status.code(), Some(2), "{command:?}: {}", String::from_utf8_lossy(&refused.stdout));
        assert_eq!(
            String::from_utf8_lossy(&refused.stderr),
            "strata: no desired schema for the single schema ref: give --desired FILE, or name the file under its \
             directory in the configuration (desiredSchema: {DIRECTORY: FILE}); the tenants' is never used for it\n"
        );
    }
    assert_eq!(std::fs::read_dir(server.ws.migrations().join("ref")).unwrap().count(), 1, "no file written");
    let by_directory = server.ws.path().join("by-directory.yaml");
    let section = "desiredSchema:\n  tenants: schema/tenants.sql\n  ref: schema/ref.sql\n";
    std::fs::write(&by_directory, format!("{yaml}{section}")).unwrap();
    let configured = report(&strata(&by_directory, &["diff", "--dir", "ref", "--json"]).await);
    assert_eq!(configured, planned, "ref's configured desired schema plans as the same file given by path");
    let tenants_plan = report(&strata(&by_directory, &["diff", "--json"]).await);
    assert_eq!(tenants(&tenants_plan["groups"][0]), ["t1"], "{tenants_plan}");
    assert!(steps(&tenants_plan["groups"][0]).iter().any(|s| s.contains("only_tenants")), "{tenants_plan}");
    // The API, on the service's configuration (no desiredSchema): a
    // directory's plan without `desired` says what to send.
    let query = "query($directory: String) { desiredDiff(directory: $directory) { tenants } }";
    let unnamed = server.graphql(query, json!({ "directory": "ref" })).await;
    assert_eq!(unnamed["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{unnamed}");
    let message = unnamed["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no desired schema for the single schema ref: send desired"), "{unnamed}");

    let file = write_desired(&server, desired);
    let args = ["new", "regions", "--dir", "ref", "--desired", file.to_str().unwrap()];
    // A file of ref's own pending: its plan would be made from a schema
    // the file changes first. Refused, nothing written; the tenants' and
    // another single schema's pending files are not ref's.
    server.ws.write_migration("ref/002.sql", "create table {schema}.later (id int);\n");
    let pending = strata(server.config_path(), &args).await;
    assert_eq!(pending.status.code(), Some(6), "{}", String::from_utf8_lossy(&pending.stderr));
    assert!(
        String::from_utf8_lossy(&pending.stderr).contains("1 migration file(s) of ref are pending: apply them first"),
        "{}",
        String::from_utf8_lossy(&pending.stderr)
    );
    assert_eq!(std::fs::read_dir(server.ws.migrations().join("ref")).unwrap().count(), 2, "no file written");
    std::fs::remove_file(server.ws.migrations().join("ref/002.sql")).unwrap();
    server.ws.write_migration("config/003.sql", "create table {schema}.later (id int);\n");
    let written = strata(server.config_path(), &args).await;
    assert_eq!(written.status.code(), Some(0), "{}", String::from_utf8_lossy(&written.stderr));
    let path = String::from_utf8_lossy(&written.stdout).trim().to_string();
    assert!(path.ends_with("_regions.sql") && path.contains("/ref/"), "{path}");
    let expected: String = planned_steps.iter().map(|s| format!("{s};\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    assert!(String::from_utf8_lossy(&written.stderr).contains("the plan of 1 schema(s)"));

    let applied = strata(server.config_path(), &["apply", "--version", "regions"]).await;
    assert_eq!(applied.status.code(), Some(0), "{}", String::from_utf8_lossy(&applied.stderr));
    assert_eq!(diff(&server, desired, &["--dir", "ref", "--check"]).await.status.code(), Some(0));
    assert_eq!(server.ws.count("config", "later").await, 0, "config's own file ran beside it");
    assert_eq!(server.ws.count("ref", "countries").await, 2, "the rows stay");
    assert_eq!(server.ws.count("ref", "regions").await, 0);
    let sql = "select count(*), min(db_schema) from svc_migrations where filename like '%regions.sql'";
    assert_eq!(server.ws.rows("svc", sql).await, [vec![json!(1), json!("ref")]], "recorded once, in ref alone");
    let again = strata(server.config_path(), &args).await;
    assert_eq!(String::from_utf8_lossy(&again.stdout), "");
    assert!(String::from_utf8_lossy(&again.stderr).contains("no file written: every schema is in the desired schema"));

    // The API: `desiredDiff(directory:)`.
    let query = "query($desired: String, $directory: String) { desiredDiff(desired: $desired, directory: $directory) \
                 { tenants differing groups { tenants } } }";
    let through = server.graphql(query, json!({ "desired": desired, "directory": "ref" })).await;
    let expected = json!({ "tenants": 1, "differing": 0, "groups": [{ "tenants": ["ref"] }] });
    assert_eq!(through["data"]["desiredDiff"], expected, "{through}");
    let refused = server.graphql(query, json!({ "desired": desired, "directory": "scripts/config" })).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{refused}");
}

/// What Atlas's `schema apply` does for one database: `strata apply
/// --desired --dir DIR` brings a single schema to its desired schema as one
/// version — refused while any migration is pending (that version would run
/// it too) or while the plan loses data — its plan recorded once, in that
/// schema, as `DIR/desired/<plan>.sql`, which is never a missing source; a
/// file added to the directory afterwards runs as any other.
#[tokio::test]
async fn a_single_schema_is_brought_to_its_desired_schema_by_apply_and_later_files_still_run() {
    let server = fleet_of(&["t1"], "", None).await;
    let config = server.config_path();
    let file = write_desired(&server, ref_desired());
    let desired = file.to_str().unwrap();
    let args = ["apply", "--version", "regions", "--desired", desired, "--dir", "ref"];
    // A tenant file pending: refused, nothing ran.
    server.ws.write_migration("tenants/009.sql", "create table {schema}.later (id int);\n");
    let pending = strata(config, &args).await;
    assert_eq!(pending.status.code(), Some(6), "{}", String::from_utf8_lossy(&pending.stderr));
    assert!(String::from_utf8_lossy(&pending.stderr).contains("tenant migration file(s) are pending"));
    assert!(!server.ws.tables("ref").await.contains(&"regions".to_string()));
    std::fs::remove_file(server.ws.migrations().join("tenants/009.sql")).unwrap();

    // Losing data is refused unless allowed: without `name` the plan drops
    // a column of countries.
    let narrower = server.ws.path().join("narrower.sql");
    let without_name = ref_desired().replace("name text not null, ", "").replace("name nvarchar(100) not null, ", "");
    std::fs::write(&narrower, without_name).unwrap();
    let narrower_args = ["apply", "--version", "narrower", "--desired", narrower.to_str().unwrap(), "--dir", "ref"];
    let refused = strata(config, &narrower_args).await;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("would lose data"), "{said}");
    assert!(said.contains(" (1 schema(s)): ") && !said.contains("tenant"), "{said}");
    assert!(!server.ws.tables("ref").await.contains(&"regions".to_string()));

    let applied = strata(config, &args).await;
    assert_eq!(applied.status.code(), Some(0), "{}", String::from_utf8_lossy(&applied.stderr));
    assert!(String::from_utf8_lossy(&applied.stderr).contains("step(s) over 1 schema(s)"));
    assert_eq!(server.ws.count("ref", "countries").await, 2, "the rows stay");
    assert_eq!(server.ws.count("ref", "regions").await, 0);
    let sql = "select db_schema, filename from svc_migrations where filename like 'ref/desired/%'";
    let recorded = server.ws.rows("svc", sql).await;
    assert_eq!(recorded.len(), 1, "recorded once: {recorded:?}");
    assert_eq!(recorded[0][0], json!("ref"));
    let check = diff(&server, ref_desired(), &["--dir", "ref", "--check"]).await;
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
    let again = strata(config, &args).await;
    assert!(String::from_utf8_lossy(&again.stderr).contains("no schema to bring to the desired schema"));

    // Not a missing source; a later file of the directory runs.
    let plan = strata(config, &["plan"]).await;
    assert_eq!(plan.status.code(), Some(0), "{}", String::from_utf8_lossy(&plan.stderr));
    assert!(!String::from_utf8_lossy(&plan.stdout).contains("desired/"), "{}", String::from_utf8_lossy(&plan.stdout));
    server.ws.write_migration("ref/002.sql", "create table {schema}.later (id int);\n");
    let later = strata(config, &["apply", "--version", "later"]).await;
    assert_eq!(later.status.code(), Some(0), "{}", String::from_utf8_lossy(&later.stderr));
    assert!(server.ws.tables("ref").await.contains(&"later".to_string()));

    // The API: `applyDesiredSchema(directory:)`, nothing left to do.
    let mutation = "mutation($desired: String, $directory: String) { applyDesiredSchema(input: { versionName: \"api\" }, \
                    desired: $desired, directory: $directory) { versions { version { name } } left { tenants } } }";
    let with_later = format!("{}create table {{schema}}.later (id int);\n", ref_desired());
    let answer = server.graphql(mutation, json!({ "desired": with_later, "directory": "ref" })).await;
    assert_eq!(answer["data"]["applyDesiredSchema"], json!({ "versions": [], "left": [] }), "{answer}");
    // Without `later`, its plan would drop the table: refused by the API too.
    let dropping = server.graphql(mutation, json!({ "desired": ref_desired(), "directory": "ref" })).await;
    assert_eq!(dropping["errors"][0]["extensions"]["code"], "DESTRUCTIVE_PLAN", "{dropping}");
    let refused = server.graphql(mutation, json!({ "directory": "ref" })).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{refused}");
}

/// `desiredSchema` in the configuration: a file kept beside the migration
/// directories, read from the base location as they are. `diff` without
/// `--desired`, `new NAME --desired` and `apply --desired` without a file
/// use it, with the same plans as the file given by path; a desired schema
/// in a migration directory is refused by `config check` (it would run as a
/// migration), one that is missing is named, and without either `diff`
/// says what to give.
#[tokio::test]
async fn the_configured_desired_schema_is_read_beside_the_migrations() {
    if backend() != Backend::Postgres {
        return;
    }
    let names: Vec<String> = (1..=4).map(|i| format!("t{i}")).collect();
    let server = fleet_with(&names, "desiredSchema: schema/tenants.sql\n").await;
    let config = server.config_path();
    server.ws.execute("svc", "drop index t4.users_email").await;

    // Configured, not there yet: named, with where it was looked for.
    std::fs::create_dir_all(server.ws.migrations().join("schema")).unwrap();
    let missing = strata(config, &["diff", "--json"]).await;
    assert_eq!(missing.status.code(), Some(1), "{}", String::from_utf8_lossy(&missing.stderr));
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(said.contains("schema/tenants.sql (desiredSchema, below ") && said.contains("does not exist"), "{said}");

    server.ws.write_migration("schema/tenants.sql", DESIRED);
    let by_config = report(&strata(config, &["diff", "--json"]).await);
    let by_path = report(&diff(&server, DESIRED, &["--json"]).await);
    assert_eq!(by_config["groups"], by_path["groups"], "{by_config}");
    let groups = by_config["groups"].as_array().unwrap();
    assert_eq!(groups.iter().map(tenants).collect::<Vec<_>>(), [vec!["t1", "t2", "t3"], vec!["t4"]], "{by_config}");
    let flag_alone = report(&strata(config, &["diff", "--desired", "--json"]).await);
    assert_eq!(flag_alone["groups"], by_config["groups"]);

    let written = strata(config, &["new", "to desired", "--desired"]).await;
    assert_eq!(written.status.code(), Some(0), "{}", String::from_utf8_lossy(&written.stderr));
    let path = String::from_utf8_lossy(&written.stdout).trim().to_string();
    let expected: String = COMMON.iter().map(|s| format!("{s};\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    std::fs::remove_file(&path).unwrap();

    let applied = strata(config, &["apply", "--version", "to desired", "--desired"]).await;
    assert_eq!(applied.status.code(), Some(0), "{}", String::from_utf8_lossy(&applied.stderr));
    let check = strata(config, &["diff", "--check"]).await;
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
    assert_eq!(dumped(&server, "t4"), dumped(&server, "t1"));

    // In a migration directory it would run as one: refused, by name.
    let inside = server.ws.path().join("inside.yaml");
    let text = std::fs::read_to_string(config).unwrap().replace("schema/tenants.sql", "tenants/desired.sql");
    std::fs::write(&inside, text).unwrap();
    let refused = strata(&inside, &["config", "check"]).await;
    assert_eq!(refused.status.code(), Some(4));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("desiredSchema: \"tenants/desired.sql\" is in the configured directory \"tenants\""),
        "{said}"
    );

    // Neither configured nor given: what to give.
    let plain = server.ws.path().join("plain.yaml");
    let text = std::fs::read_to_string(config).unwrap().replace("desiredSchema: schema/tenants.sql\n", "");
    std::fs::write(&plain, text).unwrap();
    let none = strata(&plain, &["diff"]).await;
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no desired schema: give --desired FILE, or name the file"));
}

/// `strata apply --desired FILE`: refused while a tenant file is pending
/// (exit 6) or a group's plan loses data (exit 2), nothing run either
/// time; `--skip-destructive` brings every other group there, each as a
/// version recording its plan once per tenant as `desired/<plan>.sql`
/// (never reported missing from the sources); `--allow-destructive` the
/// rest. Then `diff --check` and `drift` find nothing.
#[tokio::test]
async fn apply_with_desired_runs_each_group_as_a_version_and_holds_back_what_loses_data() {
    if backend() != Backend::Postgres {
        return;
    }
    let names: Vec<String> = (1..=8).map(|i| format!("t{i}")).collect();
    let server = fleet(&names).await;
    server.ws.execute("svc", "drop index t6.users_email").await;
    server.ws.execute("svc", "alter table t7.users add column nickname text").await;
    server.ws.execute("svc", "insert into t7.users (email, nickname) values ('kept@example.com', 'k')").await;
    server.ws.execute("svc", "alter table t8.profiles alter column name type varchar(20)").await;
    let file = write_desired(&server, DESIRED);
    let desired = file.to_str().unwrap();
    let config = server.config_path();
    let plans_recorded = || async {
        let sql = "select db_schema, filename from svc.svc_migrations where filename like 'desired/%' order by 1";
        server.ws.rows("svc", sql).await
    };

    // A pending tenant file: refused, nothing runs.
    server.ws.write_migration("tenants/006.sql", "create table {schema}.later (id int);\n");
    let pending = strata(config, &["apply", "--version", "to desired", "--desired", desired]).await;
    assert_eq!(pending.status.code(), Some(6), "{}", String::from_utf8_lossy(&pending.stderr));
    assert!(
        String::from_utf8_lossy(&pending.stderr)
            .contains("1 tenant migration file(s) are pending (8 runs over the tenants)")
    );
    std::fs::remove_file(server.ws.migrations().join("tenants/006.sql")).unwrap();

    // A destructive group: refused by name, nothing runs.
    let refused = strata(config, &["apply", "--version", "to desired", "--desired", desired]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("1 group(s) would lose data, so nothing ran: plan "), "{said}");
    assert!(said.contains("(1 tenant(s)): ALTER TABLE {schema}.users DROP COLUMN nickname"), "{said}");
    assert_eq!(plans_recorded().await, Vec::<Vec<Value>>::new());
    assert!(!server.ws.tables("t1").await.contains(&"notes".to_string()));

    // The others.
    let skipped =
        strata(config, &["apply", "--version", "to desired", "--desired", desired, "--skip-destructive"]).await;
    assert_eq!(skipped.status.code(), Some(0), "{}", String::from_utf8_lossy(&skipped.stderr));
    let said = String::from_utf8_lossy(&skipped.stderr);
    assert!(
        said.contains("left as they are: plan ")
            && said.contains("destructive (ALTER TABLE {schema}.users DROP COLUMN nickname): t7"),
        "{said}"
    );
    let after = report(&diff(&server, DESIRED, &["--json"]).await);
    let groups: Vec<Vec<&str>> = after["groups"].as_array().unwrap().iter().map(tenants).collect();
    assert_eq!(groups, [vec!["t1", "t2", "t3", "t4", "t5", "t6", "t8"], vec!["t7"]], "{after}");
    let recorded = plans_recorded().await;
    let schemas: Vec<&str> = recorded.iter().map(|row| row[0].as_str().unwrap()).collect();
    assert_eq!(schemas, ["t1", "t2", "t3", "t4", "t5", "t6", "t8"]);
    let distinct: std::collections::BTreeSet<&str> = recorded.iter().map(|row| row[1].as_str().unwrap()).collect();
    assert_eq!(distinct.len(), 3, "{recorded:?}"); // the majority's plan, t6's, t8's
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    let plan = strata(config, &["plan"]).await;
    assert_eq!(plan.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&plan.stdout).contains("desired/"), "{}", String::from_utf8_lossy(&plan.stdout));

    // The rest, told to.
    let allowed =
        strata(config, &["apply", "--version", "to desired", "--desired", desired, "--allow-destructive"]).await;
    assert_eq!(allowed.status.code(), Some(0), "{}", String::from_utf8_lossy(&allowed.stderr));
    assert_eq!(diff(&server, DESIRED, &["--check"]).await.status.code(), Some(0));
    let rows = server.ws.rows("svc", "select count(*) from t7.users where email = 'kept@example.com'").await;
    assert_eq!(rows[0][0], 1);
    let drift = strata(config, &["drift"]).await;
    assert_eq!(drift.status.code(), Some(0), "{}", String::from_utf8_lossy(&drift.stdout));
    // Nothing left: said, no version.
    let nothing = strata(config, &["apply", "--version", "again", "--desired", desired]).await;
    assert_eq!(nothing.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("no group of tenants to bring to the desired schema"));
}

/// The API's `applyDesiredSchema` (the text sent, never a path) and
/// `apply --desired --server` (the file read by the client): refused with
/// `MIGRATIONS_PENDING` while a tenant file is pending and with
/// `DESTRUCTIVE_PLAN` while a group would lose data, nothing recorded;
/// `Skip` runs one version per other group and names the group left;
/// `diff --server` prints what `diff` prints in-process; through
/// `--server` with `--allow-destructive` the rest, after which no
/// tenant differs. A sync and a missing desired schema are refused.
#[tokio::test]
async fn the_api_and_the_server_mode_bring_each_group_to_the_desired_schema() {
    if backend() != Backend::Postgres {
        return;
    }
    let names: Vec<String> = (1..=4).map(|i| format!("t{i}")).collect();
    let server = fleet(&names).await;
    server.ws.execute("svc", "drop index t3.users_email").await;
    server.ws.execute("svc", "alter table t4.users add column nickname text").await;
    const APPLY: &str = "mutation($input: VersionInput!, $desired: String, $destructive: Destructive) { \
                         applyDesiredSchema(input: $input, desired: $desired, destructive: $destructive) { \
                         versions { version { name } summary { tenants tenantMigrations } } left { tenants reason } } }";
    let apply = |variables: Value| server.graphql(APPLY, variables);
    let input = json!({ "versionName": "to desired" });
    let plans_recorded = || async {
        let sql = "select db_schema, filename from svc.svc_migrations where filename like 'desired/%' order by 1";
        server.ws.rows("svc", sql).await
    };

    server.ws.write_migration("tenants/006.sql", "create table {schema}.later (id int);\n");
    let pending = apply(json!({ "input": input, "desired": DESIRED })).await;
    assert_eq!(pending["errors"][0]["extensions"]["code"], "MIGRATIONS_PENDING", "{pending}");
    let said = pending["errors"][0]["message"].as_str().unwrap();
    assert!(said.starts_with("1 tenant migration file(s) are pending (4 runs over the tenants)"), "{said}");
    std::fs::remove_file(server.ws.migrations().join("tenants/006.sql")).unwrap();

    let refused = apply(json!({ "input": input, "desired": DESIRED })).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "DESTRUCTIVE_PLAN", "{refused}");
    let said = refused["errors"][0]["message"].as_str().unwrap();
    assert!(said.starts_with("the desired schema: 1 group(s) would lose data, so nothing ran: plan "), "{said}");
    assert!(said.contains("ALTER TABLE {schema}.users DROP COLUMN nickname"), "{said}");
    assert_eq!(plans_recorded().await, Vec::<Vec<Value>>::new());

    let sync = apply(json!({ "input": { "versionName": "v", "action": "Sync" }, "desired": DESIRED })).await;
    assert_eq!(sync["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{sync}");
    let none = apply(json!({ "input": input })).await;
    assert_eq!(none["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{none}");
    assert!(none["errors"][0]["message"].as_str().unwrap().starts_with("no desired schema: send desired"), "{none}");
    assert_eq!(server.ws.count("svc", "svc_versions").await, 2, "the fleet's two versions, nothing more");

    let skipped = apply(json!({ "input": input, "desired": DESIRED, "destructive": "Skip" })).await;
    let answer = &skipped["data"]["applyDesiredSchema"];
    assert!(skipped.get("errors").is_none(), "{skipped}");
    let versions = answer["versions"].as_array().unwrap();
    let tenants: Vec<&Value> = versions.iter().map(|v| &v["summary"]["tenants"]).collect();
    assert_eq!(tenants, [&json!(2), &json!(1)], "the majority (t1, t2), then t3: {skipped}");
    assert!(versions.iter().all(|v| v["version"]["name"] == "to desired"), "{skipped}");
    assert_eq!(answer["left"][0]["tenants"], json!(["t4"]), "{skipped}");
    let reason = answer["left"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("destructive (ALTER TABLE {schema}.users DROP COLUMN nickname)"), "{reason}");
    let schemas: Vec<Value> = plans_recorded().await.into_iter().map(|row| row[0].clone()).collect();
    assert_eq!(schemas, [json!("t1"), json!("t2"), json!("t3")]);

    let file = write_desired(&server, DESIRED);
    let remote = |args: &[&str]| {
        let mut command = tokio::process::Command::new(crate::support::strata_bin());
        command.args(["--server", &server.url("")]).args(args).env_remove("SVC_YAML");
        async move { command.output().await.unwrap() }
    };
    let desired = file.to_str().unwrap();
    // The diff through the API: what the command prints in-process.
    let local = diff(&server, DESIRED, &["--json"]).await;
    let through = remote(&["diff", "--desired", desired, "--json"]).await;
    assert_eq!(through.status.code(), Some(0), "{}", String::from_utf8_lossy(&through.stderr));
    assert_eq!(String::from_utf8_lossy(&through.stdout), String::from_utf8_lossy(&local.stdout));
    assert_eq!(report(&through)["differing"], 1, "t4 alone differs now");
    assert_eq!(remote(&["diff", "--desired", desired, "--check"]).await.status.code(), Some(10));
    let unnamed = server.graphql("query { desiredDiff { tenants } }", json!({})).await;
    assert_eq!(unnamed["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{unnamed}");
    let held = remote(&["apply", "--version", "rest", "--desired", desired]).await;
    assert_eq!(held.status.code(), Some(2), "{}", String::from_utf8_lossy(&held.stderr));
    assert!(String::from_utf8_lossy(&held.stderr).contains("1 group(s) would lose data, so nothing ran"));
    let allowed = remote(&["apply", "--version", "rest", "--desired", desired, "--allow-destructive"]).await;
    assert_eq!(allowed.status.code(), Some(0), "{}", String::from_utf8_lossy(&allowed.stderr));
    let said = String::from_utf8_lossy(&allowed.stdout);
    assert!(said.starts_with("Version ") && said.contains(" \"rest\" created: "), "{said}");
    assert_eq!(diff(&server, DESIRED, &["--check"]).await.status.code(), Some(0));
    let nothing = remote(&["apply", "--version", "again", "--desired", desired]).await;
    assert_eq!(nothing.status.code(), Some(0), "{}", String::from_utf8_lossy(&nothing.stderr));
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("no group of tenants to bring to the desired schema"));
}

/// MariaDB's tenant migration beside the `basic` set's `users`.
const MARIADB_PROFILES: &str = "create table {schema}.profiles (id integer primary key, name varchar(64) not null, \
                                user_id integer, constraint profiles_user_fk foreign key (user_id) \
                                references {schema}.users(id)) engine = InnoDB;\n\
                                create index profiles_user on {schema}.profiles (user_id);\n";

/// What a MariaDB tenant should be: the migrations' schema, one more
/// column, one more table (an auto-increment key, a column check and a
/// stored generated column), a view, a function and a trigger.
const MARIADB_DESIRED: &str = "\
create table {schema}.users (id integer auto_increment primary key, email text not null,
  created_at timestamp null default current_timestamp) engine = InnoDB;
create index users_email on {schema}.users (email(100));
create table {schema}.profiles (id integer primary key, name varchar(64) not null, user_id integer,
  constraint profiles_user_fk foreign key (user_id) references {schema}.users(id)) engine = InnoDB;
create index profiles_user on {schema}.profiles (user_id);
create table {schema}.notes (id bigint auto_increment primary key, body text not null check (body <> ''),
  words integer as (char_length(body)) stored) engine = InnoDB;
create view {schema}.user_emails as select id, email from {schema}.users;
create function {schema}.word_count(body text) returns integer deterministic return char_length(body);
create trigger {schema}.notes_trimmed before insert on {schema}.notes for each row set new.body = trim(new.body);
";

/// What every MariaDB tenant lacks: the new table, the new column, the
/// function, the view, the trigger.
const MARIADB_COMMON: [&str; 5] = [
    "CREATE TABLE {schema}.`notes` (\n    `id` bigint(20) not null auto_increment,\n    `body` text not null check (`body` <> ''),\n    \
     `words` int(11) as (char_length(`body`)) stored,\n    PRIMARY KEY (`id`)\n) engine=InnoDB",
    "ALTER TABLE {schema}.`users` ADD COLUMN `created_at` timestamp default current_timestamp() AFTER `email`",
    "CREATE FUNCTION {schema}.`word_count` (`body` text) returns int(11) deterministic\nreturn char_length(body)",
    "CREATE VIEW {schema}.`user_emails` AS\nselect `{schema}`.`users`.`id` AS `id`,`{schema}`.`users`.`email` AS `email` \
     from `{schema}`.`users`",
    "CREATE TRIGGER {schema}.`notes_trimmed` before insert on `{schema}`.`notes` for each row set new.body = trim(new.body)",
];

/// Every table and view of MariaDB database `schema` as `SHOW CREATE`
/// writes it, its name written `{schema}` and the next auto-increment
/// value left out (rows differ from tenant to tenant).
async fn shown(server: &Server, schema: &str) -> Vec<String> {
    let names = server.ws.tables(schema).await;
    let mut out = Vec::new();
    for name in names {
        let row = server.ws.rows(schema, &format!("show create table `{name}`")).await;
        let text = row[0][1].as_str().unwrap().replace(&format!("`{schema}`"), "`{schema}`");
        let text: String =
            text.split(' ').filter(|word| !word.starts_with("AUTO_INCREMENT=")).collect::<Vec<_>>().join(" ");
        out.push(text);
    }
    out
}

async fn mariadb_scratch_databases(server: &Server) -> i64 {
    let sql = "select count(*) from information_schema.SCHEMATA where SCHEMA_NAME like 'strata_desired%'";
    server.ws.rows("svc", sql).await[0][0].as_i64().unwrap()
}

/// MariaDB: 50 tenants, 44 as migrated, 3 with an index dropped by hand,
/// 2 with an extra column, 1 with a narrower column. The desired file runs
/// into a scratch database that is gone afterwards; `diff` gives exactly
/// four groups; each group's steps, run in its tenants, bring all 50 to
/// the desired schema, `SHOW CREATE` of a tenant of each group equal to
/// that of a database made from the file itself.
#[tokio::test]
async fn a_mariadb_fleet_is_grouped_by_its_way_to_the_desired_schema_and_each_plan_gets_it_there() {
    if backend() != Backend::Mysql {
        return;
    }
    let (server, found) = fifty_tenants(
        MARIADB_DESIRED,
        "drop index users_email on {tenant}.users",
        "alter table t33.profiles modify column name varchar(20) not null",
    )
    .await;
    let groups = found["groups"].as_array().unwrap();
    assert_eq!(steps(&groups[0]), MARIADB_COMMON, "{found}");
    let with = |at: usize, extra: &str| -> Vec<String> {
        let mut all: Vec<String> = MARIADB_COMMON.iter().map(|s| s.to_string()).collect();
        all.insert(at, extra.to_string());
        all
    };
    assert_eq!(steps(&groups[1]), with(2, "ALTER TABLE {schema}.`users` ADD INDEX `users_email` (`email`(100))"));
    assert_eq!(steps(&groups[2]), with(5, "ALTER TABLE {schema}.`users` DROP COLUMN `nickname`"));
    assert_eq!(steps(&groups[3]), with(1, "ALTER TABLE {schema}.`profiles` MODIFY COLUMN `name` varchar(64) not null"));
    let destructive: Vec<bool> = groups.iter().map(|g| g["destructive"].as_bool().unwrap()).collect();
    assert_eq!(destructive, [false, false, true, false]);
    assert_eq!(mariadb_scratch_databases(&server).await, 0);
    assert_eq!(diff(&server, MARIADB_DESIRED, &["--check"]).await.status.code(), Some(10));

    for group in groups {
        let text = steps(group).join(";\n");
        for tenant in tenants(group) {
            server.ws.execute("svc", &text.replace("{schema}", tenant)).await;
        }
    }
    let done = report(&diff(&server, MARIADB_DESIRED, &["--json", "--check"]).await);
    assert_eq!(done["differing"], 0, "{done}");
    server.ws.execute("svc", "create database built_from_file").await;
    server.ws.execute("svc", &MARIADB_DESIRED.replace("{schema}", "built_from_file")).await;
    let expected = shown(&server, "built_from_file").await;
    assert_eq!(expected.len(), 4, "{expected:?}");
    for tenant in ["t01", "t03", "t08", "t33"] {
        assert_eq!(shown(&server, tenant).await, expected, "{tenant}");
    }
}

/// MariaDB commits each DDL statement at once: a desired file reaching
/// outside the tenant's database is refused naming its line before
/// anything runs; one the server refuses is named with its line; neither
/// leaves a scratch database or anything else behind.
#[tokio::test]
async fn a_mariadb_desired_file_reaching_outside_the_tenant_or_failing_leaves_nothing() {
    if backend() != Backend::Mysql {
        return;
    }
    let server = fleet(&["t1".to_string()]).await;
    let refused = |output: &std::process::Output| -> String {
        assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stdout));
        String::from_utf8_lossy(&output.stderr).to_string()
    };
    let outside = "create table {schema}.kept (id int);\n\ncreate table svc.kept (id int);\n";
    let message = refused(&diff(&server, outside, &[]).await);
    assert!(
        message.contains("line 3: `create table svc.kept (id int)`: names an object of another database"),
        "{message}"
    );
    let message =
        refused(&diff(&server, "create table {schema}.kept (id int);\ndrop table svc.svc_migrations;\n", &[]).await);
    assert!(
        message.contains("line 2: `drop table svc.svc_migrations`: a desired schema holds only CREATE and ALTER"),
        "{message}"
    );
    let failing = "create table {schema}.kept (id int);\ncreate table {schema}.bad (id nosuchtype);\n";
    let message = refused(&diff(&server, failing, &[]).await);
    assert!(message.contains("line 2:") && message.contains("nosuchtype"), "{message}");
    assert_eq!(mariadb_scratch_databases(&server).await, 0);
    assert!(server.ws.tables("svc").await.iter().all(|t| t != "kept"));
    assert!(!server.ws.tables("svc").await.is_empty());
}

/// MariaDB: `strata apply --desired` refuses a group that loses data with
/// nothing run, `--skip-destructive` brings the others there (each group
/// a version, its plan recorded per tenant), `--allow-destructive` the
/// rest; then `diff --check` and `drift` find nothing.
#[tokio::test]
async fn a_mariadb_apply_with_desired_holds_back_what_loses_data_until_allowed() {
    if backend() != Backend::Mysql {
        return;
    }
    let server = fleet(&["t1".to_string(), "t2".to_string(), "t3".to_string()]).await;
    server.ws.execute("svc", "alter table t3.users add column nickname text").await;
    server.ws.execute("svc", "insert into t3.users (email, nickname) values ('kept@example.com', 'k')").await;
    let file = write_desired(&server, MARIADB_DESIRED);
    let desired = file.to_str().unwrap();
    let config = server.config_path();

    let refused = strata(config, &["apply", "--version", "to desired", "--desired", desired]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(!server.ws.tables("t1").await.contains(&"notes".to_string()));

    let skipped =
        strata(config, &["apply", "--version", "to desired", "--desired", desired, "--skip-destructive"]).await;
    assert_eq!(skipped.status.code(), Some(0), "{}", String::from_utf8_lossy(&skipped.stderr));
    let after = report(&diff(&server, MARIADB_DESIRED, &["--json"]).await);
    let groups: Vec<Vec<&str>> = after["groups"].as_array().unwrap().iter().map(tenants).collect();
    assert_eq!(groups, [vec!["t1", "t2"], vec!["t3"]], "{after}");
    let sql = "select db_schema from svc_migrations where filename like 'desired/%' order by 1";
    let recorded = server.ws.rows("svc", sql).await;
    assert_eq!(recorded, [[json!("t1")], [json!("t2")]]);

    let allowed =
        strata(config, &["apply", "--version", "to desired", "--desired", desired, "--allow-destructive"]).await;
    assert_eq!(allowed.status.code(), Some(0), "{}", String::from_utf8_lossy(&allowed.stderr));
    assert_eq!(diff(&server, MARIADB_DESIRED, &["--check"]).await.status.code(), Some(0));
    let kept = server.ws.rows("t3", "select count(*) from users where email = 'kept@example.com'").await;
    assert_eq!(kept[0][0], 1);
    let drift = strata(config, &["drift"]).await;
    assert_eq!(drift.status.code(), Some(0), "{}", String::from_utf8_lossy(&drift.stdout));
}

/// PostgreSQL: `strata apply --desired` killed with SIGKILL while a tenant's
/// plan waits for a lock someone else holds: every tenant has the plan
/// recorded exactly when its schema has it (the unit is one transaction),
/// and running the apply again brings the rest there, nothing twice.
#[tokio::test]
async fn a_desired_apply_killed_midway_has_recorded_exactly_what_it_applied_and_a_rerun_finishes() {
    if backend() != Backend::Postgres {
        return;
    }
    let names: Vec<String> = (1..=6).map(|i| format!("t{i}")).collect();
    let server = fleet_with(&names, "lockTimeoutMillis: 0\ntenantConcurrency: 1\n").await;
    let file = write_desired(&server, DESIRED);
    let desired = file.to_str().unwrap();
    let recorded = || plans_recorded_in(&server);

    // t4's users are read by another session until the apply is killed (a
    // share lock: the catalog reads pass, t4's ALTER TABLE waits).
    let mut holder = <sqlx::PgConnection as sqlx::Connection>::connect(&server.ws.pg_url()).await.unwrap();
    sqlx::raw_sql("begin; lock table t4.users in access share mode").execute(&mut holder).await.unwrap();
    let mut apply = spawn_desired_apply(&server, desired);
    let log = || std::fs::read_to_string(server.ws.path().join("apply.log")).unwrap_or_default();
    let started = std::time::Instant::now();
    while recorded().await.len() < 3 {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "{:?} {}", recorded().await, log());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Waiting on t4's lock (seen by the server), then killed.
    let waiting = "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%t4%users%'";
    while server.ws.rows("svc", waiting).await[0][0].as_i64().unwrap() == 0 {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "t4 never waited: {}", log());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    apply.start_kill().unwrap();
    apply.wait().await.unwrap();
    sqlx::raw_sql("rollback").execute(&mut holder).await.unwrap();
    // The killed client's session may still finish the statement it sent
    // (a unit goes as one message): wait until no other session works.
    let busy = "select count(*) from pg_stat_activity where datname = current_database() \
                and state <> 'idle' and pid <> pg_backend_pid()";
    while server.ws.rows("svc", busy).await[0][0].as_i64().unwrap() > 0 {
        assert!(started.elapsed() < std::time::Duration::from_secs(90), "a session stayed busy");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // t1..t3 ran before the wait; t5 and t6 never started; t4 either way.
    let done = recorded().await;
    assert!(done == ["t1", "t2", "t3"] || done == ["t1", "t2", "t3", "t4"], "{done:?}");
    for tenant in &names {
        let has_notes = server.ws.tables(tenant).await.contains(&"notes".to_string());
        assert_eq!(has_notes, done.contains(tenant), "{tenant}: applied and recorded disagree");
    }

    let again = strata(server.config_path(), &["apply", "--version", "to desired again", "--desired", desired]).await;
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(recorded().await, names);
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    assert_eq!(diff(&server, DESIRED, &["--check"]).await.status.code(), Some(0));
}

/// MariaDB: `strata apply --desired` killed with SIGKILL while a tenant's
/// plan waits for a metadata lock another session holds. DDL commits
/// statement by statement there, so the promise is the other way round
/// from PostgreSQL's: a tenant with the plan recorded has all of it, and a
/// tenant whose plan ran in part (its `notes` made, its `users` not
/// altered) has nothing recorded — and the next apply plans that tenant
/// from what it now is and brings it the rest, nothing recorded twice.
#[tokio::test]
async fn a_mariadb_desired_apply_killed_midway_records_only_whole_plans_and_a_rerun_finishes() {
    if backend() != Backend::Mysql {
        return;
    }
    let names: Vec<String> = (1..=6).map(|i| format!("t{i}")).collect();
    let server = fleet_with(&names, "lockTimeoutMillis: 0\ntenantConcurrency: 1\n").await;
    let file = write_desired(&server, MARIADB_DESIRED);
    let desired = file.to_str().unwrap();
    let recorded = || plans_recorded_in(&server);

    // t4's users are read in an open transaction until the apply is killed
    // (a shared metadata lock: the catalog reads pass, t4's ALTER waits).
    let url = crate::support::server_url("STRATA_TEST_MYSQL_URL");
    let mut holder = <sqlx::MySqlConnection as sqlx::Connection>::connect(&url).await.unwrap();
    sqlx::raw_sql("start transaction; select count(*) from t4.users").execute(&mut holder).await.unwrap();
    let mut apply = spawn_desired_apply(&server, desired);
    let log = || std::fs::read_to_string(server.ws.path().join("apply.log")).unwrap_or_default();
    let started = std::time::Instant::now();
    let waiting = "select count(*) from information_schema.PROCESSLIST \
                   where STATE like 'Waiting for table metadata lock%' and INFO like '%t4%users%'";
    while server.ws.rows("svc", waiting).await[0][0].as_i64().unwrap() == 0 {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "t4 never waited: {}", log());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    apply.start_kill().unwrap();
    apply.wait().await.unwrap();
    assert_eq!(recorded().await, ["t1", "t2", "t3"], "{}", log());
    // t4 made its new table before it waited, and has nothing recorded.
    assert!(server.ws.tables("t4").await.contains(&"notes".to_string()));
    // The killed client's session still runs what it sent once the lock
    // is released: wait until no other session works.
    sqlx::raw_sql("commit").execute(&mut holder).await.unwrap();
    let busy = "select count(*) from information_schema.PROCESSLIST where COMMAND = 'Query' and ID <> connection_id()";
    while server.ws.rows("svc", busy).await[0][0].as_i64().unwrap() > 0 {
        assert!(started.elapsed() < std::time::Duration::from_secs(90), "a session stayed busy");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(recorded().await, ["t1", "t2", "t3"]);
    for tenant in ["t5", "t6"] {
        assert!(!server.ws.tables(tenant).await.contains(&"notes".to_string()), "{tenant} never started");
    }

    let again = strata(server.config_path(), &["apply", "--version", "to desired again", "--desired", desired]).await;
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(recorded().await, names, "t4's rest recorded as a plan of its own");
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    assert_eq!(diff(&server, MARIADB_DESIRED, &["--check"]).await.status.code(), Some(0));
    let plans = server
        .ws
        .rows("svc", "select count(distinct filename) from svc_migrations where filename like 'desired/%'")
        .await;
    assert_eq!(plans[0][0], 2, "the fleet's plan, and t4's rest");
}

/// The tenants with a desired plan recorded, in order.
async fn plans_recorded_in(server: &Server) -> Vec<String> {
    let sql = "select db_schema from svc_migrations where filename like 'desired/%' order by 1";
    server.ws.rows("svc", sql).await.into_iter().map(|row| row[0].as_str().unwrap().to_string()).collect()
}

/// `strata apply --version "to desired" --desired FILE`, started and left
/// running, its stderr in `apply.log` beside the configuration.
fn spawn_desired_apply(server: &Server, desired: &str) -> tokio::process::Child {
    tokio::process::Command::new(crate::support::strata_bin())
        .arg("--config")
        .arg(server.config_path())
        .args(["apply", "--version", "to desired", "--desired", desired])
        .env_remove("SVC_YAML")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(server.ws.path().join("apply.log")).unwrap())
        .spawn()
        .unwrap()
}

/// A rollout to the desired schema (`rollout start --desired`): one wave
/// per group of tenants sharing a plan, largest first, an approval
/// between; the approval names the plan it approves. A tenant whose schema
/// was changed by hand after the start (its plan now another) is held back
/// when its wave runs, named in the wave's event, and left as it was; the
/// desired file edited after the start changes nothing a wave runs (the
/// text is kept with the rollout). A wave list beside `--desired` is
/// refused by the command line and by the API.
#[tokio::test]
async fn a_rollout_to_the_desired_schema_approves_each_plan_once_and_holds_back_a_tenant_changed_since() {
    let (desired_text, drop_index, narrow) = match backend() {
        Backend::Postgres => {
            (DESIRED, "drop index {tenant}.users_email", "alter table t6.profiles alter column name type varchar(20)")
        }
        Backend::Mysql => (
            MARIADB_DESIRED,
            "drop index users_email on {tenant}.users",
            "alter table t6.profiles modify column name varchar(20) not null",
        ),
        _ => return,
    };
    let names: Vec<String> = (1..=6).map(|i| format!("t{i}")).collect();
    let server = fleet(&names).await;
    for tenant in ["t5", "t6"] {
        server.ws.execute("svc", &drop_index.replace("{tenant}", tenant)).await;
    }
    let file = write_desired(&server, desired_text);
    let desired = file.to_str().unwrap();
    let config = server.config_path();

    let both = strata(config, &["rollout", "start", "--version", "v", "--wave", "t1", "--desired", desired]).await;
    assert_eq!(both.status.code(), Some(2), "{}", String::from_utf8_lossy(&both.stderr));
    const START: &str = "mutation($desired: String) { startRollout(versionName: \"v\", waves: [\"t1\"], \
                         desired: $desired) { id } }";
    let refused = server.graphql(START, json!({ "desired": desired_text })).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{refused}");
    let stray = "mutation { startRollout(versionName: \"v\", waves: [\"t1\"], destructive: Allow) { id } }";
    let stray = server.graphql(stray, json!({})).await;
    assert_eq!(stray["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{stray}");
    // Both refusals on record.
    let audited =
        server.ws.rows("svc", "select outcome from svc_audit where action = 'startRollout' order by id").await;
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert!(audited.iter().all(|row| row[0].as_str().unwrap() != "ok"), "{audited:?}");

    let started =
        strata(config, &["rollout", "start", "--version", "to desired", "--desired", desired, "--json"]).await;
    assert_eq!(started.status.code(), Some(0), "{}", String::from_utf8_lossy(&started.stderr));
    let started: Value = serde_json::from_slice(&started.stdout).unwrap();
    let id = started["id"].as_i64().unwrap();
    let plans: Vec<String> =
        started["desired"]["plans"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    assert_eq!(plans.len(), 2, "{started}");
    assert_eq!(started["waves"][0]["select"]["tenants"], json!(["t1", "t2", "t3", "t4"]), "{started}");
    assert_eq!(started["waves"][1]["select"]["tenants"], json!(["t5", "t6"]), "{started}");

    let waiting = crate::rollouts::wait_for(&server, id, "AWAITING_APPROVAL").await;
    assert_eq!(plans_recorded_in(&server).await, ["t1", "t2", "t3", "t4"], "{waiting}");
    let served = server.data("{ rollouts { id desiredSchema waves { state plan } } }", json!({})).await;
    assert_eq!(
        served["rollouts"][0],
        json!({ "id": id, "desiredSchema": desired, "waves": [
            { "state": "DONE", "plan": plans[0] }, { "state": "NEXT", "plan": plans[1] }
        ] })
    );

    // After the start, by hand: t6 changed (its plan is now another), and
    // the desired file edited.
    server.ws.execute("svc", narrow).await;
    std::fs::write(&file, format!("{desired_text}create table {{schema}}.extra (id integer);\n")).unwrap();

    let approved = strata(config, &["rollout", "approve", &id.to_string(), "--json"]).await;
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let approval: Value = serde_json::from_slice(&approved.stdout).unwrap();
    let last = approval["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((&last["action"], &last["detail"]), (&json!("approved"), &json!(format!("plan {}", plans[1]))));
    let done = crate::rollouts::wait_for(&server, id, "COMPLETED").await;
    let completed: Vec<&str> = done["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "wave-completed")
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert!(completed[0].starts_with("version ") && !completed[0].contains("held back"), "{done}");
    let held = "held back: t6 (plan ";
    assert!(completed[1].starts_with("version ") && completed[1].contains(held), "{done}");
    assert!(completed[1].ends_with(&format!(" now, {} approved)", &plans[1][..12])), "{done}");

    // t1–t5 in the desired state (the text as started: no `extra`), t6 as
    // it was left; each plan recorded once, where it ran.
    assert_eq!(plans_recorded_in(&server).await, ["t1", "t2", "t3", "t4", "t5"]);
    assert!(!server.ws.tables("t5").await.contains(&"extra".to_string()));
    let after = report(&diff(&server, desired_text, &["--json"]).await);
    assert_eq!(after["differing"], 1, "{after}");
    let differing: Vec<Vec<&str>> = after["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| !g["steps"].as_array().unwrap().is_empty())
        .map(tenants)
        .collect();
    assert_eq!(differing, [vec!["t6"]], "{after}");

    // Through --server: the file read by the client and sent; t6's own plan
    // now, one wave without a gate.
    std::fs::write(&file, desired_text).unwrap();
    let remote = tokio::process::Command::new(crate::support::strata_bin())
        .args(["--server", &server.url(""), "rollout", "start", "--version", "t6 too", "--desired", desired, "--json"])
        .env_remove("SVC_YAML")
        .output()
        .await
        .unwrap();
    assert_eq!(remote.status.code(), Some(0), "{}", String::from_utf8_lossy(&remote.stderr));
    let answer: Value = serde_json::from_slice(&remote.stdout).unwrap();
    assert_eq!(answer["desiredSchema"], "the desired schema", "{answer}");
    assert_eq!(answer["waves"].as_array().unwrap().len(), 1, "{answer}");
    assert_eq!(answer["waves"][0]["wave"], "t6", "{answer}");
    assert!(answer["waves"][0]["plan"].as_str().is_some_and(|plan| plan.len() == 64), "{answer}");
    crate::rollouts::wait_for(&server, answer["id"].as_i64().unwrap(), "COMPLETED").await;
    assert_eq!(diff(&server, desired_text, &["--check"]).await.status.code(), Some(0));
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
}

/// `apply --desired FILE --group PLAN` (and `applyDesiredSchema(group:)`)
/// runs the one group whose plan starts with PLAN: a start naming no
/// group is refused (exit 2) with the plans there are, nothing run; the
/// group that loses data still needs `--allow-destructive`, and the other
/// groups' data loss does not hold back the group asked for.
#[tokio::test]
async fn apply_with_desired_and_group_runs_that_group_alone() {
    if backend() != Backend::Postgres {
        return;
    }
    let names: Vec<String> = (1..=4).map(|i| format!("t{i}")).collect();
    let server = fleet(&names).await;
    server.ws.execute("svc", "drop index t3.users_email").await;
    server.ws.execute("svc", "alter table t4.users add column nickname text").await;
    let file = write_desired(&server, DESIRED);
    let desired = file.to_str().unwrap();
    let config = server.config_path();
    let found = report(&diff(&server, DESIRED, &["--json"]).await);
    let plan_of = |tenant: &str| -> String {
        let group = found["groups"].as_array().unwrap().iter().find(|g| tenants(g).contains(&tenant)).unwrap();
        group["plan"].as_str().unwrap().to_string()
    };
    let apply = |extra: &[&str]| {
        let mut args = vec!["apply", "--version", "one group", "--desired", desired];
        args.extend_from_slice(extra);
        let args: Vec<String> = args.into_iter().map(str::to_string).collect();
        async move { strata(config, &args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };

    let unknown = apply(&["--group", "ffffffff"]).await;
    assert_eq!(unknown.status.code(), Some(2), "{}", String::from_utf8_lossy(&unknown.stderr));
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert!(said.contains("no group of tenants has plan ffffffff; the plans: "), "{said}");
    assert!(said.contains(&plan_of("t3")[..12]) && said.contains(&plan_of("t4")[..12]), "{said}");
    assert_eq!(plans_recorded_in(&server).await, Vec::<String>::new());

    // t3's group alone, though t4's loses data.
    let t3 = apply(&["--group", &plan_of("t3")[..10]]).await;
    assert_eq!(t3.status.code(), Some(0), "{}", String::from_utf8_lossy(&t3.stderr));
    assert_eq!(plans_recorded_in(&server).await, ["t3"]);
    // t4's needs --allow-destructive.
    let t4 = apply(&["--group", &plan_of("t4")]).await;
    assert_eq!(t4.status.code(), Some(2), "{}", String::from_utf8_lossy(&t4.stderr));
    assert!(String::from_utf8_lossy(&t4.stderr).contains("1 group(s) would lose data, so nothing ran"));
    let t4 = apply(&["--group", &plan_of("t4"), "--allow-destructive"]).await;
    assert_eq!(t4.status.code(), Some(0), "{}", String::from_utf8_lossy(&t4.stderr));
    assert_eq!(plans_recorded_in(&server).await, ["t3", "t4"]);

    // Through the API: the majority's group.
    const APPLY: &str = "mutation($desired: String, $group: String) { applyDesiredSchema(input: { versionName: \
                         \"api\" }, desired: $desired, group: $group) { versions { summary { tenants } } } }";
    let api = server.graphql(APPLY, json!({ "desired": DESIRED, "group": plan_of("t1") })).await;
    assert!(api.get("errors").is_none(), "{api}");
    assert_eq!(api["data"]["applyDesiredSchema"]["versions"][0]["summary"]["tenants"], 2, "{api}");
    assert_eq!(plans_recorded_in(&server).await, ["t1", "t2", "t3", "t4"]);
    assert_eq!(diff(&server, DESIRED, &["--check"]).await.status.code(), Some(0));
}

/// What a SQLite tenant should be: `users` with one more column (a
/// rebuild), a new table and a view over the new column.
const SQLITE_DESIRED: &str = "\
create table {schema}.users (id integer primary key, created_at text, email text not null);
create index {schema}.users_email on users (email);
create table {schema}.tags (id integer primary key, label text not null unique);
create view {schema}.recent as select id, email from users where created_at is not null;
";

/// The steps every SQLite tenant as migrated needs: the new table, the
/// rebuild of `users` (its rows copied: the new column is not last), its
/// index and the view.
const SQLITE_COMMON: [&str; 7] = [
    "CREATE TABLE {schema}.tags (id integer primary key, label text not null unique)",
    "CREATE TABLE {schema}.users__strata_new (id integer primary key, created_at text, email text not null)",
    "INSERT INTO {schema}.users__strata_new (email, id) SELECT email, id FROM {schema}.users",
    "DROP TABLE {schema}.users",
    "ALTER TABLE {schema}.users__strata_new RENAME TO users",
    "CREATE INDEX {schema}.users_email on users (email)",
    "CREATE VIEW {schema}.recent as select id, email from users where created_at is not null",
];

/// SQLite: six tenants, each with two users. t1, t5, t6 as migrated; t2
/// with a view of its own under the desired view's name; t3 with an extra
/// column (its rebuild loses it: destructive); t4 with a table whose
/// foreign key references `users`, which cascades (not planned: the
/// rebuild's drop would empty it). `diff` groups them so; `apply
/// --desired` refuses while t3 would lose data, `--skip-destructive`
/// brings t1, t2, t5, t6 there with their rows, `--allow-destructive` t3;
/// t4 is left, named, its rows untouched; the service's own file never
/// holds anything of the desired file.
#[tokio::test]
async fn a_sqlite_fleet_is_rebuilt_to_the_desired_schema_its_rows_kept_and_a_referenced_table_left() {
    if backend() != Backend::Sqlite {
        return;
    }
    let names = ["t1", "t2", "t3", "t4", "t5", "t6"];
    let server = fleet_of(&names, "", None).await;
    for tenant in names {
        server.ws.execute(tenant, "insert into users (email) values ('a@example.com'), ('b@example.com')").await;
    }
    server.ws.execute("t2", "create view recent as select id from users").await;
    server.ws.execute("t3", "alter table users add column nickname text").await;
    server
        .ws
        .execute(
            "t4",
            "create table profiles (id integer primary key, user_id integer references users(id) on delete cascade);\n\
             insert into profiles (user_id) values (1), (2);",
        )
        .await;

    let found = report(&diff(&server, SQLITE_DESIRED, &["--json"]).await);
    assert_eq!((found["tenants"].as_u64(), found["differing"].as_u64()), (Some(6), Some(6)), "{found}");
    let groups = found["groups"].as_array().unwrap();
    let by_tenants: BTreeMap<Vec<&str>, &Value> = groups.iter().map(|g| (tenants(g), g)).collect();
    assert_eq!(
        by_tenants.keys().cloned().collect::<Vec<_>>(),
        [vec!["t1", "t5", "t6"], vec!["t2"], vec!["t3"], vec!["t4"]]
    );
    assert_eq!(tenants(&groups[0]), ["t1", "t5", "t6"], "the largest group first: {found}");
    assert_eq!(steps(by_tenants[&vec!["t1", "t5", "t6"]]), SQLITE_COMMON);
    let mut t2 = vec!["DROP VIEW {schema}.recent"];
    t2.extend(SQLITE_COMMON);
    assert_eq!(steps(by_tenants[&vec!["t2"]]), t2);
    let mut t3 = SQLITE_COMMON.to_vec();
    t3[3] = "DROP TABLE {schema}.users /* column nickname is not copied */";
    assert_eq!(steps(by_tenants[&vec!["t3"]]), t3);
    let destructive: Vec<bool> = by_tenants.values().map(|g| g["destructive"].as_bool().unwrap()).collect();
    assert_eq!(destructive, [false, false, true, true], "t4 drops profiles");
    let left = &by_tenants[&vec!["t4"]]["unplannable"][0];
    assert!(
        left.as_str().unwrap().starts_with("table users differs and a foreign key of profiles references it"),
        "{left}"
    );
    assert_eq!(diff(&server, SQLITE_DESIRED, &["--check"]).await.status.code(), Some(10));

    let file = write_desired(&server, SQLITE_DESIRED);
    let desired = file.to_str().unwrap();
    let config = server.config_path();
    let refused = strata(config, &["apply", "--version", "to desired", "--desired", desired]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("1 group(s) would lose data, so nothing ran"));
    assert!(!server.ws.tables("t1").await.contains(&"tags".to_string()));

    let skipped =
        strata(config, &["apply", "--version", "to desired", "--desired", desired, "--skip-destructive"]).await;
    assert_eq!(skipped.status.code(), Some(0), "{}", String::from_utf8_lossy(&skipped.stderr));
    let said = String::from_utf8_lossy(&skipped.stderr);
    assert!(said.contains("not planned: table users differs and a foreign key of profiles"), "{said}");
    let after = report(&diff(&server, SQLITE_DESIRED, &["--json"]).await);
    assert_eq!(after["differing"], 2, "t3 and t4: {after}");
    for tenant in ["t1", "t2", "t5", "t6"] {
        // The tenant script's own rows (one a version) apart.
        let sql = "select id, email, created_at from users where email <> 'script@example.com' order by id";
        let rows = server.ws.rows(tenant, sql).await;
        assert_eq!(
            rows,
            [vec![json!(2), json!("a@example.com"), Value::Null], vec![json!(3), json!("b@example.com"), Value::Null]]
        );
        let mut tables = server.ws.tables(tenant).await;
        tables.sort();
        assert_eq!(tables, ["tags", "users"], "{tenant}");
        assert_eq!(server.ws.rows(tenant, "select count(*) from recent").await[0][0], 0);
    }

    let allowed =
        strata(config, &["apply", "--version", "to desired", "--desired", desired, "--allow-destructive"]).await;
    assert_eq!(allowed.status.code(), Some(0), "{}", String::from_utf8_lossy(&allowed.stderr));
    let last = report(&diff(&server, SQLITE_DESIRED, &["--json"]).await);
    assert_eq!(last["differing"], 1, "t4 alone: {last}");
    let kept = server.ws.rows("t3", "select email from users where email <> 'script@example.com' order by id").await;
    assert_eq!(kept, [vec![json!("a@example.com")], vec![json!("b@example.com")]]);
    let columns = server.ws.rows("t3", "select name from pragma_table_info('users') order by cid").await;
    assert_eq!(columns, [vec![json!("id")], vec![json!("created_at")], vec![json!("email")]]);
    assert_eq!(server.ws.count("t4", "profiles").await, 2, "the left tenant's rows are untouched");
    assert!(!server.ws.tables("t4").await.contains(&"tags".to_string()));
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
    for file in ["svc", "main"] {
        let sql = "select name from sqlite_master where name in ('tags', 'recent', 'users', 'users__strata_new')";
        assert_eq!(server.ws.rows(file, sql).await, Vec::<Vec<Value>>::new(), "nothing of the desired file in {file}");
    }
}

/// SQLite: `strata new NAME --desired FILE` writes the rebuild as the
/// tenants' next migration file, which the migration linter and runner
/// take as any file; applied as a plain version it brings every tenant
/// there, their rows copied, and a second `new` writes nothing.
#[tokio::test]
async fn a_sqlite_rebuild_written_by_new_with_desired_runs_as_a_migration() {
    if backend() != Backend::Sqlite {
        return;
    }
    let server = fleet_of(&["t1", "t2"], "", None).await;
    server.ws.execute("t1", "insert into users (email) values ('kept@example.com')").await;
    let file = write_desired(&server, SQLITE_DESIRED);

    let written = strata(server.config_path(), &["new", "to desired", "--desired", file.to_str().unwrap()]).await;
    assert_eq!(written.status.code(), Some(0), "{}", String::from_utf8_lossy(&written.stderr));
    let path = String::from_utf8_lossy(&written.stdout).trim().to_string();
    let expected: String = SQLITE_COMMON.iter().map(|s| format!("{s};\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);

    let applied = strata(server.config_path(), &["apply", "--version", "to desired"]).await;
    assert_eq!(applied.status.code(), Some(0), "{}", String::from_utf8_lossy(&applied.stderr));
    assert_eq!(diff(&server, SQLITE_DESIRED, &["--check"]).await.status.code(), Some(0));
    let kept = server.ws.rows("t1", "select count(*) from users where email = 'kept@example.com'").await;
    assert_eq!(kept[0][0], 1);
    let again = strata(server.config_path(), &["new", "again", "--desired", file.to_str().unwrap()]).await;
    assert_eq!((again.status.code(), String::from_utf8_lossy(&again.stdout).to_string()), (Some(0), String::new()));
}

/// SQLite: a rebuilt `AUTOINCREMENT` table continues its sequence — an id
/// of a deleted row is not given again after the rebuild.
#[tokio::test]
async fn a_sqlite_autoincrement_table_rebuilt_never_gives_an_id_twice() {
    if backend() != Backend::Sqlite {
        return;
    }
    let events = "create table {schema}.events (id integer primary key autoincrement, body text);\n";
    let server = fleet_of(&["t1"], "", Some(events)).await;
    server
        .ws
        .execute("t1", "insert into events (body) values ('a'), ('b'), ('c'); delete from events where id = 3")
        .await;
    let desired = "create table {schema}.users (id integer primary key, email text not null);\n\
                   create index {schema}.users_email on users (email);\n\
                   create table {schema}.events (id integer primary key autoincrement, at text, body text);\n";
    let file = write_desired(&server, desired);
    let applied =
        strata(server.config_path(), &["apply", "--version", "to desired", "--desired", file.to_str().unwrap()]).await;
    assert_eq!(applied.status.code(), Some(0), "{}", String::from_utf8_lossy(&applied.stderr));
    assert_eq!(diff(&server, desired, &["--check"]).await.status.code(), Some(0));
    server.ws.execute("t1", "insert into events (body) values ('d')").await;
    let ids = server.ws.rows("t1", "select id, body from events order by id").await;
    assert_eq!(ids, [vec![json!(1), json!("a")], vec![json!(2), json!("b")], vec![json!(4), json!("d")]]);
}

/// SQLite: columns the desired file adds at the end of a table are added
/// in place (`ALTER TABLE … ADD COLUMN`, no copy), also to a table another
/// table's foreign key references; the kept text then is the desired one,
/// so a second diff finds nothing; the rows stay, the new columns at their
/// defaults.
#[tokio::test]
async fn a_sqlite_column_added_at_the_end_is_added_in_place_even_under_a_foreign_key() {
    if backend() != Backend::Sqlite {
        return;
    }
    let profiles = "create table {schema}.profiles (id integer primary key, \
                    user_id integer references users(id) on delete cascade);\n";
    let server = fleet_of(&["t1", "t2"], "", Some(profiles)).await;
    for tenant in ["t1", "t2"] {
        server
            .ws
            .execute(
                tenant,
                "insert into users (email) values ('a@example.com'); insert into profiles (user_id) values (1)",
            )
            .await;
    }
    let desired = "create table {schema}.users (id integer primary key, email text not null, \
                   plan text not null default 'free', score decimal(10, 2));\n\
                   create index {schema}.users_email on users (email);\n\
                   create table {schema}.profiles (id integer primary key, \
                   user_id integer references users(id) on delete cascade);\n";
    let read = tokio::time::timeout(std::time::Duration::from_secs(90), diff(&server, desired, &["--json"])).await;
    let found = report(&read.expect("the reading waited for the fleet's own scratch: it did not run on devDataSource"));
    let groups = found["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{found}");
    assert_eq!(
        steps(&groups[0]),
        [
            "ALTER TABLE {schema}.users ADD COLUMN plan text not null default 'free'",
            "ALTER TABLE {schema}.users ADD COLUMN score decimal(10, 2)",
        ]
    );
    assert_eq!(
        (groups[0]["destructive"].as_bool(), groups[0]["unplannable"].as_array().map(Vec::len)),
        (Some(false), Some(0))
    );
    let file = write_desired(&server, desired);
    let applied =
        strata(server.config_path(), &["apply", "--version", "to desired", "--desired", file.to_str().unwrap()]).await;
    assert_eq!(applied.status.code(), Some(0), "{}", String::from_utf8_lossy(&applied.stderr));
    assert_eq!(diff(&server, desired, &["--check"]).await.status.code(), Some(0), "SQLite kept the desired text");
    for tenant in ["t1", "t2"] {
        let rows = server.ws.rows(tenant, "select email, plan, score from users where email = 'a@example.com'").await;
        assert_eq!(rows, [[json!("a@example.com"), json!("free"), Value::Null]], "{tenant}");
        assert_eq!(server.ws.count(tenant, "profiles").await, 1, "{tenant}: the cascade never ran");
    }
}

/// `devDataSource`: the desired file is applied and read on that server,
/// never on the fleet's. The fleet's own scratch is held by a session of
/// the test's (PostgreSQL: the scratch schema created in a transaction left
/// open; MariaDB: the scratch database's named lock), so a reading there
/// would wait and fail; on the dev server (PostgreSQL's second cluster,
/// MariaDB's shard server) `diff` finds the one plan the fleet needs. A
/// dev server that does not answer is named as such, and nothing is
/// planned.
#[tokio::test]
async fn a_dev_data_source_reads_the_desired_file_away_from_the_fleets_server() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_dev_data_source_reads_the_desired_file_away_from_the_fleets_server",
            "SQL Server's is sqlserver.rs's a_dev_data_source_reads_the_desired_file_in_another_database",
        );
    }
    use sqlx::{Connection, Executor};
    let (dev, desired, profiles) = match backend() {
        Backend::Postgres => (crate::support::server_url("STRATA_TEST_PG_DEFAULT_URL"), DESIRED, PROFILES),
        Backend::Mysql => {
            (crate::support::server_url("STRATA_TEST_MYSQL_SHARD_URL"), MARIADB_DESIRED, MARIADB_PROFILES)
        }
        Backend::Sqlite => return,
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    };
    // MariaDB's shard server is shared with the two-server fleet test (of
    // either half of the suite), which empties it.
    let _shard_server = match backend() {
        Backend::Mysql => Some(crate::support::mysql_shard_server_turn().await),
        _ => None,
    };
    let names: Vec<String> = (1..=3).map(|i| format!("t{i:02}")).collect();
    let server = fleet_of(&names, &format!("devDataSource: {dev}\n"), Some(profiles)).await;
    // The fleet's scratch, held.
    let mut holder_pg = None;
    let mut holder_mysql = None;
    match backend() {
        Backend::Postgres => {
            let mut conn = sqlx::PgConnection::connect(&server.ws.pg_url()).await.unwrap();
            conn.execute("begin; create schema strata_desired;").await.unwrap();
            holder_pg = Some(conn);
        }
        _ => {
            let url = crate::support::server_url("STRATA_TEST_MYSQL_URL");
            let mut conn = sqlx::MySqlConnection::connect(&url).await.unwrap();
            let held: Option<i64> =
                sqlx::query_scalar("select get_lock('strata_desired', 0)").fetch_one(&mut conn).await.unwrap();
            assert_eq!(held, Some(1));
            holder_mysql = Some(conn);
        }
    }
    let read = tokio::time::timeout(std::time::Duration::from_secs(90), diff(&server, desired, &["--json"])).await;
    let found = report(&read.expect("the reading waited for the fleet's own scratch: it did not run on devDataSource"));
    let groups = found["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{found}");
    assert_eq!(tenants(&groups[0]), names.iter().map(String::as_str).collect::<Vec<_>>(), "{found}");
    assert!(!steps(&groups[0]).is_empty(), "{found}");
    drop((holder_pg, holder_mysql));

    // A dev server nobody answers at: named, nothing planned.
    let down = crate::support::closed_port();
    let unreachable = dev.replace(&dev_port(&dev), &format!(":{}/", down.port));
    let yaml = std::fs::read_to_string(server.config_path()).unwrap().replace(&dev, &unreachable);
    std::fs::write(server.config_path(), yaml).unwrap();
    let refused = diff(&server, desired, &["--json"]).await;
    assert_ne!(refused.status.code(), Some(0));
    let said = String::from_utf8_lossy(&refused.stderr);
    let named = format!("devDataSource (127.0.0.1:{}): cannot connect to the database: connection refused", down.port);
    assert!(said.contains(&named), "{said}");
    assert!(refused.stdout.is_empty(), "{}", String::from_utf8_lossy(&refused.stdout));
}

/// `:port/` of a data source URL.
fn dev_port(url: &str) -> String {
    let after_host = url.rsplit_once(':').unwrap().1;
    format!(":{}/", after_host.split('/').next().unwrap())
}

/// MariaDB commits each DDL statement as it runs, so the scope check is
/// all that keeps a desired file in its scratch database: what an
/// executable comment holds (the server runs it), a partition exchanged
/// with another database's table, a table made from a query are refused
/// by line before anything runs, the other database intact, no scratch
/// left. A tenant may not take the scratch's name (its database would be
/// dropped with it).
#[tokio::test]
async fn a_mariadb_desired_file_cannot_reach_another_database_through_comments_or_partitions() {
    if backend() != Backend::Mysql {
        return;
    }
    let server = fleet(&["t1".to_string()]).await;
    let victim = format!("strata_victim_{}", server.ws.port);
    for statement in [
        format!("drop database if exists {victim}"),
        format!("create database {victim}"),
        format!("create table {victim}.keep (id int primary key)"),
        format!("insert into {victim}.keep values (1), (2)"),
    ] {
        server.ws.execute("svc", &statement).await;
    }
    let first = "create table {schema}.log (id int primary key) engine = InnoDB;\n";
    for (text, line) in [
        (format!("{first}/*!40000 drop database {victim} */;\n"), 2),
        (
            format!(
                "{first}create table {{schema}}.p (id int primary key) partition by range (id) (partition p0 values \
                 less than maxvalue);\nalter table {{schema}}.p exchange partition p0 with table {victim}.keep;\n"
            ),
            3,
        ),
        (format!("{first}create table {{schema}}.c select * from {victim}.keep;\n"), 2),
    ] {
        let refused = diff(&server, &text, &["--json"]).await;
        assert_ne!(refused.status.code(), Some(0), "{text}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains(&format!("desired.sql: line {line}: ")), "{text}: {said}");
        let rows = server.ws.rows("svc", &format!("select count(*) from {victim}.keep")).await;
        assert_eq!(rows, [[json!(2)]], "{text}");
    }
    assert_eq!(mariadb_scratch_databases(&server).await, 0);
    let scratch = strata(server.config_path(), &["tenants", "add", "--version", "s", "strata_desired"]).await;
    assert_ne!(scratch.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&scratch.stderr).contains("reserved for the service's own schema"));
    server.ws.execute("svc", &format!("drop database {victim}")).await;
}
