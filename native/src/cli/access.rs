//! `strata token …` and `strata audit …`: API tokens (the secret printed
//! once) and the audit log (listed, its chain and signatures verified, its
//! head printed, a signing key made).

use serde_json::json;
use strata_core::auth::audit::Verified;
use strata_core::auth::audit_key::AuditKey;
use strata_core::auth::token::StoredToken;

use crate::cli::output::{cli_caller, failure, print_json};
use crate::cli::{AuditAction, AuditArgs, Exit, TokenAction, TokenArgs};
use crate::graphql::types::AuditRowDto;
use crate::service::Service;

/// A Unix time as RFC 3339 (UTC, seconds).
fn time(seconds: i64) -> String {
    chrono::DateTime::from_timestamp(seconds, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| seconds.to_string())
}

fn token_json(token: &StoredToken) -> serde_json::Value {
    json!({
        "name": token.name,
        "role": token.role.name(),
        "created": time(token.created),
        "expires": token.expires.map(time),
        "owner": token.owner,
    })
}

/// Runs `strata token …`.
pub(super) async fn token(service: &Service, args: TokenArgs) -> Exit {
    match args.action {
        TokenAction::Create { name, role, expires, owner } => {
            match service.create_token(&name, role, expires, owner.as_deref(), &cli_caller()).await {
                Ok((token, secret)) => {
                    if args.json {
                        print_json(&json!({
                            "name": token.name,
                            "role": token.role.name(),
                            "token": secret,
                            "expires": token.expires.map(time),
                        }));
                    } else {
                        outln!("{secret}");
                        eprintln!(
                            "strata: token {:?} ({}) created{}; the secret above is shown once and stored only as \
                             a hash — send it as `Authorization: Bearer <token>`",
                            token.name,
                            token.role,
                            token.expires.map(|t| format!(", expires {}", time(t))).unwrap_or_default()
                        );
                    }
                    Exit::Success
                }
                Err(error) => failure(&error),
            }
        }
        TokenAction::List => match service.tokens().await {
            Ok(tokens) if args.json => {
                print_json(&tokens.iter().map(token_json).collect::<Vec<_>>());
                Exit::Success
            }
            Ok(tokens) => {
                if tokens.is_empty() {
                    outln!("No token. Create one with `strata token create --name NAME --role ROLE`.");
                }
                let now = chrono::Utc::now().timestamp();
                for token in &tokens {
                    let expires = match token.expires {
                        Some(t) if t <= now => format!("EXPIRED {}", time(t)),
                        Some(t) => format!("expires {}", time(t)),
                        None => "does not expire".to_string(),
                    };
                    let owner = token.owner.as_deref().map(|owner| format!("  owner {owner}")).unwrap_or_default();
                    outln!(
                        "{:<24} {:<9} created {}  {expires}{owner}",
                        token.name,
                        token.role.name(),
                        time(token.created)
                    );
                }
                Exit::Success
            }
            Err(error) => failure(&error),
        },
        TokenAction::Revoke { name } => match service.revoke_token(&name, &cli_caller()).await {
            Ok(()) => {
                if args.json {
                    print_json(&json!({ "revoked": name }));
                } else {
                    outln!("Revoked token {name:?}.");
                }
                Exit::Success
            }
            Err(error) => failure(&error),
        },
    }
}

/// `strata audit keygen`: a new signing key from the system's random
/// bytes, and its public key.
pub(crate) fn keygen(json: bool) -> Exit {
    let mut seed = [0u8; 32];
    if let Err(error) = getrandom::fill(&mut seed) {
        eprintln!("strata: no random bytes: {error}");
        return Exit::Failed;
    }
    let key = AuditKey::from_seed(seed);
    if json {
        print_json(&json!({ "auditKey": key.seed_base64(), "publicKey": key.public().to_base64(), "id": key.id() }));
    } else {
        outln!("auditKey: {}", key.seed_base64());
        outln!("publicKey: {}", key.public().to_base64());
        outln!("id: {}", key.id());
        outln!("Keep auditKey secret (e.g. STRATA_AUDIT_KEY, then auth.auditKey: ${{STRATA_AUDIT_KEY}}); give the");
        outln!("public key to whoever verifies (auth.auditPublicKeys, strata audit verify --public-key).");
    }
    Exit::Success
}

