use crate::migrate::fingerprint::*;

fn object(kind: &str, name: &str, definition: &str) -> CatalogObject {
    CatalogObject { kind: kind.into(), name: name.into(), definition: definition.into() }
}

#[test]
fn the_schema_name_is_replaced_where_it_stands_alone_or_cut_by_underscores() {
    let t1 = [
        object("index", "t1_users_email", "CREATE INDEX t1_users_email ON t1.users USING btree (email)"),
        object("column", "users.id", "integer not null default nextval('\"t1\".users_id_seq'::regclass)"),
        object("view", "t10_view", "SELECT count(*) FROM `t1`.users  WHERE t10 > 1"),
    ];
    let normalized = normalize("t1", &t1);
    assert_eq!(
        normalized,
        [
            object("column", "users.id", "integer not null default nextval('\"{schema}\".users_id_seq'::regclass)"),
            object(
                "index",
                "{schema}_users_email",
                "CREATE INDEX {schema}_users_email ON {schema}.users USING btree (email)"
            ),
            object("view", "t10_view", "SELECT count(*) FROM `{schema}`.users WHERE t10 > 1"),
        ]
    );
    // Case does not matter; letters and digits next to it keep it.
    assert_eq!(replace_schema("Acme", "acme.x ACME_y acmes xacme"), "{schema}.x {schema}_y acmes xacme");
    assert_eq!(replace_schema("", "abc"), "abc");
    assert_eq!(replace_schema("é", "é.t éé"), "{schema}.t éé");
}

#[test]
fn tenants_alike_share_a_fingerprint_and_an_altered_one_does_not() {
    let of = |schema: &str, extra: Option<CatalogObject>| {
        let mut objects = vec![
            object("table", "users", "r"),
            object(
                "index",
                &format!("{schema}_users_email"),
                &format!("CREATE INDEX {schema}_users_email ON {schema}.users (email)"),
            ),
        ];
        objects.extend(extra);
        fingerprint(&normalize(schema, &objects))
    };
    assert_eq!(of("t1", None), of("t2", None));
    assert_ne!(of("t1", None), of("t3", Some(object("column", "users.note", "text"))));
    assert_eq!(of("t1", None).len(), 64);
}

#[test]
fn the_majority_of_a_group_decides_and_outliers_name_a_reference() {
    let state = |schema: &str, recorded: &str, fingerprint: &str| SchemaState {
        schema: schema.into(),
        recorded: recorded.into(),
        fingerprint: fingerprint.into(),
    };
    let groups = outliers(&[
        state("t3", "v2", "aaa"),
        state("t1", "v2", "aaa"),
        state("t2", "v2", "bbb"),
        state("t4", "v1", "ccc"),
        state("t5", "v1", "ccc"),
    ]);
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].tenants, ["t1", "t3"]);
    assert_eq!(groups[0].majority, "aaa");
    assert_eq!(
        groups[0].outliers,
        [Outlier { schema: "t2".into(), fingerprint: "bbb".into(), reference: "t1".into() }]
    );
    assert_eq!(groups[1].tenants, ["t4", "t5"]);
    assert!(groups[1].outliers.is_empty());
    // A tie: the smallest fingerprint is the majority, so answers are stable.
    let tie = outliers(&[state("a", "v", "f2"), state("b", "v", "f1")]);
    assert_eq!((tie[0].majority.as_str(), tie[0].outliers[0].schema.as_str()), ("f1", "a"));
    assert!(outliers(&[]).is_empty());
}

#[test]
fn a_difference_is_added_missing_or_changed() {
    let reference = [object("column", "users.email", "text not null"), object("index", "users_email", "btree (email)")];
    let outlier = [object("column", "users.email", "text"), object("column", "users.note", "text")];
    let found = diff(&reference, &outlier);
    let summary: Vec<(&str, &str)> = found.iter().map(|d| (d.name.as_str(), d.change)).collect();
    assert_eq!(summary, [("users.email", "changed"), ("users.note", "added"), ("users_email", "missing")]);
    assert_eq!(found[0].expected.as_deref(), Some("text not null"));
    assert_eq!(found[0].found.as_deref(), Some("text"));
    assert!(diff(&reference, &reference).is_empty());
}

#[test]
fn a_report_names_the_outlier_and_what_differs_in_readable_terms() {
    let tenant = |schema: &str, extra: &[CatalogObject]| {
        let mut objects = vec![
            object("relation", "users", "r"),
            object("column", "users.email", "text not null"),
            object(
                "index",
                &format!("{schema}_users_email"),
                &format!("CREATE INDEX {schema}_users_email ON {schema}.users USING btree (email)"),
            ),
        ];
        objects.extend_from_slice(extra);
        TenantCatalog {
            schema: schema.into(),
            recorded: Recorded::of(&[("tenants/001.sql", "c1"), ("tenants/002.sql", "c2")]),
            objects,
        }
    };
    let fleet = [tenant("t1", &[]), tenant("t2", &[object("column", "users.note", "text")]), tenant("t3", &[])];
    let report = report(fleet.to_vec(), &[], &Default::default());
    assert!(report.has_drift());
    assert_eq!(report.groups.len(), 1);
    assert_eq!(report.groups[0].tenants, ["t1", "t3"]);
    assert_eq!(report.outliers.len(), 1);
    assert_eq!((report.outliers[0].schema.as_str(), report.outliers[0].reference.as_str()), ("t2", "t1"));
    assert_eq!(
        render_text(&report),
        "3 tenant(s) in 1 group(s) by recorded migrations; 1 outlier(s).\n\n\
         t2 differs from t1 (same 2 recorded migration(s)):\n  + column users.note: text\n"
    );
    let clean = super::report(vec![tenant("t1", &[]), tenant("t3", &[])], &[], &Default::default());
    assert!(!clean.has_drift());
    assert!(
        render_text(&clean)
            .ends_with("No drift: every tenant looks like the others that recorded the same migrations.\n")
    );
    // Recorded in another order: the same group.
    let reordered = recorded_identity(&[("b", "2"), ("a", "1")]);
    assert_eq!(reordered, recorded_identity(&[("a", "1"), ("b", "2")]));
}

