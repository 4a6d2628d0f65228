//! Fleet drift: a fingerprint of each schema's live catalog, and which
//! tenants differ from the other tenants that recorded the same migrations.
//!
//! Checksums say whether a migration *file* changed; they cannot see a
//! hot-fix `ALTER` run by hand on one tenant, a half-applied no-transaction
//! file, a dropped index or a tenant restored from an old dump. Those show
//! in the catalog.
//!
//! - **The catalog** enters as [`CatalogObject`]s, one per table, column,
//!   index, constraint, view, routine, trigger or type, each with the
//!   engine's own definition text, read by the shell with one query per
//!   schema or per batch of schemas (each dialect's `sql.rs`), or, on
//!   MySQL and MariaDB, in one pass over the server when that costs less
//!   ([`one_pass_pays`]). Object ids, statistics, sizes and column order
//!   are not read: they differ between healthy tenants.
//! - **Normalisation** ([`normalize`]) replaces the schema's own name,
//!   wherever it stands as a whole word or as a part of an identifier cut
//!   by `_` (`t1.users`, `"t1"`, `` `t1` ``, `t1_users_email`), by
//!   `{schema}` — so objects whose names embed the schema name compare
//!   equal across tenants — squeezes blanks, and sorts. A letter or digit
//!   next to the name keeps it (`t10` is not `t1`). A tenant named like one
//!   of its own objects (a tenant `users` with a table `users`) reads as
//!   different from the others: name tenants unlike tables.
//! - **The fingerprint** ([`fingerprint`]) is the SHA-256 of the normalised
//!   objects, one `kind\tname\tdefinition` line each.
//! - **Outliers** ([`outliers`]): tenants are grouped by their recorded
//!   migrations; in a group, the fingerprint most tenants share is the
//!   majority (ties: the smallest fingerprint, so the answer is stable); a
//!   tenant with another fingerprint is an outlier, shown against a tenant
//!   of the majority ([`diff`]). A group of one or two has no majority to
//!   speak of: its members are reported only when two differ.
//! - **Changed since recorded** ([`report`]'s `stored`): the executor stores
//!   each schema's fingerprint, with the identity of what it recorded, once
//!   a version committed something there; a live fingerprint that differs
//!   from the stored one *for the same recorded migrations* means the schema
//!   changed outside the service since its last migration — for a tenant
//!   alone in its group, and for single schemas, which have no group. A
//!   stored fingerprint of other recorded migrations (a version killed
//!   before it stored them) is not judged.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

/// One object of a schema's catalog, as the engine describes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CatalogObject {
    /// `table`, `column`, `index`, `constraint`, `view`, `routine`,
    /// `trigger`, `type`, …
    pub kind: String,
    /// Its name (a column: `table.column`).
    pub name: String,
    /// The engine's definition of it (type, nullability and default of a
    /// column; the `CREATE INDEX` of an index; …).
    pub definition: String,
}

/// What the schema's name is replaced by.
pub const PLACEHOLDER: &str = "{schema}";

