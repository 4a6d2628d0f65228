//! Every statement the SQL Server driver sends of its own accord, written
//! for SQL Server 2008 R2 and later: no `create … if not exists`, no
//! `drop … if exists`, no `iif`, `format`, `throw`, `try_convert`,
//! `string_agg` or `offset … fetch` (all 2012 or newer); `datetime2`,
//! `output inserted`, `sp_getapplock` and `sp_executesql` are 2008-era.
//! Values are bound as `@P1`, `@P2`, … — but a unit's records, written as
//! string literals (core's `quote_string_sqlserver`: one batch, where Babelfish read 180
//! parameters a unit slowly); a tenant's schema name reaches `create schema`
//! only through `quotename(@P1)` inside `sp_executesql`.

use crate::db::books::tables;
#[cfg(test)]
use strata_core::migrate::driver::Driver;

/// Makes any error abort and roll back the whole transaction, and takes
/// the application lock `strata.unit` for it: shared (no transaction waits
/// for another's) and owned by the transaction, so it ends with it — a
/// transaction that holds it is the one the service began, not one a file's
/// procedure or dynamic SQL began after ending it (`COMMIT` or `ROLLBACK`,
/// then `BEGIN TRANSACTION`), which static reading cannot see.
pub(crate) const BEGIN: &str = "set xact_abort on; begin transaction; \
    exec sp_getapplock @Resource = N'strata.unit', @LockMode = 'Shared', @LockOwner = 'Transaction', @LockTimeout = 0;";

/// What the fence reads before a unit's rows are written (`strata.unit`
/// held, one transaction deep, in the database the session began in).
pub(crate) const TRANSACTION_STATE: &str =
    "select @@trancount, applock_mode('public', N'strata.unit', 'Transaction'), db_name()";

/// The session's database, read once on a fresh connection.
pub(crate) const DATABASE: &str = "select db_name()";
/// Commits.
pub(crate) const COMMIT: &str = "commit transaction;";
/// Rolls back whatever is open.
pub(crate) const ROLLBACK: &str = "if @@trancount > 0 rollback transaction;";

/// What every connection of a version runs first: any error aborts and
/// rolls back the open transaction.
pub(crate) const SESSION_SETTINGS: &str = "set xact_abort on;";

/// The application lock's resource name.
pub(crate) const LOCK_RESOURCE: &str = "strata.svc";

/// How long a mutation waits for the application lock, in seconds (the
/// `@LockTimeout` of [`SESSION_LOCK`] and [`LOCK`], in milliseconds).
pub(crate) const LOCK_TIMEOUT_SECONDS: u64 = 600;

/// Takes the application lock for the session: a version holds it on a
/// connection of its own until after its last commit; SQL Server releases
/// it when the session ends. Returns sp_getapplock's code (0 or 1 when
/// granted).
pub(crate) const SESSION_LOCK: &str = "declare @granted int; \
    exec @granted = sp_getapplock @Resource = N'strata.svc', @LockMode = 'Exclusive', \
    @LockOwner = 'Session', @LockTimeout = 600000; select @granted;";

/// [`SESSION_LOCK`] without waiting: -1 while another session holds it.
pub(crate) const SESSION_LOCK_NOW: &str = "declare @granted int; \
    exec @granted = sp_getapplock @Resource = N'strata.svc', @LockMode = 'Exclusive', \
    @LockOwner = 'Session', @LockTimeout = 0; select @granted;";

/// Who holds the application lock, which carries no name of its own: one
/// row, written by the session that holds the lock right after taking it
/// ([`PUT_LOCK_HOLDER`]), read by a mutation that finds the lock taken
/// ([`LOCK_HOLDER`]), deleted before the lock is released. SQL Server's
/// own table beside the books (`db::books::tables`); its holder text is
/// core's `lock_wait::lease_holder` (64 characters at most).
pub(crate) const LOCK_HOLDER_TABLE: &str = "if object_id(N'svc.svc_lock', N'U') is null \
    create table svc.svc_lock (id int not null primary key, holder nvarchar(64) not null);";

/// Names the lock's holder (`@P1`), from the session holding it.
pub(crate) const PUT_LOCK_HOLDER: &str = "update svc.svc_lock set holder = @P1 where id = 1; \
    if @@rowcount = 0 insert into svc.svc_lock (id, holder) values (1, @P1);";

/// The lock holder's text, while another session holds the lock (no row
/// before its holder has written it, nor in books without the table).
pub(crate) const LOCK_HOLDER: &str =
    "if object_id(N'svc.svc_lock', N'U') is not null select holder from svc.svc_lock where id = 1;";

/// Forgets the lock's holder and releases the session's application lock.
pub(crate) const SESSION_UNLOCK: &str = "if object_id(N'svc.svc_lock', N'U') is not null \
    delete from svc.svc_lock where id = 1; \
    exec sp_releaseapplock @Resource = N'strata.svc', @LockOwner = 'Session';";

/// Takes the application lock serialising start-up DDL across service
/// instances, owned by the transaction; returns sp_getapplock's code
/// (0 or 1 when granted).
pub(crate) const LOCK: &str = "declare @granted int; \
    exec @granted = sp_getapplock @Resource = N'strata.svc', @LockMode = 'Exclusive', \
    @LockOwner = 'Transaction', @LockTimeout = 600000; select @granted;";

/// 1 when everything `db::books::tables::creates` makes in `svc` (the
/// tenant table when `tenants_table`) and [`LOCK_HOLDER_TABLE`] are there —
/// the schema, each table,
/// each added column — else 0: read without a lock, so a start finding
/// nothing missing waits on no running version (the lock [`LOCK`] is taken
/// only to create what is missing).
pub(crate) fn service_objects_present(tenants_table: bool) -> String {
    let mut checks = vec!["schema_id(N'svc') is not null".to_string()];
    let names = tables::tables(tenants_table).map(|table| table.name).chain(["svc_lock"]);
    checks.extend(names.map(|table| format!("object_id(N'svc.{table}', N'U') is not null")));
    checks.extend(
        tables::added()
            .map(|(table, column)| format!("col_length(N'svc.{}', N'{}') is not null", table.name, column.name)),
    );
    format!("select case when {} then 1 else 0 end;", checks.join(" and "))
}

