//! Down migrations: which recorded migrations a revert undoes, where, and in
//! what order — a [`Plan`] of [`Direction::Revert`] the shell executes like
//! any other (per schema in one transaction, the down part run and the
//! record removed together).
//!
//! Rules:
//! - Per schema, the migrations recorded there, in the order they were
//!   recorded (a file applied out of order is recorded after files that
//!   sort after it): `--steps N` undoes the last `N` recorded, `--to FILE`
//!   every one that sorts after `FILE` (kept).
//! - Each schema undoes its steps in the reverse of the order it recorded
//!   them, so a file is undone before anything it was applied on top of.
//! - Across schemas the plan keeps the reverse of source order,
//!   migration-major (every schema undoes a migration before any undoes the
//!   one before it; single schemas and tenants in segments as a forward
//!   plan has them); a schema whose own order differs takes its slots in
//!   that skeleton in its own order. A tenant segment's unit is one
//!   tenant's steps, newest recorded first.
//! - Scripts are never reverted. A recorded file gone from the source, or
//!   one without a down part, is refused with every such file listed,
//!   before anything runs.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use thiserror::Error;

use crate::migrate::ident::{IdentError, validate_tenant_name};
use crate::migrate::plan::{AppliedMigration, Direction, Plan, Step};
use crate::migrate::source::SourceMigration;
use crate::migrate::summary::Counts;

/// How far a revert goes back, in each schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extent {
    /// The last `n` migrations applied in each schema.
    Steps(u32),
    /// Every migration applied after this file (`directory/name`), which
    /// stays.
    To(String),
}

/// What a revert looks at.
#[derive(Debug, Clone, Copy)]
pub struct RevertInput<'a> {
    /// Source migrations in application order.
    pub sources: &'a [SourceMigration],
    /// Rows recorded, in the order they were recorded (the books' ids).
    pub applied: &'a [AppliedMigration],
    /// The tenants it covers.
    pub tenants: &'a [String],
    /// Whether the single schemas are covered too (not when the revert
    /// names tenants or a wave).
    pub single_schemas: bool,
    /// How far back.
    pub extent: &'a Extent,
}

/// Why a revert cannot be planned (nothing runs).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RevertError {
    /// `--steps 0`.
    #[error("a revert needs at least one step")]
    NoSteps,
    /// `--to` names no migration of the source.
    #[error("{0} is not a migration of the source (files are named directory/name)")]
    UnknownFile(String),
    /// Migrations to undo without a down part.
    #[error(
        "{} migration(s) to revert have no down part: {} — add one (a `-- migrate:down` section, a .down.sql or U \
         file, a `-- +goose Down` section), or revert fewer steps",
        .0.len(), files(.0)
    )]
    NoDownPart(Vec<String>),
    /// Migrations to undo whose down part is empty (blank lines only):
    /// undoing them would remove their records and undo nothing.
    #[error(
        "{} migration(s) to revert have an empty down part: {} — write what undoes them (a comment alone, such as \
         `-- nothing to undo`, says an empty undo is meant), or revert fewer steps",
        .0.len(), files(.0)
    )]
    EmptyDownPart(Vec<String>),
    /// Migrations to undo whose file changed since it was applied: their
    /// down part may not undo what ran.
    #[error(
        "{} migration(s) to revert changed since they were applied: {} — their down part may not undo what ran; \
         restore the file(s), or record the change with `strata repair` first",
        .0.len(), files(.0)
    )]
    Changed(Vec<String>),
    /// Recorded migrations whose file is gone.
    #[error(
        "{} migration(s) to revert are no longer in the source: {} — restore the file(s), or remove their records \
         with `strata repair`",
        .0.len(), files(.0)
    )]
    Missing(Vec<String>),
    /// The tenant list holds a name that is no identifier.
    #[error("tenant list holds an invalid name: {0}")]
    InvalidTenant(IdentError),
    /// More steps than a plan can index.
    #[error("plan too large")]
    TooLarge,
}

fn files(list: &[String]) -> String {
    let mut shown: Vec<&str> = list.iter().take(10).map(String::as_str).collect();
    let more = list.len().saturating_sub(10);
    let tail = format!("and {more} more");
    if more > 0 {
        shown.push(&tail);
    }
    shown.join(", ")
}

/// Plans a revert. See the module documentation for the rules.
pub fn plan_revert(input: RevertInput<'_>) -> Result<Plan, RevertError> {
    if input.extent == &Extent::Steps(0) {
        return Err(RevertError::NoSteps);
    }
    let by_file = revertible_files(input.sources);
    let reach = Reach::of(input.extent, &by_file)?;
    let covered = covered_schemas(&input)?;
    let recorded = Recorded::of(input.applied, &by_file, &covered);
    let mut chosen = recorded.choose(reach)?;
    refuse_missing_down_parts(input.sources, &chosen)?;
    refuse_changed_files(&input, &chosen)?;
    sort_newest_first(&mut chosen, &input);
    plan_of(chosen, input.sources, &covered)
}

