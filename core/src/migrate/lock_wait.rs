//! How a migration waits for the locks of a live database: every unit runs
//! with a lock time-out, and a unit that hit it is rolled back and retried
//! after a growing, jittered wait — so an application query never queues
//! behind a waiting migration for longer than the time-out, and a unit
//! still waits out a blocker of a few minutes in total.
//!
//! - **Per unit** the effective time-outs are the configuration's
//!   (`lockTimeoutMillis`, `lockRetries`, `statementTimeoutSeconds`),
//!   overridden per file by its directives (`strata:lock-timeout`, …; see
//!   [`crate::migrate::statements`]). A unit of several files uses each
//!   file's time-outs while that file runs, and the retries of the file
//!   that timed out.
//! - **Waits** before retry `n` (from 1): [`FIRST_WAIT_MS`] doubled per
//!   retry, capped at [`LONGEST_WAIT_MS`], scaled by a jitter factor in
//!   `[0.5, 1.5)` the shell draws (this crate draws no random numbers), so
//!   the units of a fleet that hit one blocker do not retry in step.
//! - With the defaults (1 s, 12 retries) a unit gives up after about
//!   3.5 minutes ([`patience_ms`]).
//! - **The version's own units queue without using up retries**
//!   ([`Attempts`]). The units of a fleet whose migrations lock one shared
//!   object (a foreign key to a reference table takes a lock that conflicts
//!   with itself) wait for each other; behind a few of them a unit's wait
//!   exceeds the time-out again and again while the fleet moves on. A
//!   time-out uses up a retry only when a session holds a lock on the
//!   unit's own schema, or when no other unit of the version committed
//!   since the unit's last time-out (or its start): a blocker outside the
//!   version stops everything that needs its lock. Units are finite and
//!   each time-out that is not counted saw one commit, so a unit still
//!   ends.

use crate::migrate::config::Config;
use crate::migrate::statements::FileMode;

/// The wait before the first retry.
pub const FIRST_WAIT_MS: u64 = 500;
/// The longest wait between two attempts.
pub const LONGEST_WAIT_MS: u64 = 30_000;

/// The time-outs a file runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// How long one statement waits for a lock (0: no limit).
    pub lock_ms: u64,
    /// How long one statement may run (0: no limit).
    pub statement_ms: u64,
    /// How often its unit is retried after a lock time-out.
    pub retries: u32,
}

impl Timeouts {
    /// The configuration's.
    pub fn from_config(config: &Config) -> Self {
        Timeouts {
            lock_ms: config.lock_timeout_millis,
            statement_ms: config.statement_timeout_seconds.saturating_mul(1_000),
            retries: config.lock_retries,
        }
    }

    /// These, overridden by a file's directives.
    pub fn for_file(self, mode: &FileMode) -> Self {
        Timeouts {
            lock_ms: mode.lock_timeout_ms.unwrap_or(self.lock_ms),
            statement_ms: mode.statement_timeout_ms.unwrap_or(self.statement_ms),
            retries: mode.lock_retries.unwrap_or(self.retries),
        }
    }
}

/// The wait before retry `retry` (from 1), in milliseconds, given a jitter
/// factor `jitter` in `[0, 1)` drawn by the shell (clamped into it).
pub fn wait_before_retry_ms(retry: u32, jitter: f64) -> u64 {
    let doublings = retry.saturating_sub(1).min(16);
    let base = FIRST_WAIT_MS.saturating_mul(1 << doublings).min(LONGEST_WAIT_MS);
    let factor = 0.5 + jitter.clamp(0.0, 0.999_999);
    (base as f64 * factor) as u64
}

