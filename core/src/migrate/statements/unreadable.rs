//! Text the tokenizer cannot read, read as far as it can be: a file is
//! never run unjudged because of one literal the tokenizer failed on.
//!
//! - **PostgreSQL's escape strings** (`E'…'`) that the engine takes and the
//!   tokenizer cannot decode (a byte such as `\xC3`, an octal `\400`, a
//!   surrogate pair `\uD83D\uDE00`) are read as blanks of their length:
//!   the engine's own rules find where each ends (`\` escapes the next
//!   character, `''` is a quote), every position stays the text's, and
//!   nothing inside one is a statement.
//! - **Anything else** (an unterminated string, comment or quoted name)
//!   is read up to the token that failed: the statements before it are
//!   judged as any others, as SQLite and SQL Server run them before they
//!   reach the part they cannot read. When not even that can be found
//!   ([`MAX_REREADS`]), a word that controls transactions anywhere in the
//!   text refuses it ([`control_word`]): what cannot be read cannot be
//!   shown to be inside a string or a comment.

use sqlparser::tokenizer::{Location, TokenWithSpan, TokenizerError};

use super::{Offsets, Position, tokenize};
use crate::migrate::driver::Driver;

/// sqlparser's error for an escape string it cannot decode.
const UNDECODED_ESCAPE_STRING: &str = "Unterminated encoded string literal";

/// Most times a text is read again (an escape string blanked, or the text
/// cut before a failing token): each reading is linear in the text.
const MAX_REREADS: usize = 64;

/// The tokens of `contents` as `driver`'s engine reads them, PostgreSQL's
/// escape strings the tokenizer cannot decode read as blanks (positions
/// are the text's). `Err` where the text cannot be read otherwise.
pub(crate) fn tokenize_whole(driver: Driver, contents: &str) -> Result<Vec<TokenWithSpan>, TokenizerError> {
    let mut blanked: Option<String> = None;
    for _ in 0..MAX_REREADS {
        let text = blanked.as_deref().unwrap_or(contents);
        match tokenize(driver, text) {
            Err(error) if driver == Driver::Postgres && error.message == UNDECODED_ESCAPE_STRING => {
                match blank_escape_string(text, error.location) {
                    Some(next) => blanked = Some(next),
                    None => return Err(error),
                }
            }
            read => return read,
        }
    }
    tokenize(driver, blanked.as_deref().unwrap_or(contents))
}

/// `text` with the escape string starting at `at` (its `E`) blanked: its
/// characters between the quotes spaces, its line breaks kept. `None` when
/// no escape string starts there or it does not end (the engine refuses
/// such text whole).
fn blank_escape_string(text: &str, at: Location) -> Option<String> {
    let start = Offsets::new(text).byte(Position { line: at.line, column: at.column });
    let rest = &text[start..];
    let mut chars = rest.char_indices();
    if !matches!((chars.next(), chars.next()), (Some((_, 'E' | 'e')), Some((_, '\'')))) {
        return None;
    }
    let mut end = None;
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' if rest[i + 1..].starts_with('\'') => {
                chars.next();
            }
            '\'' => {
                end = Some(i);
                break;
            }
            _ => {}
        }
    }
    let end = end?;
    let body: String = rest[2..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
    Some(format!("{}{body}{}", &text[..start + 2], &rest[end..]))
}

/// The tokens of `contents` before the token the tokenizer failed on
/// (`error`), read as [`tokenize_whole`] reads; `None` when no such part
/// can be found.
pub(crate) fn tokens_before(driver: Driver, contents: &str, error: &TokenizerError) -> Option<Vec<TokenWithSpan>> {
    let offsets = Offsets::new(contents);
    let mut end = contents.len();
    let mut location = error.location;
    for _ in 0..MAX_REREADS {
        let at = offsets.byte(Position { line: location.line, column: location.column });
        if at >= end {
            return None;
        }
        end = at;
        match tokenize_whole(driver, &contents[..end]) {
            Ok(tokens) => return Some(tokens),
            Err(error) => location = error.location,
        }
    }
    None
}

/// The first word of `contents` that controls transactions on `driver`
/// (`COMMIT`, `ROLLBACK`, `END`, `BEGIN`, `ABORT`, `START`, `PREPARE`,
/// `SAVE`), upper-cased, and where it is: looked for in the raw text,
/// strings and comments included.
pub(crate) fn control_word(driver: Driver, contents: &str) -> Option<(Position, String)> {
    let words: &[&str] = match driver {
        Driver::Postgres => &["COMMIT", "ROLLBACK", "END", "BEGIN", "ABORT", "START", "PREPARE"],
        Driver::Sqlite => &["COMMIT", "ROLLBACK", "END", "BEGIN"],
        Driver::SqlServer => &["COMMIT", "ROLLBACK", "SAVE"],
        Driver::Mysql => &[],
    };
    for (index, line) in contents.lines().enumerate() {
        let mut column = 1u64;
        for piece in line.split_inclusive(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
            let word = piece.trim_end_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'));
            let upper = word.to_ascii_uppercase();
            if words.contains(&upper.as_str()) {
                return Some((Position { line: index as u64 + 1, column }, upper));
            }
            column += piece.chars().count() as u64;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escape_string_the_tokenizer_cannot_decode_is_read_as_blanks_where_the_engine_ends_it() {
        let text = "create table t (s text default E'\\uD83D\\uDE00');\ncommit;";
        assert!(tokenize(Driver::Postgres, text).is_err());
        let tokens = tokenize_whole(Driver::Postgres, text).unwrap();
        let words: Vec<String> = tokens.iter().map(|t| t.token.to_string()).filter(|t| t == "commit").collect();
        assert_eq!(words, ["commit"]);
        let commit = tokens.iter().find(|t| t.token.to_string() == "commit").unwrap();
        assert_eq!((commit.span.start.line, commit.span.start.column), (2, 1));
        // `\'` and `''` do not end it; the engine's end is the reader's.
        let quoted = "select E'\\xC3\\'; commit; '' \\\\', 1;";
        let tokens = tokenize_whole(Driver::Postgres, quoted).unwrap();
        assert!(!tokens.iter().any(|t| t.token.to_string().eq_ignore_ascii_case("commit")), "{tokens:?}");
        // Unterminated: the engine refuses it whole.
        assert!(tokenize_whole(Driver::Postgres, "select E'\\xC3 ;").is_err());
    }

    #[test]
    fn the_text_before_what_cannot_be_read_is_read() {
        let text = "create table a (x int);\ncommit;\nselect 'unterminated";
        let error = tokenize(Driver::Sqlite, text).unwrap_err();
        let tokens = tokens_before(Driver::Sqlite, text, &error).unwrap();
        assert!(tokens.iter().any(|t| t.token.to_string() == "commit"));
        assert!(!tokens.iter().any(|t| t.token.to_string().contains("unterminated")));
    }

    #[test]
    fn a_control_word_is_found_anywhere_with_its_position() {
        assert_eq!(
            control_word(Driver::Postgres, "select 1;\n  x.Commit;"),
            Some((Position { line: 2, column: 5 }, "COMMIT".into()))
        );
        assert_eq!(control_word(Driver::Postgres, "select committed, end_at from t;"), None);
        assert_eq!(control_word(Driver::Mysql, "commit;"), None);
    }
}
