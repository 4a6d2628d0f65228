//! Which tenants a rollout in progress has reached, and what that means
//! for a retry of quarantined tenants.
//!
//! A retry runs every file pending in its tenants, so in a tenant whose
//! wave has not come it would run the rollout's files before their wave —
//! past the approvals and soaks the rollout exists for — and anywhere it
//! would run a file added since the rollout started, which no approval
//! reviewed. A retry is held in both cases, as a plain version is held for
//! the whole fleet, unless the caller overrides the rollout (recorded in
//! its events).
//!
//! A wave has reached a tenant when it selects it and it completed, or it
//! is the wave at the rollout's position and a runner started it (running,
//! stopped after a failure, paused while running). Quarantined tenants of
//! a wave that completed — passed by because quarantined, or put aside by
//! it — are reached: their retry is what the rollout waits for. A wave by
//! attribute is judged on the attributes now.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::migrate::rollout::{ActiveRollout, Rollout, Select, Status, active, plan_changes};
use crate::migrate::summary::some_of;
use crate::migrate::wave::{Attributes, bucket};

impl Rollout {
    /// How many of its waves have reached their tenants: those completed,
    /// and the one at its position once a runner started it (running, or
    /// stopped after it ran, or paused while running) — not once approved
    /// and not yet started.
    pub fn waves_reached(&self) -> usize {
        let may_run = match self.status {
            Status::Running | Status::Stopped => true,
            Status::Paused => self.paused_from == Some(Status::Running),
            _ => false,
        };
        let started =
            self.events.iter().any(|event| event.action == "wave-started" && event.wave == Some(self.position));
        (self.position + usize::from(may_run && started)).min(self.waves.len())
    }

    /// Whether a wave that has reached its tenants selects `tenant`
    /// (`attributes`: the tenant list's other columns, for a wave by
    /// attribute).
    pub fn has_reached(&self, tenant: &str, attributes: &Attributes) -> bool {
        self.waves[..self.waves_reached()].iter().any(|wave| match &wave.select {
            Select::Tenants(names) => names.iter().any(|name| name == tenant),
            Select::Share(share) => bucket(tenant) < *share,
            Select::Attribute { name, values } => {
                attributes.get(tenant, name).is_some_and(|value| values.iter().any(|v| v == value))
            }
            Select::Rest => true,
        })
    }
}

/// Tenants of a retry that a rollout in progress has not reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreached {
    /// The rollout.
    pub rollout: ActiveRollout,
    /// Its tenants no wave of it has reached yet, in the retry's order.
    pub tenants: Vec<String>,
}

/// A retry refused while rollouts are in progress; nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RetryHeld {
    /// It would run rollouts' files in tenants before their waves.
    #[error(
        "{}: a retry runs every file pending in its tenants, the rollout's included, before their wave. Retry \
         them once their wave has run, or release them (their wave runs them then); to run them now, override \
         the rollout (overrideRollout: true; strata quarantine retry --override-rollout), which its events record",
        describe(.0)
    )]
    BeforeWave(Vec<Unreached>),
    /// The source files changed since the rollout started: the retry would
    /// run what no approval of it reviewed.
    #[error(
        "the source files changed since {} started ({}): a retry would run them unreviewed in its tenants. Restore \
         the files, or override the rollout (overrideRollout: true; strata quarantine retry --override-rollout), \
         which its events record",
        .rollout.describe(),
        some_of(.changes, 10)
    )]
    Unreviewed {
        /// The rollout.
        rollout: ActiveRollout,
        /// What changed (`added: …`, `changed: …`, `removed: …`).
        changes: Vec<String>,
    },
}

fn describe(list: &[Unreached]) -> String {
    let parts: Vec<String> = list
        .iter()
        .map(|unreached| {
            let tenants = match unreached.tenants.as_slice() {
                [one] => format!("tenant {one}"),
                many => format!("tenants {}", some_of(many, 20)),
            };
            format!("{} has not reached {tenants} yet", unreached.rollout.describe())
        })
        .collect();
    parts.join("; ")
}

/// The tenants of `retried` each rollout in progress of `rollouts` has
/// not reached (none: the retry runs).
pub fn unreached<'a>(
    rollouts: impl IntoIterator<Item = (i64, &'a Rollout)>,
    retried: &[String],
    attributes: &Attributes,
) -> Vec<Unreached> {
    let mut found = Vec::new();
    for (id, rollout) in rollouts {
        let Some(summary) = active([(id, rollout)]).pop() else { continue };
        let tenants: Vec<String> =
            retried.iter().filter(|tenant| !rollout.has_reached(tenant, attributes)).cloned().collect();
        if !tenants.is_empty() {
            found.push(Unreached { rollout: summary, tenants });
        }
    }
    found
}