/// 1 when the books have the trace id columns (books of an earlier release
/// read before a read-write start adds them do not), else 0.
pub(crate) const ADDED_COLUMNS_PRESENT: &str = "select case when col_length(N'svc.svc_versions', N'trace_id') \
    is not null and col_length(N'svc.svc_audit', N'trace_id') is not null then 1 else 0 end;";

/// A read written with `{trace_id}` for the trace id column, for books
/// with the trace id columns (`traced`) or without them (null).
pub(crate) fn traced(statement: &str, traced: bool) -> String {
    statement.replace("{trace_id}", if traced { "trace_id" } else { "cast(null as nvarchar(32)) as trace_id" })
}

/// `created` as RFC 3339 UTC (the service writes UTC); a macro, so the
/// statements below stay `const` literals. Style 126 is ISO 8601 with its
/// `T` on SQL Server; Babelfish writes a space there, put back.
macro_rules! created {
    () => {
        "replace(convert(nvarchar(30), created, 126), N' ', N'T') + N'Z'"
    };
}

/// The columns of a migration row, in the order the driver reads.
macro_rules! migration_columns {
    () => {
        concat!("id, name, migration_type, source_dir, filename, contents, checksum, db_schema, ", created!())
    };
}

/// Recorded migrations, as the planner needs them.
pub(crate) const SELECT_APPLIED: &str =
    "select filename, name, db_schema, migration_type, checksum from svc.svc_migrations order by id;";

/// Inserts a version (@P4: its trace id, empty when none: see
/// [`APPEND_AUDIT`] on null parameters) and returns its id.
pub(crate) const INSERT_VERSION: &str = "insert into svc.svc_versions (name, created, request_id, trace_id) \
    output inserted.id values (@P1, convert(datetime2(6), @P2, 127), @P3, nullif(@P4, N''));";

/// Rows per multi-row insert (SQL Server takes 1,000 rows per `values`).
pub(crate) const MIGRATION_ROWS_PER_INSERT: usize = 200;
const _: () = assert!(MIGRATION_ROWS_PER_INSERT <= 1000);

/// The multi-row insert of migration rows, each a `(…)` of its nine values
/// written as literals (core's `quote_string_sqlserver`): one batch, no
/// parameter — through `sp_executesql`, Babelfish read a unit's 180
/// parameters' declarations and values for each unit (500 tenants × 20
/// files: 7.7 s against the floor's 3.6 s; 6.5 s written as literals).
/// `set rowcount 0` first: a file's `SET ROWCOUNT 1` holds for the
/// session and cut the insert to its first row (the other files ran,
/// unrecorded).
pub(crate) fn insert_migrations_written(values: &[String]) -> String {
    format!(
        "set rowcount 0; insert into svc.svc_migrations \
         (name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id) values {};",
        values.join(", ")
    )
}

/// Creates a tenant's schema; the name is bound, quoted by `quotename`.
pub(crate) const CREATE_SCHEMA: &str =
    "declare @statement nvarchar(max) = N'create schema ' + quotename(@P1); exec sp_executesql @statement;";

/// All versions (`{trace_id}`: [`traced`]).
pub(crate) const SELECT_VERSIONS: &str =
    concat!("select id, name, ", created!(), ", request_id, {trace_id} from svc.svc_versions order by id;");

/// Versions in which a file was applied (`{trace_id}`: [`traced`]).
pub(crate) const SELECT_VERSIONS_BY_FILE: &str = concat!(
    "select id, name, ",
    created!(),
    ", request_id, {trace_id} from svc.svc_versions ",
    "where id in (select version_id from svc.svc_migrations where filename = @P1) order by id;"
);

/// One version (`{trace_id}`: [`traced`]).
pub(crate) const SELECT_VERSION: &str =
    concat!("select id, name, ", created!(), ", request_id, {trace_id} from svc.svc_versions where id = @P1;");

/// The migrations of one version.
pub(crate) const SELECT_VERSION_MIGRATIONS: &str =
    concat!("select ", migration_columns!(), " from svc.svc_migrations where version_id = @P1 order by id;");

/// A page of a version's migrations (`MIGRATIONS_PER_PAGE` rows).
pub(crate) const SELECT_MIGRATIONS_PAGE: &str = concat!(
    "select top (1000) ",
    migration_columns!(),
    " from svc.svc_migrations where version_id = @P1 and id > @P2 order by id;"
);

/// One recorded migration.
pub(crate) const SELECT_MIGRATION: &str =
    concat!("select ", migration_columns!(), " from svc.svc_migrations where id = @P1;");

/// Whether the service's tables exist.
pub(crate) const INSTALLED: &str = "select count(*) from sys.tables t join sys.schemas s on s.schema_id = t.schema_id \
    where s.name = N'svc' and t.name = N'svc_migrations';";

/// Quarantines a tenant, or counts one more failure of a quarantined one
/// (the row's place and cause replaced; the request that put it aside
/// kept): @P1 tenant, @P2 version,
/// @P3 file, @P4 line, @P5 column, @P6 cause, @P7 message, @P8 request,
/// @P9 when, @P10 the failures of a new row; -1 for an absent version,
/// line or column (see [`APPEND_AUDIT`] on null parameters). Run outside
/// any transaction, under the version's lock (no other writer of the table).
pub(crate) const QUARANTINE: &str = "update svc.svc_quarantine set version_id = nullif(@P2, -1), [file] = @P3, \
    line = nullif(@P4, -1), col = nullif(@P5, -1), cause = @P6, message = @P7, \
    quarantined = @P9, failures = failures + 1 where tenant = @P1; \
    if @@rowcount = 0 insert into svc.svc_quarantine \
    (tenant, version_id, [file], line, col, cause, message, request_id, quarantined, failures) \
    values (@P1, nullif(@P2, -1), @P3, nullif(@P4, -1), nullif(@P5, -1), @P6, @P7, @P8, @P9, @P10);";

/// The quarantined tenants, by name (none before the books exist: `plan` on
/// a database Strata has not written to yet).
pub(crate) const SELECT_QUARANTINE: &str = "if object_id(N'svc.svc_quarantine', N'U') is not null \
    select tenant, version_id, [file], line, col, cause, message, request_id, quarantined, failures \
    from svc.svc_quarantine order by tenant;";

