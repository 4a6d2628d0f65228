//! What a desired file may hold: each statement makes or changes an object
//! *of the scratch schema* the file is applied into — a `CREATE` or `ALTER`
//! of a name qualified by it. Anything else (data changes, `DROP`,
//! `RENAME`, another schema's or database's object, an event that would
//! run on its own, a query) is refused before anything runs, naming the
//! statement's line.
//!
//! - **MariaDB, MySQL** commit each DDL statement the moment it runs: the
//!   file goes into a scratch database dropped afterwards, and only this
//!   rule keeps it there.
//! - **SQLite** applies the file inside a transaction it rolls back, but a
//!   name left unqualified would make its object in the service's own file,
//!   and a `PRAGMA` or `ATTACH` outlives a transaction.
//! - **PostgreSQL** applies the file inside a transaction it rolls back:
//!   what the rule adds there is that nothing else *runs*. A query or a `DO`
//!   block runs with the service's credentials, and what it reads could come
//!   back written into a definition (a view made by `EXECUTE` holding
//!   another tenant's rows, the service's tokens) or end outside the
//!   transaction (`COPY … TO PROGRAM`, `pg_terminate_backend`); an object
//!   made outside the scratch schema would be silently left out of the
//!   plan. So a statement is a `CREATE` or `ALTER` of a scratch object
//!   (indexes and triggers name their table after `ON`), a `COMMENT ON`
//!   one, a `SET`, `GRANT` or `REVOKE` (the transaction's, rolled back
//!   with it; privileges are not compared), the
//!   `search_path` reset `pg_dump` writes, `CREATE EXTENSION` (the server's
//!   own script) or `CREATE SCHEMA` of the scratch schema itself;
//!   `CREATE TABLE … AS` and
//!   materialized views (which run their query) are refused. A routine's
//!   body is not looked into: definitions the engine evaluates as they are
//!   made (a column's default added to a table) can still call one, so SQL
//!   text a caller sends remains SQL the database runs (a deployer's, see
//!   `auth::role`).
//! - **SQL Server** applies the file inside a transaction it rolls back,
//!   batch by batch at its `GO` lines; T-SQL needs no `;` between
//!   statements, so each batch is judged whole ([`sqlserver`]).

use sqlparser::tokenizer::{Token, Whitespace};

use crate::migrate::driver::Driver;
use crate::migrate::statements::{Offsets, Position, split, tokenize};

mod sqlserver;

/// A statement of a desired file that reaches outside the scratch
/// database, or that is not a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideScratch {
    /// The statement's first line in the file (1-based).
    pub line: usize,
    /// The statement's leading words, as written.
    pub statement: String,
    /// Why it is refused.
    pub reason: &'static str,
}

impl std::fmt::Display for OutsideScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: `{}`: {}", self.line, self.statement, self.reason)
    }
}

impl std::error::Error for OutsideScratch {}

/// The object words after `CREATE`/`ALTER` that name one object of the
/// database, its name following.
const NAMED: [&str; 6] = ["TABLE", "VIEW", "TRIGGER", "FUNCTION", "PROCEDURE", "SEQUENCE"];

/// More object words PostgreSQL names the same way.
const POSTGRES_NAMED: [&str; 2] = ["TYPE", "DOMAIN"];

/// Object words of things outside any database, or that act on their own.
const REFUSED: [&str; 10] =
    ["DATABASE", "SCHEMA", "EVENT", "USER", "ROLE", "SERVER", "TABLESPACE", "LOGFILE", "PACKAGE", "SYNONYM"];

/// PostgreSQL's object words of things outside the schema, or whose
/// definition runs a query.
const POSTGRES_REFUSED: [&str; 5] = ["EXTENSION", "MATERIALIZED", "PUBLICATION", "SUBSCRIPTION", "FOREIGN"];

/// Words looked at, at most, before a statement's object word.
const HEAD_WORDS: usize = 16;

