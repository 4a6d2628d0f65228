//! The rules: what each statement does, judged on sqlparser's AST (or, for
//! a statement the parser cannot read, on its words).

use rustc_hash::FxHashSet;

use sqlparser::ast::{
    AlterColumnOperation, AlterTable, AlterTableAlgorithm, AlterTableLock, AlterTableOperation, ColumnDef,
    ColumnOption, CreateIndex, DataType, Expr, Ident, IfStatement, LockTableMode, ObjectName, ObjectType,
    RenameTableNameKind, Set, Spanned, Statement, TableConstraint, Value,
};
use sqlparser::tokenizer::{Location, Token, Tokenizer};

use crate::migrate::driver::Driver;
use crate::migrate::lint::{ALL, Checks, Finding, PG, RuleInfo, Severity, Word, dialect, table_key};
use crate::migrate::statements::{BACKFILL_DIRECTIVE, NO_TRANSACTION_DIRECTIVE, Position};

pub(crate) const CREATE_INDEX_NON_CONCURRENTLY: RuleInfo = RuleInfo {
    name: "create-index-non-concurrently",
    severity: Severity::Warning,
    drivers: PG,
    description: "CREATE INDEX without CONCURRENTLY on an existing table blocks its writes while the index builds",
};
pub(crate) const DROP_INDEX_NON_CONCURRENTLY: RuleInfo = RuleInfo {
    name: "drop-index-non-concurrently",
    severity: Severity::Warning,
    drivers: PG,
    description: "DROP INDEX without CONCURRENTLY takes an ACCESS EXCLUSIVE lock on its table",
};
pub(crate) const MSSQL_INDEX_WITHOUT_ONLINE: RuleInfo = RuleInfo {
    name: "mssql-index-without-online",
    severity: Severity::Warning,
    drivers: &[Driver::SqlServer],
    description: "CREATE INDEX without WITH (ONLINE = ON) on an existing table blocks it while the index builds",
};
pub(crate) const ADDING_VOLATILE_DEFAULT: RuleInfo = RuleInfo {
    name: "adding-volatile-default",
    severity: Severity::Warning,
    drivers: PG,
    description: "ADD COLUMN with a volatile DEFAULT (random(), gen_random_uuid(), clock_timestamp(), nextval …) \
                  rewrites the table under ACCESS EXCLUSIVE",
};
pub(crate) const ADDING_SERIAL_COLUMN: RuleInfo = RuleInfo {
    name: "adding-serial-column",
    severity: Severity::Warning,
    drivers: PG,
    description: "ADD COLUMN of a serial type or an identity fills every row from a sequence: a table rewrite \
                  under ACCESS EXCLUSIVE",
};
pub(crate) const CHANGING_COLUMN_TYPE: RuleInfo = RuleInfo {
    name: "changing-column-type",
    severity: Severity::Error,
    drivers: &[Driver::Postgres, Driver::SqlServer],
    description: "ALTER COLUMN … TYPE rewrites the table (and its indexes) while holding its most exclusive lock",
};
pub(crate) const SETTING_NOT_NULL: RuleInfo = RuleInfo {
    name: "setting-not-null",
    severity: Severity::Warning,
    drivers: PG,
    description: "ALTER COLUMN … SET NOT NULL scans the whole table under ACCESS EXCLUSIVE, unless a validated \
                  CHECK (column IS NOT NULL) proves it first",
};
pub(crate) const CONSTRAINT_MISSING_NOT_VALID: RuleInfo = RuleInfo {
    name: "constraint-missing-not-valid",
    severity: Severity::Warning,
    drivers: PG,
    description: "ADD FOREIGN KEY / CHECK without NOT VALID on an existing table checks every row while blocking writes",
};
pub(crate) const ADDING_UNIQUE_CONSTRAINT: RuleInfo = RuleInfo {
    name: "adding-unique-constraint",
    severity: Severity::Warning,
    drivers: PG,
    description: "ADD UNIQUE / PRIMARY KEY on an existing table builds its index under ACCESS EXCLUSIVE",
};
pub(crate) const MYSQL_ALTER_WITHOUT_ALGORITHM: RuleInfo = RuleInfo {
    name: "mysql-alter-without-algorithm",
    severity: Severity::Warning,
    drivers: &[Driver::Mysql],
    description: "ALTER TABLE on an existing table beyond ADD INDEX / ADD COLUMN, without ALGORITHM=INSTANT or \
                  ALGORITHM=INPLACE, LOCK=NONE, may silently copy the table and block writes",
};
pub(crate) const DROPPING_COLUMN: RuleInfo = RuleInfo {
    name: "dropping-column",
    severity: Severity::Warning,
    drivers: ALL,
    description: "DROP COLUMN loses its data and breaks application versions that still read it",
};
pub(crate) const DROPPING_TABLE: RuleInfo = RuleInfo {
    name: "dropping-table",
    severity: Severity::Warning,
    drivers: ALL,
    description: "DROP TABLE loses its data and breaks application versions that still use it",
};
pub(crate) const RENAMING_COLUMN: RuleInfo = RuleInfo {
    name: "renaming-column",
    severity: Severity::Warning,
    drivers: ALL,
    description: "renaming a column breaks the application version still running against the old name",
};
pub(crate) const RENAMING_TABLE: RuleInfo = RuleInfo {
    name: "renaming-table",
    severity: Severity::Warning,
    drivers: ALL,
    description: "renaming a table breaks the application version still running against the old name",
};
pub(crate) const VACUUM_FULL: RuleInfo = RuleInfo {
    name: "vacuum-full",
    severity: Severity::Error,
    drivers: PG,
    description: "VACUUM FULL rewrites the table under ACCESS EXCLUSIVE: no reads or writes until it ends",
};
pub(crate) const CLUSTER: RuleInfo = RuleInfo {
    name: "cluster",
    severity: Severity::Error,
    drivers: PG,
    description: "CLUSTER rewrites the table under ACCESS EXCLUSIVE: no reads or writes until it ends",
};
pub(crate) const LOCK_TABLE: RuleInfo = RuleInfo {
    name: "lock-table",
    severity: Severity::Warning,
    drivers: &[Driver::Postgres, Driver::Mysql],
    description: "an explicit LOCK TABLE(S) blocks other sessions until the migration ends",
};
pub(crate) const MISSING_LOCK_TIMEOUT: RuleInfo = RuleInfo {
    name: "missing-lock-timeout",
    severity: Severity::Warning,
    drivers: PG,
    description: "a transactional file taking ACCESS EXCLUSIVE locks without a lock_timeout (when the service sets \
                  none) can queue every query on the table behind it",
};
pub(crate) const UNKNOWN_RULE: RuleInfo = RuleInfo {
    name: "unknown-rule",
    severity: Severity::Warning,
    drivers: ALL,
    description: "a strata:allow directive names a rule the linter does not have",
};

