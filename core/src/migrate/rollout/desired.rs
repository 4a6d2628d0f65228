//! A rollout to a desired schema: one wave per group of tenants sharing a
//! plan (core's `desired` grouping), largest first, an approval between
//! each two, every wave bound to the plan it was started with.
//!
//! # Invariants
//!
//! - **An approval approves one plan.** The plan of each wave (its SHA-256,
//!   core's `desired::Plan::hash`) is fixed when the rollout starts, and the
//!   approval event names it. Just before a wave runs its tenants are
//!   planned again from the desired text stored with the rollout (never a
//!   file read again): a tenant whose plan is still the approved one runs
//!   it; one whose schema changed since — its plan now another, or the
//!   same plan now losing data where it lost none when started — is held
//!   back, named in the wave's event, and runs nothing; one already in the
//!   desired state needs nothing.
//! - The desired text is kept in the rollout's document as it was started:
//!   a desired file edited afterwards changes nothing a wave runs.

use crate::migrate::desired::{DesiredGroup, DesiredReport};

use super::{By, DesiredTarget, Gate, Rollout, RolloutError, Select, WaveStep, short};

/// Wave tenants as they stand just before the wave runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredWave {
    /// The approved plan over the tenants whose plan still is it: they
    /// run it (`None`: none does).
    pub run: Option<DesiredGroup>,
    /// Tenants already in the desired state: nothing to run.
    pub reached: Vec<String>,
    /// Tenants held back, and why: their plan is no longer the approved
    /// one, or they are no longer in the fleet.
    pub held: Vec<(String, String)>,
}

impl DesiredWave {
    /// What happened to the tenants that did not run, in words (empty:
    /// every tenant ran the approved plan).
    pub fn detail(&self) -> String {
        let mut parts = Vec::new();
        if !self.held.is_empty() {
            let held: Vec<String> = self.held.iter().map(|(tenant, why)| format!("{tenant} ({why})")).collect();
            parts.push(format!("held back: {}", crate::migrate::summary::some_of(&held, 20)));
        }
        if !self.reached.is_empty() {
            parts
                .push(format!("already in the desired state: {}", crate::migrate::summary::some_of(&self.reached, 20)));
        }
        parts.join("; ")
    }
}

impl DesiredTarget {
    /// The tenants of wave `wave` (`tenants`, as started) against their
    /// plans now (`report`, planned over those of them still in the fleet):
    /// which run the approved plan, which are there already, which are
    /// held back.
    pub fn wave(&self, wave: usize, tenants: &[String], report: &DesiredReport) -> DesiredWave {
        let approved = self.plans.get(wave).map(String::as_str).unwrap_or_default();
        let approved_losing = self.destructive.get(wave).copied().unwrap_or(false);
        let mut result = DesiredWave { run: None, reached: Vec::new(), held: Vec::new() };
        // A wave can be thousands of tenants: looked up, never scanned.
        let of_wave: std::collections::BTreeSet<&str> = tenants.iter().map(String::as_str).collect();
        let mut planned = std::collections::BTreeSet::new();
        for group in &report.groups {
            let ours: Vec<String> = group.tenants.iter().filter(|t| of_wave.contains(t.as_str())).cloned().collect();
            planned.extend(ours.iter().cloned());
            if ours.is_empty() {
                continue;
            }
            if group.in_desired_state() {
                result.reached.extend(ours);
            } else if group.plan == approved && group.destructive && !approved_losing {
                // The same statements, now losing data in one of them at
                // least (a group's step is destructive when it is for any).
                let why = format!("plan {} now loses data, approved as losing none", short(approved));
                result.held.extend(ours.into_iter().map(|tenant| (tenant, why.clone())));
            } else if group.plan == approved {
                result.run = Some(DesiredGroup { tenants: ours, ..group.clone() });
            } else {
                let why = format!("plan {} now, {} approved", short(&group.plan), short(approved));
                result.held.extend(ours.into_iter().map(|tenant| (tenant, why.clone())));
            }
        }
        for tenant in tenants.iter().filter(|t| !planned.contains(*t)) {
            result.held.push((tenant.clone(), "no longer a tenant of the fleet".to_string()));
        }
        result.held.sort();
        result.reached.sort();
        result
    }
}

