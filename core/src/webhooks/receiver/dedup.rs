//! De-duplication: each delivery (hook id + `X-GitHub-Delivery`) is
//! forwarded at most once within a window. GitHub redelivers with the same
//! delivery id, and a captured delivery can be replayed with its valid
//! signature; both get `200` and are not forwarded again.
//!
//! The store is one small record per delivery, kept by the shell in a store
//! that serializes the requests for one key (a Cloudflare Durable Object
//! named by [`key`]). This module is that record's whole logic:
//! [`handle`] takes the stored entry, a [`Request`] and the time, and says
//! what to answer, what to store and when to wake up to forget it.
//!
//! A forward first *claims* the delivery; when it ends, it *settles*: a
//! delivered forward keeps the entry for the window, a failed one releases
//! it so that GitHub's redelivery (or ours) goes through. A claim whose
//! forward never settles (the platform cut its work short) lapses after
//! [`CLAIM_LEASE_MS`].

use serde::{Deserialize, Serialize};

/// The Durable Object namespace binding of the store.
pub const DEDUP_BINDING: &str = "WEBHOOK_DEDUP";
/// How long an unsettled claim holds: longer than the 30 seconds Cloudflare
/// gives work after a response (`waitUntil`), so only an abandoned forward
/// lapses.
pub const CLAIM_LEASE_MS: u64 = 60_000;

/// Where a remembered delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Claimed; its forward has not ended yet.
    Forwarding,
    /// Forwarded.
    Forwarded,
}

/// The stored record of one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Where it stands.
    pub state: State,
    /// When it got there (milliseconds since the epoch).
    pub since_ms: u64,
    /// When it is forgotten.
    pub until_ms: u64,
}

impl Entry {
    fn holds(&self, now_ms: u64) -> bool {
        now_ms < self.until_ms
    }
}

/// A request to the store of one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Request {
    /// Claim the delivery before forwarding it.
    Claim {
        /// The de-duplication window.
        #[serde(rename = "windowMs")]
        window_ms: u64,
    },
    /// The forward ended.
    Settle {
        /// Whether every destination took it.
        delivered: bool,
        /// The de-duplication window.
        #[serde(rename = "windowMs")]
        window_ms: u64,
    },
    /// Whether the delivery is remembered (forwarded or being forwarded).
    Seen,
}

/// The store's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "camelCase")]
pub enum Answer {
    /// The claim is the caller's: forward it.
    First,
    /// Already forwarded or being forwarded: do not forward.
    Duplicate {
        /// The entry that holds.
        entry: Entry,
    },
    /// The settlement is recorded.
    Settled,
    /// Whether it is remembered.
    Seen {
        /// Remembered.
        seen: bool,
    },
}

/// What to do with the stored entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Leave it.
    Keep,
    /// Store this one.
    Put(Entry),
    /// Remove it.
    Delete,
}

/// The outcome of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The answer to send back.
    pub answer: Answer,
    /// The change to the stored entry.
    pub change: Change,
    /// When to be woken to forget the entry, if a new one is stored.
    pub alarm_at_ms: Option<u64>,
}

/// The store's name for a delivery: one record per hook and delivery id.
pub fn key(hook_id: Option<&str>, delivery_id: &str) -> String {
    format!("{}/{delivery_id}", hook_id.unwrap_or("-"))
}

fn put(entry: Entry, answer: Answer) -> Outcome {
    Outcome { answer, change: Change::Put(entry), alarm_at_ms: Some(entry.until_ms) }
}

/// Handles `request` for the delivery whose stored entry is `stored`, at
/// `now_ms`. An entry past its time counts as absent (the alarm that
/// deletes it may not have run yet).
pub fn handle(stored: Option<Entry>, request: Request, now_ms: u64) -> Outcome {
    let live = stored.filter(|entry| entry.holds(now_ms));
    match request {
        Request::Claim { window_ms } => match live {
            Some(entry) => Outcome { answer: Answer::Duplicate { entry }, change: Change::Keep, alarm_at_ms: None },
            None => {
                let until_ms = now_ms.saturating_add(CLAIM_LEASE_MS.min(window_ms));
                put(Entry { state: State::Forwarding, since_ms: now_ms, until_ms }, Answer::First)
            }
        },
        Request::Settle { delivered: true, window_ms } => {
            let until_ms = now_ms.saturating_add(window_ms);
            put(Entry { state: State::Forwarded, since_ms: now_ms, until_ms }, Answer::Settled)
        }
        Request::Settle { delivered: false, .. } => {
            Outcome { answer: Answer::Settled, change: Change::Delete, alarm_at_ms: None }
        }
        Request::Seen => {
            Outcome { answer: Answer::Seen { seen: live.is_some() }, change: Change::Keep, alarm_at_ms: None }
        }
    }
}

/// The store's alarm: forget the entry once its time has passed, else wake
/// again then.
pub fn on_alarm(stored: Option<Entry>, now_ms: u64) -> Outcome {
    let (change, alarm_at_ms) = match stored {
        Some(entry) if entry.holds(now_ms) => (Change::Keep, Some(entry.until_ms)),
        Some(_) => (Change::Delete, None),
        None => (Change::Keep, None),
    };
    Outcome { answer: Answer::Settled, change, alarm_at_ms }
}

