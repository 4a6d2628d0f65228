//! GraphQL types: the API's wire shape, mirroring core and database types.
//! Names, nullability and defaults follow the migration-service spec.
//!
//! They derive serde as well as GraphQL, so the command line prints the
//! API's own answers whether it runs in-process or with `--server`; core
//! derives serde only where the text is core's to decide (the stored
//! rollout document, the webhook payload, the repair list).

use async_graphql::{
    ComplexObject, Context, Enum, InputObject, Interface, Object, Result, Scalar, ScalarType, SimpleObject, Value,
};
use std::sync::Arc;
use strata_core::migrate::MigrationType;
use strata_core::migrate::backfill::State;
use strata_core::migrate::backfill::summary::FileSummary;
use strata_core::migrate::plan;
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::summary;

use crate::db::{BackfillStatus, BackfillWait, MigrationRow, QuarantineRow, VersionRow};
use crate::graphql::limits::RequestScope;
use crate::graphql::one_by_one::OneByOne;
use crate::service::{CreateResult, Service};

/// `Time`: RFC 3339 in UTC.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct Time(pub(crate) String);

#[Scalar(name = "Time")]
impl ScalarType for Time {
    fn parse(value: Value) -> async_graphql::InputValueResult<Self> {
        match value {
            Value::String(text) if chrono::DateTime::parse_from_rfc3339(&text).is_ok() => Ok(Time(text)),
            other => Err(async_graphql::InputValueError::expected_type(other)),
        }
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.clone())
    }
}

/// `MigrationType`.
#[derive(Enum, Copy, Clone, Eq, PartialEq, serde::Serialize, serde::Deserialize)]
#[graphql(name = "MigrationType", rename_items = "PascalCase")]
pub(crate) enum MigrationTypeDto {
    /// Applied once to its single schema.
    SingleMigration,
    /// Applied once to every tenant.
    TenantMigration,
    /// Applied to its single schema on every version.
    SingleScript,
    /// Applied to every tenant on every version.
    TenantScript,
}

impl From<MigrationType> for MigrationTypeDto {
    fn from(value: MigrationType) -> Self {
        match value {
            MigrationType::SingleMigration => MigrationTypeDto::SingleMigration,
            MigrationType::TenantMigration => MigrationTypeDto::TenantMigration,
            MigrationType::SingleScript => MigrationTypeDto::SingleScript,
            MigrationType::TenantScript => MigrationTypeDto::TenantScript,
        }
    }
}

/// `Action`.
#[derive(Enum, Copy, Clone, Eq, PartialEq, serde::Serialize)]
#[graphql(name = "Action", rename_items = "PascalCase")]
pub(crate) enum ActionDto {
    /// Apply pending migrations.
    Apply,
    /// Record pending migrations without applying them.
    Sync,
}

impl From<ActionDto> for plan::Action {
    fn from(value: ActionDto) -> Self {
        match value {
            ActionDto::Apply => plan::Action::Apply,
            ActionDto::Sync => plan::Action::Sync,
        }
    }
}

/// The `Migration` interface.
// async-graphql declares interface fields as repeated `field(…)` attributes,
// which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(Interface)]
#[graphql(
    name = "Migration",
    field(name = "name", ty = "&String"),
    field(name = "migration_type", ty = "&MigrationTypeDto"),
    field(name = "source_dir", ty = "&String"),
    field(name = "file", ty = "&String"),
    field(name = "contents", ty = "&String"),
    field(name = "check_sum", ty = "&String")
)]
pub(crate) enum MigrationInterface {
    /// A source migration.
    SourceMigration(SourceMigrationDto),
    /// A recorded migration.
    DbMigration(DbMigrationDto),
}

/// `SourceMigration`: one of the request's source migrations, read once
/// per request and shared by every field that asks (no copy per alias).
pub(crate) struct SourceMigrationDto {
    all: Arc<Vec<SourceMigration>>,
    index: usize,
    migration_type: MigrationTypeDto,
}

impl SourceMigrationDto {
    /// The `index`th of `all`.
    pub(crate) fn new(all: &Arc<Vec<SourceMigration>>, index: usize) -> Self {
        let migration_type = all[index].migration_type.into();
        SourceMigrationDto { all: Arc::clone(all), index, migration_type }
    }

    fn migration(&self) -> &SourceMigration {
        &self.all[self.index]
    }
}

#[Object(name = "SourceMigration")]
impl SourceMigrationDto {
    async fn name(&self) -> &String {
        &self.migration().name
    }

    async fn migration_type(&self) -> &MigrationTypeDto {
        &self.migration_type
    }

    async fn source_dir(&self) -> &String {
        &self.migration().source_dir
    }

