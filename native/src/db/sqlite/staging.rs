//! A unit's rows staged in its schema's own file, folded into `svc` in
//! batches: how a SQLite unit commits one file, not two.
//!
//! A unit sent as one message (after the version's first commit) writes its
//! rows into `svc_staged`, a table in its schema's own file, in the unit's
//! own transaction, which then commits that one file (a rollback journal's
//! four syncs). A commit over the schema's file and `svc.db` at once needs
//! SQLite's super-journal: three journals, eleven syncs, three unlinks a
//! unit — three times the migrations' own time over a fleet.
//!
//! Staged rows are folded into `svc.svc_migrations` in one transaction that
//! writes `svc.db` alone: after every [`FOLD_EVERY`] staged units (or
//! [`FOLD_AFTER`], so that a reader sees a version progress), before
//! any transaction of the version that writes `svc` itself (a unit run file
//! by file), and when the version's units are over
//! ([`SqliteEngine::settle`]). Invariants:
//! - **Staged is recorded.** A staged row commits with its unit; before it
//!   is folded, [`MARKER`] (next to the main file, synced with its
//!   directory) names the version, so that a process killed before the fold
//!   leaves the name behind: the next mutation (under the lock, before
//!   planning) and the next start fold every schema file's rows of that
//!   version first ([`SqliteEngine::recover_staged`]).
//! - **A fold writes what committed.** This process keeps, for the units it
//!   staged since the last fold, each committed unit's schema, files and
//!   sequence numbers — what its staged rows say — and a fold writes those
//!   rows from that, each completed with its file's columns from
//!   `svc_staged_files` (in `svc.db`: no tenant file is opened again). A
//!   unit whose call failed was rolled back whole and is not kept.
//! - **Rows keep their order**: each staged row carries the version's next
//!   sequence number and a fold writes them in order, so `svc_migrations`'
//!   ids follow the order units committed, as when each unit wrote them
//!   itself (a recovery after a crash copies file by file).
//! - **A fold is idempotent**: a row already in `svc_migrations` (same
//!   version, schema and file) is not copied again, so a fold cut short is
//!   simply done again.
//! - **Only the version's own rows are folded.** A staged unit deletes the
//!   rows of other versions from its file (folded: a version's rows are all
//!   folded before another starts); rows of an earlier version (folded, and
//!   perhaps reverted since) are never folded again.
//! - `svc_staged` is the service's, as `svc` is: drift's catalog leaves it out.

use std::path::{Path, PathBuf};

use sqlx::{AssertSqlSafe, Connection};
use tokio::io::AsyncWriteExt;

use crate::db::engine::Engine;
use crate::db::error::DbError;
use crate::db::error::OpenError;
use crate::db::sqlite::{SqliteConn, SqliteEngine, sql};

/// The file naming the version whose staged rows may not be folded yet.
/// Schema names cannot contain `.`: no schema's file is named like it.
pub(crate) const MARKER: &str = "svc.staging";

/// Committed units folded at once, at most (in practice [`FOLD_AFTER`]
/// comes first): what the process keeps of them is a few dozen bytes each.
pub(crate) const FOLD_EVERY: usize = 2000;

/// How long staged rows wait for a fold at most (then the next staged unit
/// folds them): what reads `svc_migrations` while a version runs sees it
/// progress every two seconds. Each fold rewrites the pages its rows share
/// with the last (the end of the table, each file's place in the filename
/// index) and journals them first: over 2,000 tenants × 20 files, folding
/// every half second wrote 30.6 MB to `svc.db` and its journal for 11.8 MB
/// of books, every two seconds 18.4 MB — bytes the disk writes beside the
/// tenants' 42 MB, on the same syncs.
pub(crate) const FOLD_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// What the running version staged and has not folded, in this process.
#[derive(Default)]
pub(crate) struct Staging {
    /// The version whose rows are staged.
    version_id: Option<i64>,
    /// The unit about to run, as its staged rows say it.
    running: Option<StagedUnit>,
    /// The units committed since the last fold, in order.
    committed: Vec<StagedUnit>,
    /// The next row's sequence number.
    next: i64,
    /// The version [`MARKER`] names on disk, when this process wrote it.
    marked: Option<i64>,
    /// When the version staged its first row or last folded.
    since: Option<std::time::Instant>,
    /// The files of the version whose columns `svc_staged_files` holds
    /// (committed).
    described: std::collections::HashSet<String>,
    /// The files the unit about to run stages rows of and `svc_staged_files`
    /// lacks: (file, its row's values), written before it runs.
    undescribed: Vec<(String, String)>,
}

