//! The mutation lock as a lease: one row of `svc.svc_lock`, taken when free
//! or expired, renewed in the background every third of its length,
//! released at the end — each in a short transaction of its own. Used by the
//! drivers whose session locks are not exclusive on the topologies their
//! users run: PostgreSQL behind a pooler in transaction mode (an advisory
//! lock stays with a pooled server connection and is granted to every client
//! that lands on it) and MySQL/MariaDB on Galera (`GET_LOCK` is node-local;
//! a row replicates, and two nodes taking it at once conflict at
//! certification, one of them failing).
//!
//! # Invariants
//!
//! - At most one holder at a time: taking is one statement that changes the
//!   row only when it has expired, in the database's clock.
//! - A holder that died blocks the next mutation for at most the lease's
//!   length (`lockLeaseSeconds`).
//! - A holder that could not renew for a whole lease, or found the row
//!   taken, is marked lost; the executor stops before its next unit.
//! - **A lease is a fence, not only a flag.** A holder paused past its
//!   lease (SIGSTOP, a VM frozen, a long GC-like stall) resumes believing
//!   it holds it while another mutation already runs: each unit's records
//!   are written only after the unit's own transaction has checked that the
//!   row still names this holder, and that check keeps a taker out until
//!   the transaction ends (`Engine::fence`: PostgreSQL a shared
//!   transaction-level advisory lock that `take` waits for, MySQL/MariaDB a
//!   shared row lock). A unit whose check fails rolls back and stops, so
//!   a file is recorded at most once; a taker waits for a paused holder's
//!   open transaction no longer than `take`'s own lock time-out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use strata_core::migrate::lock_wait;

use crate::db::error::DbError;
use crate::db::error::LockError;

/// The lock's name in messages.
pub(crate) const LEASE_NAME: &str = "svc.svc_lock";

/// How often a mutation asks again for a lease that is held.
const POLL: Duration = Duration::from_millis(250);
/// How long a mutation waits for the lease before giving up.
const WAIT: Duration = Duration::from_secs(600);

/// The three statements of a lease, per driver.
#[async_trait]
pub(crate) trait LeaseRow: Clone + Send + Sync + 'static {
    /// Takes the lease for `holder` for `seconds` if it is free or expired;
    /// whether it was taken. A conflict with a concurrent taker (Galera's
    /// certification) is "not taken".
    async fn take(&self, holder: &str, seconds: u64) -> Result<bool, DbError>;
    /// Extends `holder`'s lease by `seconds` from now; false when another
    /// holder has it.
    async fn renew(&self, holder: &str, seconds: u64) -> Result<bool, DbError>;
    /// Gives `holder`'s lease back.
    async fn release(&self, holder: &str) -> Result<(), DbError>;
    /// The holder text of the lease while it is held (not expired).
    async fn holder(&self) -> Result<Option<String>, DbError>;
}

/// A new holder text: a short id, who asks and since when (what a waiting
/// mutation prints).
pub(crate) fn new_holder() -> String {
    let since = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    lock_wait::lease_holder(&uuid::Uuid::new_v4().simple().to_string()[..12], &who(), &since)
}

/// A held lease.
pub(crate) struct Lease {
    holder: String,
    lost: Arc<AtomicBool>,
    renewer: tokio::task::JoinHandle<()>,
}

impl Lease {
    /// Waits for the lease (up to 10 minutes), then renews it in the
    /// background.
    pub(crate) async fn acquire<R: LeaseRow>(row: &R, seconds: u64) -> Result<Lease, DbError> {
        let holder = new_holder();
        let started = Instant::now();
        let mut said = false;
        while !row.take(&holder, seconds).await? {
            if !said {
                said = true;
                if let Ok(Some(other)) = row.holder().await {
                    tracing::warn!("{}", lock_wait::lease_wait_message(LEASE_NAME, &other));
                }
            }
            if started.elapsed() >= WAIT {
                return Err(DbError::Lock(LockError::Timeout { lock: LEASE_NAME.into(), seconds: WAIT.as_secs() }));
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(Lease::taken(row, holder, seconds))
    }

    /// The lease `holder` has just taken, renewed in the background.
    fn taken<R: LeaseRow>(row: &R, holder: String, seconds: u64) -> Lease {
        let lost = Arc::new(AtomicBool::new(false));
        let renewer = tokio::spawn(renew(row.clone(), holder.clone(), seconds, Arc::clone(&lost)));
        Lease { holder, lost, renewer }
    }

    /// Takes the lease if it is free now (no wait), renewed in the
    /// background like [`Lease::acquire`]'s; `None` while another mutation
    /// holds it.
    pub(crate) async fn try_acquire<R: LeaseRow>(row: &R, seconds: u64) -> Result<Option<Lease>, DbError> {
        let holder = new_holder();
        if !row.take(&holder, seconds).await? {
            return Ok(None);
        }
        Ok(Some(Lease::taken(row, holder, seconds)))
    }

    /// The holder text this lease was taken under (what a unit's fence
    /// matches: [`crate::db::engine::Engine::fence`]).
    pub(crate) fn holder(&self) -> &str {
        &self.holder
    }

    /// Whether the lease is still this holder's.
    pub(crate) fn held(&self) -> bool {
        !self.lost.load(Ordering::SeqCst)
    }

    /// Stops renewing and gives the lease back (when that fails, it
    /// expires on its own).
    pub(crate) async fn release<R: LeaseRow>(self, row: &R) {
        self.renewer.abort();
        if let Err(e) = row.release(&self.holder).await {
            tracing::warn!(error = %e, "releasing the lock {LEASE_NAME} failed; it expires on its own");
        }
    }
}

/// This process, as a lease holder: `user@host pid N`, the user its OS
/// account ([`crate::os_account::OsAccount`]: never `?`, nor `$USER`).
fn who() -> String {
    let account = crate::os_account::OsAccount::current();
    format!("{}@{} pid {}", account.user, account.host, std::process::id())
}

async fn renew<R: LeaseRow>(row: R, holder: String, seconds: u64, lost: Arc<AtomicBool>) {
    let every = Duration::from_secs(seconds.max(3) / 3);
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(every).await;
        match row.renew(&holder, seconds).await {
            Ok(true) => renewed = Instant::now(),
            Ok(false) => {
                tracing::error!("the lock {LEASE_NAME} was taken by another mutation; this one stops");
                lost.store(true, Ordering::SeqCst);
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "renewing the lock {LEASE_NAME} failed; trying again");
                // Lost before it can expire: the next renewal would come too late.
                if renewed.elapsed() + every >= Duration::from_secs(seconds) {
                    lost.store(true, Ordering::SeqCst);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_holder_is_the_os_account_on_this_host_never_a_question_mark() {
        let account = crate::os_account::OsAccount::current();
        let holder = super::who();
        assert_eq!(holder, format!("{}@{} pid {}", account.user, account.host, std::process::id()));
        assert!(!holder.contains('?'), "{holder}");
        // Named by the password database (the test runs as an account it names).
        assert_ne!(account.user, account.uid.map(|uid| uid.to_string()).unwrap_or_default(), "{holder}");
    }
}