/// PostgreSQL functions whose value differs per row (volatile), so that a
/// column added with them as default must be filled row by row.
pub(crate) const VOLATILE: &[&str] = &[
    "random",
    "setseed",
    "gen_random_uuid",
    "gen_random_bytes",
    "uuid_generate_v1",
    "uuid_generate_v1mc",
    "uuid_generate_v4",
    "uuidv4",
    "uuidv7",
    "clock_timestamp",
    "timeofday",
    "nextval",
    "txid_current",
    "pg_current_xact_id",
];

/// What the linter knows across files.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Tables created by statements seen so far.
    created: FxHashSet<String>,
    /// Indexes built on those tables.
    new_indexes: FxHashSet<String>,
    /// Check constraints `column IS NOT NULL`, by table.
    checks: Checks,
}

/// The linting of one file.
pub(crate) struct Ctx<'a> {
    pub(crate) driver: Driver,
    pub(crate) file: &'a str,
    state: &'a mut State,
    findings: Vec<Finding>,
    /// The first statement taking an ACCESS EXCLUSIVE lock on an existing
    /// table (PostgreSQL).
    first_lock: Option<Position>,
    /// A `SET lock_timeout` came before any such statement.
    timeout_first: bool,
    /// The Citus rules apply, and the file holds this many statements.
    citus: Option<usize>,
}

pub(crate) type Map<'m> = &'m dyn Fn(Location) -> Option<Position>;

impl<'a> Ctx<'a> {
    pub(crate) fn new(driver: Driver, file: &'a str, state: &'a mut State) -> Self {
        Ctx { driver, file, state, findings: Vec::new(), first_lock: None, timeout_first: false, citus: None }
    }

    /// Applies the Citus rules too, to a file of `statements` statements.
    /// With the Citus rules on: the file's statement count.
    pub(crate) fn citus_statements(&self) -> Option<usize> {
        self.citus
    }

    pub(crate) fn with_citus(mut self, statements: usize) -> Self {
        self.citus = Some(statements);
        self
    }

    pub(crate) fn found(&mut self, rule: &RuleInfo, at: Position, message: String, advice: &str) {
        if rule.drivers.contains(&self.driver) {
            self.findings.push(Finding {
                rule: rule.name,
                severity: rule.severity,
                file: self.file.to_string(),
                at,
                message,
                advice: advice.to_string(),
            });
        }
    }

