//! The planner: a pure function from what is in the source, what the
//! database has recorded, the tenants and the request, to the ordered list
//! of steps the shell executes, plus the diagnostics it reports.
//!
//! Apply, Sync, dry runs, `createVersion` and `createTenant` all go through
//! [`plan`]; the shells never decide which migration runs where.
//!
//! Rules:
//! - A migration is pending for a schema when no row for the same `file` and
//!   schema is recorded. Scripts are pending on every run; a repeatable
//!   script (Flyway's `R__`) when its text is not the one its latest row in
//!   the schema recorded (rows of a file in a schema arrive oldest first).
//! - Single kinds run in the schema named by their directory, tenant kinds in
//!   every targeted tenant, migration-major: all tenants get migration 1
//!   before any gets migration 2.
//! - **Drift**: a recorded migration (not a script) whose source checksum
//!   changed. Apply refuses to plan while there is drift and lists every
//!   drifted file; Sync plans, and never re-records a drifted file (it is
//!   recorded already).
//! - **Out of order**: a pending migration that sorts (in source order)
//!   before one already recorded in the same schema. The `outOfOrder`
//!   policy decides: `allow` plans it silently, `warn` (the default, as the
//!   peer does) plans it and reports it, `refuse` makes Apply refuse.
//! - **Missing**: a recorded migration whose file is no longer in the
//!   source. Reported, never planned; `strata repair` removes its records.
//! - **Sync** records pending migrations without running them (migrator's
//!   meaning: adopting a database changed by other means); every step of a
//!   Sync plan says so (`execute: false`).

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap, FxHashSet};

use thiserror::Error;

use crate::migrate::ident::{IdentError, validate_tenant_name};
use crate::migrate::source::{MigrationType, SourceMigration};
use crate::migrate::summary::Counts;

/// What the caller asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Execute pending migrations and record them.
    Apply,
    /// Record pending migrations without executing them.
    Sync,
}

/// Which schemas an operation covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `createVersion`: every single schema and every existing tenant.
    AllSchemas,
    /// `createTenant`: only the tenant kinds, only in this new tenant.
    NewTenant(String),
}

/// A migration already recorded in the database (one `svc_migrations` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedMigration {
    /// The source file identity, `source_dir/name`.
    pub file: String,
    /// File name, used for out-of-order detection.
    pub name: String,
    /// Schema it was applied to.
    pub schema: String,
    /// Kind it was recorded as.
    pub migration_type: MigrationType,
    /// Checksum recorded when it was applied.
    pub checksum: String,
}

impl AppliedMigration {
    /// The row as the planner reads it, borrowed.
    pub fn as_row(&self) -> AppliedRow<'_> {
        AppliedRow {
            file: &self.file,
            name: &self.name,
            schema: &self.schema,
            migration_type: self.migration_type,
            checksum: &self.checksum,
        }
    }
}

impl From<AppliedRow<'_>> for AppliedMigration {
    /// The row, owned (to hold it past its buffer).
    fn from(row: AppliedRow<'_>) -> Self {
        AppliedMigration {
            file: row.file.to_string(),
            name: row.name.to_string(),
            schema: row.schema.to_string(),
            migration_type: row.migration_type,
            checksum: row.checksum.to_string(),
        }
    }
}

/// One recorded migration, borrowed from wherever it was read (a database
/// row being decoded): what [`Planner::record`] folds, so that a fleet's
/// recorded rows never have to be held at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppliedRow<'r> {
    /// The source file identity, `source_dir/name`.
    pub file: &'r str,
    /// File name.
    pub name: &'r str,
    /// Schema it was applied to.
    pub schema: &'r str,
    /// Kind it was recorded as.
    pub migration_type: MigrationType,
    /// Checksum recorded when it was applied.
    pub checksum: &'r str,
}

/// What to do with a pending migration that sorts before one already
/// applied in its schema (Flyway's `outOfOrder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutOfOrderPolicy {
    /// Plan it, say nothing.
    Allow,
    /// Plan it and report it (migrator's behaviour).
    #[default]
    Warn,
    /// Apply refuses to plan while there is one.
    Refuse,
}

