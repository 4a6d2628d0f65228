//! Desired state: the fleet's way from its live schemas to one desired
//! schema file, planned by core's `desired` and grouped by plan. The
//! engine reads the file (applied into a scratch schema inside a
//! transaction that is rolled back; on MariaDB into a scratch database
//! dropped afterwards, each statement checked to stay inside it first);
//! nothing of it is kept.

use strata_core::migrate::desired::{self, Catalog, DesiredGroup, DesiredReport, Destructive, Grouping};
use strata_core::migrate::operation::Operation;
use strata_core::migrate::plan::{Action, Target};
use strata_core::migrate::quarantine::FailureBudget;
use strata_core::migrate::rollout::DesiredTarget;
use strata_core::migrate::rollout::desired::DesiredWave;
use strata_core::migrate::statements;
use strata_core::migrate::wave::Wave;

use super::{CreateRequest, Service};
use crate::db::engine::Reading;
use crate::error::AppError;

/// The schema the desired file is applied into, inside a transaction that
/// is rolled back, or the database dropped afterwards (two runs at once
/// wait on each other's, never collide).
const SCRATCH: &str = strata_core::migrate::ident::DESIRED_SCRATCH;

/// Tenants whose catalogs are held at once while planning.
const TENANTS_PER_ROUND: usize = 1_000;

/// What bringing the tenants to a desired schema runs, decided before
/// anything does (the command line's `apply --desired` and the API's
/// `applyDesiredSchema` alike).
pub(crate) struct DesiredRun {
    /// The groups brought to the desired schema, in order: each a version
    /// of its own over its tenants ([`DesiredRun::request`]).
    pub(crate) groups: Vec<DesiredGroup>,
    /// The groups left as they are: their tenants, and why.
    pub(crate) left: Vec<(Vec<String>, String)>,
    /// The `singleMigrations` directory whose single schema is brought
    /// there; `None`: the tenants.
    pub(crate) single: Option<String>,
}

impl DesiredRun {
    /// The version of `group`: `template`'s name, caller, dry run and
    /// rollout gate over the group's tenants, its plan recorded as
    /// `desired/<plan>.sql` — a single schema's over every schema (nothing
    /// else is pending: [`Service::desired_run`]), its plan recorded
    /// as `<directory>/desired/<plan>.sql` (core's `desired::plan_source`).
    pub(crate) fn request(
        &self,
        group: &DesiredGroup,
        template: &CreateRequest,
        failure_budget: Option<FailureBudget>,
    ) -> CreateRequest {
        let wave = match self.single {
            Some(_) => Wave::All,
            None => Wave::Named(group.tenants.clone()),
        };
        let operation =
            Operation::Version { action: Action::Apply, wave, sync_to: None, failure_budget, reviewed: None };
        CreateRequest {
            version_name: template.version_name.clone(),
            operation,
            caller: template.caller.clone(),
            dry_run: template.dry_run,
            observer: template.observer.clone(),
            rollout_gate: template.rollout_gate,
            trace_links: template.trace_links.clone(),
            desired_plan: Some(desired::plan_source(group, self.single.as_deref())),
        }
    }
}

/// A rollout to a desired schema, as asked: the schema's name as shown,
/// its text, and what a group whose plan loses data does.
pub(crate) struct DesiredStart {
    /// A path, or `the desired schema` for text sent through the API.
    pub(crate) file: String,
    /// The SQL text.
    pub(crate) text: String,
    /// Refuse, allow or leave the groups that lose data.
    pub(crate) destructive: Destructive,
}

impl Service {
    /// Refused while a tenant migration file is pending (core's
    /// `desired::ready`).
    async fn refuse_pending_migrations(&self) -> Result<(), AppError> {
        let (preview, _) = self.preview(Target::AllSchemas, Action::Apply).await?;
        Ok(desired::ready(&preview.plan.counts)?)
    }

