#!/usr/bin/env bash
# A fleet version at the database's own speed, with memory that does not grow
# with the fleet (issue 41): for each tenant count in SIZES, on a PostgreSQL
# with default settings (max_connections=100, fsync on — the second cluster of
# tests/servers.sh), TENANTS tenants x 20 tenant migrations (a table, an
# index, 18 added columns), side by side in one run:
#
#   floor    CONCURRENCY `psql -X -q -v ON_ERROR_STOP=1` sessions at once,
#            each sending its share of the tenants, one transaction per
#            tenant (the same SQL, no bookkeeping at all)
#   strata   one `strata apply` (tenantConcurrency: CONCURRENCY, the
#            defaults otherwise: checksums, svc_migrations rows, the lease,
#            fleet drift read before, fingerprints stored after), its peak
#            RSS from /usr/bin/time
#   lean     the same with `driftPolicy: off` and `recordFingerprints: false`
#   before   `strata` as above, run by the binary STRATA_BEFORE names (an
#            earlier build: a change's before and after in one run)
#   traced-before  `traced`, run by STRATA_BEFORE
#   traced   `strata` with traces exported over OTLP/HTTP (every trace
#            sampled, queueSize 1000000 so none is dropped) to a local sink
#            that reads each request whole and answers an empty
#            ExportTraceServiceResponse; the requests and bytes it got are
#            printed after the table, and what tracing cost the process in
#            processor time (user + system, from /usr/bin/time: unlike the
#            wall clock, not moved by this disk's bimodal fsync times)
#
# With VIA=pgbouncer-transaction or VIA=pgbouncer-session, the floor's
# sessions and Strata both connect through tests/servers.sh's stock
# PgBouncer (1.18, default_pool_size 20) in that mode; the databases are
# made and checked directly.
#
# Every tenant schema exists before each timed run (created, not timed).
# Printed per variant: the median of RUNS alternating runs and their spread
# in seconds, the ratio of medians to the floor's, the largest peak RSS
# in MB and the median processor seconds of the `strata` process; then, per Strata variant, the median seconds of each phase of its
# runs (start-up, drift, lock, tenants, plan, units, wind-down, exit).
#
# Usage: bash native/benches/fleet_scale.sh
#   (SIZES="2000 10000" RUNS=3 CONCURRENCY=4 VARIANTS="floor strata lean before"
#    VIA=direct|pgbouncer-transaction|pgbouncer-session;
#    STRATA_BENCH_PG_URL=postgres://… uses a running server instead of
#    starting tests/servers.sh's)
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=${SIZES:-2000 10000}
CONCURRENCY=${CONCURRENCY:-4}
RUNS=${RUNS:-3}
VARIANTS=${VARIANTS:-floor strata lean}
# shellcheck source=native/benches/fleet_lib.sh
source native/benches/fleet_lib.sh
bench_setup /tmp/strata-scale-bench 24329
# Where the timed runs connect (the server itself, or a PgBouncer before it).
case ${VIA:-direct} in
    direct) RUN_URL=$STRATA_BENCH_PG_URL ;;
    pgbouncer-transaction | pgbouncer-session)
        RUN_URL=${STRATA_BENCH_PGBOUNCER_TRANSACTION_URL:-}
        [ "$VIA" = pgbouncer-session ] && RUN_URL=${STRATA_BENCH_PGBOUNCER_SESSION_URL:-}
        [ -n "$RUN_URL" ] || { echo "VIA=$VIA needs the servers this script starts (no STRATA_BENCH_PG_URL)" >&2; exit 2; }
        echo "through $VIA: $RUN_URL"
        ;;
    *) echo "VIA is direct, pgbouncer-transaction or pgbouncer-session, not $VIA" >&2; exit 2 ;;
esac
"${PSQL[@]}" "$STRATA_BENCH_PG_URL/postgres" -Atc "select version() || ': max_connections=' || current_setting('max_connections') || ' fsync=' || current_setting('fsync') || ' shared_buffers=' || current_setting('shared_buffers')"