impl OutOfOrderPolicy {
    /// The policy a configuration names.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "allow" => Some(OutOfOrderPolicy::Allow),
            "warn" => Some(OutOfOrderPolicy::Warn),
            "refuse" => Some(OutOfOrderPolicy::Refuse),
            _ => None,
        }
    }

    /// Its name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            OutOfOrderPolicy::Allow => "allow",
            OutOfOrderPolicy::Warn => "warn",
            OutOfOrderPolicy::Refuse => "refuse",
        }
    }
}

/// Everything the planner looks at.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    /// Source migrations in application order ([`crate::migrate::source::source_migrations`]).
    pub sources: &'a [SourceMigration],
    /// Rows already recorded.
    pub applied: &'a [AppliedMigration],
    /// Existing tenants, in the order the tenant statement returned them.
    pub tenants: &'a [String],
    /// Which schemas to cover.
    pub target: &'a Target,
    /// Apply or Sync.
    pub action: Action,
    /// What an out-of-order migration does.
    pub out_of_order: OutOfOrderPolicy,
}

/// One unit of work: a migration in a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Index into [`PlanInput::sources`].
    pub migration: u32,
    /// Index into [`Plan::schemas`].
    pub schema: u32,
    /// False for Sync: record only.
    pub execute: bool,
}

/// A recorded migration whose source file changed since it was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// The source file.
    pub file: String,
    /// Checksum of the file now.
    pub source_checksum: String,
    /// Distinct checksums recorded for it, sorted.
    pub recorded_checksums: Vec<String>,
    /// Schemas where it was recorded, sorted.
    pub schemas: Vec<String>,
}

/// A pending migration that sorts before one already applied in its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfOrder {
    /// The pending file.
    pub file: String,
    /// The schema.
    pub schema: String,
    /// The name of the latest migration (in source order) already recorded
    /// in that schema.
    pub after: String,
}

/// A recorded migration whose file is no longer in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The recorded file.
    pub file: String,
    /// Schemas where it is recorded, sorted.
    pub schemas: Vec<String>,
}

/// What the planner noticed besides the steps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Drifted files (only under Sync; Apply refuses instead).
    pub drift: Vec<Drift>,
    /// Out-of-order migrations, in plan order (none under `allow`).
    pub out_of_order: Vec<OutOfOrder>,
    /// Recorded migrations whose files are gone, by file.
    pub missing: Vec<Missing>,
    /// What a Sync took from other tools' histories.
    pub adopted: Adopted,
}

/// What a Sync took from other tools' histories
/// ([`crate::migrate::history`]), for its report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Adopted {
    /// Per history (`dbmate (schema_migrations)`, in the order of the
    /// tools), the schemas it was read in, sorted.
    pub read: Vec<(String, Vec<String>)>,
    /// Schemas the Sync covered without a history: nothing recorded there.
    pub without: Vec<String>,
}

/// Which way a plan's steps go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Direction {
    /// Each step runs its migration's forward part and records it.
    #[default]
    Forward,
    /// Each step runs its migration's down part and removes its record
    /// ([`crate::migrate::revert`]).
    Revert,
}

/// `plan` with only the steps `keep` keeps: schemas left without a step
/// dropped, counts by the planner's rule over what is kept (the tenants it
/// covers stay the plan's), each diagnostic cut to the schemas kept.
pub fn retained(plan: Plan, sources: &[SourceMigration], keep: impl Fn(&Step) -> bool) -> Plan {
    if plan.steps.iter().all(|step| keep(&step)) {
        return plan;
    }
    let steps = plan.steps.indexed().filter(|(_, step)| keep(step)).map(|(index, _)| index);
    let counts = plan.counts_of(sources, steps);
    let mut kept = Plan { counts, new_tenant: plan.new_tenant.clone(), direction: plan.direction, ..Plan::default() };
    let mut index_of: Vec<Option<u32>> = vec![None; plan.schemas.len()];
    for mut step in plan.steps.iter().filter(|step| keep(step)) {
        let schema = *index_of[step.schema as usize].get_or_insert_with(|| {
            kept.schemas.push(plan.schemas[step.schema as usize].clone());
            kept.schemas.len() as u32 - 1
        });
        step.schema = schema;
        kept.steps.push(step);
    }
    let schemas: FxHashSet<&str> = kept.schemas.iter().map(String::as_str).collect();
    kept.diagnostics.out_of_order =
        plan.diagnostics.out_of_order.into_iter().filter(|item| schemas.contains(item.schema.as_str())).collect();
    kept.diagnostics.missing = in_schemas(plan.diagnostics.missing, &schemas, |m| &mut m.schemas);
    kept.diagnostics.drift = in_schemas(plan.diagnostics.drift, &schemas, |d| &mut d.schemas);
    kept
}

