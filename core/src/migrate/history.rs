//! Adopting a fleet another tool migrated: a Sync records, in each schema,
//! exactly the files that tool's own history table there says it applied.
//!
//! A team moving 2,000 tenants from dbmate (golang-migrate, sqlx, goose,
//! Flyway, Atlas) has tenants at different versions, each with its tool's
//! record in its own schema. Recording every pending file everywhere
//! (migrator's Sync) would mark files that never ran on the tenants that
//! lag, and they would never run there. So a Sync that finds histories
//! reads them ([`probes`], then [`read`] many schemas at once) and keeps of its plan
//! only what they say ran ([`adopt`]).
//!
//! # Rules
//!
//! - **A schema's history is its tool's table in that schema**:
//!   `schema_migrations` (dbmate's; golang-migrate's has a `dirty` column),
//!   `_sqlx_migrations`, `goose_db_version`, `flyway_schema_history`,
//!   `atlas_schema_revisions`. Two of them in one schema are refused.
//! - **A version names a file by the tool's own rule** ([`Tool::version_of`]):
//!   the leading number (dbmate, golang-migrate, sqlx, goose), `V<version>__`
//!   (Flyway, `1.1` = `1_1` = `01.1`), the name before its first `_`
//!   (Atlas). A recorded version no file carries, or two files of one
//!   version, is refused: recording by guess would lose a file.
//! - **A changed file is refused**: Flyway's row holds its file's checksum
//!   ([`flyway_checksum`]), sqlx's the SHA-384 of its text; a file whose
//!   text is no longer the one the tool ran is not recorded as run (the
//!   tools' own checks refuse it too).
//! - **A repeatable file is recorded where its text ran**: Flyway's `R__`
//!   file, only in a schema whose history's last row of that script holds
//!   the file's checksum now (else it runs at the next apply, as Flyway would
//!   run it).
//! - **Dirty is refused**: golang-migrate's `dirty`, sqlx's and Flyway's
//!   `success = false`, Atlas's error or partly applied revision — the tool
//!   left that schema mid-file, and only a person can say what ran.
//! - **What came undone is not recorded**: goose's `is_applied = false`
//!   row, Flyway's undo and deleted rows, each after the row it undoes.
//! - **A baseline covers what sorts before it**: golang-migrate's one row
//!   (its current version, which must be a file: golang-migrate reads that
//!   file; a table of several rows is refused), Flyway's `BASELINE`, Atlas's
//!   baseline revision.
//! - **Once a history is found, a schema without one records nothing**: the
//!   tool never ran there (a tenant created after it), so none of its files
//!   ran. A single schema without a history of its own is the exception
//!   when it exists ([`existing`]): its tool may have kept its history in
//!   the connection's schema (sqlx and dbmate write theirs on the
//!   `search_path`), so it is left as the plan has it; one that does not
//!   exist records nothing. Where no schema of the fleet has a history (the
//!   shell asks of the whole fleet when a Sync covers a part of it), the
//!   Sync is migrator's: every pending file recorded. Scripts other than
//!   repeatable ones are left as the plan has them (they run again at every
//!   version anyway).

use std::cmp::Ordering;

use rustc_hash::{FxHashMap, FxHashSet};
use thiserror::Error;

use crate::migrate::driver::Driver;
use crate::migrate::format;
use crate::migrate::ident::{quote_ansi, quote_mysql};
use crate::migrate::plan::{Adopted, Plan, retained};
use crate::migrate::source::SourceMigration;

/// A tool whose history table a Sync reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tool {
    /// dbmate: `schema_migrations (version)`, a row per applied file.
    Dbmate,
    /// golang-migrate: `schema_migrations (version, dirty)`, one row.
    GolangMigrate,
    /// sqlx: `_sqlx_migrations (version, success, …)`.
    Sqlx,
    /// goose: `goose_db_version (id, version_id, is_applied, …)`.
    Goose,
    /// Flyway: `flyway_schema_history (installed_rank, version, type, success, …)`.
    Flyway,
    /// Atlas: `atlas_schema_revisions (version, type, applied, total, error, …)`.
    Atlas,
}

