//! The one-shot commands: each loads the configuration, connects, runs
//! one operation of the service and prints it, then waits for the webhook.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use strata_core::migrate::config::Config;
use strata_core::migrate::config::Telemetry;
use strata_core::migrate::lint::{self, Severity};
use strata_core::migrate::operation::Operation;
use strata_core::migrate::plan::{Action, PlanError, Target};
use strata_core::migrate::report;
use strata_core::migrate::revert::Extent;
use strata_core::migrate::wave::Wave;

use crate::cli::answers::{PlanAnswer, print_status, refused_by_drift, render_active_rollouts};
use crate::cli::desired::read_desired;
use crate::cli::output::{cli_caller, failure, print_json, print_json_with_migrations, print_released};
use crate::cli::progress::Progress;
use crate::cli::{
    ApplyArgs, DiffArgs, DriftArgs, Exit, LintArgs, OnDatabase, PlanArgs, QuarantineAction, QuarantineArgs, RepairArgs,
    RevertArgs, RolloutAction, StatusArgs, TokenAction,
};
use crate::db::QuarantineRow;
use crate::db::{self, Access, Observer};
use crate::error::AppError;
use crate::graphql::preview::{self, DriftedFileDto, PlanPreviewDto};
use crate::graphql::types::CreateResultsDto;
use crate::service::{CreateRequest, CreateResult, Service, lint_history, read_sources};
use crate::{loader, settings};
use strata_core::migrate::rollout::FleetGate;

/// Runs a command that needs the configuration only: loaded, then `run`.
pub(super) fn local(config_path: Option<&Path>, offline: bool, run: impl FnOnce(&str, &Config) -> Exit) -> Exit {
    match settings::load(config_path, offline) {
        Ok((shown, config)) => run(&shown, &config),
        Err(message) => {
            eprintln!("strata: {message}");
            Exit::BadConfig
        }
    }
}

/// `strata config check`: the configuration as served (secrets hidden);
/// `--offline`, the variables left unset that a connection would need.
pub(super) fn config_check(shown: &str, config: &Config) -> Exit {
    out!("{}", config.render_redacted());
    if config.unresolved.is_empty() {
        eprintln!("strata: {shown}: the configuration is valid");
    } else {
        let names: Vec<&str> = config.unresolved.iter().map(String::as_str).collect();
        eprintln!("strata: {shown}: the configuration is valid offline; to connect it needs {} set", names.join(", "));
    }
    Exit::Success
}

/// Runs a one-shot command over the database.
pub(super) fn run(
    config_path: Option<&Path>,
    command: OnDatabase,
    verbosity: crate::startup::Verbosity,
    wait: Option<std::time::Duration>,
) -> Exit {
    let offline = matches!(&command, OnDatabase::Lint(args) if args.all);
    let (shown, config) = match settings::load(config_path, offline) {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("strata: {message}");
            return Exit::BadConfig;
        }
    };
    let telemetry = config.telemetry.clone();
    let runtime = match crate::startup::start(
        config.log_level,
        crate::startup::Process::OneShot,
        verbosity,
        telemetry.as_ref(),
    ) {
        Ok(runtime) => runtime,
        Err(message) => {
            eprintln!("strata: {message}");
            return Exit::Failed;
        }
    };
    if let OnDatabase::Lint(args) = &command
        && args.all
    {
        return runtime.block_on(lint_all(&shown, &config, args));
    }
    let list = match tenants_to_add(&command, &config) {
        Ok(list) => list,
        Err(exit) => return exit,
    };
    // Metrics over OTLP when the configuration exports them, as `serve`
    // does: the command's counts (versions, migrations, quarantines,
    // backfill batches…) exported every interval and once more at its end.
    if let Some(telemetry) = telemetry.as_ref().filter(|telemetry| telemetry.metrics.is_some())
        && let Err(message) = crate::telemetry::Metrics::install(Some(telemetry))
    {
        eprintln!("strata: cannot export metrics: {message}");
        return Exit::Failed;
    }
    let access = access_of(&command);
    // The command's span: the root of its trace, or the child of the
    // pipeline's (TRACEPARENT).
    let span = tracing::info_span!(target: crate::traces::TARGET, "command",
        otel.name = %format!("strata {}", command_name(&command)), strata.exit = tracing::field::Empty);
    crate::traces::context::continue_from_environment(&span);
    let exit = runtime.block_on(crate::traces::in_span(&span, async move {
        let service = match open(&shown, config, access, wait).await {
            Ok(service) => service,
            Err(exit) => return exit,
        };
        let exit = dispatch(&service, command, list).await;
        service.settle().await;
        service.close().await;
        exit
    }));
    span.record("strata.exit", exit as i32);
    if exit != Exit::Success {
        crate::traces::failed(&span, &format!("exit {}", exit as i32));
    }
    drop(span);
    shut_down(runtime, telemetry.as_ref());
    exit
}