/// Releases one tenant from quarantine.
pub(crate) const RELEASE_QUARANTINED: &str = "delete from svc.svc_quarantine where tenant = @P1;";

/// Stores a new rollout document (@P2) updated at @P3 as rollout @P1
/// unless that id is taken (no row then; the key range held as in
/// [`APPEND_AUDIT`]). The id column is an identity, so the insert names it
/// under `identity_insert`, on for this statement only.
pub(crate) const INSERT_ROLLOUT: &str = "set identity_insert svc.svc_rollouts on; \
    insert into svc.svc_rollouts (id, doc, updated) select @P1, @P2, @P3 \
    where not exists (select 1 from svc.svc_rollouts with (updlock, holdlock) where id = @P1); \
    set identity_insert svc.svc_rollouts off;";

/// Every rollout, oldest first.
pub(crate) const SELECT_ROLLOUTS: &str = "select id, doc, revision from svc.svc_rollouts order by id;";

/// Replaces rollout @P3's document with @P1 (updated at @P2) if its
/// revision is still @P4: one row, or none when another writer changed it.
pub(crate) const UPDATE_ROLLOUT: &str = "update svc.svc_rollouts set doc = @P1, updated = @P2, \
    revision = revision + 1 where id = @P3 and revision = @P4;";

/// Every API token, by name.
pub(crate) const SELECT_TOKENS: &str =
    "select name, role, hash, created, expires, owner from svc.svc_tokens order by name;";

/// Stores a token (@P1 name, @P2 role, @P3 hash, @P4 created, @P5 expires
/// or -1, @P6 owner or empty) unless the name is taken: no row then (a
/// duplicate key, from a writer racing this one, is read as taken too).
pub(crate) const INSERT_TOKEN: &str = "insert into svc.svc_tokens (name, role, hash, created, expires, owner) \
    select @P1, @P2, @P3, @P4, nullif(@P5, -1), nullif(@P6, N'') \
    where not exists (select 1 from svc.svc_tokens with (updlock, holdlock) where name = @P1);";

/// Removes a token by name.
pub(crate) const DELETE_TOKEN: &str = "delete from svc.svc_tokens where name = @P1;";

/// Removes the record of a file (@P1) in one schema (@P2): a reverted step.
pub(crate) const DELETE_RECORD: &str = "delete from svc.svc_migrations where filename = @P1 and db_schema = @P2;";

/// A repair's new checksum (@P1) of a file (@P2) where it differs.
pub(crate) const UPDATE_CHECKSUM: &str =
    "update svc.svc_migrations set checksum = @P1 where filename = @P2 and checksum <> @P1;";

/// A repair's removal of a deleted file's records (@P1).
pub(crate) const DELETE_MIGRATIONS: &str = "delete from svc.svc_migrations where filename = @P1;";

/// `tenant, shard` of every tenant the shard directory knows (on the home
/// shard).
pub(crate) const SELECT_DIRECTORY: &str =
    "if object_id(N'svc.svc_directory', N'U') is not null select tenant, shard from svc.svc_directory order by tenant;";

/// Says tenant @P1 is on shard @P2 (no `merge`: Babelfish has none).
pub(crate) const PUT_DIRECTORY: &str = "update svc.svc_directory set shard = @P2 where tenant = @P1; \
    if @@rowcount = 0 insert into svc.svc_directory (tenant, shard) values (@P1, @P2);";

/// Forgets tenant @P1's shard.
pub(crate) const DROP_DIRECTORY: &str = "delete from svc.svc_directory where tenant = @P1;";

/// The audit rows written at @P1 or later among the newest @P2 (ids follow
/// each other), oldest first (`{trace_id}`: [`traced`]).
pub(crate) const SELECT_AUDIT: &str = "select id, at, actor, action, target, request_id, outcome, prev, hash, signature, \
    {trace_id} from svc.svc_audit where at >= @P1 and id > (select coalesce(max(id), 0) from svc.svc_audit) - @P2 \
    order by id;";

/// `id, hash` of the newest audit row.
pub(crate) const LAST_AUDIT: &str = "select top (1) id, hash from svc.svc_audit order by id desc;";

/// Appends an audit row (@P1 id … @P10 signature, empty when unsigned, @P11
/// trace id, empty when none)
/// unless its id is taken: no row then. No parameter is ever null: the
/// driver (tiberius) sends a null as TDS's untyped NULLTYPE, which
/// Babelfish refuses ("Data type 0x1F is unknown"), so absence travels as
/// a value `nullif` turns back into null. The key range is held (`updlock, holdlock`) so two writers
/// cannot both find the id free; an engine that ignores the hints
/// (Babelfish) answers the second with a duplicate key (2627), read as
/// taken too.
pub(crate) const APPEND_AUDIT: &str = "insert into svc.svc_audit \
    (id, at, actor, action, target, request_id, outcome, prev, hash, signature, trace_id) \
    select @P1, @P2, @P3, @P4, @P5, @P6, @P7, @P8, @P9, nullif(@P10, N''), nullif(@P11, N'') \
    where not exists (select 1 from svc.svc_audit with (updlock, holdlock) where id = @P1);";

/// Other sessions with an open transaction, oldest request first: id,
/// login, status, open transactions, seconds since their last request,
/// and their command (`sys.sysprocesses`: SQL Server's command type,
/// Babelfish's statement text). `open_transaction_count` is SQL Server
/// 2012's (and Babelfish's, whose `sysprocesses.open_tran` stays 0); on
/// 2008 R2 the query fails and the blocker goes unnamed.
pub(crate) const BLOCKERS: &str = "select top (10) cast(s.session_id as nvarchar(20)), s.login_name, s.status, \
    cast(s.open_transaction_count as nvarchar(10)), \
    cast(datediff(second, s.last_request_start_time, getdate()) as nvarchar(20)), \
    coalesce((select top (1) left(rtrim(p.cmd), 200) from sys.sysprocesses p where p.spid = s.session_id), N'') \
    from sys.dm_exec_sessions s \
    where s.session_id <> @@spid and s.open_transaction_count > 0 order by s.last_request_start_time;";

/// `SET LOCK_TIMEOUT` in milliseconds (-1: wait forever). An integer the
/// service computed, never text from outside.
pub(crate) fn set_lock_timeout(ms: i64) -> String {
    format!("set lock_timeout {ms}")
}