/// golang-migrate's table as [`probe`] names it: dbmate's name, with a
/// `dirty` column.
const GOLANG_MIGRATE_TABLE: &str = "schema_migrations:dirty";

impl Tool {
    /// Every tool, in the order messages list them.
    pub const ALL: [Tool; 6] = [Tool::Dbmate, Tool::GolangMigrate, Tool::Sqlx, Tool::Goose, Tool::Flyway, Tool::Atlas];

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Dbmate => "dbmate",
            Tool::GolangMigrate => "golang-migrate",
            Tool::Sqlx => "sqlx",
            Tool::Goose => "goose",
            Tool::Flyway => "Flyway",
            Tool::Atlas => "Atlas",
        }
    }

    /// Its history table's name.
    pub fn table(self) -> &'static str {
        match self {
            Tool::Dbmate | Tool::GolangMigrate => "schema_migrations",
            Tool::Sqlx => "_sqlx_migrations",
            Tool::Goose => "goose_db_version",
            Tool::Flyway => "flyway_schema_history",
            Tool::Atlas => "atlas_schema_revisions",
        }
    }

    /// The tool of a table [`probe`] found (its second column).
    pub fn of_probed(table: &str) -> Option<Tool> {
        if table == GOLANG_MIGRATE_TABLE {
            return Some(Tool::GolangMigrate);
        }
        Tool::ALL.into_iter().find(|tool| *tool != Tool::GolangMigrate && tool.table() == table)
    }

    /// The version the tool gives a file `name`, by its own naming rule;
    /// `None` for a name it would not run.
    pub fn version_of(self, name: &str) -> Option<Version> {
        let stem = name.strip_suffix(".sql")?;
        let text = match self {
            Tool::Dbmate | Tool::GolangMigrate | Tool::Sqlx | Tool::Goose => {
                let digits = stem.bytes().take_while(u8::is_ascii_digit).count();
                &stem[..digits]
            }
            Tool::Flyway => stem.strip_prefix('V')?.split_once("__")?.0,
            Tool::Atlas => stem.split_once('_').map_or(stem, |(version, _)| version),
        };
        Version::parse(text)
    }
}

/// A version as a tool records it, comparable across spellings: numbered
/// parts without leading zeros or trailing zero parts (`1.10` = `01_10.0`),
/// else the text itself (an Atlas name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Version {
    /// Digits separated by `.` or `_`.
    Numbered(Vec<String>),
    /// Anything else.
    Text(String),
}

impl Version {
    /// `text` as a version; `None` when it is empty. Numbered as the
    /// formats number their files (`format::version`).
    pub fn parse(text: &str) -> Option<Version> {
        if text.is_empty() {
            return None;
        }
        Some(format::version(text).map_or_else(|| Version::Text(text.to_string()), Version::Numbered))
    }

    /// Orders numbered versions part by part as numbers, text byte-wise,
    /// numbered before text.
    fn compare(&self, other: &Version) -> Ordering {
        match (self, other) {
            (Version::Numbered(a), Version::Numbered(b)) => format::compare_versions(a, b),
            (Version::Numbered(_), Version::Text(_)) => Ordering::Less,
            (Version::Text(_), Version::Numbered(_)) => Ordering::Greater,
            (Version::Text(a), Version::Text(b)) => a.cmp(b),
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Version::Numbered(parts) => f.write_str(&parts.join(".")),
            Version::Text(text) => f.write_str(text),
        }
    }
}

/// Whether a Sync reads other tools' histories on `driver` (PostgreSQL,
/// MySQL/MariaDB); elsewhere it is migrator's.
pub fn read_on(driver: Driver) -> bool {
    matches!(driver, Driver::Postgres | Driver::Mysql)
}

/// The names of the schemas whose histories one MySQL probe lists.
const PROBED_AT_ONCE: usize = 500;

