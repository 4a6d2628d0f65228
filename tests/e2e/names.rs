//! Tenant names: a new tenant's name must be an identifier its engine reads
//! as written (`{schema}` puts it in migrations unquoted), refused up front
//! with the rule otherwise — on every backend, through the API and the
//! command line.

use serde_json::json;

use strata_core::migrate::driver::Driver;
use strata_core::migrate::keywords;

use crate::support::{Backend, Server, backend, code, server_url, stderr, strata};

/// The rule's words for this backend.
fn rule() -> &'static str {
    match backend() {
        Backend::Postgres => {
            "a tenant name starts with a lower-case letter or '_' and has only lower-case letters, digits and '_' \
             (at most 63), as {schema} puts it in migrations unquoted and PostgreSQL folds unquoted names to lower case"
        }
        _ => {
            "a tenant name starts with a letter or '_' and has only letters, digits and '_' (at most 63), as \
             {schema} puts it in migrations unquoted"
        }
    }
}

fn engine() -> &'static str {
    match backend() {
        Backend::Sqlite => "SQLite",
        Backend::Postgres => "PostgreSQL",
        Backend::Mysql => "MySQL and MariaDB",
        Backend::Sqlserver => "SQL Server",
    }
}

#[tokio::test]
async fn names_the_engine_cannot_read_unquoted_are_refused_with_the_rule() {
    let server = Server::start("basic", "").await;
    assert_eq!(server.create_version(json!({ "versionName": "v1" })).await["errors"], json!(null));

    for name in ["1bad", "a-b"] {
        let message = format!(
            "invalid tenant name: tenant name {name:?} cannot be used as written in SQL on {}: {}",
            engine(),
            rule()
        );
        let result = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert_eq!(result["data"], json!(null), "{result}");
        assert_eq!(result["errors"][0]["extensions"]["code"], "INVALID_TENANT_NAME", "{result}");
        assert_eq!(result["errors"][0]["message"], message, "{result}");

        let apply = strata(server.config_path(), &["apply", "--version", name, "--tenant", name]).await;
        assert_eq!(code(&apply), 2, "{}", stderr(&apply));
        assert_eq!(stderr(&apply), format!("strata: {message}\n"));
        assert!(server.ws.tables(name).await.is_empty(), "{name}: a schema was created");
    }
    // Nothing recorded: no tenant, no version beyond the first.
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 0);
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);

    // A name within the rule is created and migrated.
    let result = server.create_tenant(json!({ "tenantName": "t_1b", "versionName": "t_1b" })).await;
    assert_eq!(result["errors"], json!(null), "{result}");
    assert_eq!(server.ws.tables("t_1b").await, ["users"]);
    let recorded =
        server.ws.rows("svc", "select filename from svc_migrations where db_schema = 't_1b' order by id").await;
    let expected = [[json!("tenants/001.sql")], [json!("tenants/003.sql")], [json!("scripts/tenants/touch.sql")]];
    assert_eq!(recorded, expected);
    assert_eq!(server.ws.rows("svc", "select name from svc_tenants").await, [[json!("t_1b")]]);
}

/// `(tenant, recorded rows, distinct versions)` of every tenant schema's
/// tenant migrations.
async fn recorded_per_tenant(server: &Server) -> Vec<Vec<serde_json::Value>> {
    server
        .ws
        .rows(
            "svc",
            "select db_schema, count(*), count(distinct version_id) from svc_migrations \
             where migration_type = 2 group by db_schema order by db_schema",
        )
        .await
}

