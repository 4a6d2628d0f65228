//! A rollout: one version rolled out over the fleet in ordered waves, with
//! a gate between them (go on, soak for a time, or wait for an approval),
//! as a state machine the service stores and drives. Time enters as an
//! argument (Unix seconds); nothing here reads a clock.
//!
//! # Invariants
//!
//! - A wave runs only once the waves before it completed and their gates
//!   opened; a wave that fails (beyond its failure budget) stops the
//!   rollout, and no later wave runs until someone resumes it.
//! - Running a wave again is harmless: each wave is a version over a part
//!   of the fleet, and a version applies only what is pending. So a claim
//!   on a wave (a replica running it) expires; another replica that finds
//!   it expired — its runner died — runs the wave again. A wave's result
//!   counts only when it still is the wave the rollout waits for.
//! - Every operation is an event with its time and request id: who started,
//!   approved, paused, resumed the rollout, and what each wave did.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::migrate::wave::Wave;

pub mod desired;
pub mod reach;
pub mod wave_run;

/// Which tenants a wave runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Select {
    /// These tenants (a canary).
    Tenants(Vec<String>),
    /// A stable share of the fleet, 0–100 (core's `wave::bucket`).
    Share(u8),
    /// The tenants whose attribute (a column of `tenantSelectSQL`) is one
    /// of the values.
    Attribute {
        /// The column, lowercase.
        name: String,
        /// The values selected.
        values: Vec<String>,
    },
    /// Every tenant.
    Rest,
}

impl Select {
    /// The part of the fleet a version runs in.
    pub fn wave(&self) -> Wave {
        match self {
            Select::Tenants(names) => Wave::Named(names.clone()),
            Select::Share(share) => Wave::Share(*share),
            Select::Attribute { name, values } => Wave::Attribute { name: name.clone(), values: values.clone() },
            Select::Rest => Wave::All,
        }
    }
}

/// What happens after a wave, before the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Gate {
    /// The next wave runs at once.
    Go,
    /// The next wave runs this many seconds later.
    Soak(u64),
    /// The next wave runs once someone approves it.
    Approval,
}

/// One wave: which tenants, and the gate after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaveStep {
    /// Its tenants.
    pub select: Select,
    /// What happens after it.
    pub then: Gate,
    /// Its own failure budget (`2`, `10%`), instead of the rollout's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
}

impl std::fmt::Display for WaveStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.select {
            Select::Tenants(names) => f.write_str(&names.join(","))?,
            Select::Share(share) => write!(f, "{share}%")?,
            Select::Attribute { name, values } => write!(f, "{name}={}", values.join(","))?,
            Select::Rest => f.write_str("rest")?,
        }
        match self.then {
            Gate::Go => {}
            Gate::Soak(seconds) => write!(f, ":soak={seconds}")?,
            Gate::Approval => f.write_str(":approve")?,
        }
        match &self.budget {
            Some(budget) => write!(f, ":budget={budget}"),
            None => Ok(()),
        }
    }
}

impl std::str::FromStr for WaveStep {
    type Err = RolloutError;

    /// `SELECT[:GATE][:budget=N|N%]`: `t1,t2`, `10%`, `tier=internal,beta`
    /// (an attribute, see `wave`) or `rest`; then
    /// `approve`, `soak=SECONDS` or nothing (go on at once); then the
    /// wave's own failure budget.
    fn from_str(text: &str) -> Result<WaveStep, RolloutError> {
        let bad = || RolloutError::BadWave(text.to_string());
        let mut parts = text.split(':');
        let select = parts.next().unwrap_or_default().trim();
        let select = if select == "rest" {
            Select::Rest
        } else if let Some(share) = select.strip_suffix('%') {
            Select::Share(share.trim().parse().ok().filter(|s| *s <= 100).ok_or_else(bad)?)
        } else if select.contains('=') {
            match Wave::attribute(select).map_err(|_| bad())? {
                Wave::Attribute { name, values } => Select::Attribute { name, values },
                _ => return Err(bad()),
            }
        } else {
            let names: Vec<String> = select.split(',').map(|n| n.trim().to_string()).collect();
            if names.iter().any(String::is_empty) {
                return Err(bad());
            }
            Select::Tenants(names)
        };
        let mut then = None;
        let mut budget = None;
        for part in parts.map(str::trim) {
            if let Some(value) = part.strip_prefix("budget=") {
                value.parse::<crate::migrate::quarantine::FailureBudget>().map_err(|_| bad())?;
                if budget.replace(value.to_string()).is_some() {
                    return Err(bad());
                }
                continue;
            }
            let gate = match part {
                "" | "go" => Gate::Go,
                "approve" => Gate::Approval,
                soak => Gate::Soak(
                    soak.strip_prefix("soak=")
                        .and_then(|s| s.trim().parse().ok())
                        .filter(|s| *s > 0 && *s <= MAX_SOAK_SECONDS)
                        .ok_or_else(bad)?,
                ),
            };
            if then.replace(gate).is_some() {
                return Err(bad());
            }
        }
        Ok(WaveStep { select, then: then.unwrap_or(Gate::Go), budget })
    }
}

