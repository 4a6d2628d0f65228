//! The per-dialect primitives ([`Engine`]) the executor and the store are
//! written over, and how a statement's failure is reported ([`Failure`]).
//! A driver implements primitives only; each dialect's SQL lives in its
//! own `sql.rs`.

pub(crate) mod bound;

use async_trait::async_trait;
use strata_core::migrate::backfill::{Key, KeyValue};
use strata_core::migrate::citus::FilePlacement;
use strata_core::migrate::config::Config;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::fingerprint::{self, CatalogObject};
use strata_core::migrate::lock_wait::Timeouts;

use strata_core::migrate::statements;

use crate::db::books::Books;
use crate::db::error::OpenError;
use crate::db::error::{Cause, DbError, cause_of};

/// How a statement failed, as the engine said it.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    /// The engine's message, without its internal source location.
    pub(crate) message: String,
    /// 1-based character offset of the error in the executed text, when the
    /// engine reports one (PostgreSQL).
    pub(crate) offset: Option<usize>,
    /// 1-based line of the error in the executed text, when the engine
    /// reports a line but no offset (SQL Server).
    pub(crate) line: Option<u64>,
    /// The file, or the database under it.
    pub(crate) cause: Cause,
}

impl Failure {
    /// A statement's failure of the service's own making, without a
    /// position: `message` says what.
    pub(crate) fn statement(message: String) -> Self {
        Failure { message, offset: None, line: None, cause: Cause::Statement }
    }

    /// A failure of the service's own work before a statement (an
    /// attachment, its books), reported where a statement's would be.
    pub(crate) fn of_books(error: &DbError) -> Self {
        Failure::statement(error.to_string())
    }

    /// A failure as sqlx reports it: the database's own message (without
    /// sqlx's prefix), no position.
    pub(crate) fn from_sqlx(error: &sqlx::Error) -> Self {
        let message = error.as_database_error().map_or_else(|| error.to_string(), |d| d.message().to_string());
        Failure { message, offset: None, line: None, cause: cause_of(error) }
    }

    /// This failure, placed at the statement starting at byte `start` of
    /// the executed `text` — or, when the engine counted lines within the
    /// statement (`line_within`, from 1), at the start of that line.
    pub(crate) fn in_statement(mut self, text: &str, start: usize, line_within: Option<u64>) -> Self {
        let start = match line_within.filter(|&line| line > 1) {
            Some(line) => text[start..]
                .match_indices('\n')
                .nth(line as usize - 2)
                .map_or(start, |(newline, _)| start + newline + 1),
            None => start,
        };
        self.offset = Some(text[..start].chars().count() + 1);
        self
    }
}

/// The statements of a file to run one at a time, as byte ranges of
/// `text`: engines that report no error position run them so the failing
/// one is known. The whole text when the tokenizer cannot read it.
pub(crate) fn statements_of(driver: Driver, text: &str) -> Vec<std::ops::Range<usize>> {
    statements::split(driver, text).unwrap_or_else(|| std::iter::once(0..text.len()).collect())
}

/// A connection from `pool`. When the pool times out, one connection
/// outside it tells why: the server does not answer ([`OpenError::Connect`],
/// with its reason: a stopped server is unreachable, not busy), or it does
/// and every connection was taken ([`ServerError::PoolExhausted`]).
pub(crate) async fn acquire<DB: sqlx::Database>(
    pool: &sqlx::Pool<DB>,
) -> Result<sqlx::pool::PoolConnection<DB>, DbError> {
    use sqlx::Connection;
    match pool.acquire().await {
        Err(sqlx::Error::PoolTimedOut) => {
            let _ = connect_once::<DB>(&pool.connect_options()).await?.close().await;
            Err(sqlx::Error::PoolTimedOut.into())
        }
        acquired => Ok(acquired?),
    }
}

