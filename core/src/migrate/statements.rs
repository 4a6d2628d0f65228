//! What a migration file says about transactions, read with a real SQL
//! tokenizer (sqlparser's, which knows each engine's comments, quoted
//! identifiers, strings and dollar quotes) — never a pattern over raw text.
//!
//! - **The directive.** A file whose leading comment lines (before its first
//!   statement) hold `strata:no-transaction` — `-- strata:no-transaction` —
//!   runs outside any transaction. [`NO_TRANSACTION_DIRECTIVE`].
//! - **Transaction control** (`BEGIN`, `START TRANSACTION`, `COMMIT`, `END`,
//!   `ROLLBACK`, `ABORT`, `PREPARE TRANSACTION`; on SQL Server
//!   `BEGIN TRAN[SACTION]`, `COMMIT`, `ROLLBACK`) at the top level of a file
//!   that runs in a transaction would end the service's transaction half-way
//!   and break "recorded = applied": refused. Savepoints are allowed, and so
//!   is anything inside a routine body (`CREATE FUNCTION/PROCEDURE/TRIGGER`).
//! - **Statements that cannot run in a transaction** (PostgreSQL:
//!   `CREATE/DROP INDEX CONCURRENTLY`, `REINDEX … CONCURRENTLY`, `REINDEX
//!   DATABASE/SYSTEM`, `ALTER TABLE … DETACH PARTITION … CONCURRENTLY`,
//!   `VACUUM`, `CREATE/DROP DATABASE`, `CREATE/DROP TABLESPACE`,
//!   `ALTER SYSTEM`; SQLite: `VACUUM`, `ATTACH`, `DETACH`; SQL Server:
//!   `CREATE/ALTER/DROP DATABASE`, `BACKUP`, `RESTORE`, `RECONFIGURE`,
//!   full-text catalogs and indexes) in a file without the directive:
//!   refused, naming the directive.
//!
//! - **Other directives** in the same leading comments:
//!   `strata:lock-timeout <duration>`, `strata:lock-retries <n>`,
//!   `strata:statement-timeout <duration>` (a duration is `0`, or a number
//!   with `ms`, `s` or `m`: `500ms`, `5s`, `2m`), the linter's
//!   `strata:allow <rule>, …`, and `strata:backfill` (a file run in batches,
//!   [`FileMode::backfill`]; its `name=value` options are read by
//!   [`crate::migrate::backfill::read`], not here). Any other `strata:` word
//!   is refused (a typo must not silently run a file with other rules than
//!   meant).
//! - **A commit after** (PostgreSQL: `ALTER TYPE … ADD VALUE`): a new enum
//!   value cannot be used before the transaction that added it commits, so
//!   the executor commits right after such a file ([`FileMode::commit_after`]).
//!
//! Every refusal of a file is reported, and every refused file of a set:
//! [`Refusals`].
//!
//! MySQL and MariaDB commit DDL as it runs, so files there are never wrapped
//! in a transaction and neither check applies (the directive is still read).
//! Their executable comments (`/*!40101 SET NAMES utf8mb4 */`) are read as
//! text the server runs: such a comment alone is a statement.
//! Statements are cut at top-level `;` (on SQL Server: at `GO` lines, then
//! every word is looked at, because T-SQL needs no `;`). A routine body's
//! `BEGIN … END` and `CASE … END` nest, so its inner `;` do not cut.

use std::any::TypeId;

use sqlparser::dialect::{Dialect, MsSqlDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};
use thiserror::Error;

use crate::migrate::driver::Driver;
use crate::migrate::keywords;

/// The directive, in a leading comment, that makes a file run outside any
/// transaction.
pub const NO_TRANSACTION_DIRECTIVE: &str = "strata:no-transaction";

/// The directive that sets a file's lock time-out (`0`: none).
pub const LOCK_TIMEOUT_DIRECTIVE: &str = "strata:lock-timeout";
/// The directive that sets how often a file's unit is retried after a lock
/// time-out.
pub const LOCK_RETRIES_DIRECTIVE: &str = "strata:lock-retries";
/// The directive that sets a file's statement time-out (`0`: none).
pub const STATEMENT_TIMEOUT_DIRECTIVE: &str = "strata:statement-timeout";
/// The linter's directive (read by `lint`; accepted here).
pub const ALLOW_DIRECTIVE: &str = "strata:allow";
/// The directive that makes a file a backfill, run in batches (its options
/// are read by [`crate::migrate::backfill::read`]; accepted here).
pub const BACKFILL_DIRECTIVE: &str = "strata:backfill";

