//! A fleet on several database servers (`shards:`): [`Fleet`] is the
//! [`Database`] of the service over one [`Store`](super::Store) per shard,
//! following core's `shard` model.
//!
//! # Invariants
//!
//! - **Each shard keeps its own books.** A shard's versions, migrations,
//!   quarantine, lock and fingerprints live in its own `svc` schema, next to
//!   the schemas they describe: recorded = applied per schema holds on every
//!   shard as it does on one server. The single schemas live on the home
//!   shard (the first); the others run tenant steps only.
//! - **A shard fails alone.** A version runs on every shard at once (each
//!   with its own lock and `tenantConcurrency` connections); a shard that
//!   is unreachable, or fails, stops nothing elsewhere: the other shards
//!   finish, and the error names each shard that did not, with why. Run the
//!   version again (or `strata quarantine retry`) when it is back: a shard
//!   that missed a version has its files pending, in order.
//! - **A tenant lives on one shard.** Where it is comes from asking every
//!   shard's `tenantSelectSQL`; a name found on two shards is refused
//!   before anything runs. A new tenant goes to the shard named, else to
//!   the reachable shard with the fewest tenants; every shard must answer
//!   first, so a name is never created twice.
//! - **The directory names what cannot be asked.** Every version lists
//!   each shard's tenants and brings the directory on the home shard up to
//!   date from those that answered (core's `shard::Directory`); a shard
//!   that does not answer keeps what the directory last saw. A version's
//!   error names the tenants of each shard it could not reach, and the
//!   tenant list serves them (`reachable: false`) while it is down. The
//!   directory is never the truth about a shard that answers.
//! - **A shard that cannot be reached has its tenants quarantined on the
//!   home shard** (cause `SHARD_UNREACHABLE`), as the directory last saw
//!   them, by every version that could not reach it. They are handed over
//!   to their own shard's quarantine by the first version that finds it
//!   answering again (a row the shard holds itself wins), so later
//!   versions and waves skip them there until a retry completes them or
//!   they are released, like any quarantined tenant.
//! - **Served ids name their shard** (core's `shard::Ids`): reads by id go
//!   to that shard only.
//! - **Shards open lazily**: the service starts while a shard is down, and
//!   each use tries an unopened shard again. Before opening a shard, and
//!   while it was last found unreachable, one TCP connection asks whether
//!   anything listens at its address (core's `datasource::tcp_address`): a
//!   stopped server refuses at once, where the pool would retry until its
//!   5 s time-out on every request.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::tcp_address;
use strata_core::migrate::fingerprint::{CatalogObject, Recorded};
use strata_core::migrate::plan::{PlanError, Target};
use strata_core::migrate::quarantine::RetryError;
use strata_core::migrate::repair::{Repair, RepairError};
use strata_core::migrate::shard::{self, Directory, DirectoryChanges, Ids};
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::wave::{Wave, WaveError};
use tokio::net::TcpStream;

use super::error::{DbError, ShardFailure};
use super::store::Database;
use super::types::Audit;
use super::types::{
    Access, MigrationFilter, MigrationRow, MutationOutcome, MutationRequest, Preview, QuarantineRow, RolloutRow,
    ShardTenants, UnreachableShard, VersionFilter, VersionRow,
};

/// How long `/health` waits for each shard (a stopped server is retried
/// by the pool until its connect time-out; the route's own limit is 5 s).
const SHARD_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// One database server of the fleet.
struct Slot {
    name: String,
    /// The configuration with this shard's `dataSource`.
    config: Config,
    store: tokio::sync::OnceCell<Arc<dyn Database>>,
    /// The one TCP address its `dataSource` names, if it names one.
    address: Option<(String, u16)>,
    /// Whether it was last found unreachable: it is then asked whether
    /// anything listens before a pool waits on it.
    down: AtomicBool,
}

impl Slot {
    /// Whether anything listens at the shard's address, asked before its
    /// store is opened and while it was last found unreachable: a refused
    /// connection answers at once, where a pool retries until its
    /// time-out (5 s on every request that reads a stopped shard).
    async fn listening(&self) -> Result<(), DbError> {
        let Some((host, port)) = &self.address else { return Ok(()) };
        if self.store.get().is_some() && !self.down.load(Ordering::Relaxed) {
            return Ok(());
        }
        let reason =
            match tokio::time::timeout(super::CONNECT_TIMEOUT, TcpStream::connect((host.as_str(), *port))).await {
                Ok(Ok(_)) => {
                    self.down.store(false, Ordering::Relaxed);
                    return Ok(());
                }
                Ok(Err(error)) => format!("nothing listens at its address: {error}"),
                Err(_) => format!("no answer at its address within {} s", super::CONNECT_TIMEOUT.as_secs()),
            };
        self.down.store(true, Ordering::Relaxed);
        Err(DbError::ShardUnreachable { shard: self.name.clone(), reason })
    }
}