/// The objects with `schema`'s name replaced by [`PLACEHOLDER`], blanks
/// squeezed, sorted and without duplicates (see the module documentation).
pub fn normalize(schema: &str, objects: &[CatalogObject]) -> Vec<CatalogObject> {
    let mut out: Vec<CatalogObject> = objects
        .iter()
        .map(|object| CatalogObject {
            kind: object.kind.to_ascii_lowercase(),
            name: replace_schema(schema, &object.name),
            definition: squeeze(&replace_schema(schema, &object.definition)),
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Blanks squeezed to one space, trimmed.
pub(crate) fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Letters and digits extend a name; anything else (`_`, `.`, quotes,
/// blanks, operators) ends it.
fn extends_name(c: char) -> bool {
    c.is_alphanumeric() || c == '$'
}

/// `text` with every occurrence of `schema` (compared without case) that
/// no letter or digit touches replaced by [`PLACEHOLDER`].
pub(crate) fn replace_schema(schema: &str, text: &str) -> String {
    if schema.is_empty() {
        return text.to_string();
    }
    let lower_text = text.to_lowercase();
    let lower_schema = schema.to_lowercase();
    if lower_text.len() != text.len() {
        // Case folding changed byte lengths (rare scripts): compare as is.
        return replace_exact(schema, text);
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &lower_text[i..];
        if rest.starts_with(&lower_schema) {
            let before = text[..i].chars().next_back();
            let after = text[i + schema.len()..].chars().next();
            if !before.is_some_and(extends_name) && !after.is_some_and(extends_name) {
                out.push_str(PLACEHOLDER);
                i += schema.len();
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or_default();
        out.push(c);
        i += c.len_utf8().max(1);
    }
    out
}

fn replace_exact(schema: &str, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(schema) {
        let before = rest[..at].chars().next_back().or_else(|| out.chars().next_back());
        let after = rest[at + schema.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(extends_name) || after.is_some_and(extends_name) {
            out.push_str(schema);
        } else {
            out.push_str(PLACEHOLDER);
        }
        rest = &rest[at + schema.len()..];
    }
    out.push_str(rest);
    out
}

/// The fingerprint of normalised objects: lowercase hex SHA-256.
pub fn fingerprint(normalized: &[CatalogObject]) -> String {
    let mut text = String::new();
    for object in normalized {
        text.push_str(&object.kind);
        text.push('\t');
        text.push_str(&object.name);
        text.push('\t');
        text.push_str(&object.definition);
        text.push('\n');
    }
    crate::migrate::source::checksum(text.as_bytes())
}

/// The print of `schema`'s catalog: the [`fingerprint`] of its
/// [`normalize`]d objects — what is stored after a version and compared
/// by drift.
pub fn catalog_print(schema: &str, objects: &[CatalogObject]) -> String {
    fingerprint(&normalize(schema, objects))
}

/// How many databases' share of a pass over the whole server's catalog
/// one schema's lookup costs on MySQL and MariaDB: `information_schema`
/// looks a single schema up by name (about 2.1 ms for a tenant of 21
/// columns beside 2,000 such databases, MariaDB 10.11) but scans every
/// database for any other filter, so a batch costs about a pass; the pass,
/// ordered by schema, costs 0.45–0.6 ms a database.
pub const LOOKUP_COST_IN_DATABASES: usize = 4;

/// Whether the catalogs of `wanted` schemas are read in one pass over the
/// server's `databases` (MySQL, MariaDB) rather than one lookup each: when
/// the lookups would cost more ([`LOOKUP_COST_IN_DATABASES`]). A fleet's
/// drift check and the prints stored after a version over the fleet read
/// most of the server; a version over a few tenants reads a few.
pub fn one_pass_pays(wanted: usize, databases: usize) -> bool {
    wanted > 1 && wanted.saturating_mul(LOOKUP_COST_IN_DATABASES) >= databases
}

/// The prints of the `wanted` schemas, folded from a pass over a server's
/// catalog in schema order (byte order, as `str` compares): one schema's
/// objects are held at a time; a wanted schema the pass does not show (no
/// objects) has the print of an empty catalog; other schemas' objects are
/// passed over, as is a schema seen again after another (rows out of order
/// are a shell's error).
#[derive(Debug)]
pub struct PassPrints<'a> {
    wanted: &'a [String],
    /// Indexes into `wanted`, by name.
    sorted: Vec<usize>,
    /// How many of `sorted` have their print.
    done: usize,
    /// The schema being read and its objects so far, when it is wanted.
    current: Option<(String, Vec<CatalogObject>)>,
    prints: Vec<Option<String>>,
}

impl<'a> PassPrints<'a> {
    /// Ready for the pass; `wanted` in any order, names may repeat.
    pub fn new(wanted: &'a [String]) -> Self {
        let mut sorted: Vec<usize> = (0..wanted.len()).collect();
        sorted.sort_by(|&a, &b| wanted[a].cmp(&wanted[b]));
        PassPrints { wanted, sorted, done: 0, current: None, prints: vec![None; wanted.len()] }
    }

    /// The next object of the pass, in `schema`.
    pub fn push(&mut self, schema: String, object: CatalogObject) {
        if let Some((current, objects)) = &mut self.current
            && *current == schema
        {
            objects.push(object);
            return;
        }
        self.close_current();
        self.print_empty_before(Some(&schema));
        if self.sorted.get(self.done).is_some_and(|&at| self.wanted[at] == schema) {
            self.current = Some((schema, vec![object]));
        }
    }

    /// The prints, in `wanted`'s order, once the pass is over.
    pub fn finish(mut self) -> Vec<String> {
        self.close_current();
        self.print_empty_before(None);
        self.prints.into_iter().map(Option::unwrap_or_default).collect()
    }

    /// The schema being read is over: its print, each time it is wanted.
    fn close_current(&mut self) {
        if let Some((schema, objects)) = self.current.take() {
            let print = catalog_print(&schema, &objects);
            while let Some(&at) = self.sorted.get(self.done)
                && self.wanted[at] == schema
            {
                self.prints[at] = Some(print.clone());
                self.done += 1;
            }
        }
    }

    /// The wanted schemas sorted before `schema` (all of those left, for
    /// `None`) showed no object: the print of an empty catalog.
    fn print_empty_before(&mut self, schema: Option<&str>) {
        while let Some(&at) = self.sorted.get(self.done)
            && schema.is_none_or(|schema| self.wanted[at].as_str() < schema)
        {
            self.prints[at] = Some(fingerprint(&[]));
            self.done += 1;
        }
    }
}

/// A schema's fingerprint and what it recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaState {
    /// The schema (a tenant).
    pub schema: String,
    /// What identifies its recorded migrations (the shell joins the files
    /// recorded in it; any text that is equal for equal sets).
    pub recorded: Arc<str>,
    /// Its fingerprint.
    pub fingerprint: Arc<str>,
}

/// Each distinct digest (a fingerprint or a recorded identity) held once:
/// over a fleet, most tenants share a handful of them, and holding one
/// copy per tenant of each (64 hex characters, three times over) was most
/// of what drift kept per tenant.
#[derive(Debug, Default)]
pub struct Digests(FxHashSet<Arc<str>>);

impl Digests {
    /// The shared copy of `digest`.
    pub fn intern(&mut self, digest: &str) -> Arc<str> {
        if let Some(held) = self.0.get(digest) {
            return held.clone();
        }
        let held: Arc<str> = Arc::from(digest);
        self.0.insert(held.clone());
        held
    }
}

/// Tenants that recorded the same migrations, and how their schemas look.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftGroup {
    /// The recorded migrations' identity.
    pub recorded: String,
    /// The fingerprint most of the group shares.
    pub majority: String,
    /// The tenants with that fingerprint, sorted.
    pub tenants: Vec<String>,
    /// The tenants with another one.
    pub outliers: Vec<Outlier>,
}

/// A tenant whose schema differs from the majority of its group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outlier {
    /// The tenant.
    pub schema: String,
    /// Its fingerprint.
    pub fingerprint: String,
    /// A tenant of the majority, to compare with.
    pub reference: String,
}

/// The groups of `states` (sorted by their first tenant), each with its
/// majority and outliers.
pub fn outliers(states: &[SchemaState]) -> Vec<DriftGroup> {
    let mut by_recorded: std::collections::BTreeMap<&str, Vec<&SchemaState>> = std::collections::BTreeMap::new();
    for state in states {
        by_recorded.entry(&state.recorded).or_default().push(state);
    }
    let mut groups: Vec<DriftGroup> = by_recorded
        .into_iter()
        .map(|(recorded, members)| {
            let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
            for member in &members {
                *counts.entry(&member.fingerprint).or_default() += 1;
            }
            // Most members; on a tie the smallest fingerprint (BTreeMap order).
            let majority = counts.iter().fold(("", 0), |best, (f, n)| if *n > best.1 { (f, *n) } else { best }).0;
            let mut tenants: Vec<String> =
                members.iter().filter(|m| &*m.fingerprint == majority).map(|m| m.schema.clone()).collect();
            tenants.sort();
            let reference = tenants.first().cloned().unwrap_or_default();
            let mut outliers: Vec<Outlier> = members
                .iter()
                .filter(|m| &*m.fingerprint != majority)
                .map(|m| Outlier {
                    schema: m.schema.clone(),
                    fingerprint: m.fingerprint.to_string(),
                    reference: reference.clone(),
                })
                .collect();
            outliers.sort_by(|a, b| a.schema.cmp(&b.schema));
            DriftGroup { recorded: recorded.to_string(), majority: majority.to_string(), tenants, outliers }
        })
        .collect();
    groups.sort_by(|a, b| a.tenants.first().cmp(&b.tenants.first()));
    groups
}

/// How an outlier's object differs from the reference's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// The object's kind.
    pub kind: String,
    /// Its name (normalised).
    pub name: String,
    /// `added` (only the outlier has it), `missing` (only the reference
    /// has it) or `changed`.
    pub change: &'static str,
    /// The reference's definition (none when added).
    pub expected: Option<String>,
    /// The outlier's definition (none when missing).
    pub found: Option<String>,
}

/// The name of a [`Difference::change`] read back from text (the API's
/// answer): `added`, `missing`, else `changed`.
pub fn change_name(text: &str) -> &'static str {
    match text {
        "added" => "added",
        "missing" => "missing",
        _ => "changed",
    }
}

/// What differs between the normalised objects of a reference tenant and
/// an outlier, ordered by kind and name.
pub fn diff(reference: &[CatalogObject], outlier: &[CatalogObject]) -> Vec<Difference> {
    let key = |o: &CatalogObject| (o.kind.clone(), o.name.clone());
    let expected: std::collections::BTreeMap<(String, String), &str> =
        reference.iter().map(|o| (key(o), o.definition.as_str())).collect();
    let found: std::collections::BTreeMap<(String, String), &str> =
        outlier.iter().map(|o| (key(o), o.definition.as_str())).collect();
    let mut keys: Vec<&(String, String)> = expected.keys().chain(found.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let (e, f) = (expected.get(k).copied(), found.get(k).copied());
            let change = match (e, f) {
                (Some(a), Some(b)) if a == b => return None,
                (Some(_), Some(_)) => "changed",
                (None, Some(_)) => "added",
                (Some(_), None) => "missing",
                (None, None) => return None,
            };
            Some(Difference {
                kind: k.0.clone(),
                name: k.1.clone(),
                change,
                expected: e.map(str::to_string),
                found: f.map(str::to_string),
            })
        })
        .collect()
}

