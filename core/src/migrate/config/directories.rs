//! `singleMigrations`, `tenantMigrations`, `singleScripts`,
//! `tenantScripts` and `citusReferenceTables`: the directories below
//! `baseLocation` that hold migrations and scripts.

use crate::migrate::config::{ConfigError, Environment, RawConfig, Substituter, invalid, validate_directories};
use crate::migrate::driver::Driver;

/// The directory section of a configuration, checked.
pub(super) struct Directories {
    /// `singleMigrations` (at least one).
    pub(super) single_migrations: Vec<String>,
    /// `tenantMigrations`.
    pub(super) tenant_migrations: Vec<String>,
    /// `singleScripts`.
    pub(super) single_scripts: Vec<String>,
    /// `tenantScripts`.
    pub(super) tenant_scripts: Vec<String>,
    /// `citusReferenceTables`: some of `singleMigrations`.
    pub(super) citus_reference_tables: Vec<String>,
}

impl Directories {
    /// Takes the directory section's properties out of `raw` and checks
    /// them: at least one single-schema migration directory, every
    /// directory relative and configured once, and `citusReferenceTables`
    /// (with `driver`) last.
    pub(super) fn parse<E: Environment + ?Sized>(
        sub: &Substituter<'_, E>,
        raw: &mut RawConfig,
        driver: Driver,
    ) -> Result<Directories, ConfigError> {
        let single_migrations = sub.list("singleMigrations", raw.single_migrations.take())?;
        if single_migrations.is_empty() {
            return Err(ConfigError::Missing("singleMigrations"));
        }
        let tenant_migrations = sub.list("tenantMigrations", raw.tenant_migrations.take())?;
        let single_scripts = sub.list("singleScripts", raw.single_scripts.take())?;
        let tenant_scripts = sub.list("tenantScripts", raw.tenant_scripts.take())?;
        validate_directories(&single_migrations, &tenant_migrations, &single_scripts, &tenant_scripts)?;
        let citus_reference_tables = sub.list("citusReferenceTables", raw.citus_reference_tables.take())?;
        check_citus_reference_tables(&citus_reference_tables, driver, &single_migrations)?;
        Ok(Directories { single_migrations, tenant_migrations, single_scripts, tenant_scripts, citus_reference_tables })
    }

    /// Every configured directory, in configuration order: the ones
    /// `migrationFormats` may name.
    pub(super) fn configured(&self) -> Vec<&String> {
        self.single_migrations
            .iter()
            .chain(&self.tenant_migrations)
            .chain(&self.single_scripts)
            .chain(&self.tenant_scripts)
            .collect()
    }
}

/// `citusReferenceTables`: none unless the driver is PostgreSQL, and each
/// one of `singleMigrations`.
fn check_citus_reference_tables(
    citus_reference_tables: &[String],
    driver: Driver,
    single_migrations: &[String],
) -> Result<(), ConfigError> {
    if !citus_reference_tables.is_empty() && driver != Driver::Postgres {
        return Err(invalid(
            "citusReferenceTables",
            format!("Citus is a PostgreSQL extension; driver is {}", driver.name()),
        ));
    }
    if let Some(dir) = citus_reference_tables.iter().find(|d| !single_migrations.contains(d)) {
        return Err(invalid("citusReferenceTables", format!("{dir:?} is not one of singleMigrations")));
    }
    Ok(())
}
