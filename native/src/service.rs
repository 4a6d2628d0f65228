//! The operations of the API, orchestrated: read sources through the loader,
//! let the driver plan (in core) and execute, then account for the result in
//! metrics, logs and the webhook.
//!
//! A version's name and a new tenant's name are checked here, before
//! anything is read. The mutation itself runs in a task of its own, so a
//! client that disconnects cannot cancel it half-way. `createTenants`
//! checks its list whole first (core's `tenant_list`), creates every
//! tenant under the lock (one transaction where DDL is transactional),
//! then runs a version over those tenants only.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use strata_core::migrate::backfill::summary::{FileSummary, summarize as summarize_backfills};
use strata_core::migrate::config::Config;
use strata_core::migrate::ident::validate_new_tenant_name;
use strata_core::migrate::lint;
use strata_core::migrate::operation::Operation;
use strata_core::migrate::plan::{Action, Plan, PlanError, Target};
use strata_core::migrate::rollout;
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::summary::Summary;
use strata_core::migrate::wave::Wave;
use tracing::Instrument;

use crate::db::engine::Reading;
use crate::db::error::{RunError, ShardError};
use crate::db::{
    BackfillEnd, BackfillMove, BackfillStatus, BackfillWait, Database, DbError, MigrationFilter, MigrationRow,
    MutationOutcome, MutationRequest, Observer, Preview, QuarantineRow, RepairRequest, UnreachableShard, VersionFilter,
    VersionRow, VersionWindow,
};
use crate::error::AppError;
use crate::loader::Loader;
use crate::telemetry;
use crate::webhook::Webhook;

pub(crate) mod audit;
pub(crate) mod desired;
mod rollouts;
pub(crate) mod shared_read;
mod tokens;
pub(crate) use desired::DesiredStart;
pub(crate) use rollouts::RolloutControl;

/// Who asks for an operation: the request's id and the identity the
/// request authenticated as (`token:ci`, `proxy:alice`, `cli:alice@host`),
/// or [`ANONYMOUS`] when no authentication is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The request's id (`X-Request-ID`, or the command's).
    pub(crate) request_id: String,
    /// The identity as shown.
    pub(crate) actor: String,
    /// The stable principal behind it, what rules compare
    /// (`oidc:<issuer>#<sub>`, `token:<name>`, `cli:<uid>@<host>`; empty
    /// when anonymous).
    pub(crate) principal: String,
}

/// The actor of a request when no authentication is configured.
pub(crate) const ANONYMOUS: &str = "anonymous";

/// How long a version waits for another process's version to end before it
/// judges the fleet's drift (then it judges what it reads).
const MUTATION_WAIT: Duration = Duration::from_secs(600);

impl Caller {
    /// What a rollout records of the caller (no identity when anonymous:
    /// nobody's approval is then anybody's).
    pub(crate) fn by(&self) -> rollout::By<'_> {
        let actor = if self.actor == ANONYMOUS { "" } else { self.actor.as_str() };
        rollout::By { request_id: &self.request_id, actor, principal: &self.principal, trace: "" }
    }

    /// Who an audit row names: the actor, and its principal beside it when
    /// the two differ (`oidc:alice <a@x> [oidc:https://idp#alice]`).
    pub(crate) fn recorded(&self) -> String {
        strata_core::auth::actor_with_principal(&self.actor, &self.principal)
    }
}

/// The id of the request an operation serves (`X-Request-ID`, set by the
/// HTTP layer), stored with the version it creates.
#[derive(Debug, Clone)]
pub(crate) struct RequestId(pub(crate) String);

/// What a caller asks a mutation to do: the operation, decided where the
/// request is built (core's [`Operation`]), and how it is asked.
#[derive(Debug, Clone)]
pub(crate) struct CreateRequest {
    /// Name of the new version.
    pub(crate) version_name: String,
    /// What it does.
    pub(crate) operation: Operation,
    /// Who asked.
    pub(crate) caller: Caller,
    /// Roll back instead of committing.
    pub(crate) dry_run: bool,
    /// Told what runs and what commits (the command line's progress).
    pub(crate) observer: Option<Arc<dyn Observer>>,
    /// What an active rollout does to this request.
    pub(crate) rollout_gate: rollout::FleetGate,
    /// The requests (W3C `traceparent`s) the version's span links to: a
    /// wave's rollout start and approvals.
    pub(crate) trace_links: Vec<String>,
    /// A desired-state plan (`apply --desired`, core's
    /// `desired::plan_source`): run after the version's own files in its
    /// tenants, recorded as `desired/<plan>.sql`.
    pub(crate) desired_plan: Option<SourceMigration>,
}

impl CreateRequest {
    /// A request for version `version_name` doing `operation`: committed,
    /// held by an active rollout. The callers change what they ask
    /// differently (`CreateRequest { dry_run, ..new }`).
    pub(crate) fn new(version_name: String, operation: Operation, caller: Caller) -> CreateRequest {
        CreateRequest {
            version_name,
            operation,
            caller,
            dry_run: false,
            observer: None,
            rollout_gate: rollout::FleetGate::Hold,
            trace_links: Vec::new(),
            desired_plan: None,
        }
    }

    /// What it acts on, as the audit log names it.
    fn audit_target(&self, result: &Result<CreateResult, AppError>) -> String {
        let id = match result {
            Ok(CreateResult { version: Some(version), .. }) => Some(version.id),
            _ => None,
        };
        let mut target = self.operation.describe(&self.version_name, id);
        if self.dry_run {
            target.push_str(", dry run");
        }
        target
    }
}

