use crate::migrate::plan::*;

use crate::migrate::plan::OutOfOrderPolicy;

/// A source migration whose contents name it (shared with other modules' tests).
pub(crate) fn migration(dir: &str, name: &str, migration_type: MigrationType) -> SourceMigration {
    let contents = format!("-- {dir}/{name}");
    SourceMigration::plain(dir, name, migration_type, &contents)
}

/// A plan over nothing recorded, every tenant and single schema (shared
/// with other modules' tests).
pub(crate) fn fresh(sources: &[SourceMigration], tenants: &[&str], action: Action) -> Plan {
    let tenants: Vec<String> = tenants.iter().map(|t| t.to_string()).collect();
    plan(PlanInput {
        sources,
        applied: &[],
        tenants: &tenants,
        target: &Target::AllSchemas,
        action,
        out_of_order: OutOfOrderPolicy::Warn,
    })
    .unwrap()
}

fn sources() -> Vec<SourceMigration> {
    use MigrationType::*;
    vec![
        migration("config", "001.sql", SingleMigration),
        migration("tenants", "001.sql", TenantMigration),
        migration("config", "002.sql", SingleMigration),
        migration("tenants", "002.sql", TenantMigration),
        migration("config-scripts", "a.sql", SingleScript),
        migration("tenants-scripts", "a.sql", TenantScript),
    ]
}

/// The row the books hold for `source` applied in `schema` (shared with other modules' tests).
pub(crate) fn applied(source: &SourceMigration, schema: &str) -> AppliedMigration {
    AppliedMigration {
        file: source.file.clone(),
        name: source.name.clone(),
        schema: schema.into(),
        migration_type: source.migration_type,
        checksum: source.checksum.clone(),
    }
}

/// An Apply request over the given state.
fn apply_input<'a>(
    sources: &'a [SourceMigration],
    applied: &'a [AppliedMigration],
    tenants: &'a [String],
    target: &'a Target,
) -> PlanInput<'a> {
    PlanInput { sources, applied, tenants, target, action: Action::Apply, out_of_order: OutOfOrderPolicy::Warn }
}

/// A row recorded for `config/009.sql`, a file no longer in the source.
fn deleted_file_row() -> AppliedMigration {
    AppliedMigration {
        file: "config/009.sql".into(),
        name: "009.sql".into(),
        schema: "config".into(),
        migration_type: MigrationType::SingleMigration,
        checksum: "x".into(),
    }
}

fn tenants() -> Vec<String> {
    vec!["abc".into(), "def".into()]
}

/// `(file, schema, execute)` for every step.
fn rendered(plan: &Plan, sources: &[SourceMigration]) -> Vec<(String, String, bool)> {
    plan.steps
        .iter()
        .map(|s| (sources[s.migration as usize].file.clone(), plan.schema_of(s).to_string(), s.execute))
        .collect()
}

fn steps(list: &[(&str, &str)], execute: bool) -> Vec<(String, String, bool)> {
    list.iter().map(|(f, s)| (f.to_string(), s.to_string(), execute)).collect()
}

#[test]
fn fresh_database_plans_everything_migration_major() {
    let sources = sources();
    let tenants = tenants();
    let input = apply_input(&sources, &[], &tenants, &Target::AllSchemas);
    let plan = plan(input).unwrap();
    assert_eq!(
        rendered(&plan, &sources),
        steps(
            &[
                ("config/001.sql", "config"),
                ("tenants/001.sql", "abc"),
                ("tenants/001.sql", "def"),
                ("config/002.sql", "config"),
                ("tenants/002.sql", "abc"),
                ("tenants/002.sql", "def"),
                ("config-scripts/a.sql", "config-scripts"),
                ("tenants-scripts/a.sql", "abc"),
                ("tenants-scripts/a.sql", "def"),
            ],
            true
        )
    );
    assert_eq!(
        plan.counts,
        Counts {
            tenants: 2,
            single_migrations: 2,
            tenant_migrations: 2,
            tenant_migrations_total: 4,
            single_scripts: 1,
            tenant_scripts: 1,
            tenant_scripts_total: 2
        }
    );
    assert_eq!(plan.counts.migrations_grand_total(), 6);
    assert_eq!(plan.counts.scripts_grand_total(), 3);
    assert_eq!(plan.schemas, ["config", "abc", "def", "config-scripts"]);
    assert!(plan.diagnostics == Diagnostics::default());
    assert_eq!(plan.new_tenant, None);
}

