//! Desired state: the fleet's way from its live schemas to one desired
//! schema file, planned by core's `desired` and grouped by plan. The
//! engine reads the file (applied into a scratch schema inside a
//! transaction that is rolled back; on MariaDB into a scratch database
//! dropped afterwards, each statement checked to stay inside it first);
//! nothing of it is kept.

use strata_core::migrate::desired::{self, Catalog, DesiredReport, Grouping};
use strata_core::migrate::statements;

use super::Service;
use crate::error::AppError;

/// The schema the desired file is applied into, inside a transaction that
/// is rolled back, or the database dropped afterwards (two runs at once
/// wait on each other's, never collide).
const SCRATCH: &str = "strata_desired";

/// Tenants whose catalogs are held at once while planning.
const TENANTS_PER_ROUND: usize = 1_000;

impl Service {
    /// The configuration's desired schema (`desiredSchema`), read from the
    /// base location as the migrations are (disk, S3, Azure): its path and
    /// text; `None` when none is configured.
    pub(crate) async fn configured_desired_schema(&self) -> Result<Option<(String, String)>, AppError> {
        let (Some(path), Some((directory, name))) =
            (self.config.desired_schema.as_deref(), self.config.desired_schema_file())
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

    /// Every tenant's plan from its live schema to the desired schema
    /// `text` (DDL with the schema placeholder), tenants grouped by plan.
    /// Reads only.
    pub(crate) async fn desired_diff(&self, file: &str, text: &str) -> Result<DesiredReport, AppError> {
        let driver = self.config.driver;
        desired::supported(driver).map_err(|e| AppError::InvalidInput(e.to_string()))?;
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
        let tenants = self.database.tenants().await?;
        let mut grouping = Grouping::default();
        for round in tenants.chunks(TENANTS_PER_ROUND) {
            for (tenant, objects) in round.iter().zip(self.database.desired_catalogs(round).await?) {
                let live = Catalog::new(tenant, &objects);
                let plan = desired::plan(driver, &wanted, &live).map_err(|e| AppError::InvalidInput(e.to_string()))?;
                grouping.add(tenant.clone(), plan);
            }
        }
        Ok(grouping.report(&wanted, driver, self.database.citus(), placeholder))
    }
}
