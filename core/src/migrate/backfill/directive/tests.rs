use crate::migrate::backfill::directive::*;
use crate::migrate::statements::{FileMode, inspect};

fn pg(contents: &str) -> Result<Option<Spec>, StatementError> {
    read(Driver::Postgres, "t/001.sql", contents)
}

fn ranged(table: &str, key: &[&str], batch: u32) -> Option<Spec> {
    Some(Spec { form: Form::Ranged { table: table.into(), key: key.iter().map(|k| k.to_string()).collect() }, batch })
}

/// The refusal's position and reason.
fn refused(result: Result<Option<Spec>, StatementError>) -> (Position, String) {
    match result {
        Err(StatementError::BadDirective { at, directive, reason, .. }) => {
            assert_eq!(directive, "strata:backfill");
            (at, reason)
        }
        other => panic!("not refused: {other:?}"),
    }
}

fn at(line: u64, column: u64) -> Position {
    Position { line, column }
}

const RANGED: &str = "-- strata:backfill table={schema}.orders key=id batch=500\n\
                      update {schema}.orders set total_cents = (total * 100)::bigint where {range};\n";

#[test]
fn both_forms_are_read() {
    assert_eq!(pg(RANGED), Ok(ranged("{schema}.orders", &["id"], 500)));
    assert_eq!(
        pg("-- strata:backfill batch=200\ndelete from t where id in (select id from t where old limit {batch});"),
        Ok(Some(Spec { form: Form::Repeated, batch: 200 }))
    );
    assert_eq!(
        pg("-- strata:backfill\nupdate t set a = 1 where id in (select id from t where a is null limit {batch})"),
        Ok(Some(Spec { form: Form::Repeated, batch: DEFAULT_BATCH }))
    );
    // Composite and quoted keys, dotted and quoted tables, any letter case,
    // other directives and comments around it, a block comment.
    assert_eq!(
        pg(
            "-- fills codes\n-- STRATA:BACKFILL key=tenant_id,\"Code\" TABLE=\"App\".\"Orders\" strata:lock-timeout 5s\n\
            update \"App\".\"Orders\" set c = 1 where {range}"
        ),
        Ok(ranged("\"App\".\"Orders\"", &["tenant_id", "\"Code\""], DEFAULT_BATCH))
    );
    assert_eq!(
        pg("/* strata:backfill table=s.t key=id batch=100000 */ update s.t set a = 1 where {range};"),
        Ok(ranged("s.t", &["id"], 100_000))
    );
    assert_eq!(
        read(
            Driver::Mysql,
            "f.sql",
            "-- strata:backfill table=`db`.`t` key=`id` batch=1\nupdate `db`.`t` set a = 1 where {range};"
        ),
        Ok(ranged("`db`.`t`", &["`id`"], 1))
    );
    assert_eq!(
        read(Driver::Sqlite, "f.sql", "-- strata:backfill table=[t] key=[a b],c\nupdate t set x = 1 where {range}"),
        Err(StatementError::BadDirective {
            file: "f.sql".into(),
            at: at(1, 1),
            directive: "strata:backfill".into(),
            reason: "`b],c` is not an option: options are written name=value (table, key, batch)".into()
        })
    );
}

#[test]
fn a_file_without_the_directive_is_no_backfill() {
    assert_eq!(pg("update t set a = 1;"), Ok(None));
    // After the first statement it is an ordinary comment, and so is a
    // mention of it inside a string.
    assert_eq!(pg("select 1;\n-- strata:backfill batch=5\nupdate t set a = 1 limit {batch};"), Ok(None));
    assert_eq!(pg("select '-- strata:backfill';"), Ok(None));
    assert_eq!(read(Driver::SqlServer, "f.sql", "update t set a = 1"), Ok(None));
}

