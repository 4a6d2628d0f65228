//! The SQL Server planner: T-SQL from one catalog (as
//! `db/sqlserver/sql.rs`'s `DESIRED_CATALOGS` reads it) to another.
//!
//! The reading gives what the `sys` views hold, one row a part, as SQL
//! Server 2008 R2 cannot aggregate text (no `string_agg`; Babelfish's `for
//! xml path` is not SQL Server's): a column's type, identity, nullability
//! or computation (`column`), its default (`default`), each table's
//! columns in order (`column order`), an index or key constraint's kind
//! and filter (`index`) and each of its columns (`index column`,
//! `k001`… for keys, `i001`… for included ones), a check, a foreign key
//! (`foreign key`, its columns as `foreign key column`), and a view's,
//! routine's or trigger's own `CREATE` text (`sys.sql_modules`). The
//! planner puts the parts back together ([`Parts`]) and compares whole
//! clauses.
//!
//! - **Names the server made up** are not compared: a primary key is
//!   `primary key`, a unique constraint without a name `unique <index
//!   id>`, a check without one `check <definition>`, a foreign key without
//!   one `references <table> <first column>`. Such a constraint is dropped
//!   by the name the live server gave it, looked up where the step runs
//!   (`DECLARE @drop_n … EXEC`); a default always is (SQL Server names
//!   them `DF__…`, Babelfish `DF_t_n`).
//! - **A module** (view, procedure, function, trigger) is made again from
//!   its own text when it differs, through `EXEC (N'…')`: T-SQL wants
//!   `CREATE VIEW` first in its batch, and a plan is one batch.
//! - **What a plan does not reach**: a column whose identity or computation
//!   changes, a relation that changes kind, a user-defined type; an index
//!   or a schema-bound view over a column whose type changes is not
//!   dropped first (the engine says so when the plan runs).
//!
//! # What is destructive
//!
//! `DROP TABLE`, `DROP COLUMN`, and a column's type changed other than
//! widened ([`widens`]): an integer to a wider integer, `varchar(n)` or
//! `nvarchar(n)` to one at least as long (or `max`, or `varchar` to
//! `nvarchar`), `real` to `float`, `decimal(p,s)` to more digits on either
//! side.

use std::collections::{BTreeMap, BTreeSet};

use super::steps::{Builder, Phase, parts_of, relations};
use super::{Catalog, Object, Plan};
use crate::migrate::fingerprint::{PLACEHOLDER, squeeze};
use crate::migrate::ident::{quote_sqlserver, quote_string_sqlserver as literal};

/// The plan from `live` to `desired` (see the module documentation).
pub(super) fn plan(desired: &Catalog, live: &Catalog) -> Plan {
    let mut out = Planner { builder: Builder::default(), dynamic: 0 };
    let want = relations(desired);
    let have = relations(live);
    let names: BTreeSet<&str> = want.keys().chain(have.keys()).copied().collect();
    for name in names {
        match (want.get(name).copied(), have.get(name).copied()) {
            (Some("table"), None) => out.create_table(desired, name),
            (None, Some("table")) => {
                out.builder.push(Phase::DropTables, format!("DROP TABLE {}", qualified(name)), true)
            }
            (Some(a), Some(b)) if a != b => {
                out.builder.cannot(format!("{name} is a {a} in the desired schema and a {b} here"))
            }
            (Some("table"), Some(_)) => {
                out.columns(desired, live, name);
                out.table_parts(desired, live, name);
            }
            // Views are modules: made and dropped with them below.
            (Some("view"), _) | (_, Some("view")) => {}
            (Some(kind), _) | (_, Some(kind)) => out.builder.cannot(format!("{name}: a {kind} is not planned")),
            (None, None) => {}
        }
    }
    out.modules(desired, live);
    let types: BTreeSet<&str> = desired.of_kind("type").chain(live.of_kind("type")).map(|(name, _)| name).collect();
    for name in types {
        if desired.get("type", name).map(|t| &t.compared) != live.get("type", name).map(|t| &t.compared) {
            out.builder.cannot(format!("type {name}: a user-defined type is not planned"));
        }
    }
    out.builder.finish()
}