/// Whether a retry of `retried` (quarantined tenants, each once) runs
/// while `rollouts` are in progress, the source files being `files_now`
/// (name → checksum): refused where a rollout has not reached a tenant,
/// or where the files are not those a rollout started with. An override
/// runs past both; the shell records it in the rollouts concerned
/// ([`RetryHeld::rollouts`]).
pub fn judge_retry(
    rollouts: &[(i64, &Rollout)],
    retried: &[String],
    attributes: &Attributes,
    files_now: &BTreeMap<String, String>,
) -> Result<(), RetryHeld> {
    if retried.is_empty() {
        return Ok(());
    }
    let before = unreached(rollouts.iter().copied(), retried, attributes);
    if !before.is_empty() {
        return Err(RetryHeld::BeforeWave(before));
    }
    for (id, rollout) in rollouts {
        let Some(summary) = active([(*id, *rollout)]).pop() else { continue };
        if rollout.files.is_empty() {
            continue;
        }
        let changes = plan_changes(&rollout.files, files_now);
        if !changes.is_empty() {
            return Err(RetryHeld::Unreviewed { rollout: summary, changes });
        }
    }
    Ok(())
}

impl RetryHeld {
    /// The ids of the rollouts it names (an override is recorded in each).
    pub fn rollouts(&self) -> Vec<i64> {
        match self {
            RetryHeld::BeforeWave(list) => list.iter().map(|unreached| unreached.rollout.id).collect(),
            RetryHeld::Unreviewed { rollout, .. } => vec![rollout.id],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::rollout::{ApprovalRules, WaveStep};

    fn rollout(waves: &[&str]) -> Rollout {
        let steps: Vec<WaveStep> = waves.iter().map(|w| w.parse().unwrap()).collect();
        Rollout::new("v2", steps, None, 0, "start").unwrap()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// The first `n` names `t0`, `t1`… whose bucket `wanted` accepts.
    fn tenants_in(n: usize, wanted: impl Fn(u8) -> bool) -> Vec<String> {
        (0..1000).map(|i| format!("t{i}")).filter(|t| wanted(bucket(t))).take(n).collect()
    }

    #[test]
    fn a_wave_reaches_its_tenants_once_it_runs_and_not_while_its_gate_holds() {
        let mut r = rollout(&["t1:approve", "t2,t3:approve", "rest"]);
        let none = Attributes::default();
        assert_eq!(r.waves_reached(), 0, "not started yet");
        r.claim(0, 0, 60, "runner");
        // Wave 1 runs: t1 is reached, t2 not.
        assert_eq!(r.waves_reached(), 1);
        assert!(r.has_reached("t1", &none));
        assert!(!r.has_reached("t2", &none));
        assert!(r.wave_ended(0, Ok("done".into()), 1, "runner"));
        assert_eq!(r.status, Status::AwaitingApproval);
        assert_eq!(r.waves_reached(), 1, "wave 2 waits for its approval");
        assert!(!r.has_reached("t3", &none));
        r.approve(2, "bob", &ApprovalRules::default()).unwrap();
        assert!(!r.has_reached("t3", &none), "approved, not started yet");
        r.pause(2, "ops").unwrap();
        assert!(!r.has_reached("t3", &none), "approved then paused before it started");
        r.resume(2, "ops").unwrap();
        r.claim(1, 2, 60, "runner");
        assert!(r.has_reached("t3", &none), "started");
        assert!(r.wave_ended(1, Err("t3 failed".into()), 3, "runner"));
        assert_eq!(r.status, Status::Stopped);
        assert!(r.has_reached("t3", &none), "a stopped wave ran: its tenants are retried before it resumes");
        assert!(!r.has_reached("t9", &none), "the rest is not reached");
    }

    #[test]
    fn a_paused_rollout_keeps_what_its_running_wave_reached_and_a_soak_holds_the_next() {
        let mut r = rollout(&["t1:soak=60", "rest"]);
        let none = Attributes::default();
        r.claim(0, 0, 60, "runner");
        r.pause(0, "ops").unwrap();
        assert!(r.has_reached("t1", &none), "paused while running: wave 1 may have run");
        r.resume(1, "ops").unwrap();
        assert!(r.wave_ended(0, Ok("done".into()), 2, "runner"));
        assert_eq!(r.status, Status::Soaking);
        assert!(!r.has_reached("t9", &none));
        r.pause(3, "ops").unwrap();
        assert!(!r.has_reached("t9", &none), "paused while soaking: the rest has not run");
    }

    #[test]
    fn shares_and_attributes_reach_the_tenants_they_select() {
        let mut r = rollout(&["10%:approve", "tier=beta:approve", "rest"]);
        let low = tenants_in(1, |b| b < 10).remove(0);
        let [beta, gold, other]: [String; 3] = tenants_in(3, |b| b >= 10).try_into().unwrap();
        let mut attributes = Attributes::new(vec!["Tier".into()]);
        attributes.values.insert(beta.clone(), vec![Some("beta".into())]);
        attributes.values.insert(gold.clone(), vec![Some("gold".into())]);
        r.claim(0, 0, 60, "runner");
        assert!(r.has_reached(&low, &attributes));
        assert!(!r.has_reached(&beta, &attributes), "the attribute's wave has not run");
        assert!(r.wave_ended(0, Ok(String::new()), 1, "runner"));
        r.approve(2, "bob", &ApprovalRules::default()).unwrap();
        r.claim(1, 2, 60, "runner");
        assert!(r.has_reached(&beta, &attributes));
        assert!(!r.has_reached(&gold, &attributes));
        assert!(!r.has_reached(&other, &attributes), "a tenant without the attribute");
    }

    #[test]
    fn a_retry_is_held_only_for_tenants_an_active_rollout_has_not_reached() {
        let mut waiting = rollout(&["t1:approve", "rest"]);
        waiting.claim(0, 0, 60, "runner");
        assert!(waiting.wave_ended(0, Ok(String::new()), 1, "runner"));
        let mut cancelled = rollout(&["t1", "rest"]);
        cancelled.cancel(1, "ops").unwrap();
        let rollouts = [(7, &waiting), (8, &cancelled)];
        let none = Attributes::default();
        assert_eq!(unreached(rollouts, &names(&["t1"]), &none), Vec::new());
        let held = unreached(rollouts, &names(&["t1", "t2", "t3"]), &none);
        assert_eq!(held.len(), 1, "a cancelled rollout holds nothing: {held:?}");
        assert_eq!((held[0].rollout.id, held[0].tenants.clone()), (7, names(&["t2", "t3"])));
        let message = RetryHeld::BeforeWave(held).to_string();
        assert!(
            message.starts_with(
                "rollout 7 (\"v2\", 1/2 waves done, AWAITING_APPROVAL) has not reached tenants t2, t3 yet: a retry \
                 runs every file pending in its tenants"
            ),
            "{message}"
        );
        let one = RetryHeld::BeforeWave(unreached(rollouts, &names(&["t2"]), &none)).to_string();
        assert!(one.contains("has not reached tenant t2 yet"), "{one}");
    }

    #[test]
    fn a_retry_where_the_rollout_reached_its_tenants_still_runs_only_the_files_it_started_with() {
        let files = |list: &[(&str, &str)]| -> BTreeMap<String, String> {
            list.iter().map(|(f, c)| (f.to_string(), c.to_string())).collect()
        };
        let started = files(&[("tenants/004.sql", "a")]);
        let mut r = rollout(&["t1", "rest"]).with_files(started.clone());
        r.claim(0, 0, 60, "runner");
        let none = Attributes::default();
        assert_eq!(judge_retry(&[(3, &r)], &names(&["t1"]), &none, &started), Ok(()));
        assert_eq!(judge_retry(&[(3, &r)], &[], &none, &files(&[])), Ok(()), "nothing to retry");
        let added = files(&[("tenants/004.sql", "a"), ("tenants/005.sql", "b")]);
        let held = judge_retry(&[(3, &r)], &names(&["t1"]), &none, &added).unwrap_err();
        assert_eq!(held.rollouts(), [3]);
        assert!(
            held.to_string().starts_with(
                "the source files changed since rollout 3 (\"v2\", 0/2 waves done, RUNNING) started (added: \
                 tenants/005.sql): a retry would run them unreviewed"
            ),
            "{held}"
        );
        let before = judge_retry(&[(3, &r)], &names(&["t1", "t9"]), &none, &started).unwrap_err();
        assert!(matches!(&before, RetryHeld::BeforeWave(list) if list[0].tenants == names(&["t9"])), "{before}");
    }
}