/// The source index of every migration file (`directory/name`); scripts
/// are left out, as they are never reverted.
fn revertible_files(sources: &[SourceMigration]) -> FxHashMap<&str, usize> {
    sources
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.migration_type.is_script())
        .map(|(i, m)| (m.file.as_str(), i))
        .collect()
}

/// How far back each schema goes, in source indexes.
#[derive(Debug, Clone, Copy)]
enum Reach {
    /// The last this many recorded.
    Last(usize),
    /// Those recorded after this source index.
    After(usize),
}

impl Reach {
    /// The reach of `extent`: `--to` must name a migration of `by_file`.
    fn of(extent: &Extent, by_file: &FxHashMap<&str, usize>) -> Result<Reach, RevertError> {
        match extent {
            Extent::Steps(n) => Ok(Reach::Last(*n as usize)),
            Extent::To(file) => by_file
                .get(file.as_str())
                .map(|&i| Reach::After(i))
                .ok_or_else(|| RevertError::UnknownFile(file.clone())),
        }
    }
}

/// The schemas the revert covers, each marked true when it is a tenant: the
/// tenants (every name checked), and the single schemas of the source when
/// they are covered too.
fn covered_schemas<'a>(input: &RevertInput<'a>) -> Result<FxHashMap<&'a str, bool>, RevertError> {
    for tenant in input.tenants {
        validate_tenant_name(tenant).map_err(RevertError::InvalidTenant)?;
    }
    let mut covered: FxHashMap<&str, bool> = input.tenants.iter().map(|t| (t.as_str(), true)).collect();
    if input.single_schemas {
        for schema in input.sources.iter().filter_map(SourceMigration::single_schema) {
            covered.entry(schema).or_insert(false);
        }
    }
    Ok(covered)
}

/// What the covered schemas have recorded, scripts aside.
struct Recorded<'a> {
    /// Per schema: the source indexes of its recorded migrations, in the
    /// order they were recorded (a file recorded twice at its last place).
    sources: BTreeMap<&'a str, Vec<usize>>,
    /// Per schema: its recorded files that are gone from the source.
    gone: BTreeMap<&'a str, BTreeSet<&'a str>>,
}

impl<'a> Recorded<'a> {
    /// Sorts the rows of `applied` in a `covered` schema into files of the
    /// source (`by_file`) and files gone.
    fn of(
        applied: &'a [AppliedMigration],
        by_file: &FxHashMap<&str, usize>,
        covered: &FxHashMap<&str, bool>,
    ) -> Recorded<'a> {
        let mut recorded = Recorded { sources: BTreeMap::new(), gone: BTreeMap::new() };
        for row in applied.iter().filter(|row| !row.migration_type.is_script()) {
            if !covered.contains_key(row.schema.as_str()) {
                continue;
            }
            match by_file.get(row.file.as_str()) {
                Some(&source) => recorded.sources.entry(row.schema.as_str()).or_default().push(source),
                None => {
                    recorded.gone.entry(row.schema.as_str()).or_default().insert(row.file.as_str());
                }
            }
        }
        for order in recorded.sources.values_mut() {
            let mut seen = BTreeSet::new();
            let mut last_first: Vec<usize> = order.iter().rev().copied().filter(|&s| seen.insert(s)).collect();
            last_first.reverse();
            *order = last_first;
        }
        recorded
    }

    /// What each schema undoes within `reach`, as (source index, schema)
    /// pairs, each schema's newest recorded first, not yet in plan order;
    /// refused, listing every such file, when any schema holds a file gone
    /// from the source.
    fn choose(&self, reach: Reach) -> Result<Vec<(usize, &'a str)>, RevertError> {
        let mut chosen: Vec<(usize, &str)> = Vec::new();
        let mut missing: BTreeSet<&str> = BTreeSet::new();
        let schemas: BTreeSet<&str> = self.sources.keys().chain(self.gone.keys()).copied().collect();
        for schema in schemas {
            // A file gone from the source has no place in the order: a schema
            // holding one cannot say what its last steps are.
            if let Some(files) = self.gone.get(schema) {
                missing.extend(files.iter().copied());
                continue;
            }
            let Some(sources) = self.sources.get(schema) else { continue };
            match reach {
                Reach::After(keep) => chosen.extend(sources.iter().rev().filter(|&&s| s > keep).map(|&s| (s, schema))),
                Reach::Last(n) => chosen.extend(sources.iter().rev().take(n).map(|&s| (s, schema))),
            }
        }
        if !missing.is_empty() {
            return Err(RevertError::Missing(missing.into_iter().map(str::to_string).collect()));
        }
        Ok(chosen)
    }
}

