//! Desired state: from what a tenant's schema *should* be (a file of DDL)
//! to the steps that bring each live schema there, tenants grouped by
//! identical plans so a fleet is reviewed once per group, not per tenant.
//!
//! - **The engine is the parser.** The desired file is never read here:
//!   the shell applies it into a scratch schema inside a transaction it
//!   rolls back, reads that schema's catalog with the same query drift
//!   uses, and hands both catalogs in as [`CatalogObject`]s. What the
//!   engine accepted is what is compared.
//! - **Compared as drift compares** ([`Catalog::new`]): each schema's own
//!   name replaced by `{schema}`, blanks squeezed — the scratch schema and
//!   every tenant compare alike. Steps are written from the unsqueezed
//!   text, so a routine's body keeps its lines.
//! - **A plan** ([`Plan`]) is the ordered DDL from a live catalog to the
//!   desired one, each step marked `destructive` when it loses data (a
//!   table or column dropped, a column's type changed other than widened).
//!   What no DDL of ours can reach (a relation that changes kind, an enum
//!   value removed) is listed in [`Plan::unplannable`], never guessed.
//!   One planner per engine: `desired/postgres.rs`, `desired/mysql.rs`,
//!   `desired/sqlite.rs` (which rebuilds a changed table, as SQLite
//!   prescribes), `desired/sqlserver.rs`.
//! - **Groups** ([`Grouping`]): tenants whose plans are the same text share
//!   one group, named by the plan's SHA-256; the report lists the largest
//!   group first, and lints each group's plan with the same rules as files.
//! - **Read beyond drift** (the shell's desired reading): a column's
//!   identity or generation, so a created table has them (a column whose
//!   identity or generation differs is unplannable), and each table's
//!   column order, used only to write a table a plan creates
//!   ([`COLUMN_ORDER`]). **Not read**: serial sequences' ownership,
//!   comments, grants, partitions.

mod mysql;
mod postgres;
pub mod scope;
pub mod sqlite;
mod sqlserver;
mod steps;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::migrate::driver::Driver;
use crate::migrate::fingerprint::{CatalogObject, PLACEHOLDER, replace_schema, squeeze};
use crate::migrate::lint::{self, Finding, LintInput};

/// One object of a normalised catalog: what is compared and what is
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Object {
    /// The definition, schema replaced and blanks squeezed (compared).
    pub(crate) compared: String,
    /// The definition, schema replaced, blanks as the engine wrote them
    /// (written into steps).
    pub(crate) text: String,
}

/// The kind of the objects that give a table's columns in their order
/// (one name a line; several objects of one table add their lines in
/// order): used to write a table a plan creates, never
/// compared (a column added later stands last, wherever the file puts it).
pub const COLUMN_ORDER: &str = "column order";

/// A schema's catalog keyed by (kind, name), its own name replaced by
/// `{schema}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub(crate) objects: std::collections::BTreeMap<(String, String), Object>,
    /// Each table's columns in their order ([`COLUMN_ORDER`]).
    pub(crate) column_order: std::collections::BTreeMap<String, Vec<String>>,
}

impl Catalog {
    /// The catalog of `schema` read as `objects` (the engine's catalog
    /// query, as drift reads it).
    pub fn new(schema: &str, objects: &[CatalogObject]) -> Catalog {
        let mut catalog = Catalog::default();
        for object in objects {
            let name = replace_schema(schema, &object.name);
            if object.kind.eq_ignore_ascii_case(COLUMN_ORDER) {
                // One object a table, or one a column in order (SQL Server).
                let columns = object.definition.lines().map(|column| replace_schema(schema, column));
                catalog.column_order.entry(name).or_default().extend(columns);
                continue;
            }
            let text = replace_schema(schema, &object.definition);
            catalog.objects.insert((object.kind.to_ascii_lowercase(), name), Object { compared: squeeze(&text), text });
        }
        catalog
    }

    /// Where `column` of `table` stands in the table (unknown: after the
    /// known ones).
    pub(crate) fn column_position(&self, table: &str, column: &str) -> usize {
        self.column_order.get(table).and_then(|order| order.iter().position(|c| c == column)).unwrap_or(usize::MAX)
    }

