use proptest::prelude::*;

use crate::migrate::lint::*;

use Driver::{Mysql, Postgres, SqlServer, Sqlite};
use Severity::{Error as E, Warning as W};

/// The findings of one file as (rule, severity, line, column).
type Found = Vec<(&'static str, Severity, u64, u64)>;

fn found(report: &Report) -> Found {
    report.findings.iter().map(|f| (f.rule, f.severity, f.at.line, f.at.column)).collect()
}

fn lint_files(driver: Driver, files: &[(&str, &str)], lock_timeout_set: bool) -> Report {
    lint(&LintInput { driver, files, lock_timeout_set, citus: false })
}

fn one(driver: Driver, text: &str) -> Report {
    lint_files(driver, &[("m/001.sql", text)], true)
}

/// Where `needle` first starts in `text` (1-based line and character column).
fn pos(text: &str, needle: &str) -> (u64, u64) {
    let offset = text.find(needle).unwrap_or_else(|| panic!("{needle:?} not in {text:?}"));
    let before = &text[..offset];
    let line = before.matches('\n').count() as u64 + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() as u64 + 1;
    (line, column)
}

/// Asserts that `text` on `driver` gives exactly one finding of `rule` and
/// `severity`, at the first `needle`, and nothing unchecked.
fn fires(driver: Driver, text: &str, rule: &str, severity: Severity, needle: &str) {
    let report = one(driver, text);
    let (line, column) = pos(text, needle);
    assert_eq!(found(&report), vec![(rule, severity, line, column)], "{driver:?}: {text}");
    assert_eq!(report.unchecked, vec![], "{driver:?}: {text}");
}

/// Asserts that `text` on `driver` gives no finding and nothing unchecked.
fn quiet(driver: Driver, text: &str) {
    let report = one(driver, text);
    assert_eq!(found(&report), vec![], "{driver:?}: {text}");
    assert_eq!(report.unchecked, vec![], "{driver:?}: {text}");
}

#[test]
fn create_index_non_concurrently() {
    fires(Postgres, "create index t_a on t (a);", "create-index-non-concurrently", W, "create");
    fires(Postgres, "select 1;\n  CREATE UNIQUE INDEX t_a ON t (a);", "create-index-non-concurrently", W, "CREATE");
    quiet(Postgres, "-- strata:no-transaction\ncreate index concurrently t_a on t (a);");
    quiet(Postgres, "create table t (a int);\ncreate index t_a on t (a);");
    quiet(Postgres, "create table {schema}.t (a int);\ncreate unique index t_a on T (a);");
}

#[test]
fn drop_index_non_concurrently() {
    let rule = "drop-index-non-concurrently";
    fires(Postgres, "drop index t_a;", rule, W, "t_a");
    fires(Postgres, "DROP INDEX IF EXISTS {schema}.t_a;", rule, W, "{schema}.t_a");
    let report = one(Postgres, "-- strata:no-transaction\ndrop index concurrently t_a;");
    assert_eq!(found(&report), vec![]);
    quiet(Postgres, "create table t (a int);\ncreate index t_a on t (a);\ndrop index t_a;");
    quiet(Mysql, "drop index t_a on t;");
}

#[test]
fn mssql_index_without_online() {
    let rule = "mssql-index-without-online";
    fires(SqlServer, "CREATE INDEX ix ON dbo.t (a)", rule, W, "CREATE");
    fires(SqlServer, "CREATE NONCLUSTERED INDEX ix ON dbo.t (a) INCLUDE (b)\nGO", rule, W, "CREATE");
    fires(
        SqlServer,
        "PRINT 'x'\nCREATE UNIQUE CLUSTERED INDEX ix ON dbo.t (a) WITH (FILLFACTOR = 80)",
        rule,
        W,
        "CREATE",
    );
    quiet(SqlServer, "CREATE NONCLUSTERED INDEX ix ON dbo.t (a) WITH (ONLINE = ON)");
    quiet(SqlServer, "CREATE INDEX ix ON dbo.t (a) WITH (FILLFACTOR = 80, ONLINE = ON)\nGO\n");
    quiet(SqlServer, "CREATE TABLE dbo.t (a int)\nGO\nCREATE NONCLUSTERED INDEX ix ON dbo.t (a)\nGO");
}

#[test]
fn adding_volatile_default() {
    let rule = "adding-volatile-default";
    fires(Postgres, "alter table t add column u uuid not null default gen_random_uuid();", rule, W, "u uuid");
    fires(Postgres, "alter table t add column r float8 default (random() * 10);", rule, W, "r float8");
    fires(Postgres, "alter table t add n bigint default nextval('t_seq');", rule, W, "n bigint");
    fires(Postgres, "alter table t add column c timestamptz default clock_timestamp();", rule, W, "c time");
    quiet(Postgres, "alter table t add column c timestamptz not null default now();");
    quiet(Postgres, "alter table t add column d timestamptz default current_timestamp, add column e int default 0;");
    quiet(Postgres, "create table t (a int);\nalter table t add column u uuid default gen_random_uuid();");
}

#[test]
fn adding_serial_column() {
    fires(Postgres, "alter table t add column id bigserial;", "adding-serial-column", W, "id");
    fires(Postgres, "alter table t add column id int generated always as identity;", "adding-serial-column", W, "id");
    quiet(Postgres, "create table t (a int);\nalter table t add column id serial;");
    quiet(Postgres, "alter table t add column n bigint;");
}

#[test]
fn changing_column_type() {
    fires(Postgres, "alter table t alter column a type bigint;", "changing-column-type", E, "a type");
    fires(
        Postgres,
        "alter table t alter column a set data type text using a::text;",
        "changing-column-type",
        E,
        "a set",
    );
    fires(SqlServer, "ALTER TABLE dbo.t ALTER COLUMN a bigint", "changing-column-type", E, "a big");
    quiet(Postgres, "create table t (a int);\nalter table t alter column a type bigint;");
    quiet(Postgres, "alter table t add column a2 bigint;");
}

#[test]
fn setting_not_null() {
    fires(Postgres, "alter table t alter column a set not null;", "setting-not-null", W, "a set");
    quiet(
        Postgres,
        "alter table t add constraint a_nn check (a is not null) not valid;\nalter table t validate constraint a_nn;\n\
         alter table t alter column a set not null;",
    );
    // The check validated in an earlier file counts too.
    let files = [
        ("1.sql", "alter table t add constraint a_nn check ((a is not null)) not valid;"),
        ("2.sql", "alter table t validate constraint a_nn;"),
        ("3.sql", "alter table t alter column a set not null, drop constraint a_nn;"),
    ];
    assert_eq!(found(&lint_files(Postgres, &files, true)), vec![]);
    // Not validated, or on another column: the scan still happens.
    let text = "alter table t add constraint a_nn check (a is not null) not valid;\n\
                alter table t alter column a set not null;";
    assert_eq!(found(&one(Postgres, text)), vec![("setting-not-null", W, 2, 28)]);
    let text = "alter table t add constraint b_nn check (b is not null) not valid;\nalter table t validate constraint \
                b_nn;\nalter table t alter column a set not null;";
    assert_eq!(found(&one(Postgres, text)), vec![("setting-not-null", W, 3, 28)]);
}

#[test]
fn constraint_missing_not_valid() {
    let rule = "constraint-missing-not-valid";
    fires(Postgres, "alter table t add constraint t_u foreign key (u) references u (id);", rule, W, "t_u");
    fires(Postgres, "alter table t add constraint t_pos check (a > 0);", rule, W, "t_pos");
    quiet(Postgres, "alter table t add constraint t_u foreign key (u) references u (id) not valid;");
    quiet(Postgres, "alter table t validate constraint t_u;");
    quiet(Postgres, "create table t (u int);\nalter table t add constraint t_u foreign key (u) references u (id);");
}

#[test]
fn adding_unique_constraint() {
    let rule = "adding-unique-constraint";
    fires(Postgres, "alter table t add constraint t_a unique (a);", rule, W, "t_a");
    fires(Postgres, "alter table t add constraint t_pk primary key (id);", rule, W, "t_pk");
    quiet(Postgres, "alter table t add constraint t_a unique using index t_a_idx;");
    quiet(Postgres, "alter table t add constraint t_pk primary key using index t_pk_idx;");
}

#[test]
fn dropping_column_on_every_engine() {
    for driver in [Postgres, SqlServer, Sqlite] {
        let text = "alter table t drop column a;";
        fires(driver, text, "dropping-column", W, "a;");
        quiet(driver, "create table t (a int, b int);\nalter table t drop column a;");
    }
    // MySQL before 8.0.29 copies the table to drop a column.
    let report = one(Mysql, "alter table t drop column a;");
    assert_eq!(found(&report), vec![("mysql-alter-without-algorithm", W, 1, 1), ("dropping-column", W, 1, 27)]);
    quiet(Mysql, "create table t (a int, b int);\nalter table t drop column a;");
    let report = one(Postgres, "alter table t drop column a, drop column b;");
    assert_eq!(found(&report), vec![("dropping-column", W, 1, 27), ("dropping-column", W, 1, 42)]);
}

#[test]
fn dropping_table_on_every_engine() {
    for driver in Driver::ALL {
        fires(driver, "drop table if exists audit_log;", "dropping-table", W, "audit_log");
        quiet(driver, "create table scratch (a int);\ndrop table scratch;");
    }
    let report = one(Postgres, "drop table a, b;");
    assert_eq!(found(&report), vec![("dropping-table", W, 1, 12), ("dropping-table", W, 1, 15)]);
}

#[test]
fn renaming_column() {
    let rule = "renaming-column";
    for driver in [Postgres, Mysql, Sqlite] {
        fires(driver, "alter table t rename column a to b;", rule, W, "a to");
        quiet(driver, "create table t (a int);\nalter table t rename column a to b;");
    }
    fires(Mysql, "alter table t change a b int, algorithm=instant;", rule, W, "a b");
    quiet(Mysql, "alter table t change a a bigint, algorithm=inplace, lock=none;");
    fires(SqlServer, "EXEC sp_rename 'dbo.t.a', 'b', 'COLUMN'", rule, W, "EXEC");
    quiet(SqlServer, "CREATE TABLE dbo.t (a int)\nGO\nEXEC sp_rename 'dbo.t.a', 'b', 'COLUMN'");
}

#[test]
fn renaming_table() {
    let rule = "renaming-table";
    for driver in [Postgres, Mysql, Sqlite] {
        fires(driver, "alter table t rename to u;", rule, W, "t rename");
        quiet(driver, "create table t (a int);\nalter table t rename to u;\ncreate index u_a on u (a);");
    }
    fires(Mysql, "rename table t to u;", rule, W, "t to");
    fires(SqlServer, "EXEC sp_rename 'dbo.t', 'u'", rule, W, "EXEC");
    quiet(SqlServer, "EXEC sp_rename 'dbo.t.ix_a', 'ix_b', 'INDEX'");
}

#[test]
fn vacuum_full_cluster_and_lock_table() {
    fires(Postgres, "-- strata:no-transaction\nvacuum full t;", "vacuum-full", E, "vacuum");
    fires(Postgres, "cluster t using t_pkey;", "cluster", E, "cluster");
    fires(Postgres, "lock table t in access exclusive mode;", "lock-table", W, "lock");
    fires(Mysql, "lock tables t write;", "lock-table", W, "lock");
    quiet(Postgres, "-- strata:no-transaction\nvacuum t;");
    quiet(Postgres, "select * from t for update;");
}

#[test]
fn missing_lock_timeout_only_when_the_service_sets_none() {
    let text = "alter table t add column c int;\nalter table t add column d int;";
    assert_eq!(found(&lint_files(Postgres, &[("a.sql", text)], false)), vec![("missing-lock-timeout", W, 1, 1)]);
    assert_eq!(found(&lint_files(Postgres, &[("a.sql", text)], true)), vec![]);
    for safe in [
        "set lock_timeout = '5s';\nalter table t add column c int;",
        "SET LOCAL lock_timeout TO '2s';\nalter table t add column c int;",
        "-- strata:lock-timeout 5s\nalter table t add column c int;",
        "-- strata:no-transaction\nalter table t add column c int;",
        "create table t (a int);\nalter table t add column c int;",
        "alter table t validate constraint c;",
    ] {
        assert_eq!(found(&lint_files(Postgres, &[("a.sql", safe)], false)), vec![], "{safe}");
    }
    // Set after the lock is taken: too late.
    let late = "drop table t;\nset lock_timeout = '5s';";
    assert_eq!(
        found(&lint_files(Postgres, &[("a.sql", late)], false)),
        vec![("missing-lock-timeout", W, 1, 1), ("dropping-table", W, 1, 12)]
    );
}

#[test]
fn mysql_alter_without_algorithm() {
    let rule = "mysql-alter-without-algorithm";
    fires(Mysql, "alter table t modify column c bigint not null;", rule, W, "alter");
    fires(Mysql, "alter table t add column c int after b;", rule, W, "alter");
    fires(Mysql, "alter table t modify c bigint, algorithm=inplace;", rule, W, "alter");
    quiet(Mysql, "alter table t modify column c bigint not null, algorithm=inplace, lock=none;");
    quiet(Mysql, "alter table t add column c int, algorithm=instant;");
    quiet(Mysql, "alter table t add column c int, add index t_c (c);");
    quiet(Mysql, "create table t (c int);\nalter table t modify column c bigint;");
    quiet(Mysql, "alter table t modify column c bigint /*!50600 , algorithm=inplace, lock=none */;");
}

#[test]
fn allow_directive_silences_named_rules_in_its_file_only() {
    let allowed = "-- strata:allow dropping-table, renaming-column\ndrop table t;\nalter table u rename column a to b;";
    let other = "drop table v;";
    let report = lint_files(Postgres, &[("1.sql", allowed), ("2.sql", other)], true);
    assert_eq!(found(&report), vec![("dropping-table", W, 1, 12)]);
    assert_eq!(report.findings[0].file, "2.sql");
    // Only leading comments hold directives.
    let late = "drop table t;\n-- strata:allow dropping-table\ndrop table u;";
    assert_eq!(found(&one(Postgres, late)).len(), 2);
    let block = "/* strata:allow Dropping-Table\n   strata:no-transaction */\ndrop table t;";
    assert_eq!(found(&one(Postgres, block)), vec![]);
}

#[test]
fn unknown_rule_in_allow_directive_is_a_warning() {
    let text = "-- first line\n-- strata:allow dropping-table, no-such-rule\ndrop table t;";
    let report = one(Postgres, text);
    assert_eq!(found(&report), vec![("unknown-rule", W, 2, 1)]);
    assert!(report.findings[0].message.contains("\"no-such-rule\""), "{}", report.findings[0].message);
}

#[test]
fn placeholder_keeps_positions_and_names() {
    let text = "create table {schema}.accounts (id int);\nalter table {schema}.users drop column {schema}_x;\n\
                create index a_id on accounts (id);\ncreate index u_id on {schema}.users (id);";
    let report = one(Postgres, text);
    assert_eq!(found(&report), vec![("dropping-column", W, 2, 40), ("create-index-non-concurrently", W, 4, 1)]);
    assert_eq!(pos(text, "{schema}_x"), (2, 40));
    // A table created in an earlier file is new in later ones.
    let files = [("1.sql", "create table {schema}.t (a int);"), ("2.sql", "create index t_a on {SCHEMA}.t (a);")];
    let report = lint_files(Postgres, &files, true);
    assert_eq!((found(&report), report.unchecked.len()), (vec![], 1), "{{SCHEMA}} is not the placeholder");
    let files = [("1.sql", "create table {schema}.t (a int);"), ("2.sql", "create index t_a on t (a);")];
    assert_eq!(found(&lint_files(Postgres, &files, true)), vec![]);
    // Another qualifier names another table.
    let files = [("1.sql", "create table audit.t (a int);"), ("2.sql", "drop table t;")];
    assert_eq!(found(&lint_files(Postgres, &files, true)), vec![("dropping-table", W, 1, 12)]);
}

#[test]
fn unparseable_statements_are_listed_not_judged() {
    let text = "do $$ begin perform 1; end $$;\ndrop table t;\ncreate table p (a int) partition by range (a) \
                with (fillfactor = 70) tablespace nope x y z;\ncreate index p_a on p (a);";
    let report = one(Postgres, text);
    assert_eq!(found(&report), vec![("dropping-table", W, 2, 12)]);
    let at: Vec<Position> = report.unchecked.iter().map(|u| u.at).collect();
    assert_eq!(at, vec![Position { line: 1, column: 1 }, Position { line: 3, column: 1 }]);
    assert!(report.unchecked[1].reason.contains("at 3:"), "{}", report.unchecked[1].reason);
    // Unterminated string: the tokenizer fails; still no panic.
    let report = one(Postgres, "select 'abc");
    assert_eq!(report.unchecked.len(), 1);
    assert_eq!(found(&report), vec![]);
}

#[test]
fn sql_server_batches_are_cut_again_when_the_parser_fails() {
    let text = "ALTER TABLE dbo.t ADD c int NULL\nCREATE NONCLUSTERED INDEX ix ON dbo.t (c)\nIF OBJECT_ID('dbo.x') \
                IS NOT NULL\n    DROP TABLE dbo.x\nALTER TABLE dbo.t DROP COLUMN b\nGO\n";
    let report = one(SqlServer, text);
    assert_eq!(
        found(&report),
        vec![("mssql-index-without-online", W, 2, 1), ("dropping-table", W, 4, 16), ("dropping-column", W, 5, 31)]
    );
}

#[test]
fn mysql_executable_comments_are_read() {
    let text = "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n/*!40101 SET NAMES utf8mb4 */;\n\
                DROP TABLE IF EXISTS `old_t`;\nCREATE TABLE `t` (\n  `id` int NOT NULL\n) ENGINE=InnoDB \
                /*!50100 PARTITION BY HASH (`id`) PARTITIONS 4 */;\nALTER TABLE `t` MODIFY `id` bigint NOT NULL;";
    let report = one(Mysql, text);
    assert_eq!(found(&report), vec![("dropping-table", W, 3, 22)]);
    assert_eq!(report.unchecked, vec![]);
}

#[test]
fn hostile_nesting_is_not_checked_and_does_not_overflow() {
    let depth = 10_000;
    let texts = [
        format!("select {}1{};", "(".repeat(depth), ")".repeat(depth)),
        format!("select * from {}select 1{};", "(select * from (".repeat(depth), ") s)".repeat(depth)),
        format!("select {}1;", "- ".repeat(depth)),
        format!("select {}true;", "not ".repeat(depth)),
        format!("select {}1{};", "case when ".repeat(depth), " then 1 end".repeat(depth)),
        format!("alter table t add column c int default {}1{};", "(".repeat(depth), ")".repeat(depth)),
        format!("create table t (a int{});", "[]".repeat(depth)),
        "begin ".repeat(depth),
    ];
    for driver in Driver::ALL {
        for text in &texts {
            let report = one(driver, text);
            assert!(report.findings.iter().all(|f| f.rule != "dropping-table"));
        }
    }
    let report = one(Postgres, &texts[0]);
    assert_eq!(report.unchecked.len(), 1);
    assert!(report.unchecked[0].reason.contains("nested deeper"), "{}", report.unchecked[0].reason);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn lint_never_panics_on_any_text(text in "\\PC{0,200}") {
        for driver in Driver::ALL {
            let _ = lint_files(driver, &[("a.sql", &text), ("b.sql", &text)], false);
        }
    }

    #[test]
    fn lint_never_panics_on_sql_like_text(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("alter table "), Just("create "), Just("index "), Just("drop "), Just("table "), Just("t"),
                Just("{schema}."), Just("("), Just(")"), Just(";"), Just("'"), Just("$$"), Just("/*!"), Just("*/"),
                Just("--"), Just("\n"), Just("GO\n"), Just("begin "), Just("end "), Just("column "), Just("a "),
                Just("default "), Just("random()"), Just("not null "), Just("`"), Just("\""), Just("["), Just("]"),
                Just("strata:allow "), Just("-- strata:allow x\n"), Just("é"), Just("EXEC sp_rename 'a.b', 'c'"),
            ],
            0..60,
        )
    ) {
        let text: String = parts.concat();
        for driver in Driver::ALL {
            let _ = lint_files(driver, &[("a.sql", &text)], false);
        }
    }
}