#[test]
fn counts_of_a_part_count_its_steps_over_the_tenants_the_plan_covers() {
    let sources = sources();
    let tenants = tenants();
    let plan = plan(apply_input(&sources, &[], &tenants, &Target::AllSchemas)).unwrap();
    // config/001 and abc's tenants/001: a version that stopped there.
    let counts = plan.counts_of(&sources, [0, 1]);
    assert_eq!(
        counts,
        Counts {
            tenants: 2,
            single_migrations: 1,
            tenant_migrations: 1,
            tenant_migrations_total: 1,
            ..Counts::default()
        }
    );
    assert_eq!(plan.counts_of(&sources, 0..9), plan.counts);
}

#[test]
fn applied_migrations_are_skipped_and_scripts_always_run() {
    let sources = sources();
    let tenants = tenants();
    let mut recorded: Vec<AppliedMigration> = vec![
        applied(&sources[0], "config"),
        applied(&sources[1], "abc"),
        applied(&sources[1], "def"),
        applied(&sources[2], "config"),
        applied(&sources[3], "abc"),
        applied(&sources[4], "config-scripts"),
    ];
    let input = apply_input(&sources, &recorded, &tenants, &Target::AllSchemas);
    let plan_one = plan(input).unwrap();
    assert_eq!(
        rendered(&plan_one, &sources),
        steps(
            &[
                ("tenants/002.sql", "def"),
                ("config-scripts/a.sql", "config-scripts"),
                ("tenants-scripts/a.sql", "abc"),
                ("tenants-scripts/a.sql", "def"),
            ],
            true
        )
    );
    assert_eq!(plan_one.counts.tenant_migrations, 1);
    assert_eq!(plan_one.counts.tenant_migrations_total, 1);
    assert_eq!(plan_one.counts.single_migrations, 0);

    recorded.push(applied(&sources[3], "def"));
    let only_scripts = [sources[0].clone(), sources[1].clone()];
    let input = apply_input(&only_scripts, &recorded, &tenants, &Target::AllSchemas);
    let nothing = plan(input).unwrap();
    assert!(nothing.is_empty());
    assert_eq!(nothing.counts, Counts { tenants: 2, ..Counts::default() });
}

#[test]
fn sync_records_without_executing() {
    let sources = sources();
    let tenants = tenants();
    let input = PlanInput { action: Action::Sync, ..apply_input(&sources, &[], &tenants, &Target::AllSchemas) };
    let plan = plan(input).unwrap();
    assert_eq!(plan.steps.len(), 9);
    assert!(plan.steps.iter().all(|s| !s.execute));
}

#[test]
fn new_tenant_gets_only_tenant_kinds() {
    let sources = sources();
    let tenants = tenants();
    let target = Target::NewTenant("new-1".into());
    let input = apply_input(&sources, &[], &tenants, &target);
    let plan = plan(input).unwrap();
    assert_eq!(
        rendered(&plan, &sources),
        steps(&[("tenants/001.sql", "new-1"), ("tenants/002.sql", "new-1"), ("tenants-scripts/a.sql", "new-1")], true)
    );
    assert_eq!(plan.new_tenant.as_deref(), Some("new-1"));
    assert_eq!(plan.counts.tenants, 1);
    assert_eq!(plan.counts.tenant_migrations_total, 2);
    assert_eq!(plan.counts.single_migrations, 0);

    let only_single = [sources[0].clone()];
    let input = apply_input(&only_single, &[], &tenants, &target);
    let bare = super::plan(input).unwrap();
    assert!(bare.steps.is_empty() && !bare.is_empty(), "a new tenant with no tenant migrations is still a change");
    assert_eq!(bare.schemas, ["new-1"]);
}

