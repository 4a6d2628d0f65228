//! The PostgreSQL planner: statements from one catalog (as
//! `db/postgres/sql.rs`'s `CATALOGS` reads it) to another.
//!
//! # Order
//!
//! Statements run in [`Phase`] order: what depends on an object is dropped
//! before it (triggers, views, foreign keys, constraints, indexes,
//! routines), then objects are made in dependency order (types, sequences,
//! tables, columns, constraints with foreign keys last, indexes, routines,
//! views, triggers), and data goes last (columns, tables, sequences,
//! types), so a plan that fails midway has lost nothing yet. Within a
//! phase, by kind and name.
//!
//! # What is destructive
//!
//! `DROP TABLE`, `DROP COLUMN`, `DROP SEQUENCE` (its current value: the
//! next ids would start again), `DROP MATERIALIZED VIEW` (its rows, until a
//! refresh recomputes them; a desired file cannot declare one), and a
//! column's type changed other than widened ([`widens`]): `varchar(n)` to a
//! longer `varchar` or `text`, `smallint` to `integer` to `bigint`, integers
//! to unbounded `numeric`, `real` to `double precision`, `numeric(p,s)` to
//! more precision. Indexes, constraints, views, routines, triggers and
//! types hold no rows: dropping them is not.

use std::collections::{BTreeMap, BTreeSet};

use super::steps::{Builder, Phase, parts_of, relations, split_part};
use super::{Catalog, Object, Plan};
use crate::migrate::driver::Driver;
use crate::migrate::fingerprint::{PLACEHOLDER, squeeze};
use crate::migrate::ident::quote_ansi;
use crate::migrate::keywords::is_reserved;

/// The plan from `live` to `desired` (see the module documentation).
pub(super) fn plan(desired: &Catalog, live: &Catalog) -> Plan {
    let mut out = Builder::default();
    let want = relations(desired);
    let have = relations(live);
    let names: BTreeSet<&str> = want.keys().chain(have.keys()).copied().collect();
    // Tables whose parts are compared one by one: in both, as tables.
    let mut compared_tables = BTreeSet::new();
    for name in names {
        match (want.get(name).copied(), have.get(name).copied()) {
            (Some(kind), None) => create_relation(&mut out, desired, name, kind),
            (None, Some(kind)) => drop_relation(&mut out, name, kind),
            (Some(a), Some(b)) if a != b => {
                out.cannot(format!("{name} is a {} in the desired schema and a {} here", kind_name(a), kind_name(b)))
            }
            (Some(kind), Some(_)) if is_table(kind) => {
                compared_tables.insert(name);
            }
            (Some(kind), Some(_)) => replace_view(&mut out, desired, live, name, kind),
            (None, None) => {}
        }
    }
    columns(&mut out, desired, live, &compared_tables);
    constraints(&mut out, desired, live, &compared_tables);
    indexes(&mut out, desired, live, &compared_tables);
    triggers(&mut out, desired, live, &compared_tables);
    routines(&mut out, desired, live);
    types(&mut out, desired, live);
    out.finish()
}

fn is_table(kind: &str) -> bool {
    matches!(kind, "r" | "p")
}

fn kind_name(kind: &str) -> &'static str {
    match kind {
        "r" => "table",
        "p" => "partitioned table",
        "v" => "view",
        "m" => "materialized view",
        "f" => "foreign table",
        "S" => "sequence",
        _ => "relation",
    }
}

/// `name` as PostgreSQL reads it unchanged: bare when it is a lowercase
/// word no keyword list reserves, else quoted.
fn ident(name: &str) -> String {
    let mut chars = name.chars();
    let simple = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$');
    if simple && !is_reserved(Driver::Postgres, name) { name.to_string() } else { quote_ansi(name) }
}

/// `name` in the tenant's schema.
fn qualified(name: &str) -> String {
    format!("{PLACEHOLDER}.{}", ident(name))
}

