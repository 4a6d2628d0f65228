//! The files a plan executes, read before anything runs ([`check`]), and
//! each step of the plan as the file it runs ([`StepFiles`]): its text,
//! its schema, whether it runs outside a transaction, commits after, or is
//! a backfill. The executor asks here rather than reading the plan's
//! indices and the files' directives itself.
//!
//! Invariants:
//! - Every refusal of every executed file is returned at once, before any
//!   of them runs; a file only recorded (Sync) is not read.
//! - A step that only records never runs outside a transaction, never
//!   commits after itself and is never a backfill; a dry run commits after
//!   no file, and a revert runs no backfill.

use crate::migrate::backfill::{self, Spec};
use crate::migrate::driver::Driver;
use crate::migrate::plan::{Direction, Plan, part_to_run};
use crate::migrate::run::transactions::StepMode;
use crate::migrate::source::SourceMigration;
use crate::migrate::statements::{self, FileMode, Refusals};

/// What a file says about how it runs: its directives, and its backfill
/// when it is one (`strata:backfill`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileRules {
    /// Its directives.
    pub mode: FileMode,
    /// Its backfill.
    pub backfill: Option<Spec>,
}

/// Reads every file `plan` executes (`statements::inspect_part`): refuses
/// hidden transaction control, statements that need a directive, unknown
/// directives, a backfill in a version run as one transaction
/// (`whole_version`), and another tool's tenant file writing without its
/// schema where the engine cannot run it in one (`statements::unplaced`,
/// `placeholder` being the schema's) — every refusal of every file at
/// once. Returns, per source, how it runs (the default for a source the
/// plan does not execute).
pub fn check(
    driver: Driver,
    sources: &[SourceMigration],
    plan: &Plan,
    whole_version: bool,
    placeholder: &str,
) -> Result<Vec<FileRules>, Refusals> {
    let mut rules: Vec<Option<FileRules>> = vec![None; sources.len()];
    let mut refused = Vec::new();
    for step in plan.steps.iter().filter(|s| s.execute) {
        let index = step.migration as usize;
        if rules[index].is_some() {
            continue;
        }
        let migration = &sources[index];
        let (text, no_transaction, file) = part_to_run(migration, plan.direction);
        let marked = (no_transaction, migration.format.no_transaction_mark());
        rules[index] =
            Some(file_rules(driver, file, text, marked, whole_version).unwrap_or_else(|Refusals(refusals)| {
                refused.extend(refusals);
                FileRules::default()
            }));
        if migration.in_its_schema {
            refused.extend(statements::unplaced(driver, file, text, placeholder));
        }
    }
    if !refused.is_empty() {
        return Err(Refusals(refused));
    }
    Ok(rules.into_iter().map(Option::unwrap_or_default).collect())
}

/// One file's [`FileRules`], or why it cannot run as written; `marked`:
/// whether its format's marker says it runs outside any transaction, and
/// how that format writes the marker.
fn file_rules(
    driver: Driver,
    file: &str,
    text: &str,
    (no_transaction, mark): (bool, &'static str),
    whole_version: bool,
) -> Result<FileRules, Refusals> {
    let mode = statements::inspect_part(driver, file, text, no_transaction, mark)?;
    if !mode.backfill {
        return Ok(FileRules { mode, backfill: None });
    }
    // The format's own no-transaction marker is refused beside a backfill
    // as the directive is.
    let spec = backfill::read_part(driver, file, text, no_transaction).map_err(|refusal| Refusals(vec![refusal]))?;
    if whole_version && spec.is_some() {
        return Err(Refusals(vec![backfill::in_one_transaction(file)]));
    }
    Ok(FileRules { mode, backfill: spec })
}

/// Per source, whether the tokenizer reads the part `plan` runs of it whole
/// (only where a unit may run in one message, `one_message`: the rest say
/// no).
pub fn readable(driver: Driver, one_message: bool, sources: &[SourceMigration], plan: &Plan) -> Vec<bool> {
    let mut readable = vec![false; sources.len()];
    if plan.direction == Direction::Forward && one_message {
        for (index, migration) in sources.iter().enumerate() {
            readable[index] = statements::split(driver, part_to_run(migration, plan.direction).0).is_some();
        }
    }
    readable
}

/// Each step of a plan as the file it runs: the plan, its sources and
/// their [`FileRules`] (from [`check`]), for a dry run or not.
#[derive(Debug, Clone, Copy)]
pub struct StepFiles<'a> {
    plan: &'a Plan,
    sources: &'a [SourceMigration],
    rules: &'a [FileRules],
    dry_run: bool,
}

impl<'a> StepFiles<'a> {
    /// The steps of `plan` over `sources`, each source run by its `rules`.
    pub fn new(plan: &'a Plan, sources: &'a [SourceMigration], rules: &'a [FileRules], dry_run: bool) -> Self {
        StepFiles { plan, sources, rules, dry_run }
    }

