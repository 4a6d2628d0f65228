//! The one retry rule of every outbound delivery Strata makes: the
//! migration service's webhook (`native/src/webhook.rs`) and the edge
//! receivers' forwards (`webhooks::receiver::forward`). The JavaScript
//! receiver (`worker/js/retry.js`) follows the same rule; both are tested
//! against one table of cases, `tests/data/retry/cases.json`.
//!
//! - A 2xx answer, or a queue that took the message: delivered.
//! - No answer (refused, DNS, TLS, timeout), 408, 425, 429 or 5xx: may
//!   succeed when repeated — retried after [`FIRST_RETRY_DELAY_MS`], then
//!   twice as long before each further attempt (capped at 2¹⁶ times).
//! - Anything else (another 4xx, 1xx, 3xx, a status above 599): the
//!   destination refused it for good; no retry.
//! - The number of attempts is the caller's.

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The destination answered with this status.
    Status(u16),
    /// A destination without statuses (a queue) took it.
    Sent,
    /// No answer: connection refused, DNS, TLS, timeout.
    Unreachable,
}

/// What to do after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// The destination took the delivery.
    Delivered,
    /// Try again after this many milliseconds.
    RetryAfterMs(u32),
    /// Stop: the destination refused it for good, or the attempts are used
    /// up. The shell logs this loudly.
    GiveUp,
}

/// The wait before the second attempt; each later one doubles it.
pub const FIRST_RETRY_DELAY_MS: u32 = 250;

/// Most doublings of the wait.
const MAX_DOUBLINGS: u32 = 16;

/// Whether an answer may succeed when repeated: no answer, 408, 425, 429
/// and 5xx.
fn is_transient(attempt: Attempt) -> bool {
    match attempt {
        Attempt::Unreachable => true,
        Attempt::Status(status) => matches!(status, 408 | 425 | 429 | 500..=599),
        Attempt::Sent => false,
    }
}

/// Decides after attempt number `number` (from 1) of at most `max_attempts`.
pub fn next_step(attempt: Attempt, number: u32, max_attempts: u32) -> NextStep {
    if matches!(attempt, Attempt::Status(200..=299) | Attempt::Sent) {
        return NextStep::Delivered;
    }
    if !is_transient(attempt) || number >= max_attempts {
        return NextStep::GiveUp;
    }
    let doublings = number.saturating_sub(1).min(MAX_DOUBLINGS);
    NextStep::RetryAfterMs(FIRST_RETRY_DELAY_MS.saturating_mul(1 << doublings))
}

/// How the attempts of one delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tries {
    /// Attempts made.
    pub attempts: u32,
    /// How the last one ended.
    pub last: Attempt,
    /// Whether the destination took the delivery.
    pub delivered: bool,
}

/// Runs the attempts of one delivery: `send(n)` makes attempt `n` (from 1),
/// `wait(ms)` sleeps between attempts. Both are the shell's I/O; this only
/// sequences them by [`next_step`].
pub async fn run<SendFn, SendFut, WaitFn, WaitFut>(max_attempts: u32, mut send: SendFn, mut wait: WaitFn) -> Tries
where
    SendFn: FnMut(u32) -> SendFut,
    SendFut: Future<Output = Attempt>,
    WaitFn: FnMut(u32) -> WaitFut,
    WaitFut: Future<Output = ()>,
{
    let mut number = 1;
    loop {
        let attempt = send(number).await;
        match next_step(attempt, number, max_attempts) {
            NextStep::Delivered => return Tries { attempts: number, last: attempt, delivered: true },
            NextStep::GiveUp => return Tries { attempts: number, last: attempt, delivered: false },
            NextStep::RetryAfterMs(delay) => wait(delay).await,
        }
        number += 1;
    }
}

/// The longest wait between two connection attempts of
/// `--wait-for-db`.
pub const LONGEST_CONNECT_WAIT_MS: u64 = 5_000;

/// `--wait-for-db`: after failed connection attempt `number` (from 1), with
/// `elapsed_ms` of the `deadline_ms` spent, the wait before the next attempt
/// — [`FIRST_RETRY_DELAY_MS`] doubled per attempt, at most
/// [`LONGEST_CONNECT_WAIT_MS`], and never past the deadline — or `None`
/// when the deadline has passed (the last error stands).
pub fn connect_wait_ms(number: u32, elapsed_ms: u64, deadline_ms: u64) -> Option<u64> {
    let remaining = deadline_ms.checked_sub(elapsed_ms).filter(|ms| *ms > 0)?;
    let doublings = number.saturating_sub(1).min(MAX_DOUBLINGS);
    let wait = (u64::from(FIRST_RETRY_DELAY_MS) << doublings).min(LONGEST_CONNECT_WAIT_MS);
    Some(wait.min(remaining))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_waits_double_up_to_five_seconds_and_stop_at_the_deadline() {
        let waits: Vec<Option<u64>> = (1..=7).map(|n| connect_wait_ms(n, 0, 60_000)).collect();
        assert_eq!(waits, [Some(250), Some(500), Some(1_000), Some(2_000), Some(4_000), Some(5_000), Some(5_000)]);
        assert_eq!(connect_wait_ms(40, 0, 60_000), Some(5_000));
        assert_eq!(connect_wait_ms(5, 59_000, 60_000), Some(1_000));
        assert_eq!(connect_wait_ms(1, 60_000, 60_000), None);
        assert_eq!(connect_wait_ms(1, 61_000, 60_000), None);
        assert_eq!(connect_wait_ms(1, 0, 0), None);
    }
}

#[cfg(test)]
mod delivery_tests {
    use serde_json::Value;

    use super::*;

    /// Every case of the shared table (which the JavaScript receiver's test
    /// reads too).
    #[test]
    fn the_shared_table_of_cases_holds() {
        let table: Value =
            serde_json::from_str(include_str!("../../tests/data/retry/cases.json")).expect("the table is JSON");
        assert_eq!(table["firstRetryDelayMs"], FIRST_RETRY_DELAY_MS);
        let cases = table["cases"].as_array().expect("cases");
        assert!(cases.len() >= 20);
        for case in cases {
            let attempt = match &case["attempt"] {
                Value::Number(status) => Attempt::Status(status.as_u64().and_then(|s| u16::try_from(s).ok()).unwrap()),
                Value::String(kind) if kind == "unreachable" => Attempt::Unreachable,
                Value::String(kind) if kind == "sent" => Attempt::Sent,
                other => panic!("attempt {other}"),
            };
            let expected = match &case["next"] {
                Value::String(kind) if kind == "delivered" => NextStep::Delivered,
                Value::String(kind) if kind == "give up" => NextStep::GiveUp,
                Value::Number(ms) => NextStep::RetryAfterMs(u32::try_from(ms.as_u64().unwrap()).unwrap()),
                other => panic!("next {other}"),
            };
            let number = u32::try_from(case["number"].as_u64().unwrap()).unwrap();
            let max = u32::try_from(case["max"].as_u64().unwrap()).unwrap();
            assert_eq!(next_step(attempt, number, max), expected, "{case}");
        }
    }
}
