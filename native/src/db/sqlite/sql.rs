//! Every statement the SQLite driver sends of its own accord (migrations
//! themselves come from the user). Identifiers are validated by the core and
//! quoted here; values are always bound.

use crate::db::books::BooksSql;
use strata_core::migrate::ident::quote_ansi;

/// The service's bookkeeping tables, in the attached `svc` schema.
pub(crate) const CREATE_SERVICE_TABLES: &str = "
create table if not exists svc.svc_versions (
    id integer primary key autoincrement,
    name text not null,
    created text not null,
    request_id text not null
);
create table if not exists svc.svc_migrations (
    id integer primary key autoincrement,
    name text not null,
    source_dir text not null,
    filename text not null,
    migration_type integer not null,
    db_schema text not null,
    created text not null,
    contents text not null,
    checksum text not null,
    version_id integer not null references svc_versions (id)
);
create table if not exists svc.svc_fingerprints (
    db_schema text primary key,
    fingerprint text not null,
    recorded text not null,
    version_id integer not null,
    created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
create table if not exists svc.svc_quarantine (
    tenant text primary key,
    version_id integer,
    file text not null,
    line integer,
    col integer,
    cause text not null,
    message text not null,
    failures integer not null default 1,
    request_id text not null,
    quarantined text not null
);
create table if not exists svc.svc_rollouts (
    id integer primary key autoincrement,
    doc text not null,
    revision integer not null default 0,
    updated text not null
);
create table if not exists svc.svc_directory (
    tenant text primary key,
    shard text not null
);
create index if not exists svc.svc_migrations_version_id on svc_migrations (version_id);
create index if not exists svc.svc_migrations_filename on svc_migrations (filename);
";

/// The default tenant table, created only when neither tenant statement is
/// configured.
pub(crate) const CREATE_TENANTS_TABLE: &str = "
create table if not exists svc.svc_tenants (
    id integer primary key autoincrement,
    name text not null unique,
    created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
";

/// Names of the databases attached to a connection (`pragma database_list`).
pub(crate) const LIST_ATTACHED: &str = "select name from pragma_database_list";

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

/// Recorded migrations, as the planner needs them.
pub(crate) const SELECT_APPLIED: &str =
    "select filename, name, db_schema, migration_type, checksum from svc.svc_migrations";

/// Inserts a version and returns its id.
pub(crate) const INSERT_VERSION: &str =
    "insert into svc.svc_versions (name, created, request_id) values (?, ?, ?) returning id";

/// Head of the multi-row insert recording applied migrations; the values
/// are appended by `QueryBuilder::push_values`, all bound.
pub(crate) const INSERT_MIGRATIONS: &str = "insert into svc.svc_migrations \
    (name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id) ";

/// Rows per multi-row insert: 9 parameters each stays far below SQLite's
/// 32,766 bound parameters per statement.
pub(crate) const MIGRATION_ROWS_PER_INSERT: usize = 500;

/// All versions.
pub(crate) const SELECT_VERSIONS: &str = "select id, name, created, request_id from svc.svc_versions order by id";

/// Versions in which a file was applied.
pub(crate) const SELECT_VERSIONS_BY_FILE: &str = "select id, name, created, request_id from svc.svc_versions \
    where id in (select version_id from svc.svc_migrations where filename = ?) order by id";

/// One version.
pub(crate) const SELECT_VERSION: &str = "select id, name, created, request_id from svc.svc_versions where id = ?";

/// The columns of a migration row, in the order `rows::migration` reads.
macro_rules! migration_columns {
    () => {
        "id, name, migration_type, source_dir, filename, contents, checksum, db_schema, created"
    };
}

/// The migrations of one version.
pub(crate) const SELECT_VERSION_MIGRATIONS: &str =
    concat!("select ", migration_columns!(), " from svc.svc_migrations where version_id = ? order by id");

/// One recorded migration.
pub(crate) const SELECT_MIGRATION: &str =
    concat!("select ", migration_columns!(), " from svc.svc_migrations where id = ?");

/// Whether the service's tables exist (`svc` is attached only when its
/// file does, on a read-only store).
pub(crate) const INSTALLED: &str =
    "select count(*) from pragma_table_list where schema = 'svc' and name = 'svc_migrations'";

/// Attaches the database file bound as the one parameter under `schema`.
pub(crate) fn attach(schema: &str) -> String {
    format!("attach database ? as {}", quote_ansi(schema))
}

/// Detaches `schema`.
pub(crate) fn detach(schema: &str) -> String {
    format!("detach database {}", quote_ansi(schema))
}

/// The catalog of an attached schema for fleet drift (core's
/// `fingerprint`): every table, index, view and trigger with the `CREATE`
/// text SQLite keeps, and every column of every table (type, not null,
/// default; `pragma_table_info`) so that a changed table reads as the
/// column that changed. The schema's name is bound as the one parameter
/// too (the pragma's schema argument).
pub(crate) fn catalog(schema: &str) -> String {
    let master = format!("{}.sqlite_master", quote_ansi(schema));
    format!(
        "select type, name, coalesce(sql, '') from {master} where name not like 'sqlite_%' \
         union all \
         select 'column', m.name || '.' || p.name, p.type || case when p.\"notnull\" then ' not null' else '' end \
           || coalesce(' default ' || p.dflt_value, '') || case when p.pk > 0 then ' primary key' else '' end \
         from {master} m join pragma_table_info(m.name, ?) p \
         where m.type = 'table' and m.name not like 'sqlite_%'"
    )
}

/// Stores a schema's fingerprint (schema, fingerprint, the identity of its
/// recorded migrations, version).
pub(crate) const STORE_FINGERPRINT: &str = "insert into svc.svc_fingerprints (db_schema, fingerprint, recorded, version_id) \
    values (?, ?, ?, ?) on conflict (db_schema) do update set fingerprint = excluded.fingerprint, \
    recorded = excluded.recorded, version_id = excluded.version_id, created = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// Whether the fingerprints' table exists.
pub(crate) const FINGERPRINTS_INSTALLED: &str =
    "select count(*) from pragma_table_list where schema = 'svc' and name = 'svc_fingerprints'";

/// The stored fingerprints.
pub(crate) const SELECT_FINGERPRINTS: &str = "select db_schema, fingerprint, recorded from svc.svc_fingerprints";

/// Puts a tenant in quarantine with its failures (1, or what it carries
/// from the home shard), or counts one more failure of one already there
/// (the latest error kept).
pub(crate) const QUARANTINE: &str = "insert into svc.svc_quarantine (tenant, version_id, file, line, col, cause, message, request_id, quarantined, failures) \
    values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict (tenant) do update set version_id = excluded.version_id, \
    file = excluded.file, line = excluded.line, col = excluded.col, cause = excluded.cause, message = excluded.message, \
    failures = svc_quarantine.failures + 1, request_id = excluded.request_id, quarantined = excluded.quarantined";

/// Whether the quarantine's table exists.
pub(crate) const QUARANTINE_INSTALLED: &str =
    "select count(*) from pragma_table_list where schema = 'svc' and name = 'svc_quarantine'";

/// The quarantined tenants, by name.
pub(crate) const SELECT_QUARANTINE: &str = "select tenant, version_id, file, line, col, cause, message, request_id, quarantined, failures from svc.svc_quarantine order by tenant";

/// Stores a new rollout (core's `rollout` document); returns its id.
pub(crate) const INSERT_ROLLOUT: &str = "insert into svc.svc_rollouts (doc, updated) values (?, ?) returning id";

/// Whether the rollouts' table exists.
pub(crate) const ROLLOUTS_INSTALLED: &str =
    "select count(*) from pragma_table_list where schema = 'svc' and name = 'svc_rollouts'";

/// Every rollout, oldest first.
pub(crate) const SELECT_ROLLOUTS: &str = "select id, doc, revision from svc.svc_rollouts order by id";

/// Replaces a rollout's document if nobody changed it since it was read.
pub(crate) const UPDATE_ROLLOUT: &str =
    "update svc.svc_rollouts set doc = ?, updated = ?, revision = revision + 1 where id = ? and revision = ?";

/// Releases one tenant from quarantine.
pub(crate) const RELEASE_QUARANTINED: &str = "delete from svc.svc_quarantine where tenant = ?";

/// Whether the shard directory's table exists.
pub(crate) const DIRECTORY_INSTALLED: &str =
    "select count(*) from pragma_table_list where schema = 'svc' and name = 'svc_directory'";

/// Where each tenant was last seen (a sharded fleet's home shard).
pub(crate) const SELECT_DIRECTORY: &str = "select tenant, shard from svc.svc_directory order by tenant";

/// Says where a tenant was seen.
pub(crate) const PUT_DIRECTORY: &str = "insert into svc.svc_directory (tenant, shard) values (?, ?) \
    on conflict (tenant) do update set shard = excluded.shard";

/// Forgets a tenant.
pub(crate) const DROP_DIRECTORY: &str = "delete from svc.svc_directory where tenant = ?";

/// Every recorded row's schema, file, checksum and type, by schema (fleet
/// drift reads them one at a time).
pub(crate) const SELECT_RECORDED: &str =
    "select db_schema, filename, checksum, migration_type from svc.svc_migrations order by db_schema";

/// Records a file's new checksum (`strata repair`).
pub(crate) const UPDATE_CHECKSUM: &str =
    "update svc.svc_migrations set checksum = ? where filename = ? and checksum <> ?";

/// Removes the records of a file deleted from the source (`strata repair`).
pub(crate) const DELETE_MIGRATIONS: &str = "delete from svc.svc_migrations where filename = ?";

/// Removes the record of a reverted migration in one schema.
pub(crate) const DELETE_RECORD: &str = "delete from svc.svc_migrations where filename = ? and db_schema = ?";

/// The statements of the service's books (see `db::books`).
pub(crate) const BOOKS: BooksSql = BooksSql {
    installed: INSTALLED,
    select_applied: SELECT_APPLIED,
    select_recorded: SELECT_RECORDED,
    select_versions: SELECT_VERSIONS,
    select_versions_by_file: SELECT_VERSIONS_BY_FILE,
    select_version: SELECT_VERSION,
    select_version_migrations: SELECT_VERSION_MIGRATIONS,
    select_migration: SELECT_MIGRATION,
    store_fingerprint: STORE_FINGERPRINT,
    fingerprints_installed: FINGERPRINTS_INSTALLED,
    select_fingerprints: SELECT_FINGERPRINTS,
    quarantine: QUARANTINE,
    quarantine_installed: QUARANTINE_INSTALLED,
    select_quarantine: SELECT_QUARANTINE,
    release_quarantined: RELEASE_QUARANTINED,
    rollouts_installed: ROLLOUTS_INSTALLED,
    select_rollouts: SELECT_ROLLOUTS,
    update_rollout: UPDATE_ROLLOUT,
    directory_installed: DIRECTORY_INSTALLED,
    select_directory: SELECT_DIRECTORY,
    put_directory: PUT_DIRECTORY,
    drop_directory: DROP_DIRECTORY,
    insert_version: INSERT_VERSION,
    update_checksum: UPDATE_CHECKSUM,
    delete_migrations: DELETE_MIGRATIONS,
    delete_record: DELETE_RECORD,
};
