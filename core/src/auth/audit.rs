//! The audit log's hash chain: each row carries the hash of the row before
//! it and its own, over its id and every field, so a row edited or deleted
//! by hand breaks the chain at that row ([`verify`]).
//!
//! A chain alone is re-sealed by anyone who can write the table. With
//! `auth.auditKey` each row's seal is also signed
//! ([`crate::auth::audit_key`]): a row written, rewritten or re-signed
//! without the private key does not verify, and neither does an unsigned
//! row after a signed one. Rows written before a key was set are reported
//! as unsigned, never as verified. Removing the newest rows leaves no trace
//! in the rows themselves: a head kept elsewhere ([`head`], checked by
//! [`check_head`]) shows it.
//!
//! Invariant: ids run 1, 2, 3, … without gaps (the shell inserts
//! `last id + 1` and tries again when another writer took that id), so a
//! deleted row shows as a gap; only the removal of the newest rows leaves no
//! trace in the chain itself.

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::auth::audit_key::{AuditKey, PublicKey};

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
    /// The trace the operation ran in (W3C trace id, 32 lowercase hex), when
    /// it was traced and sampled: the version's trace, for the row of the
    /// request that created it. Sealed like the other fields when present;
    /// a row without one seals as rows did before it existed.
    pub trace_id: Option<String>,
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
            trace_id: self.trace_id.as_deref().map(bounded),
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
    /// `<key id>:<signature of the seal>` when a key signed it.
    pub signature: Option<String>,
}

/// The hash of row `id` saying `entry` after a row whose hash is `prev`:
/// SHA-256 over the length-prefixed fields, lowercase hex. The trace id
/// comes last and only when there is one, so rows written before rows had
/// it keep their seals (and a trace id removed from a row breaks its seal).
pub fn seal(id: i64, entry: &Entry, prev: &str) -> String {
    let mut digest = Sha256::new();
    let id = id.to_string();
    let fields =
        [prev, id.as_str(), &entry.at, &entry.actor, &entry.action, &entry.target, &entry.request_id, &entry.outcome];
    for field in fields.into_iter().chain(entry.trace_id.as_deref()) {
        digest.update((field.len() as u64).to_be_bytes());
        digest.update(field.as_bytes());
    }
    digest.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The row that follows `last` (none: the first) saying `entry`, signed
/// by `key` when there is one.
pub fn next(last: Option<(i64, &str)>, entry: Entry, key: Option<&AuditKey>) -> Sealed {
    let (id, prev) = match last {
        Some((id, hash)) => (id + 1, hash.to_string()),
        None => (1, GENESIS.to_string()),
    };
    let hash = seal(id, &entry, &prev);
    let signature = key.map(|key| key.sign(&hash));
    Sealed { id, entry, prev, hash, signature }
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
    /// A row's signature is not its key's over its seal.
    #[error("row {0}'s signature does not verify: it was rewritten or re-signed without the key")]
    BadSignature(i64),
    /// A row is signed by a key none of the public keys is.
    #[error("row {row} is signed by key {key}, which is none of the public keys given: re-signed with another key?")]
    UnknownKey {
        /// The row.
        row: i64,
        /// The key id it carries.
        key: String,
    },
    /// A row without a signature after signed rows.
    #[error("row {0} is not signed, after signed rows: written or rewritten without the key")]
    Unsigned(i64),
    /// A row without a signature where the verifier knows rows are signed
    /// (`--signed-from`): its signature was stripped, or it was written or
    /// rewritten without the key.
    #[error(
        "row {row} is not signed, though every row from {from} on is (--signed-from): its signature was stripped, \
         or it was written or rewritten without the key"
    )]
    UnsignedFrom {
        /// The row.
        row: i64,
        /// The first row the verifier knows is signed.
        from: i64,
    },
    /// The head kept elsewhere is missing or differs.
    #[error("{0}")]
    Head(String),
}

/// What [`verify`] found in an unbroken log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verified {
    /// Rows in the chain.
    pub rows: usize,
    /// Signed rows whose signature was checked.
    pub signed: usize,
    /// Rows before the first signed one, which carry no signature
    /// (written before a key was set): chained, not signed.
    pub unsigned: usize,
    /// Signed rows not checked (no public key given).
    pub unchecked: usize,
}

