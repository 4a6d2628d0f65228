//! Rollouts as stored state: started, operated and driven by the service
//! over core's `rollout` state machine. The document lives in the `svc`
//! schema (the home shard of a sharded fleet); every change is a
//! compare-and-set on its revision, so replicas sharing the database can
//! all drive and operate it — one wins each step, the others read again.
//! Each wave runs as a `createVersion` over its part of the fleet, and ends
//! once the backfills it started have: a wave's gate (a soak, an approval)
//! opens on tenants whose data changes are done, and a backfill that fails
//! fails its wave.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use chrono::Utc;
use strata_core::migrate::failure::absorbed_cause;
use strata_core::migrate::operation::Operation;
use strata_core::migrate::plan::Action;
use strata_core::migrate::quarantine::{FailureBudget, absorbs};

use strata_core::migrate::rollout::wave_run::{Step, WaveRun};
use strata_core::migrate::rollout::{
    self, ActiveRollout, ApprovalRules, AtFleetGate, By, FleetGate, Next, Rollout, RolloutError, WaveStep, reach,
};
use strata_core::migrate::summary;
use strata_core::migrate::wave::Wave;

use crate::db::error::LockError;
use crate::db::{BackfillState, BackfillWait, DbError, RolloutRow};
use crate::error::AppError;
use crate::service::{Caller, CreateRequest, DesiredStart, Service};

/// An operation on a stored rollout.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RolloutControl {
    /// Let the next wave run.
    Approve,
    /// Stop before the next wave.
    Pause,
    /// Go on (a failed wave runs again).
    Resume,
    /// End it before its remaining waves.
    Cancel,
}

/// How often a failed compare-and-set is tried again with a fresh read.
const ATTEMPTS: usize = 5;

/// How often a wave waiting on its backfills looks at them again.
const WAVE_BACKFILL_POLL: std::time::Duration = std::time::Duration::from_millis(500);

impl From<RolloutError> for AppError {
    fn from(error: RolloutError) -> Self {
        match error {
            RolloutError::SelfApproval { .. } => AppError::Forbidden(error.to_string()),
            RolloutError::PlanChanged(_) | RolloutError::WaveFilesChanged(_) => AppError::PlanChanged(error),
            other => AppError::InvalidInput(other.to_string()),
        }
    }
}

impl RolloutControl {
    /// The API field of the operation, as the audit log names it.
    fn action(self) -> &'static str {
        match self {
            RolloutControl::Approve => "approveRollout",
            RolloutControl::Pause => "pauseRollout",
            RolloutControl::Resume => "resumeRollout",
            RolloutControl::Cancel => "cancelRollout",
        }
    }
}

fn now() -> i64 {
    Utc::now().timestamp()
}

fn read(row: &RolloutRow) -> Result<Rollout, AppError> {
    Rollout::from_json(&row.doc).map_err(|e| AppError::Internal(format!("rollout {} cannot be read: {e}", row.id)))
}

impl Service {
    /// Stores a new rollout of `version_name` over `waves`; the driver runs
    /// its first wave. Returns its id and state.
    ///
    /// With `desired`, the waves are the desired schema's groups (one per
    /// plan, largest first, an approval between each two; `waves` must be
    /// empty), each bound to its plan.
    pub(crate) async fn start_rollout(
        &self,
        version_name: &str,
        waves: &[String],
        failure_budget: Option<String>,
        desired: Option<DesiredStart>,
        caller: &Caller,
    ) -> Result<(i64, Rollout), AppError> {
        let asked = match &desired {
            Some(desired) => format!("desired schema {}", desired.file),
            None => waves.join(" | "),
        };
        let work = self.start_rollout_unaudited(version_name, waves, failure_budget, desired, caller);
        self.audited(caller, "startRollout", work, |result| match result {
            Ok((id, _)) => format!("rollout {id} of version {version_name:?}: {asked}"),
            Err(_) => format!("rollout of version {version_name:?}: {asked}"),
        })
        .await
    }

    /// The source files now, name → checksum: what a rollout's approvals
    /// are bound to.
    async fn files_now(&self) -> Result<BTreeMap<String, String>, AppError> {
        Ok(self.source_migrations().await?.into_iter().map(|m| (m.file, m.checksum)).collect())
    }

