//! What a plan would do, for people and for pipelines: the command line's
//! `strata plan` and `strata status` render it here (the shell prints).
//!
//! Schemas whose pending files are the same are grouped, so a fleet of a
//! thousand tenants that all miss the same two files is one group of a
//! thousand names (spelt out up to [`NAMES_SHOWN`]), not a thousand blocks.

use rustc_hash::FxHashMap;
use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::migrate::plan::Plan;
use crate::migrate::source::SourceMigration;

pub mod fleet_rows;

/// Names spelt out per group in the text rendering (the JSON has them all).
pub const NAMES_SHOWN: usize = 5;

/// One file a schema would get.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingFile {
    /// `source_dir/name`.
    pub file: String,
    /// A script (runs on every version) rather than a migration.
    pub script: bool,
    /// Executed (Apply) or only recorded (Sync).
    pub execute: bool,
}

/// Schemas that would get the same files, in plan order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingGroup {
    /// The schemas, in first-use order.
    pub schemas: Vec<String>,
    /// Whether they are tenants.
    pub tenants: bool,
    /// The files each gets, in plan order.
    pub files: Vec<PendingFile>,
}

/// Pending migrations (not scripts) per schema, counted: what `strata
/// status` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCount {
    /// The schema.
    pub schema: String,
    /// Migrations it would get.
    pub migrations: u64,
}

/// Where a tenant stands with one tenant migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CellState {
    /// Recorded, and unchanged since.
    Applied,
    /// Not recorded: the next version applies it.
    Pending,
    /// Recorded, but the file changed since.
    Drifted,
    /// Not known now: the tenant's shard did not answer.
    Unknown,
}

impl CellState {
    /// Every state, in the order of its letters (`A`, `P`, `D`, `U`).
    pub const ALL: [CellState; 4] = [CellState::Applied, CellState::Pending, CellState::Drifted, CellState::Unknown];

    /// The state's letter in a row's [`letters`]: `A`pplied, `P`ending,
    /// `D`rifted, `U`nknown.
    pub fn letter(self) -> char {
        match self {
            CellState::Applied => 'A',
            CellState::Pending => 'P',
            CellState::Drifted => 'D',
            CellState::Unknown => 'U',
        }
    }

    /// The state a letter of [`letters`] stands for.
    pub fn from_letter(letter: char) -> Option<CellState> {
        CellState::ALL.into_iter().find(|state| state.letter() == letter)
    }
}

/// A row of cells as one string, a letter per cell ([`CellState::letter`]):
/// a fleet's matrix in one value per tenant rather than one per cell, which
/// is what keeps the answer's size (and the service's memory) small at tens
/// of thousands of tenants.
pub fn letters(cells: &[CellState]) -> String {
    cells.iter().map(|cell| cell.letter()).collect()
}

/// Tenants × tenant migrations: the console's fleet view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FleetMatrix {
    /// The tenant migration files, in application order (the columns).
    pub files: Vec<String>,
    /// Each tenant with one state per file (the rows), in the tenant list's
    /// order.
    pub tenants: Vec<(String, Vec<CellState>)>,
}

impl FleetMatrix {
    /// The matrix with a row of [`CellState::Unknown`] for each of
    /// `tenants` it does not have (those of a shard that did not answer, as
    /// last seen), after its own rows.
    pub fn with_unknown(mut self, tenants: &[String]) -> FleetMatrix {
        let known: FxHashSet<&str> = self.tenants.iter().map(|(name, _)| name.as_str()).collect();
        let unknown: Vec<(String, Vec<CellState>)> = tenants
            .iter()
            .filter(|tenant| !known.contains(tenant.as_str()))
            .map(|tenant| (tenant.clone(), vec![CellState::Unknown; self.files.len()]))
            .collect();
        self.tenants.extend(unknown);
        self
    }
}