/// One staged unit: its schema, the sequence number of its first row, and
/// its rows' files, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StagedUnit {
    pub(crate) schema: String,
    pub(crate) first: i64,
    pub(crate) files: Vec<String>,
}

/// Each row of `units`: (sequence number, schema, file), in order.
fn rows_of(units: &[StagedUnit]) -> impl Iterator<Item = (i64, &str, &str)> {
    units
        .iter()
        .flat_map(|unit| (unit.first..).zip(&unit.files).map(|(seq, file)| (seq, unit.schema.as_str(), file.as_str())))
}

impl Staging {
    /// A unit of `version_id` in `schema` is about to stage a row of each
    /// of `files`: the sequence number of its first.
    pub(crate) fn stage(&mut self, schema: &str, version_id: i64, files: Vec<String>) -> i64 {
        if self.version_id != Some(version_id) {
            // A new version: the last one's rows were all folded (or are
            // the marker's, which the lock folds before any version).
            *self = Staging {
                version_id: Some(version_id),
                marked: self.marked,
                since: Some(std::time::Instant::now()),
                ..Staging::default()
            };
        }
        let first = self.next;
        self.next += files.len() as i64;
        self.running = Some(StagedUnit { schema: schema.to_string(), first, files });
        first
    }

    /// The unit about to run committed: its rows wait for a fold. (One
    /// that failed was rolled back whole; the next unit replaces it.)
    pub(crate) fn committed(&mut self) {
        if let Some(unit) = self.running.take() {
            self.committed.push(unit);
        }
    }
}

impl Staging {
    /// Whether `svc_staged_files` describes `file` for the running version.
    pub(crate) fn is_described(&self, file: &str) -> bool {
        self.described.contains(file)
    }

    /// The files the unit about to run stages rows of and
    /// `svc_staged_files` lacks, with their rows' values: written before it
    /// runs ([`SqliteEngine::describe_files`]).
    pub(crate) fn set_undescribed(&mut self, files: Vec<(String, String)>) {
        self.undescribed = files;
    }
}

impl SqliteEngine {
    fn marker(&self) -> PathBuf {
        self.files.directory.join(MARKER)
    }

    /// Before a staged unit runs: [`MARKER`] names its version, on disk
    /// (the file and its directory synced), once per version.
    pub(super) async fn mark_staging(&self) -> Result<(), DbError> {
        let version_id = {
            let staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
            match staging.version_id {
                Some(id) if staging.marked != Some(id) => id,
                _ => return Ok(()),
            }
        };
        let marker = self.marker();
        let written = async {
            let mut file = tokio::fs::File::create(&marker).await?;
            file.write_all(version_id.to_string().as_bytes()).await?;
            file.sync_all().await?;
            tokio::fs::File::open(&self.files.directory).await?.sync_all().await
        }
        .await;
        written.map_err(|source| DbError::Open(OpenError::Directory { path: marker, source }))?;
        self.staging.lock().unwrap_or_else(|e| e.into_inner()).marked = Some(version_id);
        Ok(())
    }

    /// Whether the unit about to run stages rows of files
    /// `svc_staged_files` does not describe yet.
    pub(super) fn staging_undescribed(&self) -> bool {
        !self.staging.lock().unwrap_or_else(|e| e.into_inner()).undescribed.is_empty()
    }