impl Rollout {
    /// A rollout to the desired schema `text` (named `file`): one wave per
    /// group of `groups` (those a desired apply would run, largest first),
    /// an approval after each but the last; it runs its first wave.
    pub fn to_desired<'a>(
        version_name: &str,
        groups: &[&DesiredGroup],
        (file, text): (&str, &str),
        failure_budget: Option<String>,
        now: i64,
        by: impl Into<By<'a>>,
    ) -> Result<Rollout, RolloutError> {
        let waves = groups
            .iter()
            .enumerate()
            .map(|(index, group)| WaveStep {
                select: Select::Tenants(group.tenants.clone()),
                then: if index + 1 < groups.len() { Gate::Approval } else { Gate::Go },
                budget: None,
            })
            .collect();
        let target = DesiredTarget {
            file: file.to_string(),
            text: text.to_string(),
            plans: groups.iter().map(|group| group.plan.clone()).collect(),
            destructive: groups.iter().map(|group| group.destructive).collect(),
        };
        Rollout::start(version_name, waves, failure_budget, Some(target), now, by.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::desired::Step;
    use crate::migrate::rollout::{ApprovalRules, Next, Status};

    fn group(plan: &str, tenants: &[&str], steps: &[&str]) -> DesiredGroup {
        DesiredGroup {
            plan: plan.to_string(),
            tenants: tenants.iter().map(|t| t.to_string()).collect(),
            steps: steps.iter().map(|sql| Step { sql: sql.to_string(), destructive: false }).collect(),
            destructive: false,
            unplannable: Vec::new(),
            findings: Vec::new(),
        }
    }

    fn names(tenants: &[&str]) -> Vec<String> {
        tenants.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn each_group_is_a_wave_bound_to_its_plan_with_an_approval_between() {
        let big = group("aaaaaaaaaaaaaaaa", &["t1", "t2", "t4"], &["ALTER TABLE {schema}.a ADD COLUMN b int"]);
        let small = group("bbbbbbbbbbbbbbbb", &["t3"], &["CREATE INDEX i ON {schema}.a (b)"]);
        let by = By { request_id: "req-1", actor: "oidc:ann", principal: "oidc:iss#ann", trace: "" };
        let mut r =
            Rollout::to_desired("to desired", &[&big, &small], ("desired.sql", "create …"), None, 10, by).unwrap();
        assert_eq!(r.waves[0].select, Select::Tenants(names(&["t1", "t2", "t4"])));
        assert_eq!((r.waves[0].then, r.waves[1].then), (Gate::Approval, Gate::Go));
        assert_eq!(r.desired.as_ref().unwrap().plans, ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"]);
        assert_eq!(r.wave_label(0), "plan aaaaaaaaaaaa (3 tenant(s))");
        assert_eq!(r.wave_version_name(1), "to desired (wave 2/2: plan bbbbbbbbbbbb (1 tenant(s)))");
        assert_eq!(
            r.events[0].detail,
            "desired.sql: plan aaaaaaaaaaaa (3 tenant(s)) | plan bbbbbbbbbbbb (1 tenant(s))"
        );
        // Stored and read back whole.
        assert_eq!(Rollout::from_json(&r.to_json()).unwrap(), r);

        r.claim(0, 11, 100, "runner");
        assert!(r.wave_ended(0, Ok("version 3".into()), 12, "runner"));
        assert_eq!(r.status, Status::AwaitingApproval);
        let rules = ApprovalRules { forbid_self_approval: true, files_now: None };
        let same = By { request_id: "req-2", actor: "oidc:ann-2", principal: "oidc:iss#ann", trace: "" };
        assert!(matches!(r.approve(13, same, &rules), Err(RolloutError::SelfApproval { .. })));
        let other = By { request_id: "req-3", actor: "oidc:bob", principal: "oidc:iss#bob", trace: "" };
        r.approve(14, other, &rules).unwrap();
        let approved = r.events.last().unwrap();
        assert_eq!((approved.action.as_str(), approved.detail.as_str()), ("approved", "plan bbbbbbbbbbbbbbbb"));
        assert_eq!(r.next(14), Next::Run(1));
    }

    #[test]
    fn before_a_wave_runs_a_tenant_whose_plan_changed_is_held_back() {
        let approved = group("aaaaaaaaaaaaaaaa", &["t1", "t2", "t3", "t4", "t5"], &["X"]);
        let target = DesiredTarget {
            file: "f".into(),
            text: "t".into(),
            plans: vec!["aaaaaaaaaaaaaaaa".into()],
            destructive: Vec::new(),
        };
        // Planned again: t2 changed by hand since (another plan), t4 brought
        // there by hand, t5 gone from the fleet, t9 not of this wave.
        let now = DesiredReport {
            desired: "d".into(),
            tenants: 5,
            differing: 3,
            groups: vec![
                group("aaaaaaaaaaaaaaaa", &["t1", "t3", "t9"], &["X"]),
                group("cccccccccccccccc", &["t2"], &["X", "Y"]),
                group("dddddddddddddddd", &["t4"], &[]),
            ],
        };
        let wave = target.wave(0, &approved.tenants, &now);
        let run = wave.run.as_ref().unwrap();
        assert_eq!((run.plan.as_str(), run.tenants.clone()), ("aaaaaaaaaaaaaaaa", names(&["t1", "t3"])));
        assert_eq!(wave.reached, names(&["t4"]));
        assert_eq!(
            wave.held,
            [
                ("t2".to_string(), "plan cccccccccccc now, aaaaaaaaaaaa approved".to_string()),
                ("t5".to_string(), "no longer a tenant of the fleet".to_string())
            ]
        );
        assert_eq!(
            wave.detail(),
            "held back: t2 (plan cccccccccccc now, aaaaaaaaaaaa approved), t5 (no longer a tenant of the fleet); \
             already in the desired state: t4"
        );
        // Every tenant changed: nothing runs.
        let changed = DesiredReport { groups: vec![group("cccccccccccccccc", &["t1"], &["Y"])], ..now.clone() };
        let wave = target.wave(0, &names(&["t1"]), &changed);
        assert_eq!(wave.run, None);
        assert_eq!(wave.held.len(), 1);
        // The approved text, now losing data (started as losing none):
        // held back; approved as losing data, it runs.
        let losing = DesiredGroup { destructive: true, ..group("aaaaaaaaaaaaaaaa", &["t1", "t3"], &["X"]) };
        let now_losing = DesiredReport { groups: vec![losing], ..now };
        let wave = target.wave(0, &names(&["t1", "t3"]), &now_losing);
        assert_eq!(wave.run, None);
        assert_eq!(wave.held[0].1, "plan aaaaaaaaaaaa now loses data, approved as losing none");
        let allowed = DesiredTarget { destructive: vec![true], ..target };
        assert_eq!(allowed.wave(0, &names(&["t1", "t3"]), &now_losing).run.unwrap().tenants, names(&["t1", "t3"]));
    }
}
