//! One tenant's backfill of one file, as a state machine the shell drives
//! (the quinn-proto way: no I/O, no clock here). The shell asks
//! [`Machine::next`] and does what it says — reads the largest key, reads
//! where the next range ends, runs a batch — and reports each answer back;
//! after each batch it stores what [`Machine::ran`] returns in that
//! batch's own transaction.
//!
//! A ranged backfill:
//!
//! ```text
//! ReadLast ──last_read──▶ FindEnd ──ends_found──▶ Run ──ran──▶ (Run ──ran──▶)* FindEnd … ──▶ Done
//!    │ (empty table)                                 (range ended at the upper key)
//!    └──────────────────────────────────────────────────────────────────▶ Done
//! ```
//!
//! A repeated one: `Run` until a run changes no row, then `Done`.
//!
//! Invariants (the unit tests and the property test in
//! `core/tests/properties.rs` check them over random runs and
//! interruptions):
//! - The upper key is read once, when the backfill starts, and stored; a
//!   resumed backfill keeps it, so rows inserted since are not chased.
//! - Each range starts strictly after the stored checkpoint (`after`) and
//!   ends at a key no greater than the upper key; the checkpoint moves to
//!   its end only with the batch that ran it.
//! - So over any run, interrupted at any point (a batch whose transaction
//!   did not commit is lost with its checkpoint, and the machine restarts
//!   from the last committed [`Stored`]), every key present at the start
//!   that is ≤ the upper key falls in exactly one committed range, and a
//!   key above it in none.
//! - Ends read together run in key order, each range starting where the one
//!   before ended; none survives an interruption (the machine restarts from
//!   the books), and a batch size that shrank below theirs drops them.
//! - Keys are compared only by the engine: the machine tells a range's end
//!   from the upper key by equality, never by an order of its own (a
//!   collation may order text otherwise).

use std::collections::VecDeque;

use crate::migrate::backfill::key::Key;
use crate::migrate::backfill::pace::Sizer;

/// What the books keep for one tenant's backfill of one file (the shell
/// stores it in `svc_backfills` in the batch's own transaction).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stored {
    /// The end of the last committed range (None: none yet); the next range
    /// starts strictly after it.
    pub after: Option<Key>,
    /// The largest key when the backfill started (None: not read yet, or a
    /// repeated backfill).
    pub upper: Option<Key>,
    /// Rows the committed batches changed.
    pub rows_done: u64,
    /// Batches committed.
    pub batches: u64,
    /// Rows up to the upper key when the backfill started (0 for a repeated
    /// backfill).
    pub rows_estimated: u64,
    /// The last batch committed: nothing remains.
    pub done: bool,
    /// Milliseconds runners spent on it: its batches and the waits between
    /// them (the server's budget, lock retries), not the time it was
    /// paused or waited for a runner.
    pub running_ms: u64,
}

/// What the shell does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Read the largest key ([`crate::migrate::backfill::sql::last_key`]) and
    /// the rows up to it ([`crate::migrate::backfill::sql::count_up_to`]),
    /// then report them with [`Machine::last_read`] and store
    /// [`Machine::stored`].
    ReadLast,
    /// Read where the ranges of the next `size` keys end — one, or several
    /// at once ([`crate::migrate::backfill::sql::batch_ends`] from the lower
    /// bound of [`Machine::range`] to the stored upper key) — then report
    /// them with [`Machine::ends_found`] (or the one with
    /// [`Machine::end_found`]).
    FindEnd {
        /// The keys the range should hold.
        size: u32,
    },
    /// Run a batch — the range of [`Machine::range`], or for a repeated
    /// backfill the statement with `size` bound as its limit — in a
    /// transaction with what [`Machine::ran`] returns.
    Run {
        /// The batch's size (a repeated backfill's limit).
        size: u32,
    },
    /// Nothing remains.
    Done,
}

/// A range found and not run yet.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    /// Its last key (inclusive).
    end: Key,
    /// The keys it was asked to hold.
    size: u32,
}

/// One tenant's backfill of one file over time.
#[derive(Debug, Clone)]
pub struct Machine {
    ranged: bool,
    stored: Stored,
    sizer: Sizer,
    pending: Option<Pending>,
    /// The ends of the ranges read with the pending one, in key order, each
    /// holding `pending.size` keys (the last may be the upper key): run in
    /// turn unless the batch size shrinks below theirs.
    ahead: VecDeque<Key>,
}

impl Machine {
    /// The backfill of the directive's form (`ranged`: with table and key),
    /// from what the books hold (`stored`; None: never started), sized by
    /// `sizer`. A stored checkpoint at the upper key is done.
    pub fn new(ranged: bool, stored: Option<Stored>, sizer: Sizer) -> Self {
        let mut stored = stored.unwrap_or_default();
        if ranged && stored.after.is_some() && stored.after == stored.upper {
            stored.done = true;
        }
        Machine { ranged, stored, sizer, pending: None, ahead: VecDeque::new() }
    }

    /// What the shell does next: ranged — [`Next::ReadLast`] (no upper key
    /// yet), then [`Next::FindEnd`] and [`Next::Run`] alternately, then
    /// [`Next::Done`]; repeated — [`Next::Run`] until a run changed no row,
    /// then [`Next::Done`].
    pub fn next(&self) -> Next {
        if self.stored.done {
            return Next::Done;
        }
        if !self.ranged {
            return Next::Run { size: self.sizer.size() };
        }
        match (&self.stored.upper, &self.pending) {
            (None, _) => Next::ReadLast,
            (Some(_), None) => Next::FindEnd { size: self.sizer.size() },
            (Some(_), Some(pending)) => Next::Run { size: pending.size },
        }
    }

