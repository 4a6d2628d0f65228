//! A backfill step (`strata:backfill`) on one connection, driven by core's
//! `backfill::Machine`: the shell reads the keys it asks for, runs each
//! batch in a short transaction of its own with the checkpoint core hands
//! back, and waits where the server's pace says (`settings::BackfillPace`).
//!
//! # Invariants
//!
//! - **Every row once.** A batch and its checkpoint commit together, so a
//!   run that stops anywhere (kill -9 included) resumes right after the
//!   last batch that committed, and a statement that is not idempotent
//!   still changes each row once.
//! - **Nothing is recorded before the last batch.** The step's row is
//!   written after this returns (the caller's `record_alone`); a backfill
//!   whose last batch committed but whose row did not is done, and only
//!   recorded, by the next run.
//! - **Values are bound.** Keys travel as bound parameters of the text
//!   core wrote; none is written into SQL.
//! - **A batch waits for a lock no longer than the file allows** and is
//!   retried alone after a lock time-out, up to the file's retries.

use std::time::Instant;

use strata_core::migrate::backfill::{self, Form, Key, KeyValue, Machine, Next, Sizer, Slot, Spec, Target};
use strata_core::migrate::lock_wait;

use crate::db::books::Books;
use crate::db::engine::{Engine, Failure};
use crate::db::error::{Cause, DbError};
use crate::db::executor::{Run, UnitError};
use crate::db::types::{BackfillRow, BackfillState};

/// The values of `binds`, in order: the range's `lower` and `upper` keys'
/// columns, and the batch `limit`. None when a slot names a bound the
/// range does not have (core never writes one).
fn values(binds: &[Slot], lower: Option<&Key>, upper: Option<&Key>, limit: u32) -> Option<Vec<KeyValue>> {
    binds
        .iter()
        .map(|slot| match *slot {
            Slot::Lower(column) => lower?.get(column).cloned(),
            Slot::Upper(column) => upper?.get(column).cloned(),
            Slot::Limit => Some(KeyValue::Int(i64::from(limit))),
        })
        .collect()
}