#[test]
fn severities_order_print_and_parse() {
    assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
    for severity in [Severity::Info, Severity::Warning, Severity::Error] {
        assert_eq!(severity.to_string().parse::<Severity>(), Ok(severity));
    }
    assert_eq!("Error".parse::<Severity>(), Err(UnknownSeverity("Error".into())));
    let report = one(Postgres, "cluster t;\ndrop table u;");
    let errors: Vec<&str> = report.at_or_above(Severity::Error).map(|f| f.rule).collect();
    assert_eq!(errors, ["cluster"]);
    assert_eq!(report.at_or_above(Severity::Info).count(), 2);
}

#[test]
fn report_serializes_in_camel_case_with_lowercase_severity() {
    let report = one(Postgres, "drop table t;");
    let json = serde_json::to_value(&report).expect("serializes");
    assert_eq!(json["findings"][0]["rule"], "dropping-table");
    assert_eq!(json["findings"][0]["severity"], "warning");
    assert_eq!(json["findings"][0]["at"], serde_json::json!({"line": 1, "column": 12}));
    assert_eq!(json["unchecked"], serde_json::json!([]));
}

#[test]
fn rules_are_listed_once_each_in_kebab_case() {
    let mut names = std::collections::HashSet::new();
    for rule in RULES {
        assert!(names.insert(rule.name), "{} twice", rule.name);
        assert!(rule.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{}", rule.name);
        assert!(!rule.drivers.is_empty() && !rule.description.is_empty(), "{}", rule.name);
    }
    assert_eq!(rule("cluster").map(|r| r.severity), Some(Severity::Error));
}

/// Our own migration files, per engine, linted in order as one set.
#[test]
fn corpus_lints_without_panic_and_with_the_expected_findings() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/lint");
    let mut total = 0;
    let mut all = Vec::new();
    for driver in Driver::ALL {
        let dir = root.join(driver.name());
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "sql"))
            .collect();
        paths.sort();
        let contents: Vec<(String, String)> = paths
            .iter()
            .map(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
                (name, std::fs::read_to_string(p).expect("readable"))
            })
            .collect();
        let files: Vec<(&str, &str)> = contents.iter().map(|(n, c)| (n.as_str(), c.as_str())).collect();
        total += files.len();
        // As one set (later files see the tables of earlier ones as new),
        // and each file alone (as when it is the one pending migration).
        let mut reports = vec![("set", lint_files(driver, &files, true))];
        reports.extend(files.iter().map(|file| ("alone", lint_files(driver, &[*file], true))));
        for (how, report) in reports {
            for f in &report.findings {
                all.push(format!("{how} {} {}:{} {} {}", driver.name(), f.file, f.at, f.rule, f.severity));
            }
            for u in &report.unchecked {
                all.push(format!("{how} {} {}:{} unchecked: {}", driver.name(), u.file, u.at, u.reason));
            }
        }
    }
    assert!(total >= 60, "{total} files");
    let text = all.join("\n");
    for expected in CORPUS_EXPECTED {
        assert!(all.iter().any(|l| l == expected), "missing {expected:?} in\n{text}");
    }
    let set: Vec<&str> =
        all.iter().map(String::as_str).filter(|l| l.starts_with("set ") && !l.contains("unchecked")).collect();
    assert_eq!(set, CORPUS_SET_FINDINGS, "{text}");
}

