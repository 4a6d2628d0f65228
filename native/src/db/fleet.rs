//! A fleet on several database servers (`shards:`): [`Fleet`] is the
//! [`Database`] of the service over one [`Store`](super::Store) per shard.
//! It decides nothing itself: it lists every shard (its tenants and its
//! quarantine) into core's `fleet::View`, lets core's `fleet` rules decide
//! (each shard's part, the directory, hand-overs, what a shard that did not
//! answer leaves quarantined, what the quarantine shows, one identity per
//! version), and opens, fans out and writes what they decided.
//!
//! # Invariants (the rules' own are in core's `fleet`)
//!
//! - **Each shard keeps its own books.** A shard's versions, migrations,
//!   quarantine, lock and fingerprints live in its own `svc` schema, next to
//!   the schemas they describe: recorded = applied per schema holds on every
//!   shard as it does on one server. The single schemas live on the home
//!   shard (the first); the others run tenant steps only.
//! - **A shard fails alone.** A version runs on every shard at once (each
//!   with its own lock and `tenantConcurrency` connections); a shard that
//!   is unreachable, or fails, stops nothing elsewhere: the other shards
//!   finish, and the error names each shard that did not, with why.
//! - **One version, one identity.** Every shard's part of one request
//!   carries the same name, request id and creation time; read back, they
//!   are one version served under its lowest shard's id (`local × base +
//!   index`, core's `shard::Ids`), listing its parts; any part's id reads
//!   the whole version. Ids stay stable: a part's row never changes shard
//!   or id (shards are appended, never reordered). Only while a shard other
//!   than the home shard does not answer is a version whose lowest part is
//!   there served under its next part's id.
//! - **Shards open lazily**: the service starts while a shard is down, and
//!   each use tries an unopened shard again. Before opening a shard, and
//!   while it was last found unreachable, one TCP connection asks whether
//!   anything listens at its address (core's `datasource::tcp_address`): a
//!   stopped server refuses at once, where the pool would retry until its
//!   5 s time-out on every request.

use rustc_hash::FxHashMap;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use strata_core::auth::audit::{Entry, Sealed};
use strata_core::auth::token::StoredToken;

use async_trait::async_trait;
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::tcp_address;
use strata_core::migrate::fingerprint::{CatalogObject, Recorded, Stored};
use strata_core::migrate::fleet::{self, FleetError, HandOver, Held, Placement, SHARD_UNREACHABLE, VersionPart, View};
use strata_core::migrate::plan::PlanError;
use strata_core::migrate::repair::{Repair, RepairError};
use strata_core::migrate::shard::{self, Directory, DirectoryChanges, Ids};
use strata_core::migrate::source::SourceMigration;
use strata_core::migrate::wave::Attributes;
use tokio::net::TcpStream;

use crate::db::engine::{Catalogs, Keeps, Reading};
use crate::db::error::{DbError, RunError, ShardFailure};
use crate::db::error::{OpenError, ServerError, ShardError};
use crate::db::store::Database;
use crate::db::types::{
    Access, AuditWindow, BackfillEnd, BackfillMove, BackfillRow, BackfillWait, MigrationFilter, MigrationRow,
    MutationOutcome, MutationRequest, Preview, QuarantineRow, RolloutRow, ShardTenants, UnreachableShard,
    VersionFilter, VersionRow,
};
use crate::db::types::{Audit, RepairRequest};

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
            match tokio::time::timeout(super::types::CONNECT_TIMEOUT, TcpStream::connect((host.as_str(), *port))).await
            {
                Ok(Ok(_)) => {
                    self.down.store(false, Ordering::Relaxed);
                    return Ok(());
                }
                Ok(Err(error)) => format!("nothing listens at its address: {error}"),
                Err(_) => format!("no answer at its address within {} s", super::types::CONNECT_TIMEOUT.as_secs()),
            };
        self.down.store(true, Ordering::Relaxed);
        Err(DbError::Shard(ShardError::Unreachable { shard: self.name.clone(), reason }))
    }
}

/// The service's database over several shards.
pub(crate) struct Fleet {
    slots: Vec<Slot>,
    access: Access,
    ids: Ids,
}

/// One look at the fleet: core's [`View`] (each shard's tenants and
/// quarantine, the directory) and what the shell keeps beside it — each
/// shard's error when it did not answer, and the quarantine rows whole.
struct Listing {
    view: View,
    errors: Vec<Option<DbError>>,
    rows: Vec<Option<Vec<QuarantineRow>>>,
}

impl Listing {
    /// Shard `index`'s error when this listing found it unreachable: it
    /// is not asked again in the same request (that would wait for its
    /// connect time-out once more).
    fn unreachable(&self, index: usize) -> Option<DbError> {
        match &self.errors[index] {
            Some(DbError::Shard(ShardError::Unreachable { shard, reason })) => {
                Some(DbError::Shard(ShardError::Unreachable { shard: shard.clone(), reason: reason.clone() }))
            }
            _ => None,
        }
    }