    fn is_new(&self, name: &ObjectName) -> bool {
        self.state.created.contains(&key(name))
    }

    fn lock(&mut self, at: Position) {
        if self.driver == Driver::Postgres {
            self.first_lock.get_or_insert(at);
        }
    }

    /// The file's findings; `lock_timeout_rule`: `missing-lock-timeout`
    /// applies (the service sets no lock time-out, and the file runs in a
    /// transaction and sets none by directive).
    pub(crate) fn finish(mut self, lock_timeout_rule: bool) -> Vec<Finding> {
        if let (true, false, Some(at)) = (lock_timeout_rule, self.timeout_first, self.first_lock) {
            self.found(
                &MISSING_LOCK_TIMEOUT,
                at,
                "this statement waits for an ACCESS EXCLUSIVE lock with no lock_timeout: while it waits behind a \
                 long query, every other query on the table queues behind it"
                    .into(),
                "start the file with `SET LOCAL lock_timeout = '5s';` (or a `-- strata:lock-timeout 5s` directive) \
                 so it fails fast and is retried",
            );
        }
        self.findings
    }

    /// Judges one parsed statement that starts at `at`.
    pub(crate) fn check(&mut self, at: Position, statement: &Statement, map: Map) {
        match statement {
            Statement::CreateTable(create) => {
                self.state.created.insert(key(&create.name));
            }
            Statement::CreateIndex(index) => self.create_index(at, index),
            Statement::AlterTable(alter) => self.alter_table(at, alter, map),
            Statement::Drop { object_type: ObjectType::Index, names, .. } if self.driver == Driver::Postgres => {
                self.drop_indexes(at, names, map)
            }
            Statement::Drop { object_type: ObjectType::Table, names, .. } => self.drop_tables(at, names, map),
            Statement::RenameTable(renames) => {
                for rename in renames {
                    let clause = map(rename.old_name.span().start).unwrap_or(at);
                    self.rename_table(clause, &rename.old_name, &rename.new_name);
                }
            }
            Statement::Execute { name: Some(name), parameters, .. } => self.sp_rename(at, name, parameters),
            Statement::Vacuum(vacuum) if vacuum.full => {
                self.lock(at);
                self.vacuum_full(at);
            }
            Statement::Lock(lock) => {
                if matches!(lock.lock_mode, None | Some(LockTableMode::AccessExclusive)) {
                    self.lock(at);
                }
                self.lock_table(at);
            }
            Statement::LockTables { .. } => self.lock_table(at),
            Statement::If(conditional) => self.check_branches(at, conditional, map),
            Statement::Truncate(truncate) if truncate.table_names.iter().any(|t| !self.is_new(&t.name)) => {
                self.lock(at);
            }
            Statement::Set(Set::SingleAssignment { variable, .. }) => self.note_lock_timeout(variable),
            _ => {}
        }
    }

    /// `DROP INDEX` (PostgreSQL) of `names`: an index built on a table of
    /// this run is forgotten; dropping any other one locks its table.
    fn drop_indexes(&mut self, at: Position, names: &[ObjectName], map: Map) {
        for name in names {
            if self.state.new_indexes.remove(&key(name)) {
                continue;
            }
            self.lock(at);
            self.found(
                &DROP_INDEX_NON_CONCURRENTLY,
                map(name.span().start).unwrap_or(at),
                format!(
                    "dropping index {name} takes an ACCESS EXCLUSIVE lock on its table: its reads and writes \
                     wait until the drop is done"
                ),
                &format!(
                    "use DROP INDEX CONCURRENTLY, alone in a file marked `-- {NO_TRANSACTION_DIRECTIVE}` \
                     (it cannot run in a transaction)"
                ),
            );
        }
    }

    /// `DROP TABLE` of `names`: a table created in this run is forgotten;
    /// dropping any other one locks it and loses its rows.
    fn drop_tables(&mut self, at: Position, names: &[ObjectName], map: Map) {
        for name in names {
            if self.state.created.remove(&key(name)) {
                continue;
            }
            self.lock(at);
            self.found(
                &DROPPING_TABLE,
                map(name.span().start).unwrap_or(at),
                format!("dropping table {name} loses its rows and breaks application versions still using it"),
                "stop using the table in the application first, and drop it in a later release \
                 (after a backup if its data may be needed)",
            );
        }
    }

