//! Every statement the MySQL/MariaDB driver sends of its own accord. A
//! schema is a database. Names are validated by the core and quoted here;
//! values are always bound (`?`).

use std::sync::LazyLock;

use crate::db::books::sql::{BooksSql, Dialect, Upsert};
use crate::db::books::tables;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::ident::quote_mysql;

/// The mutation lock is a lease, row 1 of `svc.svc_lock` (see
/// `db::lease`): `GET_LOCK` is node-local on a Galera cluster, a row
/// replicates. The row exists from install on; taking changes it only when
/// it has expired, in the server's clock. Row 2 is the backfill runners'
/// claim lock (`Dialect::claims_lock`): each claim changes it in its
/// transaction, so claims take turns, on a Galera cluster too (two nodes'
/// changes of one row do not both commit).
pub(crate) const LEASE_ROW: &str = "insert ignore into svc.svc_lock (id, holder, expires) \
    values (1, '', '1970-01-01 00:00:01'), (2, 'backfill claims', '1970-01-01 00:00:01')";
/// How many of the service's tables exist (a plain read: no lock, no DDL):
/// [`SERVICE_TABLES`] when all are there.
pub(crate) static SERVICE_TABLES_PRESENT: LazyLock<String> = LazyLock::new(|| {
    let names: Vec<String> = tables::tables(false).map(|table| format!("'{}'", table.name)).collect();
    format!(
        "select count(*) from information_schema.tables where table_schema = 'svc' and table_name in ({}, 'svc_lock')",
        names.join(", ")
    )
});
/// The number of tables [`SERVICE_TABLES_PRESENT`] counts when all are
/// there: the books' and the lease's.
pub(crate) const SERVICE_TABLES: i64 = tables::TABLES.len() as i64 + 1;
/// How many of [`LEASE_ROW`]'s rows exist (2 when both do).
pub(crate) const LEASE_ROW_PRESENT: &str = "select count(*) from svc.svc_lock where id in (1, 2)";
/// Whether the default tenant table exists.
pub(crate) const TENANTS_TABLE_PRESENT: &str = "select count(*) from information_schema.tables \
    where table_schema = 'svc' and table_name = 'svc_tenants'";

/// Takes the lease (one row changed) when it has expired.
pub(crate) const LEASE_TAKE: &str =
    "update svc.svc_lock set holder = ?, expires = now(6) + interval ? second where id = 1 and expires < now(6)";
/// Extends the holder's lease (no row changed: another holder has it).
pub(crate) const LEASE_RENEW: &str =
    "update svc.svc_lock set expires = now(6) + interval ? second where id = 1 and holder = ?";
/// The fence of a unit's records (`Engine::fence`), in their transaction:
/// the lease row when it names the holder, under a shared lock that keeps
/// [`LEASE_TAKE`] (and Galera's replicated take, by aborting this
/// transaction) out until it ends.
pub(crate) const LEASE_FENCE: &str = "select holder from svc.svc_lock where id = 1 and holder = ? lock in share mode";
/// The lease's holder while it has not expired.
pub(crate) const LEASE_HOLDER: &str = "select holder from svc.svc_lock where id = 1 and expires >= now(6)";
/// Gives the lease back.
pub(crate) const LEASE_RELEASE: &str =
    "update svc.svc_lock set holder = '', expires = '1970-01-01 00:00:01' where id = 1 and holder = ?";

/// Name of the session lock serialising the creation of the service's
/// tables (idempotent DDL; on Galera, replicated one statement at a time).
pub(crate) const LOCK_NAME: &str = "strata.svc";
/// Seconds a mutation waits for the lock before giving up.
pub(crate) const LOCK_TIMEOUT_SECONDS: i64 = 600;

/// Takes the lock: 1 when taken, 0 on timeout.
pub(crate) const GET_LOCK: &str = "select get_lock(?, ?)";
/// Releases the lock.
pub(crate) const RELEASE_LOCK: &str = "select release_lock(?)";

