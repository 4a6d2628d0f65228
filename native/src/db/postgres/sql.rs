//! Every statement the PostgreSQL driver sends of its own accord. Names are
//! validated by the core and quoted here; values are always bound
//! (`$1`, `$2`, …).

use std::sync::LazyLock;

use crate::db::books::sql::{BooksSql, Dialect, Upsert};
use crate::db::books::tables;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::ident::{quote_ansi, quote_string_postgres};

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

/// Key of the transaction-level advisory lock that fences the lease: each
/// unit's transaction takes it shared before it checks the lease row names
/// its holder ([`fence`]); [`LEASE_TAKE`] runs after taking it exclusive
/// ([`LEASE_GATE`]), so a lease changes hands only between units'
/// transactions. PostgreSQL's lock manager queues a shared request behind a
/// waiting exclusive one, so takers are not starved by a busy fleet.
pub(crate) const FENCE_KEY: i64 = LOCK_KEY + 1;

/// The time-out of a take's wait for the units' transactions in flight: a
/// holder paused inside one keeps a taker out no longer than this per try.
pub(crate) const LEASE_GATE_TIMEOUT: &str = "set local lock_timeout = '5s'";

/// Takes the fence exclusive before [`LEASE_TAKE`], in its transaction.
pub(crate) const LEASE_GATE: &str = "select pg_advisory_xact_lock($1)";

/// The SQLSTATE [`fence`] raises when the lease names another holder.
pub(crate) const FENCE_SQLSTATE: &str = "SF001";
/// The fence's message, which with [`FENCE_SQLSTATE`] tells its refusal
/// from a user file's error of the same code.
pub(crate) const FENCE_MESSAGE: &str = "the lease svc.svc_lock was taken by another mutation";

/// The fence of a unit's transaction: the advisory lock [`FENCE_KEY`]
/// shared, then the lease row read under `for key share` (a row changed
/// since a repeatable-read snapshot fails it) — an error with
/// [`FENCE_SQLSTATE`] unless it names `holder`. A `do` block, so that a
/// unit's one message carries it without bound values; its body is a
/// string literal, the holder a literal within it.
pub(crate) fn fence(holder: &str) -> String {
    let body = format!(
        "begin perform pg_advisory_xact_lock_shared({FENCE_KEY}); \
         perform 1 from svc.svc_lock where id = 1 and holder = {} for key share; \
         if not found then raise exception '{FENCE_MESSAGE}' using errcode = '{FENCE_SQLSTATE}'; end if; end",
        quote_string_postgres(holder)
    );
    format!("do {}", quote_string_postgres(&body))
}

/// Extends the lease; no row when another holder took it (it had expired).
pub(crate) const LEASE_RENEW: &str = "update svc.svc_lock \
    set expires = clock_timestamp() + make_interval(secs => $2) where id = 1 and holder = $1 returning holder";

/// The lease's holder while it has not expired.
pub(crate) const LEASE_HOLDER: &str = "select holder from svc.svc_lock where id = 1 and expires >= clock_timestamp()";

/// Gives the lease back.
pub(crate) const LEASE_RELEASE: &str = "delete from svc.svc_lock where id = 1 and holder = $1";

/// Starts a transaction.
pub(crate) const BEGIN: &str = "begin";
/// Commits it.
pub(crate) const COMMIT: &str = "commit";
/// What files left in their session given back: the user and the role
/// (which `reset all` leaves), the settings, prepared statements (the
/// service's are unnamed), cursors, `listen`s, temporary tables, the
/// sequences' last values (`lastval()`) — what
/// `discard all` does, which cannot run in a transaction — but session
/// advisory locks ([`unlock_all!`]: it answers a row).
macro_rules! reset_session {
    () => {
        "reset session authorization; reset role; reset all; deallocate all; close all; unlisten *; discard temp; \
         discard sequences;"
    };
}
/// The session advisory locks files took (`pg_advisory_lock`), which
/// outlive a commit and a rollback, given back.
macro_rules! unlock_all {
    () => {
        "select pg_advisory_unlock_all();"
    };
}
/// Commits it, what its statements left in the session given back first
/// (`Engine::commit_text`).
pub(crate) const RESET_AND_COMMIT: &str = concat!(reset_session!(), " ", unlock_all!(), "\ncommit");
/// Rolls it back, then gives back what its statements left that a
/// rollback keeps (prepared statements, advisory locks) — and the rest,
/// in the same message (behind a pooler in transaction mode, on the same
/// server connection).
pub(crate) const ROLLBACK_AND_RESET: &str = concat!("rollback;\n", reset_session!(), " ", unlock_all!());
/// Rolls it back.
pub(crate) const ROLLBACK: &str = "rollback";
/// What a file outside any transaction left in its session given back
/// (`Engine::end_alone`).
pub(crate) const RESET: &str = concat!(reset_session!(), " ", unlock_all!());

