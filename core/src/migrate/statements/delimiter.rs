//! MySQL's `DELIMITER` command, as the `mysql` client reads it (mysqldump's
//! routines, Flyway's MySQL migrations): a line `DELIMITER $$` makes `$$`
//! end statements until the next such line, so that a routine's body can
//! hold `;`. The server knows no such command, so the service cuts such a
//! file itself, leaving the command lines out.
//!
//! Between two command lines the file is cut as the client cuts it: at the
//! delimiter where it stands outside strings, quoted names and comments,
//! scanning characters — a delimiter may end a word (`END$$`), which no
//! SQL tokenizer splits. Text under `DELIMITER ;` is cut by the tokenizer,
//! as a file without the command is ([`super::split`]).

use std::ops::Range;

/// Whether a line of `text` is a `DELIMITER` command: most files have none,
/// and are cut as they always were.
pub(super) fn has_command(text: &str) -> bool {
    text.lines().any(|line| command(line).is_some())
}

/// The delimiter a line sets (`DELIMITER $$`, in any case), if it is a
/// command line.
fn command(line: &str) -> Option<&str> {
    let (word, rest) = line.trim().split_once(char::is_whitespace)?;
    let delimiter = rest.trim();
    let one_word = !delimiter.is_empty() && !delimiter.contains(char::is_whitespace);
    (word.eq_ignore_ascii_case("delimiter") && one_word).then_some(delimiter)
}

/// The statements of `text` as byte ranges, the command lines left out:
/// regions under `;` cut by `cut_plain` (the tokenizer's cut, given the
/// region's text; `None` when it cannot read it), the others at their
/// delimiter. A command counts only where a statement may start.
pub(super) fn split(text: &str, cut_plain: impl Fn(&str) -> Option<Vec<Range<usize>>>) -> Option<Vec<Range<usize>>> {
    let mut out = Vec::new();
    let mut delimiter = ";".to_string();
    let mut region = 0;
    let mut scan = Scan::default();
    let mut at = 0;
    while at < text.len() {
        let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n + 1);
        let line = &text[at..line_end];
        if scan.between_statements()
            && let Some(next) = command(line)
        {
            region_statements(&text[region..at], region, &delimiter, &cut_plain, &mut out)?;
            delimiter = next.to_string();
            region = line_end;
            scan = Scan::default();
        } else {
            scan.read(line, &delimiter, |_| {});
        }
        at = line_end;
    }
    region_statements(&text[region..], region, &delimiter, &cut_plain, &mut out)?;
    Some(out)
}

/// The statements of one region (`text`, from byte `offset` of the file)
/// under `delimiter`, appended to `out`.
fn region_statements(
    text: &str,
    offset: usize,
    delimiter: &str,
    cut_plain: &impl Fn(&str) -> Option<Vec<Range<usize>>>,
    out: &mut Vec<Range<usize>>,
) -> Option<()> {
    let ranges = if delimiter == ";" { cut_plain(text)? } else { cut(text, delimiter) };
    out.extend(ranges.into_iter().map(|range| range.start + offset..range.end + offset));
    Some(())
}

/// `text` cut at `delimiter` outside strings, quoted names and comments;
/// each piece without its delimiter and the blanks around it, pieces of
/// nothing but comments left out.
fn cut(text: &str, delimiter: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut scan = Scan::default();
    let mut start: Option<usize> = None;
    let mut end = 0;
    scan.read(text, delimiter, |piece| match piece {
        Piece::Content(range) => {
            start.get_or_insert(range.start);
            end = range.end;
        }
        Piece::Delimiter(_) => out.extend(start.take().map(|start| start..end)),
    });
    out.extend(start.map(|start| start..end));
    out
}

