//! The books' tables, declared once ([`TABLES`], [`TENANTS`]): each
//! column's name, kind of type, nullability, default and key, and each
//! table's indexes. [`creates`] writes them in an engine's DDL, [`added`]
//! lists the columns added after a table's first release, [`add_column`]
//! writes the statement that adds one, and [`relations`] names what an
//! engine's catalog shows once they are there (the engines' checks that
//! skip a start's DDL when nothing is missing).
//!
//! - A column's type is one of a few kinds ([`Type`]); text columns carry
//!   the widths MySQL and SQL Server store them in (PostgreSQL and SQLite
//!   store `text`), so that books written by an earlier release and books
//!   written now have the same types.
//! - Every statement is idempotent (`if not exists`, or guarded by the
//!   catalog on SQL Server): running them over books that have everything
//!   changes nothing.
//! - What only some engines keep stays with them: SQLite's staged files and
//!   its own index of the migrations, the lease table of PostgreSQL and
//!   MySQL.

use strata_core::migrate::driver::Driver;

/// A column's type, as each engine writes it.
#[derive(Clone, Copy)]
pub(crate) enum Type {
    /// The table's generated integer id, its primary key.
    Serial,
    /// A 32-bit integer.
    Int,
    /// A 64-bit integer (SQLite's `integer` is both).
    BigInt,
    /// A point in time: `timestamptz` (PostgreSQL), RFC 3339 text (SQLite),
    /// `datetime(6)` (MySQL), `datetime2(6)` (SQL Server).
    Time,
    /// Text: `text` on PostgreSQL and SQLite, the types named on MySQL and
    /// SQL Server.
    Text {
        /// MySQL's type (`varchar(255)`, `longtext`, …).
        mysql: &'static str,
        /// SQL Server's type (`nvarchar(128)`, `nvarchar(max)`, …).
        sqlserver: &'static str,
    },
}

/// Text stored as `mysql` on MySQL and `sqlserver` on SQL Server.
const fn text(mysql: &'static str, sqlserver: &'static str) -> Type {
    Type::Text { mysql, sqlserver }
}

/// A SHA-256 written in hexadecimal.
const HASH: Type = text("char(64)", "char(64)");
/// A time the service writes as RFC 3339 text.
const STAMP: Type = text("varchar(40)", "nvarchar(40)");
/// Text of any length.
const LONG: Type = text("longtext", "nvarchar(max)");
/// A request id.
const REQUEST: Type = text("varchar(255)", "nvarchar(255)");
/// A trace id (32 hexadecimal digits).
const TRACE: Type = text("varchar(32)", "nvarchar(32)");
/// A schema or tenant name.
const SCHEMA: Type = text("varchar(255)", "nvarchar(128)");

/// A column's default.
#[derive(Clone, Copy)]
enum Default {
    /// A number.
    Number(i64),
    /// The time of the insert, as the column stores it.
    Now,
}

/// One column of a table.
pub(crate) struct Column {
    /// Its name.
    pub(crate) name: &'static str,
    kind: Type,
    null: bool,
    default: Option<Default>,
    primary: bool,
    unique: bool,
    references: Option<&'static str>,
    /// Added after its table's first release: books written before get it
    /// at a read-write start ([`add_column`]).
    pub(crate) added: bool,
}

/// A column of type `kind`, not null.
const fn col(name: &'static str, kind: Type) -> Column {
    Column { name, kind, null: false, default: None, primary: false, unique: false, references: None, added: false }
}

impl Column {
    /// Nullable.
    const fn null(self) -> Self {
        Column { null: true, ..self }
    }

    /// Its table's primary key.
    const fn primary(self) -> Self {
        Column { primary: true, ..self }
    }

    /// Unique.
    const fn unique(self) -> Self {
        Column { unique: true, ..self }
    }

    /// Defaults to `number`.
    const fn default(self, number: i64) -> Self {
        Column { default: Some(Default::Number(number)), ..self }
    }