/// A position in a migration file: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// Line, from 1.
    pub line: u64,
    /// Column in characters, from 1.
    pub column: u64,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a file cannot run as written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StatementError {
    /// Transaction control in a file that runs inside the service's
    /// transaction.
    #[error(
        "{file}:{at}: {statement} would end the transaction the service runs this file in; \
         remove it {}",
        advice::remove(.mark)
    )]
    TransactionControl {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// Its leading words, upper-cased (`COMMIT`, `BEGIN TRANSACTION`).
        statement: String,
        /// How the file's format marks it to run outside any transaction
        /// (none: a backfill, whose batches each run in one).
        mark: Option<&'static str>,
    },
    /// A statement the engine refuses inside a transaction, in a file
    /// without the directive.
    #[error(
        "{file}:{at}: {statement} cannot run inside a transaction; {}",
        advice::run_outside(.mark)
    )]
    NeedsNoTransaction {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// Its leading words, upper-cased (`CREATE INDEX CONCURRENTLY`).
        statement: String,
        /// How the file's format marks it to run outside any transaction
        /// (none: a backfill, whose batches each run in one).
        mark: Option<&'static str>,
    },
    /// PostgreSQL's `COPY … FROM STDIN` or `TO STDOUT`: its rows travel
    /// between the server and a client that sends or reads them (psql, a
    /// `pg_dump` data section), which the service is not — the server would
    /// wait for them, in or out of a transaction, for ever.
    #[error(
        "{file}:{at}: {statement} exchanges its rows with a client such as psql, which the service is not (the \
         server would wait for them for ever); load rows with INSERT, or COPY from a file on the server"
    )]
    CopyWithClient {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// `COPY … FROM STDIN` or `COPY … TO STDOUT`.
        statement: String,
    },
    /// On SQLite and SQL Server, a statement of a tenant file in another
    /// tool's format that writes without naming its schema: its tool ran
    /// the file in the tenant's own database, and these engines have no
    /// session schema to run it in (the object would land in the service's
    /// own file, or the login's default schema).
    #[error(
        "{file}:{at}: {statement} names no schema: its tool ran this tenant file in the tenant's own database, and \
         this engine has no session schema to run it in; name the tenant's objects `{{schema}}.name`"
    )]
    NoSchema {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// Its leading word, upper-cased (`CREATE`, `INSERT`).
        statement: String,
    },
    /// Text the tokenizer cannot read even in part, holding a word that
    /// controls transactions: it cannot be shown to be inside a string or
    /// a comment.
    #[error(
        "{file}:{at}: the file cannot be read to its end (an unterminated string, comment or quoted name?), so its \
         statements cannot be checked, and it holds {word}, which would end the transaction the service runs it in; \
         correct the text{}",
        advice::or_mark(.mark)
    )]
    Unreadable {
        /// The file.
        file: String,
        /// Where the word is.
        at: Position,
        /// The word, upper-cased.
        word: String,
        /// How the file's format marks it to run outside any transaction
        /// (none: a backfill, whose batches each run in one).
        mark: Option<&'static str>,
    },
    /// `RELEASE` or `ROLLBACK TO` a savepoint the file did not set: an
    /// earlier file's, still open in the unit's transaction
    /// ([`balance`]).
    #[error(
        "{file}:{at}: {statement} names savepoint {name}, which this file did not set: rolling back to or releasing \
         an earlier file's savepoint would undo that file's changes while its record stays; a file may use only \
         savepoints it sets itself"
    )]
    ForeignSavepoint {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// Its words up to the name, upper-cased (`ROLLBACK TO SAVEPOINT`).
        statement: String,
        /// The savepoint named.
        name: String,
    },
    /// A file run outside any transaction begins one it does not end
    /// ([`balance`]).
    #[error(
        "{file}:{at}: {statement} begins a transaction the file does not end: the service records a file outside \
         any transaction right after it, and a transaction left open would be rolled back with its connection, \
         the record kept; end it with COMMIT"
    )]
    LeftOpen {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// Its leading words, upper-cased (`BEGIN`).
        statement: String,
    },
    /// A statement of a distributed transaction (`XA …`, `PREPARE
    /// TRANSACTION`), which outlives the file ([`balance`]).
    #[error(
        "{file}:{at}: {statement} is part of a distributed (two-phase) transaction, which outlives the file and the \
         service's session: its prepared changes would hold their locks and commit later with no record; migration \
         files cannot use it"
    )]
    DistributedTransaction {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// Its leading words, upper-cased (`XA START`).
        statement: String,
    },
    /// PostgreSQL: transaction control in a file read with
    /// `standard_conforming_strings` off, where the standard reading saw a
    /// string ([`balance`]).
    #[error(
        "{file}:{at}: read as the server reads it with standard_conforming_strings off (a database's default, or \
         set by an earlier file), the file holds {statement} here, which would end the transaction the service \
         runs it in; with it on, the same text is inside a string: write that string as E'…', or without the \
         backslash before its quote"
    )]
    HiddenByEscapes {
        /// The file.
        file: String,
        /// Where the statement starts, in that reading.
        at: Position,
        /// Its leading words, upper-cased (`COMMIT`).
        statement: String,
    },
    /// SQLite: a `PRAGMA journal_mode` in a file ([`balance`]).
    #[error(
        "{file}:{at}: PRAGMA journal_mode would change how the tenant's file commits, for good: the service commits \
         a schema's changes and their records together across two database files, which SQLite makes atomic only \
         in its rollback-journal modes (not WAL, not off); remove it"
    )]
    JournalMode {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
    },
    /// A `strata:` directive the service does not know, or with a value it
    /// cannot read.
    #[error("{file}:{at}: {directive}: {reason}")]
    BadDirective {
        /// The file.
        file: String,
        /// Where the comment holding it starts.
        at: Position,
        /// The directive as written.
        directive: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl StatementError {
    /// The file refused.
    pub fn file(&self) -> &str {
        match self {
            StatementError::TransactionControl { file, .. }
            | StatementError::NeedsNoTransaction { file, .. }
            | StatementError::CopyWithClient { file, .. }
            | StatementError::NoSchema { file, .. }
            | StatementError::Unreadable { file, .. }
            | StatementError::ForeignSavepoint { file, .. }
            | StatementError::LeftOpen { file, .. }
            | StatementError::DistributedTransaction { file, .. }
            | StatementError::HiddenByEscapes { file, .. }
            | StatementError::JournalMode { file, .. }
            | StatementError::BadDirective { file, .. } => file,
        }
    }

    /// Where in it.
    pub fn at(&self) -> Position {
        match self {
            StatementError::TransactionControl { at, .. }
            | StatementError::NeedsNoTransaction { at, .. }
            | StatementError::CopyWithClient { at, .. }
            | StatementError::NoSchema { at, .. }
            | StatementError::Unreadable { at, .. }
            | StatementError::ForeignSavepoint { at, .. }
            | StatementError::LeftOpen { at, .. }
            | StatementError::DistributedTransaction { at, .. }
            | StatementError::HiddenByEscapes { at, .. }
            | StatementError::JournalMode { at, .. }
            | StatementError::BadDirective { at, .. } => *at,
        }
    }
}

/// Every refusal of a file, or of a set of files, in file order: a set is
/// refused once, with all it would take to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusals(pub Vec<StatementError>);

impl std::fmt::Display for Refusals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut files: Vec<&str> = self.0.iter().map(StatementError::file).collect();
        files.dedup();
        if self.0.len() > 1 {
            write!(f, "{} statements in {} file(s) cannot run as written: ", self.0.len(), files.len())?;
        }
        for (i, refusal) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{refusal}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusals {}

/// What a file says about how it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileMode {
    /// The file carries the directive: it runs outside any transaction.
    pub no_transaction: bool,
    /// What it makes usable only after a commit (PostgreSQL's
    /// `ALTER TYPE … ADD VALUE`): the executor commits right after it.
    pub commit_after: bool,
    /// `strata:lock-timeout`, in milliseconds (0: none).
    pub lock_timeout_ms: Option<u64>,
    /// `strata:lock-retries`.
    pub lock_retries: Option<u32>,
    /// `strata:statement-timeout`, in milliseconds (0: none).
    pub statement_timeout_ms: Option<u64>,
    /// The file carries `strata:backfill`: it runs in batches, each in a
    /// transaction of its own ([`crate::migrate::backfill`]).
    pub backfill: bool,
    /// A statement changes its session beyond the file, which no statement
    /// can give back: the connection it ran on is closed after its unit,
    /// never handed to the next. MySQL and MariaDB: `SET …`, `CALL …`, a
    /// user variable (`@name`), `USE …`, `PREPARE`, `LOCK TABLES`, `CREATE TEMPORARY`, `GET_LOCK`, an
    /// executable comment such as mysqldump's `/*!40014 SET
    /// FOREIGN_KEY_CHECKS=0 */`, any `DELIMITER` line. SQLite: `PRAGMA` (`foreign_keys = off`, the first
    /// step of its table rebuild), `ATTACH`, `DETACH`, `CREATE TEMP`. SQL
    /// Server: `SET` of a session option (`IDENTITY_INSERT`, …), `USE`,
    /// `EXECUTE AS`, `sp_getapplock`, a `#temporary` table (its connections
    /// are the engine's own: closing one closes the session). Not judged on
    /// PostgreSQL, whose units give the session back, committed or rolled
    /// back (`reset all`, `discard temp`, `pg_advisory_unlock_all()`, …). Text
    /// the tokenizer cannot read counts as changing it.
    pub changes_session: bool,
    /// SQL Server: a batch may end or replace the unit's transaction where
    /// none of its statements shows it — it runs a procedure or dynamic SQL
    /// (`EXEC`, `EXECUTE`, a procedure called by its name alone) or
    /// switches database (`USE`) — so the shell checks the transaction
    /// right after the file, not only before the unit's records
    /// ([`crate::migrate::run::fence`]). Text the tokenizer cannot read
    /// counts. Not judged on the other engines, whose transactions no
    /// procedure ends unseen.
    pub may_end_transaction: bool,
}

