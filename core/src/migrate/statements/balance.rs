//! What a file opens, it closes: transaction state one file would leave to
//! the next file of its unit, or to no one.
//!
//! - **Savepoints** (PostgreSQL, SQLite, SQL Server, in a file run inside
//!   the unit's transaction): `RELEASE` and `ROLLBACK TO` (T-SQL's
//!   `ROLLBACK TRAN name`) must name a savepoint the same file set before. An earlier file's savepoint is still open in the
//!   unit's transaction, and rolling back to it would undo that file's
//!   changes while its record stays.
//! - **A transaction left open** (PostgreSQL, SQLite, in a file run outside
//!   any transaction): a `BEGIN` (or, on SQLite, a `SAVEPOINT` outside a
//!   transaction) the file does not end. The service records such a file
//!   right after it; the transaction would end with the connection, rolled
//!   back, its record kept.
//! - **Distributed transactions** (`XA …` on MySQL and MariaDB, `PREPARE
//!   TRANSACTION` on PostgreSQL outside a transaction): a prepared branch
//!   outlives the file and the session, holds its locks, and commits later
//!   with no record.
//! - **Journal mode** (SQLite): a `PRAGMA journal_mode` stays with the
//!   tenant's database file; in WAL (or `off`) a commit across the service's
//!   file and the tenant's is no longer atomic.
//! - **String syntax** (PostgreSQL): with `standard_conforming_strings` off
//!   (a legacy database's default, or set by an earlier file) the server
//!   reads a backslash in a `'…'` string as an escape, and a `COMMIT` can
//!   hide in what the standard reading takes for a string (`select '\'';
//!   commit; -- '`): a file holding a backslash is read both ways, and
//!   transaction control found either way is refused.

use std::any::TypeId;

use sqlparser::dialect::{Dialect, PostgreSqlDialect};
use sqlparser::tokenizer::Tokenizer;

use crate::migrate::driver::Driver;
use crate::migrate::statements::{
    Kind, Position, Statement, StatementError, defines_routine, is, judge_postgres, names_savepoint, statements, words,
};

/// Every refusal of the rules above but the string syntax's (which reads
/// the file again: [`hidden_by_escapes`]), for a file run inside the unit's
/// transaction or, `no_transaction`, outside any.
pub(super) fn refusals(
    driver: Driver,
    file: &str,
    statements: &[Statement],
    no_transaction: bool,
) -> Vec<StatementError> {
    let mut refused: Vec<StatementError> = distributed(driver, file, statements, no_transaction).into_iter().collect();
    if driver == Driver::Sqlite {
        refused.extend(journal_mode(file, statements));
    }
    match (driver, no_transaction) {
        (Driver::Postgres | Driver::Sqlite, false) => refused.extend(foreign_savepoints(driver, file, statements)),
        (Driver::Postgres | Driver::Sqlite, true) => refused.extend(left_open(driver, file, statements)),
        (Driver::SqlServer, false) => refused.extend(foreign_tsql_savepoints(file, statements)),
        _ => {}
    }
    refused
}

/// The savepoint a statement sets, releases or rolls back to, with the
/// index of its name among the statement's words.
enum SavepointUse {
    Set(usize),
    Release(usize),
    RollbackTo(usize),
}

fn savepoint_use(statement: &Statement) -> Option<SavepointUse> {
    let s = &statement.words;
    let optional = |index: usize, word: &str| index + usize::from(is(s.get(index), word));
    match s.first().and_then(|w| w.as_deref()) {
        Some("SAVEPOINT") => Some(SavepointUse::Set(1)),
        Some("RELEASE") => Some(SavepointUse::Release(optional(1, "SAVEPOINT"))),
        Some("ROLLBACK") => {
            let to = if is(s.get(1), "WORK") || is(s.get(1), "TRANSACTION") { 2 } else { 1 };
            is(s.get(to), "TO").then(|| SavepointUse::RollbackTo(optional(to + 1, "SAVEPOINT")))
        }
        _ => None,
    }
}

/// The name at `index` of `statement`, folded as `driver` compares
/// savepoint names (SQLite ignores case, quoted or not).
fn savepoint_name(driver: Driver, statement: &Statement, index: usize) -> Option<String> {
    let name = statement.names.get(index)?;
    Some(if driver == Driver::Sqlite { name.to_ascii_lowercase() } else { name.clone() })
}

