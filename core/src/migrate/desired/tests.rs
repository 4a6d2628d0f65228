use super::*;
use crate::migrate::fingerprint::CatalogObject;

pub(super) fn object(kind: &str, name: &str, definition: &str) -> CatalogObject {
    CatalogObject { kind: kind.to_string(), name: name.to_string(), definition: definition.to_string() }
}

/// A tenant's catalog as PostgreSQL's catalog query reads it: a `users`
/// table with a key, an index named after the schema, a status enum and a
/// function; `edit` changes the objects before they are read.
fn users(schema: &str, edit: impl FnOnce(&mut Vec<CatalogObject>)) -> Catalog {
    let mut objects = vec![
        object("relation", "users", "r"),
        object("relation", "users_id_seq", "S"),
        object("column", "users.id", &format!("integer not null default nextval('{schema}.users_id_seq'::regclass)")),
        object("column", "users.email", "character varying(64) not null"),
        object("column", "users.status", &format!("{schema}.status")),
        object("constraint", "users.users_pkey", "PRIMARY KEY (id)"),
        object("index", "users_pkey", &format!("CREATE UNIQUE INDEX users_pkey ON {schema}.users USING btree (id)")),
        object(
            "index",
            &format!("{schema}_users_email"),
            &format!("CREATE INDEX {schema}_users_email ON {schema}.users USING btree (email)"),
        ),
        object("type", "status", "active, closed"),
        object(
            "routine",
            "touch(integer)",
            &format!(
                "CREATE OR REPLACE FUNCTION {schema}.touch(n integer)\n RETURNS integer\n LANGUAGE sql\nAS $function$\n  -- keep this line\n  select n + 1\n$function$\n"
            ),
        ),
    ];
    edit(&mut objects);
    Catalog::new(schema, &objects)
}

fn desired() -> Catalog {
    users("strata_desired", |_| {})
}

pub(super) fn sql(plan: &Plan) -> Vec<&str> {
    plan.steps.iter().map(|s| s.sql.as_str()).collect()
}

pub(super) fn remove(objects: &mut Vec<CatalogObject>, kind: &str, name: &str) {
    let before = objects.len();
    objects.retain(|o| !(o.kind == kind && o.name == name));
    assert_eq!(objects.len() + 1, before, "{kind} {name}");
}

pub(super) fn set(objects: &mut [CatalogObject], kind: &str, name: &str, definition: &str) {
    let found = objects.iter_mut().find(|o| o.kind == kind && o.name == name).expect(name);
    found.definition = definition.to_string();
}

#[test]
fn a_tenant_built_from_the_same_ddl_needs_nothing_whatever_its_name() {
    let plan = plan(Driver::Postgres, &desired(), &users("t1", |_| {}));
    assert!(plan.is_empty(), "{plan:?}");
    assert_eq!(desired().fingerprint(), users("acme_co", |_| {}).fingerprint());
}

#[test]
fn an_index_dropped_by_hand_is_created_again_under_the_tenants_name() {
    let live = users("t1", |o| remove(o, "index", "t1_users_email"));
    let plan = plan(Driver::Postgres, &desired(), &live);
    assert_eq!(sql(&plan), ["CREATE INDEX {schema}_users_email ON {schema}.users USING btree (email)"]);
    assert!(!plan.destructive());
}

#[test]
fn an_extra_column_is_dropped_and_that_is_destructive() {
    let live = users("t2", |o| o.push(object("column", "users.nickname", "text")));
    let plan = plan(Driver::Postgres, &desired(), &live);
    assert_eq!(plan.steps, [Step { sql: "ALTER TABLE {schema}.users DROP COLUMN nickname".into(), destructive: true }]);
}

