//! Atlas's versioned migration directories (`atlas migrate`), read as
//! Atlas reads them.
//!
//! - The `.sql` files run in file-name order (byte-wise); the version is
//!   the name up to its first `_`.
//! - `atlas.sum` is the directory's integrity file: a running SHA-256 over
//!   each file's name and bytes in that order (one line per file, the
//!   digest after it), and a first line that sums the lines. A directory
//!   without it, or whose files are not the ones it sums — a file added,
//!   edited or removed since it was written, the way a change gets past
//!   its review — is refused before anything runs, naming the first file
//!   that differs, as Atlas refuses it. A file whose first line says
//!   `atlas:sum ignore` has only its name summed.
//! - File directives are the comment lines that open a file, followed by
//!   a blank line: `-- atlas:txmode none` runs the file outside any
//!   transaction (`file`, the default, in one; `all` is a command-line
//!   mode Atlas refuses in a file, and so does Strata).
//! - `-- atlas:delimiter X` as a file's first line cuts its statements at
//!   `X` (`\n`, `\r`, `\t` written escaped) instead of `;`: the forward text
//!   has the line blanked and each delimiter made a `;` on the same lines
//!   (`\nGO` left as it is: SQL Server's files are cut at `GO` lines).
//! - `-- atlas:checkpoint`: a snapshot of the schema that Atlas runs only
//!   on a database with nothing applied (the files before it skipped), and
//!   skips everywhere else. As the directory's first file it is an
//!   ordinary one; after others it is refused, naming it — run as a file
//!   it would create what the files before it created.

use base64ct::{Base64, Encoding};
use sha2::{Digest, Sha256};

use super::{FormatError, Input, Part, Read, SortKey, foreign, is_sql_name, text_of};
use crate::migrate::format::Format;

/// The integrity file's name.
pub const SUM_FILE: &str = "atlas.sum";

/// Reads an Atlas directory's files (the `.sql` files and `atlas.sum`).
pub(super) fn read_atlas(directory: &str, files: &[&Input<'_>]) -> Result<Vec<Read>, FormatError> {
    check_sum(directory, files)?;
    let sql: Vec<&Input<'_>> = files.iter().copied().filter(|f| is_sql_name(f.name)).collect();
    let mut reads = Vec::with_capacity(sql.len());
    for (position, file) in sql.iter().enumerate() {
        let text = text_of(directory, file)?;
        foreign(directory, file.name, text, Format::Atlas)?;
        let path = format!("{directory}/{}", file.name);
        let directives = file_directives(text);
        let mut no_transaction = false;
        let txmodes: Vec<&(String, String)> = directives.iter().filter(|(name, _)| name == "txmode").collect();
        match txmodes.as_slice() {
            [] => {}
            [(_, mode)] => match mode.as_str() {
                "none" => no_transaction = true,
                "file" => {}
                "all" => {
                    return Err(section(&path, "txmode \"all\" is not allowed in a file directive (use \"file\")"));
                }
                other => return Err(section(&path, &format!("unknown txmode {other:?}"))),
            },
            _ => return Err(section(&path, "more than one txmode directive")),
        }
        if position > 0 && directives.iter().any(|(name, _)| name == "checkpoint") {
            return Err(section(
                &path,
                "an Atlas checkpoint, which Atlas runs only on a database with nothing applied and skips \
                 elsewhere; Strata does not read checkpoints after other files: remove it (the files before it \
                 build the same schema), or the files before it",
            ));
        }
        let forward = match first_line_delimiter(text) {
            Some(Ok(delimiter)) => {
                let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
                let blanked = if first.ends_with('\r') { "\r\n" } else { "\n" };
                // SQL Server's `GO`: its files are cut at `GO` lines already.
                if delimiter.trim().eq_ignore_ascii_case("go") {
                    format!("{blanked}{rest}")
                } else {
                    format!("{blanked}{}", crate::migrate::statements::to_semicolons(rest, &delimiter))
                }
            }
            Some(Err(message)) => return Err(section(&path, message)),
            None => text.to_string(),
        };
        reads.push(Read {
            name: file.name.to_string(),
            bytes: file.bytes.to_vec(),
            forward: Part { file: path, text: forward, no_transaction },
            down: None,
            order: SortKey::Name,
            repeatable: false,
        });
    }
    Ok(reads)
}

fn section(file: &str, message: &str) -> FormatError {
    FormatError::Section { file: file.to_string(), line: 1, message: message.to_string() }
}

/// An `atlas:NAME ARGS` directive in one line: the name and its
/// arguments (the text after the blanks that follow the name).
fn directive(line: &str) -> Option<(String, String)> {
    let first_line = line.split('\n').next().unwrap_or(line);
    if !first_line.bytes().all(|b| (b' '..=b'~').contains(&b) || b == b'\r') {
        return None;
    }
    let at = first_line.rfind("atlas:")?;
    let after = &first_line[at + "atlas:".len()..];
    let name_end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
    if name_end == 0 {
        return None;
    }
    let rest = &after[name_end..];
    let args = if rest.starts_with(' ') { rest.trim_start_matches(' ').trim_end_matches('\r') } else { "" };
    Some((after[..name_end].to_string(), args.to_string()))
}

/// The file's directives: the comment lines (`--`, `#`) that open it,
/// when a blank line (or nothing) follows them.
fn file_directives(text: &str) -> Vec<(String, String)> {
    let mut comments = Vec::new();
    let mut rest = text;
    while rest.starts_with('#') || rest.starts_with("--") {
        match rest.split_once('\n') {
            Some((line, after)) => {
                comments.push(line.trim());
                rest = after;
            }
            None => {
                comments.push(rest);
                rest = "";
            }
        }
    }
    if !rest.is_empty() && !rest.trim_start_matches([' ', '\t']).starts_with(['\n', '\r']) {
        return Vec::new();
    }
    comments.into_iter().filter_map(directive).collect()
}

/// The delimiter the first line sets (`-- atlas:delimiter X`), unescaped;
/// `Err` when it sets none that can be used.
fn first_line_delimiter(text: &str) -> Option<Result<String, &'static str>> {
    let first = text.split('\n').next().unwrap_or(text);
    let (name, args) = directive(first)?;
    if name != "delimiter" || !first.starts_with("-- atlas:") {
        return None;
    }
    if args.is_empty() {
        return Some(Err("an empty delimiter"));
    }
    if !text.contains('\n') {
        return Some(Err("nothing after the delimiter directive"));
    }
    Some(Ok(args.replace("\\n", "\n").replace("\\r", "\r").replace("\\t", "\t")))
}