fn create_relation(out: &mut Builder, desired: &Catalog, name: &str, kind: &str) {
    match kind {
        "r" => {
            let mut parts: Vec<(&str, &Object)> = parts_of(desired, "column", name).collect();
            parts.sort_by_key(|(column, _)| desired.column_position(name, column));
            let columns: Vec<String> =
                parts.iter().map(|(column, c)| format!("    {} {}", ident(column), c.text)).collect();
            out.push(
                Phase::CreateTables,
                format!("CREATE TABLE {} (\n{}\n)", qualified(name), columns.join(",\n")),
                false,
            );
            for (constraint, c) in parts_of(desired, "constraint", name) {
                add_constraint(out, name, constraint, c);
            }
            for (_, t) in parts_of(desired, "trigger", name) {
                out.push(Phase::CreateTriggers, t.text.trim().to_string(), false);
            }
            let backing = constraint_names(desired);
            for (index, i) in desired.of_kind("index") {
                if !backing.contains(index) && index_table(&i.compared).as_deref() == Some(name) {
                    out.push(Phase::CreateIndexes, i.text.trim().to_string(), false);
                }
            }
        }
        "v" | "m" => {
            let Some(view) = desired.get("view", name) else {
                return out.cannot(format!("view {name} has no definition in the desired catalog"));
            };
            out.push(Phase::CreateViews, view_sql(name, kind, view), false);
        }
        "S" => out.push(Phase::CreateSequences, format!("CREATE SEQUENCE {}", qualified(name)), false),
        other => out.cannot(format!("{name}: a {} is not created by a plan", kind_name(other))),
    }
}

fn drop_relation(out: &mut Builder, name: &str, kind: &str) {
    let target = qualified(name);
    match kind {
        "r" | "p" => out.push(Phase::DropTables, format!("DROP TABLE {target}"), true),
        "v" => out.push(Phase::DropViews, format!("DROP VIEW {target}"), false),
        "m" => out.push(Phase::DropViews, format!("DROP MATERIALIZED VIEW {target}"), true),
        "f" => out.push(Phase::DropTables, format!("DROP FOREIGN TABLE {target}"), false),
        // A sequence owned by a column dropped before it is gone already.
        "S" => out.push(Phase::DropSequences, format!("DROP SEQUENCE IF EXISTS {target}"), true),
        other => out.cannot(format!("{name}: a {} is not dropped by a plan", kind_name(other))),
    }
}

/// A view's `CREATE` from its definition (`pg_get_viewdef`, which ends
/// with `;`).
fn view_sql(name: &str, kind: &str, view: &Object) -> String {
    let body = view.text.trim().trim_end_matches(';').trim_end();
    let what = if kind == "m" { "MATERIALIZED VIEW" } else { "VIEW" };
    format!("CREATE {what} {} AS\n{body}", qualified(name))
}

/// A view in both catalogs: dropped and made again when its query differs
/// (`CREATE OR REPLACE` refuses a column removed or renamed).
fn replace_view(out: &mut Builder, desired: &Catalog, live: &Catalog, name: &str, kind: &str) {
    let (Some(want), have) = (desired.get("view", name), live.get("view", name)) else {
        return;
    };
    if have.is_some_and(|h| h.compared == want.compared) {
        return;
    }
    drop_relation(out, name, kind);
    out.push(Phase::CreateViews, view_sql(name, kind, want), false);
}

/// A column's definition as desired state reads it (`DESIRED_CATALOGS`):
/// type, `not null`, then `default …` with an identity clause, or the
/// generation of a generated column.
struct Column<'a> {
    type_name: &'a str,
    not_null: bool,
    default: Option<&'a str>,
    /// `generated … as identity`, or `generated always as (…) stored`.
    generated: Option<&'a str>,
}

const IDENTITIES: [&str; 2] = [" generated always as identity", " generated by default as identity"];
const GENERATION: &str = " generated always as (";

fn column(text: &str) -> Column<'_> {
    let mut text = text.trim();
    let mut generated = None;
    if let Some(identity) = IDENTITIES.iter().find(|clause| text.ends_with(*clause)) {
        generated = Some(identity.trim());
        text = &text[..text.len() - identity.len()];
    } else if let Some(at) = text.find(GENERATION).filter(|_| text.ends_with(") stored")) {
        generated = Some(text[at..].trim());
        text = &text[..at];
    }
    let (head, default) = match text.find(" default ") {
        Some(at) => (&text[..at], Some(text[at + " default ".len()..].trim())),
        None => (text, None),
    };
    match head.strip_suffix(" not null") {
        Some(type_name) => Column { type_name, not_null: true, default, generated },
        None => Column { type_name: head, not_null: false, default, generated },
    }
}