/// The diagnostics about `schemas` only: each item's schemas cut to them,
/// an item left with none dropped.
fn in_schemas<T>(items: Vec<T>, schemas: &FxHashSet<&str>, of: impl Fn(&mut T) -> &mut Vec<String>) -> Vec<T> {
    items
        .into_iter()
        .filter_map(|mut item| {
            let list = of(&mut item);
            list.retain(|schema| schemas.contains(schema.as_str()));
            (!list.is_empty()).then_some(item)
        })
        .collect()
}

/// What a step in `direction` runs of `migration`: its text (positions
/// are those of its file), whether its format says it runs outside a
/// transaction, and the file it comes from (a golang-migrate pair's down
/// part is its `.down.sql` file). A migration without a down part runs
/// nothing backwards (the revert planner refuses to plan it).
pub fn part_to_run(migration: &SourceMigration, direction: Direction) -> (&str, bool, &str) {
    match (direction, &migration.down) {
        (Direction::Forward, _) => (&migration.forward, migration.no_transaction, &migration.file),
        (Direction::Revert, Some(down)) => (&down.text, down.no_transaction, &down.file),
        (Direction::Revert, None) => ("", false, &migration.file),
    }
}

/// The result of planning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Forward (apply, Sync) or a revert.
    pub direction: Direction,
    /// Every schema the plan touches, in first-use order.
    pub schemas: Vec<String>,
    /// The steps, in execution order (held as runs: see [`Steps`]).
    pub steps: Steps,
    /// Counts for the Summary.
    pub counts: Counts,
    /// Drift and out-of-order reports.
    pub diagnostics: Diagnostics,
    /// For [`Target::NewTenant`]: the tenant to create before the steps.
    pub new_tenant: Option<String>,
    /// What each of [`Plan::schemas`] had recorded before, when the plan
    /// accounts for every recorded row (see [`Plan::recorded_after`]).
    pub recorded_before: Option<RecordedBefore>,
}

impl Plan {
    /// The schema a step runs in.
    pub fn schema_of(&self, step: impl std::borrow::Borrow<Step>) -> &str {
        &self.schemas[step.borrow().schema as usize]
    }

    /// What the steps `done` (indices into [`Plan::steps`]) count, by the
    /// planner's rule: the counts of a version that stopped part-way. The
    /// tenants it covers stay the plan's.
    pub fn counts_of(&self, sources: &[SourceMigration], done: impl IntoIterator<Item = u32>) -> Counts {
        let mut per_migration: Vec<u64> = vec![0; sources.len()];
        for step in done {
            if let Some(step) = self.steps.get(step) {
                per_migration[step.migration as usize] += 1;
            }
        }
        let mut counts = Counts { tenants: self.counts.tenants, ..Counts::default() };
        for (migration, schemas) in sources.iter().zip(per_migration) {
            counts.add_file(migration.migration_type, schemas);
        }
        counts
    }

