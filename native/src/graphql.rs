//! The GraphQL API of `/v2/service`: queries and mutations of the spec.

mod codes;
pub(crate) mod desired;
mod fleet;
mod guard;
pub(crate) mod limits;
mod one_by_one;
mod page;
pub(crate) mod preview;
pub(crate) mod types;

use std::sync::Arc;

use async_graphql::{Context, EmptySubscription, Object, Result, Schema};
use strata_core::migrate::operation::Operation;
use strata_core::migrate::plan::{Action, PlanError};
use strata_core::migrate::wave::Wave;

use crate::db::{BackfillMove, VersionWindow};
use crate::error::{AppError, graphql_error};
use crate::identity::Identity;
use crate::service::{Caller, CreateRequest, DesiredStart, RequestId, RolloutControl, Service};
use desired::{DesiredApplyDto, DesiredDiffDto, DesiredGroupLeftDto, DestructiveDto};
use fleet::FleetDto;
use one_by_one::OneByOne;
use preview::{PlanPreviewDto, RepairDto, StatusDto};
use strata_core::migrate::rollout::FleetGate;
use types::{
    ActionDto, AuditRowDto, BackfillDto, BackfillFileDto, BackfillWaitDto, CreateResultsDto, DbMigrationDto,
    IdentityDto, MigrationInterface, QuarantinedTenantDto, RetryInput, RolloutDto, SchemaDriftDto, ShardDto,
    SourceMigrationDto, SourceMigrationFilters, TenantDto, TenantInput, TenantsInput, VersionDto, VersionInput,
};

/// The API schema.
pub(crate) type ApiSchema = Schema<Query, Mutation, EmptySubscription>;

/// Complexity of a field that reads storage (the base location or the
/// database) instead of 1, before its selection's complexity is added.
const STORAGE_COST: usize = 10;

/// The most tenants `backfillFiles` shows per file.
const MAX_BACKFILLS_SHOWN: usize = 1000;

/// Builds the schema; the service is available to every resolver, and every
/// request is held to the configured [`limits`].
pub(crate) fn build_schema(service: Arc<Service>) -> ApiSchema {
    let limits = service.config().graphql_limits;
    Schema::build(Query, Mutation, EmptySubscription)
        .register_output_type::<MigrationInterface>()
        .extension(codes::RequestErrorCodes)
        .extension(limits::CostLimits(limits))
        .extension(guard::Guard)
        .data(service)
        .finish()
}

/// The request's shared scope (sources read once, the contents budget).
fn scope<'a>(ctx: &Context<'a>) -> Result<&'a Arc<limits::RequestScope>> {
    ctx.data::<Arc<limits::RequestScope>>()
}

/// The source migrations, read once per request.
async fn sources(ctx: &Context<'_>) -> Result<Arc<Vec<strata_core::migrate::source::SourceMigration>>> {
    let service = service(ctx)?;
    scope(ctx)?.sources(|| service.source_migrations()).await.map_err(graphql_error)
}

fn service<'a>(ctx: &Context<'a>) -> Result<&'a Arc<Service>> {
    ctx.data::<Arc<Service>>()
}

fn request_id(ctx: &Context<'_>) -> String {
    ctx.data_opt::<RequestId>().map(|id| id.0.clone()).unwrap_or_default()
}

/// Who asks: the request's id and its identity (the guard let it through).
fn caller(ctx: &Context<'_>) -> Caller {
    let request_id = request_id(ctx);
    match ctx.data_opt::<Identity>() {
        Some(identity) => identity.caller(&request_id),
        None => Caller { request_id, actor: crate::service::ANONYMOUS.to_string(), principal: String::new() },
    }
}

/// Queries.
pub(crate) struct Query;

