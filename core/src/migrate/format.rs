//! Migration files in the formats of the tools Strata replaces, read as
//! those tools read them: which part of a file runs forward, which part
//! undoes it (never run forward), whether it runs outside a transaction,
//! and where it sorts.
//!
//! A directory is read in one format: the one `migrationFormats` names for
//! it, else the one its files show ([`detect`]). The formats:
//!
//! - [`Format::Strata`] (lukaszbudnik/migrator's): every file is a forward
//!   migration, ordered by file name byte-wise; `-- strata:` directives.
//! - [`Format::Dbmate`]: `-- migrate:up` and `-- migrate:down` sections,
//!   `transaction:false` on either marker; ordered by file name.
//! - [`Format::GolangMigrate`] (also sqlx's): `N_name.up.sql` with an
//!   optional `N_name.down.sql`, or sqlx's one-way `N_name.sql`; sqlx's
//!   `-- no-transaction` first line; a file wrapped in its own `BEGIN;` …
//!   `COMMIT;` (golang-migrate runs files as they are) runs inside the
//!   unit's transaction instead; ordered by the number `N`.
//! - [`Format::Goose`]: `-- +goose Up` / `-- +goose Down`,
//!   `-- +goose NO TRANSACTION`, `StatementBegin` / `StatementEnd` (kept as
//!   comments: the statement splitter reads dollar quotes and blocks
//!   itself); ordered by the leading number.
//! - [`Format::Atlas`]: files ordered by name, summed by `atlas.sum`
//!   (refused when they are not the files it sums), `-- atlas:txmode none`,
//!   `-- atlas:delimiter`, a first `-- atlas:checkpoint` ([`atlas`]).
//! - [`Format::Flyway`]: `V<version>__<description>.sql` ordered by version
//!   (`1.1 < 1.10 < 2 < 10`; `_` separates version parts like `.`),
//!   `U<version>__…` the undo of the `V` file of the same version,
//!   `R__…` repeatable scripts (run again when their text changed, as
//!   Flyway runs them); a `<file>.conf` beside a file
//!   may say `executeInTransaction=false`.
//!
//! # Line numbers are the file's
//!
//! The part that runs forward is the file's text with every line outside
//! that part (the markers, the down section) left empty: lines and columns
//! of an error are those of the file itself.
//!
//! # Evidence, never a fallback into danger
//!
//! Only `.sql` files are migrations (and Flyway's `<file>.sql.conf`
//! beside one); every other file is ignored ([`ignored`]), and the shell
//! says so. A directory's format is the one its files give evidence of
//! (markers, golang-migrate's or Flyway's names); a directory with no
//! evidence is Strata's. Evidence of two formats, or a file without the
//! evidence its format requires (a file with no markers beside dbmate or
//! goose files, a misnamed file beside Flyway's), is refused naming the
//! files that disagree.
//!
//! # Refusals
//!
//! A file that names itself a down or undo part (`*.down.sql`,
//! `U<version>__*.sql`) in a directory whose format does not pair it with
//! its up part, a Flyway callback (`afterMigrate.sql`, …: Strata does not
//! run callbacks), a file that carries the markers of a format its
//! directory is not read as, a file name the format does not know, a down
//! part without its up part, two files of one version: each is refused
//! before anything runs, naming the file (and the line where there is
//! one) — in a directory read as Strata's format, any of them would
//! otherwise run forward.

pub mod atlas;

use std::cmp::Ordering;
use std::collections::BTreeMap;

use thiserror::Error;

/// How the files of a directory are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// lukaszbudnik/migrator's (and Strata's own): each file is a migration.
    Strata,
    /// dbmate: `-- migrate:up` / `-- migrate:down` sections.
    Dbmate,
    /// golang-migrate and sqlx: `.up.sql` / `.down.sql` pairs.
    GolangMigrate,
    /// goose: `-- +goose Up` / `-- +goose Down` annotations.
    Goose,
    /// Flyway: `V…__`, `U…__`, `R__` file names.
    Flyway,
    /// Atlas: files summed by `atlas.sum`, `-- atlas:` directives.
    Atlas,
}

impl Format {
    /// Every format, in the order their names are listed.
    pub const ALL: [Format; 6] =
        [Format::Strata, Format::Dbmate, Format::GolangMigrate, Format::Goose, Format::Flyway, Format::Atlas];

    /// The name used in the configuration and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Strata => "strata",
            Format::Dbmate => "dbmate",
            Format::GolangMigrate => "golang-migrate",
            Format::Goose => "goose",
            Format::Flyway => "flyway",
            Format::Atlas => "atlas",
        }
    }

    /// How a refusal tells a file of this format to mark itself to run
    /// outside any transaction: the format's own marker, as "mark the file
    /// with …" reads it (another format's marker, or Strata's directive in
    /// another format's file, is refused).
    pub fn no_transaction_mark(self) -> &'static str {
        match self {
            Format::Strata => crate::migrate::statements::STRATA_MARK,
            Format::Dbmate => "`transaction:false` on its section's marker (`-- migrate:up transaction:false`)",
            Format::GolangMigrate => "`-- no-transaction` as its first line (sqlx's marker)",
            Format::Goose => "`-- +goose NO TRANSACTION`",
            Format::Flyway => "`executeInTransaction=false` in a `<file>.conf` beside it",
            Format::Atlas => "`-- atlas:txmode none` in its leading comment lines",
        }
    }

    /// The format a configuration names: its name, or `migrator` (Strata's)
    /// or `sqlx` (golang-migrate's file layout).
    pub fn parse(name: &str) -> Option<Format> {
        match name.to_ascii_lowercase().as_str() {
            "strata" | "migrator" => Some(Format::Strata),
            "dbmate" => Some(Format::Dbmate),
            "golang-migrate" | "migrate" | "sqlx" => Some(Format::GolangMigrate),
            "goose" => Some(Format::Goose),
            "flyway" => Some(Format::Flyway),
            "atlas" => Some(Format::Atlas),
            _ => None,
        }
    }
}

/// Where a migration sorts among the others of its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortKey {
    /// A version of numbered parts (digits, leading zeros removed; trailing
    /// zero parts removed, so `1.0` = `1`), compared part by part as numbers.
    Version(Vec<String>),
    /// The file name, compared byte-wise (migrator's order).
    Name,
}