const CORPUS_EXPECTED: &[&str] = &[
    "alone postgres V007__status_index.sql:1:1 create-index-non-concurrently warning",
    "alone postgres V010__widen_total.sql:2:44 changing-column-type error",
    "alone postgres V014__legacy_cleanup.sql:3:53 dropping-column warning",
    "alone postgres V015__rename_display.sql:1:42 renaming-column warning",
    "alone postgres V015__rename_display.sql:2:42 adding-volatile-default warning",
    "alone postgres V015__rename_display.sql:3:46 adding-unique-constraint warning",
    "set postgres V012__backfill_do.sql:1:1 unchecked: Expected: an SQL statement, found: do at 1:1",
    "alone mysql 006_widen_name.sql:2:1 mysql-alter-without-algorithm warning",
    "alone mysql 012_rename_table.sql:1:14 renaming-table warning",
    "alone mysql 015_change_column.sql:1:1 mysql-alter-without-algorithm warning",
    "alone mysql 015_change_column.sql:1:37 renaming-column warning",
    "alone sqlserver V006__index_offline.sql:2:1 mssql-index-without-online warning",
    "alone sqlserver V007__widen_total.sql:1:42 changing-column-type error",
    "alone sqlserver V010__rename_column.sql:1:1 renaming-column warning",
    "alone sqlserver V015__view.sql:8:1 renaming-table warning",
    "alone sqlite 0007_rename_column.sql:1:33 renaming-column warning",
    "alone sqlite 0009_drop_column.sql:1:31 dropping-column warning",
    "alone sqlite 0014_rename_table.sql:1:13 renaming-table warning",
];

