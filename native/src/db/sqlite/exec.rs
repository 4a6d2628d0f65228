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
//! This is the workspace's one `unsafe` code (the lint is `deny`, not
//! `forbid`, for it): one FFI call on a handle sqlx guarantees is ours for
//! as long as the guard lives, with a NUL-terminated text and SQLite's own
//! error string freed by SQLite.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char};
use std::ptr;

use libsqlite3_sys as ffi;
use sqlx::AssertSqlSafe;
use sqlx::sqlite::SqliteConnection;
use strata_core::migrate::failure;

use crate::db::engine::Failure;
use crate::db::error::{Cause, DbError};

/// Runs `text` (statements separated by `;`, no results read) on `conn` in
/// one call; stops at the first statement that fails. A text holding a NUL
/// character, which SQLite's C interface cannot be given, runs through
/// sqlx.
pub(super) async fn exec(conn: &mut SqliteConnection, text: &str) -> Result<(), Failure> {
    let Ok(c_text) = CString::new(text) else {
        return sqlx::raw_sql(AssertSqlSafe(text)).execute(conn).await.map(|_| ()).map_err(|e| Failure::from_sqlx(&e));
    };
    let mut locked = conn.lock_handle().await.map_err(|e| Failure::from_sqlx(&e))?;
    let handle = locked.as_raw_handle();
    let run = || {
        let mut message: *mut c_char = ptr::null_mut();
        // SAFETY: `handle` is the connection's open handle, locked away from
        // sqlx's thread while `locked` lives (it outlives this call);
        // `c_text` is NUL-terminated and outlives the call; no callback is
        // given; `message` is SQLite's to allocate and ours to free below.
        let code = unsafe { ffi::sqlite3_exec(handle.as_ptr(), c_text.as_ptr(), None, ptr::null_mut(), &mut message) };
        if code == ffi::SQLITE_OK {
            return Ok(());
        }
        // SAFETY: the same handle, still locked; `message`, when SQLite set
        // it, is a NUL-terminated string it allocated, freed once here.
        let (extended, said) = unsafe {
            let extended = ffi::sqlite3_extended_errcode(handle.as_ptr());
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
    };
    // The service's runtime has other threads to move its tasks to; a
    // command's runs on this one, which has nothing else to do meanwhile.
    let result = match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(run),
        _ => run(),
    };
    drop(locked);
    result
}

/// [`exec`] for the service's own statements (attachments, folds): a
/// failure as a [`DbError`].
pub(super) async fn batch(conn: &mut SqliteConnection, text: &str) -> Result<(), DbError> {
    exec(conn, text).await.map_err(|failure| match failure.cause {
        Cause::ReadOnly => DbError::ReadOnlyServer(failure.message),
        Cause::ConnectionLost => DbError::ConnectionLost(failure.message),
        _ => DbError::Books(failure.message),
    })
}

/// SQLite's extended result code and message as a [`Failure`], classified
/// as sqlx's errors are ([`Cause::of`]).
fn failure_of(extended: i32, message: String) -> Failure {
    let code = extended.to_string();
    let cause = Cause::of_answer(failure::Answer {
        sqlstate: &code,
        mysql_number: u32::try_from(extended).ok(),
        message: &message,
    });
    Failure { message, offset: None, line: None, cause }
}