    async fn file(&self) -> &String {
        &self.migration().file
    }

    // Counted against the request's contents budget.
    async fn contents(&self, ctx: &Context<'_>) -> Result<&String> {
        charged_contents(ctx, &self.migration().contents).await
    }

    async fn check_sum(&self) -> &String {
        &self.migration().checksum
    }
}

/// `contents`, once the request's budget has room for it.
async fn charged_contents<'a>(ctx: &Context<'_>, contents: &'a String) -> Result<&'a String> {
    ctx.data::<Arc<RequestScope>>()?.charge_contents(contents.len()).await?;
    Ok(contents)
}

/// `DBMigration`.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DBMigration", complex)]
pub(crate) struct DbMigrationDto {
    id: i32,
    name: String,
    migration_type: MigrationTypeDto,
    source_dir: String,
    file: String,
    #[graphql(skip)]
    #[serde(skip)]
    contents: String,
    check_sum: String,
    schema: String,
    created: Time,
}

#[ComplexObject]
impl DbMigrationDto {
    /// The recorded text, counted against the request's contents budget.
    async fn contents(&self, ctx: &Context<'_>) -> Result<&String> {
        charged_contents(ctx, &self.contents).await
    }
}

impl From<MigrationRow> for DbMigrationDto {
    fn from(row: MigrationRow) -> Self {
        DbMigrationDto {
            id: clamp(row.id),
            name: row.name,
            migration_type: row.migration_type.into(),
            source_dir: row.source_dir,
            file: row.file,
            contents: row.contents,
            check_sum: row.checksum,
            schema: row.schema,
            created: Time(row.created),
        }
    }
}

/// `Tenant`.
#[derive(SimpleObject)]
#[graphql(name = "Tenant")]
pub(crate) struct TenantDto {
    /// The tenant's name.
    pub(crate) name: String,
    /// The shard it lives on (`shards:`; null on one server). Added to the
    /// spec's schema.
    pub(crate) shard: Option<String>,
}

/// One database server of a sharded fleet (`Shard`, added).
#[derive(SimpleObject)]
#[graphql(name = "Shard")]
pub(crate) struct ShardDto {
    /// Its name in `shards:`.
    pub(crate) name: String,
    /// Tenants its `tenantSelectSQL` returns (while it does not answer:
    /// the tenants the directory last saw there).
    pub(crate) tenant_count: i32,
    /// Whether it answered.
    pub(crate) reachable: bool,
}

/// `Version`.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "Version", complex)]
pub(crate) struct VersionDto {
    pub(crate) id: i32,
    pub(crate) name: String,
    pub(crate) created: Time,
    /// The `X-Request-ID` of the request that created the version (the
    /// console shows it; not in the spec's type, added).
    pub(crate) request_id: Option<String>,
    /// The OpenTelemetry trace the version ran in, when its spans were
    /// exported and sampled (added; `telemetry:`; null on SQL Server).
    pub(crate) trace_id: Option<String>,
    /// On a sharded fleet, its part on each shard that ran it (added; empty
    /// on one server): one version, whatever number of shards.
    pub(crate) parts: Vec<VersionPartDto>,
    /// Its migrations when read with it (`apply --json`); else each
    /// GraphQL request that asks reads them.
    #[graphql(skip)]
    #[serde(rename = "dbMigrations", skip_serializing_if = "Option::is_none")]
    pub(crate) migrations: Option<Vec<DbMigrationDto>>,
    #[graphql(skip)]
    #[serde(skip)]
    pub(crate) row_id: i64,
}

/// One shard's part of a version of a sharded fleet (`VersionPart`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "VersionPart")]
pub(crate) struct VersionPartDto {
    /// The shard.
    pub(crate) shard: String,
    /// The part's id (reads the whole version too).
    pub(crate) id: i32,
}

#[ComplexObject]
impl VersionDto {
    /// Migrations applied in this version; with `first`, only the first
    /// that many in id order (read a page at a time: a version over 10,000
    /// tenants holds 200,000 of them). `first` added to the spec's schema.
    #[graphql(complexity = "super::STORAGE_COST + child_complexity")]
    async fn db_migrations(&self, ctx: &Context<'_>, first: Option<i32>) -> Result<Vec<DbMigrationDto>> {
        let first = super::page::first(first)?;
        if let Some(read) = &self.migrations {
            return Ok(read.iter().take(first.unwrap_or(usize::MAX)).map(DbMigrationDto::clone).collect());
        }
        let service = ctx.data::<Arc<Service>>()?;
        let parts: Vec<i64> = self.parts.iter().map(|part| i64::from(part.id)).collect();
        if let Some(first) = first {
            let rows =
                service.first_migrations_of(self.row_id, &parts, first).await.map_err(crate::error::graphql_error)?;
            return Ok(rows.into_iter().map(DbMigrationDto::from).collect());
        }
        let rows = service.migrations_of(self.row_id, &parts).await.map_err(crate::error::graphql_error)?;
        Ok(rows.into_iter().map(DbMigrationDto::from).collect())
    }
}