#[tokio::test]
async fn tenants_add_from_a_file_creates_and_migrates_them_as_one_version() {
    let server = Server::start("basic", "").await;
    assert_eq!(server.create_version(json!({ "versionName": "v1" })).await["errors"], json!(null));
    let list = server.ws.path().join("tenants.txt");
    std::fs::write(&list, "# the first customers\nacme\n\n  beta  \n# gamma later\ndelta\n").unwrap();
    let add =
        strata(server.config_path(), &["tenants", "add", "--from", list.to_str().unwrap(), "--version", "batch"]).await;
    assert_eq!(code(&add), 0, "{}", stderr(&add));

    let versions = server.ws.rows("svc", "select id, name from svc_versions order by id").await;
    assert_eq!(versions, [[json!(1), json!("v1")], [json!(2), json!("batch")]]);
    let mut tenants = server.ws.rows("svc", "select name from svc_tenants").await;
    tenants.sort_by_key(|row| row[0].as_str().unwrap().to_string());
    assert_eq!(tenants, [[json!("acme")], [json!("beta")], [json!("delta")]]);
    let recorded = recorded_per_tenant(&server).await;
    assert_eq!(
        recorded,
        [
            [json!("acme"), json!(2), json!(1)],
            [json!("beta"), json!(2), json!(1)],
            [json!("delta"), json!(2), json!(1)]
        ]
    );
    for tenant in ["acme", "beta", "delta"] {
        assert_eq!(server.ws.tables(tenant).await, ["users"], "{tenant}");
    }
    // The single schemas were not touched again.
    let version_2 = server.ws.rows("svc", "select distinct db_schema from svc_migrations where version_id = 2").await;
    assert_eq!(version_2.len(), 3, "{version_2:?}");

    // A list with problems: all named, nothing added.
    std::fs::write(&list, "zeta\n1bad\nacme\nzeta\na-b\n").unwrap();
    let add =
        strata(server.config_path(), &["tenants", "add", "--from", list.to_str().unwrap(), "--version", "bad"]).await;
    assert_eq!(code(&add), 2, "{}", stderr(&add));
    let said = stderr(&add);
    let shown = list.display();
    assert!(
        said.starts_with(&format!(
            "strata: 3 problem(s) in the tenant list, nothing was added: {shown}: line 2: tenant name \"1bad\""
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "; {shown}: line 4: \"zeta\" is listed twice (first at 1); {shown}: line 5: tenant name \"a-b\""
        )),
        "{said}"
    );
    // An existing tenant is found once connected.
    std::fs::write(&list, "zeta\nacme\n").unwrap();
    let add =
        strata(server.config_path(), &["tenants", "add", "--from", list.to_str().unwrap(), "--version", "bad"]).await;
    assert_eq!(code(&add), 2, "{}", stderr(&add));
    assert_eq!(
        stderr(&add),
        "strata: 1 problem(s) in the tenant list, nothing was added: 2: tenant \"acme\" already exists\n"
    );
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 3);
    assert_eq!(server.ws.count("svc", "svc_versions").await, 2);
    assert!(server.ws.tables("zeta").await.is_empty());
}

#[tokio::test]
async fn create_tenants_in_the_api_is_one_version_or_nothing() {
    let server = Server::start("basic", "").await;
    let mutation = "mutation($input: TenantsInput!) { createTenants(input: $input) { \
                    summary { tenants tenantMigrationsTotal } version { id name } } }";
    let refused = server
        .graphql(mutation, json!({ "input": { "tenantNames": ["ok1", "a-b", "ok1"], "versionName": "many" } }))
        .await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "INVALID_TENANT_LIST", "{refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("2 problem(s) in the tenant list, nothing was added: 2: tenant name \"a-b\""),
        "{message}"
    );
    assert!(message.ends_with("; 3: \"ok1\" is listed twice (first at 1)"), "{message}");
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 0);

    let created =
        server.graphql(mutation, json!({ "input": { "tenantNames": ["ok1", "ok2"], "versionName": "many" } })).await;
    assert_eq!(created["errors"], json!(null), "{created}");
    assert_eq!(created["data"]["createTenants"]["version"]["name"], "many");
    assert_eq!(created["data"]["createTenants"]["summary"]["tenantMigrationsTotal"], 4, "{created}");
    assert_eq!(created["data"]["createTenants"]["summary"]["tenants"], 2, "{created}");
    let recorded = recorded_per_tenant(&server).await;
    assert_eq!(recorded, [[json!("ok1"), json!(2), json!(1)], [json!("ok2"), json!(2), json!(1)]]);
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
}

