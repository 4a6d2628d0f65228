#!/usr/bin/env bash
# The web console in Debian's headless Chromium (installed by .ci/run;
# CHROMIUM overrides /usr/bin/chromium), driven by playwright-core (npm,
# which downloads no browser), against the `strata` the e2e suite ran
# (STRATA_BIN, from tests/all.sh's build; alone, the debug build):
# tests/console/test.mjs, then tests/console/scale.mjs,
# tests/console/paged.mjs and tests/console/desired.mjs. Screenshots: STRATA_SCREENSHOTS.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
# tests/all.sh built it with the tests (STRATA_BIN): built again alone
# (other features) it would be relinked under the suites running beside.
if [ -z "${STRATA_BIN:-}" ]; then
    cargo build -p strata-server --locked --quiet
    export STRATA_BIN="$CARGO_TARGET_DIR/debug/strata"
fi
# Each part's wall time after it (the lane took 11 minutes of a fresh CI run
# for 42 processor seconds: where they go).
timed() { local started=$SECONDS; "$@"; echo "($((SECONDS - started)) s: $*)"; }
timed env -C tests/console npm ci --prefer-offline --no-audit --no-fund --loglevel=error
timed node tests/console/test.mjs
# The matrix and the rollout view at 10,000 tenants, on the default-settings
# PostgreSQL of tests/servers.sh (its env is sourced by tests/all.sh).
timed node tests/console/scale.mjs
# The fleet page at 100,000 tenants, read a page at a time (the fixture
# records one tenant's version for the others: seconds, not a version's
# minutes).
timed node tests/console/paged.mjs
# The desired-state page and a rollout started from it, on the same
# PostgreSQL (desired state plans on PostgreSQL and MariaDB, not SQLite).
timed node tests/console/desired.mjs
