//! One unit on one connection: its schema entered, its files executed in
//! the transactions core's `run::transactions` cuts (or as one message),
//! its rows recorded with them, a lock time-out retried as core's
//! `lock_wait` says. What committed goes to the run's `Progress`.

use std::sync::atomic::Ordering;

use strata_core::migrate::driver::Driver;
use strata_core::migrate::lock_wait::{self, Timeouts};
use strata_core::migrate::plan::{Direction, Unit};
use strata_core::migrate::run::transactions::{self, Piece, Split};

use crate::db::books::Books;
use crate::db::engine::{self, AloneSession, Engine, Entries, Failure, Record, Transaction};
use crate::db::error::{Cause, DbError};
use crate::db::error::{LockError, ServerError};
use crate::db::executor::backfill::StepEnd;
use crate::db::executor::progress::Progress;
use crate::db::executor::retry_wait::jittered_wait_ms;
use crate::db::executor::{RECORD_CONFLICT_RETRIES, Run, SEPARATOR, UnitError};
use crate::db::types::NewVersion;
use crate::traces::spans::Otel;

/// A file's characters in a unit's one message, (start, end], and its step.
type FileSpan = (usize, usize, u32);

/// What a unit's files leave on its session that the next file must know.
#[derive(Default)]
struct Session {
    /// The time-outs in force (`None`: unknown, set before the next file).
    timeouts: Option<Timeouts>,
    /// A file ran with its tenant as the session's schema
    /// (`Engine::in_schema_text`): each later file that is not such a file
    /// gets the session's own back first, so that it runs where it would
    /// have run alone (its plain names not in the tenant).
    entered_schema: bool,
}

/// The spans of a whole version's schemas ([`Run::execute_in`]).
#[derive(Default)]
pub(super) struct SchemaSpans {
    /// Each schema's span once its first file ran, by its index in the plan.
    pub(super) spans: rustc_hash::FxHashMap<u32, Otel>,
    /// The files of each schema in the plan, by the same index.
    pub(super) files: Vec<usize>,
}

