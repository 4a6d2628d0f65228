//! Bad input gets a clear error and loses nothing.

use serde_json::{Value, json};

use crate::support::{Backend, Server, Workspace, backend, code, run_to_exit, stderr, stdout, strata};

#[tokio::test]
async fn malformed_requests() {
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "v1" })).await;

    let not_json = server.post_raw("query { tenants }").await;
    assert_eq!(not_json.status(), 400);
    let body: Value = not_json.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "BAD_REQUEST");
    assert!(
        body["errors"][0]["message"].as_str().unwrap().starts_with("request body is not a GraphQL request in JSON")
    );

    let invalid = server.graphql("{ tenants { name }", json!({})).await;
    assert_eq!(invalid["data"], json!(null));
    assert!(invalid["errors"][0]["message"].as_str().unwrap().contains("expected"), "{invalid}");

    let unknown = server.graphql("{ tenants { name color } }", json!({})).await;
    assert_eq!(unknown["errors"][0]["message"], "Unknown field \"color\" on type \"Tenant\".");

    let missing =
        server.graphql("mutation { createVersion(input: {dryRun: true}) { version { id } } }", json!({})).await;
    assert!(missing["errors"][0]["message"].as_str().unwrap().contains("versionName"), "{missing}");

    let blank = server.create_version(json!({ "versionName": "  " })).await;
    assert_eq!(blank["errors"][0]["message"], "versionName must not be empty");
    assert_eq!(blank["errors"][0]["extensions"]["code"], "INVALID_INPUT");

    let wrong_type = server.create_version(json!({ "versionName": "x", "action": "Destroy" })).await;
    assert!(wrong_type["errors"][0]["message"].as_str().unwrap().contains("Destroy"), "{wrong_type}");

    let oversized = server.post_raw(vec![b' '; 1024 * 1024 + 1]).await;
    assert_eq!(oversized.status(), 413);

    // Nothing was lost or added by any of it.
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    assert_eq!(server.ws.count("svc", "svc_migrations").await, 3);
}