/// Checks that every statement of `text` (the desired file with its
/// placeholder already replaced by `scratch`) is a `CREATE` or `ALTER` of
/// an object named `scratch.name` (on PostgreSQL and SQL Server also what
/// the module documentation lists).
pub fn check(driver: Driver, text: &str, scratch: &str) -> Result<(), OutsideScratch> {
    if driver == Driver::SqlServer {
        return sqlserver::check(text, scratch);
    }
    let opened = match driver {
        Driver::Mysql => executable_comments_opened(text),
        _ => None,
    };
    let text = opened.as_deref().unwrap_or(text);
    let Some(ranges) = split(driver, text) else {
        return Err(OutsideScratch { line: 1, statement: String::new(), reason: "the file cannot be read as SQL" });
    };
    for range in ranges {
        let line = text[..range.start].matches('\n').count() + 1;
        let statement = &text[range];
        let refuse = |reason| {
            let head: Vec<&str> = statement.split_whitespace().take(6).collect();
            Err(OutsideScratch { line, statement: head.join(" "), reason })
        };
        let Ok(tokens) = tokenize(driver, statement) else {
            return refuse("the statement cannot be read as SQL");
        };
        let tokens: Vec<&Token> = tokens
            .iter()
            .map(|t| &t.token)
            .filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF | Token::SemiColon))
            .collect();
        if tokens.is_empty() || tokens.iter().all(|t| matches!(t, Token::Whitespace(Whitespace::Newline))) {
            continue;
        }
        if let Err(reason) = judge(driver, &tokens, scratch) {
            return refuse(reason);
        }
    }
    Ok(())
}

/// MySQL's executable comments (`/*!40000 …*/`, MariaDB's `/*M!100101 …*/`)
/// opened: their markers blanked, every position kept, so what the server
/// runs of them is judged as any statement (`/*!40000 DROP DATABASE x */`
/// was a comment to the check and a drop to the server). `None` when the
/// text has none, or cannot be read.
fn executable_comments_opened(text: &str) -> Option<String> {
    let tokens = tokenize(Driver::Mysql, text).ok()?;
    let offsets = Offsets::new(text);
    let mut opened = text.as_bytes().to_vec();
    let mut any = false;
    for token in &tokens {
        let Token::Whitespace(Whitespace::MultiLineComment(body)) = &token.token else { continue };
        let marker = match body {
            _ if body.starts_with('!') => 1,
            _ if body.starts_with("M!") => 2,
            _ => continue,
        };
        let version = body[marker..].bytes().take_while(u8::is_ascii_digit).count();
        let start = offsets.byte(Position { line: token.span.start.line, column: token.span.start.column });
        let end = offsets.byte(Position { line: token.span.end.line, column: token.span.end.column });
        if end < start + 4 + marker + version || &text[end - 2..end] != "*/" {
            return None;
        }
        opened[start..start + 2 + marker + version].fill(b' ');
        opened[end - 2..end].fill(b' ');
        any = true;
    }
    // Only ASCII markers were blanked: still UTF-8.
    any.then(|| String::from_utf8(opened).ok()).flatten()
}