impl From<VersionRow> for VersionDto {
    fn from(row: VersionRow) -> Self {
        VersionDto {
            id: clamp(row.id),
            name: row.name,
            created: Time(row.created),
            request_id: Some(row.request_id),
            trace_id: row.trace_id,
            parts: row.parts.into_iter().map(|(shard, id)| VersionPartDto { shard, id: clamp(id) }).collect(),
            migrations: None,
            row_id: row.id,
        }
    }
}

/// `Summary`.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "Summary")]
pub(crate) struct SummaryDto {
    pub(crate) started_at: Time,
    pub(crate) duration: f64,
    pub(crate) tenants: i32,
    pub(crate) single_migrations: i32,
    pub(crate) tenant_migrations: i32,
    pub(crate) tenant_migrations_total: i32,
    pub(crate) migrations_grand_total: i32,
    pub(crate) single_scripts: i32,
    pub(crate) tenant_scripts: i32,
    pub(crate) tenant_scripts_total: i32,
    pub(crate) scripts_grand_total: i32,
}

impl From<&summary::Summary> for SummaryDto {
    fn from(s: &summary::Summary) -> Self {
        let c = &s.counts;
        let int = |n: u64| i32::try_from(n).unwrap_or(i32::MAX);
        SummaryDto {
            started_at: Time(s.started_at.clone()),
            duration: s.duration,
            tenants: int(c.tenants),
            single_migrations: int(c.single_migrations),
            tenant_migrations: int(c.tenant_migrations),
            tenant_migrations_total: int(c.tenant_migrations_total),
            migrations_grand_total: int(c.migrations_grand_total()),
            single_scripts: int(c.single_scripts),
            tenant_scripts: int(c.tenant_scripts),
            tenant_scripts_total: int(c.tenant_scripts_total),
            scripts_grand_total: int(c.scripts_grand_total()),
        }
    }
}

/// `CreateResults`.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "CreateResults")]
pub(crate) struct CreateResultsDto {
    pub(crate) summary: SummaryDto,
    pub(crate) version: Option<VersionDto>,
    /// Tenants whose failure the version absorbed (`failureBudget`), now
    /// quarantined (added).
    pub(crate) quarantined: Vec<QuarantinedTenantDto>,
    /// Tenants that wait on a backfill, which runs after the version: they
    /// run nothing after it until it is done (added).
    pub(crate) waiting_on_backfills: Vec<BackfillWaitDto>,
    /// Quarantined tenants the version skipped (added).
    pub(crate) skipped_tenants: Vec<String>,
    /// Tenants a retry completed, released from quarantine (added).
    pub(crate) released_tenants: Vec<String>,
    /// The version's trace (its W3C trace id, 32 hex digits) when traces
    /// are exported and it was sampled (added; `telemetry:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace_id: Option<String>,
}

impl From<CreateResult> for CreateResultsDto {
    fn from(result: CreateResult) -> Self {
        CreateResultsDto {
            summary: (&result.summary).into(),
            version: result.version.map(VersionDto::from),
            quarantined: result.quarantined.into_iter().map(QuarantinedTenantDto::from).collect(),
            waiting_on_backfills: result.waiting.into_iter().map(BackfillWaitDto::from).collect(),
            skipped_tenants: result.skipped,
            released_tenants: result.released,
            trace_id: result.trace_id,
        }
    }
}

/// A tenant and the backfill it waits on (`BackfillWait`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "BackfillWait")]
pub(crate) struct BackfillWaitDto {
    /// The tenant.
    pub(crate) tenant: String,
    /// The backfill's file.
    pub(crate) file: String,
}

impl From<BackfillWait> for BackfillWaitDto {
    fn from(wait: BackfillWait) -> Self {
        BackfillWaitDto { tenant: wait.tenant, file: wait.file }
    }
}