fn columns(out: &mut Builder, desired: &Catalog, live: &Catalog, tables: &BTreeSet<&str>) {
    for &table in tables {
        let want: BTreeMap<&str, &Object> = parts_of(desired, "column", table).collect();
        let have: BTreeMap<&str, &Object> = parts_of(live, "column", table).collect();
        let alter = format!("ALTER TABLE {}", qualified(table));
        for (&name, w) in &want {
            let Some(h) = have.get(name) else {
                out.push(Phase::AlterColumns, format!("{alter} ADD COLUMN {} {}", ident(name), w.text.trim()), false);
                continue;
            };
            if w.compared == h.compared {
                continue;
            }
            alter_column(out, table, name, &column(&w.text), &column(&h.text));
        }
        for &name in have.keys().filter(|name| !want.contains_key(*name)) {
            out.push(Phase::DropColumns, format!("{alter} DROP COLUMN {}", ident(name)), true);
        }
    }
}

fn alter_column(out: &mut Builder, table: &str, name: &str, want: &Column<'_>, have: &Column<'_>) {
    if want.generated.map(squeeze) != have.generated.map(squeeze) {
        let shown = |clause: Option<&str>| clause.map_or_else(|| "none".to_string(), squeeze);
        return out.cannot(format!(
            "column {table}.{name}: its identity or generation differs (here: {}; desired: {})",
            shown(have.generated),
            shown(want.generated)
        ));
    }
    let column = format!("ALTER TABLE {} ALTER COLUMN {}", qualified(table), ident(name));
    let type_changes = squeeze(want.type_name) != squeeze(have.type_name);
    let default_changes = want.default.map(squeeze) != have.default.map(squeeze);
    if type_changes && have.default.is_some() {
        // The old default might not cast to the new type.
        out.push(Phase::AlterColumns, format!("{column} DROP DEFAULT"), false);
    }
    if type_changes {
        let widening = widens(have.type_name, want.type_name);
        let using = if widening { String::new() } else { format!(" USING {}::{}", ident(name), want.type_name) };
        out.push(Phase::AlterColumns, format!("{column} TYPE {}{using}", want.type_name), !widening);
    }
    if (type_changes && want.default.is_some()) || (!type_changes && default_changes) {
        match want.default {
            Some(default) => out.push(Phase::AlterColumns, format!("{column} SET DEFAULT {default}"), false),
            None => out.push(Phase::AlterColumns, format!("{column} DROP DEFAULT"), false),
        }
    }
    if want.not_null != have.not_null {
        let how = if want.not_null { "SET NOT NULL" } else { "DROP NOT NULL" };
        out.push(Phase::AlterColumns, format!("{column} {how}"), false);
    }
}

/// Whether every value of type `from` fits in type `to` unchanged (types
/// as `format_type` writes them; see the module documentation).
pub(super) fn widens(from: &str, to: &str) -> bool {
    let from = squeeze(from);
    let to = squeeze(to);
    if from == to {
        return true;
    }
    let length = |text: &str, prefix: &str| -> Option<Option<u32>> {
        let rest = text.strip_prefix(prefix)?;
        if rest.is_empty() {
            return Some(None);
        }
        rest.strip_prefix('(')?.strip_suffix(')')?.parse().ok().map(Some)
    };
    if let Some(from_length) = length(&from, "character varying") {
        if to == "text" {
            return true;
        }
        return match (from_length, length(&to, "character varying")) {
            (_, Some(None)) => true,
            (Some(a), Some(Some(b))) => b >= a,
            _ => false,
        };
    }
    const INTEGERS: [&str; 3] = ["smallint", "integer", "bigint"];
    if let Some(a) = INTEGERS.iter().position(|t| *t == from) {
        return INTEGERS.iter().position(|t| *t == to).is_some_and(|b| b >= a) || to == "numeric";
    }
    if from == "real" {
        return to == "double precision";
    }
    if let Some(precision) = from.strip_prefix("numeric(").and_then(|r| r.strip_suffix(')')) {
        if to == "numeric" {
            return true;
        }
        let parse = |p: &str| -> Option<(u32, u32)> {
            let (p, s) = p.split_once(',').unwrap_or((p, "0"));
            Some((p.trim().parse().ok()?, s.trim().parse().ok()?))
        };
        let wider = to.strip_prefix("numeric(").and_then(|r| r.strip_suffix(')')).and_then(parse);
        return match (parse(precision), wider) {
            (Some((p1, s1)), Some((p2, s2))) => s2 >= s1 && p2 - s2.min(p2) >= p1 - s1.min(p1),
            _ => false,
        };
    }
    false
}

