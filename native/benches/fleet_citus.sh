#!/usr/bin/env bash
# A fleet version on Citus against the same on one PostgreSQL (issue 39):
# TENANTS tenants x 20 tenant migrations (a table, an index, 18 added
# columns), one run of each, side by side:
#
#   pg floor      CONCURRENCY `psql -X -q -v ON_ERROR_STOP=1` sessions at
#                 once on one PostgreSQL (a fresh initdb here, default
#                 settings: fsync on, shared_buffers 128 MB), each sending
#                 its share of the tenants, one transaction per tenant
#   pg strata     one `strata apply` there (tenantConcurrency:
#                 CONCURRENCY, the defaults otherwise: checksums,
#                 svc_migrations rows, the lease, drift read before,
#                 fingerprints stored after)
#   citus floor   the same `psql` sessions on the Citus coordinator (the
#                 tenants are distributed schemas spread over the workers;
#                 every statement is sent alone, as psql does)
#   citus strata  the same `strata apply` pointed at the coordinator
#
# Every tenant schema exists before each timed run (created, not timed; on
# Citus by `create schema` with the cluster's schema-based sharding on, as a
# `psql` loop would). Printed: seconds, the ratio to the floor of the same
# engine, the ratio to the same variant on one PostgreSQL, and Strata's peak
# RSS in MB (/usr/bin/time).
#
# The Citus cluster is tests/citus.sh's (a coordinator and two workers on
# this machine, started before: `bash tests/citus.sh start`); the bench uses
# its database, dropping every tenant schema and `svc` before each run.
#
# Usage: bash native/benches/fleet_citus.sh
#   (TENANTS=2000 CONCURRENCY=4 PG_PORT=23699
#    STRATA_TEST_CITUS_URL=postgres://postgres@127.0.0.1:23601/strata
#    PG_BIN=/usr/lib/postgresql/15/bin; STRATA_BIN=… skips the release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-2000}
CONCURRENCY=${CONCURRENCY:-4}
PG_PORT=${PG_PORT:-23699}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
CITUS_URL=${STRATA_TEST_CITUS_URL:?start the cluster: bash tests/citus.sh start, then source its env}
PG_URL=postgres://postgres@127.0.0.1:$PG_PORT/bench
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
if [ -z "${STRATA_BIN:-}" ]; then
    cargo build --release -p strata-server --quiet