    /// Before a staged unit runs: `svc_staged_files` describes every file
    /// it stages rows of, committed (once per file and version).
    pub(super) async fn describe_files(&self, conn: &mut SqliteConn) -> Result<(), DbError> {
        let (version_id, undescribed) = {
            let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
            match staging.version_id {
                Some(id) if !staging.undescribed.is_empty() => (id, std::mem::take(&mut staging.undescribed)),
                _ => return Ok(()),
            }
        };
        let values: Vec<String> = undescribed.iter().map(|(_, values)| values.clone()).collect();
        if let Err(e) = super::exec::batch(&mut conn.conn, &sql::stage_files(version_id, &values)).await {
            let _ = sqlx::raw_sql(sql::ROLLBACK).execute(&mut *conn.conn).await;
            return Err(e);
        }
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if staging.version_id == Some(version_id) {
            staging.described.extend(undescribed.into_iter().map(|(file, _)| file));
        }
        Ok(())
    }

    /// Folds the rows of the units committed since the last fold into
    /// `svc_migrations`, in their order, in one transaction on `svc.db`
    /// alone; on a failure they stay pending (and on disk: the marker's
    /// fold finds them). One fold at a time: two tasks folding the same
    /// units would each drain them, the second the units committed since,
    /// which no fold would then write.
    pub(super) async fn fold_pending(&self, conn: &mut SqliteConn) -> Result<(), DbError> {
        let _one_at_a_time = self.folding.lock().await;
        // The text is made under the lock: the units are not copied.
        let (version_id, folding, fold) = {
            let staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
            match staging.version_id {
                Some(id) if !staging.committed.is_empty() => {
                    (id, staging.committed.len(), sql::fold_committed(id, rows_of(&staging.committed)))
                }
                _ => return Ok(()),
            }
        };
        if let Err(e) = super::exec::batch(&mut conn.conn, &fold).await {
            let _ = sqlx::raw_sql(sql::ROLLBACK).execute(&mut *conn.conn).await;
            return Err(e);
        }
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if staging.version_id == Some(version_id) {
            staging.committed.drain(..folding);
            staging.since = Some(std::time::Instant::now());
        }
        Ok(())
    }

    /// After the version's units: the rest folded, the marker removed.
    pub(super) async fn fold_staged(&self, conn: &mut SqliteConn) -> Result<(), DbError> {
        self.fold_pending(conn).await?;
        self.unmark().await;
        Ok(())
    }

    /// Whether staged units wait for a fold: [`FOLD_EVERY`] of them, or
    /// some for [`FOLD_AFTER`].
    pub(super) fn fold_due(&self) -> bool {
        let staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        staging.committed.len() >= FOLD_EVERY
            || (!staging.committed.is_empty() && staging.since.is_some_and(|since| since.elapsed() >= FOLD_AFTER))
    }

    /// One batch of a recovery's fold: its files attached in one call, the
    /// schemas that have `svc_staged` found in one query, their rows of the
    /// version copied in order in one transaction that writes `svc.db`
    /// alone, the files detached.
    async fn fold_batch(&self, conn: &mut SqliteConn, batch: &[String], version_id: i64) -> Result<(), DbError> {
        let attached = self.attach_batch(conn, batch).await?;
        let folded = async {
            let staged: String = sqlx::query_scalar(AssertSqlSafe(sql::with_staged_table(batch)))
                .persistent(false)
                .fetch_one(&mut *conn.conn)
                .await?;
            let staged: Vec<String> = serde_json::from_str(&staged)
                .map_err(|e| DbError::UnexpectedAnswer(format!("the schemas with staged rows: {e}")))?;
            if !staged.is_empty() {
                let fold = sql::fold(&staged, version_id);
                if let Err(e) = super::exec::batch(&mut conn.conn, &fold).await {
                    let _ = sqlx::raw_sql(sql::ROLLBACK).execute(&mut *conn.conn).await;
                    return Err(e);
                }
            }
            Ok(())
        }
        .await;
        if !attached.is_empty()
            && let Err(e) = super::exec::batch(&mut conn.conn, &sql::detach_all(&attached)).await
        {
            tracing::warn!(error = %e, "detach failed");
        }
        folded
    }

    async fn unmark(&self) {
        let marked = self.staging.lock().unwrap_or_else(|e| e.into_inner()).marked.take();
        if marked.is_some() {
            let _ = tokio::fs::remove_file(self.marker()).await;
        }
    }

