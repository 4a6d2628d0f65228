//! The MariaDB planner: statements from one catalog (as
//! `db/mysql/sql.rs`'s `DESIRED_CATALOG` reads it) to another.
//!
//! The catalog is written so its definitions are SQL the planner puts
//! back as they are: a column's `COLUMN_TYPE` with its generation,
//! `not null`, default and `EXTRA` (its column-level check, read apart,
//! added back here); an index's kind
//! and key parts; a foreign key's columns, target and rules; a routine's
//! parameters, result and body; a trigger's timing, event and table.
//!
//! Statements run in [`Phase`] order (dependents dropped first, data
//! dropped last). MariaDB commits each DDL statement on its own: a plan
//! that fails midway leaves the statements before it done, and running the
//! plan again from a new diff finishes it.
//!
//! # What is destructive
//!
//! `DROP TABLE`, `DROP COLUMN`, and a column's type changed other than
//! widened ([`widens`]): integers to a wider integer of the same sign,
//! `varchar(n)` to a longer `varchar` or a text type, a text type to a
//! longer one, `float` to `double`, `decimal(p,s)` to more digits on
//! either side.

use std::collections::{BTreeMap, BTreeSet};

use super::steps::{Builder, Phase, parts_of, relations};
use super::{Catalog, Object, Plan};
use crate::migrate::fingerprint::{PLACEHOLDER, squeeze};
use crate::migrate::ident::quote_mysql;

/// The plan from `live` to `desired` (see the module documentation).
pub(super) fn plan(desired: &Catalog, live: &Catalog) -> Plan {
    let (desired, live) = (&with_column_checks(desired), &with_column_checks(live));
    let mut out = Builder::default();
    let want = relations(desired);
    let have = relations(live);
    let names: BTreeSet<&str> = want.keys().chain(have.keys()).copied().collect();
    let mut compared_tables = BTreeSet::new();
    for name in names {
        match (want.get(name).copied(), have.get(name).copied()) {
            (Some(kind), None) => create_relation(&mut out, desired, name, kind),
            (None, Some(kind)) => drop_relation(&mut out, name, kind),
            (Some(a), Some(b)) if a != b => out.cannot(format!("{name} is a {a} in the desired schema and a {b} here")),
            (Some("table"), Some(_)) => {
                compared_tables.insert(name);
            }
            (Some("view"), Some(_)) => replace_view(&mut out, desired, live, name),
            (Some(kind), Some(_)) => {
                if desired.get("relation", name) != live.get("relation", name) {
                    out.cannot(format!("{name}: a {kind} is not changed by a plan"));
                }
            }
            (None, None) => {}
        }
    }
    for &table in &compared_tables {
        engine(&mut out, desired, live, table);
        columns(&mut out, desired, live, table);
        table_parts(&mut out, desired, live, table);
    }
    routines(&mut out, desired, live);
    triggers(&mut out, desired, live);
    out.finish()
}

/// `catalog` with each column-level check (`column check`, read apart so
/// no catalog join scans the server's every database) written into its
/// column's definition, as `CREATE TABLE` and `MODIFY COLUMN` take it.
fn with_column_checks(catalog: &Catalog) -> Catalog {
    let mut merged = catalog.clone();
    let checks: Vec<(String, String)> =
        catalog.of_kind("column check").map(|(name, check)| (name.to_string(), check.text.clone())).collect();
    for (column, clause) in checks {
        merged.objects.remove(&("column check".to_string(), column.clone()));
        if let Some(object) = merged.objects.get_mut(&("column".to_string(), column)) {
            object.text = format!("{} check ({clause})", object.text.trim_end());
            object.compared = squeeze(&object.text);
        }
    }
    merged
}

/// `name` quoted as MariaDB reads it unchanged.
fn ident(name: &str) -> String {
    quote_mysql(name)
}

/// `name` in the tenant's database.
fn qualified(name: &str) -> String {
    format!("{PLACEHOLDER}.{}", ident(name))
}

