use crate::migrate::format::*;

fn input<'a>(name: &'a str, text: &'a str) -> Input<'a> {
    Input { name, bytes: text.as_bytes() }
}

fn read_one(format: Format, name: &str, text: &str) -> Result<Read, FormatError> {
    read("m", format, &[input(name, text)]).map(|mut all| all.remove(0))
}

#[test]
fn a_dbmate_file_runs_its_up_section_only_with_the_file_s_line_numbers() {
    let text = "-- a comment\n-- migrate:up\ncreate table t (x int);\n\n-- migrate:down\ndrop table t;\n";
    let read = read_one(Format::Dbmate, "20240101_t.sql", text).unwrap();
    assert_eq!(read.forward.text, "\n\ncreate table t (x int);\n\n\n\n");
    assert!(!read.forward.text.contains("drop"));
    let down = read.down.unwrap();
    assert_eq!(down.text, "\n\n\n\n\ndrop table t;\n");
    assert!(!read.forward.no_transaction && !down.no_transaction);
    assert_eq!(read.order, SortKey::Name);

    let no_tx = "-- migrate:up transaction:false\ncreate index concurrently i on t (x);\n-- migrate:down \
                 transaction:false\ndrop index concurrently i;\n";
    let read = read_one(Format::Dbmate, "2_i.sql", no_tx).unwrap();
    assert!(read.forward.no_transaction && read.down.unwrap().no_transaction);
}

#[test]
fn dbmate_sections_out_of_place_are_refused_with_their_line() {
    let refused = |text: &str| read_one(Format::Dbmate, "1_x.sql", text).unwrap_err().to_string();
    assert_eq!(
        refused("create table a (x int);\n-- migrate:up\n"),
        "m/1_x.sql:1: SQL before the '-- migrate:up' marker (dbmate runs only the up and down sections)"
    );
    assert!(refused("-- migrate:down\ndrop table a;\n").contains("no '-- migrate:up' marker"));
    assert!(refused("-- migrate:up\n-- migrate:up\n").starts_with("m/1_x.sql:2: a second"));
    assert!(refused("-- migrate:up transaction:maybe\n").contains("\"transaction:maybe\" is not a dbmate option"));
    assert!(
        refused("-- migrate:up\n-- +goose Down\n").starts_with("m/1_x.sql:2: \"-- +goose Down\" is a goose marker")
    );
}

#[test]
fn a_strata_directory_refuses_what_would_run_an_undo_step_forward() {
    let refused = |name: &str, text: &str| read_one(Format::Strata, name, text).unwrap_err().to_string();
    assert_eq!(
        refused("1.sql", "create table a (x int);\n-- migrate:down\ndrop table a;\n"),
        "m/1.sql:2: \"-- migrate:down\" is a dbmate marker, but m is read as strata files (set migrationFormats: \
         {m: dbmate} if it holds dbmate files)"
    );
    assert!(refused("1_a.down.sql", "drop table a;").starts_with("m/1_a.down.sql: a down migration in m"));
    assert!(refused("1.sql", "select 1;\n  --   +goose Up\n").starts_with("m/1.sql:2:"));
    // A comment that merely mentions the words is no marker.
    assert!(read_one(Format::Strata, "1.sql", "-- see migrate:up in dbmate's docs\nselect 1;").is_ok());
}