#[test]
fn new_tenant_name_is_validated_and_unique() {
    let sources = sources();
    let tenants = tenants();
    let hostile = Target::NewTenant("a\"; drop table svc.svc_versions; --".into());
    let input = apply_input(&sources, &[], &tenants, &hostile);
    assert!(matches!(plan(input), Err(PlanError::InvalidTenantName(IdentError::InvalidCharacter { found: '"', .. }))));
    let existing = Target::NewTenant("abc".into());
    let input = apply_input(&sources, &[], &tenants, &existing);
    assert_eq!(plan(input), Err(PlanError::TenantExists("abc".into())));
    // Letter case aside: SQL Server's default collation reads `ABC` as abc.
    let cased = Target::NewTenant("ABC".into());
    assert_eq!(plan(apply_input(&sources, &[], &tenants, &cased)), Err(PlanError::TenantExists("abc".into())));
}

#[test]
fn existing_tenants_with_invalid_names_are_refused() {
    let sources = sources();
    let tenants = vec!["ok".to_string(), "x; drop".to_string()];
    let input = apply_input(&sources, &[], &tenants, &Target::AllSchemas);
    assert!(matches!(plan(input), Err(PlanError::InvalidExistingTenant(_))));
}

#[test]
fn drift_refuses_apply_and_lists_every_file() {
    let sources = sources();
    let tenants = tenants();
    let mut old_one = applied(&sources[0], "config");
    old_one.checksum = "0".repeat(64);
    let mut old_two = applied(&sources[1], "abc");
    old_two.checksum = "1".repeat(64);
    let mut old_three = applied(&sources[1], "def");
    old_three.checksum = "2".repeat(64);
    let mut script = applied(&sources[4], "config-scripts");
    script.checksum = "3".repeat(64);
    let recorded = vec![old_one, old_two, old_three, script];
    let input = apply_input(&sources, &recorded, &tenants, &Target::AllSchemas);
    let err = plan(input).unwrap_err();
    let expected = vec![
        Drift {
            file: "config/001.sql".into(),
            source_checksum: sources[0].checksum.clone(),
            recorded_checksums: vec!["0".repeat(64)],
            schemas: vec!["config".into()],
        },
        Drift {
            file: "tenants/001.sql".into(),
            source_checksum: sources[1].checksum.clone(),
            recorded_checksums: vec!["1".repeat(64), "2".repeat(64)],
            schemas: vec!["abc".into(), "def".into()],
        },
    ];
    assert_eq!(err, PlanError::Drift(expected.clone()));
    assert_eq!(
        err.to_string(),
        "2 applied migration(s) changed since they were applied: config/001.sql, tenants/001.sql; restore the \
         file(s), or record the change with `strata repair`"
    );

    let input = PlanInput { action: Action::Sync, ..input };
    let synced = plan(input).unwrap();
    assert_eq!(synced.diagnostics.drift, expected);
    let files: Vec<_> = rendered(&synced, &sources).into_iter().map(|(f, s, _)| format!("{f}@{s}")).collect();
    assert!(!files.contains(&"config/001.sql@config".to_string()));
    assert!(!files.contains(&"tenants/001.sql@abc".to_string()));
    assert!(files.contains(&"config/002.sql@config".to_string()));
}