/// How long a unit keeps trying at most, without jitter: every attempt's
/// lock wait plus the waits between them.
pub fn patience_ms(timeouts: Timeouts) -> u64 {
    let waits: u64 = (1..=timeouts.retries).map(|retry| wait_before_retry_ms(retry, 0.5)).sum();
    waits + timeouts.lock_ms.saturating_mul(u64::from(timeouts.retries) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_a_cap_and_jitter_spreads_them() {
        let middle: Vec<u64> = (1..=8).map(|n| wait_before_retry_ms(n, 0.5)).collect();
        assert_eq!(middle, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
        assert_eq!(wait_before_retry_ms(1, 0.0), 250);
        assert_eq!(wait_before_retry_ms(1, 0.999_999_9), 749);
        assert_eq!(wait_before_retry_ms(40, 2.0), 44_999);
        assert_eq!(wait_before_retry_ms(u32::MAX, -1.0), 15_000);
    }

    #[test]
    fn the_defaults_wait_out_a_few_minutes_and_a_file_overrides_them() {
        let defaults = Timeouts { lock_ms: 1_000, statement_ms: 0, retries: 12 };
        assert_eq!(patience_ms(defaults), 211_500 + 13_000);
        let mode = FileMode { lock_timeout_ms: Some(5_000), lock_retries: Some(0), ..FileMode::default() };
        assert_eq!(defaults.for_file(&mode), Timeouts { lock_ms: 5_000, statement_ms: 0, retries: 0 });
        assert_eq!(defaults.for_file(&FileMode::default()), defaults);
        assert_eq!(patience_ms(Timeouts { lock_ms: 0, statement_ms: 0, retries: 0 }), 0);
    }
}

/// What the shell saw right after a unit's lock time-out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut {
    /// A session other than the unit's holds a lock on an object of the
    /// unit's schema.
    pub blocker_on_schema: bool,
    /// Another unit of the version committed since the unit's last
    /// time-out (or since it started).
    pub others_committed: bool,
}

impl TimedOut {
    /// Whether the time-out uses up one of the unit's retries: a blocker
    /// of the schema's own objects, or a version that stood still.
    pub fn counts(self) -> bool {
        self.blocker_on_schema || !self.others_committed
    }
}

/// A unit's attempts across lock time-outs (see the module's rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// Attempts made, the running one included.
    pub made: u32,
    /// Time-outs that used up a retry.
    pub counted: u32,
}

impl Default for Attempts {
    fn default() -> Self {
        Attempts { made: 1, counted: 0 }
    }
}

impl Attempts {
    /// After a time-out, with the unit's `retries`: the retry number to
    /// wait before ([`wait_before_retry_ms`]; a time-out that is not
    /// counted waits as the first retry does, its blocker ends soon), or
    /// `None` when the unit gives up.
    pub fn after_time_out(&mut self, retries: u32, seen: TimedOut) -> Option<u32> {
        if seen.counts() {
            if self.counted >= retries {
                return None;
            }
            self.counted += 1;
        }
        self.made += 1;
        Some(if seen.counts() { self.counted } else { 1 })
    }
}

#[cfg(test)]
mod attempts_tests {
    use super::*;

    const OWN_QUEUE: TimedOut = TimedOut { blocker_on_schema: false, others_committed: true };
    const STOOD_STILL: TimedOut = TimedOut { blocker_on_schema: false, others_committed: false };
    const ON_SCHEMA: TimedOut = TimedOut { blocker_on_schema: true, others_committed: true };

    #[test]
    fn a_blocker_outside_the_version_uses_up_the_retries() {
        let mut attempts = Attempts::default();
        assert_eq!(attempts.after_time_out(2, ON_SCHEMA), Some(1));
        assert_eq!(attempts.after_time_out(2, STOOD_STILL), Some(2));
        assert_eq!(attempts.after_time_out(2, ON_SCHEMA), None);
        assert_eq!(attempts, Attempts { made: 3, counted: 2 });
        let mut none = Attempts::default();
        assert_eq!(none.after_time_out(0, STOOD_STILL), None);
        assert_eq!(none.made, 1);
    }

    #[test]
    fn queueing_behind_the_versions_own_units_does_not() {
        let mut attempts = Attempts::default();
        for _ in 0..50 {
            assert_eq!(attempts.after_time_out(1, OWN_QUEUE), Some(1));
        }
        assert_eq!(attempts.after_time_out(1, STOOD_STILL), Some(1));
        assert_eq!(attempts.after_time_out(1, OWN_QUEUE), Some(1));
        assert_eq!(attempts.after_time_out(1, STOOD_STILL), None);
        assert_eq!(attempts, Attempts { made: 53, counted: 1 });
        // Even with no retries at all: the file's blocker is the fleet itself.
        let mut zero = Attempts::default();
        assert_eq!(zero.after_time_out(0, OWN_QUEUE), Some(1));
        assert_eq!(zero.after_time_out(0, STOOD_STILL), None);
    }
}