/// The statements listing the history tables in `schemas`: rows `(schema,
/// table)`, golang-migrate's table as `schema_migrations:dirty`
/// ([`Tool::of_probed`]); a row of a schema not in `schemas` is the
/// caller's to pass over. None where Strata does not read histories
/// (SQLite, SQL Server). On PostgreSQL one statement over the catalog lists
/// every history table of the database (the names a probe would filter by
/// are the tables' own: 500 schemas a statement over 10,000 tenants' tables
/// cost 1 s); on MySQL one per 500 schemas, each written as a plain literal
/// (a name holding a quote or a backslash, which the engines refuse
/// anyway, is passed over).
pub fn probes(driver: Driver, schemas: &[String]) -> Vec<String> {
    let tables: Vec<String> = Tool::ALL
        .into_iter()
        .filter(|tool| *tool != Tool::GolangMigrate)
        .map(|tool| format!("'{}'", tool.table()))
        .collect();
    let tables = tables.join(", ");
    match driver {
        // The catalog itself: `information_schema.columns` checks privileges
        // on every column of the database (0.7 s per 500 schemas beside
        // 2,000 tenants' tables, against milliseconds here).
        Driver::Postgres => vec![format!(
            "select n.nspname::text, c.relname::text || case when exists (select 1 from pg_attribute a \
             where a.attrelid = c.oid and a.attname = 'dirty' and not a.attisdropped) then ':dirty' else '' end \
             from pg_class c join pg_namespace n on n.oid = c.relnamespace \
             where c.relkind in ('r', 'p', 'v', 'f') and c.relname in ({tables})"
        )],
        Driver::Mysql => {
            let plain = |name: &&String| !name.contains(['\'', '\\', '\0']);
            let names: Vec<String> = schemas.iter().filter(plain).map(|name| format!("'{name}'")).collect();
            names
                .chunks(PROBED_AT_ONCE)
                .map(|names| {
                    format!(
                        "select {schema}, concat({table}, case when exists (select 1 from information_schema.columns \
                         c where c.table_schema = t.table_schema and c.table_name = t.table_name and c.column_name \
                         = 'dirty') then ':dirty' else '' end) from information_schema.tables t where t.table_name \
                         in ({tables}) and t.table_schema in ({names})",
                        schema = text(driver, "t.table_schema"),
                        table = text(driver, "t.table_name"),
                        names = names.join(", "),
                    )
                })
                .collect()
        }
        Driver::Sqlite | Driver::SqlServer => Vec::new(),
    }
}

/// The statement listing which of the single schemas `names` exist (one
/// column, the name); none where Strata does not read histories. Each
/// name is written as a plain literal (a name holding a quote or a
/// backslash, which the engines refuse anyway, is passed over).
pub fn existing(driver: Driver, names: &[&str]) -> Option<String> {
    let plain: Vec<String> =
        names.iter().filter(|name| !name.contains(['\'', '\\', '\0'])).map(|name| format!("'{name}'")).collect();
    if plain.is_empty() {
        return None;
    }
    let names = plain.join(", ");
    match driver {
        Driver::Postgres => Some(format!("select nspname::text from pg_namespace where nspname in ({names})")),
        Driver::Mysql => Some(format!(
            "select {} from information_schema.schemata where schema_name in ({names})",
            text(driver, "schema_name")
        )),
        Driver::Sqlite | Driver::SqlServer => None,
    }
}

/// How many histories [`read`] reads in one statement.
pub const READ_AT_ONCE: usize = 200;

/// The statement reading the histories `found` (schema and tool, at most
/// [`READ_AT_ONCE`]) in one round trip: rows `(schema, version, entry,
/// order)`, each entry one of [`Entry`]'s words, `order` the tool's own
/// (goose's `id`, Flyway's `installed_rank`; 0 where rows need none).
/// [`found`] gathers them.
pub fn read(driver: Driver, histories: &[(String, Tool)]) -> String {
    let parts: Vec<String> = histories.iter().map(|(schema, tool)| read_one(driver, schema, *tool)).collect();
    parts.join(" union all ")
}

