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