    /// True when executing the plan would change nothing: no steps and no
    /// tenant to create. Such an operation creates no version.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.new_tenant.is_none()
    }
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanError {
    /// Apply with drifted files; every one is listed.
    #[error(
        "{} applied migration(s) changed since they were applied: {}; restore the file(s), or record the change \
         with `strata repair`",
        .0.len(),
        drift_files(.0)
    )]
    Drift(Vec<Drift>),
    /// Apply under `outOfOrder: refuse` with migrations that sort before
    /// applied ones; every one is listed.
    #[error(
        "{} pending migration(s) sort before migrations already applied and outOfOrder is refuse: {}",
        .0.len(),
        out_of_order_files(.0)
    )]
    OutOfOrder(Vec<OutOfOrder>),
    /// The new tenant's name is not a valid identifier.
    #[error("invalid tenant name: {0}")]
    InvalidTenantName(IdentError),
    /// The new tenant exists already.
    #[error("tenant {0:?} already exists")]
    TenantExists(String),
    /// The tenant statement returned a name that is not a valid identifier;
    /// nothing is run against it.
    #[error("tenant list holds an invalid name: {0}")]
    InvalidExistingTenant(IdentError),
    /// Apply of pending files whose text is a file recorded in the same
    /// schema and gone from the source: renamed, and would run again.
    #[error(
        "{} pending migration(s) have the text of a recorded file gone from the source (renamed?), and would run \
         again: {}; give the file its old name back, or move its records to the new name (`strata repair --file \
         OLD`, then `strata apply --sync --to NEW`)",
        .0.len(),
        renamed_files(.0)
    )]
    Renamed(Vec<Renamed>),
    /// More steps or schemas than a plan can index.
    #[error("plan too large: more than {} steps", u32::MAX)]
    TooLarge,
}

/// A pending file with the text of a recorded file gone from the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    /// The pending file.
    pub file: String,
    /// The recorded one it seems to be.
    pub was: String,
    /// How many schemas recorded the old name where the new one is pending.
    pub schemas: u64,
}

fn renamed_files(items: &[Renamed]) -> String {
    let mut shown: Vec<String> =
        items.iter().take(10).map(|r| format!("{} (was {}, in {} schema(s))", r.file, r.was, r.schemas)).collect();
    if items.len() > 10 {
        shown.push(format!("and {} more", items.len() - 10));
    }
    shown.join(", ")
}

fn out_of_order_files(items: &[OutOfOrder]) -> String {
    let mut shown: Vec<String> =
        items.iter().take(10).map(|o| format!("{} in {} (after {})", o.file, o.schema, o.after)).collect();
    if items.len() > 10 {
        shown.push(format!("and {} more", items.len() - 10));
    }
    shown.join(", ")
}

fn drift_files(drift: &[Drift]) -> String {
    drift.iter().map(|d| d.file.as_str()).collect::<Vec<_>>().join(", ")
}

/// Plans an operation. See the module documentation for the rules.
///
/// Cost is linear: one pass over the recorded rows (hash lookups on files
/// and schemas, with the previous row's file cached because rows arrive
/// grouped by migration) and one pass over sources × target schemas.
pub fn plan(input: PlanInput<'_>) -> Result<Plan, PlanError> {
    Planner::new(input)?.finish()
}

/// The planner fed the recorded rows one at a time, as a shell reads them
/// from the database: what it keeps of them is a bit per (source, target
/// schema) and the drifted and missing files, so a fleet's rows (20 per
/// tenant, say) never have to be held at once. [`plan`] is this over
/// [`PlanInput::applied`].
pub struct Planner<'a> {
    input: PlanInput<'a>,
    targets: TargetSchemas<'a>,
    tenant_ids: Vec<u32>,
    new_tenant: Option<String>,
    include_single: bool,
    recorded: RecordedFold<'a>,
}

impl<'a> Planner<'a> {
    /// Checks the target and interns the schemas it covers, then records
    /// the rows of `input.applied` (empty when they are fed with
    /// [`Planner::record`]).
    pub fn new(input: PlanInput<'a>) -> Result<Self, PlanError> {
        let (tenants, new_tenant) = resolve_target(&input)?;
        let include_single = matches!(input.target, Target::AllSchemas);
        let (targets, tenant_ids) = intern_targets(input.sources, &tenants, include_single);
        let recorded = RecordedFold::new(input.sources, targets.names.len())?;
        let mut planner = Planner { input, targets, tenant_ids, new_tenant, include_single, recorded };
        for row in input.applied {
            planner.record(row.as_row());
        }
        Ok(planner)
    }