#[tokio::test]
async fn a_thousand_tenants_are_added_by_one_command_as_one_version() {
    if backend() != Backend::Postgres {
        return; // The fleet size this is about; SQLite and MySQL run the smaller tests above.
    }
    let server = Server::start("basic", "").await;
    let list = server.ws.path().join("tenants.txt");
    let names: Vec<String> = (0..1000).map(|i| format!("c{i:04}")).collect();
    std::fs::write(&list, names.join("\n")).unwrap();
    let add =
        strata(server.config_path(), &["tenants", "add", "--from", list.to_str().unwrap(), "--version", "k"]).await;
    assert_eq!(code(&add), 0, "{}", stderr(&add));
    assert_eq!(server.ws.rows("svc", "select name from svc_versions").await, [[json!("k")]]);
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 1000);
    let recorded = recorded_per_tenant(&server).await;
    assert_eq!(recorded.len(), 1000);
    assert!(recorded.iter().all(|row| row[1] == json!(2) && row[2] == json!(1)), "{:?}", &recorded[..3]);
    assert_eq!(server.ws.tables("c0999").await, ["users"]);
}

/// SQLite's keywords, as its documentation lists them.
const SQLITE_KEYWORDS: &str = "abort action add after all alter always analyze and as asc attach autoincrement \
    before begin between by cascade case cast check collate column commit conflict constraint create cross current \
    current_date current_time current_timestamp database default deferrable deferred delete desc detach distinct do \
    drop each else end escape except exclude exclusive exists explain fail filter first following for foreign from \
    full generated glob group groups having if ignore immediate in index indexed initially inner insert instead \
    intersect into is isnull join key last left like limit match materialized natural no not nothing notnull null \
    nulls of offset on or order others outer over partition plan pragma preceding primary query raise range \
    recursive references regexp reindex release rename replace restrict returning right rollback row rows savepoint \
    select set table temp temporary then ties to transaction trigger unbounded union unique update using vacuum \
    values view virtual when where window with without";

/// MySQL 8's reserved words that MariaDB takes as names (core keeps them:
/// the `mysql` driver serves both).
const MYSQL_ONLY: [&str; 31] = [
    "cube",
    "cume_dist",
    "database",
    "dense_rank",
    "empty",
    "first_value",
    "function",
    "generated",
    "get",
    "grouping",
    "groups",
    "io_after_gtids",
    "io_before_gtids",
    "json_table",
    "lag",
    "last_value",
    "lateral",
    "lead",
    "master_bind",
    "nth_value",
    "ntile",
    "of",
    "optimizer_costs",
    "percent_rank",
    "rank",
    "row",
    "schema",
    "stored",
    "system",
    "virtual",
    "window",
];