    /// Judges every statement of every branch of an `IF` as if it started
    /// at `at`.
    fn check_branches(&mut self, at: Position, conditional: &IfStatement, map: Map) {
        let blocks = std::iter::once(&conditional.if_block)
            .chain(&conditional.elseif_blocks)
            .chain(conditional.else_block.as_ref());
        for block in blocks {
            for inner in block.conditional_statements.statements() {
                self.check(at, inner, map);
            }
        }
    }

    /// Remembers a `SET lock_timeout` that comes before any statement
    /// taking an ACCESS EXCLUSIVE lock.
    fn note_lock_timeout(&mut self, variable: &ObjectName) {
        let last = variable.0.last().and_then(|p| p.as_ident()).map(|i| i.value.to_ascii_lowercase());
        if last.as_deref() == Some("lock_timeout") && self.first_lock.is_none() {
            self.timeout_first = true;
        }
    }

    fn create_index(&mut self, at: Position, index: &CreateIndex) {
        if self.is_new(&index.table_name) {
            if let Some(name) = &index.name {
                self.state.new_indexes.insert(key(name));
            }
            return;
        }
        let table = &index.table_name;
        match self.driver {
            Driver::Postgres if !index.concurrently => self.found(
                &CREATE_INDEX_NON_CONCURRENTLY,
                at,
                format!("building this index blocks every write to {table} until it is done"),
                &format!(
                    "use CREATE INDEX CONCURRENTLY, alone in a file marked `-- {NO_TRANSACTION_DIRECTIVE}` \
                     (it cannot run in a transaction)"
                ),
            ),
            Driver::SqlServer => {
                let online = index.with.iter().any(|e| expr_words(e).windows(2).any(|w| w == ["ONLINE", "ON"]));
                if !online {
                    self.mssql_index(at, &table.to_string());
                }
            }
            _ => {}
        }
    }

    fn mssql_index(&mut self, at: Position, table: &str) {
        self.found(
            &MSSQL_INDEX_WITHOUT_ONLINE,
            at,
            format!("building this index offline blocks {table} until it is done"),
            "add WITH (ONLINE = ON) (Enterprise, Developer and Azure SQL editions), or build it in a \
             maintenance window",
        );
    }

    fn vacuum_full(&mut self, at: Position) {
        self.found(
            &VACUUM_FULL,
            at,
            "VACUUM FULL rewrites the table under ACCESS EXCLUSIVE: no reads or writes until it ends".into(),
            "leave routine vacuuming to autovacuum; to reclaim space online use pg_repack or pg_squeeze, outside \
             migrations",
        );
    }

    fn cluster(&mut self, at: Position) {
        self.lock(at);
        self.found(
            &CLUSTER,
            at,
            "CLUSTER rewrites the table under ACCESS EXCLUSIVE: no reads or writes until it ends".into(),
            "reorder the table online with pg_repack (--order-by), outside migrations",
        );
    }

    fn lock_table(&mut self, at: Position) {
        self.found(
            &LOCK_TABLE,
            at,
            "an explicit table lock blocks other sessions' queries on it until the migration ends".into(),
            "drop the LOCK: the statements that need a lock take the weakest one that suffices",
        );
    }

    fn rename_table(&mut self, at: Position, old: &ObjectName, new: &ObjectName) {
        if self.state.created.remove(&key(old)) {
            self.state.created.insert(key(new));
            return;
        }
        self.lock(at);
        self.found(
            &RENAMING_TABLE,
            at,
            format!("renaming {old} to {new} breaks the application version still running against {old}"),
            "create the new table (or a view under the old name) and move the application over in steps; \
             remove the old name in a later release",
        );
    }

    fn rename_column(&mut self, at: Position, table: &ObjectName, column: &str) {
        let advice = format!(
            "add the new column, write both, copy the existing rows over in batches ({}), move reads over, and drop \
             the old one in a later release",
            backfill_file(table)
        );
        self.found(
            &RENAMING_COLUMN,
            at,
            format!("renaming {table}.{column} breaks the application version still running against {column}"),
            &advice,
        );
    }

    fn drop_column(&mut self, at: Position, table: &ObjectName, column: &str) {
        self.found(
            &DROPPING_COLUMN,
            at,
            format!("dropping {table}.{column} loses its data and breaks application versions still reading it"),
            "stop using the column in the application first, and drop it in a later release",
        );
    }

