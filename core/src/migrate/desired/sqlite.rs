//! The SQLite planner: statements from one catalog (as
//! `db/sqlite/sql.rs`'s `desired_catalog` reads it) to another.
//!
//! # What SQLite keeps, and how a plan reaches it
//!
//! SQLite keeps each table, index, view and trigger as the text of the
//! `CREATE` statement that made it (`sqlite_schema.sql`), the leading
//! keywords upper-cased and spaced (`CREATE TABLE `), the schema qualifier
//! dropped. Those texts are what is compared, and what a plan writes: an
//! object is made from the desired file's own text, qualified again with
//! `{schema}` ([`qualified`]).
//!
//! A table whose only change is columns added at the end of its column
//! list, each one `ALTER TABLE … ADD COLUMN` can add (no key, no
//! expression default, a default when `NOT NULL`…), gains them with that
//! statement: SQLite writes `, ` and the column's text after the last
//! column, so the kept text becomes the desired one and the table is not
//! copied ([`added_columns`]). `ALTER TABLE` can do little else, so any
//! other table whose text changed is **rebuilt**, as SQLite's documentation
//! prescribes: a new table made from the desired text, the columns both
//! have copied, the old table dropped, the new one renamed to the old name
//! ([`rebuild`]). The rename writes the name quoted into the kept text, so
//! tables are compared without their name ([`canonical`]). Its indexes go
//! with the old table and are made again; every view and trigger of the
//! schema is dropped before and made again after (a rename checks each of
//! them, and one naming the dropped table would fail it).
//!
//! # What is not planned
//!
//! A table another table's foreign key references (itself included) is
//! not rebuilt (columns added at its end are), nor dropped while a referencing table stays: a migration
//! runs inside a transaction, where SQLite cannot turn foreign keys off,
//! and dropping the table would run the keys' actions (`ON DELETE
//! CASCADE` emptying the other table). A virtual table that changed is not
//! either (its shadow tables are its module's). Each is listed in
//! [`Plan::unplannable`] with the reason.
//!
//! # What is destructive
//!
//! `DROP TABLE`, and a rebuild's drop of the old table when a column is
//! not copied or changes its declared type (its affinity may convert the
//! values copied): that step names the columns in a comment, so two
//! tenants whose rebuilds differ only in what they lose never share a
//! plan.

use std::collections::{BTreeMap, BTreeSet};

use super::steps::{Builder, Phase};
use super::{Catalog, Object, Plan};
use crate::migrate::driver::Driver;
use crate::migrate::fingerprint::PLACEHOLDER;
use crate::migrate::ident::{quote_ansi, quote_string_sqlite};
use crate::migrate::keywords::is_reserved;

/// The kind of the rows naming the table an index or trigger is on
/// (name: the index or trigger; definition: the table).
pub const ON_TABLE: &str = "on table";

/// The kind of the rows naming a foreign key's tables (name: the
/// referenced table, [`PAIR`], the referencing one; no definition).
pub const REFERENCED_BY: &str = "referenced by";

/// The kind of the rows giving a column's declared type (name:
/// `table.column`; definition: the type as written).
pub const COLUMN_TYPE: &str = "column type";

/// Between the two names of a [`REFERENCED_BY`] row.
pub const PAIR: char = '\n';

/// What a rebuilt table is made under before it takes the old one's name.
const NEW_SUFFIX: &str = "__strata_new";

/// The leading words SQLite writes before an object's name, longest first
/// where one starts another.
const HEADERS: [&str; 6] = [
    "CREATE VIRTUAL TABLE ",
    "CREATE TABLE ",
    "CREATE UNIQUE INDEX ",
    "CREATE INDEX ",
    "CREATE VIEW ",
    "CREATE TRIGGER ",
];

