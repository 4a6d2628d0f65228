//! The decisions of a fleet on several database servers (`shards:`), sans
//! I/O: the shell lists every shard's tenants and quarantine, hands them
//! here as a [`View`], and carries out what comes back — which shard runs
//! what part of a request ([`parts`]), what the directory must change and
//! which quarantined tenants go back to their own shard before a version
//! ([`housekeeping`]), what a shard that did not answer leaves quarantined
//! ([`quarantine_unreachable`]), which quarantine rows the operator sees
//! ([`visible_quarantine`]), and which shards' version rows are one version
//! ([`one_identity`]).
//!
//! # Invariants (each held by a unit test, and together by a property test
//! over random sequences of shards going down and up, versions, waves,
//! retries and releases)
//!
//! - **Every tenant on exactly one shard**: a name two shards list, or one
//!   shard lists while the directory places it on a shard that does not
//!   answer, is refused before anything runs ([`FleetError::OnTwoShards`]).
//! - **No tenant is skipped unless the quarantine shows it**: a version
//!   skips a shard's quarantined tenants and cannot reach the tenants of a
//!   shard that does not answer; the first are in [`visible_quarantine`]
//!   whatever shard holds their row, the second are quarantined on the home
//!   shard ([`quarantine_unreachable`]) and handed back to their shard once
//!   it answers ([`housekeeping`]).
//! - **A request refused for one shard is refused for all**: a wave or a
//!   retry naming what is not there, a new tenant's name already taken or
//!   a shard that must answer and does not: [`parts`] returns the error
//!   before the shell starts any shard.
//! - **The directory never overrules a shard that answers**: it serves
//!   only for shards that do not.

use rustc_hash::{FxHashMap, FxHashSet};

use thiserror::Error;

use crate::migrate::quarantine::RetryError;
use crate::migrate::shard::{self, Directory, DirectoryChanges, Ids, ShardError};
use crate::migrate::wave::WaveError;

/// The cause of a tenant quarantined because its shard did not answer.
pub const SHARD_UNREACHABLE: &str = "SHARD_UNREACHABLE";

/// One quarantine row as the fleet's rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The tenant.
    pub tenant: String,
    /// Whether it was put aside because its shard did not answer
    /// ([`SHARD_UNREACHABLE`]).
    pub unreachable: bool,
}

/// One look at the fleet, as the shell read it.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The shards' names, in `shards:` order (the first is the home shard).
    pub names: Vec<String>,
    /// Each shard's tenants as it listed them; `None`: it did not answer.
    pub listed: Vec<Option<Vec<String>>>,
    /// The directory on the home shard; `None` when the home shard did not
    /// answer (empty when it holds nothing yet).
    pub directory: Option<Directory>,
    /// Each shard's quarantine rows; `None`: not read (it did not answer).
    pub held: Vec<Option<Vec<Held>>>,
}

