use std::collections::BTreeMap;

use crate::migrate::config::*;

const FULL: &str = include_str!("../../../../tests/data/config/full.yaml");
const MINIMAL: &str = include_str!("../../../../tests/data/config/minimal.yaml");
const UNKNOWN: &str = include_str!("../../../../tests/data/config/unknown-property.yaml");
const BAD_YAML: &str = include_str!("../../../../tests/data/config/bad-yaml.yaml");

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn full_env() -> BTreeMap<String, String> {
    env(&[
        ("MIGRATIONS", "/srv/m"),
        ("DB_PASSWORD", "pa55word"),
        ("HOOK_ID", "T01"),
        ("STAGE", "prod"),
        ("HOOK_AUTH", "c2VjcmV0"),
    ])
}

#[test]
fn parses_every_property_with_substitution() {
    let config = Config::parse(FULL, &full_env()).unwrap();
    assert_eq!(config.base_location, "/srv/m/base");
    assert_eq!(config.driver, Driver::Postgres);
    assert_eq!(config.data_source, "user=svc password=pa55word dbname=svc host=127.0.0.1 port=5432 sslmode=disable");
    assert_eq!(config.tenant_select_sql, "select name from public.tenants");
    assert_eq!(config.tenant_insert_sql, "insert into public.tenants (name, created) values ($1, now())");
    assert!(!config.default_tenant_table);
    assert_eq!(config.schema_placeholder, ":tenant");
    assert_eq!(config.single_migrations, ["ref", "config"]);
    assert_eq!(config.tenant_migrations, ["tenants"]);
    assert_eq!(config.single_scripts, ["config-scripts"]);
    assert_eq!(config.tenant_scripts, ["tenants-scripts"]);
    assert_eq!(config.port, 8181);
    assert_eq!(config.path_prefix, "/migrations");
    assert_eq!(config.web_hook_url.as_deref(), Some("https://hooks.example.com/services/T01"));
    assert_eq!(
        config.web_hook_template.as_deref(),
        Some(r#"{"text": "New version ${summary.versionId}: ${summary}", "env": "prod"}"#)
    );
    assert_eq!(
        config.web_hook_headers,
        vec![
            Header { name: "Authorization".into(), value: "Basic c2VjcmV0".into() },
            Header { name: "Content-Type".into(), value: "application/json; charset=utf-8".into() },
            Header { name: "X-Custom-Header".into(), value: "value1,value2".into() },
        ]
    );
    assert_eq!(config.log_level, LogLevel::Debug);
}

#[test]
fn applies_defaults() {
    let config = Config::parse(MINIMAL, &BTreeMap::new()).unwrap();
    assert_eq!(config.tenant_select_sql, "select name from svc.svc_tenants");
    assert_eq!(config.tenant_insert_sql, "insert into svc.svc_tenants (name) values ($1)");
    assert!(config.default_tenant_table);
    assert_eq!(config.schema_placeholder, "{schema}");
    assert!(
        config.tenant_migrations.is_empty() && config.single_scripts.is_empty() && config.tenant_scripts.is_empty()
    );
    assert_eq!(config.port, 8080);
    assert_eq!(config.path_prefix, "/");
    assert_eq!(config.web_hook_url, None);
    assert_eq!(config.log_level, LogLevel::Info);
}

#[test]
fn missing_env_var_is_an_error_naming_it_and_the_property() {
    let mut env = full_env();
    env.remove("DB_PASSWORD");
    let err = Config::parse(FULL, &env).unwrap_err();
    assert_eq!(err, ConfigError::MissingEnvVar { property: "dataSource", name: "DB_PASSWORD".into() });
    assert_eq!(err.to_string(), "property dataSource: environment variable DB_PASSWORD is not set");
}

#[test]
fn port_may_come_from_the_environment() {
    let yaml = format!("{MINIMAL}port: ${{PORT}}\n");
    assert_eq!(Config::parse(&yaml, &env(&[("PORT", "9001")])).unwrap().port, 9001);
    let err = Config::parse(&yaml, &env(&[("PORT", "http")])).unwrap_err();
    assert_eq!(err.to_string(), "property port: \"http\" is not a number");
    let err = Config::parse(&format!("{MINIMAL}port: 70000\n"), &BTreeMap::new()).unwrap_err();
    assert_eq!(err.to_string(), "property port: 70000 is not a port number (1-65535)");
}

#[test]
fn unknown_property_is_refused_with_its_name_and_the_closest_one() {
    let err = Config::parse(UNKNOWN, &BTreeMap::new()).unwrap_err();
    assert_eq!(err.to_string(), "unknown property tenantMigration (line 5 column 1); did you mean tenantMigrations?");
    let misspelt = MINIMAL.replace("dataSource:", "dataSourse:");
    let err = Config::parse(&misspelt, &BTreeMap::new()).unwrap_err();
    let ConfigError::UnknownProperty { name, suggestion, expected, .. } = &err else { panic!("{err:?}") };
    assert_eq!((name.as_str(), suggestion.as_deref()), ("dataSourse", Some("dataSource")));
    assert!(expected.contains(&"baseLocation".to_string()) && expected.contains(&"outOfOrder".to_string()));
    // Nothing close: every property there may be, on one line.
    let err = Config::parse(&format!("{MINIMAL}zzz: 1\n"), &BTreeMap::new()).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("unknown property zzz (line "), "{text}");
    assert!(text.contains("; expected one of baseLocation, driver, dataSource, shards, "), "{text}");
    assert!(!text.contains('\n') && !text.contains("-->"), "{text}");
    // In a nested object too.
    let err = Config::parse(&format!("{MINIMAL}auth:\n  tokns: true\n"), &BTreeMap::new()).unwrap_err();
    assert!(err.to_string().ends_with("; did you mean tokens?"), "{err}");
}

#[test]
fn bad_yaml_is_refused_with_a_location() {
    let err = Config::parse(BAD_YAML, &BTreeMap::new()).unwrap_err();
    let ConfigError::Yaml(message) = &err else { panic!("{err:?}") };
    assert!(message.contains("line"), "{message}");
    assert!(Config::parse("", &BTreeMap::new()).is_err());
    assert!(Config::parse("- a\n- b\n", &BTreeMap::new()).is_err());
}

#[test]
fn required_properties_are_named() {
    for (property, yaml) in [
        ("baseLocation", "driver: sqlite\ndataSource: x\nsingleMigrations: [a]\n"),
        ("driver", "baseLocation: m\ndataSource: x\nsingleMigrations: [a]\n"),
        ("dataSource", "baseLocation: m\ndriver: sqlite\nsingleMigrations: [a]\n"),
        ("singleMigrations", "baseLocation: m\ndriver: sqlite\ndataSource: x\n"),
        ("singleMigrations", "baseLocation: m\ndriver: sqlite\ndataSource: x\nsingleMigrations: []\n"),
    ] {
        assert_eq!(Config::parse(yaml, &BTreeMap::new()), Err(ConfigError::Missing(property)), "{yaml}");
    }
}