/// Where a rollout stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// The next wave runs (or is running).
    Running,
    /// The next wave runs once its soak time is over.
    Soaking,
    /// The next wave runs once someone approves it.
    AwaitingApproval,
    /// Someone paused it: nothing runs until it is resumed.
    Paused,
    /// Every wave completed.
    Completed,
    /// A wave failed: nothing runs until it is resumed (the wave runs again).
    Stopped,
    /// Someone cancelled it: no wave runs again, and versions over the
    /// fleet are no longer held by it.
    Cancelled,
}

impl Status {
    /// The name served by the API.
    pub fn name(self) -> &'static str {
        match self {
            Status::Running => "RUNNING",
            Status::Soaking => "SOAKING",
            Status::AwaitingApproval => "AWAITING_APPROVAL",
            Status::Paused => "PAUSED",
            Status::Completed => "COMPLETED",
            Status::Stopped => "STOPPED",
            Status::Cancelled => "CANCELLED",
        }
    }
}

/// Something that happened to a rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// When (Unix seconds).
    pub at: i64,
    /// `started`, `wave-started`, `wave-completed`, `wave-failed`,
    /// `approved`, `paused`, `resumed`, `completed`, `cancelled`,
    /// `overridden` (a version ran over the fleet past its gates).
    pub action: String,
    /// The wave (from 0) it concerns, if any.
    pub wave: Option<usize>,
    /// The request that did it (a wave's runner: the replica's id).
    pub request_id: String,
    /// Who did it (`token:ci`, `oidc:alice`, `cli:alice@host`; empty for
    /// a wave's runner and for rollouts stored before identities).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub actor: String,
    /// The stable principal behind `actor` (`oidc:<issuer>#<sub>`,
    /// `cli:<uid>@<host>`), when it differs from it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub principal: String,
    /// What it did, in words (a wave: its version and counts, or its error).
    pub detail: String,
    /// The W3C `traceparent` of the request that did it (empty: not traced).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trace: String,
}

/// A rollout's whole state, stored as one document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    /// The name of each wave's version starts with it.
    pub version_name: String,
    /// The waves, in order.
    pub waves: Vec<WaveStep>,
    /// Waves completed.
    pub position: usize,
    /// Where it stands.
    pub status: Status,
    /// `Paused`: the status it was paused in.
    pub paused_from: Option<Status>,
    /// `Soaking`: when the next wave may run.
    pub not_before: Option<i64>,
    /// A replica runs the wave at `position` until then (then another may).
    pub claimed_until: Option<i64>,
    /// The failure budget of each wave (`5`, `10%`; `None`: the
    /// configuration's).
    pub failure_budget: Option<String>,
    /// What happened, oldest first.
    pub events: Vec<Event>,
    /// Who started it (empty without identities).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub started_by: String,
    /// The principal that started it: what the starter rule compares
    /// (empty for rollouts stored before principals: `started_by` then).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub started_by_principal: String,
    /// The source files (name → checksum) when it started: what its
    /// approvals approve. Empty for rollouts stored before it was kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// A rollout to a desired schema: its text and each wave's plan
    /// ([`desired`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<DesiredTarget>,
}