/// Every finding of the corpus linted as sets: the files' own tables are
/// new to their later files, so only what predates the sets is judged.
const CORPUS_SET_FINDINGS: &[&str] = &[
    "set sqlite 0012_drop_table.sql:1:22 dropping-table warning",
    "set mysql 001_schema_dump.sql:6:22 dropping-table warning",
    "set mysql 014_partitioned_dump.sql:11:1 lock-table warning",
    "set sqlserver V014__drop_legacy.sql:2:16 dropping-table warning",
];

#[test]
fn separately_a_table_of_an_earlier_file_exists() {
    let files =
        [("t/001.sql", "create table {schema}.t (a int);"), ("t/002.sql", "create index t_a on {schema}.t (a);")];
    let input = LintInput { driver: Postgres, files: &files, lock_timeout_set: true, citus: false };
    assert_eq!(found(&lint(&input)), vec![]);
    let report = lint_separately(&input);
    assert_eq!(found(&report), vec![("create-index-non-concurrently", W, 1, 1)]);
    assert_eq!(report.findings[0].file, "t/002.sql");
    assert!(report.findings[0].message.contains("{schema}.t"), "{}", report.findings[0].message);
}

#[test]
fn rendered_as_file_line_column() {
    let report = one(Postgres, "select 1;\nalter table t drop column c;");
    let text = render_text(&report, W);
    assert!(text.starts_with("m/001.sql:2:27: warning [dropping-column] "), "{text}");
    assert!(text.ends_with("1 finding(s), 1 at or above warning; 0 statement(s) not checked.\n"), "{text}");
    assert!(render_text(&report, E).contains("0 at or above error"));
}

