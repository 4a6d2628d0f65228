//! A migration linter: what a set of migration files would do to a live
//! database — long locks, table rewrites, breakage of the application
//! version still running, data loss — read with sqlparser's real parser and
//! each engine's dialect. Style is not judged.
//!
//! - **Order.** Files are linted in the order given, statement by statement.
//!   A table created by an earlier statement of the same file or of an
//!   earlier file is *new*: it holds no rows and no running code uses it, so
//!   the lock and breakage rules do not apply to it (`CREATE INDEX` without
//!   `CONCURRENTLY` on it is fine).
//! - **Names.** The `{schema}` placeholder is read as an identifier of the
//!   same length, so positions stay those of the file. Table names compare
//!   case-insensitively; a `{schema}.` qualifier is ignored (the tenant's
//!   schema is the default one), any other qualifier is kept.
//! - **Positions** are the file's line and column (in characters) of the
//!   offending clause where the parser gives one (the column dropped, the
//!   constraint added), else of the statement.
//! - **Not checked.** A statement the parser cannot read (an engine feature
//!   sqlparser does not know, a `DO` block, a nesting deeper than
//!   [`RECURSION_LIMIT`]) is listed in [`Report::unchecked`], never as a
//!   finding; the tokenizer's words still tell whether it creates a table,
//!   and a few rules (`cluster`, `vacuum-full`, `mssql-index-without-online`)
//!   are judged on those words. MySQL executable comments
//!   (`/*!40101 … */`) are read as the text the server runs; a statement the
//!   parser cannot read that way is read once more without them.
//! - **Cutting.** Statements are cut by [`statements::split`] (top-level
//!   `;`, routine bodies kept whole). SQL Server files are cut at `GO`
//!   lines and a batch is parsed whole (T-SQL needs no `;`); a batch the
//!   parser cannot read is cut again before each line that starts with a
//!   statement word outside parentheses and `BEGIN … END`, unless it defines
//!   a routine or view.
//! - **Silencing.** `-- strata:allow rule-a, rule-b` in the file's *leading*
//!   comments (before its first statement, like
//!   [`NO_TRANSACTION_DIRECTIVE`]) silences those rules for that file; the
//!   names end at the end of the comment's line. A name that is not a rule is
//!   itself a finding, `unknown-rule`.
//!
//! The rules are listed in [`RULES`], with the engines each applies to.

mod citus;
mod rules;
mod select;

pub use select::{all_files, files_of_plan, render_text};

use rustc_hash::{FxHashMap, FxHashSet};
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use sqlparser::ast::Statement;
use sqlparser::dialect::{Dialect, MsSqlDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::{Parser, ParserError, ParserOptions};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer, Whitespace};
use thiserror::Error;

use crate::migrate::driver::Driver;
pub use crate::migrate::statements::ALLOW_DIRECTIVE;
use crate::migrate::statements::{self, LOCK_TIMEOUT_DIRECTIVE, NO_TRANSACTION_DIRECTIVE, Position};

/// How serious a finding is. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; safe as written.
    Info,
    /// Risky on a busy or large table; usually has a safe alternative.
    Warning,
    /// Blocks reads and writes for the length of a table rewrite, or worse.
    Error,
}

impl Severity {
    /// The lowercase name (`info`, `warning`, `error`).
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A severity name that is none of `info`, `warning`, `error`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0:?} is not a severity (info, warning or error)")]
pub struct UnknownSeverity(pub String);

impl FromStr for Severity {
    type Err = UnknownSeverity;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "info" => Ok(Severity::Info),
            "warning" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            _ => Err(UnknownSeverity(text.to_string())),
        }
    }
}

/// What a rule found in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The rule's name (kebab-case, one of [`RULES`]).
    pub rule: &'static str,
    /// The rule's severity.
    pub severity: Severity,
    /// The file.
    pub file: String,
    /// Where the offending clause or statement starts.
    #[serde(serialize_with = "serialize_position")]
    pub at: Position,
    /// One sentence on the risk.
    pub message: String,
    /// The safe alternative.
    pub advice: String,
}

/// A statement the linter could not read, so did not check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unchecked {
    /// The file.
    pub file: String,
    /// Where the statement starts.
    #[serde(serialize_with = "serialize_position")]
    pub at: Position,
    /// Why it could not be read (the parser's message, positions mapped to
    /// the file).
    pub reason: String,
}