/// The lease's table ([`LEASE_TAKE`]): PostgreSQL's own, beside the books'
/// tables every engine keeps (`db::books::tables`).
const LEASE_TABLE: &str = "create table if not exists svc.svc_lock (
    id integer primary key check (id = 1),
    holder text not null,
    expires timestamptz not null
)";

/// What creates the service's schema, its books (and the default tenant
/// table when `tenants_table`) and the lease's table: one statement an
/// item, each a no-op when what it creates is there.
pub(crate) fn creates(tenants_table: bool) -> Vec<String> {
    let mut creates = tables::creates(Driver::Postgres, tenants_table);
    creates.push(LEASE_TABLE.to_string());
    creates
}

/// Whether every table, index and added column [`creates`] makes in
/// `svc` is there — read from the catalog, which takes no lock on the
/// tables: `create index if not exists` asks for a share lock on its table
/// and `alter table … add column if not exists` for an exclusive one even
/// when there is nothing to do, waiting behind any reader (a `pg_dump`)
/// while every writer queues behind them. One message, no value bound.
pub(crate) fn service_objects_present(tenants_table: bool) -> String {
    let mut relations = tables::relations(Driver::Postgres, tenants_table);
    relations.push("svc_lock");
    let columns: Vec<String> = tables::added().map(|(table, column)| tables::qualified_name(table, column)).collect();
    format!(
        "select (select count(*) from pg_class where relnamespace = to_regnamespace('svc') \
         and relname in ({})) = {} and (select count(*) from pg_attribute a join pg_class c on c.oid = a.attrelid \
         where c.relnamespace = to_regnamespace('svc') and a.attnum > 0 and not a.attisdropped \
         and c.relname || '.' || a.attname in ({})) = {}",
        quoted_list(&relations),
        relations.len(),
        quoted_list(&columns),
        columns.len()
    )
}

/// `names` as a list of quoted strings (`'a', 'b'`).
fn quoted_list(names: &[impl AsRef<str>]) -> String {
    names.iter().map(|name| quote_string_postgres(name.as_ref())).collect::<Vec<_>>().join(", ")
}