    async fn start_rollout_unaudited(
        &self,
        version_name: &str,
        waves: &[String],
        failure_budget: Option<String>,
        desired: Option<DesiredStart>,
        caller: &Caller,
    ) -> Result<(i64, Rollout), AppError> {
        rollout::check_name(version_name).map_err(AppError::InvalidInput)?;
        rollout::check_wave_count(waves.len())?;
        let rollouts = self.rollouts().await?;
        rollout::check_none_active(&rollout::active(rollouts.iter().map(|(id, r)| (*id, r))))?;
        if let Some(budget) = &failure_budget {
            budget.parse::<FailureBudget>().map_err(|e| AppError::InvalidInput(format!("failureBudget: {e}")))?;
        }
        let trace = crate::traces::context::current_traceparent();
        let by = By { trace: &trace, ..caller.by() };
        let rollout = match desired {
            Some(desired) => {
                if !waves.is_empty() {
                    return Err(AppError::InvalidInput(
                        "a rollout to a desired schema makes its own waves, one per group of tenants sharing a \
                         plan: give no waves"
                            .into(),
                    ));
                }
                let run = self.desired_run(&desired.file, &desired.text, desired.destructive, None, None).await?;
                if run.groups.is_empty() {
                    return Err(AppError::InvalidInput(format!(
                        "{}: no group of tenants to bring to the desired schema, so no rollout",
                        desired.file
                    )));
                }
                for (tenants, why) in &run.left {
                    tracing::info!(version = %version_name, tenants = tenants.len(), %why,
                        "a group of tenants left out of the rollout to the desired schema");
                }
                let groups: Vec<_> = run.groups.iter().collect();
                Rollout::to_desired(version_name, &groups, (&desired.file, &desired.text), failure_budget, now(), by)?
            }
            None => {
                let steps = waves.iter().map(|w| w.parse()).collect::<Result<Vec<WaveStep>, _>>()?;
                if steps.iter().any(|step| matches!(step.select, rollout::Select::Tenants(_))) {
                    rollout::check_named_tenants(&steps, &self.tenants().await?).map_err(AppError::Wave)?;
                }
                Rollout::new(version_name, steps, failure_budget, now(), by)?
            }
        }
        .with_files(self.files_now().await?);
        let id = self.insert_alone(&rollout).await?;
        tracing::info!(rollout = id, version = %version_name, "rollout started");
        Ok((id, rollout))
    }

    /// Stores a new rollout while no other is active. Two starts at the
    /// same instant (on this replica or another) each read the rollouts
    /// before the other wrote; each then asks for the id after the newest
    /// it read, so both ask for the same id and the database gives it to
    /// one. The other reads again, finds the winner active and is refused
    /// with it named. (A serial id would not do: its order is the order
    /// the ids were drawn, not the order the rows were committed.)
    async fn insert_alone(&self, rollout: &Rollout) -> Result<i64, AppError> {
        let doc = rollout.to_json();
        for _ in 0..ATTEMPTS {
            let rollouts = self.rollouts().await?;
            rollout::check_none_active(&rollout::active(rollouts.iter().map(|(id, r)| (*id, r))))?;
            let id = rollouts.last().map_or(1, |(newest, _)| newest + 1);
            if self.database.insert_rollout(id, &doc, &super::rfc3339(Utc::now())).await? {
                return Ok(id);
            }
        }
        Err(AppError::Internal(format!("rollouts kept being started under {ATTEMPTS} attempts")))
    }

    /// Every rollout, oldest first.
    pub(crate) async fn rollouts(&self) -> Result<Vec<(i64, Rollout)>, AppError> {
        self.database.rollouts().await?.iter().map(|row| Ok((row.id, read(row)?))).collect()
    }