    /// At start, read-write: [`SqliteEngine::recover_staged`] when no other
    /// process holds the lock (one that does folds itself).
    pub(super) async fn recover_at_start(&self) -> Result<(), DbError> {
        if !tokio::fs::try_exists(self.marker()).await.unwrap_or(false) {
            return Ok(());
        }
        let mut lock = sqlx::SqliteConnection::connect_with(&self.lock_options).await?;
        let recovered = match super::begin_immediate(&mut lock).await? {
            true => self.recover_staged().await,
            false => Ok(()),
        };
        let _ = sqlx::raw_sql(sql::ROLLBACK).execute(&mut lock).await;
        let _ = lock.close().await;
        recovered
    }

    /// Under the lock, before anything else: when [`MARKER`] was left
    /// behind (a process killed, or a fold that failed), folds the rows its
    /// version staged in every schema file of the directory, then removes
    /// it. A marker without a version (cut short while written) was left
    /// before anything was staged.
    pub(super) async fn recover_staged(&self) -> Result<(), DbError> {
        let marker = self.marker();
        let Ok(text) = tokio::fs::read_to_string(&marker).await else { return Ok(()) };
        if let Ok(version_id) = text.trim().parse::<i64>() {
            let schemas = self.schema_files().await;
            tracing::warn!(
                version_id,
                files = schemas.len(),
                "a version's staged rows may not be in svc_migrations (a process stopped before it folded them): folding them now"
            );
            let mut conn = self.connect().await?;
            for batch in schemas.chunks(sql::CATALOGS_AT_ONCE) {
                if self.fold_batch(&mut conn, batch, version_id).await.is_err() {
                    // A file of the batch is not a database, say: one at a time.
                    for schema in batch {
                        let one = std::slice::from_ref(schema);
                        if let Err(error) = self.fold_batch(&mut conn, one, version_id).await {
                            tracing::warn!(schema = %schema, %error, "its staged rows could not be read");
                        }
                    }
                }
            }
        }
        let _ = tokio::fs::remove_file(&marker).await;
        *self.staging.lock().unwrap_or_else(|e| e.into_inner()) = Staging::default();
        Ok(())
    }