/// The words the engine under test refuses where `{schema}` goes, found by
/// trying each of its keywords there.
async fn refused_by_the_engine() -> (Vec<String>, Vec<String>) {
    use sqlx::Connection;
    let (mut refused, mut accepted) = (Vec::new(), Vec::new());
    match backend() {
        Backend::Postgres => {
            let mut conn = sqlx::PgConnection::connect(&server_url("STRATA_TEST_PG_URL")).await.unwrap();
            let words: Vec<(String, String)> =
                sqlx::query_as("select word, catcode::text from pg_get_keywords()").fetch_all(&mut conn).await.unwrap();
            for (word, _) in words {
                let probe = format!("select * from {word}.strata_probe");
                match sqlx::raw_sql(sqlx::AssertSqlSafe(probe)).execute(&mut conn).await {
                    Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42601") => refused.push(word),
                    _ => accepted.push(word),
                }
            }
        }
        Backend::Mysql => {
            let mut conn = sqlx::MySqlConnection::connect(&server_url("STRATA_TEST_MYSQL_URL")).await.unwrap();
            let words: Vec<String> = sqlx::query_scalar("select lower(word) from information_schema.keywords")
                .fetch_all(&mut conn)
                .await
                .unwrap();
            for word in words.into_iter().filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')) {
                let probe = format!("show tables from {word}");
                match sqlx::raw_sql(sqlx::AssertSqlSafe(probe)).execute(&mut conn).await {
                    // ER_PARSE_ERROR; an unknown database is 1049.
                    Err(sqlx::Error::Database(e))
                        if e.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().map(|e| e.number())
                            == Some(1064) =>
                    {
                        refused.push(word)
                    }
                    _ => accepted.push(word),
                }
            }
        }
        Backend::Sqlite => {
            let mut conn = sqlx::SqliteConnection::connect("sqlite::memory:").await.unwrap();
            for word in SQLITE_KEYWORDS.split_whitespace().filter(|w| !["main", "temp"].contains(w)) {
                // Strata attaches it quoted; migrations name it as written.
                let probe = format!("attach ':memory:' as \"{word}\"; create table {word}.t (x); detach \"{word}\"");
                match sqlx::raw_sql(sqlx::AssertSqlSafe(probe)).execute(&mut conn).await {
                    Err(_) => refused.push(word.to_string()),
                    Ok(_) => accepted.push(word.to_string()),
                }
            }
        }
        Backend::Sqlserver => unreachable!("not run on SQL Server: skipped above"),
    }
    (refused, accepted)
}

#[tokio::test]
async fn a_word_the_engine_reserves_is_refused_as_a_tenant_name_and_only_such_words() {
    if backend() == Backend::Sqlserver {
        return crate::support::not_on_sqlserver(
            "a_word_the_engine_reserves_is_refused_as_a_tenant_name_and_only_such_words",
            "asks PostgreSQL's and MariaDB's own keyword lists; SQL Server's reserved words are core's (ident) unit tests",
        );
    }
    let driver = match backend() {
        Backend::Postgres => Driver::Postgres,
        Backend::Mysql => Driver::Mysql,
        Backend::Sqlite => Driver::Sqlite,
        Backend::Sqlserver => Driver::SqlServer,
    };
    let reserved = keywords::reserved_words(driver);
    let turn = crate::support::mysql_turn();
    let (refused, accepted) = refused_by_the_engine().await;
    drop(turn); // the server takes its own
    assert!(refused.len() > 50, "{refused:?}");
    let missing: Vec<&String> = refused.iter().filter(|w| !reserved.contains(&w.as_str())).collect();
    assert!(missing.is_empty(), "the engine refuses these, Strata would accept them: {missing:?}");
    let needless: Vec<&String> = accepted
        .iter()
        .filter(|w| reserved.contains(&w.as_str()))
        .filter(|w| !(backend() == Backend::Mysql && MYSQL_ONLY.contains(&w.as_str())))
        .collect();
    assert!(needless.is_empty(), "the engine takes these as names, Strata refuses them: {needless:?}");

    let server = Server::start("basic", "").await;
    assert_eq!(server.create_version(json!({ "versionName": "v1" })).await["errors"], json!(null));
    let result = server.create_tenant(json!({ "tenantName": "select", "versionName": "kw" })).await;
    assert_eq!(result["errors"][0]["extensions"]["code"], "INVALID_TENANT_NAME", "{result}");
    assert_eq!(
        result["errors"][0]["message"],
        format!(
            "invalid tenant name: tenant name \"select\" is a reserved word on {}: {{schema}} puts it in migrations \
             unquoted, where it does not parse; choose another name",
            engine()
        )
    );
    let listed = strata(server.config_path(), &["tenants", "add", "t1", "table", "--version", "kw"]).await;
    assert_eq!(code(&listed), 2, "{}", stderr(&listed));
    assert!(stderr(&listed).contains("\"table\" is a reserved word"), "{}", stderr(&listed));
    assert_eq!(server.ws.count("svc", "svc_tenants").await, 0);
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
}
