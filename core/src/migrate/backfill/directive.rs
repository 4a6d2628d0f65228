//! The `strata:backfill` directive of a file's leading comments, its
//! options, and what it asks of the file's one statement.
//!
//! ```sql
//! -- strata:backfill table={schema}.orders key=id batch=500
//! update {schema}.orders set total_cents = (total * 100)::bigint where {range};
//! ```
//!
//! - **Where.** In the leading comments, read exactly as
//!   [`crate::migrate::statements`] reads every directive (a format's own
//!   markers, such as dbmate's `-- migrate:up`, are already blanked out of
//!   the part it runs). Its options follow it on the same line, each
//!   `name=value`, up to the line's end or the next `strata:` word.
//! - **Options.** `table=` and `key=` (the key's columns, comma-separated,
//!   in order) go together: a *ranged* backfill, whose statement holds
//!   `{range}`. Without them, a *repeated* backfill, whose statement holds
//!   `{batch}` (a limit) and runs until it changes no row. `batch=` is the
//!   most rows (or keys) one batch takes: 1 to [`MAX_BATCH`], default
//!   [`DEFAULT_BATCH`].
//! - **Names** are taken as written (identifiers, quoted or not, dotted,
//!   with the schema placeholder): they are written into the statements
//!   core renders, so anything that could end or change a statement is
//!   refused — `;`, whitespace, parentheses, a string quote, a comment
//!   start, a quote left open.
//! - **Refused** (each a [`StatementError::BadDirective`]): an unknown or
//!   repeated option, `table` without `key` or the other way round, a bad
//!   `batch`, a missing placeholder or the other form's placeholder, more
//!   than one statement, `strata:no-transaction` (or the format's own
//!   marker) beside it, and text the tokenizer cannot read.

use crate::migrate::backfill::placeholder::{self, BATCH, RANGE};
use crate::migrate::driver::Driver;
use crate::migrate::statements::{self, BACKFILL_DIRECTIVE, NO_TRANSACTION_DIRECTIVE, Position, StatementError};

/// What a file's `strata:backfill` directive asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Ranges of keys, or a statement repeated.
    pub form: Form,
    /// The most keys (ranged) or rows (repeated) one batch takes.
    pub batch: u32,
}

/// How a backfill's batches are cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// `table=` and `key=`: each batch is the next range of keys, its
    /// condition written where the statement says `{range}`. Both as
    /// written: they may hold the schema placeholder, which the shell
    /// replaces.
    Ranged {
        /// The table whose keys are ranged.
        table: String,
        /// Its key columns, in order (one, or several for a composite key).
        key: Vec<String>,
    },
    /// Neither: the statement runs with its `{batch}` limit until a run
    /// changes no row (it must be idempotent).
    Repeated,
}

/// `batch=` when the directive gives none.
pub const DEFAULT_BATCH: u32 = 1_000;
/// The largest `batch=`.
pub const MAX_BATCH: u32 = 100_000;

/// The options a directive may have.
const OPTIONS: &str = "table, key, batch";

/// The backfill `contents` of `file` asks for on `driver` (see the module
/// documentation); `Ok(None)` when the file has no `strata:backfill`
/// directive in its leading comments.
pub fn read(driver: Driver, file: &str, contents: &str) -> Result<Option<Spec>, StatementError> {
    read_part(driver, file, contents, false)
}