#[Object]
impl Query {
    /// Source migrations, optionally filtered.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn source_migrations(
        &self,
        ctx: &Context<'_>,
        filters: Option<SourceMigrationFilters>,
    ) -> Result<Vec<SourceMigrationDto>> {
        let filters = filters.unwrap_or_default();
        let all = sources(ctx).await?;
        Ok((0..all.len()).filter(|&i| filters.matches(&all[i])).map(|i| SourceMigrationDto::new(&all, i)).collect())
    }

    /// One source migration by `file`.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn source_migration(&self, ctx: &Context<'_>, file: String) -> Result<Option<SourceMigrationDto>> {
        let all = sources(ctx).await?;
        Ok(all.iter().position(|m| m.file == file).map(|i| SourceMigrationDto::new(&all, i)))
    }

    /// Versions; with `file`, only those in which that file was applied.
    /// Every one, oldest first, or — with `first` or `after` — a page of
    /// them in order of id: `first` of them, those after the version whose
    /// id is `after` (the last one of the page before); or — with `last`
    /// or `before` — the newest: `last` of them, those before the version
    /// whose id is `before` (the first one of the page after), still
    /// oldest first. `first`, `after`, `last` and `before` are added to the
    /// spec's schema (a fleet's every `createTenant` is a version).
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn versions(
        &self,
        ctx: &Context<'_>,
        file: Option<String>,
        first: Option<i32>,
        after: Option<i32>,
        last: Option<i32>,
        before: Option<i32>,
    ) -> Result<OneByOne<VersionDto>> {
        let from_start = first.is_some() || after.is_some();
        let from_end = last.is_some() || before.is_some();
        if from_start && from_end {
            let message = "give `first`/`after` or `last`/`before`, not both";
            return Err(graphql_error(AppError::InvalidInput(message.into())));
        }
        let count = |n: Option<i32>, name: &str| {
            n.map(u32::try_from)
                .transpose()
                .map_err(|_| graphql_error(AppError::InvalidInput(format!("`{name}` counts versions, 0 or more"))))
        };
        let window = match (from_start, from_end) {
            (true, _) => Some(VersionWindow::First { after: after.map(i64::from), count: count(first, "first")? }),
            (_, true) => Some(VersionWindow::Last { before: before.map(i64::from), count: count(last, "last")? }),
            _ => None,
        };
        let rows = match (window, file) {
            // A page is read as a page: the list grows with the fleet.
            (Some(window), None) => service(ctx)?.version_window(window).await.map_err(graphql_error)?,
            (window, file) => {
                let mut rows = service(ctx)?.versions(file.as_deref()).await.map_err(graphql_error)?;
                rows.sort_unstable_by_key(|row| row.id);
                match window {
                    Some(window) => window.of(rows),
                    None => rows,
                }
            }
        };
        Ok(OneByOne(rows.into_iter().map(VersionDto::from).collect()))
    }

    /// How many versions there are (one per version, however many shards
    /// ran it). Added to the spec's schema: a count without the list.
    #[graphql(complexity = "STORAGE_COST")]
    async fn version_count(&self, ctx: &Context<'_>) -> Result<u64> {
        service(ctx)?.version_count().await.map_err(graphql_error)
    }

    /// One version.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn version(&self, ctx: &Context<'_>, id: i32) -> Result<Option<VersionDto>> {
        let row = service(ctx)?.version(i64::from(id)).await.map_err(graphql_error)?;
        Ok(row.map(VersionDto::from))
    }

    /// One recorded migration.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn db_migration(&self, ctx: &Context<'_>, id: i32) -> Result<Option<DbMigrationDto>> {
        let row = service(ctx)?.migration(i64::from(id)).await.map_err(graphql_error)?;
        Ok(row.map(DbMigrationDto::from))
    }

    /// Tenants: every one, in the order `tenantSelectSQL` returns them (per
    /// shard, in `shards:` order), or — with `first` or `after` — a page of
    /// them in order of name: `first` of them, those after the tenant named
    /// `after` (the last one of the page before; it need not exist any
    /// more). `first` and `after` are added to the spec's schema.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn tenants(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<OneByOne<TenantDto>> {
        let service = service(ctx)?;
        if first.is_some() || after.is_some() {
            // The page asked of the database (of each shard), never the
            // whole list read.
            let first = page::first(first)?;
            let page = service.tenant_page(after.as_deref(), first).await.map_err(graphql_error)?;
            return Ok(OneByOne(page.into_iter().map(|(name, shard)| TenantDto { name, shard }).collect()));
        }
        let shards = service.shards().await.map_err(graphql_error)?;
        let tenants: Vec<TenantDto> = if shards.is_empty() {
            let names = service.tenants().await.map_err(graphql_error)?;
            names.into_iter().map(|name| TenantDto { name, shard: None }).collect()
        } else {
            shards
                .into_iter()
                .flat_map(|shard| {
                    let name = shard.name;
                    shard.tenants.into_iter().map(move |tenant| TenantDto { name: tenant, shard: Some(name.clone()) })
                })
                .collect()
        };
        Ok(OneByOne(tenants))
    }

    /// How many tenants there are (every shard's). Added to the spec's
    /// schema: a count without the list.
    #[graphql(complexity = "STORAGE_COST")]
    async fn tenant_count(&self, ctx: &Context<'_>) -> Result<u64> {
        service(ctx)?.tenant_count().await.map_err(graphql_error)
    }

    /// Rollouts, oldest first: each wave with its state, the events (who
    /// started, approved, paused, resumed; what each wave did). Added to the
    /// spec's schema.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn rollouts(&self, ctx: &Context<'_>) -> Result<Vec<RolloutDto>> {
        let rollouts = service(ctx)?.rollouts().await.map_err(graphql_error)?;
        Ok(rollouts.into_iter().map(|(id, rollout)| RolloutDto::new(id, rollout)).collect())
    }

    /// The database servers of a sharded fleet (`shards:`), in order, with
    /// their tenant counts and whether they answer (one that does not
    /// counts the tenants the directory last saw there); empty on one
    /// server. Added to the spec's schema.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn shards(&self, ctx: &Context<'_>) -> Result<Vec<ShardDto>> {
        let shards = service(ctx)?.shards().await.map_err(graphql_error)?;
        Ok(shards
            .into_iter()
            .map(|shard| ShardDto {
                name: shard.name,
                tenant_count: i32::try_from(shard.tenants.len()).unwrap_or(i32::MAX),
                reachable: shard.reachable,
            })
            .collect())
    }

    /// What `createVersion` (with `tenantName`: `createTenant`) would do
    /// now, read without the lock and writing nothing. Added to the spec's
    /// schema (the console's preview; `strata plan` prints the same).
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn plan(
        &self,
        ctx: &Context<'_>,
        tenant_name: Option<String>,
        #[graphql(default_with = "Some(ActionDto::Apply)")] action: Option<ActionDto>,
    ) -> Result<PlanPreviewDto> {
        let service = service(ctx)?;
        let target = service.target(tenant_name).map_err(graphql_error)?;
        match service.preview(target, action.unwrap_or(ActionDto::Apply).into()).await {
            Ok((plan, sources)) => {
                let lint = service.lint(&plan.plan, &sources);
                let active = preview::active_rollouts(service).await;
                Ok(PlanPreviewDto::from_plan(&plan.plan, &sources, lint, plan.skipped, active))
            }
            Err(AppError::Plan(PlanError::Drift(drift))) => Ok(PlanPreviewDto::refused(&drift)),
            Err(error) => Err(graphql_error(error)),
        }
    }

    /// Where the fleet stands: the newest `versions` versions (newest
    /// first), the tenant count, the migrations pending per schema
    /// (quarantined tenants included and marked), drifted and missing
    /// files, shards that did not answer and rollouts in progress. What
    /// `strata status` prints. Added to the spec's schema.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn status(&self, ctx: &Context<'_>, #[graphql(default = 10)] versions: u32) -> Result<StatusDto> {
        preview::status(service(ctx)?, versions as usize).await.map_err(graphql_error)
    }

    /// Every tenant × every tenant migration: applied, pending or drifted.
    /// Added to the spec's schema (the console's fleet matrix).
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn fleet(&self, ctx: &Context<'_>) -> Result<FleetDto> {
        let service = service(ctx)?;
        // Sync never refuses on drift, and the preview reads the tenants once;
        // a shard that does not answer has its tenants shown as unknown.
        let (preview, sources) = service.fleet_state().await.map_err(graphql_error)?;
        let shard_of: std::collections::HashMap<String, String> = service
            .shards()
            .await
            .map_err(graphql_error)?
            .into_iter()
            .flat_map(|shard| {
                let name = shard.name;
                shard.tenants.into_iter().map(move |tenant| (tenant, name.clone()))
            })
            .collect();
        let unknown: Vec<String> = preview.unreachable.into_iter().flat_map(|shard| shard.tenants).collect();
        let matrix =
            strata_core::migrate::report::fleet_matrix(&preview.plan, &sources, preview.tenants).with_unknown(&unknown);
        // What the answer does not need goes before it is built (the plan
        // and the sources: megabytes at 50,000 tenants).
        drop((preview.plan, sources, unknown));
        Ok(FleetDto::new(matrix, &shard_of))
    }

    /// Tenants put aside after a failure a version absorbed
    /// (`failureBudget`), by name: every one, or — with `first` or `after`
    /// — a page, as `tenants` pages. Added to the spec's schema.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn quarantine(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<OneByOne<QuarantinedTenantDto>> {
        let mut rows = service(ctx)?.quarantined().await.map_err(graphql_error)?;
        if first.is_some() || after.is_some() {
            rows.sort_unstable_by(|a, b| a.tenant.cmp(&b.tenant));
            let page = page::page(&rows, |row| row.tenant.as_str(), first, after.as_deref())?;
            rows = rows.drain(page).collect();
        }
        Ok(OneByOne(rows.into_iter().map(QuarantinedTenantDto::from).collect()))
    }

    /// Every backfill's progress (`strata:backfill` files), by tenant and
    /// file. Added to the spec's schema (`strata backfill list` prints the
    /// same).
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn backfills(&self, ctx: &Context<'_>) -> Result<Vec<BackfillDto>> {
        let rows = service(ctx)?.backfills().await.map_err(graphql_error)?;
        Ok(rows.into_iter().map(BackfillDto::from).collect())
    }

    /// Every backfill file's progress over the fleet, by file name: its
    /// tenants counted by state, rows done of rows counted, the pace, and
    /// its first `shown` tenants (default 200, at most 1,000) — running,
    /// paused, failed, cancelled, then done, each by name. The console's
    /// Backfills page reads this: the answer's size does not follow the
    /// fleet's, as `backfills`' does. Added to the spec's schema.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn backfill_files(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 200)] shown: i32,
    ) -> Result<Vec<BackfillFileDto>> {
        let shown = usize::try_from(shown).ok().filter(|shown| *shown <= MAX_BACKFILLS_SHOWN).ok_or_else(|| {
            graphql_error(AppError::InvalidInput(format!(
                "`shown` is {shown}: it counts the tenants shown per file, 0 to {MAX_BACKFILLS_SHOWN}"
            )))
        })?;
        let files = service(ctx)?.backfill_files(shown).await.map_err(graphql_error)?;
        Ok(files.into_iter().map(BackfillFileDto::from).collect())
    }

    /// Fleet drift: every tenant's live schema fingerprinted and compared
    /// with the tenants that recorded the same migrations; outliers with
    /// what differs. Added to the spec's schema (`strata drift` prints the
    /// same). Reads every tenant's catalog: one query per tenant.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn drift(&self, ctx: &Context<'_>) -> Result<SchemaDriftDto> {
        let arrived = scope(ctx)?.arrived();
        let report = service(ctx)?.drift_shared(arrived).await.map_err(graphql_error)?;
        Ok(report.as_ref().clone().into())
    }

    /// Every tenant's plan from its live schema to a desired schema —
    /// `desired`, its SQL text (never a path on the server), or the
    /// configuration's `desiredSchema` when absent — tenants grouped by
    /// plan, largest group first, destructive steps marked, each plan
    /// linted; with `directory` naming a single-schema migration
    /// directory, that schema's plan. Reads only: the engine reads the
    /// text in a scratch schema it rolls back (MariaDB: a scratch database
    /// it drops). Added to the spec's schema (`strata diff --json` prints
    /// the same).
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn desired_diff(
        &self,
        ctx: &Context<'_>,
        desired: Option<String>,
        directory: Option<String>,
    ) -> Result<DesiredDiffDto> {
        let service = service(ctx)?;
        let single = match directory.as_deref().map(|dir| service.config().desired_schema_of(dir)) {
            Some(Ok(single)) => single,
            Some(Err(message)) => return Err(graphql_error(AppError::InvalidInput(message))),
            None => None,
        };
        // A text of the caller's runs on the database (applied into a scratch
        // schema, rolled back): who sent which text is on record, as a
        // mutation's would be.
        let given =
            desired.as_deref().map(|text| (strata_core::migrate::source::checksum(text.as_bytes()), text.len()));
        let arrived = scope(ctx)?.arrived();
        let work = async {
            let (file, text) = service.requested_desired_schema(desired, single).await?;
            service.desired_diff_shared(arrived, file, text, single).await
        };
        let report = match given {
            Some((sha256, bytes)) => {
                let describe = |_: &_| format!("desired text of {bytes} bytes, sha256 {sha256}");
                service.audited(&caller(ctx), "desiredDiff", work, describe).await
            }
            None => work.await,
        }
        .map_err(graphql_error)?;
        Ok(report.as_ref().clone().into())
    }

    /// Who the request authenticated as, and its roles (without
    /// authentication configured: `anonymous`, every role). Added to the
    /// spec's schema (the console hides what the roles do not allow).
    async fn identity(&self, ctx: &Context<'_>) -> IdentityDto {
        match ctx.data_opt::<Identity>() {
            Some(identity) => IdentityDto::from(identity),
            None => IdentityDto { actor: crate::service::ANONYMOUS.to_string(), roles: Vec::new() },
        }
    }

    /// The audit log, oldest first: every mutation, refused operation and
    /// failed authentication, with who, what, on what, the outcome and the
    /// row's place in the hash chain (`strata audit verify` checks it).
    /// `since`: RFC 3339, the rows from then on; `last`: only the newest
    /// N. Admin only. Added to the spec's schema.
    #[graphql(complexity = "STORAGE_COST + child_complexity")]
    async fn audit(&self, ctx: &Context<'_>, since: Option<String>, last: Option<u32>) -> Result<Vec<AuditRowDto>> {
        let rows = service(ctx)?.audit_log(since.as_deref(), last.map(u64::from)).await.map_err(graphql_error)?;
        Ok(rows.into_iter().map(AuditRowDto::from).collect())
    }
}

