//! Property tests of the core's parsers and planner (bounded case counts so
//! `cargo test` stays fast). Each property is a rule the documentation of
//! the module states.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::Bound;

use proptest::prelude::*;
use strata_core::endpoint::template::{Template, Value, rewrite_legacy_placeholders};
use strata_core::endpoint::{EndpointError, RoutePlan, accept};
use strata_core::migrate::MigrationType;
use strata_core::migrate::backfill::{self, Key, KeyValue, Machine, Sizer, Stored};
use strata_core::migrate::batches::split_go_batches;
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::check_driver;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::failure::Cause;
use strata_core::migrate::format::Format;
use strata_core::migrate::history;
use strata_core::migrate::ident::{
    quote_ansi, quote_mysql, quote_sqlserver, validate_identifier, validate_new_tenant_name,
};
use strata_core::migrate::plan::Unit;
use strata_core::migrate::plan::{Action, AppliedMigration, Plan, PlanInput, Step, StepSet, Target, plan};
use strata_core::migrate::quarantine::FailureBudget;
use strata_core::migrate::redact::redact_data_source;
use strata_core::migrate::run::schedule::{Next, OnFailure, Schedule};
use strata_core::migrate::run::{Absorption, RunKind, by_outcome};
use strata_core::migrate::source::{SourceFile, SourceMigration, read_directories, source_migrations};
use strata_core::migrate::summary::{Summary, render_template};
use strata_core::webhooks::signature;

fn config() -> Config {
    let yaml = "baseLocation: m\ndriver: sqlite\ndataSource: sqlite://x/main.db\n\
                singleMigrations: [ref, config]\ntenantMigrations: [tenants]\n\
                singleScripts: [scripts/config]\ntenantScripts: [scripts/tenants]\n";
    Config::parse(yaml, &BTreeMap::new()).unwrap()
}

const DIRECTORIES: [&str; 5] = ["ref", "config", "tenants", "scripts/config", "scripts/tenants"];

fn file_sets() -> impl Strategy<Value = Vec<(usize, String)>> {
    prop::collection::vec((0..DIRECTORIES.len(), "[0-9a-z_]{1,6}\\.sql"), 0..40).prop_map(|files| {
        let mut seen = HashSet::new();
        files.into_iter().filter(|(dir, name)| seen.insert((*dir, name.clone()))).collect()
    })
}

fn to_sources(files: &[(usize, String)]) -> Vec<SourceFile> {
    files
        .iter()
        .map(|(dir, name)| SourceFile {
            directory: DIRECTORIES[*dir].to_string(),
            name: name.clone(),
            bytes: format!("-- {dir} {name}").into_bytes(),
        })
        .collect()
}

/// A file of one of the formats Strata reads, or one no format runs: every
/// text that must never run forward says `UNDO`.
fn format_file(kind: u8, n: u8) -> (String, String) {
    let (name, text) = match kind {
        0 => (format!("{n}_plain.sql"), "create table p (x int);\n".to_string()),
        1 => (format!("{n}_d.sql"), "-- migrate:up\ncreate table d (x int);\n-- migrate:down\nUNDO d;\n".into()),
        2 => (format!("{n}_g.sql"), "-- +goose Up\ncreate table g (x int);\n-- +goose Down\nUNDO g;\n".into()),
        3 => (format!("{n}_m.up.sql"), "create table m (x int);\n".into()),
        4 => (format!("{n}_m.down.sql"), "UNDO m;\n".into()),
        5 => (format!("V{n}__f.sql"), "create table f (x int);\n".into()),
        6 => (format!("U{n}__f.sql"), "UNDO f;\n".into()),
        7 => (format!("R__r{n}.sql"), "create or replace view r as select 1;\n".into()),
        8 => (
            if n.is_multiple_of(2) { "afterMigrate.sql".into() } else { format!("beforeEachMigrate__x{n}.sql") },
            "UNDO cb;\n".into(),
        ),
        9 => (format!("README{n}.md"), "UNDO readme;\n".into()),
        10 => (format!("V{n}_oops.sql"), "create table o (x int);\n".into()),
        11 => (format!("V{n}__x.down.sql"), "UNDO x;\n".into()),
        12 => (format!("{n}_d.sql"), "create table a (x int);\n-- migrate:down\nUNDO a;\n".into()),
        13 => (format!("{n}_g.sql"), "create table b (x int);\n--   +goose   Down\nUNDO b;\n".into()),
        14 => (format!("V{n}__f.sql.conf"), "executeInTransaction=false\n".into()),
        _ => (format!("{n}_n.txt"), "UNDO txt;\n".into()),
    };
    (name, text)
}