/// Every `RELEASE` or `ROLLBACK TO` of `statements` naming a savepoint the
/// file did not set before it (a file run inside the unit's transaction).
fn foreign_savepoints(driver: Driver, file: &str, statements: &[Statement]) -> Vec<StatementError> {
    let mut open: Vec<String> = Vec::new();
    let mut refused = Vec::new();
    for statement in statements {
        let Some(use_) = savepoint_use(statement) else { continue };
        let (SavepointUse::Set(index) | SavepointUse::Release(index) | SavepointUse::RollbackTo(index)) = use_;
        let Some(name) = savepoint_name(driver, statement, index) else { continue };
        let found = open.iter().rposition(|set| *set == name);
        match (use_, found) {
            (SavepointUse::Set(_), _) => open.push(name),
            (SavepointUse::Release(_), Some(at)) => open.truncate(at),
            (SavepointUse::RollbackTo(_), Some(at)) => open.truncate(at + 1),
            (_, None) => refused.push(StatementError::ForeignSavepoint {
                file: file.to_string(),
                at: statement.at,
                statement: words(&statement.words, index).join(" "),
                name,
            }),
        }
    }
    refused
}

/// T-SQL's `ROLLBACK TRAN[SACTION] name` of a savepoint (or `@variable`)
/// no `SAVE TRAN[SACTION]` before it in the file set, batch by batch (a
/// batch is one statement here, so it is named by where it starts). A
/// routine's body runs when it is called, not here: its batch is skipped.
fn foreign_tsql_savepoints(file: &str, batches: &[Statement]) -> Vec<StatementError> {
    let mut open: Vec<&str> = Vec::new();
    let mut refused = Vec::new();
    for batch in batches.iter().filter(|batch| !defines_routine(&batch.words)) {
        for (i, w) in batch.words.iter().enumerate() {
            let transaction = is(batch.words.get(i + 1), "TRAN") || is(batch.words.get(i + 1), "TRANSACTION");
            let Some(name) = batch.names.get(i + 2).filter(|_| transaction) else { continue };
            match w.as_deref() {
                Some("SAVE") => open.push(name),
                Some("ROLLBACK") if names_savepoint(batch.words.get(i + 2)) && !open.contains(&name.as_str()) => {
                    refused.push(StatementError::ForeignSavepoint {
                        file: file.to_string(),
                        at: batch.at,
                        statement: words(&batch.words[i..], 2).join(" "),
                        name: name.clone(),
                    });
                }
                _ => {}
            }
        }
    }
    refused
}

/// The statement that begins a transaction a file run outside any
/// transaction does not end, if any.
fn left_open(driver: Driver, file: &str, statements: &[Statement]) -> Option<StatementError> {
    // What began the open transaction, and on SQLite the savepoint that did.
    let mut open: Option<(Position, String, Option<String>)> = None;
    for statement in statements {
        let s = &statement.words;
        let first = s.first().and_then(|w| w.as_deref());
        let second = s.get(1).and_then(|w| w.as_deref());
        let begins = match (first, second) {
            (Some("BEGIN"), _) => Some(1),
            (Some("START"), Some("TRANSACTION")) if driver == Driver::Postgres => Some(2),
            _ => None,
        };
        if let Some(n) = begins {
            open = open.or(Some((statement.at, words(s, n).join(" "), None)));
            continue;
        }
        let ends = match (first, second) {
            (Some("COMMIT" | "ROLLBACK"), Some("PREPARED")) => false,
            (Some("COMMIT" | "END" | "ABORT"), _) => true,
            (Some("PREPARE"), Some("TRANSACTION")) => true,
            (Some("ROLLBACK"), _) => savepoint_use(statement).is_none(),
            _ => false,
        };
        if ends {
            open = None;
            continue;
        }
        if driver != Driver::Sqlite {
            continue;
        }
        // SQLite: a savepoint outside a transaction begins one, which the
        // release of that savepoint ends.
        match savepoint_use(statement) {
            Some(SavepointUse::Set(index)) if open.is_none() => {
                open = Some((statement.at, words(s, index + 1).join(" "), savepoint_name(driver, statement, index)));
            }
            Some(SavepointUse::Release(index))
                if open
                    .as_ref()
                    .is_some_and(|(_, _, by)| by.is_some() && *by == savepoint_name(driver, statement, index)) =>
            {
                open = None;
            }
            _ => {}
        }
    }
    open.map(|(at, statement, _)| StatementError::LeftOpen { file: file.to_string(), at, statement })
}