/// `text` with each `delimiter` that stands outside strings, quoted names
/// and comments made a `;` — none where the statement before it ends with
/// one already — and the delimiter's line ends kept, so every statement
/// is on the lines it was: a file cut at a delimiter of its own (Atlas's
/// `-- atlas:delimiter`) as plain statements every engine cuts at `;`.
pub(crate) fn to_semicolons(text: &str, delimiter: &str) -> String {
    let mut at_delimiters = Vec::new();
    // Per delimiter: whether the statement before it ends with a `;`.
    let mut ended = Vec::new();
    let mut last_content = None;
    Scan::default().read(text, delimiter, |piece| match piece {
        Piece::Content(range) => last_content = Some(range.start),
        Piece::Delimiter(at) => {
            at_delimiters.push(at);
            ended.push(last_content.is_none_or(|start| text[start..].starts_with(';')));
            last_content = None;
        }
    });
    let line_ends = delimiter.matches('\n').count();
    let mut out = String::with_capacity(text.len() + at_delimiters.len());
    let mut from = 0;
    for (at, ended) in at_delimiters.into_iter().zip(ended) {
        out.push_str(&text[from..at]);
        if !ended {
            out.push(';');
        }
        out.extend(std::iter::repeat_n('\n', line_ends));
        from = at + delimiter.len();
    }
    out.push_str(&text[from..]);
    out
}

/// What [`Scan::read`] finds.
enum Piece {
    /// A character of a statement, at these bytes.
    Content(Range<usize>),
    /// The delimiter, in plain text, at this byte.
    Delimiter(usize),
}

/// Where a character stands: in a string or quoted name, in a comment, or
/// in plain text.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Place {
    #[default]
    Plain,
    /// In a string or name opened by this quote (`'`, `"`, `` ` ``).
    Quoted(char),
    /// After a backslash in a string: the next character is taken as is.
    Escaped(char),
    /// In a `-- ` or `#` comment, to the end of the line.
    LineComment,
    /// In a `/* */` comment (not an executable `/*!`); `true` once a `*`
    /// was seen.
    BlockComment(bool),
}

/// The client's reading of a text, character by character.
#[derive(Debug, Default)]
struct Scan {
    place: Place,
    /// A character of a statement was read since the last delimiter.
    started: bool,
    /// Characters of a comment's opener still to pass.
    skip: usize,
}

impl Scan {
    /// Whether a command line may come: no statement under way, outside
    /// any string or block comment.
    fn between_statements(&self) -> bool {
        !self.started && matches!(self.place, Place::Plain | Place::LineComment)
    }

    /// Reads `text` under `delimiter`, telling `found` each statement's
    /// character and each delimiter in plain text.
    fn read(&mut self, text: &str, delimiter: &str, mut found: impl FnMut(Piece)) {
        let mut chars = text.char_indices();
        while let Some((at, c)) = chars.next() {
            if self.place == Place::Plain && self.skip == 0 && text[at..].starts_with(delimiter) {
                self.started = false;
                found(Piece::Delimiter(at));
                // Past the delimiter's other characters.
                for _ in 1..delimiter.chars().count() {
                    chars.next();
                }
                continue;
            }
            if self.step(c, &text[at..]) {
                self.started = true;
                found(Piece::Content(at..at + c.len_utf8()));
            }
        }
    }

