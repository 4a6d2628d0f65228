//! `singleMigrations`, `tenantMigrations`, `singleScripts`,
//! `tenantScripts` and `citusReferenceTables`: the directories below
//! `baseLocation` that hold migrations and scripts; and `desiredSchema`,
//! the desired schema files kept beside them: one path (the tenants'), or
//! a path per migration directory (a `tenantMigrations` directory's is the
//! tenants', a `singleMigrations` directory's its single schema's).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::migrate::config::{ConfigError, Environment, RawConfig, Substituter, invalid, validate_directories};
use crate::migrate::driver::Driver;

/// `desiredSchema` as written.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawDesiredSchema {
    /// One path: the tenants' desired schema.
    One(String),
    /// A path per migration directory.
    ByDirectory(BTreeMap<String, String>),
}

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
    /// `desiredSchema`, the tenants': a file below `baseLocation`, in none
    /// of the directories above.
    pub(super) desired_schema: Option<String>,
    /// `desiredSchema` by `singleMigrations` directory (as configured):
    /// files as the tenants' is, at most one per schema.
    pub(super) single_desired_schemas: BTreeMap<String, String>,
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
        validate_directories(driver, &single_migrations, &tenant_migrations, &single_scripts, &tenant_scripts)?;
        let citus_reference_tables = sub.list("citusReferenceTables", raw.citus_reference_tables.take())?;
        check_citus_reference_tables(&citus_reference_tables, driver, &single_migrations)?;
        let mut directories = Directories {
            single_migrations,
            tenant_migrations,
            single_scripts,
            tenant_scripts,
            citus_reference_tables,
            desired_schema: None,
            single_desired_schemas: BTreeMap::new(),
        };
        match raw.desired_schema.take() {
            None => {}
            Some(RawDesiredSchema::One(file)) => {
                let file = sub.text("desiredSchema", file)?;
                check_desired_schema(&file, &directories.configured())?;
                directories.desired_schema = Some(file);
            }
            Some(RawDesiredSchema::ByDirectory(files)) => {
                for (directory, file) in files {
                    let file = sub.text("desiredSchema", file)?;
                    check_desired_schema(&file, &directories.configured())?;
                    directories.add_desired_schema(directory.trim_end_matches('/'), file)?;
                }
            }
        }
        Ok(directories)
    }

    /// `desiredSchema` under the key `directory`: the tenants' for a
    /// `tenantMigrations` directory (one for all of them), else its single
    /// schema's (one per schema); any other key is refused, naming the
    /// migration directories.
    fn add_desired_schema(&mut self, directory: &str, file: String) -> Result<(), ConfigError> {
        if self.tenant_migrations.iter().any(|tenants| tenants == directory) {
            if self.desired_schema.is_some() {
                return Err(invalid(
                    "desiredSchema",
                    format!(
                        "{directory:?}: the tenants have one desired schema, named under one tenantMigrations directory"
                    ),
                ));
            }
            self.desired_schema = Some(file);
            return Ok(());
        }
        let Some(configured) = self.single_migrations.iter().find(|single| *single == directory) else {
            let migrations: Vec<&str> =
                self.single_migrations.iter().chain(&self.tenant_migrations).map(String::as_str).collect();
            return Err(invalid(
                "desiredSchema",
                format!(
                    "{directory:?} is not a migration directory: a desired schema is named under one of {}",
                    migrations.join(", ")
                ),
            ));
        };
        let schema = schema_of(configured);
        if let Some(other) = self.single_desired_schemas.keys().find(|other| schema_of(other) == schema) {
            return Err(invalid(
                "desiredSchema",
                format!("{other:?} and {directory:?} are both the schema {schema}'s: it has one desired schema"),
            ));
        }
        self.single_desired_schemas.insert(configured.clone(), file);
        Ok(())
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

/// The single schema of a `singleMigrations` directory: its last element.
pub(super) fn schema_of(directory: &str) -> &str {
    directory.rsplit('/').next().unwrap_or(directory)
}

/// `desiredSchema`: a relative path to a file below `baseLocation`, not in
/// a migration or script directory (it would be read, and run, as one of
/// their files).
fn check_desired_schema(file: &str, configured: &[&String]) -> Result<(), ConfigError> {
    if !super::is_relative_below_base(file) {
        return Err(invalid("desiredSchema", format!("{file:?} is not a relative file path below baseLocation")));
    }
    let (directory, _) = super::desired_schema_parts(file);
    if let Some(dir) = configured.iter().find(|dir| dir.as_str() == directory) {
        return Err(invalid(
            "desiredSchema",
            format!(
                "{file:?} is in the configured directory {dir:?}, whose every file runs as a migration or script: \
                 keep the desired schema beside the directories (e.g. schema/tenants.sql)"
            ),
        ));
    }
    Ok(())
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