    /// SQL Server's `EXEC sp_rename 'old', 'new' [, 'COLUMN' | 'OBJECT' | …]`.
    fn sp_rename(&mut self, at: Position, name: &ObjectName, parameters: &[Expr]) {
        let procedure = name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.to_ascii_lowercase());
        if procedure.as_deref() != Some("sp_rename") {
            return;
        }
        let text = |i: usize| match parameters.get(i) {
            Some(Expr::Value(v)) => match &v.value {
                Value::SingleQuotedString(s) | Value::NationalStringLiteral(s) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        };
        let (Some(old), Some(new)) = (text(0), text(1)) else { return };
        let parts: Vec<&str> = old.split('.').map(|p| p.trim_matches(|c| c == '[' || c == ']')).collect();
        match text(2).map(|k| k.to_ascii_uppercase()).as_deref() {
            Some("COLUMN") => {
                let table_parts = &parts[..parts.len().saturating_sub(1)];
                if !self.state.created.contains(&table_key(table_parts.iter().copied())) {
                    let table = ObjectName::from(table_parts.iter().map(|p| (*p).into()).collect::<Vec<_>>());
                    self.rename_column(at, &table, parts.last().copied().unwrap_or_default());
                }
            }
            None | Some("OBJECT") => {
                let old_key = table_key(parts.iter().copied());
                if self.state.created.remove(&old_key) {
                    let mut new_parts = parts.clone();
                    new_parts.pop();
                    new_parts.push(&new);
                    self.state.created.insert(table_key(new_parts));
                    return;
                }
                self.found(
                    &RENAMING_TABLE,
                    at,
                    format!("renaming {old} to {new} breaks the application version still running against {old}"),
                    "create the new table (or a view under the old name) and move the application over in steps; \
                     remove the old name in a later release",
                );
            }
            _ => {}
        }
    }

    /// Judges an `ALTER TABLE` that starts at `at`, operation by operation.
    fn alter_table(&mut self, at: Position, alter: &AlterTable, map: Map) {
        let table = &alter.name;
        let name_at = map(table.span().start).unwrap_or(at);
        if self.is_new(table) {
            self.alter_new_table(name_at, table, &alter.operations);
            return;
        }
        let only_validates =
            alter.operations.iter().all(|op| matches!(op, AlterTableOperation::ValidateConstraint { .. }));
        if !only_validates {
            self.lock(at);
        }
        for op in &alter.operations {
            self.alter_operation(at, name_at, table, op, map);
        }
        self.note_checks(table, &alter.operations);
        if self.driver == Driver::Mysql {
            self.mysql_algorithm(at, table, &alter.operations);
        }
    }

    /// `ALTER TABLE` of a table created in this run: nothing to judge, but
    /// a rename (its name at `name_at`) and `CHECK (column IS NOT NULL)`
    /// constraints are remembered.
    fn alter_new_table(&mut self, name_at: Position, table: &ObjectName, operations: &[AlterTableOperation]) {
        for op in operations {
            if let AlterTableOperation::RenameTable { table_name } = op {
                self.rename_table(name_at, table, rename_target(table_name));
            }
        }
        self.note_checks(table, operations);
    }

    /// Judges one operation of an `ALTER TABLE` of an existing `table`
    /// (the statement at `at`, the table's name at `name_at`).
    fn alter_operation(
        &mut self,
        at: Position,
        name_at: Position,
        table: &ObjectName,
        op: &AlterTableOperation,
        map: Map,
    ) {
        let clause = map(op.span().start).unwrap_or(at);
        let ident_at = |ident: &Ident| map(ident.span.start).unwrap_or(clause);
        match op {
            AlterTableOperation::AddColumn { column_def, .. } => {
                self.add_column(ident_at(&column_def.name), table, column_def)
            }
            AlterTableOperation::AddConstraint { constraint, not_valid } => {
                self.add_constraint(clause, table, constraint, *not_valid)
            }
            AlterTableOperation::AlterColumn { column_name, op } => {
                self.alter_column(ident_at(column_name), table, column_name, op)
            }
            AlterTableOperation::DropColumn { column_names, .. } => {
                for column in column_names {
                    self.drop_column(ident_at(column), table, &column.value);
                }
            }
            AlterTableOperation::RenameColumn { old_column_name, .. } => {
                self.rename_column(ident_at(old_column_name), table, &old_column_name.value)
            }
            AlterTableOperation::ChangeColumn { old_name, new_name, .. }
                if !old_name.value.eq_ignore_ascii_case(&new_name.value) =>
            {
                self.rename_column(ident_at(old_name), table, &old_name.value)
            }
            AlterTableOperation::RenameTable { table_name } => {
                self.rename_table(name_at, table, rename_target(table_name));
            }
            _ => {}
        }
    }

