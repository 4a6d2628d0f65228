//! How fast a backfill goes: the size of its next batch, adapted to the
//! time a batch should take ([`Sizer`]), and the rows per second a whole
//! database server allows every backfill on it together ([`RowBudget`]),
//! and when its replicas let a batch start ([`LagWatch`]). Time enters as
//! milliseconds the shell measures.

/// The batch size, adapted so a batch takes about `target_ms`: never above
/// the directive's `batch` (the ceiling), never below 1. It starts at the
/// ceiling; a slow batch shrinks the next in proportion (twice the time
/// wanted: half the rows), a fast one grows it at most ×2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizer {
    ceiling: u32,
    target_ms: u64,
    size: u32,
}

impl Sizer {
    /// A sizer for batches of at most `ceiling` rows (at least 1) that
    /// should each take about `target_ms` (at least 1).
    pub fn new(ceiling: u32, target_ms: u64) -> Self {
        let ceiling = ceiling.max(1);
        Sizer { ceiling, target_ms: target_ms.max(1), size: ceiling }
    }

    /// The size of the next batch.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// A batch of `rows` took `elapsed_ms`: the next size is the rows that
    /// would have taken the target at that rate, at most twice the current
    /// size and the ceiling, at least 1. A batch of no rows tells nothing
    /// and changes nothing; one that took no time doubles the size.
    pub fn observe(&mut self, rows: u64, elapsed_ms: u64) {
        if rows == 0 {
            return;
        }
        let grown = (u64::from(self.size) * 2).min(u64::from(self.ceiling));
        let at_rate = match elapsed_ms {
            0 => u64::MAX,
            ms => u64::try_from(u128::from(rows) * u128::from(self.target_ms) / u128::from(ms)).unwrap_or(u64::MAX),
        };
        self.size = u32::try_from(at_rate.clamp(1, grown)).unwrap_or(self.ceiling);
    }
}

/// One database server's rows-per-second budget, shared by every tenant's
/// backfill on it: a token bucket holding at most one second of rows,
/// full at the start. [`RowBudget::take`] reserves rows and says how long
/// to wait before running them (reservations queue: the budget may run
/// into debt, which later takers wait out); [`RowBudget::refund`] gives
/// back what a batch did not use. 0 rows per second: unlimited, never a
/// wait. Several processes running backfills on one server each keep one,
/// and [`RowBudget::shared_by`] gives each its share of the server's rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowBudget {
    /// The server's rate (`backfill.rowsPerSecond`).
    server_rate: u64,
    /// This process's share of it.
    rows_per_second: u64,
    /// Rows available, in thousandths of a row (one millisecond refills
    /// `rows_per_second` of them exactly); negative: reserved ahead.
    level: i128,
    /// When `level` was last refilled.
    refilled_ms: u64,
}

impl RowBudget {
    /// A full budget of `rows_per_second` at `now_ms` (0: unlimited).
    pub fn new(rows_per_second: u64, now_ms: u64) -> Self {
        RowBudget {
            server_rate: rows_per_second,
            rows_per_second,
            level: Self::capacity(rows_per_second),
            refilled_ms: now_ms,
        }
    }

    /// The server's rate shared by `runners` processes running backfills
    /// on it now (this one included; at least 1): this one's share from
    /// `now_ms` on, rounded down (at least a row a second), so that the
    /// shares never add up to more than the server's rate. What was
    /// reserved ahead stays owed.
    pub fn shared_by(&mut self, runners: u64, now_ms: u64) {
        if self.server_rate == 0 {
            return;
        }
        self.refill(now_ms);
        self.rows_per_second = (self.server_rate / runners.max(1)).max(1);
        self.level = self.level.min(Self::capacity(self.rows_per_second));
    }

    /// This process's rows per second now (0: unlimited).
    pub fn rate(&self) -> u64 {
        self.rows_per_second
    }

    /// Reserves `rows` at `now_ms`: the milliseconds to wait before running
    /// them (0 when the budget holds them now).
    pub fn take(&mut self, rows: u64, now_ms: u64) -> u64 {
        if self.rows_per_second == 0 {
            return 0;
        }
        self.refill(now_ms);
        self.level -= i128::from(rows) * 1000;
        if self.level >= 0 {
            return 0;
        }
        let rate = i128::from(self.rows_per_second);
        u64::try_from((-self.level + rate - 1) / rate).unwrap_or(u64::MAX)
    }

    /// Gives back `rows` reserved and not used (never above one second's
    /// rows).
    pub fn refund(&mut self, rows: u64) {
        if self.rows_per_second == 0 {
            return;
        }
        self.level = (self.level + i128::from(rows) * 1000).min(Self::capacity(self.rows_per_second));
    }