    /// Folds one recorded row in.
    pub fn record(&mut self, row: AppliedRow<'_>) {
        self.recorded.push(row, &self.targets);
    }

    /// The plan, once every recorded row was folded in.
    pub fn finish(self) -> Result<Plan, PlanError> {
        let Planner { input, targets, tenant_ids, new_tenant, include_single, recorded } = self;
        let recorded = recorded.finish();
        if input.action == Action::Apply && !recorded.drift.is_empty() {
            return Err(PlanError::Drift(recorded.drift));
        }
        let mut plan_schemas = PlanSchemas::new(targets.names.len());
        let mut steps = Steps::default();
        let mut counts = Counts { tenants: tenant_ids.len() as u64, ..Counts::default() };
        let mut out_of_order = Vec::new();
        let execute = input.action == Action::Apply;
        let mut renames = Renames::of(&recorded);

        for (index, migration) in input.sources.iter().enumerate() {
            let migration_index = u32::try_from(index).map_err(|_| PlanError::TooLarge)?;
            let script = migration.migration_type.is_script();
            let single_target: [u32; 1];
            let target_ids: &[u32] = match migration.single_schema() {
                Some(schema) if include_single => {
                    single_target = [targets.id(schema).ok_or(PlanError::TooLarge)?];
                    &single_target
                }
                Some(_) => continue,
                None => &tenant_ids,
            };
            let mut planned_here = 0u64;
            for &target in target_ids {
                if migration.repeatable && recorded.repeatable_current.contains(&(index, target)) {
                    continue;
                }
                if !script {
                    if recorded.contains(index, target) {
                        continue;
                    }
                    if execute {
                        renames.note(migration, targets.names[target as usize]);
                    }
                    if input.out_of_order != OutOfOrderPolicy::Allow
                        && let Some(late) = recorded.out_of_order(input.sources, index, target, &targets)
                    {
                        out_of_order.push(late);
                    }
                }
                let schema = plan_schemas.index(target, &targets)?;
                if u32::try_from(steps.len() + 1).is_err() {
                    return Err(PlanError::TooLarge);
                }
                steps.push(Step { migration: migration_index, schema, execute });
                planned_here += 1;
            }
            if target_ids.is_empty() {
                count_loaded_without_tenants(&mut counts, migration.migration_type, recorded.anywhere[index]);
            }
            counts.add_file(migration.migration_type, planned_here);
        }
        refuse_renamed_or_out_of_order(&input, renames.found(), out_of_order.as_slice())?;
        if new_tenant.is_some() {
            plan_schemas.index(tenant_ids[0], &targets)?;
        }
        let recorded_before = recorded.before(&plan_schemas);

        Ok(Plan {
            direction: Direction::Forward,
            schemas: plan_schemas.names,
            steps,
            counts,
            diagnostics: Diagnostics {
                drift: recorded.drift,
                out_of_order,
                missing: recorded.missing,
                adopted: Adopted::default(),
            },
            new_tenant,
            recorded_before,
        })
    }
}

/// An Apply refused for pending files that are renamed recorded ones, or
/// that sort before applied ones under `outOfOrder: refuse`.
fn refuse_renamed_or_out_of_order(
    input: &PlanInput<'_>,
    renamed: Vec<Renamed>,
    out_of_order: &[OutOfOrder],
) -> Result<(), PlanError> {
    if !renamed.is_empty() {
        return Err(PlanError::Renamed(renamed));
    }
    if input.action == Action::Apply && input.out_of_order == OutOfOrderPolicy::Refuse && !out_of_order.is_empty() {
        return Err(PlanError::OutOfOrder(out_of_order.to_vec()));
    }
    Ok(())
}

/// Pending files with the text of a missing file recorded in the same
/// schema ([`PlanError::Renamed`]).
struct Renames<'r> {
    /// Missing files by their recorded checksum.
    by_checksum: FxHashMap<&'r str, Vec<&'r Missing>>,
    /// (pending file, missing file) → schemas.
    found: BTreeMap<(String, String), u64>,
}