    /// Before a plan to the desired schema is written as a file (`new
    /// --desired`): refused while a migration of the schemas planned is
    /// pending — the tenants' (`single`: `None`), or the single schema's
    /// own (core's `desired::single_ready`).
    pub(crate) async fn refuse_pending_before_writing(&self, single: Option<&str>) -> Result<(), AppError> {
        let Some(schema) = single else {
            return self.refuse_pending_migrations().await;
        };
        let (preview, sources) = self.preview(Target::AllSchemas, Action::Apply).await?;
        let pending = strata_core::migrate::report::pending_counts(&preview.plan, &sources);
        Ok(desired::single_ready(pending.iter().map(|count| (count.schema.as_str(), count.migrations)), schema)?)
    }

    /// Wave `wave` of a rollout to the desired schema `target` over
    /// `tenants`, planned again just before it runs (core's
    /// `DesiredTarget::wave`): who runs the approved plan, who is there
    /// already, who is held back. Refused while a migration is pending.
    pub(crate) async fn desired_wave(
        &self,
        target: &DesiredTarget,
        wave: usize,
        tenants: &[String],
    ) -> Result<DesiredWave, AppError> {
        self.refuse_pending_migrations().await?;
        let report = self.desired_diff_of(&target.file, &target.text, Some(tenants)).await?;
        Ok(target.wave(wave, tenants, &report))
    }

    /// What bringing the tenants to the desired schema `text` runs: refused
    /// while a tenant migration file is pending (the plan is made from the
    /// live schemas, which that file would change first), and — under
    /// `destructive` — while a group would lose data; core's
    /// `desired::selection` chooses the groups (with `group`, among the one
    /// group whose plan starts with it: core's `desired::only_group`).
    /// With `directory` naming a `singleMigrations` directory, its single
    /// schema instead: its plan as one version, refused while any migration
    /// file is pending (that version would run it too; core's
    /// `desired::single_apply_ready`). Reads only.
    pub(crate) async fn desired_run(
        &self,
        file: &str,
        text: &str,
        destructive: Destructive,
        group: Option<&str>,
        directory: Option<&str>,
    ) -> Result<DesiredRun, AppError> {
        let single = directory.and_then(|dir| Some((dir, self.config.single_migrations_schema(dir)?)));
        let mut report = match single {
            None => {
                self.refuse_pending_migrations().await?;
                self.desired_diff(file, text).await?
            }
            Some((_, schema)) => {
                self.refuse_any_pending_migration().await?;
                self.desired_diff_in(file, text, Some(schema)).await?
            }
        };
        if let Some(plan) = group {
            report = desired::only_group(report, plan).map_err(|e| AppError::InvalidInput(e.to_string()))?;
        }
        let noun = if single.is_some() { "schema" } else { "tenant" };
        let selection = desired::selection(&report, destructive, noun)
            .map_err(|groups| AppError::DestructivePlan { file: file.to_string(), groups })?;
        Ok(DesiredRun {
            groups: selection.run.into_iter().cloned().collect(),
            left: selection.left.into_iter().map(|(group, why)| (group.tenants.clone(), why)).collect(),
            single: single.map(|(dir, _)| dir.trim_end_matches('/').to_string()),
        })
    }

    /// Refused while any migration file is pending, a single schema's or
    /// the tenants' (core's `desired::single_apply_ready`).
    async fn refuse_any_pending_migration(&self) -> Result<(), AppError> {
        let (preview, sources) = self.preview(Target::AllSchemas, Action::Apply).await?;
        let pending = strata_core::migrate::report::pending_counts(&preview.plan, &sources);
        let singles: Vec<&str> = self.config.single_schemas().collect();
        let single_pending = pending
            .iter()
            .filter(|count| singles.contains(&count.schema.as_str()))
            .map(|count| (count.schema.as_str(), count.migrations));
        Ok(desired::single_apply_ready(&preview.plan.counts, single_pending)?)
    }