/// What to lint.
#[derive(Debug, Clone, Copy)]
pub struct LintInput<'a> {
    /// The engine the files are written for.
    pub driver: Driver,
    /// The files, in the order they run: (file name, contents).
    pub files: &'a [(&'a str, &'a str)],
    /// The service sets a lock time-out for transactional units (the
    /// default): `missing-lock-timeout` then never applies.
    pub lock_timeout_set: bool,
    /// The database is a Citus coordinator (detected, or `citus: true`):
    /// the Citus rules apply too (`lint/citus.rs`).
    pub citus: bool,
}

/// The linter's findings and the statements it could not check, in file
/// order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// What the rules found.
    pub findings: Vec<Finding>,
    /// Statements not checked.
    pub unchecked: Vec<Unchecked>,
}

impl Report {
    /// The findings of severity `severity` or worse.
    pub fn at_or_above(&self, severity: Severity) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.severity >= severity)
    }
}

/// A rule, for documentation and `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleInfo {
    /// Its name (kebab-case), as findings and `strata:allow` name it.
    pub name: &'static str,
    /// The severity of its findings.
    pub severity: Severity,
    /// The engines it applies to.
    pub drivers: &'static [Driver],
    /// What it finds, in one line.
    pub description: &'static str,
}

/// Deepest nesting the parser follows (sqlparser's recursion limit). Each
/// level costs tens of kilobytes of stack in an unoptimised build (a
/// 16-deep subquery needs about 1.5 MiB there), a few in a release build;
/// DDL rarely nests past a handful of levels, and a deeper statement is only
/// reported as not checked.
pub const RECURSION_LIMIT: usize = 16;

const PG: &[Driver] = &[Driver::Postgres];
const ALL: &[Driver] = &[Driver::Postgres, Driver::Mysql, Driver::SqlServer, Driver::Sqlite];

/// Every rule the linter has.
pub const RULES: &[RuleInfo] = &[
    rules::CREATE_INDEX_NON_CONCURRENTLY,
    rules::DROP_INDEX_NON_CONCURRENTLY,
    rules::MSSQL_INDEX_WITHOUT_ONLINE,
    rules::ADDING_VOLATILE_DEFAULT,
    rules::ADDING_SERIAL_COLUMN,
    rules::CHANGING_COLUMN_TYPE,
    rules::SETTING_NOT_NULL,
    rules::CONSTRAINT_MISSING_NOT_VALID,
    rules::ADDING_UNIQUE_CONSTRAINT,
    rules::MYSQL_ALTER_WITHOUT_ALGORITHM,
    rules::DROPPING_COLUMN,
    rules::DROPPING_TABLE,
    rules::RENAMING_COLUMN,
    rules::RENAMING_TABLE,
    rules::VACUUM_FULL,
    rules::CLUSTER,
    rules::LOCK_TABLE,
    rules::MISSING_LOCK_TIMEOUT,
    citus::CITUS_VOLATILE_IN_UPDATE,
    citus::CITUS_TRIGGER,
    citus::CITUS_FOREIGN_KEY_ACROSS_SCHEMAS,
    citus::CITUS_DDL_AMONG_STATEMENTS,
    citus::CITUS_SMALL_SEQUENCE,
    rules::UNKNOWN_RULE,
];

/// The rule named `name`, if any.
pub fn rule(name: &str) -> Option<&'static RuleInfo> {
    RULES.iter().find(|r| r.name == name)
}

/// Lints `input.files` in order (see the module documentation).
pub fn lint(input: &LintInput) -> Report {
    let mut state = rules::State::default();
    let mut report = Report::default();
    for (file, contents) in input.files {
        lint_file(input, &mut state, file, contents, &mut report);
    }
    report
}

/// Lints each file of `input.files` on its own: only tables created in the
/// same file count as new. For a history whose files ran in different
/// versions (`strata lint --all`), where an earlier file's table held rows
/// by the time a later file ran.
pub fn lint_separately(input: &LintInput) -> Report {
    let mut report = Report::default();
    for (file, contents) in input.files {
        lint_file(input, &mut rules::State::default(), file, contents, &mut report);
    }
    report
}

/// The placeholder migrations use for the tenant's schema.
const PLACEHOLDER: &str = "{schema}";
/// What the parser reads instead: an identifier of the same length.
const STAND_IN: &str = "schema__";
/// A backfill's placeholders (`strata:backfill`) and what the parser reads
/// instead, each of the same length so positions stay right: a condition
/// for `{range}`, a number for `{batch}`.
const BACKFILL_STAND_INS: [(&str, &str); 2] = [("{range}", "(1 = 1)"), ("{batch}", "1000000")];

