//! Every statement the PostgreSQL driver sends of its own accord. Names are
//! validated by the core and quoted here; values are always bound
//! (`$1`, `$2`, …).

use crate::db::books::BooksSql;
use strata_core::migrate::ident::quote_ansi;

/// Key of the transaction-level advisory lock serialising start-up DDL
/// across every service instance sharing the database (a transaction-level
/// lock is released at commit, so it is safe through a pooler).
pub(crate) const LOCK_KEY: i64 = 0x5354_5241_5441; // "STRATA"

/// Takes the advisory lock until the end of the transaction (start-up DDL).
pub(crate) const LOCK: &str = "select pg_advisory_xact_lock($1)";

/// The mutation lock is a lease: one row of `svc.svc_lock`, taken, renewed
/// and released in short transactions of their own. Unlike a session
/// advisory lock it is exclusive through a pooler in transaction mode (where
/// an advisory lock stays with a pooled server connection, granted to every
/// client that lands on it) and it lives in the database, so every path to
/// the primary sees it. It is taken when free or expired; `holder` is the
/// taker's random id; the database's clock decides expiry.
pub(crate) const LEASE_TAKE: &str = "insert into svc.svc_lock (id, holder, expires) \
    values (1, $1, clock_timestamp() + make_interval(secs => $2)) \
    on conflict (id) do update set holder = excluded.holder, expires = excluded.expires \
    where svc.svc_lock.expires < clock_timestamp() \
    returning holder";

/// Extends the lease; no row when another holder took it (it had expired).
pub(crate) const LEASE_RENEW: &str = "update svc.svc_lock \
    set expires = clock_timestamp() + make_interval(secs => $2) where id = 1 and holder = $1 returning holder";

/// Gives the lease back.
pub(crate) const LEASE_RELEASE: &str = "delete from svc.svc_lock where id = 1 and holder = $1";

/// Starts a transaction.
pub(crate) const BEGIN: &str = "begin";
/// Commits it.
pub(crate) const COMMIT: &str = "commit";
/// Rolls it back.
pub(crate) const ROLLBACK: &str = "rollback";

/// The service's schema and bookkeeping tables.
pub(crate) const CREATE_SERVICE_TABLES: &str = "
create schema if not exists svc;
create table if not exists svc.svc_versions (
    id serial primary key,
    name text not null,
    created timestamptz not null,
    request_id text not null
);
create table if not exists svc.svc_migrations (
    id serial primary key,
    name text not null,
    source_dir text not null,
    filename text not null,
    migration_type integer not null,
    db_schema text not null,
    created timestamptz not null,
    contents text not null,
    checksum text not null,
    version_id integer not null references svc.svc_versions (id)
);
create index if not exists svc_migrations_version_id on svc.svc_migrations (version_id);
create index if not exists svc_migrations_filename on svc.svc_migrations (filename);
create table if not exists svc.svc_fingerprints (
    db_schema text primary key,
    fingerprint text not null,
    recorded text not null,
    version_id integer not null,
    created timestamptz not null default now()
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
    id serial primary key,
    doc text not null,
    revision integer not null default 0,
    updated text not null
);
create table if not exists svc.svc_directory (
    tenant text primary key,
    shard text not null
);
create table if not exists svc.svc_lock (
    id integer primary key check (id = 1),
    holder text not null,
    expires timestamptz not null
);
";

/// The default tenant table, created only when neither tenant statement is
/// configured.
pub(crate) const CREATE_TENANTS_TABLE: &str = "
create table if not exists svc.svc_tenants (
    id serial primary key,
    name text not null unique,
    created timestamptz not null default now()
);
";

