use crate::migrate::backfill::key::{Key, KeyValue};
use crate::migrate::backfill::machine::*;
use crate::migrate::backfill::pace::Sizer;

fn k(n: i64) -> Key {
    vec![KeyValue::Int(n)]
}

#[test]
fn a_ranged_backfill_reads_the_last_key_then_finds_and_runs_ranges_up_to_it() {
    let mut machine = Machine::new(true, None, Sizer::new(100, 100));
    assert_eq!(machine.next(), Next::ReadLast);
    assert_eq!(machine.range(), (None, None));
    machine.last_read(Some(k(250)), 240);
    assert_eq!(
        machine.stored(),
        &Stored { upper: Some(k(250)), rows_estimated: 240, ..Stored::default() },
        "stored right after, so a resume keeps the upper key"
    );
    assert_eq!(machine.next(), Next::FindEnd { size: 100 });
    machine.end_found(Some(k(104)));
    assert_eq!(machine.next(), Next::Run { size: 100 });
    assert_eq!(machine.range(), (None, Some(&k(104))));
    // On target: the size stays.
    machine.spent(130);
    let stored = machine.ran(100, 100);
    assert_eq!(
        stored,
        Stored {
            after: Some(k(104)),
            upper: Some(k(250)),
            rows_done: 100,
            batches: 1,
            rows_estimated: 240,
            done: false,
            running_ms: 130,
        }
    );
    assert_eq!(machine.next(), Next::FindEnd { size: 100 });
    assert_eq!(machine.range(), (Some(&k(104)), None));
    machine.end_found(Some(k(210)));
    assert_eq!(machine.range(), (Some(&k(104)), Some(&k(210))));
    // Twice too slow: the next range is half as large.
    machine.ran(90, 200);
    assert_eq!(machine.next(), Next::FindEnd { size: 50 });
    // Fewer keys remain than asked: the range ends at the upper key.
    machine.end_found(None);
    assert_eq!(machine.range(), (Some(&k(210)), Some(&k(250))));
    assert_eq!(machine.next(), Next::Run { size: 50 });
    let last = machine.ran(40, 10);
    assert_eq!((last.after, last.rows_done, last.batches, last.done), (Some(k(250)), 230, 3, true));
    assert_eq!(machine.next(), Next::Done);
}

#[test]
fn an_end_found_at_the_upper_key_finishes_too() {
    let mut machine = Machine::new(true, None, Sizer::new(10, 100));
    machine.last_read(Some(k(10)), 10);
    machine.end_found(Some(k(10)));
    assert!(machine.ran(10, 100).done);
    assert_eq!(machine.next(), Next::Done);
}

#[test]
fn an_empty_table_is_done_at_once() {
    let mut machine = Machine::new(true, None, Sizer::new(10, 100));
    machine.last_read(None, 0);
    assert_eq!(machine.next(), Next::Done);
    assert_eq!(machine.stored(), &Stored { done: true, ..Stored::default() });
}

#[test]
fn a_resumed_backfill_starts_strictly_after_its_checkpoint_with_the_same_upper_key() {
    let stored = Stored {
        after: Some(k(104)),
        upper: Some(k(250)),
        rows_done: 100,
        batches: 1,
        rows_estimated: 240,
        done: false,
        running_ms: 130,
    };
    let mut machine = Machine::new(true, Some(stored.clone()), Sizer::new(100, 100));
    assert_eq!(machine.next(), Next::FindEnd { size: 100 });
    assert_eq!(machine.range(), (Some(&k(104)), None));
    // A last key read now is not asked for, and changes nothing.
    machine.last_read(Some(k(999)), 999);
    assert_eq!(machine.stored(), &stored);
    // A checkpoint at the upper key is done; so is a stored done.
    let at_end = Stored { after: Some(k(250)), ..stored.clone() };
    assert_eq!(Machine::new(true, Some(at_end), Sizer::new(100, 100)).next(), Next::Done);
    let done = Stored { done: true, ..stored };
    assert_eq!(Machine::new(true, Some(done), Sizer::new(100, 100)).next(), Next::Done);
    // The upper key read but no batch committed: find the first range.
    let started = Stored { upper: Some(k(5)), rows_estimated: 5, ..Stored::default() };
    let machine = Machine::new(true, Some(started), Sizer::new(100, 100));
    assert_eq!((machine.next(), machine.range()), (Next::FindEnd { size: 100 }, (None, None)));
}

#[test]
fn answers_out_of_turn_are_ignored() {
    let mut machine = Machine::new(true, None, Sizer::new(10, 100));
    machine.end_found(Some(k(3)));
    assert_eq!(machine.ran(5, 1), Stored::default());
    assert_eq!(machine.next(), Next::ReadLast);
    machine.last_read(Some(k(30)), 30);
    assert_eq!(machine.ran(5, 1).batches, 0, "no range found yet");
    machine.end_found(Some(k(9)));
    machine.end_found(Some(k(12)));
    assert_eq!(machine.range(), (None, Some(&k(9))), "the first end stands until it ran");
}