/// `name` quoted as T-SQL reads it unchanged.
fn ident(name: &str) -> String {
    quote_sqlserver(name)
}

/// `name` in the tenant's schema.
fn qualified(name: &str) -> String {
    format!("{PLACEHOLDER}.{}", ident(name))
}

struct Planner {
    builder: Builder,
    /// Variables declared so far (`@drop_1`, …): a plan is one batch.
    dynamic: usize,
}

/// A table's keys, indexes, checks and foreign keys as whole clauses, by
/// the name the catalog gives each.
struct Parts {
    /// Primary keys, unique constraints and indexes: (kind words, columns,
    /// included columns, filter).
    indexes: BTreeMap<String, IndexParts>,
    /// Checks: their definition.
    checks: BTreeMap<String, String>,
    /// Foreign keys: `(columns) REFERENCES target (columns) ON …`.
    foreign_keys: BTreeMap<String, String>,
}

#[derive(PartialEq, Eq)]
struct IndexParts {
    /// `primary key clustered`, `unique nonclustered`, `unique nonclustered
    /// index`, `clustered index`, …
    kind: String,
    /// A primary key's own name (`[orders_pk]`), when it was given one.
    named: Option<String>,
    /// `[a], [b] desc`.
    columns: String,
    /// `[c]`, or empty.
    included: String,
    /// The filter (`([a]>(0))`), or empty.
    filter: String,
}

impl IndexParts {
    fn is_constraint(&self) -> bool {
        !self.kind.ends_with(" index")
    }
}

impl Parts {
    fn of(catalog: &Catalog, table: &str) -> Parts {
        let mut columns: BTreeMap<&str, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
        for (part, column) in parts_of(catalog, "index column", table) {
            let (index, position) = part.rsplit_once('.').unwrap_or((part, ""));
            let entry = columns.entry(index).or_default();
            match position.starts_with('i') {
                true => entry.1.push(column.text.trim()),
                false => entry.0.push(column.text.trim()),
            }
        }
        let indexes = parts_of(catalog, "index", table)
            .map(|(name, index)| {
                let (kind, filter) = index.text.trim().split_once(" where ").unwrap_or((index.text.trim(), ""));
                let (kind, named) = match kind.split_once(" named ") {
                    Some((kind, named)) => (kind, Some(named.to_string())),
                    None => (kind, None),
                };
                let (keys, included) = columns.get(name).cloned().unwrap_or_default();
                let parts = IndexParts {
                    kind: kind.to_string(),
                    named,
                    columns: keys.join(", "),
                    included: included.join(", "),
                    filter: filter.to_string(),
                };
                (name.to_string(), parts)
            })
            .collect();
        let checks =
            parts_of(catalog, "check", table).map(|(n, c)| (n.to_string(), c.text.trim().to_string())).collect();
        let mut pairs: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
        for (part, pair) in parts_of(catalog, "foreign key column", table) {
            let (key, _) = part.rsplit_once('.').unwrap_or((part, ""));
            let (from, to) = pair.text.trim().split_once(" -> ").unwrap_or((pair.text.trim(), ""));
            pairs.entry(key).or_default().push((from, to));
        }
        let foreign_keys = parts_of(catalog, "foreign key", table)
            .map(|(name, key)| {
                let pairs = pairs.get(name).cloned().unwrap_or_default();
                let from: Vec<&str> = pairs.iter().map(|(from, _)| *from).collect();
                let to: Vec<&str> = pairs.iter().map(|(_, to)| *to).collect();
                // `references {schema}.[t] on delete … on update …`
                let text = key.text.trim();
                let (target, rules) = text.split_once(" on ").map_or((text, ""), |(t, r)| (t, r));
                let target = target.trim_start_matches("references ").trim();
                let clause = format!(
                    "({}) REFERENCES {target} ({}) ON {}",
                    from.join(", "),
                    to.join(", "),
                    rules.to_ascii_uppercase()
                );
                (name.to_string(), clause)
            })
            .collect();
        Parts { indexes, checks, foreign_keys }
    }
}

/// A made-up name's constraint kind (see the module documentation).
fn system_named(name: &str) -> bool {
    name == "primary key"
        || name.starts_with("unique ")
        || name.starts_with("check ")
        || name.starts_with("references ")
}

