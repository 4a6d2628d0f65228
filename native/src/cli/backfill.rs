//! `strata backfill list`: every tenant's backfill (`strata:backfill`
//! files) and how far its batches are — read in-process, or through
//! `--server` (GraphQL `backfills`), printed the same way from the same
//! shape.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::output::{cli_caller, failure, print_json};
use crate::cli::{BackfillAction, BackfillArgs, Exit};
use crate::db::{BackfillMove, BackfillWait};
use crate::graphql::types::{BackfillDto, BackfillFileDto, BackfillWaitDto};
use crate::service::Service;

/// `backfill [list|pause|resume|cancel]` in-process.
pub(super) async fn backfill(service: &Arc<Service>, args: BackfillArgs) -> Exit {
    let (tenants, how) = match args.action.unwrap_or(BackfillAction::List { summary: false }) {
        BackfillAction::List { summary: true } => {
            return match service.backfill_files(SUMMARY_SHOWN).await {
                Ok(files) => print_files(&files.into_iter().map(BackfillFileDto::from).collect::<Vec<_>>(), args.json),
                Err(error) => failure(&error),
            };
        }
        BackfillAction::List { summary: false } => {
            return match service.backfills().await {
                Ok(rows) => print(&rows.into_iter().map(BackfillDto::from).collect::<Vec<_>>(), args.json),
                Err(error) => failure(&error),
            };
        }
        BackfillAction::Pause { tenants } => (tenants, BackfillMove::Pause),
        BackfillAction::Resume { tenants } => (tenants, BackfillMove::Resume),
        BackfillAction::Cancel { tenants } => (tenants, BackfillMove::Cancel),
    };
    match service.move_backfills(&tenants, how, &cli_caller()).await {
        Ok(moved) => print_moved(&moved.into_iter().map(BackfillWaitDto::from).collect::<Vec<_>>(), how, args.json),
        Err(error) => failure(&error),
    }
}

/// The tenants `backfill list --summary` shows per file.
pub(super) const SUMMARY_SHOWN: usize = 20;

/// Prints each file's summary (`backfill list --summary`) as JSON or a few
/// lines per file: its counts, rows and pace, its first tenants.
pub(super) fn print_files(files: &[BackfillFileDto], json: bool) -> Exit {
    if json {
        print_json(&files);
        return Exit::Success;
    }
    if files.is_empty() {
        outln!("No backfill has started.");
        return Exit::Success;
    }
    for file in files {
        let counts: Vec<String> = [
            (file.running, "running"),
            (file.paused, "paused"),
            (file.failed, "failed"),
            (file.cancelled, "cancelled"),
            (file.done, "done"),
        ]
        .into_iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, state)| format!("{count} {state}"))
        .collect();
        let share = match file.rows_estimated {
            0 => String::new(),
            estimated => format!(" ({:.0}%)", 100.0 * file.rows_done as f64 / estimated as f64),
        };
        let pace = match (file.running, file.eta_seconds) {
            (1.., Some(eta)) if file.rows_per_second > 0.0 => {
                format!(", {:.0} row(s)/s, about {eta} s left", file.rows_per_second)
            }
            _ => String::new(),
        };
        let not_started = match file.not_started {
            0 => String::new(),
            n => format!(" ({n} not started: their rows are not counted yet)"),
        };
        outln!(
            "{}: {} tenant(s), {}{not_started}; {} of {} row(s){share}{pace}",
            file.file,
            file.tenants,
            counts.join(", "),
            file.rows_done,
            file.rows_estimated
        );
        for row in &file.shown {
            outln!("  {}", line(row));
        }
        let more = file.tenants - file.shown.len() as i64;
        if more > 0 {
            outln!("  … and {more} more (done, or further down the list): `strata backfill list` lists every one");
        }
    }
    Exit::Success
}