impl SortKey {
    /// Orders two migrations by key, then by name. Versions sort before
    /// names (directories of different formats interleave that way), which
    /// keeps the order total.
    pub fn compare(&self, a_name: &str, other: &SortKey, b_name: &str) -> Ordering {
        match (self, other) {
            (SortKey::Version(a), SortKey::Version(b)) => compare_versions(a, b),
            (SortKey::Version(_), SortKey::Name) => Ordering::Less,
            (SortKey::Name, SortKey::Version(_)) => Ordering::Greater,
            (SortKey::Name, SortKey::Name) => Ordering::Equal,
        }
        .then_with(|| a_name.as_bytes().cmp(b_name.as_bytes()))
    }
}

/// Numbered parts compared as numbers, part by part (also a history's
/// versions: [`crate::migrate::history`]).
pub(crate) fn compare_versions(a: &[String], b: &[String]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let order = x.len().cmp(&y.len()).then_with(|| x.cmp(y));
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// A version from its digits and separators (`1.10`, `2_1`, `20240101`):
/// `None` when it is not one.
pub(crate) fn version(text: &str) -> Option<Vec<String>> {
    if text.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for part in text.split(['.', '_']) {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let trimmed = part.trim_start_matches('0');
        parts.push(if trimmed.is_empty() { "0".to_string() } else { trimmed.to_string() });
    }
    while parts.len() > 1 && parts.last().is_some_and(|p| p == "0") {
        parts.pop();
    }
    Some(parts)
}

/// A part of a file that runs in one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The file it was read from (`directory/name`).
    pub file: String,
    /// Its SQL: the file's text with every other line left empty.
    pub text: String,
    /// It runs outside any transaction (the format's marker).
    pub no_transaction: bool,
}

/// One migration as its format reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The file name that identifies it (the up file of a pair).
    pub name: String,
    /// Its raw bytes (the checksum is theirs).
    pub bytes: Vec<u8>,
    /// What runs forward.
    pub forward: Part,
    /// What undoes it, when the file (or its pair) says.
    pub down: Option<Part>,
    /// Where it sorts.
    pub order: SortKey,
    /// A Flyway repeatable file: a script of the directory's kind.
    pub repeatable: bool,
}

/// Why a directory's files cannot be read in their format.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FormatError {
    /// A file carries markers of another format than its directory's.
    #[error(
        "{file}:{line}: {marker:?} is a {found} marker, but {directory} is read as {expected} files (set \
         migrationFormats: {{{directory}: {found}}} if it holds {found} files)"
    )]
    ForeignMarker {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The marker as written.
        marker: String,
        /// The format it belongs to.
        found: &'static str,
        /// The directory.
        directory: String,
        /// The directory's format.
        expected: &'static str,
    },
    /// A file's name does not fit its directory's format.
    #[error("{file}: not a {format} migration name ({expected})")]
    BadName {
        /// The file.
        file: String,
        /// The directory's format.
        format: &'static str,
        /// What a name of the format looks like.
        expected: &'static str,
    },
    /// A file that names itself a down or undo part, in a directory whose
    /// format would run it forward.
    #[error(
        "{file}: a down migration in {directory}, which is read as {read_as} files and would run it forward (set \
         migrationFormats: {{{directory}: {pairs}}} if it holds {pairs} files)"
    )]
    DownFileRunForward {
        /// The file.
        file: String,
        /// The directory.
        directory: String,
        /// The directory's format.
        read_as: &'static str,
        /// The format that pairs such a file with its up part.
        pairs: &'static str,
    },
    /// A Flyway callback: run by Flyway at an event, never a migration.
    #[error(
        "{file}: a Flyway callback ({event}), which Strata does not run; it is not a migration either: move it out \
         of {directory} (an R__ repeatable script runs after every change of its own text)"
    )]
    Callback {
        /// The file.
        file: String,
        /// The directory.
        directory: String,
        /// The callback's event, as Flyway names it.
        event: &'static str,
    },
    /// A file without the evidence its directory's format requires.
    #[error(
        "{directory} is read as {format} files ({evidence} is one), but {file} is not one; rename or move it, or \
         name the directory's format with migrationFormats"
    )]
    NotOfTheFormat {
        /// The file without the evidence.
        file: String,
        /// The directory.
        directory: String,
        /// The format the other files show.
        format: &'static str,
        /// A file that shows it.
        evidence: String,
    },
    /// A section marker is missing, repeated or misplaced, or SQL stands
    /// outside any section.
    #[error("{file}:{line}: {message}")]
    Section {
        /// The file.
        file: String,
        /// 1-based line (0: the file as a whole).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A down or undo file without the migration it undoes.
    #[error("{file}: undoes version {version}, which has no migration file")]
    Orphan {
        /// The file.
        file: String,
        /// The version.
        version: String,
    },
    /// Two files of one version in one direction.
    #[error("{first} and {second} are both version {version}")]
    SameVersion {
        /// One file.
        first: String,
        /// The other.
        second: String,
        /// The version.
        version: String,
    },
    /// The files show several formats at once.
    #[error(
        "{directory} mixes formats: {first} reads as {first_format}, {second} as {second_format}; name its format \
         with migrationFormats"
    )]
    Mixed {
        /// The directory.
        directory: String,
        /// A file of one format.
        first: String,
        /// Its format.
        first_format: &'static str,
        /// A file of another.
        second: String,
        /// Its format.
        second_format: &'static str,
    },
    /// A one-way file (sqlx's `<number>_<name>.sql`) beside golang-migrate's
    /// `.up.sql` / `.down.sql` pairs: golang-migrate skips it, sqlx runs it.
    #[error(
        "{file}: a one-way file beside up/down pairs ({paired} is one): golang-migrate never runs such a file and \
         sqlx does; name it <number>_<name>.up.sql if it is to run, or move it out of the directory"
    )]
    OneWayBesidePairs {
        /// The one-way file.
        file: String,
        /// A file of a pair.
        paired: String,
    },
    /// A Flyway placeholder (`${name}`): Flyway replaces it before running
    /// the file (or refuses the file when it has no value); Strata has no
    /// values for it, and running the text as written would write other
    /// data than Flyway wrote.
    #[error(
        "{file}:{line}: {placeholder} is a Flyway placeholder, which Flyway replaces before it runs the file and \
         Strata does not: write its value into the file"
    )]
    Placeholder {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The placeholder as written.
        placeholder: String,
    },
    /// A Flyway `.conf` file says something not supported.
    #[error("{file}:{line}: {message}")]
    Conf {
        /// The `.conf` file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An Atlas directory's files are not the ones its `atlas.sum` sums,
    /// or it has none.
    #[error("{file}: {message}")]
    AtlasSum {
        /// `directory/atlas.sum`.
        file: String,
        /// What differs.
        message: String,
    },
    /// A file is not UTF-8 text.
    #[error("{file}: not valid UTF-8 text (at byte {valid_up_to})")]
    NotUtf8 {
        /// The file.
        file: String,
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
}

/// What a marker line says, in any format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Marker {
    DbmateUp(String),
    DbmateDown(String),
    Goose(String),
    /// An Atlas file directive (`atlas:txmode`, `atlas:delimiter`,
    /// `atlas:checkpoint`, `atlas:sum`).
    Atlas,
}