impl<'r> Renames<'r> {
    fn of(recorded: &'r Recorded) -> Self {
        let mut by_checksum: FxHashMap<&str, Vec<&Missing>> = FxHashMap::default();
        for (missing, checksum) in recorded.missing.iter().zip(&recorded.missing_checksums) {
            by_checksum.entry(checksum.as_str()).or_default().push(missing);
        }
        Renames { by_checksum, found: Default::default() }
    }

    /// `migration`, pending in `schema`.
    fn note(&mut self, migration: &SourceMigration, schema: &str) {
        let Some(missing) = self.by_checksum.get(migration.checksum.as_str()) else { return };
        for was in missing.iter().filter(|m| m.schemas.binary_search_by(|s| s.as_str().cmp(schema)).is_ok()) {
            *self.found.entry((migration.file.clone(), was.file.clone())).or_default() += 1;
        }
    }

    fn found(self) -> Vec<Renamed> {
        self.found.into_iter().map(|((file, was), schemas)| Renamed { file, was, schemas }).collect()
    }
}

/// Without tenants, a tenant file still counts as loaded when it is a
/// script or was never recorded (the spec's `tenantMigrations`: loaded
/// files; `tenantMigrationsTotal` = tenants × that).
fn count_loaded_without_tenants(counts: &mut Counts, kind: MigrationType, recorded_anywhere: bool) {
    if !kind.is_tenant() || (!kind.is_script() && recorded_anywhere) {
        return;
    }
    match kind {
        MigrationType::TenantMigration => counts.tenant_migrations += 1,
        _ => counts.tenant_scripts += 1,
    }
}

/// The tenants an operation plans for, each name checked, and the new
/// tenant of a `createTenant` (which must not exist yet).
fn resolve_target<'a>(input: &PlanInput<'a>) -> Result<(Vec<&'a str>, Option<String>), PlanError> {
    match input.target {
        Target::AllSchemas => {
            for tenant in input.tenants {
                validate_tenant_name(tenant).map_err(PlanError::InvalidExistingTenant)?;
            }
            Ok((input.tenants.iter().map(String::as_str).collect(), None))
        }
        Target::NewTenant(name) => {
            validate_tenant_name(name).map_err(PlanError::InvalidTenantName)?;
            // Letter case aside, as the engines may compare schema names
            // (SQL Server's default collation, MySQL and SQLite on a file
            // system that ignores it): `T1` beside `t1` would run in t1.
            if let Some(existing) = input.tenants.iter().find(|t| t.eq_ignore_ascii_case(name)) {
                return Err(PlanError::TenantExists(existing.clone()));
            }
            Ok((vec![name.as_str()], Some(name.clone())))
        }
    }
}

/// Every schema the operation may touch, interned (the single schemas
/// first when they are included), and the tenants' ids — a tenant listed
/// twice is planned once.
fn intern_targets<'a>(
    sources: &'a [SourceMigration],
    tenants: &[&'a str],
    include_single: bool,
) -> (TargetSchemas<'a>, Vec<u32>) {
    let mut targets = TargetSchemas::default();
    if include_single {
        for schema in sources.iter().filter_map(SourceMigration::single_schema) {
            targets.intern(schema);
        }
    }
    let all_tenant_ids: Vec<u32> = tenants.iter().map(|tenant| targets.intern(tenant)).collect();
    let mut seen = vec![false; targets.names.len()];
    let tenant_ids =
        all_tenant_ids.into_iter().filter(|id| !std::mem::replace(&mut seen[*id as usize], true)).collect();
    (targets, tenant_ids)
}

/// The schemas an operation may touch, interned to dense ids.
#[derive(Default)]
struct TargetSchemas<'a> {
    names: Vec<&'a str>,
    ids: FxHashMap<&'a str, u32>,
}

impl<'a> TargetSchemas<'a> {
    fn intern(&mut self, schema: &'a str) -> u32 {
        let next = self.names.len() as u32;
        let id = *self.ids.entry(schema).or_insert(next);
        if id == next {
            self.names.push(schema);
        }
        id
    }

    fn id(&self, schema: &str) -> Option<u32> {
        self.ids.get(schema).copied()
    }
}

