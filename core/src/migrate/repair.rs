//! `strata repair` (Flyway's name): record a deliberate change to the
//! source, and nothing else.
//!
//! - A file changed since it was applied (drift) gets its new checksum
//!   recorded, in every schema that recorded it.
//! - The records of a file deleted from the source are removed.
//!
//! A repair never records a pending file (that is Sync's job, which says
//! so) and never runs SQL of a migration. Asked for no file, it covers
//! every changed and every deleted file; asked for some, exactly those,
//! and a name that is neither is refused before anything changes.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use thiserror::Error;

use crate::migrate::plan::AppliedMigration;
use crate::migrate::source::SourceMigration;

/// A changed file whose new checksum is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewChecksum {
    /// The file.
    pub file: String,
    /// Its checksum now.
    pub checksum: String,
    /// The checksums recorded until now, sorted.
    pub recorded: Vec<String>,
    /// The schemas whose records change, sorted.
    pub schemas: Vec<String>,
}

/// A deleted file whose records are removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removal {
    /// The recorded file.
    pub file: String,
    /// The schemas whose record of it goes, sorted.
    pub schemas: Vec<String>,
}

/// What a repair changes in the books.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Repair {
    /// Changed files, by file.
    pub checksums: Vec<NewChecksum>,
    /// Deleted files, by file.
    pub removals: Vec<Removal>,
}

impl Repair {
    /// Nothing to change.
    pub fn is_empty(&self) -> bool {
        self.checksums.is_empty() && self.removals.is_empty()
    }

    /// The records it changes or removes.
    pub fn records(&self) -> usize {
        self.checksums.iter().map(|c| c.schemas.len()).sum::<usize>()
            + self.removals.iter().map(|r| r.schemas.len()).sum::<usize>()
    }
}

/// Why a repair was refused (nothing changed).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RepairError {
    /// The file was never applied: repair never records a pending file.
    #[error(
        "{0} is pending (applied nowhere): repair never records a file that did not run — apply it, or adopt it \
         deliberately with a Sync (`strata plan --sync` lists what a Sync would record without running)"
    )]
    Pending(String),
    /// The file is applied and unchanged.
    #[error("{0} has not changed since it was applied: nothing to repair")]
    Unchanged(String),
    /// A script: scripts run on every version and are never compared.
    #[error("{0} is a script: scripts run on every version, nothing to repair")]
    Script(String),
    /// Named, but no shard holds a change or a deletion of it.
    #[error("{0}: no shard holds a change or a deletion of it (unchanged, pending or unknown everywhere)")]
    NothingOnAnyShard(String),
    /// Neither a source file nor a recorded one.
    #[error("{0} is neither a source file nor a recorded migration (files are named directory/name)")]
    Unknown(String),
}

/// Decides a repair over `applied` given `sources`; `files` empty means
/// every changed and every deleted file. `strict`: a named file with
/// nothing to repair is refused (one server); else it is left out (one
/// shard of several: another may hold its change).
pub fn repair(
    sources: &[SourceMigration],
    applied: &[AppliedMigration],
    files: &[String],
    strict: bool,
) -> Result<Repair, RepairError> {
    let by_file: BTreeMap<&str, &SourceMigration> = sources.iter().map(|s| (s.file.as_str(), s)).collect();
    let mut changed: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    let mut deleted: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut recorded: BTreeSet<&str> = BTreeSet::new();
    for row in applied.iter().filter(|row| !row.migration_type.is_script()) {
        recorded.insert(row.file.as_str());
        match by_file.get(row.file.as_str()) {
            Some(source) if source.migration_type.is_script() => {}
            Some(source) if source.checksum != row.checksum => {
                let (checksums, schemas) = changed.entry(row.file.as_str()).or_default();
                checksums.insert(row.checksum.as_str());
                schemas.insert(row.schema.as_str());
            }
            Some(_) => {}
            None => {
                deleted.entry(row.file.as_str()).or_default().insert(row.schema.as_str());
            }
        }
    }
    let wanted: Option<BTreeSet<&str>> = (!files.is_empty()).then(|| files.iter().map(String::as_str).collect());
    if let Some(wanted) = wanted.as_ref().filter(|_| strict) {
        for file in wanted {
            if changed.contains_key(file) || deleted.contains_key(file) {
                continue;
            }
            return Err(match by_file.get(file) {
                Some(source) if source.migration_type.is_script() => RepairError::Script(file.to_string()),
                Some(_) if recorded.contains(file) => RepairError::Unchanged(file.to_string()),
                Some(_) => RepairError::Pending(file.to_string()),
                None => RepairError::Unknown(file.to_string()),
            });
        }
    }
    let chosen = |file: &str| wanted.as_ref().is_none_or(|w| w.contains(file));
    let strings = |set: BTreeSet<&str>| set.into_iter().map(str::to_string).collect::<Vec<_>>();
    Ok(Repair {
        checksums: changed
            .into_iter()
            .filter(|(file, _)| chosen(file))
            .map(|(file, (checksums, schemas))| NewChecksum {
                file: file.to_string(),
                checksum: by_file[file].checksum.clone(),
                recorded: strings(checksums),
                schemas: strings(schemas),
            })
            .collect(),
        removals: deleted
            .into_iter()
            .filter(|(file, _)| chosen(file))
            .map(|(file, schemas)| Removal { file: file.to_string(), schemas: strings(schemas) })
            .collect(),
    })
}

