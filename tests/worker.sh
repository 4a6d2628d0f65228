#!/usr/bin/env bash
# The edge receivers (worker/): installs what builds and runs them when
# missing — the wasm32-wasip2 target, worker-build (cargo install, ~5
# minutes once) and wasmtime's CLI (cargo install, ~20 minutes once; the
# WASI-HTTP host) — then npm ci, builds the Cloudflare Worker and the WASI
# component from source, and runs worker/scripts/test.mjs: the Rust and the
# JS Worker under `wrangler dev`, the component under `wasmtime serve`.
# Needs pkg/webhooks built first (the JS Worker imports it; tests/packages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export PATH="$HOME/.cargo/bin:$PATH"

rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

worker_build_version=$(sed -n 's/^worker = { version = "\([^"]*\)".*/\1/p' worker/Cargo.toml)
if ! worker-build --version 2>/dev/null | grep -qw "$worker_build_version"; then
    echo "installing worker-build $worker_build_version"
    cargo install worker-build --version "$worker_build_version"
fi

wasmtime_version=48.0.8
if ! wasmtime --version 2>/dev/null | grep -qw "$wasmtime_version"; then
    echo "installing wasmtime-cli $wasmtime_version (the WASI-HTTP host of the component's tests)"
    cargo install wasmtime-cli --version "$wasmtime_version" --locked
fi

cd worker
npm ci --no-audit --no-fund --loglevel=error
npm run build
npm test