/// A `createVersion` over `wave` of the fleet (`Wave::All`: every tenant).
fn version_request(ctx: &Context<'_>, input: VersionInput, wave: Wave) -> CreateRequest {
    let operation = Operation::Version {
        action: input.action.unwrap_or(ActionDto::Apply).into(),
        wave,
        sync_to: input.sync_to.clone(),
        failure_budget: None,
        reviewed: None,
    };
    request(ctx, input, operation)
}

/// A request for `operation` as `input` asks it: its name, whether a dry
/// run, whether it overrides an active rollout.
fn request(ctx: &Context<'_>, input: VersionInput, operation: Operation) -> CreateRequest {
    CreateRequest {
        dry_run: input.dry_run.unwrap_or(false),
        rollout_gate: match input.override_rollout {
            Some(true) => FleetGate::Override,
            _ => FleetGate::Hold,
        },
        ..CreateRequest::new(input.version_name, operation, caller(ctx))
    }
}

/// A mutation refused before it reaches the service: on record like any
/// refused change (`action` on `target`), then the API's error.
async fn refused(ctx: &Context<'_>, action: &str, target: &str, error: AppError) -> async_graphql::Error {
    if let Ok(service) = service(ctx) {
        service.audit(&caller(ctx), action, target, crate::service::audit::refusal(&error)).await;
    }
    graphql_error(error)
}

