//! What `plan --json` and `status` print, in-process and through
//! `--server` alike: both read the API's own answers (`PlanPreview`,
//! `Status`), so the shapes cannot differ.

use serde::Serialize;
use serde_json::Value;
use strata_core::migrate::lint::{Finding, Unchecked};

use crate::cli::Exit;
use crate::cli::output::print_json;
use crate::graphql::preview::{
    ActiveRolloutDto, DriftedFileDto, HistoryReadDto, MissingFileDto, OutOfOrderDto, PendingGroupDto, PlanCountsDto,
    PlanPreviewDto, StatusDto,
};

/// `strata plan --json`, in-process and through `--server` alike: the
/// API's preview, with the linter's findings in core's own shape.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PlanAnswer {
    nothing_to_do: bool,
    pending: bool,
    new_tenant: Option<String>,
    summary: PlanCountsDto,
    groups: Vec<PendingGroupDto>,
    out_of_order: Vec<OutOfOrderDto>,
    drift: Vec<DriftedFileDto>,
    missing: Vec<MissingFileDto>,
    record_only: u64,
    histories: Vec<HistoryReadDto>,
    without_history: Vec<String>,
    findings: Vec<Finding>,
    unchecked: Vec<Unchecked>,
    skipped_tenants: Vec<String>,
    active_rollouts: Vec<ActiveRolloutDto>,
}

impl From<PlanPreviewDto> for PlanAnswer {
    fn from(preview: PlanPreviewDto) -> Self {
        let lint = preview.lint_report();
        PlanAnswer {
            nothing_to_do: preview.nothing_to_do,
            pending: preview.pending,
            new_tenant: preview.new_tenant,
            summary: preview.summary,
            groups: preview.groups,
            out_of_order: preview.out_of_order,
            drift: preview.drift,
            missing: preview.missing,
            record_only: preview.record_only,
            histories: preview.histories,
            without_history: preview.without_history.0,
            findings: lint.findings,
            unchecked: lint.unchecked,
            skipped_tenants: preview.skipped_tenants,
            active_rollouts: preview.active_rollouts,
        }
    }
}

/// Apply refused (`plan --json`): the drifted files.
pub(super) fn refused_by_drift(drift: &[DriftedFileDto]) -> Value {
    serde_json::json!({ "refused": "DRIFT", "drift": drift })
}

/// `strata status`, in-process and through `--server` alike: JSON, or the
/// text and the rollouts in progress. Exit 12 when a shard did not answer.
pub(super) fn print_status(status: &StatusDto, json: bool) -> Exit {
    if json {
        print_json(status);
    } else {
        out!("{}", render_status(status));
        out!("{}", render_active_rollouts(&status.active_rollouts));
    }
    if status.unreachable_shards.is_empty() { Exit::Success } else { Exit::ShardsFailed }
}

/// `strata status` for people.
fn render_status(status: &StatusDto) -> String {
    use std::fmt::Write;
    let drift: Vec<strata_core::migrate::plan::Drift> = status.drift.iter().map(Into::into).collect();
    let mut out = format!("{} version(s); {} tenant(s).\n", status.version_count, status.tenants);
    for shard in &status.unreachable_shards {
        let _ = writeln!(
            out,
            "Shard {} did not answer ({}): its {} tenant(s), as last seen, are not counted below.",
            shard.shard,
            shard.reason,
            shard.tenants.len()
        );
    }
    if !status.versions.is_empty() {
        out.push_str("\nRecent versions:\n");
        for version in &status.versions {
            let _ = writeln!(out, "  {:>6}  {}  {}", version.id, version.created.0, version.name);
        }
    }
    if !drift.is_empty() {
        let _ = write!(out, "\n{}", strata_core::migrate::report::render_drift(&drift));
    }
    if !status.missing.is_empty() {
        out.push_str(
            "\nMissing (applied, but the file is no longer in the source; `strata repair` removes the records):\n",
        );
        for item in &status.missing {
            let _ = writeln!(out, "  {} (recorded in {} schema(s))", item.file, item.schemas.len());
        }
    }
    if !drift.is_empty() {
        return out;
    }
    if status.pending.is_empty() {
        out.push_str("\nNo pending migrations.\n");
        return out;
    }
    let total: u64 = status.pending.iter().map(|p| p.migrations).sum();
    let _ = writeln!(out, "\nPending migrations: {total} in {} schema(s):", status.pending.len());
    for item in status.pending.iter().take(50) {
        let held = if item.quarantined { "  (quarantined: versions skip it until a retry)" } else { "" };
        let _ = writeln!(out, "  {:<30} {}{held}", item.schema, item.migrations);
    }
    if status.pending.len() > 50 {
        let _ = writeln!(out, "  … and {} more schema(s) (--json lists them all)", status.pending.len() - 50);
    }
    out
}

/// The rollouts in progress, as the lines `plan` and `status` end with.
pub(super) fn render_active_rollouts(active: &[ActiveRolloutDto]) -> String {
    let mut out = String::new();
    for rollout in active {
        out.push_str(&format!(
            "\nRollout in progress: {}. `strata apply` is refused until it completes or is cancelled (`strata rollout \
             cancel {}`), or runs with --override-rollout.\n",
            strata_core::migrate::rollout::ActiveRollout::from(rollout).describe(),
            rollout.id
        ));
    }
    out
}