/// Reads `contents` of `file` for `driver`: the directives, and every
/// refusal when the file cannot run as written (see the module
/// documentation). Text the tokenizer cannot read (an unterminated string,
/// say) is judged as far as it can be read ([`unreadable`]); the engine has
/// the last word on the rest.
pub fn inspect(driver: Driver, file: &str, contents: &str) -> Result<FileMode, Refusals> {
    inspect_part(driver, file, contents, false, STRATA_MARK)
}

/// How a file of Strata's own format is marked to run outside any
/// transaction, as a refusal advises it.
pub const STRATA_MARK: &str = "`-- strata:no-transaction` in its leading comment lines";

/// [`inspect`] for the part of a file its format runs
/// ([`crate::migrate::format`]): `no_transaction` is the format's own
/// marker (dbmate's `transaction:false`, goose's `NO TRANSACTION`, sqlx's
/// `-- no-transaction`, Flyway's `executeInTransaction=false`), which counts
/// as the directive; `mark` says how the format writes that marker, for the
/// refusals that advise it (`Format::no_transaction_mark`).
pub fn inspect_part(
    driver: Driver,
    file: &str,
    contents: &str,
    no_transaction: bool,
    mark: &'static str,
) -> Result<FileMode, Refusals> {
    let with_marker = |mut mode: FileMode| {
        mode.no_transaction |= no_transaction;
        mode
    };
    let (tokens, whole) = match unreadable::tokenize_whole(driver, contents) {
        Ok(tokens) => (tokens, true),
        Err(error) => match unreadable::tokens_before(driver, contents, &error) {
            Some(tokens) => (tokens, false),
            None => return unread(driver, file, contents, no_transaction, mark),
        },
    };
    let mut refusals = Vec::new();
    let read = match whole {
        true => directives(file, &leading_comments(&tokens)),
        false => directives(file, &leading_lines(contents)),
    };
    let mut mode = with_marker(read.unwrap_or_else(|error| {
        refusals.push(error);
        FileMode::default()
    }));
    let mark = Some(mark).filter(|_| !mode.backfill);
    let statements = statements_of(driver, &tokens);
    mode.commit_after = driver == Driver::Postgres && statements.iter().any(|s| adds_enum_value(&s.words));
    mode.changes_session = match driver {
        // Cut by its `DELIMITER` lines, its statements are not the
        // tokenizer's: judged as changing the session.
        Driver::Mysql if delimiter::has_command(contents) => true,
        Driver::Mysql => {
            statements.iter().any(|s| changes_mysql_session(&s.words))
                || tokens
                    .iter()
                    .any(|t| executable_comment(&t.token) || is_word(&t.token, "GET_LOCK") || user_variable(&t.token))
        }
        Driver::Sqlite => statements.iter().any(|s| changes_sqlite_session(&s.words)),
        Driver::SqlServer => {
            statements.iter().any(|batch| changes_sqlserver_session(&batch.words))
                || tokens.iter().any(|t| is_word(&t.token, "SP_GETAPPLOCK"))
        }
        Driver::Postgres => false,
    };
    // What was not read may change anything but PostgreSQL's session.
    mode.changes_session |= !whole && driver != Driver::Postgres;
    mode.may_end_transaction =
        driver == Driver::SqlServer && (!whole || statements.iter().any(may_end_sqlserver_transaction));
    refusals.extend(balance::refusals(driver, file, &statements, mode.no_transaction));
    for statement in statements {
        if let Some(which) = statement.copy_with_client.filter(|_| driver == Driver::Postgres) {
            let (file, at) = (file.to_string(), statement.at);
            refusals.push(StatementError::CopyWithClient { file, at, statement: format!("COPY … {which}") });
        }
        if !mode.no_transaction && driver != Driver::Mysql {
            // A T-SQL batch holds many statements: its refusal is at the word.
            let (verdict, at) = match driver {
                Driver::Postgres => (judge_postgres(&statement.words), statement.at),
                Driver::Sqlite => (judge_sqlite(&statement.words), statement.at),
                Driver::SqlServer => match judge_sqlserver(&statement.words) {
                    Some((kind, words, index)) => {
                        (Some((kind, words)), statement.word_at.get(index).copied().unwrap_or(statement.at))
                    }
                    None => (None, statement.at),
                },
                Driver::Mysql => (None, statement.at),
            };
            if let Some((kind, words)) = verdict {
                let (file, statement) = (file.to_string(), words.join(" "));
                refusals.push(match kind {
                    Kind::TransactionControl => StatementError::TransactionControl { file, at, statement, mark },
                    Kind::NeedsNoTransaction => StatementError::NeedsNoTransaction { file, at, statement, mark },
                });
            }
        }
    }
    if driver == Driver::Postgres && whole && !mode.no_transaction {
        let hidden = balance::hidden_by_escapes(file, contents, &refusals);
        refusals.extend(hidden);
    }
    if refusals.is_empty() { Ok(mode) } else { Err(Refusals(refusals)) }
}

/// [`inspect_part`] of text of which not even a part can be read
/// ([`unreadable`]): the directives of its leading `--` lines, refused when
/// a word that controls transactions is anywhere in it (outside a
/// transaction, or on MySQL, nothing is judged).
fn unread(
    driver: Driver,
    file: &str,
    contents: &str,
    no_transaction: bool,
    mark: &'static str,
) -> Result<FileMode, Refusals> {
    let mut mode = directives(file, &leading_lines(contents)).map_err(|e| Refusals(vec![e]))?;
    mode.no_transaction |= no_transaction;
    mode.changes_session = driver != Driver::Postgres;
    mode.may_end_transaction = driver == Driver::SqlServer;
    let mark = Some(mark).filter(|_| !mode.backfill);
    match unreadable::control_word(driver, contents).filter(|_| !mode.no_transaction) {
        Some((at, word)) => Err(Refusals(vec![StatementError::Unreadable { file: file.to_string(), at, word, mark }])),
        None => Ok(mode),
    }
}

