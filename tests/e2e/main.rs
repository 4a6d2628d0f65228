//! End-to-end tests of the migration service: a real `strata` process per
//! test on 127.0.0.1, SQLite files in temp dirs, real HTTP.

mod access;
mod backfills;
mod bad_input;
mod citus;
mod cli;
mod configuration;
mod console;
mod desired;
mod drift;
mod drivers;
mod fleet;
mod formats;
mod hardening;
mod lint;
mod live;
mod metrics_otlp;
mod mutations;
mod names;
mod oidc;
mod operations;
mod peers;
mod quarantine;
mod queries;
mod revert;
mod rollouts;
mod shards;
mod sqlserver;
mod storage;
mod support;
mod tls;
mod topologies;
mod traces;
mod waves;
mod webhook;
