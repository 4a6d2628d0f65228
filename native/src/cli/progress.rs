//! `strata apply`'s progress: on a terminal, a bar over the version's
//! schemas with the file that runs; otherwise one line per schema as it
//! completes (on stderr with `--json`, whose stdout is the JSON alone).

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use strata_core::migrate::plan::Plan;
use strata_core::migrate::source::SourceMigration;

use crate::db::Observer;

/// Watches one version.
#[derive(Debug)]
pub(super) struct Progress {
    bar: Option<ProgressBar>,
    /// Lines go to stderr (stdout holds JSON).
    to_stderr: bool,
    /// Steps per schema: (all, left).
    left: Mutex<HashMap<String, (usize, usize)>>,
}

impl Progress {
    /// A bar when stderr is a terminal, lines otherwise.
    pub(super) fn new(json: bool) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::hidden();
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} schemas  {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Progress { bar, to_stderr: json, left: Mutex::default() }
    }

    /// Clears the bar.
    pub(super) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn line(&self, text: &str) {
        if self.to_stderr {
            eprintln!("{text}");
        } else {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{text}");
        }
    }
}

impl Observer for Progress {
    fn started(&self, plan: &Plan, _sources: &[SourceMigration]) {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        for step in &plan.steps {
            let entry = left.entry(plan.schema_of(step).to_string()).or_default();
            entry.0 += 1;
            entry.1 += 1;
        }
        if let Some(bar) = &self.bar {
            bar.set_length(left.len() as u64);
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
        }
    }

    fn running(&self, schema: &str, file: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{schema}: {file}"));
        }
    }

    fn committed(&self, schema: &str, steps: usize) {
        let done = {
            let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
            match left.get_mut(schema) {
                Some((all, count)) if *count > 0 => {
                    *count = count.saturating_sub(steps);
                    (*count == 0).then_some(*all)
                }
                _ => None,
            }
        };
        let Some(all) = done else { return };
        match &self.bar {
            Some(bar) => bar.inc(1),
            None => self.line(&format!("{schema}: {all} file(s) done")),
        }
    }
}