/// Why the fleet refuses a request before any shard runs it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FleetError {
    /// Two shards hold the same tenant.
    #[error("tenant {tenant:?} is on shards {} and {}: a tenant must live on one shard; nothing was run", .shards[0], .shards[1])]
    OnTwoShards {
        /// The tenant.
        tenant: String,
        /// The two shards, by name.
        shards: [String; 2],
    },
    /// Shard `0` (its index) must answer for this request and did not
    /// (the shell reports the shard's own error).
    #[error("shard {0} did not answer")]
    MustAnswer(usize),
    /// The shard's tenants are unknown: it does not answer and the
    /// directory has never seen it.
    #[error("shard {0} did not answer and the directory knows none of its tenants")]
    Unknown(usize),
    /// A new tenant's name is taken.
    #[error("tenant {0:?} already exists")]
    TenantExists(String),
    /// A shard named by the caller is not configured.
    #[error(transparent)]
    Shard(#[from] ShardError),
    /// A retry names what is not quarantined, or nothing is.
    #[error(transparent)]
    Retry(#[from] RetryError),
    /// A wave names what is not a tenant.
    #[error(transparent)]
    Wave(#[from] WaveError),
}

/// What a request asks of the fleet, as far as the fleet's rules go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask<'a> {
    /// A version over every schema (a plain version, or a wave by share or
    /// attribute: each shard selects among its own tenants).
    Every,
    /// A wave of these tenants.
    Wave(&'a [String]),
    /// A retry of these quarantined tenants (empty: all of them).
    Retry(&'a [String]),
    /// A new tenant, on the shard named or the one with the fewest tenants.
    NewTenant {
        /// Its name.
        tenant: &'a str,
        /// The shard the caller named.
        shard: Option<&'a str>,
    },
}

/// What one shard runs of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Tenant steps only: every shard but the home shard, which holds the
    /// single schemas.
    pub tenants_only: bool,
    /// The tenants of a wave or of a named retry that live on this shard
    /// (`None`: the request's own selection).
    pub tenants: Option<Vec<String>>,
}

/// A shard as the tenant list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Its tenants, as it listed them or as the directory last saw them.
    pub tenants: Vec<String>,
    /// Whether it answered.
    pub reachable: bool,
}

/// Quarantine rows the home shard holds for another shard's tenants, to
/// move to that shard now that it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandOver {
    /// The shard (index) the tenants live on.
    pub shard: usize,
    /// Tenants whose row is written there (it holds none of its own).
    pub write: Vec<String>,
    /// Tenants whose row the home shard releases afterwards (written there
    /// first: a crash between the two leaves the row in both places, which
    /// [`visible_quarantine`] shows once, and the next version moves again).
    pub release: Vec<String>,
}

/// What a version that writes does before it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Housekeeping {
    /// The directory's changes (from the shards that answered).
    pub directory: DirectoryChanges,
    /// The quarantine rows to hand over.
    pub hand_overs: Vec<HandOver>,
}

impl View {
    /// Each shard's tenants as it listed them, else as the directory last
    /// saw them there (nothing when the home shard did not answer).
    pub fn last_seen(&self) -> Vec<Vec<String>> {
        self.names
            .iter()
            .zip(&self.listed)
            .map(|(name, listed)| match listed {
                Some(tenants) => tenants.clone(),
                None => self.directory.as_ref().map(|d| d.tenants_of(name)).unwrap_or_default(),
            })
            .collect()
    }

    /// The tenant list: every shard as it answered, a shard that did not
    /// with the tenants the directory last saw there (less any a shard
    /// that answered lists now). A shard that does not answer and that the
    /// directory knows nothing of is an error, as is a tenant on two
    /// shards.
    pub fn seen(&self) -> Result<Vec<Seen>, FleetError> {
        let answered: FxHashSet<&str> = self.listed.iter().flatten().flatten().map(String::as_str).collect();
        let mut shards = Vec::with_capacity(self.names.len());
        for (index, (name, listed)) in self.names.iter().zip(&self.listed).enumerate() {
            shards.push(match listed {
                Some(tenants) => Seen { tenants: tenants.clone(), reachable: true },
                None => {
                    let known = self.directory.as_ref().map(|d| d.tenants_of(name)).unwrap_or_default();
                    if known.is_empty() {
                        return Err(FleetError::Unknown(index));
                    }
                    let tenants = known.into_iter().filter(|t| !answered.contains(t.as_str())).collect();
                    Seen { tenants, reachable: false }
                }
            });
        }
        self.one_shard_each(shards.iter().map(|shard| &shard.tenants))?;
        Ok(shards)
    }

    /// A page of the fleet's tenants in byte order — `first` of them, those
    /// after `after` — each with its shard's index, where `listed` holds
    /// each answering shard's own page (its `first` tenants after `after`):
    /// the fleet's page is within their union. A shard that did not answer
    /// stands in with the tenants the directory last saw there (less those
    /// a page lists), as in [`View::seen`], whose errors it has: any
    /// tenant of the page that another shard also lists is on two shards.
    pub fn page(&self, after: Option<&str>, first: usize) -> Result<Vec<(String, usize)>, FleetError> {
        let mut page: Vec<(String, usize)> = self
            .seen()?
            .into_iter()
            .enumerate()
            .flat_map(|(index, seen)| seen.tenants.into_iter().map(move |tenant| (tenant, index)))
            .filter(|(tenant, _)| after.is_none_or(|after| tenant.as_str() > after))
            .collect();
        page.sort_unstable();
        page.truncate(first);
        Ok(page)
    }