/// A pool on `options` whose first connection is made outside it, once: a
/// server that cannot be reached says why (connection refused, unknown
/// host, TLS, authentication) at once, where the pool would retry for its
/// acquire time-out and say only that it timed out.
pub(crate) async fn open_pool<DB: sqlx::Database>(
    pool: sqlx::pool::PoolOptions<DB>,
    options: <DB::Connection as sqlx::Connection>::Options,
) -> Result<sqlx::Pool<DB>, DbError> {
    use sqlx::Connection;
    let _ = connect_once::<DB>(&options).await?.close().await;
    pool.connect_with(options).await.map_err(|e| DbError::Open(OpenError::Connect(super::error::describe(&e))))
}

/// One connection on `options`, within [`super::types::CONNECT_TIMEOUT`];
/// its failure as [`OpenError::Connect`] with the reason.
async fn connect_once<DB: sqlx::Database>(
    options: &<DB::Connection as sqlx::Connection>::Options,
) -> Result<DB::Connection, DbError> {
    use sqlx::Connection;
    match tokio::time::timeout(super::types::CONNECT_TIMEOUT, DB::Connection::connect_with(options)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(error)) => Err(DbError::Open(OpenError::Connect(super::error::describe(&error)))),
        Err(_) => Err(DbError::Open(OpenError::Connect(format!(
            "no answer from the database within {} s",
            super::types::CONNECT_TIMEOUT.as_secs()
        )))),
    }
}

/// Schemas whose catalogs one read asks for (PostgreSQL reads them in one
/// query: its catalog scan is paid once per read, not per schema).
pub(crate) const CATALOGS_PER_READ: usize = 250;

/// Schemas whose prints one call reads ([`Engine::live_prints`]), so a
/// fleet's drift check and stored prints hold this many at once (about
/// 0.9 MB), not the fleet's. MySQL's one pass pays for a round when the
/// round is at least a quarter of the server's databases (core's
/// `one_pass_pays`): a fleet of up to 40,000 tenants, read in one pass a
/// round; beyond, each schema looked up, never the server read once per
/// round.
pub(crate) const PRINTS_PER_ROUND: usize = 10_000;

pub(crate) use crate::db::types::{Entries, Record};

/// The print of each of `schemas`' live catalogs, in the order given:
/// [`Engine::catalogs`] of [`CATALOGS_PER_READ`] schemas at a time, the
/// batches spread over `conns` (one lane each), each reduced to its prints
/// as it is read.
pub(crate) async fn prints_in_batches<E: Engine + ?Sized>(
    engine: &E,
    conns: &mut [E::Conn],
    schemas: &[String],
) -> Result<Vec<String>, DbError> {
    let batches: Vec<&[String]> = schemas.chunks(CATALOGS_PER_READ).collect();
    let lanes = conns.len().min(batches.len()).max(1);
    let batches = &batches;
    let read = futures::future::join_all(conns.iter_mut().take(lanes).enumerate().map(|(lane, conn)| async move {
        let mut prints = Vec::new();
        for (index, batch) in batches.iter().enumerate().skip(lane).step_by(lanes) {
            let catalogs = engine.catalogs(conn, batch, Reading::Drift).await?;
            let batch_prints: Vec<String> =
                batch.iter().zip(catalogs).map(|(schema, objects)| catalog_print(schema, &objects)).collect();
            prints.push((index, batch_prints));
        }
        Ok::<_, DbError>(prints)
    }))
    .await;
    let mut by_batch: Vec<Vec<String>> = vec![Vec::new(); batches.len()];
    for lane in read {
        for (index, prints) in lane? {
            by_batch[index] = prints;
        }
    }
    Ok(by_batch.into_iter().flatten().collect())
}

pub(crate) use fingerprint::catalog_print;

/// The catalogs of several schemas, one list of objects each, in the order
/// the schemas were asked for ([`Engine::catalogs`]).
pub(crate) type Catalogs = Vec<Vec<CatalogObject>>;