/// A MySQL or MariaDB statement that changes its session: `SET` (a
/// variable, `NAMES`, a role, the next transaction's level), `CALL` (a
/// procedure may `SET` anything), `USE`, `PREPARE`, `LOCK TABLES` (held
/// until `UNLOCK`), `CREATE TEMPORARY`. A user variable (`@name`, given a
/// value by `SELECT … INTO @name` or `:=` as well as by `SET`) anywhere in
/// the file is found over its tokens ([`user_variable`]).
/// A `GET_LOCK` anywhere in the file (a named lock outlives commit and
/// rollback) is found over its tokens, as SQL Server's `sp_getapplock`
/// (a session-owned one does too).
fn changes_mysql_session(s: &[Word]) -> bool {
    is(s.first(), "SET")
        || is(s.first(), "CALL")
        || is(s.first(), "USE")
        || is(s.first(), "PREPARE")
        || (is(s.first(), "LOCK") && is(s.get(1), "TABLES"))
        || creates_temporary(s)
}

/// A MySQL user variable (`@name`, not a system variable's `@@name`): it
/// lives as long as the session.
fn user_variable(token: &Token) -> bool {
    match token {
        Token::Word(w) => w.value.starts_with('@') && !w.value.starts_with("@@"),
        Token::AtSign => true,
        _ => false,
    }
}

/// A SQLite statement that changes its connection: a `PRAGMA` (any: the
/// ones that only read are not told apart from the ones that set),
/// `ATTACH`, `DETACH`.
fn changes_sqlite_session(s: &[Word]) -> bool {
    matches!(s.first().and_then(|w| w.as_deref()), Some("PRAGMA" | "ATTACH" | "DETACH")) || creates_temporary(s)
}

/// A T-SQL batch that changes its session: `SET` of a session option
/// (`IDENTITY_INSERT`, `XACT_ABORT`, `LANGUAGE`, … — not `SET @variable`,
/// whose variable ends with the batch), `USE` a database, `EXECUTE AS` a
/// user, a `#temporary` table — not in a routine's definition, whose
/// body's settings end with each call. T-SQL needs no `;` between
/// statements, so a batch is judged by its words: an `UPDATE … SET` of a
/// column named like an option counts too.
fn changes_sqlserver_session(batch: &[Word]) -> bool {
    if defines_routine(batch) {
        return false;
    }
    const OPTIONS: [&str; 31] = [
        "ANSI_DEFAULTS",
        "ANSI_NULL_DFLT_OFF",
        "ANSI_NULL_DFLT_ON",
        "ANSI_NULLS",
        "ANSI_PADDING",
        "ANSI_WARNINGS",
        "ARITHABORT",
        "ARITHIGNORE",
        "CONCAT_NULL_YIELDS_NULL",
        "CONTEXT_INFO",
        "CURSOR_CLOSE_ON_COMMIT",
        "DATEFIRST",
        "DATEFORMAT",
        "DEADLOCK_PRIORITY",
        "FMTONLY",
        "FORCEPLAN",
        "IDENTITY_INSERT",
        "IMPLICIT_TRANSACTIONS",
        "LANGUAGE",
        "LOCK_TIMEOUT",
        "NOCOUNT",
        "NOEXEC",
        "NUMERIC_ROUNDABORT",
        "PARSEONLY",
        "QUERY_GOVERNOR_COST_LIMIT",
        "QUOTED_IDENTIFIER",
        "REMOTE_PROC_TRANSACTIONS",
        "ROWCOUNT",
        "TEXTSIZE",
        "TRANSACTION",
        "XACT_ABORT",
    ];
    let option =
        |w: Option<&Word>| matches!(w, Some(Some(w)) if OPTIONS.contains(&w.as_str()) || w.starts_with("STATISTICS"));
    batch.iter().enumerate().any(|(i, w)| match w.as_deref() {
        Some("SET") => option(batch.get(i + 1)),
        // Impersonation until `REVERT`: for the session, outside a module.
        Some("EXECUTE" | "EXEC") => is(batch.get(i + 1), "AS"),
        Some("SETUSER") => true,
        Some("USE") => !matches!(batch.get(i + 1).and_then(|w| w.as_deref()), Some("PLAN" | "HINT")),
        Some(w) => w.starts_with('#'),
        None => false,
    })
}

/// A T-SQL batch that may end or replace the transaction it runs in where
/// none of its statements shows it: one that runs a procedure or dynamic
/// SQL (`EXEC`, `EXECUTE`; or a procedure called by its name alone, which
/// only a batch's first statement can do: a batch that opens with a word
/// SQL Server does not reserve, a quoted one, or no word at all, as
/// `{schema}.name`), or switches database (`USE`). Its own
/// `COMMIT`, `ROLLBACK` and `BEGIN TRAN` are refused by [`judge_sqlserver`];
/// a trigger cannot end it unseen (one that commits or rolls back cancels
/// its batch with an error, SQL Server 2005 and later); a routine's
/// definition runs nothing.
fn may_end_sqlserver_transaction(batch: &Statement) -> bool {
    let words = &batch.words;
    if defines_routine(words) {
        return false;
    }
    let called_by_name = match (batch.opens_with_word, words.first()) {
        (Some(true), Some(Some(first))) => !keywords::is_reserved(Driver::SqlServer, first),
        (Some(_), _) => true,
        (None, _) => false,
    };
    called_by_name || words.iter().any(|w| matches!(w.as_deref(), Some("EXEC" | "EXECUTE" | "USE")))
}

/// `CREATE TEMP[ORARY] …` (a table, a view, a trigger): it lives as long
/// as the session, where the next tenant's same file would find it.
fn creates_temporary(s: &[Word]) -> bool {
    is(s.first(), "CREATE") && (is(s.get(1), "TEMP") || is(s.get(1), "TEMPORARY"))
}

/// `ALTER TYPE … ADD VALUE` (PostgreSQL): the value is usable only once
/// the transaction that added it has committed.
fn adds_enum_value(s: &[Word]) -> bool {
    is(s.first(), "ALTER")
        && is(s.get(1), "TYPE")
        && s.windows(2).any(|pair| is(pair.first(), "ADD") && is(pair.get(1), "VALUE"))
}

/// The tokens of `contents` as `driver`'s engine reads them.
pub(crate) fn tokenize(
    driver: Driver,
    contents: &str,
) -> Result<Vec<TokenWithSpan>, sqlparser::tokenizer::TokenizerError> {
    Tokenizer::new(dialect(driver), contents).tokenize_with_location()
}

/// The leading `--` lines of text the tokenizer cannot read (blank lines
/// among them skipped), each without its dashes, with where it starts.
pub(crate) fn leading_lines(contents: &str) -> Vec<(Position, String)> {
    contents
        .lines()
        .enumerate()
        .map(|(i, line)| (i, line.trim()))
        .take_while(|(_, line)| line.is_empty() || line.starts_with("--"))
        .map(|(i, line)| (Position { line: i as u64 + 1, column: 1 }, line.trim_start_matches('-').to_string()))
        .collect()
}

