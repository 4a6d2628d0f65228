//! The PostgreSQL driver: schema per tenant, transactional DDL.
//!
//! The primitives of the executor ([`Engine`]): a lease row as the mutation
//! lock (see `sql::LEASE_TAKE`; renewed in the background, and a holder
//! that lost it stops before its next unit), transactions, migration files over the simple
//! query protocol (a file may hold several statements; an error's position
//! is the character offset PostgreSQL reports, mapped back into the file by
//! the executor), the bookkeeping rows in multi-row inserts.
//!
//! Statements with bound values run inside a transaction and as unnamed
//! prepared statements, statements without run over the simple query
//! protocol: so nothing depends on a prepared statement outliving its
//! transaction, which a pooler in transaction mode (PgBouncer) cannot keep.
//!
//! Citus (the extension found in the database at start) is the same driver
//! with a few differences, decided once in [`PostgresEngine::open`]: a
//! worker node is refused (the coordinator is named); the service's schema
//! is created with schema-based sharding off, so it stays on the
//! coordinator; a file runs one statement at a time and a unit is never one
//! message (Citus forwards a multi-statement text to its workers over the
//! extended protocol, which refuses it: citus#6608); the time-outs are
//! `SET LOCAL` with `citus.propagate_set_commands = 'local'`, so they reach
//! the workers; a new tenant is a distributed schema.

mod alone;
mod sql;

use std::str::FromStr;

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgDatabaseError, PgErrorPosition, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Postgres, QueryBuilder, Row};
use strata_core::migrate::backfill::{Key, KeyValue};
use strata_core::migrate::citus::FilePlacement;
use strata_core::migrate::config::Config;
use strata_core::migrate::datasource::normalize;
use strata_core::migrate::driver::Driver;
use strata_core::migrate::ident::{quote_ansi, quote_string_postgres};
use strata_core::migrate::lock_wait::Timeouts;

use crate::db::books::SqlxBooks;
use crate::db::engine::{self, AloneSession, Catalogs, Engine, Entries, Failure, Reading, Transaction};
use crate::db::error::{Cause, DbError, LockError, cause_of, describe, one_line};
use crate::db::error::{OpenError, ServerError, ShardError};
use crate::db::lease::{Lease, LeaseRow};
use crate::db::types::CONNECT_TIMEOUT;

/// The PostgreSQL engine.
pub(crate) struct PostgresEngine {
    pool: PgPool,
    lease: PgLeaseRow,
    lease_seconds: u64,
    books: SqlxBooks<Postgres, i32>,
    tenant_insert_sql: String,
    /// The database runs Citus (on its coordinator).
    citus: bool,
    /// Sessions for files outside any transaction (`alone`).
    alone: alone::AloneSessions,
}

impl PostgresEngine {
    /// The catalogs of `schemas` read by `query` (`sql::CATALOGS` or
    /// `sql::DESIRED_CATALOGS`), in the order given.
    async fn catalogs_with(
        &self,
        conn: &mut PoolConnection<Postgres>,
        schemas: &[String],
        query: &'static str,
    ) -> Result<Catalogs, DbError> {
        let mut tx = Connection::begin(&mut **conn).await?;
        let rows: Vec<(String, String, String, String)> =
            sqlx::query_as(query).persistent(false).bind(schemas).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        let index: std::collections::HashMap<&str, usize> =
            schemas.iter().enumerate().map(|(i, s)| (s.as_str(), i)).collect();
        let mut out = vec![Vec::new(); schemas.len()];
        let shards = if self.citus { citus_shard_catalogs(conn, schemas).await? } else { Vec::new() };
        for (schema, kind, name, definition) in rows.into_iter().chain(shards) {
            if let Some(&i) = index.get(schema.as_str()) {
                out[i].push(strata_core::migrate::fingerprint::CatalogObject { kind, name, definition });
            }
        }
        Ok(out)
    }