/// Prints the backfills paused, resumed or cancelled.
pub(super) fn print_moved(moved: &[BackfillWaitDto], how: BackfillMove, json: bool) -> Exit {
    if json {
        print_json(&moved);
        return Exit::Success;
    }
    let done = match how {
        BackfillMove::Pause => "Paused",
        BackfillMove::Resume => "Resumed",
        BackfillMove::Cancel => "Cancelled (their tenants quarantined; a retry resumes them)",
    };
    outln!("{done} {} backfill(s).", moved.len());
    for wait in moved {
        outln!("  {}  {}", wait.tenant, wait.file);
    }
    Exit::Success
}

/// Runs the backfills `waiting` tenants wait on (and any other this
/// process can claim) before the command exits: a bar over their rows on a
/// terminal, a line per backfill as it ends otherwise (on stderr with
/// `--json`). Exit 11 when one failed (its tenant is quarantined).
pub(super) async fn wait(service: &Arc<Service>, waiting: &[BackfillWait], json: bool) -> Exit {
    let holder = format!("strata-cli-{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let bar = (!json && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} rows  {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(format!("backfills of {} tenant(s)", waiting.len()));
        bar
    });
    let watch = bar.clone().map(|bar| {
        let service = Arc::clone(service);
        // A set: a fleet's 10,000 rows against its 10,000 waits every tick.
        let waited: HashSet<(String, String)> = waiting.iter().map(|w| (w.tenant.clone(), w.file.clone())).collect();
        tokio::spawn(async move {
            loop {
                if let Ok(rows) = service.backfills().await {
                    let ours = rows.into_iter().filter(|r| waited.contains(&(r.tenant.clone(), r.file.clone())));
                    let (done, estimated) = ours.fold((0, 0), |(d, e), r| (d + r.rows_done, e + r.rows_estimated));
                    bar.set_length(estimated.max(done));
                    bar.set_position(done);
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        })
    });
    let ran = service.run_backfills(&holder).await;
    if let Some(watch) = watch {
        watch.abort();
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let ends = match ran {
        Ok(ends) => ends,
        Err(error) => return failure(&error),
    };
    let say = |text: String| if json { eprintln!("{text}") } else { outln!("{text}") };
    let mut exit = Exit::Success;
    for end in &ends {
        match &end.error {
            Some(error) => {
                say(format!("Backfill of {} in {} failed (tenant quarantined): {error}", end.file, end.tenant));
                exit = Exit::Quarantined;
            }
            None if end.state == "done" => say(format!("Backfill of {} in {} done.", end.file, end.tenant)),
            None => say(format!("Backfill of {} in {} paused or taken over by another process.", end.file, end.tenant)),
        }
    }
    let ended: HashSet<(&str, &str)> = ends.iter().map(|e| (e.tenant.as_str(), e.file.as_str())).collect();
    let left = waiting.iter().filter(|w| !ended.contains(&(w.tenant.as_str(), w.file.as_str()))).count();
    if left > 0 {
        say(format!(
            "{left} backfill(s) are left to another runner (another process runs them, or they wait for a place \
             under the server's backfill.concurrency), or paused: `strata backfill list` shows them."
        ));
    }
    exit
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
        outln!("  {}", line(row));
    }
    Exit::Success
}

/// One tenant's backfill of one file on one line.
fn line(row: &BackfillDto) -> String {
    let share = match row.rows_estimated {
        0 => String::new(),
        estimated => format!(" ({:.0}%)", 100.0 * row.rows_done.min(estimated) as f64 / estimated as f64),
    };
    let error = row.last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
    let pace = match (row.rows_per_second, row.eta_seconds) {
        (Some(rate), Some(eta)) if row.state != "DONE" => format!(", {rate:.0} row(s)/s, {eta} s left"),
        (Some(rate), _) => format!(", {rate:.0} row(s)/s"),
        _ => String::new(),
    };
    format!(
        "{}  {}  {}  {} of {} row(s){share} in {} batch(es){pace}, {}{error}",
        row.tenant, row.file, row.state, row.rows_done, row.rows_estimated, row.batches, row.updated
    )
}