    /// Defaults to the time of the insert.
    const fn now(self) -> Self {
        Column { default: Some(Default::Now), ..self }
    }

    /// References the `id` of the table `table`.
    const fn references(self, table: &'static str) -> Self {
        Column { references: Some(table), ..self }
    }

    /// Added after its table's first release (nullable, as a column added
    /// to rows already there).
    const fn added(self) -> Self {
        Column { added: true, null: true, ..self }
    }
}

/// An index of a table.
pub(crate) struct Index {
    name: &'static str,
    columns: &'static [&'static str],
    /// The engines that keep it (SQLite keeps an index of its own).
    on: &'static [Driver],
}

/// One table of the books.
pub(crate) struct Table {
    /// Its name, in the `svc` schema.
    pub(crate) name: &'static str,
    columns: &'static [Column],
    /// A primary key of several columns (one column's is the column's).
    primary_key: &'static [&'static str],
    indexes: &'static [Index],
}

const ALL: &[Driver] = &Driver::ALL;

/// The books' tables, in the order they are created (a referenced table
/// first).
pub(crate) const TABLES: [Table; 9] = [
    Table {
        name: "svc_versions",
        columns: &[
            col("id", Type::Serial),
            col("name", text("text", "nvarchar(max)")),
            col("created", Type::Time),
            col("request_id", REQUEST),
            col("trace_id", TRACE).added(),
        ],
        primary_key: &[],
        indexes: &[],
    },
    Table {
        name: "svc_migrations",
        columns: &[
            col("id", Type::Serial),
            col("name", text("varchar(255)", "nvarchar(255)")),
            col("source_dir", text("varchar(255)", "nvarchar(255)")),
            col("filename", text("varchar(512)", "nvarchar(400)")),
            col("migration_type", Type::Int),
            col("db_schema", text("varchar(64)", "nvarchar(128)")),
            col("created", Type::Time),
            col("contents", LONG),
            col("checksum", HASH),
            col("version_id", Type::Int).references("svc_versions"),
        ],
        primary_key: &[],
        indexes: &[
            Index {
                name: "svc_migrations_version_id",
                columns: &["version_id"],
                on: &[Driver::Postgres, Driver::Mysql, Driver::SqlServer],
            },
            Index { name: "svc_migrations_filename", columns: &["filename"], on: ALL },
        ],
    },
    Table {
        name: "svc_fingerprints",
        columns: &[
            col("db_schema", SCHEMA).primary(),
            col("fingerprint", text("char(64)", "nvarchar(128)")),
            col("recorded", text("char(64)", "nvarchar(max)")),
            col("version_id", Type::Int),
            col("created", Type::Time).now(),
        ],
        primary_key: &[],
        indexes: &[],
    },
    Table {
        name: "svc_backfills",
        columns: &[
            col("db_schema", SCHEMA),
            col("file", text("varchar(512)", "nvarchar(400)")),
            col("state", text("varchar(16)", "nvarchar(16)")),
            col("after_key", text("mediumtext", "nvarchar(max)")).null(),
            col("upper_key", text("mediumtext", "nvarchar(max)")).null(),
            col("rows_done", Type::BigInt).default(0),
            col("batches", Type::BigInt).default(0),
            col("rows_estimated", Type::BigInt).default(0),
            col("last_error", text("text", "nvarchar(max)")).null(),
            col("updated", STAMP),
            col("version_id", Type::Int),
            col("name", text("varchar(512)", "nvarchar(255)")),
            col("source_dir", text("varchar(512)", "nvarchar(255)")),
            col("migration_type", Type::Int),
            col("contents", text("mediumtext", "nvarchar(max)")),
            col("checksum", HASH),
            col("forward", text("mediumtext", "nvarchar(max)")),
            col("holder", text("varchar(64)", "nvarchar(255)")).null(),
            col("heartbeat", Type::BigInt).null(),
            col("running_ms", Type::BigInt).default(0),
            col("failure_budget", text("varchar(8)", "nvarchar(8)")).added(),
            col("started_version", Type::Int).added(),
        ],
        primary_key: &["db_schema", "file"],
        indexes: &[],
    },
    Table {
        name: "svc_quarantine",
        columns: &[
            col("tenant", SCHEMA).primary(),
            col("version_id", Type::Int).null(),
            col("file", text("varchar(1024)", "nvarchar(400)")),
            col("line", Type::Int).null(),
            col("col", Type::Int).null(),
            col("cause", text("varchar(32)", "nvarchar(64)")),
            col("message", text("text", "nvarchar(max)")),
            col("failures", Type::Int).default(1),
            col("request_id", REQUEST),
            col("quarantined", STAMP),
        ],
        primary_key: &[],
        indexes: &[],
    },
    Table {
        name: "svc_rollouts",
        columns: &[
            col("id", Type::Serial),
            col("doc", LONG),
            col("revision", Type::Int).default(0),
            col("updated", STAMP),
        ],
        primary_key: &[],
        indexes: &[],
    },
    Table {
        name: "svc_directory",
        columns: &[col("tenant", SCHEMA).primary(), col("shard", SCHEMA)],
        primary_key: &[],
        indexes: &[],
    },
    Table {
        name: "svc_tokens",
        columns: &[
            col("name", text("varchar(64)", "nvarchar(128)")).primary(),
            col("role", text("varchar(16)", "nvarchar(32)")),
            col("hash", text("char(64)", "nvarchar(128)")).unique(),
            col("created", Type::BigInt),
            col("expires", Type::BigInt).null(),
            col("owner", text("varchar(128)", "nvarchar(255)")).added(),
        ],
        primary_key: &[],
        indexes: &[],
    },
    Table {
        name: "svc_audit",
        columns: &[
            col("id", Type::BigInt).primary(),
            col("at", STAMP),
            col("actor", text("varchar(512)", "nvarchar(max)")),
            col("action", text("varchar(64)", "nvarchar(max)")),
            col("target", text("text", "nvarchar(max)")),
            col("request_id", REQUEST),
            col("outcome", text("text", "nvarchar(max)")),
            col("prev", HASH),
            col("hash", HASH),
            col("signature", text("varchar(200)", "nvarchar(max)")).added(),
            col("trace_id", TRACE).added(),
        ],
        primary_key: &[],
        indexes: &[],
    },
];