impl<E: Engine> Run<'_, E> {
    /// The span of `step`'s file, with its statement count (counted only
    /// when the span is exported); `one_message` when it goes with the
    /// unit's other files in one round trip.
    fn file_span(&self, step: u32, one_message: bool) -> Otel {
        crate::traces::spans::file(self.files.file(step), E::DRIVER, || self.statement_count(step), one_message)
    }

    /// Runs a step's file. Inside the unit's transaction: whole, with the
    /// file's time-outs for that transaction (set again only when they
    /// change: `session`). Outside one (the directive, or an engine without
    /// transactional DDL): statement by statement with the session's
    /// time-outs (set again only when they change where the engine keeps
    /// them, [`Engine::SESSION_TIMEOUTS_KEPT`]; else set and reset around
    /// the file), a statement that hit the lock time-out retried alone.
    async fn execute_file(
        &self,
        conn: &mut E::Conn,
        step: u32,
        session: &mut Session,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        if let Some(observer) = self.request.observer {
            observer.running(self.files.schema(step), self.files.file(step));
        }
        let sql = self.files.text(step).replace(&self.settings.placeholder, self.files.schema(step));
        let timeouts = self.timeouts(step);
        let partly = self.files.runs_alone(step) || !E::TRANSACTIONAL_DDL;
        if !partly {
            if session.timeouts != Some(timeouts) {
                self.engine.set_timeouts(conn, timeouts, true).await?;
                session.timeouts = Some(timeouts);
            }
            let placement = self.citus_placement(step);
            if placement.on_coordinator {
                self.engine.citus_before_file(conn, placement).await?;
            }
            self.enter_its_schema(conn, step, true, session).await?;
            self.engine.execute(conn, &sql).await.map_err(|failure| UnitError::Migration {
                step,
                failure,
                partly,
                attempts: 1,
            })?;
            if E::FENCE_AFTER_EACH_FILE && self.files.may_end_transaction(step) {
                self.engine.fence(conn, self.lock).await.map_err(|error| self.unrecorded(&[step], error))?;
            }
            if placement.reference_tables {
                self.engine.citus_after_file(conn, self.files.schema(step), placement).await?;
            }
            return Ok(());
        }
        if !E::SESSION_TIMEOUTS_KEPT {
            return match self.engine.alone_session(timeouts).await? {
                AloneSession::Shared => {
                    self.engine.set_timeouts(conn, timeouts, false).await?;
                    let result = self.execute_alone(conn, step, &sql, timeouts, progress).await;
                    self.engine.reset_timeouts(conn).await;
                    result
                }
                AloneSession::Own(mut own) => {
                    let result = match self.enter_its_schema(&mut own, step, false, &mut Session::default()).await {
                        Ok(()) => self.execute_alone(&mut own, step, &sql, timeouts, progress).await,
                        Err(error) => Err(error),
                    };
                    self.engine.end_alone(&mut own).await;
                    result
                }
                AloneSession::Untimed
                    if self.files.in_its_schema(step)
                        && !self.files.text(step).contains(&self.settings.placeholder) =>
                {
                    Err(self.no_session_for_its_schema(step))
                }
                AloneSession::Untimed => {
                    let result = self.execute_alone(conn, step, &sql, timeouts, progress).await;
                    self.engine.end_alone(conn).await;
                    result
                }
            };
        }
        if session.timeouts != Some(timeouts) {
            // Forgotten first: a failed setting leaves the session unknown.
            session.timeouts = None;
            self.engine.set_timeouts(conn, timeouts, false).await?;
            session.timeouts = Some(timeouts);
        }
        self.enter_its_schema(conn, step, false, session).await?;
        self.execute_alone(conn, step, &sql, timeouts, progress).await
    }

    /// A file outside any transaction that must run in its tenant's schema
    /// (it names no `{schema}`), where the server's sessions cannot carry
    /// it: a pooler in transaction mode may run the setting and each
    /// statement on other server connections (and leave the setting on one
    /// the application gets). Nothing of the file runs. One that names its
    /// schema runs without it, as Strata's own files do.
    fn no_session_for_its_schema(&self, step: u32) -> UnitError {
        let message = format!(
            "{} runs outside a transaction with its tenant as the session's schema, and this server's sessions \
             cannot be kept to one connection (a pooler in transaction mode): name its objects {}.name, or point \
             dataSource at the server; nothing of it ran",
            self.files.file(step),
            self.settings.placeholder
        );
        UnitError::Migration { step, failure: Failure::statement(message), partly: false, attempts: 1 }
    }

    /// Makes the step's schema the session's own before its file, where its
    /// tool ran it so (`Engine::in_schema_text`): for the open transaction
    /// (`local`), or the session (given back by the unit's reset, or, on
    /// MySQL, by closing the connection after the unit); and gives the
    /// session its own back before any other file after such a one. A
    /// failure is the file's, nothing of it run.
    async fn enter_its_schema(
        &self,
        conn: &mut E::Conn,
        step: u32,
        local: bool,
        session: &mut Session,
    ) -> Result<(), UnitError> {
        let Some(set) = self.schema_text(step, local, &mut session.entered_schema) else {
            return Ok(());
        };
        self.engine.execute(conn, &set).await.map_err(|failure| UnitError::Migration {
            step,
            failure,
            partly: false,
            attempts: 1,
        })
    }

    /// The statement [`Run::enter_its_schema`] sends before `step`'s file,
    /// if any: its tenant's schema for a file whose tool ran it there
    /// (`entered` then set), the session's own for another after such a one.
    fn schema_text(&self, step: u32, local: bool, entered: &mut bool) -> Option<String> {
        if self.files.in_its_schema(step) {
            *entered = true;
            return self.engine.in_schema_text(Some(self.files.schema(step)), local);
        }
        match *entered && self.plan.steps.at(step).execute {
            true => self.engine.in_schema_text(None, local),
            false => None,
        }
    }

    /// A file outside any transaction, statement by statement (SQL Server:
    /// whole, its engine cuts `GO` batches).
    async fn execute_alone(
        &self,
        conn: &mut E::Conn,
        step: u32,
        sql: &str,
        timeouts: Timeouts,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        let statements = match E::DRIVER {
            Driver::SqlServer => std::iter::once(0..sql.len()).collect(),
            driver => engine::statements_of(driver, sql),
        };
        for range in statements {
            let mut attempts = lock_wait::Attempts::default();
            let mut mark = progress.mark(&[]);
            loop {
                let Err(mut failure) = self.engine.execute(conn, &sql[range.clone()]).await else { break };
                if failure.cause == Cause::LockTimeout {
                    let seen = self.timed_out(conn, step, progress, &mut mark, &[]).await;
                    let retry = attempts.after_time_out(timeouts.retries, seen);
                    crate::traces::spans::lock_timed_out(self.files.file(step), retry, seen.counts());
                    crate::telemetry::lock_timed_out(retry.is_some(), !seen.counts());
                    if let Some(retry) = retry {
                        self.wait_before_retry(step, retry, seen).await;
                        continue;
                    }
                }
                let attempts = attempts.made;
                let before = sql[..range.start].chars().count();
                failure.offset = failure.offset.map(|offset| offset + before);
                if failure.offset.is_none() && failure.line.is_none() {
                    failure.offset = Some(before + 1);
                }
                return Err(UnitError::Migration { step, failure, partly: true, attempts });
            }
        }
        Ok(())
    }

    /// Sleeps before retry `retry` (from 1) of `step`, jittered; a wait
    /// behind the version's own units is logged at debug level (a fleet
    /// queueing on a shared table makes many).
    async fn wait_before_retry(&self, step: u32, retry: u32, seen: lock_wait::TimedOut) {
        let wait = jittered_wait_ms(retry);
        if seen.counts() {
            tracing::warn!(
                file = %self.files.file(step),
                schema = %self.files.schema(step),
                retry,
                wait_ms = wait,
                "a migration statement gave up waiting for a lock; rolled back, running it again after a wait"
            );
        } else {
            tracing::debug!(
                file = %self.files.file(step),
                schema = %self.files.schema(step),
                wait_ms = wait,
                "a migration statement gave up waiting for a lock while the version's other units committed; \
                 running it again after a wait, without using up a retry"
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    }

    /// Writes `steps`' rows (forgets them, reverting) in the transaction
    /// open on `conn`, once the fence says the lock is still this
    /// mutation's ([`Engine::fence`]).
    async fn record(&self, conn: &mut E::Conn, steps: &[u32], version_id: i64) -> Result<(), DbError> {
        self.engine.fence(conn, self.lock).await?;
        let rows: Vec<Record<'_>> = steps
            .iter()
            .map(|&s| Record { migration: self.files.migration(s), schema: self.files.schema(s) })
            .collect();
        match self.plan.direction {
            Direction::Forward => {
                let entries = Entries { rows: &rows, created: self.request.created, version_id };
                self.engine.record(conn, &entries).await
            }
            Direction::Revert => {
                let books = self.engine.books();
                books.forget(conn, &rows).await?;
                // A reverted backfill runs again from its first key when its
                // file is applied again: its finished row must not stand
                // for it.
                for &step in steps.iter().filter(|&&step| self.files.may_be_backfill(step)) {
                    books.forget_backfill(conn, self.files.schema(step), self.files.file(step)).await?;
                }
                Ok(())
            }
        }
    }

    /// Records one step that ran outside a transaction, in a transaction
    /// of its own (statements with bound values never run outside one: a
    /// pooler in transaction mode may send them to another server), with
    /// the version's row when none has committed yet — a data transaction
    /// on every engine, MySQL and MariaDB included, so that the fence
    /// holds until the rows commit.
    ///
    /// A record that lost a conflict with another session (a deadlock, say
    /// against a transaction a killed process left running) is written
    /// again, up to [`RECORD_CONFLICT_RETRIES`] times: the step ran, and
    /// only its row is missing.
    async fn record_alone(&self, conn: &mut E::Conn, step: u32, progress: &Progress) -> Result<(), DbError> {
        let mut attempt = 0;
        loop {
            self.engine.data_transaction(conn, Transaction::Begin).await?;
            let recorded = async {
                let version_id = self.version_id(conn, progress).await?;
                self.record(conn, &[step], version_id).await?;
                Ok::<_, DbError>(version_id)
            }
            .await;
            match recorded {
                Ok(version_id) => {
                    self.engine.data_transaction(conn, Transaction::Commit).await?;
                    progress.set_version(version_id);
                    self.committed(progress, &[step]);
                    return Ok(());
                }
                Err(error) => {
                    let _ = self.engine.data_transaction(conn, Transaction::Rollback).await;
                    if !error.is_conflict() || attempt == RECORD_CONFLICT_RETRIES {
                        return Err(error);
                    }
                    attempt += 1;
                    tracing::warn!(attempt, %error, file = %self.files.file(step), "recording a step lost a conflict with another session; writing its row again");
                    tokio::time::sleep(std::time::Duration::from_millis(100 << attempt)).await;
                }
            }
        }
    }

    /// The version's id, writing its row on `conn` (in the transaction open
    /// there, if any) when no committed transaction has yet.
    pub(super) async fn version_id(&self, conn: &mut E::Conn, progress: &Progress) -> Result<i64, DbError> {
        if let Some(id) = progress.version() {
            return Ok(id);
        }
        let request = self.request;
        let trace_id = Self::trace_id();
        let version = NewVersion {
            name: request.version_name,
            created: request.created,
            request_id: request.request_id,
            trace_id: trace_id.as_deref(),
        };
        self.engine.books().insert_version(conn, &version).await
    }

    /// One unit: its steps in one transaction with their rows, split around
    /// non-transactional files and after files that ask for a commit; the
    /// new tenant is created in the first transaction of its unit. Engines
    /// without transactional DDL record each step right after it ran. What
    /// commits goes to `progress`. A unit that hit the lock time-out runs
    /// again after a wait (what committed is not run again), up to the
    /// failing file's retries; when it gives up, its error names the
    /// sessions that block it.
    pub(super) async fn unit(&self, conn: &mut E::Conn, unit: &Unit, progress: &Progress) -> Result<(), UnitError> {
        let mut attempts = lock_wait::Attempts::default();
        let mut mark = progress.mark(&unit.steps);
        loop {
            if !self.engine.lock_held(self.lock) {
                return Err(self.placed(UnitError::Other(DbError::Lock(LockError::Lost)), unit, progress));
            }
            let schema = match self.plan.new_tenant.as_deref() {
                Some(tenant) if unit.steps.is_empty() => tenant.to_string(),
                _ => self.plan.schemas[unit.schema as usize].clone(),
            };
            self.engine.enter(conn, &schema).await?;
            let result = self.unit_entered(conn, unit, progress, attempts.made > 1).await;
            self.engine.leave(conn, &schema).await;
            match result {
                Err(UnitError::Migration { step, mut failure, partly: false, .. })
                    if failure.cause == Cause::LockTimeout =>
                {
                    let seen = self.timed_out(conn, step, progress, &mut mark, &unit.steps).await;
                    let retry = attempts.after_time_out(self.timeouts(step).retries, seen);
                    crate::traces::spans::lock_timed_out(self.files.file(step), retry, seen.counts());
                    let Some(retry) = retry else {
                        crate::telemetry::lock_timed_out(false, false);
                        failure.message = self.blocked(conn, step, failure.message, attempts.made).await;
                        return Err(UnitError::Migration { step, failure, partly: false, attempts: attempts.made });
                    };
                    crate::telemetry::lock_timed_out(true, !seen.counts());
                    self.wait_before_retry(step, retry, seen).await;
                }
                Err(UnitError::Migration { step, mut failure, partly: true, attempts })
                    if failure.cause == Cause::LockTimeout =>
                {
                    failure.message = self.blocked(conn, step, failure.message, attempts).await;
                    return Err(UnitError::Migration { step, failure, partly: true, attempts });
                }
                other => return other.map_err(|error| self.placed(error, unit, progress)),
            }
        }
    }

    /// What a lock time-out of `step` in a unit of `steps` saw (core's
    /// `lock_wait::TimedOut`): whether the version moved on since `mark`
    /// (moved to now), and only then — a time-out is counted anyway
    /// otherwise — whether a session holds a lock on the schema's objects.
    async fn timed_out(
        &self,
        conn: &mut E::Conn,
        step: u32,
        progress: &Progress,
        mark: &mut (u64, u64),
        steps: &[u32],
    ) -> lock_wait::TimedOut {
        let others_committed = progress.others_committed_since(mark, steps);
        let blocker_on_schema =
            others_committed && !self.engine.blockers(conn, self.files.schema(step)).await.is_empty();
        lock_wait::TimedOut { blocker_on_schema, others_committed }
    }

    /// A lock time-out's message, with how long it waited and the sessions
    /// that block it (read while they still do).
    async fn blocked(&self, conn: &mut E::Conn, step: u32, message: String, attempts: u32) -> String {
        let blockers = self.engine.blockers(conn, self.files.schema(step)).await;
        crate::traces::spans::blocked_by(&blockers);
        lock_wait::blocked_message(&message, self.timeouts(step).lock_ms, attempts, &blockers)
    }

    /// A failure of the database under a unit (the connection lost, the
    /// server read-only, the pool exhausted, the lease lost) outside its
    /// migrations' statements, placed at the unit's first step not
    /// committed: reported like a failed migration, with what committed
    /// and what did not.
    fn placed(&self, error: UnitError, unit: &Unit, progress: &Progress) -> UnitError {
        let cause = match &error {
            UnitError::Other(DbError::Server(ServerError::ConnectionLost(_))) => Cause::ConnectionLost,
            UnitError::Other(DbError::Server(ServerError::ReadOnly(_))) => Cause::ReadOnly,
            UnitError::Other(DbError::Server(ServerError::PoolExhausted(_))) => Cause::PoolExhausted,
            UnitError::Other(DbError::Lock(LockError::Lost)) => Cause::LockLost,
            _ => return error,
        };
        let Some(&step) = unit.steps.iter().find(|&&step| !progress.has_committed(step)) else { return error };
        let UnitError::Other(inner) = error else { return error };
        let message = match inner {
            DbError::Server(ServerError::ConnectionLost(message))
            | DbError::Server(ServerError::ReadOnly(message))
            | DbError::Server(ServerError::PoolExhausted(message)) => message,
            other => other.to_string(),
        };
        let failure = Failure { message, offset: None, line: None, cause };
        UnitError::Migration { step, failure, partly: false, attempts: 1 }
    }

    /// [`Run::unit`] once its schema is usable on `conn`; `resume`: a retry,
    /// which skips what committed before.
    async fn unit_entered(
        &self,
        conn: &mut E::Conn,
        unit: &Unit,
        progress: &Progress,
        resume: bool,
    ) -> Result<(), UnitError> {
        let steps: Vec<u32> = if resume {
            unit.steps.iter().copied().filter(|&step| !progress.has_committed(step)).collect()
        } else {
            unit.steps.clone()
        };
        let tenant = self
            .plan
            .new_tenant
            .as_deref()
            .filter(|tenant| unit.steps.is_empty() || self.plan.schemas[unit.schema as usize] == *tenant)
            .filter(|_| !progress.tenant_created.load(Ordering::SeqCst));
        if let Some(version_id) = self.one_message_version(&steps, tenant, progress) {
            return self.one_message(conn, &steps, version_id, progress).await;
        }
        // A failed piece's transaction is rolled back where it failed.
        self.in_pieces(conn, steps, tenant, progress).await.map(drop)
    }

    /// The version's id when `steps` may run as one message (see
    /// [`Engine::ONE_MESSAGE`]): the version's row committed already, no new
    /// tenant, forward steps that execute, each in the unit's transaction
    /// (no directive that commits around it) and read whole by the
    /// tokenizer — so nothing of a file can run into the next one's text.
    fn one_message_version(&self, steps: &[u32], tenant: Option<&str>, progress: &Progress) -> Option<i64> {
        let version_id = progress.version()?;
        let plain = |step: u32| {
            self.plan.steps.at(step).execute
                && !self.files.runs_alone(step)
                && self.files.backfill(step).is_none()
                && !self.files.commits_after(step)
                && self.readable[self.plan.steps.at(step).migration as usize]
        };
        let fits = self.engine.one_message()
            && tenant.is_none()
            && !self.request.dry_run
            && self.plan.direction == Direction::Forward
            && !steps.is_empty()
            && steps.iter().all(|&step| plain(step));
        fits.then_some(version_id)
    }

    /// The text of [`Self::one_message`]: `begin`, each file with its
    /// time-outs (written again only when they change), the unit's rows,
    /// `commit`; with each file's characters in it, (start, end], and its
    /// step.
    fn message(&self, steps: &[u32], version_id: i64) -> Result<(String, Vec<FileSpan>), DbError> {
        let mut text = String::new();
        // Characters written so far (PostgreSQL counts positions in them).
        let mut length = 0;
        let mut push = |text: &mut String, part: &str| {
            text.push_str(part);
            length += part.chars().count();
            length
        };
        push(&mut text, E::BEGIN);
        let mut start = push(&mut text, ";\n");
        // Each file's characters in the text, (start, end], and its step.
        let mut files: Vec<FileSpan> = Vec::with_capacity(steps.len());
        let mut current = None;
        let mut entered_schema = false;
        for &step in steps {
            if let Some(observer) = self.request.observer {
                observer.running(self.files.schema(step), self.files.file(step));
            }
            let timeouts = self.timeouts(step);
            if current != Some(timeouts) {
                push(&mut text, &self.engine.timeouts_text(timeouts));
                start = push(&mut text, ";\n");
                current = Some(timeouts);
            }
            if let Some(set) = self.schema_text(step, true, &mut entered_schema) {
                push(&mut text, &set);
                start = push(&mut text, ";\n");
            }
            let sql = self.files.text(step).replace(&self.settings.placeholder, self.files.schema(step));
            let end = push(&mut text, &sql);
            files.push((start, end, step));
            start = push(&mut text, SEPARATOR);
        }
        let rows: Vec<Record<'_>> = steps
            .iter()
            .map(|&s| Record { migration: self.files.migration(s), schema: self.files.schema(s) })
            .collect();
        let entries = Entries { rows: &rows, created: self.request.created, version_id };
        if let Some(fence) = self.engine.fence_text(self.lock) {
            text.push_str(&fence);
            text.push_str(";\n");
        }
        text.push_str(&self.engine.record_text(&entries)?);
        text.push_str(";\n");
        text.push_str(self.engine.commit_text());
        Ok((text, files))
    }

    /// A unit in one round trip: `begin`, each file with its time-outs
    /// (written again only when they change), the unit's rows, `commit`,
    /// as one text. A failure rolls the whole unit back and is placed in
    /// the file its offset falls in, at that file's own offset — as if the
    /// file had run alone.
    async fn one_message(
        &self,
        conn: &mut E::Conn,
        steps: &[u32],
        version_id: i64,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        let (text, files) = self.message(steps, version_id)?;
        // Its files' spans share the message's time (one round trip).
        let spans: Vec<(u32, Otel)> = steps.iter().map(|&step| (step, self.file_span(step, true))).collect();
        let failure = match self.engine.execute_message(conn, &text).await {
            Ok(()) => {
                self.committed(progress, steps);
                return Ok(());
            }
            Err(failure) => failure,
        };
        let in_file = failure.offset.and_then(|offset| transactions::place_in_message(&files, SEPARATOR.len(), offset));
        if let Some((_, Some(span))) = spans.iter().find(|(step, _)| in_file.is_some_and(|(failed, _)| failed == *step))
        {
            crate::traces::spans::unit_failed(span, failure.cause.name(), &failure.message);
        }
        drop(spans);
        let _ = self.engine.rollback(conn).await;
        if failure.cause == Cause::LockLost {
            return Err(UnitError::Other(DbError::Lock(LockError::Lost)));
        }
        let lost = matches!(failure.cause, Cause::ConnectionLost | Cause::ReadOnly | Cause::PoolExhausted);
        if !E::MESSAGE_OFFSETS && !lost {
            // Nothing of the unit committed: run it again file by file,
            // whose failure says where it is.
            crate::traces::spans::message_failed();
            return self.in_pieces(conn, steps.iter().copied(), None, progress).await.map(drop);
        }
        Err(match (failure.cause, in_file) {
            (Cause::ConnectionLost, _) => {
                UnitError::Other(DbError::Server(ServerError::ConnectionLost(failure.message)))
            }
            (Cause::ReadOnly, _) => UnitError::Other(DbError::Server(ServerError::ReadOnly(failure.message))),
            (Cause::PoolExhausted, _) => UnitError::Other(DbError::Server(ServerError::PoolExhausted(failure.message))),
            (_, Some((step, offset))) => {
                let failure = Failure { offset: Some(offset), ..failure };
                UnitError::Migration { step, failure, partly: false, attempts: 1 }
            }
            (_, None) => UnitError::Other(DbError::Books(failure.message)),
        })
    }

    /// Runs `steps` on `conn` in the pieces core's
    /// `run::transactions::split` cuts them into: each transaction begun,
    /// its files executed, then committed with their rows; a file that
    /// cannot run in a transaction executed alone and recorded right after
    /// it. A new `tenant` is created in the first piece. A dry run's one
    /// transaction is left open and its steps returned, to roll back; a
    /// failed piece's transaction is rolled back here.
    pub(super) async fn in_pieces(
        &self,
        conn: &mut E::Conn,
        steps: impl IntoIterator<Item = u32>,
        tenant: Option<&str>,
        progress: &Progress,
    ) -> Result<Option<Vec<u32>>, UnitError> {
        let how = Split {
            new_tenant: tenant.is_some(),
            transactional_ddl: E::TRANSACTIONAL_DDL,
            dry_run: self.request.dry_run,
        };
        let mode = |step| self.files.step_mode(step);
        let mut session = Session::default();
        let mut spans = self.whole().then(|| self.schema_spans());
        for piece in transactions::split(steps, how, mode) {
            match piece {
                Piece::TenantAlone => {
                    self.engine.create_tenant(conn, tenant.unwrap_or_default()).await?;
                    // The version's row with it: the version holds the tenant.
                    let version_id = self.version_id(conn, progress).await?;
                    progress.set_version(version_id);
                    progress.tenant_created.store(true, Ordering::SeqCst);
                }
                Piece::Alone(step) => {
                    self.execute_in(&mut spans, conn, step, &mut session, progress).await?;
                    self.record_alone(conn, step, progress).await.map_err(|error| self.unrecorded(&[step], error))?;
                }
                Piece::Backfill(step) => {
                    session.timeouts = None;
                    if let StepEnd::Waiting = self.backfill_step(conn, step, progress).await? {
                        return Err(UnitError::Waiting { step });
                    }
                }
                Piece::Transaction { steps, creates_tenant } => {
                    self.engine.begin(conn).await?;
                    session.timeouts = None;
                    let ran = async {
                        if creates_tenant {
                            self.engine.create_tenant(conn, tenant.unwrap_or_default()).await?;
                        }
                        for &step in &steps {
                            self.execute_in(&mut spans, conn, step, &mut session, progress).await?;
                        }
                        if self.request.dry_run {
                            return Ok(true);
                        }
                        self.close_transaction(conn, &steps, creates_tenant, progress)
                            .await
                            .map_err(|error| self.unrecorded(&steps, error))?;
                        Ok::<_, UnitError>(false)
                    }
                    .await;
                    match ran {
                        // Left open, for the caller to roll back.
                        Ok(true) => return Ok(Some(steps)),
                        Ok(false) => {}
                        Err(error) => {
                            // Only here is a transaction open when a piece
                            // fails (the others run outside one, or end
                            // theirs): rolled back here, so no caller sends
                            // a rollback the server would warn about.
                            let _ = self.engine.rollback(conn).await;
                            return Err(error);
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    /// A fence's refusal to record `steps` (all they ran is rolled back, or
    /// ran outside a transaction), placed at the last of them: the lock
    /// lost ([`Cause::LockLost`]: another mutation may have run them too),
    /// or their transaction not the one begun (a file's doing: the
    /// tenant's own failure, in which the files are named). Any other
    /// error stays as it is.
    fn unrecorded(&self, steps: &[u32], error: DbError) -> UnitError {
        let Some(&step) = steps.last() else { return UnitError::Other(error) };
        let alone = steps.len() == 1 && (self.files.runs_alone(step) || !E::TRANSACTIONAL_DDL);
        let (message, cause, partly) = match error {
            DbError::Lock(LockError::Lost) if alone => (error.to_string(), Cause::LockLost, true),
            DbError::UnitTransaction { message, committed } if steps.len() > 1 => {
                let files: Vec<&str> = steps.iter().map(|&s| self.files.file(s)).collect();
                (
                    format!("{message} (one of the transaction's files: {})", files.join(", ")),
                    Cause::Statement,
                    committed,
                )
            }
            DbError::UnitTransaction { message, committed } => (message, Cause::Statement, committed || alone),
            error => return UnitError::Other(error),
        };
        let failure = Failure { message, offset: None, line: None, cause };
        UnitError::Migration { step, failure, partly, attempts: 1 }
    }

    /// Runs `step`'s file (nothing when core marks it recorded only) within
    /// its span, itself within its schema's span where the pieces span
    /// schemas (`spans`: a whole version in one transaction, a dry run or
    /// `transactionScope: version`), as a unit's files run within the
    /// unit's span. Core orders such a plan file by file over the schemas,
    /// so a schema's span lasts from its first file to its last.
    async fn execute_in(
        &self,
        spans: &mut Option<SchemaSpans>,
        conn: &mut E::Conn,
        step: u32,
        session: &mut Session,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        let file = async {
            if !self.plan.steps.at(step).execute {
                return Ok(());
            }
            traced(self.file_span(step, false), self.execute_file(conn, step, session, progress)).await
        };
        let Some(spans) = spans else { return file.await };
        let schema = self.plan.steps.at(step).schema;
        let files = spans.files.get(schema as usize).copied().unwrap_or_default();
        let span = spans.spans.entry(schema).or_insert_with(|| self.schema_span(step, files)).clone();
        traced(span, file).await
    }

    /// Ends a unit's open transaction: commits `steps` with their rows (and
    /// the version's row, when none has committed yet) and the new tenant
    /// when `creates_tenant` (core's split begins none that would commit
    /// neither, so a version row never commits alone).
    async fn close_transaction(
        &self,
        conn: &mut E::Conn,
        steps: &[u32],
        creates_tenant: bool,
        progress: &Progress,
    ) -> Result<(), DbError> {
        let version_id = self.version_id(conn, progress).await?;
        self.record(conn, steps, version_id).await?;
        self.engine.commit(conn).await?;
        progress.set_version(version_id);
        self.committed(progress, steps);
        if creates_tenant {
            progress.tenant_created.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// `work` within `span`, the span marked failed (with the failure's cause)
/// when a migration's statement failed.
async fn traced(span: Otel, work: impl Future<Output = Result<(), UnitError>>) -> Result<(), UnitError> {
    let Some(span) = span else { return work.await };
    let result = crate::traces::within(Some(span.clone()), work).await;
    if let Err(UnitError::Migration { failure, .. }) = &result {
        crate::traces::spans::unit_failed(&span, failure.cause.name(), &failure.message);
    }
    result
}
