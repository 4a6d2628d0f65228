//! How the executor runs versions ([`Settings`]), read once from the
//! configuration.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use strata_core::migrate::backfill::pace::{RUNNERS_FRESH_MS, SHARE_EVERY_MS};
use strata_core::migrate::backfill::{LagWatch, RowBudget, Runners};
use strata_core::migrate::config::BackfillSettings;

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
    /// The pace of backfills on this database server (`backfill:`).
    pub(crate) backfill: BackfillPace,
    /// `devDataSource`: the configuration whose `dataSource` it is, where
    /// desired-state files are read (opened for each reading).
    pub(crate) dev: Option<Arc<Config>>,
}

/// The pace of backfills on one database server, shared by every tenant's
/// backfill on it: at most `concurrency` at once, one budget of rows per
/// second (core's `backfill::RowBudget`), and one watch of its replicas'
/// lag (core's `backfill::LagWatch`).
#[derive(Debug, Clone)]
pub(crate) struct BackfillPace {
    /// The time a batch should take (`backfill.batchMillis`).
    pub(crate) batch_millis: u64,
    budget: Arc<Mutex<RowBudget>>,
    slots: Arc<tokio::sync::Semaphore>,
    concurrency: usize,
    stale_ms: i64,
    origin: Instant,
    /// Held while the lag is read, so one backfill reads it for all.
    lag: Option<Arc<tokio::sync::Mutex<LagWatch>>>,
    /// When (on this pace's clock) the runners on the server are next
    /// counted for the budget's share ([`BackfillPace::share_due`]).
    next_share_ms: Arc<AtomicU64>,
    /// The other runners on the server as last read, and when.
    seen: Arc<Mutex<Option<(u64, Runners)>>>,
    /// The backfills this process's runners hold on the server.
    held: Arc<AtomicUsize>,
}

/// One of the server's places a runner of this process holds
/// ([`BackfillPace::try_hold`]), given back when dropped.
pub(crate) struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl BackfillPace {
    /// From the configuration's `backfill:` section, at most
    /// `max_concurrency` at once (the engine's bound: 1 for SQLite); a
    /// runner's claim goes stale after twice `lease_seconds` without a
    /// heartbeat (`lockLeaseSeconds`, as a rollout wave's claim).
    pub(crate) fn new(settings: &BackfillSettings, max_concurrency: usize, lease_seconds: u64) -> Self {
        let concurrency = (settings.concurrency as usize).clamp(1, max_concurrency.max(1));
        BackfillPace {
            batch_millis: settings.batch_millis,
            budget: Arc::new(Mutex::new(RowBudget::new(settings.rows_per_second, 0))),
            slots: Arc::new(tokio::sync::Semaphore::new(concurrency)),
            concurrency,
            stale_ms: i64::try_from(lease_seconds.saturating_mul(2_000)).unwrap_or(i64::MAX),
            origin: Instant::now(),
            lag: LagWatch::new(settings.max_replica_lag_seconds).map(|watch| Arc::new(tokio::sync::Mutex::new(watch))),
            next_share_ms: Arc::default(),
            seen: Arc::default(),
            held: Arc::default(),
        }
    }

    /// The server's watch of its replicas' lag, when backfills wait for
    /// them (`backfill.maxReplicaLagSeconds`).
    pub(crate) fn lag_watch(&self) -> Option<&tokio::sync::Mutex<LagWatch>> {
        self.lag.as_deref()
    }

    /// Milliseconds on this pace's clock (the budget's and the watch's).
    pub(crate) fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    /// How long a runner's claim lasts without a heartbeat, in
    /// milliseconds: then another runner may take the backfill (its holder
    /// died).
    pub(crate) fn stale_ms(&self) -> i64 {
        self.stale_ms
    }

    /// How many backfills run at once on this server.
    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// One of the server's backfill places, held while a backfill runs.
    pub(crate) async fn slot(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.slots.acquire().await.ok()
    }

    /// Takes `rows` from the server's budget: the milliseconds to wait
    /// ([`BackfillPace::wait`]) before they may be changed, 0 when now.
    pub(crate) fn reserve(&self, rows: u64) -> u64 {
        let now = self.now_ms();
        self.budget.lock().unwrap_or_else(|e| e.into_inner()).take(rows, now)
    }

    /// Waits `ms` for the budget ([`BackfillPace::reserve`]), counted as a
    /// throttle wait.
    pub(crate) async fn wait(&self, ms: u64) {
        crate::telemetry::backfill_throttled();
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }

    /// Whether the runners on the server are due to be counted again for
    /// the budget's share (every `SHARE_EVERY_MS` while batches run, by one
    /// backfill for all); none are with no rate to share.
    pub(crate) fn share_due(&self) -> bool {
        let now = self.now_ms();
        let due = self.next_share_ms.load(Ordering::Relaxed);
        self.budget.lock().unwrap_or_else(|e| e.into_inner()).rate() > 0
            && now >= due
            && self
                .next_share_ms
                .compare_exchange(due, now + SHARE_EVERY_MS, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// The other runners on the server as read less than
    /// `RUNNERS_FRESH_MS` ago, if they were.
    pub(crate) fn runners_seen(&self) -> Option<Runners> {
        let seen = *self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.filter(|(at, _)| self.now_ms().saturating_sub(*at) < RUNNERS_FRESH_MS).map(|(_, runners)| runners)
    }

    /// The other runners on the server as just read: kept, and this
    /// process's share of the server's rate taken (core's
    /// `RowBudget::shared_by`).
    pub(crate) fn saw(&self, runners: Runners) {
        let now = self.now_ms();
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some((now, runners));
        self.next_share_ms.store(now + SHARE_EVERY_MS, Ordering::Relaxed);
        self.budget.lock().unwrap_or_else(|e| e.into_inner()).shared_by(runners.processes, now);
    }

    /// One of the server's `concurrency` places for a backfill of this
    /// process, when the others `runners` hold leave one (core's
    /// `Runners::room`, over this process's count).
    pub(crate) fn try_hold(&self, runners: Runners) -> Option<Held> {
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |mine| {
                runners.room(self.concurrency, mine).then_some(mine + 1)
            })
            .ok()
            .map(|_| Held(Arc::clone(&self.held)))
    }

    /// Whether the others `runners` hold leave this process a place now
    /// (what [`BackfillPace::try_hold`] would take).
    pub(crate) fn room(&self, runners: Runners) -> bool {
        runners.room(self.concurrency, self.held.load(Ordering::Relaxed))
    }

    /// Gives back what a batch reserved and did not change.
    pub(crate) fn refund(&self, rows: u64) {
        if rows > 0 {
            self.budget.lock().unwrap_or_else(|e| e.into_inner()).refund(rows);
        }
    }
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
            backfill: BackfillPace::new(&config.backfill, max_concurrency, config.lock_lease_seconds),
            dev: config.dev_data_source.as_ref().map(|dev| {
                Arc::new(Config {
                    data_source: dev.clone(),
                    shards: Vec::new(),
                    dev_data_source: None,
                    ..config.clone()
                })
            }),
        }
    }
}
