//! `strata backfill list`: every tenant's backfill (`strata:backfill`
//! files) and how far its batches are — read in-process, or through
//! `--server` (GraphQL `backfills`), printed the same way from the same
//! shape.

use std::sync::Arc;

use crate::cli::output::{failure, print_json};
use crate::cli::{BackfillArgs, Exit};
use crate::graphql::types::BackfillDto;
use crate::service::Service;

/// `backfill [list]` in-process.
pub(super) async fn backfill(service: &Arc<Service>, args: BackfillArgs) -> Exit {
    match service.backfills().await {
        Ok(rows) => print(&rows.into_iter().map(BackfillDto::from).collect::<Vec<_>>(), args.json),
        Err(error) => failure(&error),
    }
}

/// Prints `rows` as JSON or one line per tenant and file.
pub(super) fn print(rows: &[BackfillDto], json: bool) -> Exit {
    if json {
        print_json(&rows);
        return Exit::Success;
    }
    if rows.is_empty() {
        outln!("No backfill has started.");
        return Exit::Success;
    }
    outln!("{} backfill(s):", rows.len());
    for row in rows {
        let share = match row.rows_estimated {
            0 => String::new(),
            estimated => format!(" ({:.0}%)", 100.0 * row.rows_done.min(estimated) as f64 / estimated as f64),
        };
        let error = row.last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
        outln!(
            "  {}  {}  {}  {} of {} row(s){share} in {} batch(es), {}{error}",
            row.tenant,
            row.file,
            row.state,
            row.rows_done,
            row.rows_estimated,
            row.batches,
            row.updated
        );
    }
    Exit::Success
}
