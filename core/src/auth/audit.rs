//! The audit log's hash chain: each row carries the hash of the row before
//! it and its own, over its id and every field, so a row edited or deleted
//! by hand breaks the chain at that row ([`verify`]).
//!
//! Invariant: ids run 1, 2, 3, … without gaps (the shell inserts
//! `last id + 1` and tries again when another writer took that id), so a
//! deleted row shows as a gap; only the removal of the newest rows leaves no
//! trace in the chain itself.

use sha2::{Digest, Sha256};
use thiserror::Error;

/// The `prev` of the first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What one audit row says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// When, as RFC 3339 UTC text.
    pub at: String,
    /// Who: `token:<name>`, `oidc:<subject>`, `proxy:<user>`,
    /// `cli:<user>@<host>`, `anonymous`, or `unauthenticated:<address>`.
    pub actor: String,
    /// What: the API field or command (`createVersion`, `approveRollout`,
    /// `token create`, `authenticate`).
    pub action: String,
    /// On what: a version, a rollout, tenants, a token.
    pub target: String,
    /// The request's id (`X-Request-ID`, or the command's).
    pub request_id: String,
    /// `ok`, or `refused: CODE …` / `failed: CODE …`.
    pub outcome: String,
}

/// Longest text of one field of a row, in characters.
pub const FIELD_CHARS: usize = 300;

/// A field that comes from input, fit for a row, a log line and a terminal:
/// at most [`FIELD_CHARS`] characters (`…` marks a cut), each control
/// character written as its escape (`\n`, `\u{1b}`), so a value can
/// neither forge a line nor reach a terminal as a command.
pub fn bounded(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(FIELD_CHARS + 8));
    for (count, c) in text.chars().enumerate() {
        if count == FIELD_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

impl Entry {
    /// The entry with every field [`bounded`].
    pub fn bounded(self) -> Entry {
        Entry {
            at: bounded(&self.at),
            actor: bounded(&self.actor),
            action: bounded(&self.action),
            target: bounded(&self.target),
            request_id: bounded(&self.request_id),
            outcome: bounded(&self.outcome),
        }
    }
}

/// A stored row: its id, what it says, and its place in the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// 1, 2, 3, …
    pub id: i64,
    /// What it says.
    pub entry: Entry,
    /// The hash of the row before (the first row's: [`GENESIS`]).
    pub prev: String,
    /// [`seal`] of this row.
    pub hash: String,
}

/// The hash of row `id` saying `entry` after a row whose hash is `prev`:
/// SHA-256 over the length-prefixed fields, lowercase hex.
pub fn seal(id: i64, entry: &Entry, prev: &str) -> String {
    let mut digest = Sha256::new();
    let id = id.to_string();
    for field in
        [prev, id.as_str(), &entry.at, &entry.actor, &entry.action, &entry.target, &entry.request_id, &entry.outcome]
    {
        digest.update((field.len() as u64).to_be_bytes());
        digest.update(field.as_bytes());
    }
    digest.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The row that follows `last` (none: the first) saying `entry`.
pub fn next(last: Option<(i64, &str)>, entry: Entry) -> Sealed {
    let (id, prev) = match last {
        Some((id, hash)) => (id + 1, hash.to_string()),
        None => (1, GENESIS.to_string()),
    };
    let hash = seal(id, &entry, &prev);
    Sealed { id, entry, prev, hash }
}

/// Where the chain is broken.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Broken {
    /// A row is missing (deleted).
    #[error("row {expected} is missing (the next row is {found}): a row was deleted")]
    Gap {
        /// The id that should come next.
        expected: i64,
        /// The id found instead.
        found: i64,
    },
    /// A row's fields do not hash to what it carries: it was edited.
    #[error("row {0} does not match its hash: it was edited")]
    Edited(i64),
    /// A row does not follow the one before it: the one before was replaced.
    #[error("row {0} does not follow the row before it: the chain was rewritten there")]
    Relinked(i64),
}

/// Checks the chain (rows in id order); how many rows it holds.
pub fn verify(rows: &[Sealed]) -> Result<usize, Broken> {
    let mut prev = GENESIS;
    for (i, row) in rows.iter().enumerate() {
        let expected = i as i64 + 1;
        if row.id != expected {
            return Err(Broken::Gap { expected, found: row.id });
        }
        if row.prev != prev {
            return Err(Broken::Relinked(row.id));
        }
        if seal(row.id, &row.entry, &row.prev) != row.hash {
            return Err(Broken::Edited(row.id));
        }
        prev = &row.hash;
    }
    Ok(rows.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(actor: &str) -> Entry {
        Entry {
            at: "2026-11-26T04:00:00Z".into(),
            actor: actor.into(),
            action: "createVersion".into(),
            target: "version 1".into(),
            request_id: "r".into(),
            outcome: "ok".into(),
        }
    }

    fn chain(n: usize) -> Vec<Sealed> {
        let mut rows: Vec<Sealed> = Vec::new();
        for i in 0..n {
            let last = rows.last().map(|r| (r.id, r.hash.as_str()));
            rows.push(next(last, entry(&format!("token:t{i}"))));
        }
        rows
    }

    #[test]
    fn an_untouched_chain_verifies() {
        assert_eq!(verify(&chain(5)), Ok(5));
        assert_eq!(verify(&[]), Ok(0));
        assert_eq!(chain(1)[0].prev, GENESIS);
    }

    #[test]
    fn an_edited_row_is_found() {
        let mut rows = chain(5);
        rows[2].entry.actor = "token:someone-else".into();
        assert_eq!(verify(&rows), Err(Broken::Edited(3)));
    }

    #[test]
    fn a_deleted_row_is_found() {
        let mut rows = chain(5);
        rows.remove(1);
        assert_eq!(verify(&rows), Err(Broken::Gap { expected: 2, found: 3 }));
    }

    #[test]
    fn a_row_rewritten_with_its_own_hash_breaks_the_next_link() {
        let mut rows = chain(5);
        rows[1].entry.outcome = "refused".into();
        rows[1].hash = seal(2, &rows[1].entry, &rows[1].prev);
        assert_eq!(verify(&rows), Err(Broken::Relinked(3)));
    }

    #[test]
    fn fields_cannot_be_shifted_between_columns() {
        let mut a = entry("x");
        a.action = "ab".into();
        a.target = "c".into();
        let mut b = entry("x");
        b.action = "a".into();
        b.target = "bc".into();
        assert_ne!(seal(1, &a, GENESIS), seal(1, &b, GENESIS));
    }
}