/// One schema's part of [`read`].
fn read_one(driver: Driver, schema: &str, tool: Tool) -> String {
    let table = match driver {
        Driver::Mysql => format!("{}.{}", quote_mysql(schema), quote_mysql(tool.table())),
        _ => format!("{}.{}", quote_ansi(schema), quote_ansi(tool.table())),
    };
    let yes = |column: &str| match driver {
        Driver::Postgres => column.to_string(),
        _ => format!("{column} <> 0"),
    };
    let integer = |expression: &str| match driver {
        Driver::Mysql => format!("cast({expression} as signed)"),
        _ => format!("cast({expression} as bigint)"),
    };
    let version = |column: &str| text(driver, column);
    let checksum = format!("coalesce({}, '')", text(driver, "checksum"));
    let (version, entry, order) = match tool {
        Tool::Dbmate => (version("version"), "'applied'".to_string(), integer("0")),
        Tool::GolangMigrate => {
            (version("version"), format!("case when {} then 'dirty' else 'through' end", yes("dirty")), integer("0"))
        }
        Tool::Sqlx => (
            version("version"),
            format!(
                "case when {} then {} else 'dirty' end",
                yes("success"),
                concat(driver, "'applied '", &hex(driver, "checksum"))
            ),
            integer("0"),
        ),
        Tool::Goose => (
            version("version_id"),
            format!("case when {} then 'applied' else 'undone' end", yes("is_applied")),
            integer("id"),
        ),
        // A repeatable file's rows have no version: their script names it.
        Tool::Flyway => (
            format!("coalesce({}, {}, '')", version("version"), version("script")),
            format!(
                "case when not ({success}) then 'dirty' when type = 'BASELINE' then 'through' \
                 when type in ('UNDO_SQL', 'UNDO_JDBC', 'UNDO_SCRIPT', 'DELETE') and version is null \
                 then 'unrepeated' \
                 when type in ('UNDO_SQL', 'UNDO_JDBC', 'UNDO_SCRIPT', 'DELETE') then 'undone' \
                 when type = 'SCHEMA' or type not like 'SQL%' and version is null then 'other' \
                 when version is null then {repeatable} else {applied} end",
                success = yes("success"),
                repeatable = concat(driver, "'repeatable '", &checksum),
                applied = concat(driver, "'applied '", &checksum),
            ),
            integer("installed_rank"),
        ),
        Tool::Atlas => (
            version("version"),
            "case when coalesce(error, '') <> '' or applied < total then 'dirty' when type = 1 then 'through' \
             else 'applied' end"
                .to_string(),
            integer("0"),
        ),
    };
    format!("select {}, {version}, {entry}, {order} from {table}", text(driver, &format!("'{schema}'")))
}

/// The histories [`read`] read, its rows `(schema, version, entry,
/// order)`, each in its tool's order.
pub fn found(histories: &[(String, Tool)], rows: Vec<(String, String, String, i64)>) -> Vec<Found> {
    let mut by_schema: FxHashMap<String, Vec<(i64, String, String)>> = FxHashMap::default();
    for (schema, version, entry, order) in rows {
        by_schema.entry(schema).or_default().push((order, version, entry));
    }
    histories
        .iter()
        .map(|(schema, tool)| {
            let mut rows = by_schema.remove(schema).unwrap_or_default();
            rows.sort_by_key(|(order, _, _)| *order);
            Found {
                schema: schema.clone(),
                tool: *tool,
                rows: rows.into_iter().map(|(_, version, entry)| (version, entry)).collect(),
            }
        })
        .collect()
}

/// Two text expressions joined, in `driver`'s SQL.
fn concat(driver: Driver, first: &str, second: &str) -> String {
    match driver {
        Driver::Postgres | Driver::Sqlite => format!("({first} || {second})"),
        Driver::Mysql => format!("concat({first}, {second})"),
        Driver::SqlServer => format!("({first} + {second})"),
    }
}