#[test]
fn golang_migrate_pairs_up_and_down_files_by_number() {
    let files = [
        input("1_a.up.sql", "create table a (x int);"),
        input("1_a.down.sql", "drop table a;"),
        input("10_c.up.sql", "-- no-transaction\ncreate index concurrently i on a (x);"),
        input("2_b.up.sql", "create table b (x int);"),
    ];
    let mut all = read("m", Format::GolangMigrate, &files).unwrap();
    all.sort_by(|a, b| a.order.compare(&a.name, &b.order, &b.name));
    let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["1_a.up.sql", "2_b.up.sql", "10_c.up.sql"]);
    assert_eq!(
        all[0].down.as_ref().map(|d| (d.file.as_str(), d.text.as_str())),
        Some(("m/1_a.down.sql", "drop table a;"))
    );
    assert!(all[1].down.is_none());
    assert!(all[2].forward.no_transaction);
    // sqlx's one-way files run, in a directory of them; beside pairs (which
    // golang-migrate reads, skipping the one-way file) one is refused.
    let simple = [input("1_a.sql", "create table a (x int);"), input("2_b.sql", "create table b (x int);")];
    assert_eq!(read("m", Format::GolangMigrate, &simple).unwrap().len(), 2);
    let mixed = [files[0], files[1], input("3_sqlx_simple.sql", "insert into a values (99);")];
    assert_eq!(
        read("m", Format::GolangMigrate, &mixed).unwrap_err().to_string(),
        "m/3_sqlx_simple.sql: a one-way file beside up/down pairs (m/1_a.up.sql is one): golang-migrate never runs \
         such a file and sqlx does; name it <number>_<name>.up.sql if it is to run, or move it out of the directory"
    );
    // sqlx's marker is the text's first characters, as sqlx tests it.
    let marked =
        |text: &str| read("m", Format::GolangMigrate, &[input("7_m.up.sql", text)]).unwrap()[0].forward.no_transaction;
    assert!(marked("-- no-transaction, for the concurrent index\ncreate index concurrently i on a (x);"));
    assert!(!marked(" -- no-transaction\ninsert into a values (1);"));
    assert!(!marked("\n-- no-transaction\ninsert into a values (1);"));

    // A file that brings its own transaction runs in the unit's.
    let wrapped = "-- users\nBEGIN;\ncreate table a (x int);\ncreate index i on a (x);\nCOMMIT;\n";
    let read_wrapped = read("m", Format::GolangMigrate, &[input("5_w.up.sql", wrapped)]).unwrap();
    assert_eq!(read_wrapped[0].forward.text, "-- users\n\ncreate table a (x int);\ncreate index i on a (x);\n\n");
    // Transaction control elsewhere stays, for the inspector to refuse.
    let inside = "create table a (x int);\ncommit;\ncreate table b (x int);\n";
    assert_eq!(read("m", Format::GolangMigrate, &[input("6_x.up.sql", inside)]).unwrap()[0].forward.text, inside);

    let refused = |files: &[Input<'_>]| read("m", Format::GolangMigrate, files).unwrap_err().to_string();
    assert_eq!(refused(&[input("4_x.down.sql", "")]), "m/4_x.down.sql: undoes version 4, which has no migration file");
    assert_eq!(
        refused(&[input("4_x.up.sql", ""), input("04_y.up.sql", "")]),
        "m/4_x.up.sql and m/04_y.up.sql are both version 4"
    );
    assert!(refused(&[input("init.up.sql", "")]).starts_with("m/init.up.sql: not a golang-migrate migration name"));
}

#[test]
fn flyway_versions_sort_as_numbers_and_undo_files_are_down_parts() {
    let files = [
        input("V10__ten.sql", "select 10;"),
        input("V2__two.sql", "select 2;"),
        input("V1.10__one_ten.sql", "select 1.10;"),
        input("V1_1__one_one.sql", "select 1.1;"),
        input("U2__two.sql", "select -2;"),
        input("R__view.sql", "create or replace view v as select 1;"),
        input("V11__no_tx.sql", "create index concurrently i on t (x);"),
        input("V11__no_tx.sql.conf", "# per-script settings\nexecuteInTransaction=false\n"),
    ];
    let mut all = read("m", Format::Flyway, &files).unwrap();
    all.sort_by(|a, b| a.order.compare(&a.name, &b.order, &b.name));
    let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["V1_1__one_one.sql", "V1.10__one_ten.sql", "V2__two.sql", "V10__ten.sql", "V11__no_tx.sql", "R__view.sql"]
    );
    assert_eq!(all[2].down.as_ref().map(|d| d.text.as_str()), Some("select -2;"));
    assert!(all[4].forward.no_transaction);
    assert!(all[5].repeatable && !all[0].repeatable);

    let refused = |files: &[Input<'_>]| read("m", Format::Flyway, files).unwrap_err().to_string();
    assert!(refused(&[input("V1_init.sql", "")]).starts_with("m/V1_init.sql: not a flyway migration name"));
    assert_eq!(
        refused(&[input("V1__a.sql", ""), input("V1.0__b.sql", "")]),
        "m/V1__a.sql and m/V1.0__b.sql are both version 1"
    );
    assert_eq!(refused(&[input("U3__a.sql", "")]), "m/U3__a.sql: undoes version 3, which has no migration file");
    assert!(refused(&[input("V1__a.sql", ""), input("V1__a.sql.conf", "mixed=true")]).contains("is not supported"));
}