/// A ranged backfill run over an in-memory table of `keys`, as the shell
/// drives core's `backfill::Machine`: `batch_ends` (`ahead` ranges at once)
/// answered from the table,
/// each batch's time drawn from `elapsed`, rows inserted while it runs
/// (`inserts`, one per turn), and each write (the upper key once read, each
/// batch with its checkpoint) committed or lost as `commits` says (then the
/// machine restarts from what the books last committed). Checks that every
/// key present when the backfill started and not above its upper key falls
/// in exactly one committed range, that no other key falls in two, and
/// none above the upper key in any.
fn backfill_over(
    keys: BTreeSet<Key>,
    inserts: &[Key],
    ceiling: u32,
    elapsed: &[u64],
    commits: &[bool],
    ahead: usize,
) -> Result<(), TestCaseError> {
    let mut table = keys;
    let mut books: Option<Stored> = None;
    let mut start: Option<BTreeSet<Key>> = None;
    let mut committed: Vec<(Option<Key>, Key)> = Vec::new();
    let restart = |books: &Option<Stored>| Machine::new(true, books.clone(), Sizer::new(ceiling, 100));
    let mut machine = restart(&books);
    let (mut turn, mut rows_done) = (0usize, 0u64);
    loop {
        turn += 1;
        prop_assert!(turn < 100_000, "the backfill never ends");
        let commit = commits.get(turn).copied().unwrap_or(true);
        match machine.next() {
            backfill::Next::ReadLast => {
                prop_assert!(books.as_ref().is_none_or(|b| b.upper.is_none()), "the upper key read twice");
                let last = table.last().cloned();
                let estimate = last.as_ref().map_or(0, |upper| table.range(..=upper.clone()).count() as u64);
                machine.last_read(last, estimate);
                if commit {
                    books = Some(machine.stored().clone());
                    start = Some(table.clone());
                } else {
                    machine = restart(&books);
                }
            }
            backfill::Next::FindEnd { size } => {
                prop_assert!((1..=ceiling).contains(&size));
                let (lower, end) = machine.range();
                prop_assert!(end.is_none());
                prop_assert_eq!(
                    lower,
                    books.as_ref().and_then(|b| b.after.as_ref()),
                    "a range starts after the checkpoint"
                );
                let upper = machine.stored().upper.clone().expect("an upper key before any range");
                let from = lower.map_or(Bound::Unbounded, |l| Bound::Excluded(l.clone()));
                // The ends of the next `ahead` ranges, as `batch_ends` reads them.
                let within: Vec<&Key> =
                    table.range((from, Bound::Included(upper))).take(size as usize * ahead).collect();
                let ends: Vec<Key> = within
                    .chunks(size as usize)
                    .filter(|c| c.len() == size as usize)
                    .map(|c| c[c.len() - 1].clone())
                    .collect();
                machine.ends_found(ends, ahead);
            }
            backfill::Next::Run { .. } => {
                let (lower, end) = machine.range();
                prop_assert_eq!(
                    lower,
                    books.as_ref().and_then(|b| b.after.as_ref()),
                    "a range starts after the checkpoint"
                );
                let (lower, end) = (lower.cloned(), end.cloned().expect("a range to run"));
                let from = lower.clone().map_or(Bound::Unbounded, Bound::Excluded);
                let rows = table.range((from, Bound::Included(end.clone()))).count() as u64;
                let stored = machine.ran(rows, elapsed[turn % elapsed.len()]);
                if commit {
                    rows_done += rows;
                    prop_assert_eq!(stored.after.as_ref(), Some(&end));
                    prop_assert_eq!((stored.rows_done, stored.batches), (rows_done, committed.len() as u64 + 1));
                    books = Some(stored);
                    committed.push((lower, end));
                } else {
                    machine = restart(&books);
                }
            }
            backfill::Next::Done => break,
        }
        if let Some(key) = inserts.get(turn) {
            table.insert(key.clone());
        }
    }
    let books = books.expect("a finished backfill is in the books");
    prop_assert!(books.done);
    let start = start.expect("the start committed");
    let upper = start.last().cloned();
    prop_assert_eq!(&books.upper, &upper);
    prop_assert_eq!(books.rows_estimated, start.len() as u64);
    // Ranges follow each other from the start to the upper key.
    for (i, (lower, _)) in committed.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| committed[p].1.clone());
        prop_assert_eq!(lower, &previous, "range {} does not start where the one before ended", i);
    }
    prop_assert_eq!(committed.last().map(|(_, end)| end.clone()), upper.clone());
    let ranges_holding = |key: &Key| {
        committed.iter().filter(|(lower, end)| lower.as_ref().is_none_or(|l| key > l) && key <= end).count()
    };
    for key in &table {
        let expected = match &upper {
            Some(upper) if key > upper => 0..=0,
            _ if start.contains(key) => 1..=1,
            _ => 0..=1,
        };
        prop_assert!(expected.contains(&ranges_holding(key)), "{:?} in {} ranges", key, ranges_holding(key));
    }
    Ok(())
}

