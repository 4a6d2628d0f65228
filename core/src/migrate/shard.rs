//! A fleet on several database servers of one driver: the `shards:` list,
//! where a new tenant goes, how the ids of each shard's versions and
//! migrations are told apart, and one plan made of each shard's.
//!
//! # The model
//!
//! - Every shard keeps its own `svc` schema: the versions, migrations,
//!   quarantine, lock and fingerprints of the schemas it holds. A unit's
//!   bookkeeping rows commit in the same transaction as its migrations on
//!   the same server, so recorded = applied per schema holds on every
//!   shard, and a shard that is down stops nothing elsewhere.
//! - The single schemas live on the first shard (the home shard); the
//!   other shards run tenant migrations and scripts only.
//! - A version over the fleet is one version per shard, under the same
//!   name, run at once; each shard takes its own lock. No lock spans the
//!   shards: a schema lives on one shard, so its migrations are ordered by
//!   that shard's lock alone.
//! - Ids: a shard's own id `local` is served as `local * base + index`
//!   (`index` the shard's position in `shards:`, from 0; `base` 10 for up
//!   to 10 shards, else 100): with 3 shards, version 122 is version 12 of
//!   the third shard. The API's `Int` is 32-bit: the smaller base keeps ids
//!   in range longer.
//!   Shards are appended to the list, never reordered.
//! - The directory: where each tenant was last seen, kept on the home
//!   shard and brought up to date by every version from the shards that
//!   answered ([`Directory::changes`]). It names the tenants of a shard
//!   that does not answer — in the error of a version that could not run
//!   there, and in the tenant list while it is down; a shard's own
//!   `tenantSelectSQL` stays the truth whenever it answers.

use rustc_hash::{FxHashMap, FxHashSet};

use thiserror::Error;

use crate::migrate::plan::{Plan, retained};
use crate::migrate::source::SourceMigration;
use crate::migrate::summary::Counts;

/// At most this many shards (ids of a shard's rows are multiplied by 10
/// or by this, and offset by the shard's position).
pub const ID_BASE: i64 = 100;

/// One database server of the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// Its name: letters, digits, `_` and `-`.
    pub name: String,
    /// Its connection string.
    pub data_source: String,
}

/// Why a shard list or a shard named in a request is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShardError {
    /// A name is empty or holds other characters than letters, digits,
    /// `_` and `-`.
    #[error("shard name {0:?} must be 1-63 letters, digits, '_' or '-'")]
    BadName(String),
    /// Two shards share a name.
    #[error("shard {0:?} is listed twice")]
    Duplicate(String),
    /// More shards than ids can tell apart.
    #[error("at most {ID_BASE} shards")]
    TooMany,
    /// A request names a shard that is not configured.
    #[error("no shard is named {0:?}")]
    Unknown(String),
    /// A request names a shard, and the fleet is on one database server.
    #[error("no shard is named {0:?}: the configuration has no shards (one database server, dataSource)")]
    NotSharded(String),
}

/// Checks the shard a request names (`--shard`, `TenantInput.shard`)
/// against the configured ones, before anything runs: a shard named on a
/// fleet without `shards:` is refused rather than ignored, and so is a name
/// that is not configured.
pub fn check_requested(configured: &[Shard], requested: Option<&str>) -> Result<(), ShardError> {
    match requested {
        None => Ok(()),
        Some(name) if configured.is_empty() => Err(ShardError::NotSharded(name.to_string())),
        Some(name) if configured.iter().any(|shard| shard.name == name) => Ok(()),
        Some(name) => Err(ShardError::Unknown(name.to_string())),
    }
}

/// Checks the names of a shard list.
pub fn check_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), ShardError> {
    let mut seen = FxHashSet::default();
    for name in names {
        let good = !name.is_empty()
            && name.len() <= 63
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !good {
            return Err(ShardError::BadName(name.to_string()));
        }
        if !seen.insert(name) {
            return Err(ShardError::Duplicate(name.to_string()));
        }
    }
    if seen.len() > ID_BASE as usize {
        return Err(ShardError::TooMany);
    }
    Ok(())
}

/// The shard a new tenant goes to: the one `requested`, else the one
/// holding the fewest tenants (`tenants[i]` on shard `i`; the first of
/// equals). Shards whose count is unknown (`None`: unreachable) are never
/// chosen by count.
pub fn place(names: &[&str], tenants: &[Option<usize>], requested: Option<&str>) -> Result<usize, ShardError> {
    if let Some(requested) = requested {
        return names.iter().position(|name| *name == requested).ok_or_else(|| ShardError::Unknown(requested.into()));
    }
    tenants
        .iter()
        .enumerate()
        .filter_map(|(index, count)| count.map(|count| (count, index)))
        .min()
        .map(|(_, index)| index)
        .ok_or_else(|| ShardError::Unknown(String::new()))
}

/// How the ids of the shards' rows are served: `local * base + index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    base: i64,
}

impl Ids {
    /// For a fleet of `shards` shards: base 10 up to 10 shards, else 100.
    pub fn for_shards(shards: usize) -> Ids {
        Ids { base: if shards <= 10 { 10 } else { ID_BASE } }
    }