/// The service's database over several shards.
pub(crate) struct Fleet {
    slots: Vec<Slot>,
    access: Access,
    ids: Ids,
}

/// Where each tenant lives: the tenants of every shard, in shard order.
struct Placement {
    tenants: Vec<Vec<String>>,
}

/// The cause of a tenant quarantined because its shard did not answer.
const SHARD_UNREACHABLE: &str = "SHARD_UNREACHABLE";

/// One look at the fleet: what each shard answered when its tenants were
/// listed, and the directory (`None` when the home shard was just found
/// unreachable; empty when it cannot be read).
struct Listing {
    listed: Vec<Result<Vec<String>, DbError>>,
    directory: Option<Directory>,
}

impl Listing {
    /// Shard `index`'s error when this listing found it unreachable: it
    /// is not asked again in the same request (that would wait for its
    /// connect time-out once more).
    fn unreachable(&self, index: usize) -> Option<DbError> {
        match &self.listed[index] {
            Err(DbError::ShardUnreachable { shard, reason }) => {
                Some(DbError::ShardUnreachable { shard: shard.clone(), reason: reason.clone() })
            }
            _ => None,
        }
    }

    /// Each shard's tenants as it answered them, else as the directory last
    /// saw them.
    fn last_seen(&self, slots: &[Slot]) -> Vec<Vec<String>> {
        slots
            .iter()
            .zip(&self.listed)
            .map(|(slot, result)| match result {
                Ok(tenants) => tenants.clone(),
                Err(_) => self.directory.as_ref().map(|d| d.tenants_of(&slot.name)).unwrap_or_default(),
            })
            .collect()
    }
}

impl Placement {
    fn shard_of(&self, tenant: &str) -> Option<usize> {
        self.tenants.iter().position(|names| names.iter().any(|name| name == tenant))
    }

    /// `names` split by shard; the first name on no shard is returned as
    /// the error.
    fn split(&self, names: &[String]) -> Result<Vec<Vec<String>>, String> {
        let mut parts = vec![Vec::new(); self.tenants.len()];
        for name in names {
            let shard = self.shard_of(name).ok_or_else(|| name.clone())?;
            parts[shard].push(name.clone());
        }
        Ok(parts)
    }
}

impl Fleet {
    /// The fleet of `config.shards`; every shard is tried at once, those
    /// that cannot be opened now are tried again on use.
    pub(crate) async fn open(config: &Config, access: Access) -> Fleet {
        let slots: Vec<Slot> = config
            .shards
            .iter()
            .map(|shard| Slot {
                name: shard.name.clone(),
                config: Config { data_source: shard.data_source.clone(), shards: Vec::new(), ..config.clone() },
                store: tokio::sync::OnceCell::new(),
                address: tcp_address(config.driver, &shard.data_source),
                down: AtomicBool::new(false),
            })
            .collect();
        let fleet = Fleet { ids: Ids::for_shards(slots.len()), slots, access };
        for (slot, opened) in
            fleet.slots.iter().zip(futures::future::join_all((0..fleet.slots.len()).map(|i| fleet.store(i))).await)
        {
            if let Err(error) = opened {
                tracing::warn!(shard = %slot.name, %error, "shard not reachable at start; tried again on use");
            }
        }
        fleet
    }

    /// The store of shard `index`, opened on first use.
    async fn store(&self, index: usize) -> Result<Arc<dyn Database>, DbError> {
        let slot = &self.slots[index];
        slot.listening().await?;
        slot.store.get_or_try_init(|| super::open_one(&slot.config, self.access)).await.cloned().map_err(|error| {
            match self.on_shard(index, error) {
                unreachable @ DbError::ShardUnreachable { .. } => unreachable,
                // Whatever else stops a shard from opening, it is not usable.
                other => DbError::ShardUnreachable { shard: slot.name.clone(), reason: other.to_string() },
            }
        })
    }

