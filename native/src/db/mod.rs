//! The databases the service migrates, read top-down:
//!
//! - [`connect`] (here, and all this file does) opens a `fleet::Fleet` of
//!   one store per shard (`shards:`), else one store (`open`);
//! - `fleet`: the shell of a sharded fleet — lists every shard, lets core's
//!   `fleet` rules decide, fans out and writes what they decided;
//! - `open`: the driver `driver:` names, its engine and the [`Store`] over it;
//! - [`store`]: [`Database`], what the service needs, implemented once by
//!   [`Store`] over any [`engine::Engine`] and its books;
//! - [`executor`]: the migration loop, written once over the engine's
//!   primitives and its books;
//! - `postgres`, `mysql`, `sqlite`, `sqlserver`: the drivers, each with its
//!   own SQL in its own `sql.rs`;
//! - `lease`: the mutation lock as a lease row, for the drivers whose
//!   session locks are not exclusive where their users run them;
//! - [`engine`]: the primitives a driver implements, and nothing else;
//! - `books`: the service's own tables and the tenant list, one trait
//!   (its "not supported" defaults written once), kept once for the sqlx
//!   drivers over statements written once per dialect parameter, and by
//!   SQL Server itself;
//! - [`types`] and [`error`]: the floor every module above speaks in.
//!
//! No module imports one listed above it, nor this file.

mod books;
pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod executor;
mod fleet;
mod lease;
pub(crate) mod mysql;
mod open;
pub(crate) mod postgres;
pub(crate) mod sqlite;
#[cfg(feature = "sqlserver")]
pub(crate) mod sqlserver;
pub(crate) mod store;
pub(crate) mod types;

use std::sync::Arc;

use strata_core::migrate::config::Config;

pub(crate) use engine::PRINTS_PER_ROUND;
pub(crate) use error::DbError;
pub(crate) use store::Database;
pub(crate) use types::{
    Access, MigrationFilter, MigrationRow, MutationOutcome, MutationRequest, Observer, Preview, QuarantineRow,
    RepairRequest, RolloutRow, ShardTenants, UnreachableShard, VersionFilter, VersionRow,
};

/// Opens the configured database with its driver; read-write also creates
/// the service's tables (under the lock) when they are missing. With
/// `shards:`, a fleet of one store per shard, each opened on first use if
/// it cannot be now.
pub(crate) async fn connect(config: &Config, access: Access) -> Result<Arc<dyn Database>, DbError> {
    if config.shards.is_empty() {
        return open::open_one(config, access).await;
    }
    Ok(Arc::new(fleet::Fleet::open(config, access).await))
}

/// [`connect`], retried while the server cannot be reached, for `wait`
/// (`--wait-for-db`) at most: the waits are core's
/// [`strata_core::retry::connect_wait_ms`]. While nothing listens at the
/// server's TCP address (when it has one) no pool is opened; at the
/// deadline one last [`connect`] gives the usual error. Other failures are
/// returned as they are.
pub(crate) async fn connect_waiting(
    config: &Config,
    access: Access,
    wait: Option<std::time::Duration>,
) -> Result<Arc<dyn Database>, DbError> {
    let Some(wait) = wait else { return connect(config, access).await };
    let started = std::time::Instant::now();
    let deadline_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
    let address = strata_core::migrate::datasource::tcp_address(config.driver, &config.data_source);
    let mut number = 1;
    loop {
        let listening = match &address {
            Some((host, port)) => {
                let probe = tokio::net::TcpStream::connect((host.as_str(), *port));
                matches!(tokio::time::timeout(std::time::Duration::from_secs(1), probe).await, Ok(Ok(_)))
            }
            None => true,
        };
        let attempt = if listening {
            connect(config, access).await
        } else {
            let (host, port) = address.as_ref().map_or(("?", 0), |(host, port)| (host.as_str(), *port));
            Err(DbError::Connect(format!("nothing listens at {host}:{port}")))
        };
        match attempt {
            Err(error @ DbError::Connect(_)) => {
                let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                let Some(ms) = strata_core::retry::connect_wait_ms(number, elapsed_ms, deadline_ms) else {
                    return if listening { Err(error) } else { connect(config, access).await };
                };
                tracing::info!(attempt = number, %error, "the database cannot be reached yet; waiting");
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                number += 1;
            }
            other => return other,
        }
    }
}