/// What a rollout to a desired schema is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DesiredTarget {
    /// The desired schema as it was named (a path, or `the desired
    /// schema` for text sent through the API).
    pub file: String,
    /// Its text when the rollout started: what every wave plans from.
    pub text: String,
    /// Each wave's plan (SHA-256 of its file text), by wave: what the
    /// wave's approval approves.
    pub plans: Vec<String>,
    /// Whether each wave's plan lost data when the rollout started, by
    /// wave: the same text can lose data in a schema changed since (a
    /// column's type narrowed where it was widened), which no approval
    /// covered. Missing (a rollout stored before): none did.
    #[serde(default)]
    pub destructive: Vec<bool>,
}

/// The first characters of a plan's hash, as shown.
fn short(plan: &str) -> &str {
    &plan[..12.min(plan.len())]
}

/// Who asks for an operation on a rollout: the request, the actor as
/// shown, and the principal behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct By<'a> {
    /// The request's id.
    pub request_id: &'a str,
    /// The identity as shown (empty: none known).
    pub actor: &'a str,
    /// The stable principal: one person or service however it signs in
    /// (`oidc:<issuer>#<sub>`, `token:<owner>`, `cli:<uid>@<host>`; empty:
    /// none known).
    pub principal: &'a str,
    /// The W3C `traceparent` of the request's span (empty: not traced):
    /// kept on the event, so a wave's trace can link to it.
    pub trace: &'a str,
}

impl<'a> From<&'a str> for By<'a> {
    /// A request without an identity.
    fn from(request_id: &'a str) -> By<'a> {
        By { request_id, actor: "", principal: "", trace: "" }
    }
}

impl By<'_> {
    /// Whether `self` is the one that `actor` and `principal` were recorded
    /// for: by principal when both sides have one, else by actor (rows
    /// stored before principals), letter case aside (`owner:Bob` is
    /// `owner:bob`: a name written twice is one person to this rule).
    /// Nobody known is nobody's same.
    fn is(&self, actor: &str, principal: &str) -> bool {
        let same = |a: &str, b: &str| a.to_lowercase() == b.to_lowercase();
        if !self.principal.is_empty() && !principal.is_empty() {
            same(self.principal, principal)
        } else {
            !self.actor.is_empty() && same(self.actor, actor)
        }
    }
}

/// What an approval is checked against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalRules {
    /// The identity that started a rollout may not approve it.
    pub forbid_self_approval: bool,
    /// The source files now (name → checksum); `None`: not checked.
    pub files_now: Option<BTreeMap<String, String>>,
}

/// How the source files changed since a rollout started, in words
/// (`changed: a.sql`, `added: b.sql`, `removed: c.sql`), by file name.
pub fn plan_changes(started: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    let mut changes = Vec::new();
    for (file, checksum) in started {
        match now.get(file) {
            None => changes.push(format!("removed: {file}")),
            Some(current) if current != checksum => changes.push(format!("changed: {file}")),
            Some(_) => {}
        }
    }
    changes.extend(now.keys().filter(|file| !started.contains_key(*file)).map(|file| format!("added: {file}")));
    changes.sort_by(|a, b| a.split_once(": ").map(|x| x.1).cmp(&b.split_once(": ").map(|x| x.1)));
    changes
}

/// Checks the files a wave read (name → checksum) against those the
/// rollout started with: every wave runs exactly what was started and
/// approved, or nothing ([`RolloutError::WaveFilesChanged`] naming each
/// change). A rollout bound to no files (started before they were kept)
/// checks nothing.
pub fn check_wave_files(
    started: &BTreeMap<String, String>,
    read: &BTreeMap<String, String>,
) -> Result<(), RolloutError> {
    if started.is_empty() {
        return Ok(());
    }
    let changes = plan_changes(started, read);
    if changes.is_empty() { Ok(()) } else { Err(RolloutError::WaveFilesChanged(changes)) }
}