/// One PostgreSQL file linted with the Citus rules on.
fn citus(text: &str) -> Report {
    lint(&LintInput { driver: Postgres, files: &[("tenants/001.sql", text)], lock_timeout_set: true, citus: true })
}

fn citus_rules(report: &Report) -> Vec<(&'static str, u64)> {
    report.findings.iter().filter(|f| f.rule.starts_with("citus-")).map(|f| (f.rule, f.at.line)).collect()
}

#[test]
fn citus_rules_find_what_citus_refuses_in_a_distributed_schema() {
    let text = "create table {schema}.a (id bigserial primary key, n int);\n\
                update {schema}.a set n = random() * 10 where id > 0;\n\
                update {schema}.a set n = 1 where id = nextval('s');\n\
                update {schema}.a set n = n + 1;\n\
                create trigger a_t before insert on {schema}.a for each row execute function {schema}.f();\n";
    assert_eq!(
        citus_rules(&citus(text)),
        [("citus-volatile-in-update", 2), ("citus-volatile-in-update", 3), ("citus-trigger", 5)]
    );
    let report = citus(text);
    assert_eq!(report.findings[0].severity, Severity::Error);
    assert!(report.findings[0].message.contains("random()"), "{}", report.findings[0].message);
    // Off without Citus: the same file has no Citus finding.
    let plain = lint_files(Postgres, &[("tenants/001.sql", text)], true);
    assert!(citus_rules(&plain).is_empty());
}