    /// Core's refusal as the service's error: a shard that had to answer
    /// and did not is reported with its own error; the others are what a
    /// request on one server would be refused with, where there is one.
    fn refused(&mut self, error: FleetError) -> RunError {
        match error {
            FleetError::MustAnswer(index) | FleetError::Unknown(index) => match self.errors[index].take() {
                Some(own) => own.into(),
                None => error.into(),
            },
            FleetError::TenantExists(tenant) => PlanError::TenantExists(tenant).into(),
            FleetError::Retry(error) => error.into(),
            FleetError::Wave(error) => error.into(),
            other => other.into(),
        }
    }

    /// [`Listing::refused`] met while reading: the shard's own error, or
    /// the fleet's rules broken by what the shards hold.
    fn unplaced(&mut self, error: FleetError) -> DbError {
        match error {
            FleetError::MustAnswer(index) | FleetError::Unknown(index) => match self.errors[index].take() {
                Some(own) => own,
                None => DbError::Shard(ShardError::Placement(error)),
            },
            other => DbError::Shard(ShardError::Placement(other)),
        }
    }

    /// The first error of a shard that answered with something else than
    /// being unreachable (a tenant statement that fails): it is the answer.
    fn failed(&mut self) -> Option<DbError> {
        let index = self.errors.iter().position(|e| e.as_ref().is_some_and(|e| !e.is_shard_unreachable()))?;
        self.errors[index].take()
    }
}

/// An error a shard answers with, made the fleet's: named after the shard
/// when it could not be reached, a failed version's id as served
/// ([`Fleet::on_shard`]); core's refusals as they are.
trait ShardAnswer: From<DbError> {
    fn on_shard(self, fleet: &Fleet, index: usize) -> Self;
}

impl ShardAnswer for DbError {
    fn on_shard(self, fleet: &Fleet, index: usize) -> Self {
        fleet.on_shard(index, self)
    }
}

impl ShardAnswer for RunError {
    fn on_shard(self, fleet: &Fleet, index: usize) -> Self {
        match self {
            RunError::Database(error) => RunError::Database(fleet.on_shard(index, error)),
            refused => refused,
        }
    }
}

/// What one shard (by index) answered.
type ShardResult<T> = (usize, T);

/// Whether a shard's preview read other tools' histories (a Sync adopts them).
fn adopts_histories_read(preview: &Preview) -> bool {
    !preview.plan.diagnostics.adopted.read.is_empty()
}

/// [`adopts_histories_read`] of a shard that answered.
fn adopts(preview: &Result<Preview, RunError>) -> bool {
    preview.as_ref().is_ok_and(adopts_histories_read)
}