#[test]
fn goose_reads_its_annotations() {
    let text = "-- +goose NO TRANSACTION\n-- +goose Up\n-- +goose StatementBegin\ncreate function f() returns int as $$ \
                select 1; $$ language sql;\n-- +goose StatementEnd\n-- +goose Down\ndrop function f();\n";
    let read = read_one(Format::Goose, "00002_f.sql", text).unwrap();
    assert!(read.forward.no_transaction);
    assert!(read.forward.text.contains("create function") && !read.forward.text.contains("drop"));
    assert_eq!(read.forward.text.lines().count(), text.lines().count());
    assert!(read.down.unwrap().text.contains("drop function f();"));
    assert_eq!(read.order, SortKey::Version(vec!["2".into()]));
    let refused = |text: &str| read_one(Format::Goose, "1_x.sql", text).unwrap_err().to_string();
    assert!(refused("select 1;\n").contains("SQL before the '-- +goose Up' annotation"));
    assert!(refused("-- +goose Up\n-- +goose ENVSUB ON\n").contains("is not supported"));
    assert!(refused("-- +goose Up\n-- +goose StatementBegin\nselect 1;\n").contains("without its StatementEnd"));
    assert!(read_one(Format::Goose, "x.sql", "-- +goose Up\n").unwrap_err().to_string().contains("not a goose"));
}