async fn operate(ctx: &Context<'_>, id: i32, control: RolloutControl) -> Result<RolloutDto> {
    let rollout = service(ctx)?.operate_rollout(i64::from(id), control, &caller(ctx)).await.map_err(graphql_error)?;
    Ok(RolloutDto::new(i64::from(id), rollout))
}

/// Mutations.
pub(crate) struct Mutation;

#[Object]
impl Mutation {
    /// Applies (or records) every eligible migration and script as a new version.
    async fn create_version(&self, ctx: &Context<'_>, input: VersionInput) -> Result<CreateResultsDto> {
        let request = version_request(ctx, input, Wave::All);
        Ok(service(ctx)?.create(request).await.map_err(graphql_error)?.into())
    }

    /// Creates a tenant and applies the tenant migrations and scripts to it, as a new version.
    async fn create_tenant(&self, ctx: &Context<'_>, input: TenantInput) -> Result<CreateResultsDto> {
        let service = service(ctx)?;
        let name = input.tenant_name.clone();
        let tenant = match service.new_tenant_name(input.tenant_name) {
            Ok(tenant) => tenant,
            Err(error) => return Err(refused(ctx, "createTenant", &format!("tenant {name}"), error).await),
        };
        let operation = Operation::NewTenant {
            tenant,
            action: input.action.unwrap_or(ActionDto::Apply).into(),
            shard: input.shard,
            colocate_with: input.colocate_with,
        };
        let request = CreateRequest {
            dry_run: input.dry_run.unwrap_or(false),
            ..CreateRequest::new(input.version_name, operation, caller(ctx))
        };
        Ok(service.create(request).await.map_err(graphql_error)?.into())
    }