/// Flyway's checksum of a file's text: CRC-32 over its lines without their
/// ends (`\n`, `\r\n` or `\r`; a first line's byte-order mark dropped), as a
/// signed 32-bit number — what `flyway_schema_history.checksum` holds, the
/// same for a file checked out with either line end.
pub fn flyway_checksum(text: &str) -> i32 {
    let mut crc = crc32fast::Hasher::new();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        crc.update(&rest.as_bytes()[..end]);
        rest = &rest[end..];
        rest = rest
            .strip_prefix("\r\n")
            .or_else(|| rest.strip_prefix('\n'))
            .or_else(|| rest.strip_prefix('\r'))
            .unwrap_or(rest);
    }
    crc.finalize() as i32
}

/// A binary `expression` as lower-case hex text in `driver`'s SQL.
fn hex(driver: Driver, expression: &str) -> String {
    match driver {
        Driver::Postgres => format!("coalesce(encode({expression}, 'hex'), '')"),
        Driver::Mysql | Driver::Sqlite => format!("coalesce(lower(hex({expression})), '')"),
        Driver::SqlServer => format!("coalesce(lower(convert(nvarchar(max), {expression}, 2)), '')"),
    }
}

/// sqlx's checksum of a file's text: SHA-384 of its bytes, as lower-case
/// hex (what `_sqlx_migrations.checksum` holds).
pub fn sqlx_checksum(text: &str) -> String {
    use sha2::{Digest, Sha384};
    Sha384::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// `expression` as text in `driver`'s SQL.
fn text(driver: Driver, expression: &str) -> String {
    match driver {
        Driver::Postgres => format!("({expression})::text"),
        Driver::Mysql => format!("cast({expression} as char)"),
        Driver::Sqlite => format!("cast({expression} as text)"),
        Driver::SqlServer => format!("cast({expression} as nvarchar(4000))"),
    }
}

/// What a history row says of its version ([`read`]'s second column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// It ran.
    Applied,
    /// It, and every version before it, counts as run (a baseline, or
    /// golang-migrate's current version).
    Through,
    /// It was undone after it ran.
    Undone,
    /// It failed or ran in part.
    Dirty,
    /// A repeatable file's text ran (Flyway's `R__`: the version column
    /// holds its script).
    Repeatable,
    /// A repeatable file's rows were deleted or undone.
    Unrepeated,
    /// Not a file's record (Flyway's schema creation, a repeatable file).
    Other,
}

impl Entry {
    fn parse(word: &str) -> Entry {
        match word {
            "applied" => Entry::Applied,
            "through" => Entry::Through,
            "undone" => Entry::Undone,
            "dirty" => Entry::Dirty,
            "repeatable" => Entry::Repeatable,
            "unrepeated" => Entry::Unrepeated,
            _ => Entry::Other,
        }
    }
}

/// One schema's history as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The schema.
    pub schema: String,
    /// The tool whose table it is.
    pub tool: Tool,
    /// Its rows, `(version, entry)` as [`read`] selects them.
    pub rows: Vec<(String, String)>,
}