/// A key constraint's clause in `CREATE TABLE` or `ADD`.
fn key_clause(name: &str, index: &IndexParts) -> String {
    let named = match &index.named {
        Some(quoted) => format!("CONSTRAINT {quoted} "),
        None if system_named(name) => String::new(),
        None => format!("CONSTRAINT {} ", ident(name)),
    };
    format!("{named}{} ({})", index.kind.to_ascii_uppercase(), index.columns)
}

/// A check's clause.
fn check_clause(name: &str, definition: &str) -> String {
    match system_named(name) {
        true => format!("CHECK {definition}"),
        false => format!("CONSTRAINT {} CHECK {definition}", ident(name)),
    }
}

/// A column's definition cut where its type ends.
fn type_of(definition: &str) -> &str {
    let definition = definition.trim();
    let cut = [" identity", " not null", " null", " as "]
        .iter()
        .filter_map(|clause| definition.find(clause))
        .min()
        .unwrap_or(definition.len());
    &definition[..cut]
}

/// What a column is beside its type and nullability: its identity or its
/// computation (neither is changed by a plan).
fn made_as(definition: &str) -> String {
    let definition = squeeze(definition.trim());
    let identity = definition.find(" identity").map(|at| &definition[at..]).unwrap_or_default();
    let identity = identity.split(" not null").next().unwrap_or_default().split(" null").next().unwrap_or_default();
    let computed = if definition.starts_with("as ") { definition.as_str() } else { "" };
    format!("{identity}{computed}")
}

impl Planner {
    /// `ALTER TABLE … DROP CONSTRAINT` of the constraint `lookup` finds on
    /// the live server (a query of one `name` column, `{table}` its
    /// table's `OBJECT_ID`).
    fn drop_found(&mut self, phase: Phase, table: &str, lookup: &str) {
        self.dynamic += 1;
        let variable = format!("@drop_{}", self.dynamic);
        let object_id = format!("OBJECT_ID({})", literal(&qualified(table)));
        let query = lookup.replace("{table}", &object_id);
        let alter = literal(&format!("ALTER TABLE {} DROP CONSTRAINT ", qualified(table)));
        self.builder.push(
            phase,
            format!("DECLARE {variable} sysname = ({query}); EXEC ({alter} + QUOTENAME({variable}))"),
            false,
        );
    }

    /// Drops `column`'s default, by the name the live server gave it.
    fn drop_default(&mut self, table: &str, column: &str) {
        let lookup = format!(
            "SELECT d.name FROM sys.default_constraints d JOIN sys.columns c ON c.object_id = d.parent_object_id \
             AND c.column_id = d.parent_column_id WHERE d.parent_object_id = {{table}} AND c.name = {}",
            literal(column)
        );
        self.drop_found(Phase::DropConstraints, table, &lookup);
    }

    fn add_default(&mut self, table: &str, column: &str, default: &Object) {
        self.builder.push(
            Phase::AddConstraints,
            format!("ALTER TABLE {} ADD DEFAULT {} FOR {}", qualified(table), default.text.trim(), ident(column)),
            false,
        );
    }

    /// `CREATE TABLE` with its columns in the desired order, their
    /// defaults, its keys and checks; its indexes and foreign keys follow
    /// in their phases.
    fn create_table(&mut self, desired: &Catalog, name: &str) {
        let mut columns: Vec<(&str, &Object)> = parts_of(desired, "column", name).collect();
        columns.sort_by_key(|(column, _)| desired.column_position(name, column));
        let mut lines: Vec<String> = columns
            .iter()
            .map(|(column, c)| {
                let default = desired.get("default", &format!("{name}.{column}"));
                let default = default.map(|d| format!(" DEFAULT {}", d.text.trim())).unwrap_or_default();
                format!("    {} {}{default}", ident(column), c.text.trim())
            })
            .collect();
        let parts = Parts::of(desired, name);
        lines.extend(
            parts.indexes.iter().filter(|(_, i)| i.is_constraint()).map(|(n, i)| format!("    {}", key_clause(n, i))),
        );
        lines.extend(parts.checks.iter().map(|(n, c)| format!("    {}", check_clause(n, c))));
        self.builder.push(
            Phase::CreateTables,
            format!("CREATE TABLE {} (\n{}\n)", qualified(name), lines.join(",\n")),
            false,
        );
        for (index, i) in parts.indexes.iter().filter(|(_, i)| !i.is_constraint()) {
            self.create_index(name, index, i);
        }
        for (key, clause) in &parts.foreign_keys {
            self.add_foreign_key(name, key, clause);
        }
    }