/// How a schema's catalog is read ([`Engine::catalogs`]): as drift
/// fingerprints it, or as desired state plans from it (PostgreSQL adds
/// identity and generated columns, MariaDB reads its own way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// What a fleet's drift compares.
    Drift,
    /// What a desired-state plan needs.
    Desired,
}

/// [`Engine::catalogs`]' default: one [`Engine::catalog`] after another,
/// each schema entered for it and left.
pub(crate) async fn catalogs_one_by_one<E: Engine + ?Sized>(
    engine: &E,
    conn: &mut E::Conn,
    schemas: &[String],
) -> Result<Catalogs, DbError> {
    let mut out = Vec::with_capacity(schemas.len());
    for schema in schemas {
        engine.enter(conn, schema).await?;
        let objects = engine.catalog(conn, schema).await;
        engine.leave(conn, schema).await;
        out.push(objects?);
    }
    Ok(out)
}

/// Each of `rows` as the literals of `svc_migrations`' columns, in order
/// (name, source_dir, filename, migration_type, db_schema, created,
/// contents, checksum, version_id), joined by commas: strings written by
/// `quote`, the time and the version's id as the engine writes them. For
/// [`Engine::record_text`], where nothing can be bound.
pub(crate) fn row_literals<'a>(
    rows: &'a [Record<'a>],
    quote: fn(&str) -> String,
    created: &'a str,
    version_id: &'a str,
) -> impl Iterator<Item = String> + 'a {
    rows.iter().map(move |record| {
        let migration = record.migration;
        [
            quote(&migration.name),
            quote(&migration.source_dir),
            quote(&migration.file),
            migration.migration_type.code().to_string(),
            quote(record.schema),
            created.to_string(),
            quote(&migration.contents),
            quote(&migration.checksum),
            version_id.to_string(),
        ]
        .join(", ")
    })
}

/// A transaction-control step ([`Engine::transaction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transaction {
    /// Start one.
    Begin,
    /// Commit it.
    Commit,
    /// Roll it back.
    Rollback,
}

/// What an engine keeps besides versions and migrations. The service asks
/// before it reaches for one of these ([`Engine::KEEPS`],
/// `Database::keeps`): a feature an engine does not keep is skipped where
/// it is a side matter (the audit row beside a mutation, fingerprints after
/// a version, the drift check and rollout gate before one), and refused as
/// not supported where a user asks for it by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Keeps {
    /// The hash-chained audit log (`svc_audit`).
    pub(crate) audit: bool,
    /// Rollouts (`svc_rollouts`).
    pub(crate) rollouts: bool,
    /// Live catalogs, hence fingerprints and fleet drift.
    pub(crate) catalogs: bool,
}

impl Keeps {
    /// Everything.
    pub(crate) const ALL: Keeps = Keeps { audit: true, rollouts: true, catalogs: true };
}

/// Where a file outside any transaction runs ([`Engine::alone_session`]).
pub(crate) enum AloneSession<C> {
    /// On the unit's connection, its time-outs set for the session before
    /// the file and reset after it.
    Shared,
    /// On this connection, whose session started with the file's time-outs
    /// (and gets them back after the file).
    Own(C),
    /// On the unit's connection without time-outs: the server's sessions
    /// cannot carry them (a pooler that refuses or drops them at connect).
    Untimed,
}

/// The per-dialect primitives the executor runs a version with. Each
/// dialect's SQL lives in its own `sql.rs`.
#[async_trait]
pub(crate) trait Engine: Send + Sync {
    /// A connection: its own session.
    type Conn: Send;
    /// The held cross-instance lock: a session of its own, outside any pool.
    type Lock: Send + Sync;
    /// The books it keeps (`db::books`).
    type Books: Books<Self::Conn>;

