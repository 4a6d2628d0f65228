//! `strata token …` and `strata audit …`: API tokens (the secret printed
//! once) and the audit log (listed, or its hash chain verified).

use serde_json::json;
use strata_core::auth::token::StoredToken;

use super::output::{cli_caller, failure, print_json};
use super::{AuditAction, AuditArgs, Exit, TokenAction, TokenArgs};
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
    })
}

/// Runs `strata token …`.
pub(super) async fn token(service: &Service, args: TokenArgs) -> Exit {
    match args.action {
        TokenAction::Create { name, role, expires } => {
            match service.create_token(&name, role, expires, &cli_caller()).await {
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
                    outln!("{:<24} {:<9} created {}  {expires}", token.name, token.role.name(), time(token.created));
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

/// Runs `strata audit …`.
pub(super) async fn audit(service: &Service, args: AuditArgs) -> Exit {
    match args.action {
        Some(AuditAction::Verify) => match service.verify_audit().await {
            Ok(Ok(rows)) => {
                if args.json {
                    print_json(&json!({ "intact": true, "rows": rows }));
                } else {
                    outln!("The audit log is intact: {rows} row(s), each chained to the one before.");
                }
                Exit::Success
            }
            Ok(Err(broken)) => {
                if args.json {
                    print_json(&json!({ "intact": false, "broken": broken.to_string() }));
                }
                eprintln!("strata: the audit log was tampered with: {broken}");
                Exit::AuditBroken
            }
            Err(error) => failure(&error),
        },
        None => match service.audit_log(args.since.as_deref()).await {
            Ok(rows) => {
                let rows: Vec<AuditRowDto> = rows.into_iter().map(AuditRowDto::from).collect();
                if args.json {
                    print_json(&rows);
                } else {
                    if rows.is_empty() {
                        outln!("The audit log is empty.");
                    }
                    for row in &rows {
                        outln!(
                            "{:>6} {} {} {} {} [{}] {}",
                            row.id,
                            row.at,
                            row.actor,
                            row.action,
                            row.target,
                            row.request_id,
                            row.outcome
                        );
                    }
                }
                Exit::Success
            }
            Err(error) => failure(&error),
        },
    }
}