/// Why a schema's history cannot be adopted. Each names the schema (but
/// [`HistoryError::TwoFiles`], the source's own), the tool, and its table.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[allow(missing_docs)] // the fields are what the messages name
pub enum HistoryError {
    /// The tool left the schema mid-file.
    #[error(
        "{schema}: {tool}'s history ({table}) says version {version} failed or ran in part; finish or undo it with \
         {tool} first, or record by hand with `strata apply --sync --to FILE`"
    )]
    Dirty { schema: String, tool: &'static str, table: &'static str, version: String },
    /// The file of a recorded version is not the text the tool ran (its
    /// checksum differs from the one the history holds).
    #[error(
        "{schema}: {}'s history ({}) records version {version} with checksum {recorded}, but {file} now has \
         checksum {now} (computed as {} computes it): the file changed after {} ran it; restore it, or record by \
         hand with `strata apply --sync --to FILE`",
        .tool.name(), .tool.table(), .tool.name(), .tool.name()
    )]
    Changed { schema: String, tool: Tool, version: String, file: String, recorded: String, now: String },
    /// golang-migrate's table with more than its one row.
    #[error(
        "{schema}: {tool}'s history ({table}) holds {rows} rows where {tool} keeps one (its current version), so \
         which version it is at is undefined; keep the right row, or record by hand with `strata apply --sync --to \
         FILE`"
    )]
    SeveralRows { schema: String, tool: &'static str, table: &'static str, rows: usize },
    /// A recorded version no file carries.
    #[error(
        "{schema}: {tool}'s history ({table}) records version {version}, which no file of the source is; restore \
         the file, or record by hand with `strata apply --sync --to FILE`"
    )]
    NoFile { schema: String, tool: &'static str, table: &'static str, version: String },
    /// Two files of one version.
    #[error("{first} and {second} are both version {version} to {tool}; rename one")]
    TwoFiles { tool: &'static str, version: String, first: String, second: String },
    /// Two tools' histories in one schema.
    #[error(
        "{schema}: holds both {first}'s history ({first_table}) and {second}'s ({second_table}); drop the stale one"
    )]
    TwoTools {
        schema: String,
        first: &'static str,
        first_table: &'static str,
        second: &'static str,
        second_table: &'static str,
    },
}

/// Every problem of a Sync's histories, found before anything is recorded
/// (each once: the same two files of one version are one problem however
/// many schemas meet it).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct HistoryErrors(pub Vec<HistoryError>);

/// How many problems a message lists before it counts the rest.
const LISTED: usize = 20;

impl std::fmt::Display for HistoryErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (index, error) in self.0.iter().take(LISTED).enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        if self.0.len() > LISTED {
            write!(f, "; and {} more", self.0.len() - LISTED)?;
        }
        Ok(())
    }
}

/// A Sync's `plan` cut to what each schema's history says ran (`found`:
/// every history [`probes`] and [`read`] found in the plan's schemas),
/// what it read in its diagnostics. Nothing found here nor `elsewhere`
/// (another part of the fleet holds some: the fleet adopts, so a tenant
/// here without a history records nothing either): the plan as it is.
/// `present`: the plan's single schemas that exist ([`existing`]).
/// Every problem of every schema is refused at once.
pub fn adopt(
    plan: Plan,
    sources: &[SourceMigration],
    found: Vec<Found>,
    elsewhere: bool,
    present: &[String],
) -> Result<Plan, HistoryErrors> {
    if found.is_empty() && !elsewhere {
        return Ok(plan);
    }
    let (by_schema, mut errors) = one_per_schema(found);
    let mut keep: FxHashSet<(u32, u32)> = FxHashSet::default();
    let mut adopted = Adopted::default();
    let mut as_planned: FxHashSet<u32> = FxHashSet::default();
    let tenant = tenant_schemas(&plan, sources);
    for (index, schema) in plan.schemas.iter().enumerate() {
        let Some(found) = by_schema.get(schema.as_str()) else {
            match !tenant[index] && present.contains(schema) {
                true => _ = as_planned.insert(index as u32),
                false => adopted.without.push(schema.clone()),
            }
            continue;
        };
        let candidates = candidates(sources, schema, tenant[index]);
        match applied(found, sources, &candidates) {
            Ok(files) => keep.extend(files.into_iter().map(|file| (index as u32, file))),
            Err(error) if !errors.contains(&error) => errors.push(error),
            Err(_) => {}
        }
        let history = format!("{} ({})", found.tool.name(), found.tool.table());
        match adopted.read.iter_mut().find(|(read, _)| *read == history) {
            Some((_, schemas)) => schemas.push(schema.clone()),
            None => adopted.read.push((history, vec![schema.clone()])),
        }
    }
    if !errors.is_empty() {
        return Err(HistoryErrors(errors));
    }
    adopted.read.sort();
    adopted.read.iter_mut().for_each(|(_, schemas)| schemas.sort());
    adopted.without.sort();
    let mut plan = retained(plan, sources, |step| {
        let source = &sources[step.migration as usize];
        (source.migration_type.is_script() && !source.repeatable)
            || as_planned.contains(&step.schema)
            || keep.contains(&(step.schema, step.migration))
    });
    plan.diagnostics.adopted = adopted;
    Ok(plan)
}

