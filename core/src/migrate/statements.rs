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
//! MySQL and MariaDB commit DDL as it runs, so files there are never wrapped
//! in a transaction and neither check applies (the directive is still read).
//! Statements are cut at top-level `;` (on SQL Server: at `GO` lines, then
//! every word is looked at, because T-SQL needs no `;`). A routine body's
//! `BEGIN … END` and `CASE … END` nest, so its inner `;` do not cut.

use sqlparser::dialect::{Dialect, MsSqlDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};
use thiserror::Error;

use crate::migrate::driver::Driver;

/// The directive, in a leading comment, that makes a file run outside any
/// transaction.
pub const NO_TRANSACTION_DIRECTIVE: &str = "strata:no-transaction";

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
         remove it (the service commits each schema's migrations itself), or mark the file \
         `-- {NO_TRANSACTION_DIRECTIVE}` to run it outside any transaction"
    )]
    TransactionControl {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// Its leading words, upper-cased (`COMMIT`, `BEGIN TRANSACTION`).
        statement: String,
    },
    /// A statement the engine refuses inside a transaction, in a file
    /// without the directive.
    #[error(
        "{file}:{at}: {statement} cannot run inside a transaction; put `-- {NO_TRANSACTION_DIRECTIVE}` \
         in the file's leading comment lines to run it outside one (alone, recorded right after it succeeds)"
    )]
    NeedsNoTransaction {
        /// The file.
        file: String,
        /// Where the statement starts.
        at: Position,
        /// Its leading words, upper-cased (`CREATE INDEX CONCURRENTLY`).
        statement: String,
    },
}

/// What a file says about transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileMode {
    /// The file carries the directive: it runs outside any transaction.
    pub no_transaction: bool,
}

/// Reads `contents` of `file` for `driver`: the directive, and a refusal
/// when the file cannot run as written (see the module documentation).
/// Text the tokenizer cannot read (an unterminated string, say) is not
/// judged: `Ok` with the directive alone, and the engine has the last word.
pub fn inspect(driver: Driver, file: &str, contents: &str) -> Result<FileMode, StatementError> {
    let Ok(tokens) = Tokenizer::new(dialect(driver), contents).tokenize_with_location() else {
        return Ok(FileMode { no_transaction: has_directive(contents) });
    };
    let mode = FileMode { no_transaction: leading_comments_hold_directive(&tokens) };
    if mode.no_transaction || driver == Driver::Mysql {
        return Ok(mode);
    }
    let statements = match driver {
        Driver::SqlServer => batches(&tokens),
        _ => statements(&tokens),
    };
    for statement in statements {
        let verdict = match driver {
            Driver::Postgres => judge_postgres(&statement.words),
            Driver::Sqlite => judge_sqlite(&statement.words),
            Driver::SqlServer => judge_sqlserver(&statement.words),
            Driver::Mysql => None,
        };
        if let Some((kind, words)) = verdict {
            let at = statement.at;
            let (file, statement) = (file.to_string(), words.join(" "));
            return Err(match kind {
                Kind::TransactionControl => StatementError::TransactionControl { file, at, statement },
                Kind::NeedsNoTransaction => StatementError::NeedsNoTransaction { file, at, statement },
            });
        }
    }
    Ok(mode)
}

fn dialect(driver: Driver) -> &'static dyn Dialect {
    match driver {
        Driver::Postgres => &PostgreSqlDialect {},
        Driver::Mysql => &MySqlDialect {},
        Driver::Sqlite => &SQLiteDialect {},
        Driver::SqlServer => &MsSqlDialect {},
    }
}

/// The directive in the leading comment lines, for text the tokenizer
/// cannot read: the lines before the first one that is neither blank nor a
/// `--` comment.
fn has_directive(contents: &str) -> bool {
    contents.lines().map(str::trim).take_while(|line| line.is_empty() || line.starts_with("--")).any(directive_in)
}

fn directive_in(comment: &str) -> bool {
    comment.split_whitespace().any(|word| word.eq_ignore_ascii_case(NO_TRANSACTION_DIRECTIVE))
}

fn leading_comments_hold_directive(tokens: &[TokenWithSpan]) -> bool {
    for token in tokens {
        match &token.token {
            Token::Whitespace(Whitespace::SingleLineComment { comment, .. }) if directive_in(comment) => return true,
            Token::Whitespace(Whitespace::MultiLineComment(comment)) if directive_in(comment) => return true,
            Token::Whitespace(_) => {}
            _ => return false,
        }
    }
    false
}

/// A word of a statement: upper-cased when unquoted, `None` when quoted (a
/// quoted identifier is never a keyword).
type Word = Option<String>;

struct Statement {
    at: Position,
    /// Where its last token ends (line, column just past it).
    end: Position,
    words: Vec<Word>,
}

fn word(token: &Token) -> Option<Word> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(Some(w.value.to_ascii_uppercase())),
        Token::Word(_) => Some(None),
        _ => None,
    }
}

