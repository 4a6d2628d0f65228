//! `strata new NAME [--dir DIR]`: the next migration file of a directory,
//! named and started in the directory's own convention (core's
//! `format::next_files`), written on the local disk.

use std::path::Path;

use chrono::Utc;
use strata_core::migrate::config::Config;
use strata_core::migrate::format::{self, Format, Input};
use strata_core::migrate::location::BaseLocation;

use crate::cli::Exit;

/// Creates the next file(s) of `dir` (default: the only migration
/// directory) and prints their paths.
pub(super) fn new_migration(config: &Config, description: &str, dir: Option<&str>) -> Exit {
    let Ok(BaseLocation::Local(base)) = BaseLocation::parse(&config.base_location) else {
        eprintln!("strata: new writes to a local baseLocation only (this one is {})", config.base_location);
        return Exit::Usage;
    };
    let migration_dirs: Vec<&str> =
        config.directories().filter(|(_, kind)| !kind.is_script()).map(|(dir, _)| dir).collect();
    let directory = match dir {
        Some(dir) if config.directories().any(|(d, _)| d == dir) => dir,
        Some(dir) => {
            eprintln!("strata: {dir} is not a configured directory (configured: {})", migration_dirs.join(", "));
            return Exit::Usage;
        }
        None if migration_dirs.len() == 1 => migration_dirs[0],
        None => {
            eprintln!("strata: name the directory with --dir (configured: {})", migration_dirs.join(", "));
            return Exit::Usage;
        }
    };
    let path = Path::new(&base).join(directory);
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    match std::fs::read_dir(&path) {
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
            return Exit::Failed;
        }
    }
    let inputs: Vec<Input<'_>> = files.iter().map(|(name, bytes)| Input { name, bytes }).collect();
    let format = match config.migration_formats.get(directory) {
        Some(format) => *format,
        None => match format::detect(directory, &inputs) {
            Ok(format) => format,
            Err(e) => {
                eprintln!("strata: {e}");
                return Exit::Failed;
            }
        },
    };
    let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    let now = Utc::now().format("%Y%m%d%H%M%S").to_string();
    let new = match format::next_files(format, &names, description, &now) {
        Ok(new) => new,
        Err(e) => {
            eprintln!("strata: {e}");
            return Exit::Usage;
        }
    };
    if let Err(e) = std::fs::create_dir_all(&path) {
        eprintln!("strata: {}: {e}", path.display());
        return Exit::Failed;
    }
    for file in &new {
        let target = path.join(&file.name);
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
    if format != Format::Strata {
        eprintln!("strata: {directory} is read as {} files", format.name());
    }
    Exit::Success
}