/// The current time as the books store it.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl<E: Engine> Run<'_, E> {
    /// Runs `step`'s backfill on `conn` (its schema entered, no transaction
    /// open) to its last batch, resuming after the last batch an earlier
    /// run committed. The caller records the step when this returns.
    pub(super) async fn backfill(&self, conn: &mut E::Conn, step: u32) -> Result<(), UnitError> {
        let Some(spec) = self.backfill_of(step) else { return Ok(()) };
        let (schema, file) = (self.schema(step), self.file(step));
        if let Some(observer) = self.request.observer {
            observer.running(schema, file);
        }
        let pace = &self.settings.backfill;
        let _slot = pace.slot().await;
        let stored = self.engine.books().backfill(conn, schema, file).await?;
        let mut row = BackfillRow {
            schema: schema.to_string(),
            file: file.to_string(),
            state: BackfillState::Running,
            progress: Default::default(),
            last_error: None,
            updated: String::new(),
        };
        let mut machine = Machine::new(
            spec.form != Form::Repeated,
            stored.map(|row| row.progress),
            Sizer::new(spec.batch, pace.batch_millis),
        );
        let result = self.batches(conn, step, spec, &mut machine, &mut row).await;
        if let Err(UnitError::Migration { failure, .. }) = &result {
            row.state = BackfillState::Failed;
            row.last_error = Some(failure.message.clone());
            // What the books hold stays: only the state and the error change.
            if let Err(error) = self.write(conn, &mut row).await {
                tracing::warn!(%error, schema, file, "a failed backfill's state could not be written");
            }
        }
        result
    }

    /// The loop of [`Run::backfill`], over `machine`; `row` is what the
    /// books hold.
    async fn batches(
        &self,
        conn: &mut E::Conn,
        step: u32,
        spec: &Spec,
        machine: &mut Machine,
        row: &mut BackfillRow,
    ) -> Result<(), UnitError> {
        let schema = self.schema(step);
        let statement = self.text(step).replace(&self.settings.placeholder, schema);
        let (table, key) = match &spec.form {
            Form::Ranged { table, key } => (table.replace(&self.settings.placeholder, schema), key.as_slice()),
            Form::Repeated => (String::new(), [].as_slice()),
        };
        let failed = |failure: Failure, machine: &Machine| UnitError::Migration {
            step,
            failure,
            partly: machine.stored().batches > 0,
            attempts: 1,
        };
        let casts = match (&spec.form, E::DRIVER) {
            (Form::Ranged { .. }, strata_core::migrate::driver::Driver::Postgres) => {
                let types = self.engine.read_keys(conn, &backfill::sql::key_types(&table, key), &[]).await;
                let types = types.map_err(|failure| failed(failure, machine))?;
                types.into_iter().next().unwrap_or_default().into_iter().map(|value| value.to_string()).collect()
            }
            _ => Vec::new(),
        };
        let target = Target { driver: E::DRIVER, table: &table, key, casts: &casts };
        let timeouts = self.timeouts(step);
        if !E::TRANSACTIONAL_DDL {
            self.engine.set_timeouts(conn, timeouts, false).await?;
        }
        let lost = || Failure {
            message: "the backfill's range lost a bound (please report this)".into(),
            offset: None,
            line: None,
            cause: Cause::Statement,
        };
        loop {
            match machine.next() {
                Next::Done => return Ok(()),
                Next::ReadLast => {
                    let read = self.engine.read_keys(conn, &backfill::sql::last_key(&target), &[]).await;
                    let last = read.map_err(|failure| failed(failure, machine))?.into_iter().next();
                    let estimate = match &last {
                        Some(upper) => {
                            let count = backfill::sql::count_up_to(&target);
                            let bound =
                                values(&count.binds, None, Some(upper), 0).ok_or_else(|| failed(lost(), machine))?;
                            let rows = self.engine.read_keys(conn, &count.sql, &bound).await;
                            let rows = rows.map_err(|failure| failed(failure, machine))?;
                            match rows.first().and_then(|row| row.first()) {
                                Some(KeyValue::Int(n)) => (*n).max(0) as u64,
                                _ => 0,
                            }
                        }
                        None => 0,
                    };
                    machine.last_read(last, estimate);
                    self.engine.begin(conn).await?;
                    self.save(conn, row, machine).await?;
                    self.engine.commit(conn).await?;
                }
                Next::FindEnd { size } => {
                    let (lower, _) = machine.range();
                    let query = backfill::sql::batch_end(&target, lower.is_none(), size);
                    let upper = machine.stored().upper.as_ref();
                    let bound = values(&query.binds, lower, upper, size).ok_or_else(|| failed(lost(), machine))?;
                    let read = self.engine.read_keys(conn, &query.sql, &bound).await;
                    let end = read.map_err(|failure| failed(failure, machine))?.into_iter().next();
                    machine.end_found(end);
                }
                Next::Run { size } => {
                    let (lower, end) = machine.range();
                    let batch = match spec.form {
                        Form::Ranged { .. } => backfill::sql::batch(&target, &statement, lower.is_none()),
                        Form::Repeated => backfill::sql::repeated(E::DRIVER, &statement),
                    };
                    let bound = values(&batch.binds, lower, end, size).ok_or_else(|| failed(lost(), machine))?;
                    self.settings.backfill.wait_for(u64::from(size)).await;
                    let rows = self.batch(conn, step, &batch.sql, &bound, machine, row).await?;
                    self.settings.backfill.refund(u64::from(size).saturating_sub(rows));
                }
            }
        }
    }

    /// One batch in its own transaction with its checkpoint; a lock
    /// time-out rolls it back and runs it again after a wait, up to the
    /// file's retries. The rows it changed.
    async fn batch(
        &self,
        conn: &mut E::Conn,
        step: u32,
        sql: &str,
        bound: &[KeyValue],
        machine: &mut Machine,
        row: &mut BackfillRow,
    ) -> Result<u64, UnitError> {
        let timeouts = self.timeouts(step);
        let mut attempts = lock_wait::Attempts::default();
        loop {
            self.engine.begin(conn).await?;
            if E::TRANSACTIONAL_DDL {
                self.engine.set_timeouts(conn, timeouts, true).await?;
            }
            let started = Instant::now();
            let failure = match self.engine.execute_bound(conn, sql, bound).await {
                Ok(rows) => {
                    let elapsed = started.elapsed().as_millis() as u64;
                    machine.ran(rows, elapsed);
                    self.save(conn, row, machine).await?;
                    self.engine.commit(conn).await?;
                    crate::telemetry::backfill_batch(rows);
                    return Ok(rows);
                }
                Err(failure) => failure,
            };
            let _ = self.engine.rollback(conn).await;
            if failure.cause == Cause::LockTimeout {
                let seen = lock_wait::TimedOut { blocker_on_schema: true, others_committed: true };
                if let Some(retry) = attempts.after_time_out(timeouts.retries, seen) {
                    crate::telemetry::lock_timed_out(true, false);
                    self.wait_before_retry(step, retry, seen).await;
                    continue;
                }
            }
            let partly = machine.stored().batches > 0 || failure.cause == Cause::LockTimeout;
            return Err(UnitError::Migration { step, failure, partly, attempts: attempts.made.max(1) });
        }
    }

    /// Writes `row` with `machine`'s progress, on `conn` (in the
    /// transaction open there).
    async fn save(&self, conn: &mut E::Conn, row: &mut BackfillRow, machine: &Machine) -> Result<(), UnitError> {
        row.progress = machine.stored().clone();
        if row.progress.done {
            row.state = BackfillState::Done;
        }
        Ok(self.write(conn, row).await?)
    }

    /// Writes `row` as it is, stamped now.
    async fn write(&self, conn: &mut E::Conn, row: &mut BackfillRow) -> Result<(), DbError> {
        row.updated = now();
        self.engine.books().save_backfill(conn, row).await
    }
}