/// One tenant's backfill of one file (`Backfill`, added): how far its
/// batches are.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "Backfill")]
pub(crate) struct BackfillDto {
    /// The tenant (or single schema) it runs in.
    pub(crate) tenant: String,
    /// The backfill's file.
    pub(crate) file: String,
    /// `RUNNING`, `DONE` or `FAILED`.
    pub(crate) state: String,
    /// Rows its committed batches changed.
    pub(crate) rows_done: i64,
    /// Rows present at its start up to its last key (0 for a backfill
    /// repeated until it changes nothing).
    pub(crate) rows_estimated: i64,
    /// Batches committed.
    pub(crate) batches: i64,
    /// Rows changed per second while a runner ran it (paused time not
    /// counted); null before a batch changed a row.
    pub(crate) rows_per_second: Option<f64>,
    /// Seconds left at that rate, rounded up: 0 once done; null without a
    /// rate, or for a backfill repeated until it changes nothing.
    pub(crate) eta_seconds: Option<i64>,
    /// The last batch's failure, while it stands.
    pub(crate) last_error: Option<String>,
    /// When it last changed, RFC 3339.
    pub(crate) updated: String,
}

impl From<BackfillStatus> for BackfillDto {
    fn from(status: BackfillStatus) -> Self {
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        BackfillDto {
            tenant: status.tenant,
            file: status.file,
            state: status.state.to_ascii_uppercase(),
            rows_done: count(status.rows_done),
            rows_estimated: count(status.rows_estimated),
            batches: count(status.batches),
            rows_per_second: status.rows_per_second.map(|rate| (rate * 10.0).round() / 10.0),
            eta_seconds: status.eta_seconds.map(count),
            last_error: status.last_error,
            updated: status.updated,
        }
    }
}

/// One backfill file over the fleet (`BackfillFile`, added): how many
/// tenants stand where, the rows done of the rows counted, the pace, and
/// its first tenants — running, paused, failed, cancelled, then done, each
/// by name. Its size does not follow the fleet's.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "BackfillFile")]
pub(crate) struct BackfillFileDto {
    /// The file.
    pub(crate) file: String,
    /// Tenants with a backfill of it.
    pub(crate) tenants: i64,
    /// Of them, running (or waiting for a runner).
    pub(crate) running: i64,
    /// Paused.
    pub(crate) paused: i64,
    /// Failed.
    pub(crate) failed: i64,
    /// Cancelled.
    pub(crate) cancelled: i64,
    /// Done.
    pub(crate) done: i64,
    /// Rows done, each tenant's counted at most up to its estimate.
    pub(crate) rows_done: i64,
    /// Rows counted at the tenants' starts.
    pub(crate) rows_estimated: i64,
    /// Running tenants whose first batch has not started (their rows are
    /// not counted yet).
    pub(crate) not_started: i64,
    /// The running tenants' rows per second, added up.
    pub(crate) rows_per_second: f64,
    /// The file's time left at that pace, in seconds: the rows its running
    /// tenants have left, those not started counted at the mean of those
    /// counted; null without a pace.
    pub(crate) eta_seconds: Option<i64>,
    /// Its first tenants' backfills (at most the `shown` asked for).
    pub(crate) shown: Vec<BackfillDto>,
}

impl From<FileSummary<BackfillStatus>> for BackfillFileDto {
    fn from(summary: FileSummary<BackfillStatus>) -> Self {
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        BackfillFileDto {
            tenants: count(summary.tenants),
            running: count(summary.count(State::Running)),
            paused: count(summary.count(State::Paused)),
            failed: count(summary.count(State::Failed)),
            cancelled: count(summary.count(State::Cancelled)),
            done: count(summary.count(State::Done)),
            rows_done: count(summary.rows_done),
            rows_estimated: count(summary.rows_estimated),
            not_started: count(summary.not_started),
            rows_per_second: (summary.rows_per_second * 10.0).round() / 10.0,
            eta_seconds: summary.seconds_left.map(count),
            shown: summary.shown.into_iter().map(BackfillDto::from).collect(),
            file: summary.file,
        }
    }
}

/// A tenant put aside after a failure a version absorbed
/// (`QuarantinedTenant`, added): later versions skip it until
/// `retryQuarantined` completes it or `releaseQuarantined` lets it go.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "QuarantinedTenant")]
pub(crate) struct QuarantinedTenantDto {
    pub(crate) tenant: String,
    /// The version that committed something when it failed, if any.
    pub(crate) version_id: Option<i32>,
    /// The failing file.
    pub(crate) file: String,
    /// Where in the file, when the engine said.
    pub(crate) line: Option<i32>,
    pub(crate) column: Option<i32>,
    /// `STATEMENT`, `LOCK_TIMEOUT` or `STATEMENT_TIMEOUT`.
    pub(crate) cause: String,
    /// The engine's message.
    pub(crate) message: String,
    /// How many versions failed in it.
    pub(crate) failures: i32,
    /// The request that put it aside (a failed retry counts one more
    /// failure on it, and keeps it).
    pub(crate) request_id: String,
    /// When, RFC 3339.
    pub(crate) quarantined: String,
}

