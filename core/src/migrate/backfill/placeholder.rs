//! Where a backfill's placeholders (`{range}`, `{batch}`) stand in its
//! text, read with the same tokenizer as [`crate::migrate::statements`]: a
//! placeholder inside a string, a quoted name, a dollar quote or a comment
//! is text, not a placeholder.

use std::ops::Range;

use sqlparser::tokenizer::Token;

use crate::migrate::driver::Driver;
use crate::migrate::statements::{self, Offsets, Position};

/// Where the range's condition goes, in a ranged backfill's statement.
pub(crate) const RANGE: &str = "{range}";
/// Where the batch's limit goes, in a repeated backfill's statement.
pub(crate) const BATCH: &str = "{batch}";

/// `text` as the tokenizer reads it: on SQL Server its `GO` lines blanked
/// (a client's separator, not T-SQL), every other byte in place.
pub(crate) fn readable(driver: Driver, text: &str) -> std::borrow::Cow<'_, str> {
    match driver {
        Driver::SqlServer => crate::migrate::batches::go_lines_blanked(text),
        _ => std::borrow::Cow::Borrowed(text),
    }
}

/// One placeholder found: its bytes in the text and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Its bytes in the text.
    pub(crate) bytes: Range<usize>,
    /// Where it starts (line and column).
    pub(crate) at: Position,
}

/// Every `placeholder` of `text` outside strings, quoted names and
/// comments, in order; `None` when the tokenizer cannot read the text.
pub(crate) fn find(driver: Driver, text: &str, placeholder: &str) -> Option<Vec<Found>> {
    let tokens = statements::tokenize(driver, &readable(driver, text)).ok()?;
    let offsets = Offsets::new(text);
    Some(
        tokens
            .iter()
            .filter(|token| token.token == Token::LBrace)
            .filter_map(|token| {
                let at = Position { line: token.span.start.line, column: token.span.start.column };
                let start = offsets.byte(at);
                text[start..].starts_with(placeholder).then(|| Found { bytes: start..start + placeholder.len(), at })
            })
            .collect(),
    )
}

/// The statement of `text`: from its first statement's start to its last
/// one's end, without the comments around it and its final `;` (a file's
/// part may be handed over whole) — on SQL Server, without the `GO` lines
/// around it. `text` itself when the tokenizer cannot read it or it holds
/// no statement.
pub(crate) fn statement(driver: Driver, text: &str) -> &str {
    let read = readable(driver, text);
    match statements::split(driver, &read).as_deref() {
        Some([first, .., last]) => &text[first.start..last.end],
        Some([only]) => &text[only.clone()],
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(driver: Driver, text: &str) -> Vec<usize> {
        find(driver, text, RANGE).unwrap().into_iter().map(|f| f.bytes.start).collect()
    }

    #[test]
    fn only_placeholders_outside_strings_names_and_comments_count() {
        let text =
            "update t set note = '{range}', \"{range}\" = 1 where {range} -- {range}\n and {range} /* {range} */";
        assert_eq!(starts(Driver::Postgres, text), [51, 75]);
        assert_eq!(starts(Driver::Postgres, "select $${range}$$ where {range}"), [25]);
        assert_eq!(starts(Driver::Mysql, "update t set a = `{range}` where {range}"), [33]);
        assert_eq!(starts(Driver::Sqlite, "update t set a = [{range}] where {range}"), [33]);
        // Other words in braces and other letter cases are not the placeholder.
        assert_eq!(starts(Driver::Postgres, "where {ranges} or {Range} or { range}"), Vec::<usize>::new());
        let found = find(Driver::Postgres, "select 1\n  where {range}", RANGE).unwrap();
        assert_eq!(found, [Found { bytes: 17..24, at: Position { line: 2, column: 9 } }]);
        assert_eq!(find(Driver::Postgres, "select '{range}", RANGE), None);
    }

    #[test]
    fn the_statement_is_cut_from_its_comments_and_final_semicolon() {
        let file = "-- strata:backfill batch=10\n-- {range} in a comment\nupdate t set a = 1 where {range};\n-- end\n";
        assert_eq!(statement(Driver::Postgres, file), "update t set a = 1 where {range}");
        assert_eq!(statement(Driver::Postgres, "select 1; select 2;"), "select 1; select 2");
        assert_eq!(statement(Driver::Postgres, "-- nothing"), "-- nothing");
        assert_eq!(statement(Driver::Postgres, "select 'open"), "select 'open");
    }
}