    /// The source a step comes from.
    pub fn migration(&self, step: u32) -> &'a SourceMigration {
        &self.sources[self.plan.steps.at(step).migration as usize]
    }

    /// The schema a step runs in.
    pub fn schema(&self, step: u32) -> &'a str {
        self.plan.schema_of(self.plan.steps.at(step))
    }

    /// The text a step runs (the forward part, or the down part of a
    /// revert), with the file's own positions.
    pub fn text(&self, step: u32) -> &'a str {
        part_to_run(self.migration(step), self.plan.direction).0
    }

    /// The file a step's text comes from (a revert's down file).
    pub fn file(&self, step: u32) -> &'a str {
        part_to_run(self.migration(step), self.plan.direction).2
    }

    /// The directives of a step's file.
    pub fn mode(&self, step: u32) -> &'a FileMode {
        &self.rules[self.plan.steps.at(step).migration as usize].mode
    }

    /// The step's backfill, when its file is one and it executes forward.
    pub fn backfill(&self, step: u32) -> Option<&'a Spec> {
        let at = self.plan.steps.at(step);
        if !at.execute || self.plan.direction != Direction::Forward {
            return None;
        }
        self.rules[at.migration as usize].backfill.as_ref()
    }

    /// Whether a step's file may be a backfill, whichever way the plan goes
    /// (a revert's rules are its down part's): its forward part names the
    /// directive, in any letter case.
    pub fn may_be_backfill(&self, step: u32) -> bool {
        self.migration(step).forward.to_ascii_lowercase().contains(statements::BACKFILL_DIRECTIVE)
    }

    /// The step executes a file that may end its unit's transaction where
    /// none of its statements shows it ([`FileMode::may_end_transaction`]):
    /// the shell checks the transaction right after it
    /// ([`crate::migrate::run::fence`]).
    pub fn may_end_transaction(&self, step: u32) -> bool {
        self.plan.steps.at(step).execute && self.mode(step).may_end_transaction
    }

    /// The step executes a file that runs outside any transaction.
    pub fn runs_alone(&self, step: u32) -> bool {
        self.plan.steps.at(step).execute && self.mode(step).no_transaction
    }

    /// The step executes a file whose tool ran it in its schema.
    pub fn in_its_schema(&self, step: u32) -> bool {
        self.plan.steps.at(step).execute && self.migration(step).in_its_schema
    }

    /// The step executes a file that asks for a commit right after it, and
    /// the run is not a dry run.
    pub fn commits_after(&self, step: u32) -> bool {
        self.plan.steps.at(step).execute && self.mode(step).commit_after && !self.dry_run
    }

    /// How the step runs within its unit (see `transactions::split`).
    pub fn step_mode(&self, step: u32) -> StepMode {
        StepMode {
            alone: self.runs_alone(step),
            commit_after: self.commits_after(step),
            backfill: self.backfill(step).is_some(),
        }
    }

    /// The plan's schemas that a single directory's file runs in, in the
    /// plan's order.
    pub fn single_schemas(&self) -> Vec<String> {
        let mut single = vec![false; self.plan.schemas.len()];
        for step in &self.plan.steps {
            if !self.sources[step.migration as usize].migration_type.is_tenant() {
                single[step.schema as usize] = true;
            }
        }
        self.plan.schemas.iter().zip(single).filter(|(_, s)| *s).map(|(name, _)| name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::format::Part;
    use crate::migrate::plan::Action;
    use crate::migrate::plan::tests::{fresh, migration};
    use crate::migrate::source::MigrationType::{SingleMigration, TenantMigration};

    fn with(dir: &str, name: &str, contents: &str) -> SourceMigration {
        let migration_type = if dir == "tenants" { TenantMigration } else { SingleMigration };
        SourceMigration::plain(dir, name, migration_type, contents)
    }

    const BACKFILL: &str = "-- strata:backfill table={schema}.orders key=id batch=500\n\
                            update {schema}.orders set total_cents = total * 100 where {range};\n";

    /// config/001 (plain), tenants/001 (no transaction), tenants/002
    /// (a commit after), tenants/003 (a backfill), over tenants a and b.
    fn sources() -> Vec<SourceMigration> {
        vec![
            migration("config", "001.sql", SingleMigration),
            with("tenants", "001.sql", "-- strata:no-transaction\ncreate index concurrently i on {schema}.t (x);\n"),
            with("tenants", "002.sql", "alter type {schema}.mood add value 'meh';\n"),
            with("tenants", "003.sql", BACKFILL),
        ]
    }

    /// [`sources`], their plan over `tenants` and the files' rules.
    fn planned(tenants: &[&str]) -> (Vec<SourceMigration>, Plan, Vec<FileRules>) {
        let sources = sources();
        let plan = fresh(&sources, tenants, Action::Apply);
        let rules = check(Driver::Postgres, &sources, &plan, false, "{schema}").unwrap();
        (sources, plan, rules)
    }

    fn step_of(plan: &Plan, sources: &[SourceMigration], file: &str, schema: &str) -> u32 {
        let index = plan
            .steps
            .iter()
            .position(|s| sources[s.migration as usize].file == file && plan.schema_of(s) == schema)
            .unwrap();
        index as u32
    }

    #[test]
    fn each_step_is_the_file_and_schema_it_runs() {
        let (sources, plan, rules) = planned(&["a", "b"]);
        let files = StepFiles::new(&plan, &sources, &rules, false);
        let step = step_of(&plan, &sources, "tenants/001.sql", "b");
        assert_eq!(files.schema(step), "b");
        assert_eq!(files.file(step), "tenants/001.sql");
        assert_eq!(files.migration(step).name, "001.sql");
        assert!(files.text(step).contains("create index concurrently"));
        assert_eq!(files.single_schemas(), vec!["config".to_string()]);
    }

    #[test]
    fn directives_decide_how_an_executed_step_runs() {
        let (sources, plan, rules) = planned(&["a"]);
        let files = StepFiles::new(&plan, &sources, &rules, false);
        let mode = |file| files.step_mode(step_of(&plan, &sources, file, "a"));
        assert_eq!(mode("tenants/001.sql"), StepMode { alone: true, commit_after: false, backfill: false });
        assert_eq!(mode("tenants/002.sql"), StepMode { alone: false, commit_after: true, backfill: false });
        assert_eq!(mode("tenants/003.sql"), StepMode { alone: false, commit_after: false, backfill: true });
        let plain = step_of(&plan, &sources, "config/001.sql", "config");
        assert_eq!(files.step_mode(plain), StepMode::default());
        let backfill = step_of(&plan, &sources, "tenants/003.sql", "a");
        assert_eq!(files.backfill(backfill).map(|spec| spec.batch), Some(500));
        assert!(files.may_be_backfill(backfill));
        assert!(!files.may_be_backfill(plain));
    }

    #[test]
    fn a_dry_run_commits_after_no_file() {
        let (sources, plan, rules) = planned(&["a"]);
        let files = StepFiles::new(&plan, &sources, &rules, true);
        assert!(!files.commits_after(step_of(&plan, &sources, "tenants/002.sql", "a")));
    }

    #[test]
    fn a_step_that_only_records_runs_as_nothing_and_its_file_is_not_read() {
        // Sync records every file without executing any: even a file that
        // cannot run as written is not refused.
        let mut sources = sources();
        sources.push(with("tenants", "004.sql", "commit;\n"));
        let plan = fresh(&sources, &["a"], Action::Sync);
        let rules = check(Driver::Postgres, &sources, &plan, false, "{schema}").unwrap();
        assert!(rules.iter().all(|rule| *rule == FileRules::default()));
        let files = StepFiles::new(&plan, &sources, &rules, false);
        for step in 0..plan.steps.len() as u32 {
            assert_eq!(files.step_mode(step), StepMode::default());
            assert!(!files.in_its_schema(step));
        }
    }

    #[test]
    fn every_refusal_of_every_file_comes_at_once() {
        let mut sources = sources();
        sources.push(with("tenants", "004.sql", "commit;\n"));
        sources.push(with("tenants", "005.sql", "-- strata:nonsense\nselect 1;\n"));
        let plan = fresh(&sources, &["a", "b"], Action::Apply);
        let Refusals(refused) = check(Driver::Postgres, &sources, &plan, false, "{schema}").unwrap_err();
        let files: Vec<&str> = refused.iter().map(|r| r.file()).collect();
        assert_eq!(files, ["tenants/004.sql", "tenants/005.sql"], "{refused:?}");
    }

    #[test]
    fn a_backfill_is_refused_in_a_version_run_as_one_transaction() {
        let sources = sources();
        let plan = fresh(&sources, &["a"], Action::Apply);
        let Refusals(refused) = check(Driver::Postgres, &sources, &plan, true, "{schema}").unwrap_err();
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].file(), "tenants/003.sql");
    }

    #[test]
    fn a_revert_runs_the_down_part_and_no_backfill() {
        let mut sources = sources();
        for source in &mut sources {
            source.down = Some(Part {
                file: source.file.replace(".sql", ".down.sql"),
                text: "select 1;\n".into(),
                no_transaction: false,
            });
        }
        let mut plan = fresh(&sources, &["a"], Action::Apply);
        plan.direction = Direction::Revert;
        let rules = check(Driver::Postgres, &sources, &plan, false, "{schema}").unwrap();
        let files = StepFiles::new(&plan, &sources, &rules, false);
        let step = step_of(&plan, &sources, "tenants/003.sql", "a");
        assert_eq!(files.file(step), "tenants/003.down.sql");
        assert_eq!(files.text(step), "select 1;\n");
        assert_eq!(files.backfill(step), None);
        assert!(files.may_be_backfill(step), "its forward part names the directive");
    }

    #[test]
    fn only_a_forward_plan_in_one_message_is_read_whole() {
        let sources = sources();
        let mut plan = fresh(&sources, &["a"], Action::Apply);
        assert_eq!(readable(Driver::Postgres, true, &sources, &plan), vec![true; 4]);
        assert_eq!(readable(Driver::Postgres, false, &sources, &plan), vec![false; 4]);
        plan.direction = Direction::Revert;
        assert_eq!(readable(Driver::Postgres, true, &sources, &plan), vec![false; 4]);
    }
}
