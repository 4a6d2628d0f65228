//! Strata's core: every decision of the migration service, the request-options
//! builder and the webhook toolset, and none of their I/O.
//!
//! # Contract
//!
//! This crate performs no I/O of any kind. It does not open files or sockets,
//! read the clock, read environment variables, spawn threads or draw random
//! numbers. Everything it needs from the outside world enters as an argument:
//! the YAML text of a configuration and the environment as a map, migration
//! files as `(directory, file name, bytes)`, the rows already recorded in the
//! database, the tenant list, the start time and duration of an operation,
//! a route and its parameters, a webhook's headers and body bytes.
//! Everything it decides leaves as a value: a validated [`config::Config`], an
//! ordered [`plan::Plan`] with its diagnostics, a rendered webhook payload, a
//! URL, a signature verdict, the HTTP answer to a delivery.
//!
//! The shells (`strata-server`, the WebAssembly bindings in `strata-wasm`) read,
//! hand the data to this crate, and execute what it returns. Because of the
//! contract the crate builds for `wasm32-unknown-unknown`, and every function
//! in it is deterministic: the same input always gives the same output.
//!
//! # Modules
//!
//! - [`config`]: the service's YAML configuration, `${NAME}` substitution and
//!   the redacted rendering served at `GET /v2/config`.
//! - [`source`]: source migrations (name, type, file, checksum) and their order.
//! - [`plan`]: the planner: which migration runs in which schema, or is only
//!   recorded, plus drift and out-of-order diagnostics.
//! - [`summary`]: the summary of an operation and the webhook payload.
//! - [`location`]: which storage a `baseLocation` names.
//! - [`ident`]: validation and quoting of schema and tenant identifiers.
//! - [`redact`]: hiding secrets in connection strings.
//! - [`batches`]: SQL Server scripts cut at `GO` lines.
//! - [`statements`]: what a migration file says about transactions (the
//!   `strata:no-transaction` directive, hidden transaction control, statements
//!   that cannot run in one), read with a SQL tokenizer; error positions
//!   mapped back into the file.
//! - [`datasource`]: `dataSource` forms of other tools turned into driver URLs,
//!   and the check that a `dataSource` belongs to its `driver`.
//! - [`driver`]: the database kinds and the schema names each engine reserves.
//! - [`endpoint`]: the request-options builder (`@octokit/endpoint`'s rules).
//! - [`webhooks`]: webhook signatures, event names, listener routing, the
//!   middleware's answers and the edge receiver's decisions.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod batches;
pub mod config;
pub mod datasource;
pub mod driver;
pub mod endpoint;
pub mod ident;
pub mod location;
pub mod plan;
pub mod redact;
pub mod source;
pub mod statements;
pub mod summary;
mod template;
pub mod webhooks;

pub use source::MigrationType;
