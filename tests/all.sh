#!/usr/bin/env bash
# Every check and test of the workspace: formatting, lints, the core's
# wasm32 build, unit tests and the end-to-end tests (real `strata`
# processes over HTTP on 127.0.0.1, SQLite files in temp dirs).
# Installs the Rust components and targets it needs; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

step() { printf '\n==> %s\n' "$*"; }

step "toolchain components and targets"
rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed | grep -q '^clippy' || rustup component add clippy
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "strata-core builds for wasm32-unknown-unknown (no I/O, no std-only APIs)"
cargo build -p strata-core --target wasm32-unknown-unknown --locked

step "unit and end-to-end tests"
cargo test --workspace --locked

step "all tests passed"