/// [`read`] for the part of a file its format runs, with the format's own
/// no-transaction marker (see [`statements::inspect_part`]), which a
/// backfill refuses like the directive.
pub fn read_part(
    driver: Driver,
    file: &str,
    contents: &str,
    no_transaction: bool,
) -> Result<Option<Spec>, StatementError> {
    let whole = contents;
    let read = placeholder::readable(driver, contents);
    let contents = &*read;
    let tokens = statements::tokenize(driver, contents).ok();
    let comments = match &tokens {
        Some(tokens) => statements::leading_comments(tokens),
        None => statements::leading_lines(contents),
    };
    let Some(found) = find_directive(file, &comments)? else { return Ok(None) };
    let bad = |at: Position, reason: String| StatementError::BadDirective {
        file: file.to_string(),
        at,
        directive: found.written.clone(),
        reason,
    };
    if driver == Driver::SqlServer
        && let [_, second, ..] = crate::migrate::batches::split_go_batches(whole).as_slice()
    {
        let before = &whole[..second.as_ptr() as usize - whole.as_ptr() as usize];
        let line = before.matches('\n').count() + 1;
        return Err(bad(
            Position { line: line as u64, column: 1 },
            "a backfill file holds exactly one statement, run once per batch; this one holds more than one batch \
             (`GO` lines): put the others in files of their own"
                .into(),
        ));
    }
    let mode = statements::directives(file, &comments)?;
    if mode.no_transaction || no_transaction {
        return Err(bad(
            found.at,
            format!(
                "a backfill commits each batch in a transaction of its own, with its checkpoint; it cannot run \
                 outside a transaction (remove `{NO_TRANSACTION_DIRECTIVE}` or the format's no-transaction marker)"
            ),
        ));
    }
    let spec = options(&found.options).map_err(|reason| bad(found.at, reason))?;
    if let (Driver::Mysql, Form::Ranged { table, key }) = (driver, &spec.form)
        && let Some(name) = std::iter::once(table).chain(key).find(|name| name.contains('"'))
    {
        // Without ANSI_QUOTES (the default), `"id"` is the string 'id':
        // every range would hold every row, in one batch.
        return Err(bad(
            found.at,
            format!("{name}: on MySQL and MariaDB `\"` quotes a string, not a name; quote names with backticks (`)"),
        ));
    }
    let statement_at = the_statement(driver, tokens, found.at, &bad)?;
    let unreadable = || bad(found.at, "the file cannot be read as SQL".into());
    let ranges = placeholder::find(driver, contents, RANGE).ok_or_else(unreadable)?;
    let limits = placeholder::find(driver, contents, BATCH).ok_or_else(unreadable)?;
    placeholders(&spec.form, &ranges, &limits, statement_at).map_err(|(at, reason)| bad(at, reason))?;
    Ok(Some(spec))
}

/// Where a backfill file's one statement starts: refused (`bad`, at the
/// directive `at` or the statement in question) when the file cannot be
/// read, holds no statement or more than one, or a bound parameter.
fn the_statement(
    driver: Driver,
    tokens: Option<Vec<sqlparser::tokenizer::TokenWithSpan>>,
    at: Position,
    bad: &dyn Fn(Position, String) -> StatementError,
) -> Result<Position, StatementError> {
    let Some(tokens) = tokens else {
        return Err(bad(
            at,
            "the file cannot be read as SQL (a string, quoted name or comment left open?), so its statement and \
             placeholder cannot be found"
                .into(),
        ));
    };
    let statements = statements::statements(&tokens, driver);
    match statements.as_slice() {
        [] => return Err(bad(at, "a backfill file holds one statement; this one holds none".into())),
        [_] => {}
        [_, second, ..] => {
            return Err(bad(
                second.at,
                format!(
                    "a backfill file holds exactly one statement, run once per batch; this one holds {}: put the \
                     others in files of their own",
                    statements.len()
                ),
            ));
        }
    }
    if let Some((at, written)) = bound_parameter(driver, &tokens) {
        return Err(bad(
            at,
            format!(
                "`{written}` is a bound parameter, and a backfill's statement has none of its own: Strata binds \
                 each batch's keys where `{RANGE}` (or `{BATCH}`) stands, so `{written}` would be one of them; write \
                 the value into the statement"
            ),
        ));
    }
    Ok(statements[0].at)
}