    /// Applies `change` to rollout `id` by compare-and-set, reading it
    /// again when another replica changed it meanwhile. `Ok(None)`: the
    /// change declined (returned `Ok(false)`) on the latest state.
    async fn change<F>(&self, id: i64, mut change: F) -> Result<Option<Rollout>, AppError>
    where
        F: FnMut(&mut Rollout) -> Result<bool, AppError>,
    {
        for _ in 0..ATTEMPTS {
            let rows = self.database.rollouts().await?;
            let row =
                rows.iter().find(|row| row.id == id).ok_or_else(|| AppError::NotFound(format!("rollout {id}")))?;
            let mut rollout = read(row)?;
            if !change(&mut rollout)? {
                return Ok(None);
            }
            if self.database.update_rollout(row, &rollout.to_json(), &super::rfc3339(Utc::now())).await? {
                return Ok(Some(rollout));
            }
        }
        Err(AppError::Internal(format!("rollout {id} kept changing under {ATTEMPTS} attempts")))
    }

    /// The rollouts in progress (not completed, not cancelled).
    pub(crate) async fn active_rollouts(&self) -> Result<Vec<ActiveRollout>, AppError> {
        let all = self.rollouts().await?;
        Ok(rollout::active(all.iter().map(|(id, r)| (*id, r))))
    }

    /// The rollout gate of a version over the fleet (core's `rollout::FleetGate`):
    /// a plain one (not a dry run, not a retry, not a rollout's own wave) is
    /// refused while a rollout is in progress; an override runs and is
    /// recorded in each active rollout's events.
    pub(crate) async fn hold_for_rollouts(&self, request: &CreateRequest) -> Result<(), AppError> {
        if let Operation::Retry { tenants } = &request.operation {
            return self.hold_retry_for_rollouts(request, tenants).await;
        }
        let gate = request.rollout_gate;
        if !gate.applies(request.operation.held_by_rollouts(), request.dry_run, self.database.keeps().rollouts) {
            return Ok(());
        }
        let active = match gate.judge(self.active_rollouts().await?) {
            AtFleetGate::Runs => return Ok(()),
            AtFleetGate::Refused(in_progress) => return Err(AppError::RolloutInProgress(in_progress)),
            AtFleetGate::Overrides(active) => active,
        };
        let ids: Vec<i64> = active.iter().map(|a| a.id).collect();
        self.record_override(request, &ids).await?;
        tracing::warn!(request_id = %request.caller.request_id, version = %request.version_name, rollouts = ?ids,
            "a version over the fleet overrides rollouts in progress");
        Ok(())
    }

    /// Records in each of rollouts `ids` that `request` ran past it (an
    /// `overridden` event with who asked).
    async fn record_override(&self, request: &CreateRequest, ids: &[i64]) -> Result<(), AppError> {
        for id in ids {
            self.change(*id, |rollout| {
                rollout.overridden(now(), request.caller.by(), &request.version_name);
                Ok(true)
            })
            .await?;
        }
        Ok(())
    }

    /// The rollout gate of a retry (core's `rollout::reach`): it runs every
    /// file pending in its tenants, so it is refused in a tenant no wave of
    /// a rollout in progress has reached, and while the source files are
    /// not those a rollout started with; an override runs and is recorded
    /// in those rollouts' events. `tenants`: those named (none: every
    /// quarantined tenant); a name that is not quarantined is left to the
    /// retry's own refusal.
    async fn hold_retry_for_rollouts(&self, request: &CreateRequest, tenants: &[String]) -> Result<(), AppError> {
        if request.dry_run || request.rollout_gate == FleetGate::Wave || !self.database.keeps().rollouts {
            return Ok(());
        }
        let rollouts = self.rollouts().await?;
        let active: Vec<(i64, &Rollout)> =
            rollouts.iter().filter(|(_, rollout)| rollout.is_active()).map(|(id, rollout)| (*id, rollout)).collect();
        if active.is_empty() {
            return Ok(());
        }
        let quarantined: Vec<String> = self.quarantined().await?.into_iter().map(|row| row.tenant).collect();
        let retried: Vec<String> = match tenants {
            [] => quarantined,
            named => {
                let aside: HashSet<&str> = quarantined.iter().map(String::as_str).collect();
                let mut seen = HashSet::new();
                named
                    .iter()
                    .filter(|name| aside.contains(name.as_str()) && seen.insert(name.as_str()))
                    .cloned()
                    .collect()
            }
        };
        let by_attribute = active.iter().any(|(_, rollout)| {
            rollout.waves.iter().any(|wave| matches!(wave.select, rollout::Select::Attribute { .. }))
        });
        let attributes = match by_attribute {
            true => self.database.tenant_attributes().await?,
            false => Default::default(),
        };
        let files_now = self.files_now().await?;
        let Err(held) = reach::judge_retry(&active, &retried, &attributes, &files_now) else {
            return Ok(());
        };
        if request.rollout_gate != FleetGate::Override {
            return Err(AppError::RetryHeld(held));
        }
        let ids = held.rollouts();
        self.record_override(request, &ids).await?;
        tracing::warn!(request_id = %request.caller.request_id, version = %request.version_name, rollouts = ?ids,
            %held, "a retry overrides rollouts in progress");
        Ok(())
    }

