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
    use super::split_go_batches;

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
