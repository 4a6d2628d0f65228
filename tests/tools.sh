#!/usr/bin/env bash
# The tools the lanes build with, each installed when missing (or of
# another version): no registry reachable here ships their binaries, so
# `cargo install --debug` (a debug build of a tool that only drives cargo,
# or generates glue, writes the same output in about half the build time):
#   wasm-bindgen-cli  the version wasm/Cargo.toml pins (tests/packages.sh, tests/worker.sh)
#   cargo-fuzz        with the nightly toolchain (core/fuzz/run.sh)
# `bash tests/tools.sh [TOOL…]` (default: both). tests/all.sh runs it
# first, beside the workspace build, so that they are there when the lanes
# need them; the scripts above call it for their own tool when run alone.
# Builds in a target directory of its own (`$CARGO_TARGET_DIR/tools`): the
# workspace's is locked by its build meanwhile. Installs there too
# (`tools/root/bin`, where tests/packages.sh and tests/worker.sh point
# WASM_BINDGEN_BIN): a CI that keeps the target directory between runs keeps
# the tool with it (installed in ~/.cargo/bin, a run whose ~/.cargo was new
# built it again, 3½ processor minutes); a matching CLI already on the
# PATH (a developer's ~/.cargo/bin) is copied, not built.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}/tools"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# The version of the wasm-bindgen CLI that wasm/Cargo.toml pins.
pinned_wasm_bindgen() {
    sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' wasm/Cargo.toml
}

wasm_bindgen_cli() {
    local version installed root="$CARGO_TARGET_DIR/root"
    version=$(pinned_wasm_bindgen)
    installed=$("$root/bin/wasm-bindgen" --version 2>/dev/null || true)
    [ "$installed" != "wasm-bindgen $version" ] || return 0
    if [ "$(wasm-bindgen --version 2>/dev/null || true)" = "wasm-bindgen $version" ]; then
        mkdir -p "$root/bin"
        cp -f "$(command -v wasm-bindgen)" "$root/bin/wasm-bindgen"
        return 0
    fi
    echo "installing wasm-bindgen-cli $version (found: ${installed:-none})"
    # Its `wasm-bindgen` binary alone (the test runner and wasm2es6js are
    # not used), without the default TLS feature (rustls and ring, for the
    # runner's downloads): 112 processor seconds alone instead of 121.
    cargo install --debug --root "$root" wasm-bindgen-cli --version "$version" --no-default-features --bin wasm-bindgen
}

cargo_fuzz() {
    rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
    command -v cargo-fuzz >/dev/null || cargo install --debug cargo-fuzz --locked
}

# `--built wasm-bindgen-cli`: exits 0 when the pinned CLI is built here
# already (tests/all.sh orders its lanes by it), builds nothing.
if [ "${1:-}" = --built ]; then
    [ "${2:-}" = wasm-bindgen-cli ] || { echo "tests/tools.sh: --built wasm-bindgen-cli" >&2; exit 2; }
    [ "$("$CARGO_TARGET_DIR/root/bin/wasm-bindgen" --version 2>/dev/null || true)" = "wasm-bindgen $(pinned_wasm_bindgen)" ]
    exit
fi
[ $# -gt 0 ] || set -- wasm-bindgen-cli cargo-fuzz
for tool in "$@"; do
    case "$tool" in
        wasm-bindgen-cli) wasm_bindgen_cli ;;
        cargo-fuzz) cargo_fuzz ;;
        *) echo "tests/tools.sh: no tool $tool (wasm-bindgen-cli, cargo-fuzz)" >&2; exit 2 ;;
    esac
done