#[test]
fn invalid_values_are_named() {
    let cases = [
        ("driver: oracle", "driver"),
        ("logLevel: TRACE", "logLevel"),
        ("pathPrefix: /a b", "pathPrefix"),
        ("webHookURL: ftp://x", "webHookURL"),
        ("webHookTemplate: '${summary.nope}'", "webHookTemplate"),
        ("webHookHeaders: ['Authorization Bearer s3cret']", "webHookHeaders"),
        ("tenantMigrations: [public]", "tenantMigrations"),
        ("singleScripts: ['../etc']", "singleScripts"),
        ("baseLocation: 's3://'", "baseLocation"),
    ];
    for (line, property) in cases {
        // Replace the property's line when MINIMAL has one, else append it.
        let key = line.split(':').next().unwrap();
        let mut replaced = false;
        let mut yaml: String = MINIMAL
            .lines()
            .map(|l| {
                if l.starts_with(&format!("{key}:")) {
                    replaced = true;
                    format!("{line}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        if !replaced {
            yaml.push_str(&format!("{line}\n"));
        }
        match Config::parse(&yaml, &BTreeMap::new()) {
            Err(ConfigError::Invalid { property: named, reason }) => {
                assert_eq!(named, property, "{line}: {reason}");
                assert!(!reason.contains("s3cret"), "secret leaked: {reason}");
            }
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn single_directory_schema_must_be_an_identifier() {
    let yaml = MINIMAL.replace("  - public", "  - \"a;drop\"");
    assert!(matches!(
        Config::parse(&yaml, &BTreeMap::new()),
        Err(ConfigError::Invalid { property: "singleMigrations", .. })
    ));
    let nested = MINIMAL.replace("  - public", "  - schemas/public");
    assert_eq!(Config::parse(&nested, &BTreeMap::new()).unwrap().single_migrations, ["schemas/public"]);
}

#[test]
fn redacted_rendering_hides_secrets_and_round_trips() {
    let config = Config::parse(FULL, &full_env()).unwrap();
    let yaml = config.render_redacted();
    assert!(!yaml.contains("pa55word"), "{yaml}");
    assert!(!yaml.contains("c2VjcmV0"), "{yaml}");
    assert!(!yaml.contains("value1"), "{yaml}");
    assert!(yaml.contains("password=***"), "{yaml}");
    assert!(yaml.contains("Authorization: ***"), "{yaml}");
    let reparsed = Config::parse(&yaml, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert_eq!(reparsed.base_location, config.base_location);
    assert_eq!(reparsed.port, 8181);
    assert_eq!(reparsed.path_prefix, "/migrations");
    assert_eq!(reparsed.single_migrations, config.single_migrations);
    assert_eq!(reparsed.web_hook_template, config.web_hook_template);
    assert_eq!(reparsed.web_hook_headers.len(), 3);
    assert_eq!(reparsed.web_hook_headers[0].value, "***");
}

#[test]
fn every_example_configuration_parses() {
    let env = env(&[
        ("PGHOST", "h"),
        ("PGPORT", "5432"),
        ("PGUSER", "u"),
        ("PGPASSWORD", "p"),
        ("PGDATABASE", "d"),
        ("MYSQL_DSN", "root:p@tcp(h:3306)/mysql"),
        ("MSSQL_PASSWORD", "p"),
    ]);
    for (yaml, driver) in [
        (include_str!("../../../../examples/sqlite/svc.yaml"), Driver::Sqlite),
        (include_str!("../../../../examples/postgres/svc.yaml"), Driver::Postgres),
        (include_str!("../../../../examples/mysql/svc.yaml"), Driver::Mysql),
        (include_str!("../../../../examples/sqlserver/svc.yaml"), Driver::SqlServer),
    ] {
        let config = Config::parse(yaml, &env).unwrap_or_else(|e| panic!("{driver:?}: {e}"));
        assert_eq!(config.driver, driver);
        assert!(config.default_tenant_table);
        assert_eq!(config.directories().count(), 5);
        assert!(crate::migrate::datasource::normalize(driver, &config.data_source).is_ok(), "{driver:?}");
    }
}

#[test]
fn accepts_migrators_current_tenant_statement_names_and_refuses_both_forms() {
    let config =
        Config::parse(include_str!("../../../../tests/data/config/migrator-names.yaml"), &BTreeMap::new()).unwrap();
    assert_eq!(config.tenant_select_sql, "select name from public.tenants");
    assert_eq!(config.tenant_insert_sql, "insert into public.tenants (name) values ($1)");
    assert!(!config.default_tenant_table);
    let both = format!("{MINIMAL}tenantSelectSQL: select 1\ntenantSelect: select 2\n");
    let error = Config::parse(&both, &BTreeMap::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "property tenantSelectSQL: give either tenantSelectSQL or tenantSelect (migrator's name for it), not both"
    );
}

#[test]
fn the_lock_lease_defaults_to_15_seconds_and_is_bounded() {
    assert_eq!(Config::parse(MINIMAL, &BTreeMap::new()).unwrap().lock_lease_seconds, 15);
    let set = Config::parse(&format!("{MINIMAL}lockLeaseSeconds: \"${{LEASE}}\"\n"), &env(&[("LEASE", "60")]));
    assert_eq!(set.unwrap().lock_lease_seconds, 60);
    let short = Config::parse(&format!("{MINIMAL}lockLeaseSeconds: 2\n"), &BTreeMap::new()).unwrap_err();
    assert_eq!(short.to_string(), "property lockLeaseSeconds: 2 is not between 3 and 3600");
    let concurrency = Config::parse(&format!("{MINIMAL}tenantConcurrency: 65\n"), &BTreeMap::new()).unwrap_err();
    assert_eq!(concurrency.to_string(), "property tenantConcurrency: 65 is not between 1 and 64");
}

#[test]
fn the_shutdown_grace_defaults_to_30_seconds_and_is_bounded() {
    assert_eq!(Config::parse(MINIMAL, &BTreeMap::new()).unwrap().shutdown_grace_seconds, 30);
    let set = Config::parse(&format!("{MINIMAL}shutdownGraceSeconds: 600\n"), &BTreeMap::new()).unwrap();
    assert_eq!(set.shutdown_grace_seconds, 600);
    assert!(set.render_redacted().contains("shutdownGraceSeconds: 600\n"), "{}", set.render_redacted());
    let none = Config::parse(&format!("{MINIMAL}shutdownGraceSeconds: 0\n"), &BTreeMap::new()).unwrap_err();
    assert_eq!(none.to_string(), "property shutdownGraceSeconds: 0 is not between 1 and 86400");
}

#[test]
fn lock_time_outs_default_to_a_second_and_twelve_retries() {
    let config = Config::parse(MINIMAL, &BTreeMap::new()).unwrap();
    assert_eq!((config.lock_timeout_millis, config.lock_retries, config.statement_timeout_seconds), (1_000, 12, 0));
    let set = Config::parse(
        &format!("{MINIMAL}lockTimeoutMillis: 250\nlockRetries: 0\nstatementTimeoutSeconds: 600\n"),
        &BTreeMap::new(),
    )
    .unwrap();
    assert_eq!((set.lock_timeout_millis, set.lock_retries, set.statement_timeout_seconds), (250, 0, 600));
    assert!(set.render_redacted().contains("lockTimeoutMillis: 250\nlockRetries: 0\nstatementTimeoutSeconds: 600\n"));
    let many = Config::parse(&format!("{MINIMAL}lockRetries: 101\n"), &BTreeMap::new()).unwrap_err();
    assert_eq!(many.to_string(), "property lockRetries: 101 is not between 0 and 100");
}

#[test]
fn the_drift_policy_defaults_to_report() {
    assert_eq!(Config::parse(MINIMAL, &BTreeMap::new()).unwrap().drift_policy, DriftPolicy::Report);
    let refuse = Config::parse(&format!("{MINIMAL}driftPolicy: refuse\n"), &BTreeMap::new()).unwrap();
    assert_eq!(refuse.drift_policy, DriftPolicy::Refuse);
    assert!(refuse.render_redacted().contains("recordFingerprints: true\ndriftPolicy: refuse\n"));
    let quarantine = Config::parse(&format!("{MINIMAL}driftPolicy: quarantine\n"), &BTreeMap::new()).unwrap();
    assert_eq!(quarantine.drift_policy, DriftPolicy::Quarantine);
    let bad = Config::parse(&format!("{MINIMAL}driftPolicy: isolate\n"), &BTreeMap::new()).unwrap_err();
    assert_eq!(bad.to_string(), "property driftPolicy: \"isolate\" is not off, report, refuse or quarantine");
}

#[test]
fn the_failure_budget_defaults_to_zero() {
    use crate::migrate::quarantine::FailureBudget;
    assert_eq!(Config::parse(MINIMAL, &BTreeMap::new()).unwrap().failure_budget, FailureBudget::None);
    let five = Config::parse(&format!("{MINIMAL}failureBudget: 5\n"), &BTreeMap::new()).unwrap();
    assert_eq!(five.failure_budget, FailureBudget::Tenants(5));
    let shown = five.render_redacted();
    assert!(shown.contains("failureBudget: 5\n"), "{shown}");
    let share = Config::parse(&format!("{MINIMAL}failureBudget: 10%\n"), &BTreeMap::new()).unwrap();
    assert_eq!(share.failure_budget, FailureBudget::Percent(10));
    assert!(share.render_redacted().contains("failureBudget: 10%\n"), "{}", share.render_redacted());
    let bad = Config::parse(&format!("{MINIMAL}failureBudget: -1\n"), &BTreeMap::new()).unwrap_err();
    assert_eq!(
        bad.to_string(),
        "property failureBudget: \"-1\" is not a number of tenants (5) or a share of them (10%)"
    );
}

const SHARDS: &str = include_str!("../../../../tests/data/config/shards.yaml");

#[test]
fn shards_are_parsed_checked_and_redacted() {
    let config = Config::parse(SHARDS, &env(&[("DB_PASSWORD", "s3cret")])).unwrap();
    let names: Vec<&str> = config.shards.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["eu-1", "eu-2", "us-1"]);
    assert_eq!(config.shards[1].data_source, "postgres://svc:s3cret@10.0.0.2:5432/svc");
    assert_eq!(config.data_source, config.shards[0].data_source);
    let rendered = config.render_redacted();
    assert!(!rendered.contains("s3cret"), "{rendered}");
    assert!(rendered.contains("name: us-1"), "{rendered}");
    assert!(!rendered.contains("\ndataSource:"), "{rendered}");

    let both = SHARDS.replace("shards:", "dataSource: postgres://x@h/db\nshards:");
    let err = Config::parse(&both, &env(&[("DB_PASSWORD", "p")])).unwrap_err();
    assert_eq!(err.to_string(), "property shards: give either dataSource (one server) or shards, not both");
    let twice = SHARDS.replace("eu-2", "eu-1");
    let err = Config::parse(&twice, &env(&[("DB_PASSWORD", "p")])).unwrap_err();
    assert_eq!(err.to_string(), "property shards: shard \"eu-1\" is listed twice");
    let wrong_driver = SHARDS.replace("postgres://svc:${DB_PASSWORD}@10.0.0.2:5432/svc", "mysql://svc@h/db");
    let err = Config::parse(&wrong_driver, &env(&[("DB_PASSWORD", "p")])).unwrap_err();
    assert!(err.to_string().starts_with("property shards: shard \"eu-2\": dataSource "), "{err}");
    let empty = "baseLocation: m\ndriver: postgres\nshards: []\nsingleMigrations: [a]\n";
    assert_eq!(
        Config::parse(empty, &env(&[])).unwrap_err().to_string(),
        "property shards: must list at least one shard"
    );
}

#[test]
fn a_dev_data_source_is_checked_for_the_driver_and_its_password_never_shown() {
    let password = [("DB_PASSWORD", "p"), ("DEV_PASSWORD", "d3v-secret")];
    let yaml =
        SHARDS.replace("shards:", "devDataSource: postgres://dev:${DEV_PASSWORD}@127.0.0.1:5432/scratch\nshards:");
    let config = Config::parse(&yaml, &env(&password)).unwrap();
    assert_eq!(config.dev_data_source.as_deref(), Some("postgres://dev:d3v-secret@127.0.0.1:5432/scratch"));
    let rendered = config.render_redacted();
    assert!(!rendered.contains("d3v-secret"), "{rendered}");
    let shown = rendered.lines().find(|line| line.starts_with("devDataSource: ")).unwrap_or_default();
    assert!(shown.contains(MASK) && shown.ends_with("@127.0.0.1:5432/scratch"), "{rendered}");

    let without = Config::parse(SHARDS, &env(&password)).unwrap();
    assert_eq!(without.dev_data_source, None);
    assert!(!without.render_redacted().contains("devDataSource"));
    let blank = SHARDS.replace("shards:", "devDataSource: \" \"\nshards:");
    assert_eq!(Config::parse(&blank, &env(&password)).unwrap().dev_data_source, None);
    let other_driver = SHARDS.replace("shards:", "devDataSource: mysql://dev@h/db\nshards:");
    let err = Config::parse(&other_driver, &env(&password)).unwrap_err().to_string();
    assert!(err.starts_with("property devDataSource: "), "{err}");
    let sqlite = with("devDataSource: /tmp/dev.db").unwrap_err().to_string();
    assert_eq!(sqlite, "property devDataSource: desired state reads its files on the fleet's own sqlite database");
    let sqlserver = include_str!("../../../../examples/sqlserver/svc.yaml").replace(
        "singleMigrations:",
        "devDataSource: \"sqlserver://dev:${DEV_PASSWORD}@127.0.0.1:1433?database=dev\"\nsingleMigrations:",
    );
    let sqlserver =
        Config::parse(&sqlserver, &env(&[("MSSQL_PASSWORD", "p"), ("DEV_PASSWORD", "d3v-secret")])).unwrap();
    assert_eq!(sqlserver.dev_data_source.as_deref(), Some("sqlserver://dev:d3v-secret@127.0.0.1:1433?database=dev"));
    assert!(!sqlserver.render_redacted().contains("d3v-secret"));
    let unset = Config::parse(&yaml, &env(&password[..1])).unwrap_err();
    assert_eq!(unset, ConfigError::MissingEnvVar { property: "devDataSource", name: "DEV_PASSWORD".into() });
}

fn with(extra: &str) -> Result<Config, ConfigError> {
    Config::parse(&format!("{MINIMAL}\n{extra}"), &env(&[]))
}

#[test]
fn without_auth_the_service_binds_loopback_unless_listen_says_otherwise() {
    use auth::{Exposure, bind_address};
    let config = with("").unwrap();
    assert!(!config.auth.configured() && config.auth.open_probes);
    assert_eq!(
        bind_address(config.listen, config.port, &config.auth),
        ("127.0.0.1:8080".parse().unwrap(), Exposure::LoopbackOnly)
    );
    let open = with("listen: 0.0.0.0:9000").unwrap();
    assert_eq!(
        bind_address(open.listen, open.port, &open.auth),
        ("0.0.0.0:9000".parse().unwrap(), Exposure::OpenWithoutAuth)
    );
    let tokens = with("auth:\n  tokens: true").unwrap();
    assert_eq!(
        bind_address(tokens.listen, tokens.port, &tokens.auth),
        ("0.0.0.0:8080".parse().unwrap(), Exposure::Authenticated)
    );
    assert!(tokens.auth.forbids_self_approval());
    let v6 = with("listen: '[::1]:8080'").unwrap();
    assert_eq!(bind_address(v6.listen, v6.port, &v6.auth).1, Exposure::LoopbackOnly);
    assert!(with("listen: 8080").unwrap_err().to_string().contains("not address:port"));
}

#[test]
fn auth_is_validated() {
    let proxy = with(
        "auth:\n  proxy:\n    userHeader: X-Forwarded-User\n    rolesHeader: X-Forwarded-Groups\n    \
         trustedSources: [10.0.0.0/8, 127.0.0.1]\n    roles: {dba: admin, release: approver}\n    defaultRole: viewer",
    )
    .unwrap();
    let p = proxy.auth.proxy.as_ref().unwrap();
    assert!(p.trusts("10.1.2.3".parse().unwrap()) && p.trusts("127.0.0.1".parse().unwrap()));
    assert!(p.trusts("::ffff:10.0.0.9".parse().unwrap()));
    assert!(!p.trusts("192.168.1.1".parse().unwrap()) && !p.trusts("127.0.0.2".parse().unwrap()));
    assert_eq!(p.roles_of("eng, release").list(), vec![crate::auth::Role::Approver]);
    assert_eq!(p.roles_of("eng").list(), vec![crate::auth::Role::Viewer]);
    assert!(proxy.render_redacted().contains("trustedSources"));
    // The throttle's client: the last untrusted hop behind trusted proxies.
    let ip = |text: &str| -> std::net::IpAddr { text.parse().unwrap() };
    let client = |peer: &str, forwarded: Option<&str>| p.client_address(ip(peer), forwarded);
    assert_eq!(client("10.0.0.5", Some("203.0.113.7")), ip("203.0.113.7"));
    // A client that sends its own header cannot choose its address: the
    // proxy appends the one it saw.
    assert_eq!(client("10.0.0.5", Some("1.1.1.1, 203.0.113.7, 10.0.0.9")), ip("203.0.113.7"));
    assert_eq!(client("10.0.0.5", None), ip("10.0.0.5"));
    assert_eq!(client("10.0.0.5", Some("garbage, 10.0.0.9")), ip("10.0.0.5"));
    // From an untrusted peer, the header counts for nothing.
    assert_eq!(client("198.51.100.1", Some("203.0.113.7")), ip("198.51.100.1"));

    // An ingress that authenticates nobody only names its clients, for the
    // throttle; tokens or OIDC authenticate.
    let forwarding = with("auth:\n  tokens: true\n  proxy:\n    trustedSources: [10.0.0.0/8]").unwrap();
    let f = forwarding.auth.proxy.as_ref().unwrap();
    assert_eq!(
        (f.user_header.as_deref(), f.client_address(ip("10.0.0.5"), Some("203.0.113.9"))),
        (None, ip("203.0.113.9"))
    );
    assert!(forwarding.auth.configured());
    let alone = with("auth:\n  proxy:\n    trustedSources: [10.0.0.0/8]").unwrap_err().to_string();
    assert!(alone.contains("without userHeader the proxy authenticates nobody"), "{alone}");

    for (yaml, says) in [
        ("auth:\n  required: true", "no authentication is configured"),
        ("auth:\n  proxy:\n    userHeader: X-User", "name the proxy's addresses"),
        ("auth:\n  proxy:\n    userHeader: X-User\n    trustedSources: [nowhere]", "not an address or CIDR"),
        ("auth:\n  proxy:\n    userHeader: 'X User'\n    trustedSources: [10.0.0.0/8]", "not an HTTP header name"),
        (
            "auth:\n  proxy:\n    userHeader: X-User\n    trustedSources: [10.0.0.0/8]\n    roles: {a: root}",
            "not a role",
        ),
        ("auth:\n  oidc: {}", "auth.oidc.issuer"),
        (
            "auth:\n  oidc: {issuer: 'https://id.example.com', audience: a, algorithms: [HS256]}",
            "none and HMAC never are",
        ),
        ("auth:\n  oidc: {issuer: 'https://id.example.com', audience: a, algorithms: [none]}", "not accepted"),
        ("auth:\n  oidc: {issuer: 'id.example.com', audience: a}", "not an http(s) URL"),
        ("auth:\n  oidc: {issuer: 'https://id.example.com'}", "auth.oidc.audience"),
    ] {
        let error = with(yaml).unwrap_err().to_string();
        assert!(error.contains(says), "{yaml}: {error}");
    }
}

#[test]
fn oidc_maps_claim_values_to_roles() {
    let config = with(
        "auth:\n  oidc:\n    issuer: https://id.example.com/\n    audience: strata\n    \
         roles: {dba: admin, release: approver}\n    defaultRole: viewer",
    )
    .unwrap();
    let oidc = config.auth.oidc.as_ref().unwrap();
    assert!(config.auth.configured());
    assert_eq!(oidc.algorithms, ["RS256", "PS256", "ES256"]);
    assert_eq!(oidc.roles_claim, "groups");
    let roles = |v: serde_json::Value| oidc.roles_of(Some(&v)).list();
    use crate::auth::Role::*;
    assert_eq!(roles(serde_json::json!(["dba", "x"])), vec![Admin]);
    assert_eq!(roles(serde_json::json!("release eng")), vec![Approver]);
    assert_eq!(roles(serde_json::json!(["nothing"])), vec![Viewer]);
    assert_eq!(oidc.roles_of(None).list(), vec![Viewer]);
    assert_eq!(auth::OidcAuth::actor("u1", Some("a@b.c")), "oidc:u1 <a@b.c>");
}

#[test]
fn citus_is_off_unless_configured_and_belongs_to_postgres() {
    let minimal = Config::parse(MINIMAL, &BTreeMap::new()).unwrap();
    assert!(!minimal.citus);
    assert!(!minimal.render_redacted().contains("citus"));
    let postgres = MINIMAL
        .replace("driver: sqlite", "driver: postgres")
        .replace(minimal.data_source.as_str(), "postgres://strata@127.0.0.1:5432/app");
    let on = Config::parse(&format!("{postgres}citus: true\n"), &BTreeMap::new()).unwrap();
    assert!(on.citus);
    assert!(on.render_redacted().contains("citus: true\n"));
    let sqlite = Config::parse(&format!("{MINIMAL}citus: true\n"), &BTreeMap::new()).unwrap_err();
    assert_eq!(sqlite.to_string(), "property citus: Citus is a PostgreSQL extension; driver is sqlite");
}

#[test]
fn the_desired_schema_is_a_file_beside_the_migration_directories() {
    let minimal = Config::parse(MINIMAL, &BTreeMap::new()).unwrap();
    assert_eq!((minimal.desired_schema.as_deref(), minimal.desired_schema_file(None)), (None, None));
    assert!(!minimal.render_redacted().contains("desiredSchema"));
    let with = |line: &str| Config::parse(&format!("{MINIMAL}tenantMigrations: [tenants]\n{line}\n"), &BTreeMap::new());
    let nested = with("desiredSchema: schema/${PART:-tenants}.sql").unwrap();
    assert_eq!(nested.desired_schema.as_deref(), Some("schema/tenants.sql"));
    assert_eq!(nested.desired_schema_file(None), Some(("schema", "tenants.sql")));
    assert!(nested.render_redacted().contains("desiredSchema: schema/tenants.sql\n"));
    let at_base = with("desiredSchema: schema.sql").unwrap();
    assert_eq!(at_base.desired_schema_file(None), Some(("", "schema.sql")));
    // In a migration directory it would run as a migration; outside the base it is not a source.
    assert_eq!(
        with("desiredSchema: tenants/schema.sql").unwrap_err().to_string(),
        "property desiredSchema: \"tenants/schema.sql\" is in the configured directory \"tenants\", whose every file \
         runs as a migration or script: keep the desired schema beside the directories (e.g. schema/tenants.sql)"
    );
    assert!(with("desiredSchema: public/x.sql").is_err());
    for outside in ["/etc/schema.sql", "../schema.sql", "schema/", "a//b.sql", "a\\\\b.sql", "./s.sql", "''"] {
        let err = with(&format!("desiredSchema: {outside}")).unwrap_err().to_string();
        assert!(err.ends_with("is not a relative file path below baseLocation"), "{outside}: {err}");
    }
}

#[test]
fn defaults_and_required_variables_follow_the_shell() {
    let yaml = "baseLocation: ${BASE:-/srv/default}\ndriver: ${DRIVER-sqlite}\n\
                dataSource: ${DB:?set DB to the SQLite file}\nsingleMigrations: [ref]\n";
    // Unset: the default of `:-` and `-`; `:?` refuses with its message.
    let err = Config::parse(yaml, &BTreeMap::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "property dataSource: environment variable DB is not set or empty: set DB to the SQLite file"
    );
    let config = Config::parse(yaml, &env(&[("DB", "/d/main.db")])).unwrap();
    assert_eq!((config.base_location.as_str(), config.driver), ("/srv/default", Driver::Sqlite));
    assert_eq!(config.data_source, "/d/main.db");
    // Set but empty: `:-` and `:?` take it as unset, `-` keeps the empty value.
    let err = Config::parse(yaml, &env(&[("DB", "")])).unwrap_err();
    assert!(matches!(err, ConfigError::RequiredEnvVar { ref name, empty_too: true, .. } if name == "DB"), "{err}");
    let config = Config::parse(yaml, &env(&[("DB", "/d"), ("BASE", "")])).unwrap();
    assert_eq!(config.base_location, "/srv/default");
    let err = Config::parse(yaml, &env(&[("DB", "/d"), ("DRIVER", "")])).unwrap_err();
    assert_eq!(err, ConfigError::Missing("driver"));
    // Set: the value.
    let config = Config::parse(yaml, &env(&[("DB", "/d"), ("BASE", "/b"), ("DRIVER", "sqlite")])).unwrap();
    assert_eq!(config.base_location, "/b");
    // `?` without a message, and only when unset.
    let yaml = "baseLocation: /m\ndriver: sqlite\ndataSource: /d${SUFFIX?}\nsingleMigrations: [ref]\n";
    assert_eq!(
        Config::parse(yaml, &BTreeMap::new()).unwrap_err().to_string(),
        "property dataSource: environment variable SUFFIX is not set: required"
    );
    assert_eq!(Config::parse(yaml, &env(&[("SUFFIX", "")])).unwrap().data_source, "/d");
    // A plain placeholder is as before: required, an empty value is kept.
    let yaml = "baseLocation: /m\ndriver: sqlite\ndataSource: /d${S}.db\nsingleMigrations: [ref]\n";
    assert_eq!(Config::parse(yaml, &env(&[("S", "")])).unwrap().data_source, "/d.db");
}

#[test]
fn relative_paths_are_read_from_the_configuration_directory() {
    let yaml = "baseLocation: migrations\ndriver: sqlite\ndataSource: sqlite://./data/main.db?mode=rwc\n\
                singleMigrations: [ref]\n";
    let options = ParseOptions { directory: Some("/etc/strata".into()), offline: false };
    let config = Config::parse_with(yaml, &BTreeMap::new(), &options).unwrap();
    assert_eq!(config.base_location, "/etc/strata/migrations");
    assert_eq!(config.data_source, "sqlite:///etc/strata/data/main.db?mode=rwc");
    let config = Config::parse(yaml, &BTreeMap::new()).unwrap();
    assert_eq!(config.base_location, "migrations");
    let shards = "baseLocation: s3://b/p\ndriver: sqlite\nsingleMigrations: [ref]\n\
                  shards:\n  - {name: a, dataSource: a.db}\n  - {name: b, dataSource: /abs/b.db}\n";
    let config = Config::parse_with(shards, &BTreeMap::new(), &options).unwrap();
    assert_eq!(config.base_location, "s3://b/p");
    let files: Vec<&str> = config.shards.iter().map(|s| s.data_source.as_str()).collect();
    assert_eq!(files, ["/etc/strata/a.db", "/abs/b.db"]);
    assert_eq!(config.data_source, "/etc/strata/a.db");
}

#[test]
fn offline_a_connection_secret_may_be_unset() {
    let mut env = full_env();
    env.remove("DB_PASSWORD");
    env.remove("HOOK_AUTH");
    let offline = ParseOptions { directory: None, offline: true };
    let config = Config::parse_with(FULL, &env, &offline).unwrap();
    assert!(config.data_source.contains("password=${DB_PASSWORD}"), "{}", config.data_source);
    assert_eq!(config.unresolved, BTreeSet::from(["DB_PASSWORD".to_string(), "HOOK_AUTH".to_string()]));
    // Not offline: refused as before.
    assert!(matches!(
        Config::parse(FULL, &env).unwrap_err(),
        ConfigError::MissingEnvVar { property: "dataSource", .. }
    ));
    // Offline, a variable the sources need is still required.
    env.remove("MIGRATIONS");
    assert_eq!(
        Config::parse_with(FULL, &env, &offline).unwrap_err(),
        ConfigError::MissingEnvVar { property: "baseLocation", name: "MIGRATIONS".into() }
    );
    // A whole dataSource in a variable.
    let yaml = "baseLocation: /m\ndriver: postgres\ndataSource: ${DATABASE_URL}\nsingleMigrations: [ref]\n";
    let config = Config::parse_with(yaml, &BTreeMap::new(), &offline).unwrap();
    assert_eq!(config.data_source, "${DATABASE_URL}");
    assert!(Config::parse(FULL, &full_env()).unwrap().unresolved.is_empty());
}

#[test]
fn strata_data_source_replaces_the_files_data_source() {
    let mut env = full_env();
    env.remove("DB_PASSWORD");
    env.insert(DATA_SOURCE_VARIABLE.into(), "postgres://svc:s3cret@db:5432/svc".into());
    let config = Config::parse(FULL, &env).unwrap();
    assert_eq!(config.data_source, "postgres://svc:s3cret@db:5432/svc");
    // Blank: the file's.
    env.insert(DATA_SOURCE_VARIABLE.into(), " ".into());
    assert!(matches!(Config::parse(FULL, &env).unwrap_err(), ConfigError::MissingEnvVar { .. }));
    // Checked like dataSource, naming the variable.
    env.insert(DATA_SOURCE_VARIABLE.into(), "mysql://root@db/x".into());
    let err = Config::parse(FULL, &env).unwrap_err().to_string();
    assert!(err.starts_with("property dataSource: STRATA_DATA_SOURCE: is a mysql:// URL"), "{err}");
    // With shards it is refused.
    let shards =
        "baseLocation: /m\ndriver: sqlite\nsingleMigrations: [ref]\nshards:\n  - {name: a, dataSource: a.db}\n";
    let env = BTreeMap::from([(DATA_SOURCE_VARIABLE.to_string(), "/x.db".to_string())]);
    assert_eq!(
        Config::parse(shards, &env).unwrap_err().to_string(),
        "property shards: STRATA_DATA_SOURCE replaces dataSource, but this configuration lists shards"
    );
}

#[test]
fn backfills_default_to_no_rate_limit_four_at_once_and_100_ms_batches() {
    let config = Config::parse(MINIMAL, &BTreeMap::new()).unwrap();
    assert_eq!(
        config.backfill,
        BackfillSettings {
            rows_per_second: 0,
            concurrency: 4,
            batch_millis: 100,
            max_replica_lag_seconds: 0,
            replicas: Vec::new()
        }
    );
    assert_eq!(config.backfill, BackfillSettings::default());
    assert!(
        config.render_redacted().ends_with(
            "backfill:\n  rowsPerSecond: 0\n  concurrency: 4\n  batchMillis: 100\n  maxReplicaLagSeconds: 0\n"
        )
    );
    // An empty section is the defaults too.
    assert_eq!(with("backfill: {}\n").unwrap().backfill, BackfillSettings::default());
}

#[test]
fn backfill_settings_are_read_and_shown() {
    let set = Config::parse(
        &format!("{MINIMAL}backfill:\n  rowsPerSecond: 5000\n  concurrency: \"${{BACKFILLS}}\"\n  batchMillis: 250\n"),
        &env(&[("BACKFILLS", "2")]),
    )
    .unwrap();
    assert_eq!(
        set.backfill,
        BackfillSettings {
            rows_per_second: 5_000,
            concurrency: 2,
            batch_millis: 250,
            max_replica_lag_seconds: 0,
            replicas: Vec::new()
        }
    );
    let shown = set.render_redacted();
    assert!(shown.contains("backfill:\n  rowsPerSecond: 5000\n  concurrency: 2\n  batchMillis: 250\n"), "{shown}");
    assert_eq!(Config::parse(&shown, &BTreeMap::new()).unwrap().backfill, set.backfill);
    let only_rate = with("backfill:\n  rowsPerSecond: 1000000000\n").unwrap().backfill;
    assert_eq!(only_rate, BackfillSettings { rows_per_second: 1_000_000_000, ..BackfillSettings::default() });
    let bounds = with("backfill:\n  concurrency: 64\n  batchMillis: 60000\n").unwrap().backfill;
    assert_eq!((bounds.concurrency, bounds.batch_millis), (64, 60_000));
}

#[test]
fn bad_backfill_settings_are_refused_naming_the_property() {
    for (section, message) in [
        ("concurrency: 0", "property backfill.concurrency: 0 is not between 1 and 64"),
        ("concurrency: 65", "property backfill.concurrency: 65 is not between 1 and 64"),
        ("batchMillis: 0", "property backfill.batchMillis: 0 is not between 1 and 60000"),
        ("batchMillis: 60001", "property backfill.batchMillis: 60001 is not between 1 and 60000"),
        ("rowsPerSecond: -1", "property backfill.rowsPerSecond: -1 is not between 0 and 1000000000"),
        ("rowsPerSecond: 1000000001", "property backfill.rowsPerSecond: 1000000001 is not between 0 and 1000000000"),
        ("rowsPerSecond: fast", "property backfill.rowsPerSecond: \"fast\" is not a number"),
    ] {
        let err = with(&format!("backfill:\n  {section}\n")).unwrap_err();
        assert_eq!(err.to_string(), message, "{section}");
    }
    let err = with("backfill:\n  rowsPerSec: 10\n").unwrap_err();
    let ConfigError::UnknownProperty { name, suggestion, expected, .. } = &err else { panic!("{err:?}") };
    assert_eq!((name.as_str(), suggestion.as_deref()), ("rowsPerSec", Some("rowsPerSecond")));
    assert_eq!(expected, &["rowsPerSecond", "concurrency", "batchMillis", "maxReplicaLagSeconds", "replicas"]);
    let err = with("backfill:\n  parallel: 2\n").unwrap_err();
    assert!(
        err.to_string()
            .ends_with("; expected one of rowsPerSecond, concurrency, batchMillis, maxReplicaLagSeconds, replicas"),
        "{err}"
    );
}

#[test]
fn a_replica_lag_limit_is_read_where_the_engine_tells_the_lag_and_refused_elsewhere() {
    let postgres = "baseLocation: /m\ndriver: postgres\ndataSource: postgres://u@h/d\nsingleMigrations: [ref]\n";
    let set = Config::parse(&format!("{postgres}backfill:\n  maxReplicaLagSeconds: 5\n"), &BTreeMap::new()).unwrap();
    assert_eq!(set.backfill.max_replica_lag_seconds, 5);
    assert!(set.render_redacted().contains("  maxReplicaLagSeconds: 5\n"));
    let too_long = Config::parse(&format!("{postgres}backfill:\n  maxReplicaLagSeconds: 86401\n"), &BTreeMap::new());
    let message = "property backfill.maxReplicaLagSeconds: 86401 is not between 0 and 86400";
    assert_eq!(too_long.unwrap_err().to_string(), message);
    // SQLite (MINIMAL) has no replicas to read: 0 is accepted, a limit is not.
    assert_eq!(with("backfill:\n  maxReplicaLagSeconds: 0\n").unwrap().backfill, BackfillSettings::default());
    let refused = with("backfill:\n  maxReplicaLagSeconds: 5\n").unwrap_err().to_string();
    assert!(refused.starts_with("property backfill.maxReplicaLagSeconds: 5 needs the replicas' lag"), "{refused}");
    assert!(refused.contains("not supported yet") && refused.contains("sqlite"), "{refused}");
}

#[test]
fn mysql_reads_the_lag_of_the_replicas_listed_and_shows_them_without_their_passwords() {
    let mysql = "baseLocation: /m\ndriver: mysql\ndataSource: mysql://u:p@h:3306/d\nsingleMigrations: [ref]\n";
    let parse = |section: &str| Config::parse(&format!("{mysql}backfill:\n{section}"), &env(&[("PASS", "s3cret")]));
    let set = parse("  maxReplicaLagSeconds: 3\n  replicas: [\"mysql://u:${PASS}@r1:3306/d\", \"mysql://u@r2/d\"]\n")
        .unwrap();
    assert_eq!(set.backfill.replicas, ["mysql://u:s3cret@r1:3306/d", "mysql://u@r2/d"]);
    let shown = set.render_redacted();
    assert!(shown.contains("  replicas:\n") && !shown.contains("s3cret") && shown.contains("r1:3306"), "{shown}");
    for (section, message) in [
        ("  maxReplicaLagSeconds: 3\n", "property backfill.maxReplicaLagSeconds: 3 needs backfill.replicas on MySQL"),
        (
            "  replicas: [\"mysql://u@r1/d\"]\n",
            "property backfill.replicas: are read only with backfill.maxReplicaLagSeconds",
        ),
        ("  maxReplicaLagSeconds: 3\n  replicas: [\"postgres://u@r1/d\"]\n", "property backfill.replicas: "),
    ] {
        let refused = parse(section).unwrap_err().to_string();
        assert!(refused.starts_with(message), "{section}: {refused}");
    }
    let postgres = "baseLocation: /m\ndriver: postgres\ndataSource: postgres://u@h/d\nsingleMigrations: [ref]\n";
    let section = "backfill:\n  maxReplicaLagSeconds: 3\n  replicas: [\"postgres://u@r1/d\"]\n";
    let refused = Config::parse(&format!("{postgres}{section}"), &BTreeMap::new()).unwrap_err().to_string();
    assert!(refused.contains("reads its replicas' lag on the primary (pg_stat_replication)"), "{refused}");
}

#[test]
fn desired_schemas_are_named_per_migration_directory_and_a_single_schema_never_gets_the_tenants() {
    let yaml = MINIMAL.replace("  - public", "  - schemas/public\n  - ref")
        + "tenantMigrations: [tenants]\nsingleScripts: [scripts/once]\n";
    let with = |section: &str| Config::parse(&format!("{yaml}{section}"), &BTreeMap::new());
    // One path: the tenants' alone; a single schema has none.
    let tenants_only = with("desiredSchema: schema/tenants.sql\n").unwrap();
    assert_eq!(tenants_only.desired_schema_for(None), Some("schema/tenants.sql"));
    assert_eq!(tenants_only.desired_schema_for(Some("public")), None);
    // By directory: the tenants' under a tenantMigrations directory, each
    // single schema's under its directory.
    let section = "desiredSchema:\n  tenants: schema/${T:-tenants}.sql\n  schemas/public/: schema/public.sql\n";
    let by_directory = with(section).unwrap();
    assert_eq!(by_directory.desired_schema_for(None), Some("schema/tenants.sql"));
    assert_eq!(by_directory.desired_schema_file(Some("public")), Some(("schema", "public.sql")));
    assert_eq!(by_directory.desired_schema_for(Some("ref")), None);
    let rendered = by_directory.render_redacted();
    assert!(
        rendered.contains("desiredSchema:\n  schemas/public: schema/public.sql\n  tenants: schema/tenants.sql\n"),
        "{rendered}"
    );
    let single_only = with("desiredSchema:\n  ref: schema/ref.sql\n").unwrap();
    assert_eq!(
        (single_only.desired_schema_for(None), single_only.desired_schema_for(Some("ref"))),
        (None, Some("schema/ref.sql"))
    );
    // Refused: a script directory or an unknown key, the file inside a
    // configured directory, the tenants twice.
    let refused = |section: &str| with(section).unwrap_err().to_string();
    assert_eq!(
        refused("desiredSchema:\n  scripts/once: schema/x.sql\n"),
        "property desiredSchema: \"scripts/once\" is not a migration directory: a desired schema is named under one \
         of schemas/public, ref, tenants"
    );
    assert!(refused("desiredSchema:\n  ref: ref/schema.sql\n").contains("is in the configured directory \"ref\""));
    let twice = "tenantMigrations: [tenants, more]\ndesiredSchema:\n  tenants: a.sql\n  more: b.sql\n";
    let refused = Config::parse(&format!("{}{twice}", MINIMAL), &BTreeMap::new()).unwrap_err().to_string();
    assert_eq!(
        refused,
        "property desiredSchema: \"tenants\": the tenants have one desired schema, named under one tenantMigrations \
         directory"
    );
}

#[test]
fn a_desired_schema_is_planned_for_a_single_directorys_schema_or_the_tenants_and_no_scripts() {
    let yaml = MINIMAL.replace("  - public", "  - schemas/public")
        + "tenantMigrations: [tenants]\nsingleScripts: [scripts/once]\n";
    let config = Config::parse(&yaml, &BTreeMap::new()).unwrap();
    assert_eq!(config.desired_schema_of("schemas/public"), Ok(Some("public")));
    assert_eq!(config.desired_schema_of("schemas/public/"), Ok(Some("public")));
    assert_eq!(config.desired_schema_of("tenants"), Ok(None));
    assert_eq!(
        config.desired_schema_of("scripts/once"),
        Err("scripts/once: a desired schema is planned for a migration directory's schema \
             (configured: schemas/public, tenants)"
            .to_string())
    );
}

#[test]
fn a_single_schema_directory_may_not_name_the_books_an_engines_schema_or_another_in_another_case() {
    let with = |driver: &str, singles: &str| {
        let yaml = format!("baseLocation: m\ndriver: {driver}\ndataSource: x.db\nsingleMigrations: [{singles}]\n");
        let yaml = match driver {
            "sqlite" => yaml,
            "postgres" => yaml.replace("x.db", "postgres://u@h/d"),
            _ => yaml.replace("x.db", "mysql://u@h/d"),
        };
        Config::parse(&yaml, &env(&[])).map(|_| ()).map_err(|e| e.to_string())
    };
    let svc = with("postgres", "ref, svc").unwrap_err();
    assert_eq!(
        svc,
        "property singleMigrations: schema of directory \"svc\": \"svc\" is the service's own schema, which holds its \
         records"
    );
    assert!(with("sqlite", "SVC").unwrap_err().contains("the service's own schema"));
    assert!(with("postgres", "pg_catalog").unwrap_err().contains("a schema postgres keeps for itself"));
    assert!(with("mysql", "mysql").unwrap_err().contains("a schema mysql keeps for itself"));
    assert!(with("sqlite", "main").unwrap_err().contains("keeps for itself"));
    let cased = with("postgres", "ref, sub/Ref").unwrap_err();
    assert!(cased.contains("\"Ref\" and \"ref\" (directory \"ref\") differ only in case"), "{cased}");
    // A database's default schema may hold single migrations; one schema
    // in two directories alike is one schema.
    assert_eq!(with("postgres", "public, ref"), Ok(()));
    let scripts =
        "baseLocation: m\ndriver: sqlite\ndataSource: x.db\nsingleMigrations: [ref]\nsingleScripts: [s/ref]\n";
    assert!(Config::parse(scripts, &env(&[])).is_ok());
    let scripts_cased = scripts.replace("s/ref", "s/REF");
    assert!(Config::parse(&scripts_cased, &env(&[])).unwrap_err().to_string().contains("differ only in case"));
}

#[test]
fn a_configuration_error_never_quotes_a_secret() {
    let broken = "baseLocation: m\ndriver: postgres\ndataSource: postgres://app:TopSecretPw1@127.0.0.1:5432/x\n\
                  singleMigrations: [ref\nwebHookHeaders:\n  - \"Authorization: Bearer HEADERSECRET789\"\n";
    let typed = "baseLocation: m\ndriver: sqlite\ndataSource: x.db\nsingleMigrations: [ref]\nauth:\n  auditKey: \
                 [AUDITKEYSECRET]\n";
    let twice = "baseLocation: m\ndriver: postgres\ndataSource: postgres://a:TopSecretPw1@h/x\ndataSource: \
                 postgres://a:TopSecretPw1@h/y\nsingleMigrations: [ref]\n";
    let ftp = "baseLocation: m\ndriver: sqlite\ndataSource: x.db\nsingleMigrations: [ref]\nwebHookURL: \
               \"ftp://u:S3CR3TA@h/x\"\n";
    for yaml in [broken, typed, twice, ftp] {
        let message = Config::parse(yaml, &env(&[])).unwrap_err().to_string();
        for secret in ["TopSecretPw1", "HEADERSECRET789", "AUDITKEYSECRET", "S3CR3TA"] {
            assert!(!message.contains(secret), "{message}");
        }
    }
    let located = Config::parse(broken, &env(&[])).unwrap_err().to_string();
    assert!(located.contains("line 5"), "{located}");
    let ftp = Config::parse(ftp, &env(&[])).unwrap_err().to_string();
    assert_eq!(ftp, "property webHookURL: \"ftp://***@h/***\" is not an http:// or https:// URL");
    assert_eq!(
        redact_data_source("postgres://u@h/d?sslmode=verify-full&sslpassword=SslPw11&x=1"),
        "postgres://u@h/d?sslmode=verify-full&sslpassword=***&x=1"
    );
}

#[test]
fn a_string_where_another_type_belongs_is_not_quoted() {
    let yaml = "baseLocation: m\ndriver: postgres\ndataSource: x\nshards: \"postgres://u:ShardPw9@h/db\"\nsingleMigrations: [ref]\n";
    let message = Config::parse(yaml, &env(&[])).unwrap_err().to_string();
    assert!(!message.contains("ShardPw9"), "{message}");
    let port = "baseLocation: m\ndriver: sqlite\ndataSource: x.db\nsingleMigrations: [ref]\nport: [\"PortSecret\"]\n";
    let message = Config::parse(port, &env(&[])).unwrap_err().to_string();
    assert!(!message.contains("PortSecret"), "{message}");
    assert_eq!(
        without_quoted_strings("invalid type: string \"pw\", expected u16 at x"),
        "invalid type: a string, expected u16 at x"
    );
}

#[test]
fn a_tenant_insert_on_sql_server_must_name_its_parameter() {
    let example = include_str!("../../../../examples/sqlserver/svc.yaml");
    let with_insert = |insert: &str| {
        let yaml = example.replace("singleMigrations:", &format!("tenantInsertSQL: \"{insert}\"\nsingleMigrations:"));
        Config::parse(&yaml, &env(&[("MSSQL_PASSWORD", "p")]))
    };
    let refused = with_insert("insert into svc.customers (name) values ($1)").unwrap_err().to_string();
    assert_eq!(
        refused,
        "property tenantInsertSQL: names no @P1: on SQL Server the new tenant's name is the parameter @P1, as in \
         insert into svc.svc_tenants (name) values (@P1)"
    );
    let accepted = with_insert("insert into svc.customers (name) values (@p1)").unwrap();
    assert_eq!(accepted.tenant_insert_sql, "insert into svc.customers (name) values (@p1)");
    // Elsewhere the engine itself refuses markers that do not match.
    let postgres = with("tenantInsertSQL: insert into t (name) values ('x')").unwrap();
    assert_eq!(postgres.tenant_insert_sql, "insert into t (name) values ('x')");
}