#[test]
fn out_of_order_files_are_planned_and_reported() {
    let sources = sources();
    let tenants = tenants();
    let recorded = vec![applied(&sources[2], "config"), applied(&sources[3], "abc")];
    let input = apply_input(&sources, &recorded, &tenants, &Target::AllSchemas);
    let plan = plan(input).unwrap();
    assert_eq!(
        plan.diagnostics.out_of_order,
        vec![
            OutOfOrder { file: "config/001.sql".into(), schema: "config".into(), after: "002.sql".into() },
            OutOfOrder { file: "tenants/001.sql".into(), schema: "abc".into(), after: "002.sql".into() },
        ]
    );
    let first_two: Vec<_> = rendered(&plan, &sources).into_iter().take(3).collect();
    assert_eq!(
        first_two,
        steps(&[("config/001.sql", "config"), ("tenants/001.sql", "abc"), ("tenants/001.sql", "def")], true)
    );
}

#[test]
fn planning_is_deterministic() {
    let sources = sources();
    let tenants = tenants();
    let recorded = vec![applied(&sources[2], "config")];
    let input = apply_input(&sources, &recorded, &tenants, &Target::AllSchemas);
    assert_eq!(plan(input), plan(input));
}

#[test]
fn a_tenant_listed_twice_is_planned_once() {
    let sources = sources();
    let tenants = vec!["abc".to_string(), "abc".to_string()];
    let input = apply_input(&sources, &[], &tenants, &Target::AllSchemas);
    let plan = plan(input).unwrap();
    assert_eq!(plan.counts.tenants, 1);
    assert_eq!(plan.counts.tenant_migrations_total, 2);
    assert_eq!(plan.schemas, ["config", "abc", "config-scripts"]);
}

#[test]
fn rows_of_deleted_files_and_unknown_schemas_are_not_planned_and_deleted_files_are_missing() {
    let sources = sources();
    let tenants = tenants();
    let gone = deleted_file_row();
    let elsewhere = AppliedMigration { schema: "old-tenant".into(), ..applied(&sources[1], "x") };
    let recorded = vec![gone, elsewhere];
    let input = apply_input(&sources, &recorded, &tenants, &Target::AllSchemas);
    let plan = plan(input).unwrap();
    assert_eq!(plan.steps.len(), 9);
    // A deleted file is reported as missing, not as what pending files
    // sort before (its place in the source is gone with it).
    assert!(plan.diagnostics.out_of_order.is_empty());
    assert_eq!(plan.diagnostics.missing, [Missing { file: "config/009.sql".into(), schemas: vec!["config".into()] }]);
}

#[test]
fn the_service_schema_is_no_tenant() {
    let sources = sources();
    let target = Target::NewTenant("svc".into());
    let input = apply_input(&sources, &[], &[], &target);
    assert_eq!(plan(input), Err(PlanError::InvalidTenantName(IdentError::Reserved { name: "svc".into() })));
}

#[test]
fn without_tenants_tenant_files_count_as_loaded_with_a_total_of_zero() {
    let sources = sources();
    let plan = plan(apply_input(&sources, &[], &[], &Target::AllSchemas)).unwrap();
    assert_eq!(
        plan.counts,
        Counts {
            tenants: 0,
            single_migrations: 2,
            tenant_migrations: 2,
            tenant_migrations_total: 0,
            single_scripts: 1,
            tenant_scripts: 1,
            tenant_scripts_total: 0
        }
    );
    assert!(plan.steps.iter().all(|s| !sources[s.migration as usize].migration_type.is_tenant()));

    // A tenant file recorded for a tenant that is gone is not loaded again.
    let gone = [applied(&sources[1], "gone")];
    let plan = super::plan(apply_input(&sources, &gone, &[], &Target::AllSchemas)).unwrap();
    assert_eq!((plan.counts.tenant_migrations, plan.counts.tenant_migrations_total), (1, 0));
}