/// The lease's table ([`LEASE_ROW`]): beside the books' tables every
/// engine keeps (`db::books::tables`).
const LEASE_TABLE: &str = "create table if not exists svc.svc_lock (
    id int primary key,
    holder varchar(64) not null,
    expires datetime(6) not null
) engine = InnoDB default charset = utf8mb4";

/// What creates the service's database, its books (and the default tenant
/// table when `tenants_table`) and the lease's table, in one text: each
/// statement a no-op when what it creates is there. Columns added since
/// are added by the engine when missing (MySQL has no `add column if not
/// exists`).
pub(crate) fn creates(tenants_table: bool) -> String {
    let mut creates = tables::creates(Driver::Mysql, tenants_table);
    creates.push(LEASE_TABLE.to_string());
    creates.join(";\n")
}

/// `created` as RFC 3339 UTC with microseconds (the service writes UTC); a
/// macro, so the statements below stay `const` literals.
macro_rules! created {
    () => {
        "date_format(created, '%Y-%m-%dT%H:%i:%s.%fZ')"
    };
}

/// Parses the RFC 3339 UTC text the service binds.
macro_rules! parse_created {
    () => {
        "str_to_date(?, '%Y-%m-%dT%H:%i:%s.%fZ')"
    };
}

/// Records one applied migration, right after it ran.
pub(crate) const INSERT_MIGRATION: &str = concat!(
    "insert into svc.svc_migrations ",
    "(name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id) ",
    "values (?, ?, ?, ?, ?, ",
    parse_created!(),
    ", ?, ?, ?)"
);

/// Creates a tenant's database; fails when it exists.
pub(crate) fn create_database(schema: &str) -> String {
    format!("create database {}", quote_mysql(schema))
}

/// Drops a tenant database this mutation created a moment ago and that is
/// still empty (its tenant row could not be inserted).
pub(crate) fn drop_database(schema: &str) -> String {
    format!("drop database if exists {}", quote_mysql(schema))
}

/// The session's time-outs in one statement: the lock waits (metadata
/// locks, row locks; whole seconds, bound twice) or the server's own when
/// `lock_default`, then the statement time-out (bound: MariaDB's
/// `max_statement_time` in seconds, MySQL's `max_execution_time` in
/// milliseconds, which bounds `SELECT` only; 0: none). MySQL commits each
/// DDL statement on its own, so these are session settings.
pub(crate) fn set_timeouts(mariadb: bool, lock_default: bool) -> &'static str {
    match (mariadb, lock_default) {
        (true, false) => {
            "set session lock_wait_timeout = ?, session innodb_lock_wait_timeout = ?, session max_statement_time = ?"
        }
        (true, true) => {
            "set session lock_wait_timeout = default, session innodb_lock_wait_timeout = default, \
             session max_statement_time = ?"
        }
        (false, false) => {
            "set session lock_wait_timeout = ?, session innodb_lock_wait_timeout = ?, session max_execution_time = ?"
        }
        (false, true) => {
            "set session lock_wait_timeout = default, session innodb_lock_wait_timeout = default, \
             session max_execution_time = ?"
        }
    }
}

/// Whether the server is MariaDB.
pub(crate) const IS_MARIADB: &str = "select version() like '%MariaDB%'";

/// Other sessions with an open transaction, or in schema `?`, oldest
/// first: who a migration that gave up waiting for a lock may be waiting
/// for (MySQL's metadata locks are listed by `performance_schema`, which
/// MariaDB leaves off by default; an open transaction is what holds them).
pub(crate) const BLOCKERS: &str = "select cast(p.ID as char), coalesce(p.USER, ''), coalesce(p.COMMAND, ''), \
    cast(p.TIME as char), coalesce(cast(t.trx_started as char), ''), left(coalesce(p.INFO, ''), 200) \
    from information_schema.PROCESSLIST p \
    left join information_schema.INNODB_TRX t on t.trx_mysql_thread_id = p.ID \
    where p.ID <> connection_id() and (t.trx_id is not null or p.DB = ?) \
    order by t.trx_started is null, t.trx_started, p.TIME desc limit 10";

