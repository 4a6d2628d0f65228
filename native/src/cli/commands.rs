//! The one-shot commands: each loads the configuration, connects, runs
//! one operation of the service and prints it, then waits for the webhook.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use strata_core::migrate::config::{Config, LogLevel};
use strata_core::migrate::ident::validate_new_tenant_name;
use strata_core::migrate::plan::{Action, PlanError, Target};
use strata_core::migrate::report;

use super::progress::Progress;
use super::{ApplyArgs, Command, ConfigCommand, Exit, PlanArgs, StatusArgs};
use crate::db::executor::Observer;
use crate::db::{self, DbError};
use crate::error::AppError;
use crate::service::{RequestId, Service};
use crate::{graphql, loader, settings};

/// Runs a one-shot command.
pub(super) fn run(config_path: Option<&Path>, command: Command) -> Exit {
    let (shown, config) = match settings::load(config_path) {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("strata: {message}");
            return Exit::BadConfig;
        }
    };
    if let Command::Config(ConfigCommand::Check) = command {
        print!("{}", config.render_redacted());
        eprintln!("strata: {shown}: the configuration is valid");
        return Exit::Success;
    }
    // One-shot commands print their results; the log (stderr) says only
    // what went wrong.
    let filter = match config.log_level {
        LogLevel::Error | LogLevel::Panic => "error",
        _ => "warn,tiberius::client::tls_stream=error",
    };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("strata: cannot start the runtime: {e}");
            return Exit::Failed;
        }
    };
    runtime.block_on(async move {
        let service = match open(&shown, config).await {
            Ok(service) => service,
            Err(exit) => return exit,
        };
        let exit = match command {
            Command::Plan(args) => plan(&service, args).await,
            Command::Apply(args) => apply(&service, args).await,
            Command::Status(args) => status(&service, args).await,
            Command::Serve | Command::Config(_) => unreachable!("handled before"),
        };
        service.settle().await;
        exit
    })
}

/// Connects the database and the loader as the server does.
async fn open(shown: &str, config: Config) -> Result<Arc<Service>, Exit> {
    let config = Arc::new(config);
    let database = db::connect(&config).await.map_err(|e| {
        eprintln!("strata: {shown}: dataSource: {e}");
        match e {
            DbError::Connect(_) | DbError::Query(_) => Exit::Unreachable,
            #[cfg(feature = "sqlserver")]
            DbError::SqlServer(_) => Exit::Unreachable,
            DbError::BadDataSource(_) | DbError::DriverNotBuilt(_) | DbError::Directory { .. } => Exit::BadConfig,
            _ => Exit::Failed,
        }
    })?;
    let loader = loader::for_location(&config.base_location).map_err(|e| {
        eprintln!("strata: {shown}: baseLocation: {e}");
        Exit::BadConfig
    })?;
    Ok(Arc::new(Service::new(config, database, loader)))
}

/// The exit status and a one-line message for a failed operation.
fn failure(error: &AppError) -> Exit {
    eprintln!("strata: {error}");
    match error {
        AppError::Database(DbError::Plan(PlanError::Drift(_))) => Exit::Drift,
        AppError::Database(DbError::Connect(_)) => Exit::Unreachable,
        _ => Exit::Failed,
    }
}

fn print_json(value: &impl serde::Serialize) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
}

fn target(tenant: Option<String>, config: &Config) -> Result<Target, Exit> {
    let Some(tenant) = tenant else { return Ok(Target::AllSchemas) };
    validate_new_tenant_name(&tenant, config.driver, config.single_schemas()).map_err(|e| {
        eprintln!("strata: --tenant: {e}");
        Exit::Usage
    })?;
    Ok(Target::NewTenant(tenant))
}

async fn plan(service: &Service, args: PlanArgs) -> Exit {
    let target = match target(args.tenant, service.config()) {
        Ok(target) => target,
        Err(exit) => return exit,
    };
    let action = if args.sync { Action::Sync } else { Action::Apply };
    match service.preview(target, action).await {
        Ok((preview, sources)) => {
            let plan = preview.plan;
            if args.json {
                print_json(&report::plan_report(&plan, &sources));
            } else {
                print!("{}", report::render_text(&plan, &sources));
            }
            match () {
                () if args.check && !plan.diagnostics.drift.is_empty() => Exit::Drift,
                () if args.check && report::has_pending_migrations(&plan) => Exit::Pending,
                () => Exit::Success,
            }
        }
        Err(AppError::Database(DbError::Plan(PlanError::Drift(drift)))) => {
            if args.json {
                let drift: Vec<Value> = drift.iter().map(report::drift_json).collect();
                print_json(&json!({ "refused": "DRIFT", "drift": drift }));
            } else {
                print!("{}", report::render_drift(&drift));
            }
            Exit::Drift
        }
        Err(error) => failure(&error),
    }
}

/// The selection `apply --json` prints: every field of `CreateResults`
/// except migrations' `contents`.
const CREATE_RESULTS: &str = "summary { startedAt duration tenants singleMigrations tenantMigrations \
     tenantMigrationsTotal migrationsGrandTotal singleScripts tenantScripts tenantScriptsTotal scriptsGrandTotal } \
     version { id name created dbMigrations { id name migrationType sourceDir file checkSum schema created } }";