#[test]
fn a_directory_s_format_is_detected_from_its_files() {
    let detect = |files: &[Input<'_>]| detect("m", files).map(Format::name);
    assert_eq!(detect(&[input("1.sql", "select 1;"), input(".gitkeep", "")]), Ok("strata"));
    assert_eq!(detect(&[input("1_a.sql", "-- migrate:up\nselect 1;")]), Ok("dbmate"));
    assert_eq!(detect(&[input("1_a.sql", "-- +goose Up\nselect 1;")]), Ok("goose"));
    assert_eq!(detect(&[input("1_a.up.sql", ""), input("1_a.down.sql", "")]), Ok("golang-migrate"));
    assert_eq!(detect(&[input("V1__a.sql", ""), input("R__b.sql", "")]), Ok("flyway"));
    // Flyway's names on only some files: refused, naming the file that is not one.
    assert_eq!(
        detect(&[input("V1__a.sql", ""), input("2.sql", "")]).unwrap_err().to_string(),
        "m is read as flyway files (m/V1__a.sql is one), but m/2.sql is not one; rename or move it, or name the \
         directory's format with migrationFormats"
    );
    // One file's down section does not make the others dbmate files: both are named.
    assert_eq!(
        detect(&[input("001.sql", "select 1;"), input("002.sql", "select 2;\n-- migrate:down\nselect 3;")])
            .unwrap_err()
            .to_string(),
        "m is read as dbmate files (m/002.sql is one), but m/001.sql is not one; rename or move it, or name the \
         directory's format with migrationFormats"
    );
    // sqlx's one-way files beside golang-migrate's pairs are of the format.
    assert_eq!(detect(&[input("1_a.up.sql", ""), input("2_b.sql", "")]), Ok("golang-migrate"));
    // Files that are not .sql are no evidence of anything.
    assert_eq!(detect(&[input("1.sql", ""), input("README.md", "-- migrate:up\n")]), Ok("strata"));
    assert_eq!(
        detect(&[input("1_a.sql", "-- migrate:up\n"), input("2_b.up.sql", "")]).unwrap_err().to_string(),
        "m mixes formats: m/1_a.sql reads as dbmate, m/2_b.up.sql as golang-migrate; name its format with \
         migrationFormats"
    );
    assert_eq!(Format::parse("sqlx"), Some(Format::GolangMigrate));
    assert_eq!(Format::parse("Migrator"), Some(Format::Strata));
    assert_eq!(Format::parse("liquibase"), None);
}

#[test]
fn versions_compare_part_by_part_as_numbers() {
    let v = |text: &str| SortKey::Version(version(text).unwrap());
    let order = |a: &str, b: &str| v(a).compare("", &v(b), "");
    assert_eq!(order("1.1", "1.10"), Ordering::Less);
    assert_eq!(order("1.10", "2"), Ordering::Less);
    assert_eq!(order("2", "10"), Ordering::Less);
    assert_eq!(order("1.0", "1"), Ordering::Equal);
    assert_eq!(order("007", "7"), Ordering::Equal);
    assert_eq!(order("99999999999999999999999", "100000000000000000000000"), Ordering::Less);
    assert_eq!(v("1").compare("b", &SortKey::Name, "a"), Ordering::Less);
    assert!(version("1..2").is_none() && version("").is_none() && version("1a").is_none());
}

#[test]
fn a_new_file_follows_the_directory_s_convention() {
    let now = "20261125223000";
    let names = |format: Format, existing: &[&str], description: &str| -> Vec<String> {
        next_files(format, existing, description, now).unwrap().into_iter().map(|f| f.name).collect()
    };
    // Timestamps: now, at their width; never before the greatest.
    assert_eq!(names(Format::Strata, &["201602220000.sql", ".gitkeep"], "Add users!"), ["202611252230_add_users.sql"]);
    assert_eq!(names(Format::Dbmate, &["20991231235959_x.sql"], "x"), ["20991231235960_x.sql"]);
    // Sequences: the next number, padded as the others.
    assert_eq!(names(Format::Strata, &["0001_a.sql", "0009_b.sql"], "c"), ["0010_c.sql"]);
    assert_eq!(
        names(Format::GolangMigrate, &["1_a.up.sql", "1_a.down.sql", "2_b.up.sql"], "c d"),
        ["3_c_d.up.sql", "3_c_d.down.sql"]
    );
    assert_eq!(names(Format::Goose, &["00099_a.sql"], "b"), ["00100_b.sql"]);
    assert_eq!(names(Format::Flyway, &["V1__a.sql", "V10__b.sql", "V2__c.sql", "R__v.sql"], "d"), ["V11__d.sql"]);
    // An empty directory: the format's usual start.
    assert_eq!(names(Format::Flyway, &[], "init"), ["V1__init.sql"]);
    assert_eq!(names(Format::GolangMigrate, &[], "init"), ["000001_init.up.sql", "000001_init.down.sql"]);
    assert_eq!(names(Format::Dbmate, &[], "init"), ["20261125223000_init.sql"]);
    // The format's markers, read back as that format.
    let dbmate = next_files(Format::Dbmate, &[], "init", now).unwrap().remove(0);
    assert!(read("m", Format::Dbmate, &[input(&dbmate.name, &dbmate.contents)]).unwrap()[0].down.is_some());
    let goose = next_files(Format::Goose, &[], "init", now).unwrap().remove(0);
    assert!(read("m", Format::Goose, &[input(&goose.name, &goose.contents)]).is_ok());
    assert_eq!(next_files(Format::Strata, &[], " -- ", now), Err(NewFileError::BadDescription(" -- ".into())));
    assert_eq!(increment("0999"), "1000");
    assert_eq!(increment("999"), "1000");
}

/// The fuzz target's body, on inputs it found (tests/data/fuzz/formats).
#[test]
fn every_format_reads_the_fuzzer_s_finds_without_panicking() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/fuzz/formats")).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let files: Vec<(&[u8], &[u8])> = data
            .split(|b| *b == 0)
            .map(|file| match file.iter().position(|b| *b == b'\n') {
                Some(at) => (&file[..at], &file[at + 1..]),
                None => (file, &[][..]),
            })
            .collect();
        let inputs: Vec<Input<'_>> = files
            .iter()
            .filter_map(|(name, bytes)| std::str::from_utf8(name).ok().map(|name| Input { name, bytes }))
            .collect();
        let _ = detect("d", &inputs);
        for format in Format::ALL {
            let Ok(mut read) = read("d", format, &inputs) else { continue };
            for file in &read {
                if let Ok(text) = std::str::from_utf8(&file.bytes) {
                    assert_eq!(file.forward.text.split('\n').count(), text.split('\n').count(), "{format:?}");
                }
            }
            read.sort_by(|a, b| a.order.compare(&a.name, &b.order, &b.name));
        }
    }
}

