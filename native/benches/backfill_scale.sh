#!/usr/bin/env bash
# A fleet backfill at the database's own speed (issue 59): TENANTS tenants x
# ROWS rows each, every row changed once (`touched = touched + 1`) in
# batches of BATCH keys, on a PostgreSQL with default settings (the second
# cluster of tests/servers.sh), side by side in one run:
#
#   floor    CONCURRENCY `psql` sessions at once, each sending its share of
#            the tenants' batches — the same key ranges, one transaction per
#            batch, no checkpoint, no bookkeeping
#   strata   one `strata apply` of a `strata:backfill` file (the version
#            starts every tenant's backfill, then the command runs them:
#            backfill.concurrency CONCURRENCY, no rows-per-second limit; a
#            checkpoint row with every batch), its peak RSS from /usr/bin/time
#
# Then, with WRITER=1, a concurrent writer (pgbench: single-row updates of
# random tenants' rows through CONCURRENCY clients) runs for WRITER_SECONDS
# alone, and again during a strata backfill: its p50 and p99 latency. With
# WRITER_RATE, that backfill runs at backfill.rowsPerSecond WRITER_RATE and
# is stopped once the writer is done (it is not waited for).
#
# Each timed run gets a fresh copy of one seeded database (CREATE DATABASE …
# TEMPLATE, not timed). Printed: per variant the median of RUNS alternating
# runs, their spread, the ratio of medians to the floor's, rows per second
# and the peak RSS.
#
# Usage: bash native/benches/backfill_scale.sh
#   (TENANTS=2000 ROWS=10000 BATCH=500 RUNS=2 CONCURRENCY=4 WRITER=1
#    WRITER_SECONDS=20 WRITER_RATE=0; STRATA_BENCH_PG_URL=postgres://… uses
#    a running server instead of starting tests/servers.sh's)
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-2000}
ROWS=${ROWS:-10000}
BATCH=${BATCH:-500}
RUNS=${RUNS:-2}
CONCURRENCY=${CONCURRENCY:-4}
WRITER=${WRITER:-1}
WRITER_SECONDS=${WRITER_SECONDS:-20}
WRITER_RATE=${WRITER_RATE:-0}
# shellcheck source=native/benches/fleet_lib.sh
source native/benches/fleet_lib.sh
bench_setup /tmp/strata-backfill-bench 24329
URL=$STRATA_BENCH_PG_URL
"${PSQL[@]}" "$URL/postgres" -Atc "select version() || ': max_connections=' || current_setting('max_connections') || ' fsync=' || current_setting('fsync') || ' shared_buffers=' || current_setting('shared_buffers')"

# The seeded template: schemas t000001..tN, each with `items` of ROWS rows.
seed_start=$(now)
"${PSQL[@]}" "$URL/postgres" -c "set client_min_messages = warning" -c "drop database if exists backfill_seed with (force)" -c "create database backfill_seed" >/dev/null
"${PSQL[@]}" "$URL/backfill_seed" -c "create table public.tenants (name text primary key)" \
    -c "insert into public.tenants select 't' || lpad(i::text, 6, '0') from generate_series(1, $TENANTS) i" >/dev/null
fleet_schemas "$URL/backfill_seed" "$TENANTS"
from=1
while [ "$from" -le "$TENANTS" ]; do
    "${PSQL[@]}" "$URL/backfill_seed" -c "do \$\$ begin for i in $from..$((from + 99 < TENANTS ? from + 99 : TENANTS)) loop
        execute format('create table %I.items (id bigint primary key, touched integer not null default 0)', 't' || lpad(i::text, 6, '0'));
        execute format('insert into %I.items (id) select g from generate_series(1, $ROWS) g', 't' || lpad(i::text, 6, '0'));
        end loop; end \$\$" >/dev/null
    from=$((from + 100))
done
"${PSQL[@]}" "$URL/backfill_seed" -c "vacuum analyze" -c checkpoint >/dev/null
echo "seeded $TENANTS x $ROWS rows in $(elapsed "$seed_start") s"

# The migration: one backfill file.
mkdir -p "$work/m/tenants" "$work/m/ref"
printf -- '-- strata:backfill table={schema}.items key=id batch=%s\nupdate {schema}.items set touched = touched + 1 where {range};\n' "$BATCH" >"$work/m/tenants/001_touch.sql"

fresh_copy() { # name
    "${PSQL[@]}" "$URL/postgres" -c "set client_min_messages = warning" -c "drop database if exists $1 with (force)" -c "create database $1 template backfill_seed" >/dev/null
    "${PSQL[@]}" "$URL/$1" -c checkpoint >/dev/null
    sync
}

# The floor's batches, CONCURRENCY files: each tenant's ranges of BATCH keys.
i=0
for t in $(seq -f "t%06g" 1 "$TENANTS"); do
    awk -v t="$t" -v rows="$ROWS" -v batch="$BATCH" 'BEGIN {
        for (lo = 0; lo < rows; lo += batch) {
            hi = lo + batch; if (hi > rows) hi = rows
            printf "begin; update %s.items set touched = touched + 1 where (id) > (%d) and (id) <= (%d); commit;\n", t, lo, hi
        } }' >>"$work/floor.$((i % CONCURRENCY))"
    i=$((i + 1))
done