#[tokio::test]
async fn hostile_tenant_names_are_refused_and_lose_nothing() {
    let server = Server::start("basic", "").await;
    server.create_tenant(json!({ "tenantName": "good", "versionName": "t" })).await;
    let too_long = "x".repeat(64);
    let mut hostile = vec![
        "a\"; drop table svc.svc_versions; --",
        "x'); delete from svc.svc_tenants; --",
        "../../etc/passwd",
        "svc",
        "SVC",
        "",
        too_long.as_str(),
        "tenant name",
        "ünïcode",
        "a`b",
        "a]b",
    ];
    if backend() == Backend::Sqlite {
        hostile.push("main");
    }
    for name in hostile {
        let result = server.create_tenant(json!({ "tenantName": name, "versionName": "evil" })).await;
        assert_eq!(result["data"], json!(null), "{name:?}");
        let code = result["errors"][0]["extensions"]["code"].as_str().unwrap();
        assert!(code == "INVALID_TENANT_NAME" || code == "UNUSABLE_SCHEMA", "{name:?}: {result}");
    }
    assert_eq!(server.ws.count("svc", "svc_versions").await, 1);
    assert_eq!(server.ws.rows("svc", "select name from svc_tenants").await, [[json!("good")]]);
    if backend() != Backend::Sqlite {
        return;
    }
    let files: Vec<String> = std::fs::read_dir(server.ws.path().join("db"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut files = files;
    files.sort();
    assert_eq!(files, ["good.db", "main.db", "svc.db", "svc.lock.db"]);
}

fn one_line_error(output: &std::process::Output) -> String {
    assert!(!output.status.success(), "must exit non-zero");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn bad_yaml_stops_start_up_with_one_line() {
    let ws = Workspace::new("basic");
    let config = ws.write_config("baseLocation: m\ndriver: [sqlite\n");
    let stderr = one_line_error(&run_to_exit(&config, &[]));
    assert!(stderr.starts_with(&format!("strata: {}: invalid YAML: ", config.display())), "{stderr}");
}

#[test]
fn missing_env_var_stops_start_up_naming_it() {
    let ws = Workspace::new("basic");
    let yaml = ws.config("").replace("dataSource: ", "dataSource: ${DB_DIR_THAT_IS_UNSET}");
    let config = ws.write_config(&yaml);
    let stderr = one_line_error(&run_to_exit(&config, &[]));
    assert_eq!(
        stderr.trim_end(),
        format!(
            "strata: {}: property dataSource: environment variable DB_DIR_THAT_IS_UNSET is not set",
            config.display()
        )
    );
    let with_var = run_to_exit(&ws.write_config(&ws.config("logLevel: ${LEVEL}\n")), &[("LEVEL", "LOUD")]);
    assert!(String::from_utf8_lossy(&with_var.stderr).contains("property logLevel: \"LOUD\" is not one of"));
}

#[test]
fn unknown_property_and_missing_file_stop_start_up() {
    let ws = Workspace::new("basic");
    let config = ws.write_config(&(ws.config("") + "webhookUrl: http://x\n"));
    let stderr = one_line_error(&run_to_exit(&config, &[]));
    assert!(stderr.contains("webhookUrl"), "{stderr}");
    let stderr = one_line_error(&run_to_exit(&ws.path().join("absent.yaml"), &[]));
    assert!(stderr.contains("absent.yaml: cannot read configuration"), "{stderr}");
}

#[test]
fn an_unreachable_database_stops_start_up_with_one_line_and_no_password() {
    let ws = Workspace::new("basic");
    let closed = crate::support::closed_port();
    let port = closed.port;
    for (driver, data_source) in [
        ("postgres", format!("postgres://svc:pg-s3cret@127.0.0.1:{port}/app")),
        ("mysql", format!("svc:my-s3cret@tcp(127.0.0.1:{port})/app")),
        ("sqlserver", format!("sqlserver://sa:ms-s3cret@127.0.0.1:{port}?database=app")),
    ] {
        let yaml = format!(
            "baseLocation: {}\ndriver: {driver}\ndataSource: \"{data_source}\"\n{}port: {}\n",
            ws.migrations().display(),
            crate::support::DIRECTORIES,
            ws.port
        );
        let stderr = one_line_error(&run_to_exit(&ws.write_config(&yaml), &[]));
        assert!(stderr.contains("dataSource: cannot connect to the database"), "{driver}: {stderr}");
        assert!(!stderr.contains("s3cret"), "{driver}: {stderr}");
    }
}

/// `strata serve` exits with the command line's statuses — 4 for a
/// configuration it cannot use, 5 for a database it cannot reach — and says
/// why once, on stderr (not again in its log on stdout).
#[test]
fn serve_exits_4_on_bad_configuration_and_5_on_an_unreachable_database_saying_it_once() {
    let ws = Workspace::new("basic");
    let config = ws.write_config(&(ws.config("") + "webhookUrl: http://x\n"));
    let output = run_to_exit(&config, &[]);
    assert_eq!(output.status.code(), Some(4));
    let stderr = one_line_error(&output);
    assert!(
        stderr.starts_with(&format!("strata: {}: ", config.display())) && stderr.contains("webhookUrl"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "");

    let closed = crate::support::closed_port();
    let yaml = format!(
        "baseLocation: {}\ndriver: postgres\ndataSource: postgres://svc@127.0.0.1:{}/app\n{}port: {}\n",
        ws.migrations().display(),
        closed.port,
        crate::support::DIRECTORIES,
        ws.port
    );
    let output = run_to_exit(&ws.write_config(&yaml), &[]);
    assert_eq!(output.status.code(), Some(5));
    let stderr = one_line_error(&output);
    assert!(stderr.starts_with(&format!("strata: {}: dataSource: cannot connect", config.display())), "{stderr}");
    let everything = format!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(everything.matches("cannot connect").count(), 1, "{everything}");
}

/// A link among the migrations that leads outside the base location (to a
/// mounted secret of the service's host, say) is refused by its name before
/// anything runs, and nothing of its target is read, run or served; a link
/// to a file below the base location is that file.
#[tokio::test]
async fn a_link_out_of_the_base_location_is_refused_and_its_target_never_read() {
    let turn = crate::support::mysql_turn();
    let ws = Workspace::new("basic");
    ws.prepare_database().await;
    let secret = ws.path().join("mounted-secret");
    std::fs::write(&secret, "hunter2-never-served\n").unwrap();
    std::os::unix::fs::symlink(&secret, ws.migrations().join("tenants/009.sql")).unwrap();
    let yaml = ws.config("");
    let config = ws.write_config(&yaml);

    for args in [&["plan"][..], &["apply", "--version", "v1"]] {
        let output = strata(&config, args).await;
        let said = format!("{}{}", stdout(&output), stderr(&output));
        assert_eq!(code(&output), 1, "{args:?}: {said}");
        assert!(said.contains("tenants/009.sql") && said.contains("outside the base location"), "{said}");
        assert!(!said.contains("hunter2"), "{said}");
    }
    drop(turn); // the server takes its own
    let server = Server::start_in(ws, &yaml, "").await;
    let answer = server.graphql("{ sourceMigrations { file contents } }", json!({})).await;
    assert!(answer["errors"][0]["message"].as_str().unwrap().contains("outside the base location"), "{answer}");
    assert!(!answer.to_string().contains("hunter2"), "{answer}");
    let answer = server.graphql("{ versions { id } }", json!({})).await;
    assert_eq!(answer["data"]["versions"], json!([]), "nothing ran: {answer}");

    // The same name linked to a file below the base location.
    let link = server.ws.migrations().join("tenants/009.sql");
    std::fs::remove_file(&link).unwrap();
    std::fs::create_dir_all(server.ws.migrations().join("shared")).unwrap();
    std::fs::write(server.ws.migrations().join("shared/009.sql"), "-- shared between services\n").unwrap();
    std::os::unix::fs::symlink("../shared/009.sql", &link).unwrap();
    let answer = server.data("{ sourceMigrations { file contents } }", json!({})).await;
    let linked: Vec<&Value> =
        answer["sourceMigrations"].as_array().unwrap().iter().filter(|m| m["file"] == "tenants/009.sql").collect();
    assert_eq!(linked.len(), 1, "{answer}");
    assert_eq!(linked[0]["contents"], "-- shared between services\n");
}