/// The default tenant table, created only when neither tenant statement is
/// configured.
pub(crate) const TENANTS: Table = Table {
    name: "svc_tenants",
    columns: &[
        col("id", Type::Serial),
        col("name", text("varchar(64)", "nvarchar(128)")).unique(),
        col("created", Type::Time).now(),
    ],
    primary_key: &[],
    indexes: &[],
};

/// The books' tables, and the tenant table when `tenants_table`.
pub(crate) fn tables(tenants_table: bool) -> impl Iterator<Item = &'static Table> {
    TABLES.iter().chain(tenants_table.then_some(&TENANTS))
}

/// What creates the books (and the tenant table when `tenants_table`) on
/// `driver`, one statement an item: the `svc` schema (SQLite attaches it),
/// each table with its indexes, and — where the engine can say "unless it
/// is there" in the statement (PostgreSQL, SQL Server) — each
/// [`added`] column; on MySQL and SQLite the engine adds those it finds
/// missing ([`add_column`]).
pub(crate) fn creates(driver: Driver, tenants_table: bool) -> Vec<String> {
    let schema = match driver {
        Driver::Postgres => Some("create schema if not exists svc"),
        Driver::Mysql => Some("create database if not exists svc"),
        Driver::SqlServer => Some("if schema_id(N'svc') is null exec(N'create schema svc');"),
        Driver::Sqlite => None,
    };
    let mut out: Vec<String> = schema.map(str::to_string).into_iter().collect();
    for table in tables(tenants_table) {
        out.extend(create_table(driver, table));
    }
    if matches!(driver, Driver::Postgres | Driver::SqlServer) {
        out.extend(added().map(|(table, column)| add_column(driver, table, column)));
    }
    out
}