    /// Creates many tenants and applies the tenant migrations and scripts
    /// to them, as one version (fanned out like any version). The list is
    /// checked whole first — every name by the engine's rule, none twice,
    /// none an existing tenant — and refused with `INVALID_TENANT_LIST`
    /// naming every problem, before anything runs. On a sharded fleet each
    /// goes to `shard`, else to the shard with the fewest tenants.
    /// Added to the spec's schema.
    async fn create_tenants(&self, ctx: &Context<'_>, input: TenantsInput) -> Result<CreateResultsDto> {
        let operation = Operation::NewTenants {
            tenants: input.tenant_names,
            action: input.action.unwrap_or(ActionDto::Apply).into(),
            shard: input.shard,
        };
        let request = CreateRequest::new(input.version_name, operation, caller(ctx));
        Ok(service(ctx)?.create(request).await.map_err(graphql_error)?.into())
    }

    /// `createVersion` over a wave of the fleet: the tenants named
    /// (`tenantNames`, a canary), a stable share of them (`share`, 0–100:
    /// by a hash of each name, so the same tenants on every run, and a
    /// larger share holds a smaller one), or those whose attribute — a
    /// column `tenantSelectSQL` returns beside the name — has one of the
    /// values (`attribute`: `tier=internal` or `tier=internal,beta`). The
    /// single schemas run as in any version; a later wave or a plain
    /// `createVersion` runs the rest. Added to the spec's schema.
    async fn create_version_wave(
        &self,
        ctx: &Context<'_>,
        input: VersionInput,
        tenant_names: Option<Vec<String>>,
        share: Option<u8>,
        attribute: Option<String>,
    ) -> Result<CreateResultsDto> {
        let wave = match (tenant_names, share, attribute) {
            (Some(names), None, None) => Ok(Wave::Named(names)),
            (None, Some(share), None) if share <= 100 => Ok(Wave::Share(share)),
            (None, None, Some(attribute)) => Wave::attribute(&attribute).map_err(|e| e.to_string()),
            _ => Err("give one of tenantNames, share (0 to 100) or attribute (NAME=VALUE)".to_string()),
        };
        let wave = match wave {
            Ok(wave) => wave,
            Err(message) => {
                let target = format!("version {:?}", input.version_name);
                return Err(refused(ctx, "createVersionWave", &target, AppError::InvalidInput(message)).await);
            }
        };
        let request = version_request(ctx, input, wave);
        Ok(service(ctx)?.create(request).await.map_err(graphql_error)?.into())
    }