/// The histories by schema; a schema with two refused.
fn one_per_schema(found: Vec<Found>) -> (FxHashMap<String, Found>, Vec<HistoryError>) {
    let mut by_schema: FxHashMap<String, Found> = FxHashMap::default();
    let mut errors = Vec::new();
    for found in found {
        match by_schema.get(&found.schema) {
            Some(first) => {
                let (first, second) =
                    if first.tool < found.tool { (first.tool, found.tool) } else { (found.tool, first.tool) };
                errors.push(HistoryError::TwoTools {
                    schema: found.schema.clone(),
                    first: first.name(),
                    first_table: first.table(),
                    second: second.name(),
                    second_table: second.table(),
                });
            }
            None => {
                by_schema.insert(found.schema.clone(), found);
            }
        }
    }
    errors.sort_by_key(ToString::to_string);
    (by_schema, errors)
}

/// The migrations (indices into `sources`) that run in the schema `name`:
/// its single directory's, and the tenant kinds' where the plan runs tenant
/// files there (`tenant`). Scripts are not versions, but repeatable ones
/// are looked for in the history by their name.
fn candidates(sources: &[SourceMigration], name: &str, tenant: bool) -> Vec<u32> {
    (0..sources.len() as u32)
        .filter(|&index| {
            let source = &sources[index as usize];
            (!source.migration_type.is_script() || source.repeatable)
                && ((tenant && source.migration_type.is_tenant()) || source.single_schema() == Some(name))
        })
        .collect()
}

/// Per schema of the plan, whether it runs tenant files there: one pass
/// over the steps.
fn tenant_schemas(plan: &Plan, sources: &[SourceMigration]) -> Vec<bool> {
    let mut tenant = vec![false; plan.schemas.len()];
    for step in plan.steps.iter() {
        if sources[step.migration as usize].migration_type.is_tenant() {
            tenant[step.schema as usize] = true;
        }
    }
    tenant
}

/// The candidates `found` says ran.
fn applied(found: &Found, sources: &[SourceMigration], candidates: &[u32]) -> Result<Vec<u32>, HistoryError> {
    let tool = found.tool;
    refuse_several_rows(found)?;
    let repeatable: Vec<u32> = candidates.iter().copied().filter(|&i| sources[i as usize].repeatable).collect();
    let by_version = versions(tool, sources, candidates)?;
    let problem = |version: &str, dirty: bool| {
        let (schema, table, version) = (found.schema.clone(), tool.table(), version.to_string());
        match dirty {
            true => HistoryError::Dirty { schema, tool: tool.name(), table, version },
            false => HistoryError::NoFile { schema, tool: tool.name(), table, version },
        }
    };
    let mut ran: FxHashSet<u32> = FxHashSet::default();
    // Each repeatable script's last checksum.
    let mut repeated: FxHashMap<&str, &str> = FxHashMap::default();
    for (text, entry) in &found.rows {
        // Flyway's applied rows carry their checksum after the word.
        let (entry, checksum) = entry.split_once(' ').unwrap_or((entry, ""));
        let entry = Entry::parse(entry);
        match entry {
            Entry::Dirty => return Err(problem(text, true)),
            Entry::Repeatable => {
                repeated.insert(script_name(text), checksum);
                continue;
            }
            Entry::Unrepeated => {
                repeated.remove(script_name(text));
                continue;
            }
            _ => {}
        }
        // Atlas's own bookkeeping rows start with a dot; goose's first row
        // is version 0.
        let Some(version) = Version::parse(text).filter(|_| !text.starts_with('.')) else { continue };
        if tool == Tool::Goose && version == Version::Numbered(vec!["0".into()]) {
            continue;
        }
        let file = by_version.iter().find(|(v, _)| *v == version).map(|(_, index)| *index);
        match (entry, file) {
            (Entry::Applied, Some(file)) => {
                let source = &sources[file as usize];
                if let Some(now) = changed(tool, checksum, &source.contents) {
                    return Err(HistoryError::Changed {
                        schema: found.schema.clone(),
                        tool,
                        version: text.clone(),
                        file: source.file.clone(),
                        recorded: checksum.to_string(),
                        now,
                    });
                }
                ran.insert(file);
            }
            (Entry::Applied, None) => return Err(problem(text, false)),
            (Entry::Undone, Some(file)) => {
                ran.remove(&file);
            }
            (Entry::Through, None) if tool == Tool::GolangMigrate => return Err(problem(text, false)),
            (Entry::Through, _) => {
                ran.extend(
                    by_version.iter().filter(|(v, _)| v.compare(&version) != Ordering::Greater).map(|(_, i)| *i),
                );
            }
            _ => {}
        }
    }
    ran.extend(repeatable.into_iter().filter(|&index| {
        let source = &sources[index as usize];
        repeated.get(source.name.as_str()).is_some_and(|&sum| sum == flyway_checksum(&source.contents).to_string())
    }));
    let mut ran: Vec<u32> = ran.into_iter().collect();
    ran.sort_unstable();
    Ok(ran)
}

