use super::*;

/// A backfill as a test writes it.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    file: &'static str,
    tenant: String,
    state: State,
    rows_done: u64,
    rows_estimated: u64,
    batches: u64,
    rate: Option<f64>,
}

impl Progress for Row {
    fn file(&self) -> &str {
        self.file
    }
    fn tenant(&self) -> &str {
        &self.tenant
    }
    fn state(&self) -> State {
        self.state
    }
    fn rows_done(&self) -> u64 {
        self.rows_done
    }
    fn rows_estimated(&self) -> u64 {
        self.rows_estimated
    }
    fn batches(&self) -> u64 {
        self.batches
    }
    fn rows_per_second(&self) -> Option<f64> {
        self.rate
    }
}

fn row(file: &'static str, tenant: &str, state: State, done: u64, estimated: u64) -> Row {
    Row {
        file,
        tenant: tenant.to_string(),
        state,
        rows_done: done,
        rows_estimated: estimated,
        batches: u64::from(done > 0),
        rate: None,
    }
}

fn tenants<T: Progress>(summary: &FileSummary<T>) -> Vec<&str> {
    summary.shown.iter().map(|b| b.tenant()).collect()
}

#[test]
fn files_come_by_name_each_with_its_counts_and_rows() {
    let rows = vec![
        row("b.sql", "t1", State::Done, 100, 100),
        row("a.sql", "t2", State::Running, 40, 100),
        row("a.sql", "t1", State::Done, 100, 100),
        row("a.sql", "t3", State::Failed, 10, 100),
        row("a.sql", "t4", State::Paused, 0, 50),
    ];
    let summaries = summarize(rows, 10);
    assert_eq!(summaries.iter().map(|s| s.file.as_str()).collect::<Vec<_>>(), ["a.sql", "b.sql"]);
    let a = &summaries[0];
    assert_eq!((a.tenants, a.counts), (4, [1, 1, 1, 0, 1]));
    assert_eq!((a.count(State::Failed), a.count(State::Cancelled)), (1, 0));
    assert_eq!((a.rows_done, a.rows_estimated), (150, 350));
    let b = &summaries[1];
    assert_eq!((b.tenants, b.counts, b.rows_done, b.rows_estimated), (1, [0, 0, 0, 0, 1], 100, 100));
}

#[test]
fn the_short_list_is_by_state_then_tenant_and_never_longer_than_asked() {
    // Every state, tenants given in a scrambled order.
    let states = State::ALL;
    let rows: Vec<Row> = (0..50u32)
        .map(|i| (i * 37) % 50)
        .map(|i| row("f.sql", &format!("t{i:02}"), states[(i % 5) as usize], 1, 1))
        .collect();
    let mut expected = rows.clone();
    expected.sort_by(|a, b| (a.state, &a.tenant).cmp(&(b.state, &b.tenant)));
    for shown in [0, 1, 7, 10, 49, 50, 80] {
        let summary = &summarize(rows.clone(), shown)[0];
        let want: Vec<&str> = expected.iter().take(shown).map(|r| r.tenant.as_str()).collect();
        assert_eq!(tenants(summary), want, "shown {shown}");
        assert_eq!(summary.tenants, 50);
    }
    // The running ones first: t00, t05, … (i % 5 == 0).
    let summary = &summarize(rows, 3)[0];
    assert_eq!(tenants(summary), ["t00", "t05", "t10"]);
}

#[test]
fn rows_done_count_at_most_the_estimate_and_a_repeated_backfill_counts_what_it_did() {
    let rows = vec![
        // Changed more rows than its range held keys when it started.
        row("f.sql", "t1", State::Done, 130, 100),
        // Repeated until nothing changes: no estimate.
        row("f.sql", "t2", State::Done, 70, 0),
    ];
    let summary = &summarize(rows, 5)[0];
    assert_eq!((summary.rows_done, summary.rows_estimated), (170, 100));
}

#[test]
fn pace_and_time_left_come_from_the_running_tenants_only() {
    let mut running = row("f.sql", "t1", State::Running, 50, 100);
    running.rate = Some(10.0);
    let mut slower = row("f.sql", "t2", State::Running, 10, 100);
    slower.rate = Some(2.5);
    let mut paused = row("f.sql", "t3", State::Paused, 10, 100);
    paused.rate = Some(100.0);
    let waiting = row("f.sql", "t4", State::Running, 0, 0);
    let done = row("f.sql", "t5", State::Done, 100, 100);
    let summary = &summarize(vec![running, slower, paused, waiting, done], 5)[0];
    assert_eq!(summary.rows_per_second, 12.5);
    assert_eq!(summary.not_started, 1);
    // Left: 50 + 90 of the two running, and the one not started at the
    // mean of the four counted (400 / 4): 240 rows at 12.5 a second.
    assert_eq!(summary.seconds_left, Some(20));
}

#[test]
fn thousands_waiting_for_a_runner_are_in_the_time_left() {
    // Four runners at 100 rows a second each; 996 tenants not started.
    let rows: Vec<Row> = (0..1000)
        .map(|i| {
            let mut r = row("f.sql", &format!("t{i:04}"), State::Running, 0, 0);
            if i < 4 {
                (r.rows_done, r.rows_estimated, r.rate) = (500, 1000, Some(100.0));
            }
            r
        })
        .collect();
    let summary = &summarize(rows, 5)[0];
    // 4 × 500 left and 996 × 1,000 not counted yet, at 400 a second.
    assert_eq!(summary.seconds_left, Some((2000 + 996_000) / 400));
}

#[test]
fn nothing_running_has_no_time_left_and_no_pace() {
    let summary = &summarize(vec![row("f.sql", "t1", State::Done, 5, 5)], 5)[0];
    assert_eq!((summary.rows_per_second, summary.seconds_left, summary.not_started), (0.0, None, 0));
    assert!(summarize(Vec::<Row>::new(), 5).is_empty());
}