/// Fingerprints stored per statement: four parameters each, under the
/// 2,100 a request may carry.
pub(crate) const FINGERPRINTS_PER_STATEMENT: usize = 250;
const _: () = assert!(FINGERPRINTS_PER_STATEMENT * 4 <= 2_100 && SCHEMAS_PER_CATALOG_READ <= 2_100);

/// Stores the fingerprints of `rows` schemas (per row: schema,
/// fingerprint, recorded, version id), replacing what each had, in one
/// transaction (SQL Server 2008 R2 has `merge`, Babelfish not).
pub(crate) fn store_fingerprints(rows: usize) -> String {
    let schemas: Vec<String> = (0..rows).map(|row| format!("@P{}", row * 4 + 1)).collect();
    let values: Vec<String> = (0..rows)
        .map(|row| {
            let p = row * 4;
            format!("(@P{}, @P{}, @P{}, @P{})", p + 1, p + 2, p + 3, p + 4)
        })
        .collect();
    format!(
        "set xact_abort on; begin transaction; \
         delete from svc.svc_fingerprints where db_schema in ({}); \
         insert into svc.svc_fingerprints (db_schema, fingerprint, recorded, version_id) values {}; \
         commit transaction;",
        schemas.join(", "),
        values.join(", ")
    )
}

/// The columns of a backfill's row as `Books::backfills` reads them.
const BACKFILL_COLUMNS: &str = "db_schema, [file], state, after_key, upper_key, rows_done, batches, \
    rows_estimated, last_error, updated, running_ms";

/// 1 when `svc.svc_backfills` exists (books of an earlier release).
pub(crate) const BACKFILLS_INSTALLED: &str =
    "select case when object_id(N'svc.svc_backfills', N'U') is null then 0 else 1 end;";

/// Every backfill's row ([`BACKFILL_COLUMNS`]), by schema and file.
pub(crate) fn select_backfills() -> String {
    format!("select {BACKFILL_COLUMNS} from svc.svc_backfills order by db_schema, [file];")
}

/// The running backfills of file @P2 version @P1 started
/// ([`BACKFILL_COLUMNS`]).
pub(crate) fn select_running_backfills_of() -> String {
    format!(
        "select {BACKFILL_COLUMNS} from svc.svc_backfills where state = 'running' \
         and coalesce(started_version, version_id) = @P1 \
         and [file] = @P2 order by db_schema;"
    )
}

/// One backfill as a runner takes it ([`BACKFILL_COLUMNS`], then
/// `version_id, name, source_dir, migration_type, contents, checksum,
/// forward, failure_budget`, its started version): of schema @P1 and file @P2, or (`running`) every running one.
pub(crate) fn select_backfill_jobs(running: bool) -> String {
    let filter = match running {
        true => "where state = 'running' order by db_schema, [file]",
        false => "where db_schema = @P1 and [file] = @P2",
    };
    format!(
        "select {BACKFILL_COLUMNS}, version_id, name, source_dir, migration_type, contents, checksum, forward, \
         failure_budget, coalesce(started_version, version_id) from svc.svc_backfills {filter};"
    )
}

/// Starts a backfill: schema @P1, file @P2, updated @P3, version @P4,
/// name @P5, source dir @P6, migration type @P7, contents @P8, checksum
/// @P9, forward @P10, failure budget @P11.
pub(crate) const REGISTER_BACKFILL: &str = "insert into svc.svc_backfills (db_schema, [file], state, rows_done, \
    batches, rows_estimated, updated, version_id, name, source_dir, migration_type, contents, checksum, forward, \
    failure_budget) values (@P1, @P2, 'running', 0, 0, 0, @P3, @P4, @P5, @P6, @P7, @P8, @P9, @P10, @P11);";

/// How many of the backfills of file @P2 version @P1 started (a retry's
/// among them) are in each state (`state, count`).
pub(crate) const TALLY_BACKFILLS: &str = "select state, count(*) from svc.svc_backfills \
    where coalesce(started_version, version_id) = @P1 and [file] = @P2 group by state;";

/// Each holder's count of running backfills claimed with a heartbeat at or
/// after @P1 (`holder, count`).
pub(crate) const BACKFILL_RUNNERS: &str = "select holder, count(*) from svc.svc_backfills where state = 'running' \
    and holder is not null and heartbeat >= @P1 group by holder;";

/// Opens a background runner's claim of a backfill: a transaction, then
/// [`CLAIMS_LOCK`], [`BACKFILL_RUNNERS`], [`CLAIM_BACKFILL`] and [`COMMIT`]
/// or [`ROLLBACK`].
pub(crate) const BEGIN_CLAIM: &str = "set xact_abort on; begin transaction;";

/// The claims' application lock, held by the transaction until it ends: one
/// claim at a time on the server, so the runners it reads next count every
/// claim committed before it. Returns sp_getapplock's code (0 or 1 when
/// granted).
pub(crate) const CLAIMS_LOCK: &str = "declare @granted int; \
    exec @granted = sp_getapplock @Resource = N'strata.backfill_claims', @LockMode = 'Exclusive', \
    @LockOwner = 'Transaction', @LockTimeout = 60000; select @granted;";

/// The name of [`CLAIMS_LOCK`]'s lock, and how long a claim waits for it.
pub(crate) const CLAIMS_LOCK_RESOURCE: (&str, u64) = ("strata.backfill_claims", 60);

/// Deletes the backfill of file @P2 in schema @P1 (its file was reverted),
/// where the books have the table.
pub(crate) const FORGET_BACKFILL: &str = "if object_id(N'svc.svc_backfills', N'U') is not null \
    delete from svc.svc_backfills where db_schema = @P1 and [file] = @P2;";

/// Starts a failed or cancelled backfill again in version @P1, keeping
/// the version that started it and its failure budget (updated @P2;
/// schema @P3, file @P4).
pub(crate) const RESTART_BACKFILL: &str = "update svc.svc_backfills \
    set started_version = coalesce(started_version, version_id), state = 'running', version_id = @P1, \
    last_error = null, holder = null, updated = @P2 where db_schema = @P3 and [file] = @P4 \
    and state in ('failed', 'cancelled');";