    /// Approves, pauses, resumes or cancels rollout `id`.
    pub(crate) async fn operate_rollout(
        &self,
        id: i64,
        operation: RolloutControl,
        caller: &Caller,
    ) -> Result<Rollout, AppError> {
        let work = self.operate_rollout_unaudited(id, operation, caller);
        self.audited(caller, operation.action(), work, |_| format!("rollout {id}")).await
    }

    async fn operate_rollout_unaudited(
        &self,
        id: i64,
        operation: RolloutControl,
        caller: &Caller,
    ) -> Result<Rollout, AppError> {
        let rules = match operation {
            RolloutControl::Approve => ApprovalRules {
                forbid_self_approval: self.config().auth.forbids_self_approval(),
                files_now: Some(self.files_now().await?),
            },
            _ => ApprovalRules::default(),
        };
        let trace = crate::traces::context::current_traceparent();
        let by = By { trace: &trace, ..caller.by() };
        let rollout = self
            .change(id, |rollout| {
                let now = now();
                match operation {
                    RolloutControl::Approve => rollout.approve(now, by, &rules)?,
                    RolloutControl::Pause => rollout.pause(now, by)?,
                    RolloutControl::Resume => rollout.resume(now, by)?,
                    RolloutControl::Cancel => rollout.cancel(now, by)?,
                }
                Ok(true)
            })
            .await?
            .ok_or_else(|| AppError::Internal("rollout operation declined".into()))?;
        tracing::info!(rollout = id, ?operation, status = rollout.status.name(), "rollout operated");
        Ok(rollout)
    }

    /// Runs every wave that may run now, one after another, as `runner`;
    /// returns how many ran. A wave claimed by another runner is left to
    /// it until the claim expires (`claim_seconds`).
    pub(crate) async fn drive_rollouts(self: &Arc<Self>, runner: &str, claim_seconds: i64) -> Result<usize, AppError> {
        let mut ran = 0;
        loop {
            let mut progressed = false;
            for (id, rollout) in self.rollouts().await? {
                let Next::Run(wave) = rollout.next(now()) else { continue };
                // Claim it: one runner wins; the others see the claim. The
                // claim has an id of its own — the wave's event, its
                // versions' request and what they quarantine carry it — so
                // that a later run of this wave knows what an earlier one
                // put aside, and no other wave or rollout this process ran
                // passes for it (core's `Rollout::wave_runs_without`).
                let claim = format!("{runner}/{id}.{}.{}", wave + 1, now());
                let claimed = self
                    .change(id, |latest| {
                        if latest.next(now()) != Next::Run(wave) {
                            return Ok(false);
                        }
                        latest.claim(wave, now(), now() + claim_seconds, &claim);
                        Ok(true)
                    })
                    .await?;
                let Some(claimed) = claimed else { continue };
                let result = self.run_wave(id, &claimed, wave, &claim, claim_seconds).await;
                let Some(result) = result else { continue };
                let ended =
                    self.change(id, |latest| Ok(latest.wave_ended(wave, result.clone(), now(), &claim))).await?;
                if let Some(latest) = ended {
                    tracing::info!(rollout = id, wave = wave + 1, status = latest.status.name(), "rollout wave ended");
                }
                ran += 1;
                progressed = true;
            }
            if !progressed {
                return Ok(ran);
            }
        }
    }