    /// Brings the tenants to a desired schema: `desired`, the SQL text
    /// (with the schema placeholder; never a path on the server), or the
    /// configuration's `desiredSchema` when absent. The tenants are grouped
    /// by their plan to it (as `strata diff` shows), and each group runs as
    /// a version of its own over its tenants, largest first, its plan
    /// recorded as `desired/<plan>.sql`. Refused before anything runs while
    /// a tenant migration file is pending (`MIGRATIONS_PENDING`) or, unless
    /// `destructive` says otherwise (`Refuse` when absent or null), while a
    /// group's plan loses data (`DESTRUCTIVE_PLAN`). With `group`, only the
    /// group whose plan starts with it runs (a start naming no group, or
    /// several, is `INVALID_INPUT`). A group that fails stops the groups
    /// after it; those before it stay committed (`versions`). With
    /// `directory` naming a `singleMigrations` directory, its single schema
    /// instead (its configured desired schema when `desired` is absent):
    /// one version, its plan recorded as `<directory>/desired/<plan>.sql`,
    /// refused while any migration file is pending. Added to the spec's
    /// schema.
    async fn apply_desired_schema(
        &self,
        ctx: &Context<'_>,
        input: VersionInput,
        desired: Option<String>,
        destructive: Option<DestructiveDto>,
        group: Option<String>,
        directory: Option<String>,
    ) -> Result<DesiredApplyDto> {
        const FIELD: &str = "applyDesiredSchema";
        let service = service(ctx)?;
        let target = format!("version {:?}", input.version_name);
        if input.action == Some(ActionDto::Sync) || input.sync_to.is_some() {
            let error = AppError::InvalidInput("a desired schema is applied: action Apply, without syncTo".into());
            return Err(refused(ctx, FIELD, &target, error).await);
        }
        let single = match directory.as_deref().map(|dir| service.config().desired_schema_of(dir)) {
            Some(Ok(single)) => single,
            Some(Err(message)) => return Err(refused(ctx, FIELD, &target, AppError::InvalidInput(message)).await),
            None => None,
        };
        let (file, text) = match service.requested_desired_schema(desired, single).await {
            Ok(desired) => desired,
            Err(error) => return Err(refused(ctx, FIELD, &target, error).await),
        };
        let destructive = destructive.unwrap_or_default().into();
        let run = match service.desired_run(&file, &text, destructive, group.as_deref(), directory.as_deref()).await {
            Ok(run) => run,
            Err(error) => return Err(refused(ctx, FIELD, &target, error).await),
        };
        let template = request(ctx, input, Operation::version(Action::Apply));
        let mut versions = Vec::with_capacity(run.groups.len());
        for group in &run.groups {
            let result = service.create(run.request(group, &template, None)).await.map_err(graphql_error)?;
            versions.push(result.into());
        }
        let left = run.left.into_iter().map(|(tenants, reason)| DesiredGroupLeftDto { tenants, reason }).collect();
        Ok(DesiredApplyDto { versions, left })
    }