/// The rules' view of quarantine rows.
fn held(rows: &[QuarantineRow]) -> Vec<Held> {
    rows.iter().map(|row| Held { tenant: row.tenant.clone(), unreachable: row.cause == SHARD_UNREACHABLE }).collect()
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
        slot.store.get_or_try_init(|| super::open::open_one(&slot.config, self.access)).await.cloned().map_err(
            |error| {
                match self.on_shard(index, error) {
                    unreachable @ DbError::Shard(ShardError::Unreachable { .. }) => unreachable,
                    // Whatever else stops a shard from opening, it is not usable.
                    other => {
                        DbError::Shard(ShardError::Unreachable { shard: slot.name.clone(), reason: other.to_string() })
                    }
                }
            },
        )
    }

    /// Runs each shard's part (none: nothing to do there) with `run`, every
    /// shard at once; `(shard, result)` in shard order. A shard `listing`
    /// just found unreachable is not asked again: its part fails with that.
    async fn run_parts<'r, T, F, Fut>(
        &self,
        parts: Vec<Option<MutationRequest<'r>>>,
        listing: &Listing,
        run: F,
    ) -> Vec<(usize, Result<T, RunError>)>
    where
        F: Fn(Arc<dyn Database>, MutationRequest<'r>) -> Fut,
        Fut: Future<Output = Result<T, RunError>>,
    {
        let run = &run;
        let runs = futures::future::join_all(parts.into_iter().enumerate().map(|(index, part)| async move {
            let part = part?;
            if let Some(unreachable) = listing.unreachable(index) {
                return Some((index, Err(unreachable.into())));
            }
            let span = crate::traces::spans::shard(&self.slots[index].name);
            let result = match crate::traces::in_span(&span, self.store(index)).await {
                Ok(store) => {
                    crate::traces::in_span(&span, run(store, part)).await.map_err(|error| error.on_shard(self, index))
                }
                Err(error) => Err(error.into()),
            };
            if let Err(error) = &result {
                crate::traces::spans::failed(&span, "SHARD_FAILED", &error.to_string());
            }
            Some((index, result))
        }))
        .await;
        runs.into_iter().flatten().collect()
    }

    /// Runs `read` on every shard at once; the results in shard order.
    async fn each<'a, T, E, F, Fut>(&'a self, read: F) -> Vec<Result<T, E>>
    where
        E: ShardAnswer,
        F: Fn(usize, Arc<dyn Database>) -> Fut,
        Fut: Future<Output = Result<T, E>> + 'a,
    {
        let read = &read;
        futures::future::join_all((0..self.slots.len()).map(|index| async move {
            let store = self.store(index).await?;
            read(index, store).await.map_err(|error| error.on_shard(self, index))
        }))
        .await
    }

    /// Every shard's answer, or the first shard's error.
    async fn every<'a, T, E, F, Fut>(&'a self, read: F) -> Result<Vec<T>, E>
    where
        E: ShardAnswer,
        F: Fn(usize, Arc<dyn Database>) -> Fut,
        Fut: Future<Output = Result<T, E>> + 'a,
    {
        self.each(read).await.into_iter().collect()
    }

    /// Each shard's answer; a shard other than the home shard that does
    /// not answer is `None`; any other error is the answer.
    async fn answering<'a, T, F, Fut>(&'a self, read: F) -> Result<Vec<Option<T>>, DbError>
    where
        F: Fn(usize, Arc<dyn Database>) -> Fut,
        Fut: Future<Output = Result<T, DbError>> + 'a,
    {
        let mut answers = Vec::with_capacity(self.slots.len());
        for (index, answer) in self.each(read).await.into_iter().enumerate() {
            match answer {
                Ok(answer) => answers.push(Some(answer)),
                Err(DbError::Shard(ShardError::Unreachable { .. })) if index > 0 => answers.push(None),
                Err(error) => return Err(error),
            }
        }
        Ok(answers)
    }

    /// An error of shard `index`, named after it when the shard could not
    /// be reached; a failed version's id as served.
    fn on_shard(&self, index: usize, error: DbError) -> DbError {
        match error {
            DbError::Open(OpenError::Connect(reason)) | DbError::Server(ServerError::ConnectionLost(reason)) => {
                self.slots[index].down.store(true, Ordering::Relaxed);
                DbError::Shard(ShardError::Unreachable { shard: self.slots[index].name.clone(), reason })
            }
            DbError::MigrationFailed(mut failure) => {
                failure.version_id = failure.version_id.map(|id| self.ids.served(id, index));
                DbError::MigrationFailed(failure)
            }
            other => other,
        }
    }

    /// One look at the fleet: each shard's tenants and quarantine as it
    /// answers them, and the directory (`None` when the home shard was just
    /// found unreachable: it is not asked again, which would wait for its
    /// time-out once more; empty when it cannot be read).
    async fn listing(&self) -> Listing {
        let answers = self
            .each(|_, store| async move {
                let tenants = store.tenants().await?;
                let rows = store.quarantined().await?;
                Ok((tenants, rows))
            })
            .await;
        let mut view = View { names: self.slots.iter().map(|slot| slot.name.clone()).collect(), ..View::default() };
        let (mut errors, mut rows) = (Vec::new(), Vec::new());
        for answer in answers {
            match answer {
                Ok((tenants, held_rows)) => {
                    view.listed.push(Some(tenants));
                    view.held.push(Some(held(&held_rows)));
                    rows.push(Some(held_rows));
                    errors.push(None);
                }
                Err(error) => {
                    view.listed.push(None);
                    view.held.push(None);
                    rows.push(None);
                    errors.push(Some(error));
                }
            }
        }
        if view.listed[0].is_some() {
            let directory = match self.store(0).await {
                Ok(home) => home.directory().await.unwrap_or_else(|error| {
                    tracing::warn!(%error, "the shard directory could not be read");
                    Directory::default()
                }),
                Err(_) => Directory::default(),
            };
            view.directory = Some(directory);
        }
        Listing { view, errors, rows }
    }

    /// Every shard's tenants (core's `View::seen`).
    async fn seen(&self) -> Result<Vec<ShardTenants>, DbError> {
        let mut listing = self.listing().await;
        if let Some(error) = listing.failed() {
            return Err(error);
        }
        let seen = listing.view.seen().map_err(|error| listing.unplaced(error))?;
        Ok(self
            .slots
            .iter()
            .zip(seen)
            .map(|(slot, seen)| ShardTenants {
                name: slot.name.clone(),
                tenants: seen.tenants,
                reachable: seen.reachable,
            })
            .collect())
    }

    /// Before a version that writes: what core's `housekeeping` decided —
    /// the directory brought up to date, the home shard's quarantine rows
    /// for a shard that answers again handed over to it. Neither stops the
    /// version when it fails (it is said in the log).
    async fn housekeeping(&self, listing: &Listing) {
        let work = fleet::housekeeping(&listing.view);
        if !work.directory.is_empty() {
            let written = async { self.store(0).await?.change_directory(&work.directory).await };
            if let Err(error) = written.await {
                tracing::warn!(%error, "the shard directory could not be brought up to date");
            }
        }
        for hand_over in work.hand_overs {
            if let Err(error) = self.hand_over(listing, &hand_over).await {
                tracing::warn!(shard = %self.slots[hand_over.shard].name, %error,
                    "tenants quarantined while their shard was unreachable could not be handed over to it");
            }
        }
    }

    /// Writes the rows to their shard first, then releases them at home: a
    /// crash between the two leaves the row in both places (shown once),
    /// and the next version moves it again.
    async fn hand_over(&self, listing: &Listing, hand_over: &HandOver) -> Result<(), DbError> {
        let home_rows = listing.rows[0].as_deref().unwrap_or_default();
        let rows: Vec<QuarantineRow> =
            home_rows.iter().filter(|row| hand_over.write.contains(&row.tenant)).cloned().collect();
        if !rows.is_empty() {
            self.store(hand_over.shard).await?.quarantine(&rows).await?;
        }
        self.store(0).await?.release_quarantined(&hand_over.release).await?;
        tracing::info!(shard = %self.slots[hand_over.shard].name, tenants = hand_over.release.len(),
            "tenants quarantined while their shard was unreachable handed over to its own quarantine");
        Ok(())
    }

    /// Quarantines, on the home shard, what core's `quarantine_unreachable`
    /// names for shard `index` that the version could not reach. Returns
    /// whether they were written.
    async fn quarantine_unreachable(
        &self,
        request: &MutationRequest<'_>,
        listing: &Listing,
        index: usize,
        reason: &str,
    ) -> bool {
        let tenants = fleet::quarantine_unreachable(&listing.view, index);
        if tenants.is_empty() {
            return false;
        }
        let shard = &self.slots[index].name;
        let rows: Vec<QuarantineRow> = tenants
            .into_iter()
            .map(|tenant| {
                let message = format!("shard {shard} unreachable: {reason}");
                QuarantineRow::put_aside(tenant, SHARD_UNREACHABLE, message, request.request_id, request.created)
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

    /// Where each tenant lives, every shard answering.
    async fn placement(&self) -> Result<Placement, DbError> {
        let tenants = self.every(|_, store| async move { store.tenants().await }).await?;
        let view = View {
            names: self.slots.iter().map(|slot| slot.name.clone()).collect(),
            listed: tenants.into_iter().map(Some).collect(),
            ..View::default()
        };
        // Every shard answered: the only refusal is a tenant on two shards.
        view.placement().map_err(|error| DbError::Shard(ShardError::Placement(error)))
    }

    /// `schemas` split by the shard they live on (single schemas, on no
    /// shard's tenant list, are the home shard's), and where each landed:
    /// its shard and its position there.
    async fn split_by_shard(&self, schemas: &[String]) -> Result<(Vec<Vec<String>>, Vec<(usize, usize)>), DbError> {
        let placement = self.placement().await?;
        let mut parts: Vec<Vec<String>> = vec![Vec::new(); self.slots.len()];
        let mut at: Vec<(usize, usize)> = Vec::with_capacity(schemas.len());
        for schema in schemas {
            let index = placement.shard_of(schema).unwrap_or(0);
            at.push((index, parts[index].len()));
            parts[index].push(schema.clone());
        }
        Ok((parts, at))
    }

    fn quarantine_row(&self, index: usize, mut row: QuarantineRow) -> QuarantineRow {
        row.version_id = row.version_id.map(|id| self.ids.served(id, index));
        row
    }

    /// What each shard runs of `request`, as core's `fleet::parts` decided.
    fn parts<'r>(
        &self,
        request: &MutationRequest<'r>,
        listing: &mut Listing,
    ) -> Result<Vec<Option<MutationRequest<'r>>>, RunError> {
        let ask = request.operation.fleet_ask();
        let parts = fleet::parts(&listing.view, ask).map_err(|error| listing.refused(error))?;
        Ok(parts
            .into_iter()
            .map(|part| {
                part.map(|part| MutationRequest {
                    tenants_only: part.tenants_only || request.tenants_only,
                    part: part.tenants,
                    ..request.clone()
                })
            })
            .collect())
    }

    /// Whether a Sync over several shards adopts other tools' histories
    /// fleet-wide (core's `history::adopt`): some shard's schemas hold one,
    /// so a tenant on another shard without one must record nothing there
    /// either — each shard deciding alone recorded every file in its
    /// tenants when they had none. Each shard's part is planned first (a
    /// preview); a shard that cannot answer fails the Sync, none of it run.
    async fn histories_elsewhere(
        &self,
        parts: &[Option<MutationRequest<'_>>],
        listing: &Listing,
    ) -> Result<bool, RunError> {
        let asked = parts.iter().flatten();
        if asked.clone().count() < 2 || !asked.clone().any(|part| part.operation.adopts_histories()) {
            return Ok(false);
        }
        let previews =
            self.run_parts(parts.to_vec(), listing, |store, part| async move { store.preview(part).await }).await;
        let mut found = false;
        for (_, preview) in previews {
            found |= adopts_histories_read(&preview?);
        }
        Ok(found)
    }

    /// Every shard's versions as the fleet's (core's `one_identity`), with
    /// each one's parts; a shard other than the home shard that does not
    /// answer is left out.
    async fn fleet_versions(&self, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError> {
        let answers = self.answering(|_, store| async move { store.versions(filter).await }).await?;
        let rows: Vec<(usize, VersionRow)> = answers
            .into_iter()
            .enumerate()
            .flat_map(|(index, rows)| rows.into_iter().flatten().map(move |row| (index, row)))
            .collect();
        let parts: Vec<VersionPart<'_>> = rows
            .iter()
            .map(|(shard, row)| VersionPart {
                shard: *shard,
                local: row.id,
                name: &row.name,
                created: &row.created,
                request_id: &row.request_id,
            })
            .collect();
        let versions = fleet::one_identity(self.ids, &parts);
        let by_served: HashMap<i64, &VersionRow> =
            rows.iter().map(|(index, row)| (self.ids.served(row.id, *index), row)).collect();
        let mut merged: Vec<VersionRow> = versions
            .into_iter()
            .map(|version| VersionRow {
                id: version.id,
                parts: version.parts.iter().map(|(shard, id)| (self.slots[*shard].name.clone(), *id)).collect(),
                ..by_served[&version.id].clone()
            })
            .collect();
        merged.sort_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)));
        Ok(merged)
    }

    /// Each shard's result, counted in the metrics: the outcomes and the
    /// failures, each with its shard.
    fn counted(
        &self,
        runs: Vec<(usize, Result<MutationOutcome, RunError>)>,
        executed: bool,
    ) -> (Vec<ShardResult<MutationOutcome>>, Vec<ShardResult<RunError>>) {
        let (mut outcomes, mut failed) = (Vec::new(), Vec::new());
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
                    crate::telemetry::shard_up(shard, !error.is_shard_unreachable());
                    crate::telemetry::shard_version(shard, None, executed);
                    failed.push((index, error));
                }
            }
        }
        (outcomes, failed)
    }

    /// The error of a version that did not finish on some shards: each with
    /// why, the tenants of one it could not reach (quarantined on the home
    /// shard when the version writes), and what the others completed.
    async fn shards_failed(
        &self,
        request: &MutationRequest<'_>,
        listing: &Listing,
        writes: bool,
        outcomes: &[ShardResult<MutationOutcome>],
        failed: Vec<ShardResult<RunError>>,
    ) -> DbError {
        let last_seen = listing.view.last_seen();
        let completed = outcomes
            .iter()
            .map(|(index, outcome)| {
                (self.slots[*index].name.clone(), outcome.version.as_ref().map(|v| self.ids.served(v.id, *index)))
            })
            .collect();
        let mut failures = Vec::with_capacity(failed.len());
        for (index, error) in failed {
            let (tenants, quarantined) = match &error {
                RunError::Database(DbError::Shard(ShardError::Unreachable { reason, .. })) => {
                    let quarantined = writes && self.quarantine_unreachable(request, listing, index, reason).await;
                    (last_seen[index].clone(), quarantined)
                }
                _ => (Vec::new(), false),
            };
            failures.push(ShardFailure { shard: self.slots[index].name.clone(), tenants, quarantined, error });
        }
        DbError::Shard(ShardError::Failed { failed: failures, completed })
    }

    /// The shards' outcomes as one: one plan (core's `shard::merge`), one
    /// version with its parts, the counts of what committed.
    fn merged(&self, request: &MutationRequest<'_>, outcomes: Vec<ShardResult<MutationOutcome>>) -> MutationOutcome {
        let parts: Vec<(String, i64)> = outcomes
            .iter()
            .filter_map(|(index, outcome)| {
                outcome.version.as_ref().map(|v| (self.slots[*index].name.clone(), self.ids.served(v.id, *index)))
            })
            .collect();
        let mut merged = MutationOutcome {
            plan: shard::merge(outcomes.iter().map(|(_, outcome)| outcome.plan.clone()).collect(), request.sources),
            version: None,
            quarantined: Vec::new(),
            waiting: Vec::new(),
            skipped: Vec::new(),
            released: Vec::new(),
            committed_counts: None,
            phases: Default::default(),
        };
        let partial = outcomes.iter().any(|(_, outcome)| outcome.committed_counts.is_some());
        let mut counts = strata_core::migrate::summary::Counts::default();
        for (index, outcome) in outcomes {
            counts = shard::add_counts(counts, outcome.committed_counts.as_ref().unwrap_or(&outcome.plan.counts));
            if merged.version.is_none() {
                merged.version = outcome.version.map(|row| VersionRow {
                    id: self.ids.served(row.id, index),
                    parts: parts.clone(),
                    ..row
                });
            }
            merged.quarantined.extend(outcome.quarantined.into_iter().map(|row| self.quarantine_row(index, row)));
            merged.waiting.extend(outcome.waiting);
            merged.skipped.extend(outcome.skipped);
            merged.released.extend(outcome.released);
            merged.phases = merged.phases.longest(outcome.phases);
        }
        if partial {
            merged.committed_counts = Some(counts);
        }
        merged.waiting.sort();
        merged
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
) -> Result<Repair, RunError> {
    let merge = |parts: Vec<Repair>| {
        let mut merged = Repair::default();
        for part in parts {
            merged.checksums.extend(part.checksums);
            merged.removals.extend(part.removals);
        }
        merged
    };
    let ask = RepairRequest { sources, files, strict: false, audit: None };
    let planned = merge(fleet.every(|_, store| async move { store.repair(ask).await }).await?);
    if let Some(file) = files.iter().find(|file| {
        !planned.checksums.iter().any(|c| &c.file == *file) && !planned.removals.iter().any(|r| &r.file == *file)
    }) {
        return Err(RepairError::NothingOnAnyShard(file.clone()).into());
    }
    let Some(audit) = audit else { return Ok(planned) };
    let ask = RepairRequest { audit: Some(audit), ..ask };
    Ok(merge(fleet.every(|_, store| async move { store.repair(ask).await }).await?))
}