#[test]
fn segments_keep_plan_order_and_group_tenant_steps_per_tenant() {
    use MigrationType::*;
    let sources = vec![
        migration("ref", "001.sql", SingleMigration),
        migration("config", "001.sql", SingleMigration),
        migration("tenants", "001.sql", TenantMigration),
        migration("tenants", "002.sql", TenantMigration),
        migration("ref", "003.sql", SingleMigration),
        migration("tenants", "004.sql", TenantMigration),
        migration("tenants-scripts", "a.sql", TenantScript),
    ];
    let tenants = tenants();
    let plan = plan(apply_input(&sources, &[], &tenants, &Target::AllSchemas)).unwrap();
    type Shown = Vec<(bool, Vec<(String, Vec<String>)>)>;
    let shown: Shown = plan
        .segments(&sources)
        .iter()
        .map(|segment| {
            let units = plan
                .units(segment)
                .map(|unit| {
                    let files = unit.steps.iter().map(|&s| sources[plan.steps.at(s).migration as usize].file.clone());
                    (plan.schemas[unit.schema as usize].clone(), files.collect())
                })
                .collect();
            (segment.tenants, units)
        })
        .collect();
    let unit = |schema: &str, files: &[&str]| (schema.to_string(), files.iter().map(|f| f.to_string()).collect());
    assert_eq!(
        shown,
        vec![
            (false, vec![unit("ref", &["ref/001.sql"]), unit("config", &["config/001.sql"])]),
            (
                true,
                vec![
                    unit("abc", &["tenants/001.sql", "tenants/002.sql"]),
                    unit("def", &["tenants/001.sql", "tenants/002.sql"])
                ]
            ),
            (false, vec![unit("ref", &["ref/003.sql"])]),
            (
                true,
                vec![
                    unit("abc", &["tenants/004.sql", "tenants-scripts/a.sql"]),
                    unit("def", &["tenants/004.sql", "tenants-scripts/a.sql"])
                ]
            ),
        ]
    );
    // Every step is in exactly one unit.
    let mut seen: Vec<u32> = plan.segments(&sources).iter().flat_map(|s| plan.units(s).flat_map(|u| u.steps)).collect();
    seen.sort();
    assert_eq!(seen, (0..plan.steps.len() as u32).collect::<Vec<_>>());
}

/// Flyway's versions: `V10__` applied, `V2__` added later sorts before it
/// by version, not by name — the policy decides; a deleted file is missing.
#[test]
fn out_of_order_follows_source_order_and_its_policy_and_deleted_files_are_missing() {
    use crate::migrate::format::SortKey;
    let flyway = |name: &str, version: &str| SourceMigration {
        order: SortKey::Version(vec![version.to_string()]),
        ..migration("tenants", name, MigrationType::TenantMigration)
    };
    let sources = vec![flyway("V2__b.sql", "2"), flyway("V10__c.sql", "10")];
    let tenants = vec!["abc".to_string()];
    let mut gone = applied(&sources[1], "abc");
    gone.file = "tenants/V1__gone.sql".into();
    gone.name = "V1__gone.sql".into();
    let recorded = vec![applied(&sources[1], "abc"), gone];
    let target = Target::AllSchemas;
    let input = apply_input(&sources, &recorded, &tenants, &target);

    let warned = plan(input).unwrap();
    assert_eq!(rendered(&warned, &sources), steps(&[("tenants/V2__b.sql", "abc")], true));
    assert_eq!(
        warned.diagnostics.out_of_order,
        [OutOfOrder { file: "tenants/V2__b.sql".into(), schema: "abc".into(), after: "V10__c.sql".into() }]
    );
    assert_eq!(
        warned.diagnostics.missing,
        [Missing { file: "tenants/V1__gone.sql".into(), schemas: vec!["abc".into()] }]
    );

    let allowed = plan(PlanInput { out_of_order: OutOfOrderPolicy::Allow, ..input }).unwrap();
    assert!(allowed.diagnostics.out_of_order.is_empty());
    assert_eq!(allowed.steps, warned.steps);

    let refused = plan(PlanInput { out_of_order: OutOfOrderPolicy::Refuse, ..input }).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "1 pending migration(s) sort before migrations already applied and outOfOrder is refuse: tenants/V2__b.sql in \
         abc (after V10__c.sql)"
    );
    // Sync records; the policy is Apply's.
    assert!(plan(PlanInput { out_of_order: OutOfOrderPolicy::Refuse, action: Action::Sync, ..input }).is_ok());
}