    /// The definition of the object `kind` `name`, as compared.
    pub(crate) fn get(&self, kind: &str, name: &str) -> Option<&Object> {
        self.objects.get(&(kind.to_string(), name.to_string()))
    }

    /// Every object of `kind`: (name, object), by name.
    pub(crate) fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = (&'a str, &'a Object)> + 'a {
        self.objects
            .range((kind.to_string(), String::new())..)
            .take_while(move |((k, _), _)| k == kind)
            .map(|((_, name), object)| (name.as_str(), object))
    }

    /// Whether the catalog holds nothing.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The catalog's fingerprint (of the compared objects; drift prints
    /// its own reading, which lacks identity and generation).
    pub fn fingerprint(&self) -> String {
        let normalized: Vec<CatalogObject> = self
            .objects
            .iter()
            .map(|((kind, name), object)| CatalogObject {
                kind: kind.clone(),
                name: name.clone(),
                definition: object.compared.clone(),
            })
            .collect();
        crate::migrate::fingerprint::fingerprint(&normalized)
    }
}

/// One statement of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The statement, without its `;`, the schema written `{schema}`.
    pub sql: String,
    /// Whether it loses data: a table or column dropped, a column's type
    /// changed other than widened.
    pub destructive: bool,
}

/// The steps from a live catalog to the desired one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The statements, in the order they run.
    pub steps: Vec<Step>,
    /// Differences no generated statement reaches, one sentence each.
    pub unplannable: Vec<String>,
}

impl Plan {
    /// The plan as a migration file: each step followed by `;`, the
    /// unplannable differences as leading comments.
    pub fn file_text(&self) -> String {
        let mut text = String::new();
        for reason in &self.unplannable {
            text.push_str("-- not planned: ");
            text.push_str(reason);
            text.push('\n');
        }
        for step in &self.steps {
            text.push_str(step.sql.trim_end());
            text.push_str(";\n");
        }
        text
    }

    /// The plan's name: the SHA-256 of [`Plan::file_text`].
    pub fn hash(&self) -> String {
        crate::migrate::source::checksum(self.file_text().as_bytes())
    }

    /// Whether the schema already is in the desired state.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.unplannable.is_empty()
    }

    /// Whether a step loses data.
    pub fn destructive(&self) -> bool {
        self.steps.iter().any(|s| s.destructive)
    }
}

/// The plan from `live` to `desired`, both read from `driver`'s engine.
pub fn plan(driver: Driver, desired: &Catalog, live: &Catalog) -> Plan {
    match driver {
        Driver::Postgres => postgres::plan(desired, live),
        Driver::Mysql => mysql::plan(desired, live),
        Driver::Sqlite => sqlite::plan(desired, live),
        Driver::SqlServer => sqlserver::plan(desired, live),
    }
}

/// Tenants grouped by identical plans, built one tenant at a time (a
/// fleet's catalogs are never held at once).
#[derive(Debug, Default)]
pub struct Grouping {
    by_hash: FxHashMap<String, usize>,
    groups: Vec<(String, Plan, Vec<String>)>,
}

impl Grouping {
    /// Adds `tenant`, whose plan is `plan`. Plans of the same text share a
    /// group; a step is destructive in the group when it is in any of its
    /// tenants' plans (the same statement can lose data in one schema and
    /// not in another: a column's type narrowed from one type, widened
    /// from another).
    pub fn add(&mut self, tenant: String, plan: Plan) {
        let hash = plan.hash();
        match self.by_hash.get(&hash) {
            Some(&at) => {
                let (_, kept, tenants) = &mut self.groups[at];
                for (step, theirs) in kept.steps.iter_mut().zip(&plan.steps) {
                    step.destructive |= theirs.destructive;
                }
                tenants.push(tenant);
            }
            None => {
                self.by_hash.insert(hash.clone(), self.groups.len());
                self.groups.push((hash, plan, vec![tenant]));
            }
        }
    }