    /// `ALTER COLUMN` of `table`'s `column_name` (at `at`): a type change,
    /// or a `SET NOT NULL` no validated check proves.
    fn alter_column(&mut self, at: Position, table: &ObjectName, column_name: &Ident, op: &AlterColumnOperation) {
        match op {
            AlterColumnOperation::SetDataType { data_type, .. } => {
                let advice = format!(
                    "add a column of the new type, write both, fill it in batches ({}), then switch reads over and \
                     drop the old column in a later release",
                    backfill_file(table)
                );
                self.found(
                    &CHANGING_COLUMN_TYPE,
                    at,
                    format!(
                        "changing {table}.{column_name} to {data_type} rewrites the table and its indexes \
                         while holding its most exclusive lock"
                    ),
                    &advice,
                )
            }
            AlterColumnOperation::SetNotNull if !self.proven_not_null(table, &column_name.value) => self.found(
                &SETTING_NOT_NULL,
                at,
                format!("SET NOT NULL on {table}.{column_name} scans the whole table under ACCESS EXCLUSIVE"),
                "first add CHECK (column IS NOT NULL) NOT VALID and VALIDATE CONSTRAINT it \
                 (PostgreSQL 12+ then skips the scan), then SET NOT NULL and drop the check",
            ),
            _ => {}
        }
    }