#[test]
fn the_drift_refusal_advises_repair_never_sync() {
    let sources = sources();
    let tenants = tenants();
    let mut changed = applied(&sources[2], "abc");
    changed.checksum = "0".repeat(64);
    let recorded = [changed];
    let error = plan(apply_input(&sources, &recorded, &tenants, &Target::AllSchemas)).unwrap_err().to_string();
    assert!(error.contains("strata repair"), "{error}");
    assert!(!error.to_lowercase().contains("sync"), "{error}");
}

#[test]
fn rows_fed_one_at_a_time_and_dropped_plan_as_the_whole_list_does() {
    let sources = sources();
    let tenants: Vec<String> = vec!["abc".into(), "def".into(), "ghi".into()];
    let mut drifted = applied(&sources[1], "def");
    drifted.checksum = "1".repeat(64);
    let gone = deleted_file_row();
    // Out of order in ghi (002 recorded, 001 not); rows of one file apart.
    let recorded = vec![
        applied(&sources[0], "config"),
        applied(&sources[1], "abc"),
        gone,
        drifted,
        applied(&sources[3], "ghi"),
        applied(&sources[4], "config-scripts"),
        applied(&sources[1], "old-tenant"),
    ];
    for action in [Action::Apply, Action::Sync] {
        let input = PlanInput { action, ..apply_input(&sources, &recorded, &tenants, &Target::AllSchemas) };
        let whole = plan(input);
        let mut planner = Planner::new(PlanInput { applied: &[], ..input }).unwrap();
        for row in &recorded {
            // Each row in a buffer of its own, gone once recorded: what
            // the planner keeps, it copied.
            let buffer = row.clone();
            planner.record(buffer.as_row());
            drop(buffer);
        }
        assert_eq!(planner.finish(), whole);
    }
    let synced =
        plan(PlanInput { action: Action::Sync, ..apply_input(&sources, &recorded, &tenants, &Target::AllSchemas) })
            .unwrap();
    assert_eq!(synced.diagnostics.drift.len(), 1);
    assert_eq!(synced.diagnostics.missing.len(), 1);
    assert_eq!(synced.diagnostics.out_of_order.len(), 1);
}

/// A fleet's plan: `files` tenant migrations (and one single migration)
/// over `tenants` tenants, none recorded.
fn fleet_plan(tenants: usize, files: usize) -> (Plan, Vec<SourceMigration>) {
    let mut sources = vec![migration("config", "001.sql", MigrationType::SingleMigration)];
    sources.extend((0..files).map(|i| migration("tenants", &format!("{i:03}.sql"), MigrationType::TenantMigration)));
    let tenants: Vec<String> = (0..tenants).map(|i| format!("t{i}")).collect();
    let plan = plan(apply_input(&sources, &[], &tenants, &Target::AllSchemas)).unwrap();
    (plan, sources)
}

#[test]
fn a_plan_holds_each_file_once_however_many_tenants_run_it() {
    let (small, _) = fleet_plan(1_000, 20);
    let (large, sources) = fleet_plan(100_000, 20);
    assert_eq!(small.steps.len(), 1 + 1_000 * 20);
    assert_eq!(large.steps.len(), 1 + 100_000 * 20);
    // The plan's size: one run per file, at 1,000 tenants as at 100,000.
    assert_eq!(small.steps.run_count(), 21);
    assert_eq!(large.steps.run_count(), small.steps.run_count());
    // Units are made one at a time, each tenant's files in order.
    let segments = large.segments(&sources);
    assert_eq!(segments.len(), 2);
    assert_eq!(large.unit_count(&segments[1]), 100_000);
    let mut units = large.units(&segments[1]);
    let first = units.next().unwrap();
    assert_eq!(large.schemas[first.schema as usize], "t0");
    let files: Vec<u32> = first.steps.iter().map(|&s| large.steps.at(s).migration).collect();
    assert_eq!(files, (1..=20).collect::<Vec<u32>>());
    let last = units.last().unwrap();
    assert_eq!(large.schemas[last.schema as usize], "t99999");
    assert_eq!(last.steps.last(), Some(&(large.steps.len() as u32 - 1)));
}

