//! The migration linter as users meet it: `strata lint` on the files
//! `apply` would run (and `--all` on every source file, without a
//! database), the findings in `plan` and `plan --check`, in GraphQL's
//! `plan`, and `-- strata:allow`, on every engine.

use serde_json::{Value, json};

use crate::support::{Backend, Server, backend, stdout, strata};

/// Drops a column the running application may still read (on MySQL, in
/// place and without a lock, so that only the data-loss rule applies).
fn drop_file() -> &'static str {
    match backend() {
        Backend::Mysql => "alter table {schema}.users drop column email, algorithm=inplace, lock=none;\n",
        _ => "alter table {schema}.users drop column email;\n",
    }
}

/// The column `email` of [`drop_file`] starts at, 1-based.
fn email_column() -> u64 {
    drop_file().find("email").unwrap() as u64 + 1
}

#[tokio::test]
async fn findings_on_pending_files_in_lint_plan_and_graphql_and_allow_silences_them() {
    let server = Server::start("basic", "").await;
    let created = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(created.get("errors").is_none(), "{created}");
    for name in ["acme", "beta"] {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    let config = server.config_path();

    // Everything applied: nothing to lint.
    let clean = strata(config, &["lint", "--fail-on", "info"]).await;
    assert_eq!(clean.status.code(), Some(0), "{}", String::from_utf8_lossy(&clean.stderr));
    assert_eq!(stdout(&clean), "0 finding(s), 0 at or above info; 0 statement(s) not checked.\n");

    // A new file drops a column the running application may still read.
    server.ws.write_migration("tenants/006.sql", drop_file());
    let at = format!("tenants/006.sql:1:{}: warning [dropping-column] ", email_column());
    let lint = strata(config, &["lint"]).await;
    assert_eq!(lint.status.code(), Some(0), "a warning is below the default --fail-on error: {}", stdout(&lint));
    assert!(stdout(&lint).starts_with(&at), "{}", stdout(&lint));
    let strict = strata(config, &["lint", "--fail-on", "warning", "--json"]).await;
    assert_eq!(strict.status.code(), Some(9), "{}", stdout(&strict));
    let report: Value = serde_json::from_slice(&strict.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report}");
    assert_eq!(findings[0]["rule"], "dropping-column");
    assert_eq!(findings[0]["severity"], "warning");
    assert_eq!(findings[0]["file"], "tenants/006.sql");
    assert_eq!(findings[0]["at"], json!({ "line": 1, "column": email_column() }));
    assert_eq!(report["unchecked"], json!([]));

    // `--all` reads the sources only: the same finding with no database.
    let all = strata(config, &["lint", "--all", "--fail-on", "warning"]).await;
    assert_eq!(all.status.code(), Some(9), "{}", stdout(&all));
    assert!(stdout(&all).contains(&at), "{}", stdout(&all));

    // plan shows it; plan --check fails on it at --fail-on warning, and
    // otherwise on the pending file (6).
    let plan = strata(config, &["plan"]).await;
    assert!(stdout(&plan).contains(&format!("\nLint:\n{at}")), "{}", stdout(&plan));
    let check = strata(config, &["plan", "--check", "--fail-on", "warning"]).await;
    assert_eq!(check.status.code(), Some(9), "{}", stdout(&check));
    let check = strata(config, &["plan", "--check"]).await;
    assert_eq!(check.status.code(), Some(6), "{}", stdout(&check));
    let json_plan: Value = serde_json::from_slice(&strata(config, &["plan", "--json"]).await.stdout).unwrap();
    assert_eq!(json_plan["findings"][0]["rule"], "dropping-column", "{json_plan}");

    let graphql =
        server.data("{ plan { findings { rule severity file line column } unchecked { file } } }", json!({})).await;
    assert_eq!(
        graphql["plan"],
        json!({
            "findings": [{ "rule": "dropping-column", "severity": "warning", "file": "tenants/006.sql",
                           "line": 1, "column": email_column() }],
            "unchecked": []
        })
    );

    // A new tenant gets every file: its table is new, dropping its column
    // harms no one.
    let new_tenant: Value =
        serde_json::from_slice(&strata(config, &["plan", "--tenant", "gamma", "--json"]).await.stdout).unwrap();
    assert_eq!(new_tenant["findings"], json!([]), "{new_tenant}");

    // The author accepts the risk in the file.
    server.ws.write_migration("tenants/006.sql", &format!("-- strata:allow dropping-column\n{}", drop_file()));
    let allowed = strata(config, &["lint", "--fail-on", "info"]).await;
    assert_eq!(allowed.status.code(), Some(0), "{}", stdout(&allowed));
    let graphql = server.data("{ plan { findings { rule } } }", json!({})).await;
    assert_eq!(graphql["plan"]["findings"], json!([]));

    // A misspelt rule name is itself a finding, and nothing is silenced.
    server.ws.write_migration("tenants/006.sql", &format!("-- strata:allow droping-column\n{}", drop_file()));
    let misspelt = strata(config, &["lint", "--fail-on", "warning", "--json"]).await;
    assert_eq!(misspelt.status.code(), Some(9));
    let report: Value = serde_json::from_slice(&misspelt.stdout).unwrap();
    let rules: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["unknown-rule", "dropping-column"], "{report}");
}