    /// Opens a pool on `config.data_source` (a `postgres://` URL); writes
    /// nothing.
    pub(crate) async fn open(config: &Config) -> Result<Self, DbError> {
        let url = normalize(config.driver, &config.data_source)
            .map_err(|e| DbError::Open(OpenError::BadDataSource(e.to_string())))?;
        let options = PgConnectOptions::from_str(&url)
            .map_err(|e| DbError::Open(OpenError::BadDataSource(format!("dataSource is not a PostgreSQL URL: {e}"))))?
            // A stock PgBouncer refuses startup parameters it does not know.
            .extra_float_digits(None)
            .statement_cache_capacity(0)
            // A slow migration is no warning, nor its SQL a log line.
            .disable_statement_logging();
        // The lock's connection, the main one, the fan-out, and a few for
        // the API's read queries meanwhile.
        let tenants_at_once = u32::try_from(config.tenant_concurrency).unwrap_or(u32::MAX);
        let alone = alone::AloneSessions::new(options.clone(), tenants_at_once.max(1));
        let pool = engine::open_pool(
            PgPoolOptions::new().max_connections(tenants_at_once.saturating_add(6)).acquire_timeout(CONNECT_TIMEOUT),
            options,
        )
        .await?;
        let citus = citus_coordinator(&pool).await?;
        tracing::info!(
            lease_seconds = config.lock_lease_seconds,
            "mutations are serialised by the lease row svc.svc_lock (exclusive directly, through PgBouncer in \
             session or transaction mode, and on the primary after a failover)"
        );
        Ok(PostgresEngine {
            lease: PgLeaseRow(pool.clone()),
            lease_seconds: config.lock_lease_seconds,
            pool,
            books: SqlxBooks::new(&sql::BOOKS, Driver::Postgres, true, &config.tenant_select_sql),
            tenant_insert_sql: config.tenant_insert_sql.clone(),
            citus,
            alone,
        })
    }
}

/// Whether the database runs Citus; a Citus worker node is refused, with
/// the coordinator its metadata names.
async fn citus_coordinator(pool: &PgPool) -> Result<bool, DbError> {
    // Simple-query statements (no bound values): a pooler in transaction
    // mode may answer each on another server connection.
    let mut conn = engine::acquire(pool).await?;
    let installed: bool = sqlx::raw_sql(sql::CITUS_INSTALLED).fetch_one(&mut *conn).await?.try_get(0)?;
    if !installed {
        return Ok(false);
    }
    let worker: bool = sqlx::raw_sql(sql::CITUS_IS_WORKER).fetch_one(&mut *conn).await?.try_get(0)?;
    if worker {
        let row = sqlx::raw_sql(sql::CITUS_COORDINATOR).fetch_optional(&mut *conn).await.ok().flatten();
        let coordinator = row.and_then(|row| row.try_get::<String, _>(0).ok());
        return Err(DbError::Open(OpenError::CitusWorker { coordinator }));
    }
    tracing::info!("Citus: files run one statement at a time, new tenants are distributed schemas");
    Ok(true)
}

/// The catalogs of `schemas`' shards, each read on the Citus worker that
/// holds it (through the coordinator, `sql::CITUS_ON_WORKERS`): a change
/// made by hand on a worker shows in fleet drift. A worker that cannot
/// answer fails the read (drift would otherwise miss its tenants).
async fn citus_shard_catalogs(
    conn: &mut PoolConnection<Postgres>,
    schemas: &[String],
) -> Result<Vec<(String, String, String, String)>, DbError> {
    let mut tx = Connection::begin(&mut **conn).await?;
    let answers: Vec<(String, bool, String)> = sqlx::query_as(sql::CITUS_ON_WORKERS)
        .persistent(false)
        .bind(sql::citus_shard_catalogs(schemas))
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    let mut objects = Vec::new();
    for (node, success, answer) in answers {
        if !success {
            return Err(DbError::Server(ServerError::ConnectionLost(format!(
                "the catalog of the tenants' shards on the Citus worker {node} could not be read: {}",
                one_line(&answer)
            ))));
        }
        let rows: Vec<(String, String, String, String)> = serde_json::from_str(&answer).map_err(|e| {
            DbError::UnexpectedAnswer(format!("the Citus worker {node} answered the catalog read with {e}"))
        })?;
        objects.extend(rows);
    }
    Ok(objects)
}