fn lint_file(input: &LintInput, state: &mut rules::State, file: &str, contents: &str, report: &mut Report) {
    let driver = input.driver;
    let text =
        BACKFILL_STAND_INS.iter().fold(contents.replace(PLACEHOLDER, STAND_IN), |text, (placeholder, stand_in)| {
            text.replace(placeholder, stand_in)
        });
    let head = leading(driver, &text);
    let mut ctx = rules::Ctx::new(driver, file, state);
    let lines = LineIndex::new(&text);
    let mut unchecked = Vec::new();
    let pieces = pieces(driver, &text);
    if input.citus && driver == Driver::Postgres {
        let statements = pieces.iter().filter(|p| text.get((*p).clone()).is_some_and(has_statement)).count();
        ctx = ctx.with_citus(statements);
    }
    for piece in pieces {
        check_piece(&mut ctx, &text, &lines, piece, &mut unchecked);
    }
    let mut findings = ctx.finish(!input.lock_timeout_set && !head.no_transaction && !head.lock_timeout);
    findings.retain(|f| !head.allowed.contains(f.rule));
    for (at, name) in &head.unknown {
        findings.push(rules::unknown_rule(file, *at, name));
    }
    findings.sort_by_key(|f| f.at);
    if contents.contains(PLACEHOLDER) {
        // Names are shown as the file writes them.
        for f in &mut findings {
            f.message = f.message.replace(STAND_IN, PLACEHOLDER);
            f.advice = f.advice.replace(STAND_IN, PLACEHOLDER);
        }
        for u in &mut unchecked {
            u.reason = u.reason.replace(STAND_IN, PLACEHOLDER);
        }
    }
    report.findings.extend(findings);
    report.unchecked.extend(unchecked);
}

/// Judges one parsed statement: the Citus rules first when they are on,
/// then every other rule.
fn judge(ctx: &mut rules::Ctx<'_>, at: Position, statement: &Statement, map: rules::Map<'_>) {
    if let Some(statements) = ctx.citus_statements() {
        citus::check(ctx, at, statement, statements);
    }
    ctx.check(at, statement, map);
}

/// Whether a piece holds a statement (not only comments and blanks).
fn has_statement(piece: &str) -> bool {
    match Tokenizer::new(dialect(Driver::Postgres), piece).tokenize() {
        Ok(tokens) => tokens.iter().any(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon | Token::EOF)),
        Err(_) => !piece.trim().is_empty(),
    }
}

/// What a file's leading comments say to the linter.
#[derive(Debug, Default)]
struct Head {
    no_transaction: bool,
    lock_timeout: bool,
    allowed: FxHashSet<&'static str>,
    unknown: Vec<(Position, String)>,
}

