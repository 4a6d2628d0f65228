//! What a version would do now and where the fleet stands, as the API
//! answers them (`PlanPreview`, `Status`): the console's preview reads
//! them, and `strata plan --json` and `strata status --json` print them —
//! in-process and through `--server` alike, so both print the same shapes.

use std::collections::HashSet;

use async_graphql::SimpleObject;
use strata_core::migrate::rollout::ActiveRollout;
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::statements::Position;
use strata_core::migrate::summary::Counts;
use strata_core::migrate::{lint, plan, repair, report};

use crate::error::AppError;
use crate::graphql::one_by_one::OneByOne;
use crate::graphql::types::VersionDto;
use crate::service::Service;

/// A file a schema would get (`PendingFile`, added: the console's preview).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "PendingFile")]
pub(crate) struct PendingFileDto {
    pub(crate) file: String,
    pub(crate) script: bool,
    pub(crate) execute: bool,
}

/// Schemas that would get the same files (`PendingGroup`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "PendingGroup")]
pub(crate) struct PendingGroupDto {
    pub(crate) schemas: OneByOne<String>,
    pub(crate) tenants: bool,
    pub(crate) files: Vec<PendingFileDto>,
}

/// Another tool's history a Sync read (`HistoryRead`, added): which, and
/// in which schemas ([adopting a fleet](docs/coming-from.md)).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "HistoryRead")]
pub(crate) struct HistoryReadDto {
    /// The tool and its table: `dbmate (schema_migrations)`.
    pub(crate) history: String,
    /// The schemas it was read in.
    pub(crate) schemas: OneByOne<String>,
}

/// A file changed since it was applied (`DriftedFile`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DriftedFile")]
pub(crate) struct DriftedFileDto {
    pub(crate) file: String,
    /// The schemas that recorded it, sorted.
    pub(crate) schemas: Vec<String>,
    /// The file's checksum now.
    pub(crate) source_checksum: String,
    /// The distinct checksums recorded for it, sorted.
    pub(crate) recorded_checksums: Vec<String>,
}

impl From<&plan::Drift> for DriftedFileDto {
    fn from(drift: &plan::Drift) -> Self {
        DriftedFileDto {
            file: drift.file.clone(),
            schemas: drift.schemas.clone(),
            source_checksum: drift.source_checksum.clone(),
            recorded_checksums: drift.recorded_checksums.clone(),
        }
    }
}

impl From<&DriftedFileDto> for plan::Drift {
    fn from(drift: &DriftedFileDto) -> Self {
        plan::Drift {
            file: drift.file.clone(),
            schemas: drift.schemas.clone(),
            source_checksum: drift.source_checksum.clone(),
            recorded_checksums: drift.recorded_checksums.clone(),
        }
    }
}

/// A pending file that sorts before one already applied in its schema
/// (`OutOfOrderFile`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "OutOfOrderFile")]
pub(crate) struct OutOfOrderDto {
    pub(crate) file: String,
    pub(crate) schema: String,
    /// The latest file (in source order) already recorded in the schema.
    pub(crate) after: String,
}

/// A recorded file no longer in the source (`MissingFile`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "MissingFile")]
pub(crate) struct MissingFileDto {
    pub(crate) file: String,
    /// The schemas that recorded it, sorted.
    pub(crate) schemas: Vec<String>,
}

/// What a version would count (`PlanCounts`, added): `Summary`'s counts,
/// before anything runs.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "PlanCounts")]
pub(crate) struct PlanCountsDto {
    pub(crate) tenants: u64,
    pub(crate) single_migrations: u64,
    pub(crate) tenant_migrations: u64,
    pub(crate) tenant_migrations_total: u64,
    pub(crate) migrations_grand_total: u64,
    pub(crate) single_scripts: u64,
    pub(crate) tenant_scripts: u64,
    pub(crate) tenant_scripts_total: u64,
    pub(crate) scripts_grand_total: u64,
}

impl From<&Counts> for PlanCountsDto {
    fn from(c: &Counts) -> Self {
        PlanCountsDto {
            tenants: c.tenants,
            single_migrations: c.single_migrations,
            tenant_migrations: c.tenant_migrations,
            tenant_migrations_total: c.tenant_migrations_total,
            migrations_grand_total: c.migrations_grand_total(),
            single_scripts: c.single_scripts,
            tenant_scripts: c.tenant_scripts,
            tenant_scripts_total: c.tenant_scripts_total,
            scripts_grand_total: c.scripts_grand_total(),
        }
    }
}

