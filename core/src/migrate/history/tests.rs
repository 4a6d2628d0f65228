use crate::migrate::MigrationType::{self, *};
use crate::migrate::history::*;
use crate::migrate::plan::tests::fresh;
use crate::migrate::plan::{Action, Plan};
use crate::migrate::source::SourceMigration;

fn source(dir: &str, name: &str, migration_type: MigrationType) -> SourceMigration {
    SourceMigration::plain(dir, name, migration_type, "select 1;")
}

/// A Sync over nothing recorded: every file pending in every schema.
fn sync_plan(sources: &[SourceMigration], tenants: &[&str]) -> Plan {
    fresh(sources, tenants, Action::Sync)
}

fn history(schema: &str, tool: Tool, rows: &[(&str, &str)]) -> Found {
    Found { schema: schema.into(), tool, rows: rows.iter().map(|(v, e)| (v.to_string(), e.to_string())).collect() }
}

/// Per schema of `plan`, the files it records.
fn recorded(plan: &Plan, sources: &[SourceMigration]) -> Vec<(String, Vec<String>)> {
    let mut by_schema: Vec<(String, Vec<String>)> = plan.schemas.iter().map(|s| (s.clone(), Vec::new())).collect();
    for step in plan.steps.iter() {
        assert!(!step.execute, "a Sync runs nothing");
        by_schema[step.schema as usize].1.push(sources[step.migration as usize].file.clone());
    }
    by_schema
}

fn dbmate_sources() -> Vec<SourceMigration> {
    vec![
        source("ref", "20240101000000_ref.sql", SingleMigration),
        source("tenants", "20240101000000_users.sql", TenantMigration),
        source("tenants", "20240102000000_orders.sql", TenantMigration),
        source("tenants", "20240103000000_index.sql", TenantMigration),
        source("tenants-scripts", "refresh.sql", TenantScript),
    ]
}

#[test]
fn each_tenant_records_what_its_own_history_says_ran() {
    let sources = dbmate_sources();
    let plan = sync_plan(&sources, &["t1", "t2", "t3"]);
    let histories = vec![
        history("ref", Tool::Dbmate, &[("20240101000000", "applied")]),
        history(
            "t1",
            Tool::Dbmate,
            &[("20240101000000", "applied"), ("20240102000000", "applied"), ("20240103000000", "applied")],
        ),
        history("t2", Tool::Dbmate, &[("20240101000000", "applied")]),
    ];
    let plan = adopt(plan, &sources, histories, false, &["ref".to_string()]).unwrap();
    let adopted = &plan.diagnostics.adopted;
    assert_eq!(
        recorded(&plan, &sources),
        [
            ("ref", vec!["ref/20240101000000_ref.sql"]),
            (
                "t1",
                vec![
                    "tenants/20240101000000_users.sql",
                    "tenants/20240102000000_orders.sql",
                    "tenants/20240103000000_index.sql",
                    "tenants-scripts/refresh.sql"
                ]
            ),
            ("t2", vec!["tenants/20240101000000_users.sql", "tenants-scripts/refresh.sql"]),
            ("t3", vec!["tenants-scripts/refresh.sql"]),
        ]
        .map(|(s, f)| (s.to_string(), f.into_iter().map(String::from).collect::<Vec<_>>()))
    );
    assert_eq!((plan.counts.tenant_migrations, plan.counts.tenant_migrations_total), (3, 4));
    assert_eq!(
        adopted.read,
        vec![("dbmate (schema_migrations)".to_string(), vec!["ref".into(), "t1".into(), "t2".into()])]
    );
    assert_eq!(adopted.without, vec!["t3".to_string()]);
}

#[test]
fn no_history_anywhere_leaves_migrators_sync() {
    let sources = dbmate_sources();
    let plan = sync_plan(&sources, &["t1"]);
    let kept = adopt(plan.clone(), &sources, Vec::new(), false, &[]).unwrap();
    assert_eq!(kept, plan);
}

