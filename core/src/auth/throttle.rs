//! Failed authentications per client address: after [`LIMIT`] failures
//! within [`WINDOW`] seconds an address is answered 429 until [`WINDOW`]
//! seconds after its last failure; and one failure per address per window
//! is written to the audit log (with how many were left out since), so a
//! flood cannot fill it. A success forgets nothing: one valid credential
//! between guesses must not reset the count of the others' failures.
//!
//! Memory is bounded: at most [`CAPACITY`] addresses are remembered; when
//! full, the address whose last failure is oldest is forgotten. So is the
//! audit log: at most [`LOGGED_PER_WINDOW`] failures are written per window
//! over all addresses, so a flood from many addresses cannot fill it either.
//!
//! An IPv6 client is its /64 ([`client_key`]): one host is given a whole
//! /64 and picks any address in it, so per address it would never be
//! refused and each address would write a row.

use std::net::IpAddr;

use rustc_hash::FxHashMap;

/// Failures within [`WINDOW`] after which an address is refused.
pub const LIMIT: u32 = 10;
/// Seconds of the window (and of the refusal after the last failure).
pub const WINDOW: i64 = 60;
/// Addresses remembered at most.
pub const CAPACITY: usize = 10_000;
/// Failures written to the audit log per window, over every address.
pub const LOGGED_PER_WINDOW: u32 = 100;

/// The key a client's failures are counted under: an IPv4 address itself
/// (an IPv4-mapped IPv6 address as IPv4), an IPv6 address its /64.
pub fn client_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let network = std::net::Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1));
                format!("{network}/64")
            }
        },
    }
}

#[derive(Debug, Clone, Copy)]
struct Record {
    /// Start of the current window.
    since: i64,
    /// Failures in it.
    failures: u32,
    /// The last failure.
    last: i64,
    /// When a failure was last written to the audit log.
    logged: Option<i64>,
    /// Failures not written since then.
    unlogged: u32,
}

/// Whether a failure is written to the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Log {
    /// Write it, saying how many failures from the address were left out
    /// since the last one written.
    Write {
        /// Failures left out.
        left_out: u32,
    },
    /// Leave it out (one was written less than a window ago).
    Skip,
}

/// The failures of every address seen.
#[derive(Debug, Default)]
pub struct Throttle {
    records: FxHashMap<String, Record>,
    /// The window of the audit log's cap: its start and the failures
    /// written in it.
    logging: (i64, u32),
}

impl Throttle {
    /// Seconds until `address` may try again, if it is refused at `now`.
    pub fn refused(&self, address: &str, now: i64) -> Option<i64> {
        let record = self.records.get(address)?;
        let until = record.last + WINDOW;
        (record.failures >= LIMIT && until > now).then_some(until - now)
    }

    /// Counts a failure of `address` at `now`; whether to log it.
    pub fn failed(&mut self, address: &str, now: i64) -> Log {
        if !self.records.contains_key(address) && self.records.len() >= CAPACITY {
            self.forget_oldest();
        }
        let record = self.records.entry(address.to_string()).or_insert(Record {
            since: now,
            failures: 0,
            last: now,
            logged: None,
            unlogged: 0,
        });
        if now - record.since >= WINDOW && now - record.last >= WINDOW {
            record.since = now;
            record.failures = 0;
        }
        record.failures = record.failures.saturating_add(1);
        record.last = now;
        if now - self.logging.0 >= WINDOW {
            self.logging = (now, 0);
        }
        let capped = self.logging.1 >= LOGGED_PER_WINDOW;
        match record.logged {
            Some(at) if now - at < WINDOW => {
                record.unlogged = record.unlogged.saturating_add(1);
                Log::Skip
            }
            _ if capped => {
                record.unlogged = record.unlogged.saturating_add(1);
                Log::Skip
            }
            _ => {
                record.logged = Some(now);
                self.logging.1 += 1;
                let left_out = std::mem::take(&mut record.unlogged);
                Log::Write { left_out }
            }
        }
    }

    /// Addresses remembered.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no address is remembered.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    fn forget_oldest(&mut self) {
        if let Some(oldest) = self.records.iter().min_by_key(|(_, r)| r.last).map(|(a, _)| a.clone()) {
            self.records.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_client_is_its_64_and_a_mapped_ipv4_address_is_ipv4() {
        let key = |text: &str| client_key(text.parse().unwrap());
        assert_eq!(key("2001:db8:1:2::13"), "2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:2:ffff:1:2:3"), "2001:db8:1:2::/64");
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(key("192.0.2.7"), "192.0.2.7");
    }

    #[test]
    fn a_flood_from_many_addresses_writes_at_most_the_cap_per_window() {
        let mut throttle = Throttle::default();
        let written =
            (0..5_000).filter(|i| throttle.failed(&format!("10.0.{}.{}", i / 256, i % 256), 10) != Log::Skip).count();
        assert_eq!(written, LOGGED_PER_WINDOW as usize);
        // The next window writes again, saying what was left out.
        assert_eq!(throttle.failed("10.0.0.200", 10 + WINDOW), Log::Write { left_out: 1 });
    }

    #[test]
    fn an_address_is_refused_after_the_limit_until_a_window_passes() {
        let mut throttle = Throttle::default();
        for i in 0..LIMIT - 1 {
            throttle.failed("10.0.0.1", 100 + i64::from(i));
            assert_eq!(throttle.refused("10.0.0.1", 100 + i64::from(i)), None);
        }
        throttle.failed("10.0.0.1", 120);
        assert_eq!(throttle.refused("10.0.0.1", 120), Some(WINDOW));
        assert_eq!(throttle.refused("10.0.0.1", 170), Some(10));
        assert_eq!(throttle.refused("10.0.0.1", 180), None);
        assert_eq!(throttle.refused("10.0.0.2", 120), None);
    }

    #[test]
    fn slow_failures_are_never_refused() {
        let mut throttle = Throttle::default();
        for i in 0..50 {
            throttle.failed("a", i * WINDOW);
            assert_eq!(throttle.refused("a", i * WINDOW), None);
        }
    }

    #[test]
    fn one_failure_per_window_is_logged_with_the_count_left_out() {
        let mut throttle = Throttle::default();
        assert_eq!(throttle.failed("a", 0), Log::Write { left_out: 0 });
        for t in 1..30 {
            assert_eq!(throttle.failed("a", t), Log::Skip);
        }
        assert_eq!(throttle.failed("a", WINDOW), Log::Write { left_out: 29 });
    }

    #[test]
    fn memory_is_bounded_by_forgetting_the_oldest_address() {
        let mut throttle = Throttle::default();
        for i in 0..CAPACITY as i64 + 500 {
            throttle.failed(&format!("10.{i}"), i);
        }
        assert_eq!(throttle.len(), CAPACITY);
        assert!(throttle.refused("10.0", 0).is_none());
    }
}
