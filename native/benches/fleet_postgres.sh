#!/usr/bin/env bash
# A fleet on a PostgreSQL with default settings (max_connections=100,
# max_locks_per_transaction=64, fsync on — the second cluster of
# tests/servers.sh): TENANTS tenants x MIGRATIONS tenant migrations (a table
# with a serial key and an index each), side by side in one run:
#
#   floor     one `psql -X -1 -v ON_ERROR_STOP=1 -f` per tenant, one after the
#             other: the same SQL, one transaction per tenant, no bookkeeping
#   strata/1  one createVersion, tenantConcurrency: 1 (per-schema transactions,
#             checksums, svc_migrations rows, advisory lock)
#   strata/4  the same with tenantConcurrency: 4
#   version   transactionScope: version (the whole fleet in one transaction)
#
# Printed as migrations per second and as a ratio to the floor. Schemas and
# tenant rows exist before each timed run (not timed).
#
# Usage: bash native/benches/fleet_postgres.sh   (TENANTS=2000 MIGRATIONS=20)
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-2000}
MIGRATIONS=${MIGRATIONS:-20}
PORT=${PORT:-18951}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export STRATA_SERVERS_DIR=/tmp/strata-fleet-bench
export STRATA_PG_PORT=27729 STRATA_PG_DEFAULT_PORT=27730 STRATA_MYSQL_PORT=27829 STRATA_S3_PORT=27929 STRATA_AZURITE_PORT=28029

cargo build --release -p strata-server --quiet
STRATA="$CARGO_TARGET_DIR/release/strata"
work=$(mktemp -d)
cleanup() {
    [ -n "${strata_pid:-}" ] && kill "$strata_pid" 2>/dev/null || true
    bash tests/servers.sh stop
    rm -rf "$work"
}
trap cleanup EXIT
bash tests/servers.sh start >/dev/null
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$STRATA_PG_DEFAULT_PORT" -U postgres)
"${PSQL[@]}" -d postgres -Atc "select 'max_connections=' || current_setting('max_connections') || ' max_locks_per_transaction=' || current_setting('max_locks_per_transaction') || ' fsync=' || current_setting('fsync')"

mkdir -p "$work/m/ref" "$work/m/tenants" "$work/floor"
echo "create schema {schema};" >"$work/m/ref/001.sql"
for n in $(seq -w 1 "$MIGRATIONS"); do
    printf 'create table {schema}.t%s (id serial primary key, v text);\ncreate index t%s_v on {schema}.t%s (v);\n' \
        "$n" "$n" "$n" >"$work/m/tenants/$n.sql"
done
tenant_names() { seq -f "t%05g" 1 "$TENANTS"; }
total=$((TENANTS * MIGRATIONS))

fresh_database() { # name
    "${PSQL[@]}" -d postgres -c "drop database if exists $1 with (force)" -c "create database $1" >/dev/null
    # The tenants' schemas, as createTenant would have made them.
    "${PSQL[@]}" -d "$1" -c "do \$\$ begin for i in 1..$TENANTS loop
        execute format('create schema %I', 't' || lpad(i::text, 5, '0')); end loop; end \$\$" >/dev/null
}

now() { date +%s.%N; }
rate() { awk -v n="$total" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }

# The floor.
fresh_database floor
for t in $(tenant_names); do
    cat "$work"/m/tenants/*.sql | sed "s/{schema}/$t/g" >"$work/floor/$t.sql"
done
start=$(now)
for t in $(tenant_names); do
    "${PSQL[@]}" -d floor -1 -f "$work/floor/$t.sql" >/dev/null
done
floor_seconds=$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')
echo "floor: $TENANTS x psql -1 -f: ${floor_seconds} s, $(rate "$floor_seconds") migrations/s"

run_strata() { # label extra-config
    local db="strata_$RANDOM"
    fresh_database "$db"
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: postgres://postgres@127.0.0.1:$STRATA_PG_DEFAULT_PORT/$db
singleMigrations: [ref]
tenantMigrations: [tenants]
port: $PORT
logLevel: ERROR
$2
YAML
    SVC_YAML="$work/svc.yaml" "$STRATA" >"$work/strata.log" 2>&1 &
    strata_pid=$!
    until curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"; do sleep 0.05; done
    "${PSQL[@]}" -d "$db" -c "insert into svc.svc_tenants (name) select 't' || lpad(i::text, 5, '0') from generate_series(1, $TENANTS) i" >/dev/null
    local query='{"query":"mutation { createVersion(input: {versionName: \"fleet\"}) { summary { tenantMigrationsTotal } } }"}'
    start=$(now)
    out=$(curl -s "http://127.0.0.1:$PORT/v2/service" -H 'Content-Type: application/json' -d "$query")
    local seconds; seconds=$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')
    kill "$strata_pid"; wait "$strata_pid" 2>/dev/null || true; strata_pid=
    if echo "$out" | grep -q "\"tenantMigrationsTotal\":$total"; then
        echo "$1: ${seconds} s, $(rate "$seconds") migrations/s, $(awk -v f="$floor_seconds" -v s="$seconds" 'BEGIN { printf "%.2f", f / s }')x the floor"
    else
        echo "$1: FAILED after ${seconds} s: $(echo "$out" | head -c 400)"
    fi
    "${PSQL[@]}" -d postgres -c "drop database $db with (force)" >/dev/null
}

run_strata "strata/1" "tenantConcurrency: 1"
run_strata "strata/4" "tenantConcurrency: 4"
run_strata "strata, transactionScope: version" "transactionScope: version"
