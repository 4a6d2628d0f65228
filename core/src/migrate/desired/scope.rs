//! What a desired file may hold where the engine commits each DDL
//! statement the moment it runs (MariaDB, MySQL): the file is applied
//! into a scratch database that is dropped afterwards, so each statement
//! must make or change an object *in that database* — `CREATE` or
//! `ALTER` of a name qualified by it. Anything else (data changes,
//! `DROP`, `RENAME`, another database's object, an event that would run on
//! its own) is refused before anything runs. SQLite applies the file
//! inside a transaction it rolls back, but a name left unqualified would
//! make its object in the service's own file and a `PRAGMA` or `ATTACH`
//! outlives a transaction: it is held to the same rule. PostgreSQL applies
//! the file inside a transaction it rolls back: nothing to check there.

use sqlparser::tokenizer::{Token, Whitespace};

use crate::migrate::driver::Driver;
use crate::migrate::statements::{split, tokenize};

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

/// Object words of things outside any database, or that act on their own.
const REFUSED: [&str; 10] =
    ["DATABASE", "SCHEMA", "EVENT", "USER", "ROLE", "SERVER", "TABLESPACE", "LOGFILE", "PACKAGE", "SYNONYM"];

/// Words looked at, at most, before a statement's object word.
const HEAD_WORDS: usize = 16;

/// Checks that every statement of `text` (the desired file with its
/// placeholder already replaced by `scratch`) is a `CREATE` or `ALTER` of
/// an object named `scratch.name`, on `driver`s that commit DDL at once.
pub fn check(driver: Driver, text: &str, scratch: &str) -> Result<(), OutsideScratch> {
    if !matches!(driver, Driver::Mysql | Driver::Sqlite) {
        return Ok(());
    }
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

/// A token's word upper-cased when it is an unquoted word.
fn keyword(token: Option<&&Token>) -> Option<String> {
    match token {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

fn judge(driver: Driver, tokens: &[&Token], scratch: &str) -> Result<(), &'static str> {
    let first = keyword(tokens.first());
    if !matches!(first.as_deref(), Some("CREATE" | "ALTER")) {
        return Err("a desired schema holds only CREATE and ALTER statements (no data changes, drops or renames)");
    }
    let Some((at, object)) = (1..tokens.len().min(HEAD_WORDS)).find_map(|i| {
        let word = keyword(tokens.get(i))?;
        (NAMED.contains(&word.as_str()) || REFUSED.contains(&word.as_str()) || word == "INDEX").then_some((i, word))
    }) else {
        return Err("not a definition of a table, view, index, trigger, routine or sequence");
    };
    if REFUSED.contains(&object.as_str()) {
        return Err("a desired schema defines only objects of the tenant's database");
    }
    let renames = tokens.iter().any(|t| keyword(Some(t)).as_deref() == Some("RENAME"));
    if first.as_deref() == Some("ALTER") && renames {
        return Err("a desired schema does not rename (a name may move to another database)");
    }
    let mut name_at = at + 1;
    // MySQL names an index's table, SQLite the index itself (its table
    // is always in the index's schema).
    if object == "INDEX" && driver == Driver::Mysql {
        let Some(on) = (at + 1..tokens.len()).find(|&i| keyword(tokens.get(i)).as_deref() == Some("ON")) else {
            return Err("an index names its table");
        };
        name_at = on + 1;
    }
    // IF [NOT] EXISTS
    while matches!(keyword(tokens.get(name_at)).as_deref(), Some("IF" | "NOT" | "EXISTS")) {
        name_at += 1;
    }
    let qualifier = match (tokens.get(name_at), tokens.get(name_at + 1)) {
        (Some(Token::Word(schema)), Some(Token::Period)) => schema.value.as_str(),
        _ => return Err("a desired schema names each object with the tenant's schema (schema.name)"),
    };
    if !qualifier.eq_ignore_ascii_case(scratch) {
        return Err("names an object of another database");
    }
    Ok(())
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
    fn postgresql_rolls_back_and_is_not_checked() {
        assert_eq!(check(Driver::Postgres, "drop table svc.migrations", "strata_desired"), Ok(()));
    }
}