#[test]
fn a_narrower_column_is_widened_without_loss_and_narrowing_is_destructive() {
    let live = users("t3", |o| set(o, "column", "users.email", "character varying(20) not null"));
    let widened = plan(Driver::Postgres, &desired(), &live);
    assert_eq!(
        widened.steps,
        [Step {
            sql: "ALTER TABLE {schema}.users ALTER COLUMN email TYPE character varying(64)".into(),
            destructive: false
        }]
    );
    let narrowed = plan(Driver::Postgres, &live, &desired());
    assert_eq!(
        sql(&narrowed),
        ["ALTER TABLE {schema}.users ALTER COLUMN email TYPE character varying(20) USING email::character varying(20)"]
    );
    assert!(narrowed.destructive());
}

#[test]
fn widening_is_judged_by_type() {
    for (from, to) in [
        ("character varying(10)", "character varying(11)"),
        ("character varying(10)", "text"),
        ("character varying(10)", "character varying"),
        ("smallint", "bigint"),
        ("integer", "numeric"),
        ("real", "double precision"),
        ("numeric(10,2)", "numeric(12,2)"),
        ("numeric(10,2)", "numeric(11,3)"),
    ] {
        assert!(postgres::widens(from, to), "{from} -> {to}");
    }
    for (from, to) in [
        ("character varying(10)", "character varying(9)"),
        ("text", "character varying(100)"),
        ("bigint", "integer"),
        ("integer", "real"),
        ("numeric(10,2)", "numeric(10,3)"),
        ("numeric", "numeric(10,2)"),
        ("text", "integer"),
    ] {
        assert!(!postgres::widens(from, to), "{from} -> {to}");
    }
}

#[test]
fn default_and_nullability_changes_alter_the_column_in_place() {
    let live = users("t4", |o| set(o, "column", "users.email", "character varying(64) default 'x'::character varying"));
    let plan = plan(Driver::Postgres, &desired(), &live);
    assert_eq!(
        sql(&plan),
        [
            "ALTER TABLE {schema}.users ALTER COLUMN email DROP DEFAULT",
            "ALTER TABLE {schema}.users ALTER COLUMN email SET NOT NULL"
        ]
    );
}

#[test]
fn a_missing_table_is_created_then_its_keys_foreign_keys_indexes_and_trigger_in_that_order() {
    let wanted = users("strata_desired", |o| {
        o.extend([
            object("relation", "orders", "r"),
            object("column", "orders.id", "bigint not null"),
            object("column", "orders.user_id", "integer"),
            object("constraint", "orders.orders_pkey", "PRIMARY KEY (id)"),
            object(
                "constraint",
                "orders.orders_user_id_fkey",
                "FOREIGN KEY (user_id) REFERENCES strata_desired.users(id)",
            ),
            object("index", "orders_pkey", "CREATE UNIQUE INDEX orders_pkey ON strata_desired.orders USING btree (id)"),
            object("index", "orders_user", "CREATE INDEX orders_user ON strata_desired.orders USING btree (user_id)"),
            object(
                "trigger",
                "orders.stamp",
                "CREATE TRIGGER stamp BEFORE INSERT ON strata_desired.orders FOR EACH ROW EXECUTE FUNCTION strata_desired.touch()",
            ),
        ])
    });
    let plan = plan(Driver::Postgres, &wanted, &users("t5", |_| {}));
    assert_eq!(
        sql(&plan),
        [
            "CREATE TABLE {schema}.orders (\n    id bigint not null,\n    user_id integer\n)",
            "ALTER TABLE {schema}.orders ADD CONSTRAINT orders_pkey PRIMARY KEY (id)",
            "ALTER TABLE {schema}.orders ADD CONSTRAINT orders_user_id_fkey FOREIGN KEY (user_id) REFERENCES {schema}.users(id)",
            "CREATE INDEX orders_user ON {schema}.orders USING btree (user_id)",
            "CREATE TRIGGER stamp BEFORE INSERT ON {schema}.orders FOR EACH ROW EXECUTE FUNCTION {schema}.touch()",
        ]
    );
    // And the other way: the table dropped last, as data.
    let back = super::plan(Driver::Postgres, &users("strata_desired", |_| {}), &wanted);
    assert_eq!(back.steps, [Step { sql: "DROP TABLE {schema}.orders".into(), destructive: true }]);
}