#[test]
fn options_are_checked() {
    for (text, reason) in [
        ("-- strata:backfill bach=5", "unknown option `bach` (known: table, key, batch)"),
        ("-- strata:backfill table=t", "table= needs key= (the columns that order the table's rows)"),
        ("-- strata:backfill key=id", "key= needs table= (the table whose keys are ranged)"),
        ("-- strata:backfill batch=0", "batch=0: not a batch size (a whole number from 1 to 100000)"),
        ("-- strata:backfill batch=100001", "batch=100001: not a batch size (a whole number from 1 to 100000)"),
        ("-- strata:backfill batch=ten", "batch=ten: not a batch size (a whole number from 1 to 100000)"),
        ("-- strata:backfill batch=+50", "batch=+50: not a batch size (a whole number from 1 to 100000)"),
        ("-- strata:backfill batch=5 batch=6", "option `batch` given twice"),
        ("-- strata:backfill batch=", "option `batch` has no value"),
        ("-- strata:backfill orders", "`orders` is not an option: options are written name=value (table, key, batch)"),
        ("-- strata:backfill table=t key=", "option `key` has no value"),
        ("-- strata:backfill table=t key=id,", "key=id,: a column name is empty"),
        ("-- strata:backfill table=t key=id,id", "key=id,id: column id is named twice"),
        ("-- strata:backfill table=t;drop key=id", "table=t;drop: a name holds no `;`"),
        ("-- strata:backfill table=t key=f(id)", "key=f(id): f(id): a name holds no parentheses"),
        ("-- strata:backfill table=\"my key=id", "table=\"my: a quote is left open (no closing \")"),
        ("-- strata:backfill table=t key=[id", "key=[id: [id: a quote is left open (no closing ])"),
        ("-- strata:backfill table='t' key=id", "table='t': a name is not a string: quote it with `\"`"),
        ("-- strata:backfill table=t--x key=id", "table=t--x: a name holds no comment (`--`)"),
        ("-- strata:backfill table=t/*x key=id", "table=t/*x: a name holds no comment (`/*`)"),
    ] {
        let contents = format!("{text}\nupdate t set a = 1 where {{range}} and b < {{batch}};");
        assert_eq!(refused(pg(&contents)), (at(1, 1), reason.to_string()), "{text}");
    }
    // Quoted names may hold what a bare one may not, except `;` and blanks.
    assert_eq!(
        pg("-- strata:backfill table=\"a(b)\".\"c--d\" key=\"e,f\"\nupdate x set a = 1 where {range}"),
        Err(StatementError::BadDirective {
            file: "t/001.sql".into(),
            at: at(1, 1),
            directive: "strata:backfill".into(),
            reason: "key=\"e,f\": \"e: a quote is left open (no closing \")".into()
        })
    );
    assert_eq!(
        pg("-- strata:backfill table=\"a(b)\".\"c--d\" key=\"e\"\"f\"\nupdate x set a = 1 where {range}"),
        Ok(ranged("\"a(b)\".\"c--d\"", &["\"e\"\"f\""], DEFAULT_BATCH))
    );
}

#[test]
fn the_statement_must_be_one_and_hold_its_form_s_placeholder() {
    let (position, reason) = refused(pg("-- strata:backfill table=t key=id\nupdate t set a = 1;\nupdate t set b = 2;"));
    assert_eq!(position, at(3, 1));
    assert_eq!(
        reason,
        "a backfill file holds exactly one statement, run once per batch; this one holds 2: put the others in files \
         of their own"
    );
    assert_eq!(
        refused(pg("-- strata:backfill table=t key=id\n-- nothing else")),
        (at(1, 1), "a backfill file holds one statement; this one holds none".into())
    );
    assert_eq!(
        refused(pg("-- strata:backfill table=t key=id\n\n  update t set a = 1 where '{range}' <> '' -- {range}")),
        (
            at(3, 3),
            "a backfill with table= and key= needs `{range}` in its statement, where each batch's range of keys \
             goes (`… where {range}`)"
                .into()
        )
    );
    assert_eq!(
        refused(pg("-- strata:backfill\nupdate t set a = 1 where {range}")),
        (at(2, 26), "`{range}` needs the table and its key: add table= and key= to the directive".into())
    );
    assert_eq!(
        refused(pg("-- strata:backfill batch=10\nupdate t set a = 1 where b")),
        (
            at(2, 1),
            "a backfill without table= and key= runs its statement until it changes no row, each run limited to a \
             batch: it needs `{batch}` where the limit goes (`… limit {batch}`)"
                .into()
        )
    );
    assert_eq!(
        refused(pg(
            "-- strata:backfill table=t key=id\nupdate t set a = 1 where {range} and id in (select id limit {batch})"
        )),
        (
            at(2, 61),
            "`{batch}` belongs to a backfill without table= and key=; this one runs ranges of keys: write `{range}` \
             where the range's condition goes"
                .into()
        )
    );
}

#[test]
fn a_backfill_runs_in_transactions_on_every_engine() {
    let reason = "a backfill commits each batch in a transaction of its own, with its checkpoint; it cannot run \
                  outside a transaction (remove `strata:no-transaction` or the format's no-transaction marker)";
    assert_eq!(
        refused(pg("-- strata:no-transaction\n-- strata:backfill table=t key=id\nupdate t set a = 1 where {range}")),
        (at(2, 1), reason.into())
    );
    assert_eq!(refused(read_part(Driver::Postgres, "t/001.sql", RANGED, true)), (at(1, 1), reason.into()));
    let t_sql = "-- strata:backfill table=t key=id\nupdate t set a = 1 where {range}\nGO\n";
    assert!(matches!(read(Driver::SqlServer, "f.sql", t_sql), Ok(Some(_))));
    assert_eq!(
        refused(read(
            Driver::SqlServer,
            "f.sql",
            "-- strata:backfill table=t key=id\nupdate t set a = 1 where {range}\nGO\nselect 1\n"
        )),
        (
            at(4, 1),
            "a backfill file holds exactly one statement, run once per batch; this one holds more than one batch \
             (`GO` lines): put the others in files of their own"
                .into()
        )
    );
    assert_eq!(
        in_one_transaction("t/001.sql").to_string(),
        "t/001.sql:1:1: strata:backfill: a backfill commits each batch on its own, so it cannot run under \
         `transactionScope: version` (the whole version in one transaction); run it under `transactionScope: schema`"
    );
}

