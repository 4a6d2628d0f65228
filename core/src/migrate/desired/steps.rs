//! What the engines' planners share: the phases a plan's statements run
//! in, the builder gathering them, and the names of a table's parts.

use super::{Catalog, Object, Plan, Step};

/// When a statement runs: what depends on an object is dropped before it,
/// objects are made in dependency order, and data goes last, so a plan
/// that fails midway has lost nothing yet. An engine uses the phases it
/// has objects for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
    DropTriggers,
    DropViews,
    DropForeignKeys,
    DropConstraints,
    DropIndexes,
    DropRoutines,
    CreateTypes,
    CreateSequences,
    CreateTables,
    AlterColumns,
    AddConstraints,
    AddForeignKeys,
    CreateIndexes,
    CreateRoutines,
    CreateViews,
    CreateTriggers,
    DropColumns,
    DropTables,
    DropSequences,
    DropTypes,
}

/// Statements gathered by phase; within a phase, in the order pushed.
#[derive(Default)]
pub(super) struct Builder {
    steps: Vec<(Phase, Step)>,
    unplannable: Vec<String>,
}

impl Builder {
    pub(super) fn push(&mut self, phase: Phase, sql: String, destructive: bool) {
        self.steps.push((phase, Step { sql, destructive }));
    }

    pub(super) fn cannot(&mut self, reason: String) {
        self.unplannable.push(reason);
    }

    pub(super) fn finish(mut self) -> Plan {
        self.steps.sort_by_key(|(phase, _)| *phase);
        Plan { steps: self.steps.into_iter().map(|(_, step)| step).collect(), unplannable: self.unplannable }
    }
}

/// A part's name (`table.part`) cut into its table and its own name: at
/// the dot after the longest relation of `catalog` the name begins with (a
/// table's name may hold dots: column `c` of table `"a.b"` is `a.b.c`, not
/// column `b.c` of table `a`), else at its first dot.
pub(super) fn split_part<'a>(catalog: &Catalog, name: &'a str) -> (&'a str, &'a str) {
    let mut owned =
        name.match_indices('.').map(|(dot, _)| dot).filter(|dot| catalog.get("relation", &name[..*dot]).is_some());
    match owned.next_back().or_else(|| name.find('.')) {
        Some(dot) => (&name[..dot], &name[dot + 1..]),
        None => (name, ""),
    }
}

/// The parts of `kind` named `table.part` of `table`: (part, object).
pub(super) fn parts_of<'a>(
    catalog: &'a Catalog,
    kind: &'a str,
    table: &'a str,
) -> impl Iterator<Item = (&'a str, &'a Object)> {
    let prefix_of_table = move |name: &str| name.len() > table.len() && name.starts_with(table);
    catalog.of_kind(kind).filter_map(move |(name, object)| {
        if !prefix_of_table(name) {
            return None;
        }
        let (owner, part) = split_part(catalog, name);
        (owner == table).then_some((part, object))
    })
}

/// Each relation's kind (the engine's word for it: PostgreSQL's
/// `pg_class.relkind`, MariaDB's `table`, `view`, …), by name.
pub(super) fn relations(catalog: &Catalog) -> std::collections::BTreeMap<&str, &str> {
    catalog.of_kind("relation").map(|(name, object)| (name, object.compared.as_str())).collect()
}