/// The marker on a line, if it is one (`--` comment lines only).
fn marker(line: &str) -> Option<Marker> {
    let comment = line.trim_start().strip_prefix("--")?.trim();
    // dbmate's markers start their line (`^--\s*migrate:up`): an indented
    // one is a comment, inside the section it stands in.
    let at_line_start = line.starts_with("--");
    for (prefix, up) in [("migrate:up", true), ("migrate:down", false)] {
        if let Some(rest) = comment.strip_prefix(prefix).filter(|_| at_line_start)
            && (rest.is_empty() || rest.starts_with(char::is_whitespace))
        {
            let options = rest.trim().to_string();
            return Some(if up { Marker::DbmateUp(options) } else { Marker::DbmateDown(options) });
        }
    }
    if let Some(rest) = comment.strip_prefix("atlas:")
        && ["txmode", "delimiter", "checkpoint", "sum"].iter().any(|name| {
            rest.strip_prefix(name).is_some_and(|after| after.is_empty() || after.starts_with(char::is_whitespace))
        })
    {
        return Some(Marker::Atlas);
    }
    let rest = comment.strip_prefix("+goose")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| Marker::Goose(rest.trim().to_string()))
}

fn marker_format(marker: &Marker) -> Format {
    match marker {
        Marker::DbmateUp(_) | Marker::DbmateDown(_) => Format::Dbmate,
        Marker::Goose(_) => Format::Goose,
        Marker::Atlas => Format::Atlas,
    }
}

/// The format of the first marker of a file, if it has one.
fn first_marker_format(text: &str) -> Option<Format> {
    text.lines().find_map(marker).map(|m| marker_format(&m))
}

/// A file as the reader takes it.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The file name.
    pub name: &'a str,
    /// Its raw bytes.
    pub bytes: &'a [u8],
}

fn is_golang_name(name: &str) -> bool {
    without_suffix(name, ".up.sql").is_some() || without_suffix(name, ".down.sql").is_some()
}

/// `name` without `suffix`, which it ends with in any case (`.SQL`,
/// `.Down.Sql`: the tools read them as their lower-case names, and a file
/// the reader took for another kind could run a down part forward).
fn without_suffix<'a>(name: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = name.len().checked_sub(suffix.len())?;
    (name.is_char_boundary(cut) && name[cut..].eq_ignore_ascii_case(suffix)).then(|| &name[..cut])
}

/// A `.sql` file (the suffix in any case): the only files read as
/// migrations.
fn is_sql_name(name: &str) -> bool {
    without_suffix(name, ".sql").is_some()
}

/// Whether a directory read in `format` ignores the file `name`: it is
/// hidden (starts with `.`), or neither a `.sql` file nor, in a Flyway
/// directory, a `.sql.conf` file, nor an Atlas directory's `atlas.sum`.
/// The shell says which files were ignored.
pub fn ignored(format: Format, name: &str) -> bool {
    name.starts_with('.')
        || !(is_sql_name(name)
            || (format == Format::Flyway && name.ends_with(".sql.conf"))
            || (format == Format::Atlas && name == atlas::SUM_FILE))
}

/// Flyway's callback events, as its SQL callback files name them
/// (`<event>.sql` or `<event>__<description>.sql`).
const FLYWAY_CALLBACKS: [&str; 39] = [
    "beforeMigrate",
    "beforeRepeatables",
    "beforeEachMigrate",
    "beforeEachMigrateStatement",
    "afterEachMigrateStatement",
    "afterEachMigrateStatementError",
    "afterEachMigrate",
    "afterEachMigrateError",
    "afterMigrate",
    "afterMigrateApplied",
    "afterVersioned",
    "afterMigrateError",
    "beforeUndo",
    "beforeEachUndo",
    "beforeEachUndoStatement",
    "afterEachUndoStatement",
    "afterEachUndoStatementError",
    "afterEachUndo",
    "afterEachUndoError",
    "afterUndo",
    "afterUndoError",
    "beforeClean",
    "afterClean",
    "afterCleanError",
    "beforeInfo",
    "afterInfo",
    "afterInfoError",
    "beforeValidate",
    "afterValidate",
    "afterValidateError",
    "beforeBaseline",
    "afterBaseline",
    "afterBaselineError",
    "beforeRepair",
    "afterRepair",
    "afterRepairError",
    "createSchema",
    "beforeConnect",
    "afterConnect",
];

/// The Flyway callback event a file name names, if it names one.
fn flyway_callback(name: &str) -> Option<&'static str> {
    let stem = without_suffix(name, ".sql")?;
    let event = stem.split_once("__").map_or(stem, |(event, _)| event);
    FLYWAY_CALLBACKS.into_iter().find(|known| known.eq_ignore_ascii_case(event))
}

/// The format that pairs a file named as a down or undo part with its up
/// part: golang-migrate for `*.down.sql`, Flyway for `U<version>__*.sql`.
fn pairing_format(name: &str) -> Option<Format> {
    if without_suffix(name, ".down.sql").is_some() {
        Some(Format::GolangMigrate)
    } else if matches!(flyway_name(name), Some(('U', _))) {
        Some(Format::Flyway)
    } else {
        None
    }
}