fn create_relation(out: &mut Builder, desired: &Catalog, name: &str, kind: &str) {
    match kind {
        "table" => create_table(out, desired, name),
        "view" => match desired.get("view", name) {
            Some(view) => out.push(Phase::CreateViews, view_sql("CREATE", name, view), false),
            None => out.cannot(format!("view {name} has no definition in the desired catalog")),
        },
        other => out.cannot(format!("{name}: a {other} is not created by a plan")),
    }
}

/// `CREATE TABLE` with its columns in the desired order, its keys and
/// checks; its foreign keys and triggers follow in their phases.
fn create_table(out: &mut Builder, desired: &Catalog, name: &str) {
    let mut columns: Vec<(&str, &Object)> = parts_of(desired, "column", name).collect();
    columns.sort_by_key(|(column, _)| desired.column_position(name, column));
    let mut lines: Vec<String> =
        columns.iter().map(|(column, c)| format!("    {} {}", ident(column), c.text)).collect();
    lines.extend(parts_of(desired, "index", name).map(|(index, i)| format!("    {}", index_clause(index, &i.text))));
    lines.extend(
        parts_of(desired, "check", name)
            .map(|(check, c)| format!("    CONSTRAINT {} CHECK ({})", ident(check), c.text)),
    );
    let engine = desired.get("table engine", name).map(|e| format!(" {}", e.text)).unwrap_or_default();
    out.push(
        Phase::CreateTables,
        format!("CREATE TABLE {} (\n{}\n){engine}", qualified(name), lines.join(",\n")),
        false,
    );
    for (key, k) in parts_of(desired, "foreign key", name) {
        add_foreign_key(out, name, key, k);
    }
}

fn drop_relation(out: &mut Builder, name: &str, kind: &str) {
    match kind {
        "table" => out.push(Phase::DropTables, format!("DROP TABLE {}", qualified(name)), true),
        "view" => out.push(Phase::DropViews, format!("DROP VIEW {}", qualified(name)), false),
        other => out.cannot(format!("{name}: a {other} is not dropped by a plan")),
    }
}

/// A view's statement (`CREATE` or `CREATE OR REPLACE`) from its
/// definition.
fn view_sql(verb: &str, name: &str, view: &Object) -> String {
    format!("{verb} VIEW {} AS\n{}", qualified(name), view.text.trim())
}

/// A view in both catalogs whose query differs: replaced in place
/// (MariaDB's `CREATE OR REPLACE` takes any new column list).
fn replace_view(out: &mut Builder, desired: &Catalog, live: &Catalog, name: &str) {
    let (Some(want), have) = (desired.get("view", name), live.get("view", name)) else {
        return;
    };
    if have.is_none_or(|h| h.compared != want.compared) {
        out.push(Phase::CreateViews, view_sql("CREATE OR REPLACE", name, want), false);
    }
}

/// A table's storage engine, changed in place when it differs.
fn engine(out: &mut Builder, desired: &Catalog, live: &Catalog, table: &str) {
    match (desired.get("table engine", table), live.get("table engine", table)) {
        (Some(want), Some(have)) if want.compared != have.compared => {
            out.push(Phase::AlterColumns, format!("ALTER TABLE {} {}", qualified(table), want.text.trim()), false);
        }
        _ => {}
    }
}

/// A column's definition cut where its type ends.
fn type_of(definition: &str) -> &str {
    let definition = definition.trim();
    let cut = [" as (", " not null", " default ", " check (", " auto_increment", " on update ", " invisible"]
        .iter()
        .filter_map(|clause| definition.find(clause))
        .min()
        .unwrap_or(definition.len());
    &definition[..cut]
}

