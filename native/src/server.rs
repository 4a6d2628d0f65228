//! `strata serve`: the HTTP and GraphQL API over one [`Service`], until
//! SIGTERM/SIGINT, after which in-flight requests get a grace period.

use std::sync::Arc;

use strata_core::migrate::config::Config;
use strata_core::migrate::config::auth::{Exposure, bind_address};

use crate::http::AppState;
use crate::service::Service;
use crate::telemetry::Metrics;

/// Why the service did not start, or stopped on an error: the message (one
/// line, printed once by the command line) and what it maps to an exit
/// status from.
#[derive(Debug)]
pub(crate) enum ServeError {
    /// The configuration cannot be read or is invalid (`baseLocation`
    /// included).
    Config(String),
    /// The database could not be opened: the error says why (unreachable,
    /// a `dataSource` of the wrong form, …).
    Database {
        /// The line printed.
        message: String,
        /// The failure, for its exit status.
        error: Box<crate::error::AppError>,
    },
    /// Anything else: the runtime, the metrics, the listening socket.
    Other(String),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Config(message) | ServeError::Database { message, .. } | ServeError::Other(message) => {
                f.write_str(message)
            }
        }
    }
}

/// `strata serve` (and `strata` alone): runs the service until a stop
/// signal; the error is for the command line to print and map to its exit
/// status.
pub(crate) fn serve(
    config_path: Option<&std::path::Path>,
    overrides: Overrides,
    verbosity: crate::startup::Verbosity,
) -> Result<(), ServeError> {
    let (path, mut config) = crate::settings::load(config_path, false).map_err(ServeError::Config)?;
    if overrides.listen.is_some() {
        config.listen = overrides.listen;
    }
    if let Some(port) = overrides.port {
        config.port = port;
        if let Some(listen) = &mut config.listen {
            listen.set_port(port);
        }
    }
    let wait = overrides.wait_for_db;
    let telemetry = config.telemetry.clone();
    let runtime =
        crate::startup::start(config.log_level, crate::startup::Process::Server, verbosity, telemetry.as_ref())
            .map_err(ServeError::Other)?;
    let served = runtime.block_on(run(&path, config, wait));
    crate::traces::flush(std::time::Duration::from_secs(5));
    crate::telemetry::flush(std::time::Duration::from_secs(5));
    // Past the grace, work still running on a thread of its own (SQLite's
    // connection worker in a long statement) does not hold the exit: the
    // process ends, and the database rolls the unfinished version back.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served
}

/// What the command line overrides of `strata serve`'s configuration.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Overrides {
    /// `--listen`: over `listen` and `port`.
    pub listen: Option<std::net::SocketAddr>,
    /// `--port`: over `port`, and the port of `listen`.
    pub port: Option<u16>,
    /// `--wait-for-db`: how long to retry an unreachable database.
    pub wait_for_db: Option<std::time::Duration>,
}