/// Refuses, whatever the directory's format, a file whose name says it
/// must never run forward there: a down or undo part the format does not
/// pair, or a Flyway callback.
fn refuse_by_name(directory: &str, name: &str, format: Format) -> Result<(), FormatError> {
    if let Some(pairs) = pairing_format(name)
        && pairs != format
    {
        return Err(FormatError::DownFileRunForward {
            file: format!("{directory}/{name}"),
            directory: directory.to_string(),
            read_as: format.name(),
            pairs: pairs.name(),
        });
    }
    if let Some(event) = flyway_callback(name) {
        return Err(FormatError::Callback {
            file: format!("{directory}/{name}"),
            directory: directory.to_string(),
            event,
        });
    }
    Ok(())
}

/// The formats one file gives evidence of: its markers, its name.
fn evidence(name: &str, text: &str) -> Vec<Format> {
    let mut found = Vec::new();
    found.extend(first_marker_format(text));
    if is_golang_name(name) {
        found.push(Format::GolangMigrate);
    }
    if flyway_name(name).is_some() || flyway_callback(name).is_some() {
        found.push(Format::Flyway);
    }
    found
}

/// The format a directory's `.sql` files give evidence of: markers of
/// dbmate or goose, golang-migrate's `.up.sql` / `.down.sql` names,
/// Flyway's `V`/`U`/`R` or callback names; Strata's when none does.
/// Evidence of several formats is refused, naming a file of each; so is
/// a file without evidence beside files of a format that requires it
/// (dbmate's and goose's markers, Flyway's names), naming both.
pub fn detect(directory: &str, files: &[Input<'_>]) -> Result<Format, FormatError> {
    let mut seen: Vec<(Format, &str)> = Vec::new();
    let mut without_evidence: Option<&str> = None;
    if files.iter().any(|f| f.name == atlas::SUM_FILE) {
        seen.push((Format::Atlas, atlas::SUM_FILE));
    }
    for file in files.iter().filter(|f| !ignored(Format::Strata, f.name)) {
        let found = evidence(file.name, &String::from_utf8_lossy(file.bytes));
        if found.is_empty() {
            without_evidence.get_or_insert(file.name);
        }
        for format in found {
            if !seen.iter().any(|(f, _)| *f == format) {
                seen.push((format, file.name));
            }
        }
    }
    match seen.as_slice() {
        [] => Ok(Format::Strata),
        [(format, evidence)] => match without_evidence {
            // Atlas's and golang-migrate's files need no evidence each
            // (the sum, the pairs' names are the directory's).
            Some(file) if !matches!(format, Format::GolangMigrate | Format::Atlas) => {
                Err(FormatError::NotOfTheFormat {
                    file: format!("{directory}/{file}"),
                    directory: directory.to_string(),
                    format: format.name(),
                    evidence: format!("{directory}/{evidence}"),
                })
            }
            _ => Ok(*format),
        },
        [(a, first), (b, second), ..] => Err(FormatError::Mixed {
            directory: directory.to_string(),
            first: format!("{directory}/{first}"),
            first_format: a.name(),
            second: format!("{directory}/{second}"),
            second_format: b.name(),
        }),
    }
}

/// Reads a directory's files in `format`. The files it [`ignored`] are
/// skipped; a file whose name says it must never run forward in `format`
/// is refused first. The result is unordered (the caller sorts every
/// directory's migrations together).
pub fn read(directory: &str, format: Format, files: &[Input<'_>]) -> Result<Vec<Read>, FormatError> {
    let files: Vec<&Input<'_>> = files.iter().filter(|f| !ignored(format, f.name)).collect();
    for file in files.iter().filter(|f| is_sql_name(f.name)) {
        refuse_by_name(directory, file.name, format)?;
    }
    match format {
        Format::Strata => files.iter().map(|f| read_strata(directory, f)).collect(),
        Format::Dbmate => one_file_per_version(directory, files.iter().map(|f| read_dbmate(directory, f)).collect()),
        Format::Goose => one_file_per_version(directory, files.iter().map(|f| read_goose(directory, f)).collect()),
        Format::GolangMigrate => read_golang(directory, &files),
        Format::Flyway => read_flyway(directory, &files),
        Format::Atlas => atlas::read_atlas(directory, &files),
    }
}

/// `read`, refused when two of its files carry one version: their tool
/// (dbmate, goose) knows a migration by its version alone, so it would run
/// only one of them, and a file renamed keeps its version.
fn one_file_per_version(directory: &str, read: Result<Vec<Read>, FormatError>) -> Result<Vec<Read>, FormatError> {
    let read = read?;
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for file in &read {
        // Numbered (goose: as numbers), else the leading digits as written
        // (dbmate's version is that text).
        let version = match &file.order {
            SortKey::Version(parts) => parts.join("."),
            SortKey::Name => file.name.chars().take_while(char::is_ascii_digit).collect(),
        };
        if version.is_empty() {
            continue;
        }
        if let Some(first) = seen.insert(version.clone(), &file.name) {
            return Err(FormatError::SameVersion {
                first: format!("{directory}/{first}"),
                second: format!("{directory}/{}", file.name),
                version,
            });
        }
    }
    Ok(read)
}

fn text_of<'a>(directory: &str, file: &Input<'a>) -> Result<&'a str, FormatError> {
    std::str::from_utf8(file.bytes)
        .map_err(|e| FormatError::NotUtf8 { file: format!("{directory}/{}", file.name), valid_up_to: e.valid_up_to() })
}

