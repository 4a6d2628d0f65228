//! What each schema of a plan has recorded once the version is over,
//! without reading the books again: the planner keeps, per plan schema,
//! which migrations were recorded before ([`RecordedBefore`]), and the
//! shell adds the steps that committed. Drift's fingerprints are stored
//! with that identity (core's `fingerprint::Recorded`).
//!
//! Only exact when the plan accounts for every recorded row of its
//! schemas: a recorded file missing from the sources, or a checksum that
//! differs from its file's, leave [`Plan::recorded_before`] empty, and
//! the shell reads the books as before.

use rustc_hash::FxHashMap;

use crate::migrate::fingerprint::Recorded;
use crate::migrate::plan::{Direction, Plan, StepSet, Unit};
use crate::migrate::source::SourceMigration;

/// Per plan schema, the migrations (not scripts) it had recorded before the
/// version: a bit per source, `words` words a schema (at least one),
/// schema after schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedBefore {
    words: usize,
    bits: Vec<u64>,
}

impl RecordedBefore {
    /// Room for `schemas` schemas over `sources` sources, nothing recorded.
    pub(super) fn new(schemas: usize, sources: usize) -> Self {
        let words = sources.div_ceil(64).max(1);
        RecordedBefore { words, bits: vec![0; words * schemas] }
    }

    /// Marks `source` recorded in plan schema `schema`.
    pub(super) fn set(&mut self, schema: usize, source: usize) {
        self.bits[schema * self.words + source / 64] |= 1 << (source % 64);
    }
}

impl Plan {
    /// Each plan schema's recorded migrations (by [`Plan::schemas`]' order)
    /// once the steps `committed` are recorded as well: `None` for a revert,
    /// or when the plan does not know every recorded row
    /// ([`Plan::recorded_before`] empty). Schemas with the same migrations
    /// share one identity, computed once.
    pub fn recorded_after(&self, sources: &[SourceMigration], committed: &StepSet) -> Option<Vec<Recorded>> {
        let before = self.recorded_before.as_ref()?;
        if self.direction != Direction::Forward || before.bits.len() != before.words * self.schemas.len() {
            return None;
        }
        let mut after = before.clone();
        for step in committed.iter() {
            let step = self.steps.get(step)?;
            if !sources.get(step.migration as usize)?.migration_type.is_script() {
                after.set(step.schema as usize, step.migration as usize);
            }
        }
        let mut known: FxHashMap<&[u64], Recorded> = FxHashMap::default();
        let mut out = Vec::with_capacity(self.schemas.len());
        for chunk in after.bits.chunks(after.words) {
            out.push(known.entry(chunk).or_insert_with(|| recorded_of(sources, chunk)).clone());
        }
        Some(out)
    }

    /// Whether a fingerprint can be stored as soon as a tenant's unit
    /// commits, without waiting for the version to end: the version goes
    /// forward, the plan knows every recorded row, and its tenant steps are
    /// one segment, its last — so a tenant's one unit is everything the
    /// version does in that schema ([`Plan::recorded_after_unit`]).
    pub fn tenant_units_are_final(&self, sources: &[SourceMigration]) -> bool {
        let Some(before) = &self.recorded_before else { return false };
        if self.direction != Direction::Forward || before.bits.len() != before.words * self.schemas.len() {
            return false;
        }
        let segments = self.segments(sources);
        segments.iter().filter(|segment| segment.tenants).count() == 1 && segments.last().is_some_and(|s| s.tenants)
    }

    /// What a tenant's schema records once its `unit` committed, as a bit
    /// per source (the key under which equal sets share one [`Recorded`];
    /// [`recorded_of`] makes it): valid when
    /// [`Plan::tenant_units_are_final`], `None` otherwise.
    pub fn recorded_after_unit(&self, sources: &[SourceMigration], unit: &Unit) -> Option<Vec<u64>> {
        let before = self.recorded_before.as_ref()?;
        let at = unit.schema as usize * before.words;
        let mut bits = before.bits.get(at..at + before.words)?.to_vec();
        for &step in &unit.steps {
            let step = self.steps.get(step)?;
            if step.schema != unit.schema {
                return None;
            }
            if !sources.get(step.migration as usize)?.migration_type.is_script() {
                bits[step.migration as usize / 64] |= 1 << (step.migration % 64);
            }
        }
        Some(bits)
    }
}