    /// Refuses a tenant on two shards.
    pub fn one_shard_each<'a>(&self, tenants: impl Iterator<Item = &'a Vec<String>>) -> Result<(), FleetError> {
        let mut first: FxHashMap<&str, usize> = FxHashMap::default();
        for (index, names) in tenants.enumerate() {
            for name in names {
                if let Some(before) = first.insert(name, index) {
                    return Err(FleetError::OnTwoShards {
                        tenant: name.clone(),
                        shards: [self.names[before].clone(), self.names[index].clone()],
                    });
                }
            }
        }
        Ok(())
    }

    /// Where each tenant lives, by [`View::last_seen`].
    pub fn placement(&self) -> Result<Placement, FleetError> {
        let tenants = self.last_seen();
        self.one_shard_each(tenants.iter())?;
        Ok(Placement::new(tenants))
    }

    /// The shards that answered, with their tenants.
    fn answered(&self) -> impl Iterator<Item = (usize, &Vec<String>)> {
        self.listed.iter().enumerate().filter_map(|(index, listed)| listed.as_ref().map(|t| (index, t)))
    }
}

/// Where each tenant lives: `tenants[i]` on shard `i`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The tenants of each shard.
    pub tenants: Vec<Vec<String>>,
    /// Each tenant's shard (the first that lists it): found at once, not by
    /// reading the fleet's lists for every tenant asked about (a sharded
    /// fleet's fingerprints ask once per unit).
    shard: FxHashMap<String, usize>,
}

impl Placement {
    /// The placement of `tenants[i]` on shard `i`.
    pub fn new(tenants: Vec<Vec<String>>) -> Placement {
        let mut shard = FxHashMap::default();
        for (index, names) in tenants.iter().enumerate() {
            for name in names {
                shard.entry(name.clone()).or_insert(index);
            }
        }
        Placement { tenants, shard }
    }

    /// The shard holding `tenant`.
    pub fn shard_of(&self, tenant: &str) -> Option<usize> {
        self.shard.get(tenant).copied()
    }

    /// `names` split by shard; the first name on no shard is the error.
    pub fn split(&self, names: &[String]) -> Result<Vec<Vec<String>>, String> {
        let mut parts = vec![Vec::new(); self.tenants.len()];
        for name in names {
            let shard = self.shard_of(name).ok_or_else(|| name.clone())?;
            parts[shard].push(name.clone());
        }
        Ok(parts)
    }
}

/// What each shard runs of `ask` (`None`: nothing there), or why nothing
/// runs anywhere.
///
/// - A plain version runs everywhere; the shards other than the home shard
///   run tenant steps only.
/// - A wave runs, on each shard, the tenants it names there; the home shard
///   runs its single schemas in every wave. A name no shard holds, or one
///   that is quarantined (on its shard, or on the home shard while its
///   shard did not answer), refuses the wave.
/// - A retry runs where the named (or all) quarantined tenants live; a
///   tenant quarantined on the home shard for its shard is retried on its
///   shard. A name not quarantined refuses it.
/// - A new tenant needs every shard's answer (a name is never created
///   twice); it goes to the shard named, else to the one with the fewest.
pub fn parts(view: &View, ask: Ask<'_>) -> Result<Vec<Option<Part>>, FleetError> {
    let shards = view.names.len();
    let part = |index: usize, tenants: Option<Vec<String>>| Part { tenants_only: index > 0, tenants };
    match ask {
        Ask::Every => Ok((0..shards).map(|index| Some(part(index, None))).collect()),
        Ask::NewTenant { tenant, shard } => {
            let placed = place_new_tenants(view, &[tenant.to_string()], shard)?;
            Ok(placed.iter().enumerate().map(|(index, new)| (!new.is_empty()).then(|| part(index, None))).collect())
        }
        Ask::Wave(named) => {
            let placement = view.placement()?;
            let split = placement.split(named).map_err(|name| FleetError::Wave(WaveError::NotATenant(name)))?;
            let held = quarantined_names(view);
            if let Some(name) = named.iter().find(|name| held.contains(name.as_str())) {
                return Err(FleetError::Retry(RetryError::Quarantined(name.clone())));
            }
            Ok(split
                .into_iter()
                .enumerate()
                .map(|(index, names)| (index == 0 || !names.is_empty()).then(|| part(index, Some(names))))
                .collect())
        }
        Ask::Retry(named) => {
            let placement = view.placement()?;
            let held = quarantined_names(view);
            if let Some(name) = named.iter().find(|name| !held.contains(name.as_str())) {
                return Err(FleetError::Retry(RetryError::NotQuarantined(name.clone())));
            }
            let wanted: Vec<String> = match named.is_empty() {
                // A tenant no shard lists (gone from the list) is retried nowhere.
                true => held.iter().filter(|name| placement.shard_of(name).is_some()).map(|n| n.to_string()).collect(),
                false => named.to_vec(),
            };
            if wanted.is_empty() {
                return Err(FleetError::Retry(RetryError::NothingQuarantined));
            }
            let split = placement.split(&wanted).map_err(|name| FleetError::Retry(RetryError::NotQuarantined(name)))?;
            Ok(split
                .into_iter()
                .enumerate()
                .map(|(index, names)| {
                    // All of a shard's quarantined tenants, or those named.
                    let tenants = (!named.is_empty()).then_some(names.clone());
                    (!names.is_empty()).then(|| part(index, tenants))
                })
                .collect())
        }
    }
}

