//! Database drivers, read top-down:
//!
//! - [`connect`] (here) picks the driver of the configuration and opens a
//!   [`Store`] over its engine, or a `fleet::Fleet` of one store per shard
//!   (`shards:`);
//! - [`store`]: [`Database`], what the service needs, implemented once by
//!   [`Store`] over any [`engine::Engine`];
//! - [`executor`]: the migration loop, written once over the engine's
//!   primitives;
//! - [`engine`]: the primitives a driver implements, and nothing else;
//! - `lease`: the mutation lock as a lease row, for the drivers whose
//!   session locks are not exclusive where their users run them;
//! - `postgres`, `mysql`, `sqlite`, `sqlserver`: the drivers, each with its
//!   SQL as constants in its own `sql.rs`; the three sqlx drivers keep their
//!   books (the `svc` tables and the tenant list) through one `books::Books`
//!   over their dialect's statements, and `rows` decodes those rows;
//! - [`types`] and [`error`]: the floor every module above speaks in.
//!
//! No module imports one listed above it.

mod books;
pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod executor;
mod fleet;
mod lease;
pub(crate) mod mysql;
pub(crate) mod postgres;
mod rows;
pub(crate) mod sqlite;
#[cfg(feature = "sqlserver")]
pub(crate) mod sqlserver;
pub(crate) mod store;
pub(crate) mod types;

use std::sync::Arc;

use strata_core::migrate::config::Config;
use strata_core::migrate::driver::Driver;

pub(crate) use error::DbError;
use executor::Settings;
pub(crate) use store::{Database, Store};
pub(crate) use types::{
    Access, MigrationFilter, MigrationRow, MutationRequest, Observer, Preview, QuarantineRow, RolloutRow, ShardTenants,
    UnreachableShard, VersionFilter, VersionRow,
};

/// How long a driver waits for a database connection before it reports the
/// database unreachable (at start-up: exits with the error).
pub(crate) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens the configured database with its driver; read-write also creates
/// the service's tables (under the lock) when they are missing. With
/// `shards:`, a fleet of one store per shard, each opened on first use if
/// it cannot be now.
pub(crate) async fn connect(config: &Config, access: Access) -> Result<Arc<dyn Database>, DbError> {
    if config.shards.is_empty() {
        return open_one(config, access).await;
    }
    Ok(Arc::new(fleet::Fleet::open(config, access).await))
}

/// Opens the one database `config.data_source` names.
async fn open_one(config: &Config, access: Access) -> Result<Arc<dyn Database>, DbError> {
    let settings = |max_concurrency| Settings::from_config(config, max_concurrency);
    Ok(match config.driver {
        Driver::Sqlite => {
            let engine = sqlite::SqliteEngine::open(config, access).await?;
            Arc::new(Store::open(engine, settings(1), access).await?)
        }
        Driver::Postgres => {
            let engine = postgres::PostgresEngine::open(config).await?;
            Arc::new(Store::open(engine, settings(usize::MAX), access).await?)
        }
        Driver::Mysql => {
            let engine = mysql::MysqlEngine::open(config).await?;
            Arc::new(Store::open(engine, settings(usize::MAX), access).await?)
        }
        #[cfg(feature = "sqlserver")]
        Driver::SqlServer => {
            let engine = sqlserver::SqlServerEngine::open(config)?;
            Arc::new(Store::open(engine, settings(usize::MAX), access).await?)
        }
        #[cfg(not(feature = "sqlserver"))]
        Driver::SqlServer => return Err(DbError::DriverNotBuilt(Driver::SqlServer)),
    })
}