impl From<QuarantineRow> for QuarantinedTenantDto {
    fn from(row: QuarantineRow) -> Self {
        let int = |n: i64| i32::try_from(n).unwrap_or(i32::MAX);
        QuarantinedTenantDto {
            tenant: row.tenant,
            version_id: row.version_id.map(clamp),
            file: row.file,
            line: row.line.map(int),
            column: row.column.map(int),
            cause: row.cause,
            message: row.message,
            failures: int(row.failures),
            request_id: row.request_id,
            quarantined: row.quarantined,
        }
    }
}

/// `RetryInput` (added): a version over quarantined tenants only.
#[derive(InputObject, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "RetryInput")]
pub(crate) struct RetryInput {
    /// Name of the new version.
    pub(crate) version_name: String,
    /// The quarantined tenants to retry (default: all of them).
    pub(crate) tenant_names: Option<Vec<String>>,
    /// Run in tenants a rollout in progress has not reached yet, past its
    /// gates (recorded in its events); without it such a retry is refused
    /// (`ROLLOUT_IN_PROGRESS`).
    pub(crate) override_rollout: Option<bool>,
}

/// `SourceMigrationFilters`.
#[derive(InputObject, Default)]
#[graphql(name = "SourceMigrationFilters")]
pub(crate) struct SourceMigrationFilters {
    /// Exact file name.
    pub(crate) name: Option<String>,
    /// Exact directory.
    pub(crate) source_dir: Option<String>,
    /// Exact `sourceDir/name`.
    pub(crate) file: Option<String>,
    /// Kind.
    pub(crate) migration_type: Option<MigrationTypeDto>,
}

impl SourceMigrationFilters {
    /// True when `m` passes every set filter.
    pub(crate) fn matches(&self, m: &SourceMigration) -> bool {
        self.name.as_ref().is_none_or(|v| *v == m.name)
            && self.source_dir.as_ref().is_none_or(|v| *v == m.source_dir)
            && self.file.as_ref().is_none_or(|v| *v == m.file)
            && self.migration_type.is_none_or(|v| v == MigrationTypeDto::from(m.migration_type))
    }
}

/// `VersionInput`.
#[derive(InputObject, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "VersionInput")]
pub(crate) struct VersionInput {
    /// Name of the new version.
    pub(crate) version_name: String,
    /// Apply (default) or Sync.
    #[graphql(default_with = "Some(ActionDto::Apply)")]
    pub(crate) action: Option<ActionDto>,
    /// Roll back instead of committing.
    #[graphql(default_with = "Some(false)")]
    pub(crate) dry_run: Option<bool>,
    /// Run while a rollout is in progress, past its gates (recorded in the
    /// rollout's events); without it such a version is refused with
    /// `ROLLOUT_IN_PROGRESS`. Added to the spec's schema.
    pub(crate) override_rollout: Option<bool>,
    /// With `action: Sync`: record the migrations up to and including this
    /// file (`directory/name`) only — adopting a database that is at that
    /// file (Flyway's baseline). Added to the spec's schema.
    pub(crate) sync_to: Option<String>,
}

/// `TenantInput`.
#[derive(InputObject, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "TenantInput")]
pub(crate) struct TenantInput {
    /// Name of the new tenant.
    pub(crate) tenant_name: String,
    /// Name of the new version.
    pub(crate) version_name: String,
    /// Apply (default) or Sync.
    #[graphql(default_with = "Some(ActionDto::Apply)")]
    pub(crate) action: Option<ActionDto>,
    /// Roll back instead of committing.
    #[graphql(default_with = "Some(false)")]
    pub(crate) dry_run: Option<bool>,
    /// A sharded fleet (`shards:`): the shard to create the tenant on
    /// (default: the one with the fewest tenants). Added to the spec's
    /// schema.
    pub(crate) shard: Option<String>,
    /// Citus: place the new tenant on the node holding this tenant's
    /// shards (moved there once its migrations committed). Added to the
    /// spec's schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) colocate_with: Option<String>,
}

/// `TenantsInput` (`createTenants`, added to the spec's schema).
#[derive(InputObject, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "TenantsInput")]
pub(crate) struct TenantsInput {
    /// Names of the new tenants.
    pub(crate) tenant_names: Vec<String>,
    /// Name of the new version.
    pub(crate) version_name: String,
    /// Apply (default) or Sync.
    #[graphql(default_with = "Some(ActionDto::Apply)")]
    pub(crate) action: Option<ActionDto>,
    /// On a sharded fleet, the shard they all go to (default: each to the
    /// shard with the fewest tenants, counting those placed before it).
    pub(crate) shard: Option<String>,
}

/// GraphQL `Int` is 32-bit; ids beyond it are shown saturated.
fn clamp(id: i64) -> i32 {
    i32::try_from(id).unwrap_or(i32::MAX)
}