/// A token's word upper-cased when it is an unquoted word.
fn keyword(token: Option<&&Token>) -> Option<String> {
    match token {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

fn judge(driver: Driver, tokens: &[&Token], scratch: &str) -> Result<(), &'static str> {
    let postgres = driver == Driver::Postgres;
    let first = keyword(tokens.first());
    match first.as_deref() {
        Some("CREATE" | "ALTER") => {}
        // Transactional, rolled back with the rest; privileges are not
        // compared (`pg_dump` writes them).
        Some("SET" | "GRANT" | "REVOKE") if postgres => return Ok(()),
        Some("SELECT") if postgres && resets_search_path(tokens) => return Ok(()),
        Some("COMMENT") if postgres => return comment_on(tokens, scratch),
        // mysqldump's session settings (`SET NAMES`, `SET FOREIGN_KEY_CHECKS=0`,
        // `SET @saved = @@character_set_client`): the reading's connection
        // is closed after it. Nothing global, no password or role, no query.
        Some("SET") if driver == Driver::Mysql => return session_setting(tokens),
        _ if postgres => {
            return Err("a desired schema holds only CREATE, ALTER, COMMENT ON, GRANT, REVOKE and SET \
                        statements (no queries, data changes, drops, renames or DO blocks)");
        }
        _ => {
            return Err("a desired schema holds only CREATE and ALTER statements (no data changes, drops or renames)");
        }
    }
    let Some((at, object)) = (1..tokens.len().min(HEAD_WORDS)).find_map(|i| {
        let word = keyword(tokens.get(i))?;
        let named = NAMED.contains(&word.as_str()) || (postgres && POSTGRES_NAMED.contains(&word.as_str()));
        let refused = REFUSED.contains(&word.as_str()) || (postgres && POSTGRES_REFUSED.contains(&word.as_str()));
        (named || refused || word == "INDEX").then_some((i, word))
    }) else {
        return Err("not a definition of a table, view, index, trigger, routine or sequence");
    };
    if object == "MATERIALIZED" {
        return Err("a materialized view runs its query as it is made: a desired schema defines views");
    }
    if postgres && first.as_deref() == Some("CREATE") {
        match object.as_str() {
            // The server's own install script, rolled back with the rest
            // (a schema file often starts with the extensions it uses).
            "EXTENSION" => return Ok(()),
            // `pg_dump`'s `CREATE SCHEMA` of the schema itself.
            "SCHEMA" => return the_scratch_itself(tokens, at + 1, scratch),
            _ => {}
        }
    }
    if REFUSED.contains(&object.as_str()) || POSTGRES_REFUSED.contains(&object.as_str()) {
        return Err(if postgres {
            "a desired schema defines only objects of the tenant's schema"
        } else {
            "a desired schema defines only objects of the tenant's database"
        });
    }
    let altered = first.as_deref() == Some("ALTER");
    let renames = has_word(tokens, &["RENAME"]);
    let moves = tokens
        .windows(2)
        .any(|w| keyword(Some(&w[0])).as_deref() == Some("SET") && keyword(Some(&w[1])).as_deref() == Some("SCHEMA"));
    if altered && (renames || moves) {
        return Err("a desired schema does not rename (a name may move to another database)");
    }
    let name_at = name_index(driver, tokens, &object, at, altered)?;
    qualified_by_scratch(tokens, name_at, scratch, postgres)?;
    if object == "TABLE" && !altered && (runs_a_query(tokens, name_at + 3) || has_word(tokens, &["SELECT"])) {
        return Err("CREATE TABLE … AS runs its query: a desired schema defines a table by its columns");
    }
    if driver == Driver::Mysql {
        return reaches_no_other_table(tokens, object.as_str(), scratch);
    }
    Ok(())
}

/// Where the name of the `object` a statement defines (its word at `at`)
/// stands. MySQL and PostgreSQL name an index's table (PostgreSQL a
/// trigger's too), SQLite the index itself (its table is always in the
/// index's schema); `IF [NOT] EXISTS` and `ONLY` (PostgreSQL's inheritance)
/// come before it.
fn name_index(
    driver: Driver,
    tokens: &[&Token],
    object: &str,
    at: usize,
    altered: bool,
) -> Result<usize, &'static str> {
    let postgres = driver == Driver::Postgres;
    let mut name_at = at + 1;
    let on_its_table = match object {
        "INDEX" => driver == Driver::Mysql || (postgres && !altered),
        "TRIGGER" => postgres && !altered,
        _ => false,
    };
    if on_its_table {
        let Some(on) = (at + 1..tokens.len()).find(|&i| keyword(tokens.get(i)).as_deref() == Some("ON")) else {
            return Err("an index or trigger names its table");
        };
        name_at = on + 1;
    }
    while matches!(keyword(tokens.get(name_at)).as_deref(), Some("IF" | "NOT" | "EXISTS" | "ONLY")) {
        name_at += 1;
    }
    Ok(name_at)
}