    /// The id served for row `local` of shard `index`.
    pub fn served(self, local: i64, index: usize) -> i64 {
        local * self.base + index as i64
    }

    /// The shard and its own id behind a served id (`None`: not an id any
    /// shard serves).
    pub fn local(self, served: i64) -> Option<(usize, i64)> {
        (served >= self.base).then(|| ((served % self.base) as usize, served / self.base))
    }
}

/// A plan without its single-schema steps: what a shard other than the
/// home shard runs.
pub fn tenants_only(plan: Plan, sources: &[SourceMigration]) -> Plan {
    retained(plan, sources, |step| sources[step.migration as usize].migration_type.is_tenant())
}

/// The shards' plans as one (for reports): schemas and steps one shard
/// after another, counts by the planner's rule over every step (tenants
/// summed), diagnostics joined.
pub fn merge(plans: Vec<Plan>, sources: &[SourceMigration]) -> Plan {
    let mut merged = Plan::default();
    let mut tenants = 0;
    for plan in plans {
        let offset = merged.schemas.len() as u32;
        tenants += plan.counts.tenants;
        merged.schemas.extend(plan.schemas);
        merged.steps.extend(plan.steps.iter().map(|mut step| {
            step.schema += offset;
            step
        }));
        merged.diagnostics.drift.extend(plan.diagnostics.drift);
        merged.diagnostics.out_of_order.extend(plan.diagnostics.out_of_order);
        for item in plan.diagnostics.missing {
            match merged.diagnostics.missing.iter_mut().find(|m| m.file == item.file) {
                Some(known) => {
                    known.schemas.extend(item.schemas);
                    known.schemas.sort();
                    known.schemas.dedup();
                }
                None => merged.diagnostics.missing.push(item),
            }
        }
        let adopted = &mut merged.diagnostics.adopted;
        for (history, schemas) in plan.diagnostics.adopted.read {
            match adopted.read.iter_mut().find(|(known, _)| *known == history) {
                Some((_, known)) => known.extend(schemas),
                None => adopted.read.push((history, schemas)),
            }
        }
        adopted.without.extend(plan.diagnostics.adopted.without);
        merged.new_tenant = merged.new_tenant.or(plan.new_tenant);
        merged.direction = plan.direction;
    }
    merged.diagnostics.adopted.read.iter_mut().for_each(|(_, schemas)| schemas.sort());
    merged.diagnostics.adopted.without.sort();
    merged.counts = merged.counts_of(sources, 0..merged.steps.len() as u32);
    merged.counts.tenants = tenants;
    merged
}

/// What several shards' parts of one version count together: tenants,
/// single-schema files and per-tenant totals add up; a tenant file counts
/// once however many shards ran it (the most any part counted).
pub fn add_counts(total: Counts, part: &Counts) -> Counts {
    Counts {
        tenants: total.tenants + part.tenants,
        single_migrations: total.single_migrations + part.single_migrations,
        tenant_migrations: total.tenant_migrations.max(part.tenant_migrations),
        tenant_migrations_total: total.tenant_migrations_total + part.tenant_migrations_total,
        single_scripts: total.single_scripts + part.single_scripts,
        tenant_scripts: total.tenant_scripts.max(part.tenant_scripts),
        tenant_scripts_total: total.tenant_scripts_total + part.tenant_scripts_total,
    }
}

/// Where each tenant was last seen: `(tenant, shard)` rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directory {
    /// The rows, as stored.
    pub rows: Vec<(String, String)>,
}

/// What to write to the directory after reading the shards.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryChanges {
    /// Tenants seen on a shard the directory does not say: `(tenant, shard)`.
    pub put: Vec<(String, String)>,
    /// Tenants no longer on the shard the directory says, which answered,
    /// nor on any other that did.
    pub drop: Vec<String>,
}

impl DirectoryChanges {
    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.put.is_empty() && self.drop.is_empty()
    }
}

impl Directory {
    /// The tenants last seen on `shard`, by name.
    pub fn tenants_of(&self, shard: &str) -> Vec<String> {
        let mut names: Vec<String> =
            self.rows.iter().filter(|(_, on)| on == shard).map(|(tenant, _)| tenant.clone()).collect();
        names.sort();
        names
    }

    /// What the directory must change to agree with the shards that
    /// answered: `listed` holds each of them with its tenants. What it says
    /// of a shard that did not answer stays.
    pub fn changes(&self, listed: &[(&str, &[String])]) -> DirectoryChanges {
        let answered: FxHashSet<&str> = listed.iter().map(|(shard, _)| *shard).collect();
        let known: FxHashMap<&str, &str> =
            self.rows.iter().map(|(tenant, shard)| (tenant.as_str(), shard.as_str())).collect();
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        let mut changes = DirectoryChanges::default();
        for (shard, tenants) in listed {
            for tenant in tenants.iter() {
                seen.insert(tenant);
                if known.get(tenant.as_str()) != Some(shard) {
                    changes.put.push((tenant.clone(), shard.to_string()));
                }
            }
        }
        for (tenant, shard) in &self.rows {
            if answered.contains(shard.as_str()) && !seen.contains(tenant.as_str()) {
                changes.drop.push(tenant.clone());
            }
        }
        changes
    }
}

#[cfg(test)]
mod tests;