/// `tenants add --from FILE`: the file read (and its names checked for
/// what needs no database) before anything connects; `None` for every
/// other command.
fn tenants_to_add(command: &OnDatabase, config: &Config) -> Result<Option<Vec<String>>, Exit> {
    match command {
        OnDatabase::Tenants(super::TenantsArgs { action: Some(super::TenantsAction::Add(args)), .. }) => {
            super::tenants::read_list(args, config).map(Some)
        }
        _ => Ok(None),
    }
}

/// Ends a one-shot command's runtime, then exports what telemetry holds.
fn shut_down(runtime: tokio::runtime::Runtime, telemetry: Option<&Telemetry>) {
    // The tasks the command spawned (a pool's, a lease's) end before the
    // flush: a span one of them still holds would close after it, and its
    // children would reach the collector without it.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    if let Some(telemetry) = telemetry {
        // Never longer than one export may take (`timeoutMillis`), each.
        crate::traces::flush(std::time::Duration::from_millis(telemetry.timeout_millis));
        crate::telemetry::flush(std::time::Duration::from_millis(telemetry.timeout_millis));
    }
}

/// Runs `command` over the opened service (`list`: the names `tenants add
/// --from` read before anything connected).
async fn dispatch(service: &Arc<Service>, command: OnDatabase, list: Option<Vec<String>>) -> Exit {
    match command {
        OnDatabase::Plan(args) => plan(service, args).await,
        OnDatabase::Apply(args) => apply(service, *args).await,
        OnDatabase::Status(args) => status(service, args).await,
        OnDatabase::Tenants(args) => match (&args.action, list) {
            (Some(super::TenantsAction::Add(add)), Some(list)) => {
                match super::tenants::add(service, add, list, args.json).await {
                    Ok(result) => created(service, &result, args.json, add.sync, false).await,
                    Err(error) => failed_apply(&error, args.json),
                }
            }
            // Listing, or Citus's `tenants move` (decided in tenants).
            _ => super::tenants::tenants(service, args).await,
        },
        OnDatabase::Drift(args) => drift(service, args).await,
        OnDatabase::Diff(args) => diff(service, args).await,
        OnDatabase::Repair(args) => repair(service, args).await,
        OnDatabase::Revert(args) => revert(service, args).await,
        OnDatabase::Lint(args) => lint_pending(service, args).await,
        OnDatabase::Quarantine(args) => quarantine(service, args).await,
        OnDatabase::Backfill(args) => super::backfill::backfill(service, args).await,
        OnDatabase::Rollout(args) => super::rollout::rollout(service, args).await,
        OnDatabase::Token(args) => super::access::token(service, args).await,
        OnDatabase::Audit(args) => super::access::audit(service, args).await,
    }
}

/// The command's name, as typed.
fn command_name(command: &OnDatabase) -> &'static str {
    match command {
        OnDatabase::Plan(_) => "plan",
        OnDatabase::Apply(_) => "apply",
        OnDatabase::Status(_) => "status",
        OnDatabase::Tenants(_) => "tenants",
        OnDatabase::Drift(_) => "drift",
        OnDatabase::Diff(args) if args.write.is_some() => "new",
        OnDatabase::Diff(_) => "diff",
        OnDatabase::Repair(_) => "repair",
        OnDatabase::Revert(_) => "revert",
        OnDatabase::Lint(_) => "lint",
        OnDatabase::Quarantine(_) => "quarantine",
        OnDatabase::Backfill(_) => "backfill",
        OnDatabase::Rollout(_) => "rollout",
        OnDatabase::Token(_) => "token",
        OnDatabase::Audit(_) => "audit",
    }
}