/// The parts of a schema's catalog for fleet drift (core's `fingerprint`),
/// each a select of schema, kind, name, definition (the first part names
/// the columns): tables, columns (type, nullability, default, extra),
/// indexes, constraints, foreign keys, views, routines and triggers. No
/// sizes, row counts or column order. In each, `$s` stands for the view's
/// schema column and `$f` for the filter on it: [`CATALOG`] looks one
/// schema up, [`CATALOG_ALL`] reads every database.
const CATALOG_PARTS: [&str; 8] = [
    "select $s as db_schema, 'table' as kind, cast(TABLE_NAME as char) as name, \
       cast(concat(TABLE_TYPE, ' ', coalesce(ENGINE, '')) as char) as definition \
     from information_schema.TABLES where $f",
    "select $s, 'column', cast(concat(TABLE_NAME, '.', COLUMN_NAME) as char), cast(concat(COLUMN_TYPE, \
       if(IS_NULLABLE = 'NO', ' not null', ''), coalesce(concat(' default ', COLUMN_DEFAULT), ''), \
       if(EXTRA = '', '', concat(' ', EXTRA))) as char) \
     from information_schema.COLUMNS where $f",
    "select $s, 'index', cast(concat(TABLE_NAME, '.', INDEX_NAME) as char), cast(concat(if(NON_UNIQUE = 0, 'unique ', ''), \
       INDEX_TYPE, ' (', group_concat(concat(COLUMN_NAME, coalesce(concat('(', SUB_PART, ')'), '')) \
       order by SEQ_IN_INDEX separator ', '), ')') as char) \
     from information_schema.STATISTICS where $f group by $s, TABLE_NAME, INDEX_NAME, NON_UNIQUE, INDEX_TYPE",
    "select $s, 'constraint', cast(concat(TABLE_NAME, '.', CONSTRAINT_NAME) as char), cast(CONSTRAINT_TYPE as char) \
     from information_schema.TABLE_CONSTRAINTS where $f",
    "select $s, 'foreign key', cast(concat(TABLE_NAME, '.', CONSTRAINT_NAME) as char), cast(concat(group_concat(COLUMN_NAME \
       order by ORDINAL_POSITION separator ', '), ' references ', REFERENCED_TABLE_SCHEMA, '.', REFERENCED_TABLE_NAME) as char) \
     from information_schema.KEY_COLUMN_USAGE where $f and REFERENCED_TABLE_NAME is not null \
     group by $s, TABLE_NAME, CONSTRAINT_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME",
    "select $s, 'view', cast(TABLE_NAME as char), cast(VIEW_DEFINITION as char) from information_schema.VIEWS where $f",
    "select $s, 'routine', cast(ROUTINE_NAME as char), cast(concat(ROUTINE_TYPE, ' ', coalesce(ROUTINE_DEFINITION, '')) as char) \
     from information_schema.ROUTINES where $f",
    "select $s, 'trigger', cast(TRIGGER_NAME as char), cast(concat(ACTION_TIMING, ' ', EVENT_MANIPULATION, ' ', \
       EVENT_OBJECT_TABLE, ' ', ACTION_STATEMENT) as char) \
     from information_schema.TRIGGERS where $f",
];

/// Each part's schema column, in [`CATALOG_PARTS`]' order. Triggers are
/// found by their table's schema (always theirs too).
const CATALOG_SCHEMA_COLUMNS: [&str; 8] = [
    "TABLE_SCHEMA",
    "TABLE_SCHEMA",
    "TABLE_SCHEMA",
    "TABLE_SCHEMA",
    "TABLE_SCHEMA",
    "TABLE_SCHEMA",
    "ROUTINE_SCHEMA",
    "EVENT_OBJECT_SCHEMA",
];