/// The comments before the first statement, with where each starts.
pub(crate) fn leading_comments(tokens: &[TokenWithSpan]) -> Vec<(Position, String)> {
    let mut out = Vec::new();
    for token in tokens {
        let at = Position { line: token.span.start.line, column: token.span.start.column };
        match &token.token {
            Token::Whitespace(Whitespace::SingleLineComment { comment, .. }) => out.push((at, comment.clone())),
            Token::Whitespace(Whitespace::MultiLineComment(comment)) => out.push((at, comment.clone())),
            Token::Whitespace(_) => {}
            _ => break,
        }
    }
    out
}

/// The directives of the leading comments (see the module documentation).
pub(crate) fn directives(file: &str, comments: &[(Position, String)]) -> Result<FileMode, StatementError> {
    let mut mode = FileMode::default();
    for (at, comment) in comments {
        let words: Vec<&str> =
            comment.split(|c: char| c.is_whitespace() || c == '=').filter(|w| !w.is_empty()).collect();
        for (i, word) in words.iter().enumerate() {
            let lower = word.to_ascii_lowercase();
            if !lower.starts_with("strata:") {
                continue;
            }
            let value = words.get(i + 1).copied().unwrap_or_default();
            let bad = |reason: String| StatementError::BadDirective {
                file: file.to_string(),
                at: *at,
                directive: word.to_string(),
                reason,
            };
            match lower.as_str() {
                NO_TRANSACTION_DIRECTIVE => mode.no_transaction = true,
                BACKFILL_DIRECTIVE => mode.backfill = true,
                ALLOW_DIRECTIVE => {}
                LOCK_TIMEOUT_DIRECTIVE => mode.lock_timeout_ms = Some(duration_ms(value).map_err(bad)?),
                STATEMENT_TIMEOUT_DIRECTIVE => mode.statement_timeout_ms = Some(duration_ms(value).map_err(bad)?),
                LOCK_RETRIES_DIRECTIVE => {
                    let retries = value.parse::<u32>().ok().filter(|n| *n <= MAX_LOCK_RETRIES);
                    mode.lock_retries =
                        Some(retries.ok_or_else(|| {
                            bad(format!("{value:?} is not a number of retries (0-{MAX_LOCK_RETRIES})"))
                        })?);
                }
                _ => {
                    return Err(bad(format!(
                        "not a directive of the service (known: {NO_TRANSACTION_DIRECTIVE}, {LOCK_TIMEOUT_DIRECTIVE}, \
                         {LOCK_RETRIES_DIRECTIVE}, {STATEMENT_TIMEOUT_DIRECTIVE}, {ALLOW_DIRECTIVE}, \
                         {BACKFILL_DIRECTIVE})"
                    )));
                }
            }
        }
    }
    Ok(mode)
}

/// Most retries a directive or the configuration may ask for.
pub const MAX_LOCK_RETRIES: u32 = 100;

/// Longest duration a directive may give: one day.
const MAX_DURATION_MS: u64 = 86_400_000;

/// `0`, or a whole number with `ms`, `s` or `m`, in milliseconds (at most a
/// day).
pub fn duration_ms(text: &str) -> Result<u64, String> {
    let invalid = || format!("{text:?} is not a duration (0, or a number with ms, s or m: 500ms, 5s, 2m)");
    if text == "0" {
        return Ok(0);
    }
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().map_err(|_| invalid())?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        _ => return Err(invalid()),
    };
    number.checked_mul(factor).filter(|ms| *ms <= MAX_DURATION_MS).ok_or_else(|| format!("{text} is longer than a day"))
}

fn dialect(driver: Driver) -> &'static dyn Dialect {
    match driver {
        Driver::Postgres => &PostgreSqlDialect {},
        Driver::Mysql => &MySqlText,
        Driver::Sqlite => &SQLiteDialect {},
        Driver::SqlServer => &MsSqlDialect {},
    }
}

/// MySQL's tokenizer rules, with its executable comments (`/*!50100 … */`)
/// kept as comments. sqlparser's MySQL dialect reads their text as tokens
/// placed from the comment's start, not the file's, which would cut the
/// statements around them at wrong places; a comment token keeps the right
/// span, and [`statements`] counts it as part of its statement.
#[derive(Debug)]
pub(crate) struct MySqlText;

impl Dialect for MySqlText {
    fn dialect(&self) -> TypeId {
        TypeId::of::<MySqlDialect>()
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        MySqlDialect {}.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        MySqlDialect {}.is_identifier_part(ch)
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        MySqlDialect {}.is_delimited_identifier_start(ch)
    }
    fn supports_string_literal_backslash_escape(&self) -> bool {
        MySqlDialect {}.supports_string_literal_backslash_escape()
    }
    fn supports_numeric_prefix(&self) -> bool {
        MySqlDialect {}.supports_numeric_prefix()
    }
    fn requires_single_line_comment_whitespace(&self) -> bool {
        MySqlDialect {}.requires_single_line_comment_whitespace()
    }
    fn ignores_wildcard_escapes(&self) -> bool {
        MySqlDialect {}.ignores_wildcard_escapes()
    }
    fn supports_multiline_comment_hints(&self) -> bool {
        false
    }
}

/// An executable comment (MySQL's `/*!…*/`): text the server runs.
pub(crate) fn executable_comment(token: &Token) -> bool {
    matches!(token, Token::Whitespace(Whitespace::MultiLineComment(c)) if c.starts_with('!'))
}

/// A word of a statement: upper-cased when unquoted, `None` when quoted (a
/// quoted identifier is never a keyword).
type Word = Option<String>;

/// One statement of a file: where it starts and ends, and its leading
/// words.
pub(crate) struct Statement {
    /// Where its first token starts.
    pub(crate) at: Position,
    /// Where its last token ends (line, column just past it).
    pub(crate) end: Position,
    words: Vec<Word>,
    /// Where each of `words` starts (a refusal names the word it is about,
    /// not its statement's or batch's start).
    word_at: Vec<Position>,
    /// The same words as names ([`name`]): unquoted lower-cased, quoted as
    /// written (what a savepoint's name is compared by).
    names: Vec<String>,
    /// `COPY … STDIN` or `COPY … STDOUT` (the word, however far it comes).
    copy_with_client: Option<&'static str>,
    /// A T-SQL batch's first token but a leading `;` is a word (a
    /// statement's keyword or a procedure's name; not `{schema}` or `(`);
    /// `None` until it is read, and in other engines' statements.
    opens_with_word: Option<bool>,
}

fn word(token: &Token) -> Option<Word> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(Some(w.value.to_ascii_uppercase())),
        Token::Word(_) => Some(None),
        _ => None,
    }
}

/// A word as the name of an object: unquoted lower-cased (as PostgreSQL
/// folds it), quoted as written.
fn name(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
        Token::Word(w) => Some(w.value.clone()),
        _ => None,
    }
}

/// Whether `token` is the unquoted word `text` (upper case).
fn is_word(token: &Token, text: &str) -> bool {
    matches!(word(token), Some(Some(w)) if w == text)
}

fn is(word: Option<&Word>, text: &str) -> bool {
    matches!(word, Some(Some(w)) if w == text)
}