    /// The answer to [`Next::ReadLast`]: the largest key at the start and
    /// the rows up to it; `None`: the table is empty, and the backfill is
    /// done. Ignored at any other time.
    pub fn last_read(&mut self, last: Option<Key>, estimate: u64) {
        if self.next() != Next::ReadLast {
            return;
        }
        match last {
            Some(last) => {
                self.stored.upper = Some(last);
                self.stored.rows_estimated = estimate;
            }
            None => {
                self.stored.rows_estimated = 0;
                self.stored.done = true;
            }
        }
    }

    /// The answer to [`Next::FindEnd`]: the end of the next range (`None`:
    /// fewer keys remain than asked, and the range ends at the upper key).
    /// Ignored at any other time.
    pub fn end_found(&mut self, end: Option<Key>) {
        self.ends_found(end.into_iter().collect(), 1);
    }

    /// The answer to [`Next::FindEnd`] for the next `asked` ranges at once
    /// ([`crate::migrate::backfill::sql::batch_ends`]): their ends in key
    /// order, each `size` keys after the one before. Fewer than `asked`:
    /// fewer keys remain, and the range after the last ends at the upper
    /// key. The first runs next; the others in turn after it while the
    /// batch size stays at least theirs (a slower batch makes the machine
    /// read the next ends again at the smaller size). Ignored at any other
    /// time.
    pub fn ends_found(&mut self, ends: Vec<Key>, asked: usize) {
        let Next::FindEnd { size } = self.next() else { return };
        let Some(upper) = self.stored.upper.clone() else { return };
        let mut ends: VecDeque<Key> = ends.into_iter().take(asked.max(1)).collect();
        if ends.len() < asked.max(1) && ends.back() != Some(&upper) {
            ends.push_back(upper);
        }
        let Some(end) = ends.pop_front() else { return };
        self.pending = Some(Pending { end, size });
        self.ahead = ends;
    }

    /// The range to run now: its lower bound (exclusive; None: from the
    /// start) and its end (inclusive; None until [`Machine::end_found`], and
    /// always for a repeated backfill). The lower bound is also the one to
    /// read the next end from.
    pub fn range(&self) -> (Option<&Key>, Option<&Key>) {
        (self.stored.after.as_ref(), self.pending.as_ref().map(|p| &p.end))
    }

    /// A batch ran: it changed `rows` and took `elapsed_ms`. Returns what to
    /// store with it, in its transaction: the checkpoint moved to the
    /// range's end (done once that is the upper key; a repeated backfill is
    /// done when a run changed no row), the counts, and the sizer fed (with
    /// the keys a range held, or a repeated run's rows). Ignored (what the
    /// books hold returned) when nothing was to run.
    pub fn ran(&mut self, rows: u64, elapsed_ms: u64) -> Stored {
        if !matches!(self.next(), Next::Run { .. }) {
            return self.stored.clone();
        }
        self.stored.rows_done = self.stored.rows_done.saturating_add(rows);
        self.stored.batches += 1;
        if self.ranged {
            if let Some(Pending { end, size }) = self.pending.take() {
                self.stored.done = self.stored.upper.as_ref() == Some(&end);
                self.stored.after = Some(end);
                self.sizer.observe(u64::from(size), elapsed_ms);
                // The next range read with this one, if its size still fits.
                match self.ahead.pop_front() {
                    Some(end) if !self.stored.done && self.sizer.size() >= size => {
                        self.pending = Some(Pending { end, size });
                    }
                    _ => self.ahead.clear(),
                }
            }
        } else if rows == 0 {
            self.stored.done = true;
        } else {
            self.sizer.observe(rows, elapsed_ms);
        }
        self.stored.clone()
    }

    /// What the books hold now (after [`Machine::last_read`] the shell
    /// stores it too, so a resumed backfill keeps the same upper key).
    pub fn stored(&self) -> &Stored {
        &self.stored
    }

    /// A runner spent `ms` on it since it last said so (stored with the
    /// next checkpoint: the rate and the time left are read from it).
    pub fn spent(&mut self, ms: u64) {
        self.stored.running_ms = self.stored.running_ms.saturating_add(ms);
    }
}

/// How fast a backfill went while a runner ran it, and how long it has
/// left at that rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Rows its batches changed per second of running (None before a batch
    /// changed a row).
    pub rows_per_second: Option<f64>,
    /// Seconds left at that rate, rounded up: 0 once done; None without a
    /// rate or, for a backfill repeated until it changes nothing, an
    /// estimate of its rows.
    pub seconds_left: Option<u64>,
}

/// The [`Estimate`] of a backfill from what the books hold of it: its
/// rows over its running time (paused time is not counted, so a resumed
/// backfill's rate is its own, not diluted by the pause).
pub fn estimate(stored: &Stored) -> Estimate {
    let rows_per_second = match (stored.rows_done, stored.running_ms) {
        (0, _) | (_, 0) => None,
        (rows, ms) => Some(rows as f64 * 1000.0 / ms as f64),
    };
    let seconds_left = match (stored.done, rows_per_second, stored.rows_estimated) {
        (true, ..) => Some(0),
        (false, Some(rate), estimated) if estimated > 0 => {
            let left = estimated.saturating_sub(stored.rows_done) as f64;
            Some((left / rate).ceil() as u64)
        }
        _ => None,
    };
    Estimate { rows_per_second, seconds_left }
}

#[cfg(test)]
mod tests;