/// [`CATALOG_PARTS`] joined by `union all`, each filtered by `filter` (its
/// schema column's name given).
fn catalog_union(filter: impl Fn(&str) -> String) -> String {
    let parts: Vec<String> = CATALOG_PARTS
        .iter()
        .zip(CATALOG_SCHEMA_COLUMNS)
        .map(|(part, column)| part.replace("$f", &filter(column)).replace("$s", column))
        .collect();
    parts.join(" union all ")
}

/// The catalog of schema `?` (bound [`CATALOG_BINDS`] times), one lookup
/// by name per part. Triggers are looked up by both schemas: MariaDB looks
/// `TRIGGERS` up by `EVENT_OBJECT_SCHEMA` and scans every database for
/// `TRIGGER_SCHEMA` alone ("Scanned all databases": 27 ms a schema beside
/// 2,000 tenant databases, more than the tenant's twenty migrations).
pub(crate) static CATALOG: LazyLock<String> = LazyLock::new(|| {
    catalog_union(|column| match column {
        "EVENT_OBJECT_SCHEMA" => "EVENT_OBJECT_SCHEMA = ? and TRIGGER_SCHEMA = ?".to_string(),
        column => format!("{column} = ?"),
    })
});

/// How often [`CATALOG`] binds the schema.
pub(crate) const CATALOG_BINDS: usize = 9;