#[test]
fn citus_foreign_keys_across_schemas_are_refused_within_the_schema_allowed() {
    let text = "create table {schema}.a (id bigint primary key, b bigint references shared.b (id));\n\
                create table {schema}.c (id bigint primary key, a bigint references {schema}.a (id));\n\
                create table {schema}.d (id bigint, a bigint, foreign key (a) references a (id));\n\
                alter table {schema}.d add constraint d_x foreign key (id) references other.x (id);\n";
    assert_eq!(
        citus_rules(&citus(text)),
        [("citus-foreign-key-across-schemas", 1), ("citus-foreign-key-across-schemas", 4)]
    );
    // A reference table, said so by the file.
    let allowed = format!("-- strata:allow citus-foreign-key-across-schemas\n{text}");
    assert!(citus_rules(&citus(&allowed)).is_empty());
}

#[test]
fn citus_ddl_among_statements_and_small_sequences() {
    let text = "create table {schema}.a (id serial primary key, n smallserial, m bigserial);\n\
                create index a_n on {schema}.a (n);\n\
                alter table {schema}.a rename column m to k;\n\
                create sequence {schema}.s as integer;\n\
                create sequence {schema}.t;\n\
                alter table {schema}.a add column i int generated always as identity;\n";
    assert_eq!(
        citus_rules(&citus(text)),
        [
            ("citus-small-sequence", 1),
            ("citus-small-sequence", 1),
            ("citus-ddl-among-statements", 2),
            ("citus-ddl-among-statements", 3),
            ("citus-small-sequence", 4),
            ("citus-small-sequence", 6),
        ]
    );
    // CREATE INDEX alone in its file (comments aside) is fine.
    assert!(citus_rules(&citus("-- the index\ncreate index a_n on {schema}.a (n);\n")).is_empty());
    let info = citus(text).findings.into_iter().find(|f| f.rule == "citus-ddl-among-statements").unwrap();
    assert_eq!(info.severity, Severity::Info);
}