/// Whether a file's first line says `atlas:sum ignore`.
fn sum_ignored(bytes: &[u8]) -> bool {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or(bytes);
    std::str::from_utf8(first).ok().and_then(directive).is_some_and(|(name, args)| name == "sum" && args == "ignore")
}

/// What `atlas.sum` holds for `files` (the directory's files, in any
/// order; its `.sql` files are summed): each file's running digest, then the first line summing
/// them — what `strata new` writes after adding a file.
pub fn sum_text(files: &[Input<'_>]) -> String {
    let entries = entries(files);
    let mut text = format!("h1:{}\n", total(&entries));
    for (name, digest) in &entries {
        text.push_str(&format!("{name} h1:{digest}\n"));
    }
    text
}

/// Each `.sql` file's name and running digest, in name order.
fn entries(files: &[Input<'_>]) -> Vec<(String, String)> {
    let mut sorted: Vec<&Input<'_>> = files.iter().filter(|f| is_sql_name(f.name)).collect();
    sorted.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let mut running = Sha256::new();
    let mut out = Vec::with_capacity(sorted.len());
    for file in sorted {
        running.update(file.name.as_bytes());
        if sum_ignored(file.bytes) {
            continue;
        }
        running.update(file.bytes);
        out.push((file.name.to_string(), Base64::encode_string(&running.clone().finalize())));
    }
    out
}

/// The first line's sum over `entries`.
fn total(entries: &[(String, String)]) -> String {
    let mut digest = Sha256::new();
    for (name, hash) in entries {
        digest.update(name.as_bytes());
        digest.update(hash.as_bytes());
    }
    Base64::encode_string(&digest.finalize())
}

/// Refuses a directory (`files`: the ones its format does not ignore)
/// whose `.sql` files are not the ones its `atlas.sum` sums (or that has
/// none), naming the first file that differs.
pub fn check_sum(directory: &str, files: &[&Input<'_>]) -> Result<(), FormatError> {
    let sum = files.iter().find(|f| f.name == SUM_FILE).map(|f| f.bytes);
    let file = format!("{directory}/{SUM_FILE}");
    let refused = |message: String| FormatError::AtlasSum { file: file.clone(), message };
    let Some(sum) = sum else {
        return Err(refused(
            "missing: an Atlas directory is summed by it (write it with `strata hash` once its files are \
             reviewed, or name another format with migrationFormats)"
                .to_string(),
        ));
    };
    let text = String::from_utf8_lossy(sum);
    let mut lines = text.lines();
    let Some(header) = lines.next().and_then(|line| line.strip_prefix("h1:")) else {
        return Err(refused("its first line is not the directory's sum (h1:…)".to_string()));
    };
    let mut listed = Vec::new();
    for (i, line) in lines.enumerate() {
        let Some((name, digest)) = line.split_once("h1:") else {
            return Err(refused(format!("line {} is not `<file> h1:<sum>`", i + 2)));
        };
        listed.push((name.trim().to_string(), digest.to_string()));
    }
    if total(&listed) != header {
        return Err(refused("its sum does not match its lines: it was edited by hand".to_string()));
    }
    let inputs: Vec<Input<'_>> = files.iter().map(|f| **f).collect();
    let computed = entries(&inputs);
    let changed = |name: &str, how: &str| {
        refused(format!(
            "{directory}/{name} {how} since it was written: review the change, then write it again \
             (`strata hash`, or `atlas migrate hash`)"
        ))
    };
    if let Some((name, _)) = listed.iter().find(|(name, _)| !computed.iter().any(|(n, _)| n == name)) {
        return Err(changed(name, "was removed"));
    }
    for (name, digest) in &computed {
        match listed.iter().find(|(n, _)| n == name) {
            None => return Err(changed(name, "was added")),
            Some((_, listed)) if listed != digest => return Err(changed(name, "(or a file before it) was edited")),
            Some(_) => {}
        }
    }
    Ok(())
}