/// The catalog of schema `?` (bound [`DESIRED_CATALOG_BINDS`] times) as
/// desired state reads it (core's `desired::mysql` plans from it), MariaDB
/// only (its `CHECK_CONSTRAINTS` has `TABLE_NAME` and `LEVEL`): each
/// definition is the SQL that makes the object again — a column's type,
/// generation, `not null`, default and `EXTRA` (its column-level check a
/// part of its own, named as the column: core adds it back); an index's kind and key parts; a foreign key's columns, target and rules;
/// a view's query; a routine's parameters, result and body; a trigger's
/// timing, event and table — and each table's column order. Every
/// `information_schema` table is looked up by the schema as a constant,
/// joins included (a join on another table's column scans every database
/// of the server: quadratic over a fleet).
pub(crate) const DESIRED_CATALOG: &str = "select TABLE_SCHEMA as db_schema, 'relation' as kind, cast(TABLE_NAME as char) as name, \
    cast(case TABLE_TYPE when 'BASE TABLE' then 'table' else lower(TABLE_TYPE) end as char) as definition \
    from information_schema.TABLES where TABLE_SCHEMA = ? \
    union all \
    select TABLE_SCHEMA, 'table engine', cast(TABLE_NAME as char), cast(concat('engine=', ENGINE) as char) \
    from information_schema.TABLES where TABLE_SCHEMA = ? and TABLE_TYPE = 'BASE TABLE' and ENGINE is not null \
    union all \
    select c.TABLE_SCHEMA, 'column', cast(concat(c.TABLE_NAME, '.', c.COLUMN_NAME) as char), cast(concat(c.COLUMN_TYPE, \
    if(c.GENERATION_EXPRESSION is null, '', concat(' as (', c.GENERATION_EXPRESSION, ') ', if(c.EXTRA like 'STORED%', 'stored', 'virtual'))), \
    if(c.IS_NULLABLE = 'NO', ' not null', ''), \
    if(c.COLUMN_DEFAULT is null or c.COLUMN_DEFAULT = 'NULL', '', concat(' default ', c.COLUMN_DEFAULT)), \
    if(c.EXTRA = '' or c.EXTRA like '%GENERATED', '', concat(' ', c.EXTRA))) as char) \
    from information_schema.COLUMNS c where c.TABLE_SCHEMA = ? \
    union all \
    select CONSTRAINT_SCHEMA, 'column check', cast(concat(TABLE_NAME, '.', CONSTRAINT_NAME) as char), cast(CHECK_CLAUSE as char) \
    from information_schema.CHECK_CONSTRAINTS where CONSTRAINT_SCHEMA = ? and LEVEL = 'Column' \
    union all \
    select TABLE_SCHEMA, 'column order', cast(TABLE_NAME as char), \
    cast(group_concat(COLUMN_NAME order by ORDINAL_POSITION separator '\\n') as char) \
    from information_schema.COLUMNS where TABLE_SCHEMA = ? group by TABLE_SCHEMA, TABLE_NAME \
    union all \
    select TABLE_SCHEMA, 'index', cast(concat(TABLE_NAME, '.', INDEX_NAME) as char), cast(concat( \
    case when INDEX_NAME = 'PRIMARY' then 'primary key' when INDEX_TYPE in ('FULLTEXT', 'SPATIAL') then concat(lower(INDEX_TYPE), ' index') \
    when NON_UNIQUE = 0 then 'unique index' else 'index' end, ' (', \
    group_concat(concat('`', replace(COLUMN_NAME, '`', '``'), '`', coalesce(concat('(', SUB_PART, ')'), ''), if(COLLATION = 'D', ' desc', '')) \
    order by SEQ_IN_INDEX separator ', '), ')', \
    if(INDEX_TYPE in ('BTREE', 'FULLTEXT', 'SPATIAL'), '', concat(' using ', INDEX_TYPE))) as char) \
    from information_schema.STATISTICS where TABLE_SCHEMA = ? group by TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, NON_UNIQUE, INDEX_TYPE \
    union all \
    select CONSTRAINT_SCHEMA, 'check', cast(concat(TABLE_NAME, '.', CONSTRAINT_NAME) as char), cast(CHECK_CLAUSE as char) \
    from information_schema.CHECK_CONSTRAINTS where CONSTRAINT_SCHEMA = ? and LEVEL = 'Table' \
    union all \
    select k.TABLE_SCHEMA, 'foreign key', cast(concat(k.TABLE_NAME, '.', k.CONSTRAINT_NAME) as char), cast(concat('(', \
    group_concat(concat('`', replace(k.COLUMN_NAME, '`', '``'), '`') order by k.ORDINAL_POSITION separator ', '), \
    ') references `', k.REFERENCED_TABLE_SCHEMA, '`.`', k.REFERENCED_TABLE_NAME, '` (', \
    group_concat(concat('`', replace(k.REFERENCED_COLUMN_NAME, '`', '``'), '`') order by k.ORDINAL_POSITION separator ', '), \
    ') on delete ', lower(r.DELETE_RULE), ' on update ', lower(r.UPDATE_RULE)) as char) \
    from information_schema.KEY_COLUMN_USAGE k join information_schema.REFERENTIAL_CONSTRAINTS r \
    on r.CONSTRAINT_SCHEMA = ? and r.TABLE_NAME = k.TABLE_NAME and r.CONSTRAINT_NAME = k.CONSTRAINT_NAME \
    where k.TABLE_SCHEMA = ? and k.REFERENCED_TABLE_NAME is not null \
    group by k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.REFERENCED_TABLE_SCHEMA, k.REFERENCED_TABLE_NAME, r.DELETE_RULE, r.UPDATE_RULE \
    union all \
    select TABLE_SCHEMA, 'view', cast(TABLE_NAME as char), cast(concat(VIEW_DEFINITION, \
    if(CHECK_OPTION = 'NONE', '', concat(' with ', lower(CHECK_OPTION), ' check option'))) as char) \
    from information_schema.VIEWS where TABLE_SCHEMA = ? \
    union all \
    select r.ROUTINE_SCHEMA, 'routine', cast(r.ROUTINE_NAME as char), cast(concat(lower(r.ROUTINE_TYPE), ' (', \
    coalesce((select group_concat(concat(if(r.ROUTINE_TYPE = 'PROCEDURE', concat(p.PARAMETER_MODE, ' '), ''), \
    '`', replace(p.PARAMETER_NAME, '`', '``'), '` ', p.DTD_IDENTIFIER) order by p.ORDINAL_POSITION separator ', ') \
    from information_schema.PARAMETERS p where p.SPECIFIC_SCHEMA = r.ROUTINE_SCHEMA and p.SPECIFIC_NAME = r.SPECIFIC_NAME \
    and p.ROUTINE_TYPE = r.ROUTINE_TYPE and p.ORDINAL_POSITION > 0), ''), ')', \
    coalesce(concat(' returns ', r.DTD_IDENTIFIER), ''), if(r.IS_DETERMINISTIC = 'YES', ' deterministic', ''), \
    if(r.SQL_DATA_ACCESS = 'CONTAINS SQL', '', concat(' ', lower(r.SQL_DATA_ACCESS))), '\\n', r.ROUTINE_DEFINITION) as char) \
    from information_schema.ROUTINES r where r.ROUTINE_SCHEMA = ? \
    union all \
    select EVENT_OBJECT_SCHEMA, 'trigger', cast(TRIGGER_NAME as char), cast(concat(lower(ACTION_TIMING), ' ', lower(EVENT_MANIPULATION), \
    ' on `', EVENT_OBJECT_SCHEMA, '`.`', replace(EVENT_OBJECT_TABLE, '`', '``'), '` for each row ', ACTION_STATEMENT) as char) \
    from information_schema.TRIGGERS where EVENT_OBJECT_SCHEMA = ? and TRIGGER_SCHEMA = ?";