/// Refuses, listing every such file, when a `chosen` migration has no down
/// part.
fn refuse_missing_down_parts(sources: &[SourceMigration], chosen: &[(usize, &str)]) -> Result<(), RevertError> {
    let no_down: BTreeSet<&str> =
        chosen.iter().filter(|(s, _)| sources[*s].down.is_none()).map(|(s, _)| sources[*s].file.as_str()).collect();
    if !no_down.is_empty() {
        return Err(RevertError::NoDownPart(no_down.into_iter().map(str::to_string).collect()));
    }
    let empty: BTreeSet<&str> = chosen
        .iter()
        .filter(|(s, _)| sources[*s].down.as_ref().is_some_and(|down| down.text.trim().is_empty()))
        .map(|(s, _)| sources[*s].file.as_str())
        .collect();
    if !empty.is_empty() {
        return Err(RevertError::EmptyDownPart(empty.into_iter().map(str::to_string).collect()));
    }
    Ok(())
}

/// Refuses, listing them, the files to undo whose checksum in any of its
/// schemas differs from the one recorded there (as `apply` refuses to run
/// past them).
fn refuse_changed_files(input: &RevertInput<'_>, chosen: &[(usize, &str)]) -> Result<(), RevertError> {
    let recorded: FxHashMap<(&str, &str), &str> =
        input.applied.iter().map(|row| ((row.file.as_str(), row.schema.as_str()), row.checksum.as_str())).collect();
    let changed: BTreeSet<&str> = chosen
        .iter()
        .filter(|(s, schema)| {
            let source = &input.sources[*s];
            recorded.get(&(source.file.as_str(), *schema)).is_some_and(|checksum| *checksum != source.checksum)
        })
        .map(|(s, _)| input.sources[*s].file.as_str())
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    Err(RevertError::Changed(changed.into_iter().map(str::to_string).collect()))
}

/// Sorts `chosen` (each schema's steps newest recorded first) into plan
/// order: the skeleton is the reverse of source order, migration-major,
/// schemas in tenant-list order with the single schemas first; then each
/// schema's slots in it take that schema's steps in the order recorded,
/// newest first (the same files, a different order only where a file was
/// applied out of order).
fn sort_newest_first(chosen: &mut [(usize, &str)], input: &RevertInput<'_>) {
    let mut undo_order: FxHashMap<&str, std::collections::VecDeque<usize>> = FxHashMap::default();
    for &(source, schema) in chosen.iter() {
        undo_order.entry(schema).or_default().push_back(source);
    }
    let mut order: FxHashMap<&str, usize> = FxHashMap::default();
    let schemas_in_order =
        input.sources.iter().filter_map(SourceMigration::single_schema).chain(input.tenants.iter().map(String::as_str));
    for schema in schemas_in_order {
        let next = order.len();
        order.entry(schema).or_insert(next);
    }
    chosen.sort_by(|(a, a_schema), (b, b_schema)| b.cmp(a).then_with(|| order[a_schema].cmp(&order[b_schema])));
    for (source, schema) in chosen.iter_mut() {
        if let Some(next) = undo_order.get_mut(*schema).and_then(std::collections::VecDeque::pop_front) {
            *source = next;
        }
    }
}

/// The revert plan of the sorted `chosen` steps: its schemas in first-use
/// order, its steps, and its counts (the tenants among its schemas per
/// `covered`, and every migration of `sources` it undoes).
fn plan_of(
    chosen: Vec<(usize, &str)>,
    sources: &[SourceMigration],
    covered: &FxHashMap<&str, bool>,
) -> Result<Plan, RevertError> {
    let mut plan = Plan { direction: Direction::Revert, ..Plan::default() };
    let mut schema_index: FxHashMap<&str, u32> = FxHashMap::default();
    let mut per_migration: BTreeMap<usize, u64> = BTreeMap::new();
    for (source, schema) in chosen {
        let next = u32::try_from(plan.schemas.len()).map_err(|_| RevertError::TooLarge)?;
        let index = *schema_index.entry(schema).or_insert_with(|| {
            plan.schemas.push(schema.to_string());
            next
        });
        let migration = u32::try_from(source).map_err(|_| RevertError::TooLarge)?;
        plan.steps.push(Step { migration, schema: index, execute: true });
        *per_migration.entry(source).or_default() += 1;
    }
    let mut counts = Counts {
        tenants: plan.schemas.iter().filter(|s| covered.get(s.as_str()) == Some(&true)).count() as u64,
        ..Counts::default()
    };
    for (source, schemas) in per_migration {
        counts.add_file(sources[source].migration_type, schemas);
    }
    plan.counts = counts;
    Ok(plan)
}

#[cfg(test)]
mod tests;