/// Every column added after its table's first release, with its table.
pub(crate) fn added() -> impl Iterator<Item = (&'static Table, &'static Column)> {
    TABLES.iter().flat_map(|table| table.columns.iter().filter(|c| c.added).map(move |column| (table, column)))
}

/// `table.column`, as the engines' catalogs are asked for an added column.
pub(crate) fn qualified_name(table: &Table, column: &Column) -> String {
    format!("{}.{}", table.name, column.name)
}

/// The statement adding `column` to `table` in books written before it:
/// unless it is there on PostgreSQL and SQL Server; on MySQL and SQLite
/// (no `add column if not exists`) the engine runs it only for a column
/// it found missing.
pub(crate) fn add_column(driver: Driver, table: &Table, column: &Column) -> String {
    let (name, kind) = (quoted(driver, column.name), type_name(driver, column.kind));
    match driver {
        Driver::Postgres => format!("alter table svc.{} add column if not exists {name} {kind}", table.name),
        Driver::SqlServer => format!(
            "if col_length(N'svc.{table}', N'{column}') is null alter table svc.{table} add {name} {kind} null;",
            table = table.name,
            column = column.name
        ),
        Driver::Mysql | Driver::Sqlite => format!("alter table svc.{} add column {name} {kind}", table.name),
    }
}

/// The tables (the tenant table when `tenants_table`) and indexes the
/// books have on `driver` once created, by name in `svc`.
pub(crate) fn relations(driver: Driver, tenants_table: bool) -> Vec<&'static str> {
    let mut names = Vec::new();
    for table in tables(tenants_table) {
        names.push(table.name);
        names.extend(table.indexes.iter().filter(|index| index.on.contains(&driver)).map(|index| index.name));
    }
    names
}

/// `create table` for `table` on `driver`, then its indexes (on MySQL
/// within it, on SQL Server in the same guarded batch).
fn create_table(driver: Driver, table: &Table) -> Vec<String> {
    let indexes: Vec<&Index> = table.indexes.iter().filter(|index| index.on.contains(&driver)).collect();
    let mut lines: Vec<String> = table.columns.iter().map(|column| column_definition(driver, column)).collect();
    let names = |columns: &[&str]| columns.iter().map(|c| quoted(driver, c)).collect::<Vec<_>>().join(", ");
    if driver == Driver::Mysql {
        lines.extend(indexes.iter().map(|index| format!("index {} ({})", index.name, names(index.columns))));
        for column in table.columns.iter().filter(|column| column.references.is_some()) {
            let target = column.references.unwrap_or_default();
            lines.push(format!("foreign key ({}) references svc.{target} (id)", column.name));
        }
    }
    if !table.primary_key.is_empty() {
        lines.push(format!("primary key ({})", names(table.primary_key)));
    }
    let body = format!("svc.{} (\n    {}\n)", table.name, lines.join(",\n    "));
    let index = |index: &Index| match driver {
        Driver::Sqlite => {
            format!("create index if not exists svc.{} on {} ({})", index.name, table.name, names(index.columns))
        }
        Driver::SqlServer => format!("create index {} on svc.{} ({});", index.name, table.name, names(index.columns)),
        _ => format!("create index if not exists {} on svc.{} ({})", index.name, table.name, names(index.columns)),
    };
    match driver {
        Driver::Mysql => vec![format!("create table if not exists {body} engine = InnoDB default charset = utf8mb4")],
        Driver::SqlServer => {
            let guard = format!("if object_id(N'svc.{}', N'U') is null", table.name);
            if indexes.is_empty() {
                vec![format!("{guard} create table {body};")]
            } else {
                let indexes: Vec<String> = indexes.into_iter().map(index).collect();
                vec![format!("{guard} begin\ncreate table {body};\n{}\nend;", indexes.join("\n"))]
            }
        }
        Driver::Postgres | Driver::Sqlite => {
            let mut out = vec![format!("create table if not exists {body}")];
            out.extend(indexes.into_iter().map(index));
            out
        }
    }
}