/// Reads the leading comments of `text` (the whole `--` lines before the
/// first other line when the tokenizer cannot read the text).
fn leading(driver: Driver, text: &str) -> Head {
    let comments: Vec<(Position, String)> = match Tokenizer::new(dialect(driver), text).tokenize_with_location() {
        Ok(tokens) => {
            let mut out = Vec::new();
            for token in tokens {
                let at = Position { line: token.span.start.line, column: token.span.start.column };
                match token.token {
                    Token::Whitespace(Whitespace::SingleLineComment { comment, .. }) => out.push((at, comment)),
                    Token::Whitespace(Whitespace::MultiLineComment(comment)) => out.push((at, comment)),
                    Token::Whitespace(_) => {}
                    _ => break,
                }
            }
            out
        }
        Err(_) => text
            .lines()
            .enumerate()
            .map(|(i, line)| (i, line.trim()))
            .take_while(|(_, line)| line.is_empty() || line.starts_with("--"))
            .map(|(i, line)| (Position { line: i as u64 + 1, column: 1 }, line.trim_start_matches('-').to_string()))
            .collect(),
    };
    let mut head = Head::default();
    for (at, comment) in comments {
        for line in comment.lines() {
            let words: Vec<&str> =
                line.split(|c: char| c.is_whitespace() || c == '=' || c == ',').filter(|w| !w.is_empty()).collect();
            let mut i = 0;
            while i < words.len() {
                let lower = words[i].to_ascii_lowercase();
                i += 1;
                match lower.as_str() {
                    NO_TRANSACTION_DIRECTIVE => head.no_transaction = true,
                    LOCK_TIMEOUT_DIRECTIVE => {
                        let value = words.get(i).copied().unwrap_or_default();
                        head.lock_timeout = statements::duration_ms(value).is_ok_and(|ms| ms > 0);
                    }
                    ALLOW_DIRECTIVE => {
                        while let Some(name) = words.get(i).filter(|w| !w.contains(':')) {
                            i += 1;
                            match rule(&name.to_ascii_lowercase()) {
                                Some(known) => {
                                    head.allowed.insert(known.name);
                                }
                                None => head.unknown.push((at, name.to_string())),
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    head
}

/// The pieces of `text` to parse: statements, or SQL Server batches.
fn pieces(driver: Driver, text: &str) -> Vec<Range<usize>> {
    let all = || if text.trim().is_empty() { Vec::new() } else { std::iter::once(0..text.len()).collect() };
    match driver {
        Driver::SqlServer => go_batches(text),
        _ => statements::split(driver, text).unwrap_or_else(all),
    }
}

/// SQL Server batches: cut at lines holding only `GO` (as
/// `batches::split_go_batches` does), as byte ranges.
fn go_batches(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut offset) = (0, 0);
    let mut push = |range: Range<usize>| {
        if text.get(range.clone()).is_some_and(|t| !t.trim().is_empty()) {
            out.push(range);
        }
    };
    for line in text.split_inclusive('\n') {
        if line.split("--").next().unwrap_or("").trim().eq_ignore_ascii_case("go") {
            push(start..offset);
            start = offset + line.len();
        }
        offset += line.len();
    }
    push(start..text.len());
    out
}

/// Line starts of a text, to turn byte offsets into positions and back.
struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        LineIndex { text, starts: std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect() }
    }

    fn position(&self, offset: usize) -> Position {
        let line = self.starts.partition_point(|s| *s <= offset).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        let column = self.text.get(start..offset).map_or(0, |t| t.chars().count());
        Position { line: line as u64, column: column as u64 + 1 }
    }

    fn offset(&self, at: Location) -> usize {
        let start = self.starts.get(at.line.saturating_sub(1) as usize).copied().unwrap_or(self.text.len());
        let skip = at.column.saturating_sub(1) as usize;
        self.text[start..].char_indices().nth(skip).map_or(self.text.len(), |(i, _)| start + i)
    }
}

/// Maps a location inside a piece that starts at `base` to the file.
fn map(base: Position, at: Location) -> Option<Position> {
    if at.line == 0 {
        return None;
    }
    let line = base.line + at.line - 1;
    let column = if at.line == 1 { base.column + at.column.saturating_sub(1) } else { at.column };
    Some(Position { line, column })
}

fn check_piece(
    ctx: &mut rules::Ctx,
    text: &str,
    lines: &LineIndex,
    piece: Range<usize>,
    unchecked: &mut Vec<Unchecked>,
) {
    let Some(source) = text.get(piece.clone()) else { return };
    let base = lines.position(piece.start);
    if ctx.driver == Driver::SqlServer && parse(ctx.driver, source).is_err() {
        for part in tsql_statements(source) {
            let (start, end) = (piece.start + part.start, piece.start + part.end);
            if let Some(part) = text.get(start..end) {
                check_source(ctx, part, lines.position(start), unchecked);
            }
        }
        return;
    }
    check_source(ctx, source, base, unchecked);
}

/// Checks the statements of `source`, which starts at `base` in the file:
/// parsed, else (MySQL) parsed without executable comments, else judged on
/// its words or listed as not checked.
fn check_source(ctx: &mut rules::Ctx, source: &str, base: Position, unchecked: &mut Vec<Unchecked>) {
    let error = match parse(ctx.driver, source) {
        Ok(parsed) => {
            for (at, statement) in parsed {
                judge(ctx, map(base, at).unwrap_or(base), &statement, &|l| map(base, l));
            }
            return;
        }
        Err(error) => error,
    };
    if ctx.driver == Driver::Mysql
        && source.contains("/*!")
        && let Ok(parsed) = parse(ctx.driver, &blank_executable_comments(source))
    {
        for (at, statement) in parsed {
            judge(ctx, map(base, at).unwrap_or(base), &statement, &|l| map(base, l));
        }
        return;
    }
    let words = words(ctx.driver, source);
    if !ctx.check_words(base, &words, &|l| map(base, l)) {
        unchecked.push(Unchecked { file: ctx.file.to_string(), at: base, reason: reason(&error, base) });
    }
}

/// The parser's message for `error`, its position mapped to the file.
fn reason(error: &ParserError, base: Position) -> String {
    let message = match error {
        ParserError::RecursionLimitExceeded => {
            return format!("nested deeper than the linter follows ({RECURSION_LIMIT} levels)");
        }
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
    };
    let Some((text, place)) = message.rsplit_once(" at Line: ") else { return message.clone() };
    let mut numbers = place.split(", Column: ").map(|n| n.trim().parse::<u64>());
    match (numbers.next(), numbers.next()) {
        (Some(Ok(line)), Some(Ok(column))) => match map(base, Location { line, column }) {
            Some(at) => format!("{text} at {at}"),
            None => text.to_string(),
        },
        _ => message.clone(),
    }
}

fn dialect(driver: Driver) -> &'static dyn Dialect {
    match driver {
        Driver::Postgres => &PostgreSqlDialect {},
        Driver::Mysql => &MySqlDialect {},
        Driver::Sqlite => &SQLiteDialect {},
        Driver::SqlServer => &MsSqlDialect {},
    }
}

/// The statements of `source` with where each starts (in `source`).
fn parse(driver: Driver, source: &str) -> Result<Vec<(Location, Statement)>, ParserError> {
    let dialect = dialect(driver);
    let options = ParserOptions {
        trailing_commas: dialect.supports_trailing_commas(),
        unescape: true,
        require_semicolon_stmt_delimiter: driver != Driver::SqlServer,
    };
    let mut parser =
        Parser::new(dialect).with_options(options).with_recursion_limit(RECURSION_LIMIT).try_with_sql(source)?;
    let mut out = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        let next = parser.peek_token();
        if next.token == Token::EOF {
            break;
        }
        let statement = parser.parse_statement()?;
        out.push((next.span.start, statement));
        let after = parser.peek_token_ref();
        if driver != Driver::SqlServer && !matches!(after.token, Token::SemiColon | Token::EOF) {
            return Err(ParserError::ParserError(format!(
                "Expected: end of statement, found: {}{}",
                after.token, after.span.start
            )));
        }
    }
    Ok(out)
}

/// A word of a statement the parser could not read: upper-cased when
/// unquoted (`None` when quoted), its text as written, and where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Word {
    upper: Option<String>,
    value: String,
    at: Location,
    /// The token right after it is `=`, `.` or `(` (for `ONLINE = ON`,
    /// qualified names).
    next: Option<Token>,
}

/// The words of `source` (empty when the tokenizer cannot read it).
fn words(driver: Driver, source: &str) -> Vec<Word> {
    let Ok(tokens) = Tokenizer::new(dialect(driver), source).tokenize_with_location() else { return Vec::new() };
    let significant: Vec<&TokenWithSpan> =
        tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF)).collect();
    significant
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match &t.token {
            Token::Word(w) => Some(Word {
                upper: w.quote_style.is_none().then(|| w.value.to_ascii_uppercase()),
                value: w.value.clone(),
                at: t.span.start,
                next: significant.get(i + 1).map(|n| n.token.clone()).filter(|n| !matches!(n, Token::Word(_))),
            }),
            _ => None,
        })
        .collect()
}