/// How a command opens the database: read-write for those that change
/// it, read-only (creating nothing) for those that only read.
fn access_of(command: &OnDatabase) -> Access {
    match command {
        OnDatabase::Apply(_) => Access::ReadWrite,
        OnDatabase::Repair(args) if !args.dry_run => Access::ReadWrite,
        OnDatabase::Revert(_) => Access::ReadWrite,
        OnDatabase::Quarantine(args) if !matches!(args.action, None | Some(QuarantineAction::List)) => {
            Access::ReadWrite
        }
        OnDatabase::Rollout(args) if !matches!(args.action, None | Some(RolloutAction::List)) => Access::ReadWrite,
        OnDatabase::Token(args) if !matches!(args.action, TokenAction::List) => Access::ReadWrite,
        OnDatabase::Tenants(args) if args.action.is_some() => Access::ReadWrite,
        OnDatabase::Backfill(args) if !matches!(args.action, None | Some(super::BackfillAction::List { .. })) => {
            Access::ReadWrite
        }
        _ => Access::ReadOnly,
    }
}

/// Connects the database and the loader as the server does (read-only
/// for the commands that only read: they create nothing).
async fn open(
    shown: &str,
    config: Config,
    access: Access,
    wait: Option<std::time::Duration>,
) -> Result<Arc<Service>, Exit> {
    let config = Arc::new(config);
    let database = db::connect_waiting(&config, access, wait).await.map_err(|e| {
        eprintln!("strata: {shown}: dataSource: {e}");
        Exit::from(&AppError::from(e))
    })?;
    let loader = loader::for_location(&config.base_location).map_err(|e| {
        eprintln!("strata: {shown}: baseLocation: {e}");
        Exit::BadConfig
    })?;
    Ok(Arc::new(Service::new(config, database, loader)))
}

async fn drift(service: &Service, args: DriftArgs) -> Exit {
    match service.drift().await {
        Ok(report) => {
            if args.json {
                print_json(&report);
            } else {
                out!("{}", strata_core::migrate::fingerprint::render_text(&report));
            }
            if report.has_drift() { Exit::SchemaDrift } else { Exit::Success }
        }
        Err(error) => failure(&error),
    }
}

/// `diff [--desired [FILE]] [--dir DIR]`: every tenant's plan to the
/// desired schema, or — `--dir` naming a single-schema migration directory
/// (`new --dir DIR --desired` too) — that schema's.
async fn diff(service: &Service, args: DiffArgs) -> Exit {
    let dir = args.dir.clone().or_else(|| args.write.as_ref().and_then(|(_, dir)| dir.clone()));
    let single = match dir.as_deref().map(|dir| service.config().desired_schema_of(dir)) {
        Some(Ok(single)) => single,
        Some(Err(message)) => {
            eprintln!("strata: --dir {message}");
            return Exit::Usage;
        }
        None => None,
    };
    let (shown, text) = match read_desired(service, args.desired.flatten().as_deref(), single).await {
        Ok(desired) => desired,
        Err(exit) => return exit,
    };
    if args.write.is_some()
        && let Err(error) = service.refuse_pending_before_writing(single).await
    {
        return failure(&error);
    }
    let report = service.desired_diff_in(&shown, &text, single).await;
    let noun = if single.is_some() { "schema" } else { "tenant" };
    match report {
        Ok(report) if args.write.is_some() => {
            let (description, dir) = args.write.unwrap_or_default();
            super::new::new_from_desired(service.config(), &description, dir.as_deref(), &report, noun)
        }
        Ok(report) => {
            if args.json {
                print_json(&report);
            } else {
                out!("{}", strata_core::migrate::desired::render_text_of(&report, noun));
            }
            if args.check && report.has_differences() { Exit::SchemaDrift } else { Exit::Success }
        }
        Err(error) => failure(&error),
    }
}