/// `created` as RFC 3339 UTC with microseconds, like the other drivers (a
/// macro, so the statements below stay `const` literals).
macro_rules! created {
    () => {
        "to_char(created at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    };
}

/// Head of the multi-row insert recording applied migrations.
pub(crate) const INSERT_MIGRATIONS: &str = "insert into svc.svc_migrations \
    (name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id) ";

/// Rows per multi-row insert: 9 parameters each, far below PostgreSQL's
/// 65,535 bound parameters per statement.
pub(crate) const MIGRATION_ROWS_PER_INSERT: usize = 1000;

/// Creates a tenant's schema.
/// `schema` first on the `search_path`, then `public`: for the open
/// transaction (`local`) or the session.
pub(crate) fn search_path(schema: Option<&str>, local: bool) -> String {
    let scope = if local { "local " } else { "" };
    match schema {
        Some(schema) => format!("set {scope}search_path to {}, public", quote_ansi(schema)),
        // The session's own: its server's or its connection's setting.
        None => format!("set {scope}search_path to default"),
    }
}

pub(crate) fn create_schema(schema: &str) -> String {
    format!("create schema {}", quote_ansi(schema))
}

/// Sets the lock and statement time-outs (`$1`, `$2`: milliseconds as text,
/// `0` for none) until the end of the open transaction.
pub(crate) const SET_LOCAL_TIMEOUTS: &str =
    "select set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)";

/// [`SET_LOCAL_TIMEOUTS`] with its values written in (numbers), to send
/// with a unit's files in one message.
pub(crate) fn set_local_timeouts_text(lock_ms: u64, statement_ms: u64) -> String {
    format!(
        "select set_config('lock_timeout', '{lock_ms}ms', true), set_config('statement_timeout', '{statement_ms}ms', true)"
    )
}

/// For a session that started with the time-outs in its `options`
/// (`postgres::alone`): its user, role and settings back to how the
/// session started and no temporary table (a file before may have left
/// them), and whether they are the time-outs asked for (a pooler may have
/// dropped the parameter). Written in (numbers): one message, no
/// transaction left open.
pub(crate) fn alone_timeouts_carried(lock_ms: u64, statement_ms: u64) -> String {
    format!(
        concat!(
            reset_session!(),
            " select current_setting('lock_timeout')::interval = interval '{lock_ms} milliseconds' \
         and current_setting('statement_timeout')::interval = interval '{statement_ms} milliseconds'"
        ),
        lock_ms = lock_ms,
        statement_ms = statement_ms
    )
}

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

/// [`BLOCKERS`] over a Citus cluster (`citus_locks` and
/// `citus_stat_activity`, the coordinator's and every worker's sessions):
/// the sessions holding locks on relations of schema `$1` on any node — a
/// tenant's shards are locked on its worker — other than this session's
/// distributed transaction. The first column names the session by its
/// global pid and the node it holds the locks on. (`citus_lock_waits`,
/// built from the same views, lists who waits for whom only while the
/// waiting lasts: read after the time-out, the unit no longer waits.)
pub(crate) const CITUS_BLOCKERS: &str = "with held as materialized ( \
      select l.global_pid, l.nodeid, string_agg(distinct l.relation_name || ' ' || l.mode, ', ') as locks \
      from citus_locks l \
      where l.granted and left(l.relation_name, length($1) + 1) = $1 || '.' \
        and l.global_pid <> citus_backend_gpid() \
      group by l.global_pid, l.nodeid \
    ), activity as materialized ( \
      select distinct on (a.global_pid) a.global_pid, a.state, a.xact_start, a.application_name, a.query \
      from citus_stat_activity a where a.global_pid in (select global_pid from held) \
      order by a.global_pid, a.is_worker_query, a.nodeid \
    ) \
    select h.global_pid::text || coalesce(' on ' || n.nodename || ':' || n.nodeport, ''), coalesce(a.state, ''), \
    coalesce(to_char(a.xact_start at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''), \
    coalesce(a.application_name, ''), left(coalesce(a.query, ''), 200), h.locks \
    from held h left join pg_dist_node n on n.nodeid = h.nodeid \
    left join activity a on a.global_pid = h.global_pid \
    order by a.xact_start nulls last limit 10";

/// The catalogs of the schemas named in `$1` (a text array) for fleet
/// drift (core's `fingerprint`): schema, kind, name, definition — relations
/// and sequences, columns (type, not null, default), indexes, constraints,
/// views, triggers, routines and enum types. No object ids, sizes,
/// statistics or column order. Not PostgreSQL 18's `NOT NULL` constraints
/// (`contype = 'n'`): the column's `not null` says it on every major, so
/// one schema fingerprints alike on 13 to 18 (a fleet's shards may differ).
/// `pg_class` has no index on the namespace, and a scan of it per read grew
/// with the whole fleet (at 100,000 tenants, 400 reads of every tenant's
/// relations): a schema's relations are found through `pg_depend`'s index
/// on what they depend on — every table, view, sequence and foreign table
/// depends on its schema (indexes and TOAST tables do not, and are not
/// read here) — and everything else by indexed joins from there.
pub(crate) const CATALOGS: &str = "\
with ns as materialized ( \
  select oid, nspname::text as schema from pg_namespace where nspname = any($1) \
), rels as materialized ( \
  select c.oid, c.relname::text as relname, c.relkind, ns.schema \
  from ns join lateral ( \
    select distinct dep.objid from pg_depend dep where dep.refclassid = 'pg_namespace'::regclass \
    and dep.refobjid = ns.oid and dep.refobjsubid = 0 and dep.classid = 'pg_class'::regclass \
  ) d on true join pg_class c on c.oid = d.objid and c.relnamespace = ns.oid \
  where c.relkind in ('r', 'p', 'v', 'm', 'f', 'S') \
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
from rels r join pg_constraint con on con.conrelid = r.oid where con.contype <> 'n' \
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

/// What [`DESIRED_CATALOGS`] changes in [`CATALOGS`]: a column's default…
const COLUMN_DEFAULT: &str = "coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')";
/// …read with its identity, or as the generation it is on a generated column;
const COLUMN_DEFAULT_AND_GENERATION: &str = "case when a.attgenerated = 's' \
    then ' generated always as (' || pg_get_expr(d.adbin, d.adrelid) || ') stored' \
    else coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') || case a.attidentity \
    when 'a' then ' generated always as identity' when 'd' then ' generated by default as identity' else '' end end";
/// and the relations read…
const RELATIONS: &str = "where c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')";
/// …without the sequences an identity column owns (its table makes them).
const RELATIONS_BUT_IDENTITY_SEQUENCES: &str = "where c.relkind in ('r', 'p', 'v', 'm', 'f', 'S') \
    and not (c.relkind = 'S' and exists (select 1 from pg_depend dep where dep.classid = 'pg_class'::regclass \
    and dep.objid = c.oid and dep.deptype = 'i'))";

/// …and, last, each table's columns in their order (one name a line), for
/// the tables a plan creates (never compared).
const COLUMN_ORDER: &str = " union all select r.schema, 'column order', r.relname, \
    string_agg(a.attname, E'\\n' order by a.attnum) from rels r join pg_attribute a on a.attrelid = r.oid \
    where a.attnum > 0 and not a.attisdropped and r.relkind in ('r', 'p') group by r.schema, r.relname";

/// [`CATALOGS`] as desired state reads it (`strata diff --desired`): a
/// column's identity and generation too, where drift's reading shows a
/// generation as a default and no identity at all, without identity
/// columns' own sequences, and each table's column order — so a table a
/// plan creates is the desired one. Drift keeps [`CATALOGS`]: the
/// fingerprints earlier versions stored stay comparable.
pub(crate) static DESIRED_CATALOGS: LazyLock<String> = LazyLock::new(|| {
    let read = CATALOGS
        .replace(COLUMN_DEFAULT, COLUMN_DEFAULT_AND_GENERATION)
        .replace(RELATIONS, RELATIONS_BUT_IDENTITY_SEQUENCES);
    format!("{read}{COLUMN_ORDER}")
});

/// How PostgreSQL writes the books' statements (`db::books::sql`).
const DIALECT: Dialect = Dialect {
    numbered: true,
    table_count: "select count(to_regclass('svc.{table}'))",
    column_count: "select count(*) from information_schema.columns where table_schema = 'svc' and table_name = '{table}' and column_name = '{column}'",
    null_text: "null::text",
    created: created!(),
    now: "now()",
    upsert: Upsert::OnConflict,
    stored_failures: "svc.svc_quarantine.failures",
    select_fingerprints: "select db_schema, fingerprint, recorded from svc.svc_fingerprints",
    bound_time: "?::timestamptz",
    returns_id: true,
    quote: Some(quote_string_postgres),
    tenant_page: Some(
        "select * from {select} as strata_page (strata_name) \
         where $1::text is null or strata_name collate \"C\" > $1 \
         order by strata_name collate \"C\" limit $2",
    ),
    // Until the transaction ends; no table row (a version's fence reads the lease's).
    claims_lock: "select pg_advisory_xact_lock(hashtext('svc.svc_backfills claims'))",
};

/// The statements of the service's books (`db::books`), written once in
/// this dialect.
pub(crate) static BOOKS: LazyLock<BooksSql> = LazyLock::new(|| BooksSql::new(&DIALECT));

/// Whether the database runs Citus (the extension is installed in it).
pub(crate) const CITUS_INSTALLED: &str = "select exists (select 1 from pg_extension where extname = 'citus')";

/// Whether this Citus node is a worker: not the coordinator of a cluster
/// with nodes, and not in the coordinator's group (0) — a coordinator
/// without workers yet is no worker.
pub(crate) const CITUS_IS_WORKER: &str =
    "select not citus_is_coordinator() and coalesce((select groupid from pg_dist_local_group limit 1), 0) <> 0";

/// The coordinator's address as a worker's metadata names it (none when
/// the worker holds no metadata).
pub(crate) const CITUS_COORDINATOR: &str =
    "select nodename || ':' || nodeport from pg_dist_node where groupid = 0 and noderole = 'primary' limit 1";

/// Keeps the schemas the open transaction creates on the coordinator,
/// whatever `citus.enable_schema_based_sharding` says for the session:
/// the service's schema, whose lease row needs `clock_timestamp()`, which
/// Citus refuses on a distributed table.
pub(crate) const CITUS_LOCAL_SCHEMAS: &str = "set local citus.enable_schema_based_sharding = off";

/// Keeps the open transaction's DDL on the coordinator: the service's
/// schema and tables are the coordinator's alone, so Strata starts while a
/// worker is down (Citus would send `create schema if not exists svc` to
/// every node).
pub(crate) const CITUS_NO_DDL_PROPAGATION: &str = "set local citus.enable_ddl_propagation = off";

/// Whether a schema created now becomes a distributed schema by itself.
pub(crate) const CITUS_SHARDING_ON: &str = "select current_setting('citus.enable_schema_based_sharding', true)";

/// Each distributed schema and the node its shards live on (a schema's
/// tables are colocated: one node); a schema without tables has none yet.
pub(crate) const CITUS_PLACEMENTS: &str = "select n.nspname::text, min(s.nodename || ':' || s.nodeport) \
    from pg_dist_schema d join pg_namespace n on n.oid = d.schemaid \
    join citus_shards s on s.colocation_id = d.colocationid group by n.nspname order by 1";

/// Moves a distributed schema to the node `host`:`port` with the shard
/// transfer `mode`: its values written in as quoted literals (simple query
/// protocol, outside a transaction: Citus moves shards outside one).
pub(crate) fn citus_schema_move(schema: &str, host: &str, port: i32, mode: &str) -> String {
    format!(
        "select citus_schema_move({}::regnamespace, {}, {port}, {}::citus.shard_transfer_mode)",
        quote_string_postgres(&quote_ansi(schema)),
        quote_string_postgres(host),
        quote_string_postgres(mode)
    )
}

/// Makes an (empty) schema a distributed schema (`$1`: its quoted name).
pub(crate) const CITUS_DISTRIBUTE: &str = "select citus_schema_distribute($1::regnamespace)";

/// The unit's time-outs as `SET LOCAL` statements Citus propagates to the
/// workers its transaction touches (`citus.propagate_set_commands =
/// 'local'` first; `set_config()` would set the coordinator's only). Each
/// is sent alone; the values are numbers.
pub(crate) fn citus_set_local_timeouts(lock_ms: u64, statement_ms: u64) -> [String; 3] {
    [
        "set local citus.propagate_set_commands = 'local'".to_string(),
        format!("set local lock_timeout = '{lock_ms}ms'"),
        format!("set local statement_timeout = '{statement_ms}ms'"),
    ]
}

/// Runs a command on every Citus worker through the coordinator (`$1`: the
/// command's text): each node's address, whether it ran, and its answer
/// (one value) or its error.
pub(crate) const CITUS_ON_WORKERS: &str =
    "select nodename || ':' || nodeport, success, coalesce(result, '') from run_command_on_workers($1)";

/// What a Citus worker holds of `schemas` (run there through
/// [`CITUS_ON_WORKERS`]), for fleet drift: for each of the schemas' shards
/// placed on this node, its table, columns, indexes, constraints and
/// triggers, as a JSON array of `[schema, kind, name, definition]` — kinds
/// `shard relation`, `shard column`, … (a shard that is missing from the
/// node: `shard relation` `missing`). The shard id suffixes Citus gives a
/// shard's table, indexes and constraints (`users_102008`) are cut, so
/// every tenant's shards compare alike; the coordinator's catalog holds the
/// rest (the logical tables, views, routines, types). Schemas whose shards
/// live elsewhere give nothing here.
pub(crate) fn citus_shard_catalogs(schemas: &[String]) -> String {
    let names: Vec<String> = schemas.iter().map(|s| quote_string_postgres(s)).collect();
    format!(
        "with ns as materialized ( \
          select oid, nspname::text as schema from pg_namespace where nspname = any(array[{names}]::text[]) \
        ), shards as materialized ( \
          select ns.schema, c.relname::text as relname, s.shardid, \
            to_regclass(format('%I.%I', ns.schema, c.relname || '_' || s.shardid)) as oid \
          from pg_dist_shard s \
          join pg_dist_placement p on p.shardid = s.shardid \
            and p.groupid = (select groupid from pg_dist_local_group limit 1) \
          join pg_class c on c.oid = s.logicalrelid join ns on ns.oid = c.relnamespace \
        ), ids as ( \
          select schema, '_(' || string_agg(shardid::text, '|') || ')\\M' as cut from shards group by schema \
        ), rels as materialized ( \
          select sh.schema, sh.relname, sh.oid, ids.cut from shards sh join ids using (schema) where sh.oid is not null \
        ), objects (schema, kind, name, definition) as ( \
          select sh.schema, 'shard relation', sh.relname, coalesce(c.relkind::text, 'missing') \
          from shards sh left join pg_class c on c.oid = sh.oid \
          union all \
          select r.schema, 'shard column', r.relname || '.' || a.attname, format_type(a.atttypid, a.atttypmod) \
            || case when a.attnotnull then ' not null' else '' end \
            || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') \
          from rels r join pg_attribute a on a.attrelid = r.oid \
          left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum \
          where a.attnum > 0 and not a.attisdropped \
          union all \
          select r.schema, 'shard index', regexp_replace(ic.relname, r.cut, '', 'g'), \
            regexp_replace(pg_get_indexdef(i.indexrelid), r.cut, '', 'g') \
          from rels r join pg_index i on i.indrelid = r.oid join pg_class ic on ic.oid = i.indexrelid \
          union all \
          select r.schema, 'shard constraint', r.relname || '.' || regexp_replace(con.conname, r.cut, '', 'g'), \
            regexp_replace(pg_get_constraintdef(con.oid), r.cut, '', 'g') \
          from rels r join pg_constraint con on con.conrelid = r.oid where con.contype <> 'n' \
          union all \
          select r.schema, 'shard trigger', r.relname || '.' || regexp_replace(t.tgname, r.cut, '', 'g'), \
            regexp_replace(pg_get_triggerdef(t.oid), r.cut, '', 'g') \
          from rels r join pg_trigger t on t.tgrelid = r.oid where not t.tgisinternal \
        ) \
        select coalesce(json_agg(json_build_array(schema, kind, name, definition)), '[]')::text from objects",
        names = names.join(", ")
    )
}

/// The tables of schema `$1` Citus does not know yet (neither distributed
/// nor reference tables), quoted, in the order they were created: a table
/// referenced by a later one comes first.
pub(crate) const CITUS_NEW_TABLES: &str = "select format('%I.%I', n.nspname, c.relname) \
    from pg_class c join pg_namespace n on n.oid = c.relnamespace \
    where n.nspname = $1 and c.relkind in ('r', 'p') and not c.relispartition \
    and not exists (select 1 from pg_dist_partition p where p.logicalrelid = c.oid) order by c.oid";

/// Makes a table (`$1`: its quoted name) a Citus reference table.
pub(crate) const CITUS_REFERENCE_TABLE: &str = "select create_reference_table($1::regclass)::text";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_presence_check_names_every_table_index_and_added_column_of_the_service() {
        let check = service_objects_present(true);
        let creates = creates(true).join(";\n");
        let tables = creates.matches("create table if not exists svc.").count();
        let indexes = creates.matches("create index if not exists ").count();
        let columns = creates.matches(" add column if not exists ").count();
        assert_eq!((tables, indexes, columns), (11, 2, 6));
        assert!(check.contains(&format!(") = {} and", tables + indexes)), "{check}");
        assert!(check.ends_with(&format!(") = {columns}")), "{check}");
        let names = ["'svc_lock'", "'svc_tenants'", "'svc_migrations_filename'", "'svc_versions.trace_id'"];
        for name in names.into_iter().chain(["'svc_backfills.failure_budget'", "'svc_backfills.started_version'"]) {
            assert!(check.contains(name), "{name}: {check}");
        }
        assert!(!service_objects_present(false).contains("'svc_tenants'"));
    }

    #[test]
    fn the_desired_reading_changes_exactly_the_column_definitions_and_the_relations_and_adds_column_order() {
        assert_eq!(CATALOGS.matches(COLUMN_DEFAULT).count(), 1);
        assert_eq!(CATALOGS.matches(RELATIONS).count(), 1);
        let back = DESIRED_CATALOGS
            .strip_suffix(COLUMN_ORDER)
            .unwrap()
            .replace(COLUMN_DEFAULT_AND_GENERATION, COLUMN_DEFAULT)
            .replace(RELATIONS_BUT_IDENTITY_SEQUENCES, RELATIONS);
        assert_eq!(back, CATALOGS);
    }
}