    /// The report: groups largest first (ties by plan hash), tenants by
    /// name, each plan linted for `driver` (`citus`: the Citus rules too)
    /// and written with `placeholder` for the schema.
    pub fn report(self, desired: &Catalog, driver: Driver, citus: bool, placeholder: &str) -> DesiredReport {
        let mut groups: Vec<DesiredGroup> = self
            .groups
            .into_iter()
            .map(|(hash, plan, mut tenants)| {
                tenants.sort();
                let written = |text: &str| text.replace(PLACEHOLDER, placeholder);
                let file = format!("desired/{hash}.sql");
                let text = written(&plan.file_text());
                let input =
                    LintInput { driver, files: &[(file.as_str(), text.as_str())], lock_timeout_set: true, citus };
                let findings = if plan.steps.is_empty() { Vec::new() } else { lint::lint(&input).findings };
                DesiredGroup {
                    destructive: plan.destructive(),
                    steps: plan
                        .steps
                        .iter()
                        .map(|s| Step { sql: written(&s.sql), destructive: s.destructive })
                        .collect(),
                    unplannable: plan.unplannable,
                    plan: hash,
                    tenants,
                    findings,
                }
            })
            .collect();
        groups.sort_by(|a, b| b.tenants.len().cmp(&a.tenants.len()).then_with(|| a.plan.cmp(&b.plan)));
        DesiredReport {
            desired: desired.fingerprint(),
            tenants: groups.iter().map(|g| g.tenants.len()).sum(),
            differing: groups.iter().filter(|g| !g.in_desired_state()).map(|g| g.tenants.len()).sum(),
            groups,
        }
    }
}

/// Every tenant's way to the desired state, grouped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DesiredReport {
    /// The desired catalog's fingerprint (of what is compared: equal for
    /// every schema in the desired state).
    pub desired: String,
    /// Tenants planned.
    pub tenants: usize,
    /// Tenants not in the desired state.
    pub differing: usize,
    /// The groups, largest first.
    pub groups: Vec<DesiredGroup>,
}

impl DesiredReport {
    /// Whether any tenant differs from the desired state.
    pub fn has_differences(&self) -> bool {
        self.differing > 0
    }
}

/// Tenants that share one plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DesiredGroup {
    /// The plan's SHA-256 (of its file text).
    pub plan: String,
    /// The tenants, by name.
    pub tenants: Vec<String>,
    /// The statements, in order.
    pub steps: Vec<Step>,
    /// Whether a step loses data.
    pub destructive: bool,
    /// Differences no statement reaches.
    pub unplannable: Vec<String>,
    /// What the linter finds in the plan, as in a migration file.
    pub findings: Vec<Finding>,
}

impl DesiredGroup {
    /// Whether its tenants already are in the desired state.
    pub fn in_desired_state(&self) -> bool {
        self.steps.is_empty() && self.unplannable.is_empty()
    }
}

/// The directory a group's plan is recorded under when it is applied
/// (`desired/<plan>.sql`): never a configured directory, so never read
/// from the sources — the planner does not count such a record as
/// missing.
pub const PLAN_DIRECTORY: &str = "desired";

/// Whether a recorded file is a desired-state plan: the tenants'
/// `desired/…` ([`PLAN_DIRECTORY`]), or a single schema's
/// `<directory>/desired/<plan>.sql` (its plan's SHA-256: no configured
/// directory's file is read from a subdirectory).
pub fn is_plan_file(file: &str) -> bool {
    if file.strip_prefix(PLAN_DIRECTORY).is_some_and(|rest| rest.starts_with('/')) {
        return true;
    }
    let Some((directory, name)) = file.rsplit_once('/') else { return false };
    let hash = name.strip_suffix(".sql").unwrap_or_default();
    directory.ends_with(&format!("/{PLAN_DIRECTORY}"))
        && hash.len() == 64
        && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What `apply --desired` does with groups whose plan loses data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Destructive {
    /// Nothing runs while one exists (the default).
    #[default]
    Refuse,
    /// They run too (`--allow-destructive`).
    Allow,
    /// The other groups run; they are left as they are
    /// (`--skip-destructive`).
    Skip,
}

/// The groups `apply --desired` runs, and those it leaves with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection<'a> {
    /// Each runs as a version over its tenants, its plan recorded as
    /// `desired/<plan>.sql`.
    pub run: Vec<&'a DesiredGroup>,
    /// Left as they are: (group, why).
    pub left: Vec<(&'a DesiredGroup, String)>,
}

/// Why `apply --desired` runs nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestructiveGroups(pub Vec<String>);

impl std::fmt::Display for DestructiveGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} group(s) would lose data, so nothing ran: {}; run them with --allow-destructive, or the others with \
             --skip-destructive",
            self.0.len(),
            self.0.join("; ")
        )
    }
}