/// A version the command line asks for, its progress shown as it runs:
/// committed or a dry run, held by an active rollout or overriding it.
fn shown_request(
    version_name: String,
    operation: Operation,
    dry_run: bool,
    override_rollout: bool,
    json: bool,
) -> (Arc<Progress>, CreateRequest) {
    let progress = Arc::new(Progress::new(json));
    let observer: Arc<dyn Observer> = progress.clone();
    let request = CreateRequest {
        dry_run,
        observer: Some(observer),
        rollout_gate: if override_rollout { FleetGate::Override } else { FleetGate::Hold },
        ..CreateRequest::new(version_name, operation, cli_caller())
    };
    (progress, request)
}

/// `apply --desired [FILE]`: each group of tenants sharing a plan to the
/// desired schema, as a version of its own over those tenants, its plan
/// recorded (the service's `desired_run` decides which groups run).
async fn apply_desired(service: &Arc<Service>, args: ApplyArgs, file: Option<&Path>) -> Exit {
    // `--dir`: a single schema's directory, or a tenants' one (the tenants).
    let single = match args.dir.as_deref().map(|dir| service.config().desired_schema_of(dir)) {
        Some(Ok(single)) => single,
        Some(Err(message)) => {
            eprintln!("strata: --dir {message}");
            return Exit::Usage;
        }
        None => None,
    };
    let (shown, text) = match read_desired(service, file, single).await {
        Ok(desired) => desired,
        Err(exit) => return exit,
    };
    let run = service.desired_run(&shown, &text, args.destructive(), args.group.as_deref(), args.dir.as_deref());
    let run = match run.await {
        Ok(run) => run,
        Err(error) => return failed_apply(&error, args.json),
    };
    for (tenants, why) in &run.left {
        eprintln!("strata: left as they are: {why}: {}", tenants.join(", "));
    }
    let noun = if run.single.is_some() { "schema" } else { "tenant" };
    if run.groups.is_empty() {
        let what = if run.single.is_some() { "schema" } else { "group of tenants" };
        eprintln!("strata: no {what} to bring to the desired schema");
        return Exit::Success;
    }
    let mut exit = Exit::Success;
    for (at, group) in run.groups.iter().enumerate() {
        eprintln!(
            "strata: plan {} ({} of {}): {} step(s) over {} {noun}(s)",
            &group.plan[..12],
            at + 1,
            run.groups.len(),
            group.steps.len(),
            group.tenants.len()
        );
        let operation = Operation::version(Action::Apply);
        let (progress, template) =
            shown_request(args.version_name.clone(), operation, args.dry_run, args.override_rollout, args.json);
        let request = run.request(group, &template, args.failure_budget);
        let result = service.create(request).await;
        progress.finish();
        match result {
            Ok(result) => {
                let done = created(service, &result, args.json, false, args.dry_run).await;
                if done != Exit::Success {
                    exit = done;
                }
            }
            // A group that failed stops the groups after it.
            Err(error) => return failed_apply(&error, args.json),
        }
    }
    exit
}

/// `lint --all`: every source file, read without a database.
async fn lint_all(shown: &str, config: &Config, args: &LintArgs) -> Exit {
    let loader = match loader::for_location(&config.base_location) {
        Ok(loader) => loader,
        Err(e) => {
            eprintln!("strata: {shown}: baseLocation: {e}");
            return Exit::BadConfig;
        }
    };
    match read_sources(config, loader.as_ref()).await {
        Ok(sources) => print_lint(&lint_history(config, &lint::all_files(&sources)), args),
        Err(error) => failure(&error),
    }
}

/// `lint`: the files `apply` would run now.
async fn lint_pending(service: &Service, args: LintArgs) -> Exit {
    match service.preview(Target::AllSchemas, Action::Apply).await {
        Ok((preview, sources)) => print_lint(&service.lint(&preview.plan, &sources), &args),
        Err(error) => failure(&error),
    }
}

