//! Source migrations: what the shell read from the base location, turned
//! into named, typed, checksummed migrations in application order.
//!
//! # Order
//!
//! Compatible with lukaszbudnik/migrator, so its users can switch:
//! 1. single and tenant migrations interleaved by file name, byte-wise; for
//!    equal names single directories come first, then tenant directories,
//!    each in configuration order;
//! 2. then every single script, by file name (then directory order);
//! 3. then every tenant script, the same way.
//!
//! Within a group, a migration's place is its format's
//! ([`crate::migrate::format::SortKey`]): Flyway's and golang-migrate's
//! versions as numbers, the others' names byte-wise as above.
//!
//! Files whose name starts with `.` (`.gitkeep`, `.DS_Store`) are not
//! migrations and are skipped; so are files that are not `.sql` (a
//! `README.md`), which [`read_directories`] lists for the shell to say.
//! Each directory is read in its format
//! ([`crate::migrate::format`]): what runs forward, what undoes it.

use std::cmp::Ordering;

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::migrate::format::{self, Format, FormatError, Part, SortKey};

/// The four kinds of source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MigrationType {
    /// Applied once to the schema named by its directory.
    SingleMigration,
    /// Applied once to every tenant schema.
    TenantMigration,
    /// Applied to the schema named by its directory on every run.
    SingleScript,
    /// Applied to every tenant schema on every run.
    TenantScript,
}

impl MigrationType {
    /// True for the two script kinds, which run on every version.
    pub fn is_script(self) -> bool {
        matches!(self, MigrationType::SingleScript | MigrationType::TenantScript)
    }

    /// True for the two tenant kinds, which run once per tenant.
    pub fn is_tenant(self) -> bool {
        matches!(self, MigrationType::TenantMigration | MigrationType::TenantScript)
    }

    /// The stable numeric code stored in `svc_migrations.migration_type`
    /// (1 to 4, as the peer stores them).
    pub fn code(self) -> i64 {
        match self {
            MigrationType::SingleMigration => 1,
            MigrationType::TenantMigration => 2,
            MigrationType::SingleScript => 3,
            MigrationType::TenantScript => 4,
        }
    }

    /// The type stored under `code`, if any.
    pub fn from_code(code: i64) -> Option<MigrationType> {
        use MigrationType::*;
        [SingleMigration, TenantMigration, SingleScript, TenantScript].into_iter().find(|t| t.code() == code)
    }
}

/// One file as the shell read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The configured directory it was listed in, as written in the config.
    pub directory: String,
    /// The file name, without any directory.
    pub name: String,
    /// The raw contents.
    pub bytes: Vec<u8>,
}

/// A migration or script from the base location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceMigration {
    /// File name, e.g. `202301011200.sql`.
    pub name: String,
    /// Kind, from the configuration list that names its directory.
    pub migration_type: MigrationType,
    /// The configured directory.
    pub source_dir: String,
    /// `source_dir/name`: relative to the base location, so moving the base
    /// location changes nothing. The identity of a source migration.
    pub file: String,
    /// The SQL text.
    pub contents: String,
    /// Lowercase hex SHA-256 of the raw bytes.
    pub checksum: String,
    /// What runs forward: the contents in its format's reading, with the
    /// lines outside the up part (markers, a down section) left empty, so
    /// positions are the file's ([`crate::migrate::format`]).
    pub forward: String,
    /// Its format's marker says it runs outside any transaction.
    pub no_transaction: bool,
    /// The format its directory is read in.
    pub format: Format,
    /// What undoes it, where its format says (never run forward).
    pub down: Option<Part>,
    /// Where it sorts.
    pub order: SortKey,
    /// A tenant file its tool ran with the tenant's schema as the session's
    /// own (another tool's format: dbmate's `search_path`, Flyway's
    /// `schemas`, a database per tenant), so its names need no `{schema}`:
    /// Strata runs it so too where the engine has a session schema
    /// (PostgreSQL's `search_path`, MySQL's database). A single directory's
    /// file runs where its tool ran it, the connection's own schema.
    pub in_its_schema: bool,
    /// A script that runs again only when its text changed since it last
    /// ran in a schema (Flyway's `R__` repeatable files), not on every
    /// version as Strata's (migrator's) scripts do.
    pub repeatable: bool,
}