impl Verified {
    /// The id of the first signed row, if any (the unsigned rows all come
    /// before it): what a verifier keeps for [`Known::signed_from`].
    pub fn first_signed(&self) -> Option<i64> {
        (self.signed + self.unchecked > 0).then(|| i64::try_from(self.unsigned).unwrap_or(i64::MAX) + 1)
    }
}

/// Checks the chain (rows in id order) and, with `keys`, every row's
/// signature: an unsigned row after a signed one, a signature of another
/// key or one that does not verify breaks it.
pub fn verify(rows: &[Sealed], keys: &[PublicKey]) -> Result<Verified, Broken> {
    let mut prev = GENESIS;
    let mut found = Verified { rows: rows.len(), ..Verified::default() };
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
        match &row.signature {
            None if found.signed + found.unchecked > 0 => return Err(Broken::Unsigned(row.id)),
            None => found.unsigned += 1,
            Some(_) if keys.is_empty() => found.unchecked += 1,
            Some(signature) => {
                let (key_id, signature) = signature.split_once(':').unwrap_or(("", signature));
                let Some(key) = keys.iter().find(|key| key.id() == key_id) else {
                    return Err(Broken::UnknownKey { row: row.id, key: key_id.chars().take(32).collect() });
                };
                if !key.verifies(&row.hash, signature) {
                    return Err(Broken::BadSignature(row.id));
                }
                found.signed += 1;
            }
        }
        prev = &row.hash;
    }
    Ok(found)
}

/// What a verifier knows of the log from elsewhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct Known<'a> {
    /// A head kept earlier (`ID:SEAL`, `--expect`): that row must be there,
    /// unchanged.
    pub head: Option<&'a str>,
    /// The first row signed (`--signed-from`): every row from it on must be
    /// (a log whose signatures were all stripped looks otherwise like one
    /// written before a key was set).
    pub signed_from: Option<i64>,
}

/// [`verify`], then what the verifier knows ([`Known`]): what `strata audit
/// verify [--expect ID:SEAL] [--signed-from ID]` answers wherever the rows
/// were read.
pub fn verify_knowing(rows: &[Sealed], keys: &[PublicKey], known: Known<'_>) -> Result<Verified, Broken> {
    let verified = verify(rows, keys)?;
    if let Some(from) = known.signed_from
        && let Some(row) = rows.iter().find(|row| row.id >= from && row.signature.is_none())
    {
        return Err(Broken::UnsignedFrom { row: row.id, from });
    }
    match known.head {
        Some(head) => check_head(rows, head).map(|()| verified),
        None => Ok(verified),
    }
}

/// The newest row as `ID:SEAL`, to keep outside the database (`strata
/// audit head`); none while the log is empty.
pub fn head(rows: &[Sealed]) -> Option<String> {
    rows.last().map(|row| format!("{}:{}", row.id, row.hash))
}