    fn create_index(&mut self, table: &str, name: &str, index: &IndexParts) {
        let included = match index.included.is_empty() {
            true => String::new(),
            false => format!(" INCLUDE ({})", index.included),
        };
        let filter = match index.filter.is_empty() {
            true => String::new(),
            false => format!(" WHERE {}", index.filter),
        };
        self.builder.push(
            Phase::CreateIndexes,
            format!(
                "CREATE {} {} ON {} ({}){included}{filter}",
                index.kind.to_ascii_uppercase(),
                ident(name),
                qualified(table),
                index.columns
            ),
            false,
        );
    }

    fn add_foreign_key(&mut self, table: &str, name: &str, clause: &str) {
        let named = if system_named(name) { String::new() } else { format!("CONSTRAINT {} ", ident(name)) };
        self.builder.push(
            Phase::AddForeignKeys,
            format!("ALTER TABLE {} ADD {named}FOREIGN KEY {clause}", qualified(table)),
            false,
        );
    }

    /// Drops constraint `name` of `table`: by its name, or by what the live
    /// server named it (`lookup`) when the name was made up.
    fn drop_constraint(&mut self, phase: Phase, table: &str, name: &str, lookup: impl FnOnce() -> String) {
        match system_named(name) {
            true => self.drop_found(phase, table, &lookup()),
            false => self.builder.push(
                phase,
                format!("ALTER TABLE {} DROP CONSTRAINT {}", qualified(table), ident(name)),
                false,
            ),
        }
    }

    fn columns(&mut self, desired: &Catalog, live: &Catalog, table: &str) {
        let want: BTreeMap<&str, &Object> = parts_of(desired, "column", table).collect();
        let have: BTreeMap<&str, &Object> = parts_of(live, "column", table).collect();
        let alter = format!("ALTER TABLE {}", qualified(table));
        let mut order: Vec<&str> = want.keys().copied().collect();
        order.sort_by_key(|column| desired.column_position(table, column));
        let default_of =
            |catalog: &'_ Catalog, column: &str| catalog.get("default", &format!("{table}.{column}")).cloned();
        for name in order {
            let (w, wanted_default) = (want[name], default_of(desired, name));
            let Some(h) = have.get(name) else {
                let default = wanted_default.map(|d| format!(" DEFAULT {}", d.text.trim())).unwrap_or_default();
                self.builder.push(
                    Phase::AlterColumns,
                    format!("{alter} ADD {} {}{default}", ident(name), w.text.trim()),
                    false,
                );
                continue;
            };
            let had_default = default_of(live, name);
            let changed = w.compared != h.compared;
            if changed && made_as(&w.text) != made_as(&h.text) {
                self.builder.cannot(format!(
                    "{table}.{name}: its identity or computation differs ({} here, {} in the desired schema)",
                    h.text.trim(),
                    w.text.trim()
                ));
                continue;
            }
            if changed {
                let destructive = !widens(type_of(&h.text), type_of(&w.text));
                self.builder.push(
                    Phase::AlterColumns,
                    format!("{alter} ALTER COLUMN {} {}", ident(name), w.text.trim()),
                    destructive,
                );
            }
            // A default is made again around a column's change (SQL Server
            // refuses to change a column a default depends on).
            let same_default =
                wanted_default.as_ref().map(|d| &d.compared) == had_default.as_ref().map(|d| &d.compared);
            if had_default.is_some() && (changed || !same_default) {
                self.drop_default(table, name);
            }
            if let Some(default) = wanted_default.filter(|_| changed || !same_default) {
                self.add_default(table, name, &default);
            }
        }
        for &name in have.keys().filter(|name| !want.contains_key(*name)) {
            if default_of(live, name).is_some() {
                self.drop_default(table, name);
            }
            self.builder.push(Phase::DropColumns, format!("{alter} DROP COLUMN {}", ident(name)), true);
        }
    }