/// Fleet drift (`SchemaDrift`, added): tenants grouped by recorded
/// migrations, and each tenant whose live schema differs from its group's
/// majority, with what differs. Everything `strata drift --json` prints, so
/// `strata --server … drift` prints the same.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "SchemaDrift")]
pub(crate) struct SchemaDriftDto {
    /// Tenants read.
    tenants: i32,
    /// Groups of tenants with the same recorded migrations.
    groups: Vec<DriftGroupDto>,
    /// Tenants that differ from their group's majority.
    outliers: Vec<DriftOutlierDto>,
    /// Schemas (tenants and single schemas) whose live catalog differs from
    /// the fingerprint stored after their last committed unit.
    changed: Vec<String>,
    /// The same schemas, each with the fingerprint stored and the live one.
    changed_schemas: Vec<ChangedSchemaDto>,
}

/// Tenants that recorded the same migrations (`DriftGroup`).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DriftGroup")]
pub(crate) struct DriftGroupDto {
    /// The identity of the migrations they recorded.
    recorded: String,
    /// The fingerprint most of the group shares.
    fingerprint: String,
    /// The tenants with it.
    tenants: OneByOne<String>,
    /// The tenants without it.
    outliers: OneByOne<String>,
}

/// A tenant that differs from its group (`DriftOutlier`).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DriftOutlier")]
pub(crate) struct DriftOutlierDto {
    /// The tenant.
    tenant: String,
    /// Its fingerprint.
    fingerprint: String,
    /// The tenant of the majority it was compared with.
    reference: String,
    /// How many migrations its group recorded.
    migrations: i32,
    /// What differs.
    differences: Vec<DriftDifferenceDto>,
}

/// One object that differs (`DriftDifference`).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DriftDifference")]
pub(crate) struct DriftDifferenceDto {
    /// `relation`, `column`, `index`, `constraint`, `view`, `routine`,
    /// `trigger`, `type`, …
    kind: String,
    /// Its name, the schema's own name written `{schema}`.
    name: String,
    /// `added`, `missing` or `changed`.
    change: String,
    /// The reference's definition.
    expected: Option<String>,
    /// The outlier's definition.
    found: Option<String>,
}

/// A schema changed since the service fingerprinted it (`ChangedSchema`).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "ChangedSchema")]
pub(crate) struct ChangedSchemaDto {
    /// The schema.
    schema: String,
    /// The fingerprint stored after its last committed unit.
    stored: String,
    /// Its fingerprint now.
    live: String,
}

impl From<strata_core::migrate::fingerprint::DriftReport> for SchemaDriftDto {
    fn from(report: strata_core::migrate::fingerprint::DriftReport) -> Self {
        let fingerprints: std::collections::HashMap<String, String> = report
            .groups
            .iter()
            .flat_map(|g| g.outliers.iter().map(|o| (o.schema.clone(), o.fingerprint.clone())))
            .collect();
        SchemaDriftDto {
            tenants: i32::try_from(report.tenants).unwrap_or(i32::MAX),
            groups: report
                .groups
                .into_iter()
                .map(|g| DriftGroupDto {
                    recorded: g.recorded,
                    fingerprint: g.majority,
                    tenants: OneByOne(g.tenants),
                    outliers: OneByOne(g.outliers.into_iter().map(|o| o.schema).collect()),
                })
                .collect(),
            outliers: report
                .outliers
                .into_iter()
                .map(|o| DriftOutlierDto {
                    fingerprint: fingerprints.get(&o.schema).cloned().unwrap_or_default(),
                    tenant: o.schema,
                    reference: o.reference,
                    migrations: i32::try_from(o.migrations).unwrap_or(i32::MAX),
                    differences: o
                        .differences
                        .into_iter()
                        .map(|d| DriftDifferenceDto {
                            kind: d.kind,
                            name: d.name,
                            change: d.change.to_string(),
                            expected: d.expected,
                            found: d.found,
                        })
                        .collect(),
                })
                .collect(),
            changed: report.changed.iter().map(|c| c.schema.clone()).collect(),
            changed_schemas: report
                .changed
                .into_iter()
                .map(|c| ChangedSchemaDto { schema: c.schema, stored: c.stored, live: c.live })
                .collect(),
        }
    }
}

