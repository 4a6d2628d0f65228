//! The process's allocator: mimalloc, which returns what is freed to the
//! system at once. (glibc's gives each thread that meets contention an arena
//! of its own and keeps what was freed in each; musl's, the container's, is
//! slow: ARCHITECTURE.md, dependencies.)
//!
//! mimalloc (v3) purges freed memory a second after it was freed, and only
//! when the allocator is next called: a service answering requests one
//! after another kept each request's peak as its resident size for the
//! next (50,000 tenants: the fleet matrix began at 56 MiB, the peak of the
//! tenant list before it). Purged at once, the service goes back to about
//! 28 MiB between requests and no step of `native/benches/service_rss.sh`
//! at 50,000 tenants passes 57 MiB. A `MIMALLOC_PURGE_DELAY` in the
//! environment still decides.
//!
//! One FFI call with plain values, the second `#[allow(unsafe_code)]` of the
//! workspace (the lint is `deny`, not `forbid`).
#![allow(unsafe_code)]

use libmimalloc_sys::{mi_option_set, mi_option_t};

/// mimalloc's global allocator without transparent huge pages (feature
/// `no_thp`: with them, RSS grows in 2 MiB steps).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` (milliseconds), which the sys crate does not
/// name: between `mi_option_eager_commit_delay` (14) and
/// `mi_option_use_numa_nodes` (16) in mimalloc's `mi_option_e`.
const PURGE_DELAY: mi_option_t = 15;

/// Freed memory goes back to the system at once, unless the environment
/// says otherwise (mimalloc reads `MIMALLOC_PURGE_DELAY` itself).
pub(crate) fn purge_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mimalloc's documented call for an option it knows, with
        // a plain integer; options may be changed while the process runs.
        unsafe { mi_option_set(PURGE_DELAY, 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libmimalloc_sys::mi_option_get;

    /// The purge delay mimalloc uses now, in milliseconds.
    fn purge_delay() -> std::ffi::c_long {
        // SAFETY: reads an option mimalloc knows; no pointer involved.
        unsafe { mi_option_get(PURGE_DELAY) }
    }

    #[test]
    fn the_option_set_is_the_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // mimalloc v3's default purge delay is a second: the index is the
        // option it names (no other option defaults to 1000).
        assert_eq!(purge_delay(), 1000);
        purge_at_once();
        assert_eq!(purge_delay(), 0);
    }
}
