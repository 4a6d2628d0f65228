//! Opening one database server: the driver `driver:` names, its engine,
//! and the [`Store`] over it.

use std::sync::Arc;

use strata_core::migrate::config::Config;
use strata_core::migrate::driver::Driver;

use crate::db::engine::{Engine, Keeps};
use crate::db::error::DbError;
use crate::db::executor::settings::Settings;
use crate::db::store::{Database, Store};
use crate::db::types::Access;
use crate::db::{mysql, postgres, sqlite};

/// What a database of `driver` keeps (its engine's [`Engine::KEEPS`]),
/// known before any shard is reached.
pub(crate) fn keeps(driver: Driver) -> Keeps {
    match driver {
        Driver::Sqlite => sqlite::SqliteEngine::KEEPS,
        Driver::Postgres => postgres::PostgresEngine::KEEPS,
        Driver::Mysql => mysql::MysqlEngine::KEEPS,
        #[cfg(feature = "sqlserver")]
        Driver::SqlServer => super::sqlserver::SqlServerEngine::KEEPS,
        #[cfg(not(feature = "sqlserver"))]
        Driver::SqlServer => Keeps::ALL,
    }
}

/// Opens the one database `config.data_source` names.
pub(crate) async fn open_one(config: &Config, access: Access) -> Result<Arc<dyn Database>, DbError> {
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
            let engine = super::sqlserver::SqlServerEngine::open(config)?;
            Arc::new(Store::open(engine, settings(usize::MAX), access).await?)
        }
        #[cfg(not(feature = "sqlserver"))]
        Driver::SqlServer => return Err(crate::db::error::OpenError::DriverNotBuilt(Driver::SqlServer).into()),
    })
}