/// Runs `text` (one message over the simple query protocol); a failure
/// placed by PostgreSQL's position, else at the statement that failed.
async fn run_text(conn: &mut sqlx::PgConnection, text: &str) -> Result<(), Failure> {
    use futures::StreamExt;
    let mut completed = 0;
    let mut results = sqlx::raw_sql(AssertSqlSafe(text)).execute_many(&mut *conn);
    let error = loop {
        match results.next().await {
            None => return Ok(()),
            Some(Ok(_)) => completed += 1,
            Some(Err(error)) => break error,
        }
    };
    let Some(pg) = error.as_database_error().and_then(|d| d.try_downcast_ref::<PgDatabaseError>()) else {
        return Err(Failure::from_sqlx(&error));
    };
    let offset = match pg.position() {
        Some(PgErrorPosition::Original(offset)) => Some(offset),
        _ => engine::statements_of(Driver::Postgres, text)
            .get(completed)
            .map(|failed| text[..failed.start].chars().count() + 1),
    };
    let cause = if is_fence(&error) { Cause::LockLost } else { cause_of(&error) };
    Err(Failure { message: pg.message().to_string(), offset, line: None, cause })
}

/// The fence's failure ([`sql::fence`]): the lease names another holder.
fn is_fence(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|d| d.code().is_some_and(|code| code == sql::FENCE_SQLSTATE) && d.message() == sql::FENCE_MESSAGE)
}

/// The lease's statements on the pool (see [`super::lease`]).
#[derive(Clone)]
pub(crate) struct PgLeaseRow(PgPool);

impl PgLeaseRow {
    async fn run(&self, statement: &'static str, holder: &str, seconds: u64) -> Result<bool, DbError> {
        let mut conn = engine::acquire(&self.0).await?;
        let mut tx = Connection::begin(&mut *conn).await?;
        let row = bound(statement).bind(holder).bind(seconds as f64).fetch_optional(&mut *tx).await?;
        tx.commit().await?;
        Ok(row.is_some())
    }
}

#[async_trait]
impl LeaseRow for PgLeaseRow {
    /// Taken only between the units' transactions of a holder that may
    /// still run (the fence, [`sql::FENCE_KEY`]); a wait for them that
    /// times out is "not taken", asked again.
    async fn take(&self, holder: &str, seconds: u64) -> Result<bool, DbError> {
        let mut conn = engine::acquire(&self.0).await?;
        let mut tx = Connection::begin(&mut *conn).await?;
        sqlx::raw_sql(sql::LEASE_GATE_TIMEOUT).execute(&mut *tx).await?;
        let gated = bound(sql::LEASE_GATE).bind(sql::FENCE_KEY).execute(&mut *tx).await;
        if let Err(e) = gated {
            if cause_of(&e) == Cause::LockTimeout {
                return Ok(false);
            }
            return Err(e.into());
        }
        let row = bound(sql::LEASE_TAKE).bind(holder).bind(seconds as f64).fetch_optional(&mut *tx).await?;
        tx.commit().await?;
        Ok(row.is_some())
    }

    async fn renew(&self, holder: &str, seconds: u64) -> Result<bool, DbError> {
        self.run(sql::LEASE_RENEW, holder, seconds).await
    }