fi
STRATA=${STRATA_BIN:-$CARGO_TARGET_DIR/release/strata}
work=$(mktemp -d)
chmod 755 "$work"
as_postgres() { su postgres -c "$1"; }
cleanup() {
    [ ! -d "$work/pg" ] || as_postgres "$PG_BIN/pg_ctl -D $work/pg -m fast stop" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
PSQL=(psql -X -q -v ON_ERROR_STOP=1)

# One PostgreSQL with its default settings.
mkdir -p "$work/pg" && chown postgres "$work/pg"
as_postgres "$PG_BIN/initdb -D $work/pg -U postgres --auth=trust" >/dev/null
as_postgres "$PG_BIN/pg_ctl -D $work/pg -o '-c listen_addresses=127.0.0.1 -p $PG_PORT -k $work/pg' -l $work/pg/log -w start" >/dev/null
"${PSQL[@]}" "postgres://postgres@127.0.0.1:$PG_PORT/postgres" -c "create database bench"
for url in "$PG_URL" "$CITUS_URL"; do
    "${PSQL[@]}" "$url" -Atc "select version() || ': fsync=' || current_setting('fsync') || ' shared_buffers=' || current_setting('shared_buffers') \
        || coalesce(' citus ' || (select extversion from pg_extension where extname = 'citus') \
        || ', workers ' || (select count(*) from pg_dist_node where groupid <> 0), '')" 2>/dev/null ||
        "${PSQL[@]}" "$url" -Atc "select version() || ': fsync=' || current_setting('fsync') || ' shared_buffers=' || current_setting('shared_buffers')"
done

# The migrations: a table, an index, 18 added columns.
mkdir -p "$work/m/tenants" "$work/m/ref"
printf 'create table {schema}.items (id bigint generated always as identity primary key, name text not null);\n' >"$work/m/tenants/001_items.sql"
printf 'create index items_name on {schema}.items (name);\n' >"$work/m/tenants/002_items_name.sql"
for n in $(seq 3 20); do
    printf 'alter table {schema}.items add column c%02d text;\n' "$n" >"$work/m/tenants/$(printf %03d "$n")_c$n.sql"
done

tenant_names() { seq -f "t%06g" 1 "$TENANTS"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

fresh() { # url: the tenants' schemas and tenant table, nothing else
    local url=$1
    "${PSQL[@]}" "$url" -Atc "select nspname from pg_namespace where nspname ~ '^t[0-9]{6}$'" |
        sed 's/.*/drop schema & cascade;/' >"$work/drop.sql"
    {
        echo "set client_min_messages = warning;"
        echo "drop schema if exists svc cascade;"
        echo "drop table if exists public.tenants;"
        cat "$work/drop.sql"
        echo "create table public.tenants (name text primary key);"
        echo "insert into public.tenants select 't' || lpad(i::text, 6, '0') from generate_series(1, $TENANTS) i;"
        # One statement each: on Citus each is a distributed schema.
        tenant_names | sed 's/.*/create schema &;/'
        echo "checkpoint;"
    } >"$work/fresh.sql"
    "${PSQL[@]}" "$url" -f "$work/fresh.sql" >/dev/null
}

floor_run() { # url -> seconds
    local url=$1
    fresh "$url"
    rm -f "$work"/floor.*
    local t i=0
    for t in $(tenant_names); do
        {
            echo "begin;"
            sed "s/{schema}/$t/g" "$work"/m/tenants/*.sql
            echo "commit;"
        } >>"$work/floor.$((i % CONCURRENCY))"
        i=$((i + 1))
    done
    local start pids=()
    start=$(now)
    for s in $(seq 0 $((CONCURRENCY - 1))); do
        "${PSQL[@]}" "$url" -f "$work/floor.$s" >/dev/null &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    elapsed "$start"
}

strata_run() { # url -> "seconds rss_kb"
    local url=$1
    fresh "$url"
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: $url
singleMigrations: [ref]
tenantMigrations: [tenants]
tenantSelectSQL: select name from public.tenants order by name
tenantInsertSQL: insert into public.tenants (name) values (\$1)
tenantConcurrency: $CONCURRENCY
logLevel: ERROR
YAML
    local start
    start=$(now)
    if ! /usr/bin/time -f "%M" -o "$work/rss" "$STRATA" --config "$work/svc.yaml" apply --version fleet >"$work/out" 2>"$work/err"; then
        echo "strata FAILED: $(tail -5 "$work/out") $(tail -5 "$work/err")" >&2
        exit 1
    fi
    local seconds
    seconds=$(elapsed "$start")
    local rows
    rows=$("${PSQL[@]}" "$url" -Atc "select count(*) from svc.svc_migrations")
    [ "$rows" = $((TENANTS * 20)) ] || { echo "strata recorded $rows rows, not $((TENANTS * 20))" >&2; exit 1; }
    echo "$seconds $(cat "$work/rss")"
}

pg_floor=$(floor_run "$PG_URL")
answer=$(strata_run "$PG_URL")
read -r pg_strata pg_rss <<<"$answer"
citus_floor=$(floor_run "$CITUS_URL")
answer=$(strata_run "$CITUS_URL")
read -r citus_strata citus_rss <<<"$answer"
# What Citus placed where, for the record.
"${PSQL[@]}" "$CITUS_URL" -Atc "select 'tenants per worker: ' || string_agg(nodeport || ' ' || n, ', ') from \
    (select nodeport, count(distinct split_part(table_name::text, '.', 1)) n from citus_shards where table_name::text ~ '^t[0-9]{6}[.]' group by 1 order by 1) s"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
printf '%-8s %-8s %-7s %10s %16s %16s %8s\n' tenants engine run seconds "ratio to floor" "ratio to pg" "RSS MB"
printf '%-8s %-8s %-7s %10s %16s %16s %8s\n' "$TENANTS" pg floor "$pg_floor" 1.00 1.00 -
printf '%-8s %-8s %-7s %10s %16s %16s %8s\n' "$TENANTS" pg strata "$pg_strata" "$(ratio "$pg_strata" "$pg_floor")" 1.00 "$(mb "$pg_rss")"
printf '%-8s %-8s %-7s %10s %16s %16s %8s\n' "$TENANTS" citus floor "$citus_floor" 1.00 "$(ratio "$citus_floor" "$pg_floor")" -
printf '%-8s %-8s %-7s %10s %16s %16s %8s\n' "$TENANTS" citus strata "$citus_strata" "$(ratio "$citus_strata" "$citus_floor")" "$(ratio "$citus_strata" "$pg_strata")" "$(mb "$citus_rss")"