    /// Runs each shard's part (none: nothing to do there) with `run`, every
    /// shard at once; `(shard, result)` in shard order. A shard `listing`
    /// just found unreachable is not asked again: its part fails with that.
    async fn run_parts<'r, T, F, Fut>(
        &self,
        parts: Vec<Option<MutationRequest<'r>>>,
        listing: &Listing,
        run: F,
    ) -> Vec<(usize, Result<T, DbError>)>
    where
        F: Fn(Arc<dyn Database>, MutationRequest<'r>) -> Fut,
        Fut: Future<Output = Result<T, DbError>>,
    {
        let run = &run;
        let runs = futures::future::join_all(parts.into_iter().enumerate().map(|(index, part)| async move {
            let part = part?;
            if let Some(unreachable) = listing.unreachable(index) {
                return Some((index, Err(unreachable)));
            }
            let result = match self.store(index).await {
                Ok(store) => run(store, part).await.map_err(|error| self.on_shard(index, error)),
                Err(error) => Err(error),
            };
            Some((index, result))
        }))
        .await;
        runs.into_iter().flatten().collect()
    }

    /// Runs `read` on every shard at once; the results in shard order.
    async fn each<'a, T, F, Fut>(&'a self, read: F) -> Vec<Result<T, DbError>>
    where
        F: Fn(usize, Arc<dyn Database>) -> Fut,
        Fut: Future<Output = Result<T, DbError>> + 'a,
    {
        let read = &read;
        futures::future::join_all((0..self.slots.len()).map(|index| async move {
            let store = self.store(index).await?;
            read(index, store).await.map_err(|error| self.on_shard(index, error))
        }))
        .await
    }

    /// Every shard's answer, or the first shard's error.
    async fn every<'a, T, F, Fut>(&'a self, read: F) -> Result<Vec<T>, DbError>
    where
        F: Fn(usize, Arc<dyn Database>) -> Fut,
        Fut: Future<Output = Result<T, DbError>> + 'a,
    {
        self.each(read).await.into_iter().collect()
    }

    /// An error of shard `index`, named after it when the shard could not
    /// be reached; a failed version's id as served.
    fn on_shard(&self, index: usize, error: DbError) -> DbError {
        match error {
            DbError::Connect(reason) | DbError::ConnectionLost(reason) => {
                self.slots[index].down.store(true, Ordering::Relaxed);
                DbError::ShardUnreachable { shard: self.slots[index].name.clone(), reason }
            }
            DbError::MigrationFailed(mut failure) => {
                failure.version_id = failure.version_id.map(|id| self.ids.served(id, index));
                DbError::MigrationFailed(failure)
            }
            other => other,
        }
    }

    /// Each shard's tenants as it answers them, and the directory: `None`
    /// when the home shard was just found unreachable (it is not asked
    /// again, which would wait for its time-out once more), empty when it
    /// cannot be read.
    async fn listings(&self) -> Listing {
        let listed = self.each(|_, store| async move { store.tenants().await }).await;
        if matches!(listed[0], Err(DbError::ShardUnreachable { .. })) {
            return Listing { listed, directory: None };
        }
        let directory = match self.store(0).await {
            Ok(home) => home.directory().await.unwrap_or_else(|error| {
                tracing::warn!(%error, "the shard directory could not be read");
                Directory::default()
            }),
            Err(_) => Directory::default(),
        };
        Listing { listed, directory: Some(directory) }
    }

    /// Every shard's tenants: as each answers, or as the directory last saw
    /// them on a shard that cannot be reached (less any tenant a shard that
    /// answered lists now). An error of another kind, or a shard that is
    /// down while the directory knows nothing of it, is the answer.
    async fn seen(&self) -> Result<Vec<ShardTenants>, DbError> {
        let Listing { listed, directory } = self.listings().await;
        let directory = directory.unwrap_or_default();
        let answered: HashSet<String> = listed.iter().filter_map(|r| r.as_ref().ok()).flatten().cloned().collect();
        let mut shards = Vec::with_capacity(listed.len());
        for (slot, result) in self.slots.iter().zip(listed) {
            let (tenants, reachable) = match result {
                Ok(tenants) => (tenants, true),
                Err(error @ DbError::ShardUnreachable { .. }) => {
                    let known = directory.tenants_of(&slot.name);
                    if known.is_empty() {
                        return Err(error);
                    }
                    (known.into_iter().filter(|t| !answered.contains(t)).collect(), false)
                }
                Err(error) => return Err(error),
            };
            shards.push(ShardTenants { name: slot.name.clone(), tenants, reachable });
        }
        self.one_shard_each(shards.iter().map(|shard| &shard.tenants))?;
        Ok(shards)
    }

    /// Refuses a tenant on two shards.
    fn one_shard_each<'a>(&self, tenants: impl Iterator<Item = &'a Vec<String>>) -> Result<(), DbError> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (index, names) in tenants.enumerate() {
            for name in names {
                if let Some(first) = seen.insert(name, index) {
                    return Err(DbError::TenantOnTwoShards {
                        tenant: name.clone(),
                        shards: [self.slots[first].name.clone(), self.slots[index].name.clone()],
                    });
                }
            }
        }
        Ok(())
    }

    /// Before a version that writes: the directory brought up to date from
    /// the shards that answered, and what the home shard quarantined for a
    /// shard that answers again handed over to it. Neither stops the
    /// version when it fails (it is said in the log).
    async fn before_version(&self, listing: &Listing) {
        let Some(directory) = &listing.directory else { return };
        let answered: Vec<(&str, &[String])> = self
            .slots
            .iter()
            .zip(&listing.listed)
            .filter_map(|(slot, result)| result.as_ref().ok().map(|t| (slot.name.as_str(), t.as_slice())))
            .collect();
        let changes = directory.changes(&answered);
        if !changes.is_empty() {
            let written = async { self.store(0).await?.change_directory(&changes).await };
            if let Err(error) = written.await {
                tracing::warn!(%error, "the shard directory could not be brought up to date");
            }
        }
        if let Err(error) = self.hand_over(listing).await {
            tracing::warn!(%error, "tenants quarantined while their shard was unreachable could not be handed over to it");
        }
    }

    /// Moves the rows the home shard holds for the tenants of another shard
    /// that answers (quarantined while it was unreachable) to that shard's
    /// quarantine, their failures kept; a row the shard holds itself for
    /// the tenant stays as it is. Written there first, then released at
    /// home: a crash between the two leaves the row in both places, and
    /// the next version moves it again.
    async fn hand_over(&self, listing: &Listing) -> Result<(), DbError> {
        let Ok(home_tenants) = &listing.listed[0] else { return Ok(()) };
        let home = self.store(0).await?;
        let held = home.quarantined().await?;
        let home_tenants: HashSet<&str> = home_tenants.iter().map(String::as_str).collect();
        let foreign: Vec<&QuarantineRow> =
            held.iter().filter(|row| !home_tenants.contains(row.tenant.as_str())).collect();
        if foreign.is_empty() {
            return Ok(());
        }
        for (index, listed) in listing.listed.iter().enumerate().skip(1) {
            let Ok(tenants) = listed else { continue };
            let tenants: HashSet<&str> = tenants.iter().map(String::as_str).collect();
            let moving: Vec<QuarantineRow> =
                foreign.iter().filter(|row| tenants.contains(row.tenant.as_str())).map(|row| (*row).clone()).collect();
            if moving.is_empty() {
                continue;
            }
            let store = self.store(index).await?;
            let own: HashSet<String> = store.quarantined().await?.into_iter().map(|row| row.tenant).collect();
            let new: Vec<QuarantineRow> = moving.iter().filter(|row| !own.contains(&row.tenant)).cloned().collect();
            if !new.is_empty() {
                store.quarantine(&new).await?;
            }
            let names: Vec<String> = moving.into_iter().map(|row| row.tenant).collect();
            home.release_quarantined(&names).await?;
            tracing::info!(shard = %self.slots[index].name, tenants = names.len(),
                "tenants quarantined while their shard was unreachable handed over to its own quarantine");
        }
        Ok(())
    }

    /// Quarantines, on the home shard, the tenants of each shard the
    /// version could not reach (`tenants`: as last seen); the home shard
    /// itself cannot hold its own. Returns whether they were written.
    async fn quarantine_unreachable(
        &self,
        request: &MutationRequest<'_>,
        index: usize,
        reason: &str,
        tenants: &[String],
    ) -> bool {
        if index == 0 || tenants.is_empty() {
            return false;
        }
        let shard = &self.slots[index].name;
        let rows: Vec<QuarantineRow> = tenants
            .iter()
            .map(|tenant| QuarantineRow {
                tenant: tenant.clone(),
                version_id: None,
                file: String::new(),
                line: None,
                column: None,
                cause: SHARD_UNREACHABLE.to_string(),
                message: format!("shard {shard} unreachable: {reason}"),
                request_id: request.request_id.to_string(),
                quarantined: request.created.to_string(),
                failures: 1,
            })
            .collect();
        let written = async { self.store(0).await?.quarantine(&rows).await };
        match written.await {
            Ok(()) => {
                tracing::warn!(shard = %shard, tenants = rows.len(),
                    "the tenants of an unreachable shard were quarantined on the home shard until they are retried");
                for _ in &rows {
                    crate::telemetry::tenant_quarantined();
                }
                true
            }
            Err(error) => {
                tracing::warn!(shard = %shard, %error, "the tenants of an unreachable shard could not be quarantined");
                false
            }
        }
    }

    async fn placement(&self) -> Result<Placement, DbError> {
        let tenants = self.every(|_, store| async move { store.tenants().await }).await?;
        self.one_shard_each(tenants.iter())?;
        Ok(Placement { tenants })
    }

    fn version(&self, index: usize, mut row: VersionRow) -> VersionRow {
        row.id = self.ids.served(row.id, index);
        row
    }

    fn quarantine_row(&self, index: usize, mut row: QuarantineRow) -> QuarantineRow {
        row.version_id = row.version_id.map(|id| self.ids.served(id, index));
        row
    }

    /// Where each tenant was last seen (`listing`): a shard that does not
    /// answer is found by the directory, so a retry or a wave naming its
    /// tenants reaches it and fails as unreachable.
    fn last_seen(&self, listing: &Listing) -> Result<Placement, DbError> {
        let tenants = listing.last_seen(&self.slots);
        self.one_shard_each(tenants.iter())?;
        Ok(Placement { tenants })
    }

    /// Which shards a retry of every quarantined tenant runs on: those
    /// holding quarantined tenants of their own, and those whose tenants
    /// the home shard holds (quarantined while unreachable). A shard that
    /// does not answer is asked nothing more.
    async fn retried_shards(&self, listing: &Listing) -> Result<Vec<bool>, DbError> {
        let held = self
            .each(|index, store| async move {
                match listing.unreachable(index) {
                    Some(unreachable) => Err(unreachable),
                    None => store.quarantined().await,
                }
            })
            .await;
        let placement = self.last_seen(listing)?;
        let mut retried = vec![false; self.slots.len()];
        for (index, rows) in held.into_iter().enumerate() {
            let rows = match rows {
                Ok(rows) => rows,
                Err(DbError::ShardUnreachable { .. }) if index > 0 => continue,
                Err(error) => return Err(error),
            };
            // A tenant no shard lists (gone from the list) is retried nowhere.
            for shard in rows.iter().filter_map(|row| placement.shard_of(&row.tenant)) {
                retried[shard] = true;
            }
        }
        if !retried.contains(&true) {
            return Err(DbError::Retry(RetryError::NothingQuarantined));
        }
        Ok(retried)
    }

    /// What each shard runs of `request`: `None` for a shard with nothing
    /// to do (a wave or a retry naming none of its tenants).
    async fn parts<'r>(
        &self,
        request: &MutationRequest<'r>,
        listing: &Listing,
    ) -> Result<Vec<Option<MutationRequest<'r>>>, DbError> {
        let part = |index: usize| MutationRequest { tenants_only: index > 0, shard: None, ..request.clone() };
        if let Target::NewTenant(tenant) = &request.target {
            // Every shard must answer, so no name is created twice: the
            // listing serves when they all did; else asking again gives
            // the first failing shard's own error.
            let listed: Option<Vec<Vec<String>>> =
                listing.listed.iter().map(|listed| listed.as_ref().ok().cloned()).collect();
            let placement = match listed {
                Some(tenants) => {
                    self.one_shard_each(tenants.iter())?;
                    Placement { tenants }
                }
                None => self.placement().await?,
            };
            if placement.shard_of(tenant).is_some() {
                return Err(DbError::Plan(PlanError::TenantExists(tenant.clone())));
            }
            let names: Vec<&str> = self.slots.iter().map(|slot| slot.name.as_str()).collect();
            let counts: Vec<Option<usize>> = placement.tenants.iter().map(|t| Some(t.len())).collect();
            let chosen = shard::place(&names, &counts, request.shard).map_err(DbError::Shard)?;
            return Ok((0..self.slots.len()).map(|index| (index == chosen).then(|| part(index))).collect());
        }
        match (&request.retry, &request.wave) {
            (Some(named), _) if !named.is_empty() => {
                let placement = self.last_seen(listing)?;
                let parts = placement.split(named).map_err(|name| DbError::Retry(RetryError::NotQuarantined(name)))?;
                Ok(parts
                    .into_iter()
                    .enumerate()
                    .map(|(index, names)| {
                        (!names.is_empty()).then(|| MutationRequest { retry: Some(names), ..part(index) })
                    })
                    .collect())
            }
            (Some(_), _) => {
                let retried = self.retried_shards(listing).await?;
                Ok(retried.into_iter().enumerate().map(|(index, retried)| retried.then(|| part(index))).collect())
            }
            (None, Wave::Named(named)) => {
                let placement = self.last_seen(listing)?;
                let parts = placement.split(named).map_err(|name| DbError::Wave(WaveError::NotATenant(name)))?;
                Ok(parts
                    .into_iter()
                    .enumerate()
                    .map(|(index, names)| {
                        // The home shard runs its single schemas in every wave.
                        (index == 0 || !names.is_empty())
                            .then(|| MutationRequest { wave: Wave::Named(names), ..part(index) })
                    })
                    .collect())
            }
            (None, _) => Ok((0..self.slots.len()).map(|index| Some(part(index))).collect()),
        }
    }
}