/// `created` as RFC 3339 UTC with microseconds, like the other drivers (a
/// macro, so the statements below stay `const` literals).
macro_rules! created {
    () => {
        "to_char(created at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    };
}

/// The columns of a migration row, in the order `rows::migration` reads.
macro_rules! migration_columns {
    () => {
        concat!("id, name, migration_type, source_dir, filename, contents, checksum, db_schema, ", created!())
    };
}

/// Recorded migrations, as the planner needs them.
pub(crate) const SELECT_APPLIED: &str =
    "select filename, name, db_schema, migration_type, checksum from svc.svc_migrations order by id";

/// Inserts a version and returns its id.
pub(crate) const INSERT_VERSION: &str =
    "insert into svc.svc_versions (name, created, request_id) values ($1, $2::timestamptz, $3) returning id";

/// Head of the multi-row insert recording applied migrations.
pub(crate) const INSERT_MIGRATIONS: &str = "insert into svc.svc_migrations \
    (name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id) ";

/// Rows per multi-row insert: 9 parameters each, far below PostgreSQL's
/// 65,535 bound parameters per statement.
pub(crate) const MIGRATION_ROWS_PER_INSERT: usize = 1000;

/// All versions.
pub(crate) const SELECT_VERSIONS: &str =
    concat!("select id, name, ", created!(), ", request_id from svc.svc_versions order by id");

/// Versions in which a file was applied.
pub(crate) const SELECT_VERSIONS_BY_FILE: &str = concat!(
    "select id, name, ",
    created!(),
    ", request_id from svc.svc_versions ",
    "where id in (select version_id from svc.svc_migrations where filename = $1) order by id"
);

/// One version.
pub(crate) const SELECT_VERSION: &str =
    concat!("select id, name, ", created!(), ", request_id from svc.svc_versions where id = $1");

/// The migrations of one version.
pub(crate) const SELECT_VERSION_MIGRATIONS: &str =
    concat!("select ", migration_columns!(), " from svc.svc_migrations where version_id = $1 order by id");

/// One recorded migration.
pub(crate) const SELECT_MIGRATION: &str =
    concat!("select ", migration_columns!(), " from svc.svc_migrations where id = $1");

/// Whether the service's tables exist.
pub(crate) const INSTALLED: &str = "select count(to_regclass('svc.svc_migrations'))";

/// Creates a tenant's schema.
pub(crate) fn create_schema(schema: &str) -> String {
    format!("create schema {}", quote_ansi(schema))
}

/// Sets the lock and statement time-outs (`$1`, `$2`: milliseconds as text,
/// `0` for none) until the end of the open transaction.
pub(crate) const SET_LOCAL_TIMEOUTS: &str =
    "select set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)";

/// The same for the session (run in a transaction of its own, as every
/// statement with bound values here), for a file outside any transaction.
pub(crate) const SET_SESSION_TIMEOUTS: &str =
    "select set_config('lock_timeout', $1, false), set_config('statement_timeout', $2, false)";

/// The server's time-outs back for the session.
pub(crate) const RESET_TIMEOUTS: &str = "reset lock_timeout; reset statement_timeout";

/// The sessions holding locks on objects of schema `$1` (other than this
/// one), oldest transaction first: who a migration that gave up waiting
/// was waiting for. Its statement text is cut at 200 characters.
pub(crate) const BLOCKERS: &str = "select a.pid, coalesce(a.state, ''), \
    coalesce(to_char(a.xact_start at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''), \
    coalesce(a.application_name, ''), left(coalesce(a.query, ''), 200), \
    string_agg(distinct c.relname || ' ' || l.mode, ', ') \
    from pg_locks l \
    join pg_class c on c.oid = l.relation \
    join pg_namespace n on n.oid = c.relnamespace \
    join pg_stat_activity a on a.pid = l.pid \
    where n.nspname = $1 and l.granted and l.pid <> pg_backend_pid() \
    group by a.pid, a.state, a.xact_start, a.application_name, a.query \
    order by a.xact_start nulls last limit 10";

/// The catalogs of the schemas named in `$1` (a text array) for fleet
/// drift (core's `fingerprint`): schema, kind, name, definition — relations
/// and sequences, columns (type, not null, default), indexes, constraints,
/// views, triggers, routines and enum types. No object ids, sizes,
/// statistics or column order. `pg_class` has no index on the namespace:
/// it is scanned once (`rels`), whatever the number of schemas asked, and
/// everything else is reached by indexed joins from there.
pub(crate) const CATALOGS: &str = "\
with ns as materialized ( \
  select oid, nspname::text as schema from pg_namespace where nspname = any($1) \
), rels as materialized ( \
  select c.oid, c.relname::text as relname, c.relkind, ns.schema \
  from pg_class c join ns on ns.oid = c.relnamespace where c.relkind in ('r', 'p', 'v', 'm', 'f', 'S') \
) \
select schema, 'relation'::text, relname, relkind::text from rels \
union all \
select r.schema, 'column', r.relname || '.' || a.attname, format_type(a.atttypid, a.atttypmod) \
  || case when a.attnotnull then ' not null' else '' end || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') \
from rels r join pg_attribute a on a.attrelid = r.oid \
left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum \
where a.attnum > 0 and not a.attisdropped and r.relkind <> 'S' \
union all \
select r.schema, 'index', ic.relname::text, pg_get_indexdef(i.indexrelid) \
from rels r join pg_index i on i.indrelid = r.oid join pg_class ic on ic.oid = i.indexrelid \
union all \
select r.schema, 'constraint', r.relname || '.' || con.conname, pg_get_constraintdef(con.oid) \
from rels r join pg_constraint con on con.conrelid = r.oid \
union all \
select r.schema, 'view', r.relname, pg_get_viewdef(r.oid) from rels r where r.relkind in ('v', 'm') \
union all \
select r.schema, 'trigger', r.relname || '.' || t.tgname, pg_get_triggerdef(t.oid) \
from rels r join pg_trigger t on t.tgrelid = r.oid where not t.tgisinternal \
union all \
select ns.schema, 'routine', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', \
  pg_get_functiondef(p.oid) \
from pg_proc p join ns on ns.oid = p.pronamespace where p.prokind in ('f', 'p') \
union all \
select ns.schema, 'type', t.typname::text, string_agg(e.enumlabel, ', ' order by e.enumsortorder) \
from pg_enum e join pg_type t on t.oid = e.enumtypid join ns on ns.oid = t.typnamespace \
group by ns.schema, t.typname";

/// Stores a schema's fingerprint (`$1` schema, `$2` fingerprint, `$3` the
/// identity of its recorded migrations, `$4` version).
pub(crate) const STORE_FINGERPRINT: &str = "insert into svc.svc_fingerprints (db_schema, fingerprint, recorded, version_id) \
    values ($1, $2, $3, $4) on conflict (db_schema) do update \
    set fingerprint = excluded.fingerprint, recorded = excluded.recorded, version_id = excluded.version_id, created = now()";

/// Whether the fingerprints' table exists (a read-only store may find the
/// tables of an older release).
pub(crate) const FINGERPRINTS_INSTALLED: &str = "select count(to_regclass('svc.svc_fingerprints'))";

/// The stored fingerprints.
pub(crate) const SELECT_FINGERPRINTS: &str = "select db_schema, fingerprint, recorded from svc.svc_fingerprints";

/// Puts a tenant in quarantine with its failures (1, or what it carries
/// from the home shard), or counts one more failure of one already there
/// (the latest error kept).
pub(crate) const QUARANTINE: &str = "insert into svc.svc_quarantine (tenant, version_id, file, line, col, cause, message, request_id, quarantined, failures) \
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) on conflict (tenant) do update set version_id = excluded.version_id, \
    file = excluded.file, line = excluded.line, col = excluded.col, cause = excluded.cause, message = excluded.message, \
    failures = svc.svc_quarantine.failures + 1, request_id = excluded.request_id, quarantined = excluded.quarantined";

/// Whether the quarantine's table exists.
pub(crate) const QUARANTINE_INSTALLED: &str = "select count(to_regclass('svc.svc_quarantine'))";

/// The quarantined tenants, by name.
pub(crate) const SELECT_QUARANTINE: &str = "select tenant, version_id, file, line, col, cause, message, request_id, quarantined, failures from svc.svc_quarantine order by tenant";

/// Stores a new rollout (core's `rollout` document); returns its id.
pub(crate) const INSERT_ROLLOUT: &str = "insert into svc.svc_rollouts (doc, updated) values ($1, $2) returning id";

/// Whether the rollouts' table exists.
pub(crate) const ROLLOUTS_INSTALLED: &str = "select count(to_regclass('svc.svc_rollouts'))";

/// Every rollout, oldest first.
pub(crate) const SELECT_ROLLOUTS: &str = "select id, doc, revision from svc.svc_rollouts order by id";

/// Replaces a rollout's document if nobody changed it since it was read.
pub(crate) const UPDATE_ROLLOUT: &str =
    "update svc.svc_rollouts set doc = $1, updated = $2, revision = revision + 1 where id = $3 and revision = $4";

/// Releases the named tenants (an array) from quarantine.
pub(crate) const RELEASE_QUARANTINED: &str = "delete from svc.svc_quarantine where tenant = $1";

/// Whether the shard directory's table exists.
pub(crate) const DIRECTORY_INSTALLED: &str = "select count(to_regclass('svc.svc_directory'))";

/// Where each tenant was last seen (a sharded fleet's home shard).
pub(crate) const SELECT_DIRECTORY: &str = "select tenant, shard from svc.svc_directory order by tenant";

/// Says where a tenant was seen.
pub(crate) const PUT_DIRECTORY: &str = "insert into svc.svc_directory (tenant, shard) values ($1, $2) \
    on conflict (tenant) do update set shard = excluded.shard";

/// Forgets a tenant.
pub(crate) const DROP_DIRECTORY: &str = "delete from svc.svc_directory where tenant = $1";

/// Every recorded row's schema, file, checksum and type, by schema (fleet
/// drift reads them one at a time).
pub(crate) const SELECT_RECORDED: &str =
    "select db_schema, filename, checksum, migration_type from svc.svc_migrations order by db_schema";

/// Records a file's new checksum (`strata repair`).
pub(crate) const UPDATE_CHECKSUM: &str =
    "update svc.svc_migrations set checksum = $1 where filename = $2 and checksum <> $3";

/// Removes the records of a file deleted from the source (`strata repair`).
pub(crate) const DELETE_MIGRATIONS: &str = "delete from svc.svc_migrations where filename = $1";

/// Removes the record of a reverted migration in one schema.
pub(crate) const DELETE_RECORD: &str = "delete from svc.svc_migrations where filename = $1 and db_schema = $2";

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