    /// Runs wave `wave` of rollout `id` as a version, then the backfills it
    /// started to their end: `Some(Ok(what it did))`, `Some(Err(why it
    /// failed))`, or `None` when the wave is no longer this runner's
    /// (another holds the database's lock, or the rollout moved on while
    /// its backfills ran).
    async fn run_wave(
        self: &Arc<Self>,
        id: i64,
        rollout: &Rollout,
        wave: usize,
        runner: &str,
        claim_seconds: i64,
    ) -> Option<Result<String, String>> {
        let (request, held, failure_budget) = match self.wave_request(rollout, wave, runner).await {
            Ok(request) => request,
            Err(outcome) => return Some(outcome),
        };
        // Round by round (core's `rollout::wave_run`): again once the
        // wave's backfills are done, for the files that waited on them.
        let budget = failure_budget.unwrap_or(self.config().failure_budget);
        let named = match &request.operation {
            Operation::Version { wave: Wave::Named(names), .. } => Some(names.clone()),
            _ => None,
        };
        let mut run = WaveRun::new(rollout, wave, named, held, budget);
        loop {
            let quarantine = match run.reads_quarantine() {
                true => match self.quarantined().await {
                    Ok(rows) => rows,
                    Err(error) => return Some(Err(error.to_string())),
                },
                false => Vec::new(),
            };
            let step = run
                .next(quarantine.iter().map(|row| (row.tenant.as_str(), row.request_id.as_str(), row.cause.as_str())));
            let (name, tenants, left) = match step {
                Step::Version { name, tenants, budget } => (name, tenants, budget),
                Step::Done(detail) => return Some(Ok(detail)),
                Step::Failed(why) => return Some(Err(why)),
                Step::Size => {
                    if let Err(error) = self.size_wave(&mut run, &request.operation).await {
                        return Some(Err(error.to_string()));
                    }
                    continue;
                }
            };
            let mut round = request.clone();
            round.version_name = name;
            if let Operation::Version { wave, failure_budget, .. } = &mut round.operation {
                if let (Wave::Named(names), Some(tenants)) = (wave, tenants) {
                    *names = tenants;
                }
                if left.is_some() {
                    *failure_budget = left;
                }
            }
            let result = match self.renewing((id, wave), runner, claim_seconds, self.create(round)).await {
                Ok(result) => result,
                Err(AppError::Database(DbError::Lock(LockError::Timeout { .. }))) => return None,
                Err(error) => return Some(Err(run.failed(error.to_string()))),
            };
            // What the round absorbed counts against the wave's budget in
            // what follows: its backfills, then the next round.
            run.absorbed(result.quarantined.iter().filter(|row| absorbed_cause(&row.cause)).count());
            let Some(held) = run.made(result.version.is_some(), !result.waiting.is_empty()) else {
                continue;
            };
            if run.needs_size()
                && let Err(error) = self.size_wave(&mut run, &request.operation).await
            {
                return Some(Err(error.to_string()));
            }
            match self.wave_round(id, (wave, run.left()), runner, claim_seconds, &result, &held).await? {
                Ok((detail, waited, failed)) => {
                    run.absorbed(failed);
                    run.reported(detail, waited);
                }
                Err(why) => return Some(Err(why)),
            }
        }
    }