/// The plan from `live` to `desired` (see the module documentation).
pub(super) fn plan(desired: &Catalog, live: &Catalog) -> Plan {
    let mut out = Builder::default();
    let wanted: BTreeMap<&str, &Object> = desired.of_kind("table").collect();
    let present: BTreeMap<&str, &Object> = live.of_kind("table").collect();
    let referencing = references(live);

    let dropped: BTreeSet<&str> = present.keys().filter(|t| !wanted.contains_key(*t)).copied().collect();
    let mut droppable = BTreeSet::new();
    let mut rebuilt = BTreeSet::new();
    for (&table, object) in &present {
        let Some(target) = wanted.get(table) else {
            let staying: Vec<&str> =
                referencing.get(table).into_iter().flatten().filter(|c| !dropped.contains(*c)).copied().collect();
            if staying.is_empty() {
                droppable.insert(table);
            } else {
                out.cannot(format!(
                    "table {table} is dropped, but a foreign key of {} references it: dropping it would run the \
                     key's actions on that table's rows",
                    staying.join(", ")
                ));
            }
            continue;
        };
        if canonical(&target.compared) == canonical(&object.compared) {
            continue;
        }
        let new_name = format!("{table}{NEW_SUFFIX}");
        let name_taken = present.contains_key(new_name.as_str()) || wanted.contains_key(new_name.as_str());
        let change = Change { table, from: object, to: target, referenced_by: referencing.get(table), name_taken };
        if change_table(&mut out, desired, live, change) {
            rebuilt.insert(table);
        }
    }
    for table in children_first(&droppable, &referencing) {
        out.push(Phase::DropTables, format!("DROP TABLE {}", qualified_name(table)), true);
    }
    for (&table, object) in &wanted {
        if present.contains_key(table) {
            continue;
        }
        match qualified(&object.text) {
            Some(sql) => out.push(Phase::CreateTables, sql, false),
            None => out.cannot(format!("table {table}: its definition cannot be read as SQLite writes it")),
        }
    }

    let remade: BTreeSet<&str> =
        rebuilt.iter().copied().chain(wanted.keys().filter(|t| !present.contains_key(*t)).copied()).collect();
    indexes(&mut out, desired, live, &remade, &dropped, &rebuilt);
    let everything = !rebuilt.is_empty();
    dependents(&mut out, desired, live, "view", [Phase::DropViews, Phase::CreateViews], everything);
    dependents(&mut out, desired, live, "trigger", [Phase::DropTriggers, Phase::CreateTriggers], everything);
    out.finish()
}

/// A table in both catalogs whose definitions differ.
struct Change<'a> {
    table: &'a str,
    /// As it is.
    from: &'a Object,
    /// As desired.
    to: &'a Object,
    /// The tables whose foreign keys reference it.
    referenced_by: Option<&'a BTreeSet<&'a str>>,
    /// The name its copy would be made under is a table's.
    name_taken: bool,
}

/// The steps of `change` into `out` (columns added, or the table rebuilt
/// under a new name and copied), or why it cannot be made; whether it is
/// rebuilt.
fn change_table(out: &mut Builder, desired: &Catalog, live: &Catalog, change: Change<'_>) -> bool {
    let Change { table, from, to, referenced_by, name_taken } = change;
    if is_virtual(&from.text) || is_virtual(&to.text) {
        out.cannot(format!("virtual table {table} differs: its module keeps its own tables; change it by hand"));
        return false;
    }
    if let Some(added) = added_columns(&from.text, &to.text) {
        for column in added {
            out.push(Phase::AlterColumns, format!("ALTER TABLE {} ADD COLUMN {column}", qualified_name(table)), false);
        }
        return false;
    }
    if let Some(children) = referenced_by {
        out.cannot(format!(
            "table {table} differs and a foreign key of {} references it: SQLite changes a table by copying it \
             into a new one, which a migration's transaction cannot do with foreign keys on",
            children.iter().copied().collect::<Vec<_>>().join(", ")
        ));
        return false;
    }
    let new_name = format!("{table}{NEW_SUFFIX}");
    if name_taken {
        out.cannot(format!("table {table} differs, and {new_name}, the name its copy is made under, is taken"));
        return false;
    }
    match rebuild(desired, live, table, &to.text, &new_name) {
        Some(steps) => {
            for (step, destructive) in steps {
                out.push(Phase::AlterColumns, step, destructive);
            }
            true
        }
        None => {
            out.cannot(format!("table {table}: its definition cannot be read as SQLite writes it"));
            false
        }
    }
}

