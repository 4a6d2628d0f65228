//! A unit's whole text in one call into SQLite, on the calling thread.
//!
//! sqlx runs each SQLite connection on a thread of its own and hands every
//! statement's result back through a channel: a unit of 25 statements
//! (`begin`, its files, its rows, `commit`) costs 25 wake-ups of the async
//! side, which measured as the largest part of Strata's time over a bare
//! `sqlite3` session on a fleet. sqlx's documented way out is to lock the
//! connection's handle away from its thread (`lock_handle`) and call
//! SQLite directly; `sqlite3_exec` then runs the text's statements in order
//! and stops at the first that fails, as the channel did, in one call.
//!
//! This is one of the workspace's two `unsafe` modules (the lint is `deny`, not
//! `forbid`, for it): one FFI call on a handle sqlx guarantees is ours for
//! as long as the guard lives, with a NUL-terminated text and SQLite's own
//! error string freed by SQLite.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::ptr;

use libsqlite3_sys as ffi;
use sqlx::AssertSqlSafe;
use sqlx::sqlite::SqliteConnection;
use strata_core::migrate::failure;

use crate::db::engine::Failure;
use crate::db::error::ServerError;
use crate::db::error::{Cause, DbError};

/// Runs `text` (statements separated by `;`, no results read) on `conn` in
/// one call; stops at the first statement that fails. A text holding a NUL
/// character, which SQLite's C interface cannot be given, runs through
/// sqlx.
pub(super) async fn exec(conn: &mut SqliteConnection, text: &str) -> Result<(), Failure> {
    exec_keeping(conn, None, text, None).await.map_err(|(Stopped::Before(failure) | Stopped::Text(failure))| failure)
}

/// Where a [`exec_then_read`] failed.
#[derive(Debug)]
pub(super) enum Stopped {
    /// In the text given to run first: nothing of the unit's text ran.
    Before(Failure),
    /// In the unit's text.
    Text(Failure),
}

/// [`exec`] of `before` (a tenant's attachment, when given), then of
/// `text`, then, when it succeeded, of `read` — in the same hand-over of the
/// connection (one, not three), keeping the first column of the last row
/// `read` returned (a tenant's catalog, read right after its unit): `None`
/// when it returned none, failed — the text's outcome stands whatever the
/// read's — or could not be given to SQLite. A `before` SQLite cannot be
/// given (a NUL character) fails before anything runs.
pub(super) async fn exec_then_read(
    conn: &mut SqliteConnection,
    before: Option<&str>,
    text: &str,
    read: &str,
) -> Result<Option<String>, Stopped> {
    let before = match before.map(CString::new).transpose() {
        Ok(before) => before,
        Err(_) => {
            let message = "the attachment's text holds a NUL character".to_string();
            return Err(Stopped::Before(Failure { message, offset: None, line: None, cause: Cause::Statement }));
        }
    };
    let c_read = CString::new(read).ok();
    let mut kept = None;
    let then_read = c_read.as_deref().map(|read| (read, &mut kept));
    exec_keeping(conn, before.as_deref(), text, then_read).await?;
    Ok(kept)
}

async fn exec_keeping(
    conn: &mut SqliteConnection,
    before: Option<&CStr>,
    text: &str,
    then_read: Option<(&CStr, &mut Option<String>)>,
) -> Result<(), Stopped> {
    let c_text = CString::new(text).ok();
    let ran = {
        let mut locked = conn.lock_handle().await.map_err(|e| Stopped::Before(Failure::from_sqlx(&e)))?;
        let handle = locked.as_raw_handle().as_ptr();
        blocking(|| {
            if let Some(before) = before {
                run_text(handle, before, None).map_err(Stopped::Before)?;
            }
            let Some(c_text) = &c_text else { return Ok(false) };
            run_text(handle, c_text, None).map_err(Stopped::Text)?;
            if let Some((read, kept)) = then_read {
                let _ = run_text(handle, read, Some(kept));
            }
            Ok(true)
        })
    };
    if !ran? {
        // A text holding a NUL character, which SQLite's C interface cannot
        // be given, runs through sqlx (after what was to run before it).
        let ran = sqlx::raw_sql(AssertSqlSafe(text)).execute(conn).await;
        ran.map_err(|e| Stopped::Text(Failure::from_sqlx(&e)))?;
    }
    Ok(())
}