/// Prints a lint report (JSON or text) and exits by `--fail-on`; the same
/// in-process and through `--server`.
pub(super) fn print_lint(report: &lint::Report, args: &LintArgs) -> Exit {
    if args.json {
        print_json(report);
    } else {
        out!("{}", lint::render_text(report, args.fail_on));
    }
    lint_exit(report, args.fail_on)
}

fn lint_exit(report: &lint::Report, fail_on: Severity) -> Exit {
    if report.at_or_above(fail_on).next().is_some() { Exit::LintFindings } else { Exit::Success }
}

async fn plan(service: &Service, args: PlanArgs) -> Exit {
    let target = match service.target(args.tenant) {
        Ok(target) => target,
        Err(error) => return failure(&error),
    };
    let action = if args.sync { Action::Sync } else { Action::Apply };
    let previewed = match (args.extent.extent(), args.revert) {
        (Some(extent), true) => service.preview_revert(extent).await,
        (Some(Extent::To(to)), false) if args.sync => service.preview_sync_to(&to).await,
        (Some(_), false) => {
            let message =
                "--steps and --to preview a revert (with --revert), or --to a Sync through FILE (with --sync)";
            return failure(&AppError::InvalidInput(message.into()));
        }
        (None, _) => service.preview(target, action).await,
    };
    match previewed {
        Ok((preview, sources)) => {
            let plan = preview.plan;
            let findings = service.lint(&plan, &sources);
            if args.json {
                let active = preview::active_rollouts(service).await;
                let skipped = preview.skipped.clone();
                let answer = PlanPreviewDto::from_plan(&plan, &sources, findings.clone(), skipped, active);
                print_json(&PlanAnswer::from(answer));
            } else {
                out!("{}", report::render_text(&plan, &sources));
                out!("{}", render_active_rollouts(&preview::active_rollouts(service).await));
                if !preview.skipped.is_empty() {
                    outln!(
                        "\nSkipped: {} quarantined tenant(s) ({}); strata quarantine lists them.",
                        preview.skipped.len(),
                        preview.skipped.join(", ")
                    );
                }
                if !findings.findings.is_empty() || !findings.unchecked.is_empty() {
                    out!("\nLint:\n{}", lint::render_text(&findings, args.fail_on));
                }
            }
            match () {
                () if args.check && !plan.diagnostics.drift.is_empty() => Exit::Drift,
                () if args.check && lint_exit(&findings, args.fail_on) == Exit::LintFindings => Exit::LintFindings,
                () if args.check && report::has_pending_migrations(&plan, &sources) => Exit::Pending,
                () => Exit::Success,
            }
        }
        Err(AppError::Plan(PlanError::Drift(drift))) => {
            if args.json {
                let drift: Vec<DriftedFileDto> = drift.iter().map(DriftedFileDto::from).collect();
                print_json(&refused_by_drift(&drift));
            } else {
                out!("{}", report::render_drift(&drift));
            }
            Exit::Drift
        }
        Err(error) => failure(&error),
    }
}

async fn apply(service: &Arc<Service>, mut args: ApplyArgs) -> Exit {
    if let Some(file) = args.desired.take() {
        return apply_desired(service, args, file.as_deref()).await;
    }
    let action = if args.sync { Action::Sync } else { Action::Apply };
    // clap keeps --shard and --colocate-with to --tenant, --to from it.
    let operation = match args.tenant.map(|tenant| service.new_tenant_name(tenant)) {
        Some(Err(error)) => return failed_apply(&error, args.json),
        Some(Ok(tenant)) => {
            Operation::NewTenant { tenant, action, shard: args.shard, colocate_with: args.colocate_with }
        }
        None => Operation::Version {
            action,
            wave: wave_of(args.tenants, args.share, args.attribute),
            sync_to: args.sync_to,
            failure_budget: args.failure_budget,
            reviewed: None,
        },
    };
    let (progress, request) =
        shown_request(args.version_name, operation, args.dry_run, args.override_rollout, args.json);
    let result = service.create(request).await;
    progress.finish();
    let result = match result {
        Ok(result) => result,
        Err(error) => return failed_apply(&error, args.json),
    };
    let exit = created(service, &result, args.json, args.sync, args.dry_run).await;
    if result.waiting.is_empty() || args.no_wait {
        return exit;
    }
    match super::backfill::wait(service, &result.waiting, args.json).await {
        Exit::Success => exit,
        failed => failed,
    }
}