/// Refuses, at a rollout's start, a wave naming a tenant the fleet does not
/// have (`tenants`), rather than stopping the rollout when that wave comes.
pub fn check_named_tenants(waves: &[WaveStep], tenants: &[String]) -> Result<(), crate::migrate::wave::WaveError> {
    let known: BTreeSet<&str> = tenants.iter().map(String::as_str).collect();
    for wave in waves {
        if let Select::Tenants(names) = &wave.select
            && let Some(unknown) = names.iter().find(|name| !known.contains(name.as_str()))
        {
            return Err(crate::migrate::wave::WaveError::NotATenant(unknown.clone()));
        }
    }
    Ok(())
}

/// What a driver should do about a rollout now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Run this wave.
    Run(usize),
    /// Nothing now; look again at this time.
    WaitUntil(i64),
    /// Nothing until an operator acts (approval, resume) or ever (completed).
    Nothing,
}

/// Versions over the fleet refused while rollouts are in progress: each
/// would run the rollout's files on tenants whose waves are not due.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{} in progress: a version over the fleet now would run {} files on tenants whose waves are not due. Let it \
     finish (approve or resume it), cancel it (`strata rollout cancel ID`), or override it explicitly \
     (`strata apply --override-rollout`, overrideRollout: true; recorded in the rollout's events)",
    describe(.0),
    if .0.len() == 1 { "its" } else { "their" }
)]
pub struct InProgress(pub Vec<ActiveRollout>);

/// A rollout that holds versions over the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveRollout {
    /// Its id.
    pub id: i64,
    /// Its version name.
    pub version_name: String,
    /// Its status.
    pub status: String,
    /// Waves completed.
    pub waves_done: usize,
    /// Waves in all.
    pub waves: usize,
}

impl ActiveRollout {
    /// `rollout 3 ("v2", 1/3 waves done, AWAITING_APPROVAL)`.
    pub fn describe(&self) -> String {
        format!(
            "rollout {} ({:?}, {}/{} waves done, {})",
            self.id, self.version_name, self.waves_done, self.waves, self.status
        )
    }
}

fn describe(list: &[ActiveRollout]) -> String {
    list.iter().map(ActiveRollout::describe).collect::<Vec<_>>().join(", ")
        + if list.len() == 1 { " is" } else { " are" }
}

/// What the rollouts in progress do to a version over the fleet, as its
/// request says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FleetGate {
    /// Refused while a rollout is in progress (`ROLLOUT_IN_PROGRESS`).
    #[default]
    Hold,
    /// A wave of a rollout: the rollout itself runs it.
    Wave,
    /// Runs anyway, recorded in every active rollout's events.
    Override,
}

/// What a version does at the gate, given the rollouts in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtFleetGate {
    /// It runs: nothing in progress, or nothing it is held by.
    Runs,
    /// It is refused: these rollouts are in progress.
    Refused(InProgress),
    /// It runs over these rollouts, each told so in its events.
    Overrides(Vec<ActiveRollout>),
}

impl FleetGate {
    /// Whether a version must read the rollouts in progress at all: one
    /// rollouts hold (core's `Operation::held_by_rollouts`), not a dry run,
    /// not a rollout's own wave, where rollouts are kept.
    pub fn applies(self, held_by_rollouts: bool, dry_run: bool, rollouts_kept: bool) -> bool {
        held_by_rollouts && !dry_run && self != FleetGate::Wave && rollouts_kept
    }

    /// What a version at this gate does with `active` in progress.
    pub fn judge(self, active: Vec<ActiveRollout>) -> AtFleetGate {
        if active.is_empty() || self == FleetGate::Wave {
            return AtFleetGate::Runs;
        }
        match self {
            FleetGate::Hold => AtFleetGate::Refused(InProgress(active)),
            FleetGate::Override | FleetGate::Wave => AtFleetGate::Overrides(active),
        }
    }
}

/// The rollouts of `rollouts` that hold versions over the fleet.
pub fn active<'a>(rollouts: impl IntoIterator<Item = (i64, &'a Rollout)>) -> Vec<ActiveRollout> {
    rollouts
        .into_iter()
        .filter(|(_, r)| r.is_active())
        .map(|(id, r)| ActiveRollout {
            id,
            version_name: r.version_name.clone(),
            status: r.status.name().to_string(),
            waves_done: r.position,
            waves: r.waves.len(),
        })
        .collect()
}