/// What `verify` can and cannot say of a log it found unbroken.
pub(super) fn verified_text(found: &Verified, expected_head: bool) -> String {
    let mut text = format!("The audit log's chain is intact: {} row(s), each chained to the one before.", found.rows);
    if found.signed > 0 {
        text.push_str(&format!("\n{} row(s) signed, every signature verified with the public keys.", found.signed));
    }
    if let Some(first) = found.first_signed() {
        text.push_str(&format!(
            "\nRows are signed from row {first} on: keep it, `--signed-from {first}` detects signatures stripped later."
        ));
    }
    if found.unsigned > 0 {
        text.push_str(&format!(
            "\n{} row(s) are UNSIGNED (written before auth.auditKey was set): anyone who can write the table \
             could have rewritten and re-sealed them.",
            found.unsigned
        ));
    }
    if found.unchecked > 0 {
        text.push_str(&format!(
            "\n{} signed row(s) NOT CHECKED: no public key given (auth.auditPublicKeys, --public-key).",
            found.unchecked
        ));
    }
    if found.signed == 0 && found.rows > 0 {
        text.push_str(
            "\nWithout verified signatures this detects edits by hand, not a rewrite that re-seals the chain.",
        );
    }
    if expected_head {
        text.push_str("\nThe head kept earlier is there, unchanged.");
    } else {
        text.push_str(
            "\nRows deleted from the end leave no trace: keep `strata audit head` elsewhere and check it with --expect.",
        );
    }
    text
}

/// Runs `strata audit …`.
pub(super) async fn audit(service: &Service, args: AuditArgs) -> Exit {
    match args.action {
        Some(AuditAction::Keygen) => keygen(args.json),
        Some(AuditAction::Head) => match service.audit_head().await {
            Ok(head) => print_head(head, args.json),
            Err(error) => failure(&error),
        },
        Some(AuditAction::Verify { public_keys, expect, signed_from }) => {
            let known = strata_core::auth::audit::Known { head: expect.as_deref(), signed_from };
            match service.verify_audit(&public_keys, known).await {
                Ok(found) => print_verified(found, expect.is_some(), args.json),
                Err(error) => failure(&error),
            }
        }
        None => match service.audit_log(args.since.as_deref(), None).await {
            Ok(rows) => print_audit(&rows.into_iter().map(AuditRowDto::from).collect::<Vec<_>>(), args.json),
            Err(error) => failure(&error),
        },
    }
}

/// `strata audit head`'s answer, in-process or through `--server`.
pub(super) fn print_head(head: Option<String>, json: bool) -> Exit {
    let Some(head) = head else {
        eprintln!("strata: the audit log is empty: no head yet");
        return Exit::Failed;
    };
    if json {
        print_json(&json!({ "head": head }));
    } else {
        outln!("{head}");
    }
    Exit::Success
}

/// `strata audit`'s list, in-process or through `--server`. The text is
/// escaped again (rows written before fields were bounded may hold control
/// characters, and a terminal must not run them).
pub(super) fn print_audit(rows: &[AuditRowDto], json: bool) -> Exit {
    use strata_core::auth::audit::bounded;
    if json {
        print_json(&rows);
    } else {
        if rows.is_empty() {
            outln!("The audit log is empty.");
        }
        for row in rows {
            let trace = row.trace_id.as_deref().map(|id| format!(" trace {}", bounded(id))).unwrap_or_default();
            outln!(
                "{:>6} {} {} {} {} [{}] {}{trace}",
                row.id,
                bounded(&row.at),
                bounded(&row.actor),
                bounded(&row.action),
                bounded(&row.target),
                bounded(&row.request_id),
                bounded(&row.outcome)
            );
        }
    }
    Exit::Success
}

/// `verify`'s answer for what `audit::verify` (and the head check) found.
pub(super) fn print_verified(
    found: Result<Verified, strata_core::auth::audit::Broken>,
    expect: bool,
    json: bool,
) -> Exit {
    match found {
        Ok(found) => {
            if json {
                print_json(&json!({
                    "intact": true,
                    "rows": found.rows,
                    "signed": found.signed,
                    "unsigned": found.unsigned,
                    "unchecked": found.unchecked,
                    "signedFrom": found.first_signed(),
                    "headChecked": expect,
                }));
            } else {
                outln!("{}", verified_text(&found, expect));
            }
            Exit::Success
        }
        Err(broken) => {
            if json {
                print_json(&json!({ "intact": false, "broken": broken.to_string() }));
            }
            eprintln!("strata: the audit log was tampered with: {broken}");
            Exit::AuditBroken
        }
    }
}