fn columns(out: &mut Builder, desired: &Catalog, live: &Catalog, table: &str) {
    let want: BTreeMap<&str, &Object> = parts_of(desired, "column", table).collect();
    let have: BTreeMap<&str, &Object> = parts_of(live, "column", table).collect();
    let alter = format!("ALTER TABLE {}", qualified(table));
    let mut order: Vec<&str> = want.keys().copied().collect();
    order.sort_by_key(|column| desired.column_position(table, column));
    for (at, &name) in order.iter().enumerate() {
        let w = want[name];
        let Some(h) = have.get(name) else {
            // Where the desired file puts it: after its neighbour there.
            let place = match at.checked_sub(1).map(|before| order[before]) {
                Some(before) => format!(" AFTER {}", ident(before)),
                None => " FIRST".to_string(),
            };
            out.push(
                Phase::AlterColumns,
                format!("{alter} ADD COLUMN {} {}{place}", ident(name), w.text.trim()),
                false,
            );
            continue;
        };
        if w.compared == h.compared {
            continue;
        }
        let destructive = !widens(type_of(&h.text), type_of(&w.text));
        out.push(Phase::AlterColumns, format!("{alter} MODIFY COLUMN {} {}", ident(name), w.text.trim()), destructive);
    }
    for &name in have.keys().filter(|name| !want.contains_key(*name)) {
        out.push(Phase::DropColumns, format!("{alter} DROP COLUMN {}", ident(name)), true);
    }
}

/// An index as a clause of `CREATE TABLE` or `ALTER TABLE … ADD`: its kind,
/// its name (the primary key has none), its key parts.
fn index_clause(name: &str, definition: &str) -> String {
    let definition = definition.trim();
    if name == "PRIMARY" {
        return definition.replacen("primary key", "PRIMARY KEY", 1);
    }
    let (kind, parts) = definition.split_once(" (").unwrap_or((definition, ""));
    format!("{} {} ({parts}", kind.to_ascii_uppercase(), ident(name))
}

fn drop_index(name: &str) -> String {
    if name == "PRIMARY" { "DROP PRIMARY KEY".to_string() } else { format!("DROP INDEX {}", ident(name)) }
}

fn add_foreign_key(out: &mut Builder, table: &str, name: &str, key: &Object) {
    out.push(
        Phase::AddForeignKeys,
        format!("ALTER TABLE {} ADD CONSTRAINT {} FOREIGN KEY {}", qualified(table), ident(name), key.text.trim()),
        false,
    );
}

/// A table's indexes, checks and foreign keys: each that differs dropped
/// and made again, each missing made, each extra dropped.
fn table_parts(out: &mut Builder, desired: &Catalog, live: &Catalog, table: &str) {
    let alter = format!("ALTER TABLE {}", qualified(table));
    let parts = [
        ("index", Phase::DropIndexes, Phase::CreateIndexes),
        ("check", Phase::DropConstraints, Phase::AddConstraints),
        ("foreign key", Phase::DropForeignKeys, Phase::AddForeignKeys),
    ];
    for (kind, drop_phase, add_phase) in parts {
        let want: BTreeMap<&str, &Object> = parts_of(desired, kind, table).collect();
        let have: BTreeMap<&str, &Object> = parts_of(live, kind, table).collect();
        for (&name, h) in &have {
            if want.get(name).is_some_and(|w| w.compared == h.compared) {
                continue;
            }
            let drop = match kind {
                "index" => drop_index(name),
                "check" => format!("DROP CONSTRAINT {}", ident(name)),
                _ => format!("DROP FOREIGN KEY {}", ident(name)),
            };
            out.push(drop_phase, format!("{alter} {drop}"), false);
        }
        for (&name, w) in &want {
            if have.get(name).is_some_and(|h| h.compared == w.compared) {
                continue;
            }
            let add = match kind {
                "index" => format!("ADD {}", index_clause(name, &w.text)),
                "check" => format!("ADD CONSTRAINT {} CHECK ({})", ident(name), w.text.trim()),
                _ => format!("ADD CONSTRAINT {} FOREIGN KEY {}", ident(name), w.text.trim()),
            };
            out.push(add_phase, format!("{alter} {add}"), false);
        }
    }
}

/// A routine's kind (`function` or `procedure`) and the rest of its
/// definition (parameters, result, characteristics, body).
fn routine_parts(definition: &str) -> (&str, &str) {
    definition.trim().split_once(' ').unwrap_or((definition.trim(), ""))
}