async fn apply(service: &Arc<Service>, args: ApplyArgs) -> Exit {
    let tenant = match target(args.tenant, service.config()) {
        Ok(Target::NewTenant(tenant)) => Some(tenant),
        Ok(_) => None,
        Err(exit) => return exit,
    };
    let (field, input_type) =
        if tenant.is_some() { ("createTenant", "TenantInput") } else { ("createVersion", "VersionInput") };
    let mut input = json!({
        "versionName": args.version_name,
        "action": if args.sync { "Sync" } else { "Apply" },
        "dryRun": args.dry_run,
    });
    if let Some(tenant) = tenant {
        input["tenantName"] = json!(tenant);
    }
    let query = format!("mutation($input: {input_type}!) {{ {field}(input: $input) {{ {CREATE_RESULTS} }} }}");
    let progress = Arc::new(Progress::new(args.json));
    let observer: Arc<dyn Observer> = progress.clone();
    let schema = graphql::build_schema(Arc::clone(service));
    let limits = service.config().graphql_limits;
    let scope = Arc::new(graphql::limits::RequestScope::new(&limits, graphql::limits::contents_slots()));
    let request = async_graphql::Request::new(query)
        .variables(async_graphql::Variables::from_json(json!({ "input": input })))
        .data(RequestId(format!("strata-cli-{}", uuid::Uuid::new_v4())))
        .data(scope)
        .data(observer);
    let response = schema.execute(request).await;
    progress.finish();
    let answer = serde_json::to_value(&response).unwrap_or(Value::Null);
    if let Some(error) = answer["errors"].as_array().and_then(|errors| errors.first()) {
        if args.json {
            print_json(&json!({ "errors": answer["errors"] }));
        }
        eprintln!("strata: {}", error["message"].as_str().unwrap_or("the operation failed"));
        return match error["extensions"]["code"].as_str() {
            Some("DRIFT") => Exit::Drift,
            Some("INVALID_TENANT_NAME" | "INVALID_INPUT") => Exit::Usage,
            _ => Exit::Failed,
        };
    }
    let results = &answer["data"][field];
    if args.json {
        print_json(results);
        return Exit::Success;
    }
    let summary = &results["summary"];
    let counts = format!(
        "{} migration(s) and {} script(s) over {} tenant(s)",
        summary["migrationsGrandTotal"], summary["scriptsGrandTotal"], summary["tenants"]
    );
    let seconds = summary["duration"].as_f64().unwrap_or_default();
    match &results["version"] {
        Value::Null if args.dry_run => println!("Dry run: {counts} would be applied ({seconds:.2} s); rolled back."),
        Value::Null => println!("Nothing to apply: no version created."),
        version => println!(
            "Version {} {} created: {counts} {} in {seconds:.2} s.",
            version["id"],
            version["name"],
            if args.sync { "recorded" } else { "applied" },
        ),
    }
    Exit::Success
}

async fn status(service: &Service, args: StatusArgs) -> Exit {
    let database = service.database();
    let versions = match database.versions(None).await {
        Ok(versions) => versions,
        Err(error) => return failure(&error.into()),
    };
    let tenants = match database.tenants().await {
        Ok(tenants) => tenants.len(),
        Err(error) => return failure(&error.into()),
    };
    let recent: Vec<_> = versions.iter().rev().take(args.versions).collect();
    let (pending, drift) = match service.preview(Target::AllSchemas, Action::Apply).await {
        Ok((preview, sources)) => (report::pending_counts(&preview.plan, &sources), Vec::new()),
        Err(AppError::Database(DbError::Plan(PlanError::Drift(drift)))) => (Vec::new(), drift),
        Err(error) => return failure(&error),
    };
    if args.json {
        let recent: Vec<Value> =
            recent.iter().map(|v| json!({ "id": v.id, "name": v.name, "created": v.created })).collect();
        let drift: Vec<Value> = drift.iter().map(report::drift_json).collect();
        print_json(&json!({
            "versions": recent,
            "versionCount": versions.len(),
            "tenants": tenants,
            "pending": pending,
            "drift": drift,
        }));
        return Exit::Success;
    }
    println!("{} version(s); {tenants} tenant(s).", versions.len());
    if !recent.is_empty() {
        println!("\nRecent versions:");
        for version in &recent {
            println!("  {:>6}  {}  {}", version.id, version.created, version.name);
        }
    }
    if !drift.is_empty() {
        print!("\n{}", report::render_drift(&drift));
    } else if pending.is_empty() {
        println!("\nNo pending migrations.");
    } else {
        let total: u64 = pending.iter().map(|p| p.migrations).sum();
        println!("\nPending migrations: {total} in {} schema(s):", pending.len());
        for item in pending.iter().take(50) {
            println!("  {:<30} {}", item.schema, item.migrations);
        }
        if pending.len() > 50 {
            println!("  … and {} more schema(s) (--json lists them all)", pending.len() - 50);
        }
    }
    Exit::Success
}
