//! `strata rollout`: start, operate and list stored rollouts, or drive
//! them here.

use std::sync::Arc;

use serde_json::json;
use strata_core::migrate::rollout::{Rollout, Status};

use crate::cli::output::{failure, print_json};
use crate::cli::{Exit, RolloutAction, RolloutArgs};
use crate::error::AppError;
use crate::service::{DesiredStart, RolloutControl, Service};

/// How long a wave driven by the command line is claimed (a server's
/// driver takes it over once the claim expires if this process dies).
const CLAIM_SECONDS: i64 = 60;

fn as_json(id: i64, rollout: &Rollout) -> serde_json::Value {
    let mut value = serde_json::to_value(rollout).unwrap_or_default();
    value["id"] = json!(id);
    value
}

/// One line per wave (done, next or pending), then the last event.
fn print_rollout(id: i64, rollout: &Rollout) {
    outln!("rollout {id}: {} — {}", rollout.version_name, rollout.status.name());
    for index in 0..rollout.waves.len() {
        let state = match index.cmp(&rollout.position) {
            std::cmp::Ordering::Less => "done",
            std::cmp::Ordering::Equal if rollout.status == Status::Completed => "done",
            std::cmp::Ordering::Equal => "next",
            std::cmp::Ordering::Greater => "pending",
        };
        outln!("  {}. {:<24} {state}", index + 1, rollout.wave_label(index));
    }
    if let Some(event) = rollout.events.last() {
        let wave = event.wave.map(|w| format!(" (wave {})", w + 1)).unwrap_or_default();
        outln!(
            "  last: {}{wave} by {}{}",
            event.action,
            event.request_id,
            if event.detail.is_empty() { String::new() } else { format!(": {}", event.detail) }
        );
    }
}

fn show(id: i64, rollout: &Rollout, json: bool) {
    if json {
        print_json(&as_json(id, rollout));
    } else {
        print_rollout(id, rollout);
    }
}

/// Runs `strata rollout …`.
pub(super) async fn rollout(service: &Arc<Service>, args: RolloutArgs) -> Exit {
    // The request id of what this command does (also the claim's holder
    // when it drives waves).
    let caller = super::output::cli_caller();
    let request_id = caller.request_id.as_str();
    let caller = &caller;
    let operate = |id, operation| async move {
        match service.operate_rollout(id, operation, caller).await {
            Ok(rollout) => {
                show(id, &rollout, args.json);
                Exit::Success
            }
            Err(error) => failure(&error),
        }
    };
    match args.action.unwrap_or(RolloutAction::List) {
        RolloutAction::List => list(service, args.json).await,
        RolloutAction::Start { version_name, waves, failure_budget, desired, allow_destructive, skip_destructive } => {
            let desired = match desired {
                Some(file) => match super::desired::read_desired(service, file.as_deref(), None).await {
                    Ok((file, text)) => {
                        let destructive = super::destructive(allow_destructive, skip_destructive);
                        Some(DesiredStart { file, text, destructive })
                    }
                    Err(exit) => return exit,
                },
                None => None,
            };
            match service.start_rollout(&version_name, &waves, failure_budget, desired, caller).await {
                Ok((id, rollout)) => {
                    show(id, &rollout, args.json);
                    Exit::Success
                }
                Err(error) => failure(&error),
            }
        }
        // Whoever holds the configuration holds the database: an approval
        // there would be anybody's, so with identities it goes through the
        // service, where the approver is a principal.
        RolloutAction::Approve { id } if service.config().auth.configured() => failure(&AppError::Forbidden(format!(
            "auth is configured: approve rollout {id} through the service (strata --server URL rollout approve {id}, \
             with your STRATA_TOKEN), where the approver is who signed in; the in-process command line is the \
             database owner's tool and approves nothing"
        ))),
        RolloutAction::Approve { id } => operate(id, RolloutControl::Approve).await,
        RolloutAction::Pause { id } => operate(id, RolloutControl::Pause).await,
        RolloutAction::Resume { id } => operate(id, RolloutControl::Resume).await,
        RolloutAction::Cancel { id } => operate(id, RolloutControl::Cancel).await,
        RolloutAction::Drive => drive(service, request_id, args.json).await,
    }
}

/// `rollout list`: every rollout.
async fn list(service: &Arc<Service>, json: bool) -> Exit {
    match service.rollouts().await {
        Ok(rollouts) if json => {
            print_json(&rollouts.iter().map(|(id, r)| as_json(*id, r)).collect::<Vec<_>>());
            Exit::Success
        }
        Ok(rollouts) => {
            if rollouts.is_empty() {
                outln!("No rollout.");
            }
            for (id, rollout) in &rollouts {
                print_rollout(*id, rollout);
            }
            Exit::Success
        }
        Err(error) => failure(&error),
    }
}

/// `rollout drive`: runs every wave due (as `request_id`), then shows the
/// rollouts; fails when one stopped.
async fn drive(service: &Arc<Service>, request_id: &str, json: bool) -> Exit {
    let ran = match service.drive_rollouts(request_id, CLAIM_SECONDS).await {
        Ok(ran) => ran,
        Err(error) => return failure(&error),
    };
    let rollouts = match service.rollouts().await {
        Ok(rollouts) => rollouts,
        Err(error) => return failure(&error),
    };
    if json {
        print_json(&json!({
            "wavesRun": ran,
            "rollouts": rollouts.iter().map(|(id, r)| as_json(*id, r)).collect::<Vec<_>>(),
        }));
    } else {
        outln!("{ran} wave(s) run.");
        for (id, rollout) in &rollouts {
            print_rollout(*id, rollout);
        }
    }
    let stopped = rollouts.iter().any(|(_, r)| r.status == Status::Stopped);
    if stopped { Exit::Failed } else { Exit::Success }
}