/// The longest holder text a lease row takes (MySQL's `varchar(64)`).
pub const LEASE_HOLDER_MAX: usize = 64;

/// The holder text of a lease row (`svc.svc_lock`): the taker's random id,
/// then who took it and when, so a mutation that waits for it can say so;
/// `who` is shortened to keep it within [`LEASE_HOLDER_MAX`] bytes.
pub fn lease_holder(id: &str, who: &str, since_rfc3339: &str) -> String {
    let room = LEASE_HOLDER_MAX.saturating_sub(id.len() + " ".len() + " since ".len() + since_rfc3339.len());
    let mut end = who.len().min(room);
    while !who.is_char_boundary(end) {
        end -= 1;
    }
    format!("{id} {} since {since_rfc3339}", &who[..end])
}

/// The line a mutation that finds the lease taken prints once, from the
/// row's holder text (see [`lease_holder`]; a holder written without who
/// and since is "another mutation").
pub fn lease_wait_message(lock: &str, holder: &str) -> String {
    let who = holder.split_once(' ').map(|(_, who)| who.trim()).filter(|who| !who.is_empty());
    match who {
        Some(who) => format!("the lock {lock} is held by {who}; waiting for it"),
        None => format!("the lock {lock} is held by another mutation; waiting for it"),
    }
}

/// A lock time-out's message once a unit gives up: the engine's
/// `message`, how long each attempt waited and how many were made, and the
/// sessions that block it (one line each, read while they still do).
pub fn blocked_message(message: &str, lock_ms: u64, attempts: u32, blockers: &[String]) -> String {
    let mut text = format!("{message} (lock time-out {lock_ms} ms, {attempts} attempt(s))");
    if blockers.is_empty() {
        text.push_str("; no blocking session is left now");
    } else {
        text.push_str("; blocked by: ");
        text.push_str(&blockers.join("; "));
    }
    text
}

#[cfg(test)]
mod lease_tests {
    use super::*;

    #[test]
    fn a_lease_holder_says_who_and_since_when() {
        let holder = lease_holder("5f0c", "ops@build-7 pid 4242", "2026-11-26T13:20:01Z");
        assert_eq!(holder, "5f0c ops@build-7 pid 4242 since 2026-11-26T13:20:01Z");
        assert_eq!(
            lease_wait_message("svc.svc_lock", &holder),
            "the lock svc.svc_lock is held by ops@build-7 pid 4242 since 2026-11-26T13:20:01Z; waiting for it"
        );
        let long = lease_holder("5f0c9a1b2c3d", &"é".repeat(40), "2026-11-26T13:20:01Z");
        assert!(long.len() <= LEASE_HOLDER_MAX && long.len() >= LEASE_HOLDER_MAX - 1, "{long}");
        assert!(long.ends_with(" since 2026-11-26T13:20:01Z"), "{long}");
        assert_eq!(
            lease_wait_message("svc.svc_lock", "5f0c"),
            "the lock svc.svc_lock is held by another mutation; waiting for it"
        );
    }

    #[test]
    fn a_unit_that_gives_up_names_its_blockers_or_says_none_is_left() {
        let blockers = ["pid 41 (alice, idle in transaction 12 s)".to_string(), "pid 52 (bob)".to_string()];
        assert_eq!(
            blocked_message("canceling statement due to lock timeout", 2_000, 3, &blockers),
            "canceling statement due to lock timeout (lock time-out 2000 ms, 3 attempt(s)); blocked by: \
             pid 41 (alice, idle in transaction 12 s); pid 52 (bob)"
        );
        assert_eq!(
            blocked_message("lock wait", 50, 1, &[]),
            "lock wait (lock time-out 50 ms, 1 attempt(s)); no blocking session is left now"
        );
    }
}
