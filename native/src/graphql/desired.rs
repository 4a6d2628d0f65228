//! Desired state's wire types (added to the spec's schema): what
//! `desiredDiff` answers (`DesiredDiff`, `DesiredGroup`, `DesiredStep`:
//! core's report, read back into it by the command line) and what
//! `applyDesiredSchema` is asked and answers (`Destructive`,
//! `DesiredApply`, `DesiredGroupLeft`) — one version per group of tenants
//! sharing a plan, and the groups it left as they are.

use async_graphql::{Enum, SimpleObject};
use strata_core::migrate::desired::{DesiredGroup, DesiredReport, Destructive, Step};

use crate::graphql::preview::LintFindingDto;
use crate::graphql::types::CreateResultsDto;

/// Every tenant's plan to a desired schema, tenants grouped by plan
/// (`DesiredDiff`, added): what `strata diff --json` prints.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DesiredDiff")]
pub(crate) struct DesiredDiffDto {
    /// The desired catalog's fingerprint.
    pub(crate) desired: String,
    /// Tenants planned.
    pub(crate) tenants: u64,
    /// Tenants not in the desired state.
    pub(crate) differing: u64,
    /// The groups, largest first.
    pub(crate) groups: Vec<DesiredGroupDto>,
}

/// Tenants sharing one plan (`DesiredGroup`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DesiredGroup")]
pub(crate) struct DesiredGroupDto {
    /// The plan's SHA-256 (of its file text).
    pub(crate) plan: String,
    pub(crate) tenants: Vec<String>,
    /// The statements, in order.
    pub(crate) steps: Vec<DesiredStepDto>,
    /// Whether a step loses data.
    pub(crate) destructive: bool,
    /// Differences no statement reaches.
    pub(crate) unplannable: Vec<String>,
    /// What the linter finds in the plan, as in a migration file.
    pub(crate) findings: Vec<LintFindingDto>,
}

/// One statement of a plan (`DesiredStep`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DesiredStep")]
pub(crate) struct DesiredStepDto {
    /// The statement, without its `;`, the schema written `{schema}`.
    pub(crate) sql: String,
    /// Whether it loses data.
    pub(crate) destructive: bool,
}

impl From<DesiredReport> for DesiredDiffDto {
    fn from(report: DesiredReport) -> Self {
        DesiredDiffDto {
            desired: report.desired,
            tenants: report.tenants as u64,
            differing: report.differing as u64,
            groups: report
                .groups
                .into_iter()
                .map(|group| DesiredGroupDto {
                    plan: group.plan,
                    tenants: group.tenants,
                    steps: group
                        .steps
                        .into_iter()
                        .map(|step| DesiredStepDto { sql: step.sql, destructive: step.destructive })
                        .collect(),
                    destructive: group.destructive,
                    unplannable: group.unplannable,
                    findings: group.findings.into_iter().map(LintFindingDto::from).collect(),
                })
                .collect(),
        }
    }
}

impl From<DesiredDiffDto> for DesiredReport {
    /// Read back, so the command line through `--server` prints what it
    /// prints in-process.
    fn from(answer: DesiredDiffDto) -> Self {
        DesiredReport {
            desired: answer.desired,
            tenants: answer.tenants as usize,
            differing: answer.differing as usize,
            groups: answer
                .groups
                .into_iter()
                .map(|group| DesiredGroup {
                    findings: group.findings.iter().map(LintFindingDto::finding).collect(),
                    plan: group.plan,
                    tenants: group.tenants,
                    steps: group
                        .steps
                        .into_iter()
                        .map(|step| Step { sql: step.sql, destructive: step.destructive })
                        .collect(),
                    destructive: group.destructive,
                    unplannable: group.unplannable,
                })
                .collect(),
        }
    }
}

/// What a group whose plan loses data does (`Destructive`, added).
#[derive(Enum, Copy, Clone, Eq, PartialEq, Default, serde::Serialize)]
#[graphql(name = "Destructive", rename_items = "PascalCase")]
pub(crate) enum DestructiveDto {
    /// Nothing runs while such a group exists (the default).
    #[default]
    Refuse,
    /// Such groups run too.
    Allow,
    /// Such groups are left; the others run.
    Skip,
}

impl From<Destructive> for DestructiveDto {
    fn from(value: Destructive) -> Self {
        match value {
            Destructive::Refuse => DestructiveDto::Refuse,
            Destructive::Allow => DestructiveDto::Allow,
            Destructive::Skip => DestructiveDto::Skip,
        }
    }
}

impl From<DestructiveDto> for Destructive {
    fn from(value: DestructiveDto) -> Self {
        match value {
            DestructiveDto::Refuse => Destructive::Refuse,
            DestructiveDto::Allow => Destructive::Allow,
            DestructiveDto::Skip => Destructive::Skip,
        }
    }
}

/// What `applyDesiredSchema` did (`DesiredApply`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DesiredApply")]
pub(crate) struct DesiredApplyDto {
    /// One version per group brought to the desired schema, largest group
    /// first; its plan recorded as `desired/<plan>.sql`.
    pub(crate) versions: Vec<CreateResultsDto>,
    /// The groups left as they are, with why.
    pub(crate) left: Vec<DesiredGroupLeftDto>,
}

/// A group of tenants `applyDesiredSchema` left as they are
/// (`DesiredGroupLeft`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DesiredGroupLeft")]
pub(crate) struct DesiredGroupLeftDto {
    /// Its tenants.
    pub(crate) tenants: Vec<String>,
    /// Why: its plan loses data (`Skip`), or a difference no statement
    /// reaches.
    pub(crate) reason: String,
}