#[test]
fn a_flyway_directory_with_a_callback_a_readme_and_a_misnamed_file_never_runs_an_undo_file() {
    let files = |extra: Input<'static>| {
        vec![
            input("V1__users.sql", "create table users (id int);"),
            input("U1__users.sql", "drop table users;"),
            input("README.md", "# how to write migrations\ndrop table users;"),
            extra,
        ]
    };
    let detected = |files: &[Input<'_>]| detect("m", files).and_then(|format| read("m", format, files));
    // The README is ignored, in every format.
    let read_back = detected(&files(input("V2__orders.sql", "create table orders (id int);"))).unwrap();
    assert_eq!(read_back.len(), 2);
    assert!(read_back.iter().all(|r| !r.forward.text.contains("drop")));
    assert_eq!(
        read_back.iter().find(|r| r.name == "V1__users.sql").unwrap().down.as_ref().unwrap().text,
        "drop table users;"
    );
    assert!(ignored(Format::Flyway, "README.md") && ignored(Format::Strata, "notes.txt"));
    assert!(!ignored(Format::Flyway, "V1__a.sql.conf") && ignored(Format::Strata, "V1__a.sql.conf"));
    assert!(!ignored(Format::Strata, "001.SQL") && ignored(Format::Strata, ".hidden.sql"));
    // A callback is refused by name, detected or named.
    let callback = files(input("afterMigrate.sql", "grant select on users to reader;"));
    let refused = detected(&callback).unwrap_err().to_string();
    assert_eq!(
        refused,
        "m/afterMigrate.sql: a Flyway callback (afterMigrate), which Strata does not run; it is not a migration \
         either: move it out of m (an R__ repeatable script runs after every change of its own text)"
    );
    assert!(read("m", Format::Strata, &callback).unwrap_err().to_string().starts_with("m/U1__users.sql: a down"));
    assert!(
        read("m", Format::Flyway, &[input("beforeEachMigrate__log.sql", "select 1;")])
            .unwrap_err()
            .to_string()
            .starts_with("m/beforeEachMigrate__log.sql: a Flyway callback (beforeEachMigrate)")
    );
    // A misnamed file is named as the one that is not Flyway's.
    let misnamed = detected(&files(input("V4_oops.sql", "select 4;"))).unwrap_err().to_string();
    assert!(misnamed.contains("(m/V1__users.sql is one), but m/V4_oops.sql is not one"), "{misnamed}");
}

#[test]
fn a_file_named_as_a_down_part_never_runs_forward_in_any_format() {
    let refused =
        |format: Format, name: &str, text: &str| read("m", format, &[input(name, text)]).unwrap_err().to_string();
    assert_eq!(
        refused(Format::Strata, "U2__x.sql", "drop table x;"),
        "m/U2__x.sql: a down migration in m, which is read as strata files and would run it forward (set \
         migrationFormats: {m: flyway} if it holds flyway files)"
    );
    assert!(refused(Format::Dbmate, "1_x.down.sql", "-- migrate:up\ndrop table x;").contains("read as dbmate"));
    assert!(refused(Format::Goose, "2_x.down.sql", "-- +goose Up\ndrop table x;").contains("read as goose"));
    assert!(refused(Format::Flyway, "V3__x.down.sql", "drop table x;").contains("read as flyway"));
    assert!(refused(Format::GolangMigrate, "U4__x.sql", "drop table x;").contains("{m: flyway}"));
}

#[test]
fn statements_go_into_each_formats_up_part_and_read_back_as_that_format() {
    let now = "20261202150000";
    let statements = [
        "CREATE TABLE {schema}.notes (id bigint)".to_string(),
        "CREATE OR REPLACE FUNCTION {schema}.f() RETURNS integer LANGUAGE sql AS $$ select 1; $$".to_string(),
    ];
    let comments = ["not planned: enum e".to_string()];
    let fill =
        |format| with_statements(format, next_files(format, &[], "desired", now).unwrap(), &comments, &statements);
    let strata = fill(Format::Strata);
    assert_eq!(
        strata[0].contents,
        "-- not planned: enum e\nCREATE TABLE {schema}.notes (id bigint);\nCREATE OR REPLACE FUNCTION {schema}.f() RETURNS integer LANGUAGE sql AS $$ select 1; $$;\n"
    );
    let goose = fill(Format::Goose);
    assert!(goose[0].contents.starts_with("-- +goose Up\n-- not planned: enum e\nCREATE TABLE {schema}.notes (id bigint);\n-- +goose StatementBegin\nCREATE OR REPLACE FUNCTION"), "{}", goose[0].contents);
    assert!(goose[0].contents.ends_with("$$;\n-- +goose StatementEnd\n\n-- +goose Down\n\n"), "{}", goose[0].contents);
    let dbmate = fill(Format::Dbmate);
    assert!(dbmate[0].contents.starts_with("-- migrate:up\n-- not planned"));
    assert!(dbmate[0].contents.ends_with("$$;\n\n-- migrate:down\n\n"));
    let golang = fill(Format::GolangMigrate);
    assert_eq!(
        (golang[0].name.as_str(), golang[1].name.as_str()),
        ("000001_desired.up.sql", "000001_desired.down.sql")
    );
    assert_eq!(golang[0].contents, strata[0].contents);
    assert_eq!(golang[1].contents, "");
    // Each reads back as its format: the statements forward, nothing down.
    for (format, files) in [(Format::Goose, &goose), (Format::Dbmate, &dbmate)] {
        let read = read_one(format, &files[0].name, &files[0].contents).unwrap();
        assert!(read.forward.text.contains("CREATE TABLE {schema}.notes (id bigint);"), "{}", read.forward.text);
        assert!(read.forward.text.contains("AS $$ select 1; $$;"), "{}", read.forward.text);
        assert_eq!(read.down.map(|d| d.text.trim().to_string()), Some(String::new()));
    }
}

