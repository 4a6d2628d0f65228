use crate::migrate::MigrationType;
use crate::migrate::plan::Action;
use crate::migrate::plan::tests::{fresh, migration};
use crate::migrate::shard::*;

fn sources() -> Vec<SourceMigration> {
    use MigrationType::*;
    vec![
        migration("config", "001.sql", SingleMigration),
        migration("tenants", "001.sql", TenantMigration),
        migration("tenants", "002.sql", TenantMigration),
        migration("config-scripts", "a.sql", SingleScript),
    ]
}

fn fresh_plan(sources: &[SourceMigration], tenants: &[&str]) -> Plan {
    fresh(sources, tenants, Action::Apply)
}

fn rendered(plan: &Plan, sources: &[SourceMigration]) -> Vec<String> {
    plan.steps.iter().map(|s| format!("{} {}", plan.schema_of(s), sources[s.migration as usize].file)).collect()
}

#[test]
fn names_are_checked() {
    assert_eq!(check_names(["a", "eu-west_2"]), Ok(()));
    assert_eq!(check_names(["a", "a"]), Err(ShardError::Duplicate("a".into())));
    assert_eq!(check_names(["a b"]), Err(ShardError::BadName("a b".into())));
    assert_eq!(check_names([""]), Err(ShardError::BadName(String::new())));
    let many: Vec<String> = (0..=ID_BASE).map(|i| format!("s{i}")).collect();
    assert_eq!(check_names(many.iter().map(String::as_str)), Err(ShardError::TooMany));
}

#[test]
fn a_new_tenant_goes_where_asked_or_to_the_emptiest_reachable_shard() {
    let names = ["a", "b", "c"];
    assert_eq!(place(&names, &[Some(3), Some(1), Some(1)], None), Ok(1));
    assert_eq!(place(&names, &[Some(3), None, Some(2)], None), Ok(2));
    assert_eq!(place(&names, &[Some(0), Some(0), Some(0)], Some("c")), Ok(2));
    assert_eq!(place(&names, &[Some(0); 3], Some("d")), Err(ShardError::Unknown("d".into())));
    assert!(place(&names, &[None, None, None], None).is_err());
}

#[test]
fn served_ids_name_their_shard() {
    let ids = Ids::for_shards(3);
    assert_eq!(ids.served(12, 2), 122);
    assert_eq!(ids.local(122), Some((2, 12)));
    assert_eq!(ids.local(ids.served(1, 0)), Some((0, 1)));
    assert_eq!(ids.local(3), None);
    assert_eq!(ids.local(-5), None);
    let many = Ids::for_shards(11);
    assert_eq!(many.served(12, 10), 1210);
    assert_eq!(many.local(1210), Some((10, 12)));
}

#[test]
fn other_shards_run_tenant_steps_only() {
    let sources = sources();
    let whole = fresh_plan(&sources, &["t1", "t2"]);
    let kept = tenants_only(whole.clone(), &sources);
    let tenant_lines: Vec<String> =
        rendered(&whole, &sources).into_iter().filter(|line| line.starts_with('t')).collect();
    assert_eq!(rendered(&kept, &sources), tenant_lines);
    assert_eq!(kept.steps.len(), 4);
    assert_eq!(kept.schemas, ["t1", "t2"]);
    assert_eq!(kept.counts.single_migrations, 0);
    assert_eq!(kept.counts.single_scripts, 0);
    assert_eq!(kept.counts.tenant_migrations, 2);
    assert_eq!(kept.counts.tenant_migrations_total, 4);
    assert_eq!(kept.counts.tenants, 2);
}

#[test]
fn shard_plans_merge_into_one_report() {
    let sources = sources();
    let home = fresh_plan(&sources, &["t1"]);
    let other = tenants_only(fresh_plan(&sources, &["t2", "t3"]), &sources);
    let merged = merge(vec![home.clone(), other], &sources);
    assert_eq!(merged.steps.len(), home.steps.len() + 4);
    let lines = rendered(&merged, &sources);
    assert!(lines.contains(&"t3 tenants/002.sql".to_string()), "{lines:?}");
    assert!(lines.contains(&"config config/001.sql".to_string()), "{lines:?}");
    assert_eq!(merged.counts.tenants, 3);
    assert_eq!(merged.counts.single_migrations, 1);
    assert_eq!(merged.counts.single_scripts, 1);
    assert_eq!(merged.counts.tenant_migrations, 2);
    assert_eq!(merged.counts.tenant_migrations_total, 6);
}

#[test]
fn the_directory_follows_the_shards_that_answer_and_keeps_the_others() {
    let row = |t: &str, s: &str| (t.to_string(), s.to_string());
    let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let directory =
        Directory { rows: vec![row("a1", "a"), row("b1", "b"), row("b2", "b"), row("c1", "c"), row("gone", "a")] };
    let (a, b) = (names(&["a1", "moved"]), names(&["b1", "b2", "new"]));
    // c does not answer: what the directory says of it stays.
    let changes = directory.changes(&[("a", &a), ("b", &b)]);
    assert_eq!(changes.put, [row("moved", "a"), row("new", "b")]);
    assert_eq!(changes.drop, ["gone"]);
    assert_eq!(directory.tenants_of("c"), ["c1"]);
    assert_eq!(directory.tenants_of("b"), ["b1", "b2"]);
    // A tenant moved from c (down) to b is put on b, not dropped.
    let b = names(&["b1", "b2", "c1"]);
    assert_eq!(directory.changes(&[("b", &b)]).put, [row("c1", "b")]);
    assert!(directory.changes(&[("b", &names(&["b1", "b2"]))]).is_empty());
    assert!(Directory::default().changes(&[]).is_empty());
}

#[test]
fn a_shard_named_on_one_server_or_not_configured_is_refused() {
    let shard = |name: &str| Shard { name: name.into(), data_source: "postgres://h/db".into() };
    assert_eq!(check_requested(&[], None), Ok(()));
    assert_eq!(check_requested(&[], Some("eu")), Err(ShardError::NotSharded("eu".into())));
    assert_eq!(
        ShardError::NotSharded("eu".into()).to_string(),
        "no shard is named \"eu\": the configuration has no shards (one database server, dataSource)"
    );
    let two = [shard("eu"), shard("us")];
    assert_eq!(check_requested(&two, Some("us")), Ok(()));
    assert_eq!(check_requested(&two, None), Ok(()));
    assert_eq!(check_requested(&two, Some("ap")), Err(ShardError::Unknown("ap".into())));
}