/// A lint finding on a file the plan would run (`LintFinding`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "LintFinding")]
pub(crate) struct LintFindingDto {
    /// The rule's name, e.g. `create-index-non-concurrently`.
    pub(crate) rule: String,
    /// `info`, `warning` or `error`.
    pub(crate) severity: String,
    pub(crate) file: String,
    pub(crate) line: u64,
    pub(crate) column: u64,
    /// The risk, in one sentence.
    pub(crate) message: String,
    /// The safe alternative.
    pub(crate) advice: String,
}

impl From<lint::Finding> for LintFindingDto {
    fn from(f: lint::Finding) -> Self {
        LintFindingDto {
            rule: f.rule.to_string(),
            severity: f.severity.name().to_string(),
            file: f.file,
            line: f.at.line,
            column: f.at.column,
            message: f.message,
            advice: f.advice,
        }
    }
}

impl LintFindingDto {
    /// The finding, read back into core's type (a rule this client does
    /// not know — a newer service's — keeps its name).
    pub(crate) fn finding(&self) -> lint::Finding {
        lint::Finding {
            rule: lint::rule(&self.rule)
                .map_or_else(|| &*Box::leak(self.rule.clone().into_boxed_str()), |rule| rule.name),
            severity: self.severity.parse().unwrap_or(lint::Severity::Error),
            file: self.file.clone(),
            at: Position { line: self.line, column: self.column },
            message: self.message.clone(),
            advice: self.advice.clone(),
        }
    }
}

/// A statement the linter could not read (`UncheckedStatement`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "UncheckedStatement")]
pub(crate) struct UncheckedDto {
    pub(crate) file: String,
    pub(crate) line: u64,
    pub(crate) column: u64,
    pub(crate) reason: String,
}

/// A rollout that holds versions over the fleet (`ActiveRollout`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "ActiveRollout")]
pub(crate) struct ActiveRolloutDto {
    pub(crate) id: i64,
    pub(crate) version_name: String,
    /// `RUNNING`, `AWAITING_APPROVAL`, `PAUSED`, `STOPPED` …
    pub(crate) status: String,
    pub(crate) waves_done: u64,
    pub(crate) waves: u64,
}

impl From<ActiveRollout> for ActiveRolloutDto {
    fn from(active: ActiveRollout) -> Self {
        ActiveRolloutDto {
            id: active.id,
            version_name: active.version_name,
            status: active.status,
            waves_done: active.waves_done as u64,
            waves: active.waves as u64,
        }
    }
}

impl From<&ActiveRolloutDto> for ActiveRollout {
    fn from(active: &ActiveRolloutDto) -> Self {
        ActiveRollout {
            id: active.id,
            version_name: active.version_name.clone(),
            status: active.status.clone(),
            waves_done: usize::try_from(active.waves_done).unwrap_or(usize::MAX),
            waves: usize::try_from(active.waves).unwrap_or(usize::MAX),
        }
    }
}

/// What `createVersion` (or `createTenant`) would do now (`PlanPreview`,
/// added: read without the lock, nothing written).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "PlanPreview")]
pub(crate) struct PlanPreviewDto {
    /// Nothing would change: no version would be created.
    pub(crate) nothing_to_do: bool,
    /// Apply would refuse: files changed since applied (`drift` lists them).
    pub(crate) refused_by_drift: bool,
    /// Migrations are pending or a tenant would be created (scripts, due on
    /// every version, aside): what `strata plan --check` gates on.
    pub(crate) pending: bool,
    /// The tenant `createTenant` would create.
    pub(crate) new_tenant: Option<String>,
    /// What the version would count.
    pub(crate) summary: PlanCountsDto,
    /// Schemas grouped by the files they would get.
    pub(crate) groups: Vec<PendingGroupDto>,
    /// Pending files that sort before one already applied in their schema.
    pub(crate) out_of_order: Vec<OutOfOrderDto>,
    /// Drifted files (under Sync, or the reason Apply refuses).
    pub(crate) drift: Vec<DriftedFileDto>,
    /// Recorded files no longer in the source.
    pub(crate) missing: Vec<MissingFileDto>,
    /// Migrations a Sync would record without running them (schema × file).
    pub(crate) record_only: u64,
    /// Other tools' histories a Sync read: it records what they say ran.
    pub(crate) histories: Vec<HistoryReadDto>,
    /// Tenants a Sync that read histories covers without one: nothing is
    /// recorded there.
    pub(crate) without_history: OneByOne<String>,
    /// Lint findings on the files that would run.
    pub(crate) findings: Vec<LintFindingDto>,
    /// Statements of those files the linter could not read.
    pub(crate) unchecked: Vec<UncheckedDto>,
    /// Quarantined tenants the version would skip.
    pub(crate) skipped_tenants: Vec<String>,
    /// Rollouts in progress (a plain version waits for them).
    pub(crate) active_rollouts: Vec<ActiveRolloutDto>,
}