/// Checks a head kept earlier (`ID:SEAL`) against the log: the row must be
/// there with that seal (a log truncated below it, or rewritten there,
/// fails).
pub fn check_head(rows: &[Sealed], expected: &str) -> Result<(), Broken> {
    let Some((id, wanted)) =
        expected.trim().split_once(':').and_then(|(id, seal)| Some((id.parse::<i64>().ok()?, seal)))
    else {
        return Err(Broken::Head(format!(
            "{expected:?} is not a head: expected ID:SEAL (strata audit head prints one)"
        )));
    };
    match rows.iter().find(|row| row.id == id) {
        None => Err(Broken::Head(format!(
            "row {id} is missing: the log holds {} row(s), so rows were deleted from its end",
            rows.len()
        ))),
        Some(row) if row.hash != wanted => {
            Err(Broken::Head(format!("row {id} has another seal than the head kept: the log was rewritten")))
        }
        Some(_) => Ok(()),
    }
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
            trace_id: None,
        }
    }

    fn chain(n: usize) -> Vec<Sealed> {
        let mut rows: Vec<Sealed> = Vec::new();
        for i in 0..n {
            let last = rows.last().map(|r| (r.id, r.hash.as_str()));
            rows.push(next(last, entry(&format!("token:t{i}")), None));
        }
        rows
    }

    #[test]
    fn an_untouched_chain_verifies() {
        assert_eq!(verify(&chain(5), &[]).map(|v| v.rows), Ok(5));
        assert_eq!(verify(&[], &[]).map(|v| v.unsigned), Ok(0));
        assert_eq!(chain(1)[0].prev, GENESIS);
    }

    #[test]
    fn an_edited_row_is_found() {
        let mut rows = chain(5);
        rows[2].entry.actor = "token:someone-else".into();
        assert_eq!(verify(&rows, &[]), Err(Broken::Edited(3)));
    }

    #[test]
    fn a_deleted_row_is_found() {
        let mut rows = chain(5);
        rows.remove(1);
        assert_eq!(verify(&rows, &[]), Err(Broken::Gap { expected: 2, found: 3 }));
    }

    #[test]
    fn a_row_rewritten_with_its_own_hash_breaks_the_next_link() {
        let mut rows = chain(5);
        rows[1].entry.outcome = "refused".into();
        rows[1].hash = seal(2, &rows[1].entry, &rows[1].prev);
        assert_eq!(verify(&rows, &[]), Err(Broken::Relinked(3)));
    }

    #[test]
    fn a_trace_id_is_sealed_and_rows_without_one_keep_the_seal_they_had() {
        // SHA-256 over the eight length-prefixed fields, as rows were sealed
        // before they carried a trace id (computed outside this code).
        let before = "e8386a8c1ebb40bb3e2838c2f0b521af2be56d9b07ef9764c536b7f07b66a67c";
        assert_eq!(chain(1)[0].hash, before);
        let mut rows = chain(3);
        rows[1].entry.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        let mut traced = chain(1);
        let last = traced.last().map(|r| (r.id, r.hash.clone())).unwrap();
        traced.push(next(Some((last.0, &last.1)), rows[1].entry.clone(), None));
        assert_eq!(verify(&traced, &[]).map(|v| v.rows), Ok(2));
        assert_ne!(traced[1].hash, chain(2)[1].hash, "the trace id is part of the seal");
        for edit in [None, Some("00000000000000000000000000000000".to_string()), Some(String::new())] {
            let mut edited = traced.clone();
            edited[1].entry.trace_id = edit;
            assert_eq!(verify(&edited, &[]), Err(Broken::Edited(2)));
        }
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

    /// `n` rows, the first `unsigned` of them without a key, the others
    /// signed by `key`.
    fn signed_chain(n: usize, unsigned: usize, key: &AuditKey) -> Vec<Sealed> {
        let mut rows: Vec<Sealed> = Vec::new();
        for i in 0..n {
            let last = rows.last().map(|r| (r.id, r.hash.as_str()));
            rows.push(next(last, entry(&format!("token:t{i}")), (i >= unsigned).then_some(key)));
        }
        rows
    }

    /// Everything an attacker with the table but not the key can do:
    /// rewrite a row and re-seal the chain after it, re-sign with a key of
    /// their own, strip signatures.
    fn reseal_from(rows: &mut [Sealed], from: usize, key: Option<&AuditKey>) {
        for i in from..rows.len() {
            if i > 0 {
                rows[i].prev = rows[i - 1].hash.clone();
            }
            rows[i].hash = seal(rows[i].id, &rows[i].entry, &rows[i].prev);
            rows[i].signature = key.map(|key| key.sign(&rows[i].hash));
        }
    }

    #[test]
    fn a_signed_log_verifies_with_public_keys_only_and_a_rewrite_without_the_key_does_not() {
        let key = AuditKey::from_seed([1; 32]);
        let keys = [key.public()];
        let rows = signed_chain(6, 2, &key);
        assert_eq!(verify(&rows, &keys), Ok(Verified { rows: 6, signed: 4, unsigned: 2, unchecked: 0 }));
        assert_eq!(verify(&rows, &[]), Ok(Verified { rows: 6, signed: 0, unsigned: 2, unchecked: 4 }));

        // Edited and re-sealed, its signature kept: the signature fails.
        let mut edited = rows.clone();
        edited[3].entry.outcome = "refused".into();
        let kept = edited[3..].iter().map(|r| r.signature.clone()).collect::<Vec<_>>();
        reseal_from(&mut edited, 3, None);
        for (row, signature) in edited[3..].iter_mut().zip(kept) {
            row.signature = signature;
        }
        assert_eq!(verify(&edited, &keys), Err(Broken::BadSignature(4)));
        // Re-signed with another key: not one of ours.
        let mut resigned = rows.clone();
        resigned[3].entry.outcome = "refused".into();
        let mallory = AuditKey::from_seed([2; 32]);
        reseal_from(&mut resigned, 3, Some(&mallory));
        assert_eq!(verify(&resigned, &keys), Err(Broken::UnknownKey { row: 4, key: mallory.id().to_string() }));
        // Signatures stripped from the rewritten rows: unsigned after signed.
        let mut stripped = rows.clone();
        reseal_from(&mut stripped, 4, None);
        assert_eq!(verify(&stripped, &keys), Err(Broken::Unsigned(5)));
        // Every signature stripped: a pre-key log to verify, not to a
        // verifier who knows the first signed row.
        let mut all_stripped = rows.clone();
        reseal_from(&mut all_stripped, 0, None);
        assert!(verify(&all_stripped, &keys).is_ok());
        let known = Known { head: None, signed_from: Some(3) };
        assert_eq!(verify_knowing(&all_stripped, &keys, known), Err(Broken::UnsignedFrom { row: 3, from: 3 }));
        assert!(verify_knowing(&rows, &keys, known).is_ok());
        assert_eq!(verify(&rows, &keys).map(|found| found.first_signed()), Ok(Some(3)));
        assert_eq!(verify(&all_stripped, &keys).map(|found| found.first_signed()), Ok(None));
        // A signature moved to another row does not verify there.
        let mut moved = rows.clone();
        moved[4].signature = moved[5].signature.clone();
        assert_eq!(verify(&moved, &keys), Err(Broken::BadSignature(5)));
    }

    #[test]
    fn keys_rotate_and_older_rows_verify_with_their_public_key() {
        let (old, new) = (AuditKey::from_seed([3; 32]), AuditKey::from_seed([4; 32]));
        let mut rows = signed_chain(3, 0, &old);
        for i in 0..3 {
            let last = rows.last().map(|r| (r.id, r.hash.as_str()));
            rows.push(next(last, entry(&format!("token:n{i}")), Some(&new)));
        }
        assert_eq!(verify(&rows, &[new.public(), old.public()]).map(|v| v.signed), Ok(6));
        assert_eq!(verify(&rows, &[new.public()]), Err(Broken::UnknownKey { row: 1, key: old.id().to_string() }));
    }

    #[test]
    fn a_head_kept_elsewhere_finds_a_truncated_or_rewritten_log() {
        let key = AuditKey::from_seed([5; 32]);
        let rows = signed_chain(5, 0, &key);
        let kept = head(&rows).unwrap();
        assert_eq!(kept, format!("5:{}", rows[4].hash));
        assert_eq!(check_head(&rows, &kept), Ok(()));
        // Truncated: the newest two rows removed, the rest intact.
        assert_eq!(verify(&rows[..3], &[key.public()]).map(|v| v.rows), Ok(3));
        assert_eq!(
            check_head(&rows[..3], &kept),
            Err(Broken::Head("row 5 is missing: the log holds 3 row(s), so rows were deleted from its end".into()))
        );
        let mut rewritten = rows.clone();
        rewritten[4].hash = "0".repeat(64);
        assert!(check_head(&rewritten, &kept).unwrap_err().to_string().contains("the log was rewritten"));
        assert!(check_head(&rows, "five").unwrap_err().to_string().contains("expected ID:SEAL"));
        assert_eq!(head(&[]), None);
    }

    #[test]
    fn input_fields_are_cut_and_their_control_characters_escaped() {
        assert_eq!(bounded("a\nb\u{1b}[31m"), "a\\nb\\u{1b}[31m");
        let long = bounded(&"x".repeat(60_000));
        assert_eq!(long.chars().count(), FIELD_CHARS + 1);
        assert!(long.ends_with('…'));
        let entry = Entry { actor: "oidc:a\nb".into(), ..entry("x") }.bounded();
        assert_eq!(entry.actor, "oidc:a\\nb");
    }
}