/// Whether an unquoted word of `tokens` is one of `words`.
fn has_word(tokens: &[&Token], words: &[&str]) -> bool {
    tokens.iter().any(|t| keyword(Some(t)).is_some_and(|word| words.contains(&word.as_str())))
}

/// MySQL and MariaDB: a table's definition that moves rows or a table in
/// from elsewhere (`EXCHANGE PARTITION … WITH TABLE`, `CONVERT TABLE … TO
/// PARTITION`, `CONVERT PARTITION … TO TABLE`), copies another's
/// (`LIKE other.t`), writes files where the server keeps others
/// (`DATA DIRECTORY`) or reads another server (FEDERATED, CONNECT, SPIDER)
/// is refused: the scratch database is dropped, the rows moved out of their
/// table are not given back.
fn reaches_no_other_table(tokens: &[&Token], object: &str, scratch: &str) -> Result<(), &'static str> {
    if object != "TABLE" {
        return Ok(());
    }
    if has_word(tokens, &["EXCHANGE", "DIRECTORY", "CONNECTION", "FEDERATED", "CONNECT", "SPIDER"]) {
        return Err("a desired schema defines its tables: nothing moved in from another table, file or server");
    }
    let converts = tokens.windows(2).any(|w| {
        keyword(Some(&w[0])).as_deref() == Some("CONVERT")
            && matches!(keyword(Some(&w[1])).as_deref(), Some("TABLE" | "PARTITION"))
    });
    if converts {
        return Err("a desired schema defines its tables: nothing moved in from another table, file or server");
    }
    match tokens.iter().position(|t| keyword(Some(t)).as_deref() == Some("LIKE")) {
        Some(like) => qualified_by_scratch(tokens, like + 1, scratch, false),
        None => Ok(()),
    }
}

/// MySQL's `SET` of session settings only: not `GLOBAL` or `PERSIST`
/// (`@@global.x` included), no `PASSWORD`, `ROLE` or `TRANSACTION`, no
/// query or call in it.
fn session_setting(tokens: &[&Token]) -> Result<(), &'static str> {
    let refused = tokens.iter().any(|t| match t {
        Token::LParen | Token::SemiColon => true,
        Token::Word(w) => {
            let word = w.value.to_ascii_uppercase();
            ["GLOBAL", "PERSIST", "PERSIST_ONLY", "PASSWORD", "ROLE", "TRANSACTION", "SELECT", "STATEMENT"]
                .iter()
                .any(|refused| word.trim_start_matches('@').split('.').any(|part| part == *refused))
        }
        _ => false,
    });
    match refused {
        true => Err("a desired schema sets only its session (SET NAMES, SET FOREIGN_KEY_CHECKS=0, …)"),
        false => Ok(()),
    }
}

/// Whether the name at `at` is `scratch.name` (`postgres`, or SQL Server:
/// another's is of another schema; else of another database).
fn qualified_by_scratch(tokens: &[&Token], at: usize, scratch: &str, postgres: bool) -> Result<(), &'static str> {
    let qualifier = match (tokens.get(at), tokens.get(at + 1)) {
        (Some(Token::Word(schema)), Some(Token::Period)) => schema.value.as_str(),
        _ => return Err("a desired schema names each object with the tenant's schema (schema.name)"),
    };
    match qualifier.eq_ignore_ascii_case(scratch) {
        true => Ok(()),
        false if postgres => Err("names an object of another schema"),
        false => Err("names an object of another database"),
    }
}

/// Whether a `CREATE TABLE` whose name ends before `after` is made from a
/// query (`AS …`, after its column names if any).
fn runs_a_query(tokens: &[&Token], after: usize) -> bool {
    let mut at = after;
    if matches!(tokens.get(at), Some(Token::LParen)) {
        let mut depth = 0usize;
        while let Some(token) = tokens.get(at) {
            match token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            at += 1;
            if depth == 0 {
                break;
            }
        }
    }
    keyword(tokens.get(at)).as_deref() == Some("AS")
}