/// One `sqlite3_exec` of `text` on `handle` (locked away from sqlx's thread
/// by the caller for the whole call), each row's first column kept in
/// `kept` when given.
fn run_text(handle: *mut ffi::sqlite3, text: &CStr, kept: Option<&mut Option<String>>) -> Result<(), Failure> {
    let mut message: *mut c_char = ptr::null_mut();
    let (callback, argument): (ffi::sqlite3_callback, *mut c_void) = match kept {
        Some(kept) => (Some(keep_first_column), ptr::from_mut(kept).cast()),
        None => (None, ptr::null_mut()),
    };
    // SAFETY: `handle` is the connection's open handle, which the caller
    // holds locked away from sqlx's thread during this call; `text` is
    // NUL-terminated and outlives the call; the callback, when given,
    // receives `argument`, a `&mut Option<String>` that outlives the call;
    // `message` is SQLite's to allocate and ours to free below.
    let code = unsafe { ffi::sqlite3_exec(handle, text.as_ptr(), callback, argument, &mut message) };
    if code == ffi::SQLITE_OK {
        return Ok(());
    }
    // SAFETY: the same handle, still locked; `message`, when SQLite set it,
    // is a NUL-terminated string it allocated, freed once here.
    let (extended, said) = unsafe {
        let extended = ffi::sqlite3_extended_errcode(handle);
        let said = if message.is_null() {
            CStr::from_ptr(ffi::sqlite3_errstr(code)).to_string_lossy().into_owned()
        } else {
            let said = CStr::from_ptr(message).to_string_lossy().into_owned();
            ffi::sqlite3_free(message.cast());
            said
        };
        (extended, said)
    };
    Err(failure_of(extended, said))
}

/// Runs `work`, which blocks, on the calling thread: the service's runtime
/// has other threads to move its tasks to meanwhile; a command's runtime
/// has one, which has nothing else to do.
pub(super) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// `sqlite3_exec`'s callback for [`exec_then_read`]: keeps the row's first
/// column in the `Option<String>` behind `kept`.
///
/// # Safety
/// `kept` is null or a live, unborrowed `Option<String>`; `values` is null
/// or holds `columns` pointers, each null or a NUL-terminated text.
unsafe extern "C" fn keep_first_column(
    kept: *mut c_void,
    columns: c_int,
    values: *mut *mut c_char,
    _names: *mut *mut c_char,
) -> c_int {
    if columns < 1 || kept.is_null() || values.is_null() {
        return 0;
    }
    // SAFETY: `kept` is the `&mut Option<String>` run_text passed, alive
    // and not otherwise borrowed during the call; `values` holds `columns`
    // pointers, each null (SQL NULL) or a NUL-terminated text SQLite owns
    // for the length of this call.
    unsafe {
        let first = *values;
        let kept = &mut *kept.cast::<Option<String>>();
        *kept = (!first.is_null()).then(|| CStr::from_ptr(first).to_string_lossy().into_owned());
    }
    0
}

/// [`exec`] for the service's own statements (attachments, folds): a
/// failure as a [`DbError`].
pub(super) async fn batch(conn: &mut SqliteConnection, text: &str) -> Result<(), DbError> {
    exec(conn, text).await.map_err(|failure| match failure.cause {
        Cause::ReadOnly => DbError::Server(ServerError::ReadOnly(failure.message)),
        Cause::ConnectionLost => DbError::Server(ServerError::ConnectionLost(failure.message)),
        _ => DbError::Books(failure.message),
    })
}

/// SQLite's extended result code and message as a [`Failure`], classified
/// as sqlx's errors are ([`super::super::error::cause_of`]).
fn failure_of(extended: i32, message: String) -> Failure {
    let code = extended.to_string();
    // Never a MySQL number: SQLITE_IOERR_DIR_FSYNC is 1290, MySQL's
    // read-only server.
    let cause = failure::classify(failure::Answer { sqlstate: &code, message: &message, ..failure::Answer::default() });
    Failure { message, offset: None, line: None, cause }
}

#[cfg(test)]
mod tests {
    use super::{Cause, failure_of};

    #[test]
    fn sqlite_codes_are_not_read_as_mysql_numbers() {
        // SQLITE_IOERR_DIR_FSYNC (10 | 5 << 8) is MySQL's read-only number.
        assert_eq!(failure_of(1290, "disk I/O error".into()).cause, Cause::Statement);
        assert_eq!(failure_of(1, "no such table: t".into()).cause, Cause::Statement);
    }
}
