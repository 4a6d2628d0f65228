//! `strata`: the migration service. Reads its configuration from the file
//! named by `--config` or `SVC_YAML` (default `/data/svc.yaml`), opens the
//! database, serves the HTTP and GraphQL API, and stops gracefully on
//! SIGTERM/SIGINT. The one-shot commands of pipelines (`plan`, `apply`,
//! `status`, `config check`) are in [`cli`].

mod cli;
mod db;
mod error;
mod graphql;
mod http;
mod identity;
mod loader;
mod server;
mod service;
mod settings;
mod startup;
mod telemetry;
mod webhook;

use std::process::ExitCode;

/// The allocator: mimalloc. glibc's gives each thread that meets contention
/// an arena of its own and keeps what was freed in each: the service's peak
/// RSS over a 50,000-tenant version was 68 MiB with it, 55 MiB with one
/// arena (see BENCHMARKS.md); musl's (the container's) is slow.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main()
}