/// How often [`DESIRED_CATALOG`] binds the schema.
pub(crate) const DESIRED_CATALOG_BINDS: usize = 13;

/// The catalog of every database but the server's own, ordered by schema
/// byte by byte (as Rust orders names), so a reader holds one schema's
/// objects at a time: one pass over the server (core's `one_pass_pays`).
pub(crate) static CATALOG_ALL: LazyLock<String> = LazyLock::new(|| {
    let union =
        catalog_union(|column| format!("{column} not in ('mysql', 'information_schema', 'performance_schema', 'sys')"));
    format!("select * from ({union}) catalog order by cast(db_schema as binary)")
});

/// The databases on the server, its own included (core's `one_pass_pays`).
pub(crate) const DATABASE_COUNT: &str = "select count(*) from information_schema.SCHEMATA";

/// How MySQL and MariaDB write the books' statements (`db::books::sql`).
const DIALECT: Dialect = Dialect {
    numbered: false,
    table_count: "select count(*) from information_schema.tables where table_schema = 'svc' and table_name = '{table}'",
    column_count: "select count(*) from information_schema.columns where table_schema = 'svc' and table_name = '{table}' and column_name = '{column}'",
    null_text: "cast(null as char)",
    created: created!(),
    now: "current_timestamp(6)",
    upsert: Upsert::OnDuplicateKey,
    stored_failures: "failures",
    select_fingerprints: "select cast(db_schema as char), cast(fingerprint as char), cast(recorded as char) \
                          from svc.svc_fingerprints",
    bound_time: parse_created!(),
    returns_id: false,
    quote: None,
    tenant_page: None,
    // Row 2 of the lease table ([`LEASE_ROW`]).
    claims_lock: "update svc.svc_lock set expires = now(6) where id = 2",
};

/// The statements of the service's books (`db::books`), written once in
/// this dialect.
pub(crate) static BOOKS: LazyLock<BooksSql> = LazyLock::new(|| BooksSql::new(&DIALECT));

/// Every column of the service's tables (`table.column`, one a row): the
/// added columns (`db::books::tables::added`) not among them are added.
pub(crate) const ADDED_COLUMNS_PRESENT: &str =
    "select concat(table_name, '.', column_name) from information_schema.columns where table_schema = 'svc'";