/// An Atlas directory of `files`, with the `atlas.sum` written for them.
fn atlas_dir(files: &[(&str, &str)]) -> Vec<(String, String)> {
    let inputs: Vec<Input<'_>> = files.iter().map(|(name, text)| input(name, text)).collect();
    let mut dir: Vec<(String, String)> = files.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    dir.push(("atlas.sum".to_string(), atlas::sum_text(&inputs)));
    dir
}

fn read_atlas(dir: &[(String, String)]) -> Result<Vec<Read>, FormatError> {
    let inputs: Vec<Input<'_>> = dir.iter().map(|(name, text)| input(name, text)).collect();
    read("m", Format::Atlas, &inputs)
}

#[test]
fn atlas_sum_is_a_running_digest_of_names_and_bytes_summed_on_its_first_line() {
    let dir = atlas_dir(&[("2_b.sql", "create table b (x int);\n"), ("1_a.sql", "create table a (x int);\n")]);
    let sum = &dir[2].1;
    // By name; each line the digest of every name and text up to it.
    let lines: Vec<&str> = sum.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("1_a.sql h1:") && lines[2].starts_with("2_b.sql h1:"), "{sum}");
    use base64ct::Encoding;
    use sha2::Digest;
    let running = |parts: &[&str]| {
        let mut digest = sha2::Sha256::new();
        for part in parts {
            digest.update(part.as_bytes());
        }
        base64ct::Base64::encode_string(&digest.finalize())
    };
    let first = running(&["1_a.sql", "create table a (x int);\n"]);
    let second = running(&["1_a.sql", "create table a (x int);\n", "2_b.sql", "create table b (x int);\n"]);
    assert_eq!(lines[1], format!("1_a.sql h1:{first}"));
    assert_eq!(lines[2], format!("2_b.sql h1:{second}"));
    assert_eq!(lines[0], format!("h1:{}", running(&["1_a.sql", &first, "2_b.sql", &second])));
    let reads = read_atlas(&dir).unwrap();
    assert_eq!(reads.len(), 2);
    assert!(reads.iter().all(|r| r.order == SortKey::Name && !r.forward.no_transaction && r.down.is_none()));
}

#[test]
fn an_atlas_directory_whose_files_are_not_the_ones_its_sum_sums_is_refused_naming_the_first() {
    let dir = atlas_dir(&[("1_a.sql", "create table a (x int);\n"), ("2_b.sql", "create table b (x int);\n")]);
    let refused = |dir: &[(String, String)]| read_atlas(dir).unwrap_err().to_string();
    let mut edited = dir.clone();
    edited[0].1.push_str("drop table users;\n");
    assert!(refused(&edited).starts_with("m/atlas.sum: m/1_a.sql (or a file before it) was edited since"));
    let mut added = dir.clone();
    added.push(("3_c.sql".to_string(), "drop table users;\n".to_string()));
    assert!(refused(&added).starts_with("m/atlas.sum: m/3_c.sql was added since it was written"));
    // Even before the others, and in upper case (Strata would run it).
    let mut added = dir.clone();
    added.push(("0_Z.SQL".to_string(), "drop table users;\n".to_string()));
    assert!(refused(&added).starts_with("m/atlas.sum: m/0_Z.SQL was added"));
    let removed: Vec<(String, String)> = dir.iter().filter(|(n, _)| n != "1_a.sql").cloned().collect();
    assert!(refused(&removed).starts_with("m/atlas.sum: m/1_a.sql was removed"));
    // A line of the sum changed to match an edit: its total no longer does.
    let mut forged = edited.clone();
    let honest = atlas_dir(&[("1_a.sql", &edited[0].1), ("2_b.sql", &edited[1].1)]);
    let lines: Vec<&str> = honest[2].1.lines().collect();
    forged[2].1 = format!("{}\n{}\n{}\n", dir[2].1.lines().next().unwrap(), lines[1], lines[2]);
    assert!(refused(&forged).contains("its sum does not match its lines: it was edited by hand"));
    let missing: Vec<(String, String)> = dir.iter().filter(|(n, _)| n != "atlas.sum").cloned().collect();
    assert!(refused(&missing).starts_with("m/atlas.sum: missing"));
    // `atlas:sum ignore` on the first line: only the name is summed.
    let dir = atlas_dir(&[("1_a.sql", "-- atlas:sum ignore\nselect 1;\n"), ("2_b.sql", "select 2;\n")]);
    let mut changed = dir.clone();
    changed[0].1.push_str("select 3;\n");
    assert_eq!(read_atlas(&changed).unwrap().len(), 2);
}

