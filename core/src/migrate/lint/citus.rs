//! The rules for Citus (schema-based sharding), on when Citus is detected
//! or configured ([`super::LintInput::citus`]): what Citus refuses in a
//! distributed schema, or runs differently from one PostgreSQL.
//!
//! - `citus-volatile-in-update`: a volatile function (`random()`,
//!   `clock_timestamp()`, `nextval()` …) in an `UPDATE` is refused on a
//!   distributed table (each shard would draw its own values).
//! - `citus-trigger`: triggers on distributed tables are refused unless
//!   `citus.enable_unsafe_triggers` is on.
//! - `citus-foreign-key-across-schemas`: a foreign key from a table of one
//!   schema to a table of another (another tenant's, or a coordinator
//!   table) is refused between distributed schemas; a reference table is
//!   the exception, which `strata:allow` says.
//! - `citus-ddl-among-statements`: `CREATE INDEX` and `RENAME` propagate
//!   the statement's text to the workers; sent with other statements in
//!   one text they fail (citus#6608). Strata sends each statement alone on
//!   Citus; a tool that sends the file whole does not.
//! - `citus-small-sequence`: a `serial`/`smallserial` column, an identity
//!   or a sequence of `integer`/`smallint`: sequences of a distributed
//!   schema are split into ranges per node, which an `integer` exhausts far
//!   sooner than a `bigint`.

use sqlparser::ast::{AlterTableOperation, ColumnDef, ColumnOption, DataType, ObjectName, Statement, TableConstraint};

use crate::migrate::lint::rules::{Ctx, VOLATILE, expr_words_of};
use crate::migrate::lint::{PG, RuleInfo, STAND_IN, Severity};
use crate::migrate::statements::Position;

pub(crate) const CITUS_VOLATILE_IN_UPDATE: RuleInfo = RuleInfo {
    name: "citus-volatile-in-update",
    severity: Severity::Error,
    drivers: PG,
    description: "Citus: a volatile function (random(), clock_timestamp(), nextval() …) in an UPDATE is refused \
                  on a distributed table",
};
pub(crate) const CITUS_TRIGGER: RuleInfo = RuleInfo {
    name: "citus-trigger",
    severity: Severity::Error,
    drivers: PG,
    description: "Citus: a trigger on a table of a distributed schema is refused (unless \
                  citus.enable_unsafe_triggers)",
};
pub(crate) const CITUS_FOREIGN_KEY_ACROSS_SCHEMAS: RuleInfo = RuleInfo {
    name: "citus-foreign-key-across-schemas",
    severity: Severity::Error,
    drivers: PG,
    description: "Citus: a foreign key from one schema's table to another schema's is refused between \
                  distributed schemas (a reference table excepted)",
};
pub(crate) const CITUS_DDL_AMONG_STATEMENTS: RuleInfo = RuleInfo {
    name: "citus-ddl-among-statements",
    severity: Severity::Info,
    drivers: PG,
    description: "Citus: CREATE INDEX or RENAME in a file with other statements fails when the file is sent as \
                  one text (citus#6608); Strata sends each statement alone",
};
pub(crate) const CITUS_SMALL_SEQUENCE: RuleInfo = RuleInfo {
    name: "citus-small-sequence",
    severity: Severity::Warning,
    drivers: PG,
    description: "Citus: a serial, identity or sequence smaller than bigint; a distributed schema's sequences are \
                  split into ranges per node",
};

/// Types whose sequences are smaller than `bigint` (as sqlparser writes
/// them, lowercase).
const SMALL_SEQUENCE_TYPES: &[&str] = &["serial", "serial4", "smallserial", "serial2"];
const SMALL_INTEGERS: &[&str] = &["int", "integer", "int4", "smallint", "int2"];

fn type_name(data_type: &DataType) -> String {
    data_type.to_string().to_ascii_lowercase()
}

/// The schema a table name is qualified with (`None`: the default one;
/// the tenant's `{schema}` placeholder counts as the default).
fn schema_of(name: &ObjectName) -> Option<String> {
    let parts: Vec<String> = name.0.iter().map(|p| p.to_string().trim_matches('"').to_lowercase()).collect();
    match parts.as_slice() {
        [schema, _] if schema != STAND_IN => Some(schema.clone()),
        _ => None,
    }
}