    /// The request that runs wave `wave` of `rollout` as a version, what
    /// of a desired wave's tenants it holds back (said in its outcome),
    /// and the wave's failure budget as given (its own, else the
    /// rollout's). `Err(outcome)`: the wave ends before it runs anything.
    async fn wave_request(
        &self,
        rollout: &Rollout,
        wave: usize,
        runner: &str,
    ) -> Result<(CreateRequest, String, Option<FailureBudget>), Result<String, String>> {
        // The wave's own budget, else the rollout's, else the configuration's.
        let budget = rollout.waves[wave].budget.as_ref().or(rollout.failure_budget.as_ref());
        let failure_budget = budget.and_then(|budget| budget.parse().ok());
        let mut select = rollout.waves[wave].select.wave();
        // A wave to a desired schema: its tenants whose plan still is the
        // approved one run it; the others are named, and run nothing.
        let (mut desired_plan, mut held) = (None, String::new());
        if let (Some(target), rollout::Select::Tenants(tenants)) = (&rollout.desired, &rollout.waves[wave].select) {
            let now_planned = self.desired_wave(target, wave, tenants).await.map_err(|error| Err(error.to_string()))?;
            held = now_planned.detail();
            let Some(group) = now_planned.run else {
                return Err(Ok(format!("nothing to apply; {held}")));
            };
            select = Wave::Named(group.tenants.clone());
            desired_plan = Some(strata_core::migrate::desired::plan_source(&group, None));
        }
        let operation = Operation::Version {
            action: Action::Apply,
            wave: select,
            sync_to: None,
            failure_budget,
            reviewed: Some(rollout.files.clone()),
        };
        let request = CreateRequest {
            rollout_gate: FleetGate::Wave,
            trace_links: rollout.wave_links(wave).into_iter().map(str::to_string).collect(),
            desired_plan,
            ..CreateRequest::new(
                rollout.wave_version_name(wave),
                operation,
                Caller {
                    request_id: runner.to_string(),
                    actor: format!("service:{runner}"),
                    principal: format!("service:{runner}"),
                },
            )
        };
        Ok((request, held, failure_budget))
    }

    /// Tells `run` how many tenants the wave of `operation` selects now,
    /// quarantined ones included: what its failure budget is of.
    async fn size_wave(&self, run: &mut WaveRun<'_>, operation: &Operation) -> Result<(), AppError> {
        let wave = operation.wave();
        let tenants = self.tenants().await?;
        let attributes = match *wave {
            Wave::Attribute { .. } => self.database.tenant_attributes().await?,
            _ => Default::default(),
        };
        let selected = strata_core::migrate::wave::select(&tenants, &wave, &attributes)
            .map_err(|error| AppError::InvalidInput(error.to_string()))?;
        run.sized(selected.len());
        Ok(())
    }