/// Why a rollout or an operation on it is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RolloutError {
    /// A wave's text cannot be read.
    #[error(
        "wave {0:?}: expected tenant names (a,b), a share (10%), an attribute (tier=internal,beta) or rest, then \
         optionally :approve or :soak=SECONDS (at most a year), and :budget=N or :budget=N%"
    )]
    BadWave(String),
    /// No wave given.
    #[error("a rollout needs at least one wave")]
    NoWave,
    /// Another rollout is in progress.
    #[error(
        "{0} in progress: a second rollout would run its files on tenants whose waves are not due; let it finish \
         (approve or resume it), or cancel it (`strata rollout cancel ID`) first"
    )]
    AnotherActive(String),
    /// More waves than [`MAX_WAVES`].
    #[error("a rollout of {0} waves is over {MAX_WAVES}: a canary, shares and the rest need a few")]
    TooManyWaves(usize),
    /// `rest` before the last wave: the waves after it would find nothing.
    #[error("rest must be the last wave")]
    RestNotLast,
    /// The identity that started the rollout asked to approve it.
    #[error(
        "{starter} started this rollout, and {approver} is the same person: another person must approve it (the \
         rule: auth.allowSelfApproval)"
    )]
    SelfApproval {
        /// Who started it, as recorded.
        starter: String,
        /// Who asked to approve it.
        approver: String,
    },
    /// Source files changed since the rollout started: what would run is
    /// not what was started.
    #[error(
        "the source files changed since the rollout started ({}): approving would run what was not reviewed; \
         cancel it and start a new rollout, or restore the files",
        crate::migrate::summary::some_of(.0, 10)
    )]
    PlanChanged(Vec<String>),
    /// Source files changed since the rollout started, found by a wave
    /// about to run: nothing of the wave ran.
    #[error(
        "the source files changed since the rollout started ({}): the wave would run what was not reviewed, so \
         nothing of it ran; restore the files and resume, or cancel it and start a new rollout",
        crate::migrate::summary::some_of(.0, 10)
    )]
    WaveFilesChanged(Vec<String>),
    /// The operation does not apply in this status.
    #[error("the rollout is {status}: {operation} applies to a rollout {expected}")]
    WrongStatus {
        /// The operation.
        operation: &'static str,
        /// Where the rollout stands.
        status: &'static str,
        /// Where it would have to stand.
        expected: &'static str,
    },
}

/// The longest soak: a year (a larger number wrapped past the clock's
/// range, and a soak of 2^63 seconds ended at once).
pub const MAX_SOAK_SECONDS: u64 = 366 * 86_400;

/// Refuses a new rollout while `active` ones are in progress: its waves
/// would run their files on tenants whose waves they hold back (an
/// approval, a soak), past that gate and unrecorded in their events.
pub fn check_none_active(active: &[ActiveRollout]) -> Result<(), RolloutError> {
    match active.is_empty() {
        true => Ok(()),
        false => Err(RolloutError::AnotherActive(describe(active))),
    }
}

/// Most waves a rollout given its waves may have (each is stored with it,
/// and read at every look at the rollouts: 150,000 waves answered 7 MB a
/// read).
pub const MAX_WAVES: usize = 100;

/// Characters a wave adds to its rollout's name as its version's name
/// ([`Rollout::wave_version_name`]): ` (wave 100/100: ` and a shortened
/// label.
const WAVE_NAME_CHARS: usize = 130;

/// Checks a rollout's version name: a version name
/// (`crate::migrate::ident::check_version_name`) that leaves room for what
/// each wave adds to it.
pub fn check_name(version_name: &str) -> Result<(), String> {
    crate::migrate::ident::check_version_name(version_name)?;
    let most = crate::migrate::ident::MAX_VERSION_NAME_CHARS - WAVE_NAME_CHARS;
    let length = version_name.chars().count();
    if length > most {
        return Err(format!("versionName has {length} characters, over {most} for a rollout (its waves add theirs)"));
    }
    Ok(())
}

/// Refuses more than [`MAX_WAVES`] waves, before they are read.
pub fn check_wave_count(waves: usize) -> Result<(), RolloutError> {
    if waves > MAX_WAVES { Err(RolloutError::TooManyWaves(waves)) } else { Ok(()) }
}

