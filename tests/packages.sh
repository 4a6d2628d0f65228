#!/usr/bin/env bash
# The npm packages under pkg/: installs the wasm-bindgen CLI matching the
# crate (tests/tools.sh) and headless Chromium (Debian package; needs root)
# when missing, then in each package: npm ci, npm run
# build (cargo -> wasm-bindgen -> wasm-opt -> esbuild), npm test (packs the
# tarball and tests it from a fresh project; see pkg/*/scripts/test.mjs).
# Then the ecosystem's package linters on the three tarballs: publint and
# @arethetypeswrong/cli, pinned in tests/package-lint (npm ci; see lint.mjs).
# Every npm install here prefers npm's cache (`--prefer-offline`): with the
# cache of an earlier run, npm revalidated each package with the registry
# and took 1 to 4 minutes a project.
#
# Usage: bash tests/packages.sh [build|test]   (default: both, in that order)
# `build` leaves each package's dist/ (what tests/worker.sh needs: the JS
# Worker imports pkg/webhooks); tests/all.sh runs the receivers beside
# `test`.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"

bash tests/tools.sh wasm-bindgen-cli
export WASM_BINDGEN_BIN="$CARGO_TARGET_DIR/tools/root/bin/wasm-bindgen"

if ! command -v chromium >/dev/null && [ -z "${STRATA_CHROMIUM:-}" ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null
    else
        echo "chromium is missing and this is not root: install the Debian package chromium" >&2
        exit 1
    fi
fi

phase=${1:-all}
case "$phase" in build | test | all) ;; *) echo "usage: $0 [build|test]" >&2; exit 2 ;; esac

if [ "$phase" != test ]; then
    for pkg in pkg/endpoint/ pkg/webhooks-methods/ pkg/webhooks/; do
        echo "==> $pkg: npm ci, build"
        (cd "$pkg" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error && npm run build)
    done
fi
[ "$phase" != build ] || exit 0

# The three packages' tests and the linters at once, each output kept and
# printed whole when all have ended: each test mostly waits (an npm install
# into a fresh project, Chromium, `wrangler dev`), and one after another
# they were a cached run's tail, 8:22 for 1:24 of processor time, with the
# machine's processors partly idle in its last minute.
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
lint_tarballs() { # (`|| return`: start_part calls it where `set -e` is off)
    (cd tests/package-lint && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) || return
    mkdir "$parts/packs" || return
    for pkg in pkg/endpoint/ pkg/webhooks-methods/ pkg/webhooks/; do
        (cd "$pkg" && npm pack --pack-destination "$parts/packs" --silent >/dev/null) || return
    done
    node tests/package-lint/lint.mjs "$parts/packs"/*.tgz
}
names=() pids=()
start_part() { # NAME COMMAND...: in the background, its output and its end (status, seconds) kept
    local part=${#pids[@]}
    names+=("$1")
    shift
    ( started=$SECONDS; status=0; "$@" || status=$?; echo "$status $((SECONDS - started))" >"$parts/$part.end"; exit "$status" ) \
        >"$parts/$part.log" 2>&1 &
    pids+=($!)
}
for pkg in pkg/endpoint/ pkg/webhooks-methods/ pkg/webhooks/; do
    [ -d "$pkg/dist" ] || { echo "$pkg has no dist/: run bash tests/packages.sh build first" >&2; exit 1; }
    start_part "$pkg: npm test" env -C "$pkg" npm test
done
start_part "package linters: publint, @arethetypeswrong/cli on the packed tarballs" lint_tarballs

failed=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed=1
    read -r status took <"$parts/$i.end" || { status=1 took=?; }
    echo "==> ${names[$i]} ($([ "$status" = 0 ] && echo passed || echo "FAILED ($status)") in ${took}s)"
    cat "$parts/$i.log"
done
exit "$failed"