impl std::error::Error for DestructiveGroups {}

/// Why `apply --desired --group PLAN` runs nothing: no group's plan, or
/// more than one, starts with what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoSuchGroup {
    /// The plan (or the start of it) asked for.
    pub asked: String,
    /// The plans that differ from the desired state, as shown (12
    /// characters), largest group first.
    pub plans: Vec<String>,
    /// How many groups' plans start with it (0, or more than one).
    pub matching: usize,
}

impl std::fmt::Display for NoSuchGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.matching {
            0 => write!(f, "no group of tenants has plan {}", self.asked)?,
            n => write!(f, "{n} groups have a plan starting with {}: give more of it", self.asked)?,
        }
        match self.plans.is_empty() {
            true => write!(f, "; every tenant is in the desired state; nothing ran"),
            false => write!(f, "; the plans: {}; nothing ran", self.plans.join(", ")),
        }
    }
}

impl std::error::Error for NoSuchGroup {}

/// `report` narrowed to the one group whose plan is `plan` or starts with
/// it (`apply --desired --group PLAN`): the other groups are not part of
/// the run at all. A prefix naming no group, or several, is refused.
pub fn only_group(mut report: DesiredReport, plan: &str) -> Result<DesiredReport, NoSuchGroup> {
    let asked = plan.trim().to_ascii_lowercase();
    let matching = report.groups.iter().filter(|g| !asked.is_empty() && g.plan.starts_with(&asked)).count();
    if matching != 1 {
        let plans = report.groups.iter().filter(|g| !g.in_desired_state());
        let plans = plans.map(|g| g.plan[..12.min(g.plan.len())].to_string()).collect();
        return Err(NoSuchGroup { asked: plan.to_string(), plans, matching });
    }
    report.groups.retain(|g| g.plan.starts_with(&asked));
    report.tenants = report.groups[0].tenants.len();
    report.differing = if report.groups[0].in_desired_state() { 0 } else { report.tenants };
    Ok(report)
}

/// Why nothing is planned to a desired schema: migration files of the
/// schemas planned are pending, and a plan is made from the live schemas,
/// which they would change first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingMigrations {
    /// The files pending.
    pub files: u64,
    /// Their runs over the tenants (a single schema's: one each).
    pub runs: u64,
    /// The single schema whose files are pending; `None`: the tenants'.
    pub schema: Option<String>,
}

impl std::fmt::Display for PendingMigrations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.schema {
            None => write!(
                f,
                "{} tenant migration file(s) are pending ({} runs over the tenants): apply them first (strata \
                 apply), then the desired schema; nothing ran",
                self.files, self.runs
            ),
            Some(schema) => write!(
                f,
                "{} migration file(s) of {schema} are pending: apply them first (strata apply), then the desired \
                 schema; nothing ran",
                self.files
            ),
        }
    }
}

impl std::error::Error for PendingMigrations {}

/// Whether the fleet can be planned to a desired schema now, given what an
/// apply of the migrations would run (`pending`): not while a tenant
/// migration file is pending.
pub fn ready(pending: &crate::migrate::summary::Counts) -> Result<(), PendingMigrations> {
    match pending.tenant_migrations_total {
        0 => Ok(()),
        runs => Err(PendingMigrations { files: pending.tenant_migrations, runs, schema: None }),
    }
}

/// Whether the single schema `schema` can be planned to a desired schema
/// now, given the migrations pending per schema, `(schema, migrations)`
/// (as `report::pending_counts` counts them): not while one of its own is.
pub fn single_ready<'a>(
    pending: impl IntoIterator<Item = (&'a str, u64)>,
    schema: &str,
) -> Result<(), PendingMigrations> {
    match pending.into_iter().find(|(name, _)| *name == schema) {
        None | Some((_, 0)) => Ok(()),
        Some((_, files)) => Err(PendingMigrations { files, runs: files, schema: Some(schema.to_string()) }),
    }
}