    /// The schemas whose files are in the directory: `<schema>.db` and
    /// `<schema>.schema.db`, but for the main file, `svc`'s and the lock's.
    async fn schema_files(&self) -> Vec<String> {
        let mut schemas = Vec::new();
        let Ok(mut entries) = tokio::fs::read_dir(&self.files.directory).await else { return schemas };
        while let Ok(Some(entry)) = entries.next_entry().await {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(schema) = name.strip_suffix(".schema.db").or_else(|| name.strip_suffix(".db")) else { continue };
            let is_main = same_file(&entry.path(), &self.files.main_file);
            if is_main
                || schema.contains('.')
                || schema.eq_ignore_ascii_case("svc")
                || self.files.check(schema).is_err()
            {
                continue;
            }
            if strata_core::migrate::ident::validate_identifier(schema).is_ok() {
                schemas.push(schema.to_string());
            }
        }
        schemas.sort();
        schemas
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn rows_are_numbered_in_order_across_units_only_committed_ones_wait_and_a_new_version_starts_over() {
        let mut staging = Staging::default();
        assert_eq!(staging.stage("t01", 7, files(&["a", "b", "c"])), 0);
        staging.committed();
        // t02's unit fails: rolled back, never committed; its numbers are
        // not used again (gaps are harmless, order is what counts).
        assert_eq!(staging.stage("t02", 7, files(&["a", "b"])), 3);
        assert_eq!(staging.stage("t02", 7, files(&["a", "b"])), 5);
        staging.committed();
        assert_eq!(staging.stage("t01", 7, files(&["d"])), 7);
        staging.committed();
        let waiting: Vec<(&str, i64, usize)> =
            staging.committed.iter().map(|unit| (unit.schema.as_str(), unit.first, unit.files.len())).collect();
        assert_eq!(waiting, [("t01", 0, 3), ("t02", 5, 2), ("t01", 7, 1)]);
        staging.marked = Some(7);
        // The next version: numbered from 0, nothing pending of the last,
        // the marker still known to be on disk until it is removed.
        assert_eq!(staging.stage("t03", 8, files(&["e", "f"])), 0);
        assert!(staging.committed.is_empty());
        assert_eq!((staging.version_id, staging.next, staging.marked), (Some(8), 2, Some(7)));
    }

    #[test]
    fn a_fold_copies_a_range_in_order_guarded_by_version_schema_and_file() {
        let fold = sql::fold(&["t01".to_string(), "t02".to_string()], 7);
        assert!(fold.starts_with("begin;\n") && fold.ends_with("\ncommit"), "{fold}");
        assert!(fold.contains("from \"t01\".svc_staged where version_id = 7 union all"), "{fold}");
        assert!(fold.contains(" union all select seq, "), "{fold}");
        assert!(fold.contains("m.version_id = s.version_id and m.db_schema = s.db_schema and m.filename = s.filename"));
        assert!(fold.contains(") order by s.seq;"), "{fold}");
        // Each row completed with its file's columns, which a row staged by
        // an earlier release carries itself.
        assert!(
            fold.contains(
                "left join svc.svc_staged_files f on f.version_id = s.version_id and f.filename = s.filename"
            ),
            "{fold}"
        );
        assert!(fold.contains("coalesce(f.contents, s.contents)"), "{fold}");
        // What this process committed is written from what it kept: the
        // files' columns from svc_staged_files, no schema file read.
        let units = [
            StagedUnit { schema: "t01".into(), first: 0, files: files(&["a.sql", "b.sql"]) },
            StagedUnit { schema: "t'2".into(), first: 5, files: files(&["a.sql"]) },
        ];
        let fold = sql::fold_committed(7, rows_of(&units));
        assert!(fold.starts_with("begin;\n") && fold.ends_with("\ncommit"), "{fold}");
        assert!(fold.contains("values (0, 't01', 'a.sql'), (1, 't01', 'b.sql'), (5, 't''2', 'a.sql')"), "{fold}");
        assert!(fold.contains("join svc.svc_staged_files f on f.version_id = 7 and f.filename = u.filename"), "{fold}");
        assert!(fold.contains("m.version_id = 7 and m.db_schema = u.db_schema and m.filename = u.filename"), "{fold}");
        assert!(fold.contains(" order by u.seq;"), "{fold}");
        assert!(!fold.contains("svc_staged "), "{fold}");
        // A large fold: one transaction, a statement per thousand rows, in
        // order.
        let many: Vec<StagedUnit> = (0..125)
            .map(|unit| StagedUnit {
                schema: format!("t{unit:03}"),
                first: unit * 20,
                files: (0..20).map(|file| format!("{file:02}.sql")).collect(),
            })
            .collect();
        let fold = sql::fold_committed(7, rows_of(&many));
        assert_eq!(fold.matches("begin;").count(), 1, "{fold}");
        assert!(fold.ends_with(";\ncommit"), "{fold}");
        let statements: Vec<&str> = fold.split("insert into svc.svc_migrations").skip(1).collect();
        assert_eq!(statements.len(), 3, "2,500 rows");
        assert!(fold.contains("(999, 't049', '19.sql')) "), "the first statement ends with the 1,000th row");
        assert!(fold.contains("values (1000, 't050', '00.sql'), "), "the second starts with the next");
        assert!(fold.contains("(2499, 't124', '19.sql')) "), "{fold}");
        // A unit deletes only other versions' rows; its own are a few
        // dozen bytes each, the file's columns left to `svc_staged_files`.
        assert!(sql::stage("t01", 7).contains("delete from \"t01\".svc_staged where version_id <> 7;"));
        assert_eq!(
            sql::staged_row(4, "tenants/001.sql", "t01", 7),
            "(4, '', '', 'tenants/001.sql', 0, 't01', '', '', '', 7)"
        );
        let files = sql::stage_files(7, &["(7, 'a')".to_string(), "(7, 'b')".to_string()]);
        assert!(files.contains("delete from svc.svc_staged_files where version_id <> 7;"), "{files}");
        assert!(files.contains("values (7, 'a'), (7, 'b');"), "{files}");
    }
}
