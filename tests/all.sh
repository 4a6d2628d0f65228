#!/usr/bin/env bash
# Every check and test of the workspace: formatting, lints, the core's
# wasm32 build, unit tests, and the end-to-end suite (real `strata`
# processes over HTTP on 127.0.0.1) three times: on SQLite, on a real
# PostgreSQL and on a real MariaDB, both started here by tests/servers.sh
# (Debian packages, installed when missing; needs root for that); the
# PostgreSQL tests that depend on the server's major again on 13, 14, 16, 17
# and 18 (npm's embedded-postgres builds, tests/pg-majors.sh).
# The S3 and Azure cases run against moto and Azurite, also started there.
# STRATA_SKIP_SERVERS=1 runs the SQLite pass without them, and says so.
# The web console is driven in headless Chromium (tests/console.sh).
# The npm packages (pkg/*) are built from source and their packed tarballs
# tested in Node and headless Chromium (tests/packages.sh); the edge
# receivers of worker/ run under wrangler dev and wasmtime (tests/worker.sh).
# Clippy lints the workspace's crates while the tests build (clippy-driver
# as cargo's workspace wrapper: one compilation, not a check build beside
# a test build), in the `ci` profile (Cargo.toml: dependencies optimized,
# the workspace's crates not), whose `strata` binary the suites, the docs
# and the console run. Two lanes need nothing of that build and start
# beside it, below its priority until it ends (it is the run's
# critical path: every suite waits for it): the tools the others build
# with (tests/tools.sh), the core's wasm32 check with the npm packages, and
# the edge receivers (once the packages are built, beside their tests).
# Once the tests are built
# and the servers up, six more run side by side (the suites mostly wait on
# their servers while the others compile): the suite on SQLite, on
# PostgreSQL, on PostgreSQL's other majors, on MariaDB, the container image
# (its binary compiled from the same dependencies), and the docs then the
# console. Each lane's log is printed
# when it ends; the durations and processor times of every step, lanes
# included, at the end, and tests/README.md says where the minutes go. A
# run past 30 minutes says so loudly, past its budget (45 minutes) it
# fails, naming where it went past.
# Installs the Rust components and targets it needs; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# Each step prints its duration when the next begins; the table of all of
# them is printed at the end, pass or fail (the CI time budget is watched
# step by step).
# Beside each duration, the processor time its processes used (user +
# system of the children this shell waited for, from /proc): on these
# 2-core machines the wall clock cannot go below half the sum of it.
ticks_per_second=$(getconf CLK_TCK)
cpu_now() { # cpu_seconds: the processor seconds of this shell's waited-for children
    local stat
    # This shell's own entry (no command substitution: that is a subshell).
    read -r stat <"/proc/$BASHPID/stat"
    # shellcheck disable=SC2086 # split into /proc's fields on purpose
    set -- ${stat##*) }
    cpu_seconds=$(((${14} + ${15}) / ticks_per_second))
}
duration() { # wall seconds, processor seconds
    printf '%4dm%02ds  cpu %4dm%02ds' $(($1 / 60)) $(($1 % 60)) $(($2 / 60)) $(($2 % 60))
}
# The run's limits, each naming the step, or the lane, during which the run
# went past it. Past the warning (STRATA_CI_WARN_MINUTES, 30 by default) the
# end of the run says so loudly; past the budget (STRATA_CI_BUDGET_MINUTES,
# 45 by default: half the 90 minutes after which nothing lands) the run
# fails. A cold run (nothing cached) takes 17 to 19 minutes on these 2-core
# machines (2026-12-07; the same commit's processor time was 30 % apart
# from one day to another, and machines of the same kind 2x apart): 45 is
# the room for both. When cold runs took 40 to 52 minutes, a budget of 45
# kept a stop whose every test passed from landing, and it was 60 until
# the runs came down.
warn_seconds=$((${STRATA_CI_WARN_MINUTES:-30} * 60)) warned=""
budget_seconds=$((${STRATA_CI_BUDGET_MINUTES:-45} * 60)) crossed=""
note_budget() { # what was running
    if [ -z "$warned" ] && [ "$SECONDS" -gt "$warn_seconds" ]; then warned=$1; fi
    if [ -z "$crossed" ] && [ "$SECONDS" -gt "$budget_seconds" ]; then crossed=$1; fi
}
step_name="" step_started=$SECONDS step_cpu=0 durations=()
end_step() {
    [ -n "$step_name" ] || return 0
    note_budget "the step \"$step_name\""
    cpu_now
    local took=$((SECONDS - step_started)) cpu=$((cpu_seconds - step_cpu))
    durations+=("$(duration $took $cpu)  $step_name")
    printf '    (%s)\n' "$(duration $took $cpu | sed 's/^ *//')"
    step_name=""
}
step() {
    end_step
    cpu_now
    step_name="$*" step_started=$SECONDS step_cpu=$cpu_seconds
    printf '\n==> %s\n' "$*"
}
# Where the servers keep their data and the end-to-end tests their files:
# in memory (/dev/shm, a tmpfs) when it has 8 GiB free, else /tmp
# (STRATA_CI_SCRATCH chooses). What the suites test does not depend on the
# disk under them (a kill -9 leaves the page cache as it is; no test cuts
# the power), and beside the builds and the other lanes every fsync waited
# on one shared disk: tests of 1 to 10 s alone took 60 to 250 s in a run
# (SQLite's commits, PostgreSQL's and MariaDB's at their default
# durability). The benchmarks run on disk.
scratch=/tmp
if [ -w /dev/shm ] && [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')" -ge $((8 * 1024 * 1024)) ] 2>/dev/null; then
    scratch=/dev/shm
fi
scratch=${STRATA_CI_SCRATCH:-$scratch}
tests_tmp="$scratch/strata-tests-$$"
servers_started=0 servers_pid=""
on_exit() {
    local status=$?
    end_step
    for pid in "${lane_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
    [ -z "$servers_pid" ] || wait "$servers_pid" 2>/dev/null || true
    [ "$servers_started" = 0 ] || bash tests/servers.sh stop
    cpu_now
    printf '\n==> step durations (total %s)\n' "$(duration $SECONDS "$cpu_seconds" | sed 's/^ *//')"
    printf '%s\n' "${durations[@]}"
    for times in "$lane_dir"/*.times; do
        [ -e "$times" ] || continue
        printf 'lane %s:\n' "$(basename "$times" .times)"
        sed 's/^/    /' "$times"
    done
    # A failing test's panic, repeated last: the head of the run's output
    # is what a reader (or a CI page that keeps only the ends) sees first.
    for log in "$lane_dir"/*.log; do
        [ -e "$log" ] && grep -q '^---- .* stdout ----$' "$log" || continue
        printf '\n==> why lane %s failed (each failing test, its first lines)\n' "$(basename "$log" .log)"
        awk '/^---- .* stdout ----$/ { shown = 0; inside = 1 }
             /^failures:$/ || /^test result:/ { inside = 0 }
             inside && shown < 12 { print substr($0, 1, 400); shown++ }' "$log" | head -80
    done
    # A failed step that is no cargo test (a node script, a shell check):
    # its lane stopped at it, so the lane log's last lines are its own.
    for times in "$lane_dir"/*.times; do
        [ -e "$times" ] && grep -q 'FAILED' "$times" || continue
        log="${times%.times}.log"
        grep -q '^---- .* stdout ----$' "$log" && continue
        printf '\n==> why lane %s failed (the last lines of its failed step)\n' "$(basename "$times" .times)"
        tail -n 40 "$log" | cut -c1-400
    done
    rm -rf "$lane_dir" "$tests_tmp"
    return $status
}
trap on_exit EXIT

# Lanes: independent parts of the run that overlap (the suites mostly wait
# on their servers while the container and web parts compile). Each lane
# writes its own log and its steps' durations; a lane's log is printed
# when it ends, and any lane failing fails the run.
lane_dir=$(mktemp -d) lane_pids=() lane_names=()
lane_step() {
    local name=$1 started=$SECONDS cpu_started status=0
    cpu_now
    cpu_started=$cpu_seconds
    shift
    printf '\n==> %s\n' "$name"
    "$@" || status=$?
    cpu_now
    local took=$((SECONDS - started)) cpu=$((cpu_seconds - cpu_started))
    printf '%s  %s%s\n' "$(duration $took $cpu)" "$name" "$([ $status = 0 ] || echo "  FAILED ($status)")" \
        >>"$lane_dir/$lane.times"
    return $status
}
start_lane() { # NAME FUNCTION [NICENESS]
    local lane=$1
    set -m # each lane its own process group, so a failed run stops all of it
    # shellcheck disable=SC2064 # the lane's name now
    ( set -e; lane=$1; trap "touch '$lane_dir/$1.ended'" EXIT; "$2" ) >"$lane_dir/$1.log" 2>&1 &
    set +m
    lane_pids+=($!) lane_names+=("$lane")
    # A lane off the critical path yields the processors to it (the whole
    # process group: what the lane has started and will start); the lane on
    # it goes first (a negative niceness: root only, elsewhere it stays at
    # the others' and only takes longer).
    [ -z "${3:-}" ] || renice -n "$3" -g "$!" >/dev/null 2>&1 || [ "$3" -lt 0 ]
}
# The lanes started beside the build, back to normal priority once it ended
# (raising a priority needs root: elsewhere they stay low, and only wait
# longer while the suites run).
lanes_at_normal_priority() {
    local pid
    for pid in "${lane_pids[@]}"; do renice -n 0 -g "$pid" >/dev/null 2>&1 || true; done
}
wait_for_lanes() {
    local failed=()
    for i in "${!lane_pids[@]}"; do
        if ! wait "${lane_pids[$i]}"; then failed+=("${lane_names[$i]}"); fi
        note_budget "the lane ${lane_names[$i]}"
        printf '\n==> lane %s\n' "${lane_names[$i]}"
        cat "$lane_dir/${lane_names[$i]}.log"
    done
    lane_pids=()
    if [ ${#failed[@]} -gt 0 ]; then
        echo "failed lane(s): ${failed[*]}" >&2
        return 1
    fi
}
# The tools the packages and workers build with (tests/tools.sh): a lane of
# their own from the start, beside the workspace build, each tool its own
# step in the order the lanes need them; a lane that needs one waits for
# that one only (waiting for all of them made the packages and workers the
# run's tail on a fresh machine: 20 minutes of tool builds before the
# packages' first step).
TOOLS=(wasm-bindgen-cli)
run_tools_lane() {
    local tool status=0 tool_status
    for tool in "${TOOLS[@]}"; do
        tool_status=0
        lane_step "the tool $tool, built once when missing (tests/tools.sh)" bash tests/tools.sh "$tool" || tool_status=$?
        echo "$tool_status" >"$lane_dir/tool-$tool.status"
        [ "$tool_status" = 0 ] || status=$tool_status
    done
    return "$status"
}
wait_for_tool() { # TOOL
    while [ ! -e "$lane_dir/tool-$1.status" ]; do sleep 2; done
    [ "$(cat "$lane_dir/tool-$1.status")" = 0 ] || { echo "the tool $1 did not build (the tools lane's log says why)" >&2; return 1; }
}
# The image's binary: the build above's profile with strata-core and
# strata-server optimized for size (native/container/build.sh), so only those
# two crates compile here; every dependency is the build's.
run_container_lane() {
    lane_step "the container image: its binary from the suites' build, optimized (tests/container.sh)" \
        bash tests/container.sh
}
# No fuzzing build here: the fuzz targets' bodies run over their seeds,
# those seeds changed at random and random inputs in the workspace's test
# build (core/tests/fuzz_targets.rs); a build of their own, instrumented
# for libFuzzer, was 3½ of a fresh run's processor minutes for ten seconds
# of search per target. The search itself: core/fuzz/run.sh (RELIABILITY.md).
# The suites run the e2e binary cargo built, from native/ as cargo would:
# cargo itself would hold the target directory's lock for the whole run.
# Four tests at a time on SQLite and PostgreSQL (libtest's default is one
# per core, two here): the tests mostly wait — on their servers, on a
# process killed and restarted, on a backfill's rate — and each has its
# own files, database and port. MariaDB's tests share a few servers and
# take turns on them (tests/e2e/support.rs).
E2E_THREADS=${STRATA_E2E_THREADS:-4}
# Each test's time (libtest's --report-time, an unstable flag the stable
# harness takes with RUSTC_BOOTSTRAP=1 in its own environment), and each
# suite's slowest tests printed after it: where a suite's minutes go,
# in every run's log.
E2E_TIMED=(-Z unstable-options --report-time)
slowest_tests() { # LOG...
    sed -n 's/^test \(.*\) \.\.\. ok <\([0-9.]*\)s>$/\2 \1/p' "$@" | sort -rn |
        awk 'BEGIN { print "the slowest tests (seconds, under the run'"'"'s load):" }
             NR <= 10 { printf "  %7.1f  %s\n", $1, $2 }'
}
run_sqlite_lane() {
    lane_step "the end-to-end suite on SQLite (with the S3 and Azure cases)" \
        env -C native RUSTC_BOOTSTRAP=1 RUST_TEST_THREADS="$E2E_THREADS" "$STRATA_E2E_BIN" "${E2E_TIMED[@]}"
    slowest_tests "$lane_dir/$lane.log"
}
run_postgres_lane() {
    lane_step "the end-to-end suite on postgres (with PgBouncer, a standby, TLS)" \
        env -C native STRATA_TEST_BACKEND=postgres RUSTC_BOOTSTRAP=1 RUST_TEST_THREADS="$E2E_THREADS" \
        "$STRATA_E2E_BIN" "${E2E_TIMED[@]}"
    slowest_tests "$lane_dir/$lane.log"
}
# Servers of their own (tests/pg-majors.sh), so a lane beside the main
# PostgreSQL suite rather than after it.
run_pg_majors_lane() {
    lane_step "the PostgreSQL tests that depend on the major, on 13, 14, 16, 17 and 18 (tests/pg-majors.sh)" \
        bash tests/pg-majors.sh
}
# MariaDB's tests take turns on their server (a tenant is a database
# there, and each test starts by dropping them all): the suite runs as
# four processes at once, each on a server of its own (tests/servers.sh
# starts them), each taking the next few tests of one shared list when
# it is done with its own. In two halves the lane was the run's longest
# after the build (12:11 on a fresh machine, each half's tests one after
# the other for 11 to 12 minutes); in three fixed thirds (every third test
# of the list) the parts ended up to 90 s apart (538, 569 and 628 s in a
# fresh run), the lane waiting for the last; in three parts sharing the
# list it was still a fresh run's tail (11:16 after the build, for 1:00
# of the harness's processor time: the parts mostly wait on their tests'
# own pauses, not on a processor).
run_mysql_lane() {
    lane_step "the end-to-end suite on mysql (with Galera), in four parts on four servers" run_mysql_parts
}
MYSQL_TESTS_AT_A_TIME=4
# Prints the next tests of the shared list and takes them off it (at most
# MYSQL_TESTS_AT_A_TIME; nothing once it is empty).
take_mysql_tests() { # QUEUE
    flock "$1.lock" sh -c 'head -n "$2" "$1" && sed -i "1,$2d" "$1"' _ "$1" "$MYSQL_TESTS_AT_A_TIME"
}
run_mysql_part() { # URL QUEUE: the e2e binary over the list's next tests until it is empty
    local url=$1 queue=$2 tests status=0
    while tests=$(take_mysql_tests "$queue") && [ -n "$tests" ]; do
        # shellcheck disable=SC2086 # one argument per test name
        env -C native STRATA_TEST_BACKEND=mysql STRATA_TEST_MYSQL_URL="$url" RUSTC_BOOTSTRAP=1 \
            "$STRATA_E2E_BIN" "${E2E_TIMED[@]}" --exact $tests || status=$?
    done
    return "$status"
}
run_mysql_parts() {
    local names status=0 part pids=()
    local urls=("$STRATA_TEST_MYSQL_URL" "$STRATA_TEST_MYSQL_SECOND_URL" "$STRATA_TEST_MYSQL_THIRD_URL"
        "$STRATA_TEST_MYSQL_FOURTH_URL")
    names=$(env -C native STRATA_TEST_BACKEND=mysql "$STRATA_E2E_BIN" --list --format terse | sed -n 's/: test$//p')
    [ -n "$names" ] || { echo "the e2e binary listed no tests" >&2; return 1; }
    printf '%s\n' "$names" >"$lane_dir/mysql.queue"
    for part in "${!urls[@]}"; do
        run_mysql_part "${urls[$part]}" "$lane_dir/mysql.queue" >"$lane_dir/mysql.$part.out" 2>&1 &
        pids+=($!)
    done
    for part in "${!urls[@]}"; do wait "${pids[$part]}" || status=$?; done
    [ ! -s "$lane_dir/mysql.queue" ] || { echo "tests left unrun in the MariaDB list: $(cat "$lane_dir/mysql.queue")" >&2; status=1; }
    cat "$lane_dir"/mysql.[0-9].out
    for part in "${!urls[@]}"; do
        printf 'part %s: %s tests passed, %s failed\n' "$part" \
            "$(grep -c ' \.\.\. ok' "$lane_dir/mysql.$part.out")" "$(grep -c ' \.\.\. FAILED' "$lane_dir/mysql.$part.out")"
    done
    slowest_tests "$lane_dir"/mysql.[0-9].out
    return "$status"
}
# The console beside the database suites. Its backfill over 300 tenants
# once "took over 300 s beside four lanes of tests": a Resume sent while a
# pause went on, which left tenants paused for good (fixed: one move at a
# time) — not the load. Run after the suites it was the tail of the
# run.
run_web_lane() {
    lane_step "the documentation's runnable shell blocks (tests/docs.sh)" bash tests/docs.sh
    lane_step "the web console in headless Chromium (tests/console.sh)" bash tests/console.sh
}
# Cargo in the shared target directory beside the workspace build: cargo
# locks it per profile directory (a build beside a `cargo install --debug`
# in the same one waited 20 minutes for its turn), and these use `wasm`
# and `release`, the workspace build `ci`.
# The lane's cargo builds first, beside the workspace build (they need no
# tool): the same commands as pkg/shared/build.mjs and
# worker/scripts/build.mjs, whose builds then find them done. On a fresh
# machine they took 6 of the lane's minutes after the wasm-bindgen CLI; they
# also show strata-core building for wasm32-unknown-unknown. (The
# receivers' builds in a lane and a target directory of their own, so that
# they would not wait for the packages' — cargo locks a profile's artifact
# directory — compiled their dependencies again: a cached run took 13:17
# instead of 10:31, every lane slower.)
build_wasm_targets() {
    local features # (`|| return`: lane_step's `||` turns `set -e` off in here)
    for features in endpoint webhooks; do
        cargo build -p strata-wasm --target wasm32-unknown-unknown --profile wasm --locked \
            --no-default-features --features "$features" || return
    done
    cargo build -p strata-worker --lib --target wasm32-unknown-unknown --profile wasm --locked || return
    cargo build -p strata-worker-wasi --target wasm32-wasip2 --release --locked
}
run_packages_lane() {
    lane_step "strata-core compiles for wasm32-unknown-unknown (no I/O, no std-only APIs): the packages' and edge receivers' WebAssembly builds" \
        build_wasm_targets
    wait_for_tool wasm-bindgen-cli
    lane_step "the npm packages built from source (tests/packages.sh build)" bash tests/packages.sh build
    touch "$lane_dir/packages.built"
    lane_step "the npm packages: pack, test the tarball (tests/packages.sh test)" bash tests/packages.sh test
}
# The edge receivers once the packages are built (the JS Worker imports
# pkg/webhooks' dist/), beside the packages' tests: after them, they were a
# cached run's last 1:15, its two processors a quarter idle (starting one
# `wrangler dev` after another), the packages' tests having waited their
# turn for the processors behind the suites for 8:32.
run_receivers_lane() {
    while [ ! -e "$lane_dir/packages.built" ]; do
        [ ! -e "$lane_dir/packages.ended" ] || { echo "the npm packages did not build (the packages lane's log says why)" >&2; return 1; }
        sleep 2
    done
    lane_step "the edge receivers: Rust and JS Workers under wrangler dev, the WASI component under wasmtime (tests/worker.sh)" \
        bash tests/worker.sh
}

step "toolchain components and targets"
rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed | grep -q '^clippy' || rustup component add clippy
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
# sqlx's TLS is OpenSSL (native-tls): its headers and pkg-config to build.
if ! pkg-config --exists openssl 2>/dev/null; then
    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq libssl-dev pkg-config >/dev/null
fi
# OpenSSL linked statically into every binary, as into the container image's.
# shellcheck source=native/container/static-openssl.sh
source native/container/static-openssl.sh

# The servers start in the background while the builds run (installing and
# starting PostgreSQL, PgBouncer, MariaDB, a Galera cluster, moto and
# Azurite takes a minute or two on a fresh machine); the e2e step waits.
if [ "${STRATA_SKIP_SERVERS:-0}" != 1 ]; then
    export STRATA_SERVERS_DIR="${STRATA_SERVERS_DIR:-$scratch/strata-servers-$$}"
    # Unless told where, the servers take the first block of ports nothing
    # listens on yet (a server left by a benchmark or an earlier run holds
    # its ports): tests/servers.sh's defaults, then the same layout 1000,
    # 2000, 3000 higher — all below the ephemeral range and clear of
    # tests/pg-majors.sh's 26300s.
    if [ -z "${STRATA_PG_PORT:-}${STRATA_MYSQL_PORT:-}${STRATA_S3_PORT:-}${STRATA_AZURITE_PORT:-}" ]; then
        for shift in 0 1000 2000 3000; do
            export STRATA_PG_PORT=$((21329 + shift)) STRATA_MYSQL_PORT=$((22069 + shift)) \
                STRATA_S3_PORT=$((5055 + shift)) STRATA_AZURITE_PORT=$((10000 + shift))
            bash tests/servers.sh ports-free 2>/dev/null && break
        done
    fi
    servers_started=1
    mkdir -p "$STRATA_SERVERS_DIR"
    bash tests/servers.sh start >"$STRATA_SERVERS_DIR.log" 2>&1 &
    servers_pid=$!
fi

step "cargo fmt --check"
cargo fmt --all --check

# Beside the workspace build, below its priority until it ends: the tools
# first (the packages wait for the wasm-bindgen CLI), then the others.
# On a fresh machine (no wasm-bindgen CLI of the pinned version built yet)
# the tools and packages lanes are the longest chain after the build: the
# CLI from source, the WebAssembly builds' dependencies, then the npm
# packages and the receivers. There, once the build has ended, they go
# first (below); at the build's priority from the start they made the
# build take 13:23 instead of 7:55, and the run 22:59.
fresh_tools=0
bash tests/tools.sh --built wasm-bindgen-cli || fresh_tools=1
start_lane tools run_tools_lane 10
start_lane packages run_packages_lane 10
start_lane receivers run_receivers_lane 10

# Clippy's driver compiles the workspace's crates as rustc does, linting
# them on the way (warnings are errors, rustc's and clippy's): the test
# build is the lint run. Every cargo command of the workspace's target
# directory until the lanes keeps the same wrapper, or its crates would rebuild.
RUSTC_WORKSPACE_WRAPPER=$(rustup which clippy-driver)
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS

step "building every target in the ci profile, linted by clippy (warnings are errors)"
cargo test --workspace --all-targets --locked --no-run --profile ci 2>&1 | tee "$lane_dir/build.log"
STRATA_E2E_BIN=$(sed -n 's/^ *Executable .*e2e\/main\.rs (\(.*\))$/\1/p' "$lane_dir/build.log")
[ -x "$STRATA_E2E_BIN" ] || { echo "the e2e binary was not named by the build" >&2; exit 1; }
# The service binary the e2e suite (tests/e2e/support.rs), the console and
# the docs run: a copy, as the container lane's build of the image's binary
# replaces cargo's file meanwhile.
[ -x "$CARGO_TARGET_DIR/ci/strata" ] || { echo "the build made no $CARGO_TARGET_DIR/ci/strata" >&2; exit 1; }
STRATA_BIN="$CARGO_TARGET_DIR/ci-suites/strata"
mkdir -p "$(dirname "$STRATA_BIN")"
cp -f "$CARGO_TARGET_DIR/ci/strata" "$STRATA_BIN"
export STRATA_E2E_BIN STRATA_BIN

# The same selection of packages as the build (so the same features: no
# rebuild), every target but the end-to-end suite.
step "unit and property tests (every crate, the end-to-end suite apart)"
cargo test --workspace --lib --bins --test properties --test fuzz_targets --locked --profile ci
# The lanes build no host crate of the workspace here (they run what was
# built); a `cargo install` must not run through
# clippy's driver.
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
lanes_at_normal_priority
# The lane that goes first after the build (`nice -19`: root only): the
# tools and packages on a fresh machine, else the container's (below).
# On a fresh machine with the container first, the packages' chain ended
# the run at 21:25 (the CLI at 15:33, the WebAssembly at 18:30, for 2:33
# and 4:19 of processor time), the container's at 13:23; with the packages
# first and the container at the suites' priority, 20:12 (the container's
# chain the tail at 20:06, the packages' over at 14:24). The container at
# `nice -10` as well left the suites' servers too little: an emulator's
# answer took over 5 s six times and a storage test failed (20:39).
# The wasm-bindgen CLI now builds within about the workspace build's time
# (9:24 and 9:27 of fresh runs whose builds ended at 9:29 and 8:56): once it
# is there, the container goes first whatever the run began with (at the
# suites' priority on a fresh machine its compilation took 11:47 and
# 13:18, and it was the run's tail): promoted below when the CLI is built.
container_niceness=-19
if [ "$fresh_tools" = 1 ] && [ ! -e "$lane_dir/tool-wasm-bindgen-cli.status" ]; then
    container_niceness=0
    for i in "${!lane_names[@]}"; do
        case "${lane_names[$i]}" in tools | packages | receivers) renice -n -19 -g "${lane_pids[$i]}" >/dev/null 2>&1 || true ;; esac
    done
fi

if [ "${STRATA_SKIP_SERVERS:-0}" = 1 ]; then
    step "SKIPPED (STRATA_SKIP_SERVERS=1): the S3/Azure cases and the suite on PostgreSQL and MariaDB"
    step "the end-to-end suite on SQLite"
    (cd native && "$STRATA_E2E_BIN" --skip storage::)
else
    step "waiting for the servers (PostgreSQL, PgBouncer, MariaDB, Galera, moto, Azurite on 127.0.0.1)"
    if ! wait "$servers_pid"; then
        cat "$STRATA_SERVERS_DIR.log" >&2
        echo "the test servers did not start" >&2
        exit 1
    fi
    tail -n 1 "$STRATA_SERVERS_DIR.log"
    # shellcheck disable=SC1091
    source "$STRATA_SERVERS_DIR/env"
    # The suites' temporary files (their workspaces, SQLite's tenants, the
    # major versions' servers) in the scratch place too; the lanes started
    # from here on inherit it.
    mkdir -p -m 1777 "$tests_tmp"
    export TMPDIR="$tests_tmp" STRATA_PG_MAJORS_DIR="${STRATA_PG_MAJORS_DIR:-$tests_tmp/pg-majors}"
    start_lane sqlite run_sqlite_lane
    start_lane postgres run_postgres_lane
    start_lane pg-majors run_pg_majors_lane
    start_lane mysql run_mysql_lane
fi
# Ahead of the others: its compilation of the image's two crates (one code
# unit each: one processor, 3½ to 7 minutes of it) is the longest chain of
# the lanes after the build. At `nice 19` it waited out the others and then
# ran alone on one of the two processors (20:25 for 6:33 of processor
# time); at their priority it had under half a processor beside them
# (15:51 for 7:14; ten lanes' processes ready to run at once; and, its
# dependencies the build's, a cached run's 10:39 of 12:40, where at -19 it
# took 5:01 and the run 10:31, with the packages lane at -19 instead).
start_lane container run_container_lane "$container_niceness"
# The CLI still building: the container goes first once it is built, the
# tools and packages lanes back to the suites' priority until the container
# lane has ended, then the packages lane first again. One lane above the
# suites at a time: with two (the container at -10, the packages at -19)
# the suites' servers answered too late and a storage test failed. With
# the packages left at the suites' priority, their WebAssembly builds were
# the tail of a fresh run (17:58 for 3:53 of processor time; 20:54).
if [ "$container_niceness" != -19 ]; then
    container_pgid=${lane_pids[-1]}
    renice_lanes() { # NICENESS LANE...
        local niceness=$1 i
        shift
        for i in "${!lane_names[@]}"; do
            case " $* " in *" ${lane_names[$i]} "*) renice -n "$niceness" -g "${lane_pids[$i]}" >/dev/null 2>&1 || true ;; esac
        done
    }
    (
        while [ -d "$lane_dir" ] && [ ! -e "$lane_dir/tool-wasm-bindgen-cli.status" ]; do sleep 2; done
        renice -n -19 -g "$container_pgid" >/dev/null 2>&1 || true
        renice_lanes 0 tools packages receivers
        while [ -d "$lane_dir" ] && [ ! -e "$lane_dir/container.ended" ]; do sleep 2; done
        renice_lanes -19 packages receivers
    ) &
fi
start_lane web run_web_lane
step "waiting for the lanes: $(printf '%s ' "${lane_names[@]}")"
wait_for_lanes
end_step

if [ -n "$warned" ]; then
    printf '\nWARNING: the run took %dm%02ds, past %d minutes (STRATA_CI_WARN_MINUTES) during %s; the goal is 20 on a fresh machine, tests/README.md says where the minutes go\n' \
        $((SECONDS / 60)) $((SECONDS % 60)) $((warn_seconds / 60)) "$warned" >&2
fi
if [ -n "$crossed" ]; then
    printf '\nFAILED: the run took %dm%02ds, past its budget of %d minutes (STRATA_CI_BUDGET_MINUTES), during %s\n' \
        $((SECONDS / 60)) $((SECONDS % 60)) $((budget_seconds / 60)) "$crossed" >&2
    exit 1
fi
step "all tests passed"
end_step