/// Units made from runs equal the units read off the steps one by one
/// (each schema's steps in plan order), on a plan cut into many runs:
/// tenants that recorded different files, scripts, single schemas between
/// tenant files.
#[test]
fn units_made_from_runs_are_each_schemas_steps_in_plan_order() {
    use MigrationType::*;
    let sources = vec![
        migration("config", "001.sql", SingleMigration),
        migration("tenants", "001.sql", TenantMigration),
        migration("tenants", "002.sql", TenantMigration),
        migration("config", "003.sql", SingleMigration),
        migration("tenants", "004.sql", TenantMigration),
        migration("tenants", "005.sql", TenantMigration),
        migration("tenants-scripts", "a.sql", TenantScript),
    ];
    let tenants: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
    // Tenant i recorded file k when (i + k) % 3 == 0 or i % 7 == 0: every
    // file misses a different set of tenants.
    let mut recorded = Vec::new();
    for (i, tenant) in tenants.iter().enumerate() {
        for (k, source) in sources.iter().enumerate().filter(|(_, s)| s.migration_type == TenantMigration) {
            if (i + k) % 3 == 0 || i % 7 == 0 {
                recorded.push(applied(source, tenant));
            }
        }
    }
    let plan = plan(apply_input(&sources, &recorded, &tenants, &Target::AllSchemas)).unwrap();
    assert!(plan.steps.run_count() > 10, "the plan is cut into many runs");
    let all: Vec<Step> = plan.steps.iter().collect();
    assert_eq!(all.len(), plan.steps.len());
    for (index, step) in plan.steps.indexed() {
        assert_eq!(all[index as usize], step);
        assert_eq!(plan.steps.get(index), Some(step));
    }
    assert_eq!(plan.steps.get(all.len() as u32), None);
    assert_eq!(all.iter().copied().collect::<Steps>(), plan.steps);

    let mut seen = StepSet::with_steps(plan.steps.len());
    for segment in plan.segments(&sources) {
        let in_segment = segment.steps.clone();
        let mut expected: Vec<Unit> = Vec::new();
        for index in in_segment.clone() {
            let schema = all[index as usize].schema;
            let open = if segment.tenants {
                expected.iter_mut().find(|unit| unit.schema == schema)
            } else {
                expected.last_mut().filter(|unit| unit.schema == schema)
            };
            match open {
                Some(unit) => unit.steps.push(index),
                None => expected.push(Unit { schema, steps: vec![index] }),
            }
        }
        let mut made: Vec<Unit> = plan.units(&segment).collect();
        assert_eq!(plan.unit_count(&segment), made.len());
        if segment.tenants {
            // Tenant units are independent: any order, each one whole.
            expected.sort_by_key(|unit| unit.schema);
            made.sort_by_key(|unit| unit.schema);
        }
        assert_eq!(made, expected);
        for unit in made {
            seen.extend(unit.steps);
        }
    }
    assert_eq!(seen.len(), plan.steps.len());
    assert_eq!(seen.iter().collect::<Vec<u32>>(), (0..plan.steps.len() as u32).collect::<Vec<u32>>());
}

#[test]
fn a_step_set_holds_each_step_once() {
    let mut set = StepSet::with_steps(10);
    assert!(set.is_empty());
    set.extend([3, 3, 9, 0]);
    set.insert(130);
    assert_eq!(set.len(), 4);
    assert!(set.contains(130) && set.contains(0) && !set.contains(1) && !set.contains(1_000));
    assert_eq!(set.iter().collect::<Vec<u32>>(), [0, 3, 9, 130]);
}