#[test]
fn enum_values_are_added_in_place_and_a_removed_one_is_not_planned() {
    let wanted = users("strata_desired", |o| set(o, "type", "status", "new, active, paused, closed"));
    let plan = plan(Driver::Postgres, &wanted, &users("t6", |_| {}));
    assert_eq!(
        sql(&plan),
        [
            "ALTER TYPE {schema}.status ADD VALUE 'new' BEFORE 'active'",
            "ALTER TYPE {schema}.status ADD VALUE 'paused' AFTER 'active'"
        ]
    );
    let fewer = users("strata_desired", |o| set(o, "type", "status", "closed, active"));
    let refused = super::plan(Driver::Postgres, &fewer, &users("t6", |_| {}));
    assert!(refused.steps.is_empty());
    assert_eq!(
        refused.unplannable,
        ["enum status: values removed or reordered (here: active, closed; desired: closed, active)"]
    );
    assert!(refused.file_text().starts_with("-- not planned: enum status"));
}

#[test]
fn a_changed_routine_is_replaced_with_its_lines_kept_and_a_removed_one_dropped() {
    let body = "CREATE OR REPLACE FUNCTION t7.touch(n integer)\n RETURNS integer\n LANGUAGE sql\nAS $function$\n  select n + 2\n$function$\n";
    let live = users("t7", |o| {
        set(o, "routine", "touch(integer)", body);
        o.push(object("routine", "old(text, integer)", "CREATE OR REPLACE FUNCTION t7.old(a text, b integer) …"));
    });
    let plan = plan(Driver::Postgres, &desired(), &live);
    assert_eq!(
        sql(&plan),
        [
            "DROP ROUTINE {schema}.old(text, integer)",
            "CREATE OR REPLACE FUNCTION {schema}.touch(n integer)\n RETURNS integer\n LANGUAGE sql\nAS $function$\n  -- keep this line\n  select n + 1\n$function$",
        ]
    );
}

#[test]
fn a_view_whose_query_changed_is_dropped_and_made_again() {
    let wanted = users("strata_desired", |o| {
        o.push(object("relation", "active", "v"));
        o.push(object("view", "active", " SELECT id\n   FROM strata_desired.users\n  WHERE status = 'active';"));
    });
    let live = users("t8", |o| {
        o.push(object("relation", "active", "v"));
        o.push(object("view", "active", " SELECT id, email\n   FROM t8.users;"));
    });
    let plan = plan(Driver::Postgres, &wanted, &live);
    assert_eq!(
        sql(&plan),
        [
            "DROP VIEW {schema}.active",
            "CREATE VIEW {schema}.active AS\nSELECT id\n   FROM {schema}.users\n  WHERE status = 'active'"
        ]
    );
}

#[test]
fn a_sequence_or_materialized_view_dropped_loses_what_it_holds() {
    let live = users("t3", |o| {
        o.push(object("relation", "invoice_no", "S"));
        o.push(object("relation", "totals", "m"));
    });
    let plan = plan(Driver::Postgres, &desired(), &live);
    let steps: Vec<(&str, bool)> = plan.steps.iter().map(|s| (s.sql.as_str(), s.destructive)).collect();
    assert_eq!(
        steps,
        [("DROP MATERIALIZED VIEW {schema}.totals", true), ("DROP SEQUENCE IF EXISTS {schema}.invoice_no", true)]
    );
    assert!(plan.destructive());
}

#[test]
fn a_relation_that_changed_kind_is_not_planned() {
    let live = users("t9", |o| set(o, "relation", "users", "v"));
    let plan = plan(Driver::Postgres, &desired(), &live);
    assert_eq!(plan.unplannable, ["users is a table in the desired schema and a view here"]);
}

#[test]
fn names_that_need_quotes_are_quoted() {
    let live = users("t10", |o| {
        o.push(object("column", "users.Nick Name", "text"));
        o.push(object("column", "users.user", "text"));
    });
    let plan = plan(Driver::Postgres, &desired(), &live);
    assert_eq!(
        sql(&plan),
        ["ALTER TABLE {schema}.users DROP COLUMN \"Nick Name\"", "ALTER TABLE {schema}.users DROP COLUMN \"user\""]
    );
}