/// `text` with the lines `keep` refuses left empty (line ends kept).
fn only_lines(text: &str, mut keep: impl FnMut(usize) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if keep(i) {
            out.push_str(line);
        } else if line.ends_with("\r\n") {
            out.push_str("\r\n");
        } else if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Refuses the first marker of another format than `expected`, naming
/// its line.
fn foreign(directory: &str, name: &str, text: &str, expected: Format) -> Result<(), FormatError> {
    for (i, line) in text.lines().enumerate() {
        if let Some(found) = marker(line).map(|m| marker_format(&m))
            && found != expected
        {
            return Err(FormatError::ForeignMarker {
                file: format!("{directory}/{name}"),
                line: i + 1,
                marker: line.trim().to_string(),
                found: found.name(),
                directory: directory.to_string(),
                expected: expected.name(),
            });
        }
    }
    Ok(())
}

fn read_strata(directory: &str, file: &Input<'_>) -> Result<Read, FormatError> {
    let text = text_of(directory, file)?;
    foreign(directory, file.name, text, Format::Strata)?;
    Ok(Read {
        name: file.name.to_string(),
        bytes: file.bytes.to_vec(),
        forward: Part { file: format!("{directory}/{}", file.name), text: text.to_string(), no_transaction: false },
        down: None,
        order: SortKey::Name,
        repeatable: false,
    })
}

/// `transaction:false` (or `:true`) on a dbmate marker; anything else is
/// refused.
fn dbmate_options(file: &str, line: usize, options: &str) -> Result<bool, FormatError> {
    let mut no_transaction = false;
    for option in options.split_whitespace() {
        match option {
            "transaction:false" => no_transaction = true,
            "transaction:true" => no_transaction = false,
            other => {
                return Err(FormatError::Section {
                    file: file.to_string(),
                    line,
                    message: format!("{other:?} is not a dbmate option (known: transaction:false)"),
                });
            }
        }
    }
    Ok(no_transaction)
}

/// A line that holds SQL (not blank, not a `--` comment).
fn is_sql(line: &str) -> bool {
    let trimmed = line.trim();
    !trimmed.is_empty() && !trimmed.starts_with("--")
}

fn read_dbmate(directory: &str, file: &Input<'_>) -> Result<Read, FormatError> {
    let text = text_of(directory, file)?;
    let path = format!("{directory}/{}", file.name);
    foreign(directory, file.name, text, Format::Dbmate)?;
    let section_error = |line: usize, message: String| FormatError::Section { file: path.clone(), line, message };
    let mut sections: Vec<Option<bool>> = Vec::new();
    // Each section's `transaction:false`, once its marker is seen.
    let (mut up, mut down): (Option<bool>, Option<bool>) = (None, None);
    let mut current: Option<bool> = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        match marker(line) {
            Some(Marker::DbmateUp(options)) => {
                if up.is_some() {
                    return Err(section_error(i + 1, "a second '-- migrate:up' marker".into()));
                }
                up = Some(dbmate_options(&path, i + 1, &options)?);
                current = Some(true);
                sections.push(None);
            }
            Some(Marker::DbmateDown(options)) => {
                if down.is_some() {
                    return Err(section_error(i + 1, "a second '-- migrate:down' marker".into()));
                }
                down = Some(dbmate_options(&path, i + 1, &options)?);
                current = Some(false);
                sections.push(None);
            }
            _ => {
                if current.is_none() && is_sql(line) {
                    return Err(section_error(
                        i + 1,
                        "SQL before the '-- migrate:up' marker (dbmate runs only the up and down sections)".into(),
                    ));
                }
                sections.push(current);
            }
        }
    }
    let Some(up_no_transaction) = up else {
        return Err(section_error(0, "no '-- migrate:up' marker: dbmate files have an up section".into()));
    };
    let forward = only_lines(text, |i| sections[i] == Some(true));
    let down_part = down.map(|no_transaction| Part {
        file: path.clone(),
        text: only_lines(text, |i| sections[i] == Some(false)),
        no_transaction,
    });
    Ok(Read {
        name: file.name.to_string(),
        bytes: file.bytes.to_vec(),
        forward: Part { file: path.clone(), text: forward, no_transaction: up_no_transaction },
        down: down_part,
        order: SortKey::Name,
        repeatable: false,
    })
}

/// The leading number of a goose file name (`00001_x.sql`, `20240101_x.sql`).
fn leading_version(name: &str) -> Option<Vec<String>> {
    let digits = name.find(|c: char| !c.is_ascii_digit()).unwrap_or(name.len());
    version(&name[..digits])
}

fn read_goose(directory: &str, file: &Input<'_>) -> Result<Read, FormatError> {
    let text = text_of(directory, file)?;
    let path = format!("{directory}/{}", file.name);
    let section_error = |line: usize, message: String| FormatError::Section { file: path.clone(), line, message };
    let Some(order) = leading_version(file.name).filter(|_| is_sql_name(file.name)) else {
        return Err(FormatError::BadName {
            file: path,
            format: "goose",
            expected: "<number>_<description>.sql, e.g. 00001_create_users.sql",
        });
    };
    foreign(directory, file.name, text, Format::Goose)?;
    let mut sections: Vec<Option<bool>> = Vec::new();
    let (mut up, mut down, mut no_transaction) = (false, false, false);
    let mut current: Option<bool> = None;
    let mut in_block = false;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let Some(Marker::Goose(command)) = marker(line) else {
            if current.is_none() && is_sql(line) {
                return Err(section_error(i + 1, "SQL before the '-- +goose Up' annotation".into()));
            }
            sections.push(current);
            continue;
        };
        match command.to_ascii_lowercase().as_str() {
            "up" if !up => (up, current) = (true, Some(true)),
            "down" if !down => (down, current) = (true, Some(false)),
            "up" | "down" => return Err(section_error(i + 1, format!("a second '-- +goose {command}'"))),
            "no transaction" => no_transaction = true,
            "statementbegin" if !in_block => in_block = true,
            "statementend" if in_block => in_block = false,
            "statementbegin" | "statementend" => {
                return Err(section_error(i + 1, format!("'-- +goose {command}' out of place")));
            }
            _ => {
                return Err(section_error(
                    i + 1,
                    format!(
                        "'-- +goose {command}' is not supported (known: Up, Down, StatementBegin, StatementEnd, NO \
                         TRANSACTION)"
                    ),
                ));
            }
        }
        sections.push(None);
    }
    if in_block {
        return Err(section_error(0, "a '-- +goose StatementBegin' without its StatementEnd".into()));
    }
    if !up {
        return Err(section_error(0, "no '-- +goose Up' annotation: goose files have an Up section".into()));
    }
    Ok(Read {
        name: file.name.to_string(),
        bytes: file.bytes.to_vec(),
        forward: Part { file: path.clone(), text: only_lines(text, |i| sections[i] == Some(true)), no_transaction },
        down: down.then(|| Part {
            file: path.clone(),
            text: only_lines(text, |i| sections[i] == Some(false)),
            no_transaction,
        }),
        order: SortKey::Version(order),
        repeatable: false,
    })
}

