#!/usr/bin/env bash
# The npm packages under pkg/: installs the wasm-bindgen CLI matching the
# crate (cargo install --debug, ~80 s once: no registry ships the binary, and
# a debug build of the tool takes half the time of a release one while its
# output is byte for byte the same) and headless Chromium (Debian
# package; needs root) when missing, then in each package: npm ci, npm run
# build (cargo -> wasm-bindgen -> wasm-opt -> esbuild), npm test (packs the
# tarball and tests it from a fresh project; see pkg/*/scripts/test.mjs).
# Then the ecosystem's package linters on the three tarballs: publint and
# @arethetypeswrong/cli, pinned in tests/package-lint (npm ci; see lint.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"

bindgen_version=$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' wasm/Cargo.toml)
installed=$(wasm-bindgen --version 2>/dev/null || "$HOME/.cargo/bin/wasm-bindgen" --version 2>/dev/null || true)
if [ "$installed" != "wasm-bindgen $bindgen_version" ]; then
    echo "installing wasm-bindgen-cli $bindgen_version (found: ${installed:-none})"
    cargo install --debug wasm-bindgen-cli --version "$bindgen_version"
fi

if ! command -v chromium >/dev/null && [ -z "${STRATA_CHROMIUM:-}" ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null
    else
        echo "chromium is missing and this is not root: install the Debian package chromium" >&2
        exit 1
    fi
fi

for pkg in pkg/endpoint/ pkg/webhooks-methods/ pkg/webhooks/; do
    echo "==> $pkg: npm ci, build, test"
    (cd "$pkg" && npm ci --no-audit --no-fund --loglevel=error && npm run build && npm test)
done

echo "==> package linters: publint, @arethetypeswrong/cli on the packed tarballs"
(cd tests/package-lint && npm ci --no-audit --no-fund --loglevel=error)
packs=$(mktemp -d)
trap 'rm -rf "$packs"' EXIT
for pkg in pkg/endpoint/ pkg/webhooks-methods/ pkg/webhooks/; do
    (cd "$pkg" && npm pack --pack-destination "$packs" --silent >/dev/null)
done
node tests/package-lint/lint.mjs "$packs"/*.tgz
