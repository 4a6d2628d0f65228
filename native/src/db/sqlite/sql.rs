//! Every statement the SQLite driver sends of its own accord (migrations
//! themselves come from the user). Identifiers are validated by the core and
//! quoted here; values are always bound.

use std::sync::LazyLock;

use crate::db::books::sql::{BooksSql, Dialect, Upsert};
use crate::db::books::tables;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::ident::{quote_ansi, quote_string_sqlite};
use strata_core::migrate::source::SourceMigration;

/// SQLite's own tables and indexes beside the books' (`db::books::tables`):
/// the staged files of a version run over attached schemas, and the
/// migrations' index by version, schema and file (the folds' reads), which
/// stands for the index by version alone the other engines keep.
const OWN_TABLES: &str = "
create table if not exists svc.svc_staged_files (
    version_id integer not null,
    filename text not null,
    name text not null,
    source_dir text not null,
    migration_type integer not null,
    created text not null,
    contents text not null,
    checksum text not null,
    primary key (version_id, filename)
);
create index if not exists svc.svc_migrations_version_schema_file on svc_migrations (version_id, db_schema, filename);
drop index if exists svc.svc_migrations_version_id;
";

/// What creates the books in the attached `svc` schema (and the default
/// tenant table when `tenants_table`), in one text: each statement a no-op
/// when what it creates is there. Columns added since are added by the
/// engine when missing (SQLite has no `add column if not exists`).
pub(crate) fn creates(tenants_table: bool) -> String {
    let mut text = tables::creates(Driver::Sqlite, tenants_table).join(";\n");
    text.push_str(";\n");
    text.push_str(OWN_TABLES);
    text
}

/// Whether the books (attached as `svc`) record a migration in the schema
/// `?`.
pub(crate) const RECORDED_IN_SCHEMA: &str = "select exists(select 1 from svc.svc_migrations where db_schema = ?)";

/// Names of the databases attached to a connection (`pragma database_list`).
pub(crate) const LIST_ATTACHED: &str = "select name from pragma_database_list";

/// How many databases are attached besides `main`, `temp` and `svc`.
pub(crate) const COUNT_EXTRA_ATTACHED: &str =
    "select count(*) from pragma_database_list where name not in ('main', 'temp', 'svc')";

/// Takes the write lock at once, so concurrent writers from other processes
/// wait instead of failing half-way.
pub(crate) const BEGIN_IMMEDIATE: &str = "begin immediate";
/// Commits.
pub(crate) const COMMIT: &str = "commit";
/// Rolls back.
pub(crate) const ROLLBACK: &str = "rollback";

/// The file, next to the main file, on which a version holds a write
/// transaction as its cross-process lock. Schema names cannot contain `.`,
/// so no schema's file can be named like it.
pub(crate) const LOCK_FILE: &str = "svc.lock.db";
/// Who holds [`LOCK_FILE`]'s write lock, as a waiting mutation says it.
pub(crate) const LOCK_HOLDER_FILE: &str = "svc.lock.holder";

/// Head of the multi-row insert recording applied migrations; the values
/// are appended by `QueryBuilder::push_values`, all bound.
pub(crate) const INSERT_MIGRATIONS: &str = "insert into svc.svc_migrations \
    (name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id) ";

/// Rows per multi-row insert: 9 parameters each stays far below SQLite's
/// 32,766 bound parameters per statement.
pub(crate) const MIGRATION_ROWS_PER_INSERT: usize = 500;

/// Attaches the database file bound as the one parameter under `schema`.
pub(crate) fn attach(schema: &str) -> String {
    format!("attach database ? as {}", quote_ansi(schema))
}

/// Attaches a new private in-memory database as `schema`.
pub(crate) fn attach_memory(schema: &str) -> String {
    format!("attach database ':memory:' as {}", quote_ansi(schema))
}

/// Detaches `schema`.
pub(crate) fn detach(schema: &str) -> String {
    format!("detach database {}", quote_ansi(schema))
}