/// Claims a running backfill for holder @P1 at @P2 (schema @P3, file @P4)
/// when no other holds it or its holder's heartbeat is before @P5.
pub(crate) const CLAIM_BACKFILL: &str = "update svc.svc_backfills set holder = @P1, heartbeat = @P2 \
    where db_schema = @P3 and [file] = @P4 and state = 'running' \
    and (holder is null or holder = @P1 or heartbeat < @P5);";

/// Writes a batch's checkpoint: state @P1, after @P2 and upper @P3 (empty:
/// none), rows done @P4, batches @P5, rows estimated @P6, running ms @P7,
/// updated @P8, heartbeat @P9 — when holder @P12 still holds schema @P10's
/// file @P11 and its batches are still @P13.
pub(crate) const SAVE_BACKFILL: &str = "update svc.svc_backfills set state = @P1, after_key = nullif(@P2, N''), \
    upper_key = nullif(@P3, N''), rows_done = @P4, batches = @P5, rows_estimated = @P6, running_ms = @P7, \
    last_error = null, updated = @P8, heartbeat = @P9 \
    where db_schema = @P10 and [file] = @P11 and holder = @P12 and batches = @P13 and state = 'running';";

/// Marks a backfill failed with error @P1 at @P2 (schema @P3, file @P4)
/// when holder @P5 holds it.
pub(crate) const FAIL_BACKFILL: &str = "update svc.svc_backfills set state = 'failed', last_error = @P1, \
    updated = @P2, holder = null where db_schema = @P3 and [file] = @P4 and holder = @P5;";

/// Moves schema @P3's file @P4 from state @P5 to @P1 (updated @P2).
pub(crate) const MOVE_BACKFILL: &str = "update svc.svc_backfills set state = @P1, updated = @P2 \
    where db_schema = @P3 and [file] = @P4 and state = @P5;";

/// The stored fingerprints: schema, fingerprint, recorded.
pub(crate) const SELECT_FINGERPRINTS: &str = "select db_schema, fingerprint, recorded from svc.svc_fingerprints;";

/// The live catalogs of the schemas `$schemas` stands for (fleet drift,
/// fingerprints): one row `(schema, kind, name, definition)` per relation,
/// column, index and each of its key columns, check, foreign key and each
/// of its column pairs, view, trigger, routine and type (core's
/// `fingerprint` compares them). Names the server makes up are not
/// compared: an unnamed primary key or unique constraint is its kind and
/// index number (`PK__items__3213E83F…` on SQL Server), an unnamed check
/// its definition, an unnamed foreign key its target, a default constraint
/// (`DF__…`, Babelfish's `DF_items_19659`) only its definition. A key's
/// columns are rows of their own (SQL Server 2008 R2 has no `string_agg`).
const CATALOGS: &str = "\
select schema_name(o.schema_id) as db_schema, 'relation' as kind, o.name as name, rtrim(o.type) as definition \
from sys.objects o where o.schema_id in $schemas and o.type in ('U', 'V', 'SO') \
union all \
select schema_name(t.schema_id) as db_schema, 'column', t.name + '.' + c.name, \
  ty.name \
  + case when ty.name in ('varchar', 'char', 'varbinary', 'binary') then '(' + case when c.max_length = -1 then 'max' else cast(c.max_length as nvarchar(10)) end + ')' \
         when ty.name in ('nvarchar', 'nchar') then '(' + case when c.max_length = -1 then 'max' else cast(c.max_length / 2 as nvarchar(10)) end + ')' \
         when ty.name in ('decimal', 'numeric') then '(' + cast(c.precision as nvarchar(10)) + ', ' + cast(c.scale as nvarchar(10)) + ')' \
         when ty.name in ('datetime2', 'time', 'datetimeoffset') then '(' + cast(c.scale as nvarchar(10)) + ')' \
         else '' end \
  + case when c.is_nullable = 0 then ' not null' else '' end \
  + case when c.is_identity = 1 then ' identity' else '' end \
  + case when c.is_computed = 1 then ' as ' + coalesce((select top (1) cc.definition from sys.computed_columns cc \
    where cc.object_id = c.object_id and cc.column_id = c.column_id), '') else '' end \
  + case when c.default_object_id = 0 then '' else coalesce(' default ' + (select top (1) dc.definition \
    from sys.default_constraints dc where dc.object_id = c.default_object_id), '') end \
from sys.columns c join sys.objects t on t.object_id = c.object_id \
join sys.types ty on ty.user_type_id = c.user_type_id \
where t.schema_id in $schemas and t.type in ('U', 'V') \
union all \
select schema_name(t.schema_id) as db_schema, 'index', t.name + '.' + case when kc.is_system_named = 1 then lower(kc.type_desc) + ' ' + cast(i.index_id as nvarchar(10)) else i.name end, \
  case when i.is_primary_key = 1 then 'primary key ' when i.is_unique_constraint = 1 then 'unique constraint ' when i.is_unique = 1 then 'unique ' else '' end \
  + lower(i.type_desc) + coalesce(' where ' + i.filter_definition, '') \
from sys.indexes i join sys.objects t on t.object_id = i.object_id \
left join sys.key_constraints kc on kc.parent_object_id = i.object_id and kc.unique_index_id = i.index_id \
where t.schema_id in $schemas and t.type in ('U', 'V') and i.type > 0 \
union all \
select schema_name(t.schema_id) as db_schema, 'index column', t.name + '.' + case when kc.is_system_named = 1 then lower(kc.type_desc) + ' ' + cast(i.index_id as nvarchar(10)) else i.name end + '.' + cast(ic.key_ordinal as nvarchar(10)) + '.' + cast(ic.index_column_id as nvarchar(10)), \
  c.name + case when ic.is_descending_key = 1 then ' desc' else '' end + case when ic.is_included_column = 1 then ' included' else '' end \
from sys.index_columns ic join sys.indexes i on i.object_id = ic.object_id and i.index_id = ic.index_id \
join sys.columns c on c.object_id = ic.object_id and c.column_id = ic.column_id \
join sys.objects t on t.object_id = i.object_id \
left join sys.key_constraints kc on kc.parent_object_id = i.object_id and kc.unique_index_id = i.index_id \
where t.schema_id in $schemas and t.type in ('U', 'V') \
union all \
select schema_name(t.schema_id) as db_schema, 'constraint', t.name + '.' + case when k.is_system_named = 1 then 'check ' + k.definition else k.name end, 'check ' + k.definition \
from sys.check_constraints k join sys.objects t on t.object_id = k.parent_object_id \
where t.schema_id in $schemas \
union all \
select schema_name(t.schema_id) as db_schema, 'foreign key', t.name + '.' + case when f.is_system_named = 1 then 'references ' + schema_name(rt.schema_id) + '.' + rt.name else f.name end, \
  'references ' + schema_name(rt.schema_id) + '.' + rt.name + ' on delete ' + lower(f.delete_referential_action_desc) + ' on update ' + lower(f.update_referential_action_desc) \
from sys.foreign_keys f join sys.objects t on t.object_id = f.parent_object_id \
join sys.objects rt on rt.object_id = f.referenced_object_id \
where t.schema_id in $schemas \
union all \
select schema_name(t.schema_id) as db_schema, 'foreign key column', t.name + '.' + case when f.is_system_named = 1 then 'references ' + schema_name(rt.schema_id) + '.' + rt.name else f.name end + '.' + cast(fc.constraint_column_id as nvarchar(10)), \
  pc.name + ' -> ' + rc.name \
from sys.foreign_key_columns fc join sys.foreign_keys f on f.object_id = fc.constraint_object_id \
join sys.objects t on t.object_id = f.parent_object_id \
join sys.objects rt on rt.object_id = f.referenced_object_id \
join sys.columns pc on pc.object_id = fc.parent_object_id and pc.column_id = fc.parent_column_id \
join sys.columns rc on rc.object_id = fc.referenced_object_id and rc.column_id = fc.referenced_column_id \
where t.schema_id in $schemas \
union all \
select schema_name(o.schema_id) as db_schema, case o.type when 'V' then 'view' when 'TR' then 'trigger' else 'routine' end, \
  coalesce(p.name + '.', '') + o.name, coalesce(m.definition, '') \
from sys.objects o join sys.sql_modules m on m.object_id = o.object_id \
left join sys.objects p on p.object_id = o.parent_object_id \
where o.schema_id in $schemas and o.type in ('V', 'TR', 'P', 'FN', 'IF', 'TF') \
union all \
select schema_name(ty.schema_id) as db_schema, 'type', ty.name, bt.name \
from sys.types ty join sys.types bt on bt.user_type_id = ty.system_type_id \
where ty.schema_id in $schemas and ty.is_user_defined = 1";