fn is(word: Option<&Word>, text: &str) -> bool {
    matches!(word, Some(Some(w)) if w == text)
}

/// Most words kept per statement: enough for every rule.
const WORDS_KEPT: usize = 12;

/// Statements cut at top-level `;`. The words of each are its leading
/// words; inside a routine (`CREATE … FUNCTION/PROCEDURE/TRIGGER/EVENT`)
/// `BEGIN`/`CASE` … `END` nest.
fn statements(tokens: &[TokenWithSpan]) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut current: Option<Statement> = None;
    let mut depth = 0usize;
    let mut all_words: Vec<Word> = Vec::new();
    let significant: Vec<&TokenWithSpan> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let mut i = 0;
    while i < significant.len() {
        let token = significant[i];
        if token.token == Token::SemiColon && depth == 0 {
            out.extend(current.take());
            all_words.clear();
            i += 1;
            continue;
        }
        let statement = current.get_or_insert_with(|| Statement {
            at: Position { line: token.span.start.line, column: token.span.start.column },
            end: Position { line: token.span.end.line, column: token.span.end.column },
            words: Vec::new(),
        });
        statement.end = Position { line: token.span.end.line, column: token.span.end.column };
        if let Some(w) = word(&token.token) {
            if statement.words.len() < WORDS_KEPT {
                statement.words.push(w.clone());
            }
            all_words.push(w.clone());
            // MariaDB's anonymous block: its `BEGIN` opens a body.
            let block = all_words.len() >= 3
                && is(all_words.first(), "BEGIN")
                && is(all_words.get(1), "NOT")
                && is(all_words.get(2), "ATOMIC");
            if block && all_words.len() == 3 {
                depth += 1;
                i += 1;
                continue;
            }
            let routine = block
                || is(all_words.first(), "CREATE")
                    && all_words
                        .iter()
                        .any(|w| matches!(w.as_deref(), Some("FUNCTION" | "PROCEDURE" | "TRIGGER" | "EVENT")));
            if routine {
                let next = significant.get(i + 1).and_then(|t| word(&t.token));
                match w.as_deref() {
                    Some("BEGIN" | "CASE") => depth += 1,
                    Some("END") => match next.as_ref().and_then(|n| n.as_deref()) {
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
    out.extend(current);
    out
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
        current
            .get_or_insert_with(|| Statement {
                at: Position { line: token.span.start.line, column: token.span.start.column },
                end: Position { line: token.span.end.line, column: token.span.end.column },
                words: Vec::new(),
            })
            .words
            .extend(word(&token.token));
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
        (Some("REINDEX"), _) if has(s, "CONCURRENTLY") || has(s, "DATABASE") || has(s, "SYSTEM") => Some(2),
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

fn judge_sqlserver(batch: &[Word]) -> Verdict {
    let first = batch.first().and_then(|w| w.as_deref());
    let second = batch.get(1).and_then(|w| w.as_deref());
    let routine =
        matches!((first, second), (Some("CREATE" | "ALTER"), Some("PROCEDURE" | "PROC" | "FUNCTION" | "TRIGGER")))
            || (matches!(first, Some("CREATE")) && second == Some("OR") && is(batch.get(2), "ALTER"));
    if routine {
        return None;
    }
    for (i, w) in batch.iter().enumerate() {
        let next = batch.get(i + 1).and_then(|w| w.as_deref());
        let previous = i.checked_sub(1).and_then(|p| batch[p].as_deref());
        let found = match (w.as_deref(), next) {
            (Some("BEGIN"), Some("TRAN" | "TRANSACTION" | "DISTRIBUTED")) => {
                Some((Kind::TransactionControl, vec!["BEGIN".into(), next.unwrap_or_default().into()]))
            }
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
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The statements of `text` as the engine should run them one at a time, as
/// byte ranges of `text` in order: cut at top-level `;` exactly as
/// [`inspect`] reads them (a routine's or MariaDB's `BEGIN NOT ATOMIC`
/// block's body stays whole). Running a file statement by statement tells
/// which statement failed on engines that report no position (SQLite,
/// MySQL). `None` when the tokenizer cannot read the text: run it whole.
/// Not for SQL Server, whose files are cut at `GO` lines.
pub fn split(driver: Driver, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
    let tokens = Tokenizer::new(dialect(driver), text).tokenize_with_location().ok()?;
    let lines: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let byte = |at: Position| -> usize {
        let start = lines.get(at.line.saturating_sub(1) as usize).copied().unwrap_or(text.len());
        let skip = at.column.saturating_sub(1) as usize;
        text[start..].char_indices().nth(skip).map_or(text.len(), |(i, _)| start + i)
    };
    Some(statements(&tokens).into_iter().map(|s| byte(s.at)..byte(s.end)).collect())
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

#[cfg(test)]
mod tests;
