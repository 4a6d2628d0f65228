use crate::migrate::statements::*;

/// The file's mode, or its first refusal.
fn first(result: Result<FileMode, Refusals>) -> Result<FileMode, StatementError> {
    result.map_err(|refusals| refusals.0.into_iter().next().expect("a refusal names what it refuses"))
}

fn pg(contents: &str) -> Result<FileMode, StatementError> {
    first(inspect(Driver::Postgres, "t/001.sql", contents))
}

const NO_TRANSACTION: FileMode = FileMode {
    no_transaction: true,
    commit_after: false,
    lock_timeout_ms: None,
    lock_retries: None,
    statement_timeout_ms: None,
    backfill: false,
    changes_session: false,
    may_end_transaction: false,
};

fn at(line: u64, column: u64) -> Position {
    Position { line, column }
}

#[test]
fn transaction_control_at_the_top_level_is_refused_with_its_position() {
    assert_eq!(
        pg("create table a (id int);\nCOMMIT;\ncreate table b (id int);"),
        Err(StatementError::TransactionControl {
            file: "t/001.sql".into(),
            at: at(2, 1),
            statement: "COMMIT".into(),
            mark: Some(STRATA_MARK)
        })
    );
    for (text, statement, position) in [
        ("  begin;", "BEGIN", at(1, 3)),
        ("select 1; start transaction;", "START TRANSACTION", at(1, 11)),
        ("select 1;\n  end;", "END", at(2, 3)),
        ("rollback", "ROLLBACK", at(1, 1)),
        ("abort;", "ABORT", at(1, 1)),
        ("prepare transaction 'x';", "PREPARE TRANSACTION", at(1, 1)),
        ("commit prepared 'x';", "COMMIT PREPARED", at(1, 1)),
        ("/* c */ -- d\nBEGIN ISOLATION LEVEL SERIALIZABLE;", "BEGIN", at(2, 1)),
    ] {
        match pg(text) {
            Err(StatementError::TransactionControl { statement: s, at: p, .. }) => {
                assert_eq!((s.as_str(), p), (statement, position), "{text}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    let message = pg("select 1;\ncommit;").unwrap_err().to_string();
    assert_eq!(
        message,
        "t/001.sql:2:1: COMMIT would end the transaction the service runs this file in; remove it (the service \
         commits each schema's migrations itself), or mark the file with `-- strata:no-transaction` in its leading \
         comment lines to run it outside any transaction"
    );
}

#[test]
fn words_inside_strings_comments_quotes_and_routines_are_not_statements() {
    for text in [
        "insert into t values ('commit;'); -- commit;\n/* begin; */ select \"commit\" from t;",
        "create function f() returns int language plpgsql as $$ begin commit; return 1; end $$;",
        "create function f() returns int language plpgsql as $body$ begin; end; $body$;",
        "do $$ begin perform 1; end $$;",
        "savepoint a; rollback to savepoint a; rollback transaction to a; release savepoint a;",
        "create procedure p() begin atomic select 1; select 2; end;",
        "select 1 as \"begin\"; select e'it''s; commit' ;",
        "create index i on t (a); -- not concurrently",
    ] {
        assert_eq!(pg(text), Ok(FileMode::default()), "{text}");
    }
}

#[test]
fn statements_that_cannot_run_in_a_transaction_name_the_directive() {
    for (text, statement) in [
        ("create index concurrently i on t (a);", "CREATE INDEX CONCURRENTLY"),
        ("CREATE UNIQUE INDEX CONCURRENTLY i ON t (a);", "CREATE UNIQUE INDEX CONCURRENTLY"),
        ("drop index concurrently i;", "DROP INDEX CONCURRENTLY"),
        ("reindex (verbose) table concurrently t;", "REINDEX \"…\""),
        ("reindex database app;", "REINDEX DATABASE"),
        ("vacuum analyze t;", "VACUUM"),
        ("create database other;", "CREATE DATABASE"),
        ("drop tablespace ts;", "DROP TABLESPACE"),
        ("alter system set work_mem = '64MB';", "ALTER SYSTEM"),
        ("alter table p detach partition c concurrently;", "ALTER TABLE"),
    ] {
        match pg(text) {
            Err(StatementError::NeedsNoTransaction { statement: s, .. }) => {
                assert!(statement.starts_with(s.split(' ').next().unwrap()), "{text}: {s}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    assert_eq!(
        pg("create table t (a int);\ncreate index concurrently t_a on t (a);").unwrap_err().to_string(),
        "t/001.sql:2:1: CREATE INDEX CONCURRENTLY cannot run inside a transaction; mark the file with \
         `-- strata:no-transaction` in its leading comment lines to run it outside one (alone, recorded right after \
         it succeeds)"
    );
}

#[test]
fn the_directive_lives_in_the_leading_comments_only() {
    let marked =
        "-- adds an index without blocking writes\n-- strata:no-transaction\ncreate index concurrently i on t (a);";
    assert_eq!(pg(marked), Ok(NO_TRANSACTION));
    assert_eq!(pg("/* strata:no-transaction */ vacuum;"), Ok(NO_TRANSACTION));
    // After the first statement it is an ordinary comment.
    let late = "select 1;\n-- strata:no-transaction\ncreate index concurrently i on t (a);";
    assert!(matches!(pg(late), Err(StatementError::NeedsNoTransaction { .. })));
    // In a string it is not a comment at all.
    assert!(matches!(pg("select '-- strata:no-transaction'; commit;"), Err(StatementError::TransactionControl { .. })));
    // Unreadable text: the directive is still read from the raw leading lines.
    assert_eq!(pg("-- strata:no-transaction\nselect 'unterminated"), Ok(NO_TRANSACTION));
    assert_eq!(pg("select 'unterminated; commit;"), Ok(FileMode::default()));
}

#[test]
fn each_engine_has_its_own_rules() {
    let sqlite = |text| first(inspect(Driver::Sqlite, "f.sql", text));
    assert!(matches!(sqlite("begin immediate;"), Err(StatementError::TransactionControl { .. })));
    assert!(matches!(sqlite("vacuum;"), Err(StatementError::NeedsNoTransaction { .. })));
    assert_eq!(
        sqlite("create trigger tr after insert on t begin update t set a = 1; delete from u; end;"),
        Ok(FileMode::default())
    );
    assert_eq!(
        sqlite("create trigger tr after insert on t begin select case when 1 then 2 end; end; select 1;"),
        Ok(FileMode::default())
    );
    // MySQL never wraps files in a transaction: nothing to refuse.
    assert_eq!(
        first(inspect(Driver::Mysql, "f.sql", "start transaction; insert into t values (1); commit;")),
        Ok(FileMode::default())
    );
    let mssql = |text| first(inspect(Driver::SqlServer, "f.sql", text));
    assert_eq!(mssql("if 1 = 1 begin select 1 end\nselect 2"), Ok(FileMode::default()));
    match mssql("create table t (a int)\nGO\nbegin tran\ninsert into t values (1)\ncommit") {
        Err(StatementError::TransactionControl { at: p, statement, .. }) => {
            assert_eq!((p, statement.as_str()), (at(3, 1), "BEGIN TRAN"))
        }
        other => panic!("{other:?}"),
    }
    // A batch holds many statements: the refusal is at its word, not at the
    // batch's start.
    let hidden = "create table t (a int);\n  -- 'commit;' in a comment is fine\n  COMMIT;\ncreate table u (a int);\n";
    match mssql(hidden) {
        Err(StatementError::TransactionControl { at: p, statement, .. }) => {
            assert_eq!((p, statement.as_str()), (at(3, 3), "COMMIT"))
        }
        other => panic!("{other:?}"),
    }
    match mssql("select 1\ninsert into t values (1)\n    alter database current set recovery simple") {
        Err(StatementError::NeedsNoTransaction { at: p, statement, .. }) => {
            assert_eq!((p, statement.as_str()), (at(3, 5), "ALTER DATABASE"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(mssql("create procedure p as begin begin tran; commit; end\nGO\nselect 1"), Ok(FileMode::default()));
    assert!(matches!(
        mssql("alter database current set recovery simple"),
        Err(StatementError::NeedsNoTransaction { .. })
    ));
    assert_eq!(mssql("select [commit] from t"), Ok(FileMode::default()));
    // A rollback to a savepoint goes on in the transaction; a rollback of
    // the transaction (followed by the next statement, or nothing) does not.
    for text in [
        "save tran before_load
insert into t values (1)
rollback tran before_load
select 1",
        "save transaction s1; rollback transaction s1;",
        "save tran [my point]\nrollback tran [my point]",
        "declare @p varchar(10) = 's'
save tran @p
rollback tran @p",
    ] {
        assert_eq!(mssql(text), Ok(FileMode::default()), "{text}");
    }
    for text in [
        "insert into t values (1)
rollback tran
select 1",
        "rollback transaction",
        "rollback tran;",
        "rollback tran insert into t values (1)",
        "rollback work",
        "rollback",
    ] {
        assert!(matches!(mssql(text), Err(StatementError::TransactionControl { .. })), "{text}");
    }
}

#[test]
fn engine_positions_map_back_into_the_file() {
    let contents = "create table {schema}.a (id int);\ncreate table {schema}.b (id inte);";
    let executed = contents.replace("{schema}", "tenant_0001");
    let offset = executed.find("inte)").unwrap() + 1;
    assert_eq!(locate(contents, "{schema}", "tenant_0001", offset), Some(at(2, 29)));
    assert_eq!(&contents.lines().nth(1).unwrap()[28..32], "inte");
    // Inside a replaced name: the placeholder's start.
    let inside = executed.find("tenant_0001").unwrap() + 4;
    assert_eq!(locate(contents, "{schema}", "tenant_0001", inside), Some(at(1, 14)));
    assert_eq!(locate("ab", "{schema}", "x", 1), Some(at(1, 1)));
    assert_eq!(locate("ab", "{schema}", "x", 3), None);
    assert_eq!(locate("ab", "{schema}", "x", 0), None);
    assert_eq!(locate("é\nx", "", "", 3), Some(at(2, 1)));
}

fn pieces(driver: Driver, text: &str) -> Vec<&str> {
    split(driver, text).unwrap().into_iter().map(|r| &text[r]).collect()
}

#[test]
fn split_cuts_at_top_level_semicolons_and_keeps_bodies_whole() {
    assert_eq!(
        pieces(Driver::Sqlite, "-- c\ncreate table a (x text default ';');\n\n  insert into a values ('é;'); select 2"),
        ["create table a (x text default ';')", "insert into a values ('é;')", "select 2"]
    );
    let trigger = "create trigger t after insert on a begin\n  update a set x = 1;\n  delete from a;\nend";
    assert_eq!(pieces(Driver::Sqlite, &format!("{trigger};\nselect 1;")), [trigger, "select 1"]);
    let procedure = "create procedure p() begin\n  if 1 then select 1; end if;\n  select case when 1 then 2 end;\nend";
    assert_eq!(pieces(Driver::Mysql, &format!("{procedure};\nselect 1;")), [procedure, "select 1"]);
    let block = "BEGIN NOT ATOMIC\n  insert into a values (1);\n  insert into a values (2);\nEND";
    assert_eq!(pieces(Driver::Mysql, &format!("select 0;\n{block};")), ["select 0", block]);
    assert_eq!(
        pieces(Driver::Mysql, "insert into `a;b` values (\"x;\") ; -- ;\n/* ; */"),
        ["insert into `a;b` values (\"x;\")"]
    );
    assert_eq!(split(Driver::Sqlite, "select 'unterminated"), None);
    assert_eq!(pieces(Driver::Sqlite, " \n-- only a comment\n"), Vec::<&str>::new());
}

#[test]
fn mysql_executable_comments_stay_whole_and_in_their_statement() {
    // What every mysqldump file starts with.
    let dump = "/*!40101 SET NAMES utf8mb4 */;\n/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS */;\n\
                CREATE TABLE t (id int) /*!50100 ENGINE=MyISAM */;\nselect 1;";
    assert_eq!(
        pieces(Driver::Mysql, dump),
        [
            "/*!40101 SET NAMES utf8mb4 */",
            "/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS */",
            "CREATE TABLE t (id int) /*!50100 ENGINE=MyISAM */",
            "select 1"
        ]
    );
    // An ordinary comment is still no statement, and PostgreSQL has no
    // executable comments.
    assert_eq!(pieces(Driver::Mysql, "/* ! not one */ ;\n/* x */"), Vec::<&str>::new());
    assert_eq!(pieces(Driver::Postgres, "/*! a comment */ select 1;"), ["select 1"]);
    // Backticks, `#` comments and backslash escapes are still MySQL's.
    assert_eq!(
        pieces(Driver::Mysql, "# c; d\nselect 'a\\';b' from `x;y`; select 2"),
        ["select 'a\\';b' from `x;y`", "select 2"]
    );
}

#[test]
fn every_refusal_of_every_file_is_reported() {
    let refusals = inspect(
        Driver::Postgres,
        "t/002.sql",
        "create index concurrently a on t (x);\ncommit;\nreindex schema s;\nreindex table t;",
    )
    .unwrap_err();
    let found: Vec<(Position, &str)> = refusals
        .0
        .iter()
        .map(|r| match r {
            StatementError::TransactionControl { at, statement, .. } => (*at, statement.as_str()),
            StatementError::NeedsNoTransaction { at, statement, .. }
            | StatementError::CopyWithClient { at, statement, .. }
            | StatementError::NoSchema { at, statement, .. } => (*at, statement.as_str()),
            StatementError::BadDirective { at, directive, .. } => (*at, directive.as_str()),
            StatementError::Unreadable { at, word, .. } => (*at, word.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(found, [(at(1, 1), "CREATE INDEX CONCURRENTLY"), (at(2, 1), "COMMIT"), (at(3, 1), "REINDEX SCHEMA")]);
    assert!(
        refusals.to_string().starts_with("3 statements in 1 file(s) cannot run as written: t/002.sql:1:1: "),
        "{refusals}"
    );
}

#[test]
fn lock_directives_are_read_and_typos_refused() {
    let mode =
        pg("-- strata:lock-timeout 250ms\n-- strata:lock-retries=3\n/* strata:statement-timeout 2m */\nselect 1;")
            .unwrap();
    assert_eq!(
        (mode.lock_timeout_ms, mode.lock_retries, mode.statement_timeout_ms, mode.no_transaction),
        (Some(250), Some(3), Some(120_000), false)
    );
    assert_eq!(pg("-- strata:lock-timeout 0\nselect 1;").unwrap().lock_timeout_ms, Some(0));
    assert_eq!(pg("-- strata:allow dropping-column\nselect 1;"), Ok(FileMode::default()));
    for (text, directive, reason) in [
        ("-- strata:lock-timeout 5\nselect 1;", "strata:lock-timeout", "\"5\" is not a duration"),
        ("-- strata:lock-timeout\nselect 1;", "strata:lock-timeout", "\"\" is not a duration"),
        ("-- strata:lock-retries 1000\nselect 1;", "strata:lock-retries", "\"1000\" is not a number of retries"),
        ("-- strata:statement-timeout 2d\nselect 1;", "strata:statement-timeout", "\"2d\" is not a duration"),
        ("-- strata:no-transactions\nselect 1;", "strata:no-transactions", "not a directive of the service"),
    ] {
        match pg(text) {
            Err(StatementError::BadDirective { directive: d, reason: r, at: p, .. }) => {
                assert_eq!((d.as_str(), p), (directive, at(1, 1)), "{text}");
                assert!(r.starts_with(reason), "{text}: {r}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    assert_eq!(
        duration_ms("25h"),
        Err("\"25h\" is not a duration (0, or a number with ms, s or m: 500ms, 5s, 2m)".into())
    );
    assert_eq!(duration_ms("1441m"), Err("1441m is longer than a day".into()));
    assert_eq!(duration_ms("1440m"), Ok(86_400_000));
}

#[test]
fn a_new_enum_value_asks_for_a_commit_after_its_file() {
    assert!(pg("alter type {schema}.mood add value 'ok';").unwrap().commit_after);
    assert!(pg("ALTER TYPE mood ADD VALUE IF NOT EXISTS 'ok' BEFORE 'sad';").unwrap().commit_after);
    assert!(!pg("alter type mood rename value 'a' to 'b'; select 'add value';").unwrap().commit_after);
    assert!(!first(inspect(Driver::Mysql, "f.sql", "alter type x add value 'y';")).unwrap().commit_after);
}

#[test]
fn the_backfill_directive_is_accepted_and_its_options_left_to_the_backfill_module() {
    let file = "-- strata:backfill table={schema}.orders key=id batch=500\n\
                update {schema}.orders set total_cents = total * 100 where {range};";
    assert_eq!(pg(file), Ok(FileMode { backfill: true, ..FileMode::default() }));
    assert_eq!(BACKFILL_DIRECTIVE, "strata:backfill");
    assert!(!pg("update t set a = 1;").unwrap().backfill);
    // Beside other directives; read from the raw leading lines when the
    // tokenizer cannot read the text.
    let mode = pg("-- strata:lock-timeout 5s\n/* strata:backfill batch=10 */\nselect 1;").unwrap();
    assert_eq!((mode.backfill, mode.lock_timeout_ms), (true, Some(5_000)));
    assert!(pg("-- strata:backfill batch=5\nselect 'unterminated").unwrap().backfill);
    // The list of known directives names it.
    let message = pg("-- strata:backfil\nselect 1;").unwrap_err().to_string();
    assert!(
        message.ends_with(
            "not a directive of the service (known: strata:no-transaction, strata:lock-timeout, \
             strata:lock-retries, strata:statement-timeout, strata:allow, strata:backfill)"
        ),
        "{message}"
    );
}

#[test]
fn a_select_is_written_as_a_subquery_without_its_end() {
    let cases = [
        ("select name from t", "(select name from t)"),
        ("select name from t ; -- newest first\n", "(select name from t)"),
        (
            "-- the tenants\nselect name, tier from t order by name desc;;",
            "(select name, tier from t order by name desc)",
        ),
        ("select name -- a name\nfrom t where x = ';'", "(select name -- a name\nfrom t where x = ';')"),
    ];
    for driver in [Driver::Postgres, Driver::Mysql, Driver::Sqlite] {
        for (select, written) in cases {
            assert_eq!(subquery(driver, select).as_deref(), Some(written), "{driver:?}: {select}");
        }
        assert_eq!(subquery(driver, "select 1; select 2"), None);
        assert_eq!(subquery(driver, " ; "), None);
    }
}

#[test]
fn a_mysql_file_that_changes_its_session_is_told_apart() {
    let changes = |contents: &str| inspect(Driver::Mysql, "t/001.sql", contents).unwrap().changes_session;
    for contents in [
        "set foreign_key_checks = 0;\ncreate table t (id int);",
        "create table t (id int);\nSET @@session.sql_mode = 'ANSI';",
        "use t1;\ncreate table t (id int);",
        "lock tables t write;\ninsert into t values (1);\nunlock tables;",
        "/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;\ncreate table t (id int);",
        "select 'unterminated",
        "create temporary table scratch (id int);",
        "prepare q from 'select 1';",
        "do get_lock('strata', 10);\ncreate table t (id int);",
        "insert into t (a, b, c, d, e, f, g, h, i, j, k) select 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, GET_LOCK('x', 1);",
    ] {
        assert!(changes(contents), "{contents}");
    }
    for contents in [
        "create table t (id int);\ninsert into t values (1);",
        "update t set a = 1 where id = 2;",
        "-- set foreign_key_checks = 0\ncreate table t (`use` int, `set` int);",
        "create table settings (id int);\nalter table t lock = none;",
        "select release_lock('get_lock');\ncreate table `get_lock` (id int);",
    ] {
        assert!(!changes(contents), "{contents}");
    }
    // Judged on MySQL only: PostgreSQL's units end with `reset all`.
    assert!(!inspect(Driver::Postgres, "t/001.sql", "set search_path = t1;").unwrap().changes_session);
}

#[test]
fn a_sqlite_file_that_changes_its_connection_is_told_apart() {
    let changes = |contents: &str| inspect(Driver::Sqlite, "t/001.sql", contents).unwrap().changes_session;
    for contents in [
        "pragma foreign_keys = off;\ncreate table t (id int);",
        "create table t (id int);\nPRAGMA main.legacy_alter_table=ON;",
        "pragma recursive_triggers(1);",
        "-- strata:no-transaction\nattach database 'other.db' as other;",
        "create temp table scratch (id int);",
        "CREATE TEMPORARY VIEW v AS SELECT 1;",
        "select 'unterminated",
    ] {
        assert!(changes(contents), "{contents}");
    }
    for contents in [
        "create table t (id int);\ninsert into t values (1);",
        "-- pragma foreign_keys = off\ncreate table pragma_like (\"pragma\" int, temp int);",
        "create table temp_things (id int);\nselect * from pragma_table_info('t');",
    ] {
        assert!(!changes(contents), "{contents}");
    }
}

#[test]
fn a_sql_server_batch_that_changes_its_session_is_told_apart() {
    let changes = |contents: &str| inspect(Driver::SqlServer, "t/001.sql", contents).unwrap().changes_session;
    for contents in [
        "SET IDENTITY_INSERT dbo.t ON\nINSERT INTO dbo.t (id) VALUES (1)\nSET IDENTITY_INSERT dbo.t OFF",
        "set xact_abort off;\ncreate table t (id int)",
        "create table t (id int)\nGO\nset transaction isolation level serializable\nGO",
        "USE other\nGO\ncreate table t (id int)",
        "create table #scratch (n int)\ninsert into #scratch values (1)",
        "select 1 as n into ##shared",
        "set statistics io on",
        "EXECUTE AS USER = 'tenant_owner'\ncreate table t (id int)",
        "EXEC sp_getapplock @Resource = 'strata', @LockMode = 'Exclusive', @LockOwner = 'Session'",
    ] {
        assert!(changes(contents), "{contents}");
    }
    for contents in [
        "create table t (id int)\nGO\ninsert into t values (1)",
        "declare @n int\nset @n = 1\nupdate t set id = @n where id = 0",
        "select * from t option (use hint ('DISABLE_OPTIMIZER_ROWGOAL'))",
        "create procedure p with execute as owner as select 1",
        "exec sp_rename 't.a', 'b', 'COLUMN'",
        "-- set nocount on\ncreate table [#not_temp] (id int)",
    ] {
        assert!(!changes(contents), "{contents}");
    }
}

#[test]
fn a_sql_server_batch_that_may_end_its_transaction_unseen_is_told_apart() {
    let may_end = |contents: &str| inspect(Driver::SqlServer, "t/001.sql", contents).unwrap().may_end_transaction;
    for contents in [
        "exec dbo.archive_orders",
        "create table t (id int)\nGO\nEXECUTE sp_executesql N'select 1'",
        "insert into t (id) exec dbo.ids",
        "if 1 = 1 exec ('delete from t')",
        "dbo.archive_orders",
        "archive_orders @days = 30",
        "[dbo].[archive_orders]",
        "create table {schema}.c1 (x int)\nGO\n{schema}.archive_orders",
        "(select 1)",
        "sp_executesql N'commit'",
        "USE other\nGO\ncreate table t (id int)",
        "create table t (id int) /* unterminated",
    ] {
        assert!(may_end(contents), "{contents}");
    }
    for contents in [
        "create table t (id int)\nGO\ncreate index t_id on t (id)",
        "alter table t add c int null",
        "insert into t values (1)\nupdate t set id = 2\ndelete from t where id = 3",
        "declare @n int\nset @n = 1\nupdate t set id = @n where id = 0",
        "with x as (select 1 as n) select n from x",
        ";with x as (select 1 as n) select n from x",
        "alter table {schema}.t add c int null",
        "create procedure p as exec ('commit')",
        "create or alter trigger tr on t after insert as exec dbo.audit",
        "-- exec dbo.archive_orders\ncreate view v as select 1 as n",
        "select 'exec dbo.archive_orders' as text",
        "",
    ] {
        assert!(!may_end(contents), "{contents}");
    }
    for driver in [Driver::Postgres, Driver::Mysql, Driver::Sqlite] {
        assert!(!inspect(driver, "t/001.sql", "select 1").unwrap().may_end_transaction, "{driver:?}");
    }
}

#[test]
fn a_copy_that_waits_for_a_client_is_refused_wherever_it_runs() {
    let refused = |contents: &str| match inspect(Driver::Postgres, "t/001.sql", contents) {
        Err(Refusals(errors)) => errors
            .iter()
            .filter_map(|e| match e {
                StatementError::CopyWithClient { at, statement, .. } => Some((at.line, statement.clone())),
                _ => None,
            })
            .collect(),
        Ok(_) => Vec::new(),
    };
    assert_eq!(refused("create table t (id int);\ncopy t from stdin;\n"), vec![(2, "COPY … FROM STDIN".to_string())]);
    assert_eq!(
        refused(
            "-- strata:no-transaction\nCOPY {schema}.t (a, b, c, d, e, f, g, h, i, j, k, l) FROM STDIN WITH (FORMAT csv);"
        ),
        vec![(2, "COPY … FROM STDIN".to_string())]
    );
    assert_eq!(refused("copy (select 1) to stdout;"), vec![(1, "COPY … TO STDOUT".to_string())]);
    for fine in
        ["copy t from '/srv/data/t.csv';", "copy t to program 'gzip > /tmp/t.gz';", "create table stdin (id int);"]
    {
        assert_eq!(refused(fine), Vec::new(), "{fine}");
    }
    let error = inspect(Driver::Postgres, "t/001.sql", "copy t from stdin;").unwrap_err().to_string();
    assert!(error.starts_with("t/001.sql:1:1: COPY … FROM STDIN exchanges its rows with a client"), "{error}");
    // MySQL has no such statement: not judged there.
    assert!(inspect(Driver::Mysql, "t/001.sql", "select 'copy t from stdin';").is_ok());
}

#[test]
fn an_sqlite_tenant_file_of_another_tool_must_name_its_schema_where_it_writes() {
    let text = "\n-- the users\ncreate table users (id int);\nselect 1;\ninsert into {schema}.users values (1);\n  \
                /* seed */ insert into users values (2);\n";
    let refused = unplaced(Driver::Sqlite, "tenants/1_users.sql", text, "{schema}");
    let at: Vec<(String, String)> = refused.iter().map(|r| (r.at().to_string(), r.to_string())).collect();
    assert_eq!(at.len(), 2, "{at:?}");
    assert_eq!(at[0].0, "3:1");
    assert!(at[0].1.starts_with("tenants/1_users.sql:3:1: CREATE names no schema"), "{}", at[0].1);
    assert_eq!(at[1].0, "6:14");
    assert!(unplaced(Driver::Postgres, "f.sql", text, "{schema}").is_empty());
    let tsql = "create table users (id int)\nGO\ninsert into users values (1)\n";
    assert_eq!(unplaced(Driver::SqlServer, "t.sql", tsql, "{schema}").len(), 1);
    assert!(unplaced(Driver::SqlServer, "t.sql", "create table {schema}.users (id int)\n", "{schema}").is_empty());
}

#[test]
fn a_routines_word_later_in_a_statement_hides_no_transaction_control() {
    let refused = |driver: Driver, text: &str| match first(inspect(driver, "t/002.sql", text)) {
        Err(StatementError::TransactionControl { statement, at, .. }) => (statement, at),
        other => panic!("{text}: {other:?}"),
    };
    // A table named after a routine's word, a column named `begin`.
    let table = "create table {schema}.trigger (begin int);\ncommit;\ncreate table {schema}.after (id int);";
    assert_eq!(refused(Driver::Postgres, table), ("COMMIT".into(), at(2, 1)));
    let event = "create table event (begin int);\ncommit;\ncreate table after (id int);";
    assert_eq!(refused(Driver::Sqlite, event), ("COMMIT".into(), at(2, 1)));
    // PostgreSQL: only `BEGIN ATOMIC` opens a body; a column `begin` in a
    // body written `RETURN` does not, even with an `END` to close it.
    let function = "create function {schema}.f() returns int language sql return (select begin from {schema}.t);\n\
                    commit;\ncreate table {schema}.x (id int);\nend;";
    assert_eq!(refused(Driver::Postgres, function), ("COMMIT".into(), at(2, 1)));
    // SQLite: a trigger whose `begin` is a name after `.`.
    let trigger = "create trigger tr after insert on t when new.begin > 0 begin update t set a = 1; end;\ncommit;";
    assert_eq!(refused(Driver::Sqlite, trigger), ("COMMIT".into(), at(2, 1)));
    // A body left open at the end was misread: every `;` cuts from its start.
    let open = "create trigger tr after insert on t begin update t set begin = 1;\ncommit;";
    assert_eq!(refused(Driver::Sqlite, open), ("COMMIT".into(), at(2, 1)));
    // Routines as they are written still keep their bodies whole.
    let atomic = "create function f() returns int language sql begin atomic select 1; select 2; end;\nselect 3;";
    assert_eq!(pg(atomic), Ok(FileMode::default()));
    let mysql_definer = "CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN START TRANSACTION; COMMIT; END";
    assert_eq!(split(Driver::Mysql, mysql_definer).map(|s| s.len()), Some(1));
    let mariadb = "CREATE OR REPLACE DEFINER = CURRENT_USER TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN \
                   SET NEW.a = 1; SET NEW.b = 2; END; select 1;";
    assert_eq!(split(Driver::Mysql, mariadb).map(|s| s.len()), Some(2));
}

#[test]
fn text_the_tokenizer_cannot_read_is_judged_as_far_as_it_reads() {
    // PostgreSQL takes escape strings the tokenizer cannot decode: read as
    // blanks where the engine ends them, the rest is judged.
    for text in [
        "create table {schema}.emoji (s text default E'\\uD83D\\uDE00');\ncommit;\nselect 1/0;",
        "create table {schema}.b (s text default e'\\xC3\\xA9\\'s');\ncommit;",
        "select E'\\400';\ncommit;",
    ] {
        match pg(text) {
            Err(StatementError::TransactionControl { statement, at: p, .. }) => {
                assert_eq!((statement.as_str(), p), ("COMMIT", at(2, 1)), "{text}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    assert_eq!(
        pg("create table t (s text default E'\\uD83D\\uDE00');\nselect E'\\xC3\\'; commit; ';"),
        Ok(FileMode::default())
    );
    assert_eq!(split(Driver::Postgres, "select E'\\xC3;';\nselect 2;").map(|s| s.len()), Some(2));
    // Elsewhere the statements before what cannot be read are judged:
    // SQLite runs them before it reaches it.
    let sqlite = "create table a (x int);\ncommit;\nselect 'unterminated";
    assert!(matches!(
        first(inspect(Driver::Sqlite, "t/002.sql", sqlite)),
        Err(StatementError::TransactionControl { .. })
    ));
    let sqlserver = "create table t1.a (x int)\ncommit transaction\nselect 'unterminated";
    assert!(matches!(
        first(inspect(Driver::SqlServer, "t/002.sql", sqlserver)),
        Err(StatementError::TransactionControl { .. })
    ));
    // What the engine would refuse whole stays the engine's.
    assert_eq!(pg("select 'unterminated; commit;"), Ok(FileMode::default()));
}

#[test]
fn text_of_which_nothing_can_be_read_is_refused_when_it_holds_a_control_word() {
    // An unterminated comment at the end: SQLite runs what comes before it.
    let text = "create table a (x int);\ncommit;\n/* unterminated";
    let refused = first(inspect(Driver::Sqlite, "t/002.sql", text)).unwrap_err();
    assert_eq!(
        refused,
        StatementError::Unreadable {
            file: "t/002.sql".into(),
            at: at(2, 1),
            word: "COMMIT".into(),
            mark: Some(STRATA_MARK)
        }
    );
    assert!(refused.to_string().starts_with("t/002.sql:2:1: the file cannot be read to its end"), "{refused}");
    assert_eq!(
        first(inspect(Driver::Sqlite, "t/002.sql", "create table a (x int);\n/* unterminated"))
            .map(|m| m.changes_session),
        Ok(true)
    );
    let outside = "-- strata:no-transaction\ncommit;\n/* unterminated";
    assert_eq!(first(inspect(Driver::Sqlite, "t/002.sql", outside)).map(|m| m.no_transaction), Ok(true));
}

#[test]
fn a_file_uses_only_savepoints_it_set_itself() {
    let foreign = |driver, text| match first(inspect(driver, "t/002.sql", text)) {
        Err(StatementError::ForeignSavepoint { at, statement, name, .. }) => Some((at, statement, name)),
        Ok(_) => None,
        Err(other) => panic!("{other:?}"),
    };
    for text in [
        "savepoint s; create table a (id int); release savepoint s;",
        "SAVEPOINT s; insert into a values (1); rollback to savepoint s; insert into a values (2); release s;",
        "savepoint S; rollback transaction to s; rollback to savepoint s;",
        "savepoint a; savepoint b; release a; savepoint a; rollback to a;",
    ] {
        assert_eq!(foreign(Driver::Postgres, text), None, "{text}");
        assert_eq!(foreign(Driver::Sqlite, text), None, "{text}");
    }
    // An earlier file's savepoint, or one this file already released.
    assert_eq!(
        foreign(Driver::Postgres, "rollback to savepoint s;\nrelease savepoint s;"),
        Some((at(1, 1), "ROLLBACK TO SAVEPOINT".to_string(), "s".to_string()))
    );
    assert_eq!(
        foreign(Driver::Sqlite, "select 1;\n  release s;"),
        Some((at(2, 3), "RELEASE".to_string(), "s".to_string()))
    );
    assert!(foreign(Driver::Postgres, "savepoint a; savepoint b; release a; rollback to b;").is_some());
    // PostgreSQL tells a quoted name's case apart; SQLite does not.
    assert!(foreign(Driver::Postgres, "savepoint \"S\"; rollback to s;").is_some());
    assert_eq!(foreign(Driver::Sqlite, "savepoint \"S\"; rollback to s;"), None);
    // T-SQL: `ROLLBACK TRAN name` of a savepoint this file saved, in any
    // batch before; an earlier file's is refused where its batch starts.
    for text in [
        "save tran s\ninsert into t values (1)\nGO\nrollback tran s\nrollback tran s",
        "declare @p varchar(9) = 's'\nsave transaction @p\nrollback transaction @p",
        "create procedure p as begin rollback tran outer_point end\nGO\nselect 1",
    ] {
        assert_eq!(foreign(Driver::SqlServer, text), None, "{text}");
    }
    assert_eq!(
        foreign(Driver::SqlServer, "insert into t values (1)\nGO\n  update t set a = 2\n  rollback tran before_one"),
        Some((at(3, 3), "ROLLBACK TRAN".to_string(), "before_one".to_string()))
    );
    assert_eq!(
        foreign(Driver::SqlServer, "save tran [a]\nrollback transaction [A]"),
        Some((at(1, 1), "ROLLBACK TRANSACTION".to_string(), "A".to_string()))
    );
    let alone = format!("-- {NO_TRANSACTION_DIRECTIVE}\nbegin tran\nrollback tran before_one\ncommit");
    assert!(inspect(Driver::SqlServer, "t/002.sql", &alone).is_ok());
    // Every one is reported; outside a transaction the file is its own.
    let text = "rollback to a; release b;";
    assert_eq!(inspect(Driver::Postgres, "t/002.sql", text).unwrap_err().0.len(), 2);
    let alone = format!("-- {NO_TRANSACTION_DIRECTIVE}\nbegin; {text} commit;");
    assert!(inspect(Driver::Postgres, "t/002.sql", &alone).is_ok());
}

#[test]
fn a_file_outside_any_transaction_ends_what_it_begins() {
    let alone =
        |driver, body: &str| first(inspect(driver, "t/002.sql", &format!("-- {NO_TRANSACTION_DIRECTIVE}\n{body}")));
    for body in [
        "begin; create table b (x int); commit;",
        "start transaction; insert into a values (1); rollback;",
        "begin; insert into a values (1); end; create index concurrently i on a (x);",
        "begin; savepoint s; rollback to savepoint s; abort;",
    ] {
        assert!(alone(Driver::Postgres, body).is_ok(), "{body}");
    }
    match alone(Driver::Postgres, "create table b (x int);\nbegin;\ninsert into a values (42);") {
        Err(StatementError::LeftOpen { at: p, statement, .. }) => {
            assert_eq!((p, statement.as_str()), (at(3, 1), "BEGIN"))
        }
        other => panic!("{other:?}"),
    }
    let refused =
        alone(Driver::Postgres, "begin; commit; start transaction isolation level serializable;").unwrap_err();
    assert!(refused.to_string().contains("START TRANSACTION begins a transaction the file does not end"), "{refused}");
    // SQLite: a savepoint outside a transaction begins one, its release ends it.
    assert!(alone(Driver::Sqlite, "begin immediate; create table b (x int); commit;").is_ok());
    assert!(alone(Driver::Sqlite, "savepoint a; create table b (x int); release savepoint a;").is_ok());
    assert!(matches!(alone(Driver::Sqlite, "begin; create table b (x int);"), Err(StatementError::LeftOpen { .. })));
    assert!(matches!(
        alone(Driver::Sqlite, "savepoint a; savepoint b; release b;"),
        Err(StatementError::LeftOpen { statement, .. }) if statement == "SAVEPOINT A"
    ));
}

#[test]
fn distributed_transactions_are_refused_on_every_engine_that_has_them() {
    let mysql = |text| first(inspect(Driver::Mysql, "t/002.sql", text));
    match mysql("xa start 'x';\ninsert into t values (4);\nxa end 'x';\nxa prepare 'x';") {
        Err(StatementError::DistributedTransaction { at: p, statement, .. }) => {
            assert_eq!((p, statement.as_str()), (at(1, 1), "XA START"))
        }
        other => panic!("{other:?}"),
    }
    assert!(mysql("XA RECOVER").is_err());
    assert!(mysql("select xa from t; create table xa (id int);").is_ok());
    let alone = format!("-- {NO_TRANSACTION_DIRECTIVE}\nbegin; insert into a values (1); prepare transaction 'x';");
    assert!(matches!(
        first(inspect(Driver::Postgres, "t/002.sql", &alone)),
        Err(StatementError::DistributedTransaction { statement, .. }) if statement == "PREPARE TRANSACTION"
    ));
    // Inside a transaction it is transaction control, refused once as such.
    let refused = inspect(Driver::Postgres, "t/002.sql", "prepare transaction 'x';").unwrap_err();
    assert!(matches!(refused.0.as_slice(), [StatementError::TransactionControl { .. }]), "{refused}");
}

#[test]
fn transaction_control_hidden_from_the_standard_reading_by_a_backslash_is_refused() {
    // Standard strings: '\' then '; commit; -- '. Escape strings: '\'' then
    // a COMMIT.
    let hidden = "create table b (x int);\nselect '\\''; commit; -- '\ncreate table c (x int);";
    match pg(hidden) {
        Err(StatementError::HiddenByEscapes { at: p, statement, .. }) => {
            assert_eq!((p, statement.as_str()), (at(2, 14), "COMMIT"))
        }
        other => panic!("{other:?}"),
    }
    assert!(pg(hidden).unwrap_err().to_string().contains("standard_conforming_strings off"));
    assert!(pg("select '\\''; rollback; -- '").is_err());
    // Backslashes that read the same both ways, or not at all with escapes.
    for text in [
        "select 'C:\\temp', E'a\\'b', $$\\$$;",
        "select replace(x, '\\', '/') from t;",
        "select '\\' as a, 'x' as b; commit_log();",
    ] {
        assert!(pg(text).is_ok(), "{text}");
    }
    // Refused once when both readings see it.
    let both = inspect(Driver::Postgres, "t/001.sql", "select '\\n';\ncommit;").unwrap_err();
    assert_eq!(both.0.len(), 1, "{both}");
    // Outside a transaction nothing is judged.
    assert!(pg(&format!("-- {NO_TRANSACTION_DIRECTIVE}\n{hidden}")).is_ok());
}

#[test]
fn a_mysql_call_or_user_variable_changes_the_session() {
    let changes = |text| first(inspect(Driver::Mysql, "t/002.sql", text)).unwrap().changes_session;
    assert!(changes("call tx_ref.fkoff();"));
    assert!(changes("select 42 into @leak;"));
    assert!(changes("select @n := count(*) from t;"));
    assert!(changes("insert into t values (@leak);"));
    assert!(!changes("select @@version; create table t (id int);"));
    assert!(!changes("create table t (id int, email varchar(9) default 'a@b');"));
}

#[test]
fn a_sqlite_file_may_not_touch_the_journal_mode() {
    let sqlite = |text: &str| first(inspect(Driver::Sqlite, "t/002.sql", text));
    for text in ["pragma {schema}.journal_mode = wal;", "PRAGMA journal_mode('off');", "pragma t1.journal_mode;"] {
        assert!(matches!(sqlite(text), Err(StatementError::JournalMode { .. })), "{text}");
        let alone = format!("-- {NO_TRANSACTION_DIRECTIVE}\n{text}");
        assert!(matches!(sqlite(&alone), Err(StatementError::JournalMode { .. })), "{alone}");
    }
    assert!(sqlite("pragma foreign_keys = off; create table journal_mode (x int);").is_ok());
}

#[test]
fn what_ran_before_a_failure_is_told_by_the_statements_before_it() {
    let text = "-- a file\ncreate table a (x int);\nselect * from nope;\n";
    assert!(!ran_before(Driver::Mysql, text, at(2, 1)));
    assert!(!ran_before(Driver::Mysql, text, at(2, 5)));
    assert!(ran_before(Driver::Mysql, text, at(3, 1)));
    assert!(ran_before(Driver::Postgres, "select 1; select 2;", at(1, 11)));
    // SQL Server: what of a batch began before the failure.
    let batch = "create table a (x int)\ninsert into a values (1)\nGO\nselect 2\n";
    assert!(!ran_before(Driver::SqlServer, batch, at(1, 1)));
    assert!(ran_before(Driver::SqlServer, batch, at(2, 1)), "the batch's first statement ran");
    assert!(ran_before(Driver::SqlServer, batch, at(4, 1)));
    assert!(!ran_before(Driver::SqlServer, "GO\n\nselect 1\n", at(3, 1)));
}

#[test]
fn the_advice_names_the_way_out_the_file_has() {
    use crate::migrate::format::Format;
    let advice = |text: &str, format: Format| {
        inspect_part(Driver::Postgres, "t/001.sql", text, false, format.no_transaction_mark()).unwrap_err().to_string()
    };
    // Another format's file is told its own marker, never Strata's
    // directive (which that format's reader refuses).
    let index = "create index concurrently i on t (x);";
    let told = advice(index, Format::Dbmate);
    assert!(told.contains("`-- migrate:up transaction:false`") && !told.contains("strata:"), "{told}");
    let told = advice("insert into t values (1);\ncommit;", Format::Flyway);
    assert!(told.contains("`executeInTransaction=false` in a `<file>.conf`") && !told.contains("strata:"), "{told}");
    assert!(advice(index, Format::Strata).contains("`-- strata:no-transaction` in its leading comment lines"));
    // A backfill cannot run outside a transaction: its batches commit.
    let backfill = "-- strata:backfill table={schema}.t key=id batch=10\n\
                    update {schema}.t set a = 1 where {range};\ncommit;";
    let told = advice(backfill, Format::Strata);
    assert_eq!(
        told,
        "t/001.sql:3:1: COMMIT would end the transaction the service runs this file in; remove it (a backfill \
         commits each of its batches itself)"
    );
}
