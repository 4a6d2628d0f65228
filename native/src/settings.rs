//! Loading the configuration file: the shell's half of config handling (read
//! the file and the environment); parsing and validation are in the core.

use std::collections::BTreeMap;

use strata_core::config::Config;

/// The configuration path when `SVC_YAML` is not set.
pub const DEFAULT_PATH: &str = "/data/svc.yaml";

/// Reads and parses the configuration. The error is one line naming the
/// file and the problem.
pub fn load() -> Result<(String, Config), String> {
    let path = std::env::var("SVC_YAML").unwrap_or_else(|_| DEFAULT_PATH.to_string());
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: cannot read configuration: {e}"))?;
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let config = Config::parse(&text, &env).map_err(|e| format!("{path}: {e}"))?;
    Ok((path, config))
}