/// golang-migrate runs a file as it is, so its users wrap a file in
/// `BEGIN;` … `COMMIT;` themselves. A file whose first and last SQL lines
/// are exactly that runs without those two lines, inside the unit's own
/// transaction (the same all-or-nothing); transaction control anywhere
/// else stays, for the statement inspector to refuse with its line.
fn without_own_transaction(text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let sql: Vec<usize> = (0..lines.len()).filter(|&i| is_sql(lines[i])).collect();
    let word = |i: usize| lines[i].trim().trim_end_matches(';').trim().to_ascii_lowercase();
    let (Some(&first), Some(&last)) = (sql.first(), sql.last()) else { return text.to_string() };
    let opens = matches!(word(first).as_str(), "begin" | "begin transaction" | "begin work" | "start transaction");
    let closes = matches!(word(last).as_str(), "commit" | "commit transaction" | "commit work" | "end");
    if first < last && opens && closes { only_lines(text, |i| i != first && i != last) } else { text.to_string() }
}

/// sqlx's marker: a first line `-- no-transaction`.
fn sqlx_no_transaction(text: &str) -> bool {
    // sqlx's own test: the text starts with the marker (after it, anything).
    text.starts_with("-- no-transaction")
}

/// The files of a golang-migrate (or sqlx) directory: each version's up
/// file, with its down file as the down part.
fn read_golang(directory: &str, files: &[&Input<'_>]) -> Result<Vec<Read>, FormatError> {
    let by_version = golang_pairs(directory, files)?;
    let mut out = Vec::with_capacity(by_version.len());
    for (number, pair) in by_version {
        out.push(read_golang_pair(directory, number, pair)?);
    }
    Ok(out)
}

/// The up and down file of one golang-migrate version.
struct Pair<'a> {
    /// `<number>_<name>.up.sql` (or sqlx's `<number>_<name>.sql`).
    up: Option<&'a Input<'a>>,
    /// `<number>_<name>.down.sql`.
    down: Option<&'a Input<'a>>,
}

/// The files of a golang-migrate directory paired by version; a name the
/// format does not know, or two files of one version in one direction, is
/// refused.
fn golang_pairs<'a>(directory: &str, files: &[&'a Input<'a>]) -> Result<BTreeMap<Vec<String>, Pair<'a>>, FormatError> {
    let mut by_version: BTreeMap<Vec<String>, Pair<'_>> = BTreeMap::new();
    for file in files {
        let path = format!("{directory}/{}", file.name);
        let (number, is_down) = golang_version(file.name).ok_or_else(|| FormatError::BadName {
            file: path.clone(),
            format: "golang-migrate",
            expected: "<number>_<name>.up.sql and <number>_<name>.down.sql (or sqlx's <number>_<name>.sql)",
        })?;
        let pair = by_version.entry(number.clone()).or_insert(Pair { up: None, down: None });
        let slot = if is_down { &mut pair.down } else { &mut pair.up };
        if let Some(first) = slot {
            return Err(FormatError::SameVersion {
                first: format!("{directory}/{}", first.name),
                second: path,
                version: number.join("."),
            });
        }
        *slot = Some(file);
    }
    // golang-migrate reads only `.up.sql` / `.down.sql` names and skips the
    // others; sqlx runs a one-way `<number>_<name>.sql` too. Beside pairs,
    // which tool the directory is for cannot be told: such a file would
    // run for one and never for the other.
    let of_a_pair =
        |f: &&&Input<'_>| without_suffix(f.name, ".up.sql").or(without_suffix(f.name, ".down.sql")).is_some();
    if let (Some(paired), Some(one_way)) = (files.iter().find(of_a_pair), files.iter().find(|f| !of_a_pair(f))) {
        return Err(FormatError::OneWayBesidePairs {
            file: format!("{directory}/{}", one_way.name),
            paired: format!("{directory}/{}", paired.name),
        });
    }
    Ok(by_version)
}

/// The version of a golang-migrate (or sqlx) file name and whether it is
/// a down file; `None` when the name is not `<number>_<name>.up.sql`,
/// `<number>_<name>.down.sql` or `<number>_<name>.sql`.
fn golang_version(name: &str) -> Option<(Vec<String>, bool)> {
    let (stem, is_down) = if let Some(stem) = without_suffix(name, ".down.sql") {
        (stem, true)
    } else if let Some(stem) = without_suffix(name, ".up.sql") {
        (stem, false)
    } else if let Some(stem) = without_suffix(name, ".sql") {
        (stem, false)
    } else {
        (name, false)
    };
    let digits = stem.find(|c: char| !c.is_ascii_digit()).unwrap_or(stem.len());
    let number = version(&stem[..digits]).filter(|_| stem[digits..].starts_with('_') || digits == stem.len())?;
    is_sql_name(name).then_some((number, is_down))
}

/// The migration of one golang-migrate version: its up file forward, its
/// down file (if any) as the down part; a down file without an up file is
/// refused.
fn read_golang_pair(directory: &str, number: Vec<String>, pair: Pair<'_>) -> Result<Read, FormatError> {
    let Some(up) = pair.up else {
        let down = pair.down.map(|d| d.name).unwrap_or_default();
        return Err(FormatError::Orphan { file: format!("{directory}/{down}"), version: number.join(".") });
    };
    let text = text_of(directory, up)?;
    foreign(directory, up.name, text, Format::GolangMigrate)?;
    let down = match pair.down {
        Some(down) => {
            let down_text = text_of(directory, down)?;
            foreign(directory, down.name, down_text, Format::GolangMigrate)?;
            Some(Part {
                file: format!("{directory}/{}", down.name),
                text: without_own_transaction(down_text),
                no_transaction: sqlx_no_transaction(down_text),
            })
        }
        None => None,
    };
    Ok(Read {
        name: up.name.to_string(),
        bytes: up.bytes.to_vec(),
        forward: Part {
            file: format!("{directory}/{}", up.name),
            text: without_own_transaction(text),
            no_transaction: sqlx_no_transaction(text),
        },
        down,
        order: SortKey::Version(number),
        repeatable: false,
    })
}

/// A Flyway file name: its prefix (`V`, `U`, `R`) and version (none for
/// `R`).
fn flyway_name(name: &str) -> Option<(char, Option<Vec<String>>)> {
    let stem = without_suffix(name, ".sql")?;
    let prefix = stem.chars().next()?;
    let rest = &stem[prefix.len_utf8()..];
    let (version_text, description) = rest.split_once("__")?;
    if description.is_empty() {
        return None;
    }
    match prefix {
        'V' | 'U' => Some((prefix, Some(version(version_text)?))),
        'R' if version_text.is_empty() => Some((prefix, None)),
        _ => None,
    }
}