/// `source` with its executable comments (`/*!…*/`) replaced by spaces
/// (line breaks kept, so positions do not move).
fn blank_executable_comments(source: &str) -> String {
    let Ok(tokens) = Tokenizer::new(&statements::MySqlText, source).tokenize_with_location() else {
        return source.to_string();
    };
    let lines = LineIndex::new(source);
    let mut out = String::with_capacity(source.len());
    let mut copied = 0;
    for token in tokens {
        if statements::executable_comment(&token.token) {
            let (start, end) = (lines.offset(token.span.start), lines.offset(token.span.end));
            if start < copied || end < start {
                continue;
            }
            out.push_str(source.get(copied..start).unwrap_or_default());
            out.extend(source.get(start..end).unwrap_or_default().chars().map(|c| if c == '\n' { c } else { ' ' }));
            copied = end;
        }
    }
    out.push_str(source.get(copied..).unwrap_or_default());
    out
}

/// The words that start a T-SQL statement at the start of a line.
const TSQL_STARTERS: &[&str] = &[
    "ALTER",
    "CREATE",
    "DROP",
    "EXEC",
    "EXECUTE",
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "GRANT",
    "REVOKE",
    "DENY",
    "TRUNCATE",
    "SET",
    "DECLARE",
    "PRINT",
    "IF",
    "WHILE",
    "SELECT",
    "USE",
    "RAISERROR",
    "THROW",
];