#[async_trait]
impl Database for Fleet {
    fn keeps(&self) -> Keeps {
        crate::db::open::keeps(self.slots[0].config.driver)
    }

    async fn close(&self) {
        futures::future::join_all(self.slots.iter().filter_map(|slot| slot.store.get()).map(|store| store.close()))
            .await;
    }

    async fn repair(&self, request: RepairRequest<'_>) -> Result<Repair, RunError> {
        repair_fleet(self, request.sources, request.files, request.audit).await
    }

    async fn ping(&self) -> Result<(), DbError> {
        self.every(|_, store| async move { store.ping().await }).await.map(drop)
    }

    async fn health(&self) -> Vec<(String, Result<(), DbError>)> {
        let answers = self
            .each(|_, store| async move {
                tokio::time::timeout(SHARD_CHECK_TIMEOUT, store.ping()).await.unwrap_or_else(|_| {
                    Err(DbError::Open(OpenError::Connect(format!(
                        "no answer within {} s",
                        SHARD_CHECK_TIMEOUT.as_secs()
                    ))))
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

    async fn add_tenants(&self, tenants: &[String], shard: Option<&str>) -> Result<(), RunError> {
        let mut listing = self.listing().await;
        let placed = fleet::place_new_tenants(&listing.view, tenants, shard).map_err(|e| listing.refused(e))?;
        let placed = &placed;
        self.every(|index, store| async move {
            match placed[index].is_empty() {
                true => Ok(()),
                false => store.add_tenants(&placed[index], None).await,
            }
        })
        .await
        .map(drop)
    }

    async fn tenants(&self) -> Result<Vec<String>, DbError> {
        Ok(self.seen().await?.into_iter().flat_map(|shard| shard.tenants).collect())
    }

    /// Each shard's tenants' attributes, one map (a tenant lives on one
    /// shard; the columns are the first shard's that has any).
    async fn tenant_attributes(&self) -> Result<Attributes, DbError> {
        let mut merged = Attributes::default();
        for shard in self.every(|_, store| async move { store.tenant_attributes().await }).await? {
            if merged.columns.is_empty() {
                merged.columns = shard.columns;
            }
            merged.values.extend(shard.values);
        }
        Ok(merged)
    }

    /// Each shard's own page at once, merged by core's `View::page`: the
    /// service holds a page a shard, never the fleet's list (a shard that
    /// does not answer stands in with the directory, read whole then).
    async fn tenant_page(&self, after: Option<&str>, first: Option<usize>) -> Result<Vec<String>, DbError> {
        Ok(self.placed_tenant_page(after, first).await?.into_iter().map(|(tenant, _)| tenant).collect())
    }

    async fn placed_tenant_page(
        &self,
        after: Option<&str>,
        first: Option<usize>,
    ) -> Result<Vec<(String, Option<String>)>, DbError> {
        let answers = self.each(|_, store| async move { store.tenant_page(after, first).await }).await;
        let mut view = View { names: self.slots.iter().map(|slot| slot.name.clone()).collect(), ..View::default() };
        let mut errors = Vec::with_capacity(answers.len());
        for answer in answers {
            let (page, error) = match answer {
                Ok(page) => (Some(page), None),
                Err(error) => (None, Some(error)),
            };
            view.listed.push(page);
            errors.push(error);
        }
        let mut listing = Listing { view, errors, rows: Vec::new() };
        if let Some(error) = listing.failed() {
            return Err(error);
        }
        if listing.view.listed[0].is_some() && listing.view.listed.iter().any(Option::is_none) {
            listing.view.directory = Some(self.store(0).await?.directory().await?);
        }
        let page = listing.view.page(after, first.unwrap_or(usize::MAX)).map_err(|error| listing.unplaced(error))?;
        Ok(page.into_iter().map(|(tenant, index)| (tenant, Some(self.slots[index].name.clone()))).collect())
    }

    /// One row per version of the fleet, whatever number of shards ran
    /// it; read by any of its parts' ids, it is the whole version.
    async fn versions(&self, filter: VersionFilter<'_>) -> Result<Vec<VersionRow>, DbError> {
        let all = self.fleet_versions(VersionFilter::All).await?;
        let wanted: HashSet<i64> = match filter {
            VersionFilter::All => return Ok(all),
            VersionFilter::Window(window) => return Ok(window.of(all)),
            VersionFilter::Id(served) => HashSet::from([served]),
            VersionFilter::ApplyingFile(_) => {
                let answers = self.answering(|_, store| async move { store.versions(filter).await }).await?;
                answers
                    .into_iter()
                    .enumerate()
                    .flat_map(|(index, rows)| rows.into_iter().flatten().map(move |row| (index, row.id)))
                    .map(|(index, local)| self.ids.served(local, index))
                    .collect()
            }
        };
        Ok(all.into_iter().filter(|version| version.parts.iter().any(|(_, id)| wanted.contains(id))).collect())
    }

    /// A version's migrations are those of each of its parts, shard after
    /// shard (found by listing the versions); a part's, or one migration,
    /// are read on their shard alone.
    async fn migrations(&self, filter: MigrationFilter) -> Result<Vec<MigrationRow>, DbError> {
        if let MigrationFilter::Page { part, after } = filter {
            // A page of one part, on its shard; ids above `after` there.
            let Some((index, local)) = self.ids.local(part).filter(|(index, _)| *index < self.slots.len()) else {
                return Ok(Vec::new());
            };
            let after = match after {
                0 => 0,
                after => self.ids.local(after).map_or(0, |(_, local)| local),
            };
            let page = self.store(index).await?.migrations(MigrationFilter::Page { part: local, after }).await?;
            return Ok(page
                .into_iter()
                .map(|mut row| {
                    row.id = self.ids.served(row.id, index);
                    row
                })
                .collect());
        }
        let served_parts: Vec<i64> = match filter {
            MigrationFilter::Version(id) => match self.versions(VersionFilter::Id(id)).await?.into_iter().next() {
                Some(version) => version.parts.into_iter().map(|(_, id)| id).collect(),
                None => return Ok(Vec::new()),
            },
            MigrationFilter::Part(id) | MigrationFilter::Id(id) => vec![id],
            MigrationFilter::Page { .. } => Vec::new(),
        };
        let mut rows = Vec::new();
        for served in served_parts {
            let Some((index, local)) = self.ids.local(served).filter(|(index, _)| *index < self.slots.len()) else {
                continue;
            };
            let local_filter = match filter {
                MigrationFilter::Version(_) | MigrationFilter::Part(_) => MigrationFilter::Version(local),
                MigrationFilter::Id(_) => MigrationFilter::Id(local),
                MigrationFilter::Page { .. } => continue,
            };
            let part = self.store(index).await?.migrations(local_filter).await?;
            rows.extend(part.into_iter().map(|mut row| {
                row.id = self.ids.served(row.id, index);
                row
            }));
        }
        Ok(rows)
    }

    async fn mutate(&self, request: MutationRequest<'_>) -> Result<MutationOutcome, RunError> {
        let mut listing = self.listing().await;
        if let Some(error) = listing.failed() {
            return Err(error.into());
        }
        let writes = !request.dry_run && self.access == Access::ReadWrite;
        if writes {
            self.housekeeping(&listing).await;
        }
        let mut parts = self.parts(&request, &mut listing)?;
        if self.histories_elsewhere(&parts, &listing).await? {
            parts.iter_mut().flatten().for_each(|part| part.histories_elsewhere = true);
        }
        let executed = request.operation.action() == strata_core::migrate::plan::Action::Apply && !request.dry_run;
        let runs = self.run_parts(parts, &listing, |store, part| async move { store.mutate(part).await }).await;
        let (outcomes, mut failed) = self.counted(runs, executed);
        if failed.len() == 1 && outcomes.is_empty() {
            return Err(failed.remove(0).1);
        }
        if !failed.is_empty() {
            return Err(self.shards_failed(&request, &listing, writes, &outcomes, failed).await.into());
        }
        Ok(self.merged(&request, outcomes))
    }

    /// The preview of every shard that answers; a shard other than the
    /// home shard that does not is in `unreachable`, with its tenants as
    /// last seen.
    async fn preview(&self, request: MutationRequest<'_>) -> Result<Preview, RunError> {
        let mut listing = self.listing().await;
        if let Some(error) = listing.failed() {
            return Err(error.into());
        }
        let parts = self.parts(&request, &mut listing)?;
        let mut previews =
            self.run_parts(parts.clone(), &listing, |store, part| async move { store.preview(part).await }).await;
        // A Sync where some shard found other tools' histories: the shards
        // that found none are planned again as the fleet adopts (only they;
        // `histories_elsewhere` does the same before a Sync runs).
        if request.operation.adopts_histories() && previews.iter().any(|(_, preview)| adopts(preview)) {
            let again: Vec<Option<MutationRequest<'_>>> = parts
                .into_iter()
                .zip(&previews)
                .map(|(part, (_, preview))| {
                    let without = preview.as_ref().is_ok_and(|preview| !adopts_histories_read(preview));
                    part.filter(|_| without).map(|part| MutationRequest { histories_elsewhere: true, ..part })
                })
                .collect();
            for (index, preview) in
                self.run_parts(again, &listing, |store, part| async move { store.preview(part).await }).await
            {
                if let Some(slot) = previews.iter_mut().find(|(at, _)| *at == index) {
                    slot.1 = preview;
                }
            }
        }
        let mut tenants = Vec::new();
        let mut skipped = Vec::new();
        let mut plans = Vec::new();
        let mut unreachable = Vec::new();
        let mut last_seen = listing.view.last_seen();
        for (index, preview) in previews {
            match preview {
                Ok(preview) => {
                    tenants.extend(preview.tenants);
                    skipped.extend(preview.skipped);
                    plans.push(preview.plan);
                }
                Err(RunError::Database(DbError::Shard(ShardError::Unreachable { shard, reason }))) if index > 0 => {
                    unreachable.push(UnreachableShard { shard, reason, tenants: std::mem::take(&mut last_seen[index]) })
                }
                Err(error) => return Err(error),
            }
        }
        Ok(Preview { plan: shard::merge(plans, request.sources), tenants, skipped, unreachable })
    }

    async fn recorded(&self) -> Result<FxHashMap<String, Recorded>, DbError> {
        let parts = self.every(|_, store| async move { store.recorded().await }).await?;
        Ok(parts.into_iter().flatten().collect())
    }

    async fn catalogs(&self, schemas: &[String], reading: Reading) -> Result<Catalogs, DbError> {
        let (parts, at) = self.split_by_shard(schemas).await?;
        let parts = &parts;
        let mut read = self.every(|index, store| async move { store.catalogs(&parts[index], reading).await }).await?;
        Ok(at.into_iter().map(|(index, position)| std::mem::take(&mut read[index][position])).collect())
    }

    async fn desired_catalog(&self, sql: &str, scratch: &str) -> Result<Result<Vec<CatalogObject>, String>, DbError> {
        // Every shard's engine reads the desired file, so a shard of
        // another major that refuses it is found before anything runs;
        // the first shard's catalog is the one planned from.
        let mut read = self.every(|_, store| async move { store.desired_catalog(sql, scratch).await }).await?;
        for answer in &read {
            if let Err(message) = answer {
                return Ok(Err(message.clone()));
            }
        }
        Ok(read.swap_remove(0))
    }

    async fn catalog_prints(&self, schemas: &[String]) -> Result<Vec<String>, DbError> {
        let (parts, at) = self.split_by_shard(schemas).await?;
        let parts = &parts;
        let mut read = self.every(|index, store| async move { store.catalog_prints(&parts[index]).await }).await?;
        Ok(at.into_iter().map(|(index, position)| std::mem::take(&mut read[index][position])).collect())
    }

    async fn fingerprints(&self) -> Result<Vec<(String, Stored)>, DbError> {
        Ok(self.every(|_, store| async move { store.fingerprints().await }).await?.into_iter().flatten().collect())
    }

    /// Every shard's backfills (a tenant runs its backfill where it lives).
    async fn backfills(&self) -> Result<Vec<BackfillRow>, DbError> {
        let mut rows: Vec<BackfillRow> =
            self.every(|_, store| async move { store.backfills().await }).await?.into_iter().flatten().collect();
        rows.sort_by(|a, b| (&a.schema, &a.file).cmp(&(&b.schema, &b.file)));
        Ok(rows)
    }

    /// Every shard runs its own backfills, at once.
    async fn run_backfills(&self, holder: &str) -> Result<Vec<BackfillEnd>, DbError> {
        let ends = self.every(|_, store| async move { store.run_backfills(holder).await }).await?;
        Ok(ends.into_iter().flatten().collect())
    }

    async fn move_backfills(
        &self,
        tenants: &[String],
        how: BackfillMove,
        request_id: &str,
    ) -> Result<Vec<BackfillWait>, DbError> {
        let moved = self.every(|_, store| async move { store.move_backfills(tenants, how, request_id).await }).await?;
        Ok(moved.into_iter().flatten().collect())
    }

    /// What core's `visible_quarantine` shows of every shard's quarantine
    /// (a shard that does not answer now is left out: its tenants
    /// quarantined while it was down are the home shard's).
    async fn quarantined(&self) -> Result<Vec<QuarantineRow>, DbError> {
        let rows = self.answering(|_, store| async move { store.quarantined().await }).await?;
        let held: Vec<Option<Vec<Held>>> = rows.iter().map(|rows| rows.as_deref().map(held)).collect();
        Ok(fleet::visible_quarantine(&held)
            .into_iter()
            .filter_map(|(index, position)| {
                let row = rows[index].as_ref()?.get(position)?.clone();
                Some(self.quarantine_row(index, row))
            })
            .collect())
    }

    async fn mutation_running(&self) -> Result<bool, DbError> {
        let answers = self.answering(|_, store| async move { store.mutation_running().await }).await?;
        Ok(answers.into_iter().flatten().any(|running| running))
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

    async fn insert_rollout(&self, id: i64, doc: &str, updated: &str) -> Result<bool, DbError> {
        self.store(0).await?.insert_rollout(id, doc, updated).await
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

    // Tokens and the audit log are the fleet's, kept on the home shard.
    async fn tokens(&self) -> Result<Vec<StoredToken>, DbError> {
        self.store(0).await?.tokens().await
    }

    async fn insert_token(&self, token: &StoredToken) -> Result<bool, DbError> {
        self.store(0).await?.insert_token(token).await
    }

    async fn delete_token(&self, name: &str) -> Result<bool, DbError> {
        self.store(0).await?.delete_token(name).await
    }

    async fn audit(&self, window: AuditWindow<'_>) -> Result<Vec<Sealed>, DbError> {
        self.store(0).await?.audit(window).await
    }

    async fn append_audit(&self, entry: Entry) -> Result<Sealed, DbError> {
        self.store(0).await?.append_audit(entry).await
    }

    /// Releases on every shard that answers (and so, from the home shard,
    /// what it holds for a shard that does not).
    async fn release_quarantined(&self, tenants: &[String]) -> Result<Vec<String>, DbError> {
        let parts = self.answering(|_, store| async move { store.release_quarantined(tenants).await }).await?;
        let mut released: Vec<String> = parts.into_iter().flatten().flatten().collect();
        released.sort();
        released.dedup();
        Ok(released)
    }
}