/// The steps that rebuild `table` into `target` (its desired text) through
/// `new_name`, each with whether it loses data: the old table's drop, when
/// a column is not copied or changes its declared type — named in a
/// comment of that step, so that the plan's text (and hash) differs from
/// a tenant's that loses nothing.
fn rebuild(
    desired: &Catalog,
    live: &Catalog,
    table: &str,
    target: &str,
    new_name: &str,
) -> Option<Vec<(String, bool)>> {
    let (header, _, rest) = split_header(target)?;
    let had = columns(live, table);
    let wants = columns(desired, table);
    let kept: Vec<&str> = had.keys().filter(|c| wants.contains_key(*c)).copied().collect();
    let mut losses: Vec<String> =
        had.keys().filter(|c| !wants.contains_key(*c)).map(|c| format!("column {c} is not copied")).collect();
    for column in kept.iter().filter(|c| !had[*c].eq_ignore_ascii_case(wants[*c])) {
        losses.push(format!("column {column} changes type from {} to {}", had[column], wants[column]));
    }
    let new_table = qualified_name(new_name);
    let mut steps = vec![(format!("{header}{new_table}{rest}"), false)];
    if !kept.is_empty() {
        let list = kept.iter().map(|c| ident(c)).collect::<Vec<_>>().join(", ");
        let copy = format!("INSERT INTO {new_table} ({list}) SELECT {list} FROM {}", qualified_name(table));
        steps.push((copy, false));
    }
    if target.to_ascii_uppercase().contains("AUTOINCREMENT") {
        // AUTOINCREMENT never gives an id again, deleted rows' included:
        // the new table continues the old one's sequence, not its rows'
        // highest id (SQLite renames the row with the table).
        let sequence = format!("{PLACEHOLDER}.sqlite_sequence");
        let (old, new) = (quote_string_sqlite(table), quote_string_sqlite(new_name));
        steps.push((format!("DELETE FROM {sequence} WHERE name = {new}"), false));
        steps.push((
            format!("INSERT INTO {sequence} (name, seq) SELECT {new}, seq FROM {sequence} WHERE name = {old}"),
            false,
        ));
    }
    let drop = format!("DROP TABLE {}", qualified_name(table));
    steps.push(match losses.is_empty() {
        true => (drop, false),
        false => (format!("{drop} /* {} */", losses.join("; ").replace("*/", "* /")), true),
    });
    steps.push((format!("ALTER TABLE {new_table} RENAME TO {}", ident(table)), false));
    Some(steps)
}

/// The columns `target` (a table's desired text) adds to `live` (its kept
/// text), when that is all that changed and `ALTER TABLE … ADD COLUMN`
/// turns the one into the other: `live` with `, ` and each definition
/// inserted before the `)` that ends its column list, which holds no
/// table constraint (SQLite adds a column after the last column, before
/// such constraints), each definition one SQLite can add. `None`: the
/// table is rebuilt instead.
fn added_columns<'a>(live: &str, target: &'a str) -> Option<Vec<&'a str>> {
    let (_, _, live) = split_header(live)?;
    let (_, _, target) = split_header(target)?;
    let close = live.rfind(')')?;
    let (head, tail) = live.split_at(close);
    let list = target.strip_prefix(head)?.strip_suffix(tail)?.strip_prefix(", ")?;
    let columns_now = &head[head.find('(')? + 1..];
    if top_level_parts(columns_now).iter().any(|part| is_table_constraint(part)) {
        return None;
    }
    let parts = top_level_parts(list);
    let mut added = Vec::with_capacity(parts.len());
    for (index, part) in parts.into_iter().enumerate() {
        let column = if index == 0 { part } else { part.strip_prefix(' ')? };
        if column.is_empty() || column.trim() != column || !can_be_added(column) {
            return None;
        }
        added.push(column);
    }
    Some(added)
}