impl SourceMigration {
    /// For single kinds, the schema it applies to: the last path element of
    /// its directory. `None` for tenant kinds (those apply to each tenant).
    pub fn single_schema(&self) -> Option<&str> {
        (!self.migration_type.is_tenant()).then(|| self.source_dir.rsplit('/').next().unwrap_or(&self.source_dir))
    }
}

impl SourceMigration {
    /// A migration of Strata's own format: `contents` all runs forward,
    /// sorted by name.
    pub fn plain(source_dir: &str, name: &str, migration_type: MigrationType, contents: &str) -> Self {
        SourceMigration {
            name: name.to_string(),
            migration_type,
            source_dir: source_dir.to_string(),
            file: format!("{source_dir}/{name}"),
            contents: contents.to_string(),
            checksum: checksum(contents.as_bytes()),
            forward: contents.to_string(),
            no_transaction: false,
            format: Format::Strata,
            down: None,
            order: SortKey::Name,
            in_its_schema: false,
            repeatable: false,
        }
    }

    /// The SQL to run in `schema`: the forward part with every occurrence
    /// of `placeholder` replaced by the schema name (plain text replacement,
    /// as the peer does; names are validated identifiers). The database
    /// stores the contents, not this.
    pub fn sql_for(&self, placeholder: &str, schema: &str) -> String {
        self.forward.replace(placeholder, schema)
    }
}

/// Why a set of source files could not be turned into migrations.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SourceError {
    /// The shell listed a directory that is not in the configuration.
    #[error("directory {0:?} is not configured")]
    UnknownDirectory(String),
    /// A file name is empty or contains a path separator.
    #[error("{directory}: {name:?} is not a plain file name")]
    BadFileName {
        /// Configured directory.
        directory: String,
        /// The file name.
        name: String,
    },
    /// A file is not valid UTF-8 text.
    #[error("{file}: not valid UTF-8 text (at byte {valid_up_to})")]
    NotUtf8 {
        /// `directory/name`.
        file: String,
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
    /// The same file was handed over twice.
    #[error("{0}: listed twice")]
    Duplicate(String),
    /// A directory's files cannot be read in their format.
    #[error(transparent)]
    Format(FormatError),
    /// A Sync up to a file that is no migration of the sources.
    #[error("{0}: not a migration of the sources (a Sync --to names a migration file as `directory/name`)")]
    NotAMigration(String),
}

