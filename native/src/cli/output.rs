//! What every command shares: the request id its changes are stored with,
//! and how it ends — its JSON on stdout, or its error's one line on stderr
//! and the exit status that names it.

use std::io::Write;

use super::Exit;
use crate::error::AppError;

/// The exit status of a failed operation, after its one-line message.
pub(super) fn failure(error: &AppError) -> Exit {
    eprintln!("strata: {error}");
    Exit::from(error)
}

/// Writes `value` as pretty JSON on stdout (a reader that went away is
/// ignored).
pub(super) fn print_json(value: &impl serde::Serialize) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
}

/// The request id a command's version (or rollout action) is stored with.
pub(super) fn cli_request_id() -> String {
    format!("strata-cli-{}", uuid::Uuid::new_v4())
}

/// Who runs a command in-process: `cli:<os user>@<host>`, with a new
/// request id. (Whoever holds the configuration holds the database's
/// credentials: the command line is not authenticated further.)
pub(super) fn cli_caller() -> crate::service::Caller {
    let user = ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "unknown".to_string());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    crate::service::Caller { request_id: cli_request_id(), actor: format!("cli:{user}@{host}") }
}

/// What `quarantine release` prints: the tenants released.
pub(super) fn print_released(released: &[String], json: bool) -> Exit {
    if json {
        print_json(&serde_json::json!({ "released": released }));
    } else {
        outln!("Released {} tenant(s): {}", released.len(), released.join(", "));
    }
    Exit::Success
}
