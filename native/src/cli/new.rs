//! `strata new NAME [--dir DIR] [--desired FILE]`: the next migration file
//! of a directory, named and started in the directory's own convention
//! (core's `format::next_files`), written on the local disk; with
//! `--desired`, holding the fleet's majority plan to that schema.

use std::path::Path;

use chrono::Utc;
use strata_core::migrate::config::Config;
use strata_core::migrate::desired::{self, DesiredReport};
use strata_core::migrate::format::{self, Format, Input};
use strata_core::migrate::location::BaseLocation;

use crate::cli::Exit;

/// Creates the next file(s) of `dir` (default: the only migration
/// directory) and prints their paths.
pub(super) fn new_migration(config: &Config, description: &str, dir: Option<&str>) -> Exit {
    match next_in(config, description, dir) {
        Ok(next) => next.write(Vec::new()),
        Err(exit) => exit,
    }
}

/// `new NAME --desired FILE`: the next file holding the plan of the
/// largest group of tenants that differs from the desired schema (core's
/// `desired::majority_file`); how the other groups fare, on stderr.
/// `noun` names what the report's schemas are: `tenant`, or `schema` for
/// a single schema's.
pub(super) fn new_from_desired(
    config: &Config,
    description: &str,
    dir: Option<&str>,
    report: &DesiredReport,
    noun: &str,
) -> Exit {
    let Some(majority) = desired::majority_file(report) else {
        let differing = report.differing;
        eprintln!(
            "strata: no file written: {}",
            if differing == 0 {
                format!("every {noun} is in the desired schema")
            } else {
                format!(
                    "most {noun}s are in the desired schema already; {differing} differ (strata diff --desired \
                     shows their plans)"
                )
            }
        );
        return Exit::Success;
    };
    // The tenants' directory, when there is one.
    let tenant_dirs: Vec<&str> = config
        .directories()
        .filter(|(_, kind)| *kind == strata_core::migrate::MigrationType::TenantMigration)
        .map(|(dir, _)| dir)
        .collect();
    let dir = dir.or(match tenant_dirs.as_slice() {
        [only] => Some(*only),
        _ => None,
    });
    let next = match next_in(config, description, dir) {
        Ok(next) => next,
        Err(exit) => return exit,
    };
    let statements: Vec<String> = majority.group.steps.iter().map(|s| s.sql.clone()).collect();
    let comments: Vec<String> = majority.group.unplannable.iter().map(|r| format!("not planned: {r}")).collect();
    let files = format::with_statements(next.format, next.files.clone(), &comments, &statements);
    let exit = next.write(files);
    if exit == Exit::Success {
        let destructive = if majority.group.destructive { ", destructive" } else { "" };
        eprintln!(
            "strata: the plan of {} {noun}(s) ({} step(s){destructive})",
            majority.group.tenants.len(),
            majority.group.steps.len()
        );
        eprint!("{}", desired::render_others(&majority));
    }
    exit
}

/// The next file(s) of a directory, not yet written.
struct Next {
    path: std::path::PathBuf,
    directory: String,
    format: Format,
    files: Vec<format::NewFile>,
}

impl Next {
    /// Writes `files` (empty: the files as named, with the format's
    /// markers), never over an existing one, and prints their paths.
    fn write(self, files: Vec<format::NewFile>) -> Exit {
        let files = if files.is_empty() { self.files } else { files };
        if let Err(e) = std::fs::create_dir_all(&self.path) {
            eprintln!("strata: {}: {e}", self.path.display());
            return Exit::Failed;
        }
        for file in &files {
            let target = self.path.join(&file.name);
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
                .and_then(|mut f| std::io::Write::write_all(&mut f, file.contents.as_bytes()));
            if let Err(e) = written {
                eprintln!("strata: {}: {e}", target.display());
                return Exit::Failed;
            }
            outln!("{}", target.display());
        }
        if self.format == Format::Atlas {
            let exit = match read_files(&self.path) {
                Ok(files) => write_atlas_sum(&self.path, &files),
                Err(exit) => exit,
            };
            if exit != Exit::Success {
                return exit;
            }
        }
        if self.format != Format::Strata {
            eprintln!("strata: {} is read as {} files", self.directory, self.format.name());
        }
        Exit::Success
    }
}