/// `text` cut at its commas outside parentheses and quotes.
fn top_level_parts(text: &str) -> Vec<&str> {
    let (mut parts, mut start, mut depth, mut quote) = (Vec::new(), 0, 0usize, None);
    for (at, c) in text.char_indices() {
        match (quote, c) {
            (Some(close), _) if c == close => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '[') => quote = Some(']'),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Whether a part of a column list is a table constraint.
fn is_table_constraint(part: &str) -> bool {
    let first = part.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
    ["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"].iter().any(|word| first.starts_with(word))
}

/// Whether SQLite's `ADD COLUMN` takes a column definition as it is: no
/// key or uniqueness, no reference or check (checked against no existing
/// row before 3.37), no generated value, no time or expression default,
/// and `NOT NULL` only with a default that is not null. Words are read in
/// the text as written, so a name or string holding one of them only
/// sends the table to a rebuild, never an `ALTER` SQLite refuses.
fn can_be_added(column: &str) -> bool {
    let upper = column.to_ascii_uppercase();
    let words: Vec<&str> = upper.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
    let has = |word: &str| words.contains(&word);
    let refused = ["PRIMARY", "UNIQUE", "REFERENCES", "CHECK", "GENERATED", "AS", "STORED", "VIRTUAL"];
    let time = ["CURRENT_TIME", "CURRENT_DATE", "CURRENT_TIMESTAMP"];
    let default_expression = upper.contains("DEFAULT (") || upper.contains("DEFAULT(");
    let not_null = upper.contains("NOT NULL");
    let null_default = upper.contains("DEFAULT NULL") || !has("DEFAULT");
    !(refused.iter().chain(&time).any(|word| has(word)) || default_expression || (not_null && null_default))
}

/// Indexes: made when missing, changed, or on a table made or rebuilt
/// (the old one's went with it); dropped when not wanted, unless their
/// table goes (they go with it).
fn indexes(
    out: &mut Builder,
    desired: &Catalog,
    live: &Catalog,
    remade: &BTreeSet<&str>,
    dropped: &BTreeSet<&str>,
    rebuilt: &BTreeSet<&str>,
) {
    let on = |catalog: &Catalog, index: &str| catalog.get(ON_TABLE, index).map(|o| o.text.clone()).unwrap_or_default();
    for (index, object) in desired.of_kind("index") {
        let table = on(desired, index);
        let current = live.get("index", index);
        let rebuilt_table = remade.contains(table.as_str());
        if !rebuilt_table && current.is_some_and(|c| c.compared == object.compared) {
            continue;
        }
        if current.is_some() && !rebuilt.contains(on(live, index).as_str()) {
            out.push(Phase::DropIndexes, format!("DROP INDEX {}", qualified_name(index)), false);
        }
        match qualified(&object.text) {
            Some(sql) => out.push(Phase::CreateIndexes, sql, false),
            None => out.cannot(format!("index {index}: its definition cannot be read as SQLite writes it")),
        }
    }
    for (index, _) in live.of_kind("index") {
        let table = on(live, index);
        if desired.get("index", index).is_none()
            && !dropped.contains(table.as_str())
            && !rebuilt.contains(table.as_str())
        {
            out.push(Phase::DropIndexes, format!("DROP INDEX {}", qualified_name(index)), false);
        }
    }
}

/// Views or triggers (`kind`): each one dropped and made again when it
/// changed, or — `everything`, when a table is rebuilt — all of them.
fn dependents(
    out: &mut Builder,
    desired: &Catalog,
    live: &Catalog,
    kind: &str,
    [drop, create]: [Phase; 2],
    everything: bool,
) {
    let word = kind.to_ascii_uppercase();
    for (name, object) in live.of_kind(kind) {
        let same = desired.get(kind, name).is_some_and(|d| d.compared == object.compared);
        if everything || !same {
            out.push(drop, format!("DROP {word} {}", qualified_name(name)), false);
        }
    }
    for (name, object) in desired.of_kind(kind) {
        let same = live.get(kind, name).is_some_and(|l| l.compared == object.compared);
        if everything || !same {
            match qualified(&object.text) {
                Some(sql) => out.push(create, sql, false),
                None => out.cannot(format!("{kind} {name}: its definition cannot be read as SQLite writes it")),
            }
        }
    }
}

/// `dropped` in an order that drops a table after every other dropped
/// table referencing it (its rows deleted with it would otherwise break
/// their keys); tables referencing each other in a circle, by name.
fn children_first<'a>(dropped: &BTreeSet<&'a str>, referencing: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<&'a str> {
    let mut left: Vec<&'a str> = dropped.iter().copied().collect();
    let mut order = Vec::with_capacity(left.len());
    while !left.is_empty() {
        let waits = |table: &str| {
            referencing.get(table).is_some_and(|children| children.iter().any(|c| *c != table && left.contains(c)))
        };
        let ready: Vec<&'a str> = left.iter().copied().filter(|t| !waits(t)).collect();
        let next = if ready.is_empty() { std::mem::take(&mut left) } else { ready };
        left.retain(|t| !next.contains(t));
        order.extend(next);
    }
    order
}

/// The tables whose foreign keys reference each table, by the referenced
/// one (compared without case, as SQLite resolves names).
fn references(catalog: &Catalog) -> BTreeMap<&str, BTreeSet<&str>> {
    let tables: BTreeMap<String, &str> = catalog.of_kind("table").map(|(t, _)| (t.to_lowercase(), t)).collect();
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (pair, _) in catalog.of_kind(REFERENCED_BY) {
        let Some((parent, child)) = pair.split_once(PAIR) else { continue };
        if let Some(&parent) = tables.get(&parent.to_lowercase()) {
            out.entry(parent).or_default().insert(child);
        }
    }
    out
}

/// `table`'s columns and their declared types.
fn columns<'a>(catalog: &'a Catalog, table: &str) -> BTreeMap<&'a str, &'a str> {
    catalog
        .of_kind(COLUMN_TYPE)
        .filter_map(|(name, object)| {
            let column = name.strip_prefix(table)?.strip_prefix('.')?;
            Some((column, object.text.as_str()))
        })
        .collect()
}