/// A column's definition in `create table`.
fn column_definition(driver: Driver, column: &Column) -> String {
    let name = quoted(driver, column.name);
    if let Type::Serial = column.kind {
        let serial = match driver {
            Driver::Postgres => "serial primary key",
            Driver::Sqlite => "integer primary key autoincrement",
            Driver::Mysql => "int auto_increment primary key",
            Driver::SqlServer => "int identity(1, 1) primary key",
        };
        return format!("{name} {serial}");
    }
    let mut out = format!("{name} {}", type_name(driver, column.kind));
    if column.primary {
        out.push_str(if driver == Driver::SqlServer { " not null primary key" } else { " primary key" });
    } else if !column.null {
        out.push_str(" not null");
    } else if driver == Driver::SqlServer {
        out.push_str(" null");
    }
    match column.default {
        Some(Default::Number(number)) => out.push_str(&format!(" default {number}")),
        Some(Default::Now) => out.push_str(match driver {
            Driver::Postgres => " default now()",
            Driver::Sqlite => " default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            Driver::Mysql => " default current_timestamp(6)",
            Driver::SqlServer => " default sysutcdatetime()",
        }),
        None => {}
    }
    if column.unique {
        out.push_str(" unique");
    }
    match (column.references, driver) {
        // MySQL reads a column's `references` and ignores it: the table's
        // `foreign key` says it ([`create_table`]).
        (Some(_), Driver::Mysql) | (None, _) => {}
        // SQLite's references name a table of the same database.
        (Some(target), Driver::Sqlite) => out.push_str(&format!(" references {target} (id)")),
        (Some(target), _) => out.push_str(&format!(" references svc.{target} (id)")),
    }
    out
}

/// A type's name on `driver` (not [`Type::Serial`]'s, which is written
/// with its key).
fn type_name(driver: Driver, kind: Type) -> &'static str {
    match (driver, kind) {
        (Driver::Sqlite, Type::Serial | Type::Int | Type::BigInt) => "integer",
        (Driver::Sqlite, Type::Time | Type::Text { .. }) => "text",
        (Driver::Postgres, Type::Serial | Type::Int) => "integer",
        (Driver::Postgres, Type::BigInt) => "bigint",
        (Driver::Postgres, Type::Time) => "timestamptz",
        (Driver::Postgres, Type::Text { .. }) => "text",
        (Driver::Mysql | Driver::SqlServer, Type::Serial | Type::Int) => "int",
        (Driver::Mysql | Driver::SqlServer, Type::BigInt) => "bigint",
        (Driver::Mysql, Type::Time) => "datetime(6)",
        (Driver::SqlServer, Type::Time) => "datetime2(6)",
        (Driver::Mysql, Type::Text { mysql, .. }) => mysql,
        (Driver::SqlServer, Type::Text { sqlserver, .. }) => sqlserver,
    }
}

