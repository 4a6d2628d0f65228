//! Which files a lint reads, and the findings as text: the shell calls
//! these so `strata lint`, `strata plan`, GraphQL's `plan` and the console
//! agree.

use rustc_hash::FxHashSet;

use crate::migrate::lint::{Report, Severity};
use crate::migrate::plan::Plan;
use crate::migrate::source::SourceMigration;

/// The files a plan would run (record-only steps excluded), each once, in
/// source order: the pending files of every schema, scripts included.
/// Tables created by an earlier file of the list count as new.
pub fn files_of_plan<'a>(plan: &Plan, sources: &'a [SourceMigration]) -> Vec<(&'a str, &'a str)> {
    let run: FxHashSet<u32> = plan.steps.iter().filter(|s| s.execute).map(|s| s.migration).collect();
    let mut indexes: Vec<u32> = run.into_iter().collect();
    indexes.sort_unstable();
    indexes.into_iter().filter_map(|i| sources.get(i as usize)).map(|s| (s.file.as_str(), s.forward.as_str())).collect()
}

/// Every source file, in source order (`strata lint --all`).
pub fn all_files(sources: &[SourceMigration]) -> Vec<(&str, &str)> {
    sources.iter().map(|s| (s.file.as_str(), s.forward.as_str())).collect()
}

/// The report as lines a terminal and an editor read:
/// `file:line:column: severity [rule] message`, the advice indented below,
/// then the statements not checked, then a count.
pub fn render_text(report: &Report, fail_on: Severity) -> String {
    let mut out = String::new();
    for f in &report.findings {
        out.push_str(&format!("{}:{}: {} [{}] {}\n", f.file, f.at, f.severity, f.rule, f.message));
        out.push_str(&format!("    {}\n", f.advice));
    }
    for u in &report.unchecked {
        out.push_str(&format!("{}:{}: not checked: {}\n", u.file, u.at, u.reason));
    }
    let failing = report.at_or_above(fail_on).count();
    out.push_str(&format!(
        "{} finding(s), {} at or above {fail_on}; {} statement(s) not checked.\n",
        report.findings.len(),
        failing,
        report.unchecked.len()
    ));
    out
}