/// The catalog of an attached schema for fleet drift (core's
/// `fingerprint`): every table, index, view and trigger with the `CREATE`
/// text SQLite keeps, and every column of every table (type, not null,
/// default; `pragma_table_info`) so that a changed table reads as the
/// column that changed; not the service's `svc_staged`. Rows are (schema,
/// kind, name, definition), so that the catalogs of several schemas read as
/// one query ([`catalogs`]).
pub(crate) fn catalog(schema: &str) -> String {
    let master = format!("{}.sqlite_master", quote_ansi(schema));
    let name = quote_string_sqlite(schema);
    format!(
        "select {name}, type, name, coalesce(sql, '') from {master} where name not like 'sqlite_%' and tbl_name <> 'svc_staged' \
         union all {columns}",
        columns = column_rows(schema),
    )
}

/// Every column of every table of `schema` but the service's `svc_staged`,
/// as [`catalog`] reads them: (schema, `column`, `table.column`, type, not
/// null, default, primary key).
fn column_rows(schema: &str) -> String {
    let master = format!("{}.sqlite_master", quote_ansi(schema));
    let name = quote_string_sqlite(schema);
    format!(
        "select {name}, 'column', m.name || '.' || p.name, p.type || case when p.\"notnull\" then ' not null' else '' end \
           || coalesce(' default ' || p.dflt_value, '') || case when p.pk > 0 then ' primary key' else '' end \
         from {master} m join pragma_table_info(m.name, {name}) p where {USER_TABLE}"
    )
}

/// A table of the tenant's own (`m`: its row of `sqlite_master`).
const USER_TABLE: &str = "m.type = 'table' and m.name not like 'sqlite_%' and m.name <> 'svc_staged'";

/// The catalog of an attached schema as desired state reads it (core's
/// `desired::sqlite`): [`catalog`]'s rows but the shadow tables of virtual
/// ones (their module makes them), and three more kinds — the table each
/// index and trigger is on, each foreign key's (referenced, referencing)
/// tables, and each column's declared type. Never fingerprinted.
pub(crate) fn desired_catalog(schema: &str) -> String {
    use strata_core::migrate::desired::sqlite::{COLUMN_TYPE, ON_TABLE, PAIR, REFERENCED_BY};
    let master = format!("{}.sqlite_master", quote_ansi(schema));
    let name = quote_string_sqlite(schema);
    let pair = u32::from(PAIR);
    format!(
        "select {name}, m.type, m.name, coalesce(m.sql, '') from {master} m \
           where m.name not like 'sqlite_%' and m.tbl_name <> 'svc_staged' and m.name not in \
             (select l.name from pragma_table_list l where l.schema = {name} and l.type = 'shadow') \
         union all {columns} \
         union all \
         select {name}, '{ON_TABLE}', m.name, m.tbl_name from {master} m \
           where m.type in ('index', 'trigger') and m.sql is not null and m.name not like 'sqlite_%' \
         union all \
         select distinct {name}, '{REFERENCED_BY}', f.\"table\" || char({pair}) || m.name, '' \
           from {master} m join pragma_foreign_key_list(m.name, {name}) f where {USER_TABLE} \
         union all \
         select {name}, '{COLUMN_TYPE}', m.name || '.' || p.name, p.type \
           from {master} m join pragma_table_info(m.name, {name}) p where {USER_TABLE}",
        columns = column_rows(schema),
    )
}

/// Schemas whose [`desired_catalog`]s are read in one query: five parts of
/// a compound select each, within SQLite's 500.
pub(crate) const DESIRED_CATALOGS_AT_ONCE: usize = 90;

/// The catalogs of several attached schemas in one query. Each takes two
/// of the 500 parts SQLite allows a compound select
/// (`SQLITE_MAX_COMPOUND_SELECT`): at most [`CATALOGS_AT_ONCE`] schemas.
///
/// Their rows come back as one JSON array of `[schema, kind, name,
/// definition]` arrays, in one row: sqlx hands each row of a query from
/// its SQLite thread to the caller on its own (a wake-up each), and a
/// fleet's catalogs are some twenty rows per tenant.
pub(crate) fn catalogs(schemas: &[String]) -> String {
    catalogs_with(schemas, catalog)
}

/// [`catalogs`] with each schema's rows read by `read`.
pub(crate) fn catalogs_with(schemas: &[String], read: fn(&str) -> String) -> String {
    let rows = schemas.iter().map(|schema| read(schema)).collect::<Vec<_>>().join(" union all ");
    format!("with c(s, k, n, d) as ({rows}) select json_group_array(json_array(s, k, n, d)) from c")
}