/// The identity of a schema's recorded migrations: the SHA-256 of its
/// `(file, checksum)` pairs, sorted — equal for equal sets, whatever order
/// they were recorded in.
pub fn recorded_identity<F: AsRef<str>, C: AsRef<str>>(recorded: &[(F, C)]) -> String {
    let mut lines: Vec<String> =
        recorded.iter().map(|(file, checksum)| format!("{}\t{}\n", file.as_ref(), checksum.as_ref())).collect();
    lines.sort();
    lines.dedup();
    crate::migrate::source::checksum(lines.concat().as_bytes())
}

/// What the shell read of one tenant.
#[derive(Debug, Clone)]
pub struct TenantCatalog {
    /// The tenant's schema.
    pub schema: String,
    /// Its recorded migrations.
    pub recorded: Recorded,
    /// Its live catalog, as read.
    pub objects: Vec<CatalogObject>,
}

/// A schema's recorded migrations, as drift needs them: their identity
/// and count (not the rows: over 10,000 tenants, holding every `(file,
/// checksum)` pair next to the catalogs cost a quarter of the memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// [`recorded_identity`] of its `(file, checksum)` pairs.
    pub identity: Arc<str>,
    /// How many.
    pub migrations: usize,
}

impl Default for Recorded {
    /// No migration recorded (its identity is that of the empty set).
    fn default() -> Self {
        Recorded::of::<&str, &str>(&[])
    }
}

