//! Tenant names: a new tenant's name must be an identifier its engine reads
//! as written (`{schema}` puts it in migrations unquoted), refused up front
//! with the rule otherwise — on every backend, through the API and the
//! command line.

use serde_json::json;

use crate::support::{Backend, Server, backend, code, stderr, strata};

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