/// Every constraint's own name (without its table): the indexes named
/// like one are the constraint's, made and dropped with it.
fn constraint_names(catalog: &Catalog) -> BTreeSet<&str> {
    catalog.of_kind("constraint").map(|(name, _)| split_part(catalog, name).1).collect()
}

fn is_foreign_key(constraint: &Object) -> bool {
    constraint.compared.starts_with("FOREIGN KEY")
}

fn add_constraint(out: &mut Builder, table: &str, name: &str, constraint: &Object) {
    let phase = if is_foreign_key(constraint) { Phase::AddForeignKeys } else { Phase::AddConstraints };
    let sql = format!("ALTER TABLE {} ADD CONSTRAINT {} {}", qualified(table), ident(name), constraint.text.trim());
    out.push(phase, sql, false);
}

fn drop_constraint(out: &mut Builder, table: &str, name: &str, constraint: &Object) {
    let phase = if is_foreign_key(constraint) { Phase::DropForeignKeys } else { Phase::DropConstraints };
    out.push(phase, format!("ALTER TABLE {} DROP CONSTRAINT {}", qualified(table), ident(name)), false);
}

fn constraints(out: &mut Builder, desired: &Catalog, live: &Catalog, tables: &BTreeSet<&str>) {
    for &table in tables {
        let want: BTreeMap<&str, &Object> = parts_of(desired, "constraint", table).collect();
        let have: BTreeMap<&str, &Object> = parts_of(live, "constraint", table).collect();
        for (&name, w) in &want {
            match have.get(name) {
                Some(h) if h.compared == w.compared => {}
                Some(h) => {
                    drop_constraint(out, table, name, h);
                    add_constraint(out, table, name, w);
                }
                None => add_constraint(out, table, name, w),
            }
        }
        for (&name, h) in have.iter().filter(|(name, _)| !want.contains_key(*name)) {
            drop_constraint(out, table, name, h);
        }
    }
}

/// The table an index is on, from its `CREATE INDEX … ON [ONLY] table`.
fn index_table(definition: &str) -> Option<String> {
    let rest = &definition[definition.find(" ON ")? + " ON ".len()..];
    let rest = rest.strip_prefix("ONLY ").unwrap_or(rest);
    let rest = rest.strip_prefix(PLACEHOLDER)?.strip_prefix('.')?;
    match rest.strip_prefix('"') {
        Some(quoted) => {
            let mut name = String::new();
            let mut chars = quoted.chars().peekable();
            while let Some(c) = chars.next() {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                    } else {
                        return Some(name);
                    }
                }
                name.push(c);
            }
            None
        }
        None => Some(rest.split_whitespace().next()?.to_string()),
    }
}

fn indexes(out: &mut Builder, desired: &Catalog, live: &Catalog, tables: &BTreeSet<&str>) {
    let on_compared = |catalog: &'_ Catalog| -> BTreeMap<String, Object> {
        let backing = constraint_names(catalog);
        catalog
            .of_kind("index")
            .filter(|(name, index)| {
                !backing.contains(name) && index_table(&index.compared).is_some_and(|t| tables.contains(t.as_str()))
            })
            .map(|(name, index)| (name.to_string(), index.clone()))
            .collect()
    };
    let want = on_compared(desired);
    let have = on_compared(live);
    for (name, w) in &want {
        match have.get(name) {
            Some(h) if h.compared == w.compared => {}
            Some(_) => {
                out.push(Phase::DropIndexes, format!("DROP INDEX {}", qualified(name)), false);
                out.push(Phase::CreateIndexes, w.text.trim().to_string(), false);
            }
            None => out.push(Phase::CreateIndexes, w.text.trim().to_string(), false),
        }
    }
    for name in have.keys().filter(|name| !want.contains_key(*name)) {
        out.push(Phase::DropIndexes, format!("DROP INDEX {}", qualified(name)), false);
    }
}