/// A column's name as `driver` reads it: `file` is a reserved word of
/// T-SQL.
fn quoted(driver: Driver, name: &str) -> String {
    if driver == Driver::SqlServer && name == "file" { "[file]".to_string() } else { name.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_text(driver: Driver, name: &str) -> String {
        let marker = format!("svc.{name} (");
        creates(driver, true)
            .into_iter()
            .find(|s| s.contains(&marker))
            .unwrap_or_else(|| panic!("{name} on {driver:?}"))
    }

    #[test]
    fn every_engine_creates_each_table_once_and_only_what_is_missing() {
        for driver in Driver::ALL {
            let creates = creates(driver, true);
            let tables = creates.iter().filter(|s| s.contains("create table ")).count();
            assert_eq!(tables, TABLES.len() + 1, "{driver:?}");
            for statement in &creates {
                let guarded = match driver {
                    Driver::SqlServer => statement.starts_with("if "),
                    _ => statement.contains(" if not exists "),
                };
                assert!(guarded, "{driver:?}: {statement}");
            }
            assert!(!super::creates(driver, false).iter().any(|s| s.contains("svc_tenants")), "{driver:?}");
        }
    }

    #[test]
    fn columns_added_since_a_release_are_nullable_and_each_table_names_a_column_once() {
        let added: Vec<String> = added().map(|(table, column)| qualified_name(table, column)).collect();
        assert_eq!(added.len(), 6, "{added:?}");
        assert!(added.contains(&"svc_backfills.started_version".to_string()));
        assert!(super::added().all(|(_, column)| column.null));
        for table in tables(true) {
            let mut names: Vec<&str> = table.columns.iter().map(|column| column.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), table.columns.len(), "{}", table.name);
        }
        assert_eq!(
            add_column(Driver::SqlServer, &TABLES[3], &TABLES[3].columns[20]),
            "if col_length(N'svc.svc_backfills', N'failure_budget') is null \
             alter table svc.svc_backfills add failure_budget nvarchar(8) null;"
        );
        assert_eq!(
            add_column(Driver::Postgres, &TABLES[0], &TABLES[0].columns[4]),
            "alter table svc.svc_versions add column if not exists trace_id text"
        );
    }

    #[test]
    fn each_engine_writes_types_keys_and_references_its_own_way() {
        let mysql = table_text(Driver::Mysql, "svc_migrations");
        assert!(mysql.contains("filename varchar(512) not null"), "{mysql}");
        assert!(mysql.contains("index svc_migrations_filename (filename)"), "{mysql}");
        assert!(mysql.contains("foreign key (version_id) references svc.svc_versions (id)"), "{mysql}");
        assert!(!mysql.contains("not null references"), "{mysql}");
        assert!(mysql.ends_with(") engine = InnoDB default charset = utf8mb4"), "{mysql}");
        let sqlite = table_text(Driver::Sqlite, "svc_migrations");
        assert!(sqlite.contains("version_id integer not null references svc_versions (id)"), "{sqlite}");
        let sqlserver = table_text(Driver::SqlServer, "svc_migrations");
        assert!(sqlserver.starts_with("if object_id(N'svc.svc_migrations', N'U') is null begin\ncreate table"));
        assert!(sqlserver.contains("create index svc_migrations_version_id on svc.svc_migrations (version_id);"));
        assert!(sqlserver.contains("id int identity(1, 1) primary key"), "{sqlserver}");
        let backfills = table_text(Driver::SqlServer, "svc_backfills");
        assert!(backfills.contains("[file] nvarchar(400) not null"), "{backfills}");
        assert!(backfills.contains("primary key (db_schema, [file])"), "{backfills}");
        assert!(backfills.contains("holder nvarchar(255) null"), "{backfills}");
        let fingerprints = table_text(Driver::Postgres, "svc_fingerprints");
        assert!(fingerprints.contains("db_schema text primary key"), "{fingerprints}");
        assert!(fingerprints.contains("created timestamptz not null default now()"), "{fingerprints}");
        let tokens = table_text(Driver::SqlServer, "svc_tokens");
        assert!(tokens.contains("name nvarchar(128) not null primary key"), "{tokens}");
        assert!(tokens.contains("hash nvarchar(128) not null unique"), "{tokens}");
    }

    #[test]
    fn each_engine_names_the_indexes_it_keeps() {
        let postgres = relations(Driver::Postgres, true);
        assert!(postgres.contains(&"svc_migrations_version_id") && postgres.contains(&"svc_migrations_filename"));
        assert_eq!(postgres.len(), TABLES.len() + 1 + 2);
        let sqlite = relations(Driver::Sqlite, false);
        assert!(!sqlite.contains(&"svc_migrations_version_id") && sqlite.contains(&"svc_migrations_filename"));
        assert!(!sqlite.contains(&"svc_tenants"));
    }
}