    /// A table's keys, indexes, checks and foreign keys: each that differs
    /// dropped and made again, each missing made, each extra dropped.
    fn table_parts(&mut self, desired: &Catalog, live: &Catalog, table: &str) {
        let (want, have) = (Parts::of(desired, table), Parts::of(live, table));
        self.indexes(table, &want, &have);
        self.checks(table, &want, &have);
        self.foreign_keys(table, &want, &have);
    }

    /// A table's indexes and keys (primary and unique): [`Self::table_parts`].
    fn indexes(&mut self, table: &str, want: &Parts, have: &Parts) {
        for (name, h) in &have.indexes {
            if want.indexes.get(name).is_some_and(|w| w == h) {
                continue;
            }
            match h.is_constraint() {
                false => self.builder.push(
                    Phase::DropIndexes,
                    format!("DROP INDEX {} ON {}", ident(name), qualified(table)),
                    false,
                ),
                true => {
                    self.drop_constraint(Phase::DropConstraints, table, name, || match name.strip_prefix("unique ") {
                        // Babelfish's `unique_index_id` is not the index's id: joined by name.
                        Some(id) => format!(
                            "SELECT kc.name FROM sys.key_constraints kc JOIN sys.indexes i ON i.object_id = \
                         kc.parent_object_id AND i.name = kc.name WHERE kc.parent_object_id = {{table}} AND \
                         i.index_id = {}",
                            id.parse::<u32>().unwrap_or(0)
                        ),
                        None => "SELECT name FROM sys.key_constraints WHERE parent_object_id = {table} AND type = 'PK'"
                            .to_string(),
                    })
                }
            }
        }
        for (name, w) in &want.indexes {
            if have.indexes.get(name).is_some_and(|h| h == w) {
                continue;
            }
            match w.is_constraint() {
                false => self.create_index(table, name, w),
                true => self.builder.push(
                    Phase::AddConstraints,
                    format!("ALTER TABLE {} ADD {}", qualified(table), key_clause(name, w)),
                    false,
                ),
            }
        }
    }

    /// A table's checks: [`Self::table_parts`].
    fn checks(&mut self, table: &str, want: &Parts, have: &Parts) {
        for (name, h) in &have.checks {
            if want.checks.get(name) != Some(h) {
                self.drop_constraint(Phase::DropConstraints, table, name, || {
                    format!(
                        "SELECT name FROM sys.check_constraints WHERE parent_object_id = {{table}} AND definition = {}",
                        literal(h)
                    )
                });
            }
        }
        for (name, w) in &want.checks {
            if have.checks.get(name) != Some(w) {
                self.builder.push(
                    Phase::AddConstraints,
                    format!("ALTER TABLE {} ADD {}", qualified(table), check_clause(name, w)),
                    false,
                );
            }
        }
    }

    /// A table's foreign keys: [`Self::table_parts`].
    fn foreign_keys(&mut self, table: &str, want: &Parts, have: &Parts) {
        for (name, h) in &have.foreign_keys {
            if want.foreign_keys.get(name).is_some_and(|w| squeeze(w) == squeeze(h)) {
                continue;
            }
            self.drop_constraint(Phase::DropForeignKeys, table, name, || {
                // `references <table> <first column>`: the key from it.
                let first = name.rsplit_once(' ').map_or("", |(_, column)| column);
                format!(
                    "SELECT f.name FROM sys.foreign_keys f JOIN sys.foreign_key_columns fc ON fc.constraint_object_id \
                     = f.object_id AND fc.constraint_column_id = 1 JOIN sys.columns c ON c.object_id = \
                     fc.parent_object_id AND c.column_id = fc.parent_column_id WHERE f.parent_object_id = {{table}} \
                     AND c.name = {}",
                    literal(first)
                )
            });
        }
        for (name, w) in &want.foreign_keys {
            if have.foreign_keys.get(name).is_none_or(|h| squeeze(w) != squeeze(h)) {
                self.add_foreign_key(table, name, w);
            }
        }
    }