/// A statement of a distributed transaction: MySQL's and MariaDB's `XA …`,
/// PostgreSQL's `PREPARE TRANSACTION` (in a file outside any transaction:
/// inside one it is transaction control, refused as such).
fn distributed(driver: Driver, file: &str, statements: &[Statement], no_transaction: bool) -> Option<StatementError> {
    statements.iter().find_map(|statement| {
        let s = &statement.words;
        let n = match driver {
            Driver::Mysql if is(s.first(), "XA") => 2,
            Driver::Postgres if no_transaction && is(s.first(), "PREPARE") && is(s.get(1), "TRANSACTION") => 2,
            _ => return None,
        };
        Some(StatementError::DistributedTransaction {
            file: file.to_string(),
            at: statement.at,
            statement: words(s, n).join(" "),
        })
    })
}

/// SQLite: every `PRAGMA [schema.]journal_mode` of a file (a mode set stays
/// with the database file; WAL and `off` would break the atomic commit of a
/// tenant's changes with their records, across two files).
fn journal_mode(file: &str, statements: &[Statement]) -> Vec<StatementError> {
    statements
        .iter()
        .filter(|s| {
            is(s.words.first(), "PRAGMA") && s.words.iter().take(3).any(|w| w.as_deref() == Some("JOURNAL_MODE"))
        })
        .map(|s| StatementError::JournalMode { file: file.to_string(), at: s.at })
        .collect()
}

/// PostgreSQL: the transaction control a file holds when read with
/// `standard_conforming_strings` off (a database's default, or a session's),
/// where a backslash in a `'…'` string escapes the next character — each
/// statement the standard reading did not refuse already. A text that
/// reading cannot read to its end would not parse on the server either.
pub(super) fn hidden_by_escapes(file: &str, contents: &str, refused: &[StatementError]) -> Vec<StatementError> {
    if !contents.contains('\\') {
        return Vec::new();
    }
    let Ok(tokens) = Tokenizer::new(&PostgresEscapeStrings, contents).tokenize_with_location() else {
        return Vec::new();
    };
    statements(&tokens, Driver::Postgres)
        .iter()
        .filter_map(|statement| match judge_postgres(&statement.words) {
            Some((Kind::TransactionControl, words)) if !refused.iter().any(|r| r.at() == statement.at) => {
                Some(StatementError::HiddenByEscapes {
                    file: file.to_string(),
                    at: statement.at,
                    statement: words.join(" "),
                })
            }
            _ => None,
        })
        .collect()
}

/// PostgreSQL's tokenizer rules with backslash escapes in `'…'` strings,
/// as the server reads them with `standard_conforming_strings` off.
#[derive(Debug)]
struct PostgresEscapeStrings;

impl Dialect for PostgresEscapeStrings {
    fn dialect(&self) -> TypeId {
        TypeId::of::<PostgreSqlDialect>()
    }
    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        PostgreSqlDialect {}.identifier_quote_style(identifier)
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        PostgreSqlDialect {}.is_delimited_identifier_start(ch)
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        PostgreSqlDialect {}.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        PostgreSqlDialect {}.is_identifier_part(ch)
    }
    fn is_custom_operator_part(&self, ch: char) -> bool {
        PostgreSqlDialect {}.is_custom_operator_part(ch)
    }
    fn supports_unicode_string_literal(&self) -> bool {
        PostgreSqlDialect {}.supports_unicode_string_literal()
    }
    fn supports_nested_comments(&self) -> bool {
        PostgreSqlDialect {}.supports_nested_comments()
    }
    fn supports_string_escape_constant(&self) -> bool {
        PostgreSqlDialect {}.supports_string_escape_constant()
    }
    fn supports_numeric_literal_underscores(&self) -> bool {
        PostgreSqlDialect {}.supports_numeric_literal_underscores()
    }
    fn supports_geometric_types(&self) -> bool {
        PostgreSqlDialect {}.supports_geometric_types()
    }
    fn supports_string_literal_backslash_escape(&self) -> bool {
        true
    }
}