/// `executeInTransaction` from a Flyway `.conf` file.
fn flyway_conf(file: &str, text: &str) -> Result<bool, FormatError> {
    let mut no_transaction = false;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').map(|(k, v)| (k.trim(), v.trim())).unwrap_or((line, ""));
        match (key, value) {
            ("executeInTransaction", "false") => no_transaction = true,
            ("executeInTransaction", "true") => no_transaction = false,
            _ => {
                return Err(FormatError::Conf {
                    file: file.to_string(),
                    line: i + 1,
                    message: format!("{line:?} is not supported (known: executeInTransaction=true|false)"),
                });
            }
        }
    }
    Ok(no_transaction)
}

/// The files of a Flyway directory: the repeatable `R` files as scripts,
/// in file order, then the `V` files by version, each with its `U` file as
/// the down part.
fn read_flyway(directory: &str, files: &[&Input<'_>]) -> Result<Vec<Read>, FormatError> {
    let confs = flyway_confs(directory, files)?;
    let mut sorted = FlywayFiles::sort(directory, files, &confs)?;
    sorted.pair_undo_files(directory)?;
    let mut out = sorted.repeatable;
    for (number, (file, undo)) in sorted.versioned {
        out.push(read_flyway_versioned(directory, number, file, undo, &confs)?);
    }
    Ok(out)
}

/// What the `<file>.sql.conf` files among `files` say, by the name of the
/// `.sql` file each is beside: true when it runs outside a transaction.
fn flyway_confs<'a>(directory: &str, files: &[&'a Input<'a>]) -> Result<BTreeMap<&'a str, bool>, FormatError> {
    let mut confs: BTreeMap<&str, bool> = BTreeMap::new();
    for file in files.iter().filter(|f| f.name.ends_with(".sql.conf")) {
        let path = format!("{directory}/{}", file.name);
        let text = text_of(directory, file)?;
        confs.insert(file.name.trim_end_matches(".conf"), flyway_conf(&path, text)?);
    }
    Ok(confs)
}

/// The `.sql` files of a Flyway directory, sorted by kind.
struct FlywayFiles<'a> {
    /// The `V` files by version, each with its `U` file once paired.
    versioned: BTreeMap<Vec<String>, (&'a Input<'a>, Option<&'a Input<'a>>)>,
    /// The `U` files with their versions, not yet paired.
    undo: Vec<(Vec<String>, &'a Input<'a>)>,
    /// The `R` files, read.
    repeatable: Vec<Read>,
}

impl<'a> FlywayFiles<'a> {
    /// Sorts every file of `files` but the `.conf` files, in order (see
    /// [`FlywayFiles::add`]).
    fn sort(directory: &str, files: &[&'a Input<'a>], confs: &BTreeMap<&str, bool>) -> Result<Self, FormatError> {
        let mut sorted = FlywayFiles { versioned: BTreeMap::new(), undo: Vec::new(), repeatable: Vec::new() };
        for file in files.iter().filter(|f| !f.name.ends_with(".sql.conf")) {
            sorted.add(directory, file, confs)?;
        }
        Ok(sorted)
    }

    /// Sorts in one file: refused when its name is not a Flyway name, it is
    /// not UTF-8 or carries another format's marker, or it is a second `V`
    /// file of its version; an `R` file is read as it is (`confs` say
    /// whether it runs outside a transaction).
    fn add(&mut self, directory: &str, file: &'a Input<'a>, confs: &BTreeMap<&str, bool>) -> Result<(), FormatError> {
        const EXPECTED: &str = "V<version>__<description>.sql, U<version>__<description>.sql or R__<description>.sql";
        let path = format!("{directory}/{}", file.name);
        let Some((prefix, number)) = flyway_name(file.name) else {
            return Err(FormatError::BadName { file: path, format: "flyway", expected: EXPECTED });
        };
        let text = text_of(directory, file)?;
        foreign(directory, file.name, text, Format::Flyway)?;
        flyway_placeholders(&path, text)?;
        match (prefix, number) {
            ('V', Some(number)) => {
                if let Some((first, _)) = self.versioned.get(&number) {
                    return Err(FormatError::SameVersion {
                        first: format!("{directory}/{}", first.name),
                        second: path,
                        version: number.join("."),
                    });
                }
                self.versioned.insert(number, (file, None));
            }
            ('U', Some(number)) => self.undo.push((number, file)),
            _ => self.repeatable.push(Read {
                name: file.name.to_string(),
                bytes: file.bytes.to_vec(),
                forward: Part {
                    file: path,
                    text: text.to_string(),
                    no_transaction: confs.get(file.name).copied().unwrap_or(false),
                },
                down: None,
                order: SortKey::Name,
                repeatable: true,
            }),
        }
        Ok(())
    }

    /// Pairs each `U` file with the `V` file of its version, in the order
    /// they were sorted in; a second `U` file of a version, or one without
    /// its `V` file, is refused.
    fn pair_undo_files(&mut self, directory: &str) -> Result<(), FormatError> {
        for (number, file) in std::mem::take(&mut self.undo) {
            let path = format!("{directory}/{}", file.name);
            match self.versioned.get_mut(&number) {
                Some((_, slot @ None)) => *slot = Some(file),
                Some((_, Some(first))) => {
                    return Err(FormatError::SameVersion {
                        first: format!("{directory}/{}", first.name),
                        second: path,
                        version: number.join("."),
                    });
                }
                None => return Err(FormatError::Orphan { file: path, version: number.join(".") }),
            }
        }
        Ok(())
    }
}

/// Refuses a Flyway file holding a placeholder: `${` then a name and `}`
/// on one line, anywhere in the text (Flyway replaces them in comments and
/// strings too).
fn flyway_placeholders(path: &str, text: &str) -> Result<(), FormatError> {
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            match after.find('}') {
                Some(end) if end > 0 && !after[..end].contains(char::is_whitespace) => {
                    return Err(FormatError::Placeholder {
                        file: path.to_string(),
                        line: i + 1,
                        placeholder: format!("${{{}}}", &after[..end]),
                    });
                }
                _ => rest = after,
            }
        }
    }
    Ok(())
}