    /// The database kind.
    const DRIVER: Driver;
    /// Whether DDL takes part in transactions (MySQL and MariaDB commit it
    /// implicitly: every step is its own commit, recorded right after it).
    const TRANSACTIONAL_DDL: bool;
    /// Whether time-outs set for the session stay set until set again
    /// ([`Engine::reset_timeouts`] does nothing; MySQL and MariaDB set them
    /// before every file anyway): a unit's file outside a transaction then
    /// sets only what differs from its unit's file before it, one round trip
    /// a file less.
    const SESSION_TIMEOUTS_KEPT: bool = false;
    /// [`Engine::in_schema_text`] outlives any transaction (MySQL's `USE`):
    /// a unit that ran it has its connection closed after it.
    const IN_SCHEMA_OUTLIVES_UNIT: bool = false;
    /// What its books and catalog reads keep (see [`Keeps`]).
    const KEEPS: Keeps = Keeps::ALL;

    /// An engine over `config`'s `dataSource`, which is a `devDataSource`:
    /// where desired-state files are applied to be read (PostgreSQL, MySQL,
    /// MariaDB and SQL Server; core's configuration refuses one on SQLite).
    async fn open_dev(_config: &Config) -> Result<Self, DbError>
    where
        Self: Sized,
    {
        Err(DbError::NotSupported("devDataSource on this engine"))
    }
    /// Opens (or takes from a pool) a connection of its own.
    async fn connect(&self) -> Result<Self::Conn, DbError>;
    /// Closes `conn` rather than handing it to the next user: a file changed
    /// its session (MySQL, MariaDB, SQLite; see core's
    /// `FileMode::changes_session`). By default it goes back to its pool.
    async fn discard(&self, conn: Self::Conn) {
        drop(conn);
    }
    /// Takes back a connection whose work ended cleanly — no transaction
    /// open, nothing of its session changed — for the next
    /// [`Engine::connect`]: an engine without a pool keeps it a moment
    /// (SQL Server). By default it goes back to its pool.
    async fn give_back(&self, conn: Self::Conn) {
        drop(conn);
    }
    /// Takes the database's cross-instance lock on a session of its own
    /// (the executor has passed this process's gate first).
    async fn lock(&self) -> Result<Self::Lock, DbError>;
    /// Whether the lock is still held: a lease that was lost (expired and
    /// taken by another mutation) stops the version before its next unit.
    fn lock_held(&self, _lock: &Self::Lock) -> bool {
        true
    }
    /// Whether a mutation holds the cross-instance lock now (read, nothing
    /// taken). An engine that cannot tell answers no.
    async fn lock_in_use(&self) -> Result<bool, DbError> {
        Ok(false)
    }
    /// Fails with [`LockError::Lost`](crate::db::error::LockError::Lost)
    /// unless `lock` is still this mutation's, checked in the transaction
    /// open on `conn` and kept until it ends (a taker waits for it): what
    /// the transaction ran is recorded only while no other mutation can
    /// have run it. A lease's holder paused past its lease resumes
    /// believing it holds it; a session's lock (SQLite's, SQL Server's
    /// applock) stays held while its holder is paused: nothing to check.
    async fn fence(&self, _conn: &mut Self::Conn, _lock: &Self::Lock) -> Result<(), DbError> {
        Ok(())
    }
    /// Whether [`Engine::fence`] also runs after each file in a unit's
    /// transaction that may end it unseen (core's
    /// `FileMode::may_end_transaction`; SQL Server: a file's procedure or
    /// dynamic SQL can, and the file that did is named before the next one
    /// runs in a transaction that is not the unit's). The fence before the
    /// unit's records runs whatever the files are.
    const FENCE_AFTER_EACH_FILE: bool = false;
    /// [`Engine::fence`] as a statement of a unit's one message
    /// ([`Engine::ONE_MESSAGE`]), whose failure is [`Cause::LockLost`]
    /// (`None`: nothing to check).
    fn fence_text(&self, _lock: &Self::Lock) -> Option<String> {
        None
    }
    /// Releases the lock (best effort: closing the session releases it too).
    async fn unlock(&self, lock: Self::Lock);
    /// Makes `schemas` usable on `conn` (SQLite attaches their files).
    async fn prepare(&self, _conn: &mut Self::Conn, _schemas: &[String]) -> Result<(), DbError> {
        Ok(())
    }
    /// Undoes [`Engine::prepare`] once the version is over; `discard` when
    /// it left nothing (a dry run, or nothing committed).
    async fn release(&self, _conn: &mut Self::Conn, _discard: bool) {}
    /// Makes one more schema usable on `conn` for one unit, outside any
    /// transaction (SQLite attaches a tenant's file only while its unit
    /// runs, so a fleet is not bounded by how many files attach at once).
    async fn enter(&self, _conn: &mut Self::Conn, _schema: &str) -> Result<(), DbError> {
        Ok(())
    }
    /// Undoes [`Engine::enter`], outside any transaction.
    async fn leave(&self, _conn: &mut Self::Conn, _schema: &str) {}
    /// Closes the engine's connections, waiting until they are closed.
    async fn close(&self) {}
    /// Starts, commits or rolls back a transaction (without transactional
    /// DDL: nothing).
    async fn transaction(&self, conn: &mut Self::Conn, step: Transaction) -> Result<(), DbError>;
    /// Starts, commits or rolls back a transaction of data changes only
    /// (a backfill's batch with its checkpoint, its start with the version's
    /// row): a real one on every engine, MySQL and MariaDB included, whose
    /// [`Engine::transaction`] does nothing because their DDL commits itself.
    async fn data_transaction(&self, conn: &mut Self::Conn, step: Transaction) -> Result<(), DbError> {
        self.transaction(conn, step).await
    }
    /// Begins a data transaction ([`Engine::data_transaction`]) with
    /// `timeouts` for it where DDL takes part in transactions (a backfill's
    /// batch; MySQL and MariaDB keep the session's): in one round trip where
    /// the engine can.
    async fn begin_with_timeouts(&self, conn: &mut Self::Conn, timeouts: Timeouts) -> Result<(), DbError> {
        self.data_transaction(conn, Transaction::Begin).await?;
        if Self::TRANSACTIONAL_DDL {
            self.set_timeouts(conn, timeouts, true).await?;
        }
        Ok(())
    }
    /// Commits the open data transaction and begins the next with
    /// `timeouts` ([`Engine::begin_with_timeouts`]): a backfill's batches
    /// back to back, in one round trip where the engine can. An error
    /// leaves unknown whether the commit happened (the caller reads its
    /// checkpoint again).
    async fn commit_and_begin_with_timeouts(&self, conn: &mut Self::Conn, timeouts: Timeouts) -> Result<(), DbError> {
        self.data_transaction(conn, Transaction::Commit).await?;
        self.begin_with_timeouts(conn, timeouts).await
    }
    /// Starts a transaction.
    async fn begin(&self, conn: &mut Self::Conn) -> Result<(), DbError> {
        self.transaction(conn, Transaction::Begin).await
    }
    /// Commits it.
    async fn commit(&self, conn: &mut Self::Conn) -> Result<(), DbError> {
        self.transaction(conn, Transaction::Commit).await
    }
    /// Rolls it back.
    async fn rollback(&self, conn: &mut Self::Conn) -> Result<(), DbError> {
        self.transaction(conn, Transaction::Rollback).await
    }
    /// Runs a migration file's SQL.
    async fn execute(&self, conn: &mut Self::Conn, sql: &str) -> Result<(), Failure>;
    /// Whether [`Engine::execute_whole_batch`] runs here: the engine sends
    /// several statements in one message (PostgreSQL, not through Citus).
    fn sends_whole_batches(&self) -> bool {
        false
    }
    /// Runs a backfill's batch written whole (core's
    /// `backfill::sql::batch_with_integers`: no bound value) in one message
    /// with its data transaction's `begin` and `timeouts` — after the
    /// `commit` of the batch before when `commit_first` — leaving the
    /// transaction open: the rows the batch changed. Where
    /// [`Engine::sends_whole_batches`].
    async fn execute_whole_batch(
        &self,
        _conn: &mut Self::Conn,
        _commit_first: bool,
        _timeouts: Timeouts,
        _sql: &str,
    ) -> Result<u64, Failure> {
        Err(Failure::statement(format!("{:?} does not send a batch whole (sends_whole_batches)", Self::DRIVER)))
    }
    /// The rows of a backfill's read with nothing to bind (core's
    /// `key_types`, `last_key`, and the reads `…_with_integers` writes),
    /// each column a key value ([`bound::read`]): sent whole, in one round
    /// trip, where [`Engine::sends_whole_batches`].
    async fn read_keys_whole(&self, conn: &mut Self::Conn, sql: &str) -> Result<Vec<Key>, Failure> {
        self.read_keys(conn, sql, &[]).await
    }
    /// Runs a backfill's batch, `sql` with `values` bound, in the caller's
    /// open transaction: the rows it changed ([`bound`]).
    async fn execute_bound(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<u64, Failure>;
    /// Reads a backfill's keys, `sql` with `values` bound: each row's
    /// columns ([`bound`]).
    async fn read_keys(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<Vec<Key>, Failure>;
    /// How far the server's replicas replay behind it, in milliseconds (the
    /// largest): read on `conn` where the primary knows it (core's
    /// `backfill::sql::replica_lag`), 0 where there is nothing to read;
    /// `Err(why)` when it cannot be trusted (core's
    /// `backfill::pace::replica_lag`).
    async fn replica_lag(&self, conn: &mut Self::Conn) -> Result<Result<u64, String>, Failure> {
        let Some(sql) = strata_core::migrate::backfill::sql::replica_lag(Self::DRIVER) else { return Ok(Ok(0)) };
        let rows = self.read_keys_whole(conn, sql).await?;
        let int = |i: usize| match rows.first().and_then(|row| row.get(i)) {
            Some(KeyValue::Int(n)) => *n,
            _ => 0,
        };
        Ok(strata_core::migrate::backfill::pace::replica_lag(int(0), int(1), int(2)))
    }
    /// Whether a tenant's fingerprint is read and stored while the version
    /// still runs, on a connection of its own, as soon as its unit — its
    /// schema's last — committed (the executor's `print_beside`), rather
    /// than all of them after the last unit: PostgreSQL, whose catalog reads
    /// use the processor the units' commits leave idle. SQLite's units read
    /// their own prints; MySQL reads most of a server's catalogs in one pass.
    const PRINTS_BESIDE_UNITS: bool = false;
    /// Whether a unit may be sent as one text — [`Engine::BEGIN`], its
    /// time-outs ([`Engine::timeouts_text`]), its files, its rows
    /// ([`Engine::record_text`]), `commit` — run by
    /// [`Engine::execute_message`] in one round trip: engines that run
    /// several statements of one text in order and stop at the first that
    /// fails (PostgreSQL's simple query protocol; SQLite's `sqlite3_prepare`
    /// over the text's tail).
    const ONE_MESSAGE: bool = false;
    /// Whether the failure of a unit sent as one message carries its offset
    /// in the text (PostgreSQL). Where it does not (SQLite), the executor
    /// rolls the unit back and runs it again file by file, statement by
    /// statement, so that the failure is placed as if the file had run alone.
    const MESSAGE_OFFSETS: bool = true;
    /// The statement a unit sent as one message starts its transaction with.
    const BEGIN: &'static str = "begin";
    /// What ends a unit's transaction, sent as one message: `commit`, and
    /// on PostgreSQL first `reset all` — a file's `set search_path` (or
    /// any session setting) ends with its unit, not on the connection the
    /// next tenant's unit or version (or, behind a pooler, the
    /// application) gets.
    fn commit_text(&self) -> &'static str {
        "commit"
    }
    /// After a version's units, whether they all committed or not: what the
    /// engine deferred is done (SQLite folds the rows its units staged in
    /// their own files into `svc_migrations`).
    async fn settle(&self, _conn: &mut Self::Conn) -> Result<(), DbError> {
        Ok(())
    }
    /// Runs a unit sent as one message; by default as [`Engine::execute`].
    async fn execute_message(&self, conn: &mut Self::Conn, text: &str) -> Result<(), Failure> {
        self.execute(conn, text).await
    }
    /// Whether this engine, as connected, sends a unit as one message:
    /// [`Engine::ONE_MESSAGE`], unless what the engine found at connect
    /// time says no (Citus forwards a multi-statement text to its workers
    /// over the extended protocol, which refuses it: citus#6608).
    fn one_message(&self) -> bool {
        Self::ONE_MESSAGE
    }
    /// Whether the database is a Citus coordinator (PostgreSQL with the
    /// extension, found at connect time).
    fn citus(&self) -> bool {
        false
    }
    /// Where each distributed schema's shards live: (schema, `host:port`)
    /// — Citus only.
    async fn placements(&self, _conn: &mut Self::Conn) -> Result<Vec<(String, String)>, DbError> {
        Ok(Vec::new())
    }
    /// Moves a tenant's shards to the node `host:port` (Citus's
    /// `citus_schema_move`, transfer `mode`), under the mutation lock
    /// taken without waiting: refused while a version runs.
    async fn move_tenant(&self, _tenant: &str, _host: &str, _port: i32, _mode: &str) -> Result<(), DbError> {
        Err(DbError::NotSupported("moving a tenant (Citus only)"))
    }
    /// The statement that makes `schema` the session's own for a file
    /// whose tool ran it so (core's `SourceMigration::in_its_schema`): its
    /// plain names resolve, and are created, there; with `None`, the one
    /// that gives the session its own back (before a file of the unit
    /// that is not such a file). `local`: for the open transaction only.
    /// `None` where the engine has no such setting (SQLite, SQL Server):
    /// there such a file names its schema itself.
    fn in_schema_text(&self, _schema: Option<&str>, _local: bool) -> Option<String> {
        None
    }
    /// The statement that sets the open transaction's time-outs, as text
    /// (only where [`Engine::ONE_MESSAGE`]).
    fn timeouts_text(&self, _to: Timeouts) -> String {
        String::new()
    }
    /// The statement that records a unit's rows in `svc_migrations`, its
    /// values written in (only where [`Engine::ONE_MESSAGE`]).
    fn record_text(&self, _entries: &Entries<'_>) -> Result<String, DbError> {
        Err(DbError::NotSupported("a unit in one message"))
    }
    /// Sets how long the statements that follow wait for a lock and may
    /// run: for the open transaction only (`local`), or for the
    /// session until [`Engine::reset_timeouts`]. Engines without lock waits
    /// worth bounding (SQLite: one writer) do nothing.
    async fn set_timeouts(&self, _conn: &mut Self::Conn, _to: Timeouts, _local: bool) -> Result<(), DbError> {
        Ok(())
    }
    /// Before a file in a unit's transaction, on Citus (core's
    /// `migrate::citus`): a schema the file creates stays the
    /// coordinator's. Other engines: nothing.
    async fn citus_before_file(&self, _conn: &mut Self::Conn, _placement: FilePlacement) -> Result<(), DbError> {
        Ok(())
    }

    /// After a file in a unit's transaction, on Citus: the tables of
    /// `schema` Citus does not know yet become reference tables when the
    /// placement says so. Other engines: nothing.
    async fn citus_after_file(
        &self,
        _conn: &mut Self::Conn,
        _schema: &str,
        _placement: FilePlacement,
    ) -> Result<(), DbError> {
        Ok(())
    }

    /// The live catalog of `schema` (fleet drift): one object per table,
    /// column, index, constraint, view, routine, trigger and type, with the
    /// engine's definition text (see core's `fingerprint`). The schema is
    /// usable on `conn` ([`Engine::enter`]).
    async fn catalog(&self, conn: &mut Self::Conn, schema: &str) -> Result<Vec<CatalogObject>, DbError>;
    /// The catalog of `text` (a desired schema, its placeholder written as
    /// `scratch`) applied into a new schema `scratch` inside a transaction
    /// that is rolled back on every path; `Ok(Err(failure))` when the
    /// engine refuses the text. Engines without transactional DDL do not
    /// (the DDL would stay).
    async fn desired_catalog(
        &self,
        conn: &mut Self::Conn,
        text: &str,
        scratch: &str,
    ) -> Result<Result<Vec<CatalogObject>, Failure>, DbError>;
    /// The catalogs of several schemas as `reading` reads them, in the
    /// order given: by default one [`Engine::catalog`] after another, each
    /// schema entered for it ([`catalogs_one_by_one`]; desired state reads
    /// what drift reads); engines that read many at once in one query, or
    /// read more for a plan, do.
    async fn catalogs(
        &self,
        conn: &mut Self::Conn,
        schemas: &[String],
        _reading: Reading,
    ) -> Result<Catalogs, DbError> {
        catalogs_one_by_one(self, conn, schemas).await
    }
    /// The print (core's `fingerprint`) of each of `schemas`' live
    /// catalogs, in the order given, read over `conns` (at least one): by
    /// default [`prints_in_batches`]; an engine that reads a fleet's
    /// catalogs faster in one pass does so.
    async fn live_prints(&self, conns: &mut [Self::Conn], schemas: &[String]) -> Result<Vec<String>, DbError> {
        prints_in_batches(self, conns, schemas).await
    }
    /// The print of each of `schemas`' catalogs as the version left them,
    /// in the order given: by default their catalogs read now
    /// ([`Engine::live_prints`]); an engine whose units read their catalog
    /// as they committed hands those over.
    async fn catalog_prints(&self, conns: &mut [Self::Conn], schemas: &[String]) -> Result<Vec<String>, DbError> {
        self.live_prints(conns, schemas).await
    }
    /// Its books: the `svc` tables and the tenant list.
    fn books(&self) -> &Self::Books;
    /// Gives the session its server's time-outs back.
    async fn reset_timeouts(&self, _conn: &mut Self::Conn) {}
    /// Where a file outside any transaction runs with `timeouts`, on an
    /// engine whose session time-outs are set and reset around it
    /// ([`Engine::SESSION_TIMEOUTS_KEPT`] false): on the unit's connection
    /// (the default), or on a connection whose session starts with them
    /// (PostgreSQL: a pooler in transaction mode would send a `SET` to a
    /// server other clients then use).
    async fn alone_session(&self, _timeouts: Timeouts) -> Result<AloneSession<Self::Conn>, DbError> {
        Ok(AloneSession::Shared)
    }
    /// After a file outside any transaction, run or failed, on `conn` (an
    /// [`AloneSession::Own`] or the unit's): what the file left in its
    /// session that would outlive it (an advisory lock, a prepared
    /// statement) given back. Its error is logged, not returned: the file's
    /// outcome is what it was. Engines whose files that change their
    /// session have their connection closed instead do nothing here.
    async fn end_alone(&self, _conn: &mut Self::Conn) {}
    /// The sessions that may be blocking a statement in `schema` (holders of
    /// locks there, open transactions), one line each, read right after a
    /// unit gave up waiting; empty when the engine cannot tell.
    async fn blockers(&self, _conn: &mut Self::Conn, _schema: &str) -> Vec<String> {
        Vec::new()
    }
    /// Creates the service's tables (and the default tenant table, when
    /// `tenants_table`) if missing, serialised against other instances.
    async fn install(&self, tenants_table: bool) -> Result<(), DbError>;
    /// Creates a tenant's schema and inserts its row (`tenantInsertSQL`).
    async fn create_tenant(&self, conn: &mut Self::Conn, tenant: &str) -> Result<(), DbError>;
    /// Records a unit's rows in `svc_migrations`.
    async fn record(&self, conn: &mut Self::Conn, entries: &Entries<'_>) -> Result<(), DbError>;
}