    fn add_column(&mut self, at: Position, table: &ObjectName, column: &ColumnDef) {
        if self.driver != Driver::Postgres {
            return;
        }
        let fill = backfill_file(table);
        let serial = matches!(&column.data_type, DataType::Custom(name, _)
        if name.0.len() == 1 && name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| {
            matches!(i.value.to_ascii_lowercase().as_str(), "serial" | "bigserial" | "smallserial" | "serial4" | "serial8" | "serial2")
        }));
        let identity = column.options.iter().any(|o| {
            matches!(&o.option, ColumnOption::Generated { generation_expr: None, .. } | ColumnOption::Identity(_))
        });
        if serial || identity {
            self.found(
                &ADDING_SERIAL_COLUMN,
                at,
                format!(
                    "adding {} fills every existing row from a sequence: the table is rewritten under ACCESS EXCLUSIVE",
                    column.name
                ),
                &format!(
                    "add a plain nullable column, attach a sequence default for new rows, fill the existing rows \
                     in batches ({fill}), then add the constraint"
                ),
            );
            return;
        }
        for option in &column.options {
            if let ColumnOption::Default(expr) = &option.option {
                let words = expr_words(expr);
                if let Some(function) = words.iter().find(|w| VOLATILE.iter().any(|v| v.eq_ignore_ascii_case(w))) {
                    self.found(
                        &ADDING_VOLATILE_DEFAULT,
                        at,
                        format!(
                            "adding {} with the volatile default {}() rewrites the table under ACCESS EXCLUSIVE",
                            column.name,
                            function.to_ascii_lowercase()
                        ),
                        &format!(
                            "add the column without a default (or with a constant one), set the default in a \
                             second statement, and fill the existing rows in batches ({fill})"
                        ),
                    );
                }
            }
        }
    }

    fn add_constraint(&mut self, at: Position, table: &ObjectName, constraint: &TableConstraint, not_valid: bool) {
        match constraint {
            TableConstraint::ForeignKey(_) | TableConstraint::Check(_) if !not_valid => {
                let kind = if matches!(constraint, TableConstraint::ForeignKey(_)) { "FOREIGN KEY" } else { "CHECK" };
                self.found(
                    &CONSTRAINT_MISSING_NOT_VALID,
                    at,
                    format!("adding this {kind} checks every row of {table} while blocking its writes"),
                    "add it NOT VALID (instant), then VALIDATE CONSTRAINT in a later statement or file (which does \
                     not block writes)",
                )
            }
            TableConstraint::Unique(_) | TableConstraint::PrimaryKey(_) => self.found(
                &ADDING_UNIQUE_CONSTRAINT,
                at,
                format!("this constraint builds its unique index on {table} under ACCESS EXCLUSIVE"),
                "CREATE UNIQUE INDEX CONCURRENTLY in a `-- strata:no-transaction` file first, then add the \
                 constraint USING INDEX",
            ),
            _ => {}
        }
    }

    /// Records `CHECK (column IS NOT NULL)` constraints added, validated or
    /// dropped.
    fn note_checks(&mut self, table: &ObjectName, operations: &[AlterTableOperation]) {
        let checks = self.state.checks.entry(key(table)).or_default();
        for op in operations {
            match op {
                AlterTableOperation::AddConstraint { constraint: TableConstraint::Check(check), not_valid } => {
                    let mut expr = check.expr.as_ref();
                    while let Expr::Nested(inner) = expr {
                        expr = inner;
                    }
                    if let Expr::IsNotNull(column) = expr
                        && let Expr::Identifier(column) = column.as_ref()
                    {
                        let name = check.name.as_ref().map_or_else(String::new, |n| n.value.to_lowercase());
                        checks.insert(name, (column.value.to_lowercase(), !not_valid));
                    }
                }
                AlterTableOperation::ValidateConstraint { name } => {
                    if let Some(check) = checks.get_mut(&name.value.to_lowercase()) {
                        check.1 = true;
                    }
                }
                AlterTableOperation::DropConstraint { name, .. } => {
                    checks.remove(&name.value.to_lowercase());
                }
                _ => {}
            }
        }
    }

    fn proven_not_null(&self, table: &ObjectName, column: &str) -> bool {
        let column = column.to_lowercase();
        self.state.checks.get(&key(table)).is_some_and(|c| c.values().any(|(col, valid)| *valid && *col == column))
    }

    fn mysql_algorithm(&mut self, at: Position, table: &ObjectName, operations: &[AlterTableOperation]) {
        let (mut algorithm, mut lock) = (None, None);
        let mut pure = true;
        for op in operations {
            match op {
                AlterTableOperation::Algorithm { algorithm: a, .. } => algorithm = Some(a),
                AlterTableOperation::Lock { lock: l, .. } => lock = Some(l),
                AlterTableOperation::AddColumn { column_position: None, .. }
                | AlterTableOperation::AddConstraint { constraint: TableConstraint::Index(_), .. }
                | AlterTableOperation::AddConstraint { constraint: TableConstraint::Unique(_), .. }
                | AlterTableOperation::DropIndex { .. }
                | AlterTableOperation::RenameColumn { .. }
                | AlterTableOperation::RenameTable { .. } => {}
                _ => pure = false,
            }
        }
        let safe = matches!(algorithm, Some(AlterTableAlgorithm::Instant))
            || (matches!(algorithm, Some(AlterTableAlgorithm::Inplace)) && matches!(lock, Some(AlterTableLock::None)));
        if !pure && !safe {
            self.found(
                &MYSQL_ALTER_WITHOUT_ALGORITHM,
                at,
                format!("this ALTER TABLE may copy {table} row by row and block its writes while it does"),
                "state ALGORITHM=INSTANT, or ALGORITHM=INPLACE, LOCK=NONE: the server then refuses a change it \
                 cannot make that way instead of silently copying the table",
            );
        }
    }

    /// Judges a statement the parser could not read on its words: whether
    /// it creates a table (remembered), and the rules that need no more
    /// (`cluster`, `vacuum-full`, `mssql-index-without-online`). True when a
    /// rule judged it.
    pub(crate) fn check_words(&mut self, base: Position, words: &[Word], map: Map) -> bool {
        let upper: Vec<&str> = words.iter().map(|w| w.upper.as_deref().unwrap_or("")).collect();
        let at = words.first().and_then(|w| map(w.at)).unwrap_or(base);
        let first = upper.first().copied().unwrap_or_default();
        // CREATE [OR REPLACE] [modifiers] TABLE [IF NOT EXISTS] name
        if first == "CREATE"
            && let Some(table) = upper.iter().take(6).position(|w| *w == "TABLE")
        {
            self.note_created_table(words, &upper, table + 1);
            return false;
        }
        match self.driver {
            Driver::Postgres if first == "CLUSTER" => {
                self.cluster(at);
                true
            }
            Driver::Postgres if first == "VACUUM" && upper.iter().take(8).any(|w| *w == "FULL") => {
                self.lock(at);
                self.vacuum_full(at);
                true
            }
            // ALTER TABLE name ALTER COLUMN column type …
            Driver::SqlServer if first == "ALTER" && upper.get(1) == Some(&"TABLE") => {
                self.mssql_alter_column_words(at, words, &upper, map)
            }
            Driver::SqlServer if first == "CREATE" => self.mssql_create_index_words(at, words, &upper),
            _ => false,
        }
    }

    /// Remembers the table a `CREATE … TABLE` statement creates, its name
    /// at word `start` (after an `IF NOT EXISTS` there).
    fn note_created_table(&mut self, words: &[Word], upper: &[&str], start: usize) {
        let mut i = start;
        if upper.get(i..i + 3) == Some(&["IF", "NOT", "EXISTS"][..]) {
            i += 3;
        }
        let parts = dotted_name(words, i);
        if !parts.is_empty() {
            self.state.created.insert(table_key(parts));
        }
    }

    /// SQL Server's `ALTER TABLE name ALTER COLUMN column type …` read on
    /// its words: a type change of a table not created in this run. True
    /// when it was judged.
    fn mssql_alter_column_words(&mut self, at: Position, words: &[Word], upper: &[&str], map: Map) -> bool {
        let Some(column) = upper.windows(2).position(|w| w == ["ALTER", "COLUMN"]).filter(|i| *i > 0) else {
            return false;
        };
        let table: Vec<&str> = words.get(2..column).unwrap_or_default().iter().map(|w| w.value.as_str()).collect();
        if self.state.created.contains(&table_key(table.iter().copied())) {
            return true;
        }
        let Some(name) = words.get(column + 2) else { return false };
        let table = table.join(".");
        let advice = format!(
            "add a column of the new type, write both, fill it in batches (a file marked `-- {BACKFILL_DIRECTIVE} \
             table={table} key=id`, key= its key columns), then switch reads over and drop the old column in a later \
             release"
        );
        self.found(
            &CHANGING_COLUMN_TYPE,
            map(name.at).unwrap_or(at),
            format!(
                "ALTER COLUMN {} on {table} may rewrite every row while holding a schema-modification lock",
                name.value
            ),
            &advice,
        );
        true
    }

    /// SQL Server's `CREATE [UNIQUE] [[NON]CLUSTERED] INDEX … ON table`
    /// read on its words: an index built offline on a table not created
    /// in this run. True when it was judged.
    fn mssql_create_index_words(&mut self, at: Position, words: &[Word], upper: &[&str]) -> bool {
        let Some(index) = upper.iter().take(4).position(|w| *w == "INDEX") else { return false };
        if !upper[1..index].iter().all(|w| matches!(*w, "UNIQUE" | "CLUSTERED" | "NONCLUSTERED")) {
            return false;
        }
        let Some(on) = upper.iter().position(|w| *w == "ON") else { return false };
        let parts = dotted_name(words, on + 1);
        if self.state.created.contains(&table_key(parts.iter().copied())) {
            return true;
        }
        let online = words.iter().enumerate().any(|(i, w)| {
            w.upper.as_deref() == Some("ONLINE")
                && w.next == Some(Token::Eq)
                && words.get(i + 1).and_then(|n| n.upper.as_deref()) == Some("ON")
        });
        if !online {
            self.mssql_index(at, &parts.join("."));
        }
        true
    }
}