/// The wave `--tenants`, `--share` or `--where` names (clap lets one
/// through), else the whole fleet.
fn wave_of(tenants: Option<Vec<String>>, share: Option<u8>, attribute: Option<Wave>) -> Wave {
    match (tenants, share, attribute) {
        (Some(names), _, _) => Wave::Named(names),
        (None, Some(share), _) => Wave::Share(share),
        (None, None, Some(attribute)) => attribute,
        (None, None, None) => Wave::All,
    }
}

/// `revert --version NAME (--steps N | --to FILE)`: a version that runs
/// down parts, through the API's own code path and lock.
async fn revert(service: &Arc<Service>, args: RevertArgs) -> Exit {
    let Some(extent) = args.extent.extent() else {
        eprintln!("strata: revert needs --steps N or --to FILE");
        return Exit::Usage;
    };
    let operation = Operation::Revert { extent, wave: wave_of(args.tenants, args.share, args.attribute) };
    let (progress, request) =
        shown_request(args.version_name, operation, args.dry_run, args.override_rollout, args.json);
    let result = service.create(request).await;
    progress.finish();
    match result {
        Ok(result) => created_as(service, &result, args.json, "reverted", args.dry_run).await,
        Err(error) => failed_apply(&error, args.json),
    }
}

/// Prints a completed `apply` (or retry): the version, the tenants put in
/// quarantine, skipped or released. Exit 11 when tenants were quarantined.
pub(super) async fn created(service: &Service, result: &CreateResult, json: bool, sync: bool, dry_run: bool) -> Exit {
    created_as(service, result, json, if sync { "recorded" } else { "applied" }, dry_run).await
}

/// [`created`], saying what was done to the files (`applied`, `recorded`,
/// `reverted`).
async fn created_as(service: &Service, result: &CreateResult, json: bool, done: &str, dry_run: bool) -> Exit {
    let exit = if result.quarantined.is_empty() { Exit::Success } else { Exit::Quarantined };
    if json {
        let parts = match &result.version {
            Some(version) if version.parts.is_empty() => vec![version.id],
            Some(version) => version.part_ids(),
            None => Vec::new(),
        };
        if let Err(error) = print_json_with_migrations(service, CreateResultsDto::from(result.clone()), &parts).await {
            return failed_apply(&error, json);
        }
        return exit;
    }
    let counts = &result.summary.counts;
    let counts = format!(
        "{} migration(s) and {} script(s) over {} tenant(s)",
        counts.migrations_grand_total(),
        counts.scripts_grand_total(),
        counts.tenants
    );
    let seconds = result.summary.duration;
    match &result.version {
        None if dry_run => outln!("Dry run: {counts} would be {done} ({seconds:.2} s); rolled back."),
        None => outln!("Nothing to do: no version created."),
        Some(version) => {
            outln!("Version {} \"{}\" created: {counts} {done} in {seconds:.2} s.", version.id, version.name);
            if done == "recorded" {
                outln!("(Sync: they are recorded as applied WITHOUT having run; nothing of them ran.)");
            }
        }
    }
    if !result.quarantined.is_empty() {
        outln!("\n{} tenant(s) failed and are quarantined (later versions skip them):", result.quarantined.len());
        print_quarantine(&result.quarantined);
    }
    if !result.skipped.is_empty() {
        outln!("\nSkipped {} quarantined tenant(s): {}", result.skipped.len(), result.skipped.join(", "));
    }
    if !result.released.is_empty() {
        outln!("\nReleased from quarantine: {}", result.released.join(", "));
    }
    if !result.waiting.is_empty() {
        outln!(
            "\n{} tenant(s) wait on backfills, which run after the version; their later files run with a later one.",
            result.waiting.len()
        );
    }
    exit
}

