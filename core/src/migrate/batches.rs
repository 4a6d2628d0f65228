//! Splitting SQL Server scripts into batches at `GO` lines, as `sqlcmd`,
//! SSMS and Flyway do: `GO` is a client-side separator, not T-SQL, so a
//! file written for those tools must be cut there before it is sent.
//!
//! A separator is a line holding only `GO` (any case), optionally followed
//! by a `--` comment, with surrounding whitespace. `GO 5` (repeat counts)
//! is not supported and is sent as written. Empty batches are dropped.

/// The batches of `script`, in order.
pub fn split_go_batches(script: &str) -> Vec<&str> {
    let mut batches = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in script.split_inclusive('\n') {
        if is_separator(line) {
            push_batch(&mut batches, &script[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    push_batch(&mut batches, &script[start..]);
    batches
}

/// `script` with each separator line's text replaced by blanks (its line
/// ending kept): every other byte where it was, so positions found in it
/// are positions in `script`. For a script of one batch, read by a
/// tokenizer that does not know `GO`.
pub fn go_lines_blanked(script: &str) -> std::borrow::Cow<'_, str> {
    if !script.split_inclusive('\n').any(is_separator) {
        return std::borrow::Cow::Borrowed(script);
    }
    let mut out = String::with_capacity(script.len());
    for line in script.split_inclusive('\n') {
        match is_separator(line) {
            true => {
                let text = line.trim_end_matches(['\n', '\r']);
                out.extend(std::iter::repeat_n(' ', text.len()));
                out.push_str(&line[text.len()..]);
            }
            false => out.push_str(line),
        }
    }
    std::borrow::Cow::Owned(out)
}

fn is_separator(line: &str) -> bool {
    let code = line.split("--").next().unwrap_or("").trim();
    code.eq_ignore_ascii_case("go")
}

fn push_batch<'a>(batches: &mut Vec<&'a str>, batch: &'a str) {
    if !batch.trim().is_empty() {
        batches.push(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::{go_lines_blanked, split_go_batches};

    #[test]
    fn go_lines_blank_out_in_place() {
        let script = "update t set a = 1\r\n go -- end\r\nGOTO x\nGO";
        assert_eq!(go_lines_blanked(script), "update t set a = 1\r\n          \r\nGOTO x\n  ");
        assert_eq!(go_lines_blanked(script).len(), script.len());
        assert!(matches!(go_lines_blanked("select 1"), std::borrow::Cow::Borrowed("select 1")));
    }

    #[test]
    fn splits_at_go_lines_only() {
        let script =
            "create schema a\nGO\ncreate table a.t (x int)\n  go  -- done\ninsert into a.t values (1) -- go\nGOTO x\n";
        assert_eq!(
            split_go_batches(script),
            ["create schema a\n", "create table a.t (x int)\n", "insert into a.t values (1) -- go\nGOTO x\n"]
        );
    }

    #[test]
    fn no_separator_is_one_batch_and_empty_batches_vanish() {
        assert_eq!(split_go_batches("select 1;\nselect 2;"), ["select 1;\nselect 2;"]);
        assert_eq!(split_go_batches("GO\n\nGO\nselect 1\nGO"), ["select 1\n"]);
        assert!(split_go_batches("").is_empty());
    }
}
