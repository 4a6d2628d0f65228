//! What a signature costs an audit row: appending (seal, and seal + Ed25519
//! signature) and verifying (chain only, chain + signature), per row, over a
//! log of 10,000 rows of realistic size.
//!
//! `cargo bench -p strata-core --bench audit`

use std::hint::black_box;
use std::time::{Duration, Instant};

use strata_core::auth::audit::{Entry, Sealed, next, verify};
use strata_core::auth::audit_key::AuditKey;

const ROWS: usize = 10_000;

fn entry(i: usize) -> Entry {
    Entry {
        at: "2026-12-01T16:00:00.123456Z".into(),
        actor: format!("oidc:user{i} <user{i}@example.com> [oidc:https://id.example.com/realms/eng#user{i}]"),
        action: "createVersion".into(),
        target: format!("version {i}"),
        request_id: "9f2c1d7e-5b1a-4c3e-8d2f-0a1b2c3d4e5f".into(),
        outcome: "ok".into(),
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
    }
}

fn chain(key: Option<&AuditKey>) -> (Vec<Sealed>, Duration) {
    let started = Instant::now();
    let mut rows: Vec<Sealed> = Vec::with_capacity(ROWS);
    for i in 0..ROWS {
        let last = rows.last().map(|r| (r.id, r.hash.as_str()));
        rows.push(next(last, entry(i), key));
    }
    (rows, started.elapsed())
}

fn per_row(total: Duration) -> f64 {
    total.as_secs_f64() * 1e6 / ROWS as f64
}

fn main() {
    let key = AuditKey::from_seed([7; 32]);
    let keys = [key.public()];
    let (plain, plain_append) = chain(None);
    let (signed, signed_append) = chain(Some(&key));
    let started = Instant::now();
    black_box(verify(&plain, &[]).unwrap());
    let plain_verify = started.elapsed();
    let started = Instant::now();
    black_box(verify(&signed, &keys).unwrap());
    let signed_verify = started.elapsed();
    println!("{ROWS} rows, per row:");
    println!("  append: chain {:.1} µs, chain + signature {:.1} µs", per_row(plain_append), per_row(signed_append));
    println!("  verify: chain {:.1} µs, chain + signature {:.1} µs", per_row(plain_verify), per_row(signed_verify));
}