/// The columns of a recorded row, in `svc_migrations` and `svc_staged`.
const MIGRATION_COLUMNS: &str =
    "name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id";

/// A unit's rows staged in its schema's own file (`staging`): the table
/// made if missing, the rows of other (folded) versions deleted, then the
/// head of the insert — its values appended by the caller, each
/// [`staged_row`].
pub(crate) fn stage(schema: &str, version_id: i64) -> String {
    let table = format!("{}.svc_staged", quote_ansi(schema));
    format!(
        "create table if not exists {table} (seq integer not null, name text not null, source_dir text not null, \
         filename text not null, migration_type integer not null, db_schema text not null, created text not null, \
         contents text not null, checksum text not null, version_id integer not null);\n\
         delete from {table} where version_id <> {version_id};\n\
         insert into {table} (seq, {MIGRATION_COLUMNS}) "
    )
}

/// One staged row's values: its sequence number, file, schema and
/// version; what the file is (name, directory, type, time, contents,
/// checksum) is the version's, in `svc_staged_files` ([`stage_files`]),
/// and left empty here — a row of a few dozen bytes, where the whole row
/// made the tenant's file two pages longer than its migrations did.
pub(crate) fn staged_row(seq: i64, filename: &str, schema: &str, version_id: i64) -> String {
    format!(
        "({seq}, '', '', {}, 0, {}, '', '', '', {version_id})",
        quote_string_sqlite(filename),
        quote_string_sqlite(schema)
    )
}

/// The values of `migration`'s row in `svc_staged_files` (`created`
/// written already).
pub(crate) fn staged_file(version_id: i64, migration: &SourceMigration, created: &str) -> String {
    format!(
        "({version_id}, {}, {}, {}, {}, {created}, {}, {})",
        quote_string_sqlite(&migration.file),
        quote_string_sqlite(&migration.name),
        quote_string_sqlite(&migration.source_dir),
        migration.migration_type.code(),
        quote_string_sqlite(&migration.contents),
        quote_string_sqlite(&migration.checksum)
    )
}

/// Writes, in one transaction on `svc.db` alone, what the version's files
/// are (`values`: `(version_id, filename, name, source_dir, migration_type,
/// created, contents, checksum)` literals) before a unit stages rows of
/// them; other versions' are deleted (folded already).
pub(crate) fn stage_files(version_id: i64, values: &[String]) -> String {
    format!(
        "begin;\n\
         delete from svc.svc_staged_files where version_id <> {version_id};\n\
         insert or ignore into svc.svc_staged_files (version_id, filename, name, source_dir, migration_type, created, \
         contents, checksum) values {};\n\
         commit",
        values.join(", ")
    )
}

/// Which of the attached `schemas` have a `svc_staged` table: their names
/// as one JSON array, in one row (see [`catalogs`]).
pub(crate) fn with_staged_table(schemas: &[String]) -> String {
    let names = schemas
        .iter()
        .map(|schema| {
            format!(
                "select {} from {}.sqlite_master where type = 'table' and name = 'svc_staged'",
                quote_string_sqlite(schema),
                quote_ansi(schema)
            )
        })
        .collect::<Vec<_>>()
        .join(" union all ");
    format!("with s(name) as ({names}) select json_group_array(name) from s")
}

/// Copies every row `version_id` staged in the attached `schemas` (a
/// recovery's fold) into `svc_migrations` in their order, each completed
/// with its file's columns from `svc_staged_files` (a row staged by an
/// earlier release carries them itself), but those there already (found
/// through the index on version, schema and file), in one transaction
/// (begun deferred: only `svc.db` is written, so it commits alone).
pub(crate) fn fold(schemas: &[String], version_id: i64) -> String {
    let staged = schemas
        .iter()
        .map(|schema| {
            format!(
                "select seq, {MIGRATION_COLUMNS} from {}.svc_staged where version_id = {version_id}",
                quote_ansi(schema)
            )
        })
        .collect::<Vec<_>>()
        .join(" union all ");
    format!(
        "begin;\n\
         insert into svc.svc_migrations ({MIGRATION_COLUMNS}) \
         select coalesce(f.name, s.name), coalesce(f.source_dir, s.source_dir), s.filename, \
         coalesce(f.migration_type, s.migration_type), s.db_schema, coalesce(f.created, s.created), \
         coalesce(f.contents, s.contents), coalesce(f.checksum, s.checksum), s.version_id \
         from ({staged}) s left join svc.svc_staged_files f on f.version_id = s.version_id and f.filename = s.filename \
         where not exists (select 1 from svc.svc_migrations m where m.version_id = s.version_id \
         and m.db_schema = s.db_schema and m.filename = s.filename) order by s.seq;\n\
         commit"
    )
}