/// An index's name as T-SQL names it: Babelfish shows a name made unique
/// per schema (the table's name and 32 hex digits added), which its
/// `DROP INDEX` does not take.
const INDEX_NAME: &str = "case when i.name like '%' + t.name + replicate('[0-9a-f]', 32) \
    then left(i.name, len(i.name) - len(t.name) - 32) else i.name end";

/// A key constraint's index (joined by name: Babelfish's
/// `unique_index_id` is not the index's `index_id`).
const KEY_OF_INDEX: &str = "left join sys.key_constraints kc on kc.parent_object_id = i.object_id and kc.name = i.name";

/// A foreign key's name as desired state compares it: the server's made-up
/// one replaced by its target and first column.
const FOREIGN_KEY_NAME: &str = "case when f.is_system_named = 1 then 'references ' + rt.name + ' ' + \
    (select pc.name from sys.foreign_key_columns fc join sys.columns pc on pc.object_id = fc.parent_object_id \
    and pc.column_id = fc.parent_column_id where fc.constraint_object_id = f.object_id and fc.constraint_column_id = 1) \
    else f.name end";

/// The catalogs desired state plans from (core's `desired::sqlserver`
/// reads them), of the schemas `$schemas` stands for: one row `(schema,
/// kind, name, definition, position)` per table and view, column (its
/// type, identity, nullability or computation), column in order, default,
/// index or key constraint (its kind, name and filter) and each of its
/// columns, check, foreign key and each of its column pairs, view,
/// routine and trigger (its own text), and type; ordered so each table's
/// columns come in order. Names the server makes up are replaced as in
/// [`CATALOGS`]; sequences (Babelfish's identity columns own one) are not
/// read.
const DESIRED_CATALOGS: &str = "\
select schema_name(o.schema_id) as db_schema, 'relation' as kind, o.name as name, \
  case o.type when 'U' then 'table' else 'view' end as definition, 0 as position \
from sys.objects o where o.schema_id in $schemas and o.type in ('U', 'V') \
union all \
select schema_name(t.schema_id), 'column', t.name + '.' + c.name, \
  case when c.is_computed = 1 then 'as ' + coalesce((select top (1) cc.definition + case when cc.is_persisted = 1 \
    then ' persisted' else '' end from sys.computed_columns cc where cc.object_id = c.object_id \
    and cc.column_id = c.column_id), '') \
  else ty.name \
  + case when ty.name in ('varchar', 'char', 'varbinary', 'binary') then '(' + case when c.max_length = -1 then 'max' else cast(c.max_length as nvarchar(10)) end + ')' \
         when ty.name in ('nvarchar', 'nchar') then '(' + case when c.max_length = -1 then 'max' else cast(c.max_length / 2 as nvarchar(10)) end + ')' \
         when ty.name in ('decimal', 'numeric') then '(' + cast(c.precision as nvarchar(10)) + ', ' + cast(c.scale as nvarchar(10)) + ')' \
         when ty.name in ('datetime2', 'time', 'datetimeoffset') then '(' + cast(c.scale as nvarchar(10)) + ')' \
         else '' end \
  + case when c.is_identity = 1 then ' identity(' + coalesce((select top (1) cast(ic.seed_value as nvarchar(40)) + ', ' \
    + cast(ic.increment_value as nvarchar(40)) from sys.identity_columns ic where ic.object_id = c.object_id \
    and ic.column_id = c.column_id), '1, 1') + ')' else '' end \
  + case when c.is_nullable = 0 then ' not null' else ' null' end end, 0 \
from sys.columns c join sys.objects t on t.object_id = c.object_id \
join sys.types ty on ty.user_type_id = c.user_type_id \
where t.schema_id in $schemas and t.type = 'U' \
union all \
select schema_name(t.schema_id), 'column order', t.name, c.name, c.column_id \
from sys.columns c join sys.objects t on t.object_id = c.object_id where t.schema_id in $schemas and t.type = 'U' \
union all \
select schema_name(t.schema_id), 'default', t.name + '.' + c.name, dc.definition, 0 \
from sys.default_constraints dc join sys.objects t on t.object_id = dc.parent_object_id \
join sys.columns c on c.object_id = dc.parent_object_id and c.column_id = dc.parent_column_id \
where t.schema_id in $schemas \
union all \
select schema_name(t.schema_id), 'index', t.name + '.' + $index, \
  case when i.is_primary_key = 1 then 'primary key ' when i.is_unique_constraint = 1 then 'unique ' when i.is_unique = 1 then 'unique ' else '' end \
  + lower(i.type_desc) + case when i.is_primary_key = 1 or i.is_unique_constraint = 1 then '' else ' index' end \
  + case when i.is_primary_key = 1 and kc.is_system_named = 0 then ' named ' + quotename(i.name) else '' end \
  + coalesce(' where ' + i.filter_definition, ''), 0 \
from sys.indexes i join sys.objects t on t.object_id = i.object_id $key_of_index \
where t.schema_id in $schemas and t.type = 'U' and i.type > 0 \
union all \
select schema_name(t.schema_id), 'index column', t.name + '.' + $index + '.' \
  + case when ic.is_included_column = 1 then 'i' + right('000' + cast(ic.index_column_id as nvarchar(10)), 3) \
    else 'k' + right('000' + cast(ic.key_ordinal as nvarchar(10)), 3) end, \
  quotename(c.name) + case when ic.is_descending_key = 1 then ' desc' else '' end, 0 \
from sys.index_columns ic join sys.indexes i on i.object_id = ic.object_id and i.index_id = ic.index_id \
join sys.columns c on c.object_id = ic.object_id and c.column_id = ic.column_id \
join sys.objects t on t.object_id = i.object_id $key_of_index \
where t.schema_id in $schemas and t.type = 'U' \
union all \
select schema_name(t.schema_id), 'check', t.name + '.' + case when k.is_system_named = 1 then 'check ' + k.definition else k.name end, k.definition, 0 \
from sys.check_constraints k join sys.objects t on t.object_id = k.parent_object_id \
where t.schema_id in $schemas \
union all \
select schema_name(t.schema_id), 'foreign key', t.name + '.' + $foreign_key, \
  'references ' + quotename(schema_name(rt.schema_id)) + '.' + quotename(rt.name) + ' on delete ' \
  + replace(lower(f.delete_referential_action_desc), '_', ' ') + ' on update ' + replace(lower(f.update_referential_action_desc), '_', ' '), 0 \
from sys.foreign_keys f join sys.objects t on t.object_id = f.parent_object_id \
join sys.objects rt on rt.object_id = f.referenced_object_id \
where t.schema_id in $schemas \
union all \
select schema_name(t.schema_id), 'foreign key column', t.name + '.' + $foreign_key + '.' \
  + right('000' + cast(fc.constraint_column_id as nvarchar(10)), 3), quotename(pc.name) + ' -> ' + quotename(rc.name), 0 \
from sys.foreign_key_columns fc join sys.foreign_keys f on f.object_id = fc.constraint_object_id \
join sys.objects t on t.object_id = f.parent_object_id \
join sys.objects rt on rt.object_id = f.referenced_object_id \
join sys.columns pc on pc.object_id = fc.parent_object_id and pc.column_id = fc.parent_column_id \
join sys.columns rc on rc.object_id = fc.referenced_object_id and rc.column_id = fc.referenced_column_id \
where t.schema_id in $schemas \
union all \
select schema_name(o.schema_id), case o.type when 'V' then 'view' when 'TR' then 'trigger' else 'routine' end, \
  o.name, coalesce(m.definition, ''), 0 \
from sys.objects o join sys.sql_modules m on m.object_id = o.object_id \
where o.schema_id in $schemas and o.type in ('V', 'TR', 'P', 'FN', 'IF', 'TF') \
union all \
select schema_name(ty.schema_id), 'type', ty.name, bt.name, 0 \
from sys.types ty join sys.types bt on bt.user_type_id = ty.system_type_id \
where ty.schema_id in $schemas and ty.is_user_defined = 1 \
order by 1, 2, 3, 5";