fn print_quarantine(rows: &[QuarantineRow]) {
    for row in rows {
        let at = match (row.line, row.column) {
            (Some(line), Some(column)) => format!(":{line}:{column}"),
            (Some(line), None) => format!(":{line}"),
            _ => String::new(),
        };
        outln!("  {}  {}{at}  {} ({} failure(s)): {}", row.tenant, row.file, row.cause, row.failures, row.message);
    }
}

/// `quarantine [list|retry|release]`.
async fn quarantine(service: &Arc<Service>, args: QuarantineArgs) -> Exit {
    match args.action.unwrap_or(QuarantineAction::List) {
        QuarantineAction::List => match service.quarantined().await {
            Ok(rows) if args.json => {
                print_json(&rows);
                Exit::Success
            }
            Ok(rows) if rows.is_empty() => {
                outln!("No tenant is quarantined.");
                Exit::Success
            }
            Ok(rows) => {
                outln!("{} tenant(s) quarantined:", rows.len());
                print_quarantine(&rows);
                Exit::Success
            }
            Err(error) => failure(&error),
        },
        QuarantineAction::Release { tenants } => match service.release_quarantined(&tenants, &cli_caller()).await {
            Ok(released) => print_released(&released, args.json),
            Err(error) => failure(&error),
        },
        QuarantineAction::Retry { version_name, tenants, no_wait, override_rollout } => {
            let request = CreateRequest {
                rollout_gate: if override_rollout { FleetGate::Override } else { FleetGate::Hold },
                ..CreateRequest::new(version_name, Operation::Retry { tenants }, cli_caller())
            };
            let result = match service.create(request).await {
                Ok(result) => result,
                Err(error) => return failed_apply(&error, args.json),
            };
            let exit = created(service, &result, args.json, false, false).await;
            if result.waiting.is_empty() || no_wait {
                return exit;
            }
            // As `apply` does: the backfills it restarted, run here.
            match super::backfill::wait(service, &result.waiting, args.json).await {
                Exit::Success => exit,
                failed => failed,
            }
        }
    }
}

/// `repair [FILE...]`: what it changes, listed, then done (or only
/// listed with `--dry-run`).
async fn repair(service: &Service, args: RepairArgs) -> Exit {
    let caller = cli_caller();
    if !args.dry_run {
        // Listed before it runs: the same decision, read first (a refusal
        // is left to the repair itself, which puts it on record).
        if let Ok(planned) = service.repair(&args.files, &args.version_name, &caller, true).await
            && !args.json
            && !planned.is_empty()
        {
            out!("{}", strata_core::migrate::repair::render(&planned, false))
        }
    }
    match service.repair(&args.files, &args.version_name, &caller, args.dry_run).await {
        Ok(done) => {
            print_repair(&done, args.dry_run, args.json);
            Exit::Success
        }
        Err(error) => failed_apply(&error, args.json),
    }
}

/// What a repair changed (or, with `dry_run`, would change): in-process
/// and through `--server` alike.
pub(super) fn print_repair(done: &strata_core::migrate::repair::Repair, dry_run: bool, json: bool) {
    if json {
        print_json(&json!({ "dryRun": dry_run, "repair": done, "records": done.records() }));
    } else {
        out!("{}", strata_core::migrate::repair::render(done, !dry_run));
    }
}

/// A failed `apply`: with `--json`, the API's `errors` (message and
/// extensions) on stdout; the message on stderr either way.
pub(super) fn failed_apply(error: &AppError, json: bool) -> Exit {
    if json {
        let graphql = async_graphql::ErrorExtensions::extend(error).into_server_error(async_graphql::Pos::default());
        let mut answer = json!({ "errors": [graphql] });
        // The command's trace, which holds the failed version's spans.
        if let Some(trace_id) = crate::traces::current_trace_id() {
            answer["traceId"] = trace_id.into();
        }
        print_json(&answer);
    }
    failure(error)
}

async fn status(service: &Service, args: StatusArgs) -> Exit {
    let status = match preview::status(service, args.versions).await {
        Ok(status) => status,
        Err(error) => return failure(&error),
    };
    print_status(&status, args.json)
}
