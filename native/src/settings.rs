//! Loading the configuration file: the shell's half of config handling (read
//! the file and the environment); parsing and validation are in the core.

use std::ffi::OsString;
use std::path::PathBuf;

use strata_core::migrate::config::{Config, ParseOptions, ProcessEnvironment};

/// The configuration path when `SVC_YAML` is not set.
pub(crate) const DEFAULT_PATH: &str = "/data/svc.yaml";

/// Reads and parses the configuration: `path` (the command line's
/// `--config`), else `SVC_YAML`, else [`DEFAULT_PATH`], with relative paths
/// read from the file's directory; `offline` for a command that never
/// connects (see [`ParseOptions::offline`]). The error is one line naming
/// the file and the problem.
pub(crate) fn load(path: Option<&std::path::Path>, offline: bool) -> Result<(String, Config), String> {
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => std::env::var_os("SVC_YAML").map_or_else(|| PathBuf::from(DEFAULT_PATH), PathBuf::from),
    };
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{shown}: cannot read configuration: {e}"))?;
    let directory = path.parent().map(|dir| dir.to_string_lossy().into_owned());
    let options = ParseOptions { directory, offline };
    let config = Config::parse_with(&text, &process_environment(std::env::vars_os()), &options)
        .map_err(|e| format!("{shown}: {e}"))?;
    Ok((shown, config))
}

/// The environment as the core takes it. Variables whose values are not
/// UTF-8 are kept by name only (they matter only if the configuration refers
/// to them); variables whose names are not UTF-8 cannot be referred to and
/// are left out.
fn process_environment(vars: impl Iterator<Item = (OsString, OsString)>) -> ProcessEnvironment {
    let mut environment = ProcessEnvironment::default();
    for (name, value) in vars {
        let Ok(name) = name.into_string() else { continue };
        match value.into_string() {
            Ok(value) => {
                environment.values.insert(name, value);
            }
            Err(_) => {
                environment.not_unicode.insert(name);
            }
        }
    }
    environment
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStringExt;

    use strata_core::migrate::config::{EnvValue, Environment};

    use super::*;

    #[test]
    fn non_utf8_values_are_kept_by_name_and_non_utf8_names_dropped() {
        let vars = vec![
            (OsString::from("PLAIN"), OsString::from("value")),
            (OsString::from("LATIN1"), OsString::from_vec(vec![0x63, 0x61, 0x66, 0xe9])),
            (OsString::from_vec(vec![0xff, 0x41]), OsString::from("x")),
        ];
        let environment = process_environment(vars.into_iter());
        assert_eq!(environment.lookup("PLAIN"), EnvValue::Set("value"));
        assert_eq!(environment.lookup("LATIN1"), EnvValue::NotUnicode);
        assert_eq!(environment.lookup("ABSENT"), EnvValue::Unset);
        assert_eq!(environment.values.len(), 1);
    }
}
