//! How long a unit or a backfill batch waits before it runs again after a
//! lock time-out: core's `lock_wait` growth, with the jitter drawn here (the
//! shell's randomness).

use strata_core::migrate::lock_wait;

/// How long to wait before retry `retry` (from 1) after a lock time-out:
/// core's `lock_wait` growth, with the jitter drawn here.
pub(crate) fn jittered_wait_ms(retry: u32) -> u64 {
    let jitter = (uuid::Uuid::new_v4().as_u128() >> 64) as f64 / u64::MAX as f64;
    lock_wait::wait_before_retry_ms(retry, jitter)
}