verify() { # database
    local sum
    sum=$("${PSQL[@]}" "$URL/$1" -Atc "do \$\$ declare n bigint := 0; m bigint; begin
        for i in 1..$TENANTS loop
            execute format('select count(*) from %I.items where touched = 1', 't' || lpad(i::text, 6, '0')) into m; n := n + m;
        end loop; raise notice '%', n; end \$\$" 2>&1 | sed -n 's/.*NOTICE:  //p')
    [ "$sum" = "$((TENANTS * ROWS))" ] || { echo "$1: $sum rows touched once, not $((TENANTS * ROWS))" >&2; exit 1; }
}

floor_run() { # -> seconds
    fresh_copy backfill_floor
    local seconds; seconds=$(bench_sessions "$URL/backfill_floor" "$work/floor" "$CONCURRENCY")
    verify backfill_floor
    echo "$seconds"
}

strata_config() { # database [rowsPerSecond]
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: $URL/$1
singleMigrations: [ref]
tenantMigrations: [tenants]
tenantSelectSQL: select name from public.tenants order by name
tenantInsertSQL: insert into public.tenants (name) values (\$1)
tenantConcurrency: $CONCURRENCY
logLevel: ERROR
backfill:
  concurrency: $CONCURRENCY
  rowsPerSecond: ${2:-0}
YAML
}

strata_run() { # -> "seconds rss_kb cpu_seconds"
    fresh_copy backfill_strata
    strata_config backfill_strata
    local start
    start=$(now)
    /usr/bin/time -f "%M %U %S" -o "$work/rss" "$STRATA" --config "$work/svc.yaml" apply --version touch >"$work/out.txt" 2>"$work/err"
    local seconds; seconds=$(elapsed "$start")
    local done
    done=$("${PSQL[@]}" "$URL/backfill_strata" -Atc "select count(*) || ' ' || sum(rows_done) from svc.svc_backfills where state = 'done'")
    [ "$done" = "$TENANTS $((TENANTS * ROWS))" ] || { echo "strata: $done (done, rows): $(tail -5 "$work/out.txt") $(tail -5 "$work/err")" >&2; exit 1; }
    verify backfill_strata
    echo "$seconds $(awk '{ printf "%s %.2f", $1, $2 + $3 }' "$work/rss")"
}

: >"$work/times"
for run in $(seq 1 "$RUNS"); do
    # Alternate which variant goes first.
    if [ $((run % 2)) = 1 ]; then order="floor strata"; else order="strata floor"; fi
    for variant in $order; do
        case $variant in
            floor) echo "floor $(floor_run) 0 0" >>"$work/times" ;;
            strata) echo "strata $(strata_run)" >>"$work/times" ;;
        esac
    done
done
printf '%-8s %-8s %-7s %-7s %5s %9s %12s %7s %10s %7s %7s\n' tenants rows batch variant runs median spread ratio "rows/s" "RSS MB" "cpu s"
floor=$(awk '$1 == "floor" { print $2 }' "$work/times" | median)
for variant in floor strata; do
    m=$(awk -v v="$variant" '$1 == v { print $2 }' "$work/times" | median)
    range=$(awk -v v="$variant" '$1 == v { print $2 }' "$work/times" | spread)
    rss=$(awk -v v="$variant" '$1 == v { print $3 }' "$work/times" | sort -n | tail -1)
    ratio=$(awk -v s="$m" -v f="$floor" 'BEGIN { printf "%.2f", s / f }')
    rate=$(awk -v s="$m" -v n="$((TENANTS * ROWS))" 'BEGIN { printf "%.0f", n / s }')
    cpu=$(awk -v v="$variant" '$1 == v { print $4 }' "$work/times" | median)
    [ "$variant" = floor ] && rss=- cpu=- || rss=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
    printf '%-8s %-8s %-7s %-7s %5s %9s %12s %7s %10s %7s %7s\n' "$TENANTS" "$ROWS" "$BATCH" "$variant" "$RUNS" "$m" "$range" "$ratio" "$rate" "$rss" "$cpu"
done
echo "runs     $(awk '{ printf "%s %s s (cpu %s); ", $1, $2, $4 }' "$work/times")"

[ "$WRITER" = 1 ] || exit 0
# The concurrent writer: single-row updates of random tenants' rows.
"${PSQL[@]}" "$URL/backfill_seed" -c "create or replace function public.touch_one(t int, k int) returns void language plpgsql as \$\$
    begin execute format('update %I.items set touched = touched where id = \$1', 't' || lpad(t::text, 6, '0')) using k; end \$\$" >/dev/null
printf '\\set t random(1, %s)\n\\set k random(1, %s)\nselect public.touch_one(:t, :k);\n' "$TENANTS" "$ROWS" >"$work/writer.sql"
writer() { # database label
    rm -f "$work"/pgbench_log.*
    (cd "$work" && pgbench -n -c "$CONCURRENCY" -j 1 -T "$WRITER_SECONDS" -f writer.sql -l "$URL/$1" >/dev/null 2>&1)
    cat "$work"/pgbench_log.* | awk '{ print $3 }' | sort -n | awk -v label="$2" '{ v[NR] = $1 } END {
        printf "writer %-16s %7d transactions  p50 %6.2f ms  p99 %6.2f ms\n", label, NR, v[int(NR * 0.50)] / 1000, v[int(NR * 0.99)] / 1000 }'
}
fresh_copy backfill_strata
writer backfill_strata "alone"
fresh_copy backfill_strata
strata_config backfill_strata "$WRITER_RATE"
"$STRATA" --config "$work/svc.yaml" apply --version touch >"$work/out.txt" 2>"$work/err" &
strata_pid=$!
sleep 3
if [ "$WRITER_RATE" = 0 ]; then
    writer backfill_strata "during a backfill"
    wait "$strata_pid"
else
    writer backfill_strata "during $WRITER_RATE rows/s"
    kill "$strata_pid"
    wait "$strata_pid" 2>/dev/null || true
fi