/// `hash [--dir DIR]`: an Atlas directory's `atlas.sum` written again
/// over its files as they are (what `atlas migrate hash` does), once their
/// change has been reviewed.
pub(super) fn hash(config: &Config, dir: Option<&str>) -> Exit {
    let (path, directory, files) = match directory_files(config, dir) {
        Ok(found) => found,
        Err(exit) => return exit,
    };
    let inputs: Vec<Input<'_>> = files.iter().map(|(name, bytes)| Input { name, bytes }).collect();
    let format = match format_of(config, &directory, &inputs) {
        Ok(format) => format,
        Err(exit) => return exit,
    };
    if format != Format::Atlas {
        eprintln!("strata: {directory} is read as {} files, which have no atlas.sum", format.name());
        return Exit::Usage;
    }
    let exit = write_atlas_sum(&path, &files);
    if exit == Exit::Success {
        outln!("{}", path.join(format::atlas::SUM_FILE).display());
    }
    exit
}

/// Writes `atlas.sum` in `path` over its `files` (as [`read_files`] read them).
fn write_atlas_sum(path: &Path, files: &[(String, Vec<u8>)]) -> Exit {
    let inputs: Vec<Input<'_>> = files.iter().map(|(name, bytes)| Input { name, bytes }).collect();
    let target = path.join(format::atlas::SUM_FILE);
    if let Err(e) = std::fs::write(&target, format::atlas::sum_text(&inputs)) {
        eprintln!("strata: {}: {e}", target.display());
        return Exit::Failed;
    }
    Exit::Success
}

/// The files of a directory (none when it does not exist).
fn read_files(path: &Path) -> Result<Vec<(String, Vec<u8>)>, Exit> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    match std::fs::read_dir(path) {
        Ok(entries) => {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_file()) {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    files.push((name, std::fs::read(entry.path()).unwrap_or_default()));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            eprintln!("strata: {}: {e}", path.display());
            return Err(Exit::Failed);
        }
    }
    Ok(files)
}

/// A directory's format: the configuration's, else the one its files show.
fn format_of(config: &Config, directory: &str, inputs: &[Input<'_>]) -> Result<Format, Exit> {
    match config.migration_formats.get(directory) {
        Some(format) => Ok(*format),
        None => format::detect(directory, inputs).map_err(|e| {
            eprintln!("strata: {e}");
            Exit::Failed
        }),
    }
}

/// The directory (`dir`, default: the only migration directory), its
/// format and the names of its next file(s). An Atlas directory whose
/// files are not the ones its `atlas.sum` sums is refused (as `atlas
/// migrate new` refuses it): the sum written after the new file would
/// take in an unreviewed change.
fn next_in(config: &Config, description: &str, dir: Option<&str>) -> Result<Next, Exit> {
    let (path, directory, files) = directory_files(config, dir)?;
    let inputs: Vec<Input<'_>> = files.iter().map(|(name, bytes)| Input { name, bytes }).collect();
    let format = format_of(config, &directory, &inputs)?;
    let read: Vec<&Input<'_>> = inputs.iter().filter(|f| !format::ignored(format, f.name)).collect();
    if format == Format::Atlas
        && !read.is_empty()
        && let Err(e) = format::atlas::check_sum(&directory, &read)
    {
        eprintln!("strata: {e}");
        return Err(Exit::Failed);
    }
    let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    let now = Utc::now().format("%Y%m%d%H%M%S").to_string();
    match format::next_files(format, &names, description, &now) {
        Ok(new) => Ok(Next { path, directory, format, files: new }),
        Err(e) => {
            eprintln!("strata: {e}");
            Err(Exit::Usage)
        }
    }
}

/// The directory `dir` names (default: the only migration directory) on
/// the local disk: its path, its name and its files.
type DirectoryFiles = (std::path::PathBuf, String, Vec<(String, Vec<u8>)>);
fn directory_files(config: &Config, dir: Option<&str>) -> Result<DirectoryFiles, Exit> {
    let Ok(BaseLocation::Local(base)) = BaseLocation::parse(&config.base_location) else {
        eprintln!("strata: writes to a local baseLocation only (this one is {})", config.base_location);
        return Err(Exit::Usage);
    };
    let migration_dirs: Vec<&str> =
        config.directories().filter(|(_, kind)| !kind.is_script()).map(|(dir, _)| dir).collect();
    let directory = match dir {
        Some(dir) if config.directories().any(|(d, _)| d == dir) => dir,
        Some(dir) => {
            eprintln!("strata: {dir} is not a configured directory (configured: {})", migration_dirs.join(", "));
            return Err(Exit::Usage);
        }
        None if migration_dirs.len() == 1 => migration_dirs[0],
        None => {
            eprintln!("strata: name the directory with --dir (configured: {})", migration_dirs.join(", "));
            return Err(Exit::Usage);
        }
    };
    let path = Path::new(&base).join(directory);
    let files = read_files(&path)?;
    Ok((path, directory.to_string(), files))
}