/// Whether a single schema can be brought to a desired schema now: its
/// version runs every pending migration, so none may be pending — the
/// tenants' (`counts`, as an apply would run them) nor any single
/// schema's (`singles`: each single schema's pending migrations, as
/// `report::pending_counts` counts them).
pub fn single_apply_ready<'a>(
    counts: &crate::migrate::summary::Counts,
    singles: impl IntoIterator<Item = (&'a str, u64)>,
) -> Result<(), PendingMigrations> {
    ready(counts)?;
    match singles.into_iter().find(|(_, files)| *files > 0) {
        None => Ok(()),
        Some((schema, files)) => Err(PendingMigrations { files, runs: files, schema: Some(schema.to_string()) }),
    }
}

/// The groups to run under `destructive` (see [`Destructive`]): groups in
/// the desired state need nothing; a group with differences no statement
/// reaches is left (its plan would not get it there); a destructive group
/// refuses the whole run, runs, or is left. Groups are named with their
/// schemas as `noun`s (`tenant`, or `schema` for a single schema's), as
/// [`render_text_of`] names them.
pub fn selection<'a>(
    report: &'a DesiredReport,
    destructive: Destructive,
    noun: &str,
) -> Result<Selection<'a>, DestructiveGroups> {
    let mut selection = Selection { run: Vec::new(), left: Vec::new() };
    let mut refused = Vec::new();
    for group in report.groups.iter().filter(|g| !g.in_desired_state()) {
        let name = format!("plan {} ({} {noun}(s))", &group.plan[..12.min(group.plan.len())], group.tenants.len());
        if !group.unplannable.is_empty() {
            selection.left.push((group, format!("{name}: not planned: {}", group.unplannable.join("; "))));
            continue;
        }
        if group.destructive {
            let step = group.steps.iter().find(|s| s.destructive).map_or("", |s| s.sql.as_str());
            match destructive {
                Destructive::Refuse => {
                    refused.push(format!("{name}: {step}"));
                    continue;
                }
                Destructive::Skip => {
                    selection.left.push((group, format!("{name}: destructive ({step})")));
                    continue;
                }
                Destructive::Allow => {}
            }
        }
        selection.run.push(group);
    }
    if refused.is_empty() { Ok(selection) } else { Err(DestructiveGroups(refused)) }
}

/// A group's plan as the file its version records, its statements as
/// [`Plan::file_text`] writes them: the tenants' `desired/<plan>.sql`, or
/// — `single` naming a `singleMigrations` directory — that directory's
/// single schema's `<directory>/desired/<plan>.sql`, a single migration of
/// it (never read from the sources: [`is_plan_file`]).
pub fn plan_source(group: &DesiredGroup, single: Option<&str>) -> crate::migrate::source::SourceMigration {
    use crate::migrate::MigrationType::{SingleMigration, TenantMigration};
    let plan = Plan { steps: group.steps.clone(), unplannable: group.unplannable.clone() };
    let name = format!("{}.sql", group.plan);
    match single {
        None => {
            crate::migrate::source::SourceMigration::plain(PLAN_DIRECTORY, &name, TenantMigration, &plan.file_text())
        }
        Some(directory) => {
            let mut source =
                crate::migrate::source::SourceMigration::plain(directory, &name, SingleMigration, &plan.file_text());
            source.name = format!("{PLAN_DIRECTORY}/{name}");
            source.file = format!("{directory}/{PLAN_DIRECTORY}/{name}");
            source
        }
    }
}

/// What `strata new --desired` writes: the plan of the largest group that
/// differs, as one migration file for the whole fleet, and how each other
/// group fares once it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MajorityFile<'a> {
    /// The group whose plan the file holds.
    pub group: &'a DesiredGroup,
    /// Every other group, largest first.
    pub others: Vec<OtherGroup<'a>>,
}