#[test]
fn atlas_file_directives_set_the_transaction_and_the_delimiter() {
    let refused = |text: &str| read_atlas(&atlas_dir(&[("1.sql", text)])).unwrap_err().to_string();
    let one = |text: &str| read_atlas(&atlas_dir(&[("1.sql", text)])).unwrap().remove(0).forward;
    assert!(one("-- atlas:txmode none\n\ncreate index concurrently i on t (x);\n").no_transaction);
    assert!(!one("-- atlas:txmode file\n\nselect 1;\n").no_transaction);
    // Not followed by a blank line, the comments are the statement's.
    assert!(!one("-- atlas:txmode none\ncreate table t (x int);\n").no_transaction);
    assert!(refused("-- atlas:txmode all\n\nselect 1;\n").contains("txmode \"all\" is not allowed in a file"));
    assert!(refused("-- atlas:txmode maybe\n\nselect 1;\n").contains("unknown txmode \"maybe\""));
    assert!(refused("-- atlas:txmode none\n-- atlas:txmode file\n\nselect 1;\n").contains("more than one txmode"));
    // A delimiter of its own: the same lines, cut at `;`.
    let text = "-- atlas:delimiter -- end\n\ncreate procedure p() begin select 1; end\n-- end\ncall p()\n-- end\n";
    assert_eq!(one(text).text, "\n\ncreate procedure p() begin select 1; end\n;\ncall p()\n;\n");
    let text = "-- atlas:delimiter \\n\\n\ncreate index a on t (x)\n\ncreate index b on t (y)";
    assert_eq!(one(text).text, "\ncreate index a on t (x);\n\ncreate index b on t (y)");
    assert!(refused("-- atlas:delimiter \nselect 1;").contains("an empty delimiter"));
    // SQL Server's `GO` lines are cut as they are.
    assert_eq!(one("-- atlas:delimiter \\nGO\nselect 1\nGO\n").text, "\nselect 1\nGO\n");
}

#[test]
fn an_atlas_checkpoint_reads_as_the_first_file_only() {
    let checkpoint = "-- atlas:checkpoint v2\n\ncreate table a (x int);\ncreate table b (x int);\n";
    assert_eq!(read_atlas(&atlas_dir(&[("3_checkpoint.sql", checkpoint), ("4_c.sql", "select 1;")])).unwrap().len(), 2);
    let after = atlas_dir(&[("1_a.sql", "create table a (x int);\n"), ("3_checkpoint.sql", checkpoint)]);
    let refused = read_atlas(&after).unwrap_err().to_string();
    assert!(refused.starts_with("m/3_checkpoint.sql:1: an Atlas checkpoint"), "{refused}");
}

#[test]
fn an_atlas_directory_is_told_by_its_sum_or_its_directives() {
    let dir = atlas_dir(&[("20240101000000_a.sql", "create table a (x int);\n")]);
    let inputs: Vec<Input<'_>> = dir.iter().map(|(name, text)| input(name, text)).collect();
    assert_eq!(detect("m", &inputs), Ok(Format::Atlas));
    assert!(!ignored(Format::Atlas, "atlas.sum") && ignored(Format::Strata, "atlas.sum"));
    // Directives without the sum: Atlas's, and refused for the missing sum.
    let files = [input("1.sql", "-- atlas:txmode none\n\nselect 1;\n"), input("2.sql", "select 2;\n")];
    assert_eq!(detect("m", &files), Ok(Format::Atlas));
    // Beside another format's markers: both named.
    let files = [inputs[0], inputs[1], input("2.sql", "-- migrate:up\nselect 1;\n")];
    assert!(matches!(detect("m", &files), Err(FormatError::Mixed { .. })));
    // Named as Strata's format, a directive is a foreign marker.
    let refused = read_one(Format::Strata, "1.sql", "-- atlas:txmode none\n\nselect 1;\n").unwrap_err().to_string();
    assert!(refused.starts_with("m/1.sql:1: \"-- atlas:txmode none\" is a atlas marker"), "{refused}");
    assert_eq!(Format::parse("atlas"), Some(Format::Atlas));
    let new = next_files(Format::Atlas, &["20240101000000_a.sql", "atlas.sum"], "Add B", "20261205014500").unwrap();
    assert_eq!(new, vec![NewFile { name: "20261205014500_add_b.sql".into(), contents: String::new() }]);
}