impl From<FormatError> for SourceError {
    fn from(error: FormatError) -> Self {
        match error {
            FormatError::NotUtf8 { file, valid_up_to } => SourceError::NotUtf8 { file, valid_up_to },
            other => SourceError::Format(other),
        }
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn checksum(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    hex
}

/// Turns the files the shell read into source migrations in application
/// order (see the module documentation), every directory's format detected
/// from its files. `directories` are the configured directories with the
/// type each holds, in configuration order
/// ([`crate::migrate::config::Config::directories`]).
pub fn source_migrations<'a>(
    directories: impl IntoIterator<Item = (&'a str, MigrationType)>,
    files: Vec<SourceFile>,
) -> Result<Vec<SourceMigration>, SourceError> {
    read_sources(directories, &BTreeMap::new(), files)
}

/// [`source_migrations`], with the formats the configuration names for
/// some directories (`migrationFormats`); the others are detected.
pub fn read_sources<'a>(
    directories: impl IntoIterator<Item = (&'a str, MigrationType)>,
    formats: &BTreeMap<String, Format>,
    files: Vec<SourceFile>,
) -> Result<Vec<SourceMigration>, SourceError> {
    read_directories(directories, formats, files).map(|sources| sources.migrations)
}

/// The migrations of the configured directories, and the files their
/// formats ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// Every migration, in application order.
    pub migrations: Vec<SourceMigration>,
    /// `directory/name` of each file no format reads (not `.sql`, hidden
    /// names apart), for the shell to say once.
    pub ignored: Vec<String>,
}

/// [`read_sources`], with the files it ignored.
pub fn read_directories<'a>(
    directories: impl IntoIterator<Item = (&'a str, MigrationType)>,
    formats: &BTreeMap<String, Format>,
    files: Vec<SourceFile>,
) -> Result<Sources, SourceError> {
    let directories: Vec<(&str, MigrationType)> = directories.into_iter().collect();
    let mut per_directory: Vec<Vec<SourceFile>> = vec![Vec::new(); directories.len()];
    for file in files {
        let Some(position) = directories.iter().position(|(dir, _)| *dir == file.directory) else {
            return Err(SourceError::UnknownDirectory(file.directory));
        };
        if file.name.is_empty() || file.name.contains('/') || file.name.contains('\\') {
            return Err(SourceError::BadFileName { directory: file.directory, name: file.name });
        }
        if file.name.starts_with('.') {
            continue;
        }
        if let Some(twice) = per_directory[position].iter().find(|f| f.name == file.name) {
            return Err(SourceError::Duplicate(format!("{}/{}", twice.directory, twice.name)));
        }
        per_directory[position].push(file);
    }
    let mut keyed = Vec::new();
    let mut ignored = Vec::new();
    for (position, ((directory, migration_type), mut files)) in directories.iter().zip(per_directory).enumerate() {
        // By name, so what detection names does not depend on the loader.
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let inputs: Vec<format::Input<'_>> =
            files.iter().map(|f| format::Input { name: &f.name, bytes: &f.bytes }).collect();
        let format = match formats.get(*directory) {
            Some(format) => *format,
            None => format::detect(directory, &inputs)?,
        };
        ignored.extend(
            inputs.iter().filter(|f| format::ignored(format, f.name)).map(|f| format!("{directory}/{}", f.name)),
        );
        for read in format::read(directory, format, &inputs)? {
            let path = format!("{directory}/{}", read.name);
            let checksum = checksum(&read.bytes);
            let contents = String::from_utf8(read.bytes)
                .map_err(|e| SourceError::NotUtf8 { file: path.clone(), valid_up_to: e.utf8_error().valid_up_to() })?;
            let migration_type = match (read.repeatable, *migration_type) {
                (true, MigrationType::SingleMigration) => MigrationType::SingleScript,
                (true, MigrationType::TenantMigration) => MigrationType::TenantScript,
                (_, kind) => kind,
            };
            keyed.push((
                position,
                SourceMigration {
                    name: read.name,
                    migration_type,
                    source_dir: directory.to_string(),
                    file: path,
                    contents,
                    checksum,
                    forward: read.forward.text,
                    no_transaction: read.forward.no_transaction,
                    format,
                    down: read.down,
                    order: read.order,
                    in_its_schema: format != Format::Strata && migration_type.is_tenant(),
                    repeatable: read.repeatable,
                },
            ));
        }
    }
    keyed.sort_by(|(a_pos, a), (b_pos, b)| compare(a, *a_pos, b, *b_pos));
    if let Some(pair) = keyed.windows(2).find(|pair| pair[0].1.file == pair[1].1.file) {
        return Err(SourceError::Duplicate(pair[0].1.file.clone()));
    }
    Ok(Sources { migrations: keyed.into_iter().map(|(_, migration)| migration).collect(), ignored })
}

/// The migrations of `sources` (in application order) up to and including
/// `file`: what a Sync records to adopt a database that is at `file` (a
/// baseline), never the files after it, nor scripts.
pub fn through(sources: Vec<SourceMigration>, file: &str) -> Result<Vec<SourceMigration>, SourceError> {
    let Some(last) = sources.iter().position(|m| m.file == file && !m.migration_type.is_script()) else {
        return Err(SourceError::NotAMigration(file.to_string()));
    };
    Ok(sources.into_iter().take(last + 1).filter(|m| !m.migration_type.is_script()).collect())
}

/// Group: migrations (single and tenant together), then single scripts, then
/// tenant scripts. Within a group: name, then single before tenant, then
/// directory position in the configuration.
fn compare(a: &SourceMigration, a_pos: usize, b: &SourceMigration, b_pos: usize) -> Ordering {
    let group = |t: MigrationType| match t {
        MigrationType::SingleMigration | MigrationType::TenantMigration => 0,
        MigrationType::SingleScript => 1,
        MigrationType::TenantScript => 2,
    };
    group(a.migration_type)
        .cmp(&group(b.migration_type))
        .then_with(|| a.order.compare(&a.name, &b.order, &b.name))
        .then_with(|| a.migration_type.cmp(&b.migration_type))
        .then_with(|| a_pos.cmp(&b_pos))
}

#[cfg(test)]
mod tests;