#[test]
fn every_file_the_statements_module_calls_a_backfill_is_read_as_one_or_refused() {
    for text in [
        RANGED,
        "-- strata:backfill=batch=5\nupdate t set a = 1 limit {batch}",
        "-- x=strata:backfill\nupdate t set a = 1 limit {batch}",
        "-- strata:backfill batch=5\n-- strata:backfill batch=6\nupdate t set a = 1 limit {batch}",
        "-- strata:backfill batch=5\nselect 'unterminated",
        "/* strata:allow dropping-column\n   strata:backfill table=t key=id */\nupdate t set a = 1 where {range}",
    ] {
        let mode: FileMode = inspect(Driver::Postgres, "t/001.sql", text).unwrap();
        assert!(mode.backfill, "{text}");
        assert!(!matches!(pg(text), Ok(None)), "{text}: {:?}", pg(text));
    }
    assert_eq!(
        refused(pg("-- strata:backfill batch=5\nselect 'unterminated")).1,
        "the file cannot be read as SQL (a string, quoted name or comment left open?), so its statement and \
         placeholder cannot be found"
    );
    assert_eq!(
        refused(pg("-- strata:backfill batch=5\n-- strata:backfill batch=6\nupdate t set a = 1 limit {batch}")),
        (at(2, 1), "given twice; a file is one backfill".into())
    );
    assert_eq!(
        pg("/* strata:allow dropping-column\n   strata:backfill table=t key=id */\nupdate t set a = 1 where {range}"),
        Ok(ranged("t", &["id"], DEFAULT_BATCH))
    );
}

#[test]
fn a_format_s_part_is_read_like_a_file() {
    // dbmate's markers are blanked out of the part it runs.
    let part = "\n-- strata:backfill table=t key=id batch=50\nupdate t set a = 1 where {range};\n\n\n";
    assert_eq!(read(Driver::Sqlite, "db/1_a.sql", part), Ok(ranged("t", &["id"], 50)));
}

#[test]
fn a_bound_parameter_of_the_statement_is_refused_where_it_stands() {
    let with = |driver: Driver, statement: &str| {
        read(driver, "t/001.sql", &format!("-- strata:backfill table={{schema}}.items key=code\n{statement}\n"))
    };
    let (at_, reason) =
        refused(with(Driver::Postgres, "update {schema}.items set n = n + 1 where {range} and code <> $1;"));
    assert_eq!(at_, at(2, 63));
    assert!(reason.starts_with("`$1` is a bound parameter"), "{reason}");
    assert!(refused(with(Driver::Mysql, "update {schema}.items set n = ? where {range};")).1.starts_with("`?` is"));
    assert!(refused(with(Driver::Sqlite, "update items set n = :n where {range};")).1.starts_with("`:n` is"));
    assert!(refused(with(Driver::Sqlite, "update items set n = @n where {range};")).1.starts_with("`@n` is"));
    let tsql = refused(with(Driver::SqlServer, "update {schema}.items set n = @P1 where {range};")).1;
    assert!(tsql.starts_with("`@P1` is"), "{tsql}");
    // In strings and comments, casts, slices and @@ functions: no parameter.
    for (driver, statement) in [
        (Driver::Postgres, "update {schema}.items set note = '$1 ?', n = (a[1:2])[1]::int where {range}; -- $2"),
        (Driver::Mysql, "update {schema}.items set note = '?' where {range};"),
        (Driver::SqlServer, "update {schema}.items set n = @@spid, note = '@P1' where {range};"),
    ] {
        assert!(with(driver, statement).is_ok(), "{statement}: {:?}", with(driver, statement));
    }
}

#[test]
fn a_double_quoted_name_is_refused_on_mysql_where_it_is_a_string() {
    let file = |key: &str| {
        format!(
            "-- strata:backfill table={{schema}}.items key={key}\nupdate {{schema}}.items set n = 1 where {{range}};\n"
        )
    };
    let reason = refused(read(Driver::Mysql, "t/001.sql", &file("\"id\""))).1;
    assert!(reason.starts_with("\"id\": on MySQL and MariaDB `\"` quotes a string"), "{reason}");
    assert!(read(Driver::Mysql, "t/001.sql", &file("`id`")).unwrap().is_some());
    assert!(read(Driver::Postgres, "t/001.sql", &file("\"id\"")).unwrap().is_some());
}