    /// Views, routines and triggers: each that differs dropped and made
    /// again from its own text, each missing made, each extra dropped.
    fn modules(&mut self, desired: &Catalog, live: &Catalog) {
        for (kind, drop_phase, create_phase) in [
            ("view", Phase::DropViews, Phase::CreateViews),
            ("routine", Phase::DropRoutines, Phase::CreateRoutines),
            ("trigger", Phase::DropTriggers, Phase::CreateTriggers),
        ] {
            let want: BTreeMap<&str, &Object> = desired.of_kind(kind).collect();
            let have: BTreeMap<&str, &Object> = live.of_kind(kind).collect();
            for (&name, h) in &have {
                if want.get(name).is_none_or(|w| w.compared != h.compared) {
                    let word = module_word(kind, &h.text);
                    self.builder.push(drop_phase, format!("DROP {word} {}", qualified(name)), false);
                }
            }
            for (&name, w) in &want {
                if have.get(name).is_none_or(|h| h.compared != w.compared) {
                    self.builder.push(create_phase, format!("EXEC ({})", literal(w.text.trim())), false);
                }
            }
        }
    }
}

/// The word that drops a module of `kind` defined by `text` (`CREATE
/// PROC[EDURE] …`, `CREATE FUNCTION …`).
fn module_word(kind: &str, text: &str) -> &'static str {
    match kind {
        "view" => "VIEW",
        "trigger" => "TRIGGER",
        _ => {
            let words: Vec<String> = text.split_whitespace().take(4).map(str::to_ascii_lowercase).collect();
            match words.iter().any(|w| w == "function") {
                true => "FUNCTION",
                false => "PROCEDURE",
            }
        }
    }
}

/// Whether every value of column type `from` fits in type `to` unchanged
/// (types as the reading writes them: `int`, `nvarchar(40)`,
/// `decimal(10, 2)`, `varchar(max)`).
pub(super) fn widens(from: &str, to: &str) -> bool {
    let (from, to) = (squeeze(from).to_ascii_lowercase(), squeeze(to).to_ascii_lowercase());
    if from == to {
        return true;
    }
    let parse = |text: &str| -> (String, Vec<String>) {
        match text.split_once('(') {
            Some((base, args)) => {
                (base.trim().to_string(), args.trim_end_matches(')').split(',').map(|a| a.trim().to_string()).collect())
            }
            None => (text.trim().to_string(), Vec::new()),
        }
    };
    let ((from_base, from_args), (to_base, to_args)) = (parse(&from), parse(&to));
    const INTEGERS: [&str; 4] = ["tinyint", "smallint", "int", "bigint"];
    if let Some(a) = INTEGERS.iter().position(|t| *t == from_base) {
        return INTEGERS.iter().position(|t| *t == to_base).is_some_and(|b| b >= a);
    }
    // A length in characters; `max` holds any.
    let length = |args: &[String]| -> Option<u64> {
        match args.first().map(String::as_str) {
            Some("max") => Some(u64::MAX),
            Some(n) => n.parse().ok(),
            None => Some(1),
        }
    };
    let texts = |from: &str, to: &str| {
        matches!(
            (from, to),
            ("varchar", "varchar" | "nvarchar")
                | ("nvarchar", "nvarchar")
                | ("char", "char" | "varchar" | "nvarchar")
                | ("nchar", "nchar" | "nvarchar")
        )
    };
    if texts(&from_base, &to_base) {
        return matches!((length(&from_args), length(&to_args)), (Some(a), Some(b)) if b >= a);
    }
    if from_base == "real" {
        return to_base == "float";
    }
    let decimal = |base: &str| base == "decimal" || base == "numeric";
    if decimal(&from_base) && decimal(&to_base) {
        let digits = |args: &[String]| -> Option<(u32, u32)> {
            Some((args.first()?.parse().ok()?, args.get(1).map_or(Some(0), |s| s.parse().ok())?))
        };
        return match (digits(&from_args), digits(&to_args)) {
            (Some((p1, s1)), Some((p2, s2))) => s2 >= s1 && p2.saturating_sub(s2) >= p1.saturating_sub(s1),
            _ => false,
        };
    }
    false
}

#[cfg(test)]
mod tests;
