//! A fleet's backfills summed up per file: what an operator watches while
//! they run — how many tenants stand where, the rows done of the rows
//! counted, the pace and the time left — and the few tenants worth a look
//! first, never the whole fleet.
//!
//! The console polls this every two seconds: at 10,000 tenants the list of
//! every backfill is megabytes an answer, the summary a few kilobytes
//! whatever the fleet's size. Memory is bounded the same way: one pass over
//! the backfills, and per file its counts and at most `shown` of them kept
//! ([`summarize`]).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

use crate::migrate::backfill::State;

/// What a summary reads of one tenant's backfill of one file.
pub trait Progress {
    /// The backfill's file.
    fn file(&self) -> &str;
    /// Its tenant (or single schema).
    fn tenant(&self) -> &str;
    /// Where it stands.
    fn state(&self) -> State;
    /// Rows its committed batches changed.
    fn rows_done(&self) -> u64;
    /// Rows present at its start up to its last key (0: not counted yet, or
    /// a backfill repeated until it changes nothing).
    fn rows_estimated(&self) -> u64;
    /// Batches committed.
    fn batches(&self) -> u64;
    /// Rows per second of running, once a batch changed a row.
    fn rows_per_second(&self) -> Option<f64>;
}

/// One file's backfills over the fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSummary<T> {
    /// The file.
    pub file: String,
    /// Tenants with a backfill of it.
    pub tenants: u64,
    /// How many stand where, in [`State::ALL`]'s order.
    pub counts: [u64; 5],
    /// Rows done, each tenant's counted at most up to its estimate (a
    /// tenant's rows inserted after its start are not chased, and a
    /// statement may change more rows than its range holds keys).
    pub rows_done: u64,
    /// Rows counted at the tenants' starts.
    pub rows_estimated: u64,
    /// Running tenants whose first batch has not started: their rows are
    /// not counted yet.
    pub not_started: u64,
    /// The running tenants' rates added up (those with one: the tenants a
    /// runner has taken).
    pub rows_per_second: f64,
    /// The file's time left at that pace: the rows its running tenants have
    /// left, those not started counted at the mean of the tenants counted —
    /// not the longest of the tenants in progress, which says seconds while
    /// thousands wait for a runner. None without a pace.
    pub seconds_left: Option<u64>,
    /// The first `shown` tenants' backfills by state, then by tenant
    /// name (byte order).
    pub shown: Vec<T>,
}

impl<T> FileSummary<T> {
    /// How many stand at `state`.
    pub fn count(&self, state: State) -> u64 {
        self.counts[state as usize]
    }
}

/// A backfill kept for a summary's short list, ordered as it lists them.
struct Kept<T>(T);

impl<T: Progress> Kept<T> {
    fn key(&self) -> (State, &str) {
        (self.0.state(), self.0.tenant())
    }
}

impl<T: Progress> PartialEq for Kept<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T: Progress> Eq for Kept<T> {}

impl<T: Progress> PartialOrd for Kept<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Progress> Ord for Kept<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// A file's summary as the pass goes: its sums, and a max-heap of the
/// `shown` first backfills (the last of them on top, to be dropped first).
struct Tally<T> {
    summary: FileSummary<T>,
    kept: BinaryHeap<Kept<T>>,
    /// Rows the running tenants counted have left.
    rows_left: u64,
    /// Tenants whose rows are counted.
    counted: u64,
}

/// Every file's summary, by file name, in one pass over `backfills`; each
/// keeps at most `shown` of its backfills (by state, then tenant).
pub fn summarize<T: Progress>(backfills: impl IntoIterator<Item = T>, shown: usize) -> Vec<FileSummary<T>> {
    let mut files: BTreeMap<String, Tally<T>> = BTreeMap::new();
    for backfill in backfills {
        let tally = match files.get_mut(backfill.file()) {
            Some(tally) => tally,
            None => files.entry(backfill.file().to_string()).or_insert_with_key(|file| Tally {
                summary: FileSummary {
                    file: file.clone(),
                    tenants: 0,
                    counts: [0; 5],
                    rows_done: 0,
                    rows_estimated: 0,
                    not_started: 0,
                    rows_per_second: 0.0,
                    seconds_left: None,
                    shown: Vec::new(),
                },
                kept: BinaryHeap::new(),
                rows_left: 0,
                counted: 0,
            }),
        };
        add(tally, &backfill);
        if shown == 0 {
            continue;
        }
        let candidate = Kept(backfill);
        if tally.kept.len() < shown {
            tally.kept.push(candidate);
        } else if let Some(mut last) = tally.kept.peek_mut()
            && candidate < *last
        {
            // The last kept goes; the heap settles when `last` drops.
            *last = candidate;
        }
    }
    files
        .into_values()
        .map(|Tally { mut summary, kept, rows_left, counted }| {
            summary.shown = kept.into_sorted_vec().into_iter().map(|Kept(backfill)| backfill).collect();
            summary.seconds_left = seconds_left(&summary, rows_left, counted);
            summary
        })
        .collect()
}

/// Adds one backfill to its file's sums.
fn add<T: Progress>(tally: &mut Tally<T>, backfill: &T) {
    let summary = &mut tally.summary;
    let state = backfill.state();
    summary.tenants += 1;
    summary.counts[state as usize] += 1;
    let (done, estimated) = (backfill.rows_done(), backfill.rows_estimated());
    summary.rows_estimated += estimated;
    summary.rows_done += match estimated {
        0 => done,
        _ => done.min(estimated),
    };
    if estimated > 0 {
        tally.counted += 1;
    }
    if state == State::Running {
        if backfill.batches() == 0 && estimated == 0 {
            summary.not_started += 1;
        }
        tally.rows_left += estimated.saturating_sub(done);
        summary.rows_per_second += backfill.rows_per_second().unwrap_or(0.0);
    }
}

/// The file's time left at its pace (see [`FileSummary::seconds_left`]).
fn seconds_left<T>(summary: &FileSummary<T>, rows_left: u64, counted: u64) -> Option<u64> {
    if summary.rows_per_second <= 0.0 {
        return None;
    }
    let mean = if counted == 0 { 0.0 } else { summary.rows_estimated as f64 / counted as f64 };
    let left = rows_left as f64 + summary.not_started as f64 * mean;
    Some((left / summary.rows_per_second).ceil() as u64)
}

#[cfg(test)]
mod tests;