/// The migration of a `V` file, with its `U` file (if any) as the down
/// part; `confs` say which of them run outside a transaction.
fn read_flyway_versioned(
    directory: &str,
    number: Vec<String>,
    file: &Input<'_>,
    undo: Option<&Input<'_>>,
    confs: &BTreeMap<&str, bool>,
) -> Result<Read, FormatError> {
    let text = text_of(directory, file)?;
    let down = match undo {
        Some(undo) => Some(Part {
            file: format!("{directory}/{}", undo.name),
            text: text_of(directory, undo)?.to_string(),
            no_transaction: confs.get(undo.name).copied().unwrap_or(false),
        }),
        None => None,
    };
    Ok(Read {
        name: file.name.to_string(),
        bytes: file.bytes.to_vec(),
        forward: Part {
            file: format!("{directory}/{}", file.name),
            text: text.to_string(),
            no_transaction: confs.get(file.name).copied().unwrap_or(false),
        },
        down,
        order: SortKey::Version(number),
        repeatable: false,
    })
}

#[cfg(test)]
mod tests;

/// A file `strata new` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFile {
    /// Its name in the directory.
    pub name: String,
    /// What it starts with: the format's markers.
    pub contents: String,
}

/// Why `strata new` cannot name a file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NewFileError {
    /// The description has no letter or digit.
    #[error("{0:?}: a migration's description needs a letter or a digit (it becomes part of the file name)")]
    BadDescription(String),
}

/// The next file of a directory in `format`, after the `existing` file
/// names, in their convention: a timestamp (`now`, `YYYYMMDDhhmmss`,
/// cut to the width the directory's timestamps have) where the directory
/// numbers its files by timestamp, else the next number at the width the
/// directory pads to; an empty directory gets its format's usual
/// convention (a timestamp; golang-migrate a six-digit sequence; Flyway
/// `V1`). The description is lower-cased, every run of other characters
/// than letters and digits made one `_`. golang-migrate gets two files
/// (`.up.sql`, `.down.sql`).
pub fn next_files(
    format: Format,
    existing: &[&str],
    description: &str,
    now: &str,
) -> Result<Vec<NewFile>, NewFileError> {
    let mut slug = String::new();
    for c in description.trim().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('_') && !slug.is_empty() {
            slug.push('_');
        }
    }
    let slug = slug.trim_end_matches('_').to_string();
    if slug.is_empty() {
        return Err(NewFileError::BadDescription(description.to_string()));
    }
    // The leading numbers of the existing files (after Flyway's `V`).
    let numbers: Vec<&str> = existing
        .iter()
        .filter(|name| !name.starts_with('.'))
        .map(|name| if format == Format::Flyway { name.strip_prefix('V').unwrap_or("") } else { name })
        .map(|name| &name[..name.find(|c: char| !c.is_ascii_digit()).unwrap_or(name.len())])
        .filter(|digits| !digits.is_empty())
        .collect();
    let width = numbers.iter().map(|n| n.len()).max();
    let timestamps = width.is_some_and(|w| w >= 12);
    let greatest =
        numbers.iter().map(|n| n.trim_start_matches('0')).max_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
    let next = match (width, timestamps) {
        (Some(width), true) => {
            let stamp: String = now.chars().take(width).collect();
            let stamp = format!("{stamp:0<width$}");
            // Never before the greatest (a clock behind the files').
            match greatest {
                Some(g) if (g.len(), g) >= (stamp.trim_start_matches('0').len(), stamp.trim_start_matches('0')) => {
                    increment(&format!("{g:0>width$}"))
                }
                _ => stamp,
            }
        }
        (Some(width), false) => increment(&format!("{:0>width$}", greatest.unwrap_or("0"))),
        (None, _) => match format {
            Format::GolangMigrate => "000001".to_string(),
            Format::Flyway => "1".to_string(),
            _ => now.to_string(),
        },
    };
    let file = |name: String, contents: &str| NewFile { name, contents: contents.to_string() };
    Ok(match format {
        Format::Strata | Format::Atlas => vec![file(format!("{next}_{slug}.sql"), "")],
        Format::Dbmate => vec![file(format!("{next}_{slug}.sql"), "-- migrate:up\n\n\n-- migrate:down\n\n")],
        Format::Goose => vec![file(format!("{next}_{slug}.sql"), "-- +goose Up\n\n\n-- +goose Down\n\n")],
        Format::GolangMigrate => {
            vec![file(format!("{next}_{slug}.up.sql"), ""), file(format!("{next}_{slug}.down.sql"), "")]
        }
        Format::Flyway => vec![file(format!("V{next}__{slug}.sql"), "")],
    })
}

/// `files` (from [`next_files`]) holding `statements` as the migration's
/// up part, in `format`'s own way: after dbmate's and goose's up marker
/// (a goose statement with a `;` of its own between `StatementBegin` and
/// `StatementEnd`), in golang-migrate's `.up.sql`; `comments` (one line
/// each, without `--`) first. The down parts stay empty.
pub fn with_statements(
    format: Format,
    files: Vec<NewFile>,
    comments: &[String],
    statements: &[String],
) -> Vec<NewFile> {
    let mut body = String::new();
    for comment in comments {
        body.push_str(&format!("-- {comment}\n"));
    }
    for statement in statements {
        let statement = statement.trim_end().trim_end_matches(';');
        if format == Format::Goose && statement.contains(';') {
            body.push_str(&format!("-- +goose StatementBegin\n{statement};\n-- +goose StatementEnd\n"));
        } else {
            body.push_str(&format!("{statement};\n"));
        }
    }
    files
        .into_iter()
        .map(|file| {
            let contents = match format {
                Format::Strata | Format::Flyway | Format::Atlas => body.clone(),
                Format::Dbmate => format!("-- migrate:up\n{body}\n-- migrate:down\n\n"),
                Format::Goose => format!("-- +goose Up\n{body}\n-- +goose Down\n\n"),
                Format::GolangMigrate if without_suffix(&file.name, ".up.sql").is_some() => body.clone(),
                Format::GolangMigrate => file.contents,
            };
            NewFile { name: file.name, contents }
        })
        .collect()
}

/// A decimal number plus one, its width kept (or grown by a carry).
fn increment(digits: &str) -> String {
    let mut out: Vec<u8> = digits.bytes().collect();
    for byte in out.iter_mut().rev() {
        if *byte == b'9' {
            *byte = b'0';
        } else {
            *byte += 1;
            return String::from_utf8(out).unwrap_or_default();
        }
    }
    format!("1{}", String::from_utf8(out).unwrap_or_default())
}
