//! The `backfill:` section: how fast one database server's backfills go
//! together (see [`crate::migrate::backfill`]) — `rowsPerSecond`,
//! `concurrency`, `batchMillis` and `maxReplicaLagSeconds`, each a whole
//! number within its range (written as a number, or as text that may hold
//! `${NAME}`), or its default when absent; and `replicas`, the data sources
//! of a MySQL or MariaDB server's replicas whose lag backfills wait for
//! (secrets, like `dataSource`: shown with their passwords masked).

use serde::{Deserialize, Serialize};

use crate::migrate::config::{ConfigError, Environment, PortValue, RawConfig, Substituter, check_data_source, invalid};
use crate::migrate::driver::Driver;
use crate::migrate::redact::redact_data_source;

/// The pace of backfills on each database server (`backfill:`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// The data sources of the server's replicas whose lag is read
    /// (`replicas`; MySQL and MariaDB, whose primary does not know it):
    /// each one's `Seconds_Behind_Master`.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "redacted")]
    pub replicas: Vec<String>,
}

/// The replicas' data sources as `GET /v2/config` shows them.
fn redacted<S: serde::Serializer>(replicas: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(replicas.iter().map(|replica| redact_data_source(replica)))
}

impl Default for BackfillSettings {
    fn default() -> Self {
        BackfillSettings {
            rows_per_second: DEFAULT_ROWS_PER_SECOND,
            concurrency: DEFAULT_CONCURRENCY,
            batch_millis: DEFAULT_BATCH_MILLIS,
            max_replica_lag_seconds: 0,
            replicas: Vec::new(),
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
    replicas: Option<Vec<String>>,
}

impl BackfillSettings {
    /// Takes the `backfill:` section out of `raw` and checks each property
    /// against its range: `rowsPerSecond` 0 to 1,000,000,000,
    /// `concurrency` 1 to 64, `batchMillis` 1 to 60,000,
    /// `maxReplicaLagSeconds` 0 to 86,400 — and that last only where
    /// `driver`'s replicas' lag can be read: PostgreSQL from the primary's
    /// `pg_stat_replication`, MySQL and MariaDB from the `replicas` listed
    /// (data sources of `driver`, required there and refused elsewhere).
    pub(super) fn parse<E: Environment + ?Sized>(
        sub: &Substituter<'_, E>,
        raw: &mut RawConfig,
        driver: Driver,
    ) -> Result<BackfillSettings, ConfigError> {
        let Some(section) = raw.backfill.take() else { return Ok(BackfillSettings::default()) };
        let property = "backfill.maxReplicaLagSeconds";
        let max_replica_lag_seconds = sub.number(property, section.max_replica_lag_seconds, 0, 0..=86_400)?;
        let replicas = sub.list("backfill.replicas", section.replicas)?;
        for replica in &replicas {
            check_data_source(driver, "backfill.replicas", replica)?;
        }
        check_replicas(driver, max_replica_lag_seconds, &replicas)?;
        Ok(BackfillSettings {
            max_replica_lag_seconds,
            replicas,
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

/// Whether a lag limit of `seconds` can be watched on `driver` with
/// `replicas`: PostgreSQL reads its replicas' lag on the primary and takes
/// no list; MySQL and MariaDB need the list; the other engines neither.
fn check_replicas(driver: Driver, seconds: u64, replicas: &[String]) -> Result<(), ConfigError> {
    let property = "backfill.maxReplicaLagSeconds";
    let listed = matches!(driver, Driver::Mysql);
    let on_primary = crate::migrate::backfill::sql::replica_lag(driver).is_some();
    let why = match (seconds, replicas.is_empty()) {
        (0, false) => ("backfill.replicas", "are read only with backfill.maxReplicaLagSeconds above 0".to_string()),
        (_, false) if !listed => {
            let how = match on_primary {
                true => "reads its replicas' lag on the primary (pg_stat_replication)",
                false => "has no replicas Strata reads yet",
            };
            ("backfill.replicas", format!("are for MySQL and MariaDB; {} {how}", driver.name()))
        }
        (0, true) => return Ok(()),
        (seconds, true) if listed => {
            (property, format!("{seconds} needs backfill.replicas on MySQL and MariaDB: the replicas' data sources"))
        }
        (seconds, true) if !on_primary => {
            let why = format!(
                "{seconds} needs the replicas' lag, which Strata reads on PostgreSQL (pg_stat_replication) and \
                 on MySQL and MariaDB (backfill.replicas); {} is not supported yet",
                driver.name()
            );
            (property, why)
        }
        _ => return Ok(()),
    };
    Err(invalid(why.0, why.1))
}
