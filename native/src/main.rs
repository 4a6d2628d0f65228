//! `strata`: the migration service. Reads its configuration from the file
//! named by `--config` or `SVC_YAML` (default `/data/svc.yaml`), opens the
//! database, serves the HTTP and GraphQL API, and stops gracefully on
//! SIGTERM/SIGINT. The one-shot commands of pipelines (`plan`, `apply`,
//! `status`, `config check`) are in [`cli`].

mod allocator;
mod cli;
mod db;
mod error;
mod graphql;
mod http;
mod identity;
mod loader;
mod math_symbols;
mod os_account;
mod otlp;
mod server;
mod service;
mod settings;
mod startup;
mod telemetry;
mod traces;
mod webhook;

use std::process::ExitCode;

fn main() -> ExitCode {
    allocator::purge_at_once();
    cli::main()
}