#[test]
fn a_table_whose_name_holds_a_dot_keeps_its_own_columns_and_constraints() {
    // Table `a.b` (id), beside table `a` (b): their parts are named `a.b.id`
    // and `a.b`; each goes to its own table, the longest name first.
    let desired = Catalog::new(
        "strata_desired",
        &[
            object("relation", "a", "r"),
            object("column", "a.b", "integer"),
            object("relation", "a.b", "r"),
            object("column", "a.b.id", "integer not null"),
            object("column", "a.b.x.y", "text"),
            object("constraint", "a.b.a.b_pkey", "PRIMARY KEY (id)"),
        ],
    );
    let plan = plan(Driver::Postgres, &desired, &Catalog::new("t1", &[]));
    assert_eq!(
        sql(&plan),
        [
            "CREATE TABLE {schema}.a (\n    b integer\n)",
            "CREATE TABLE {schema}.\"a.b\" (\n    id integer not null,\n    \"x.y\" text\n)",
            "ALTER TABLE {schema}.\"a.b\" ADD CONSTRAINT \"a.b_pkey\" PRIMARY KEY (id)",
        ]
    );
}

#[test]
fn tenants_are_grouped_by_plan_largest_group_first_and_each_plan_is_linted() {
    let wanted = desired();
    let mut grouping = Grouping::default();
    let tenants: Vec<(String, Catalog)> = (1..=7)
        .map(|i| {
            let name = format!("t{i}");
            let catalog = match i {
                1..=4 => users(&name, |_| {}),
                5 | 6 => users(&name, |o| remove(o, "index", &format!("{name}_users_email"))),
                _ => users(&name, |o| o.push(object("column", "users.nickname", "text"))),
            };
            (name, catalog)
        })
        .collect();
    for (name, catalog) in tenants.iter().rev() {
        grouping.add(name.clone(), plan(Driver::Postgres, &wanted, catalog));
    }
    let report = grouping.report(&wanted, Driver::Postgres, false, "{schema}");
    assert_eq!((report.tenants, report.differing), (7, 3));
    assert!(report.has_differences());
    let names: Vec<Vec<&str>> = report.groups.iter().map(|g| g.tenants.iter().map(String::as_str).collect()).collect();
    assert_eq!(names, [vec!["t1", "t2", "t3", "t4"], vec!["t5", "t6"], vec!["t7"]]);
    assert!(report.groups[0].in_desired_state());
    assert!(!report.groups[1].destructive && report.groups[2].destructive);
    let rules: Vec<&str> = report.groups[1].findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, ["create-index-non-concurrently"]);
    let rules: Vec<&str> = report.groups[2].findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, ["dropping-column"]);
    assert_eq!(report.groups[1].plan, plan(Driver::Postgres, &wanted, &tenants[4].1).hash());
    let text = render_text(&report);
    assert!(text.starts_with("3 of 7 tenant(s) differ from the desired schema, in 2 group(s)\n"), "{text}");
    assert!(text.contains("  [destructive] ALTER TABLE {schema}.users DROP COLUMN nickname;\n"), "{text}");
}

#[test]
fn another_placeholder_is_written_where_the_configuration_says() {
    let mut grouping = Grouping::default();
    let live = users("t1", |o| remove(o, "index", "t1_users_email"));
    grouping.add("t1".into(), plan(Driver::Postgres, &desired(), &live));
    let report = grouping.report(&desired(), Driver::Postgres, false, "__tenant__");
    assert_eq!(
        report.groups[0].steps[0].sql,
        "CREATE INDEX __tenant___users_email ON __tenant__.users USING btree (email)"
    );
}

