//! Relative paths of a configuration: a local `baseLocation` and SQLite
//! database files are read relative to the directory of the configuration
//! file, not to the directory the command happens to run in. Text only:
//! nothing here touches the file system.

use crate::migrate::driver::Driver;
use crate::migrate::location::BaseLocation;

/// `path` resolved against `directory`: an absolute path (or no directory)
/// stays as it is; a leading `./` is dropped before joining.
pub(crate) fn join(directory: Option<&str>, path: &str) -> String {
    let Some(directory) = directory.filter(|d| !d.is_empty() && *d != ".") else {
        return path.to_string();
    };
    if path.starts_with('/') || path.is_empty() {
        return path.to_string();
    }
    let mut relative = path;
    while let Some(rest) = relative.strip_prefix("./") {
        relative = rest;
    }
    let directory = directory.trim_end_matches('/');
    if relative.is_empty() || relative == "." { directory.to_string() } else { format!("{directory}/{relative}") }
}

/// A `baseLocation` with a relative local path resolved; storage URLs stay.
pub(crate) fn base_location(directory: Option<&str>, text: &str) -> String {
    match BaseLocation::parse(text) {
        Ok(BaseLocation::Local(path)) => join(directory, &path),
        _ => text.to_string(),
    }
}

/// A SQLite `dataSource` (a `sqlite:` URL or a file path) with a relative
/// file resolved; an in-memory database and other drivers' forms stay.
pub(crate) fn data_source(driver: Driver, directory: Option<&str>, text: &str) -> String {
    if driver != Driver::Sqlite {
        return text.to_string();
    }
    let trimmed = text.trim();
    let (scheme, rest) = match trimmed.strip_prefix("sqlite://") {
        Some(rest) => ("sqlite://", rest),
        None => match trimmed.strip_prefix("sqlite:") {
            Some(rest) => ("sqlite:", rest),
            None => ("", trimmed),
        },
    };
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    if path.is_empty() || path.starts_with(':') || path.starts_with("file:") {
        return text.to_string();
    }
    let joined = join(directory, path);
    match query {
        Some(query) => format!("{scheme}{joined}?{query}"),
        None => format!("{scheme}{joined}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_configuration_directory() {
        assert_eq!(join(Some("/etc/strata"), "migrations"), "/etc/strata/migrations");
        assert_eq!(join(Some("/etc/strata/"), "./././m"), "/etc/strata/m");
        assert_eq!(join(Some("conf"), "../m"), "conf/../m");
        assert_eq!(join(Some("conf"), "."), "conf");
        assert_eq!(join(Some("/etc"), "/abs/m"), "/abs/m");
        assert_eq!(join(None, "m"), "m");
        assert_eq!(join(Some(""), "m"), "m");
        assert_eq!(join(Some("."), "./m"), "./m");
    }

    #[test]
    fn only_local_base_locations_move() {
        assert_eq!(base_location(Some("/c"), "migrations"), "/c/migrations");
        assert_eq!(base_location(Some("/c"), "s3://bucket/p"), "s3://bucket/p");
        let blob = "https://acct.blob.core.windows.net/container/p";
        assert_eq!(base_location(Some("/c"), blob), blob);
    }

    #[test]
    fn sqlite_files_move_and_memory_stays() {
        let dir = Some("/srv/app");
        for (written, resolved) in [
            ("sqlite://./data/main.db?mode=rwc", "sqlite:///srv/app/data/main.db?mode=rwc"),
            ("sqlite:data.db", "sqlite:/srv/app/data.db"),
            ("sqlite:///var/lib/s.db", "sqlite:///var/lib/s.db"),
            ("sqlite::memory:", "sqlite::memory:"),
            ("sqlite://:memory:", "sqlite://:memory:"),
            ("./data/main.db", "/srv/app/data/main.db"),
            ("/abs/main.db", "/abs/main.db"),
        ] {
            assert_eq!(data_source(Driver::Sqlite, dir, written), resolved, "{written}");
        }
        let postgres = "postgres://u:p@h/db";
        assert_eq!(data_source(Driver::Postgres, dir, postgres), postgres);
    }
}