    /// Undoes the most recently applied migrations — their down parts,
    /// newest first, per schema in one transaction with their records — as
    /// a new version: `steps` in each schema, or every migration applied
    /// after the file `to`; only `tenantNames` when given (the single
    /// schemas then stay). Refused before anything runs when a down part is
    /// missing (`REVERT_REFUSED`). Added to the spec's schema.
    async fn revert_version(
        &self,
        ctx: &Context<'_>,
        input: VersionInput,
        steps: Option<u32>,
        to: Option<String>,
        tenant_names: Option<Vec<String>>,
    ) -> Result<CreateResultsDto> {
        use strata_core::migrate::revert::Extent;
        let extent = match (steps, to) {
            _ if input.sync_to.is_some() || input.action == Some(ActionDto::Sync) => {
                Err("revertVersion runs down parts: action Sync and syncTo do not apply")
            }
            (Some(n), None) => Ok(Extent::Steps(n)),
            (None, Some(file)) => Ok(Extent::To(file)),
            _ => Err("give one of steps or to"),
        };
        let extent = match extent {
            Ok(extent) => extent,
            Err(message) => {
                let target = format!("version {:?}", input.version_name);
                let error = AppError::InvalidInput(message.to_string());
                return Err(refused(ctx, "revertVersion", &target, error).await);
            }
        };
        let wave = tenant_names.map(Wave::Named).unwrap_or(Wave::All);
        let request = request(ctx, input, Operation::Revert { extent, wave });
        Ok(service(ctx)?.create(request).await.map_err(graphql_error)?.into())
    }

    /// Runs a version over quarantined tenants only (all, or those named):
    /// each it completes leaves the quarantine; one that fails again stays,
    /// with one more failure counted. Added to the spec's schema.
    async fn retry_quarantined(&self, ctx: &Context<'_>, input: RetryInput) -> Result<CreateResultsDto> {
        let operation = Operation::Retry { tenants: input.tenant_names.unwrap_or_default() };
        let request = CreateRequest {
            rollout_gate: match input.override_rollout {
                Some(true) => FleetGate::Override,
                _ => FleetGate::Hold,
            },
            ..CreateRequest::new(input.version_name, operation, caller(ctx))
        };
        Ok(service(ctx)?.create(request).await.map_err(graphql_error)?.into())
    }

    /// Starts a rollout of a version over the fleet in waves, run by the
    /// service one after another: each `t1,t2` (tenants), `10%` (a stable
    /// share) or `rest`, optionally followed by `:approve` (the next wave
    /// waits for `approveRollout`) or `:soak=SECONDS`, and `:budget=N` or
    /// `:budget=N%` (the wave's own failure budget). Each wave is a
    /// version named after the rollout; a wave that fails beyond
    /// `failureBudget` stops the rollout.
    ///
    /// To a desired schema — `desired`, its SQL text, or with
    /// `desiredSchema: true` the configuration's `desiredSchema` — the
    /// waves are the groups of tenants sharing a plan (`desiredDiff`),
    /// largest first, an approval between each two (give no `waves`); each
    /// approval approves its wave's plan, and a tenant whose plan changed
    /// since is held back when the wave runs. `destructive` as in
    /// `applyDesiredSchema`. Added to the spec's schema.
    #[allow(clippy::too_many_arguments)]
    async fn start_rollout(
        &self,
        ctx: &Context<'_>,
        version_name: String,
        #[graphql(default)] waves: Vec<String>,
        failure_budget: Option<String>,
        desired: Option<String>,
        #[graphql(default = false)] desired_schema: bool,
        destructive: Option<DestructiveDto>,
    ) -> Result<RolloutDto> {
        let service = service(ctx)?;
        // Refused before the service's own (audited) start: on record too.
        let target = format!("version {version_name:?}");
        let desired = if desired.is_some() || desired_schema {
            let (file, text) = match service.requested_desired_schema(desired, None).await {
                Ok(desired) => desired,
                Err(error) => return Err(refused(ctx, "startRollout", &target, error).await),
            };
            Some(DesiredStart { file, text, destructive: destructive.unwrap_or_default().into() })
        } else if destructive.is_some() {
            let error = AppError::InvalidInput("destructive applies to a rollout to a desired schema".into());
            return Err(refused(ctx, "startRollout", &target, error).await);
        } else {
            None
        };
        let (id, rollout) = service
            .start_rollout(&version_name, &waves, failure_budget, desired, &caller(ctx))
            .await
            .map_err(graphql_error)?;
        Ok(RolloutDto::new(id, rollout))
    }