impl From<SchemaDriftDto> for strata_core::migrate::fingerprint::DriftReport {
    /// The report again, from the API's answer (`strata --server … drift`
    /// prints it as the in-process command does).
    fn from(dto: SchemaDriftDto) -> Self {
        use strata_core::migrate::fingerprint::{ChangedSchema, Difference, DriftGroup, Outlier, OutlierReport};
        let outliers: std::collections::HashMap<&str, &DriftOutlierDto> =
            dto.outliers.iter().map(|o| (o.tenant.as_str(), o)).collect();
        let groups = dto
            .groups
            .iter()
            .map(|g| DriftGroup {
                recorded: g.recorded.clone(),
                majority: g.fingerprint.clone(),
                tenants: g.tenants.0.clone(),
                outliers: g
                    .outliers
                    .0
                    .iter()
                    .map(|schema| Outlier {
                        schema: schema.clone(),
                        fingerprint: outliers.get(schema.as_str()).map(|o| o.fingerprint.clone()).unwrap_or_default(),
                        reference: outliers.get(schema.as_str()).map(|o| o.reference.clone()).unwrap_or_default(),
                    })
                    .collect(),
            })
            .collect();
        strata_core::migrate::fingerprint::DriftReport {
            tenants: usize::try_from(dto.tenants).unwrap_or(0),
            groups,
            outliers: dto
                .outliers
                .into_iter()
                .map(|o| OutlierReport {
                    schema: o.tenant,
                    reference: o.reference,
                    migrations: usize::try_from(o.migrations).unwrap_or(0),
                    differences: o
                        .differences
                        .into_iter()
                        .map(|d| Difference {
                            change: strata_core::migrate::fingerprint::change_name(&d.change),
                            kind: d.kind,
                            name: d.name,
                            expected: d.expected,
                            found: d.found,
                        })
                        .collect(),
                })
                .collect(),
            changed: dto
                .changed_schemas
                .into_iter()
                .map(|c| ChangedSchema { schema: c.schema, stored: c.stored, live: c.live })
                .collect(),
        }
    }
}

/// A rollout (`Rollout`, added): a version rolled out in waves, stored and
/// driven by the service.
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "Rollout")]
pub(crate) struct RolloutDto {
    pub(crate) id: i32,
    /// The name each wave's version starts with.
    pub(crate) version_name: String,
    /// `RUNNING`, `SOAKING`, `AWAITING_APPROVAL`, `PAUSED`, `COMPLETED` or
    /// `STOPPED`.
    pub(crate) status: String,
    /// Waves completed.
    pub(crate) completed_waves: i32,
    /// The waves, in order.
    pub(crate) waves: Vec<RolloutWaveDto>,
    /// `SOAKING`: when the next wave may run, RFC 3339.
    pub(crate) not_before: Option<String>,
    /// The failure budget of each wave (null: the configuration's).
    pub(crate) failure_budget: Option<String>,
    /// What happened, oldest first: who started, approved, paused, resumed
    /// it, and what each wave did.
    pub(crate) events: Vec<RolloutEventDto>,
    /// Who started it (`token:<name>`, `proxy:<user>`, `cli:<user>@<host>`;
    /// null without authentication).
    pub(crate) started_by: Option<String>,
    /// A rollout to a desired schema: the schema as it was named (null:
    /// a rollout of the migrations).
    #[serde(default)]
    pub(crate) desired_schema: Option<String>,
}

/// One wave of a rollout (`RolloutWave`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "RolloutWave")]
pub(crate) struct RolloutWaveDto {
    /// As written: `t1,t2`, `10%` or `rest`, then `:approve` or
    /// `:soak=SECONDS` when a gate follows.
    pub(crate) wave: String,
    /// `DONE`, `RUNNING`, `NEXT` (held by a gate, a pause or a failure) or
    /// `PENDING`.
    pub(crate) state: String,
    /// A rollout to a desired schema: the plan (SHA-256) its tenants run
    /// and its approval approves.
    #[serde(default)]
    pub(crate) plan: Option<String>,
}

/// Something that happened to a rollout (`RolloutEvent`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "RolloutEvent")]
pub(crate) struct RolloutEventDto {
    /// When, RFC 3339.
    pub(crate) at: String,
    /// `started`, `wave-started`, `wave-completed`, `wave-failed`,
    /// `approved`, `paused`, `resumed`, `completed`.
    pub(crate) action: String,
    /// The wave it concerns (from 1), if any.
    pub(crate) wave: Option<i32>,
    /// The request that did it (a wave: the replica that ran it).
    pub(crate) request_id: String,
    /// Who did it (null for a wave's runner, and without authentication).
    pub(crate) actor: Option<String>,
    /// What it did (a wave: its version and counts, or its error).
    pub(crate) detail: String,
}

fn unix_rfc3339(seconds: i64) -> String {
    chrono::DateTime::from_timestamp(seconds, 0).map(crate::service::rfc3339).unwrap_or_default()
}