/// A repair on a fleet: each shard decides over its own rows (a named
/// file one shard has nothing of is left out there), then each writes its
/// part under its own lock; a named file no shard holds a change of is
/// refused before any shard writes.
async fn repair_fleet(
    fleet: &Fleet,
    sources: &[SourceMigration],
    files: &[String],
    audit: Option<&Audit<'_>>,
) -> Result<Repair, DbError> {
    let parts = fleet.every(|_, store| async move { store.repair(sources, files, false, None).await }).await?;
    let mut merged = Repair::default();
    for part in parts {
        merged.checksums.extend(part.checksums);
        merged.removals.extend(part.removals);
    }
    if let Some(file) = files.iter().find(|file| {
        !merged.checksums.iter().any(|c| &c.file == *file) && !merged.removals.iter().any(|r| &r.file == *file)
    }) {
        return Err(DbError::Repair(RepairError::NothingOnAnyShard(file.clone())));
    }
    let Some(audit) = audit else { return Ok(merged) };
    let written = fleet.every(|_, store| async move { store.repair(sources, files, false, Some(audit)).await }).await?;
    let mut done = Repair::default();
    for part in written {
        done.checksums.extend(part.checksums);
        done.removals.extend(part.removals);
    }
    Ok(done)
}

#[async_trait]
impl Database for Fleet {
    async fn repair(
        &self,
        sources: &[SourceMigration],
        files: &[String],
        _strict: bool,
        audit: Option<&Audit<'_>>,
    ) -> Result<Repair, DbError> {
        repair_fleet(self, sources, files, audit).await
    }