impl Recorded {
    /// Of these `(file, checksum)` pairs.
    pub fn of<F: AsRef<str>, C: AsRef<str>>(pairs: &[(F, C)]) -> Recorded {
        Recorded { identity: recorded_identity(pairs).into(), migrations: pairs.len() }
    }
}

/// Each schema's [`Recorded`], built from bookkeeping rows ordered by
/// schema as the shell reads them one at a time (over 10,000 tenants,
/// holding every recorded row at once cost more than the catalogs).
/// Scripts do not count: they run on every version.
#[derive(Debug, Default)]
pub struct RecordedBySchema {
    done: FxHashMap<String, Recorded>,
    digests: Digests,
    schema: Option<String>,
    pairs: Vec<(String, String)>,
}

impl RecordedBySchema {
    /// One recorded row; rows of one schema come together.
    pub fn push(&mut self, schema: &str, file: String, checksum: String, kind: crate::migrate::MigrationType) {
        if self.schema.as_deref() != Some(schema) {
            self.close();
            self.schema = Some(schema.to_string());
        }
        if !kind.is_script() {
            self.pairs.push((file, checksum));
        }
    }

    fn close(&mut self) {
        if let Some(schema) = self.schema.take() {
            let identity = self.digests.intern(&recorded_identity(&self.pairs));
            self.done.insert(schema, Recorded { identity, migrations: self.pairs.len() });
        }
        self.pairs.clear();
    }

