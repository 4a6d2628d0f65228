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

use crate::db::error::OpenError;
use strata_core::migrate::config::Config;

pub(crate) use engine::PRINTS_PER_ROUND;
pub(crate) use error::DbError;
pub(crate) use store::Database;
pub(crate) use types::{
    Access, AuditWindow, BackfillEnd, BackfillMove, BackfillState, BackfillStatus, BackfillWait, MigrationFilter,
    MigrationRow, MutationOutcome, MutationRequest, Observer, Preview, QuarantineRow, RepairRequest, RolloutRow,
    ShardTenants, UnreachableShard, VersionFilter, VersionRow, VersionWindow,
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
/// (`--wait-for-db`) and no longer: the waits are core's
/// [`strata_core::retry::connect_wait_ms`], each attempt is cut at the
/// deadline, and the last attempt's reason is the error. While nothing
/// listens at the server's TCP address (when it has one) no pool is
/// opened. Other failures are returned as they are.
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
    let mut last = None;
    loop {
        let remaining = wait.saturating_sub(started.elapsed());
        if let Some(error) = last.take().filter(|_| remaining.is_zero()) {
            return Err(error);
        }
        let attempt = async {
            if let Some((host, port)) = &address {
                let probe = tokio::net::TcpStream::connect((host.as_str(), *port));
                match tokio::time::timeout(std::time::Duration::from_secs(1), probe).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => {
                        return Err(DbError::Open(OpenError::Connect(format!(
                            "{host}:{port}: {}",
                            error::describe_io(&error)
                        ))));
                    }
                    Err(_) => {
                        return Err(DbError::Open(OpenError::Connect(format!("{host}:{port}: no answer within 1 s"))));
                    }
                }
            }
            connect(config, access).await
        };
        let attempt = match tokio::time::timeout(remaining, attempt).await {
            Ok(attempt) => attempt,
            Err(_) => Err(DbError::Open(OpenError::Connect(format!(
                "no answer within the {} s of --wait-for-db",
                wait.as_secs()
            )))),
        };
        match attempt {
            Err(error @ DbError::Open(OpenError::Connect(_))) => {
                let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                let Some(ms) = strata_core::retry::connect_wait_ms(number, elapsed_ms, deadline_ms) else {
                    return Err(error);
                };
                tracing::info!(attempt = number, %error, "the database cannot be reached yet; waiting");
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                number += 1;
                last = Some(error);
            }
            other => return other,
        }
    }
}
