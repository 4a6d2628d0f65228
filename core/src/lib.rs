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
//! Everything it decides leaves as a value: a validated [`migrate::config::Config`], an
//! ordered [`migrate::plan::Plan`] with its diagnostics, a rendered webhook payload, a
//! URL, a signature verdict, the HTTP answer to a delivery.
//!
//! The shells (`strata-server`, the WebAssembly bindings in `strata-wasm`, the
//! edge receivers of `worker/`) read,
//! hand the data to this crate, and execute what it returns. Because of the
//! contract the crate builds for `wasm32-unknown-unknown`, and every function
//! in it is deterministic: the same input always gives the same output.
//!
//! # Modules
//!
//! One folder per product:
//!
//! - [`migrate`]: the migration service — configuration, other tools' file
//!   formats, source migrations, the planner, SQL classification, the
//!   linter, drift, quarantine, waves, rollouts, a sharded fleet's rules,
//!   summaries and reports.
//! - [`auth`]: who may change the fleet — roles and the permission each
//!   API field needs, API tokens, the audit log's hash chain, the throttle
//!   of failed authentications.
//! - [`endpoint`]: the request-options builder (`@octokit/endpoint`'s rules).
//! - [`webhooks`]: webhook signatures, event names, listener routing, the
//!   middleware's answers and the edge receiver's decisions.
//!
//! What the products share: [`retry`], when an outbound delivery (the
//! service's webhook, a receiver's forward) is tried again; and the
//! receivers' REST requests (redeliveries) are built by [`endpoint`].
//!
//! # Features
//!
//! `migrate` (default) builds [`migrate`] and [`auth`] with what only they
//! need: the SQL parser, the YAML reader, Ed25519. The npm packages and the
//! edge receivers use endpoint, retry and webhooks alone and build without it
//! (the SQL parser was most of their compilation, three times per CI run).

#[cfg(feature = "migrate")]
pub mod auth;
pub mod endpoint;
#[cfg(feature = "migrate")]
pub mod migrate;
pub mod retry;
pub mod webhooks;
