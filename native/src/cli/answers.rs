//! What `plan --json` and `status --json` print, as types: the versions as
//! the API serves them (`requestId`, a sharded version's `parts`), core's
//! reports, and the shell's own fields named once.

use serde::Serialize;
use serde_json::Value;
use strata_core::migrate::lint::{Finding, Unchecked};
use strata_core::migrate::report::PlanReport;
use strata_core::migrate::rollout::ActiveRollout;

use crate::graphql::types::VersionDto;

/// `strata plan --json`: core's plan report, the linter's findings, the
/// quarantined tenants the version would skip and the rollouts in progress.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PlanAnswer<'a> {
    /// What the plan would do.
    #[serde(flatten)]
    pub(super) report: PlanReport,
    /// What the linter found in the files it would run.
    pub(super) findings: &'a [Finding],
    /// Statements the linter could not read.
    pub(super) unchecked: &'a [Unchecked],
    /// Quarantined tenants it would skip.
    pub(super) skipped_tenants: &'a [String],
    /// Rollouts in progress (a plain version waits for them).
    pub(super) active_rollouts: Vec<ActiveRollout>,
}

/// `strata status --json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StatusAnswer {
    /// The most recent versions, newest first, as the API serves them.
    pub(super) versions: Vec<VersionDto>,
    /// How many versions there are (one per version, however many shards
    /// ran it).
    pub(super) version_count: usize,
    /// How many tenants.
    pub(super) tenants: usize,
    /// Per schema, the migrations pending there.
    pub(super) pending: Vec<PendingSchema>,
    /// Applied files changed since (core's drift report, per file).
    pub(super) drift: Vec<Value>,
    /// Applied files no longer in the source.
    pub(super) missing: Vec<MissingFile>,
    /// Shards that did not answer, with their tenants as last seen.
    pub(super) unreachable_shards: Vec<UnreachableShardAnswer>,
    /// Rollouts in progress.
    pub(super) active_rollouts: Vec<ActiveRollout>,
}

/// A schema with pending migrations.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PendingSchema {
    /// The schema.
    pub(super) schema: String,
    /// How many migrations are pending there.
    pub(super) migrations: u64,
    /// Whether it is a quarantined tenant (versions skip it until a retry).
    pub(super) quarantined: bool,
}

/// An applied file no longer in the source.
#[derive(Serialize)]
pub(super) struct MissingFile {
    /// The file.
    pub(super) file: String,
    /// The schemas that recorded it.
    pub(super) schemas: Vec<String>,
}

/// A shard that did not answer.
#[derive(Serialize)]
pub(super) struct UnreachableShardAnswer {
    /// The shard.
    pub(super) shard: String,
    /// Why.
    pub(super) reason: String,
    /// Its tenants, as last seen.
    pub(super) tenants: Vec<String>,
}

impl StatusAnswer {
    /// `strata status` for people (`drift`: the report's own items).
    pub(super) fn render(&self, drift: &[strata_core::migrate::plan::Drift]) -> String {
        use std::fmt::Write;
        let mut out = format!("{} version(s); {} tenant(s).\n", self.version_count, self.tenants);
        for shard in &self.unreachable_shards {
            let _ = writeln!(
                out,
                "Shard {} did not answer ({}): its {} tenant(s), as last seen, are not counted below.",
                shard.shard,
                shard.reason,
                shard.tenants.len()
            );
        }
        if !self.versions.is_empty() {
            out.push_str("\nRecent versions:\n");
            for version in &self.versions {
                let _ = writeln!(out, "  {:>6}  {}  {}", version.id, version.created.0, version.name);
            }
        }
        if !drift.is_empty() {
            let _ = write!(out, "\n{}", strata_core::migrate::report::render_drift(drift));
        }
        if !self.missing.is_empty() {
            out.push_str(
                "\nMissing (applied, but the file is no longer in the source; `strata repair` removes the records):\n",
            );
            for item in &self.missing {
                let _ = writeln!(out, "  {} (recorded in {} schema(s))", item.file, item.schemas.len());
            }
        }
        if !drift.is_empty() {
            return out;
        }
        if self.pending.is_empty() {
            out.push_str("\nNo pending migrations.\n");
            return out;
        }
        let total: u64 = self.pending.iter().map(|p| p.migrations).sum();
        let _ = writeln!(out, "\nPending migrations: {total} in {} schema(s):", self.pending.len());
        for item in self.pending.iter().take(50) {
            let held = if item.quarantined { "  (quarantined: versions skip it until a retry)" } else { "" };
            let _ = writeln!(out, "  {:<30} {}{held}", item.schema, item.migrations);
        }
        if self.pending.len() > 50 {
            let _ = writeln!(out, "  … and {} more schema(s) (--json lists them all)", self.pending.len() - 50);
        }
        out
    }
}