impl RolloutDto {
    /// Rollout `id` as served.
    pub(crate) fn new(id: i64, rollout: strata_core::migrate::rollout::Rollout) -> Self {
        use strata_core::migrate::rollout::Status;
        let waves = rollout
            .waves
            .iter()
            .enumerate()
            .map(|(index, wave)| RolloutWaveDto {
                wave: wave.to_string(),
                state: match index.cmp(&rollout.position) {
                    std::cmp::Ordering::Less => "DONE",
                    std::cmp::Ordering::Equal if rollout.status == Status::Running => "RUNNING",
                    std::cmp::Ordering::Equal => "NEXT",
                    std::cmp::Ordering::Greater => "PENDING",
                }
                .to_string(),
                plan: rollout.desired.as_ref().and_then(|desired| desired.plans.get(index).cloned()),
            })
            .collect();
        RolloutDto {
            id: clamp(id),
            version_name: rollout.version_name,
            status: rollout.status.name().to_string(),
            completed_waves: clamp(rollout.position as i64),
            waves,
            not_before: rollout.not_before.map(unix_rfc3339),
            failure_budget: rollout.failure_budget,
            events: rollout
                .events
                .into_iter()
                .map(|event| RolloutEventDto {
                    at: unix_rfc3339(event.at),
                    action: event.action,
                    wave: event.wave.map(|w| clamp(w as i64 + 1)),
                    request_id: event.request_id,
                    actor: Some(event.actor).filter(|actor| !actor.is_empty()),
                    detail: event.detail,
                })
                .collect(),
            started_by: Some(rollout.started_by).filter(|actor| !actor.is_empty()),
            desired_schema: rollout.desired.map(|desired| desired.file),
        }
    }
}

/// Who a request authenticated as.
#[derive(Debug, SimpleObject)]
#[graphql(name = "Identity")]
pub(crate) struct IdentityDto {
    /// `token:<name>`, `proxy:<user>`, or `anonymous`.
    pub(crate) actor: String,
    /// `viewer`, `deployer`, `approver`, `admin`.
    pub(crate) roles: Vec<String>,
}

impl From<&crate::identity::Identity> for IdentityDto {
    fn from(identity: &crate::identity::Identity) -> Self {
        IdentityDto {
            actor: identity.actor.clone(),
            roles: identity.roles.list().into_iter().map(|role| role.name().to_string()).collect(),
        }
    }
}

/// One row of the audit log.
#[derive(Debug, SimpleObject, serde::Serialize, serde::Deserialize)]
#[graphql(name = "AuditRow")]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditRowDto {
    /// 1, 2, 3, … without gaps.
    pub(crate) id: i64,
    /// When (RFC 3339 UTC).
    pub(crate) at: String,
    /// Who: `token:<name>`, `proxy:<user>`, `cli:<user>@<host>`,
    /// `service:<runner>`, `anonymous`, `unauthenticated:<address>`.
    pub(crate) actor: String,
    /// What: the API field or command.
    pub(crate) action: String,
    /// On what.
    pub(crate) target: String,
    /// The request's id.
    pub(crate) request_id: String,
    /// `ok`, `refused: CODE …` or `failed: CODE …`.
    pub(crate) outcome: String,
    /// The hash of the row before.
    pub(crate) prev: String,
    /// This row's hash.
    pub(crate) hash: String,
    /// `<key id>:<Ed25519 signature of the hash>`, when `auth.auditKey`
    /// signed it.
    pub(crate) signature: Option<String>,
    /// The trace the operation ran in, when traced and sampled (part of
    /// the row's seal): a `createVersion` row's is its version's `traceId`.
    #[serde(default)]
    pub(crate) trace_id: Option<String>,
}

impl From<AuditRowDto> for strata_core::auth::audit::Sealed {
    /// A row as the API served it, to verify where it was read (`strata
    /// --server … audit verify`).
    fn from(row: AuditRowDto) -> Self {
        strata_core::auth::audit::Sealed {
            id: row.id,
            entry: strata_core::auth::audit::Entry {
                at: row.at,
                actor: row.actor,
                action: row.action,
                target: row.target,
                request_id: row.request_id,
                outcome: row.outcome,
                trace_id: row.trace_id,
            },
            prev: row.prev,
            hash: row.hash,
            signature: row.signature,
        }
    }
}

impl From<strata_core::auth::audit::Sealed> for AuditRowDto {
    fn from(row: strata_core::auth::audit::Sealed) -> Self {
        let e = row.entry;
        AuditRowDto {
            id: row.id,
            at: e.at,
            actor: e.actor,
            action: e.action,
            target: e.target,
            request_id: e.request_id,
            outcome: e.outcome,
            prev: row.prev,
            hash: row.hash,
            signature: row.signature,
            trace_id: e.trace_id,
        }
    }
}