    /// Reads `c` (`rest`: the text from it on); whether it is part of a
    /// statement.
    fn step(&mut self, c: char, rest: &str) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        match self.place {
            Place::Quoted(quote) => {
                if c == quote {
                    self.place = Place::Plain;
                } else if c == '\\' && quote != '`' {
                    self.place = Place::Escaped(quote);
                }
                true
            }
            Place::Escaped(quote) => {
                self.place = Place::Quoted(quote);
                true
            }
            Place::LineComment => {
                if c == '\n' {
                    self.place = Place::Plain;
                }
                false
            }
            Place::BlockComment(star) => {
                self.place = if star && c == '/' { Place::Plain } else { Place::BlockComment(c == '*') };
                false
            }
            Place::Plain => match c {
                // `-- ` needs a blank (or the end) after it, as the client has it.
                '-' if rest.starts_with("--") && rest[2..].chars().next().is_none_or(char::is_whitespace) => {
                    self.place = Place::LineComment;
                    self.skip = 1;
                    false
                }
                '/' if rest.starts_with("/*") && !rest.starts_with("/*!") => {
                    self.place = Place::BlockComment(false);
                    self.skip = 1;
                    false
                }
                '#' => {
                    self.place = Place::LineComment;
                    false
                }
                '\'' | '"' | '`' => {
                    self.place = Place::Quoted(c);
                    true
                }
                c => !c.is_whitespace(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces of `text`, each as its text; regions under `;` cut at
    /// every `;` (enough here: the tokenizer's cut is tested with `split`).
    fn pieces(text: &str) -> Vec<&str> {
        let plain = |region: &str| Some(cut(region, ";"));
        split(text, plain).unwrap().into_iter().map(|range| &text[range]).collect()
    }

    #[test]
    fn a_command_line_sets_the_delimiter_until_the_next_and_is_left_out() {
        let text = "create table t (id int);\nDELIMITER $$\ncreate procedure p()\nbegin\n  select 1;\n  select 2;\nend$$\n\
                    delimiter ;\ninsert into t values (1);\n";
        assert_eq!(
            pieces(text),
            [
                "create table t (id int)",
                "create procedure p()\nbegin\n  select 1;\n  select 2;\nend",
                "insert into t values (1)"
            ]
        );
    }

    #[test]
    fn mysqldumps_routines_under_two_semicolons_are_one_statement_each() {
        let text = "/*!50003 SET @saved_sql_mode = @@sql_mode */ ;\nDELIMITER ;;\n\
                    CREATE DEFINER=`root`@`%` FUNCTION `f`(x int) RETURNS int\nBEGIN\n  RETURN x + 1;\nEND ;;\n\
                    CREATE TRIGGER `tr` BEFORE INSERT ON `t` FOR EACH ROW SET NEW.id = NEW.id ;;\nDELIMITER ;\n\
                    /*!50003 SET sql_mode = @saved_sql_mode */ ;\n";
        assert_eq!(
            pieces(text),
            [
                "/*!50003 SET @saved_sql_mode = @@sql_mode */",
                "CREATE DEFINER=`root`@`%` FUNCTION `f`(x int) RETURNS int\nBEGIN\n  RETURN x + 1;\nEND",
                "CREATE TRIGGER `tr` BEFORE INSERT ON `t` FOR EACH ROW SET NEW.id = NEW.id",
                "/*!50003 SET sql_mode = @saved_sql_mode */"
            ]
        );
    }

    #[test]
    fn the_delimiter_in_strings_names_and_comments_cuts_nothing() {
        let text = "DELIMITER //\nselect '//', \"a//b\", `x//y`, 'it\\'s // here' -- not // here\n/* nor // */ from t//\n\
                    # a comment // alone\n//\nselect 2//";
        assert_eq!(
            pieces(text),
            ["select '//', \"a//b\", `x//y`, 'it\\'s // here' -- not // here\n/* nor // */ from t", "select 2"]
        );
    }

    #[test]
    fn delimiter_inside_a_statement_or_a_string_is_not_a_command() {
        // Under `;` a statement runs on to its `;`: its next line is its own.
        let text = "select 1,\ndelimiter\n;\nselect 'a\nDELIMITER $$\nb';\n";
        assert!(!has_command("select 1;\n  delimiter\n"));
        assert_eq!(pieces(text), ["select 1,\ndelimiter", "select 'a\nDELIMITER $$\nb'"]);
        assert!(has_command("delimiter $$\n"));
        assert_eq!(command("  DELIMITER   ;;  \n"), Some(";;"));
        assert_eq!(command("delimiter"), None);
        assert_eq!(command("delimiter a b"), None);
    }

    #[test]
    fn a_delimiter_of_its_own_becomes_a_semicolon_on_the_same_lines() {
        let text = "create procedure p() begin select 1; end\n-- end\ncreate table t (a int)\n-- end\n";
        assert_eq!(
            to_semicolons(text, "-- end"),
            "create procedure p() begin select 1; end\n;\ncreate table t (a int)\n;\n"
        );
        // A blank line between statements; the one ending with `;` gets none.
        let text = "create table a (x int);\n\ncreate table b (x text default '\n\n')\n\nselect 1";
        assert_eq!(
            to_semicolons(text, "\n\n"),
            "create table a (x int);\n\ncreate table b (x text default '\n\n');\n\nselect 1"
        );
        // In strings and comments, it cuts nothing.
        let text = "select '//' // /* // */ select 2 //";
        assert_eq!(to_semicolons(text, "//"), "select '//' ; /* // */ select 2 ;");
    }
}