/// Where new tenants go (`createTenant`, `createTenants`): `result[i]`
/// are the names shard `i` creates. Every shard must answer (a name is
/// never created twice), no name may exist already; each goes to the
/// shard named, else to the one with the fewest tenants, counting those
/// placed before it — so a list spreads evenly.
pub fn place_new_tenants(view: &View, names: &[String], shard: Option<&str>) -> Result<Vec<Vec<String>>, FleetError> {
    let mut tenants = Vec::with_capacity(view.names.len());
    for (index, listed) in view.listed.iter().enumerate() {
        tenants.push(listed.as_ref().ok_or(FleetError::MustAnswer(index))?);
    }
    view.one_shard_each(tenants.iter().copied())?;
    // Letter case aside, as a shard's engine may compare schema names.
    let existing: FxHashSet<String> =
        tenants.iter().flat_map(|names| names.iter().map(|name| name.to_ascii_lowercase())).collect();
    if let Some(taken) = names.iter().find(|name| existing.contains(&name.to_ascii_lowercase())) {
        return Err(FleetError::TenantExists(taken.clone()));
    }
    let shard_names: Vec<&str> = view.names.iter().map(String::as_str).collect();
    let mut counts: Vec<Option<usize>> = tenants.iter().map(|names| Some(names.len())).collect();
    let mut placed = vec![Vec::new(); tenants.len()];
    for name in names {
        let chosen = shard::place(&shard_names, &counts, shard)?;
        placed[chosen].push(name.clone());
        if let Some(count) = counts[chosen].as_mut() {
            *count += 1;
        }
    }
    Ok(placed)
}

/// The names of every quarantined tenant the view holds, on any shard.
fn quarantined_names(view: &View) -> FxHashSet<&str> {
    view.held.iter().flatten().flatten().map(|row| row.tenant.as_str()).collect()
}

/// What a version that writes does first: the directory brought up to
/// date from the shards that answered, and the rows the home shard holds
/// for the tenants of a shard that answers again handed over to it (a row
/// that shard holds itself for the tenant wins). Nothing when the home
/// shard did not answer.
pub fn housekeeping(view: &View) -> Housekeeping {
    let Some(directory) = &view.directory else { return Housekeeping::default() };
    let answered: Vec<(&str, &[String])> =
        view.answered().map(|(index, tenants)| (view.names[index].as_str(), tenants.as_slice())).collect();
    let mut work = Housekeeping { directory: directory.changes(&answered), hand_overs: Vec::new() };
    let (Some(Some(home_tenants)), Some(Some(home_held))) = (view.listed.first(), view.held.first()) else {
        return work;
    };
    let home_tenants: FxHashSet<&str> = home_tenants.iter().map(String::as_str).collect();
    let foreign: Vec<&str> =
        home_held.iter().map(|row| row.tenant.as_str()).filter(|tenant| !home_tenants.contains(tenant)).collect();
    for (index, tenants) in view.answered().skip_while(|(index, _)| *index == 0) {
        let Some(Some(own)) = view.held.get(index) else { continue };
        let tenants: FxHashSet<&str> = tenants.iter().map(String::as_str).collect();
        let moving: Vec<String> =
            foreign.iter().filter(|tenant| tenants.contains(*tenant)).map(|tenant| tenant.to_string()).collect();
        if moving.is_empty() {
            continue;
        }
        let own: FxHashSet<&str> = own.iter().map(|row| row.tenant.as_str()).collect();
        let write = moving.iter().filter(|tenant| !own.contains(tenant.as_str())).cloned().collect();
        work.hand_overs.push(HandOver { shard: index, write, release: moving });
    }
    work
}

