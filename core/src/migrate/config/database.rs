//! `baseLocation`, `driver`, `dataSource` or `shards`, `devDataSource` and
//! `citus`: where the migrations are read from, the database they run
//! against, and where desired-state files are read.
//!
//! `STRATA_DATA_SOURCE`, set and not blank, replaces `dataSource` (the
//! file's is then not read); relative local paths are resolved against the
//! configuration file's directory.

use crate::migrate::config::{
    ConfigError, DATA_SOURCE_VARIABLE, Environment, RawConfig, Substituter, check_data_source, data_source_override,
    invalid, paths, required,
};
use crate::migrate::driver::Driver;
use crate::migrate::location::BaseLocation;
use crate::migrate::shard::Shard;

/// The database section of a configuration, checked, paths resolved.
pub(super) struct Database {
    /// `baseLocation`.
    pub(super) base_location: String,
    /// `driver`.
    pub(super) driver: Driver,
    /// `dataSource` (or `STRATA_DATA_SOURCE`), or the first shard's.
    pub(super) data_source: String,
    /// `shards`, in order; empty when one server is named.
    pub(super) shards: Vec<Shard>,
    /// `devDataSource`, its path resolved as `dataSource`'s.
    pub(super) dev_data_source: Option<String>,
    /// `citus`.
    pub(super) citus: bool,
}

impl Database {
    /// Takes the database section's properties out of `raw` and checks
    /// them in order: `baseLocation`, `driver`, the data source(s),
    /// `devDataSource`, `citus`.
    /// Relative paths are resolved against `directory`.
    pub(super) fn parse<E: Environment + ?Sized>(
        sub: &Substituter<'_, E>,
        raw: &mut RawConfig,
        directory: Option<&str>,
    ) -> Result<Database, ConfigError> {
        let base_location = base_location(sub, raw.base_location.take(), directory)?;
        let driver = driver(sub, raw.driver.take())?;
        let (data_source, mut shards) = data_sources(sub, driver, raw)?;
        let data_source = paths::data_source(driver, directory, &data_source);
        for shard in &mut shards {
            shard.data_source = paths::data_source(driver, directory, &shard.data_source);
        }
        let dev_data_source = sub
            .dev_data_source(driver, raw.dev_data_source.take())?
            .map(|dev| paths::data_source(driver, directory, &dev));
        let citus = citus(raw.citus.take(), driver)?;
        Ok(Database { base_location, driver, data_source, shards, dev_data_source, citus })
    }
}

/// `baseLocation`: required, a location Strata can read, a relative local
/// path resolved against `directory`.
fn base_location<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    value: Option<String>,
    directory: Option<&str>,
) -> Result<String, ConfigError> {
    let base_location = required("baseLocation", sub.optional("baseLocation", value)?)?;
    BaseLocation::parse(&base_location).map_err(|e| invalid("baseLocation", e.to_string()))?;
    Ok(paths::base_location(directory, &base_location))
}

/// `driver`: required, and one of the databases Strata knows.
fn driver<E: Environment + ?Sized>(sub: &Substituter<'_, E>, value: Option<String>) -> Result<Driver, ConfigError> {
    let driver_text = required("driver", sub.optional("driver", value)?)?;
    Driver::parse(&driver_text).ok_or_else(|| ConfigError::Invalid {
        property: "driver",
        reason: format!("unknown driver {driver_text:?}; expected sqlite, postgres, mysql or sqlserver"),
    })
}

/// The first data source and the shards, as written (paths not yet
/// resolved): `STRATA_DATA_SOURCE` when the environment sets it, else
/// `dataSource` or `shards` taken out of `raw`.
fn data_sources<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    driver: Driver,
    raw: &mut RawConfig,
) -> Result<(String, Vec<Shard>), ConfigError> {
    match data_source_override(sub.env)? {
        Some(value) => Ok((overriding_data_source(driver, value, raw.shards.is_some())?, Vec::new())),
        None => sub.data_sources(driver, raw.data_source.take(), raw.shards.take()),
    }
}

/// `STRATA_DATA_SOURCE`'s `value` in place of `dataSource`: refused when
/// the configuration lists shards (`has_shards`), and checked as a data
/// source of `driver`, its errors naming the variable.
fn overriding_data_source(driver: Driver, value: String, has_shards: bool) -> Result<String, ConfigError> {
    if has_shards {
        return Err(invalid(
            "shards",
            format!("{DATA_SOURCE_VARIABLE} replaces dataSource, but this configuration lists shards"),
        ));
    }
    check_data_source(driver, "dataSource", &value).map_err(|e| match e {
        ConfigError::Invalid { reason, .. } => invalid("dataSource", format!("{DATA_SOURCE_VARIABLE}: {reason}")),
        other => other,
    })?;
    Ok(value)
}

/// `citus` (default false): true only with the PostgreSQL driver.
fn citus(value: Option<bool>, driver: Driver) -> Result<bool, ConfigError> {
    let citus = value.unwrap_or(false);
    if citus && driver != Driver::Postgres {
        return Err(invalid("citus", format!("Citus is a PostgreSQL extension; driver is {}", driver.name())));
    }
    Ok(citus)
}
