//! Sessions for files outside any transaction ([`Engine::alone_session`]):
//! small pools whose connections start with a file's time-outs in their
//! `options` startup parameter, one pool per pair of time-outs.
//!
//! A `SET` before such a file and a `RESET` after it are each a transaction
//! of their own: a pooler in transaction mode (PgBouncer) may send them to
//! different server connections, and leave the file's time-outs on one that
//! other clients — the application — get next. Time-outs given at connect
//! belong to that one session and nothing is reset elsewhere. A pooler
//! that refuses the parameter (PgBouncer: "unsupported startup parameter")
//! or drops it (`ignore_startup_parameters`), as reading the settings back
//! shows, makes such files run without time-outs, said once per process.
//!
//! [`Engine::alone_session`]: crate::db::engine::Engine::alone_session

use std::sync::Mutex;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, Postgres, Row};
use strata_core::migrate::lock_wait::Timeouts;

use crate::db::engine::AloneSession;
use crate::db::error::{DbError, describe};
use crate::db::postgres::sql;
use crate::db::types::CONNECT_TIMEOUT;

/// How long an idle connection of these pools stays open: long enough for
/// a version's next tenant, short enough to leave nothing behind it.
const IDLE: Duration = Duration::from_secs(10);

/// The pools, opened on first use.
pub(crate) struct AloneSessions {
    options: PgConnectOptions,
    size: u32,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The server's sessions cannot carry time-outs from their start.
    untimed: bool,
    /// `(lock_ms, statement_ms)` → its pool.
    pools: Vec<((u64, u64), PgPool)>,
}

impl AloneSessions {
    /// Pools on `options` (the engine's), each of `size` connections at
    /// most (one per tenant running at once).
    pub(crate) fn new(options: PgConnectOptions, size: u32) -> Self {
        AloneSessions { options, size, state: Mutex::new(State::default()) }
    }

    /// A session that started with `timeouts`, or [`AloneSession::Untimed`]
    /// once the server's sessions are known not to carry them.
    pub(crate) async fn session(&self, timeouts: Timeouts) -> Result<AloneSession<PoolConnection<Postgres>>, DbError> {
        let (lock_ms, statement_ms) = (timeouts.lock_ms, timeouts.statement_ms);
        let Some(pool) = self.pool(lock_ms, statement_ms) else { return Ok(AloneSession::Untimed) };
        let mut conn = match pool.acquire().await {
            Ok(conn) => conn,
            Err(error) if refused_at_startup(&error) => return Ok(self.untimed(&describe(&error))),
            Err(error) => return Err(error.into()),
        };
        let check = sql::alone_timeouts_carried(lock_ms, statement_ms);
        let carried: bool = sqlx::raw_sql(AssertSqlSafe(check)).fetch_one(&mut *conn).await?.try_get(0)?;
        if !carried {
            return Ok(self.untimed("the session started without them (the parameter was dropped)"));
        }
        Ok(AloneSession::Own(conn))
    }

    /// Closes the pools.
    pub(crate) async fn close(&self) {
        let pools: Vec<PgPool> = self.state.lock().unwrap().pools.drain(..).map(|(_, pool)| pool).collect();
        for pool in pools {
            pool.close().await;
        }
    }

    /// The pool of these time-outs (opened lazily), none once untimed.
    fn pool(&self, lock_ms: u64, statement_ms: u64) -> Option<PgPool> {
        let mut state = self.state.lock().unwrap();
        if state.untimed {
            return None;
        }
        if let Some((_, pool)) = state.pools.iter().find(|(key, _)| *key == (lock_ms, statement_ms)) {
            return Some(pool.clone());
        }
        let options = self
            .options
            .clone()
            .options([("lock_timeout", format!("{lock_ms}ms")), ("statement_timeout", format!("{statement_ms}ms"))]);
        let pool = PgPoolOptions::new()
            .max_connections(self.size)
            .min_connections(0)
            .idle_timeout(IDLE)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_lazy_with(options);
        state.pools.push(((lock_ms, statement_ms), pool.clone()));
        Some(pool)
    }

    /// Marks the sessions untimed (the first time: says why, and drops the
    /// pools).
    fn untimed<C>(&self, why: &str) -> AloneSession<C> {
        let pools = {
            let mut state = self.state.lock().unwrap();
            if state.untimed {
                return AloneSession::Untimed;
            }
            state.untimed = true;
            std::mem::take(&mut state.pools)
        };
        drop(pools);
        tracing::warn!(
            reason = why,
            "the server's sessions cannot start with time-outs (a pooler in front of PostgreSQL?): files outside \
             a transaction run without lock_timeout and statement_timeout; a SET would reach a server connection \
             other clients get next"
        );
        AloneSession::Untimed
    }
}

/// A connection refused for its startup parameters (PgBouncer: SQLSTATE
/// 08P01, "unsupported startup parameter: options", or "unsupported
/// options startup parameter" from 1.20).
fn refused_at_startup(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(error) => {
            error.code().as_deref() == Some("08P01") && error.message().contains("startup parameter")
        }
        _ => false,
    }
}