#[test]
fn a_down_or_undo_file_named_in_upper_case_is_still_a_down_part() {
    // golang-migrate reads `1_x.down.SQL` as a down file: so does the reader.
    let files = [
        input("1_create_users.up.SQL", "create table users (id int);"),
        input("2_orders.up.SQL", "create table orders (id int);"),
        input("2_orders.down.SQL", "drop table if exists orders;"),
    ];
    assert_eq!(detect("m", &files).unwrap(), Format::GolangMigrate);
    let all = read("m", Format::GolangMigrate, &files).unwrap();
    let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
    assert!(!names.iter().any(|n| n.contains("down")), "{names:?}");
    let orders = all.iter().find(|r| r.name == "2_orders.up.SQL").unwrap();
    assert_eq!(orders.down.as_ref().map(|d| d.file.as_str()), Some("m/2_orders.down.SQL"));
    // In a directory of another format, it is refused as any down file is.
    let refused = read_one(Format::Strata, "1_a.Down.Sql", "drop table a;").unwrap_err().to_string();
    assert!(refused.starts_with("m/1_a.Down.Sql: a down migration in m"), "{refused}");
    let undo = read("m", Format::Strata, &[input("U2__undo.SQL", "drop table a;")]);
    assert!(undo.is_err(), "{undo:?}");
}

#[test]
fn an_indented_dbmate_marker_is_a_comment_of_its_section_as_dbmate_reads_it() {
    let text = "-- migrate:up\ncreate table a (id int);\n  -- migrate:down\ncreate table b (id int);\n";
    let read = read_one(Format::Dbmate, "20240101000000_a.sql", text).unwrap();
    assert!(read.forward.text.contains("create table b"), "{:?}", read.forward.text);
    assert!(read.down.is_none());
    let body = "-- migrate:up\ncreate function f() returns int as $$\n  -- migrate:down is only a comment here\n\
                select 1 $$ language sql;\n-- migrate:down\ndrop function f();\n";
    let read = read_one(Format::Dbmate, "2_f.sql", body).unwrap();
    assert_eq!(read.down.unwrap().text.trim(), "drop function f();");
}

#[test]
fn a_flyway_placeholder_is_refused_naming_it_and_its_line() {
    let refused = |name: &str, text: &str| read("m", Format::Flyway, &[input(name, text)]).unwrap_err().to_string();
    assert_eq!(
        refused("V1__init.sql", "create table notes (msg text);\ninsert into notes values ('owner ${owner}');\n"),
        "m/V1__init.sql:2: ${owner} is a Flyway placeholder, which Flyway replaces before it runs the file and \
         Strata does not: write its value into the file"
    );
    assert!(
        refused("R__grants.sql", "grant select on t to ${flyway:user};")
            .starts_with("m/R__grants.sql:1: ${flyway:user}")
    );
    // Not a placeholder: no closing brace on the line, an empty or spaced name.
    for text in ["select '${';", "select '${}';", "select '${ a }';", "select '$x{a}';"] {
        assert!(read("m", Format::Flyway, &[input("V1__a.sql", text)]).is_ok(), "{text}");
    }
}

#[test]
fn two_dbmate_or_goose_files_of_one_version_are_refused() {
    let up = "-- migrate:up\ncreate table t (x int);\n";
    let refused = read("m", Format::Dbmate, &[input("005_x.sql", up), input("005_y.sql", up)]).unwrap_err();
    assert_eq!(refused.to_string(), "m/005_x.sql and m/005_y.sql are both version 005");
    let goose = "-- +goose Up\ncreate table t (x int);\n";
    assert!(read("m", Format::Goose, &[input("1_a.sql", goose), input("01_b.sql", goose)]).is_err());
    assert_eq!(read("m", Format::Dbmate, &[input("005_x.sql", up), input("006_y.sql", up)]).unwrap().len(), 2);
}