    /// Every schema's recorded migrations.
    pub fn finish(mut self) -> FxHashMap<String, Recorded> {
        self.close();
        self.done
    }
}

/// An outlier's differences from its reference tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutlierReport {
    /// The outlier.
    pub schema: String,
    /// The tenant of the majority it is compared with.
    pub reference: String,
    /// How many migrations its group recorded.
    pub migrations: usize,
    /// What differs.
    pub differences: Vec<Difference>,
}

/// The fleet's drift: tenants grouped by recorded migrations, each group's
/// majority fingerprint, and every outlier with its differences.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftReport {
    /// Tenants read.
    pub tenants: usize,
    /// Their groups (by recorded migrations).
    pub groups: Vec<DriftGroup>,
    /// The outliers, with what differs.
    pub outliers: Vec<OutlierReport>,
    /// Schemas (tenants and single schemas) whose live fingerprint differs
    /// from the one stored after their last committed unit, sorted.
    pub changed: Vec<ChangedSchema>,
}

/// A schema that changed since the service last fingerprinted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedSchema {
    /// The schema.
    pub schema: String,
    /// The fingerprint stored after its last committed unit.
    pub stored: String,
    /// Its fingerprint now.
    pub live: String,
}

impl DriftReport {
    /// Whether any tenant differs from its group's majority, or any schema
    /// from what was stored after its last migration.
    pub fn has_drift(&self) -> bool {
        !self.outliers.is_empty() || !self.changed.is_empty()
    }
}

/// A fingerprint the executor stored, and the identity of what the schema
/// had recorded then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The fingerprint.
    pub fingerprint: Arc<str>,
    /// [`recorded_identity`] of the schema's migrations then.
    pub recorded: Arc<str>,
}

/// A tenant once its catalog was read: its state (recorded migrations and
/// fingerprint) and how many migrations it recorded. The catalog itself is
/// not kept: over 10,000 tenants, the catalogs are what fills memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantPrint {
    /// Its schema, recorded identity and fingerprint.
    pub state: SchemaState,
    /// How many migrations it recorded.
    pub migrations: usize,
}

impl TenantPrint {
    /// Of a tenant's catalog as read (normalized and fingerprinted here;
    /// the fingerprint held once in `digests`).
    pub fn of(tenant: &TenantCatalog, digests: &mut Digests) -> TenantPrint {
        let print = catalog_print(&tenant.schema, &tenant.objects);
        TenantPrint::printed(tenant.schema.clone(), &tenant.recorded, &print, digests)
    }

    /// Of a tenant whose catalog's fingerprint the shell computed as it
    /// read it (held once in `digests`).
    pub fn printed(schema: String, recorded: &Recorded, print: &str, digests: &mut Digests) -> TenantPrint {
        TenantPrint {
            state: SchemaState { schema, recorded: recorded.identity.clone(), fingerprint: digests.intern(print) },
            migrations: recorded.migrations,
        }
    }
}

/// Fleet drift in two steps, so a shell can read the catalogs in batches
/// and hold none of them for long: [`Drift::new`] groups the tenants'
/// prints; [`Drift::needed`] names the catalogs the report compares (each
/// outlier and its reference), which the shell reads again;
/// [`Drift::report`] explains the outliers from those.
#[derive(Debug, Clone)]
pub struct Drift {
    states: Vec<SchemaState>,
    migrations: FxHashMap<String, usize>,
    groups: Vec<DriftGroup>,
}

impl Drift {
    /// The tenants' prints, grouped by recorded migrations.
    pub fn new(prints: Vec<TenantPrint>) -> Drift {
        let mut migrations = FxHashMap::with_capacity_and_hasher(prints.len(), Default::default());
        let states: Vec<SchemaState> = prints
            .into_iter()
            .map(|print| {
                migrations.insert(print.state.schema.clone(), print.migrations);
                print.state
            })
            .collect();
        let groups = outliers(&states);
        Drift { states, migrations, groups }
    }

