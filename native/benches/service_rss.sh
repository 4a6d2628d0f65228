#!/usr/bin/env bash
# The service's memory along a large fleet's life (issue 41): TENANTS
# tenants x 20 tenant migrations (a table, an index, 18 added columns) on
# one PostgreSQL with default settings (the second cluster of
# tests/servers.sh: max_connections=100, fsync on), `strata serve` with
# tenantConcurrency 4 and the defaults otherwise (checksums, the lease,
# drift read before each version, fingerprints stored after).
#
# Printed, one line each, the step's time, the service's RSS before it and
# its peak during it (VmHWM from /proc, reset before each step), then the
# largest peak: started with the tenants listed, the first createVersion
# (20 files in every tenant), the next one (one new file), the preview (`plan`) of
# a third, `{ tenants { name } }`, the console's fleet page (the tallies
# and the first 1,000 rows) and the whole fleet matrix
# (`{ fleet { files tenants { name shard cells } } }`, a string per tenant),
# then, after the largest peak of those, the same as a value per cell
# (`states`: refused over 100,000 cells, so asked whole and then as a page
# of 4,000 tenants, 88,000 values). Every tenant schema exists before the service starts
# (not timed).
#
# Usage: bash native/benches/service_rss.sh   (TENANTS=10000;
#   STRATA_BENCH_PG_URL=postgres://… uses a running server instead of
#   starting tests/servers.sh's)
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-10000}
PORT=${PORT:-18954}
export PGOPTIONS="-c client_min_messages=warning"
# shellcheck source=native/benches/fleet_lib.sh
source native/benches/fleet_lib.sh
bench_build
work=$(mktemp -d)
cleanup() {
    [ -n "${strata_pid:-}" ] && kill "$strata_pid" 2>/dev/null || true
    bench_servers_stop
    rm -rf "$work"
}
trap cleanup EXIT
bench_servers_start /tmp/strata-rss-bench 24729
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
db=rss_bench
"${PSQL[@]}" "$STRATA_BENCH_PG_URL/postgres" -Atc "select version() || ': max_connections=' || current_setting('max_connections') || ' fsync=' || current_setting('fsync')"
"${PSQL[@]}" "$STRATA_BENCH_PG_URL/postgres" -c "drop database if exists $db with (force)" -c "create database $db" >/dev/null
fleet_schemas "$STRATA_BENCH_PG_URL/$db" "$TENANTS"
fleet_migrations "$work/m"
cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: $STRATA_BENCH_PG_URL/$db
singleMigrations: [ref]
tenantMigrations: [tenants]
tenantConcurrency: 4
port: $PORT
logLevel: ERROR
YAML
SVC_YAML="$work/svc.yaml" "$STRATA" >"$work/strata.log" 2>&1 &
strata_pid=$!
until curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"; do
    kill -0 "$strata_pid" 2>/dev/null || { cat "$work/strata.log"; exit 1; }
    sleep 0.05
done
"${PSQL[@]}" "$STRATA_BENCH_PG_URL/$db" -c "insert into svc.svc_tenants (name) select 't' || lpad(i::text, 6, '0') from generate_series(1, $TENANTS) i" >/dev/null

now() { date +%s.%N; }
rss() { awk -v key="${1:-VmHWM}" '$1 == key ":" { printf "%.1f MiB", $2 / 1024 }' "/proc/$strata_pid/status"; }
# Each step's own peak: VmHWM is reset to the current RSS before it (the
# kernel's clear_refs, value 5); the largest of them is the service's peak.
peak_mib=0
reset_peak() { echo 5 >"/proc/$strata_pid/clear_refs"; }
graphql() { # query expected-text -> the answer in $work/answer.json; prints seconds
    local start; start=$(now)
    curl -s "http://127.0.0.1:$PORT/v2/service" -H 'Content-Type: application/json' -d "{\"query\":\"$1\"}" >"$work/answer.json"
    if ! grep -q -- "$2" "$work/answer.json"; then
        echo "FAILED: $(head -c 600 "$work/answer.json")" >&2
        exit 1
    fi
    awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'
}
step() { # label query expected-text
    local before seconds peak
    before=$(rss VmRSS)
    reset_peak
    seconds=$(graphql "$2" "$3")
    peak=$(rss)
    peak_mib=$(awk -v a="$peak_mib" -v b="${peak% MiB}" 'BEGIN { print (b > a ? b : a) }')
    printf '%-50s %8s %12s %12s %12s\n' "$1" "$seconds" "$before" "$peak" "$(wc -c <"$work/answer.json") B"
}
printf '%s tenants x 20 migrations\n' "$TENANTS"
printf '%-50s %8s %12s %12s %12s\n' step time "RSS before" "step's peak" answer
printf '%-50s %8s %12s %12s %12s\n' "started, tenants listed" - - "$(rss)" -
peak_mib=$(rss | awk '{ print $1 }')
step "first version (20 files x every tenant)" \
    'mutation { createVersion(input: {versionName: \"fleet\"}) { summary { tenants tenantMigrationsTotal } } }' \
    "\"tenantMigrationsTotal\":$((TENANTS * 20))"
printf 'alter table {schema}.items add column c21 text;\n' >"$work/m/tenants/021_c21.sql"
step "next version (1 new file)" \
    'mutation { createVersion(input: {versionName: \"next\"}) { summary { tenants tenantMigrationsTotal } } }' \
    "\"tenantMigrationsTotal\":$TENANTS"
printf 'alter table {schema}.items add column c22 text;\n' >"$work/m/tenants/022_c22.sql"
step "plan of a third (the preview)" \
    '{ plan { nothingToDo groups { schemas files { file } } } }' '"nothingToDo":false'
step "{ tenants { name } }" '{ tenants { name } }' "t$(printf %06d "$TENANTS")"
step "the console's fleet page (tallies, 1,000 rows)" \
    '{ fleet { files tally { tenants behind drifted unknown } shards { shard tenants } tenants(first: 1000) { name shard cells } } quarantine { tenant cause } }' \
    "\"behind\":$TENANTS"
step "{ fleet { files tenants { name shard cells } } }" '{ fleet { files tenants { name shard cells } } }' 'AP"'
echo "the service's peak RSS over the steps above: $peak_mib MiB"
# The matrix as a value per cell: refused over 100,000 cells (it was 187 MiB
# at 50,000 tenants), answered a page at a time.
step "{ fleet { files tenants { name states } } }" '{ fleet { files tenants { name states } } }' 'INVALID_INPUT'
step "{ fleet { tenants(first: 4000) { name states } } }" '{ fleet { tenants(first: 4000) { name states } } }' '"Pending"'
recorded=$("${PSQL[@]}" "$STRATA_BENCH_PG_URL/$db" -Atc "select count(*) from svc.svc_migrations")
echo "recorded rows: $recorded (expected $((TENANTS * 21 + 1)))"
kill "$strata_pid"
wait "$strata_pid" 2>/dev/null || true
strata_pid=
"${PSQL[@]}" "$STRATA_BENCH_PG_URL/postgres" -c "drop database $db with (force)" >/dev/null
