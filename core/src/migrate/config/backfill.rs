//! The `backfill:` section: how fast one database server's backfills go
//! together (see [`crate::migrate::backfill`]) — `rowsPerSecond`,
//! `concurrency`, `batchMillis` and `maxReplicaLagSeconds`, each a whole
//! number within its range (written as a number, or as text that may hold
//! `${NAME}`), or its default when absent.

use serde::{Deserialize, Serialize};

use crate::migrate::config::{ConfigError, Environment, PortValue, RawConfig, Substituter, invalid};
use crate::migrate::driver::Driver;

/// The pace of backfills on each database server (`backfill:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackfillSettings {
    /// Rows per second all backfills on one server may change together
    /// (`rowsPerSecond`; 0: unlimited).
    pub rows_per_second: u64,
    /// Backfills running at once on one server (`concurrency`, at least 1).
    pub concurrency: u32,
    /// How long one batch should take, in milliseconds (`batchMillis`): the
    /// batch size adapts to it, never above the file's `batch=`.
    pub batch_millis: u64,
    /// Backfills on a server wait while one of its replicas replays more
    /// than this many seconds behind it (`maxReplicaLagSeconds`; 0: they
    /// never wait for replicas).
    pub max_replica_lag_seconds: u64,
}

impl Default for BackfillSettings {
    fn default() -> Self {
        BackfillSettings {
            rows_per_second: DEFAULT_ROWS_PER_SECOND,
            concurrency: DEFAULT_CONCURRENCY,
            batch_millis: DEFAULT_BATCH_MILLIS,
            max_replica_lag_seconds: 0,
        }
    }
}

/// `backfill.rowsPerSecond` when not set: unlimited.
pub const DEFAULT_ROWS_PER_SECOND: u64 = 0;
/// `backfill.concurrency` when not set.
pub const DEFAULT_CONCURRENCY: u32 = 4;
/// `backfill.batchMillis` when not set.
pub const DEFAULT_BATCH_MILLIS: u64 = 100;

/// The section as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RawBackfill {
    rows_per_second: Option<PortValue>,
    concurrency: Option<PortValue>,
    batch_millis: Option<PortValue>,
    max_replica_lag_seconds: Option<PortValue>,
}

impl BackfillSettings {
    /// Takes the `backfill:` section out of `raw` and checks each property
    /// against its range: `rowsPerSecond` 0 to 1,000,000,000,
    /// `concurrency` 1 to 64, `batchMillis` 1 to 60,000,
    /// `maxReplicaLagSeconds` 0 to 86,400 — and that last only where
    /// `driver`'s replicas' lag can be read (PostgreSQL, from the primary's
    /// `pg_stat_replication`).
    pub(super) fn parse<E: Environment + ?Sized>(
        sub: &Substituter<'_, E>,
        raw: &mut RawConfig,
        driver: Driver,
    ) -> Result<BackfillSettings, ConfigError> {
        let Some(section) = raw.backfill.take() else { return Ok(BackfillSettings::default()) };
        let property = "backfill.maxReplicaLagSeconds";
        let max_replica_lag_seconds = sub.number(property, section.max_replica_lag_seconds, 0, 0..=86_400)?;
        if max_replica_lag_seconds > 0 && crate::migrate::backfill::sql::replica_lag(driver).is_none() {
            let why = format!(
                "{max_replica_lag_seconds} needs the replicas' lag, which Strata reads on PostgreSQL only \
                 (pg_stat_replication); {} is not supported yet",
                driver.name()
            );
            return Err(invalid(property, why));
        }
        Ok(BackfillSettings {
            max_replica_lag_seconds,
            rows_per_second: sub.number(
                "backfill.rowsPerSecond",
                section.rows_per_second,
                DEFAULT_ROWS_PER_SECOND,
                0..=1_000_000_000,
            )?,
            concurrency: sub.number("backfill.concurrency", section.concurrency, DEFAULT_CONCURRENCY, 1..=64)?,
            batch_millis: sub.number("backfill.batchMillis", section.batch_millis, DEFAULT_BATCH_MILLIS, 1..=60_000)?,
        })
    }
}
