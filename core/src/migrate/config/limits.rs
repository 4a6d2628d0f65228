//! The bounded numbers: `tenantConcurrency`, `lockLeaseSeconds`,
//! `headerReadTimeoutSeconds`, `shutdownGraceSeconds`, `maxConnections`,
//! `maxConnectionsPerClient`, `bodyReadTimeoutSeconds`,
//! `lockTimeoutMillis`, `lockRetries` and `statementTimeoutSeconds` — each a whole number
//! within its range (written as a number, or as text that may hold
//! `${NAME}`), or its default when absent.

use crate::migrate::config::{
    ConfigError, DEFAULT_LOCK_LEASE_SECONDS, DEFAULT_LOCK_RETRIES, DEFAULT_LOCK_TIMEOUT_MILLIS,
    DEFAULT_TENANT_CONCURRENCY, Environment, RawConfig, Substituter,
};
use crate::migrate::statements::MAX_LOCK_RETRIES;

/// The bounded numbers of a configuration, checked, defaults applied.
pub(super) struct Limits {
    /// `tenantConcurrency`.
    pub(super) tenant_concurrency: usize,
    /// `lockLeaseSeconds`.
    pub(super) lock_lease_seconds: u64,
    /// `headerReadTimeoutSeconds`.
    pub(super) header_read_timeout_seconds: u64,
    /// `shutdownGraceSeconds`.
    pub(super) shutdown_grace_seconds: u64,
    /// `maxConnections`.
    pub(super) max_connections: usize,
    /// `maxConnectionsPerClient`, at most `maxConnections`.
    pub(super) max_connections_per_client: usize,
    /// `bodyReadTimeoutSeconds`.
    pub(super) body_read_timeout_seconds: u64,
    /// `lockTimeoutMillis`.
    pub(super) lock_timeout_millis: u64,
    /// `lockRetries`.
    pub(super) lock_retries: u32,
    /// `statementTimeoutSeconds`.
    pub(super) statement_timeout_seconds: u64,
}

impl Limits {
    /// Takes the bounded numbers out of `raw` and checks each against its
    /// range, in the order the module documentation lists them.
    pub(super) fn parse<E: Environment + ?Sized>(
        sub: &Substituter<'_, E>,
        raw: &mut RawConfig,
    ) -> Result<Limits, ConfigError> {
        let tenant_concurrency =
            sub.number("tenantConcurrency", raw.tenant_concurrency.take(), DEFAULT_TENANT_CONCURRENCY, 1..=64)?;
        let lock_lease_seconds =
            sub.number("lockLeaseSeconds", raw.lock_lease_seconds.take(), DEFAULT_LOCK_LEASE_SECONDS, 3..=3600)?;
        let header_read_timeout_seconds =
            sub.number("headerReadTimeoutSeconds", raw.header_read_timeout_seconds.take(), 10, 1..=300)?;
        let shutdown_grace_seconds =
            sub.number("shutdownGraceSeconds", raw.shutdown_grace_seconds.take(), 30, 1..=86_400)?;
        let max_connections = sub.number("maxConnections", raw.max_connections.take(), 1024, 1..=100_000)?;
        let per_client = raw.max_connections_per_client.take();
        let max_connections_per_client =
            sub.number("maxConnectionsPerClient", per_client, 256, 1..=100_000)?.min(max_connections);
        let body_read_timeout_seconds =
            sub.number("bodyReadTimeoutSeconds", raw.body_read_timeout_seconds.take(), 30, 1..=3600)?;
        let lock_timeout_millis =
            sub.number("lockTimeoutMillis", raw.lock_timeout_millis.take(), DEFAULT_LOCK_TIMEOUT_MILLIS, 0..=600_000)?;
        let max_retries = i64::from(MAX_LOCK_RETRIES);
        let lock_retries = sub.number("lockRetries", raw.lock_retries.take(), DEFAULT_LOCK_RETRIES, 0..=max_retries)?;
        let statement_timeout_seconds =
            sub.number("statementTimeoutSeconds", raw.statement_timeout_seconds.take(), 0, 0..=86_400)?;
        Ok(Limits {
            tenant_concurrency,
            lock_lease_seconds,
            header_read_timeout_seconds,
            shutdown_grace_seconds,
            max_connections,
            max_connections_per_client,
            body_read_timeout_seconds,
            lock_timeout_millis,
            lock_retries,
            statement_timeout_seconds,
        })
    }
}