#[test]
fn a_schema_that_changed_since_its_stored_fingerprint_is_named_even_alone() {
    let single = |extra: &[CatalogObject]| {
        let mut objects = vec![object("relation", "countries", "r")];
        objects.extend_from_slice(extra);
        TenantCatalog { schema: "ref".into(), recorded: Recorded::default(), objects }
    };
    let before = fingerprint(&normalize("ref", &single(&[]).objects));
    let stored: std::collections::BTreeMap<String, Stored> = [(
        "ref".to_string(),
        Stored { fingerprint: before.as_str().into(), recorded: recorded_identity::<&str, &str>(&[]).into() },
    )]
    .into();
    assert!(!report(vec![], &[single(&[])], &stored).has_drift());
    let changed = report(vec![], &[single(&[object("column", "countries.x", "int")])], &stored);
    assert_eq!(changed.changed.len(), 1);
    assert_eq!((changed.changed[0].schema.as_str(), changed.changed[0].stored.as_str()), ("ref", before.as_str()));
    assert!(render_text(&changed).contains(
        "changed since the service last migrated them (live fingerprint differs from the stored one): ref\n"
    ));
    // Never stored (before this release, or a failed store): not judged.
    assert!(!report(vec![], &[single(&[])], &Default::default()).has_drift());
    // Stored for other recorded migrations (a version killed before it
    // stored the new ones): not judged either.
    let mut later = single(&[object("relation", "regions", "r")]);
    later.recorded = Recorded::of(&[("ref/002.sql", "c")]);
    assert!(!report(vec![], &[later], &stored).has_drift());
}

#[test]
fn recorded_rows_fold_per_schema_without_scripts() {
    use crate::migrate::MigrationType::{TenantMigration, TenantScript};
    let mut fold = RecordedBySchema::default();
    fold.push("t1", "tenants/1.sql".into(), "c1".into(), TenantMigration);
    fold.push("t1", "scripts/x.sql".into(), "cx".into(), TenantScript);
    fold.push("t1", "tenants/2.sql".into(), "c2".into(), TenantMigration);
    fold.push("t2", "tenants/1.sql".into(), "c1".into(), TenantMigration);
    fold.push("t3", "scripts/x.sql".into(), "cx".into(), TenantScript);
    let recorded = fold.finish();
    assert_eq!(recorded["t1"], Recorded::of(&[("tenants/2.sql", "c2"), ("tenants/1.sql", "c1")]));
    assert_eq!(recorded["t2"], Recorded::of(&[("tenants/1.sql", "c1")]));
    assert_eq!(recorded["t3"], Recorded::default());
    assert_eq!(recorded.len(), 3);
}

#[test]
fn one_pass_over_the_server_pays_for_a_quarter_of_its_databases_or_more() {
    // A fleet's drift check: 2,000 tenants beside a handful of other databases.
    assert!(one_pass_pays(2_000, 2_006));
    // A version over a few tenants of that fleet: a lookup each.
    assert!(!one_pass_pays(3, 2_006));
    // The boundary: a quarter of the databases.
    assert!(one_pass_pays(500, 2_000));
    assert!(!one_pass_pays(499, 2_000));
    // One schema is always looked up.
    assert!(!one_pass_pays(1, 2));
    assert!(!one_pass_pays(0, 0));
}

#[test]
fn a_pass_over_the_server_gives_each_wanted_schema_the_print_of_its_own_objects() {
    let users = |schema: &str| object("table", &format!("{schema}.users"), "BASE TABLE InnoDB");
    let email = |schema: &str| object("column", "users.email", &format!("text not null default {schema}"));
    let print = |schema: &str, objects: &[CatalogObject]| fingerprint(&normalize(schema, objects));
    // Wanted out of order, one twice; `t2` has no object; `app` and `t4`
    // are not wanted; `t5`, wanted, sorts after every schema of the pass.
    let wanted: Vec<String> = ["t3", "t1", "t2", "t5", "t1"].map(String::from).to_vec();
    let mut pass = PassPrints::new(&wanted);
    for (schema, object) in [
        ("app", users("app")),
        ("t1", users("t1")),
        ("t1", email("t1")),
        ("t3", users("t3")),
        ("t4", users("t4")),
        ("t4", email("t4")),
    ] {
        pass.push(schema.to_string(), object);
    }
    let prints = pass.finish();
    assert_eq!(
        prints,
        [
            print("t3", &[users("t3")]),
            print("t1", &[email("t1"), users("t1")]),
            print("t2", &[]),
            print("t5", &[]),
            print("t1", &[users("t1"), email("t1")]),
        ]
    );
    // t1's print is its objects', not the schema-free tenants' alike.
    assert_eq!(prints[1], print("t9", &[users("t9"), email("t9")]));
    assert_ne!(prints[0], prints[1]);
}

#[test]
fn a_pass_with_no_rows_gives_every_wanted_schema_an_empty_print() {
    let wanted: Vec<String> = vec!["b".into(), "a".into()];
    assert_eq!(PassPrints::new(&wanted).finish(), [fingerprint(&[]), fingerprint(&[])]);
}