/// The result of a mutation: `CreateResults` of the API.
#[derive(Debug, Clone)]
pub(crate) struct CreateResult {
    /// The summary of the operation.
    pub(crate) summary: Summary,
    /// The created version, if one was committed.
    pub(crate) version: Option<VersionRow>,
    /// Tenants whose failure the version absorbed, now quarantined.
    pub(crate) quarantined: Vec<QuarantineRow>,
    /// Tenants that wait on a backfill running after the version.
    pub(crate) waiting: Vec<BackfillWait>,
    /// Quarantined tenants it skipped.
    pub(crate) skipped: Vec<String>,
    /// Tenants a retry completed, released from quarantine.
    pub(crate) released: Vec<String>,
    /// The trace of the version (32 hex digits), when traces are exported.
    pub(crate) trace_id: Option<String>,
}

/// The service behind every route.
pub(crate) struct Service {
    config: Arc<Config>,
    database: Arc<dyn Database>,
    loader: Arc<dyn Loader>,
    webhook: Option<Webhook>,
    /// Webhook deliveries still running (a one-shot command waits for them
    /// before it exits; the server lets them finish on their own).
    background: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// A version left tenants waiting on backfills, or some were resumed.
    backfills_due: tokio::sync::Notify,
    /// Held while backfills are paused, resumed or cancelled: one move at
    /// a time (a Resume sent while a Pause of 300 tenants went on resumed
    /// those paused so far, and the Pause then held the rest for good).
    backfill_moves: tokio::sync::Mutex<()>,
    /// The API's drift reads, shared by the requests that ask meanwhile.
    drift_reads: shared_read::SharedRead<(), strata_core::migrate::fingerprint::DriftReport>,
    /// The API's desired-state plans, shared likewise (keyed by the desired
    /// schema's name and text and the single schema planned).
    desired_reads:
        shared_read::SharedRead<(String, String, Option<String>), strata_core::migrate::desired::DesiredReport>,
}

/// Formats a time the way the API serves `Time`: RFC 3339 UTC, microseconds.
/// Reads and orders every source migration of the configured directories;
/// a file no format reads (a `README.md`) is logged once per process.
pub(crate) async fn read_sources(config: &Config, loader: &dyn Loader) -> Result<Vec<SourceMigration>, AppError> {
    static SAID: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());
    let directories = config.directories().map(|(dir, _)| dir.to_string()).collect();
    let files = loader.read(directories).await?;
    let sources =
        strata_core::migrate::source::read_directories(config.directories(), &config.migration_formats, files)?;
    if !sources.ignored.is_empty() {
        let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for file in sources.ignored {
            if said.len() < 10_000 && !said.contains(&file) {
                tracing::warn!(%file, "not a .sql file: ignored, never run");
                said.insert(file);
            }
        }
    }
    Ok(sources.migrations)
}

/// Lints every file on its own (tables of earlier files exist already),
/// for the configured engine: `strata lint --all`.
pub(crate) fn lint_history(config: &Config, files: &[(&str, &str)]) -> lint::Report {
    lint::lint_separately(&lint::LintInput {
        driver: config.driver,
        files,
        lock_timeout_set: config.lock_timeout_millis > 0,
        citus: config.citus,
    })
}

/// Lints files, in the order given, for the configured engine (the service
/// sets a lock time-out unless `lockTimeoutMillis` is 0), with the Citus
/// rules when `citus` (configured, or found at connect time).
pub(crate) fn lint_files(config: &Config, files: &[(&str, &str)], citus: bool) -> lint::Report {
    lint::lint(&lint::LintInput {
        driver: config.driver,
        files,
        lock_timeout_set: config.lock_timeout_millis > 0,
        citus: config.citus || citus,
    })
}