impl PlanPreviewDto {
    /// From a plan and the sources it indexes.
    pub(crate) fn from_plan(
        plan: &plan::Plan,
        sources: &[SourceMigration],
        lint: lint::Report,
        skipped_tenants: Vec<String>,
        active_rollouts: Vec<ActiveRolloutDto>,
    ) -> Self {
        let diagnostics = &plan.diagnostics;
        PlanPreviewDto {
            nothing_to_do: plan.is_empty(),
            refused_by_drift: false,
            pending: report::has_pending_migrations(plan, sources),
            new_tenant: plan.new_tenant.clone(),
            summary: PlanCountsDto::from(&plan.counts),
            groups: report::pending_groups(plan, sources)
                .into_iter()
                .map(|g| PendingGroupDto {
                    schemas: OneByOne(g.schemas),
                    tenants: g.tenants,
                    files: g
                        .files
                        .into_iter()
                        .map(|f| PendingFileDto { file: f.file, script: f.script, execute: f.execute })
                        .collect(),
                })
                .collect(),
            out_of_order: diagnostics
                .out_of_order
                .iter()
                .map(|o| OutOfOrderDto { file: o.file.clone(), schema: o.schema.clone(), after: o.after.clone() })
                .collect(),
            drift: diagnostics.drift.iter().map(DriftedFileDto::from).collect(),
            missing: diagnostics
                .missing
                .iter()
                .map(|m| MissingFileDto { file: m.file.clone(), schemas: m.schemas.clone() })
                .collect(),
            record_only: report::record_only(plan, sources),
            histories: diagnostics
                .adopted
                .read
                .iter()
                .map(|(history, schemas)| HistoryReadDto {
                    history: history.clone(),
                    schemas: OneByOne(schemas.clone()),
                })
                .collect(),
            without_history: OneByOne(diagnostics.adopted.without.clone()),
            findings: lint.findings.into_iter().map(LintFindingDto::from).collect(),
            unchecked: lint
                .unchecked
                .into_iter()
                .map(|u| UncheckedDto { file: u.file, line: u.at.line, column: u.at.column, reason: u.reason })
                .collect(),
            skipped_tenants,
            active_rollouts,
        }
    }

    /// Apply refused: these files drifted.
    pub(crate) fn refused(drift: &[plan::Drift]) -> Self {
        PlanPreviewDto {
            nothing_to_do: false,
            refused_by_drift: true,
            pending: false,
            new_tenant: None,
            summary: PlanCountsDto::from(&Counts::default()),
            groups: Vec::new(),
            out_of_order: Vec::new(),
            drift: drift.iter().map(DriftedFileDto::from).collect(),
            missing: Vec::new(),
            record_only: 0,
            histories: Vec::new(),
            without_history: OneByOne(Vec::new()),
            findings: Vec::new(),
            unchecked: Vec::new(),
            skipped_tenants: Vec::new(),
            active_rollouts: Vec::new(),
        }
    }

    /// The linter's report, read back into core's types (a rule this
    /// client does not know — a newer service's — keeps its name).
    pub(crate) fn lint_report(&self) -> lint::Report {
        let findings = self.findings.iter().map(LintFindingDto::finding).collect();
        let unchecked = self
            .unchecked
            .iter()
            .map(|u| lint::Unchecked {
                file: u.file.clone(),
                at: Position { line: u.line, column: u.column },
                reason: u.reason.clone(),
            })
            .collect();
        lint::Report { findings, unchecked }
    }
}

/// A schema with pending migrations (`PendingSchema`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "PendingSchema")]
pub(crate) struct PendingSchemaDto {
    pub(crate) schema: String,
    /// Migrations pending there (scripts aside).
    pub(crate) migrations: u64,
    /// A quarantined tenant: versions skip it until a retry.
    pub(crate) quarantined: bool,
}

/// A shard that did not answer (`UnreachableShard`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "UnreachableShard")]
pub(crate) struct UnreachableShardDto {
    pub(crate) shard: String,
    /// Why.
    pub(crate) reason: String,
    /// Its tenants, as last seen.
    pub(crate) tenants: Vec<String>,
}