/// A repair as text, before it runs (`done: false`) or after.
pub fn render(repair: &Repair, done: bool) -> String {
    if repair.is_empty() {
        return "Nothing to repair: no applied file changed or was deleted.\n".to_string();
    }
    let mut out = String::new();
    let verb = |will: &'static str, did: &'static str| if done { did } else { will };
    for item in &repair.checksums {
        out.push_str(&format!(
            "{} the new checksum of {} in {} schema(s) ({} -> {})\n",
            verb("Will record", "Recorded"),
            item.file,
            item.schemas.len(),
            short(&item.recorded.join(",")),
            short(&item.checksum)
        ));
    }
    for item in &repair.removals {
        out.push_str(&format!(
            "{} the records of {} (deleted from the source) in {} schema(s)\n",
            verb("Will remove", "Removed"),
            item.file,
            item.schemas.len()
        ));
    }
    out
}

fn short(checksum: &str) -> String {
    checksum.split(',').map(|c| c.get(..12).unwrap_or(c)).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::MigrationType;

    fn row(file: &str, schema: &str, checksum: &str) -> AppliedMigration {
        AppliedMigration {
            file: file.into(),
            name: file.rsplit('/').next().unwrap_or(file).into(),
            schema: schema.into(),
            migration_type: MigrationType::TenantMigration,
            checksum: checksum.into(),
        }
    }

    fn sources() -> Vec<SourceMigration> {
        vec![
            SourceMigration::plain("t", "1.sql", MigrationType::TenantMigration, "create table a (x int);"),
            SourceMigration::plain("t", "2.sql", MigrationType::TenantMigration, "create table b (x int);"),
            SourceMigration::plain("t", "3.sql", MigrationType::TenantMigration, "create table c (x int);"),
            SourceMigration::plain("s", "s.sql", MigrationType::TenantScript, "select 1;"),
        ]
    }

    #[test]
    fn records_new_checksums_and_removes_deleted_files_but_never_a_pending_one() {
        let sources = sources();
        let applied = vec![
            row("t/1.sql", "a", &sources[0].checksum),
            row("t/1.sql", "b", &sources[0].checksum),
            row("t/2.sql", "a", "old"),
            row("t/2.sql", "b", "older"),
            row("t/gone.sql", "b", "x"),
        ];
        let all = repair(&sources, &applied, &[], true).unwrap();
        assert_eq!(
            all.checksums,
            [NewChecksum {
                file: "t/2.sql".into(),
                checksum: sources[1].checksum.clone(),
                recorded: vec!["old".into(), "older".into()],
                schemas: vec!["a".into(), "b".into()],
            }]
        );
        assert_eq!(all.removals, [Removal { file: "t/gone.sql".into(), schemas: vec!["b".into()] }]);
        assert_eq!(all.records(), 3);
        // t/3.sql is pending in both schemas: nothing about it changes.
        assert!(!render(&all, false).contains("3.sql"));

        let one = repair(&sources, &applied, &["t/gone.sql".to_string()], true).unwrap();
        assert!(one.checksums.is_empty());
        assert_eq!(one.removals.len(), 1);

        let refuse = |file: &str| repair(&sources, &applied, &[file.to_string()], true).unwrap_err();
        assert_eq!(refuse("t/3.sql"), RepairError::Pending("t/3.sql".into()));
        assert_eq!(refuse("t/1.sql"), RepairError::Unchanged("t/1.sql".into()));
        assert_eq!(refuse("s/s.sql"), RepairError::Script("s/s.sql".into()));
        assert_eq!(refuse("t/none.sql"), RepairError::Unknown("t/none.sql".into()));
        assert!(refuse("t/3.sql").to_string().contains("never records a file that did not run"));
        // One shard of several leaves out what it has nothing of.
        let lenient = repair(&sources, &applied, &["t/3.sql".to_string(), "t/2.sql".to_string()], false).unwrap();
        assert_eq!((lenient.checksums.len(), lenient.removals.len()), (1, 0));
    }

    #[test]
    fn an_untouched_source_has_nothing_to_repair() {
        let sources = sources();
        let applied = vec![row("t/1.sql", "a", &sources[0].checksum)];
        let nothing = repair(&sources, &applied, &[], true).unwrap();
        assert!(nothing.is_empty());
        assert_eq!(render(&nothing, true), "Nothing to repair: no applied file changed or was deleted.\n");
    }
}