    async fn ping(&self) -> Result<(), DbError> {
        self.every(|_, store| async move { store.ping().await }).await.map(drop)
    }

    async fn health(&self) -> Vec<(String, Result<(), DbError>)> {
        let answers = self
            .each(|_, store| async move {
                tokio::time::timeout(SHARD_CHECK_TIMEOUT, store.ping()).await.unwrap_or_else(|_| {
                    Err(DbError::Connect(format!("no answer within {} s", SHARD_CHECK_TIMEOUT.as_secs())))
                })
            })
            .await;
        for (slot, answer) in self.slots.iter().zip(&answers) {
            crate::telemetry::shard_up(&slot.name, answer.is_ok());
        }
        self.slots.iter().map(|slot| format!("DB:{}", slot.name)).zip(answers).collect()
    }

    async fn shards(&self) -> Result<Vec<ShardTenants>, DbError> {
        self.seen().await
    }

    async fn tenants(&self) -> Result<Vec<String>, DbError> {
        Ok(self.seen().await?.into_iter().flat_map(|shard| shard.tenants).collect())
    }

    async fn versions(&self, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError> {
        if let VersionFilter::Id(served) = filter {
            let Some((index, local)) = self.ids.local(served).filter(|(index, _)| *index < self.slots.len()) else {
                return Ok(Vec::new());
            };
            let rows = self.store(index).await?.versions(VersionFilter::Id(local)).await?;
            return Ok(rows.into_iter().map(|row| self.version(index, row)).collect());
        }
        // A shard other than the home shard that does not answer is left
        // out: the others' parts of each version are there.
        let mut rows = Vec::new();
        for (index, part) in
            self.each(|_, store| async move { store.versions(filter).await }).await.into_iter().enumerate()
        {
            match part {
                Ok(part) => rows.extend(part.into_iter().map(|row| self.version(index, row))),
                Err(DbError::ShardUnreachable { .. }) if index > 0 => {}
                Err(error) => return Err(error),
            }
        }
        rows.sort_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)));
        Ok(rows)
    }

    async fn migrations(&self, filter: MigrationFilter) -> Result<Vec<MigrationRow>, DbError> {
        let (served, local_filter): (i64, fn(i64) -> MigrationFilter) = match filter {
            MigrationFilter::Version(id) => (id, MigrationFilter::Version),
            MigrationFilter::Id(id) => (id, MigrationFilter::Id),
        };
        let Some((index, local)) = self.ids.local(served).filter(|(index, _)| *index < self.slots.len()) else {
            return Ok(Vec::new());
        };
        let rows = self.store(index).await?.migrations(local_filter(local)).await?;
        Ok(rows
            .into_iter()
            .map(|mut row| {
                row.id = self.ids.served(row.id, index);
                row
            })
            .collect())
    }

    async fn mutate(&self, request: MutationRequest<'_>) -> Result<MutationOutcome, DbError> {
        let listing = self.listings().await;
        let writes = !request.dry_run && self.access == Access::ReadWrite;
        if writes {
            self.before_version(&listing).await;
        }
        let parts = self.parts(&request, &listing).await?;
        let executed = request.action == strata_core::migrate::plan::Action::Apply && !request.dry_run;
        let last_seen = listing.last_seen(&self.slots);
        let runs = self.run_parts(parts, &listing, |store, part| async move { store.mutate(part).await }).await;
        let mut outcomes = Vec::new();
        let mut failed = Vec::new();
        for (index, result) in runs {
            let shard = &self.slots[index].name;
            match result {
                Ok(outcome) => {
                    crate::telemetry::shard_up(shard, true);
                    if outcome.version.is_some() {
                        let counts = outcome.committed_counts.as_ref().unwrap_or(&outcome.plan.counts);
                        crate::telemetry::shard_version(shard, Some(counts), executed);
                    }
                    outcomes.push((index, outcome));
                }
                Err(error) => {
                    crate::telemetry::shard_up(shard, !matches!(error, DbError::ShardUnreachable { .. }));
                    crate::telemetry::shard_version(shard, None, executed);
                    failed.push((index, error));
                }
            }
        }
        if failed.len() == 1 && outcomes.is_empty() {
            return Err(failed.remove(0).1);
        }
        if !failed.is_empty() {
            let completed = outcomes
                .iter()
                .map(|(index, outcome)| {
                    (self.slots[*index].name.clone(), outcome.version.as_ref().map(|v| self.ids.served(v.id, *index)))
                })
                .collect();
            let mut failures = Vec::with_capacity(failed.len());
            for (index, error) in failed {
                let (tenants, quarantined) = match &error {
                    DbError::ShardUnreachable { reason, .. } => {
                        let quarantined = writes
                            && listing.directory.is_some()
                            && self.quarantine_unreachable(&request, index, reason, &last_seen[index]).await;
                        (last_seen[index].clone(), quarantined)
                    }
                    _ => (Vec::new(), false),
                };
                failures.push(ShardFailure { shard: self.slots[index].name.clone(), tenants, quarantined, error });
            }
            return Err(DbError::Shards { failed: failures, completed });
        }
        let mut merged = MutationOutcome {
            plan: shard::merge(outcomes.iter().map(|(_, outcome)| outcome.plan.clone()).collect(), request.sources),
            version: None,
            quarantined: Vec::new(),
            skipped: Vec::new(),
            released: Vec::new(),
            committed_counts: None,
        };
        let partial = outcomes.iter().any(|(_, outcome)| outcome.committed_counts.is_some());
        let mut counts = strata_core::migrate::summary::Counts::default();
        for (index, outcome) in outcomes {
            counts = shard::add_counts(counts, outcome.committed_counts.as_ref().unwrap_or(&outcome.plan.counts));
            if merged.version.is_none() {
                merged.version = outcome.version.map(|row| self.version(index, row));
            }
            merged.quarantined.extend(outcome.quarantined.into_iter().map(|row| self.quarantine_row(index, row)));
            merged.skipped.extend(outcome.skipped);
            merged.released.extend(outcome.released);
        }
        if partial {
            merged.committed_counts = Some(counts);
        }
        Ok(merged)
    }

    /// The preview of every shard that answers; a shard other than the
    /// home shard that does not is in `unreachable`, with its tenants as
    /// last seen.
    async fn preview(&self, request: MutationRequest<'_>) -> Result<Preview, DbError> {
        let listing = self.listings().await;
        let parts = self.parts(&request, &listing).await?;
        let previews = self.run_parts(parts, &listing, |store, part| async move { store.preview(part).await }).await;
        let mut tenants = Vec::new();
        let mut skipped = Vec::new();
        let mut plans = Vec::new();
        let mut unreachable = Vec::new();
        let mut last_seen = listing.last_seen(&self.slots);
        for (index, preview) in previews {
            match preview {
                Ok(preview) => {
                    tenants.extend(preview.tenants);
                    skipped.extend(preview.skipped);
                    plans.push(preview.plan);
                }
                Err(DbError::ShardUnreachable { shard, reason }) if index > 0 => {
                    unreachable.push(UnreachableShard { shard, reason, tenants: std::mem::take(&mut last_seen[index]) })
                }
                Err(error) => return Err(error),
            }
        }
        Ok(Preview { plan: shard::merge(plans, request.sources), tenants, skipped, unreachable })
    }

    async fn recorded(&self) -> Result<HashMap<String, Recorded>, DbError> {
        let parts = self.every(|_, store| async move { store.recorded().await }).await?;
        Ok(parts.into_iter().flatten().collect())
    }

    async fn catalogs(&self, schemas: &[String]) -> Result<Vec<Vec<CatalogObject>>, DbError> {
        let placement = self.placement().await?;
        // Single schemas (on no shard's tenant list) are the home shard's.
        let mut parts: Vec<Vec<String>> = vec![Vec::new(); self.slots.len()];
        let mut at: Vec<(usize, usize)> = Vec::with_capacity(schemas.len());
        for schema in schemas {
            let index = placement.shard_of(schema).unwrap_or(0);
            at.push((index, parts[index].len()));
            parts[index].push(schema.clone());
        }
        let parts = &parts;
        let mut read = self.every(|index, store| async move { store.catalogs(&parts[index]).await }).await?;
        Ok(at.into_iter().map(|(index, position)| std::mem::take(&mut read[index][position])).collect())
    }

    async fn fingerprints(&self) -> Result<Vec<(String, String, String)>, DbError> {
        Ok(self.every(|_, store| async move { store.fingerprints().await }).await?.into_iter().flatten().collect())
    }

    /// Every shard's quarantine and what the home shard holds for shards
    /// that were unreachable; a shard that does not answer now is left out
    /// (its tenants quarantined while it was down are the home shard's). A
    /// tenant in both its shard's and the home shard's (not handed over
    /// yet) is its shard's.
    async fn quarantined(&self) -> Result<Vec<QuarantineRow>, DbError> {
        let mut rows: Vec<QuarantineRow> = Vec::new();
        let mut own: HashSet<String> = HashSet::new();
        for (index, part) in
            self.each(|_, store| async move { store.quarantined().await }).await.into_iter().enumerate()
        {
            let part = match part {
                Ok(part) => part,
                Err(DbError::ShardUnreachable { .. }) if index > 0 => continue,
                Err(error) => return Err(error),
            };
            if index > 0 {
                own.extend(part.iter().map(|row| row.tenant.clone()));
            }
            rows.extend(part.into_iter().map(|row| self.quarantine_row(index, row)));
        }
        rows.retain(|row| row.cause != SHARD_UNREACHABLE || !own.contains(&row.tenant));
        rows.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        Ok(rows)
    }

    async fn quarantine(&self, rows: &[QuarantineRow]) -> Result<(), DbError> {
        let placement = self.placement().await?;
        let mut parts: Vec<Vec<QuarantineRow>> = vec![Vec::new(); self.slots.len()];
        for row in rows {
            parts[placement.shard_of(&row.tenant).unwrap_or(0)].push(row.clone());
        }
        let parts = &parts;
        self.every(|index, store| async move {
            match parts[index].is_empty() {
                true => Ok(()),
                false => store.quarantine(&parts[index]).await,
            }
        })
        .await
        .map(drop)
    }

    // Rollouts are the fleet's, kept on the home shard.
    async fn rollouts(&self) -> Result<Vec<RolloutRow>, DbError> {
        self.store(0).await?.rollouts().await
    }

    async fn insert_rollout(&self, doc: &str, updated: &str) -> Result<i64, DbError> {
        self.store(0).await?.insert_rollout(doc, updated).await
    }

    async fn update_rollout(&self, row: &RolloutRow, doc: &str, updated: &str) -> Result<bool, DbError> {
        self.store(0).await?.update_rollout(row, doc, updated).await
    }

    async fn directory(&self) -> Result<Directory, DbError> {
        self.store(0).await?.directory().await
    }

    async fn change_directory(&self, changes: &DirectoryChanges) -> Result<(), DbError> {
        self.store(0).await?.change_directory(changes).await
    }

    /// Releases on every shard that answers (and so, from the home shard,
    /// what it holds for a shard that does not).
    async fn release_quarantined(&self, tenants: &[String]) -> Result<Vec<String>, DbError> {
        let mut released = Vec::new();
        for (index, part) in
            self.each(|_, store| async move { store.release_quarantined(tenants).await }).await.into_iter().enumerate()
        {
            match part {
                Ok(part) => released.extend(part),
                Err(DbError::ShardUnreachable { .. }) if index > 0 => {}
                Err(error) => return Err(error),
            }
        }
        released.sort();
        released.dedup();
        Ok(released)
    }
}