/// The fleet matrix from a **Sync** plan over all schemas (Sync never
/// refuses on drift and plans exactly the unrecorded migrations), the
/// sources it indexes, and the tenant list (its names become the rows':
/// at 50,000 tenants a copy of them is megabytes).
pub fn fleet_matrix(sync_plan: &Plan, sources: &[SourceMigration], tenants: Vec<String>) -> FleetMatrix {
    let columns: Vec<usize> = sources
        .iter()
        .enumerate()
        .filter(|(_, s)| s.migration_type == crate::migrate::MigrationType::TenantMigration)
        .map(|(i, _)| i)
        .collect();
    let mut column_of: FxHashMap<usize, usize> = FxHashMap::default();
    for (column, &source) in columns.iter().enumerate() {
        column_of.insert(source, column);
    }
    let row_of: FxHashMap<&str, usize> = tenants.iter().enumerate().map(|(i, t)| (t.as_str(), i)).collect();
    let mut cells = vec![vec![CellState::Applied; columns.len()]; tenants.len()];
    for step in &sync_plan.steps {
        if let (Some(&column), Some(&row)) =
            (column_of.get(&(step.migration as usize)), row_of.get(sync_plan.schema_of(step)))
        {
            cells[row][column] = CellState::Pending;
        }
    }
    let column_of_file: FxHashMap<&str, usize> =
        columns.iter().enumerate().map(|(column, &source)| (sources[source].file.as_str(), column)).collect();
    for drift in &sync_plan.diagnostics.drift {
        let Some(&column) = column_of_file.get(drift.file.as_str()) else { continue };
        for schema in &drift.schemas {
            if let Some(&row) = row_of.get(schema.as_str()) {
                cells[row][column] = CellState::Drifted;
            }
        }
    }
    FleetMatrix {
        files: columns.iter().map(|&source| sources[source].file.clone()).collect(),
        tenants: tenants.into_iter().zip(cells).collect(),
    }
}

/// Whether a plan has migrations to run (or record), or a tenant to create:
/// what `strata plan --check` gates on. Scripts, due on every version, do
/// not count; a repeatable script (Flyway's `R__`), due only when its text
/// changed, does.
pub fn has_pending_migrations(plan: &Plan, sources: &[SourceMigration]) -> bool {
    plan.counts.migrations_grand_total() > 0
        || plan.new_tenant.is_some()
        || plan.steps.iter().any(|step| sources.get(step.migration as usize).is_some_and(|m| m.repeatable))
}

/// Migration steps recorded without running (a Sync's), scripts aside.
pub fn record_only(plan: &Plan, sources: &[SourceMigration]) -> u64 {
    plan.steps.iter().filter(|s| !s.execute && !sources[s.migration as usize].migration_type.is_script()).count() as u64
}

/// Drift that makes Apply refuse, as text.
pub fn render_drift(drift: &[crate::migrate::plan::Drift]) -> String {
    let mut out = format!("Apply refuses to run: {} migration(s) changed since they were applied:\n", drift.len());
    for item in drift {
        out.push_str(&format!("  {} (recorded in {})\n", item.file, names(&item.schemas)));
    }
    out.push_str(
        "Restore the file(s) as they were applied, or, if the change is deliberate, record it with `strata repair \
         FILE...` (it records the new checksum and runs nothing).\n",
    );
    out
}

/// The plan grouped by identical file lists.
pub fn pending_groups(plan: &Plan, sources: &[SourceMigration]) -> Vec<PendingGroup> {
    let mut per_schema: Vec<Vec<PendingFile>> = vec![Vec::new(); plan.schemas.len()];
    // Whether each schema is a tenant here (it gets tenant kinds, or is the
    // new tenant), in the same pass: asked of every step per schema, it
    // made `strata plan` quadratic in the fleet (1.54 s at 10,000 tenants,
    // 0.11 s at 2,000).
    let mut tenant: Vec<bool> =
        plan.schemas.iter().map(|schema| plan.new_tenant.as_deref() == Some(schema.as_str())).collect();
    for step in &plan.steps {
        let source = &sources[step.migration as usize];
        tenant[step.schema as usize] |= source.migration_type.is_tenant();
        per_schema[step.schema as usize].push(PendingFile {
            file: source.file.clone(),
            script: source.migration_type.is_script(),
            execute: step.execute,
        });
    }
    let mut groups: Vec<PendingGroup> = Vec::new();
    // Deterministic hashing (core's contract: no randomness).
    let mut index: FxHashMap<(bool, Vec<PendingFile>), usize> = FxHashMap::default();
    for ((schema, files), tenants) in plan.schemas.iter().zip(per_schema).zip(tenant) {
        if files.is_empty() {
            continue;
        }
        let key = (tenants, files);
        match index.get(&key) {
            Some(&at) => groups[at].schemas.push(schema.clone()),
            None => {
                index.insert(key.clone(), groups.len());
                groups.push(PendingGroup { schemas: vec![schema.clone()], tenants, files: key.1 });
            }
        }
    }
    groups
}

/// Pending migrations per schema (scripts, which are always due, left out),
/// schemas with none left out, in plan order.
pub fn pending_counts(plan: &Plan, sources: &[SourceMigration]) -> Vec<PendingCount> {
    let mut counts = vec![0u64; plan.schemas.len()];
    for step in &plan.steps {
        if !sources[step.migration as usize].migration_type.is_script() {
            counts[step.schema as usize] += 1;
        }
    }
    plan.schemas
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(schema, migrations)| PendingCount { schema: schema.clone(), migrations })
        .collect()
}