/// Writes `rows` — (sequence number, schema, file) of units committed and
/// staged by this process — into `svc_migrations` in their order, each
/// completed with its file's columns from `svc_staged_files`, but those
/// there already, in one transaction on `svc.db` alone.
pub(crate) fn fold_committed<'r>(version_id: i64, rows: impl Iterator<Item = (i64, &'r str, &'r str)>) -> String {
    let rows: Vec<String> = rows
        .map(|(seq, schema, file)| format!("({seq}, {}, {})", quote_string_sqlite(schema), quote_string_sqlite(file)))
        .collect();
    let inserts: String = rows
        .chunks(FOLD_ROWS_PER_STATEMENT)
        .map(|chunk| {
            format!(
                "with u(seq, db_schema, filename) as (values {}) \
                 insert into svc.svc_migrations ({MIGRATION_COLUMNS}) \
                 select f.name, f.source_dir, f.filename, f.migration_type, u.db_schema, f.created, f.contents, \
                 f.checksum, f.version_id from u join svc.svc_staged_files f on f.version_id = {version_id} \
                 and f.filename = u.filename where not exists (select 1 from svc.svc_migrations m \
                 where m.version_id = {version_id} and m.db_schema = u.db_schema and m.filename = u.filename) \
                 order by u.seq;\n",
                chunk.join(", ")
            )
        })
        .collect();
    format!("begin;\n{inserts}commit")
}

/// Rows of one statement of [`fold_committed`] at most: SQLite compiles a
/// `values` list whole, and a fold of 40,000 rows in one statement took 20 MB
/// of the process's memory; the fold's transaction (its one commit) is the
/// same however many statements it holds.
pub(crate) const FOLD_ROWS_PER_STATEMENT: usize = 1000;

/// Schemas attached and read at once by [`catalogs`].
pub(crate) const CATALOGS_AT_ONCE: usize = 100;

/// Attaches each (schema, file) named, in one text (no transaction may be
/// open).
pub(crate) fn attach_all(files: &[(String, String)]) -> String {
    files
        .iter()
        .map(|(schema, file)| format!("attach database {} as {};", quote_string_sqlite(file), quote_ansi(schema)))
        .collect()
}

/// Detaches `left` (the last unit's file, when given), then attaches
/// `files`, in one text.
pub(crate) fn detach_then_attach(left: Option<&str>, files: &[(String, String)]) -> String {
    let attach = attach_all(files);
    match left {
        Some(left) => format!("{};{attach}", detach(left)),
        None => attach,
    }
}

/// Detaches each schema named, in one text.
pub(crate) fn detach_all(schemas: &[String]) -> String {
    schemas.iter().map(|schema| format!("{};", detach(schema))).collect()
}

/// How SQLite writes the books' statements (`db::books::sql`).
const DIALECT: Dialect = Dialect {
    numbered: false,
    table_count: "select count(*) from pragma_table_list where schema = 'svc' and name = '{table}'",
    column_count: "select count(*) from pragma_table_info('{table}', 'svc') where name = '{column}'",
    null_text: "null",
    created: "created",
    now: "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
    upsert: Upsert::OnConflict,
    stored_failures: "svc_quarantine.failures",
    select_fingerprints: "select db_schema, fingerprint, recorded from svc.svc_fingerprints",
    bound_time: "?",
    returns_id: true,
    quote: None,
    tenant_page: None,
    // A write, however few rows it changes, takes the books' write lock.
    claims_lock: "update svc.svc_backfills set holder = holder where 0 = 1",
};

/// The statements of the service's books (`db::books`), written once in
/// this dialect.
pub(crate) static BOOKS: LazyLock<BooksSql> = LazyLock::new(|| BooksSql::new(&DIALECT));

/// Whether a table of `svc` has a column (bound: table, column).
pub(crate) const COLUMN_PRESENT: &str = "select count(*) from pragma_table_info(?, 'svc') where name = ?";