    /// One second of rows, in thousandths.
    fn capacity(rows_per_second: u64) -> i128 {
        i128::from(rows_per_second) * 1000
    }

    /// Adds what the time since the last refill brought, up to capacity.
    fn refill(&mut self, now_ms: u64) {
        let elapsed = now_ms.saturating_sub(self.refilled_ms);
        self.refilled_ms = self.refilled_ms.max(now_ms);
        let brought = i128::from(elapsed) * i128::from(self.rows_per_second);
        self.level = (self.level + brought).min(Self::capacity(self.rows_per_second));
    }
}

/// The other runners holding backfills on one server (fresh claims, by
/// holder), as one of them sees them: how many processes share the
/// server's rows per second ([`RowBudget::shared_by`]), and how many of
/// the server's `backfill.concurrency` places they take — it is the
/// server's, whichever processes run the backfills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Runners {
    /// Processes running backfills on the server, the one asking included.
    pub processes: u64,
    /// Backfills the others hold.
    pub others: usize,
}

impl Runners {
    /// From each holder's count of fresh claims, seen by holder `me`.
    pub fn of<'a>(holders: impl IntoIterator<Item = (&'a str, usize)>, me: &str) -> Runners {
        let others: Vec<usize> =
            holders.into_iter().filter(|(holder, held)| *held > 0 && *holder != me).map(|(_, held)| held).collect();
        Runners { processes: others.len() as u64 + 1, others: others.iter().sum() }
    }

    /// Whether one more backfill may start on the server under
    /// `concurrency`, `mine` running in the process asking. Exact when the
    /// reading and the claim that follows it take turns with the other
    /// runners' (the shell's claim lock); two runners deciding on readings
    /// taken at once would both start one.
    pub fn room(&self, concurrency: usize, mine: usize) -> bool {
        self.others + mine < concurrency
    }
}

/// How old a reading of the other runners may be when a runner starts a
/// backfill (one read a second at most, however many it starts).
pub const RUNNERS_FRESH_MS: u64 = 1_000;

/// How often a runner looks again at the others on its server while it
/// runs batches, to take its share of the server's rate: a runner that
/// starts beside it runs at its share at once, and until this one looks
/// the server gets up to twice its rate (measured: 1.85× for 4 s at 5 s).
pub const SHARE_EVERY_MS: u64 = 1_000;

/// How often a server's replicas' lag is read while backfills run on it.
pub const LAG_CHECK_MS: u64 = 1_000;

/// Whether the backfills on one server may run a batch, given how far its
/// replicas replay behind it (`backfill.maxReplicaLagSeconds`): the lag is
/// read at most every [`LAG_CHECK_MS`] and shared by every backfill on the
/// server; while it is above the limit they wait, reading it again each
/// time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LagWatch {
    max_ms: u64,
    /// When the lag was last read, and what it was.
    last: Option<(u64, u64)>,
}

/// What a backfill does before its next batch ([`LagWatch::step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LagStep {
    /// Run it.
    Go,
    /// Read the lag ([`crate::migrate::backfill::sql::replica_lag`]) and
    /// report it with [`LagWatch::measured`].
    Measure,
    /// Wait this many milliseconds (a replica lags too far), then ask again.
    Wait(u64),
}

impl LagWatch {
    /// A watch for replicas at most `max_seconds` behind; None for 0 (the
    /// backfills never wait for replicas).
    pub fn new(max_seconds: u64) -> Option<Self> {
        (max_seconds > 0).then(|| LagWatch { max_ms: max_seconds.saturating_mul(1_000), last: None })
    }

    /// What to do at `now_ms`.
    pub fn step(&self, now_ms: u64) -> LagStep {
        match self.last {
            Some((at, lag)) if now_ms.saturating_sub(at) < LAG_CHECK_MS => match lag > self.max_ms {
                true => LagStep::Wait((at + LAG_CHECK_MS).saturating_sub(now_ms).max(1)),
                false => LagStep::Go,
            },
            _ => LagStep::Measure,
        }
    }

    /// The largest lag of the server's replicas, in milliseconds, read at
    /// `now_ms` (0 without a replica).
    pub fn measured(&mut self, lag_ms: u64, now_ms: u64) {
        self.last = Some((now_ms, lag_ms));
    }

    /// Whether the last lag read is above the limit.
    pub fn lagging(&self) -> bool {
        self.last.is_some_and(|(_, lag)| lag > self.max_ms)
    }
}

