//! What the service needs of a database ([`Database`], object-safe, as the
//! driver is chosen at run time), implemented once by [`Store`] over any
//! [`Engine`]: the reads take a connection and ask the engine's read
//! primitives; mutations and previews are the executor's.
//!
//! # Invariants
//!
//! - A read-only store never writes: it creates nothing at open (not even
//!   the service's tables) and refuses mutations; before the service's
//!   tables exist it reads "nothing recorded".
//! - A read-write store has created the service's tables, under the
//!   engine's lock, before it answers anything.

use std::collections::HashSet;

use rustc_hash::FxHashMap;

use async_trait::async_trait;
use strata_core::migrate::fingerprint::{CatalogObject, Recorded, Stored};
use strata_core::migrate::shard::{Directory, DirectoryChanges};
use strata_core::migrate::wave::Attributes;

use strata_core::auth::audit::{Entry, Sealed};
use strata_core::auth::token::StoredToken;
use strata_core::migrate::repair::Repair;

use crate::db::books::Books;
use crate::db::engine::{Catalogs, Engine, Keeps, Reading};
use crate::db::error::OpenError;
use crate::db::error::{DbError, RunError};
use crate::db::executor::{self, reading, settings::Settings};
use crate::db::types::{
    Access, AuditWindow, BackfillEnd, BackfillMove, BackfillRow, BackfillWait, MigrationFilter, MigrationRow,
    MutationOutcome, MutationRequest, Preview, QuarantineRow, RepairRequest, RolloutRow, ShardTenants, VersionFilter,
    VersionRow,
};