/// The schemas of a plan in first-use order, mapped from target ids.
struct PlanSchemas {
    names: Vec<String>,
    by_target: Vec<Option<u32>>,
}

impl PlanSchemas {
    fn new(targets: usize) -> Self {
        PlanSchemas { names: Vec::new(), by_target: vec![None; targets] }
    }

    fn index(&mut self, target: u32, targets: &TargetSchemas<'_>) -> Result<u32, PlanError> {
        if let Some(index) = self.by_target[target as usize] {
            return Ok(index);
        }
        let index = u32::try_from(self.names.len()).map_err(|_| PlanError::TooLarge)?;
        self.names.push(targets.names[target as usize].to_string());
        self.by_target[target as usize] = Some(index);
        Ok(index)
    }
}

/// What the recorded rows say, for the target schemas: which (source,
/// schema) pairs are recorded (a bit matrix), the latest recorded source
/// (in source order) per schema, the drifted files and the missing ones.
struct Recorded {
    bits: Vec<u64>,
    width: usize,
    latest: Vec<Option<usize>>,
    drift: Vec<Drift>,
    missing: Vec<Missing>,
    /// Per missing file (by index into `missing`), its recorded checksum.
    missing_checksums: Vec<String>,
    /// Per source: recorded in at least one schema, in scope or not.
    anywhere: Vec<bool>,
    /// (repeatable source, target) whose latest row recorded its text now.
    repeatable_current: FxHashSet<(usize, u32)>,
}

/// The largest bit matrix the planner builds (sources × schemas): 2^32 bits,
/// 512 MiB — e.g. 100,000 migrations × 40,000 tenants.
const MAX_MATRIX_BITS: u64 = 1 << 32;

/// [`Recorded`] being folded from the rows as they come.
struct RecordedFold<'a> {
    sources: &'a [SourceMigration],
    by_file: FxHashMap<&'a str, usize>,
    bits: Vec<u64>,
    width: usize,
    latest: Vec<Option<usize>>,
    missing: BTreeMap<String, BTreeSet<String>>,
    /// Per missing file, the checksum its first row recorded.
    missing_checksums: BTreeMap<String, String>,
    drifted: BTreeMap<&'a str, (BTreeSet<String>, BTreeSet<String>)>,
    anywhere: Vec<bool>,
    /// The previous row's file and its source: rows arrive grouped by file.
    cached: Option<(String, Option<usize>)>,
    /// Repeatable scripts by file.
    repeatable_by_file: FxHashMap<&'a str, usize>,
    /// (repeatable source, target) → its latest row recorded its text now.
    repeatable_latest: FxHashMap<(usize, u32), bool>,
}

