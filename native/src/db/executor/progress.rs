//! What has committed so far in a version's run, shared by its units.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use strata_core::migrate::plan::StepSet;

/// What has committed so far in a per-schema run.
#[derive(Default)]
pub(super) struct Progress {
    /// The version's id, once a transaction holding its row committed.
    version: Mutex<Option<i64>>,
    /// Steps committed (applied and recorded), a bit each.
    pub(super) steps: Mutex<StepSet>,
    /// The new tenant's creation committed.
    pub(super) tenant_created: AtomicBool,
    /// Steps committed so far, counted as they commit: whether the version
    /// moved on while a unit waited for a lock.
    committed_count: AtomicU64,
}

impl Progress {
    pub(super) fn version(&self) -> Option<i64> {
        *self.version.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set_version(&self, id: i64) {
        self.version.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(id);
    }

    pub(super) fn committed(&self, steps: &[u32]) {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).extend(steps.iter().copied());
        self.committed_count.fetch_add(steps.len() as u64, Ordering::SeqCst);
    }

    /// Where the version stands for a unit of `steps` (its own) waiting
    /// for a lock: steps committed by every unit, and by this one.
    pub(super) fn mark(&self, steps: &[u32]) -> (u64, u64) {
        let own = steps.iter().filter(|&&step| self.has_committed(step)).count() as u64;
        (self.committed_count.load(Ordering::SeqCst), own)
    }

    /// Whether another unit committed a step since `mark` (taken with the
    /// same `steps`); `mark` moves to now.
    pub(super) fn others_committed_since(&self, mark: &mut (u64, u64), steps: &[u32]) -> bool {
        let now = self.mark(steps);
        let others = (now.0 - mark.0).saturating_sub(now.1 - mark.1);
        *mark = now;
        others > 0
    }

    /// Whether a step has committed.
    pub(super) fn has_committed(&self, step: u32) -> bool {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).contains(step)
    }

    /// What committed, once no unit runs any more.
    pub(super) fn into_committed(self) -> StepSet {
        self.steps.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}