    /// Lets a rollout awaiting approval run its next wave. Added.
    async fn approve_rollout(&self, ctx: &Context<'_>, id: i32) -> Result<RolloutDto> {
        operate(ctx, id, RolloutControl::Approve).await
    }

    /// Stops a rollout before its next wave (a wave running finishes). Added.
    async fn pause_rollout(&self, ctx: &Context<'_>, id: i32) -> Result<RolloutDto> {
        operate(ctx, id, RolloutControl::Pause).await
    }

    /// Ends a rollout before its remaining waves (a wave running finishes):
    /// versions over the fleet are no longer held by it. Added.
    async fn cancel_rollout(&self, ctx: &Context<'_>, id: i32) -> Result<RolloutDto> {
        operate(ctx, id, RolloutControl::Cancel).await
    }

    /// Goes on with a paused rollout, or runs a stopped rollout's failed
    /// wave again. Added.
    async fn resume_rollout(&self, ctx: &Context<'_>, id: i32) -> Result<RolloutDto> {
        operate(ctx, id, RolloutControl::Resume).await
    }

    /// Records deliberate changes to the source, and runs nothing: the new
    /// checksum of each file changed since it was applied, and the removal
    /// of the records of each file deleted from the source — all of them,
    /// or the `files` named (a name that is neither is refused before
    /// anything changes; a pending file is never recorded). Audited as
    /// `versionName`; with `dryRun`, only says what it would change.
    /// Admin only (`strata repair`, Flyway's name). Added to the spec's
    /// schema.
    async fn repair(
        &self,
        ctx: &Context<'_>,
        files: Option<Vec<String>>,
        #[graphql(default_with = "String::from(\"repair\")")] version_name: String,
        #[graphql(default = false)] dry_run: bool,
    ) -> Result<RepairDto> {
        let files = files.unwrap_or_default();
        let repair = service(ctx)?.repair(&files, &version_name, &caller(ctx), dry_run).await.map_err(graphql_error)?;
        Ok(RepairDto::from(repair))
    }

    /// Pauses the running backfills of `tenantNames` (every tenant's when
    /// none is named): no runner takes a batch of them until they are
    /// resumed; a batch running now commits first. The tenants and files
    /// paused. Added to the spec's schema.
    async fn pause_backfills(
        &self,
        ctx: &Context<'_>,
        tenant_names: Option<Vec<String>>,
    ) -> Result<Vec<BackfillWaitDto>> {
        move_backfills(ctx, tenant_names, BackfillMove::Pause).await
    }

    /// Resumes paused backfills (every tenant's when none is named), after
    /// their last committed batch. The tenants and files resumed. Added to
    /// the spec's schema.
    async fn resume_backfills(
        &self,
        ctx: &Context<'_>,
        tenant_names: Option<Vec<String>>,
    ) -> Result<Vec<BackfillWaitDto>> {
        move_backfills(ctx, tenant_names, BackfillMove::Resume).await
    }

    /// Cancels the running or paused backfills of `tenantNames` (every
    /// tenant's when none is named): no batch of them starts again, a batch
    /// running now rolls back, the files stay unrecorded and their tenants
    /// are quarantined (cause `BACKFILL_CANCELLED`); a retry of a tenant
    /// resumes its backfill after its last committed batch. The tenants and
    /// files cancelled. Added to the spec's schema.
    async fn cancel_backfills(
        &self,
        ctx: &Context<'_>,
        tenant_names: Option<Vec<String>>,
    ) -> Result<Vec<BackfillWaitDto>> {
        move_backfills(ctx, tenant_names, BackfillMove::Cancel).await
    }

    /// Lets quarantined tenants go without running anything: the next
    /// version takes them like any other. Returns those released (names not
    /// quarantined are ignored). Added to the spec's schema.
    async fn release_quarantined(&self, ctx: &Context<'_>, tenant_names: Vec<String>) -> Result<Vec<String>> {
        service(ctx)?.release_quarantined(&tenant_names, &caller(ctx)).await.map_err(graphql_error)
    }
}

/// `pauseBackfills`, `resumeBackfills` and `cancelBackfills`: `how` for the
/// backfills of `tenant_names` (every tenant's when none is named).
async fn move_backfills(
    ctx: &Context<'_>,
    tenant_names: Option<Vec<String>>,
    how: BackfillMove,
) -> Result<Vec<BackfillWaitDto>> {
    let tenants = tenant_names.unwrap_or_default();
    let moved = service(ctx)?.move_backfills(&tenants, how, &caller(ctx)).await.map_err(graphql_error)?;
    Ok(moved.into_iter().map(BackfillWaitDto::from).collect())
}