/// Most words kept per statement: enough for every rule.
const WORDS_KEPT: usize = 12;

/// Statements cut at top-level `;`. The words of each are its leading
/// words; inside a routine (`CREATE … FUNCTION/PROCEDURE/TRIGGER/EVENT`,
/// [`creates_routine`]) `BEGIN`/`CASE` … `END` nest — on PostgreSQL only
/// `BEGIN ATOMIC` opens a body, the one it has outside a string. A
/// routine still open at the end of the text was misread (a name taken
/// for `BEGIN`): from its start, every `;` cuts, so nothing after it goes
/// unjudged. On MySQL a `/*!…*/` comment belongs to its statement.
pub(crate) fn statements(tokens: &[TokenWithSpan], driver: Driver) -> Vec<Statement> {
    let executable_comments = driver == Driver::Mysql;
    let significant: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)) || (executable_comments && executable_comment(&t.token)))
        .collect();
    let (mut out, open) = cut(&significant, driver, true);
    if let Some(start) = open {
        out.pop();
        out.extend(cut(&significant[start..], driver, false).0);
    }
    out
}

/// [`statements`] of `significant` tokens, routines' bodies kept whole
/// when `nest`; with the index of the token starting a routine left open
/// at the end.
fn cut(significant: &[&TokenWithSpan], driver: Driver, nest: bool) -> (Vec<Statement>, Option<usize>) {
    let mut out = Vec::new();
    let mut current: Option<Statement> = None;
    let mut depth = 0usize;
    let mut start = 0;
    let mut all_words: Vec<Word> = Vec::new();
    let mut i = 0;
    while i < significant.len() {
        let token = significant[i];
        if token.token == Token::SemiColon && depth == 0 {
            out.extend(current.take());
            all_words.clear();
            i += 1;
            continue;
        }
        let statement = current.get_or_insert_with(|| {
            start = i;
            Statement {
                at: Position { line: token.span.start.line, column: token.span.start.column },
                end: Position { line: token.span.end.line, column: token.span.end.column },
                words: Vec::new(),
                word_at: Vec::new(),
                names: Vec::new(),
                copy_with_client: None,
                opens_with_word: None,
            }
        });
        statement.end = Position { line: token.span.end.line, column: token.span.end.column };
        if let Some(w) = word(&token.token) {
            if statement.words.len() < WORDS_KEPT {
                statement.words.push(w.clone());
                statement.word_at.push(Position { line: token.span.start.line, column: token.span.start.column });
                statement.names.extend(name(&token.token));
            }
            if is(statement.words.first(), "COPY") {
                statement.copy_with_client = statement.copy_with_client.or(match w.as_deref() {
                    Some("STDIN") => Some("FROM STDIN"),
                    Some("STDOUT") => Some("TO STDOUT"),
                    _ => None,
                });
            }
            all_words.push(w.clone());
            // MariaDB's anonymous block: its `BEGIN` opens a body.
            let block = all_words.len() >= 3
                && is(all_words.first(), "BEGIN")
                && is(all_words.get(1), "NOT")
                && is(all_words.get(2), "ATOMIC");
            if nest && block && all_words.len() == 3 {
                depth += 1;
                i += 1;
                continue;
            }
            // A word right after `.` is a name (`new.begin`), never a keyword.
            let named = i > 0 && significant[i - 1].token == Token::Period;
            if nest && !named && (block || creates_routine(&all_words)) {
                let next = significant.get(i + 1).and_then(|t| word(&t.token));
                let next = next.as_ref().and_then(|n| n.as_deref());
                match w.as_deref() {
                    Some("BEGIN") if driver != Driver::Postgres || next == Some("ATOMIC") => depth += 1,
                    Some("CASE") => depth += 1,
                    Some("END") => match next {
                        Some("IF" | "LOOP" | "WHILE" | "REPEAT" | "FOR") => i += 1,
                        Some("CASE") => {
                            depth = depth.saturating_sub(1);
                            i += 1;
                        }
                        _ => depth = depth.saturating_sub(1),
                    },
                    _ => {}
                }
            }
        }
        i += 1;
    }
    let open = (depth > 0 && current.is_some()).then_some(start);
    out.extend(current);
    (out, open)
}

/// Whether a statement's words create a routine with a body: `CREATE`,
/// then only what may come before the routine's word — `OR REPLACE`, `OR
/// ALTER`, `DEFINER = user`, `AGGREGATE`, `CONSTRAINT`, `TEMP` — then
/// `FUNCTION`, `PROCEDURE`, `TRIGGER` or `EVENT`. The word later (a table
/// named `trigger`, a column `event`) makes no routine.
fn creates_routine(words: &[Word]) -> bool {
    if !is(words.first(), "CREATE") {
        return false;
    }
    let mut definer = 0;
    for word in &words[1..] {
        match word.as_deref() {
            Some("FUNCTION" | "PROCEDURE" | "TRIGGER" | "EVENT") => return true,
            Some("DEFINER") => definer = 2,
            Some("OR" | "REPLACE" | "ALTER" | "AGGREGATE" | "CONSTRAINT" | "TEMP" | "TEMPORARY") => {}
            // The definer's user and host, named or quoted.
            _ if definer > 0 => definer -= 1,
            None => {}
            Some(_) => return false,
        }
    }
    false
}

/// SQL Server: one statement per `GO` batch, holding every word of it
/// (T-SQL needs no `;`, so any word may start a statement). A batch ends at
/// a line whose only token is `GO`.
fn batches(tokens: &[TokenWithSpan]) -> Vec<Statement> {
    let significant: Vec<&TokenWithSpan> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let alone_on_line = |index: usize| {
        let line = significant[index].span.start.line;
        let before = index.checked_sub(1).is_none_or(|p| significant[p].span.start.line != line);
        let after = significant.get(index + 1).is_none_or(|n| n.span.start.line != line);
        before && after
    };
    let mut out = Vec::new();
    let mut current: Option<Statement> = None;
    for (index, token) in significant.iter().enumerate() {
        if is(word(&token.token).as_ref(), "GO") && alone_on_line(index) {
            out.extend(current.take());
            continue;
        }
        let batch = current.get_or_insert_with(|| Statement {
            at: Position { line: token.span.start.line, column: token.span.start.column },
            end: Position { line: token.span.end.line, column: token.span.end.column },
            words: Vec::new(),
            word_at: Vec::new(),
            names: Vec::new(),
            copy_with_client: None,
            opens_with_word: None,
        });
        if batch.opens_with_word.is_none() && token.token != Token::SemiColon {
            batch.opens_with_word = Some(word(&token.token).is_some());
        }
        batch.end = Position { line: token.span.end.line, column: token.span.end.column };
        if let Some(w) = word(&token.token) {
            batch.words.push(w);
            batch.word_at.push(Position { line: token.span.start.line, column: token.span.start.column });
        }
        batch.names.extend(name(&token.token));
    }
    out.extend(current);
    out
}