    /// The tenants whose catalogs [`Drift::report`] compares: every outlier
    /// and its reference, sorted.
    pub fn needed(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .groups
            .iter()
            .flat_map(|group| group.outliers.iter().flat_map(|o| [o.schema.clone(), o.reference.clone()]))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The report: `catalogs` holds the catalogs [`Drift::needed`] named, as
    /// read; each of the tenants and of `singles` (single schemas) whose
    /// fingerprint differs from its entry in `stored` for the same recorded
    /// migrations is `changed`.
    pub fn report(
        self,
        catalogs: &FxHashMap<String, Vec<CatalogObject>>,
        singles: &[TenantCatalog],
        stored: &std::collections::BTreeMap<String, Stored>,
    ) -> DriftReport {
        let normalized = |schema: &str| normalize(schema, catalogs.get(schema).map_or(&[][..], Vec::as_slice));
        let mut reports = Vec::new();
        for group in &self.groups {
            for outlier in &group.outliers {
                reports.push(OutlierReport {
                    schema: outlier.schema.clone(),
                    reference: outlier.reference.clone(),
                    migrations: self.migrations.get(&outlier.schema).copied().unwrap_or_default(),
                    differences: diff(&normalized(&outlier.reference), &normalized(&outlier.schema)),
                });
            }
        }
        reports.sort_by(|a, b| a.schema.cmp(&b.schema));
        let mut changed: Vec<ChangedSchema> = self
            .states
            .iter()
            .map(|s| (s.schema.clone(), s.recorded.clone(), s.fingerprint.to_string()))
            .chain(singles.iter().map(|single| {
                let live = catalog_print(&single.schema, &single.objects);
                (single.schema.clone(), single.recorded.identity.clone(), live)
            }))
            .filter_map(|(schema, recorded, live)| match stored.get(&schema) {
                Some(before) if before.recorded == recorded && *before.fingerprint != *live => {
                    Some(ChangedSchema { stored: before.fingerprint.to_string(), live, schema })
                }
                _ => None,
            })
            .collect();
        changed.sort_by(|a, b| a.schema.cmp(&b.schema));
        DriftReport { tenants: self.states.len(), groups: self.groups, outliers: reports, changed }
    }
}

/// [`Drift`] in one call, every catalog in memory (small fleets, tests):
/// fingerprints every tenant, groups them, and explains each outlier.
pub fn report(
    tenants: Vec<TenantCatalog>,
    singles: &[TenantCatalog],
    stored: &std::collections::BTreeMap<String, Stored>,
) -> DriftReport {
    let mut digests = Digests::default();
    let drift = Drift::new(tenants.iter().map(|tenant| TenantPrint::of(tenant, &mut digests)).collect());
    let needed: FxHashSet<String> = drift.needed().into_iter().collect();
    let catalogs = tenants.into_iter().filter(|t| needed.contains(&t.schema)).map(|t| (t.schema, t.objects)).collect();
    drift.report(&catalogs, singles, stored)
}

/// Definitions longer than this are cut in text output (JSON has them whole).
const SHOWN_DEFINITION: usize = 160;

fn shown(definition: &str) -> String {
    match definition.char_indices().nth(SHOWN_DEFINITION) {
        Some((at, _)) => format!("{}…", &definition[..at]),
        None => definition.to_string(),
    }
}

/// The report for people (`strata drift`).
pub fn render_text(report: &DriftReport) -> String {
    let mut out = String::new();
    let outliers = report.outliers.len();
    out.push_str(&format!(
        "{} tenant(s) in {} group(s) by recorded migrations; {} outlier(s).\n",
        report.tenants,
        report.groups.len(),
        outliers
    ));
    for outlier in &report.outliers {
        out.push_str(&format!(
            "\n{} differs from {} (same {} recorded migration(s)):\n",
            outlier.schema, outlier.reference, outlier.migrations
        ));
        for d in &outlier.differences {
            let line = match d.change {
                "added" => format!("  + {} {}: {}", d.kind, d.name, shown(d.found.as_deref().unwrap_or_default())),
                "missing" => format!("  - {} {}: {}", d.kind, d.name, shown(d.expected.as_deref().unwrap_or_default())),
                _ => format!(
                    "  ~ {} {}: {} → {}",
                    d.kind,
                    d.name,
                    shown(d.expected.as_deref().unwrap_or_default()),
                    shown(d.found.as_deref().unwrap_or_default())
                ),
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    if !report.changed.is_empty() {
        let names: Vec<&str> = report.changed.iter().map(|c| c.schema.as_str()).collect();
        out.push_str(&format!(
            "\nchanged since the service last migrated them (live fingerprint differs from the stored one): {}\n",
            names.join(", ")
        ));
    }
    if !report.has_drift() {
        out.push_str("No drift: every tenant looks like the others that recorded the same migrations.\n");
    }
    out
}

#[cfg(test)]
mod tests;