/// Whether a kept text makes a virtual table.
fn is_virtual(text: &str) -> bool {
    text.starts_with("CREATE VIRTUAL TABLE ")
}

/// A kept text without its object's name: what the rename of a rebuild
/// changes (it writes the name quoted) is not compared.
fn canonical(compared: &str) -> String {
    match split_header(compared) {
        Some((header, _, rest)) => format!("{header}{rest}"),
        None => compared.to_string(),
    }
}

/// A kept text's leading words, its object's name as written, and the
/// rest; `None` when it does not start as SQLite writes it.
fn split_header(text: &str) -> Option<(&str, &str, &str)> {
    let header = HEADERS.iter().find(|h| text.starts_with(*h))?;
    let after = &text[header.len()..];
    let end = name_end(after)?;
    Some((&text[..header.len()], &after[..end], &after[end..]))
}

/// Where the name at the start of `text` ends: a quoted name (`"…"` with
/// `""` inside, `[…]`, `` `…` ``, `'…'`) or a bare one.
fn name_end(text: &str) -> Option<usize> {
    let mut chars = text.char_indices();
    let (_, first) = chars.next()?;
    let close = match first {
        '"' => '"',
        '`' => '`',
        '\'' => '\'',
        '[' => ']',
        c if c.is_alphanumeric() || c == '_' || c == '$' || !c.is_ascii() => {
            let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()));
            return Some(end.unwrap_or(text.len()));
        }
        _ => return None,
    };
    let mut at = first.len_utf8();
    loop {
        let found = text[at..].find(close)? + at;
        at = found + close.len_utf8();
        // A doubled quote is one quote of the name (not for `[…]`).
        if close != ']' && text[at..].starts_with(close) {
            at += close.len_utf8();
            continue;
        }
        return Some(at);
    }
}

/// A kept text made in the tenant's schema: `{schema}.` before its name.
fn qualified(text: &str) -> Option<String> {
    let (header, name, rest) = split_header(text)?;
    Some(format!("{header}{PLACEHOLDER}.{name}{rest}"))
}

/// A name in the tenant's schema.
fn qualified_name(name: &str) -> String {
    format!("{PLACEHOLDER}.{}", ident(name))
}