/// A database the service migrates and records versions in.
#[async_trait]
pub(crate) trait Database: Send + Sync {
    /// Whether the database is a Citus coordinator (found at connect time;
    /// the linter's Citus rules then apply).
    fn citus(&self) -> bool {
        false
    }
    /// What the database keeps besides versions and migrations.
    fn keeps(&self) -> Keeps;
    /// Closes its connections and waits, at most [`CLOSE_WAIT`], until they
    /// are: a one-shot command's last step before it exports its spans
    /// (SQLite's connection threads hold the spans of the commands they
    /// were sent, a rollback's included, until they have run them).
    async fn close(&self) {}
    /// Checks the connection and the service's tables, without side effects.
    async fn ping(&self) -> Result<(), DbError>;
    /// [`Database::ping`] per database server, named for `/health` (`DB`,
    /// or `DB:<shard>` per shard).
    async fn health(&self) -> Vec<(String, Result<(), DbError>)> {
        vec![("DB".to_string(), self.ping().await)]
    }
    /// Each shard with its tenants, in `shards:` order (a shard that does
    /// not answer with the tenants the directory last saw there); empty
    /// when the fleet is on one server without `shards:`.
    async fn shards(&self) -> Result<Vec<ShardTenants>, DbError> {
        Ok(Vec::new())
    }
    /// Tenant names, from `tenantSelectSQL`.
    async fn tenants(&self) -> Result<Vec<String>, DbError>;
    /// The other columns `tenantSelectSQL` returns, each tenant's values
    /// (what a wave by attribute selects by).
    async fn tenant_attributes(&self) -> Result<Attributes, DbError>;
    /// A page of the tenants' names in byte order, as [`Books::tenant_page`]
    /// (here: the whole list, sorted and cut).
    ///
    /// [`Books::tenant_page`]: crate::db::books::Books::tenant_page
    async fn tenant_page(&self, after: Option<&str>, first: Option<usize>) -> Result<Vec<String>, DbError> {
        let mut names = self.tenants().await?;
        names.sort_unstable();
        Ok(crate::db::books::page_of(names, after, first))
    }
    /// [`Database::tenant_page`] with each tenant's shard (`None` on one
    /// server).
    async fn placed_tenant_page(
        &self,
        after: Option<&str>,
        first: Option<usize>,
    ) -> Result<Vec<(String, Option<String>)>, DbError> {
        Ok(self.tenant_page(after, first).await?.into_iter().map(|tenant| (tenant, None)).collect())
    }
    /// How many tenants there are.
    async fn tenant_count(&self) -> Result<u64, DbError> {
        Ok(self.tenants().await?.len() as u64)
    }
    /// Where each distributed schema's shards live (Citus: schema, node's
    /// `host:port`); empty elsewhere.
    async fn placements(&self) -> Result<Vec<(String, String)>, DbError> {
        Ok(Vec::new())
    }
    /// Moves a tenant's shards to another node (Citus), refused while a
    /// version runs.
    async fn move_tenant(&self, _tenant: &str, _host: &str, _port: i32, _mode: &str) -> Result<(), DbError> {
        Err(DbError::NotSupported("moving a tenant (Citus only)"))
    }
    /// `createTenants`: under the lock, creates every tenant (its schema
    /// and its row; one transaction where the engine's DDL is
    /// transactional: all or none); the version that migrates them follows.
    /// On a fleet, each on `shard` or spread over the fewest (core's
    /// `place_new_tenants`), each shard's part under its own lock.
    async fn add_tenants(&self, tenants: &[String], shard: Option<&str>) -> Result<(), RunError>;
    /// Versions in id order.
    async fn versions(&self, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError>;
    /// How many versions there are.
    async fn version_count(&self) -> Result<u64, DbError> {
        Ok(self.versions(VersionFilter::All).await?.len() as u64)
    }
    /// Recorded migrations in id order.
    async fn migrations(&self, filter: MigrationFilter) -> Result<Vec<MigrationRow>, DbError>;
    /// Plans (through the core planner) and executes a mutation, serialised
    /// against every other mutation.
    async fn mutate(&self, request: MutationRequest<'_>) -> Result<MutationOutcome, RunError>;
    /// `strata repair`: under the lock, decides (core's `repair`) over the
    /// recorded rows and, with an `audit`, writes it and its version row in
    /// one transaction; without, only says what it would change. `strict`:
    /// a named file with nothing to repair is refused.
    async fn repair(&self, request: RepairRequest<'_>) -> Result<Repair, RunError>;
    /// What [`Database::mutate`] would plan now, without the lock and
    /// without writing anything.
    async fn preview(&self, request: MutationRequest<'_>) -> Result<Preview, RunError>;
    /// Each schema's recorded migrations as drift needs them (core's
    /// `Recorded`), without holding every row.
    async fn recorded(&self) -> Result<FxHashMap<String, Recorded>, DbError>;
    /// The live catalog of each of `schemas` as `reading` reads it (the
    /// engine's `catalogs`), over up to `tenantConcurrency` connections at
    /// once, in the order given.
    async fn catalogs(&self, schemas: &[String], reading: Reading) -> Result<Catalogs, DbError>;
    /// The print (core's `fingerprint`) of each of `schemas`' live
    /// catalogs, in the order given: a fleet's, without holding its
    /// catalogs (the engine's `live_prints`, over up to `tenantConcurrency`
    /// connections).
    async fn catalog_prints(&self, schemas: &[String]) -> Result<Vec<String>, DbError>;
    /// The catalog of a desired schema: `sql` (its placeholder already
    /// written as `scratch`) applied into a new schema `scratch` that is
    /// never kept (PostgreSQL: inside a transaction rolled back; MariaDB: a
    /// scratch database dropped afterwards), read as desired state reads a
    /// tenant's. `Ok(Err(message))` when the engine refuses the SQL (with
    /// its line).
    async fn desired_catalog(&self, sql: &str, scratch: &str) -> Result<Result<Vec<CatalogObject>, String>, DbError>;
    /// The fingerprints stored after each schema's last committed unit.
    async fn fingerprints(&self) -> Result<Vec<(String, Stored)>, DbError>;
    /// The quarantined tenants, by name.
    async fn quarantined(&self) -> Result<Vec<QuarantineRow>, DbError>;
    /// Every backfill's progress, by tenant and file.
    async fn backfills(&self) -> Result<Vec<BackfillRow>, DbError>;
    /// Runs every running backfill this process can claim (as `holder`),
    /// until none is left: how each ended.
    async fn run_backfills(&self, holder: &str) -> Result<Vec<BackfillEnd>, DbError>;
    /// Moves `tenants`' backfills (every tenant's when empty) from `from`
    /// to `to`: pauses or resumes them. The tenants and files moved.
    async fn move_backfills(
        &self,
        tenants: &[String],
        how: BackfillMove,
        request_id: &str,
    ) -> Result<Vec<BackfillWait>, DbError>;
    /// Puts tenants in quarantine (or counts one more failure of those
    /// already there).
    async fn quarantine(&self, rows: &[QuarantineRow]) -> Result<(), DbError>;
    /// Whether a mutation of another process (or task) holds the lock now,
    /// on any server of the fleet.
    async fn mutation_running(&self) -> Result<bool, DbError>;
    /// Releases quarantined tenants (names not quarantined are ignored);
    /// returns those released.
    async fn release_quarantined(&self, tenants: &[String]) -> Result<Vec<String>, DbError>;
    /// Every stored rollout, oldest first.
    async fn rollouts(&self) -> Result<Vec<RolloutRow>, DbError>;
    /// Stores a new rollout as rollout `id` unless the id is taken (false
    /// then: another start took it; read the rollouts again).
    async fn insert_rollout(&self, id: i64, doc: &str, updated: &str) -> Result<bool, DbError>;
    /// Replaces a rollout's document unless it changed since `row` was read
    /// (false then: read it again).
    async fn update_rollout(&self, row: &RolloutRow, doc: &str, updated: &str) -> Result<bool, DbError>;
    /// Where each tenant of a sharded fleet was last seen (kept on the home
    /// shard; empty before anything was written).
    async fn directory(&self) -> Result<Directory, DbError>;
    /// Brings the directory up to date (nothing on a read-only store).
    async fn change_directory(&self, changes: &DirectoryChanges) -> Result<(), DbError>;
    /// The API tokens (kept on the home shard).
    async fn tokens(&self) -> Result<Vec<StoredToken>, DbError>;
    /// Stores a new token; false when its name is taken.
    async fn insert_token(&self, token: &StoredToken) -> Result<bool, DbError>;
    /// Removes a token; false when there was none of that name.
    async fn delete_token(&self, name: &str) -> Result<bool, DbError>;
    /// The audit log's rows in `window`, oldest first (kept on the home
    /// shard).
    async fn audit(&self, window: AuditWindow<'_>) -> Result<Vec<Sealed>, DbError>;
    /// Appends `entry` to the audit log, chained to the newest row (core's
    /// `audit::next`); another writer taking the same id first makes it
    /// read the newest row again.
    async fn append_audit(&self, entry: Entry) -> Result<Sealed, DbError>;
}

/// How long [`Database::close`] waits for the connections to close (one
/// still borrowed holds the pool's close until it is returned).
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// An engine over `config` (a `devDataSource`) and a connection of it; a
/// failure names the server's address.
async fn dev_connection<E: Engine>(config: &strata_core::migrate::config::Config) -> Result<(E, E::Conn), DbError> {
    let opened = async {
        let engine = E::open_dev(config).await?;
        let conn = engine.connect().await?;
        Ok::<_, DbError>((engine, conn))
    };
    opened.await.map_err(|e| {
        let at = strata_core::migrate::datasource::tcp_address(config.driver, &config.data_source)
            .map(|(host, port)| format!(" ({host}:{port})"))
            .unwrap_or_default();
        DbError::Open(OpenError::Dev(format!("{at}: {e}")))
    })
}

/// How often an audit append is tried again after another writer took its id.
const AUDIT_ATTEMPTS: usize = 20;

/// The one implementation of [`Database`]: an engine and how versions run.
pub(crate) struct Store<E: Engine> {
    engine: E,
    settings: Settings,
    access: Access,
}

impl<E: Engine> Store<E> {
    /// A store over `engine`; read-write creates the service's tables first.
    pub(crate) async fn open(engine: E, settings: Settings, access: Access) -> Result<Self, DbError> {
        if access == Access::ReadWrite {
            engine.install(settings.default_tenant_table).await?;
        }
        Ok(Store { engine, settings, access })
    }

    /// The catalogs of `schemas` on one connection, at most
    /// [`super::engine::CATALOGS_PER_READ`] schemas per read.
    async fn catalog_part(&self, schemas: &[String], reading: Reading) -> Result<Catalogs, DbError> {
        let mut conn = self.engine.connect().await?;
        let mut out = Vec::with_capacity(schemas.len());
        for batch in schemas.chunks(super::engine::CATALOGS_PER_READ) {
            out.extend(self.engine.catalogs(&mut conn, batch, reading).await?);
        }
        self.engine.give_back(conn).await;
        Ok(out)
    }

    /// A connection to read the books on; `None` when a read-only store
    /// finds the service's tables missing (then nothing is recorded).
    async fn reading(&self) -> Result<Option<E::Conn>, DbError> {
        let mut conn = self.engine.connect().await?;
        let installed = match self.access {
            Access::ReadWrite => true,
            Access::ReadOnly => self.engine.books().installed(&mut conn).await?,
        };
        Ok(installed.then_some(conn))
    }

    /// A connection to read the tenant list on: [`Store::reading`]'s with
    /// the service's own tenant table, any otherwise.
    async fn tenant_reading(&self) -> Result<Option<E::Conn>, DbError> {
        match self.settings.default_tenant_table {
            true => self.reading().await,
            false => Ok(Some(self.engine.connect().await?)),
        }
    }
}

#[async_trait]
impl<E: Engine> Database for Store<E> {
    fn citus(&self) -> bool {
        self.engine.citus()
    }

    async fn close(&self) {
        if tokio::time::timeout(CLOSE_WAIT, self.engine.close()).await.is_err() {
            tracing::warn!("the database's connections did not close within {} s", CLOSE_WAIT.as_secs());
        }
    }

    fn keeps(&self) -> Keeps {
        E::KEEPS
    }

    async fn add_tenants(&self, tenants: &[String], _shard: Option<&str>) -> Result<(), RunError> {
        use super::engine::Transaction;
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly.into());
        }
        let lock = self.engine.lock().await?;
        let created = async {
            let mut conn = self.engine.connect().await?;
            self.engine.transaction(&mut conn, Transaction::Begin).await?;
            for tenant in tenants {
                if let Err(error) = self.engine.create_tenant(&mut conn, tenant).await {
                    let _ = self.engine.transaction(&mut conn, Transaction::Rollback).await;
                    return Err(error);
                }
            }
            self.engine.transaction(&mut conn, Transaction::Commit).await
        }
        .await;
        self.engine.unlock(lock).await;
        Ok(created?)
    }

    async fn ping(&self) -> Result<(), DbError> {
        let mut conn = self.engine.connect().await.map_err(|e| DbError::Open(OpenError::Connect(e.to_string())))?;
        self.engine.books().ping(&mut conn).await.map_err(|e| DbError::Open(OpenError::Connect(e.to_string())))
    }

    /// The default tenant table is one of the service's own: before they
    /// exist there is no tenant; a configured `tenantSelectSQL` is asked.
    async fn tenants(&self) -> Result<Vec<String>, DbError> {
        let Some(mut conn) = self.tenant_reading().await? else { return Ok(Vec::new()) };
        let tenants = self.engine.books().tenants(&mut conn).await?.names;
        self.engine.give_back(conn).await;
        Ok(tenants)
    }

    async fn tenant_attributes(&self) -> Result<Attributes, DbError> {
        let Some(mut conn) = self.tenant_reading().await? else { return Ok(Attributes::default()) };
        Ok(self.engine.books().tenants(&mut conn).await?.attributes)
    }

    async fn tenant_page(&self, after: Option<&str>, first: Option<usize>) -> Result<Vec<String>, DbError> {
        let Some(mut conn) = self.tenant_reading().await? else { return Ok(Vec::new()) };
        self.engine.books().tenant_page(&mut conn, after, first).await
    }

    async fn tenant_count(&self) -> Result<u64, DbError> {
        let Some(mut conn) = self.tenant_reading().await? else { return Ok(0) };
        self.engine.books().tenant_count(&mut conn).await
    }

    async fn move_tenant(&self, tenant: &str, host: &str, port: i32, mode: &str) -> Result<(), DbError> {
        self.engine.move_tenant(tenant, host, port, mode).await
    }

    async fn placements(&self) -> Result<Vec<(String, String)>, DbError> {
        if !self.engine.citus() {
            return Ok(Vec::new());
        }
        let mut conn = self.engine.connect().await?;
        self.engine.placements(&mut conn).await
    }

    async fn versions(&self, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Vec::new()) };
        self.engine.books().versions(&mut conn, filter).await
    }

    async fn version_count(&self) -> Result<u64, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(0) };
        self.engine.books().version_count(&mut conn).await
    }

    async fn migrations(&self, filter: MigrationFilter) -> Result<Vec<MigrationRow>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Vec::new()) };
        self.engine.books().migrations(&mut conn, filter).await
    }

    async fn mutate(&self, request: MutationRequest<'_>) -> Result<MutationOutcome, RunError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly.into());
        }
        executor::mutate(&self.engine, &self.settings, request).await
    }

    async fn preview(&self, request: MutationRequest<'_>) -> Result<Preview, RunError> {
        reading::preview(&self.engine, &self.settings, &request).await
    }

    async fn repair(&self, request: RepairRequest<'_>) -> Result<Repair, RunError> {
        if request.audit.is_some() && self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly.into());
        }
        reading::repair(&self.engine, &self.settings, request).await
    }

    async fn recorded(&self) -> Result<FxHashMap<String, Recorded>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(FxHashMap::default()) };
        self.engine.books().recorded(&mut conn).await
    }

    async fn fingerprints(&self) -> Result<Vec<(String, Stored)>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Vec::new()) };
        self.engine.books().fingerprints(&mut conn).await
    }

    async fn quarantined(&self) -> Result<Vec<QuarantineRow>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Vec::new()) };
        self.engine.books().quarantined(&mut conn).await
    }

    async fn backfills(&self) -> Result<Vec<BackfillRow>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Vec::new()) };
        self.engine.books().backfills(&mut conn).await
    }

    async fn run_backfills(&self, holder: &str) -> Result<Vec<BackfillEnd>, DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let outcomes = executor::backfill::runner::run_running(&self.engine, &self.settings, holder).await?;
        Ok(outcomes.into_iter().map(BackfillEnd::from).collect())
    }

    async fn move_backfills(
        &self,
        tenants: &[String],
        how: BackfillMove,
        request_id: &str,
    ) -> Result<Vec<BackfillWait>, DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let mut conn = self.engine.connect().await?;
        let books = self.engine.books();
        let named: HashSet<&str> = tenants.iter().map(String::as_str).collect();
        let rows: Vec<BackfillRow> = books
            .backfills(&mut conn)
            .await?
            .into_iter()
            .filter(|row| how.from().contains(&row.state))
            .filter(|row| named.is_empty() || named.contains(row.schema.as_str()))
            .collect();
        let updated = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let done = books.move_backfills(&mut conn, &rows, how.to(), &updated).await?;
        let mut moved = Vec::new();
        for (row, _) in rows.into_iter().zip(done).filter(|(_, done)| *done) {
            if how == BackfillMove::Cancel
                && let Some(job) = books.backfill_job(&mut conn, &row.schema, &row.file).await?
                && job.migration.migration_type.is_tenant()
            {
                // Put aside like a failed backfill: the next versions pass
                // the tenant by until a retry resumes it.
                let message = format!("the backfill of {} was cancelled (cancelBackfills)", row.file);
                let row = QuarantineRow::of_backfill(&job, "BACKFILL_CANCELLED", message, request_id, &updated);
                books.quarantine(&mut conn, &row).await?;
                crate::telemetry::tenant_quarantined();
            }
            moved.push(BackfillWait { tenant: row.schema, file: row.file });
        }
        Ok(moved)
    }

    async fn mutation_running(&self) -> Result<bool, DbError> {
        self.engine.lock_in_use().await
    }

    async fn quarantine(&self, rows: &[QuarantineRow]) -> Result<(), DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let mut conn = self.engine.connect().await?;
        for row in rows {
            self.engine.books().quarantine(&mut conn, row).await?;
        }
        Ok(())
    }

    async fn release_quarantined(&self, tenants: &[String]) -> Result<Vec<String>, DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let mut conn = self.engine.connect().await?;
        let held = self.engine.books().quarantined(&mut conn).await?;
        let released: Vec<String> =
            held.into_iter().map(|row| row.tenant).filter(|tenant| tenants.contains(tenant)).collect();
        if !released.is_empty() {
            self.engine.books().release_quarantined(&mut conn, &released).await?;
        }
        Ok(released)
    }

    async fn rollouts(&self) -> Result<Vec<RolloutRow>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Vec::new()) };
        let rollouts = self.engine.books().rollouts(&mut conn).await?;
        self.engine.give_back(conn).await;
        Ok(rollouts)
    }

    async fn insert_rollout(&self, id: i64, doc: &str, updated: &str) -> Result<bool, DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let mut conn = self.engine.connect().await?;
        self.engine.books().insert_rollout(&mut conn, id, doc, updated).await
    }

    async fn update_rollout(&self, row: &RolloutRow, doc: &str, updated: &str) -> Result<bool, DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let mut conn = self.engine.connect().await?;
        self.engine.books().update_rollout(&mut conn, row, doc, updated).await
    }

    async fn directory(&self) -> Result<Directory, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Directory::default()) };
        self.engine.books().directory(&mut conn).await
    }

    async fn change_directory(&self, changes: &DirectoryChanges) -> Result<(), DbError> {
        if self.access == Access::ReadOnly || changes.is_empty() {
            return Ok(());
        }
        let mut conn = self.engine.connect().await?;
        self.engine.books().change_directory(&mut conn, changes).await
    }

    async fn tokens(&self) -> Result<Vec<StoredToken>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Vec::new()) };
        self.engine.books().tokens(&mut conn).await
    }

    async fn insert_token(&self, token: &StoredToken) -> Result<bool, DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let mut conn = self.engine.connect().await?;
        self.engine.books().insert_token(&mut conn, token).await
    }

    async fn delete_token(&self, name: &str) -> Result<bool, DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let mut conn = self.engine.connect().await?;
        self.engine.books().delete_token(&mut conn, name).await
    }

    async fn audit(&self, window: AuditWindow<'_>) -> Result<Vec<Sealed>, DbError> {
        let Some(mut conn) = self.reading().await? else { return Ok(Vec::new()) };
        self.engine.books().audit(&mut conn, window).await
    }

    async fn append_audit(&self, entry: Entry) -> Result<Sealed, DbError> {
        if self.access == Access::ReadOnly {
            return Err(DbError::OpenedReadOnly);
        }
        let mut conn = self.engine.connect().await?;
        let books = self.engine.books();
        for _ in 0..AUDIT_ATTEMPTS {
            let last = books.last_audit(&mut conn).await?;
            let last = last.as_ref().map(|(id, hash)| (*id, hash.as_str()));
            let row = strata_core::auth::audit::next(last, entry.clone(), self.settings.audit_key.as_ref());
            if books.append_audit(&mut conn, &row).await? {
                return Ok(row);
            }
        }
        Err(DbError::UnexpectedAnswer(format!("the audit log kept growing under {AUDIT_ATTEMPTS} attempts")))
    }

    async fn catalogs(&self, schemas: &[String], reading: Reading) -> Result<Catalogs, DbError> {
        let chunk = schemas.len().div_ceil(self.settings.concurrency.max(1)).max(1);
        let parts =
            futures::future::try_join_all(schemas.chunks(chunk).map(|part| self.catalog_part(part, reading))).await?;
        Ok(parts.into_iter().flatten().collect())
    }

    async fn catalog_prints(&self, schemas: &[String]) -> Result<Vec<String>, DbError> {
        let lanes = schemas.len().div_ceil(super::engine::CATALOGS_PER_READ).clamp(1, self.settings.concurrency.max(1));
        let mut conns = futures::future::try_join_all((0..lanes).map(|_| self.engine.connect())).await?;
        self.engine.live_prints(&mut conns, schemas).await
    }

    async fn desired_catalog(&self, sql: &str, scratch: &str) -> Result<Result<Vec<CatalogObject>, String>, DbError> {
        // On `devDataSource` when there is one, opened for this reading.
        let (dev, mut conn) = match self.settings.dev.as_deref() {
            Some(config) => {
                let (engine, conn) = dev_connection::<E>(config).await?;
                (Some(engine), conn)
            }
            None => (None, self.engine.connect().await?),
        };
        let engine = dev.as_ref().unwrap_or(&self.engine);
        let read = engine.desired_catalog(&mut conn, sql, scratch).await;
        // Closed, never handed to the next user: the file's `SET`s
        // (mysqldump's `FOREIGN_KEY_CHECKS=0`) hold for its session.
        engine.discard(conn).await;
        if let Some(dev) = &dev {
            // Its connections ended here, not left to a pool's drop.
            dev.close().await;
        }
        Ok(read?.map_err(|failure| {
            let line =
                failure.offset.map(|at| sql.chars().take(at.saturating_sub(1)).filter(|c| *c == '\n').count() + 1);
            match line.or(failure.line.map(|line| line as usize)) {
                Some(line) => format!("line {line}: {}", failure.message),
                None => failure.message,
            }
        }))
    }
}
