use crate::migrate::MigrationType::{self, *};
use crate::migrate::format::Part;
use crate::migrate::revert::*;

fn migration(dir: &str, name: &str, kind: MigrationType, down: bool) -> SourceMigration {
    let mut m = SourceMigration::plain(dir, name, kind, &format!("create table {name};"));
    m.down = down.then(|| Part { file: m.file.clone(), text: format!("drop table {name};"), no_transaction: false });
    m
}

fn sources() -> Vec<SourceMigration> {
    vec![
        migration("ref", "1.sql", SingleMigration, true),
        migration("tenants", "1.sql", TenantMigration, true),
        migration("tenants", "2.sql", TenantMigration, true),
        migration("ref", "3.sql", SingleMigration, true),
        migration("tenants", "4.sql", TenantMigration, false),
        migration("scripts", "s.sql", TenantScript, false),
    ]
}

fn applied(sources: &[SourceMigration], rows: &[(usize, &str)]) -> Vec<AppliedMigration> {
    rows.iter()
        .map(|&(i, schema)| AppliedMigration {
            file: sources[i].file.clone(),
            name: sources[i].name.clone(),
            schema: schema.into(),
            migration_type: sources[i].migration_type,
            checksum: sources[i].checksum.clone(),
        })
        .collect()
}