/// PostgreSQL's `COMMENT ON …`: allowed on an object of the scratch
/// schema (its first qualified name, or the schema itself).
fn comment_on(tokens: &[&Token], scratch: &str) -> Result<(), &'static str> {
    if keyword(tokens.get(1)).as_deref() != Some("ON") {
        return Err("not a COMMENT ON statement");
    }
    match keyword(tokens.get(2)).as_deref() {
        Some("SCHEMA") => return the_scratch_itself(tokens, 3, scratch),
        Some("EXTENSION") => return Ok(()),
        _ => {}
    }
    let Some(at) = (2..tokens.len()).find(|&i| matches!(tokens.get(i + 1), Some(Token::Period))) else {
        return Err("a desired schema names each object with the tenant's schema (schema.name)");
    };
    qualified_by_scratch(tokens, at, scratch, true)
}

/// Whether the schema named at `at` (after `IF NOT EXISTS`) is the scratch
/// schema itself, the statement's end or a comment's `IS` after it.
fn the_scratch_itself(tokens: &[&Token], mut at: usize, scratch: &str) -> Result<(), &'static str> {
    while matches!(keyword(tokens.get(at)).as_deref(), Some("IF" | "NOT" | "EXISTS")) {
        at += 1;
    }
    match (tokens.get(at), tokens.get(at + 1)) {
        (Some(Token::Word(name)), next)
            if name.value.eq_ignore_ascii_case(scratch)
                && next.is_none_or(|t| keyword(Some(t)).as_deref() == Some("IS")) =>
        {
            Ok(())
        }
        _ => Err("names another schema than the tenant's"),
    }
}