#[test]
fn the_majority_file_is_the_largest_differing_groups_plan_and_says_how_the_others_fare() {
    let wanted = users("strata_desired", |o| o.push(object("column", "users.created", "timestamp with time zone")));
    let mut grouping = Grouping::default();
    for i in 1..=5 {
        let name = format!("t{i}");
        let live = match i {
            1..=3 => users(&name, |_| {}),
            4 => users(&name, |o| remove(o, "index", "t4_users_email")),
            _ => users(&name, |o| o.push(object("column", "users.created", "timestamp with time zone"))),
        };
        grouping.add(name, plan(Driver::Postgres, &wanted, &live));
    }
    let report = grouping.report(&wanted, Driver::Postgres, false, "{schema}");
    let file = majority_file(&report).unwrap();
    assert_eq!(file.group.tenants, ["t1", "t2", "t3"]);
    assert_eq!(file.group.steps[0].sql, "ALTER TABLE {schema}.users ADD COLUMN created timestamp with time zone");
    let fits: Vec<(bool, usize, usize)> =
        file.others.iter().map(|o| (o.fits, o.left.len(), o.not_needed.len())).collect();
    assert_eq!(fits, [(true, 1, 0), (false, 0, 1)]);
    let said = render_others(&file);
    assert!(said.starts_with("t4: the file runs there; 1 step(s) left after it"), "{said}");
    assert!(said.contains("t5: the file does not fit them (1 of its step(s) not theirs, first: ALTER TABLE"), "{said}");

    // Most tenants in the desired state: no file for the whole fleet.
    let mut grouping = Grouping::default();
    for name in ["t1", "t2"] {
        grouping.add(name.into(), plan(Driver::Postgres, &desired(), &users(name, |_| {})));
    }
    grouping.add(
        "t3".into(),
        plan(Driver::Postgres, &desired(), &users("t3", |o| o.push(object("column", "users.x", "text")))),
    );
    assert_eq!(majority_file(&grouping.report(&desired(), Driver::Postgres, false, "{schema}")), None);
}

#[test]
fn apply_refuses_while_a_group_is_destructive_unless_told_and_leaves_unplannable_groups() {
    let wanted = desired();
    let mut grouping = Grouping::default();
    grouping.add("t1".into(), plan(Driver::Postgres, &wanted, &users("t1", |_| {})));
    grouping.add("t2".into(), plan(Driver::Postgres, &wanted, &users("t2", |o| remove(o, "index", "t2_users_email"))));
    grouping.add(
        "t3".into(),
        plan(Driver::Postgres, &wanted, &users("t3", |o| o.push(object("column", "users.x", "text")))),
    );
    grouping.add(
        "t4".into(),
        plan(Driver::Postgres, &wanted, &users("t4", |o| set(o, "type", "status", "closed, active"))),
    );
    let report = grouping.report(&wanted, Driver::Postgres, false, "{schema}");
    let refused = selection(&report, Destructive::Refuse, "tenant").unwrap_err();
    assert_eq!(refused.0.len(), 1);
    assert!(refused.to_string().starts_with("1 group(s) would lose data, so nothing ran: plan "), "{refused}");
    assert!(refused.to_string().contains("(1 tenant(s)): ALTER TABLE {schema}.users DROP COLUMN x;"), "{refused}");
    let names = |groups: &[&DesiredGroup]| -> Vec<String> { groups.iter().map(|g| g.tenants.join(",")).collect() };
    let skipped = selection(&report, Destructive::Skip, "tenant").unwrap();
    assert_eq!(names(&skipped.run), ["t2"]);
    let left: Vec<&DesiredGroup> = skipped.left.iter().map(|(g, _)| *g).collect();
    let mut left = names(&left);
    left.sort();
    assert_eq!(left, ["t3", "t4"]);
    let allowed = selection(&report, Destructive::Allow, "tenant").unwrap();
    let mut run = names(&allowed.run);
    run.sort();
    assert_eq!(run, ["t2", "t3"]);
    assert!(allowed.left[0].1.contains("not planned: enum status"), "{:?}", allowed.left);
    let t2 = allowed.run.iter().find(|g| g.tenants == ["t2"]).unwrap();
    let source = plan_source(t2, None);
    assert_eq!(source.file, format!("desired/{}.sql", t2.plan));
    assert_eq!(source.contents, "CREATE INDEX {schema}_users_email ON {schema}.users USING btree (email);\n");
    assert!(is_plan_file(&source.file) && !is_plan_file("desiredx/a.sql") && !is_plan_file("tenants/desired.sql"));
    // A single schema's: a single migration of its directory's schema.
    let single = plan_source(t2, Some("schemas/ref"));
    assert_eq!(single.file, format!("schemas/ref/desired/{}.sql", t2.plan));
    assert_eq!((single.single_schema(), single.contents.as_str()), (Some("ref"), source.contents.as_str()));
    assert!(is_plan_file(&single.file));
    assert!(!is_plan_file("ref/desired/002.sql") && !is_plan_file("ref/x/desired.sql"));
    assert!(!is_plan_file(&format!("ref/desired/{}.sql", t2.plan.to_uppercase())));
}

