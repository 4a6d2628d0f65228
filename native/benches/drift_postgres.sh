#!/usr/bin/env bash
# Fleet drift on a PostgreSQL with default settings (the second cluster of
# tests/servers.sh): TENANTS tenants x MIGRATIONS tenant migrations (a table
# with a serial key, an index and a foreign key each), then in one run:
#
#   version   one createVersion applying them (tenantConcurrency: 4)
#   drift     `strata drift` over the fleet (one catalog query per tenant, on
#             tenantConcurrency connections), twice: clean, then with one
#             tenant altered by hand (it must be named)
#
# Printed as seconds, per-tenant milliseconds, and drift's time as a share
# of the version's.
#
# Usage: bash native/benches/drift_postgres.sh   (TENANTS=2000 MIGRATIONS=10)
# Uses the servers of `bash tests/servers.sh start` when they run
# ($STRATA_SERVERS_DIR, default /tmp/strata-servers), else starts them.
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-2000}
MIGRATIONS=${MIGRATIONS:-10}
PORT=${PORT:-18952}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export STRATA_SERVERS_DIR="${STRATA_SERVERS_DIR:-/tmp/strata-servers}"

cargo build --release -p strata-server --quiet
STRATA="$CARGO_TARGET_DIR/release/strata"
work=$(mktemp -d)
cleanup() {
    [ -n "${strata_pid:-}" ] && kill "$strata_pid" 2>/dev/null || true
    [ -n "${started:-}" ] && bash tests/servers.sh stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
if [ ! -f "$STRATA_SERVERS_DIR/env" ]; then
    started=1
    bash tests/servers.sh start >/dev/null
fi
# shellcheck disable=SC1091
source "$STRATA_SERVERS_DIR/env"
pg_port=${STRATA_TEST_PG_DEFAULT_URL##*:}
pg_port=${pg_port%%/*}
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U postgres)
"${PSQL[@]}" -d postgres -Atc "select 'PostgreSQL ' || current_setting('server_version') || ', max_connections=' || current_setting('max_connections')"

mkdir -p "$work/m/ref" "$work/m/tenants"
echo "create schema {schema};" >"$work/m/ref/001.sql"
for n in $(seq -w 1 "$MIGRATIONS"); do
    printf 'create table {schema}.t%s (id serial primary key, v text not null default %s, parent int references {schema}.t%s (id));\ncreate index {schema}_t%s_v on {schema}.t%s (v);\n' \
        "$n" "'x'" "$n" "$n" "$n" >"$work/m/tenants/$n.sql"
done
now() { date +%s.%N; }
fresh_database() { # name
    "${PSQL[@]}" -d postgres -c "drop database if exists $1 with (force)" -c "create database $1" >/dev/null
    "${PSQL[@]}" -d "$1" -c "do \$\$ begin for i in 1..$TENANTS loop
        execute format('create schema %I', 't' || lpad(i::text, 5, '0')); end loop; end \$\$" >/dev/null
}
run_version() { # database recordFingerprints -> prints seconds
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: postgres://postgres@127.0.0.1:$pg_port/$1
singleMigrations: [ref]
tenantMigrations: [tenants]
port: $PORT
logLevel: ERROR
recordFingerprints: $2
YAML
    SVC_YAML="$work/svc.yaml" "$STRATA" >"$work/strata.log" 2>&1 &
    strata_pid=$!
    until curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"; do sleep 0.05; done
    "${PSQL[@]}" -d "$1" -c "insert into svc.svc_tenants (name) select 't' || lpad(i::text, 5, '0') from generate_series(1, $TENANTS) i" >/dev/null
    local query='{"query":"mutation { createVersion(input: {versionName: \"fleet\"}) { summary { tenantMigrationsTotal } } }"}'
    local start; start=$(now)
    curl -s "http://127.0.0.1:$PORT/v2/service" -H 'Content-Type: application/json' -d "$query" | grep -q "\"tenantMigrationsTotal\":$((TENANTS * MIGRATIONS))"
    awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }'
    if [ "$2" = true ]; then # the storing phase, from the rows' own timestamps (first batch read excluded)
        "${PSQL[@]}" -d "$1" -Atc "select 'fingerprints of ' || count(*) || ' schemas written over ' || round(extract(epoch from max(created) - min(created))::numeric, 1) || ' s' from svc.svc_fingerprints" >&2
    fi
    kill "$strata_pid"; wait "$strata_pid" 2>/dev/null || true; strata_pid=
}
# Alternated, twice each: a later run on a server that just dropped a
# database of 60,000 relations is slower (checkpoints), whichever it is.
declare -A total=([false]=0 [true]=0)
for record in ${RUNS:-false true false true}; do
    fresh_database drift_bench_run
    seconds=$(run_version drift_bench_run "$record")
    echo "version, recordFingerprints: $record: $TENANTS tenants x $MIGRATIONS migrations in ${seconds} s"
    total[$record]=$(awk -v a="${total[$record]}" -v b="$seconds" 'BEGIN { print a + b }')
    "${PSQL[@]}" -d postgres -c "drop database drift_bench_run with (force)" >/dev/null
done
echo "storing fingerprints costs $(awk -v a="${total[false]}" -v b="${total[true]}" 'BEGIN { printf "%+.1f", 100 * (b - a) / a }') % of a version (sums of two runs each)"
db=drift_bench
fresh_database "$db"
version=$(run_version "$db" true)
echo "version for the drift runs: ${version} s"

drift() { # label expected-exit
    local start code seconds
    start=$(now)
    set +e
    "$STRATA" --config "$work/svc.yaml" drift >"$work/drift.txt" 2>"$work/drift.err"
    code=$?
    set -e
    seconds=$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')
    [ "$code" = "$2" ] || { echo "$1: exit $code, expected $2"; cat "$work/drift.err" "$work/drift.txt" | head -20; exit 1; }
    echo "$1: ${seconds} s, $(awk -v s="$seconds" -v n="$TENANTS" 'BEGIN { printf "%.2f", s * 1000 / n }') ms per tenant, $(awk -v s="$seconds" -v v="$version" 'BEGIN { printf "%.1f", 100 * s / v }') % of the version's time; $(head -1 "$work/drift.txt")"
}
drift "drift, clean fleet" 0
"${PSQL[@]}" -d "$db" -c "alter table t00002.t01 add column hotfix int" >/dev/null
drift "drift, one tenant altered" 10
grep -A2 "differs from" "$work/drift.txt" | head -3