fn shown(plan: &Plan, sources: &[SourceMigration]) -> Vec<(String, String)> {
    plan.steps.iter().map(|s| (sources[s.migration as usize].file.clone(), plan.schema_of(s).to_string())).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn the_last_steps_of_each_schema_are_undone_newest_first_migration_major() {
    let sources = sources();
    let tenants = vec!["a".to_string(), "b".to_string()];
    // b is one migration behind a; scripts are recorded too.
    let rows = applied(&sources, &[(0, "ref"), (1, "a"), (1, "b"), (2, "a"), (3, "ref"), (5, "a"), (5, "b")]);
    let input = RevertInput {
        sources: &sources,
        applied: &rows,
        tenants: &tenants,
        single_schemas: true,
        extent: &Extent::Steps(1),
    };
    let plan = plan_revert(input).unwrap();
    assert_eq!(plan.direction, Direction::Revert);
    assert_eq!(shown(&plan, &sources), pairs(&[("ref/3.sql", "ref"), ("tenants/2.sql", "a"), ("tenants/1.sql", "b")]));
    assert_eq!((plan.counts.single_migrations, plan.counts.tenant_migrations_total), (1, 2));

    let two = plan_revert(RevertInput { extent: &Extent::Steps(2), ..input }).unwrap();
    assert_eq!(
        shown(&two, &sources),
        pairs(&[
            ("ref/3.sql", "ref"),
            ("tenants/2.sql", "a"),
            ("tenants/1.sql", "a"),
            ("tenants/1.sql", "b"),
            ("ref/1.sql", "ref")
        ])
    );
    // Per tenant, one unit, newest first.
    let segments = two.segments(&sources);
    assert_eq!(segments.len(), 3);
    assert_eq!(two.units(&segments[1]).count(), 2);
    assert_eq!(two.unit_count(&segments[1]), 2);

    // Only the tenants named: the single schemas stay.
    let only_b = vec!["b".to_string()];
    let plan = plan_revert(RevertInput { tenants: &only_b, single_schemas: false, ..input }).unwrap();
    assert_eq!(shown(&plan, &sources), pairs(&[("tenants/1.sql", "b")]));

    // To a file: everything after it, the file kept.
    let to = Extent::To("tenants/1.sql".into());
    let plan = plan_revert(RevertInput { extent: &to, ..input }).unwrap();
    assert_eq!(shown(&plan, &sources), pairs(&[("ref/3.sql", "ref"), ("tenants/2.sql", "a")]));
}

#[test]
fn a_missing_down_part_or_file_is_refused_before_anything_runs() {
    let sources = sources();
    let tenants = vec!["a".to_string()];
    let rows = applied(&sources, &[(1, "a"), (2, "a"), (4, "a")]);
    let input = RevertInput {
        sources: &sources,
        applied: &rows,
        tenants: &tenants,
        single_schemas: true,
        extent: &Extent::Steps(1),
    };
    assert_eq!(plan_revert(input).unwrap_err(), RevertError::NoDownPart(vec!["tenants/4.sql".into()]));
    assert!(plan_revert(input).unwrap_err().to_string().contains("have no down part: tenants/4.sql"));
    assert_eq!(plan_revert(RevertInput { extent: &Extent::Steps(0), ..input }).unwrap_err(), RevertError::NoSteps);
    let unknown = Extent::To("tenants/9.sql".into());
    assert_eq!(
        plan_revert(RevertInput { extent: &unknown, ..input }).unwrap_err(),
        RevertError::UnknownFile("tenants/9.sql".into())
    );

    let mut gone = applied(&sources, &[(1, "a")]);
    gone[0].file = "tenants/0.sql".into();
    let refused = plan_revert(RevertInput { applied: &gone, ..input }).unwrap_err();
    assert_eq!(refused, RevertError::Missing(vec!["tenants/0.sql".into()]));
    // Nothing recorded: nothing to do.
    assert!(plan_revert(RevertInput { applied: &[], ..input }).unwrap().steps.is_empty());
}

#[test]
fn an_empty_down_part_or_a_file_changed_since_it_ran_is_refused_before_anything_runs() {
    let mut sources = sources();
    let tenants = vec!["a".to_string()];
    let rows = applied(&sources, &[(1, "a"), (2, "a")]);
    let input = |sources: &[SourceMigration], rows: &[AppliedMigration]| {
        plan_revert(RevertInput {
            sources,
            applied: rows,
            tenants: &tenants,
            single_schemas: false,
            extent: &Extent::Steps(2),
        })
        .map(|_| ())
    };
    assert_eq!(input(&sources, &rows), Ok(()));
    // `strata new` writes the down section empty: undoing nothing would
    // still remove the record.
    sources[2].down.as_mut().unwrap().text = "\n\n  \n".into();
    let empty = input(&sources, &rows).unwrap_err();
    assert_eq!(empty, RevertError::EmptyDownPart(vec!["tenants/2.sql".into()]));
    assert!(empty.to_string().contains("write what undoes them"), "{empty}");
    // A comment says an empty undo is meant.
    sources[2].down.as_mut().unwrap().text = "\n-- nothing to undo: the table stays\n".into();
    assert_eq!(input(&sources, &rows), Ok(()));
    // Changed since it ran in `a`: its down part may not undo what ran.
    sources[1].checksum = "0".repeat(64);
    let changed = input(&sources, &rows).unwrap_err();
    assert_eq!(changed, RevertError::Changed(vec!["tenants/1.sql".into()]));
    assert!(changed.to_string().contains("record the change with `strata repair` first"), "{changed}");
}

#[test]
fn a_file_applied_out_of_order_is_undone_first_where_it_was_recorded_last() {
    let sources = sources();
    let tenants = vec!["a".to_string(), "b".to_string()];
    // a recorded tenants/2.sql before tenants/1.sql (added later, applied out
    // of order); b recorded them in source order.
    let rows = applied(&sources, &[(2, "a"), (1, "b"), (2, "b"), (1, "a")]);
    let input = RevertInput {
        sources: &sources,
        applied: &rows,
        tenants: &tenants,
        single_schemas: false,
        extent: &Extent::Steps(1),
    };
    let one = plan_revert(input).unwrap();
    assert_eq!(shown(&one, &sources), pairs(&[("tenants/2.sql", "b"), ("tenants/1.sql", "a")]));

    let two = plan_revert(RevertInput { extent: &Extent::Steps(2), ..input }).unwrap();
    let segments = two.segments(&sources);
    assert_eq!(segments.len(), 1);
    let units: Vec<Vec<String>> = two
        .units(&segments[0])
        .map(|unit| unit.steps.iter().map(|&s| sources[two.steps.at(s).migration as usize].file.clone()).collect())
        .collect();
    assert_eq!(units, [vec!["tenants/1.sql", "tenants/2.sql"], vec!["tenants/2.sql", "tenants/1.sql"]]);
    assert_eq!(two.counts.tenant_migrations_total, 4);

    // `--to` keeps what sorts up to the file, whatever the order recorded.
    let to = Extent::To("tenants/1.sql".into());
    let kept = plan_revert(RevertInput { extent: &to, ..input }).unwrap();
    assert_eq!(shown(&kept, &sources), pairs(&[("tenants/2.sql", "a"), ("tenants/2.sql", "b")]));

    // A file recorded twice in one schema counts once, at its last place.
    let twice = applied(&sources, &[(1, "a"), (2, "a"), (1, "a")]);
    let only_a = vec!["a".to_string()];
    let plan = plan_revert(RevertInput { applied: &twice, tenants: &only_a, ..input }).unwrap();
    assert_eq!(shown(&plan, &sources), pairs(&[("tenants/1.sql", "a")]));
}
