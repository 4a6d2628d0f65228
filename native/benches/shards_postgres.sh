#!/usr/bin/env bash
# A fleet on three PostgreSQL servers with default settings (pg-default,
# pg-shard-b and pg-shard-c of tests/servers.sh: max_connections=100,
# fsync on): TENANTS tenants spread evenly, MIGRATIONS tenant migrations
# each (the first creates a table, the others add a column: the common
# shape of a product's migrations), side by side in one run:
#
#   floor   one `psql -X -1 -v ON_ERROR_STOP=1 -f` per tenant, one after the
#           other, on the tenant's server: the same SQL, one transaction per
#           tenant, no bookkeeping
#   strata  one createVersion over `shards:` (every shard at once,
#           tenantConcurrency: 4 each; checksums, svc_migrations rows, a
#           lease per shard, fingerprints stored, drift read before)
#
# Printed: seconds, migrations per second, the ratio to the floor, the
# service's peak RSS (VmHWM) after the version, and the time and size of
# the GraphQL reads the console makes of the fleet (fleet matrix, tenants).
#
# Usage: bash native/benches/shards_postgres.sh   (TENANTS=10000 MIGRATIONS=20 FLOOR=1)
# Uses the servers of `bash tests/servers.sh start` when they run
# ($STRATA_SERVERS_DIR, default /tmp/strata-servers), else starts them.
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-10000}
MIGRATIONS=${MIGRATIONS:-20}
PORT=${PORT:-18953}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export STRATA_SERVERS_DIR="${STRATA_SERVERS_DIR:-/tmp/strata-servers}"
export PGOPTIONS="-c client_min_messages=warning"

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
IFS=, read -r -a urls <<<"$STRATA_TEST_PG_SHARD_URLS"
ports=()
for url in "${urls[@]}"; do
    port=${url##*:}
    ports+=("${port%%/*}")
done
psql_on() { # shard-index database args...
    local index=$1 db=$2
    shift 2
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${ports[$index]}" -U postgres -d "$db" "$@"
}
for i in 0 1 2; do
    psql_on "$i" postgres -Atc "select 'shard $i: PostgreSQL ' || current_setting('server_version') || ', max_connections=' || current_setting('max_connections') || ', fsync=' || current_setting('fsync')"
done

mkdir -p "$work/m/ref" "$work/m/tenants" "$work/floor"
echo "create schema {schema};" >"$work/m/ref/001.sql"
echo "create table {schema}.items (id bigint generated always as identity primary key, name text not null);" >"$work/m/tenants/001.sql"
for n in $(seq 2 "$MIGRATIONS"); do
    printf 'alter table {schema}.items add column c%03d integer;\n' "$n" >"$work/m/tenants/$(printf %03d "$n").sql"
done
total=$((TENANTS * MIGRATIONS))
shard_of() { echo $(($1 % 3)); } # tenant number -> shard index
now() { date +%s.%N; }
rate() { awk -v n="$total" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }

fresh_databases() { # name: on every shard, with its tenants' schemas
    for i in 0 1 2; do
        psql_on "$i" postgres -c "drop database if exists $1 with (force)" -c "create database $1" >/dev/null
        psql_on "$i" "$1" -c "do \$\$ begin for i in 1..$TENANTS loop
            if i % 3 = $i then execute format('create schema %I', 't' || lpad(i::text, 5, '0')); end if; end loop; end \$\$" >/dev/null
    done
}
drop_databases() { # name
    for i in 0 1 2; do psql_on "$i" postgres -c "drop database $1 with (force)" >/dev/null; done
}

# The floor (FLOOR=0 skips it: memory and the console's reads only).
floor_seconds=0
if [ "${FLOOR:-1}" != 0 ]; then
fresh_databases floor
cat "$work"/m/tenants/*.sql >"$work/tenant.sql"
start=$(now)
for n in $(seq 1 "$TENANTS"); do
    t=$(printf 't%05d' "$n")
    sed "s/{schema}/$t/g" "$work/tenant.sql" | psql_on "$(shard_of "$n")" floor -1 -f - >/dev/null
done
floor_seconds=$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')
echo "floor: $TENANTS x psql -1 -f, serially over 3 servers: ${floor_seconds} s, $(rate "$floor_seconds") migrations/s"
drop_databases floor
fi

# Strata.
db=shard_bench
fresh_databases "$db"
{
    echo "baseLocation: $work/m"
    echo "driver: postgres"
    echo "shards:"
    for i in 0 1 2; do
        echo "  - name: s$i"
        echo "    dataSource: postgres://postgres@127.0.0.1:${ports[$i]}/$db"
    done
    echo "singleMigrations: [ref]"
    echo "tenantMigrations: [tenants]"
    echo "port: $PORT"
    echo "logLevel: ERROR"
} >"$work/svc.yaml"
SVC_YAML="$work/svc.yaml" "$STRATA" >"$work/strata.log" 2>&1 &
strata_pid=$!
until curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"; do sleep 0.05; done
for i in 0 1 2; do
    psql_on "$i" "$db" -c "insert into svc.svc_tenants (name) select 't' || lpad(i::text, 5, '0') from generate_series(1, $TENANTS) i where i % 3 = $i" >/dev/null
done
rss() { awk '/VmHWM/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$strata_pid/status"; }
echo "service started, tenants listed: peak RSS $(rss)"
graphql() { # query -> writes the answer to $work/answer.json, prints seconds
    local start; start=$(now)
    curl -s "http://127.0.0.1:$PORT/v2/service" -H 'Content-Type: application/json' -d "{\"query\":\"$1\"}" >"$work/answer.json"
    awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'
}
seconds=$(graphql 'mutation { createVersion(input: {versionName: \"fleet\"}) { summary { tenants tenantMigrationsTotal } } }')
if grep -q "\"tenantMigrationsTotal\":$total" "$work/answer.json"; then
    echo "strata, 3 shards x tenantConcurrency 4: ${seconds} s, $(rate "$seconds") migrations/s, $(awk -v f="$floor_seconds" -v s="$seconds" 'BEGIN { printf "%.2f", f / s }')x the floor; peak RSS $(rss)"
else
    echo "strata: FAILED after ${seconds} s: $(head -c 600 "$work/answer.json")"
    exit 1
fi
for i in 0 1 2; do
    psql_on "$i" "$db" -Atc "select 'shard $i: ' || count(*) || ' rows recorded, ' || count(distinct db_schema) || ' schemas' from svc.svc_migrations"
done
seconds=$(graphql '{ fleet { files tenants { name shard cells } } }')
echo "fleet matrix over $TENANTS tenants: ${seconds} s, $(wc -c <"$work/answer.json") bytes; peak RSS $(rss)"
seconds=$(graphql '{ tenants { name shard } }')
echo "tenants with their shards: ${seconds} s, $(wc -c <"$work/answer.json") bytes"
seconds=$(graphql 'mutation { createVersion(input: {versionName: \"nothing left\"}) { summary { tenants } version { id } } }')
echo "a second version (nothing to do, drift read first): ${seconds} s; peak RSS $(rss)"
kill "$strata_pid"; wait "$strata_pid" 2>/dev/null || true; strata_pid=
drop_databases "$db"