/// Where the fleet stands (`Status`, added): what `strata status` prints.
/// Pending work is a Sync preview over every tenant, quarantined ones
/// included: it plans the steps an Apply would and never refuses, so
/// drift and missing files are reported, not raised.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "Status")]
pub(crate) struct StatusDto {
    /// The most recent versions, newest first.
    pub(crate) versions: Vec<VersionDto>,
    /// How many versions there are (one per version, however many shards
    /// ran it).
    pub(crate) version_count: u64,
    /// How many tenants.
    pub(crate) tenants: u64,
    /// Per schema, the migrations pending there.
    pub(crate) pending: Vec<PendingSchemaDto>,
    /// Applied files changed since.
    pub(crate) drift: Vec<DriftedFileDto>,
    /// Applied files no longer in the source.
    pub(crate) missing: Vec<MissingFileDto>,
    /// Shards that did not answer, with their tenants as last seen.
    pub(crate) unreachable_shards: Vec<UnreachableShardDto>,
    /// Rollouts in progress.
    pub(crate) active_rollouts: Vec<ActiveRolloutDto>,
}

/// Where the fleet stands: the newest `recent` versions, the tenants, what
/// is pending where (quarantined tenants marked), drift, missing files,
/// the shards that did not answer and the rollouts in progress. The API's
/// `status` and `strata status` both answer this.
pub(crate) async fn status(service: &Service, recent: usize) -> Result<StatusDto, AppError> {
    let versions = service.versions(None).await?;
    let tenants = service.tenants().await?.len();
    let (preview, sources) = service.preview_every_tenant(plan::Action::Sync).await?;
    let quarantined: HashSet<String> = service.quarantined().await?.into_iter().map(|row| row.tenant).collect();
    let pending = report::pending_counts(&preview.plan, &sources)
        .into_iter()
        .map(|p| PendingSchemaDto {
            quarantined: quarantined.contains(&p.schema),
            schema: p.schema,
            migrations: p.migrations,
        })
        .collect();
    let diagnostics = &preview.plan.diagnostics;
    Ok(StatusDto {
        version_count: versions.len() as u64,
        versions: versions.into_iter().rev().take(recent).map(VersionDto::from).collect(),
        tenants: tenants as u64,
        pending,
        drift: diagnostics.drift.iter().map(DriftedFileDto::from).collect(),
        missing: diagnostics
            .missing
            .iter()
            .map(|m| MissingFileDto { file: m.file.clone(), schemas: m.schemas.clone() })
            .collect(),
        unreachable_shards: preview
            .unreachable
            .into_iter()
            .map(|shard| UnreachableShardDto { shard: shard.shard, reason: shard.reason, tenants: shard.tenants })
            .collect(),
        active_rollouts: active_rollouts(service).await,
    })
}

/// The rollouts in progress (none where the engine keeps no rollouts).
pub(crate) async fn active_rollouts(service: &Service) -> Vec<ActiveRolloutDto> {
    service.active_rollouts().await.unwrap_or_default().into_iter().map(ActiveRolloutDto::from).collect()
}

/// A changed file whose new checksum a repair records (`NewChecksum`,
/// added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "NewChecksum")]
pub(crate) struct NewChecksumDto {
    pub(crate) file: String,
    /// Its checksum now.
    pub(crate) checksum: String,
    /// The checksums recorded until now, sorted.
    pub(crate) recorded: Vec<String>,
    /// The schemas whose records change, sorted.
    pub(crate) schemas: Vec<String>,
}

/// What a repair changes in the books (`Repair`, added): what `strata
/// repair` prints, in-process and through `--server`.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "Repair")]
pub(crate) struct RepairDto {
    /// Changed files.
    pub(crate) checksums: Vec<NewChecksumDto>,
    /// Deleted files whose records go.
    pub(crate) removals: Vec<MissingFileDto>,
}

impl From<repair::Repair> for RepairDto {
    fn from(done: repair::Repair) -> Self {
        RepairDto {
            checksums: done
                .checksums
                .into_iter()
                .map(|c| NewChecksumDto {
                    file: c.file,
                    checksum: c.checksum,
                    recorded: c.recorded,
                    schemas: c.schemas,
                })
                .collect(),
            removals: done.removals.into_iter().map(|r| MissingFileDto { file: r.file, schemas: r.schemas }).collect(),
        }
    }
}

impl From<RepairDto> for repair::Repair {
    fn from(done: RepairDto) -> Self {
        repair::Repair {
            checksums: done
                .checksums
                .into_iter()
                .map(|c| repair::NewChecksum {
                    file: c.file,
                    checksum: c.checksum,
                    recorded: c.recorded,
                    schemas: c.schemas,
                })
                .collect(),
            removals: done.removals.into_iter().map(|r| repair::Removal { file: r.file, schemas: r.schemas }).collect(),
        }
    }
}