#[test]
fn a_single_schema_is_brought_to_a_desired_schema_only_while_nothing_is_pending() {
    use crate::migrate::summary::Counts;
    let none = Counts::default();
    assert_eq!(single_apply_ready(&none, [("ref", 0), ("config", 0)]), Ok(()));
    let tenants = Counts { tenant_migrations: 1, tenant_migrations_total: 40, ..Counts::default() };
    assert_eq!(single_apply_ready(&tenants, []).unwrap_err().runs, 40);
    let other = single_apply_ready(&none, [("ref", 0), ("config", 2)]).unwrap_err();
    assert_eq!((other.files, other.schema.as_deref()), (2, Some("config")));
    assert!(other.to_string().starts_with("2 migration file(s) of config are pending"), "{other}");
}

#[test]
fn identity_and_generated_columns_are_created_as_such_and_a_change_of_them_is_not_planned() {
    let wanted = users("strata_desired", |o| {
        o.extend([
            object("relation", "events", "r"),
            object("column", "events.id", "bigint not null generated always as identity"),
            object("column", "events.doubled", "integer generated always as ((n * 2)) stored"),
            object("column", "events.n", "integer"),
        ])
    });
    let plan = plan(Driver::Postgres, &wanted, &users("t1", |_| {}));
    assert_eq!(
        sql(&plan),
        [
            "CREATE TABLE {schema}.events (\n    doubled integer generated always as ((n * 2)) stored,\n    id bigint not null generated always as identity,\n    n integer\n)"
        ]
    );
    let live = users("t1", |o| {
        o.extend([
            object("relation", "events", "r"),
            object("column", "events.id", "bigint not null"),
            object("column", "events.doubled", "integer generated always as ((n * 2)) stored"),
            object("column", "events.n", "integer"),
        ])
    });
    let plan = super::plan(Driver::Postgres, &wanted, &live);
    assert!(plan.steps.is_empty(), "{plan:?}");
    assert_eq!(
        plan.unplannable,
        ["column events.id: its identity or generation differs (here: none; desired: generated always as identity)"]
    );
}

#[test]
fn a_created_table_lists_its_columns_in_the_desired_order_which_is_never_compared() {
    let with_order = |schema: &str, order: &str| {
        users(schema, |o| {
            o.extend([
                object("relation", "events", "r"),
                object("column", "events.id", "bigint not null"),
                object("column", "events.at", "timestamp with time zone"),
                object("column", "events.body", "text"),
                object(COLUMN_ORDER, "events", order),
            ])
        })
    };
    let wanted = with_order("strata_desired", "id\nbody\nat");
    let plan = plan(Driver::Postgres, &wanted, &users("t1", |_| {}));
    assert_eq!(
        sql(&plan),
        ["CREATE TABLE {schema}.events (\n    id bigint not null,\n    body text,\n    at timestamp with time zone\n)"]
    );
    // A tenant whose columns stand in another order is in the desired state.
    let live = with_order("t1", "at\nbody\nid");
    assert!(super::plan(Driver::Postgres, &wanted, &live).is_empty());
    assert_eq!(wanted.fingerprint(), live.fingerprint());
}

