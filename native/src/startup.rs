//! What every process does first, the server and the one-shot commands
//! alike: the log (its filter from `logLevel` and what the process is) and
//! the runtime.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use strata_core::migrate::config::{LogLevel, Telemetry};
use tracing_subscriber::Layer;

/// What the process is: the log says more for a server than for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Process {
    /// `strata serve`: the log goes to stdout, at `logLevel`.
    Server,
    /// A one-shot command: its results go to stdout, so the log goes to
    /// stderr, and says only what went wrong.
    OneShot,
}

/// How much the command line asked the log to say (`-q`, `-v`), over
/// `logLevel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Verbosity {
    /// `-q`: errors only.
    Quiet,
    /// Neither: `logLevel` and the process decide.
    #[default]
    Configured,
    /// `-v`: the debug log, commands included.
    Verbose,
}

/// The log filter for `level` in `process`, unless `verbosity` overrides
/// it (`RUST_LOG`-style directives are not read from the environment: the
/// configuration and the command line decide). tiberius warns "Trusting
/// the server certificate without validation" on every new connection; the
/// SQL Server driver says it once at start instead, so that warning is
/// filtered out.
pub(crate) fn log_filter(level: LogLevel, process: Process, verbosity: Verbosity) -> &'static str {
    const DEBUG: &str = "debug,hyper=info,h2=info,sqlx=info,tower=info,tiberius::client::tls_stream=error";
    match (verbosity, process, level) {
        (Verbosity::Quiet, _, _) | (Verbosity::Configured, _, LogLevel::Error | LogLevel::Panic) => "error",
        (Verbosity::Verbose, _, _) | (Verbosity::Configured, Process::Server, LogLevel::Debug) => DEBUG,
        (Verbosity::Configured, Process::OneShot, _) => "warn,tiberius::client::tls_stream=error",
        (Verbosity::Configured, Process::Server, LogLevel::Info) => "info,sqlx=warn,tiberius::client::tls_stream=error",
    }
}

/// Starts the log (and, with `telemetry`, the export of traces) and
/// builds the runtime; the error is one line.
pub(crate) fn start(
    level: LogLevel,
    process: Process,
    verbosity: Verbosity,
    telemetry: Option<&Telemetry>,
) -> Result<tokio::runtime::Runtime, String> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    // The exported spans are not the log's: it never shows them.
    let directives = format!("{},{}=off", log_filter(level, process, verbosity), crate::traces::TARGET);
    let filter = tracing_subscriber::EnvFilter::new(directives);
    let log = tracing_subscriber::fmt::layer().with_target(false);
    let log = match process {
        Process::Server => log.with_writer(|| ServerLog).with_ansi(std::io::stdout().is_terminal()).boxed(),
        Process::OneShot => log.with_writer(std::io::stderr).with_ansi(std::io::stderr().is_terminal()).boxed(),
    };
    let traces = crate::traces::layer(telemetry)?;
    tracing_subscriber::registry().with(log.with_filter(filter)).with(traces).init();
    // A command runs one mutation or read at a time: one thread drives it
    // (no wake-ups handed between worker threads); the server serves many.
    let mut builder = match process {
        Process::Server => tokio::runtime::Builder::new_multi_thread(),
        Process::OneShot => tokio::runtime::Builder::new_current_thread(),
    };
    // A worker's stack as large as a main thread's (a command's runtime
    // runs on its main thread, 8 MiB): a version's futures on SQL Server
    // (tiberius' beside the executor's) overflowed tokio's default 2 MiB
    // in a build without optimizations, which lays each state out whole.
    // Only the pages a thread touches are memory.
    builder.thread_stack_size(WORKER_STACK_BYTES);
    builder.enable_all().build().map_err(|e| format!("cannot start the runtime: {e}"))
}

/// The stack of each runtime thread: a Linux main thread's default.
const WORKER_STACK_BYTES: usize = 8 * 1024 * 1024;

/// Set once the server's stdout has no reader any more.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// The server's log writer: stdout, and stderr once stdout's reader has
/// gone away (`strata serve | head -1`), so a closed pipe neither stops
/// the service nor turns every later line into a write error.
struct ServerLog;

impl Write for ServerLog {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        if !STDOUT_GONE.load(Ordering::Relaxed) {
            match std::io::stdout().lock().write_all(line) {
                Ok(()) => return Ok(line.len()),
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => STDOUT_GONE.store(true, Ordering::Relaxed),
                Err(e) => return Err(e),
            }
        }
        // Nowhere left to say it when stderr is closed too.
        let _ = std::io::stderr().lock().write_all(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