/// The advice of the one finding of `text` on `driver`.
fn advice(driver: Driver, text: &str) -> String {
    let report = one(driver, text);
    assert_eq!(report.findings.len(), 1, "{driver:?}: {text}: {report:?}");
    report.findings[0].advice.clone()
}

#[test]
fn advice_to_fill_rows_in_batches_names_the_backfill_directive() {
    assert_eq!(
        advice(Postgres, "alter table {schema}.orders alter column total type bigint;"),
        "add a column of the new type, write both, fill it in batches (a file marked `-- strata:backfill \
         table={schema}.orders key=id`, key= its key columns), then switch reads over and drop the old column in a \
         later release"
    );
    assert_eq!(
        advice(Postgres, "alter table orders add column n bigserial;"),
        "add a plain nullable column, attach a sequence default for new rows, fill the existing rows in batches (a \
         file marked `-- strata:backfill table=orders key=id`, key= its key columns), then add the constraint"
    );
    assert_eq!(
        advice(Postgres, "alter table \"Orders\" add column token uuid default gen_random_uuid();"),
        "add the column without a default (or with a constant one), set the default in a second statement, and fill \
         the existing rows in batches (a file marked `-- strata:backfill table=\"Orders\" key=id`, key= its key \
         columns)"
    );
    for driver in [Postgres, Mysql, Sqlite] {
        let text = "alter table orders rename column total to amount;";
        assert!(advice(driver, text).contains("(a file marked `-- strata:backfill table=orders key=id`"), "{driver:?}");
    }
    // SQL Server runs backfills too.
    let file = "(a file marked `-- strata:backfill table=orders key=id`";
    let changed = advice(SqlServer, "alter table orders alter column total bigint");
    assert!(changed.contains(file), "{changed}");
    let renamed = advice(SqlServer, "exec sp_rename 'orders.total', 'amount', 'COLUMN'");
    assert!(renamed.contains(file), "{renamed}");
}

#[test]
fn a_backfill_file_is_not_misjudged() {
    // `{range}` and `{batch}` are the service's placeholders: the
    // statement around them changes rows in batches, each with its own
    // condition or limit — no rule sees an update of the whole table.
    let ranged = "-- strata:backfill table={schema}.orders key=id batch=500\n\
                  update {schema}.orders set total_cents = (total * 100)::bigint where {range};\n";
    let repeated = "-- strata:backfill batch=500\n\
                    delete from {schema}.events where id in (select id from {schema}.events where old limit {batch});\n";
    for driver in [Postgres, Mysql, Sqlite] {
        for text in [ranged, repeated] {
            for citus in [false, true] {
                let files = [("tenants/002.sql", text)];
                let report = lint(&LintInput { driver, files: &files, lock_timeout_set: false, citus });
                assert_eq!(found(&report), vec![], "{driver:?} citus={citus}: {text}");
            }
        }
    }
    // Its directive is no `strata:allow`: nothing is silenced by it.
    let text = "-- strata:backfill table=t key=id\nalter table t drop column a;";
    assert_eq!(found(&one(Postgres, text)), vec![("dropping-column", W, 2, 27)]);
}