fn triggers(out: &mut Builder, desired: &Catalog, live: &Catalog, tables: &BTreeSet<&str>) {
    for &table in tables {
        let want: BTreeMap<&str, &Object> = parts_of(desired, "trigger", table).collect();
        let have: BTreeMap<&str, &Object> = parts_of(live, "trigger", table).collect();
        let drop = |name: &str| format!("DROP TRIGGER {} ON {}", ident(name), qualified(table));
        for (&name, w) in &want {
            match have.get(name) {
                Some(h) if h.compared == w.compared => {}
                Some(_) => {
                    out.push(Phase::DropTriggers, drop(name), false);
                    out.push(Phase::CreateTriggers, w.text.trim().to_string(), false);
                }
                None => out.push(Phase::CreateTriggers, w.text.trim().to_string(), false),
            }
        }
        for &name in have.keys().filter(|name| !want.contains_key(*name)) {
            out.push(Phase::DropTriggers, drop(name), false);
        }
    }
}

fn routines(out: &mut Builder, desired: &Catalog, live: &Catalog) {
    let want: BTreeMap<&str, &Object> = desired.of_kind("routine").collect();
    let have: BTreeMap<&str, &Object> = live.of_kind("routine").collect();
    for (&name, w) in &want {
        if have.get(name).is_none_or(|h| h.compared != w.compared) {
            // `pg_get_functiondef` writes `CREATE OR REPLACE`.
            out.push(Phase::CreateRoutines, w.text.trim().to_string(), false);
        }
    }
    for &name in have.keys().filter(|name| !want.contains_key(*name)) {
        let (routine, arguments) = name.split_once('(').unwrap_or((name, ")"));
        out.push(Phase::DropRoutines, format!("DROP ROUTINE {}({arguments}", qualified(routine)), false);
    }
}

/// An enum's labels, as the catalog lists them (`a, b, c`).
fn labels(object: &Object) -> Vec<&str> {
    let text = object.compared.as_str();
    if text.is_empty() { Vec::new() } else { text.split(", ").collect() }
}

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn types(out: &mut Builder, desired: &Catalog, live: &Catalog) {
    let want: BTreeMap<&str, &Object> = desired.of_kind("type").collect();
    let have: BTreeMap<&str, &Object> = live.of_kind("type").collect();
    for (&name, w) in &want {
        let wanted = labels(w);
        let Some(h) = have.get(name) else {
            let listed: Vec<String> = wanted.iter().map(|l| literal(l)).collect();
            out.push(
                Phase::CreateTypes,
                format!("CREATE TYPE {} AS ENUM ({})", qualified(name), listed.join(", ")),
                false,
            );
            continue;
        };
        let present = labels(h);
        if present == wanted {
            continue;
        }
        // Values can be added, never removed or moved: the labels present
        // must keep their order among the desired ones.
        let kept: Vec<&str> = wanted.iter().copied().filter(|l| present.contains(l)).collect();
        if kept != present {
            out.cannot(format!(
                "enum {name}: values removed or reordered (here: {}; desired: {})",
                present.join(", "),
                wanted.join(", ")
            ));
            continue;
        }
        let mut previous: Option<&str> = None;
        for label in &wanted {
            if !present.contains(label) {
                let place = match (previous, present.first()) {
                    (Some(before), _) => format!(" AFTER {}", literal(before)),
                    (None, Some(first)) => format!(" BEFORE {}", literal(first)),
                    (None, None) => String::new(),
                };
                out.push(
                    Phase::CreateTypes,
                    format!("ALTER TYPE {} ADD VALUE {}{place}", qualified(name), literal(label)),
                    false,
                );
            }
            previous = Some(label);
        }
    }
    for &name in have.keys().filter(|name| !want.contains_key(*name)) {
        out.push(Phase::DropTypes, format!("DROP TYPE {}", qualified(name)), false);
    }
}