/// The tenants to quarantine on the home shard because shard `index` did
/// not answer during a version that writes: its tenants as last seen.
/// None for the home shard itself (it cannot hold its own), nor while the
/// home shard did not answer.
pub fn quarantine_unreachable(view: &View, index: usize) -> Vec<String> {
    if index == 0 || view.directory.is_none() {
        return Vec::new();
    }
    view.last_seen().swap_remove(index)
}

/// Which rows of the shards' quarantines the operator sees, as
/// `(shard, row)` positions in `held`, by tenant: every row of every shard
/// that answered, except a home-shard row of a tenant put aside for its
/// unreachable shard when that shard holds the tenant's row itself (a
/// hand-over not finished) — each tenant once.
pub fn visible_quarantine(held: &[Option<Vec<Held>>]) -> Vec<(usize, usize)> {
    let own: FxHashSet<&str> =
        held.iter().skip(1).flatten().flatten().map(|row| row.tenant.as_str()).collect::<FxHashSet<_>>();
    let mut shown: Vec<(usize, usize)> = Vec::new();
    for (shard, rows) in held.iter().enumerate() {
        for (position, row) in rows.iter().flatten().enumerate() {
            if shard == 0 && row.unreachable && own.contains(row.tenant.as_str()) {
                continue;
            }
            shown.push((shard, position));
        }
    }
    let tenant = |&(shard, position): &(usize, usize)| held[shard].as_ref().map(|rows| rows[position].tenant.as_str());
    shown.sort_by(|a, b| tenant(a).cmp(&tenant(b)));
    shown
}

/// A shard's version row, as [`one_identity`] groups them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionPart<'a> {
    /// The shard (index).
    pub shard: usize,
    /// The row's id on that shard.
    pub local: i64,
    /// Its name.
    pub name: &'a str,
    /// When it was created (one time for every shard's part of a request).
    pub created: &'a str,
    /// The request that created it.
    pub request_id: &'a str,
}

/// One version of the fleet: its parts on each shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetVersion {
    /// The id it is served under: its first part's served id (the lowest
    /// shard that holds a part).
    pub id: i64,
    /// Each part as `(shard, served id)`, in shard order.
    pub parts: Vec<(usize, i64)>,
}

/// The shards' version rows as versions of the fleet: the parts one request
/// created (same request, name and creation time) are one version, served
/// under the id of its part on the lowest shard; in the order of `parts`'
/// first appearance.
pub fn one_identity(ids: Ids, parts: &[VersionPart<'_>]) -> Vec<FleetVersion> {
    let mut versions: Vec<FleetVersion> = Vec::new();
    let mut index_of: FxHashMap<(&str, &str, &str), usize> = FxHashMap::default();
    for part in parts {
        let served = ids.served(part.local, part.shard);
        let key = (part.request_id, part.name, part.created);
        match index_of.get(&key) {
            Some(&at) => versions[at].parts.push((part.shard, served)),
            None => {
                index_of.insert(key, versions.len());
                versions.push(FleetVersion { id: served, parts: vec![(part.shard, served)] });
            }
        }
    }
    for version in &mut versions {
        version.parts.sort();
        version.parts.dedup_by_key(|(shard, _)| *shard);
        version.id = version.parts[0].1;
    }
    versions
}

#[cfg(test)]
mod tests;