enum Kind {
    TransactionControl,
    NeedsNoTransaction,
}

type Verdict = Option<(Kind, Vec<String>)>;

fn words(statement: &[Word], n: usize) -> Vec<String> {
    statement.iter().take(n).map(|w| w.clone().unwrap_or_else(|| "\"…\"".into())).collect()
}

fn has(statement: &[Word], text: &str) -> bool {
    statement.iter().any(|w| w.as_deref() == Some(text))
}

fn judge_postgres(s: &[Word]) -> Verdict {
    let first = s.first().and_then(|w| w.as_deref());
    let second = s.get(1).and_then(|w| w.as_deref());
    let control = match (first, second) {
        (Some("BEGIN" | "END" | "ABORT"), _) => Some(1),
        (Some("START"), Some("TRANSACTION")) => Some(2),
        (Some("COMMIT"), Some("PREPARED")) => Some(2),
        (Some("COMMIT"), _) => Some(1),
        (Some("ROLLBACK"), Some("TO")) => None,
        (Some("ROLLBACK"), Some("TRANSACTION" | "WORK")) if is(s.get(2), "TO") => None,
        (Some("ROLLBACK"), Some("PREPARED")) => Some(2),
        (Some("ROLLBACK"), _) => Some(1),
        (Some("PREPARE"), Some("TRANSACTION")) => Some(2),
        _ => None,
    };
    if let Some(n) = control {
        return Some((Kind::TransactionControl, words(s, n)));
    }
    let outside = match (first, second) {
        (Some("CREATE"), Some("INDEX")) if is(s.get(2), "CONCURRENTLY") => Some(3),
        (Some("CREATE"), Some("UNIQUE")) if is(s.get(2), "INDEX") && is(s.get(3), "CONCURRENTLY") => Some(4),
        (Some("DROP"), Some("INDEX")) if is(s.get(2), "CONCURRENTLY") => Some(3),
        (Some("REINDEX"), _)
            if has(s, "CONCURRENTLY") || has(s, "DATABASE") || has(s, "SYSTEM") || has(s, "SCHEMA") =>
        {
            Some(2)
        }
        (Some("ALTER"), Some("TABLE")) if has(s, "DETACH") && has(s, "CONCURRENTLY") => Some(2),
        (Some("VACUUM"), _) => Some(1),
        (Some("CREATE" | "DROP"), Some("DATABASE" | "TABLESPACE")) => Some(2),
        (Some("ALTER"), Some("SYSTEM")) => Some(2),
        _ => None,
    };
    outside.map(|n| (Kind::NeedsNoTransaction, words(s, n)))
}

fn judge_sqlite(s: &[Word]) -> Verdict {
    let first = s.first().and_then(|w| w.as_deref());
    let second = s.get(1).and_then(|w| w.as_deref());
    let control = match (first, second) {
        (Some("BEGIN" | "END" | "COMMIT"), _) => Some(1),
        (Some("ROLLBACK"), Some("TO")) => None,
        (Some("ROLLBACK"), Some("TRANSACTION")) if is(s.get(2), "TO") => None,
        (Some("ROLLBACK"), _) => Some(1),
        _ => None,
    };
    if let Some(n) = control {
        return Some((Kind::TransactionControl, words(s, n)));
    }
    match first {
        Some("VACUUM" | "ATTACH" | "DETACH") => Some((Kind::NeedsNoTransaction, words(s, 1))),
        _ => None,
    }
}

/// A T-SQL batch that defines a routine (`CREATE`/`ALTER` `PROCEDURE`,
/// `FUNCTION`, `TRIGGER`, `CREATE OR ALTER …`): the whole batch is its body.
pub(super) fn defines_routine(batch: &[Word]) -> bool {
    let first = batch.first().and_then(|w| w.as_deref());
    let second = batch.get(1).and_then(|w| w.as_deref());
    matches!((first, second), (Some("CREATE" | "ALTER"), Some("PROCEDURE" | "PROC" | "FUNCTION" | "TRIGGER")))
        || (matches!(first, Some("CREATE")) && second == Some("OR") && is(batch.get(2), "ALTER"))
}

fn judge_sqlserver(batch: &[Word]) -> Option<(Kind, Vec<String>, usize)> {
    if defines_routine(batch) {
        return None;
    }
    for (i, w) in batch.iter().enumerate() {
        let next = batch.get(i + 1).and_then(|w| w.as_deref());
        let previous = i.checked_sub(1).and_then(|p| batch[p].as_deref());
        let found = match (w.as_deref(), next) {
            (Some("BEGIN"), Some("TRAN" | "TRANSACTION" | "DISTRIBUTED")) => {
                Some((Kind::TransactionControl, vec!["BEGIN".into(), next.unwrap_or_default().into()]))
            }
            // To a savepoint (`SAVE TRAN name`): the transaction goes on.
            (Some("ROLLBACK"), Some("TRAN" | "TRANSACTION")) if names_savepoint(batch.get(i + 2)) => None,
            (Some("COMMIT" | "ROLLBACK"), _) => Some((Kind::TransactionControl, vec![w.clone().unwrap_or_default()])),
            (Some("DATABASE"), _) if matches!(previous, Some("CREATE" | "ALTER" | "DROP")) => {
                Some((Kind::NeedsNoTransaction, vec![previous.unwrap_or_default().into(), "DATABASE".into()]))
            }
            (Some("FULLTEXT"), Some("CATALOG" | "INDEX")) if matches!(previous, Some("CREATE" | "ALTER" | "DROP")) => {
                Some((
                    Kind::NeedsNoTransaction,
                    vec![previous.unwrap_or_default().into(), "FULLTEXT".into(), next.unwrap_or_default().into()],
                ))
            }
            (Some("BACKUP" | "RESTORE" | "RECONFIGURE"), _) => {
                Some((Kind::NeedsNoTransaction, vec![w.clone().unwrap_or_default()]))
            }
            _ => None,
        };
        if let Some((kind, words)) = found {
            // The statement starts at the word before `DATABASE` or `FULLTEXT`.
            let start = match words.len() {
                1 => i,
                _ if words[0] == "BEGIN" => i,
                _ => i - 1,
            };
            return Some((kind, words, start));
        }
    }
    None
}

/// Whether the word after T-SQL's `ROLLBACK TRAN[SACTION]` names a
/// savepoint (a name, quoted or not, or a variable) rather than starting
/// the next statement: the whole transaction's rollback has no name here,
/// as the service's transaction has none (a name that is no savepoint
/// fails, and the service's check after each file finds a transaction
/// ended any other way).
pub(super) fn names_savepoint(word: Option<&Word>) -> bool {
    const STARTS_STATEMENT: [&str; 40] = [
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "CREATE",
        "ALTER",
        "DROP",
        "EXEC",
        "EXECUTE",
        "IF",
        "WHILE",
        "BEGIN",
        "END",
        "COMMIT",
        "ROLLBACK",
        "SAVE",
        "SET",
        "DECLARE",
        "PRINT",
        "RAISERROR",
        "THROW",
        "RETURN",
        "GOTO",
        "TRUNCATE",
        "GRANT",
        "REVOKE",
        "DENY",
        "USE",
        "WITH",
        "WAITFOR",
        "BREAK",
        "CONTINUE",
        "ELSE",
        "OPEN",
        "CLOSE",
        "FETCH",
        "DEALLOCATE",
        "DBCC",
        "BULK",
    ];
    match word {
        Some(None) => true,
        Some(Some(name)) => !STARTS_STATEMENT.contains(&name.as_str()),
        None => false,
    }
}