    /// The configuration's desired schema (`desiredSchema`) of the tenants
    /// (`single`: `None`) or of the single schema `single`, read from the
    /// base location as the migrations are (disk, S3, Azure): its path and
    /// text; `None` when none is configured for them.
    pub(crate) async fn configured_desired_schema(
        &self,
        single: Option<&str>,
    ) -> Result<Option<(String, String)>, AppError> {
        let (Some(path), Some((directory, name))) =
            (self.config.desired_schema_for(single), self.config.desired_schema_file(single))
        else {
            return Ok(None);
        };
        let file = self.loader.read(vec![directory.to_string()]).await?.into_iter().find(|file| file.name == name);
        let Some(file) = file else {
            let base = &self.config.base_location;
            return Err(AppError::NotFound(format!("{path} (desiredSchema, below {base})")));
        };
        let text = String::from_utf8(file.bytes)
            .map_err(|_| AppError::InvalidInput(format!("{path}: the desired schema is not UTF-8 text")))?;
        Ok(Some((path.to_string(), text)))
    }

    /// The desired schema an API request names: the text it sent (named
    /// "the desired schema"), else the configured `desiredSchema` of the
    /// tenants (`single`: `None`) or of the single schema `single`; neither
    /// is `INVALID_INPUT` saying what to send.
    pub(crate) async fn requested_desired_schema(
        &self,
        sent: Option<String>,
        single: Option<&str>,
    ) -> Result<(String, String), AppError> {
        if let Some(text) = sent {
            return Ok(("the desired schema".to_string(), text));
        }
        self.configured_desired_schema(single)
            .await?
            .ok_or_else(|| AppError::InvalidInput(no_desired_schema(single, "send desired")))
    }

    /// Every tenant's plan from its live schema to the desired schema
    /// `text` (DDL with the schema placeholder), tenants grouped by plan.
    /// Reads only.
    pub(crate) async fn desired_diff(&self, file: &str, text: &str) -> Result<DesiredReport, AppError> {
        self.desired_diff_of(file, text, None).await
    }

    /// [`Service::desired_diff`] of the tenants (`single`: `None`) or of
    /// one single schema (a `singleMigrations` directory's, as core's
    /// `Config::desired_schema_of` names it): its plan to the desired
    /// schema, as one group of one. Reads only.
    pub(crate) async fn desired_diff_in(
        &self,
        file: &str,
        text: &str,
        single: Option<&str>,
    ) -> Result<DesiredReport, AppError> {
        let Some(schema) = single else {
            return self.desired_diff(file, text).await;
        };
        let wanted = self.desired_catalog(file, text).await?;
        self.plans_to(&wanted, &[schema.to_string()]).await
    }

    /// [`Service::desired_diff_in`] for a request that arrived at `arrived`
    /// (`shared_read::ticket`), shared with the requests that ask the same
    /// while it runs (`shared_read`), counted as a read of its own or a
    /// shared one.
    pub(crate) async fn desired_diff_shared(
        &self,
        arrived: u64,
        file: String,
        text: String,
        single: Option<&str>,
    ) -> Result<std::sync::Arc<DesiredReport>, AppError> {
        let key = (file.clone(), text.clone(), single.map(str::to_string));
        let read = || async move { self.desired_diff_in(&file, &text, single).await };
        let (report, answered) = self.desired_reads.get(arrived, key, read).await?;
        crate::telemetry::fleet_read("desired", answered == super::shared_read::Answered::Shared);
        Ok(report)
    }

    /// [`Service::desired_diff`] over the tenants of `only` still in the
    /// fleet (`None`: every tenant).
    async fn desired_diff_of(
        &self,
        file: &str,
        text: &str,
        only: Option<&[String]>,
    ) -> Result<DesiredReport, AppError> {
        let wanted = self.desired_catalog(file, text).await?;
        let mut tenants = self.database.tenants().await?;
        if let Some(only) = only {
            let wanted: std::collections::HashSet<&str> = only.iter().map(String::as_str).collect();
            tenants.retain(|tenant| wanted.contains(tenant.as_str()));
        }
        self.plans_to(&wanted, &tenants).await
    }