impl<'a> RecordedFold<'a> {
    fn new(sources: &'a [SourceMigration], width: usize) -> Result<Self, PlanError> {
        let cells =
            sources.len().checked_mul(width).filter(|n| *n as u64 <= MAX_MATRIX_BITS).ok_or(PlanError::TooLarge)?;
        let by_file = sources
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.migration_type.is_script())
            .map(|(i, m)| (m.file.as_str(), i))
            .collect();
        Ok(RecordedFold {
            sources,
            by_file,
            bits: vec![0u64; cells.div_ceil(64)],
            width,
            latest: vec![None; width],
            missing: BTreeMap::new(),
            missing_checksums: BTreeMap::new(),
            drifted: BTreeMap::new(),
            anywhere: vec![false; sources.len()],
            cached: None,
            repeatable_by_file: sources
                .iter()
                .enumerate()
                .filter(|(_, m)| m.repeatable)
                .map(|(i, m)| (m.file.as_str(), i))
                .collect(),
            repeatable_latest: FxHashMap::default(),
        })
    }

    fn push(&mut self, row: AppliedRow<'_>, targets: &TargetSchemas<'a>) {
        if row.migration_type.is_script() {
            if let (Some(&source), Some(target)) = (self.repeatable_by_file.get(row.file), targets.id(row.schema)) {
                let current = self.sources[source].checksum == row.checksum;
                self.repeatable_latest.insert((source, target), current);
            }
            return;
        }
        let source = match &self.cached {
            Some((file, source)) if file == row.file => *source,
            _ => {
                let source = self.by_file.get(row.file).copied();
                self.cached = Some((row.file.to_string(), source));
                source
            }
        };
        let Some(source) = source else {
            // A desired-state plan is recorded, never a source.
            if !crate::migrate::desired::is_plan_file(row.file) {
                self.missing.entry(row.file.to_string()).or_default().insert(row.schema.to_string());
                if !self.missing_checksums.contains_key(row.file) {
                    self.missing_checksums.insert(row.file.to_string(), row.checksum.to_string());
                }
            }
            return;
        };
        if let Some(target) = targets.id(row.schema) {
            let slot = &mut self.latest[target as usize];
            if slot.is_none_or(|l| source > l) {
                *slot = Some(source);
            }
            let cell = source * self.width + target as usize;
            self.bits[cell / 64] |= 1 << (cell % 64);
        }
        self.anywhere[source] = true;
        let migration = &self.sources[source];
        if migration.checksum != row.checksum {
            let (checksums, schemas) = self.drifted.entry(migration.file.as_str()).or_default();
            if !checksums.contains(row.checksum) {
                checksums.insert(row.checksum.to_string());
            }
            schemas.insert(row.schema.to_string());
        }
    }

    fn finish(self) -> Recorded {
        let sources = self.sources;
        let by_file = &self.by_file;
        let drift = self
            .drifted
            .into_iter()
            .map(|(file, (checksums, schemas))| Drift {
                file: file.to_string(),
                source_checksum: sources[by_file[file]].checksum.clone(),
                recorded_checksums: checksums.into_iter().collect(),
                schemas: schemas.into_iter().collect(),
            })
            .collect();
        let mut checksums = self.missing_checksums;
        let (missing, missing_checksums): (Vec<Missing>, Vec<String>) = self
            .missing
            .into_iter()
            .map(|(file, schemas)| {
                let checksum = checksums.remove(&file).unwrap_or_default();
                (Missing { file, schemas: schemas.into_iter().collect() }, checksum)
            })
            .unzip();
        let repeatable_current =
            self.repeatable_latest.into_iter().filter(|(_, current)| *current).map(|(key, _)| key).collect();
        Recorded {
            bits: self.bits,
            width: self.width,
            latest: self.latest,
            drift,
            missing,
            missing_checksums,
            anywhere: self.anywhere,
            repeatable_current,
        }
    }
}

impl Recorded {
    /// Source `index`, not recorded in `target`, when a later source is
    /// (in source order): where it now runs out of order.
    fn out_of_order(
        &self,
        sources: &[SourceMigration],
        index: usize,
        target: u32,
        targets: &TargetSchemas<'_>,
    ) -> Option<OutOfOrder> {
        let latest = self.latest[target as usize].filter(|&latest| latest > index)?;
        Some(OutOfOrder {
            file: sources[index].file.clone(),
            schema: targets.names[target as usize].to_string(),
            after: sources[latest].name.clone(),
        })
    }

    fn contains(&self, source: usize, target: u32) -> bool {
        let cell = source * self.width + target as usize;
        self.bits[cell / 64] & (1 << (cell % 64)) != 0
    }

    /// What the plan's schemas had recorded, when every recorded row is
    /// accounted for (no missing file, no drifted checksum).
    fn before(&self, plan_schemas: &PlanSchemas) -> Option<RecordedBefore> {
        if !self.drift.is_empty() || !self.missing.is_empty() {
            return None;
        }
        let sources = self.anywhere.len(); // one entry per source
        let mut before = RecordedBefore::new(plan_schemas.names.len(), sources);
        for (target, index) in plan_schemas.by_target.iter().enumerate() {
            let Some(index) = index else { continue };
            for source in 0..sources {
                if self.contains(source, target as u32) {
                    before.set(*index as usize, source);
                }
            }
        }
        Some(before)
    }
}

mod recorded_after;
mod steps;
pub use recorded_after::{RecordedBefore, recorded_of};
pub use steps::{Iter, Segment, StepSet, Steps, Unit, Units};

#[cfg(test)]
pub(crate) mod tests;