/// The [`Recorded`] identity of the sources whose bits are set in `bits`
/// (a bit per source, as [`Plan::recorded_after_unit`] gives them).
pub fn recorded_of(sources: &[SourceMigration], bits: &[u64]) -> Recorded {
    let pairs: Vec<(&str, &str)> = (0..sources.len())
        .filter(|&source| bits.get(source / 64).is_some_and(|word| word & (1 << (source % 64)) != 0))
        .map(|source| (sources[source].file.as_str(), sources[source].checksum.as_str()))
        .collect();
    Recorded::of(&pairs)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{applied as row, migration};
    use super::super::*;
    use crate::migrate::fingerprint::{Recorded, RecordedBySchema};
    use crate::migrate::source::MigrationType::*;

    /// What the books would say after recording `rows`: the fold the shell
    /// makes of them, schema by schema.
    fn books_say(rows: &[AppliedMigration]) -> FxHashMap<String, Recorded> {
        let mut sorted: Vec<&AppliedMigration> = rows.iter().collect();
        sorted.sort_by(|a, b| a.schema.cmp(&b.schema));
        let mut fold = RecordedBySchema::default();
        for row in sorted {
            fold.push(&row.schema, row.file.clone(), row.checksum.clone(), row.migration_type);
        }
        fold.finish()
    }

    #[test]
    fn the_plan_and_the_committed_steps_say_what_the_books_would() {
        let sources = vec![
            migration("ref", "001.sql", SingleMigration),
            migration("tenants", "001.sql", TenantMigration),
            migration("tenants", "002.sql", TenantMigration),
            migration("tenants-scripts", "a.sql", TenantScript),
            migration("tenants", "003.sql", TenantMigration),
        ];
        // t1 has 001, t2 has 001 and 002 (and a script's row), t3 nothing,
        // t4 is listed but not in the plan's steps' way: has everything.
        let mut rows = vec![
            row(&sources[0], "ref"),
            row(&sources[1], "t1"),
            row(&sources[1], "t2"),
            row(&sources[2], "t2"),
            row(&sources[3], "t2"),
        ];
        for source in [&sources[1], &sources[2], &sources[4]] {
            rows.push(row(source, "t4"));
        }
        let tenants: Vec<String> = ["t1", "t2", "t3", "t4"].map(String::from).to_vec();
        let input = PlanInput {
            sources: &sources,
            applied: &rows,
            tenants: &tenants,
            target: &Target::AllSchemas,
            action: Action::Apply,
            out_of_order: OutOfOrderPolicy::Warn,
        };
        let plan = plan(input).unwrap();
        // Commit every step but t3's last (its unit stopped there, say).
        let mut committed = StepSet::with_steps(plan.steps.len());
        let mut recorded = rows.clone();
        for (index, step) in plan.steps.indexed() {
            let (source, schema) = (&sources[step.migration as usize], plan.schema_of(step));
            if schema == "t3" && source.file == "tenants/003.sql" {
                continue;
            }
            committed.insert(index);
            recorded.push(row(source, schema));
        }
        let after = plan.recorded_after(&sources, &committed).expect("every row accounted for");
        let books = books_say(&recorded);
        assert_eq!(after.len(), plan.schemas.len());
        for (schema, identity) in plan.schemas.iter().zip(&after) {
            assert_eq!(Some(identity), books.get(schema), "{schema}");
        }
        let t3 = plan.schemas.iter().position(|s| s == "t3").unwrap();
        assert_eq!(after[t3].migrations, 2);
        // Schemas with the same migrations share one identity, computed once.
        let t1 = plan.schemas.iter().position(|s| s == "t1").unwrap();
        let t2 = plan.schemas.iter().position(|s| s == "t2").unwrap();
        assert!(std::sync::Arc::ptr_eq(&after[t1].identity, &after[t2].identity));
        assert_eq!(after[t1], books["t4"]);
        assert_ne!(after[t1], after[t3]);
    }

    /// A tenant's unit of the plan's only tenant segment, its last, is all
    /// the version does in that schema: what it records once the unit
    /// committed is what the books say after the whole version. A plan
    /// with a single-schema step after the tenants' is not such a plan.
    #[test]
    fn a_final_tenant_unit_says_what_its_schema_records_after_the_version() {
        let sources = vec![
            migration("ref", "001.sql", SingleMigration),
            migration("tenants", "001.sql", TenantMigration),
            migration("tenants", "002.sql", TenantMigration),
            migration("tenants-scripts", "a.sql", TenantScript),
        ];
        let rows = vec![row(&sources[0], "ref"), row(&sources[1], "t2"), row(&sources[3], "t2")];
        let tenants: Vec<String> = ["t1", "t2", "t3"].map(String::from).to_vec();
        let input = |sources| PlanInput {
            sources,
            applied: &rows,
            tenants: &tenants,
            target: &Target::AllSchemas,
            action: Action::Apply,
            out_of_order: OutOfOrderPolicy::Warn,
        };
        let plan = plan(input(&sources)).unwrap();
        assert!(plan.tenant_units_are_final(&sources));
        let segments = plan.segments(&sources);
        let mut recorded = rows.clone();
        for (_, step) in plan.steps.indexed() {
            recorded.push(row(&sources[step.migration as usize], plan.schema_of(step)));
        }
        let books = books_say(&recorded);
        let units: Vec<Unit> = plan.units(segments.last().unwrap()).collect();
        assert_eq!(units.len(), 3);
        for unit in &units {
            let bits = plan.recorded_after_unit(&sources, unit).unwrap();
            let schema = &plan.schemas[unit.schema as usize];
            assert_eq!(Some(&recorded_of(&sources, &bits)), books.get(schema), "{schema}");
        }
        // Equal sets, equal keys: t1 and t3 share one identity.
        let key = |name: &str| {
            let unit = units.iter().find(|u| plan.schemas[u.schema as usize] == name).unwrap();
            plan.recorded_after_unit(&sources, unit).unwrap()
        };
        assert_eq!(key("t1"), key("t3"));
        assert_eq!(key("t1"), key("t2"), "t2 had 001 already and the script does not count");

        let mut after_tenants = sources.clone();
        after_tenants.push(migration("ref", "002.sql", SingleMigration));
        let plan_after = super::super::plan(input(&after_tenants)).unwrap();
        assert!(!plan_after.tenant_units_are_final(&after_tenants), "a single step after the tenants'");
        let reverted = Plan { direction: Direction::Revert, ..plan.clone() };
        assert!(!reverted.tenant_units_are_final(&sources));
    }

    #[test]
    fn rows_the_plan_cannot_account_for_leave_it_to_the_books() {
        let sources = vec![migration("tenants", "001.sql", TenantMigration)];
        let tenants: Vec<String> = vec!["t1".into()];
        let gone = AppliedMigration {
            file: "tenants/000.sql".into(),
            name: "000.sql".into(),
            schema: "t1".into(),
            migration_type: TenantMigration,
            checksum: "c".into(),
        };
        let mut edited = row(&sources[0], "t1");
        edited.checksum = "changed".into();
        for (rows, action) in [(vec![gone], Action::Apply), (vec![edited], Action::Sync)] {
            let input = PlanInput {
                sources: &sources,
                applied: &rows,
                tenants: &tenants,
                target: &Target::AllSchemas,
                action,
                out_of_order: OutOfOrderPolicy::Warn,
            };
            let plan = plan(input).unwrap();
            assert_eq!(plan.recorded_before, None);
            assert_eq!(plan.recorded_after(&sources, &StepSet::default()), None);
        }
    }
}
