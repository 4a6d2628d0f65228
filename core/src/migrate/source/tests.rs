use crate::migrate::config::Config;
use std::collections::BTreeMap;

use crate::migrate::format::SortKey;
use crate::migrate::source::*;

fn config() -> Config {
    let yaml = "baseLocation: m\ndriver: sqlite\ndataSource: x\n\
                singleMigrations: [ref, config]\ntenantMigrations: [tenants]\n\
                singleScripts: [config-scripts]\ntenantScripts: [tenants-scripts]\n";
    Config::parse(yaml, &BTreeMap::new()).unwrap()
}

fn file(directory: &str, name: &str) -> SourceFile {
    SourceFile { directory: directory.into(), name: name.into(), bytes: format!("-- {directory}/{name}").into_bytes() }
}

#[test]
fn checksum_is_lowercase_hex_sha256() {
    assert_eq!(checksum(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_eq!(checksum(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

#[test]
fn derives_every_field() {
    let migrations = source_migrations(config().directories(), vec![file("tenants", "201602220001.sql")]).unwrap();
    assert_eq!(
        migrations,
        vec![SourceMigration {
            name: "201602220001.sql".into(),
            migration_type: MigrationType::TenantMigration,
            source_dir: "tenants".into(),
            file: "tenants/201602220001.sql".into(),
            contents: "-- tenants/201602220001.sql".into(),
            checksum: checksum(b"-- tenants/201602220001.sql"),
            forward: "-- tenants/201602220001.sql".into(),
            no_transaction: false,
            format: Format::Strata,
            down: None,
            order: SortKey::Name,
            in_its_schema: false,
            repeatable: false,
        }]
    );
}

#[test]
fn orders_like_the_peer() {
    let files = vec![
        file("tenants-scripts", "a.sql"),
        file("config-scripts", "b.sql"),
        file("config-scripts", "a.sql"),
        file("tenants", "002.sql"),
        file("config", "002.sql"),
        file("ref", "002.sql"),
        file("config", "001.sql"),
        file("tenants", "001.sql"),
        file("ref", "003.sql"),
        file("tenants", "B.sql"),
        file("tenants", "a.sql"),
    ];
    let order: Vec<String> =
        source_migrations(config().directories(), files).unwrap().into_iter().map(|m| m.file).collect();
    assert_eq!(
        order,
        [
            "config/001.sql",
            "tenants/001.sql",
            "ref/002.sql",
            "config/002.sql",
            "tenants/002.sql",
            "ref/003.sql",
            "tenants/B.sql",
            "tenants/a.sql",
            "config-scripts/a.sql",
            "config-scripts/b.sql",
            "tenants-scripts/a.sql",
        ]
    );
}

#[test]
fn skips_dot_files_and_refuses_bad_input() {
    let migrations =
        source_migrations(config().directories(), vec![file("ref", ".gitkeep"), file("ref", "1.sql")]).unwrap();
    assert_eq!(migrations.len(), 1);
    assert_eq!(
        source_migrations(config().directories(), vec![file("other", "1.sql")]),
        Err(SourceError::UnknownDirectory("other".into()))
    );
    assert_eq!(
        source_migrations(config().directories(), vec![file("ref", "a/b.sql")]),
        Err(SourceError::BadFileName { directory: "ref".into(), name: "a/b.sql".into() })
    );
    let binary = SourceFile { directory: "ref".into(), name: "x.sql".into(), bytes: vec![b'a', 0xff] };
    assert_eq!(
        source_migrations(config().directories(), vec![binary]),
        Err(SourceError::NotUtf8 { file: "ref/x.sql".into(), valid_up_to: 1 })
    );
    assert_eq!(
        source_migrations(config().directories(), vec![file("ref", "1.sql"), file("ref", "1.sql")]),
        Err(SourceError::Duplicate("ref/1.sql".into()))
    );
}

#[test]
fn single_schema_is_the_last_path_element() {
    let yaml =
        "baseLocation: m\ndriver: sqlite\ndataSource: x\nsingleMigrations: [db/schemas/ref]\ntenantMigrations: [t]\n";
    let config = Config::parse(yaml, &BTreeMap::new()).unwrap();
    let migrations =
        source_migrations(config.directories(), vec![file("db/schemas/ref", "1.sql"), file("t", "1.sql")]).unwrap();
    assert_eq!(migrations[0].single_schema(), Some("ref"));
    assert_eq!(migrations[0].file, "db/schemas/ref/1.sql");
    assert_eq!(migrations[1].single_schema(), None);
}

#[test]
fn sql_for_replaces_every_placeholder() {
    let migrations = source_migrations(config().directories(), vec![file("tenants", "1.sql")]).unwrap();
    let mut migration = migrations[0].clone();
    migration.forward = "create table {schema}.a (x int); insert into {schema}.a values (1); -- {schema}".into();
    assert_eq!(
        migration.sql_for("{schema}", "t-1"),
        "create table t-1.a (x int); insert into t-1.a values (1); -- t-1"
    );
    assert_eq!(migration.sql_for(":s", "t"), migration.forward);
}

#[test]
fn a_sync_through_a_file_keeps_the_migrations_up_to_it_and_no_script() {
    let files = vec![
        file("ref", "001.sql"),
        file("tenants", "002.sql"),
        file("ref", "003.sql"),
        file("config-scripts", "views.sql"),
        file("tenants", "004.sql"),
    ];
    let sources = source_migrations(config().directories(), files).unwrap();
    let kept: Vec<String> = through(sources.clone(), "tenants/002.sql").unwrap().into_iter().map(|m| m.file).collect();
    assert_eq!(kept, ["ref/001.sql", "tenants/002.sql"]);
    let all: Vec<String> = through(sources.clone(), "tenants/004.sql").unwrap().into_iter().map(|m| m.file).collect();
    assert_eq!(all, ["ref/001.sql", "tenants/002.sql", "ref/003.sql", "tenants/004.sql"]);
    assert_eq!(
        through(sources.clone(), "config-scripts/views.sql").unwrap_err(),
        SourceError::NotAMigration("config-scripts/views.sql".into())
    );
    assert!(through(sources, "ref/999.sql").unwrap_err().to_string().contains("not a migration of the sources"));
}