/// The replicas' lag from what [`crate::migrate::backfill::sql::replica_lag`]
/// read — the replicas listed, those whose state the role may see, the
/// largest lag in milliseconds — or why it cannot be trusted (the role sees
/// the replicas but not their lag).
pub fn replica_lag(listed: i64, visible: i64, lag_ms: i64) -> Result<u64, String> {
    if visible < listed {
        return Err(format!(
            "backfill.maxReplicaLagSeconds is set, but {} of {listed} replica(s) show no lag to this role: \
             grant it pg_monitor (or run as a superuser) so backfills can wait for replicas",
            listed - visible
        ));
    }
    Ok(lag_ms.max(0) as u64)
}

/// The replicas' lag from each one's `Seconds_Behind_Master` (MySQL and
/// MariaDB; [`crate::migrate::backfill::sql::REPLICA_STATUS`]), in
/// milliseconds: the largest. A replica whose replication is not running
/// (NULL) lags without end — backfills wait for it — and a server that is
/// no replica at all (no status) is a mistake in `backfill.replicas`.
pub fn seconds_behind(replicas: &[(String, Option<Option<i64>>)]) -> Result<u64, String> {
    let mut largest: u64 = 0;
    for (replica, behind) in replicas {
        match behind {
            None => return Err(format!("backfill.replicas: {replica} is not a replica (its replica status is empty)")),
            Some(None) => largest = u64::MAX,
            Some(Some(seconds)) => largest = largest.max((*seconds).max(0) as u64 * 1_000),
        }
    }
    Ok(largest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_starts_at_the_ceiling_and_follows_the_time_a_batch_takes() {
        let mut sizer = Sizer::new(1000, 100);
        assert_eq!(sizer.size(), 1000);
        // Four times too slow: a quarter.
        sizer.observe(1000, 400);
        assert_eq!(sizer.size(), 250);
        // Ten times faster than wanted: at most twice.
        sizer.observe(250, 10);
        assert_eq!(sizer.size(), 500);
        // No time at all: twice again, up to the ceiling only.
        sizer.observe(500, 0);
        assert_eq!(sizer.size(), 1000);
        sizer.observe(1000, 1);
        assert_eq!(sizer.size(), 1000);
        // Very slow: never below one row.
        sizer.observe(1000, 10_000_000);
        assert_eq!(sizer.size(), 1);
        sizer.observe(1, 100);
        assert_eq!(sizer.size(), 1);
        sizer.observe(1, 40);
        assert_eq!(sizer.size(), 2);
        // On target: unchanged; nothing changed: nothing learned.
        let mut sizer = Sizer::new(300, 100);
        sizer.observe(300, 100);
        assert_eq!(sizer.size(), 300);
        sizer.observe(0, 5_000);
        assert_eq!(sizer.size(), 300);
        // A partial batch is judged by its own rows: 30 rows in 100 ms.
        sizer.observe(30, 100);
        assert_eq!(sizer.size(), 30);
    }

    #[test]
    fn a_sizer_never_has_nothing_to_give() {
        let mut sizer = Sizer::new(0, 0);
        assert_eq!(sizer.size(), 1);
        sizer.observe(u64::MAX, 1);
        assert_eq!(sizer.size(), 1);
        let mut big = Sizer::new(u32::MAX, u64::MAX);
        big.observe(u64::MAX, 1);
        assert_eq!(big.size(), u32::MAX);
    }

    #[test]
    fn the_budget_holds_one_second_and_queues_what_is_beyond() {
        let mut budget = RowBudget::new(1000, 0);
        assert_eq!(budget.take(1000, 0), 0);
        assert_eq!(budget.take(500, 0), 500);
        assert_eq!(budget.take(500, 0), 1000);
        // A second later the debt is paid: the next 500 wait half a second.
        assert_eq!(budget.take(500, 1000), 500);
        // What a batch did not change comes back: the next 500 wait half a
        // second, not a whole one.
        budget.refund(500);
        assert_eq!(budget.take(500, 1000), 500);
        // Idle time fills it to one second's rows, no more.
        assert_eq!(budget.take(1000, 60_000), 0);
        assert_eq!(budget.take(1, 60_000), 1);
        // A refund never overfills it.
        let mut budget = RowBudget::new(10, 0);
        budget.refund(1_000_000);
        assert_eq!(budget.take(10, 0), 0);
        assert_eq!(budget.take(1, 0), 100);
        // Rounded up to the next millisecond; a clock going back changes nothing.
        let mut budget = RowBudget::new(3, 5_000);
        assert_eq!(budget.take(4, 5_000), 334);
        assert_eq!(budget.take(0, 4_000), 334);
    }

    #[test]
    fn processes_on_one_server_share_its_rate() {
        let mut budget = RowBudget::new(100, 0);
        assert_eq!(budget.take(100, 0), 0);
        // A second process runs backfills on the server: 50 a second each;
        // 100 rows then wait two seconds.
        budget.shared_by(2, 0);
        assert_eq!(budget.rate(), 50);
        assert_eq!(budget.take(100, 0), 2_000);
        // What was full stays within one second of the share.
        let mut full = RowBudget::new(100, 0);
        full.shared_by(4, 10_000);
        assert_eq!(full.take(25, 10_000), 0);
        assert_eq!(full.take(25, 10_000), 1_000);
        // Shares round down and never to nothing; alone again, the whole rate.
        full.shared_by(3, 20_000);
        assert_eq!(full.rate(), 33);
        full.shared_by(1_000, 20_000);
        assert_eq!(full.rate(), 1);
        full.shared_by(0, 20_000);
        assert_eq!(full.rate(), 100);
        // Unlimited stays unlimited.
        let mut free = RowBudget::new(0, 0);
        free.shared_by(3, 0);
        assert_eq!((free.rate(), free.take(u64::MAX, 0)), (0, 0));
    }

    #[test]
    fn the_runners_on_a_server_are_counted_with_the_one_asking() {
        let seen = Runners::of([("a", 2), ("b", 1)], "c");
        assert_eq!(seen, Runners { processes: 3, others: 3 });
        assert!(seen.room(4, 0) && !seen.room(3, 0) && !seen.room(4, 1));
        // Its own claims are its own count, not the reading's.
        let mine = Runners::of([("a", 2), ("b", 1)], "a");
        assert_eq!(mine, Runners { processes: 2, others: 1 });
        assert!(mine.room(4, 2) && !mine.room(4, 3));
        assert_eq!(Runners::of([("a", 0)], "b"), Runners { processes: 1, others: 0 });
        assert_eq!(Runners::of([], "a"), Runners { processes: 1, others: 0 });
    }

    #[test]
    fn no_rate_is_no_limit() {
        let mut budget = RowBudget::new(0, 0);
        assert_eq!(budget.take(u64::MAX, 0), 0);
        assert_eq!(budget.take(u64::MAX, 0), 0);
        budget.refund(5);
        assert_eq!(budget.take(1, 0), 0);
    }

    #[test]
    fn backfills_read_the_lag_once_a_second_and_wait_while_a_replica_lags_too_far() {
        assert_eq!(LagWatch::new(0), None, "0: never wait for replicas");
        let mut watch = LagWatch::new(2).unwrap();
        assert_eq!(watch.step(0), LagStep::Measure);
        watch.measured(1_500, 0);
        assert_eq!((watch.step(10), watch.lagging()), (LagStep::Go, false), "within the limit");
        assert_eq!(watch.step(999), LagStep::Go);
        assert_eq!(watch.step(1_000), LagStep::Measure, "read again after a second");
        watch.measured(2_001, 1_000);
        assert!(watch.lagging());
        assert_eq!(watch.step(1_000), LagStep::Wait(1_000));
        assert_eq!(watch.step(1_900), LagStep::Wait(100));
        assert_eq!(watch.step(2_000), LagStep::Measure);
        watch.measured(2_000, 2_000);
        assert_eq!(watch.step(2_000), LagStep::Go, "at the limit is not above it");
    }

    #[test]
    fn a_lag_the_role_cannot_see_is_not_taken_for_none() {
        assert_eq!(replica_lag(0, 0, 0), Ok(0), "no replica");
        assert_eq!(replica_lag(2, 2, 3_400), Ok(3_400));
        assert_eq!(replica_lag(1, 1, -1), Ok(0));
        let refused = replica_lag(2, 0, 0).unwrap_err();
        assert!(refused.contains("2 of 2 replica(s)") && refused.contains("pg_monitor"), "{refused}");
    }

    #[test]
    fn the_largest_seconds_behind_is_the_lag_and_a_stopped_replica_lags_without_end() {
        let replica = |name: &str, behind| (name.to_string(), behind);
        assert_eq!(seconds_behind(&[replica("r1", Some(Some(2))), replica("r2", Some(Some(0)))]), Ok(2_000));
        assert_eq!(seconds_behind(&[replica("r1", Some(Some(0))), replica("r2", Some(None))]), Ok(u64::MAX));
        let refused = seconds_behind(&[replica("r1", Some(Some(0))), replica("db", None)]).unwrap_err();
        assert_eq!(refused, "backfill.replicas: db is not a replica (its replica status is empty)");
        assert_eq!(seconds_behind(&[]), Ok(0));
    }
}