/// `SELECT pg_catalog.set_config('search_path', '…', false)` as `pg_dump`
/// writes it at a dump's start: the transaction's setting, rolled back.
fn resets_search_path(tokens: &[&Token]) -> bool {
    let word =
        |i: usize, value: &str| matches!(tokens.get(i), Some(Token::Word(w)) if w.value.eq_ignore_ascii_case(value));
    let text = |i: usize| matches!(tokens.get(i), Some(Token::SingleQuotedString(_)));
    let search_path = matches!(tokens.get(5), Some(Token::SingleQuotedString(s)) if s == "search_path");
    tokens.len() == 11
        && word(1, "pg_catalog")
        && matches!(tokens.get(2), Some(Token::Period))
        && word(3, "set_config")
        && matches!(tokens.get(4), Some(Token::LParen))
        && search_path
        && matches!(tokens.get(6), Some(Token::Comma))
        && text(7)
        && matches!(tokens.get(8), Some(Token::Comma))
        && (word(9, "false") || word(9, "true"))
        && matches!(tokens.get(10), Some(Token::RParen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_in_the_scratch_database_pass() {
        let text = "create table strata_desired.t (id int primary key);\n\
                    CREATE OR REPLACE VIEW `strata_desired`.`v` AS select id from strata_desired.t;\n\
                    create unique index t_id on strata_desired.t (id);\n\
                    alter table strata_desired.t add column b int;\n\
                    create definer = current_user function strata_desired.f(a int) returns int deterministic return a;\n\
                    create trigger strata_desired.tr before insert on strata_desired.t for each row begin set new.b = 1; end;\n\
                    create table if not exists strata_desired.u (id int);\n";
        assert_eq!(check(Driver::Mysql, text, "strata_desired"), Ok(()));
    }

    #[test]
    fn anything_else_is_refused_naming_its_line() {
        let refused = |text: &str| check(Driver::Mysql, text, "strata_desired").unwrap_err();
        let other = refused("create table strata_desired.a (id int);\n\ncreate table svc.t (id int);");
        assert_eq!((other.line, other.statement.as_str()), (3, "create table svc.t (id int)"));
        assert_eq!(other.reason, "names an object of another database");
        assert!(refused("create table t (id int)").reason.contains("schema.name"));
        assert!(refused("insert into strata_desired.t values (1)").reason.contains("only CREATE and ALTER"));
        assert!(refused("drop table svc.migrations").reason.contains("only CREATE and ALTER"));
        assert!(refused("create index i on svc.t (id)").reason.contains("another database"));
        assert!(refused("alter table strata_desired.t rename to svc.t").reason.contains("rename"));
        assert!(refused("create database other").reason.contains("tenant's database"));
        assert!(
            refused("create event strata_desired.e on schedule every 1 second do delete from svc.t")
                .reason
                .contains("tenant's database")
        );
    }

    #[test]
    fn what_mariadb_runs_of_a_comment_or_moves_in_from_another_table_is_refused() {
        let refused = |text: &str| check(Driver::Mysql, text, "strata_desired").unwrap_err();
        let first = "create table strata_desired.log (id int);\n";
        // The server runs an executable comment; the check reads it now.
        let dropped = refused(&format!("{first}/*!40000 drop database probe_c_victim */;"));
        assert_eq!((dropped.line, dropped.reason.contains("only CREATE and ALTER")), (2, true), "{dropped}");
        let renamed = refused(&format!("{first}alter table strata_desired.log /*!40000 rename victim.moved */;"));
        assert!(renamed.reason.contains("rename"), "{renamed}");
        assert!(refused("/*M!100101 drop table svc.svc_migrations */;").reason.contains("only CREATE and ALTER"));
        // Rows or tables moved in from another table, a query, a copy.
        for text in [
            "alter table strata_desired.p exchange partition p0 with table victim.keep",
            "alter table strata_desired.q convert table victim.keep2 to partition p1 values less than maxvalue",
            "alter table strata_desired.q convert partition p1 to table victim.out",
            "create table strata_desired.f (id int) engine=federated connection='mysql://u@h/db/t'",
            "create table strata_desired.d (id int) data directory = '/var/lib/mysql/mysql'",
        ] {
            assert!(refused(text).reason.contains("nothing moved in"), "{text}");
        }
        assert!(refused("create table strata_desired.c select * from mysql.user").reason.contains("runs its query"));
        assert!(refused("create table strata_desired.c like mysql.user").reason.contains("another database"));
        // mysqldump's session settings and version comments pass; what is
        // global, a password or a query does not.
        let dump = "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n\
                    /*!40101 SET NAMES utf8mb4 */;\n/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, \
                    FOREIGN_KEY_CHECKS=0 */;\nSET character_set_client = utf8mb4;\n\
                    CREATE TABLE `strata_desired`.`t` (`id` int NOT NULL) ENGINE=InnoDB /*!50100 PARTITION BY HASH (id) \
                    PARTITIONS 2 */;\nalter table strata_desired.t convert to character set utf8mb4;\n";
        assert_eq!(check(Driver::Mysql, dump, "strata_desired"), Ok(()));
        for text in [
            "set global max_connections = 1",
            "SET @@GLOBAL.GTID_PURGED='x'",
            "set password = 'x'",
            "set @a = (select 1)",
        ] {
            assert!(refused(text).reason.contains("sets only its session"), "{text}");
        }
    }

    #[test]
    fn sqlite_names_each_object_with_the_scratch_schema_and_nothing_else() {
        let text = "create table strata_desired.t (id integer primary key);\n\
                    create unique index if not exists strata_desired.t_id on t (id);\n\
                    create view strata_desired.v as select id from t;\n\
                    create trigger strata_desired.tr after insert on t begin select 1; end;\n\
                    create virtual table strata_desired.docs using fts5(body);\n";
        assert_eq!(check(Driver::Sqlite, text, "strata_desired"), Ok(()));
        let refused = |text: &str| check(Driver::Sqlite, text, "strata_desired").unwrap_err().reason;
        assert!(refused("create table t (id int)").contains("schema.name"));
        assert!(refused("create index i on strata_desired.t (id)").contains("schema.name"));
        assert!(refused("pragma writable_schema = on").contains("only CREATE and ALTER"));
        assert!(refused("attach database 'x.db' as strata_desired").contains("only CREATE and ALTER"));
        assert!(refused("create table main.t (id int)").contains("another database"));
    }

    #[test]
    fn postgresql_definitions_of_the_scratch_schema_pass_and_pg_dumps_preamble_too() {
        let text = "SET statement_timeout = 0;\n\
                    SELECT pg_catalog.set_config('search_path', '', false);\n\
                    create type strata_desired.mood as enum ('ok', 'sad');\n\
                    create domain strata_desired.positive as integer check (value > 0);\n\
                    create table strata_desired.t (id int primary key, c int references ref.countries (id), \
                    words integer generated always as (id * 2) stored);\n\
                    create table if not exists strata_desired.u (like strata_desired.t);\n\
                    CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS t_c ON ONLY strata_desired.t USING btree (c);\n\
                    create index on strata_desired.t (c);\n\
                    create or replace view strata_desired.v as select id from strata_desired.t;\n\
                    create function strata_desired.f() returns trigger language plpgsql as $$ begin return new; end $$;\n\
                    create constraint trigger tr after insert on strata_desired.t for each row execute function strata_desired.f();\n\
                    ALTER TABLE ONLY strata_desired.t ADD CONSTRAINT t_c_check CHECK (c > 0);\n\
                    alter sequence strata_desired.s owned by strata_desired.t.id;\n\
                    comment on column strata_desired.t.c is 'the country';\n\
                    comment on trigger tr on strata_desired.t is 'x';\n\
                    comment on schema strata_desired is 'tenants';\n\
                    grant select on table strata_desired.t to public;\n\
                    revoke all on table strata_desired.t from public;\n\
                    create extension if not exists pgcrypto;\n\
                    comment on extension pgcrypto is 'x';\n\
                    create schema if not exists strata_desired;\n";
        assert_eq!(check(Driver::Postgres, text, "strata_desired"), Ok(()));
    }

    #[test]
    fn postgresql_refuses_what_runs_or_lands_outside_the_scratch_schema() {
        let refused = |text: &str| check(Driver::Postgres, text, "strata_desired").unwrap_err().reason;
        let only = "holds only CREATE, ALTER, COMMENT ON, GRANT, REVOKE and SET";
        // What runs: a query, a block, a copy, a table or view from a query.
        assert!(refused("select pg_terminate_backend(pid) from pg_stat_activity").contains(only));
        assert!(refused("do $$ begin execute 'create view strata_desired.v as select 1'; end $$").contains(only));
        assert!(refused("copy (select 1) to program 'true'").contains(only));
        assert!(refused("select pg_catalog.set_config('search_path', (select 'x'), false)").contains(only));
        assert!(refused("insert into strata_desired.t values (1)").contains(only));
        assert!(refused("create table strata_desired.t as select * from svc.svc_tokens").contains("runs its query"));
        assert!(refused("create table strata_desired.t (a) as select 1").contains("runs its query"));
        assert!(refused("create materialized view strata_desired.m as select 1").contains("materialized"));
        // What lands elsewhere, or leaves.
        assert_eq!(refused("create table public.t (id int)"), "names an object of another schema");
        assert_eq!(refused("create index i on svc.svc_migrations (id)"), "names an object of another schema");
        assert_eq!(
            refused("create trigger tr after insert on svc.t execute function f()"),
            "names an object of another schema"
        );
        assert!(refused("create table t (id int)").contains("schema.name"));
        assert!(refused("create schema other").contains("another schema"));
        assert!(refused("create schema strata_desired authorization eve create table t (id int)").contains("another"));
        assert!(refused("alter extension pgcrypto update").contains("tenant's schema"));
        assert!(refused("alter table strata_desired.t set schema public").contains("rename"));
        assert!(refused("alter table strata_desired.t rename to u").contains("rename"));
        assert!(refused("comment on table svc.svc_tokens is 'x'").contains("another schema"));
        assert!(refused("comment on schema svc is 'x'").contains("another schema"));
        assert!(refused("comment on schema strata_desired.x is 'x'").contains("another schema"));
        assert!(refused("drop table svc.svc_migrations").contains(only));
        assert!(refused("truncate svc.svc_migrations").contains(only));
    }
}