fn int_key(n: i64) -> Key {
    vec![KeyValue::Int(n)]
}

fn pair_key((tenant, code): (i64, String)) -> Key {
    vec![KeyValue::Int(tenant), KeyValue::Text(code)]
}

fn group(t: MigrationType) -> u8 {
    match t {
        MigrationType::SingleMigration | MigrationType::TenantMigration => 0,
        MigrationType::SingleScript => 1,
        MigrationType::TenantScript => 2,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn config_parsing_never_panics(text in ".{0,400}") {
        let _ = Config::parse(&text, &BTreeMap::new());
    }

    #[test]
    fn config_parsing_never_panics_on_yaml_shaped_input(
        lines in prop::collection::vec(("[a-zA-Z]{1,16}", "[ -~]{0,30}"), 0..12)
    ) {
        let text: String = lines.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
        let _ = Config::parse(&text, &BTreeMap::new());
    }

    #[test]
    fn redacted_config_never_shows_the_password_and_parses_back(
        password in "pw[A-Za-z0-9]{4,20}",
        header_secret in "hs[A-Za-z0-9]{4,20}",
        hook_secret in "ws[A-Za-z0-9]{4,20}",
        port in 1u16..,
    ) {
        let yaml = format!(
            "baseLocation: m\ndriver: postgres\ndataSource: postgres://svc:{password}@db/app\n\
             singleMigrations: [ref]\nport: {port}\nwebHookURL: https://h/services/{hook_secret}\n\
             webHookHeaders: [\"Authorization: Bearer {header_secret}\"]\n"
        );
        let config = Config::parse(&yaml, &BTreeMap::new()).unwrap();
        let rendered = config.render_redacted();
        prop_assert!(!rendered.contains(&password));
        prop_assert!(!rendered.contains(&header_secret));
        prop_assert!(!rendered.contains(&hook_secret));
        let back = Config::parse(&rendered, &BTreeMap::new()).unwrap();
        prop_assert_eq!(back.port, port);
        prop_assert_eq!(back.data_source, "postgres://svc:***@db/app");
    }

    #[test]
    fn passwords_never_survive_redaction(
        user in "[a-z]{1,8}",
        password in "PW[A-Za-z0-9!$%*+.~-]{1,20}",
        host in "[a-z]{1,8}",
        form in 0usize..5,
    ) {
        let text = match form {
            0 => format!("postgres://{user}:{password}@{host}:5432/db?sslmode=disable"),
            1 => format!("{user}:{password}@tcp({host}:3306)/db?parseTime=true"),
            2 => format!("host={host} user={user} password={password} dbname=db"),
            3 => format!("Server=tcp:{host},1433;User Id={user};Password={password};Database=db"),
            _ => format!("postgres://{host}/db?user={user}&password={password}"),
        };
        let redacted = redact_data_source(&text);
        // "PW" starts the password and appears nowhere else; its tail must not survive either.
        prop_assert!(!redacted.contains("PW"), "{} -> {}", text, redacted);
        // (A tail made only of '*' is indistinguishable from the mask itself, and
        // a tail that also occurs outside the password, as the user "pq" in
        // "PWpq" does, proves nothing.)
        let tail = &password[2..];
        let elsewhere = text.replacen(&password, "", 1).contains(tail);
        prop_assert!(
            password.len() < 4 || tail.chars().all(|c| c == '*') || elsewhere || !redacted.contains(tail),
            "{} -> {}", text, redacted
        );
        prop_assert!(redacted.contains(&host));
    }

    #[test]
    fn identifiers_are_exactly_the_documented_set(name in "\\PC{0,70}") {
        let documented = (1..=63).contains(&name.len())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        prop_assert_eq!(validate_identifier(&name).is_ok(), documented);
    }

    #[test]
    fn quoting_round_trips(name in "\\PC{0,40}") {
        let unquote = |quoted: &str, open: char, close: char| {
            let inner = quoted.strip_prefix(open).and_then(|q| q.strip_suffix(close)).unwrap();
            inner.replace(&format!("{close}{close}"), &close.to_string())
        };
        prop_assert_eq!(unquote(&quote_ansi(&name), '"', '"'), name.clone());
        prop_assert_eq!(unquote(&quote_mysql(&name), '`', '`'), name.clone());
        prop_assert_eq!(unquote(&quote_sqlserver(&name), '[', ']'), name);
    }

    #[test]
    fn source_order_is_the_documented_one_whatever_the_input_order(files in file_sets(), seed in any::<u64>()) {
        let config = config();
        let ordered = source_migrations(config.directories(), to_sources(&files)).unwrap();
        let mut shuffled = files.clone();
        let len = shuffled.len().max(1);
        for i in 0..shuffled.len() {
            shuffled.swap(i, (seed as usize).wrapping_add(i * 7) % len);
        }
        prop_assert_eq!(&source_migrations(config.directories(), to_sources(&shuffled)).unwrap(), &ordered);
        let position = |dir: &str| DIRECTORIES.iter().position(|d| *d == dir).unwrap();
        for pair in ordered.windows(2) {
            let key = |m: &SourceMigration| {
                (group(m.migration_type), m.name.as_bytes().to_vec(), m.migration_type, position(&m.source_dir))
            };
            prop_assert!(key(&pair[0]) < key(&pair[1]), "{:?} before {:?}", pair[0].file, pair[1].file);
        }
    }

    #[test]
    fn the_planner_is_deterministic_plans_each_pair_once_and_converges(
        files in file_sets(),
        tenants in prop::collection::btree_set("[a-z]{1,5}", 0..5),
        recorded_mask in any::<u64>(),
    ) {
        let config = config();
        let sources = source_migrations(config.directories(), to_sources(&files)).unwrap();
        let tenants: Vec<String> = tenants.into_iter().filter(|t| t != "svc").collect();
        // Some pairs recorded already (as a previous version would have).
        let full = plan(PlanInput { sources: &sources, applied: &[], tenants: &tenants, target: &Target::AllSchemas, action: Action::Apply, out_of_order: Default::default() }).unwrap();
        let applied: Vec<AppliedMigration> = full.steps.iter().enumerate()
            .filter(|(i, _)| recorded_mask & (1 << (i % 64)) != 0)
            .map(|(_, step)| {
                let m = &sources[step.migration as usize];
                AppliedMigration { file: m.file.clone(), name: m.name.clone(), schema: full.schema_of(step).to_string(), migration_type: m.migration_type, checksum: m.checksum.clone() }
            })
            .collect();
        let input = PlanInput { sources: &sources, applied: &applied, tenants: &tenants, target: &Target::AllSchemas, action: Action::Apply, out_of_order: Default::default() };
        let first = plan(input).unwrap();
        prop_assert_eq!(&first, &plan(input).unwrap());

        let mut pairs = HashSet::new();
        let mut last_migration = 0;
        for step in &first.steps {
            prop_assert!(pairs.insert((step.migration, step.schema)), "planned twice");
            prop_assert!(step.migration >= last_migration, "out of source order");
            last_migration = step.migration;
            let m = &sources[step.migration as usize];
            if !m.migration_type.is_script() {
                let recorded = applied.iter().any(|a| a.file == m.file && a.schema == first.schema_of(step));
                prop_assert!(!recorded, "a recorded migration was planned again");
            }
        }
        let c = first.counts;
        prop_assert_eq!(c.single_migrations + c.single_scripts + c.tenant_migrations_total + c.tenant_scripts_total, first.steps.len() as u64);

        // Recording the plan leaves only scripts to do.
        let mut all = applied.clone();
        all.extend(first.steps.iter().map(|step| {
            let m = &sources[step.migration as usize];
            AppliedMigration { file: m.file.clone(), name: m.name.clone(), schema: first.schema_of(step).to_string(), migration_type: m.migration_type, checksum: m.checksum.clone() }
        }));
        let next = plan(PlanInput { applied: &all, ..input }).unwrap();
        prop_assert!(next.steps.iter().all(|s| sources[s.migration as usize].migration_type.is_script()));
        prop_assert_eq!(next.counts.migrations_grand_total(), 0);
    }

    #[test]
    fn template_rendering_never_panics_and_keeps_json_valid(prefix in "[ -~&&[^\"\\\\$]]{0,20}", version in any::<Option<i64>>()) {
        let summary = Summary { started_at: "2026-11-22T00:00:00.000000Z".into(), duration: 0.5, counts: Default::default() };
        let template = format!("{{\"text\": \"{prefix}${{summary}}\", \"id\": \"${{summary.versionId}}\"}}");
        let rendered = render_template(&template, &summary, version);
        let parsed: serde_json::Value = serde_json::from_str(&rendered).unwrap();
        let text = parsed["text"].as_str().unwrap();
        prop_assert_eq!(text, format!("{prefix}{}", summary.to_json(version)));
    }

    #[test]
    fn arbitrary_templates_never_panic(template in "\\PC{0,200}") {
        let summary = Summary { started_at: "t".into(), duration: f64::NAN, counts: Default::default() };
        let _ = render_template(&template, &summary, Some(1));
    }

    #[test]
    fn go_batches_lose_nothing_but_separators(lines in prop::collection::vec(prop_oneof!["GO", " go ", "select [0-9]", "-- x", ""], 0..20)) {
        let script = lines.join("\n");
        let batches = split_go_batches(&script);
        let kept: String = batches.concat();
        let expected: Vec<&str> = script.split_inclusive('\n').filter(|l| !l.trim().eq_ignore_ascii_case("go")).collect();
        prop_assert_eq!(kept.replace('\n', ""), expected.concat().replace('\n', ""));
        for batch in batches {
            prop_assert!(!batch.lines().any(|l| l.trim().eq_ignore_ascii_case("go")));
            prop_assert!(!batch.trim().is_empty());
        }
    }

    #[test]
    fn uri_templates_never_panic_and_only_prefix_cuts_fail(
        template in "[a-z{}/?&#+;.:*,%0-9 😀é-]{0,60}",
        values in prop::collection::vec(("[a-z]{1,3}", "\\PC{0,8}"), 0..6),
    ) {
        let compiled = Template::compile(&rewrite_legacy_placeholders(&template));
        let lookup = |name: &str| values.iter().find(|(key, _)| key == name).map_or(Value::Absent, |(_, v)| Value::Scalar(v.as_str().into()));
        if let Err(error) = compiled.expand(lookup) {
            prop_assert_eq!(error, EndpointError::MalformedUri);
        }
    }

    #[test]
    fn accept_rewriting_never_panics_and_is_identity_without_media_type(accept in "\\PC{0,60}", url in "\\PC{0,20}") {
        prop_assert_eq!(accept::rewrite(&accept, "", &[], &url), accept.as_str());
        let _ = accept::rewrite(&accept, "raw", &["a-b", "c"], "/graphql");
    }

    #[test]
    fn route_plans_consume_every_plain_placeholder(names in prop::collection::vec("[a-z][a-z0-9_]{0,6}", 1..5)) {
        let url: String = names.iter().map(|name| format!("/{{{name}}}")).collect();
        let plan = RoutePlan::new("get", Some(&url));
        prop_assert_eq!(plan.method(), "GET");
        for name in &names {
            prop_assert!(plan.consumes(name));
        }
        let values: Vec<String> = names.iter().map(|name| format!("v-{name}")).collect();
        let lookup = |name: &str| names.iter().position(|n| n == name).map_or(Value::Absent, |i| Value::Scalar(values[i].as_str().into()));
        let expected: String = names.iter().map(|name| format!("/v-{name}")).collect();
        prop_assert_eq!(plan.url("", lookup, []).unwrap(), expected);
    }

    #[test]
    fn signatures_verify_and_any_single_byte_change_fails(
        secret in "\\PC{1,20}",
        payload in prop::collection::vec(any::<u8>(), 1..300),
        at in any::<usize>(),
        flip in 1u8..=255,
    ) {
        let header = signature::sign(&secret, &payload);
        prop_assert!(signature::verify(&secret, &payload, &header));
        let mut changed = payload.clone();
        let index = at % changed.len();
        changed[index] ^= flip;
        prop_assert!(!signature::verify(&secret, &changed, &header));
        let mut bytes = header.clone().into_bytes();
        let position = at % bytes.len();
        bytes[position] ^= flip & 0x7f;
        if let Ok(tampered) = String::from_utf8(bytes)
            && tampered != header
        {
            prop_assert!(!signature::verify(&secret, &payload, &tampered));
        }
    }

    #[test]
    fn new_tenant_names_never_collide_with_shared_or_engine_schemas(
        name in "[A-Za-z0-9_-]{1,12}|(pg_|db_|PG_|Db_)[a-z0-9]{0,6}|main|temp|public|mysql|sys|svc|ref|CONFIG|information_schema|performance_schema|guest|dbo|select|User|table|KEY|left|plan",
        driver in prop::sample::select(Driver::ALL.to_vec()),
    ) {
        let singles = ["ref", "config"];
        let verdict = validate_new_tenant_name(&name, driver, singles);
        let lower = name.to_ascii_lowercase();
        let engine_schema = match driver {
            Driver::Sqlite => ["main", "temp"].contains(&lower.as_str()),
            Driver::Postgres => lower.starts_with("pg_") || ["information_schema", "public"].contains(&lower.as_str()),
            Driver::Mysql => ["mysql", "sys", "performance_schema", "information_schema"].contains(&lower.as_str()),
            Driver::SqlServer => lower.starts_with("db_") || ["sys", "information_schema", "guest", "dbo"].contains(&lower.as_str()),
        };
        let shared = lower == "svc" || singles.contains(&lower.as_str());
        // Read as written without quotes: a letter or `_` first, then
        // letters, digits and `_`; PostgreSQL folds upper case, so lower only.
        let letter = |c: char| if driver == Driver::Postgres { c.is_ascii_lowercase() } else { c.is_ascii_alphabetic() };
        let plain = name.chars().next().is_some_and(|c| letter(c) || c == '_')
            && name.chars().all(|c| letter(c) || c.is_ascii_digit() || c == '_');
        let keyword = strata_core::migrate::keywords::reserved_words(driver).contains(&lower.as_str());
        prop_assert_eq!(
            verdict.is_ok(),
            !engine_schema && !shared && plain && !keyword,
            "{:?} on {:?}: {:?}", name, driver, verdict
        );
        // Accepted names are always valid identifiers, quoted safely everywhere.
        if verdict.is_ok() {
            prop_assert!(validate_identifier(&name).is_ok());
        }
    }

    #[test]
    fn a_data_source_is_accepted_only_by_the_driver_of_its_shape(
        user in "[a-z]{1,8}",
        password in "[A-Za-z0-9!*]{0,12}",
        host in "[a-z]{1,10}(\\.[a-z]{2,5})?",
        form in 0usize..6,
    ) {
        let (text, owner) = match form {
            0 => (format!("postgres://{user}:{password}@{host}:5432/app"), Driver::Postgres),
            1 => (format!("host={host} user={user} password={password} dbname=app"), Driver::Postgres),
            2 => (format!("mysql://{user}:{password}@{host}:3306/app"), Driver::Mysql),
            3 => (format!("{user}:{password}@tcp({host}:3306)/app"), Driver::Mysql),
            4 => (format!("Server=tcp:{host},1433;User Id={user};Password={password}"), Driver::SqlServer),
            _ => (format!("/var/lib/{host}/{user}.db"), Driver::Sqlite),
        };
        for driver in Driver::ALL {
            let verdict = check_driver(driver, &text);
            prop_assert_eq!(verdict.is_ok(), driver == owner, "{} under {:?}: {:?}", text, driver, verdict);
            if let Err(error) = verdict
                && password.len() >= 4
            {
                prop_assert!(!error.to_string().contains(&password), "{}", error);
            }
        }
    }

    #[test]
    fn no_down_undo_or_callback_text_is_ever_read_forward_whatever_the_directory_holds(
        files in prop::collection::vec((0u8..16, 1u8..6), 1..12),
    ) {
        let config = config();
        let mut names = HashSet::new();
        let sources: Vec<SourceFile> = files
            .iter()
            .map(|&(kind, n)| format_file(kind, n))
            .filter(|(name, _)| names.insert(name.clone()))
            .map(|(name, text)| SourceFile { directory: "ref".into(), name, bytes: text.into_bytes() })
            .collect();
        let choices = std::iter::once(None).chain(Format::ALL.into_iter().map(Some));
        for choice in choices {
            let formats: BTreeMap<String, Format> = choice.map(|f| ("ref".to_string(), f)).into_iter().collect();
            let Ok(read) = read_directories(config.directories(), &formats, sources.clone()) else { continue };
            for migration in &read.migrations {
                prop_assert!(!migration.forward.contains("UNDO"), "{:?} ({:?}) runs {:?}", migration.file, choice, migration.forward);
                prop_assert!(migration.file.ends_with(".sql"), "{:?}", migration.file);
            }
            for source in &sources {
                let is_read = read.migrations.iter().any(|m| m.file == format!("ref/{}", source.name))
                    || read.migrations.iter().any(|m| m.down.as_ref().is_some_and(|d| d.file == format!("ref/{}", source.name)));
                let listed = read.ignored.contains(&format!("ref/{}", source.name));
                prop_assert!(!source.name.ends_with(".md") || listed, "{} not said ignored", source.name);
                prop_assert!(!(is_read && listed), "{} both read and ignored", source.name);
            }
        }
    }

    #[test]
    fn a_schedule_driven_by_random_outcomes_keeps_its_invariants(
        outcomes in prop::collection::vec(0u8..5, 1..40),
        ends in prop::collection::vec(any::<prop::sample::Index>(), 64),
        written in prop::collection::vec(prop::bool::weighted(0.9), 40),
        steps_each in 1u32..4,
        concurrency in 1usize..6,
        budget in prop_oneof![Just(FailureBudget::None), (0u32..6).prop_map(FailureBudget::Tenants), (0u8..60).prop_map(FailureBudget::Percent)],
        retrying in any::<bool>(),
    ) {
        // A single schema (`ref`, schema 0), then one unit per tenant (each
        // one transaction: it commits whole or nothing). The shell's loop,
        // as the executor drives core's `Schedule`: units end in a random
        // order, each with its drawn outcome; a quarantine row may fail to
        // be written.
        let tenants = outcomes.len();
        let sources: Vec<SourceMigration> = std::iter::once(SourceMigration::plain("ref", "0.sql", MigrationType::SingleMigration, ""))
            .chain((1..=steps_each).map(|m| SourceMigration::plain("tenants", &format!("{m}.sql"), MigrationType::TenantMigration, "")))
            .collect();
        let mut steps = vec![Step { migration: 0, schema: 0, execute: true }];
        for m in 0..steps_each {
            steps.extend((1..=tenants as u32).map(|t| Step { migration: 1 + m, schema: t, execute: true }));
        }
        let plan = Plan {
            schemas: std::iter::once("ref".to_string()).chain((0..tenants).map(|t| format!("t{t:02}"))).collect(),
            steps: steps.into_iter().collect(),
            ..Plan::default()
        };
        let rules = Absorption::new(RunKind { budget, retrying, new_tenant: false, dry_run: false, tenants });
        let causes = [None, Some(Cause::Statement), Some(Cause::LockTimeout), Some(Cause::StatementTimeout), Some(Cause::ConnectionLost)];
        let mut schedule = Schedule::new(&plan, &sources, rules, concurrency);
        let (mut committed, mut put_aside, mut started) = (StepSet::default(), Vec::new(), HashSet::new());
        let mut running: Vec<Unit> = Vec::new();
        let (mut stopped_by, mut version_exists, mut turns, mut writes) = (None, false, 0usize, 0usize);
        loop {
            turns += 1;
            prop_assert!(turns < 10_000, "the schedule never ends");
            match schedule.next(version_exists) {
                Next::Start(unit) => {
                    prop_assert!(stopped_by.is_none(), "a unit started after the version stopped");
                    prop_assert!(started.insert(unit.schema), "schema {} started twice", unit.schema);
                    prop_assert!(!put_aside.contains(&unit.schema));
                    if unit.schema == 0 {
                        prop_assert!(running.is_empty(), "ref runs alone");
                    } else {
                        prop_assert!(started.contains(&0) && !running.iter().any(|u| u.schema == 0), "tenants wait for ref");
                    }
                    running.push(unit);
                    let limit = if version_exists { concurrency } else { 1 };
                    prop_assert!(running.len() <= limit, "{} units run at once over a limit of {}", running.len(), limit);
                }
                Next::Wait => {
                    prop_assert!(!running.is_empty(), "a wait with nothing running");
                    let unit = running.remove(ends[turns % ends.len()].index(running.len()));
                    let outcome = if unit.schema == 0 { None } else { causes[outcomes[unit.schema as usize - 1] as usize] };
                    match outcome {
                        None => {
                            unit.steps.iter().for_each(|s| committed.insert(*s));
                            version_exists = true;
                            schedule.committed();
                        }
                        Some(cause) => match schedule.failed(Some(cause)) {
                            OnFailure::Stops => { stopped_by.get_or_insert(cause); }
                            OnFailure::PutsAside => {
                                prop_assert!(cause.is_tenants_own() && (!budget.is_none() || retrying));
                                let ok = written[writes % written.len()];
                                writes += 1;
                                if ok {
                                    put_aside.push(unit.schema);
                                }
                                if !schedule.put_aside(unit.schema, ok) {
                                    stopped_by.get_or_insert(cause);
                                }
                            }
                        },
                    }
                }
                Next::Done => break,
            }
        }
        prop_assert!(running.is_empty(), "done with units running");
        let split = by_outcome(&plan, &committed, None);
        // Each schema in exactly one list; none partly committed.
        let mut all: Vec<&String> = split.committed.iter().chain(&split.partly).chain(&split.none).collect();
        all.sort();
        let mut names: Vec<&String> = plan.schemas.iter().collect();
        names.sort();
        prop_assert_eq!(all, names);
        prop_assert!(split.partly.is_empty());
        for schema in &put_aside {
            prop_assert!(split.none.contains(&plan.schemas[*schema as usize]), "put aside but committed");
        }
        // A version that went on absorbed no more than its budget allows;
        // without a budget (and not a retry) nothing is put aside.
        if stopped_by.is_none() {
            prop_assert_eq!(started.len(), tenants + 1, "a version that went on ran every unit");
            if !retrying {
                prop_assert!(put_aside.len() <= budget.allowed(tenants));
            }
        }
        if budget.is_none() && !retrying {
            prop_assert!(put_aside.is_empty());
        }
        // A connection lost is never absorbed: it stops the version.
        for (t, outcome) in outcomes.iter().enumerate() {
            if *outcome == 4 && started.contains(&(t as u32 + 1)) {
                prop_assert!(stopped_by.is_some() && !put_aside.contains(&(t as u32 + 1)));
            }
        }
    }

    #[test]
    fn a_backfill_of_integer_keys_interrupted_anywhere_ranges_each_key_once(
        keys in prop::collection::btree_set(-500i64..500, 0..300),
        inserts in prop::collection::vec(prop::option::of(-600i64..1200), 0..200),
        ceiling in 1u32..40,
        elapsed in prop::collection::vec(0u64..400, 1..16),
        commits in prop::collection::vec(prop::bool::weighted(0.75), 0..120),
        ahead in 1usize..6,
    ) {
        let keys = keys.into_iter().map(int_key).collect();
        let inserts: Vec<Key> = inserts.into_iter().map(|n| n.map_or_else(Vec::new, int_key)).collect();
        let inserts: Vec<Key> = inserts.into_iter().filter(|k| !k.is_empty()).collect();
        backfill_over(keys, &inserts, ceiling, &elapsed, &commits, ahead)?;
    }

    #[test]
    fn a_backfill_of_composite_keys_interrupted_anywhere_ranges_each_key_once(
        keys in prop::collection::btree_set((0i64..6, "[a-cB]{0,3}"), 0..200),
        inserts in prop::collection::vec((0i64..8, "[a-dB]{0,3}"), 0..100),
        ceiling in 1u32..25,
        elapsed in prop::collection::vec(0u64..400, 1..16),
        commits in prop::collection::vec(prop::bool::weighted(0.75), 0..120),
        ahead in 1usize..6,
    ) {
        let keys = keys.into_iter().map(pair_key).collect();
        let inserts: Vec<Key> = inserts.into_iter().map(pair_key).collect();
        backfill_over(keys, &inserts, ceiling, &elapsed, &commits, ahead)?;
    }

    /// A Sync that found histories records, in each tenant, exactly the
    /// files whose versions its history applied and did not undo, in every
    /// tool's spelling of a version — never another, in a tenant with a
    /// history or without one.
    #[test]
    fn a_sync_adopting_histories_records_exactly_what_each_history_says_ran(
        files in 1usize..12,
        histories in prop::collection::vec(
            prop::option::of(prop::collection::vec((0usize..14, prop::bool::weighted(0.8)), 0..20)),
            1..8,
        ),
        zeros in 0usize..3,
    ) {
        let sources: Vec<SourceMigration> = (1..=files)
            .map(|n| SourceMigration::plain("tenants", &format!("{n:03}_f.sql"), MigrationType::TenantMigration, ""))
            .collect();
        let tenants: Vec<String> = (0..histories.len()).map(|i| format!("t{i}")).collect();
        let target = Target::AllSchemas;
        let input = PlanInput {
            sources: &sources,
            applied: &[],
            tenants: &tenants,
            target: &target,
            action: Action::Sync,
            out_of_order: Default::default(),
        };
        let whole = plan(input).unwrap();
        let mut found = Vec::new();
        let mut expected: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        for (tenant, rows) in tenants.iter().zip(&histories) {
            let Some(rows) = rows else { continue };
            let mut ran = BTreeSet::new();
            let mut written = Vec::new();
            for &(version, applied) in rows {
                // Versions past the files would be refused: kept to the files.
                let version = version % files + 1;
                let spelled = format!("{}{version}", "0".repeat(zeros));
                if applied { ran.insert(version); } else { ran.remove(&version); }
                written.push((spelled, if applied { "applied" } else { "undone" }.to_string()));
            }
            expected.insert(tenant.clone(), ran);
            found.push(history::Found { schema: tenant.clone(), tool: history::Tool::Goose, rows: written });
        }
        let any = !found.is_empty();
        let kept = history::adopt(whole.clone(), &sources, found, false, &[]).unwrap();
        if !any {
            prop_assert_eq!(kept, whole);
            return Ok(());
        }
        let mut recorded: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        for step in kept.steps.iter() {
            prop_assert!(!step.execute);
            let version = sources[step.migration as usize].name[..3].parse::<usize>().unwrap();
            recorded.entry(kept.schema_of(step).to_string()).or_default().insert(version);
        }
        expected.retain(|_, ran| !ran.is_empty());
        prop_assert_eq!(recorded, expected);
    }
}