/// [`DESIRED_CATALOGS`] of `schemas` schemas, named by `@P1`… `@Pn`
/// (a column's computation and identity read by subqueries, as
/// [`CATALOGS`] reads its default; the first row of each, as Babelfish's
/// `sys.identity_columns` lists a column more than once).
pub(crate) fn desired_catalogs(schemas: usize) -> String {
    DESIRED_CATALOGS
        .replace("$schemas", &schema_ids(schemas))
        .replace("$key_of_index", KEY_OF_INDEX)
        .replace("$foreign_key", FOREIGN_KEY_NAME)
        .replace(
            "$index",
            &format!(
                "case when i.is_primary_key = 1 then 'primary key' when i.is_unique_constraint = 1 \
                 and kc.is_system_named = 1 then 'unique ' + cast(i.index_id as nvarchar(10)) else {INDEX_NAME} end"
            ),
        )
}

/// Creates the scratch schema a desired file is applied into, inside the
/// transaction that is then rolled back (`create schema` alone in its
/// batch: through `exec`).
pub(crate) fn create_scratch_schema(scratch: &str) -> String {
    format!("exec(N'create schema {}');", scratch.replace('\'', "''"))
}

/// The most schemas one catalog read names (one parameter each).
pub(crate) const SCHEMAS_PER_CATALOG_READ: usize = 500;

/// [`CATALOGS`] of `schemas` schemas, named by `@P1`… `@Pn`: one statement
/// for many, as its plan is the cost (Babelfish plans the `sys` views for
/// seconds, then reads a schema's rows in milliseconds). A column's
/// default and computation are read by subqueries: joined to `sys.types`
/// and `sys.default_constraints` at once, Babelfish planned 200 schemas
/// just migrated (their statistics not analysed yet) into 76 s, against
/// 1.1 s so.
pub(crate) fn catalogs(schemas: usize) -> String {
    CATALOGS.replace("$schemas", &schema_ids(schemas))
}