#[test]
fn nothing_is_planned_while_a_tenant_migration_is_pending() {
    use crate::migrate::summary::Counts;
    assert_eq!(ready(&Counts { single_migrations: 3, ..Counts::default() }), Ok(()));
    let pending = Counts { tenant_migrations: 2, tenant_migrations_total: 7, ..Counts::default() };
    let refused = ready(&pending).unwrap_err();
    assert_eq!(refused, PendingMigrations { files: 2, runs: 7, schema: None });
    assert_eq!(
        refused.to_string(),
        "2 tenant migration file(s) are pending (7 runs over the tenants): apply them first (strata apply), then \
         the desired schema; nothing ran"
    );
}

#[test]
fn a_single_schema_is_not_planned_while_one_of_its_own_migrations_is_pending() {
    let pending = [("t1", 4), ("ref", 2), ("config", 0)];
    assert_eq!(single_ready(pending, "config"), Ok(()));
    assert_eq!(single_ready(pending, "logs"), Ok(()));
    let refused = single_ready(pending, "ref").unwrap_err();
    assert_eq!(
        refused.to_string(),
        "2 migration file(s) of ref are pending: apply them first (strata apply), then the desired schema; nothing ran"
    );
}

#[test]
fn one_group_is_chosen_by_its_plan_or_the_start_of_it() {
    let group = |plan: &str, tenants: &[&str], steps: usize| DesiredGroup {
        plan: plan.to_string(),
        tenants: tenants.iter().map(|t| t.to_string()).collect(),
        steps: (0..steps).map(|i| Step { sql: format!("S{i}"), destructive: false }).collect(),
        destructive: false,
        unplannable: Vec::new(),
        findings: Vec::new(),
    };
    let report = DesiredReport {
        desired: "d".into(),
        tenants: 6,
        differing: 5,
        groups: vec![
            group("aaaa1111bbbb2222", &["t1", "t2", "t3"], 1),
            group("aaaa9999cccc3333", &["t4", "t5"], 2),
            group("dddd0000eeee4444", &["t6"], 0),
        ],
    };
    let one = only_group(report.clone(), "AAAA9").unwrap();
    assert_eq!(one.groups.len(), 1);
    assert_eq!((one.groups[0].plan.as_str(), one.tenants, one.differing), ("aaaa9999cccc3333", 2, 2));
    assert_eq!(only_group(report.clone(), "aaaa1111bbbb2222").unwrap().groups[0].tenants, ["t1", "t2", "t3"]);

    let ambiguous = only_group(report.clone(), "aaaa").unwrap_err();
    assert_eq!(
        ambiguous.to_string(),
        "2 groups have a plan starting with aaaa: give more of it; the plans: aaaa1111bbbb, aaaa9999cccc; nothing ran"
    );
    let unknown = only_group(report.clone(), "ffff").unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "no group of tenants has plan ffff; the plans: aaaa1111bbbb, aaaa9999cccc; nothing ran"
    );
    assert_eq!(only_group(report, "").unwrap_err().matching, 0, "an empty plan names no group");
}

#[test]
fn a_step_that_loses_data_in_one_tenant_of_a_group_is_destructive_for_the_group() {
    let step = |destructive| Plan {
        steps: vec![Step { sql: "ALTER TABLE {schema}.t ALTER COLUMN c TYPE numeric(10,0)".into(), destructive }],
        unplannable: Vec::new(),
    };
    for order in [[false, true], [true, false]] {
        let mut grouping = Grouping::default();
        grouping.add("t1".into(), step(order[0]));
        grouping.add("t2".into(), step(order[1]));
        let report = grouping.report(&Catalog::default(), Driver::Postgres, false, "{schema}");
        assert_eq!(report.groups.len(), 1);
        assert!(report.groups[0].destructive && report.groups[0].steps[0].destructive, "{order:?}");
    }
}