/// Judges one parsed statement that starts at `at` under the Citus rules.
pub(crate) fn check(ctx: &mut Ctx, at: Position, statement: &Statement, statements_in_file: usize) {
    match statement {
        Statement::Update(update) => {
            let mut words = Vec::new();
            for assignment in &update.assignments {
                words.extend(expr_words_of(&assignment.value.to_string()));
            }
            if let Some(selection) = &update.selection {
                words.extend(expr_words_of(&selection.to_string()));
            }
            if let Some(function) = words.iter().find(|w| VOLATILE.iter().any(|v| v.eq_ignore_ascii_case(w))) {
                ctx.found(
                    &CITUS_VOLATILE_IN_UPDATE,
                    at,
                    format!(
                        "this UPDATE calls the volatile function {}(): Citus refuses it on a distributed table",
                        function.to_ascii_lowercase()
                    ),
                    "compute the value first (a constant, or a column of a joined table), or run the update per \
                     row from the application",
                );
            }
        }
        Statement::CreateTrigger(trigger) => ctx.found(
            &CITUS_TRIGGER,
            at,
            format!("trigger {} on a table of a distributed schema: Citus refuses it", trigger.name),
            "move the trigger's work into the application or a later batch job (or set \
             citus.enable_unsafe_triggers, knowing the trigger runs on each shard alone)",
        ),
        Statement::CreateTable(create) => {
            for column in &create.columns {
                foreign_keys_of_column(ctx, at, &create.name, column);
                small_sequence(ctx, at, column);
            }
            for constraint in &create.constraints {
                foreign_key(ctx, at, &create.name, constraint);
            }
        }
        Statement::AlterTable(alter) => {
            for operation in &alter.operations {
                match operation {
                    AlterTableOperation::AddConstraint { constraint, .. } => {
                        foreign_key(ctx, at, &alter.name, constraint)
                    }
                    AlterTableOperation::AddColumn { column_def, .. } => {
                        foreign_keys_of_column(ctx, at, &alter.name, column_def);
                        small_sequence(ctx, at, column_def);
                    }
                    AlterTableOperation::RenameColumn { .. }
                    | AlterTableOperation::RenameTable { .. }
                    | AlterTableOperation::RenameConstraint { .. } => {
                        among_others(ctx, at, "RENAME", statements_in_file)
                    }
                    _ => {}
                }
            }
        }
        Statement::RenameTable(_) => among_others(ctx, at, "RENAME", statements_in_file),
        Statement::CreateIndex(_) => among_others(ctx, at, "CREATE INDEX", statements_in_file),
        Statement::CreateSequence { name, data_type: Some(data_type), .. }
            if SMALL_INTEGERS.contains(&type_name(data_type).as_str()) =>
        {
            ctx.found(
                &CITUS_SMALL_SEQUENCE,
                at,
                format!("sequence {name} is {}: smaller than bigint", type_name(data_type)),
                "create it AS bigint",
            )
        }
        _ => {}
    }
}

fn among_others(ctx: &mut Ctx, at: Position, what: &str, statements_in_file: usize) {
    if statements_in_file > 1 {
        ctx.found(
            &CITUS_DDL_AMONG_STATEMENTS,
            at,
            format!(
                "{what} in a file of {statements_in_file} statements: Citus refuses it when the file is sent as one \
                 text (citus#6608); Strata sends each statement alone, psql -f and other tools may not"
            ),
            "nothing to do for Strata; for other tools, give the statement a file of its own",
        );
    }
}

fn foreign_keys_of_column(ctx: &mut Ctx, at: Position, table: &ObjectName, column: &ColumnDef) {
    for option in &column.options {
        if let ColumnOption::ForeignKey(fk) = &option.option {
            across(ctx, at, table, &fk.foreign_table);
        }
    }
}

fn foreign_key(ctx: &mut Ctx, at: Position, table: &ObjectName, constraint: &TableConstraint) {
    if let TableConstraint::ForeignKey(fk) = constraint {
        across(ctx, at, table, &fk.foreign_table);
    }
}

fn across(ctx: &mut Ctx, at: Position, table: &ObjectName, foreign: &ObjectName) {
    if schema_of(table) != schema_of(foreign) {
        ctx.found(
            &CITUS_FOREIGN_KEY_ACROSS_SCHEMAS,
            at,
            format!("a foreign key from {table} to {foreign}, a table of another schema: Citus refuses it"),
            "keep the referenced rows in the tenant's own schema; if the referenced table is a Citus reference \
             table, say so with `-- strata:allow citus-foreign-key-across-schemas`",
        );
    }
}

fn small_sequence(ctx: &mut Ctx, at: Position, column: &ColumnDef) {
    let name = type_name(&column.data_type);
    let identity = column.options.iter().any(|o| {
        matches!(&o.option, ColumnOption::Generated { generation_expr: None, .. } | ColumnOption::Identity(_))
    });
    if SMALL_SEQUENCE_TYPES.contains(&name.as_str()) || (identity && SMALL_INTEGERS.contains(&name.as_str())) {
        ctx.found(
            &CITUS_SMALL_SEQUENCE,
            at,
            format!("column {} takes its values from a sequence of type {name}: smaller than bigint", column.name),
            "use bigserial, or bigint generated always as identity",
        );
    }
}