/// The statements of a tenant file its tool ran in the tenant's own schema
/// (core's `SourceMigration::in_its_schema`) that write without naming the
/// schema (no `placeholder` in them), refused where the engine has no
/// session schema to run them in: SQLite, and SQL Server (whose tenants are
/// schemas of one database; a plain name is the login's default schema's).
/// Other engines: none.
pub fn unplaced(driver: Driver, file: &str, text: &str, placeholder: &str) -> Vec<StatementError> {
    const WRITES: [&str; 7] = ["create", "alter", "drop", "insert", "update", "delete", "replace"];
    if !matches!(driver, Driver::Sqlite | Driver::SqlServer) {
        return Vec::new();
    }
    let Some(ranges) = split(driver, text) else { return Vec::new() };
    let mut refused = Vec::new();
    for range in ranges {
        let statement = &text[range.clone()];
        let body = after_comments(statement);
        let word: String = body.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        if !WRITES.contains(&word.to_ascii_lowercase().as_str()) || statement.contains(placeholder) {
            continue;
        }
        let start = range.start + (statement.len() - body.len());
        let before = &text[..start];
        let line = before.matches('\n').count() as u64 + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
        refused.push(StatementError::NoSchema {
            file: file.to_string(),
            at: Position { line, column },
            statement: word.to_ascii_uppercase(),
        });
    }
    refused
}

/// `text` from its first word: leading white space and comments skipped.
fn after_comments(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        if let Some(rest) = text.strip_prefix("--") {
            text = rest.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(rest) = text.strip_prefix("/*") {
            text = rest.split_once("*/").map_or("", |(_, after)| after);
        } else {
            return text;
        }
    }
}

/// Whether a statement of `text` ended before `at` (a failure's place in
/// it): what ran of a file outside a transaction before it failed there.
/// Text the tokenizer cannot read counts as having run. On SQL Server,
/// whatever of a batch began before `at`: T-SQL needs no `;`, so a batch is
/// not cut into its statements, and the server runs them one by one.
pub fn ran_before(driver: Driver, text: &str, at: Position) -> bool {
    let Ok(tokens) = tokenize(driver, text) else { return true };
    match driver {
        Driver::SqlServer => batches(&tokens).iter().any(|batch| batch.at < at),
        _ => statements(&tokens, driver).iter().any(|statement| statement.end <= at),
    }
}

/// The statements of `tokens` as `driver`'s engine cuts them: SQL Server's
/// `GO` batches, elsewhere top-level `;`.
fn statements_of(driver: Driver, tokens: &[TokenWithSpan]) -> Vec<Statement> {
    match driver {
        Driver::SqlServer => batches(tokens),
        _ => statements(tokens, driver),
    }
}

/// The statements of `text` as the engine should run them one at a time, as
/// byte ranges of `text` in order: cut at top-level `;` exactly as
/// [`inspect`] reads them (a routine's or MariaDB's `BEGIN NOT ATOMIC`
/// block's body stays whole; MySQL's executable comments are part of
/// their statement). Running a file statement by statement tells
/// which statement failed on engines that report no position (SQLite,
/// MySQL). `None` when the tokenizer cannot read the text: run it whole.
/// MySQL's `DELIMITER` command lines are read as its client reads them
/// ([`delimiter`]). Not for SQL Server, whose files are cut at `GO` lines.
pub fn split(driver: Driver, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
    if driver == Driver::Mysql && delimiter::has_command(text) {
        return delimiter::split(text, |region| split_tokens(driver, region));
    }
    split_tokens(driver, text)
}

/// [`split`] by the tokenizer (no `DELIMITER` command).
fn split_tokens(driver: Driver, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
    let tokens = unreadable::tokenize_whole(driver, text).ok()?;
    let offsets = Offsets::new(text);
    Some(statements(&tokens, driver).into_iter().map(|s| offsets.byte(s.at)..offsets.byte(s.end)).collect())
}

/// `select` — one statement, as `tenantSelectSQL` is — as a subquery: the
/// statement alone (no `;`, no comment before or after it) in parentheses,
/// for a query written around it. `None` when the text is not one
/// statement the tokenizer reads.
pub fn subquery(driver: Driver, select: &str) -> Option<String> {
    match split(driver, select)?.as_slice() {
        [one] => Some(format!("({})", &select[one.clone()])),
        _ => None,
    }
}

/// Byte offsets in a text of the positions its tokenizer reports (1-based
/// line, column in characters).
pub(crate) struct Offsets<'a> {
    text: &'a str,
    /// The byte where each line starts.
    lines: Vec<usize>,
}

impl<'a> Offsets<'a> {
    /// The offsets of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Offsets { text, lines: std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect() }
    }

    /// The byte offset of `at` (the text's length past its end).
    pub(crate) fn byte(&self, at: Position) -> usize {
        let text = self.text;
        let start = self.lines.get(at.line.saturating_sub(1) as usize).copied().unwrap_or(text.len());
        let skip = at.column.saturating_sub(1) as usize;
        text[start..].char_indices().nth(skip).map_or(text.len(), |(i, _)| start + i)
    }
}

/// Where, in the original file, the character at `offset` (1-based, as
/// PostgreSQL reports an error position) of the executed text lies. The
/// executed text is `contents` with every `placeholder` replaced by
/// `schema`; a position inside a replaced name maps to the placeholder's
/// start. `None` when the offset is outside the text.
pub fn locate(contents: &str, placeholder: &str, schema: &str, offset: usize) -> Option<Position> {
    let target = offset.checked_sub(1)?;
    let (placeholder_len, schema_len) = (placeholder.chars().count(), schema.chars().count());
    let mut executed = 0usize;
    let mut line = 1u64;
    let mut column = 1u64;
    let mut rest = contents;
    while !rest.is_empty() {
        if !placeholder.is_empty() && rest.starts_with(placeholder) {
            if target < executed + schema_len {
                return Some(Position { line, column });
            }
            executed += schema_len;
            column += placeholder_len as u64;
            rest = &rest[placeholder.len()..];
            continue;
        }
        let c = rest.chars().next()?;
        if executed == target {
            return Some(Position { line, column });
        }
        executed += 1;
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
        rest = &rest[c.len_utf8()..];
    }
    None
}

mod advice;
mod balance;
mod delimiter;
pub(crate) use delimiter::to_semicolons;
#[cfg(test)]
mod tests;
mod unreadable;