async fn run(config_path: &str, config: Config, wait: Option<std::time::Duration>) -> Result<(), ServeError> {
    let config = Arc::new(config);
    let metrics = Metrics::install(config.telemetry.as_ref())
        .map_err(|e| ServeError::Other(format!("cannot install metrics: {e}")))?;
    let database = crate::db::connect_waiting(&config, crate::db::Access::ReadWrite, wait).await.map_err(|e| {
        ServeError::Database { message: format!("{config_path}: dataSource: {e}"), error: Box::new(e.into()) }
    })?;
    let loader = crate::loader::for_location(&config.base_location)
        .map_err(|e| ServeError::Config(format!("{config_path}: baseLocation: {e}")))?;
    let service = Arc::new(Service::new(Arc::clone(&config), database, loader));
    spawn_rollout_driver(Arc::clone(&service), config.lock_lease_seconds);
    spawn_backfill_runner(Arc::clone(&service));
    let schema = crate::graphql::build_schema(Arc::clone(&service));
    let authenticator = crate::http::auth::Authenticator::new(config.auth.clone());
    let state = Arc::new(AppState {
        service,
        schema,
        metrics,
        answer_slots: crate::graphql::limits::AnswerSlots::new(),
        authenticator,
    });
    let app = crate::http::router(state, &config.path_prefix)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(crate::http::panic_response));

    let (address, exposure) = bind_address(config.listen, config.port, &config.auth);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| ServeError::Other(format!("cannot listen on {address}: {e}")))?;
    tracing::info!(%address, prefix = %config.path_prefix, driver = config.driver.name(),
        auth = if config.auth.configured() { "configured" } else { "none" }, "strata listening");
    match exposure {
        Exposure::OpenWithoutAuth => tracing::warn!(
            %address,
            "listening beyond loopback WITHOUT authentication: anyone who reaches this port can create versions, \
             approve rollouts and read every tenant's schema; configure auth (tokens or an authenticating proxy) \
             — see SECURITY.md"
        ),
        Exposure::LoopbackOnly => tracing::info!(
            "no authentication configured: listening on loopback only (set listen: to serve other hosts, with auth)"
        ),
        Exposure::Authenticated => {}
    }
    let (stopping, stop_requested) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stopping.send(true);
    });
    let limits = crate::http::listen::Limits {
        header_read_timeout: std::time::Duration::from_secs(config.header_read_timeout_seconds),
        max_connections: config.max_connections,
        max_connections_per_client: config.max_connections_per_client,
    };
    let server = crate::http::listen::serve(listener, app, limits, stop_requested.clone());
    // How long in-flight requests (and the versions they run) may take to
    // finish after the stop signal before the process exits anyway.
    let grace = std::time::Duration::from_secs(config.shutdown_grace_seconds);
    let mut deadline = stop_requested;
    tokio::select! {
        () = server => {}
        () = async move {
            let _ = deadline.wait_for(|stop| *stop).await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!(
                "requests still running {} s after the stop signal (shutdownGraceSeconds); exiting (an unfinished \
                 version is rolled back)",
                grace.as_secs()
            );
        }
    }
    tracing::info!("strata stopped");
    Ok(())
}

/// How often the rollout driver looks for a wave to run.
const ROLLOUT_TICK: std::time::Duration = std::time::Duration::from_secs(1);

/// Drives stored rollouts in the background: each tick, every wave that
/// may run now runs (as this replica, `strata-<pid>-<random>`). A wave's
/// claim lasts twice `lockLeaseSeconds`: a replica that dies mid-wave holds
/// it that long at most, then another (or this one, restarted) runs it
/// again — harmless, a version applies only what is pending.
fn spawn_rollout_driver(service: Arc<Service>, lock_lease_seconds: u64) {
    let runner = format!("strata-{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let claim_seconds = i64::try_from(lock_lease_seconds.saturating_mul(2)).unwrap_or(i64::MAX);
    tokio::spawn(async move {
        let mut last_error = String::new();
        loop {
            match service.drive_rollouts(&runner, claim_seconds).await {
                // Said once, not every second while the database is away.
                Err(error) if error.to_string() != last_error => {
                    last_error = error.to_string();
                    tracing::warn!(%error, "rollouts could not be driven; trying again every second");
                }
                Err(_) => {}
                Ok(_) => last_error.clear(),
            }
            tokio::time::sleep(ROLLOUT_TICK).await;
        }
    });
}

/// How often the backfill runner looks for backfills to run (a version
/// that leaves tenants waiting starts it at once).
const BACKFILL_TICK: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs backfills in the background (as `strata-<pid>-<random>`): those a
/// version left its tenants waiting on, those resumed, and — at start and
/// every tick — those whose runner died (its heartbeat went stale).
fn spawn_backfill_runner(service: Arc<Service>) {
    let holder = format!("strata-{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..8]);
    tokio::spawn(async move {
        let mut last_error = String::new();
        loop {
            match service.run_backfills(&holder).await {
                Err(error) if error.to_string() != last_error => {
                    last_error = error.to_string();
                    tracing::warn!(%error, "backfills could not be run; trying again");
                }
                Err(_) => {}
                Ok(ends) => {
                    last_error.clear();
                    for end in ends {
                        tracing::info!(tenant = %end.tenant, file = %end.file, state = end.state,
                            error = end.error.as_deref().unwrap_or(""), "backfill ended");
                    }
                }
            }
            tokio::select! {
                () = service.backfills_due() => {}
                () = tokio::time::sleep(BACKFILL_TICK) => {}
            }
        }
    });
}

/// Resolves on SIGTERM or SIGINT; in-flight requests (and the mutations
/// they run) finish before the process exits.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}