/// golang-migrate's table refused when it holds more than its one row.
fn refuse_several_rows(found: &Found) -> Result<(), HistoryError> {
    if found.tool != Tool::GolangMigrate || found.rows.len() <= 1 {
        return Ok(());
    }
    Err(HistoryError::SeveralRows {
        schema: found.schema.clone(),
        tool: found.tool.name(),
        table: found.tool.table(),
        rows: found.rows.len(),
    })
}

/// The versioned `candidates` by the version `tool` gives each; two files
/// of one version refused.
fn versions(tool: Tool, sources: &[SourceMigration], candidates: &[u32]) -> Result<Vec<(Version, u32)>, HistoryError> {
    let mut by_version: Vec<(Version, u32)> = Vec::new();
    for &index in candidates.iter().filter(|&&i| !sources[i as usize].repeatable) {
        let Some(version) = tool.version_of(&sources[index as usize].name) else { continue };
        if let Some((_, first)) = by_version.iter().find(|(v, _)| *v == version) {
            return Err(HistoryError::TwoFiles {
                tool: tool.name(),
                version: version.to_string(),
                first: sources[*first as usize].file.clone(),
                second: sources[index as usize].file.clone(),
            });
        }
        by_version.push((version, index));
    }
    Ok(by_version)
}

/// A script's file name without the directories Flyway recorded it under.
fn script_name(script: &str) -> &str {
    script.rsplit('/').next().unwrap_or(script)
}

/// The file's checksum now, computed as `tool` computes it, when the one
/// its history recorded (`recorded`, empty where the tool keeps none) is
/// another. sqlx's over the text as it is or with `\r\n` line ends read
/// as `\n` (a checkout's line ends are not a change).
fn changed(tool: Tool, recorded: &str, contents: &str) -> Option<String> {
    if recorded.is_empty() {
        return None;
    }
    match tool {
        Tool::Flyway => Some(flyway_checksum(contents).to_string()).filter(|now| now != recorded),
        Tool::Sqlx => {
            let now = sqlx_checksum(contents);
            let lf = contents.contains('\r').then(|| sqlx_checksum(&contents.replace("\r\n", "\n")));
            let crlf = sqlx_checksum(&contents.replace("\r\n", "\n").replace('\n', "\r\n"));
            let matches = [Some(&now), lf.as_ref(), Some(&crlf)].into_iter().flatten().any(|sum| sum == recorded);
            (!matches).then_some(now)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