/// The parts of the dotted name (`a.b.c`) whose first word is `words[start]`
/// (none when there is no such word).
fn dotted_name(words: &[Word], start: usize) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut i = start;
    while let Some(word) = words.get(i) {
        parts.push(word.value.as_str());
        i += 1;
        if word.next != Some(Token::Period) {
            break;
        }
    }
    parts
}

/// The new name of a `RENAME TO` / `RENAME AS`.
fn rename_target(table_name: &RenameTableNameKind) -> &ObjectName {
    match table_name {
        RenameTableNameKind::As(n) | RenameTableNameKind::To(n) => n,
    }
}

/// The finding for a name in `strata:allow` that is no rule.
pub(crate) fn unknown_rule(file: &str, at: Position, name: &str) -> Finding {
    Finding {
        rule: UNKNOWN_RULE.name,
        severity: UNKNOWN_RULE.severity,
        file: file.to_string(),
        at,
        message: format!("`{}` names {name:?}, which is not a rule: it silences nothing", super::ALLOW_DIRECTIVE),
        advice: "correct the name (the linter's rule list names every rule) or remove it".into(),
    }
}

/// The key of a table name (see [`table_key`]).
fn key(name: &ObjectName) -> String {
    let parts: Vec<String> =
        name.0.iter().map(|p| p.as_ident().map_or_else(|| p.to_string(), |i| i.value.clone())).collect();
    table_key(parts.iter().map(String::as_str))
}

/// The unquoted words of an expression as rendered, upper-cased: function
/// names and keywords, wherever they nest.
fn expr_words(expr: &Expr) -> Vec<String> {
    expr_words_of(&expr.to_string())
}

/// The unquoted words of an expression's text, upper-cased.
pub(crate) fn expr_words_of(text: &str) -> Vec<String> {
    let Ok(tokens) = Tokenizer::new(dialect(Driver::Postgres), text).tokenize() else { return Vec::new() };
    tokens
        .into_iter()
        .filter_map(|t| match t {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        })
        .collect()
}

/// The backfill file that fills `table`'s rows in batches, as advice names
/// it.
fn backfill_file(table: &ObjectName) -> String {
    format!("a file marked `-- {BACKFILL_DIRECTIVE} table={table} key=id`, key= its key columns")
}