# The OTLP/HTTP sink of the variant traced (python3's http.server).
if [[ " $VARIANTS " == *" traced"* ]]; then
    cat >"$work/sink.py" <<'PY'
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(sys.argv[2], "a") as log:
            log.write(f"{len(body)}\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
PY
    SINK_PORT=$((24329 + 90))
    python3 "$work/sink.py" "$SINK_PORT" "$work/sink.log" &
    sink_pid=$!
    trap 'kill $sink_pid 2>/dev/null; bench_servers_stop; rm -rf "$work"' EXIT
fi
TRACED=$'telemetry:\n  endpoint: http://127.0.0.1:'"${SINK_PORT:-0}"$'\n  sampler: always_on\n  queueSize: 1000000'

# The migrations: a table, an index, 18 added columns.
fleet_migrations "$work/m"

fresh_database() { # name tenants
    "${PSQL[@]}" "$STRATA_BENCH_PG_URL/postgres" -c "set client_min_messages = warning" -c "drop database if exists $1 with (force)" -c "create database $1" >/dev/null
    "${PSQL[@]}" "$STRATA_BENCH_PG_URL/$1" -c "create table public.tenants (name text primary key)" \
        -c "insert into public.tenants select 't' || lpad(i::text, 6, '0') from generate_series(1, $2) i" >/dev/null
    fleet_schemas "$STRATA_BENCH_PG_URL/$1" "$2"
    "${PSQL[@]}" "$STRATA_BENCH_PG_URL/$1" -c checkpoint >/dev/null
    # The previous run's database was dropped just before: its files'
    # unlinking and the new schemas' writes reach the disk now, not during
    # the timed run.
    sync
}

floor_run() { # tenants -> seconds
    local tenants=$1 db=floor_bench
    fresh_database "$db" "$tenants"
    rm -f "$work"/floor.*
    local t i=0
    for t in $(seq -f "t%06g" 1 "$tenants"); do
        {
            echo "begin;"
            cat "$work"/m/tenants/*.sql | sed "s/{schema}/$t/g"
            echo "commit;"
        } >>"$work/floor.$((i % CONCURRENCY))"
        i=$((i + 1))
    done
    bench_sessions "$RUN_URL/$db" "$work/floor" "$CONCURRENCY"
}

strata_run() { # tenants extra-config [binary] [variant] -> "seconds rss_kb cpu_seconds"
    local tenants=$1 db=strata_bench binary=${3:-$STRATA}
    fresh_database "$db" "$tenants"
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: $RUN_URL/$db
singleMigrations: [ref]
tenantMigrations: [tenants]
tenantSelectSQL: select name from public.tenants order by name
tenantInsertSQL: insert into public.tenants (name) values (\$1)
tenantConcurrency: $CONCURRENCY
logLevel: ERROR
$2
YAML
    local start
    start=$(now)
    # The plain command, as an operator runs it (its summary line); `--json`
    # would also print every recorded row (14 MB at 2,000 tenants).
    # `-v`: the log's `mutation started` and `version created` lines (the
    # latter with the version's phases; no line per tenant).
    /usr/bin/time -f "%M %U %S" -o "$work/rss" "$binary" -v --config "$work/svc.yaml" apply --version fleet >"$work/out.txt" 2>"$work/err"
    local end; end=$(now)
    local seconds; seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    phases_of "$start" "$end" "$work/err" >>"$work/phases.$tenants.${4:-strata}"
    local expected=$((tenants * 20))
    local rows=$((expected + 1))
    if ! grep -q "created: $rows migration(s) and 0 script(s) over $tenants tenant(s)" "$work/out.txt"; then
        echo "strata FAILED: $(tail -c 600 "$work/out.txt") $(tail -5 "$work/err")" >&2
        exit 1
    fi
    local applied
    applied=$("${PSQL[@]}" "$STRATA_BENCH_PG_URL/$db" -Atc "select count(*) from svc.svc_migrations")
    [ "$applied" = "$rows" ] || { echo "strata recorded $applied rows, not $rows" >&2; exit 1; }
    echo "$seconds $(awk '{ printf "%s %.2f", $1, $2 + $3 }' "$work/rss")"
}

# Where one run's time went, in seconds: start-up (the process's start to
# its `mutation started` line: configuration, sources, tenant list), drift
# (the fleet's drift read before the first unit), lock, tenants, plan, units,
# wind-down (rows settled, fingerprints stored), exit (the `version created`
# line to the process's end: the summary, the audit row, the pool's close).
phases_of() { # start end stderr
    local began created
    began=$(grep -m1 'mutation started' "$3" | cut -d' ' -f1)
    created=$(grep -m1 'version created' "$3")
    [ -n "$began" ] && [ -n "$created" ] || { echo "no phases in the log: $(tail -3 "$3")" >&2; exit 1; }
    awk -v start="$1" -v end="$2" -v began="$(date -d "$began" +%s.%N)" -v done_="$(date -d "${created%% *}" +%s.%N)" -v line="$created" 'BEGIN {
        n = split(line, f, " ")
        for (i = 1; i <= n; i++) if (split(f[i], kv, "=") == 2 && kv[1] ~ /_ms$/) ms[kv[1]] = kv[2] / 1000
        printf "%.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n", began - start, ms["drift_ms"], ms["lock_ms"], ms["tenants_ms"], ms["plan_ms"], ms["units_ms"], ms["wind_down_ms"], end - done_
    }'
}
PHASES="start-up drift lock tenants plan units wind-down exit"

# Alternating runs, rotated each round: floor, strata, lean, then strata,
# lean, floor, ... so that the machine's drift (fsync times vary by 2x here)
# falls on every side and no variant always follows the same one.
printf '%-8s %-8s %6s %12s %14s %8s %8s %8s\n' tenants run runs median spread ratio "RSS MB" "cpu s"
for tenants in $SIZES; do
    : >"$work/times"
    read -r -a order <<<"$VARIANTS"
    for run in $(seq 1 "$RUNS"); do
        # Each round starts one variant later than the one before, so no
        # variant always runs right after another's database was dropped.
        rotated=("${order[@]:$(((run - 1) % ${#order[@]}))}" "${order[@]:0:$(((run - 1) % ${#order[@]}))}")
        for variant in "${rotated[@]}"; do
            case $variant in
                floor) echo "floor $(floor_run "$tenants") 0 0" >>"$work/times" ;;
                strata | lean | traced)
                    extra=""
                    [ "$variant" = lean ] && extra=$'driftPolicy: off\nrecordFingerprints: false'
                    [ "$variant" = traced ] && extra=$TRACED
                    echo "$variant $(strata_run "$tenants" "$extra" "" "$variant")" >>"$work/times"
                    ;;
                before | traced-before)
                    [ -x "${STRATA_BEFORE:-}" ] || { echo "the variant $variant needs STRATA_BEFORE=<an earlier strata binary>" >&2; exit 2; }
                    extra=""
                    [ "$variant" = traced-before ] && extra=$TRACED
                    echo "$variant $(strata_run "$tenants" "$extra" "$STRATA_BEFORE" "$variant")" >>"$work/times"
                    ;;
            esac
        done
    done
    floor=$(awk '$1 == "floor" { print $2 }' "$work/times" | median)
    for variant in $VARIANTS; do
        m=$(awk -v v="$variant" '$1 == v { print $2 }' "$work/times" | median)
        range=$(awk -v v="$variant" '$1 == v { print $2 }' "$work/times" | spread)
        rss=$(awk -v v="$variant" '$1 == v { print $3 }' "$work/times" | sort -n | tail -1)
        ratio=$(awk -v s="$m" -v f="$floor" 'BEGIN { if (f > 0) printf "%.2f", s / f; else print "-" }')
        cpu=$(awk -v v="$variant" '$1 == v { print $4 }' "$work/times" | median)
        [ "$variant" = floor ] && rss=- cpu=- || rss=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
        printf '%-8s %-8s %6s %12s %14s %8s %8s %8s\n' "$tenants" "$variant" "$RUNS" "$m" "$range" "$ratio" "$rss" "$cpu"
    done
    # Tracing's cost in the process's processor time, against the
    # version's wall time with traces off.
    if [[ " $VARIANTS " == *" traced "* && " $VARIANTS " == *" strata "* ]]; then
        awk '$1 == "strata" { print $4 > "'"$work"'/cpu.off" } $1 == "traced" { print $4 > "'"$work"'/cpu.on" }
             $1 == "strata" { print $2 > "'"$work"'/wall.off" }' "$work/times"
        off=$(median <"$work/cpu.off") on=$(median <"$work/cpu.on") wall=$(median <"$work/wall.off")
        awk -v on="$on" -v off="$off" -v wall="$wall" 'BEGIN { printf "tracing: %.2f processor s with traces on, %.2f off: +%.2f s, %.1f %% of the median version (%.2f s) with traces off\n", on, off, on - off, 100 * (on - off) / wall, wall }'
    fi
    # Every run, in the order they ran (this disk is bimodal: a median hides
    # which mode each variant's runs fell in).
    echo "runs     $(awk '{ printf "%s %s s (cpu %s); ", $1, $2, $4 }' "$work/times")"
    # The phases of each Strata variant: the median of its runs, per phase.
    for file in "$work"/phases."$tenants".*; do
        [ -e "$file" ] || continue
        line="phases   ${file##*.}:"
        i=1
        for phase in $PHASES; do
            line+=" $phase $(awk -v i="$i" '{ print $i }' "$file" | median)"
            i=$((i + 1))
        done
        echo "$line"
    done
done
if [ -e "$work/sink.log" ]; then
    echo "traced: the sink got $(wc -l <"$work/sink.log") export request(s), $(awk '{ s += $1 } END { print s }' "$work/sink.log") bytes"
fi