/// A name as written in a statement: a plain lower-case word no keyword
/// list reserves, else quoted.
fn ident(name: &str) -> String {
    let mut chars = name.chars();
    let simple = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if simple && !is_reserved(Driver::Sqlite, name) { name.to_string() } else { quote_ansi(name) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::fingerprint::CatalogObject;

    fn object(kind: &str, name: &str, definition: &str) -> CatalogObject {
        CatalogObject { kind: kind.into(), name: name.into(), definition: definition.into() }
    }

    /// A table: name, text, columns as (name, type).
    type Table<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

    /// A catalog of schema `zz_tenant`: `tables` as (name, text, columns as
    /// (name, type)); `others` as (kind, name, text, table).
    fn catalog(tables: &[Table], others: &[(&str, &str, &str, &str)]) -> Catalog {
        let mut objects = Vec::new();
        for (table, text, columns) in tables {
            objects.push(object("table", table, text));
            for (column, kind) in *columns {
                objects.push(object(COLUMN_TYPE, &format!("{table}.{column}"), kind));
            }
        }
        for (kind, name, text, table) in others {
            objects.push(object(kind, name, text));
            if *kind != REFERENCED_BY {
                objects.push(object(ON_TABLE, name, table));
            }
        }
        Catalog::new("zz_tenant", &objects)
    }

    const ORDERS: &str = "CREATE TABLE orders (id integer primary key, total int)";
    const ORDER_COLUMNS: &[(&str, &str)] = &[("id", "integer"), ("total", "int")];

    fn steps(plan: &Plan) -> Vec<(&str, bool)> {
        plan.steps.iter().map(|s| (s.sql.as_str(), s.destructive)).collect()
    }

    #[test]
    fn the_same_catalog_needs_no_step() {
        let index = ("index", "orders_total", "CREATE INDEX orders_total ON orders (total)", "orders");
        let view = ("view", "big", "CREATE VIEW big AS SELECT * FROM orders WHERE total > 100", "big");
        let one = catalog(&[("orders", ORDERS, ORDER_COLUMNS)], &[index, view]);
        assert!(plan(&one, &one.clone()).is_empty());
        let renamed = catalog(
            &[("orders", "CREATE TABLE \"orders\" (id integer primary key, total int)", ORDER_COLUMNS)],
            &[index, view],
        );
        assert!(plan(&one, &renamed).is_empty(), "a rebuilt table's quoted name is the same table");
    }

    #[test]
    fn a_new_table_and_index_are_made_from_the_desired_text_in_the_tenant_schema() {
        let live = catalog(&[], &[]);
        let desired = catalog(
            &[("Orders Done", "CREATE TABLE \"Orders Done\"(id integer primary key)", &[("id", "integer")])],
            &[("index", "done_id", "CREATE UNIQUE INDEX done_id ON \"Orders Done\"(id)", "Orders Done")],
        );
        let plan = plan(&desired, &live);
        assert_eq!(
            steps(&plan),
            [
                ("CREATE TABLE {schema}.\"Orders Done\"(id integer primary key)", false),
                ("CREATE UNIQUE INDEX {schema}.done_id ON \"Orders Done\"(id)", false),
            ]
        );
    }

    #[test]
    fn a_changed_table_is_rebuilt_its_columns_copied_and_its_indexes_views_and_triggers_made_again() {
        let index = ("index", "orders_total", "CREATE INDEX orders_total ON orders (total)", "orders");
        let view = ("view", "big", "CREATE VIEW big AS SELECT * FROM orders WHERE total > 100", "big");
        let trigger = ("trigger", "stamp", "CREATE TRIGGER stamp AFTER INSERT ON notes BEGIN SELECT 1; END", "notes");
        let notes = ("notes", "CREATE TABLE notes (body text)", &[("body", "text")][..]);
        let live = catalog(&[("orders", ORDERS, ORDER_COLUMNS), notes], &[index, view, trigger]);
        // A column between two others: only a copy puts it there.
        let wider = "CREATE TABLE orders (id integer primary key, plan_id int not null default 0, total int)";
        let columns = &[("id", "integer"), ("total", "int"), ("plan_id", "int")][..];
        let desired = catalog(&[("orders", wider, columns), notes], &[index, view, trigger]);
        let plan = plan(&desired, &live);
        assert_eq!(
            steps(&plan),
            [
                ("DROP TRIGGER {schema}.stamp", false),
                ("DROP VIEW {schema}.big", false),
                (
                    "CREATE TABLE {schema}.orders__strata_new (id integer primary key, plan_id int not null default \
                     0, total int)",
                    false
                ),
                ("INSERT INTO {schema}.orders__strata_new (id, total) SELECT id, total FROM {schema}.orders", false),
                ("DROP TABLE {schema}.orders", false),
                ("ALTER TABLE {schema}.orders__strata_new RENAME TO orders", false),
                ("CREATE INDEX {schema}.orders_total ON orders (total)", false),
                ("CREATE VIEW {schema}.big AS SELECT * FROM orders WHERE total > 100", false),
                ("CREATE TRIGGER {schema}.stamp AFTER INSERT ON notes BEGIN SELECT 1; END", false),
            ]
        );
        assert!(plan.unplannable.is_empty());
    }

    #[test]
    fn a_rebuild_that_leaves_a_column_out_or_retypes_one_loses_data_and_a_dropped_table_does() {
        let live = catalog(&[("orders", ORDERS, ORDER_COLUMNS), ("old", "CREATE TABLE old (a)", &[("a", "")])], &[]);
        let narrower =
            catalog(&[("orders", "CREATE TABLE orders (id integer primary key)", &[("id", "integer")])], &[]);
        let plan_narrower = plan(&narrower, &live);
        assert_eq!(
            steps(&plan_narrower),
            [
                ("CREATE TABLE {schema}.orders__strata_new (id integer primary key)", false),
                ("INSERT INTO {schema}.orders__strata_new (id) SELECT id FROM {schema}.orders", false),
                ("DROP TABLE {schema}.orders /* column total is not copied */", true),
                ("ALTER TABLE {schema}.orders__strata_new RENAME TO orders", false),
                ("DROP TABLE {schema}.old", true),
            ]
        );
        let retyped = catalog(
            &[
                (
                    "orders",
                    "CREATE TABLE orders (id integer primary key, total text)",
                    &[("id", "integer"), ("total", "text")],
                ),
                ("old", "CREATE TABLE old (a)", &[("a", "")]),
            ],
            &[],
        );
        let retyping = plan(&retyped, &live);
        assert_eq!(
            retyping.steps[2].sql,
            "DROP TABLE {schema}.orders /* column total changes type from int to text */"
        );
        assert!(retyping.steps[2].destructive);
    }

    #[test]
    fn a_rebuilt_autoincrement_table_continues_its_sequence() {
        let text = "CREATE TABLE orders (id integer primary key autoincrement, total int)";
        let live = catalog(&[("orders", text, ORDER_COLUMNS)], &[]);
        let wider = "CREATE TABLE orders (id integer primary key autoincrement, note text, total int)";
        let columns = &[("id", "integer"), ("total", "int"), ("note", "text")][..];
        let plan = plan(&catalog(&[("orders", wider, columns)], &[]), &live);
        let sql: Vec<&str> = plan.steps.iter().map(|s| s.sql.as_str()).collect();
        assert_eq!(
            sql[2..4],
            [
                "DELETE FROM {schema}.sqlite_sequence WHERE name = 'orders__strata_new'",
                "INSERT INTO {schema}.sqlite_sequence (name, seq) SELECT 'orders__strata_new', seq FROM \
                 {schema}.sqlite_sequence WHERE name = 'orders'",
            ]
        );
        assert_eq!(sql[4], "DROP TABLE {schema}.orders");
    }

    #[test]
    fn a_table_a_foreign_key_references_is_neither_rebuilt_nor_dropped_under_it() {
        let items = (
            "items",
            "CREATE TABLE items (id integer primary key, order_id int REFERENCES orders(id))",
            &[("id", "integer"), ("order_id", "int")][..],
        );
        let key = (REFERENCED_BY, "orders\nitems", "", "");
        let live = catalog(&[("orders", ORDERS, ORDER_COLUMNS), items], &[key]);
        let note = &[("id", "integer"), ("total", "int"), ("note", "text")][..];
        let wider = "CREATE TABLE orders (id integer primary key, note text, total int)";
        let changed = plan(&catalog(&[("orders", wider, note), items], &[key]), &live);
        assert!(changed.steps.is_empty(), "{:?}", changed.steps);
        assert!(changed.unplannable[0].starts_with("table orders differs and a foreign key of items references it"));
        // A column added at the end needs no copy: the referenced table gains it.
        let appended = "CREATE TABLE orders (id integer primary key, total int, note text)";
        let added = plan(&catalog(&[("orders", appended, note), items], &[key]), &live);
        assert_eq!(steps(&added), [("ALTER TABLE {schema}.orders ADD COLUMN note text", false)]);
        assert!(added.unplannable.is_empty());
        let without = plan(&catalog(&[items], &[]), &live);
        assert!(without.unplannable[0].starts_with("table orders is dropped, but a foreign key of items"));
        let both_gone = plan(&catalog(&[], &[]), &live);
        assert!(both_gone.unplannable.is_empty() && both_gone.steps.len() == 2, "{both_gone:?}");
    }

    #[test]
    fn an_index_that_changed_is_dropped_and_made_again_and_one_not_wanted_dropped() {
        let live = catalog(
            &[("orders", ORDERS, ORDER_COLUMNS)],
            &[
                ("index", "by_total", "CREATE INDEX by_total ON orders (total)", "orders"),
                ("index", "extra", "CREATE INDEX extra ON orders (id, total)", "orders"),
            ],
        );
        let desired = catalog(
            &[("orders", ORDERS, ORDER_COLUMNS)],
            &[("index", "by_total", "CREATE INDEX by_total ON orders (total DESC)", "orders")],
        );
        assert_eq!(
            steps(&plan(&desired, &live)),
            [
                ("DROP INDEX {schema}.by_total", false),
                ("DROP INDEX {schema}.extra", false),
                ("CREATE INDEX {schema}.by_total ON orders (total DESC)", false),
            ]
        );
    }

    #[test]
    fn names_are_read_as_sqlite_quotes_them() {
        assert_eq!(
            split_header("CREATE TABLE \"a \"\"b\"\" c\"(x)"),
            Some(("CREATE TABLE ", "\"a \"\"b\"\" c\"", "(x)"))
        );
        assert_eq!(split_header("CREATE VIEW [v 2] AS SELECT 1"), Some(("CREATE VIEW ", "[v 2]", " AS SELECT 1")));
        assert_eq!(split_header("CREATE VIRTUAL TABLE docs USING fts5(body)").map(|h| h.1), Some("docs"));
        assert_eq!(split_header("CREATE TABLE \"open"), None);
        assert_eq!(split_header("SELECT 1"), None);
    }

    #[test]
    fn columns_added_at_the_end_are_added_in_place_when_sqlite_can_add_them() {
        let index = ("index", "orders_total", "CREATE INDEX orders_total ON orders (total)", "orders");
        let view = ("view", "big", "CREATE VIEW big AS SELECT * FROM orders WHERE total > 100", "big");
        let live = catalog(&[("orders", ORDERS, ORDER_COLUMNS)], &[index, view]);
        let to = |text: &str| plan(&catalog(&[("orders", text, ORDER_COLUMNS)], &[index, view]), &live);
        // Two columns, one with a parenthesised type and a default: two
        // ALTERs, nothing else of the schema touched.
        let two = to("CREATE TABLE orders (id integer primary key, total int, price decimal(10, 2) default 0, \
                      \"Note, long\" text not null default 'n/a')");
        assert_eq!(
            steps(&two),
            [
                ("ALTER TABLE {schema}.orders ADD COLUMN price decimal(10, 2) default 0", false),
                ("ALTER TABLE {schema}.orders ADD COLUMN \"Note, long\" text not null default 'n/a'", false),
            ]
        );
        // A kept text renamed by an earlier rebuild (its name quoted) too.
        let renamed = catalog(
            &[("orders", "CREATE TABLE \"orders\" (id integer primary key, total int)", ORDER_COLUMNS)],
            &[index, view],
        );
        let wider = catalog(
            &[("orders", "CREATE TABLE orders (id integer primary key, total int, n int)", ORDER_COLUMNS)],
            &[index, view],
        );
        assert_eq!(steps(&plan(&wider, &renamed))[0], ("ALTER TABLE {schema}.orders ADD COLUMN n int", false));
        // What ADD COLUMN refuses, or would not write as the file does, is
        // a rebuild.
        for text in [
            "CREATE TABLE orders (id integer primary key, total int, code text unique)",
            "CREATE TABLE orders (id integer primary key, total int, at text default current_timestamp)",
            "CREATE TABLE orders (id integer primary key, total int, n int not null)",
            "CREATE TABLE orders (id integer primary key, total int, n int default (1 + 1))",
            "CREATE TABLE orders (id integer primary key, total int, n int check (n > 0))",
            "CREATE TABLE orders (id integer primary key, total int, n int generated always as (total * 2))",
            "CREATE TABLE orders (id integer primary key, total int, user_id int references users(id))",
            "CREATE TABLE orders (id integer primary key, total int,n int)",
            "CREATE TABLE orders (id integer primary key, total int, n int) STRICT",
        ] {
            let planned = to(text);
            assert!(planned.steps.iter().any(|s| s.sql.contains("orders__strata_new")), "{text}: {:?}", planned.steps);
        }
        // A table constraint after the columns: SQLite would add the column
        // before it, not where the file puts it.
        let keyed = "CREATE TABLE pairs (a int, b int, PRIMARY KEY (a, b))";
        let live = catalog(&[("pairs", keyed, &[("a", "int"), ("b", "int")])], &[]);
        let after = "CREATE TABLE pairs (a int, b int, PRIMARY KEY (a, b), c int)";
        let planned = plan(&catalog(&[("pairs", after, &[("a", "int"), ("b", "int"), ("c", "int")])], &[]), &live);
        assert!(planned.steps.iter().any(|s| s.sql.contains("pairs__strata_new")), "{:?}", planned.steps);
    }
}