/// The log line of a delivery that is not forwarded because `entry` holds.
/// Names the delivery, never a header value or the payload.
pub fn duplicate_log_line(event: &str, delivery_id: &str, hook_id: Option<&str>, entry: &Entry, now_ms: u64) -> String {
    let seconds = now_ms.saturating_sub(entry.since_ms) / 1000;
    let hook = hook_id.map(|hook| format!(" of hook {hook}")).unwrap_or_default();
    let status = match entry.state {
        State::Forwarding => "being forwarded since",
        State::Forwarded => "forwarded",
    };
    format!("duplicate, not forwarded: {event} delivery {delivery_id}{hook} was {status} {seconds} s ago")
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: u64 = 3_600_000;

    /// Applies outcomes to one stored entry, as the shell does.
    struct Store(Option<Entry>);

    impl Store {
        fn send(&mut self, request: Request, now_ms: u64) -> Outcome {
            let outcome = handle(self.0, request, now_ms);
            match outcome.change {
                Change::Keep => {}
                Change::Put(entry) => self.0 = Some(entry),
                Change::Delete => self.0 = None,
            }
            outcome
        }
    }

    #[test]
    fn the_first_claim_wins_and_copies_are_duplicates() {
        let mut store = Store(None);
        let first = store.send(Request::Claim { window_ms: WINDOW }, 1_000);
        assert_eq!(first.answer, Answer::First);
        assert_eq!(first.alarm_at_ms, Some(61_000));
        for now in [1_000, 1_001, 30_000] {
            let copy = store.send(Request::Claim { window_ms: WINDOW }, now);
            let Answer::Duplicate { entry } = copy.answer else { panic!("{copy:?}") };
            assert_eq!(entry.state, State::Forwarding);
            assert_eq!(copy.change, Change::Keep);
        }
        assert_eq!(
            store.send(Request::Settle { delivered: true, window_ms: WINDOW }, 2_000).alarm_at_ms,
            Some(3_602_000)
        );
        let later = store.send(Request::Claim { window_ms: WINDOW }, 3_601_999);
        assert!(matches!(later.answer, Answer::Duplicate { entry } if entry.state == State::Forwarded));
        assert_eq!(store.send(Request::Seen, 3_601_999).answer, Answer::Seen { seen: true });
        // The window has passed: forwarded again.
        assert_eq!(store.send(Request::Seen, 3_602_000).answer, Answer::Seen { seen: false });
        assert_eq!(store.send(Request::Claim { window_ms: WINDOW }, 3_602_000).answer, Answer::First);
    }

    #[test]
    fn a_failed_forward_releases_its_claim() {
        let mut store = Store(None);
        assert_eq!(store.send(Request::Claim { window_ms: WINDOW }, 0).answer, Answer::First);
        assert_eq!(store.send(Request::Settle { delivered: false, window_ms: WINDOW }, 10).change, Change::Delete);
        assert_eq!(store.send(Request::Seen, 11).answer, Answer::Seen { seen: false });
        assert_eq!(store.send(Request::Claim { window_ms: WINDOW }, 12).answer, Answer::First);
    }

    #[test]
    fn an_abandoned_claim_lapses_after_the_lease_and_a_short_window_bounds_it() {
        let mut store = Store(None);
        store.send(Request::Claim { window_ms: WINDOW }, 0);
        assert!(matches!(store.send(Request::Claim { window_ms: WINDOW }, 59_999).answer, Answer::Duplicate { .. }));
        assert_eq!(store.send(Request::Claim { window_ms: WINDOW }, 60_000).answer, Answer::First);
        let mut short = Store(None);
        assert_eq!(short.send(Request::Claim { window_ms: 2_000 }, 0).alarm_at_ms, Some(2_000));
        assert_eq!(short.send(Request::Claim { window_ms: 2_000 }, 2_000).answer, Answer::First);
    }

    #[test]
    fn the_alarm_forgets_only_what_has_expired() {
        let entry = Entry { state: State::Forwarded, since_ms: 0, until_ms: 100 };
        assert_eq!(
            on_alarm(Some(entry), 99),
            Outcome { answer: Answer::Settled, change: Change::Keep, alarm_at_ms: Some(100) }
        );
        assert_eq!(on_alarm(Some(entry), 100).change, Change::Delete);
        assert_eq!(on_alarm(None, 100), Outcome { answer: Answer::Settled, change: Change::Keep, alarm_at_ms: None });
    }

    #[test]
    fn the_wire_shapes_and_the_log_line() {
        assert_eq!(serde_json::to_string(&Request::Claim { window_ms: 5 }).unwrap(), r#"{"op":"claim","windowMs":5}"#);
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"op":"settle","delivered":false,"windowMs":7}"#).unwrap(),
            Request::Settle { delivered: false, window_ms: 7 }
        );
        assert!(serde_json::from_str::<Request>(r#"{"op":"forget"}"#).is_err());
        let entry = Entry { state: State::Forwarded, since_ms: 1_000, until_ms: 9_000 };
        assert_eq!(
            serde_json::to_string(&Answer::Duplicate { entry }).unwrap(),
            r#"{"answer":"duplicate","entry":{"state":"forwarded","sinceMs":1000,"untilMs":9000}}"#
        );
        assert_eq!(
            duplicate_log_line("push", "d-1", Some("42"), &entry, 13_500),
            "duplicate, not forwarded: push delivery d-1 of hook 42 was forwarded 12 s ago"
        );
        assert_eq!(key(Some("42"), "d-1"), "42/d-1");
        assert_eq!(key(None, "d-1"), "-/d-1");
    }
}