    /// Runs `work` (a version of wave `wave` of rollout `id`) while
    /// renewing the wave's claim every third of `claim_seconds`: a version
    /// over thousands of tenants outlasts a claim, and another replica
    /// would take the wave meanwhile (its `wave-started` event, its own
    /// version waiting on the lock). Once the claim is lost (the rollout
    /// paused or cancelled) the version still runs to its end; what
    /// follows finds the wave no longer this runner's.
    async fn renewing<T>(
        &self,
        (id, wave): (i64, usize),
        runner: &str,
        claim_seconds: i64,
        work: impl Future<Output = T>,
    ) -> T {
        let period = std::time::Duration::from_secs(u64::try_from(claim_seconds / 3).unwrap_or(0).max(1));
        let mut renewing = true;
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return done,
                () = tokio::time::sleep(period), if renewing => {
                    match self.change(id, |latest| Ok(latest.renew(wave, now() + claim_seconds, runner))).await {
                        Ok(Some(_)) => {}
                        // Paused, cancelled, or taken: no longer renewed.
                        Ok(None) => renewing = false,
                        Err(error) => tracing::warn!(rollout = id, wave = wave + 1, %error,
                            "the wave's claim could not be renewed while its version runs; trying again"),
                    }
                }
            }
        }
    }

    /// What one version of wave `wave` did (`result`), and its backfills
    /// run to their end under `budget` ([`Service::wave_backfills`]): the
    /// event's detail, and whether it waited on backfills (another version
    /// of the wave is then due); `None` when the wave is no longer this
    /// runner's.
    async fn wave_round(
        &self,
        id: i64,
        (wave, budget): (usize, FailureBudget),
        runner: &str,
        claim_seconds: i64,
        result: &crate::service::CreateResult,
        held: &str,
    ) -> Option<Result<(String, bool, usize), String>> {
        let mut detail = match &result.version {
            Some(version) => format!(
                "version {}: {} migration(s), {} script(s) in {} tenant(s)",
                version.id,
                result.summary.counts.migrations_grand_total(),
                result.summary.counts.scripts_grand_total(),
                result.summary.counts.tenants
            ),
            None => "nothing to apply".to_string(),
        };
        if !held.is_empty() {
            detail.push_str(&format!("; {held}"));
        }
        if !result.quarantined.is_empty() {
            let names: Vec<String> = result.quarantined.iter().map(|q| q.tenant.clone()).collect();
            detail.push_str(&format!("; quarantined: {}", summary::some_of(&names, 20)));
        }
        let waiting = &result.waiting;
        if waiting.is_empty() {
            return Some(Ok((detail, false, 0)));
        }
        let failed = match self.wave_backfills(id, (wave, budget), runner, claim_seconds, waiting).await? {
            Ok(failed) => failed,
            Err(why) => return Some(Err(why)),
        };
        match failed.len() {
            0 => detail.push_str(&format!("; backfills done in {} tenant(s)", waiting.len())),
            n => detail.push_str(&format!(
                "; backfills done in {} tenant(s), {n} failed within the failure budget {budget} (quarantined: {})",
                waiting.len() - n,
                summary::some_of(&failed, 5)
            )),
        }
        Some(Ok((detail, true, failed.len())))
    }

    /// Runs the backfills `waiting` (those wave `wave` of rollout `id`
    /// started under `budget`) until they end — the ones another process
    /// holds, or an operator paused, are waited for — renewing the wave's
    /// claim meanwhile: `Some(Ok(failed))` once all are done but the
    /// failed or cancelled ones the budget absorbs (named), `Some(Err(…))`
    /// naming them once they are more, `None` when the wave is no longer
    /// this runner's (the rollout was paused or cancelled).
    async fn wave_backfills(
        &self,
        id: i64,
        (wave, budget): (usize, FailureBudget),
        runner: &str,
        claim_seconds: i64,
        waiting: &[BackfillWait],
    ) -> Option<Result<Vec<String>, String>> {
        loop {
            if let Err(error) = self.renewing((id, wave), runner, claim_seconds, self.run_backfills(runner)).await {
                tracing::warn!(rollout = id, wave = wave + 1, %error, "the wave's backfills could not run; trying again");
            }
            match self.database.backfills().await {
                Ok(rows) => {
                    // A set: a wave of 10,000 tenants waits on 10,000 backfills.
                    let waited: HashSet<(&str, &str)> =
                        waiting.iter().map(|w| (w.tenant.as_str(), w.file.as_str())).collect();
                    let ours: Vec<_> =
                        rows.iter().filter(|row| waited.contains(&(row.schema.as_str(), row.file.as_str()))).collect();
                    let failed: Vec<String> = ours
                        .iter()
                        .filter(|row| matches!(row.state, BackfillState::Failed | BackfillState::Cancelled))
                        .map(|row| match &row.last_error {
                            Some(error) => format!("{} ({}): {error}", row.schema, row.file),
                            None => format!("{} ({}): {}", row.schema, row.file, row.state.as_str()),
                        })
                        .collect();
                    if !absorbs(failed.len(), budget, waiting.len()) {
                        let paused = ours.iter().filter(|row| row.state == BackfillState::Paused).count();
                        let way_on = match paused {
                            0 => "fix them, retryQuarantined, then resumeRollout".to_string(),
                            n => format!(
                                "{n} other(s) paused; fix them, retryQuarantined, resumeBackfills, then resumeRollout"
                            ),
                        };
                        return Some(Err(format!(
                            "{} backfill(s) of the wave did not finish, more than its failure budget {budget} \
                             absorbs, their tenants quarantined: {}; {way_on}",
                            failed.len(),
                            summary::some_of(&failed, 5)
                        )));
                    }
                    let ended =
                        |state| matches!(state, BackfillState::Done | BackfillState::Failed | BackfillState::Cancelled);
                    if ours.len() == waiting.len() && ours.iter().all(|row| ended(row.state)) {
                        return Some(Ok(failed));
                    }
                }
                Err(error) => {
                    tracing::warn!(rollout = id, %error, "the wave's backfills could not be read; trying again")
                }
            }
            tokio::time::sleep(WAVE_BACKFILL_POLL).await;
            let renewed = self.change(id, |latest| Ok(latest.renew(wave, now() + claim_seconds, runner))).await;
            if !matches!(renewed, Ok(Some(_))) {
                return None;
            }
        }
    }
}