/// Whether `word` at the start of a line may go on the statement that
/// `first` starts (`INSERT … SELECT`, `UPDATE … SET`, `MERGE … UPDATE`).
fn tsql_continues(first: &str, word: &str) -> bool {
    match word {
        "SELECT" => matches!(first, "INSERT" | "CREATE" | "ALTER" | "DECLARE"),
        "SET" => matches!(first, "UPDATE" | "MERGE" | "ALTER"),
        "INSERT" | "UPDATE" | "DELETE" => first == "MERGE",
        _ => false,
    }
}

/// A T-SQL batch cut before each line starting with a statement word,
/// outside parentheses and `BEGIN … END`/`CASE … END` (unless the word goes
/// on the statement before, see [`tsql_continues`]); one piece for a batch
/// defining a routine or view (whose body may hold any word).
fn tsql_statements(source: &str) -> Vec<Range<usize>> {
    let Ok(tokens) = Tokenizer::new(&MsSqlDialect {}, source).tokenize_with_location() else {
        return std::iter::once(0..source.len()).collect();
    };
    let significant: Vec<&TokenWithSpan> =
        tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF)).collect();
    let upper = |i: usize| match significant.get(i).map(|t| &t.token) {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let head: Vec<Option<String>> = (0..4).map(upper).collect();
    let is = |i: usize, w: &str| head.get(i).and_then(|h| h.as_deref()) == Some(w);
    let routine_at = |i: usize| {
        head.get(i)
            .and_then(|h| h.as_deref())
            .is_some_and(|w| matches!(w, "PROC" | "PROCEDURE" | "FUNCTION" | "TRIGGER" | "VIEW"))
    };
    if (is(0, "CREATE") || is(0, "ALTER")) && (routine_at(1) || (is(1, "OR") && routine_at(3))) {
        return std::iter::once(0..source.len()).collect();
    }
    let lines = LineIndex::new(source);
    let mut cuts = vec![0];
    let (mut parens, mut blocks) = (0usize, 0usize);
    // After `IF`/`ELSE` at the top level, the next statement is its body.
    let mut body_pending = false;
    let mut first = upper(0).unwrap_or_default();
    for (i, token) in significant.iter().enumerate() {
        match &token.token {
            Token::LParen => parens += 1,
            Token::RParen => parens = parens.saturating_sub(1),
            Token::Word(_) => {
                let word = upper(i).unwrap_or_default();
                let first_on_line = i == 0 || significant[i - 1].span.start.line != token.span.start.line;
                let top = parens == 0 && blocks == 0;
                match word.as_str() {
                    "BEGIN" if !matches!(upper(i + 1).as_deref(), Some("TRAN" | "TRANSACTION" | "DISTRIBUTED")) => {
                        blocks += 1;
                        body_pending = false;
                    }
                    "CASE" => blocks += 1,
                    "END" => blocks = blocks.saturating_sub(1),
                    _ => {}
                }
                if top && TSQL_STARTERS.contains(&word.as_str()) {
                    if i > 0 && first_on_line && !body_pending && !tsql_continues(&first, &word) {
                        cuts.push(lines.offset(token.span.start));
                        first.clone_from(&word);
                    }
                    body_pending = word == "IF" || word == "WHILE";
                } else if top && word == "ELSE" {
                    body_pending = true;
                }
            }
            _ => {}
        }
    }
    cuts.push(source.len());
    cuts.windows(2).filter(|w| w[0] < w[1]).map(|w| w[0]..w[1]).collect()
}

/// Serializes a [`Position`] as `{"line": …, "column": …}`.
fn serialize_position<S: Serializer>(at: &Position, serializer: S) -> Result<S::Ok, S::Error> {
    let mut out = serializer.serialize_struct("Position", 2)?;
    out.serialize_field("line", &at.line)?;
    out.serialize_field("column", &at.column)?;
    out.end()
}

/// Keys that identify a table across files: lowercased, a `{schema}`
/// qualifier dropped.
pub(crate) fn table_key<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let parts: Vec<String> = parts.into_iter().map(|p| p.to_lowercase()).collect();
    let skip = usize::from(parts.len() > 1 && parts.first().is_some_and(|p| p == STAND_IN));
    parts[skip..].join(".")
}

/// Not-null checks by table: constraint name → (column, validated).
pub(crate) type Checks = FxHashMap<String, FxHashMap<String, (String, bool)>>;

#[cfg(test)]
mod tests;
