//! What every command shares: the request id its changes are stored with,
//! and how it ends — its JSON on stdout, or its error's one line on stderr
//! and the exit status that names it.

use std::io::{BufWriter, Write};

use crate::cli::Exit;
use crate::error::AppError;
use crate::graphql::types::{CreateResultsDto, DbMigrationDto};
use crate::service::Service;

/// The exit status of a failed operation, after its one-line message
/// ([`printable`]: an object's key or a server's message must not reach
/// the terminal as an escape sequence).
pub(super) fn failure(error: &AppError) -> Exit {
    eprintln!("strata: {}", printable(&error.to_string()));
    Exit::from(error)
}

/// `text` on one line without control characters: each is a space (an
/// escape sequence could move the cursor, clear the screen or forge a line
/// of output).
pub(super) fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// Writes `value` as pretty JSON on stdout (a reader that went away is
/// ignored).
pub(super) fn print_json(value: &impl serde::Serialize) {
    let mut out = BufWriter::new(std::io::stdout().lock());
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
    let _ = out.flush();
}

/// Writes a version's result as pretty JSON on stdout with its
/// `dbMigrations` read page by page as they are written (the same text as
/// [`print_json`] of the result with every row in it): a version over a
/// fleet of any size is printed holding one page of rows at a time.
pub(super) async fn print_json_with_migrations(
    service: &Service,
    mut result: CreateResultsDto,
    parts: &[i64],
) -> Result<(), AppError> {
    let Some(version) = &mut result.version else {
        print_json(&result);
        return Ok(());
    };
    version.migrations = Some(Vec::new());
    let text = serde_json::to_string_pretty(&result).map_err(|e| AppError::Internal(e.to_string()))?;
    // A string holding the marker is escaped (`\"`): the marker is the field.
    const MARKER: &str = "\"dbMigrations\": []";
    let Some(at) = text.find(MARKER) else {
        print_json(&result);
        return Ok(());
    };
    let line_start = text[..at].rfind('\n').map_or(0, |newline| newline + 1);
    let indent = " ".repeat(at - line_start + 2);
    let mut out = BufWriter::new(std::io::stdout());
    let _ = out.write_all(&text.as_bytes()[..at + MARKER.len() - 1]);
    let mut first = true;
    service
        .each_migration_page(parts, |page| {
            for row in page {
                let row = serde_json::to_string_pretty(&DbMigrationDto::from(row))
                    .map_err(|e| AppError::Internal(e.to_string()))?;
                let _ = write!(out, "{}\n{indent}", if first { "" } else { "," });
                let _ = out.write_all(row.replace('\n', &format!("\n{indent}")).as_bytes());
                first = false;
            }
            let _ = out.flush();
            Ok(std::ops::ControlFlow::Continue(()))
        })
        .await?;
    if !first {
        let _ = write!(out, "\n{}", &indent[2..]);
    }
    let _ = out.write_all(&text.as_bytes()[at + MARKER.len() - 1..]);
    let _ = writeln!(out);
    let _ = out.flush();
    Ok(())
}

/// The request id a command's version (or rollout action) is stored with.
pub(super) fn cli_request_id() -> String {
    format!("strata-cli-{}", uuid::Uuid::new_v4())
}

/// Who runs a command in-process: `cli:<os user>@<host>` as shown, its
/// principal `cli:<uid>@<host>`, with a new request id. The user is the
/// process's own account (its uid, named by the password database), never
/// `$USER`, which anyone can set. (Whoever holds the configuration holds the
/// database's credentials: the command line is not authenticated further.)
pub(super) fn cli_caller() -> crate::service::Caller {
    let account = crate::os_account::OsAccount::current();
    let (user, host) = (&account.user, &account.host);
    let principal = format!("cli:{}@{host}", account.uid.map_or_else(|| "unknown".to_string(), |uid| uid.to_string()));
    crate::service::Caller { request_id: cli_request_id(), actor: format!("cli:{user}@{host}"), principal }
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