/// The ids of the schemas named `@P1`… `@Pn`, as a subquery: read from
/// `sys.schemas` once, where `schema_id(@Pn)` for each was called for every
/// row of every view (200 schemas: 22.6 s on Babelfish, against 6.6 s).
fn schema_ids(schemas: usize) -> String {
    let names: Vec<String> = (1..=schemas).map(|p| format!("@P{p}")).collect();
    format!("(select s.schema_id from sys.schemas s where s.name in ({}))", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement of the driver, for the checks below.
    fn all_statements() -> Vec<String> {
        let mut all: Vec<String> = tables::creates(Driver::SqlServer, true);
        all.push(ADDED_COLUMNS_PRESENT.to_string());
        for statement in [SELECT_VERSIONS, SELECT_VERSIONS_BY_FILE, SELECT_VERSION, SELECT_AUDIT] {
            all.extend([traced(statement, true), traced(statement, false)]);
        }
        all.extend(
            [
                BEGIN,
                COMMIT,
                ROLLBACK,
                LOCK,
                SESSION_LOCK,
                SESSION_LOCK_NOW,
                SESSION_UNLOCK,
                LOCK_HOLDER_TABLE,
                PUT_LOCK_HOLDER,
                LOCK_HOLDER,
                SELECT_APPLIED,
                INSERT_VERSION,
                CREATE_SCHEMA,
                SELECT_VERSIONS,
                BLOCKERS,
                QUARANTINE,
                SELECT_QUARANTINE,
                RELEASE_QUARANTINED,
                SELECT_AUDIT,
                DELETE_RECORD,
                UPDATE_CHECKSUM,
                DELETE_MIGRATIONS,
                INSERT_ROLLOUT,
                BACKFILLS_INSTALLED,
                REGISTER_BACKFILL,
                RESTART_BACKFILL,
                CLAIM_BACKFILL,
                SAVE_BACKFILL,
                FAIL_BACKFILL,
                MOVE_BACKFILL,
                SELECT_ROLLOUTS,
                UPDATE_ROLLOUT,
                SELECT_TOKENS,
                INSERT_TOKEN,
                DELETE_TOKEN,
                LAST_AUDIT,
                APPEND_AUDIT,
                SELECT_VERSIONS_BY_FILE,
                SELECT_VERSION,
                SELECT_VERSION_MIGRATIONS,
                SELECT_MIGRATION,
                SELECT_MIGRATIONS_PAGE,
                INSTALLED,
                SELECT_FINGERPRINTS,
                SELECT_DIRECTORY,
                PUT_DIRECTORY,
                DROP_DIRECTORY,
            ]
            .map(str::to_string),
        );
        all.push(insert_migrations_written(&["(1)".to_string(), "(2)".to_string()]));
        all.push(store_fingerprints(2));
        all.push(catalogs(2));
        all.extend([select_backfills(), select_backfill_jobs(true), select_backfill_jobs(false)]);
        all.push(desired_catalogs(2));
        all
    }

    #[test]
    fn uses_no_syntax_newer_than_2008_r2() {
        let newer = [
            "drop table if exists",
            "drop schema if exists",
            "create table if not exists",
            "iif(",
            "format(",
            "throw",
            "try_convert",
            "try_cast",
            "string_agg",
            "concat_ws",
            " offset ",
            "fetch next",
            "sequence",
            "create or alter",
            "json",
        ];
        for statement in all_statements() {
            let lower = statement.to_lowercase();
            for token in &newer {
                assert!(!lower.contains(token), "{token:?} in {statement}");
            }
        }
    }

    #[test]
    fn the_presence_check_names_the_schema_every_table_and_every_added_column() {
        let creates = tables::creates(Driver::SqlServer, true);
        let check = service_objects_present(true);
        let tables = creates.iter().filter(|s| s.contains("create table svc.")).count();
        let added = creates.iter().filter(|s| s.contains(" add ")).count();
        assert_eq!((tables, added), (10, 6));
        assert_eq!(check.matches("object_id(N'svc.").count(), tables + 1, "{check}");
        assert!(check.contains("object_id(N'svc.svc_lock', N'U') is not null"), "{check}");
        assert_eq!(check.matches("col_length(N'svc.").count(), added, "{check}");
        for name in ["schema_id(N'svc') is not null", "object_id(N'svc.svc_tenants', N'U') is not null"] {
            assert!(check.contains(name), "{name}: {check}");
        }
        assert!(check.contains("col_length(N'svc.svc_backfills', N'started_version') is not null"), "{check}");
        assert!(check.starts_with("select case when ") && check.ends_with(" then 1 else 0 end;"), "{check}");
        assert!(!service_objects_present(false).contains("svc_tenants"));
    }

    #[test]
    fn identifiers_reach_ddl_only_through_quotename() {
        assert!(CREATE_SCHEMA.contains("quotename(@P1)"));
        assert!(CREATE_SCHEMA.contains("sp_executesql"));
        assert!(LOCK.contains("@LockOwner = 'Transaction'"));
    }

    #[test]
    fn both_locks_name_the_resource_and_the_timeout_the_errors_report() {
        for statement in [LOCK, SESSION_LOCK] {
            assert!(statement.contains(&format!("@Resource = N'{LOCK_RESOURCE}'")), "{statement}");
            assert!(statement.contains(&format!("@LockTimeout = {}", LOCK_TIMEOUT_SECONDS * 1000)), "{statement}");
        }
        assert!(SESSION_UNLOCK.contains(&format!("@Resource = N'{LOCK_RESOURCE}'")));
    }

    #[test]
    fn fingerprints_replace_each_schemas_row_in_one_transaction_within_limits() {
        let two = store_fingerprints(2);
        assert!(two.contains("where db_schema in (@P1, @P5);"), "{two}");
        assert!(two.contains("values (@P1, @P2, @P3, @P4), (@P5, @P6, @P7, @P8);"), "{two}");
        assert!(two.starts_with("set xact_abort on; begin transaction;") && two.ends_with("commit transaction;"));
        assert!(
            store_fingerprints(FINGERPRINTS_PER_STATEMENT).contains(&format!("@P{})", FINGERPRINTS_PER_STATEMENT * 4))
        );
    }

    #[test]
    fn a_units_rows_go_in_one_multi_row_insert() {
        assert_eq!(
            insert_migrations_written(&["(N'a', 1)".to_string(), "(N'b', 2)".to_string()]).split("values ").nth(1),
            Some("(N'a', 1), (N'b', 2);")
        );
    }
}