#[test]
fn a_shard_without_histories_records_no_tenant_file_when_another_shard_found_some() {
    let sources = dbmate_sources();
    let plan = sync_plan(&sources, &["t7", "t8"]);
    let kept = adopt(plan.clone(), &sources, Vec::new(), true, &["ref".to_string()]).unwrap();
    // The single schema's file is recorded (it exists, without a history of
    // its own: migrator's Sync), the tenant script kept, no tenant migration.
    assert_eq!(recorded(&plan, &sources)[1].1.len(), 4);
    assert_eq!(
        recorded(&kept, &sources),
        recorded(&plan, &sources)
            .into_iter()
            .map(|(schema, files)| {
                let files = files.into_iter().filter(|file| schema == "ref" || !file.starts_with("tenants/")).collect();
                (schema, files)
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(kept.diagnostics.adopted.without, vec!["t7".to_string(), "t8".to_string()]);
    assert!(kept.diagnostics.adopted.read.is_empty());
}

#[test]
fn golang_migrates_one_row_covers_every_version_up_to_it_and_dirty_is_refused() {
    let sources = vec![
        source("tenants", "1_users.up.sql", TenantMigration),
        source("tenants", "2_orders.up.sql", TenantMigration),
        source("tenants", "10_index.up.sql", TenantMigration),
    ];
    let plan = sync_plan(&sources, &["t1", "t2"]);
    let histories =
        vec![history("t1", Tool::GolangMigrate, &[("2", "through")]), history("t2", Tool::GolangMigrate, &[])];
    let kept = adopt(plan.clone(), &sources, histories, false, &["ref".to_string()]).unwrap();
    assert_eq!(
        recorded(&kept, &sources),
        vec![("t1".to_string(), vec!["tenants/1_users.up.sql".to_string(), "tenants/2_orders.up.sql".into()])]
    );
    let dirty = vec![history("t1", Tool::GolangMigrate, &[("10", "dirty")])];
    let error = adopt(plan, &sources, dirty, false, &["ref".to_string()]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "t1: golang-migrate's history (schema_migrations) says version 10 failed or ran in part; finish or undo it \
         with golang-migrate first, or record by hand with `strata apply --sync --to FILE`"
    );
}

#[test]
fn gooses_undone_rows_and_version_zero_are_not_recorded() {
    let sources =
        vec![source("tenants", "00001_a.sql", TenantMigration), source("tenants", "00002_b.sql", TenantMigration)];
    let plan = sync_plan(&sources, &["t1"]);
    let rows = [("0", "applied"), ("1", "applied"), ("2", "applied"), ("2", "undone")];
    let kept = adopt(plan, &sources, vec![history("t1", Tool::Goose, &rows)], false, &["ref".to_string()]).unwrap();
    assert_eq!(recorded(&kept, &sources), vec![("t1".to_string(), vec!["tenants/00001_a.sql".to_string()])]);
}

#[test]
fn flyway_versions_match_however_spelled_and_a_baseline_covers_what_sorts_before_it() {
    let sources = vec![
        source("tenants", "V1__a.sql", TenantMigration),
        source("tenants", "V1_1__b.sql", TenantMigration),
        source("tenants", "V1.10__c.sql", TenantMigration),
        source("tenants", "V2__d.sql", TenantMigration),
        source("tenants", "V3__e.sql", TenantMigration),
    ];
    let plan = sync_plan(&sources, &["t1", "t2"]);
    let histories = vec![
        history("t1", Tool::Flyway, &[("", "other"), ("1.1", "through"), ("01.10", "applied"), ("3", "applied")]),
        history("t2", Tool::Flyway, &[("2", "applied"), ("2", "undone")]),
    ];
    let kept = adopt(plan, &sources, histories, false, &["ref".to_string()]).unwrap();
    let t1 = ["tenants/V1__a.sql", "tenants/V1_1__b.sql", "tenants/V1.10__c.sql", "tenants/V3__e.sql"];
    assert_eq!(recorded(&kept, &sources), vec![("t1".to_string(), t1.map(String::from).to_vec())]);
}

#[test]
fn atlas_versions_are_the_names_before_the_underscore_and_a_partial_revision_is_refused() {
    let sources = vec![
        source("tenants", "20240101_init.sql", TenantMigration),
        source("tenants", "20240102.sql", TenantMigration),
    ];
    let plan = sync_plan(&sources, &["t1", "t2"]);
    let ok = vec![history("t1", Tool::Atlas, &[(".atlas_cleanup", "applied"), ("20240101", "applied")])];
    let kept = adopt(plan.clone(), &sources, ok, false, &["ref".to_string()]).unwrap();
    assert_eq!(recorded(&kept, &sources), vec![("t1".to_string(), vec!["tenants/20240101_init.sql".to_string()])]);
    let partial = vec![history("t2", Tool::Atlas, &[("20240102", "dirty")])];
    assert!(matches!(
        &adopt(plan, &sources, partial, false, &["ref".to_string()]).unwrap_err().0[..],
        [HistoryError::Dirty { .. }]
    ));
}

#[test]
fn every_problem_of_every_schema_is_refused_at_once() {
    let mut sources = dbmate_sources();
    sources.push(source("tenants", "20240103000000_again.sql", TenantMigration));
    let plan = sync_plan(&sources, &["t1", "t2", "t3"]);
    let histories = vec![
        history("t1", Tool::Dbmate, &[("20240101000000", "applied")]),
        history("t2", Tool::Dbmate, &[("20991231000000", "applied")]),
        history("t3", Tool::Dbmate, &[]),
        history("t3", Tool::Sqlx, &[]),
    ];
    let errors = adopt(plan, &sources, histories, false, &["ref".to_string()]).unwrap_err().0;
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "t3: holds both dbmate's history (schema_migrations) and sqlx's (_sqlx_migrations); drop the stale one",
            "tenants/20240103000000_index.sql and tenants/20240103000000_again.sql are both version 20240103000000 to \
             dbmate; rename one",
        ]
    );
    let sources = dbmate_sources();
    let plan = sync_plan(&sources, &["t2"]);
    let unknown = vec![history("t2", Tool::Dbmate, &[("20991231000000", "applied")])];
    assert!(
        matches!(&adopt(plan, &sources, unknown, false, &["ref".to_string()]).unwrap_err().0[..], [HistoryError::NoFile { version, .. }]
        if version == "20991231000000")
    );
}

#[test]
fn each_tool_names_its_files_by_its_own_rule() {
    let n = |parts: &[&str]| Some(Version::Numbered(parts.iter().map(|p| p.to_string()).collect()));
    assert_eq!(Tool::Dbmate.version_of("20240101000000_users.sql"), n(&["20240101000000"]));
    assert_eq!(Tool::Sqlx.version_of("0001_users.up.sql"), n(&["1"]));
    assert_eq!(Tool::Goose.version_of("readme.sql"), None);
    assert_eq!(Tool::Flyway.version_of("V1_2__x.sql"), n(&["1", "2"]));
    assert_eq!(Tool::Flyway.version_of("R__view.sql"), None);
    assert_eq!(Tool::Atlas.version_of("v2_x.sql"), Some(Version::Text("v2".into())));
    assert_eq!(Tool::of_probed("schema_migrations:dirty"), Some(Tool::GolangMigrate));
    assert_eq!(Tool::of_probed("schema_migrations"), Some(Tool::Dbmate));
    assert_eq!(Tool::of_probed("svc_migrations"), None);
}

#[test]
fn histories_are_read_on_postgres_and_mysql_with_names_as_literals() {
    let schemas = vec!["t1".to_string(), "it's".to_string()];
    let postgres = probes(Driver::Postgres, &schemas);
    assert_eq!(postgres.len(), 1);
    assert!(postgres[0].contains("c.relname in ('schema_migrations', '_sqlx_migrations',"), "{}", postgres[0]);
    let mysql = probes(Driver::Mysql, &schemas);
    assert_eq!(mysql.len(), 1);
    assert!(mysql[0].contains("t.table_schema in ('t1')"), "{}", mysql[0]);
    let many: Vec<String> = (0..1001).map(|i| format!("t{i}")).collect();
    assert_eq!(probes(Driver::Mysql, &many).len(), 3);
    assert!(probes(Driver::Sqlite, &schemas).is_empty());
    assert!(probes(Driver::Mysql, &["x\\".to_string()]).is_empty());
    let histories = vec![("t1".to_string(), Tool::GolangMigrate), ("t2".to_string(), Tool::Goose)];
    assert_eq!(
        read(Driver::Mysql, &histories),
        "select cast('t1' as char), cast(version as char), case when dirty <> 0 then 'dirty' else 'through' end, \
         cast(0 as signed) from `t1`.`schema_migrations` union all select cast('t2' as char), cast(version_id as \
         char), case when is_applied <> 0 then 'applied' else 'undone' end, cast(id as signed) from \
         `t2`.`goose_db_version`"
    );
    let rows = vec![
        ("t2".to_string(), "1".to_string(), "undone".to_string(), 3),
        ("t2".to_string(), "1".to_string(), "applied".to_string(), 2),
    ];
    let found = found(&histories, rows);
    assert_eq!(found[0].rows, vec![]);
    assert_eq!(found[1].rows, vec![("1".to_string(), "applied".to_string()), ("1".to_string(), "undone".into())]);
}

#[test]
fn a_single_schema_without_a_history_of_its_own_keeps_migrators_sync() {
    let sources =
        vec![source("ref", "001_ref.sql", SingleMigration), source("tenants", "1_users.sql", TenantMigration)];
    let plan = sync_plan(&sources, &["t1", "t2"]);
    let kept = adopt(plan, &sources, vec![history("t1", Tool::Sqlx, &[("1", "applied")])], false, &["ref".to_string()])
        .unwrap();
    assert_eq!(
        recorded(&kept, &sources),
        vec![
            ("ref".to_string(), vec!["ref/001_ref.sql".to_string()]),
            ("t1".to_string(), vec!["tenants/1_users.sql".to_string()]),
        ]
    );
    assert_eq!(kept.diagnostics.adopted.without, vec!["t2".to_string()]);
}

#[test]
fn flyway_checksums_are_flyways_and_a_file_changed_since_it_ran_is_refused() {
    // Flyway's own figures: CRC-32 over the lines, line ends and a BOM aside.
    assert_eq!(flyway_checksum("create table a(id int);"), -1193849269);
    assert_eq!(flyway_checksum("create table a(id int);\n"), -1193849269);
    assert_eq!(flyway_checksum("a\r\nb\r\n"), flyway_checksum("a\nb"));
    assert_eq!(flyway_checksum("\u{feff}a\nb"), flyway_checksum("a\nb"));
    // Only the lines' characters count (Flyway's rule: joined lines sum alike).
    assert_eq!(flyway_checksum("a\nb"), flyway_checksum("ab\n"));
    assert_ne!(flyway_checksum("a\nb"), flyway_checksum("a\nc"));
    let sources = vec![
        SourceMigration::plain("tenants", "V1__a.sql", TenantMigration, "create table a(id int);"),
        source("tenants", "V2__b.sql", TenantMigration),
    ];
    let plan = sync_plan(&sources, &["t1"]);
    let same = vec![history("t1", Tool::Flyway, &[("1", "applied -1193849269"), ("2", "applied")])];
    let kept = adopt(plan.clone(), &sources, same, false, &["ref".to_string()]).unwrap();
    assert_eq!(recorded(&kept, &sources)[0].1, ["tenants/V1__a.sql", "tenants/V2__b.sql"]);
    let changed = vec![history("t1", Tool::Flyway, &[("1", "applied 12345")])];
    let refused = adopt(plan, &sources, changed, false, &["ref".to_string()]).unwrap_err().to_string();
    assert_eq!(
        refused,
        "t1: Flyway's history (flyway_schema_history) records version 1 with checksum 12345, but tenants/V1__a.sql \
         now has checksum -1193849269 (computed as Flyway computes it): the file changed after Flyway ran it; \
         restore it, or record by hand with `strata apply --sync --to FILE`"
    );
}

#[test]
fn a_single_schema_that_does_not_exist_records_nothing() {
    let sources =
        vec![source("ref", "001_ref.sql", SingleMigration), source("tenants", "1_users.sql", TenantMigration)];
    let plan = sync_plan(&sources, &["t1", "t2"]);
    let kept = adopt(plan, &sources, vec![history("t1", Tool::Sqlx, &[("1", "applied")])], false, &[]).unwrap();
    assert_eq!(recorded(&kept, &sources), vec![("t1".to_string(), vec!["tenants/1_users.sql".to_string()])]);
    assert_eq!(kept.diagnostics.adopted.without, vec!["ref".to_string(), "t2".to_string()]);
    assert_eq!(
        existing(Driver::Postgres, &["ref", "o'k"]).unwrap(),
        "select nspname::text from pg_namespace where nspname in ('ref')"
    );
    assert_eq!(existing(Driver::Sqlite, &["ref"]), None);
}

#[test]
fn a_flyway_repeatable_file_is_recorded_only_where_its_text_now_ran() {
    let mut view = source("tenants", "R__view.sql", TenantScript);
    view.repeatable = true;
    let sources = vec![source("tenants", "V1__m1.sql", TenantMigration), view];
    let now = flyway_checksum(&sources[1].contents).to_string();
    let plan = sync_plan(&sources, &["t1", "t2", "t3", "t4", "t5"]);
    let applied = ("1", format!("applied {}", flyway_checksum(&sources[0].contents)));
    let histories = vec![
        history("t1", Tool::Flyway, &[(applied.0, &applied.1), ("R__view.sql", &format!("repeatable {now}"))]),
        // Changed since it ran: it runs at the next apply, as Flyway would.
        history("t2", Tool::Flyway, &[(applied.0, &applied.1), ("R__view.sql", "repeatable 999")]),
        // Never ran there.
        history("t3", Tool::Flyway, &[(applied.0, &applied.1)]),
        // Ran, then its rows were deleted (flyway repair/delete).
        history(
            "t4",
            Tool::Flyway,
            &[(applied.0, &applied.1), ("R__view.sql", &format!("repeatable {now}")), ("R__view.sql", "unrepeated")],
        ),
        // The last row of the script decides.
        history(
            "t5",
            Tool::Flyway,
            &[
                (applied.0, &applied.1),
                ("R__view.sql", "repeatable 1"),
                ("sub/R__view.sql", &format!("repeatable {now}")),
            ],
        ),
    ];
    let kept = adopt(plan, &sources, histories, false, &[]).unwrap();
    let with_view: Vec<String> = recorded(&kept, &sources)
        .into_iter()
        .filter(|(_, files)| files.contains(&"tenants/R__view.sql".to_string()))
        .map(|(schema, _)| schema)
        .collect();
    assert_eq!(with_view, ["t1", "t5"]);
}

#[test]
fn golang_migrates_one_row_must_be_a_file_and_be_one() {
    let sources = vec![
        source("tenants", "1_m1.up.sql", TenantMigration),
        source("tenants", "2_m2.up.sql", TenantMigration),
        source("tenants", "10_m10.up.sql", TenantMigration),
    ];
    let plan = sync_plan(&sources, &["t1", "t2", "t3"]);
    let histories = vec![
        history("t1", Tool::GolangMigrate, &[("2", "through")]),
        history("t2", Tool::GolangMigrate, &[("5", "through")]),
        history("t3", Tool::GolangMigrate, &[("1", "through"), ("10", "through")]),
    ];
    let errors = adopt(plan.clone(), &sources, histories, false, &[]).unwrap_err().0;
    assert!(matches!(&errors[0], HistoryError::NoFile { schema, version, .. } if schema == "t2" && version == "5"));
    assert!(matches!(&errors[1], HistoryError::SeveralRows { schema, rows: 2, .. } if schema == "t3"));
    assert!(errors[1].to_string().contains("holds 2 rows where golang-migrate keeps one"), "{}", errors[1]);
    let kept =
        adopt(plan, &sources, vec![history("t1", Tool::GolangMigrate, &[("2", "through")])], false, &[]).unwrap();
    assert_eq!(recorded(&kept, &sources)[0].1, ["tenants/1_m1.up.sql", "tenants/2_m2.up.sql"]);
}

#[test]
fn an_sqlx_file_changed_since_sqlx_ran_it_is_refused() {
    let sources = vec![source("tenants", "1_m1.sql", TenantMigration), source("tenants", "2_m2.sql", TenantMigration)];
    let plan = sync_plan(&sources, &["t1"]);
    let sum = sqlx_checksum("select 1;");
    assert_eq!(sum.len(), 96);
    let same = vec![history("t1", Tool::Sqlx, &[("1", &format!("applied {sum}"))])];
    assert_eq!(
        recorded(&adopt(plan.clone(), &sources, same, false, &[]).unwrap(), &sources)[0].1,
        ["tenants/1_m1.sql"]
    );
    let changed = vec![history("t1", Tool::Sqlx, &[("1", "applied deadbeef")])];
    let refused = adopt(plan, &sources, changed, false, &[]).unwrap_err().to_string();
    assert!(
        refused.contains("records version 1 with checksum deadbeef, but tenants/1_m1.sql now has checksum"),
        "{refused}"
    );
    assert!(refused.contains(&sum), "{refused}");
}
