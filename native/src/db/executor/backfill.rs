//! A unit's backfill step (`strata:backfill`): started in the version (its
//! row in `svc_backfills`, with the version's), then run where core's
//! `backfill::runs_in_version` says — here, holding the version's lock (a
//! single schema, a new tenant), or after the version by a runner
//! ([`runner`]), its tenant waiting on it meanwhile.

pub(crate) mod runner;

use strata_core::migrate::backfill;

use crate::db::books::Books;
use crate::db::engine::{Engine, Failure, Transaction};
use crate::db::error::DbError;
use crate::db::executor::backfill::runner::{Backfiller, Ended};
use crate::db::executor::progress::Progress;
use crate::db::executor::{Run, UnitError};
use crate::db::types::{BackfillJob, BackfillState};

/// How a unit's backfill step ended.
pub(super) enum StepEnd {
    /// Its last batch committed, with the file's row (now, or before this
    /// version: a runner finished it since the plan was read).
    Done,
    /// It runs after the version (or is paused): its tenant waits on it.
    Waiting,
}

impl<E: Engine> Run<'_, E> {
    /// `step`'s backfill on `conn` (its schema entered, no transaction
    /// open): started when it has not been (or failed or was cancelled
    /// before: it resumes
    /// after its last committed batch), in a transaction of its own with
    /// the version's row when none has committed yet; then run here when
    /// it runs in the version.
    pub(super) async fn backfill_step(
        &self,
        conn: &mut E::Conn,
        step: u32,
        progress: &Progress,
    ) -> Result<StepEnd, UnitError> {
        let (schema, migration) = (self.files.schema(step), self.files.migration(step));
        let books = self.engine.books();
        let found = self.job_of_this_text(conn, step).await?;
        let state = found.as_ref().map(|job| job.row.state);
        let in_version =
            backfill::runs_in_version(migration.migration_type.is_tenant(), self.plan.new_tenant.is_some());
        match state {
            Some(BackfillState::Done) => return Ok(StepEnd::Done),
            Some(BackfillState::Running | BackfillState::Paused) if !in_version => return Ok(StepEnd::Waiting),
            Some(BackfillState::Running | BackfillState::Paused) => {}
            None | Some(BackfillState::Failed | BackfillState::Cancelled) => {
                self.start_backfill(conn, step, state.is_some(), progress).await?;
            }
        }
        if !in_version {
            return Ok(StepEnd::Waiting);
        }
        // Read again only when this step has just (re)started it.
        let found = match state {
            Some(BackfillState::Running | BackfillState::Paused) => found,
            _ => books.backfill_job(conn, schema, &migration.file).await?,
        };
        let Some(job) = found else {
            return Err(DbError::UnexpectedAnswer(format!("the backfill of {} vanished", migration.file)).into());
        };
        let backfiller = Backfiller {
            engine: self.engine,
            settings: self.settings,
            holder: self.request.request_id,
            quarantines: false,
            unjudged: Default::default(),
        };
        // Batches may have committed before a failure (now or in an earlier run).
        let held = |message: String| UnitError::Migration {
            step,
            failure: Failure::statement(message),
            partly: true,
            attempts: 1,
        };
        if !backfiller.claim(conn, &job).await? {
            return Err(held(format!(
                "the backfill of {} in {schema} is paused or run by another process (a process that died holds \
                 it until its claim is stale, {} s after its last batch); resume it (resumeBackfills) or wait \
                 for it, then run the version again",
                migration.file,
                (self.settings.backfill.stale_ms() + 999) / 1000
            )));
        }
        match backfiller.drive(conn, &job).await? {
            Ended::Done => {
                self.committed(progress, &[step]);
                Ok(StepEnd::Done)
            }
            Ended::Failed(failure) => Err(UnitError::Migration { step, failure, partly: true, attempts: 1 }),
            Ended::Released => Err(held(format!(
                "the backfill of {} in {schema} was paused, or taken by another process, while it ran",
                migration.file
            ))),
        }
    }

    /// Step `step`'s backfill as the books hold it, if any. Started from an
    /// earlier text of the file: its runner runs the stored text, never the
    /// file's. One that ran no batch takes the new text (forgotten here);
    /// one that did is refused, so the change is not lost.
    async fn job_of_this_text(&self, conn: &mut E::Conn, step: u32) -> Result<Option<BackfillJob>, UnitError> {
        let (schema, migration) = (self.files.schema(step), self.files.migration(step));
        let books = self.engine.books();
        let found = books.backfill_job(conn, schema, &migration.file).await?;
        let Some(job) = found
            .as_ref()
            .filter(|job| job.row.state != BackfillState::Done && job.migration.checksum != migration.checksum)
        else {
            return Ok(found);
        };
        let batches = job.row.progress.batches;
        let idle = matches!(job.row.state, BackfillState::Failed | BackfillState::Cancelled);
        if batches > 0 || !idle {
            return Err(UnitError::Migration {
                step,
                failure: Failure::statement(format!(
                    "{} changed since its backfill started in {schema} ({batches} batch(es) of the earlier text \
                     committed, the backfill {}): a backfill runs the text it started with; restore the file, or \
                     cancel the backfill (cancelBackfills) and write the change as a new file",
                    migration.file,
                    job.row.state.as_str()
                )),
                partly: batches > 0,
                attempts: 1,
            });
        }
        books.forget_backfill(conn, schema, &migration.file).await?;
        Ok(None)
    }

    /// Registers step `step`'s backfill (`again`: restarts a failed or
    /// cancelled one, to resume after its last batch), in a transaction of
    /// its own with the version's row when none has committed yet.
    async fn start_backfill(
        &self,
        conn: &mut E::Conn,
        step: u32,
        again: bool,
        progress: &Progress,
    ) -> Result<(), UnitError> {
        let (schema, migration) = (self.files.schema(step), self.files.migration(step));
        let books = self.engine.books();
        self.engine.data_transaction(conn, Transaction::Begin).await?;
        let started = async {
            let version_id = self.version_id(conn, progress).await?;
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
            match again {
                false => {
                    let started = (version_id, self.request.failure_budget);
                    books.register_backfill(conn, schema, migration, started, &now).await?
                }
                true => books.restart_backfill(conn, schema, &migration.file, version_id, &now).await?,
            }
            Ok::<_, DbError>(version_id)
        }
        .await;
        let version_id = match started {
            Ok(version_id) => version_id,
            Err(error) => {
                let _ = self.engine.data_transaction(conn, Transaction::Rollback).await;
                return Err(error.into());
            }
        };
        self.engine.data_transaction(conn, Transaction::Commit).await?;
        progress.set_version(version_id);
        Ok(())
    }
}