    async fn release(&self, holder: &str) -> Result<(), DbError> {
        let mut conn = engine::acquire(&self.0).await?;
        let mut tx = Connection::begin(&mut *conn).await?;
        bound(sql::LEASE_RELEASE).bind(holder).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn holder(&self) -> Result<Option<String>, DbError> {
        let mut conn = engine::acquire(&self.0).await?;
        let mut tx = Connection::begin(&mut *conn).await?;
        let holder = sqlx::query_scalar(sql::LEASE_HOLDER).persistent(false).fetch_optional(&mut *tx).await?;
        tx.commit().await?;
        Ok(holder)
    }
}

/// A statement with bound values, prepared unnamed (see the module's
/// documentation).
fn bound(sql: &'static str) -> sqlx::query::Query<'static, Postgres, sqlx::postgres::PgArguments> {
    sqlx::query(sql).persistent(false)
}

#[async_trait]
impl Engine for PostgresEngine {
    type Conn = PoolConnection<Postgres>;
    type Lock = Lease;
    type Books = SqlxBooks<Postgres, i32>;
    const DRIVER: Driver = Driver::Postgres;
    const TRANSACTIONAL_DDL: bool = true;

    async fn open_dev(config: &Config) -> Result<Self, DbError> {
        Self::open(config).await
    }

    async fn close(&self) {
        self.alone.close().await;
        self.pool.close().await;
    }

    fn books(&self) -> &Self::Books {
        &self.books
    }

    async fn connect(&self) -> Result<Self::Conn, DbError> {
        engine::acquire(&self.pool).await
    }

    /// Creates what is missing only: when the catalog shows everything
    /// there (a service's every start but its first), no DDL runs and no
    /// lock is asked on the service's tables (`sql::service_objects_present`).
    async fn install(&self, tenants_table: bool) -> Result<(), DbError> {
        let check = sql::service_objects_present(tenants_table);
        let present: bool = sqlx::raw_sql(AssertSqlSafe(check)).fetch_one(&self.pool).await?.try_get(0)?;
        if present {
            return Ok(());
        }
        let creates = sql::creates(tenants_table);
        let mut tx = self.pool.begin().await?;
        bound(sql::LOCK).bind(sql::LOCK_KEY).execute(&mut *tx).await?;
        if self.citus {
            // On the coordinator, one statement at a time (citus#6608).
            sqlx::raw_sql(sql::CITUS_LOCAL_SCHEMAS).execute(&mut *tx).await?;
            sqlx::raw_sql(sql::CITUS_NO_DDL_PROPAGATION).execute(&mut *tx).await?;
            for statement in creates {
                sqlx::raw_sql(AssertSqlSafe(statement)).execute(&mut *tx).await?;
            }
        } else {
            sqlx::raw_sql(AssertSqlSafe(creates.join(";\n"))).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn lock(&self) -> Result<Self::Lock, DbError> {
        Lease::acquire(&self.lease, self.lease_seconds).await
    }

    fn lock_held(&self, lock: &Self::Lock) -> bool {
        lock.held()
    }

    async fn lock_in_use(&self) -> Result<bool, DbError> {
        Ok(self.lease.holder().await?.is_some())
    }

    async fn fence(&self, conn: &mut Self::Conn, lock: &Self::Lock) -> Result<(), DbError> {
        match sqlx::raw_sql(AssertSqlSafe(sql::fence(lock.holder()))).execute(&mut **conn).await {
            Err(e) if is_fence(&e) => Err(DbError::Lock(LockError::Lost)),
            done => done.map(drop).map_err(DbError::from),
        }
    }

    fn fence_text(&self, lock: &Self::Lock) -> Option<String> {
        Some(sql::fence(lock.holder()))
    }

    async fn unlock(&self, lock: Self::Lock) {
        lock.release(&self.lease).await;
    }

    async fn transaction(&self, conn: &mut Self::Conn, step: Transaction) -> Result<(), DbError> {
        let sql = match step {
            Transaction::Begin => sql::BEGIN,
            Transaction::Commit => self.commit_text(),
            // On Citus, as its commit: the session given back after it.
            Transaction::Rollback if self.citus => sql::ROLLBACK,
            Transaction::Rollback => sql::ROLLBACK_AND_RESET,
        };
        sqlx::raw_sql(sql).execute(&mut **conn).await?;
        if self.citus && step != Transaction::Begin {
            sqlx::raw_sql(sql::RESET).execute(&mut **conn).await?;
        }
        Ok(())
    }

    /// The session given back (`reset all`, …) before the commit, in its
    /// message; on Citus after it, in a message of its own, outside the
    /// distributed transaction (`transaction`), where nothing of it
    /// reaches the workers.
    fn commit_text(&self) -> &'static str {
        if self.citus { sql::COMMIT } else { sql::RESET_AND_COMMIT }
    }

    /// `begin` and the transaction's time-outs in one message (on Citus,
    /// as the default: its time-outs are set on the workers too).
    async fn begin_with_timeouts(&self, conn: &mut Self::Conn, timeouts: Timeouts) -> Result<(), DbError> {
        if self.citus {
            self.transaction(conn, Transaction::Begin).await?;
            return self.set_timeouts(conn, timeouts, true).await;
        }
        let text = format!("{};\n{}", sql::BEGIN, self.timeouts_text(timeouts));
        sqlx::raw_sql(AssertSqlSafe(text)).execute(&mut **conn).await?;
        Ok(())
    }

    /// `commit`, `begin` and the next transaction's time-outs in one
    /// message: a failed commit skips the rest of it, so no transaction is
    /// left open (on Citus, as the default).
    async fn commit_and_begin_with_timeouts(&self, conn: &mut Self::Conn, timeouts: Timeouts) -> Result<(), DbError> {
        if self.citus {
            self.transaction(conn, Transaction::Commit).await?;
            return self.begin_with_timeouts(conn, timeouts).await;
        }
        let text = format!("{};\n{};\n{}", sql::COMMIT, sql::BEGIN, self.timeouts_text(timeouts));
        sqlx::raw_sql(AssertSqlSafe(text)).execute(&mut **conn).await?;
        Ok(())
    }

    fn sends_whole_batches(&self) -> bool {
        !self.citus
    }

    /// One simple-protocol message (PostgreSQL 13 and later apply the
    /// `statement_timeout` it sets to the statements after it): the
    /// statements after a failing one are skipped, so an error leaves
    /// either no transaction (the commit failed) or the batch's, aborted.
    /// The batch's count is the last statement's.
    async fn execute_whole_batch(
        &self,
        conn: &mut Self::Conn,
        commit_first: bool,
        timeouts: Timeouts,
        sql: &str,
    ) -> Result<u64, Failure> {
        use futures::TryStreamExt;
        let commit = if commit_first { format!("{};\n", sql::COMMIT) } else { String::new() };
        let text = format!("{commit}{};\n{};\n{sql}", sql::BEGIN, self.timeouts_text(timeouts));
        let mut results = sqlx::raw_sql(AssertSqlSafe(text)).fetch_many(&mut **conn);
        let mut rows = 0;
        while let Some(result) = results.try_next().await.map_err(|error| Failure::from_sqlx(&error))? {
            if let sqlx::Either::Left(done) = result {
                rows = done.rows_affected();
            }
        }
        Ok(rows)
    }

    async fn read_keys_whole(&self, conn: &mut Self::Conn, sql: &str) -> Result<Vec<Key>, Failure> {
        let rows = sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
            .fetch_all(&mut **conn)
            .await
            .map_err(|error| Failure::from_sqlx(&error))?;
        engine::bound::keys_of(&rows)
    }

    async fn execute_bound(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<u64, Failure> {
        engine::bound::execute::<Postgres>(&mut **conn, sql, values).await
    }

    /// In a transaction of its own (the caller has none open): behind
    /// PgBouncer in transaction mode, an unnamed statement's prepare and its
    /// run outside a transaction may reach two server connections ("unnamed
    /// prepared statement does not exist").
    async fn read_keys(&self, conn: &mut Self::Conn, sql: &str, values: &[KeyValue]) -> Result<Vec<Key>, Failure> {
        let failed = |error: sqlx::Error| Failure::from_sqlx(&error);
        let mut tx = Connection::begin(&mut **conn).await.map_err(failed)?;
        let keys = engine::bound::read::<Postgres>(&mut *tx, sql, values).await?;
        tx.commit().await.map_err(failed)?;
        Ok(keys)
    }

    /// The file whole, in one round trip. PostgreSQL gives a position only
    /// for errors it finds while reading a statement; for one it meets
    /// running it (a constraint, a lock time-out) the statements that
    /// completed before tell which one failed, and its start is the
    /// position. On Citus, one statement at a time (citus#6608), a
    /// failure's offset counted from the file's start.
    async fn execute(&self, conn: &mut Self::Conn, text: &str) -> Result<(), Failure> {
        if !self.citus {
            return run_text(conn, text).await;
        }
        for statement in engine::statements_of(Driver::Postgres, text) {
            let start = statement.start;
            run_text(conn, &text[statement]).await.map_err(|failure| Failure {
                offset: failure.offset.map(|offset| text[..start].chars().count() + offset),
                ..failure
            })?;
        }
        Ok(())
    }

    /// `lock_timeout` and `statement_timeout`, `SET LOCAL`-like: for the open
    /// transaction only (so a pooler never hands them to another client).
    /// Never for a session: a file outside any transaction gets a session
    /// that starts with its time-outs ([`Engine::alone_session`]), which
    /// is why `local` is always asked here.
    async fn set_timeouts(&self, conn: &mut Self::Conn, timeouts: Timeouts, local: bool) -> Result<(), DbError> {
        debug_assert!(local, "PostgreSQL's session time-outs come with alone_session");
        if self.citus {
            for set in sql::citus_set_local_timeouts(timeouts.lock_ms, timeouts.statement_ms) {
                sqlx::raw_sql(AssertSqlSafe(set)).execute(&mut **conn).await?;
            }
        } else {
            let (lock, statement) = (format!("{}ms", timeouts.lock_ms), format!("{}ms", timeouts.statement_ms));
            bound(sql::SET_LOCAL_TIMEOUTS).bind(lock).bind(statement).execute(&mut **conn).await?;
        }
        Ok(())
    }

    async fn alone_session(&self, timeouts: Timeouts) -> Result<AloneSession<Self::Conn>, DbError> {
        self.alone.session(timeouts).await
    }

    /// The session reset ([`sql::RESET`]).
    async fn end_alone(&self, conn: &mut Self::Conn) {
        if let Err(error) = sqlx::raw_sql(sql::RESET).execute(&mut **conn).await {
            tracing::warn!(%error, "resetting a session after a file outside any transaction");
        }
    }

    /// Sessions holding locks on the schema's objects: pid, state, since
    /// when their transaction runs, the locks, and their statement; on
    /// Citus, on every node (`sql::CITUS_BLOCKERS`: the global pid and the
    /// node holding the locks).
    async fn blockers(&self, conn: &mut Self::Conn, schema: &str) -> Vec<String> {
        let read = async {
            let mut tx = Connection::begin(&mut **conn).await?;
            let statement = if self.citus { sql::CITUS_BLOCKERS } else { sql::BLOCKERS };
            let rows = bound(statement).bind(schema).fetch_all(&mut *tx).await?;
            tx.commit().await?;
            rows.iter()
                .map(|row| {
                    // Citus: the global pid and the node, as text.
                    let pid =
                        if self.citus { row.try_get::<String, _>(0)? } else { row.try_get::<i32, _>(0)?.to_string() };
                    let (state, since, application, query, locks): (String, String, String, String, String) =
                        (row.try_get(1)?, row.try_get(2)?, row.try_get(3)?, row.try_get(4)?, row.try_get(5)?);
                    let application = if application.is_empty() { String::new() } else { format!(" {application}") };
                    Ok(format!(
                        "pid {pid}{application} ({state}, transaction since {since}) holds {locks}, last statement: {}",
                        one_line(&query)
                    ))
                })
                .collect::<Result<Vec<String>, sqlx::Error>>()
        };
        read.await.unwrap_or_else(|e: sqlx::Error| {
            tracing::warn!(error = %describe(&e), "the blocking sessions could not be read");
            Vec::new()
        })
    }

    async fn catalog(
        &self,
        conn: &mut Self::Conn,
        schema: &str,
    ) -> Result<Vec<strata_core::migrate::fingerprint::CatalogObject>, DbError> {
        let mut all = self.catalogs(conn, &[schema.to_string()], Reading::Drift).await?;
        Ok(all.pop().unwrap_or_default())
    }

    /// One query for all of `schemas` (see `sql::CATALOGS` and
    /// `sql::DESIRED_CATALOGS`).
    async fn catalogs(&self, conn: &mut Self::Conn, schemas: &[String], reading: Reading) -> Result<Catalogs, DbError> {
        let text = match reading {
            Reading::Drift => sql::CATALOGS,
            Reading::Desired => sql::DESIRED_CATALOGS.as_str(),
        };
        self.catalogs_with(conn, schemas, text).await
    }

    async fn desired_catalog(
        &self,
        conn: &mut Self::Conn,
        text: &str,
        scratch: &str,
    ) -> Result<Result<Vec<strata_core::migrate::fingerprint::CatalogObject>, Failure>, DbError> {
        // sqlx's own transaction: rolled back on every path, dropped ones
        // included, so nothing of the scratch schema is ever committed.
        let mut tx = Connection::begin(&mut **conn).await?;
        for part in [sql::create_schema(scratch).as_str(), text] {
            if let Err(failure) = run_text(&mut tx, part).await {
                tx.rollback().await?;
                return Ok(Err(failure));
            }
        }
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(sql::DESIRED_CATALOGS.as_str())
            .persistent(false)
            .bind([scratch])
            .fetch_all(&mut *tx)
            .await?;
        tx.rollback().await?;
        let objects = rows
            .into_iter()
            .map(|(_, kind, name, definition)| strata_core::migrate::fingerprint::CatalogObject {
                kind,
                name,
                definition,
            })
            .collect();
        Ok(Ok(objects))
    }

    async fn create_tenant(&self, conn: &mut Self::Conn, tenant: &str) -> Result<(), DbError> {
        let failed = |e: sqlx::Error| DbError::TenantInsertFailed { tenant: tenant.to_string(), message: describe(&e) };
        sqlx::raw_sql(AssertSqlSafe(sql::create_schema(tenant))).execute(&mut **conn).await.map_err(failed)?;
        if self.citus {
            // A distributed schema, whatever the session's setting says.
            let sharding: Option<String> = bound(sql::CITUS_SHARDING_ON)
                .fetch_one(&mut **conn)
                .await
                .map_err(failed)?
                .try_get(0)
                .map_err(failed)?;
            if sharding.as_deref() != Some("on") {
                bound(sql::CITUS_DISTRIBUTE).bind(quote_ansi(tenant)).execute(&mut **conn).await.map_err(failed)?;
            }
        }
        sqlx::query(AssertSqlSafe(self.tenant_insert_sql.as_str()))
            .persistent(false)
            .bind(tenant)
            .execute(&mut **conn)
            .await
            .map_err(failed)?;
        Ok(())
    }

    /// Schema-based sharding off for the rest of the transaction: a schema
    /// the file creates is the coordinator's.
    async fn citus_before_file(&self, conn: &mut Self::Conn, placement: FilePlacement) -> Result<(), DbError> {
        if self.citus && placement.on_coordinator {
            sqlx::raw_sql(sql::CITUS_LOCAL_SCHEMAS).execute(&mut **conn).await?;
        }
        Ok(())
    }

    /// `create_reference_table` for each table of `schema` Citus does not
    /// know yet, in the file's transaction.
    async fn citus_after_file(
        &self,
        conn: &mut Self::Conn,
        schema: &str,
        placement: FilePlacement,
    ) -> Result<(), DbError> {
        if !(self.citus && placement.reference_tables) {
            return Ok(());
        }
        let tables: Vec<String> =
            sqlx::query_scalar(sql::CITUS_NEW_TABLES).persistent(false).bind(schema).fetch_all(&mut **conn).await?;
        for table in tables {
            bound(sql::CITUS_REFERENCE_TABLE).bind(&table).execute(&mut **conn).await.map_err(|e| {
                DbError::UnexpectedAnswer(format!(
                    "{table} could not be made a Citus reference table: {}",
                    describe(&e)
                ))
            })?;
            tracing::info!(table = %table, "made a Citus reference table");
        }
        Ok(())
    }

    const ONE_MESSAGE: bool = true;
    const PRINTS_BESIDE_UNITS: bool = true;

    fn one_message(&self) -> bool {
        !self.citus
    }

    fn citus(&self) -> bool {
        self.citus
    }

    async fn move_tenant(&self, tenant: &str, host: &str, port: i32, mode: &str) -> Result<(), DbError> {
        if !self.citus {
            return Err(DbError::Shard(ShardError::MoveRefused("the database does not run Citus".into())));
        }
        let Some(lease) = Lease::try_acquire(&self.lease, self.lease_seconds).await? else {
            return Err(DbError::Shard(ShardError::MoveRefused(
                "a version is running (the lock svc.svc_lock is held); move the tenant once it is over".into(),
            )));
        };
        let moved = async {
            let mut conn = engine::acquire(&self.pool).await?;
            let statement = sql::citus_schema_move(tenant, host, port, mode);
            sqlx::raw_sql(AssertSqlSafe(statement)).execute(&mut *conn).await?;
            Ok::<(), DbError>(())
        }
        .await;
        lease.release(&self.lease).await;
        moved
    }

    async fn placements(&self, conn: &mut Self::Conn) -> Result<Vec<(String, String)>, DbError> {
        let mut tx = Connection::begin(&mut **conn).await?;
        let rows: Vec<(String, String)> =
            sqlx::query_as(sql::CITUS_PLACEMENTS).persistent(false).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        Ok(rows)
    }

    fn timeouts_text(&self, to: Timeouts) -> String {
        sql::set_local_timeouts_text(to.lock_ms, to.statement_ms)
    }

    /// The schema first on the `search_path`, `public` after it (what such
    /// a file's tool had: dbmate's `search_path`, Flyway's `schemas`); the
    /// unit's reset gives the session's own back after a file outside a
    /// transaction.
    fn in_schema_text(&self, schema: Option<&str>, local: bool) -> Option<String> {
        Some(sql::search_path(schema, local))
    }

    fn record_text(&self, entries: &Entries<'_>) -> Result<String, DbError> {
        let Entries { rows, created, version_id } = *entries;
        let version_id = i32::try_from(version_id).map_err(|_| DbError::IdOutOfRange(version_id))?.to_string();
        let mut text = String::from(sql::INSERT_MIGRATIONS);
        text.push_str("values ");
        let created = format!("{}::timestamptz", quote_string_postgres(created));
        for (index, values) in engine::row_literals(rows, quote_string_postgres, &created, &version_id).enumerate() {
            text.push_str(if index == 0 { "(" } else { ", (" });
            text.push_str(&values);
            text.push(')');
        }
        Ok(text)
    }

    async fn record(&self, conn: &mut Self::Conn, entries: &Entries<'_>) -> Result<(), DbError> {
        let Entries { rows, created, version_id } = *entries;
        let version_id = i32::try_from(version_id).map_err(|_| DbError::IdOutOfRange(version_id))?;
        for chunk in rows.chunks(sql::MIGRATION_ROWS_PER_INSERT) {
            let mut insert = QueryBuilder::<Postgres>::new(sql::INSERT_MIGRATIONS);
            insert.push_values(chunk, |mut row, record| {
                let migration = record.migration;
                row.push_bind(&migration.name)
                    .push_bind(&migration.source_dir)
                    .push_bind(&migration.file)
                    .push_bind(migration.migration_type.code() as i32)
                    .push_bind(record.schema)
                    .push_bind(created)
                    .push_unseparated("::timestamptz")
                    .push_bind(&migration.contents)
                    .push_bind(&migration.checksum)
                    .push_bind(version_id);
            });
            insert.build().persistent(false).execute(&mut **conn).await?;
        }
        Ok(())
    }
}