impl Rollout {
    /// A new rollout, running its first wave.
    pub fn new<'a>(
        version_name: &str,
        waves: Vec<WaveStep>,
        failure_budget: Option<String>,
        now: i64,
        by: impl Into<By<'a>>,
    ) -> Result<Rollout, RolloutError> {
        check_wave_count(waves.len())?;
        Rollout::start(version_name, waves, failure_budget, None, now, by.into())
    }

    /// A new rollout over `waves`, bound to `desired` when it is one to a
    /// desired schema.
    fn start(
        version_name: &str,
        waves: Vec<WaveStep>,
        failure_budget: Option<String>,
        desired: Option<DesiredTarget>,
        now: i64,
        by: By<'_>,
    ) -> Result<Rollout, RolloutError> {
        if waves.is_empty() {
            return Err(RolloutError::NoWave);
        }
        if waves[..waves.len() - 1].iter().any(|w| w.select == Select::Rest) {
            return Err(RolloutError::RestNotLast);
        }
        let mut rollout = Rollout {
            version_name: version_name.to_string(),
            waves,
            position: 0,
            status: Status::Running,
            paused_from: None,
            not_before: None,
            claimed_until: None,
            failure_budget,
            events: Vec::new(),
            started_by: by.actor.to_string(),
            started_by_principal: by.principal.to_string(),
            files: BTreeMap::new(),
            desired,
        };
        let mut plan = (0..rollout.waves.len()).map(|wave| rollout.wave_label(wave)).collect::<Vec<_>>().join(" | ");
        if let Some(desired) = &rollout.desired {
            plan = format!("{}: {plan}", desired.file);
        }
        rollout.event(now, "started", None, by, plan);
        Ok(rollout)
    }

    /// Binds it to the source files as they are now (name → checksum):
    /// approving after one changed is refused.
    pub fn with_files(mut self, files: BTreeMap<String, String>) -> Rollout {
        self.files = files;
        self
    }

    fn event<'a>(&mut self, at: i64, action: &str, wave: Option<usize>, by: impl Into<By<'a>>, detail: String) {
        let by = by.into();
        self.events.push(Event {
            at,
            action: action.to_string(),
            wave,
            request_id: by.request_id.to_string(),
            actor: by.actor.to_string(),
            principal: if by.principal == by.actor { String::new() } else { by.principal.to_string() },
            detail,
            trace: by.trace.to_string(),
        });
    }

    /// The traces wave `wave`'s version links to: the request that started
    /// the rollout and those that approved the wave (each wave's version is
    /// a trace of its own, run later by the service).
    pub fn wave_links(&self, wave: usize) -> Vec<&str> {
        self.events
            .iter()
            .filter(|event| event.action == "started" || (event.action == "approved" && event.wave == Some(wave)))
            .map(|event| event.trace.as_str())
            .filter(|trace| !trace.is_empty())
            .collect()
    }

    /// The quarantined tenants (`quarantine`: each row's tenant and the
    /// request that put it aside) a wave that names its tenants runs
    /// without, in round `round` of its run (a round runs the wave's
    /// files again once its backfills are done): in a later round, every
    /// one (a backfill failed within the budget); in the first, those an
    /// earlier run of the same wave put aside (the request id of a claim
    /// of that wave, each claim's own, is a `wave-started` event's: a
    /// runner killed after absorbing a tenant's failure, its wave run again
    /// by another). The others a named wave still names, and the version
    /// refuses them.
    pub fn wave_runs_without<'a>(
        &self,
        wave: usize,
        round: usize,
        quarantine: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> BTreeSet<&'a str> {
        let runners: BTreeSet<&str> = self
            .events
            .iter()
            .filter(|event| event.action == "wave-started" && event.wave == Some(wave))
            .map(|event| event.request_id.as_str())
            .collect();
        quarantine
            .into_iter()
            .filter(|(_, request_id)| round > 0 || runners.contains(request_id))
            .map(|(tenant, _)| tenant)
            .collect()
    }

    /// Wave `wave` as shown: as written, or for a rollout to a desired
    /// schema its plan and how many tenants share it (a group can be
    /// thousands of names; an approval follows every wave but the last).
    pub fn wave_label(&self, wave: usize) -> String {
        match (&self.desired, &self.waves[wave].select) {
            (Some(desired), Select::Tenants(tenants)) => {
                let plan = desired.plans.get(wave).map(String::as_str).unwrap_or_default();
                format!("plan {} ({} tenant(s))", short(plan), tenants.len())
            }
            _ => self.waves[wave].to_string(),
        }
    }

    /// What to do about it at `now`.
    pub fn next(&self, now: i64) -> Next {
        match self.status {
            Status::Running => match self.claimed_until {
                Some(until) if until > now => Next::WaitUntil(until),
                _ => Next::Run(self.position),
            },
            Status::Soaking => match self.not_before {
                Some(at) if at > now => Next::WaitUntil(at),
                _ => Next::Run(self.position),
            },
            _ => Next::Nothing,
        }
    }

    /// The version name of wave `wave`, its wave's label shortened
    /// (`crate::migrate::ident::shortened`: a wave of 300 tenants' names).
    pub fn wave_version_name(&self, wave: usize) -> String {
        let label = crate::migrate::ident::shortened(&self.wave_label(wave));
        format!("{} (wave {}/{}: {label})", self.version_name, wave + 1, self.waves.len())
    }

    /// A runner takes wave `wave` until `until` (the driver found
    /// [`Next::Run`] for it).
    pub fn claim(&mut self, wave: usize, now: i64, until: i64, runner: &str) {
        self.status = Status::Running;
        self.not_before = None;
        self.claimed_until = Some(until);
        self.event(now, "wave-started", Some(wave), runner, self.wave_version_name(wave));
    }

    /// Whether wave `wave` is the one running now: its runner's claim
    /// holds while the rollout runs, or was paused while it ran (a pause
    /// stops the rollout before its next wave; the running one finishes).
    fn runs(&self, wave: usize) -> bool {
        self.position == wave
            && (self.status == Status::Running
                || (self.status == Status::Paused && self.paused_from == Some(Status::Running)))
    }

    /// The runner of wave `wave` keeps it until `until` (its version or its
    /// backfills are still running; also while paused). False (nothing
    /// changed) when the rollout no longer waits for that wave: cancelled,
    /// stopped, or taken by another runner whose claim is newer.
    pub fn renew(&mut self, wave: usize, until: i64, runner: &str) -> bool {
        let ours = self.events.iter().rev().find(|event| event.action == "wave-started").map(|event| &event.request_id);
        if !self.runs(wave) || ours.map(String::as_str) != Some(runner) {
            return false;
        }
        self.claimed_until = Some(until);
        true
    }

    /// Wave `wave` ended: `Ok` with what it did, `Err` with why it failed.
    /// Returns false (and changes nothing) when the rollout no longer waits
    /// for that wave (another runner finished it, or it was cancelled). A
    /// wave that ends while the rollout is paused is recorded; the rollout
    /// stays paused before the next (resumed, it goes on from there).
    pub fn wave_ended(&mut self, wave: usize, result: Result<String, String>, now: i64, runner: &str) -> bool {
        if !self.runs(wave) {
            return false;
        }
        let paused = self.status == Status::Paused;
        self.claimed_until = None;
        match result {
            Ok(detail) => {
                self.event(now, "wave-completed", Some(wave), runner, detail);
                self.position += 1;
                if self.position == self.waves.len() {
                    self.status = Status::Completed;
                    self.paused_from = None;
                    self.event(now, "completed", None, runner, String::new());
                    return true;
                }
                let next = match self.waves[wave].then {
                    Gate::Go => Status::Running,
                    Gate::Soak(seconds) => {
                        self.not_before = Some(now.saturating_add(seconds as i64));
                        Status::Soaking
                    }
                    Gate::Approval => Status::AwaitingApproval,
                };
                match paused {
                    true => self.paused_from = Some(next),
                    false => self.status = next,
                }
            }
            Err(error) => {
                self.status = Status::Stopped;
                self.paused_from = None;
                self.event(now, "wave-failed", Some(wave), runner, error);
            }
        }
        true
    }

    /// Lets the next wave run (it was awaiting approval) — unless `by`
    /// started it and `rules` forbid that, or the source files changed
    /// since it started.
    pub fn approve<'a>(&mut self, now: i64, by: impl Into<By<'a>>, rules: &ApprovalRules) -> Result<(), RolloutError> {
        let by = by.into();
        self.expect("approve", &[Status::AwaitingApproval], "awaiting approval")?;
        if rules.forbid_self_approval && by.is(&self.started_by, &self.started_by_principal) {
            return Err(RolloutError::SelfApproval {
                starter: crate::auth::actor_with_principal(&self.started_by, &self.started_by_principal),
                approver: crate::auth::actor_with_principal(by.actor, by.principal),
            });
        }
        if let Some(now_files) = &rules.files_now
            && !self.files.is_empty()
        {
            let changes = plan_changes(&self.files, now_files);
            if !changes.is_empty() {
                return Err(RolloutError::PlanChanged(changes));
            }
        }
        self.status = Status::Running;
        // What is approved: a rollout to a desired schema names the plan.
        let plan = self.desired.as_ref().and_then(|desired| desired.plans.get(self.position));
        let detail = plan.map(|plan| format!("plan {plan}")).unwrap_or_default();
        self.event(now, "approved", Some(self.position), by, detail);
        Ok(())
    }

    /// Stops it before its next wave (a wave running finishes).
    pub fn pause<'a>(&mut self, now: i64, by: impl Into<By<'a>>) -> Result<(), RolloutError> {
        let by = by.into();
        self.expect(
            "pause",
            &[Status::Running, Status::Soaking, Status::AwaitingApproval],
            "running, soaking or awaiting approval",
        )?;
        self.paused_from = Some(self.status);
        self.status = Status::Paused;
        // A wave's claim stays with its runner, which renews it until the
        // wave ends: resumed meanwhile, no other runner takes the wave.
        self.event(now, "paused", Some(self.position), by, String::new());
        Ok(())
    }

    /// Goes on where it was paused, or runs the wave that failed again.
    pub fn resume<'a>(&mut self, now: i64, by: impl Into<By<'a>>) -> Result<(), RolloutError> {
        let by = by.into();
        self.expect("resume", &[Status::Paused, Status::Stopped], "paused or stopped")?;
        self.status = match self.paused_from.take() {
            Some(Status::Soaking) => Status::Soaking,
            Some(Status::AwaitingApproval) => Status::AwaitingApproval,
            _ => Status::Running,
        };
        self.event(now, "resumed", Some(self.position), by, String::new());
        Ok(())
    }

    /// Ends it before its remaining waves: none runs again (a wave running
    /// finishes, and is not recorded as the rollout's).
    pub fn cancel<'a>(&mut self, now: i64, by: impl Into<By<'a>>) -> Result<(), RolloutError> {
        let by = by.into();
        self.expect(
            "cancel",
            &[Status::Running, Status::Soaking, Status::AwaitingApproval, Status::Paused, Status::Stopped],
            "not yet completed or cancelled",
        )?;
        self.status = Status::Cancelled;
        self.paused_from = None;
        self.claimed_until = None;
        self.not_before = None;
        self.event(now, "cancelled", Some(self.position), by, String::new());
        Ok(())
    }

    /// Whether it still holds versions over the fleet (not completed, not
    /// cancelled).
    pub fn is_active(&self) -> bool {
        !matches!(self.status, Status::Completed | Status::Cancelled)
    }

    /// Records that a version ran over the fleet past its gates, on whose
    /// request.
    pub fn overridden<'a>(&mut self, now: i64, by: impl Into<By<'a>>, version_name: &str) {
        self.event(now, "overridden", Some(self.position), by, format!("version {version_name:?} ran past it"));
    }

    fn expect(&self, operation: &'static str, allowed: &[Status], expected: &'static str) -> Result<(), RolloutError> {
        match allowed.contains(&self.status) {
            true => Ok(()),
            false => Err(RolloutError::WrongStatus { operation, status: self.status.name(), expected }),
        }
    }

    /// The stored document.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored document read back.
    pub fn from_json(text: &str) -> Result<Rollout, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests;