#[test]
fn a_repeatable_script_runs_where_its_latest_row_recorded_another_text_and_a_plain_one_always() {
    let repeatable = |name: &str, text: &str| SourceMigration {
        repeatable: true,
        ..SourceMigration::plain("tenants", name, MigrationType::TenantScript, text)
    };
    let sources =
        vec![repeatable("R__grants.sql", "grant v2"), migration("tenants", "every.sql", MigrationType::TenantScript)];
    let tenants = vec!["a".to_string(), "b".to_string(), "c".to_string(), "d".to_string()];
    let row = |schema: &str, text: &str| AppliedMigration {
        checksum: crate::migrate::source::checksum(text.as_bytes()),
        ..applied(&sources[0], schema)
    };
    // a: ran the current text; b: an older text only; c: the current text,
    // then an older one (changed back: its latest row decides); d: never.
    let recorded = vec![
        row("a", "grant v2"),
        row("b", "grant v1"),
        row("c", "grant v2"),
        row("c", "grant v1"),
        applied(&sources[1], "a"),
    ];
    let target = Target::AllSchemas;
    let planned = plan(apply_input(&sources, &recorded, &tenants, &target)).unwrap();
    assert_eq!(
        rendered(&planned, &sources),
        steps(
            &[
                ("tenants/R__grants.sql", "b"),
                ("tenants/R__grants.sql", "c"),
                ("tenants/R__grants.sql", "d"),
                ("tenants/every.sql", "a"),
                ("tenants/every.sql", "b"),
                ("tenants/every.sql", "c"),
                ("tenants/every.sql", "d"),
            ],
            true
        )
    );
    assert!(planned.diagnostics.drift.is_empty(), "a changed repeatable is no drift");
    assert!(crate::migrate::report::has_pending_migrations(&planned, &sources), "a due repeatable is pending");
    let settled: Vec<_> = ["a", "b", "c", "d"].iter().map(|s| row(s, "grant v2")).collect();
    let all = [recorded, settled].concat();
    let none_due = plan(apply_input(&sources, &all, &tenants, &target)).unwrap();
    assert!(rendered(&none_due, &sources).iter().all(|(file, _, _)| file == "tenants/every.sql"));
    assert!(!crate::migrate::report::has_pending_migrations(&none_due, &sources), "plain scripts are never pending");
}

#[test]
fn a_renamed_file_is_refused_not_run_again() {
    use MigrationType::*;
    let seed = "insert into t1 values (42);";
    let renamed = SourceMigration::plain("tenants", "004_seed_rows.sql", TenantMigration, seed);
    let old = SourceMigration::plain("tenants", "004_seed.sql", TenantMigration, seed);
    let sources = vec![migration("tenants", "001.sql", TenantMigration), renamed];
    let applied_rows = vec![applied(&sources[0], "t1"), applied(&old, "t1"), applied(&sources[0], "t2")];
    let tenants = vec!["t1".to_string(), "t2".to_string(), "t3".to_string()];
    let refused = plan(apply_input(&sources, &applied_rows, &tenants, &Target::AllSchemas)).unwrap_err();
    assert_eq!(
        refused,
        PlanError::Renamed(vec![Renamed {
            file: "tenants/004_seed_rows.sql".into(),
            was: "tenants/004_seed.sql".into(),
            schemas: 1
        }])
    );
    assert!(refused.to_string().contains("(was tenants/004_seed.sql, in 1 schema(s))"), "{refused}");
    // A Sync records it (nothing runs); where the old name was never
    // recorded, the same text is just a new file.
    let sync =
        PlanInput { action: Action::Sync, ..apply_input(&sources, &applied_rows, &tenants, &Target::AllSchemas) };
    assert!(plan(sync).is_ok());
    let elsewhere = vec![applied(&sources[0], "t2"), applied(&old, "t1")];
    let only_t2 = vec!["t2".to_string()];
    assert!(plan(apply_input(&sources, &elsewhere, &only_t2, &Target::AllSchemas)).is_ok());
}