    /// The catalog the desired schema `text` makes, read from the scratch
    /// schema the engine applied it into; refused (naming `file`) when it
    /// cannot be, or makes nothing in the schema.
    async fn desired_catalog(&self, file: &str, text: &str) -> Result<Catalog, AppError> {
        let driver = self.config.driver;
        match statements::inspect(driver, file, text) {
            Err(refusals) => return Err(AppError::InvalidInput(format!("{file}: {refusals}"))),
            Ok(mode) if mode.no_transaction || mode.backfill => {
                return Err(AppError::InvalidInput(format!(
                    "{file}: a desired schema is applied in one transaction: drop its strata:no-transaction and \
                     strata:backfill directives"
                )));
            }
            Ok(_) => {}
        }
        // A tenant or single schema of the scratch's name (made before the
        // name was reserved) would be dropped with the scratch.
        let singles: Vec<String> = self.config.single_schemas().map(str::to_string).collect();
        if self.config.dev_data_source.is_none()
            && (self.database.tenants().await?.iter().chain(&singles)).any(|name| name.eq_ignore_ascii_case(SCRATCH))
        {
            return Err(AppError::InvalidInput(format!(
                "a schema of the fleet is named {SCRATCH}, the scratch a desired schema is read in (made and dropped \
                 at each reading): rename it, or read desired schemas on a devDataSource"
            )));
        }
        let placeholder = self.config.schema_placeholder.as_str();
        let sql = text.replace(placeholder, SCRATCH);
        // Where DDL commits at once, nothing may reach outside the scratch.
        desired::scope::check(driver, &sql, SCRATCH).map_err(|outside| {
            AppError::InvalidInput(format!("{file}: {}", outside.to_string().replace(SCRATCH, placeholder)))
        })?;
        let objects = self.database.desired_catalog(&sql, SCRATCH).await?.map_err(|message| {
            // Named as the file names it.
            let message = message.replace(SCRATCH, placeholder);
            AppError::InvalidInput(format!("{file}: the database refused it: {message}"))
        })?;
        let wanted = Catalog::new(SCRATCH, &objects);
        if wanted.is_empty() {
            return Err(AppError::InvalidInput(format!(
                "{file}: creates nothing in the tenant's schema (name it {placeholder}, as migrations do): \
                 every tenant's objects would be dropped"
            )));
        }
        Ok(wanted)
    }

    /// Each of `schemas`' plan from its live catalog to `wanted`, grouped
    /// by plan (catalogs read [`TENANTS_PER_ROUND`] at a time).
    async fn plans_to(&self, wanted: &Catalog, schemas: &[String]) -> Result<DesiredReport, AppError> {
        let driver = self.config.driver;
        let mut grouping = Grouping::default();
        for round in schemas.chunks(TENANTS_PER_ROUND) {
            for (schema, objects) in round.iter().zip(self.database.catalogs(round, Reading::Desired).await?) {
                let live = Catalog::new(schema, &objects);
                let plan = desired::plan(driver, wanted, &live);
                grouping.add(schema.clone(), plan);
            }
        }
        let placeholder = self.config.schema_placeholder.as_str();
        Ok(grouping.report(wanted, driver, self.database.citus(), placeholder))
    }
}

/// What to do when no desired schema is given or configured for the
/// tenants (`single`: `None`) or for the single schema `single`; `give`
/// says how to give one (`send desired`, `give --desired FILE`).
pub(crate) fn no_desired_schema(single: Option<&str>, give: &str) -> String {
    match single {
        None => format!(
            "no desired schema: {give}, or name the file with desiredSchema in the configuration (the tenants': one \
             path, or a path under a tenantMigrations directory)"
        ),
        Some(schema) => format!(
            "no desired schema for the single schema {schema}: {give}, or name the file under its directory in the \
             configuration (desiredSchema: {{DIRECTORY: FILE}}); the tenants' is never used for it"
        ),
    }
}