/// A group beside the one whose plan became the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherGroup<'a> {
    /// The group.
    pub group: &'a DesiredGroup,
    /// Whether the file's every step is one its own plan has too: the
    /// file runs there as it does in the majority.
    pub fits: bool,
    /// What its plan has beyond the file's (still to do after it).
    pub left: Vec<&'a Step>,
    /// What the file does that its plan does not (where the file would
    /// fail or change what should stay).
    pub not_needed: Vec<&'a Step>,
}

/// The file `strata new --desired` writes (see [`MajorityFile`]); `None`
/// when no tenant differs, or when the largest group already is in the
/// desired state (a file for the whole fleet would change it).
pub fn majority_file(report: &DesiredReport) -> Option<MajorityFile<'_>> {
    let group = report.groups.first().filter(|g| !g.in_desired_state())?;
    let others = report.groups[1..]
        .iter()
        .map(|other| {
            let left: Vec<&Step> = other.steps.iter().filter(|s| !group.steps.contains(s)).collect();
            let not_needed: Vec<&Step> = group.steps.iter().filter(|s| !other.steps.contains(s)).collect();
            OtherGroup { group: other, fits: not_needed.is_empty(), left, not_needed }
        })
        .collect();
    Some(MajorityFile { group, others })
}

/// What `new --desired` says of the groups beside the file: one line per
/// group, the tenants shown up to ten.
pub fn render_others(file: &MajorityFile<'_>) -> String {
    let mut out = String::new();
    for other in &file.others {
        let shown: Vec<&str> = other.group.tenants.iter().take(10).map(String::as_str).collect();
        let more = other.group.tenants.len().saturating_sub(shown.len());
        let tenants = if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") };
        let line = match (other.fits, other.left.len()) {
            (true, 0) => format!("{tenants}: the file brings them to the desired schema too\n"),
            (true, left) => format!(
                "{tenants}: the file runs there; {left} step(s) left after it (strata diff --desired shows them)\n"
            ),
            (false, _) => format!(
                "{tenants}: the file does not fit them ({} of its step(s) not theirs, first: {}); fix them first \
                 or leave them out of the version\n",
                other.not_needed.len(),
                other.not_needed.first().map_or("", |s| s.sql.lines().next().unwrap_or_default())
            ),
        };
        out.push_str(&line);
    }
    out
}

/// The report as text: one paragraph per group.
pub fn render_text(report: &DesiredReport) -> String {
    render_text_of(report, "tenant")
}

/// [`render_text`] of a report whose schemas are `noun`s: `tenant`, or
/// `schema` for a single schema's.
pub fn render_text_of(report: &DesiredReport, noun: &str) -> String {
    let mut out = format!(
        "{} of {} {noun}(s) differ from the desired schema, in {} group(s)\n",
        report.differing,
        report.tenants,
        report.groups.iter().filter(|g| !g.in_desired_state()).count()
    );
    for group in &report.groups {
        let shown: Vec<&str> = group.tenants.iter().take(10).map(String::as_str).collect();
        let more = group.tenants.len().saturating_sub(shown.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        out.push('\n');
        if group.in_desired_state() {
            out.push_str(&format!(
                "{} {noun}(s) in the desired state: {}{more}\n",
                group.tenants.len(),
                shown.join(", ")
            ));
            continue;
        }
        let destructive = if group.destructive { ", destructive" } else { "" };
        out.push_str(&format!(
            "plan {} ({} step(s){destructive}) for {} {noun}(s): {}{more}\n",
            &group.plan[..12.min(group.plan.len())],
            group.steps.len(),
            group.tenants.len(),
            shown.join(", ")
        ));
        for reason in &group.unplannable {
            out.push_str(&format!("  not planned: {reason}\n"));
        }
        for step in &group.steps {
            let mark = if step.destructive { "  [destructive] " } else { "  " };
            let sql = step.sql.trim_end().replace('\n', "\n    ");
            out.push_str(&format!("{mark}{sql};\n"));
        }
        for finding in &group.findings {
            out.push_str(&format!("  lint {} ({}): {}\n", finding.rule, finding.severity.name(), finding.message));
        }
    }
    out
}

#[cfg(test)]
mod tests;