fn names(list: &[String]) -> String {
    let shown: Vec<&str> = list.iter().take(NAMES_SHOWN).map(String::as_str).collect();
    match list.len().saturating_sub(NAMES_SHOWN) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The plan as text: a headline, then each group with its files, then the
/// diagnostics. `Nothing to do.` for an empty plan.
pub fn render_text(plan: &Plan, sources: &[SourceMigration]) -> String {
    let mut out = String::new();
    write_headline(&mut out, plan, sources);
    if !plan.steps.is_empty() {
        write_groups(&mut out, plan, sources);
    }
    write_diagnostics(&mut out, &plan.diagnostics);
    out
}

/// [`render_text`]'s first lines: the new tenant, a revert's or a sync's
/// warning, and the counts (or that there is nothing to do).
fn write_headline(out: &mut String, plan: &Plan, sources: &[SourceMigration]) {
    if let Some(tenant) = &plan.new_tenant {
        out.push_str(&format!("New tenant {tenant}.\n"));
    }
    if plan.direction == crate::migrate::plan::Direction::Revert && !plan.steps.is_empty() {
        out.push_str(&format!(
            "REVERT: {} would be undone (each one's down part run, its record removed), newest first, in {}.\n",
            plural(plan.steps.len(), "migration", "migrations"),
            plural(plan.schemas.len(), "schema", "schemas"),
        ));
    }
    let unrun = record_only(plan, sources);
    if plan.steps.is_empty() {
        out.push_str(if plan.new_tenant.is_some() { "No files to apply.\n" } else { "Nothing to do.\n" });
        return;
    }
    if unrun > 0 {
        out.push_str(&format!(
            "SYNC: {} would be RECORDED AS APPLIED WITHOUT RUNNING (adopting a database changed by other means); \
             each is marked (record only) below. To run them, plan and apply without --sync.\n",
            plural(unrun as usize, "migration", "migrations"),
        ));
    }
    let counts = &plan.counts;
    out.push_str(&format!(
        "{} and {} in {} ({}).\n",
        plural(counts.migrations_grand_total() as usize, "migration", "migrations"),
        plural(counts.scripts_grand_total() as usize, "script", "scripts"),
        plural(plan.schemas.len(), "schema", "schemas"),
        plural(counts.tenants as usize, "tenant", "tenants"),
    ));
}

/// [`render_text`]'s groups: the schemas with the same pending files, each
/// file marked when it is a script or only recorded.
fn write_groups(out: &mut String, plan: &Plan, sources: &[SourceMigration]) {
    for group in pending_groups(plan, sources) {
        let kind = match (group.tenants, group.schemas.len()) {
            (true, 1) => "tenant",
            (true, _) => "tenants",
            (false, 1) => "schema",
            (false, _) => "schemas",
        };
        out.push_str(&format!("\n{kind} {}:\n", names(&group.schemas)));
        for file in &group.files {
            let what = match (file.script, file.execute) {
                (true, _) => " (script)",
                (false, false) => " (record only)",
                (false, true) => "",
            };
            out.push_str(&format!("  {}{what}\n", file.file));
        }
    }
}

/// [`render_text`]'s diagnostics: histories adopted, files out of order,
/// drift, missing files.
fn write_diagnostics(out: &mut String, diagnostics: &crate::migrate::plan::Diagnostics) {
    if !diagnostics.adopted.read.is_empty() {
        out.push_str("\nRecorded as each schema's own history says (other tools' histories, read by the Sync):\n");
        for (history, schemas) in &diagnostics.adopted.read {
            out.push_str(&format!("  {history} in {}\n", names(schemas)));
        }
        if !diagnostics.adopted.without.is_empty() {
            out.push_str(&format!(
                "  no history in {}: nothing recorded there (those files run at the next Apply)\n",
                names(&diagnostics.adopted.without)
            ));
        }
    }
    if !diagnostics.out_of_order.is_empty() {
        out.push_str("\nOut of order (applied anyway, outOfOrder: warn; set allow or refuse):\n");
        for item in &diagnostics.out_of_order {
            out.push_str(&format!("  {} in {} sorts before {}, already applied\n", item.file, item.schema, item.after));
        }
    }
    if !diagnostics.drift.is_empty() {
        out.push_str(
            "\nDrift (changed since applied; Apply refuses until each is restored or recorded with `strata \
             repair`):\n",
        );
        for item in &diagnostics.drift {
            out.push_str(&format!("  {} (recorded in {})\n", item.file, names(&item.schemas)));
        }
    }
    if !diagnostics.missing.is_empty() {
        out.push_str(
            "\nMissing (applied, but the file is no longer in the source; `strata repair` removes the records):\n",
        );
        for item in &diagnostics.missing {
            out.push_str(&format!("  {} (recorded in {})\n", item.file, names(&item.schemas)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::MigrationType;
    use crate::migrate::plan::{Action, PlanInput, Target, plan};

    fn source(dir: &str, name: &str, migration_type: MigrationType) -> SourceMigration {
        SourceMigration { checksum: "c".into(), ..SourceMigration::plain(dir, name, migration_type, "") }
    }

    fn sources() -> Vec<SourceMigration> {
        vec![
            source("ref", "1.sql", MigrationType::SingleMigration),
            source("tenants", "1.sql", MigrationType::TenantMigration),
            source("tenants", "2.sql", MigrationType::TenantMigration),
            source("tenant-scripts", "s.sql", MigrationType::TenantScript),
        ]
    }

    #[test]
    fn a_fleet_that_misses_the_same_files_is_one_group() {
        let sources = sources();
        let tenants: Vec<String> = (1..=7).map(|i| format!("t{i}")).collect();
        let plan = plan(PlanInput {
            sources: &sources,
            applied: &[],
            tenants: &tenants,
            target: &Target::AllSchemas,
            action: Action::Apply,
            out_of_order: Default::default(),
        })
        .unwrap();
        let groups = pending_groups(&plan, &sources);
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[0].schemas.clone(), groups[0].tenants), (vec!["ref".to_string()], false));
        assert_eq!(groups[1].schemas, tenants);
        assert!(groups[1].tenants);
        let files: Vec<(&str, bool)> = groups[1].files.iter().map(|f| (f.file.as_str(), f.script)).collect();
        assert_eq!(files, [("tenants/1.sql", false), ("tenants/2.sql", false), ("tenant-scripts/s.sql", true)]);
        assert_eq!(
            render_text(&plan, &sources),
            "15 migrations and 7 scripts in 8 schemas (7 tenants).\n\nschema ref:\n  ref/1.sql\n\ntenants t1, t2, t3, \
             t4, t5, and 2 more:\n  tenants/1.sql\n  tenants/2.sql\n  tenant-scripts/s.sql (script)\n"
        );
        let counts = pending_counts(&plan, &sources);
        assert_eq!(counts[0], PendingCount { schema: "ref".into(), migrations: 1 });
        assert_eq!(counts[1], PendingCount { schema: "t1".into(), migrations: 2 });
        assert_eq!(counts.len(), 8);
    }

    #[test]
    fn the_fleet_matrix_marks_pending_and_drifted_cells() {
        use crate::migrate::plan::AppliedMigration;
        let mut sources = sources();
        let tenants: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let recorded = |file: &str, schema: &str, checksum: &str| AppliedMigration {
            file: file.into(),
            name: file.rsplit('/').next().unwrap().into(),
            schema: schema.into(),
            migration_type: MigrationType::TenantMigration,
            checksum: checksum.into(),
        };
        let applied = vec![
            recorded("tenants/1.sql", "a", "c"),
            recorded("tenants/2.sql", "a", "c"),
            recorded("tenants/1.sql", "b", "old"),
        ];
        sources[1].checksum = "c".into();
        let plan = plan(PlanInput {
            sources: &sources,
            applied: &applied,
            tenants: &tenants,
            target: &Target::AllSchemas,
            action: Action::Sync,
            out_of_order: Default::default(),
        })
        .unwrap();
        let matrix = fleet_matrix(&plan, &sources, tenants.clone());
        assert_eq!(matrix.files, ["tenants/1.sql", "tenants/2.sql"]);
        use CellState::*;
        assert_eq!(
            matrix.tenants,
            [
                ("a".to_string(), vec![Applied, Applied]),
                ("b".to_string(), vec![Drifted, Pending]),
                ("c".to_string(), vec![Pending, Pending]),
            ]
        );
        // A shard that did not answer: its tenants (as last seen) are
        // unknown, after the others; a tenant the matrix has stays as it is.
        let unknown = matrix.with_unknown(&["c".to_string(), "d".to_string()]);
        assert_eq!(unknown.tenants[2], ("c".to_string(), vec![Pending, Pending]));
        assert_eq!(unknown.tenants[3], ("d".to_string(), vec![Unknown, Unknown]));
        assert_eq!(unknown.tenants.len(), 4);
        // A row in one string: a letter per cell, read back to its states.
        let rows: Vec<String> = unknown.tenants.iter().map(|(_, cells)| letters(cells)).collect();
        assert_eq!(rows, ["AA", "DP", "PP", "UU"]);
        let read: Vec<CellState> = rows[1].chars().map(|c| CellState::from_letter(c).unwrap()).collect();
        assert_eq!(read, [Drifted, Pending]);
        assert_eq!(CellState::from_letter('a'), None);
        for state in CellState::ALL {
            assert_eq!(CellState::from_letter(state.letter()), Some(state));
        }
    }

    #[test]
    fn an_empty_plan_says_nothing_to_do() {
        assert_eq!(render_text(&Plan::default(), &[]), "Nothing to do.\n");
    }
}
