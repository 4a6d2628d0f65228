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