#[test]
fn a_repeated_backfill_runs_until_a_run_changes_no_row() {
    let mut machine = Machine::new(false, None, Sizer::new(1000, 100));
    assert_eq!(machine.next(), Next::Run { size: 1000 });
    assert_eq!(machine.range(), (None, None));
    machine.ran(1000, 400);
    assert_eq!(machine.next(), Next::Run { size: 250 });
    machine.ran(250, 100);
    let stored = machine.ran(12, 50);
    assert_eq!(stored, Stored { rows_done: 1262, batches: 3, ..Stored::default() });
    assert_eq!(machine.next(), Next::Run { size: 24 });
    let last = machine.ran(0, 3);
    assert_eq!(last, Stored { rows_done: 1262, batches: 4, done: true, ..Stored::default() });
    assert_eq!(machine.next(), Next::Done);
    // Resumed from the books: it goes on where it was.
    let resumed =
        Machine::new(false, Some(Stored { rows_done: 1262, batches: 3, ..Stored::default() }), Sizer::new(7, 1));
    assert_eq!(resumed.next(), Next::Run { size: 7 });
}

#[test]
fn composite_keys_are_compared_for_equality_only() {
    let key = |a: i64, b: &str| vec![KeyValue::Int(a), KeyValue::Text(b.into())];
    let mut machine = Machine::new(true, None, Sizer::new(2, 100));
    machine.last_read(Some(key(2, "a")), 4);
    // The engine's collation orders "B" after "a": the machine does not care.
    machine.end_found(Some(key(2, "B")));
    assert!(!machine.ran(2, 100).done);
    machine.end_found(None);
    assert_eq!(machine.range(), (Some(&key(2, "B")), Some(&key(2, "a"))));
    assert!(machine.ran(2, 100).done);
}

#[test]
fn ends_read_at_once_run_in_turn_until_a_slow_batch_shrinks_the_size() {
    let mut machine = Machine::new(true, None, Sizer::new(100, 100));
    machine.last_read(Some(k(1_000)), 1_000);
    assert_eq!(machine.next(), Next::FindEnd { size: 100 });
    machine.ends_found(vec![k(100), k(200), k(300)], 3);
    assert_eq!(machine.range(), (None, Some(&k(100))));
    machine.ran(100, 100);
    // The next range without a read: it was read with the first.
    assert_eq!((machine.next(), machine.range()), (Next::Run { size: 100 }, (Some(&k(100)), Some(&k(200)))));
    // A batch twice as slow as wanted: the size halves, the ends read at
    // 100 keys are dropped and read again at 50.
    machine.ran(100, 200);
    assert_eq!(machine.next(), Next::FindEnd { size: 50 });
    assert_eq!(machine.range(), (Some(&k(200)), None));
    // Fewer ends than asked: the range after the last ends at the upper key.
    machine.ends_found(vec![k(250)], 4);
    machine.ran(50, 100);
    assert_eq!((machine.next(), machine.range()), (Next::Run { size: 50 }, (Some(&k(250)), Some(&k(1_000)))));
    assert!(machine.ran(30, 100).done);
    assert_eq!(machine.next(), Next::Done);
    // No end at all: one range to the upper key; an end at the upper key is not run twice.
    let mut machine = Machine::new(true, None, Sizer::new(10, 100));
    machine.last_read(Some(k(5)), 5);
    machine.ends_found(vec![k(5)], 3);
    assert!(machine.ran(5, 1).done);
    assert_eq!(machine.next(), Next::Done);
}

#[test]
fn the_estimate_is_the_rows_over_the_running_time_and_what_is_left_at_that_rate() {
    let none = estimate(&Stored::default());
    assert_eq!(none, Estimate { rows_per_second: None, seconds_left: None });
    let running = Stored { rows_done: 300, rows_estimated: 1000, running_ms: 1500, ..Stored::default() };
    assert_eq!(estimate(&running), Estimate { rows_per_second: Some(200.0), seconds_left: Some(4) });
    let nearly = Stored { rows_done: 999, rows_estimated: 1000, running_ms: 999_000, ..Stored::default() };
    assert_eq!(estimate(&nearly).seconds_left, Some(1), "rounded up");
    let repeated = Stored { rows_done: 50, running_ms: 500, ..Stored::default() };
    assert_eq!(estimate(&repeated), Estimate { rows_per_second: Some(100.0), seconds_left: None });
    let done = Stored { rows_done: 40, rows_estimated: 40, running_ms: 0, done: true, ..Stored::default() };
    assert_eq!(estimate(&done), Estimate { rows_per_second: None, seconds_left: Some(0) });
    let past = Stored { rows_done: 1200, rows_estimated: 1000, running_ms: 1000, ..Stored::default() };
    assert_eq!(estimate(&past).seconds_left, Some(0), "more rows than estimated: none left");
}