/// The first bound parameter of `tokens` outside strings and comments,
/// where it stands and as written: `$1`, `?` (the tokenizer's
/// placeholders), SQLite's `:name` and `@name`, and on SQL Server a variable (`@P1`, `@name`; not a
/// `@@` function), none of which a one-statement batch declares.
fn bound_parameter(driver: Driver, tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> Option<(Position, String)> {
    use sqlparser::tokenizer::Token;
    tokens.iter().enumerate().find_map(|(i, token)| {
        let written = match (&token.token, tokens.get(i + 1).map(|next| &next.token)) {
            (Token::Placeholder(written), _) => written.clone(),
            // SQLite's `:name` and `@name`, read as a sign and a word.
            (Token::Colon | Token::AtSign, Some(Token::Word(word))) if driver == Driver::Sqlite => {
                format!("{}{}", token.token, word.value)
            }
            (Token::Word(word), _)
                if driver == Driver::SqlServer
                    && word.quote_style.is_none()
                    && word.value.starts_with('@')
                    && !word.value.starts_with("@@") =>
            {
                word.value.clone()
            }
            _ => return None,
        };
        Some((Position { line: token.span.start.line, column: token.span.start.column }, written))
    })
}

/// Whether the statement holds the placeholder its form needs (`{range}`
/// with table= and key=, `{batch}` without) and not the other's; else
/// where, and why.
fn placeholders(
    form: &Form,
    ranges: &[placeholder::Found],
    limits: &[placeholder::Found],
    statement_at: Position,
) -> Result<(), (Position, String)> {
    match form {
        Form::Ranged { .. } => {
            if let Some(limit) = limits.first() {
                return Err((
                    limit.at,
                    format!(
                        "`{BATCH}` belongs to a backfill without table= and key=; this one runs ranges of keys: \
                         write `{RANGE}` where the range's condition goes"
                    ),
                ));
            }
            if ranges.is_empty() {
                return Err((
                    statement_at,
                    format!(
                        "a backfill with table= and key= needs `{RANGE}` in its statement, where each batch's \
                         range of keys goes (`… where {RANGE}`)"
                    ),
                ));
            }
        }
        Form::Repeated => {
            if let Some(range) = ranges.first() {
                return Err((
                    range.at,
                    format!("`{RANGE}` needs the table and its key: add table= and key= to the directive"),
                ));
            }
            if limits.is_empty() {
                return Err((
                    statement_at,
                    format!(
                        "a backfill without table= and key= runs its statement until it changes no row, each run \
                         limited to a batch: it needs `{BATCH}` where the limit goes (`… limit {BATCH}`)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A `strata:backfill` directive found in the leading comments.
struct Found {
    /// Where the comment holding it starts.
    at: Position,
    /// The directive as written.
    written: String,
    /// The words after it on its line, up to the next `strata:` word.
    options: Vec<String>,
}

/// The one `strata:backfill` directive of `comments`, if any; two are
/// refused. The directive is found wherever [`statements::directives`]
/// finds it (a word, or a part of a word between `=`, in any letter
/// case), so a file that is a backfill to one is one to the other; glued to
/// another word by `=`, it is refused.
fn find_directive(file: &str, comments: &[(Position, String)]) -> Result<Option<Found>, StatementError> {
    let mut found: Option<Found> = None;
    for (at, comment) in comments {
        for line in comment.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            for (i, word) in words.iter().enumerate() {
                if !word.split('=').any(|part| part.eq_ignore_ascii_case(BACKFILL_DIRECTIVE)) {
                    continue;
                }
                let bad = |reason: String| StatementError::BadDirective {
                    file: file.to_string(),
                    at: *at,
                    directive: BACKFILL_DIRECTIVE.to_string(),
                    reason,
                };
                if found.is_some() {
                    return Err(bad("given twice; a file is one backfill".into()));
                }
                if word.contains('=') {
                    return Err(bad(format!(
                        "`{word}`: the directive is a word of its own, its options follow it after a space, each \
                         name=value ({OPTIONS})"
                    )));
                }
                let options = words[i + 1..]
                    .iter()
                    .take_while(|w| !w.to_ascii_lowercase().starts_with("strata:"))
                    .map(|w| w.to_string())
                    .collect();
                found = Some(Found { at: *at, written: word.to_string(), options });
            }
        }
    }
    Ok(found)
}

/// The spec the option words give.
fn options(words: &[String]) -> Result<Spec, String> {
    let (mut table, mut key, mut batch) = (None, None, None);
    for word in words {
        let Some((name, value)) = word.split_once('=') else {
            return Err(format!("`{word}` is not an option: options are written name=value ({OPTIONS})"));
        };
        let slot = match name.to_ascii_lowercase().as_str() {
            "table" => &mut table,
            "key" => &mut key,
            "batch" => &mut batch,
            _ => return Err(format!("unknown option `{name}` (known: {OPTIONS})")),
        };
        if slot.is_some() {
            return Err(format!("option `{name}` given twice"));
        }
        if value.is_empty() {
            return Err(format!("option `{name}` has no value"));
        }
        *slot = Some(value);
    }
    let batch = match batch {
        None => DEFAULT_BATCH,
        Some(text) => Some(text)
            .filter(|text| text.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|text| text.parse::<u32>().ok())
            .filter(|n| (1..=MAX_BATCH).contains(n))
            .ok_or_else(|| format!("batch={text}: not a batch size (a whole number from 1 to {MAX_BATCH})"))?,
    };
    let form = match (table, key) {
        (None, None) => Form::Repeated,
        (Some(table), Some(key)) => {
            check_name(table).map_err(|reason| format!("table={table}: {reason}"))?;
            let columns: Vec<String> = key.split(',').map(str::to_string).collect();
            for (i, column) in columns.iter().enumerate() {
                if column.is_empty() {
                    return Err(format!("key={key}: a column name is empty"));
                }
                check_name(column).map_err(|reason| format!("key={key}: {column}: {reason}"))?;
                if columns[..i].contains(column) {
                    return Err(format!("key={key}: column {column} is named twice"));
                }
            }
            Form::Ranged { table: table.to_string(), key: columns }
        }
        (Some(_), None) => return Err("table= needs key= (the columns that order the table's rows)".into()),
        (None, Some(_)) => return Err("key= needs table= (the table whose keys are ranged)".into()),
    };
    Ok(Spec { form, batch })
}

/// Whether `name` (a table or a key column) may be written into a
/// statement as it is: a name, possibly dotted and quoted (`"…"`, `` `…` ``,
/// `[…]`), never anything that could end or change the statement.
fn check_name(name: &str) -> Result<(), String> {
    let mut quote: Option<char> = None;
    let mut previous = '\0';
    for c in name.chars() {
        if c.is_whitespace() || c.is_control() {
            return Err("a name holds no whitespace".into());
        }
        if c == ';' {
            return Err("a name holds no `;`".into());
        }
        match quote {
            Some(close) if c == close => quote = None,
            Some(_) => {}
            None => match c {
                '"' => quote = Some('"'),
                '`' => quote = Some('`'),
                '[' => quote = Some(']'),
                '(' | ')' => return Err("a name holds no parentheses".into()),
                '\'' => return Err("a name is not a string: quote it with `\"`".into()),
                '-' if previous == '-' => return Err("a name holds no comment (`--`)".into()),
                '*' if previous == '/' => return Err("a name holds no comment (`/*`)".into()),
                ',' => return Err("a name holds no `,`".into()),
                _ => {}
            },
        }
        previous = c;
    }
    match quote {
        Some(close) => Err(format!("a quote is left open (no closing {close})")),
        None => Ok(()),
    }
}

/// The refusal of a backfill under `transactionScope: version`, where the
/// whole version runs in one transaction: a backfill commits batch by
/// batch. Positioned at the file's start.
pub fn in_one_transaction(file: &str) -> StatementError {
    StatementError::BadDirective {
        file: file.to_string(),
        at: Position { line: 1, column: 1 },
        directive: BACKFILL_DIRECTIVE.to_string(),
        reason: "a backfill commits each batch on its own, so it cannot run under `transactionScope: version` \
                 (the whole version in one transaction); run it under `transactionScope: schema`"
            .into(),
    }
}

#[cfg(test)]
mod tests;
