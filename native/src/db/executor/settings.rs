//! How the executor runs versions ([`Settings`]), read once from the
//! configuration.

use std::sync::Arc;

use strata_core::migrate::config::{Config, TransactionScope};
use strata_core::migrate::lock_wait::Timeouts;

/// How the executor runs versions, from the configuration, and the gate
/// that lets one mutation of this process at a time reach for the lock (so
/// waiting mutations hold no connection).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// One mutation at a time in this process.
    pub(crate) gate: Arc<tokio::sync::Mutex<()>>,
    /// Per schema (default) or the whole version in one transaction.
    pub(crate) scope: TransactionScope,
    /// Connections a tenant segment fans out over.
    pub(crate) concurrency: usize,
    /// The schema placeholder of the SQL.
    pub(crate) placeholder: String,
    /// Tenants are the service's own `svc.svc_tenants` (no tenant
    /// statement configured): none yet when the service's tables are not.
    pub(crate) default_tenant_table: bool,
    /// Lock and statement time-outs, before a file's directives.
    pub(crate) timeouts: Timeouts,
    /// Store each schema's catalog fingerprint after its unit commits.
    pub(crate) record_fingerprints: bool,
    /// What a pending migration sorting before applied ones does.
    pub(crate) out_of_order: strata_core::migrate::plan::OutOfOrderPolicy,
    /// Single-schema directories whose tables are Citus reference tables.
    pub(crate) citus_reference_tables: Vec<String>,
    /// Signs every audit row (`auth.auditKey`).
    pub(crate) audit_key: Option<strata_core::auth::audit_key::AuditKey>,
}

impl Settings {
    /// From the configuration; `max_concurrency` is the engine's bound (1
    /// for SQLite, which has one writer).
    pub(crate) fn from_config(config: &Config, max_concurrency: usize) -> Self {
        Settings {
            gate: Arc::default(),
            scope: config.transaction_scope,
            concurrency: config.tenant_concurrency.clamp(1, max_concurrency.max(1)),
            placeholder: config.schema_placeholder.clone(),
            default_tenant_table: config.default_tenant_table,
            timeouts: Timeouts::from_config(config),
            record_fingerprints: config.record_fingerprints,
            out_of_order: config.out_of_order,
            citus_reference_tables: config.citus_reference_tables.clone(),
            audit_key: config.auth.audit_key.clone(),
        }
    }
}