pub(crate) fn rfc3339(time: chrono::DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

impl Service {
    /// Wires the parts together.
    pub(crate) fn new(config: Arc<Config>, database: Arc<dyn Database>, loader: Arc<dyn Loader>) -> Self {
        let webhook = Webhook::from_config(&config);
        Service {
            config,
            database,
            loader,
            webhook,
            background: std::sync::Mutex::default(),
            backfills_due: tokio::sync::Notify::new(),
            backfill_moves: tokio::sync::Mutex::new(()),
            drift_reads: Default::default(),
            desired_reads: Default::default(),
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// [`Service::ping`] per database server: `DB`, or `DB:<shard>` each.
    pub(crate) async fn health(&self) -> Vec<(String, Result<(), DbError>)> {
        self.database.health().await
    }

    /// Each shard with its tenants (empty without `shards:`).
    pub(crate) async fn shards(&self) -> Result<Vec<crate::db::ShardTenants>, AppError> {
        Ok(self.database.shards().await?)
    }

    /// Tenant names (`tenantSelectSQL`).
    pub(crate) async fn tenants(&self) -> Result<Vec<String>, AppError> {
        Ok(self.database.tenants().await?)
    }

    /// A page of the tenants' names in byte order: `first` of them (every
    /// one without) after `after`, each with its shard on a sharded fleet.
    pub(crate) async fn tenant_page(
        &self,
        after: Option<&str>,
        first: Option<usize>,
    ) -> Result<Vec<(String, Option<String>)>, AppError> {
        Ok(self.database.placed_tenant_page(after, first).await?)
    }

    /// How many tenants there are.
    pub(crate) async fn tenant_count(&self) -> Result<u64, AppError> {
        Ok(self.database.tenant_count().await?)
    }

    /// Where each tenant's shards live on Citus: (schema, node); empty on
    /// other engines.
    pub(crate) async fn placements(&self) -> Result<Vec<(String, String)>, AppError> {
        Ok(self.database.placements().await?)
    }

    /// `colocateWith` of a new tenant: the node (host, port) holding the
    /// named tenant's shards, as core's `migrate::citus::colocation_node`
    /// decides; checked before anything runs.
    async fn colocation(&self, request: &CreateRequest) -> Result<Option<(String, u16)>, AppError> {
        let Operation::NewTenant { colocate_with: Some(with), .. } = &request.operation else { return Ok(None) };
        let citus = self.database.citus();
        let (tenants, placements) = if citus {
            (self.database.tenants().await?, self.database.placements().await?)
        } else {
            Default::default()
        };
        strata_core::migrate::citus::colocation_node(citus, &tenants, &placements, with)
            .map(Some)
            .map_err(|e| AppError::InvalidInput(e.to_string()))
    }

    /// Moves a new tenant to `host:port` unless Citus placed it there
    /// already (with `block_writes`: nothing writes to it yet).
    async fn colocate(&self, tenant: &str, host: &str, port: u16) -> Result<(), AppError> {
        let node = format!("{host}:{port}");
        let placed = self.database.placements().await?;
        match placed.iter().find(|(schema, _)| schema == tenant) {
            Some((_, at)) if *at == node => Ok(()),
            Some(_) => {
                self.database.move_tenant(tenant, host, i32::from(port), "block_writes").await.map_err(|e| {
                    AppError::Database(DbError::Shard(ShardError::MoveRefused(format!(
                        "{tenant} was created, but not moved to {node} (colocateWith): {e}"
                    ))))
                })?;
                tracing::info!(tenant, node = %node, "the new tenant was moved to the node of colocateWith");
                Ok(())
            }
            None => Err(AppError::Database(DbError::Shard(ShardError::MoveRefused(format!(
                "{tenant} was created, but not moved to {node} (colocateWith): its migrations created no table, so \
                 Citus placed it on no node"
            ))))),
        }
    }

    /// Moves a tenant's schema to the Citus node `host:port`; a name that
    /// is no tenant is refused first.
    pub(crate) async fn move_tenant(&self, tenant: &str, host: &str, port: i32, mode: &str) -> Result<(), AppError> {
        if !self.database.tenants().await?.iter().any(|t| t == tenant) {
            return Err(DbError::Shard(ShardError::MoveRefused(format!("{tenant} is not a tenant"))).into());
        }
        Ok(self.database.move_tenant(tenant, host, port, mode).await?)
    }

    /// Versions in id order; with `file`, those that applied it.
    pub(crate) async fn versions(&self, file: Option<&str>) -> Result<Vec<VersionRow>, AppError> {
        let filter = file.map_or(VersionFilter::All, VersionFilter::ApplyingFile);
        Ok(self.database.versions(filter).await?)
    }

    /// A page of versions, in id order.
    pub(crate) async fn version_window(&self, window: VersionWindow) -> Result<Vec<VersionRow>, AppError> {
        Ok(self.database.versions(VersionFilter::Window(window)).await?)
    }

    /// How many versions there are.
    pub(crate) async fn version_count(&self) -> Result<u64, AppError> {
        Ok(self.database.version_count().await?)
    }

    /// One version.
    pub(crate) async fn version(&self, id: i64) -> Result<Option<VersionRow>, AppError> {
        Ok(self.database.versions(VersionFilter::Id(id)).await?.into_iter().next())
    }

    /// The migrations recorded in one version, in id order.
    /// The migrations of version `id` read by its `parts` when it has
    /// them (a sharded fleet's: each part's, shard after shard, without
    /// listing the versions again).
    pub(crate) async fn migrations_of(&self, id: i64, parts: &[i64]) -> Result<Vec<MigrationRow>, AppError> {
        if parts.is_empty() {
            return self.version_migrations(id).await;
        }
        let mut rows = Vec::new();
        for part in parts {
            rows.extend(self.database.migrations(MigrationFilter::Part(*part)).await?);
        }
        Ok(rows)
    }

    /// The first `first` migrations of version `id` (by its `parts` when it
    /// has them, part after part), read a page at a time.
    pub(crate) async fn first_migrations_of(
        &self,
        id: i64,
        parts: &[i64],
        first: usize,
    ) -> Result<Vec<MigrationRow>, AppError> {
        let mut rows = Vec::new();
        if first == 0 {
            return Ok(rows);
        }
        let parts = if parts.is_empty() { vec![id] } else { parts.to_vec() };
        self.each_migration_page(&parts, |page| {
            rows.extend(page);
            Ok(if rows.len() >= first { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        })
        .await?;
        rows.truncate(first);
        Ok(rows)
    }

    /// The migrations of `parts` (a version's parts; one server: the
    /// version), a page at a time, part after part, each page handed to
    /// `each` until it breaks: a reader holds one page, never the version.
    pub(crate) async fn each_migration_page(
        &self,
        parts: &[i64],
        mut each: impl FnMut(Vec<MigrationRow>) -> Result<ControlFlow<()>, AppError>,
    ) -> Result<(), AppError> {
        for &part in parts {
            let mut after = 0;
            loop {
                let page = self.migrations_page(part, after).await?;
                let Some(last) = page.last() else { break };
                after = last.id;
                if each(page)?.is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// A page of the migrations of one part of a version (one server: the
    /// version), those with an id above `after`, in id order; empty past
    /// the last.
    pub(crate) async fn migrations_page(&self, part: i64, after: i64) -> Result<Vec<MigrationRow>, AppError> {
        Ok(self.database.migrations(MigrationFilter::Page { part, after }).await?)
    }

    /// The migrations recorded in one version, in id order.
    pub(crate) async fn version_migrations(&self, version_id: i64) -> Result<Vec<MigrationRow>, AppError> {
        Ok(self.database.migrations(MigrationFilter::Version(version_id)).await?)
    }

    /// One recorded migration.
    pub(crate) async fn migration(&self, id: i64) -> Result<Option<MigrationRow>, AppError> {
        Ok(self.database.migrations(MigrationFilter::Id(id)).await?.into_iter().next())
    }

    /// Fleet drift: every tenant's live catalog fingerprinted (core's
    /// `fingerprint`), tenants grouped by their recorded migrations, the
    /// outliers with what differs. Reads only; each catalog is reduced to
    /// its print as it is read, so memory holds a batch of catalogs (one
    /// schema's on MySQL's pass) and a print per tenant, not the fleet's
    /// catalogs.
    /// [`Service::drift`] for a request that arrived at `arrived`
    /// (`shared_read::ticket`), shared with the requests that ask while it
    /// runs (`shared_read`), counted as a read of its own or a shared one.
    pub(crate) async fn drift_shared(
        &self,
        arrived: u64,
    ) -> Result<Arc<strata_core::migrate::fingerprint::DriftReport>, AppError> {
        let (report, answered) = self.drift_reads.get(arrived, (), || self.drift()).await?;
        telemetry::fleet_read("drift", answered == shared_read::Answered::Shared);
        Ok(report)
    }

    pub(crate) async fn drift(&self) -> Result<strata_core::migrate::fingerprint::DriftReport, AppError> {
        use strata_core::migrate::fingerprint::{Digests, Drift, Stored, TenantCatalog, TenantPrint};
        // Each distinct fingerprint and recorded identity is held once
        // (tenants share a handful); what was stored is read first, while
        // nothing else is held.
        let mut digests = Digests::default();
        let stored: std::collections::BTreeMap<String, Stored> = self
            .database
            .fingerprints()
            .await?
            .into_iter()
            .map(|(schema, stored)| {
                let stored = Stored {
                    fingerprint: digests.intern(&stored.fingerprint),
                    recorded: digests.intern(&stored.recorded),
                };
                (schema, stored)
            })
            .collect();
        let tenants = self.database.tenants().await?;
        // Each schema's recorded migrations reduced to their identity, the
        // rows read one at a time.
        let mut recorded = self.database.recorded().await?;
        // Each catalog reduced to its print as it is read (the store's
        // `catalog_prints`); the outliers and their references are read
        // again for their differences.
        let mut prints: Vec<TenantPrint> = Vec::with_capacity(tenants.len());
        for round in tenants.chunks(crate::db::PRINTS_PER_ROUND) {
            for (schema, print) in round.iter().zip(self.database.catalog_prints(round).await?) {
                let recorded = recorded.remove(schema).unwrap_or_default();
                prints.push(TenantPrint::printed(schema.clone(), &recorded, &print, &mut digests));
            }
        }
        let drift = Drift::new(prints);
        let needed = drift.needed();
        let compared: rustc_hash::FxHashMap<String, Vec<strata_core::migrate::fingerprint::CatalogObject>> =
            needed.iter().cloned().zip(self.database.catalogs(&needed, Reading::Drift).await?).collect();
        // Single schemas the service migrated (they have a stored fingerprint).
        let mut single: Vec<String> =
            self.config.single_schemas().filter(|s| stored.contains_key(*s)).map(str::to_string).collect();
        single.sort();
        single.dedup();
        let singles: Vec<TenantCatalog> = single
            .iter()
            .cloned()
            .zip(self.database.catalogs(&single, Reading::Drift).await?)
            .map(|(schema, objects)| TenantCatalog {
                recorded: recorded.remove(&schema).unwrap_or_default(),
                schema,
                objects,
            })
            .collect();
        Ok(drift.report(&compared, &singles, &stored))
    }

    /// The quarantined tenants, by name.
    pub(crate) async fn quarantined(&self) -> Result<Vec<QuarantineRow>, AppError> {
        Ok(self.database.quarantined().await?)
    }

    /// Every backfill's progress, by tenant and file.
    pub(crate) async fn backfills(&self) -> Result<Vec<BackfillStatus>, AppError> {
        Ok(self.database.backfills().await?.into_iter().map(BackfillStatus::from).collect())
    }

    /// Every backfill file's summary over the fleet (core's
    /// `backfill::summary`), each with at most `shown` of its tenants:
    /// one pass over the books' rows, an answer whose size does not follow
    /// the fleet.
    pub(crate) async fn backfill_files(&self, shown: usize) -> Result<Vec<FileSummary<BackfillStatus>>, AppError> {
        let rows = self.database.backfills().await?;
        Ok(summarize_backfills(rows.into_iter().map(BackfillStatus::from), shown))
    }

    /// Runs every running backfill this process can claim (as `holder`),
    /// until none is left: how each ended.
    pub(crate) async fn run_backfills(&self, holder: &str) -> Result<Vec<BackfillEnd>, AppError> {
        Ok(self.database.run_backfills(holder).await?)
    }

    /// Resolves when a version left tenants waiting on backfills (the
    /// service's runner starts at once instead of at its next tick).
    pub(crate) async fn backfills_due(&self) {
        self.backfills_due.notified().await;
    }

    /// Pauses, resumes or cancels `tenants`' backfills (every tenant's when
    /// none is named), audited: the tenants and files moved.
    pub(crate) async fn move_backfills(
        &self,
        tenants: &[String],
        how: BackfillMove,
        caller: &Caller,
    ) -> Result<Vec<BackfillWait>, AppError> {
        let _one_at_a_time = self.backfill_moves.lock().await;
        let work = async { Ok(self.database.move_backfills(tenants, how, &caller.request_id).await?) };
        let moved = self
            .audited(caller, how.action(), work, |result| match result {
                Ok(moved) => format!(
                    "tenants {} (moved: {})",
                    if tenants.is_empty() { "*".to_string() } else { tenants.join(",") },
                    moved.iter().map(|m| format!("{}:{}", m.tenant, m.file)).collect::<Vec<_>>().join(",")
                ),
                Err(_) => format!("tenants {}", tenants.join(",")),
            })
            .await?;
        if how == BackfillMove::Resume && !moved.is_empty() {
            self.backfills_due.notify_one();
        }
        Ok(moved)
    }

    /// Releases tenants from quarantine: the next version takes them like
    /// any other. Returns those that were quarantined.
    pub(crate) async fn release_quarantined(
        &self,
        tenants: &[String],
        caller: &Caller,
    ) -> Result<Vec<String>, AppError> {
        let work = async { Ok(self.database.release_quarantined(tenants).await?) };
        self.audited(caller, "releaseQuarantined", work, |result| match result {
            Ok(released) => format!("tenants {} (released: {})", tenants.join(","), released.join(",")),
            Err(_) => format!("tenants {}", tenants.join(",")),
        })
        .await
    }

    /// `strata repair`: records the new checksum of changed files and
    /// removes the records of deleted ones (all, or those named), audited
    /// as a version named `version_name` with the request id; with
    /// `dry_run`, only says what it would change.
    pub(crate) async fn repair(
        &self,
        files: &[String],
        version_name: &str,
        caller: &Caller,
        dry_run: bool,
    ) -> Result<strata_core::migrate::repair::Repair, AppError> {
        let work = self.repair_unaudited(files, version_name, &caller.request_id, dry_run);
        // A dry run too, as every mutation (a dry run of createVersion is):
        // who looked at what a repair would change is on record.
        let files = if files.is_empty() { "all changed".to_string() } else { files.join(",") };
        let dry = if dry_run { ", dry run" } else { "" };
        self.audited(caller, "repair", work, |_| format!("version {version_name:?}, files {files}{dry}")).await
    }

    async fn repair_unaudited(
        &self,
        files: &[String],
        version_name: &str,
        request_id: &str,
        dry_run: bool,
    ) -> Result<strata_core::migrate::repair::Repair, AppError> {
        strata_core::migrate::ident::check_version_name(version_name).map_err(AppError::InvalidInput)?;
        let sources = self.source_migrations().await?;
        let created = rfc3339(Utc::now());
        let audit = crate::db::types::Audit { name: version_name, created: &created, request_id };
        let request = RepairRequest { sources: &sources, files, strict: true, audit: (!dry_run).then_some(&audit) };
        let repair = self.database.repair(request).await?;
        if !dry_run && !repair.is_empty() {
            let changed: Vec<&str> = repair.checksums.iter().map(|c| c.file.as_str()).collect();
            let removed: Vec<&str> = repair.removals.iter().map(|r| r.file.as_str()).collect();
            tracing::warn!(request_id, version = version_name, ?changed, ?removed, "books repaired");
        }
        Ok(repair)
    }

    /// The loader.
    pub(crate) fn loader(&self) -> &dyn Loader {
        self.loader.as_ref()
    }

    /// Reads and orders every source migration.
    pub(crate) async fn source_migrations(&self) -> Result<Vec<SourceMigration>, AppError> {
        read_sources(&self.config, self.loader.as_ref()).await
    }

    /// The linter's findings on the files a plan would run.
    pub(crate) fn lint(&self, plan: &Plan, sources: &[SourceMigration]) -> lint::Report {
        lint_files(&self.config, &lint::files_of_plan(plan, sources), self.database.citus())
    }

    /// What `createVersion` (or `createTenant`) would do now: the plan, the
    /// tenants it was made for (quarantined ones skipped) and the sources it
    /// indexes, read without the lock, nothing written.
    pub(crate) async fn preview(
        &self,
        target: Target,
        action: Action,
    ) -> Result<(Preview, Vec<SourceMigration>), AppError> {
        self.preview_with(target, action, true, false, None).await
    }

    /// What a Sync through `to` would record now (`strata plan --sync --to
    /// FILE`), as `apply --sync --to FILE` would.
    pub(crate) async fn preview_sync_to(&self, to: &str) -> Result<(Preview, Vec<SourceMigration>), AppError> {
        let operation = Operation::Version {
            action: Action::Sync,
            wave: Wave::All,
            sync_to: Some(to.to_string()),
            failure_budget: None,
            reviewed: None,
        };
        self.preview_of(operation, true, false).await
    }

    /// What a revert this far back would do now (`strata plan --revert`).
    pub(crate) async fn preview_revert(
        &self,
        extent: strata_core::migrate::revert::Extent,
    ) -> Result<(Preview, Vec<SourceMigration>), AppError> {
        self.preview_with(Target::AllSchemas, Action::Apply, true, false, Some(extent)).await
    }

    /// Like [`Service::preview`] over every tenant, quarantined ones
    /// included, from the shards that answer (one other than the home
    /// shard that does not is in [`Preview::unreachable`]): `strata status`.
    pub(crate) async fn preview_every_tenant(
        &self,
        action: Action,
    ) -> Result<(Preview, Vec<SourceMigration>), AppError> {
        self.preview_with(Target::AllSchemas, action, false, true, None).await
    }

    /// Where every tenant stands (a Sync preview, quarantined tenants
    /// included), from the shards that answer: a shard other than the home
    /// shard that does not is in [`Preview::unreachable`] (the fleet
    /// matrix shows its tenants as unknown).
    pub(crate) async fn fleet_state(&self) -> Result<(Preview, Vec<SourceMigration>), AppError> {
        self.preview_with(Target::AllSchemas, Action::Sync, false, true, None).await
    }

    /// A preview; unless `partial`, a shard that did not answer is the
    /// error.
    async fn preview_with(
        &self,
        target: Target,
        action: Action,
        skip_quarantined: bool,
        partial: bool,
        revert: Option<strata_core::migrate::revert::Extent>,
    ) -> Result<(Preview, Vec<SourceMigration>), AppError> {
        // What it would do is what the operation it previews would.
        let operation = match (revert, target) {
            (Some(extent), _) => Operation::Revert { extent, wave: Wave::All },
            (None, Target::NewTenant(tenant)) => {
                Operation::NewTenant { tenant, action, shard: None, colocate_with: None }
            }
            (None, Target::AllSchemas) => Operation::version(action),
        };
        self.preview_of(operation, skip_quarantined, partial).await
    }

    /// A preview of `operation`, over the sources it would run.
    async fn preview_of(
        &self,
        operation: Operation,
        skip_quarantined: bool,
        partial: bool,
    ) -> Result<(Preview, Vec<SourceMigration>), AppError> {
        let sources = self.sources_for(&operation).await?;
        let created = rfc3339(Utc::now());
        let preview = self
            .database
            .preview(MutationRequest {
                sources: &sources,
                operation: &operation,
                part: None,
                dry_run: true,
                version_name: "",
                request_id: "",
                created: &created,
                observer: None,
                failure_budget: Default::default(),
                skip_quarantined,
                tenants_only: false,
                histories_elsewhere: false,
            })
            .await?;
        if !partial && let Some(first) = preview.unreachable.first() {
            let UnreachableShard { shard, reason, .. } = first.clone();
            return Err(DbError::Shard(ShardError::Unreachable { shard, reason }).into());
        }
        Ok((preview, sources))
    }

    /// The target of a mutation: every schema, or a new tenant whose name
    /// the engine and the configuration accept.
    pub(crate) fn target(&self, tenant: Option<String>) -> Result<Target, AppError> {
        match tenant {
            None => Ok(Target::AllSchemas),
            Some(tenant) => Ok(Target::NewTenant(self.new_tenant_name(tenant)?)),
        }
    }

    /// A new tenant's name, if the engine and the configuration accept it.
    pub(crate) fn new_tenant_name(&self, tenant: String) -> Result<String, AppError> {
        validate_new_tenant_name(&tenant, self.config.driver, self.config.single_schemas())
            .map_err(|e| AppError::Plan(PlanError::InvalidTenantName(e)))?;
        Ok(tenant)
    }

    /// `createTenants`' first half: the list checked whole (core's
    /// `tenant_list`: names, duplicates, existing tenants), then every
    /// tenant created under the lock.
    async fn add_tenants(&self, tenants: &[String], shard: Option<&str>, dry_run: bool) -> Result<(), AppError> {
        if dry_run {
            return Err(AppError::InvalidInput(
                "createTenants has no dry run (strata plan --tenant NAME shows one)".into(),
            ));
        }
        let existing = self.database.tenants().await?;
        let entries = strata_core::migrate::tenant_list::from_names(tenants);
        let singles: Vec<&str> = self.config.single_schemas().collect();
        strata_core::migrate::tenant_list::check(&entries, self.config.driver, singles.iter().copied(), &existing)?;
        self.database.add_tenants(tenants, shard).await?;
        tracing::info!(tenants = tenants.len(), "tenants created; their version follows");
        Ok(())
    }

    /// Closes the database's connections (a one-shot command's end,
    /// before its spans are exported).
    pub(crate) async fn close(&self) {
        self.database.close().await;
    }

    /// Waits for the webhook deliveries still running.
    pub(crate) async fn settle(&self) {
        let tasks: Vec<_> = std::mem::take(&mut *self.background.lock().unwrap_or_else(|e| e.into_inner()));
        for task in tasks {
            let _ = task.await;
        }
    }

    /// `driftPolicy` before a version over every schema (not a retry,
    /// which runs where the operator said): fleet drift read live, logged
    /// (`report`), refusing the version (`refuse`) or quarantining the
    /// drifted tenants, which the version then skips (`quarantine`; returns
    /// their rows) — as core's `drift_verdict` says. An engine that keeps no
    /// catalogs is not judged; a report that could not be read is logged
    /// and not judged.
    async fn check_drift(&self, request: &CreateRequest, created: &str) -> Result<Vec<QuarantineRow>, AppError> {
        use strata_core::migrate::config::DriftPolicy;
        use strata_core::migrate::run::{DriftVerdict, drift_verdict};
        let policy = self.config.drift_policy;
        if policy == DriftPolicy::Off || !request.operation.judges_fleet_drift() || !self.database.keeps().catalogs {
            return Ok(Vec::new());
        }
        let report = match self.drift_between_mutations(policy).await {
            Ok(report) => report,
            Err(error) => {
                tracing::warn!(%error, "fleet drift could not be checked before the version");
                return Ok(Vec::new());
            }
        };
        if !report.has_drift() {
            return Ok(Vec::new());
        }
        let outliers: Vec<&str> = report.outliers.iter().map(|o| o.schema.as_str()).collect();
        let changed: Vec<&str> = report.changed.iter().map(|c| c.schema.as_str()).collect();
        tracing::warn!(
            ?outliers,
            ?changed,
            policy = policy.name(),
            "fleet drift: tenants differ from the tenants that recorded the same migrations, or schemas changed since their last migration (see strata drift)"
        );
        let singles: Vec<&str> = self.config.single_schemas().collect();
        let entries = match drift_verdict(policy, request.dry_run, &report, &singles) {
            DriftVerdict::Runs => return Ok(Vec::new()),
            DriftVerdict::Refused { outliers, changed } => return Err(AppError::SchemaDrift { outliers, changed }),
            DriftVerdict::Quarantines(entries) => entries,
        };
        let rows: Vec<QuarantineRow> = entries
            .into_iter()
            .map(|(tenant, message)| {
                QuarantineRow::put_aside(tenant, "SCHEMA_DRIFT", message, &request.caller.request_id, created)
            })
            .collect();
        self.database.quarantine(&rows).await?;
        for row in &rows {
            telemetry::tenant_quarantined();
            tracing::warn!(tenant = %row.tenant, message = %row.message, "drifted tenant quarantined (driftPolicy: quarantine)");
        }
        Ok(rows)
    }

    /// The fleet's drift, read while no mutation runs when `policy` acts on
    /// it (`refuse`, `quarantine`): another process's version half-way shows
    /// tenants it ran but has not recorded yet (MySQL's DDL before its rows,
    /// SQLite's staged rows), which read as drift. It waits for such a
    /// version to end (as this one would wait for its lock) and reads again
    /// when one started while it read.
    async fn drift_between_mutations(
        &self,
        policy: strata_core::migrate::config::DriftPolicy,
    ) -> Result<strata_core::migrate::fingerprint::DriftReport, AppError> {
        use strata_core::migrate::config::DriftPolicy;
        if !matches!(policy, DriftPolicy::Refuse | DriftPolicy::Quarantine) {
            return self.drift().await;
        }
        let running = || async { self.database.mutation_running().await.unwrap_or(false) };
        let deadline = Instant::now() + MUTATION_WAIT;
        let mut said = false;
        loop {
            while running().await && Instant::now() < deadline {
                if !std::mem::replace(&mut said, true) {
                    tracing::info!("another version is running: drift is judged once it ends");
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            let report = self.drift().await?;
            if !running().await || Instant::now() >= deadline {
                return Ok(report);
            }
        }
    }

    /// What a mutation that ran leaves besides its answer: its diagnostics
    /// in the log, its version in the metrics, the webhook.
    /// `drift` is how long the fleet's drift check took before it.
    fn account(&self, request: &CreateRequest, outcome: &MutationOutcome, summary: &Summary, drift: Duration) {
        for item in &outcome.plan.diagnostics.out_of_order {
            tracing::warn!(file = %item.file, schema = %item.schema, after = %item.after,
                "out-of-order migration applied: it sorts before a migration already applied in its schema");
        }
        for item in &outcome.plan.diagnostics.drift {
            tracing::warn!(file = %item.file, schemas = ?item.schemas, "drift: migration changed since it was applied; Sync left it as recorded");
        }

        if let Some(version) = &outcome.version {
            let executed = request.operation.action() == Action::Apply;
            let new_tenant = matches!(request.operation, Operation::NewTenant { .. });
            telemetry::record_version(&summary.counts, executed, new_tenant);
            let phases = &outcome.phases;
            let ms = |phase: Duration| u64::try_from(phase.as_millis()).unwrap_or(u64::MAX);
            tracing::info!(version_id = version.id, version = %version.name, dry_run = request.dry_run,
                migrations = summary.counts.migrations_grand_total(), scripts = summary.counts.scripts_grand_total(),
                drift_ms = ms(drift), lock_ms = ms(phases.lock), tenants_ms = ms(phases.tenants),
                plan_ms = ms(phases.plan), units_ms = ms(phases.units), wind_down_ms = ms(phases.wind_down),
                "version created");
            if let Some(webhook) = &self.webhook {
                let task = webhook.send_in_background(summary, version.id);
                let mut background = self.background.lock().unwrap_or_else(|e| e.into_inner());
                background.retain(|task| !task.is_finished());
                background.push(task);
            }
        } else {
            tracing::info!(dry_run = request.dry_run, steps = outcome.plan.steps.len(), "no version created");
        }
    }

    /// Runs `createVersion` or `createTenant` (or a wave, a retry, a
    /// revert), audited.
    pub(crate) async fn create(self: &Arc<Self>, request: CreateRequest) -> Result<CreateResult, AppError> {
        let action = request.operation.api_name();
        let span =
            crate::traces::spans::version(&request.version_name, action, request.operation.action(), request.dry_run);
        for link in &request.trace_links {
            crate::traces::context::link(&span, link);
        }
        let trace_id = crate::traces::trace_id(&span);
        let run = async {
            let mut result = self.create_unaudited(&request).await;
            if let Ok(created) = &mut result {
                created.trace_id = trace_id.clone();
            }
            result
        };
        // Audited inside the version's span: the row keeps the version's
        // trace (a wave's is a trace of its own).
        let result = crate::traces::in_span(
            &span,
            self.audited(&request.caller, action, run, |result| request.audit_target(result)),
        )
        .await;
        match &result {
            Ok(created) => crate::traces::spans::version_done(
                &span,
                created.version.as_ref().map(|version| version.id),
                created.summary.counts.migrations_grand_total(),
                created.summary.counts.scripts_grand_total(),
                created.quarantined.len(),
                created.waiting.len(),
            ),
            Err(error) => crate::traces::spans::version_failed(&span, error.code()),
        }
        result
    }

    async fn create_unaudited(self: &Arc<Self>, request: &CreateRequest) -> Result<CreateResult, AppError> {
        strata_core::migrate::ident::check_version_name(&request.version_name).map_err(AppError::InvalidInput)?;
        strata_core::migrate::shard::check_requested(&self.config.shards, request.operation.shard())
            .map_err(|e| AppError::Fleet(e.into()))?;
        let started = Utc::now();
        let clock = Instant::now();
        tracing::info!(version = %request.version_name, operation = request.operation.api_name(),
            action = ?request.operation.action(), dry_run = request.dry_run, "mutation started");
        self.hold_for_rollouts(request).await?;
        let colocation = self.colocation(request).await?;
        let mut sources = self.sources_for(&request.operation).await?;
        if let Some(plan) = &request.desired_plan {
            sources.push(plan.clone());
        }
        if let Some(tenants) = request.operation.creates_tenants() {
            self.add_tenants(tenants, request.operation.shard(), request.dry_run).await?;
        }
        let drift_clock = Instant::now();
        let drifted = self.check_drift(request, &rfc3339(started)).await?;
        let drift_time = drift_clock.elapsed();
        let outcome = self.mutate_in_task(request, sources).await?;
        let summary = Summary {
            started_at: rfc3339(started),
            duration: clock.elapsed().as_secs_f64(),
            counts: outcome.committed_counts.unwrap_or(outcome.plan.counts),
        };
        self.account(request, &outcome, &summary, drift_time);
        if let (Some((host, port)), Operation::NewTenant { tenant, .. }, false) =
            (&colocation, &request.operation, request.dry_run)
        {
            self.colocate(tenant, host, *port).await?;
        }
        let quarantined = self.quarantined_by(request, drifted, outcome.quarantined).await?;
        if !outcome.waiting.is_empty() {
            self.backfills_due.notify_one();
        }
        Ok(CreateResult {
            summary,
            version: outcome.version,
            quarantined,
            waiting: outcome.waiting,
            skipped: outcome.skipped,
            released: outcome.released,
            trace_id: None,
        })
    }

    /// The sources a version runs: every migration, or through `syncTo`
    /// (a Sync only); a rollout's wave refused when they are not the
    /// files its approval reviewed.
    async fn sources_for(&self, operation: &Operation) -> Result<Vec<SourceMigration>, AppError> {
        let mut sources = self.source_migrations().await?;
        if let Operation::Version { action, sync_to, reviewed, .. } = operation {
            if let Some(to) = sync_to {
                if *action != Action::Sync {
                    return Err(AppError::InvalidInput(format!("syncTo {to:?} applies to a Sync only")));
                }
                sources = strata_core::migrate::source::through(sources, to)?;
            }
            if let Some(reviewed) = reviewed {
                let read = sources.iter().map(|m| (m.file.clone(), m.checksum.clone())).collect();
                rollout::check_wave_files(reviewed, &read)?;
            }
        }
        Ok(sources)
    }

    /// The tenants a version put aside (drifted ones first, then those it
    /// quarantined), by name — tenants fail in whatever order their units
    /// ran; after a retry, each with every failure counted, as stored.
    async fn quarantined_by(
        &self,
        request: &CreateRequest,
        drifted: Vec<QuarantineRow>,
        failed: Vec<QuarantineRow>,
    ) -> Result<Vec<QuarantineRow>, AppError> {
        let mut quarantined: Vec<QuarantineRow> = drifted.into_iter().chain(failed).collect();
        quarantined.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        if request.operation.retried().is_some() && !quarantined.is_empty() {
            let stored = self.database.quarantined().await?;
            for row in &mut quarantined {
                if let Some(now) = stored.iter().find(|s| s.tenant == row.tenant) {
                    row.failures = now.failures;
                }
            }
        }
        Ok(quarantined)
    }

    /// Runs the mutation in a task of its own, so that a client that
    /// disconnects cannot cancel it half-way. A failed version that
    /// committed something is counted in the metrics like any other.
    async fn mutate_in_task(
        self: &Arc<Self>,
        request: &CreateRequest,
        sources: Vec<SourceMigration>,
    ) -> Result<MutationOutcome, AppError> {
        let service = Arc::clone(self);
        let task_request = request.clone();
        let outcome = tokio::spawn(
            crate::traces::carried(async move {
                let created = rfc3339(Utc::now());
                service
                    .database
                    .mutate(MutationRequest {
                        sources: &sources,
                        operation: &task_request.operation,
                        part: None,
                        dry_run: task_request.dry_run,
                        version_name: &task_request.version_name,
                        request_id: &task_request.caller.request_id,
                        created: &created,
                        observer: task_request.observer.as_deref(),
                        failure_budget: task_request
                            .operation
                            .failure_budget()
                            .unwrap_or(service.config.failure_budget),
                        skip_quarantined: true,
                        tenants_only: task_request.operation.creates_tenants().is_some(),
                        histories_elsewhere: false,
                    })
                    .await
            })
            .instrument(tracing::Span::current()),
        )
        .await
        .map_err(|e| AppError::Internal(format!("mutation task failed: {e}")))?;
        match outcome {
            Ok(outcome) => Ok(outcome),
            Err(RunError::Database(DbError::MigrationFailed(failure))) => {
                if failure.version_id.is_some() {
                    let executed = request.operation.action() == Action::Apply;
                    let new_tenant = matches!(request.operation, Operation::NewTenant { .. });
                    telemetry::record_version(&failure.applied, executed, new_tenant);
                }
                Err(DbError::MigrationFailed(failure).into())
            }
            Err(error) => Err(error.into()),
        }
    }
}