fn routines(out: &mut Builder, desired: &Catalog, live: &Catalog) {
    let want: BTreeMap<&str, &Object> = desired.of_kind("routine").collect();
    let have: BTreeMap<&str, &Object> = live.of_kind("routine").collect();
    for (&name, h) in &have {
        if want.get(name).is_none_or(|w| w.compared != h.compared) {
            let (kind, _) = routine_parts(&h.text);
            out.push(Phase::DropRoutines, format!("DROP {} {}", kind.to_ascii_uppercase(), qualified(name)), false);
        }
    }
    for (&name, w) in &want {
        if have.get(name).is_none_or(|h| h.compared != w.compared) {
            let (kind, rest) = routine_parts(&w.text);
            out.push(
                Phase::CreateRoutines,
                format!("CREATE {} {} {rest}", kind.to_ascii_uppercase(), qualified(name)),
                false,
            );
        }
    }
}

fn triggers(out: &mut Builder, desired: &Catalog, live: &Catalog) {
    let want: BTreeMap<&str, &Object> = desired.of_kind("trigger").collect();
    let have: BTreeMap<&str, &Object> = live.of_kind("trigger").collect();
    for (&name, h) in &have {
        if want.get(name).is_none_or(|w| w.compared != h.compared) {
            out.push(Phase::DropTriggers, format!("DROP TRIGGER {}", qualified(name)), false);
        }
    }
    for (&name, w) in &want {
        if have.get(name).is_none_or(|h| h.compared != w.compared) {
            out.push(Phase::CreateTriggers, format!("CREATE TRIGGER {} {}", qualified(name), w.text.trim()), false);
        }
    }
}

/// Whether every value of column type `from` fits in type `to` unchanged
/// (types as `COLUMN_TYPE` writes them; an integer's display width does
/// not count).
pub(super) fn widens(from: &str, to: &str) -> bool {
    let from = squeeze(from).to_ascii_lowercase();
    let to = squeeze(to).to_ascii_lowercase();
    if from == to {
        return true;
    }
    // (base type, its arguments, unsigned)
    let parse = |text: &str| -> (String, Option<String>, bool) {
        let unsigned = text.contains(" unsigned");
        let head = text.split(' ').next().unwrap_or_default();
        match head.split_once('(') {
            Some((base, args)) => (base.to_string(), Some(args.trim_end_matches(')').to_string()), unsigned),
            None => (head.to_string(), None, unsigned),
        }
    };
    let (from_base, from_args, from_unsigned) = parse(&from);
    let (to_base, to_args, to_unsigned) = parse(&to);
    const INTEGERS: [&str; 5] = ["tinyint", "smallint", "mediumint", "int", "bigint"];
    if let Some(a) = INTEGERS.iter().position(|t| *t == from_base) {
        // The same sign and at least as wide (a display width alone
        // changes nothing); unsigned into a strictly wider signed one.
        return INTEGERS.iter().position(|t| *t == to_base).is_some_and(|b| match (from_unsigned, to_unsigned) {
            (false, false) | (true, true) => b >= a,
            (true, false) => b > a,
            (false, true) => false,
        });
    }
    const TEXTS: [&str; 4] = ["tinytext", "text", "mediumtext", "longtext"];
    let text_rank = |base: &str| TEXTS.iter().position(|t| *t == base);
    if from_base == "varchar" {
        if text_rank(&to_base).is_some_and(|rank| rank >= 1) {
            return true;
        }
        let length = |args: &Option<String>| args.as_deref().and_then(|a| a.parse::<u32>().ok());
        return to_base == "varchar" && matches!((length(&from_args), length(&to_args)), (Some(a), Some(b)) if b >= a);
    }
    if let Some(a) = text_rank(&from_base) {
        return text_rank(&to_base).is_some_and(|b| b >= a);
    }
    if from_base == "float" {
        return to_base == "double";
    }
    if from_base == "decimal" && to_base == "decimal" && from_unsigned == to_unsigned {
        let digits = |args: &Option<String>| -> Option<(u32, u32)> {
            let args = args.as_deref().unwrap_or("10,0");
            let (p, s) = args.split_once(',').unwrap_or((args, "0"));
            Some((p.trim().parse().ok()?, s.trim().parse().ok()?))
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
