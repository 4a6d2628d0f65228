#!/usr/bin/env bash
# Side by side, in one hyperfine run per size: apply N generated migrations
# to an empty PostgreSQL schema.
#
#   floor   psql -X -1 -v ON_ERROR_STOP=1 -f all.sql   (one transaction, no bookkeeping)
#   strata  POST createVersion to a running `strata` (one transaction, advisory lock,
#           checksums, version + N svc_migrations rows)
#   sqlx    sqlx migrate run (sqlx-cli; one transaction per migration + _sqlx_migrations)
#   dbmate  dbmate up (npm; one transaction per migration + schema_migrations)
#
# The server is the second cluster of tests/servers.sh: PostgreSQL with
# default settings, fsync on. Fleets: native/benches/fleet_postgres.sh.
#
# Usage: bash native/benches/apply_postgres.sh   (SIZES="200 2000" RUNS=10)
# Needs root for tests/servers.sh (Debian PostgreSQL), npm for dbmate, and
# sqlx-cli (`cargo install sqlx-cli --no-default-features --features postgres,rustls`),
# which is skipped with a message when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=${SIZES:-200 2000}
RUNS=${RUNS:-10}
PORT=${PORT:-18941}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export STRATA_SERVERS_DIR=/tmp/strata-bench-servers
export STRATA_PG_PORT=25729 STRATA_PG_DEFAULT_PORT=25730 STRATA_MYSQL_PORT=25829 STRATA_S3_PORT=25929 STRATA_AZURITE_PORT=26029

command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
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
(cd "$work" && npm install --silent --no-audit --no-fund dbmate@2 >/dev/null)
DBMATE="$work/node_modules/.bin/dbmate"
SQLX=$(command -v sqlx || true)
URL="postgres://postgres@127.0.0.1:$STRATA_PG_DEFAULT_PORT/bench"
PSQL=(psql -X -q -h 127.0.0.1 -p "$STRATA_PG_DEFAULT_PORT" -U postgres)
"${PSQL[@]}" -d postgres -Atc "show fsync" | grep -qx on || { echo "fsync is not on" >&2; exit 1; }
"${PSQL[@]}" -d postgres -c "create database bench" >/dev/null

start_strata() { # config
    SVC_YAML="$1" "$STRATA" >"$work/strata.log" 2>&1 &
    strata_pid=$!
    until curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"; do sleep 0.05; done
}
stop_strata() { kill "$strata_pid"; wait "$strata_pid" 2>/dev/null || true; strata_pid=; }

results="$work/results.md"
for N in $SIZES; do
    rm -rf "$work/m" && mkdir -p "$work/m/strata/app" "$work/m/sqlx" "$work/m/dbmate"
    : >"$work/m/all.sql"
    for i in $(seq -w 1 "$N"); do
        schema=""
        [ "$((10#$i))" = 1 ] && schema="create schema {schema};"
        body="${schema}create table {schema}.t$i (id integer primary key, v text not null); insert into {schema}.t$i (id, v) values (1, 'x');"
        plain="${body//\{schema\}/app}"
        echo "$body" >"$work/m/strata/app/$i.sql"
        echo "$plain" >"$work/m/sqlx/${i}_t$i.sql"
        printf -- '-- migrate:up\n%s\n\n-- migrate:down\n' "$plain" >"$work/m/dbmate/${i}_t$i.sql"
        echo "$plain" >>"$work/m/all.sql"
    done
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m/strata
driver: postgres
dataSource: $URL
singleMigrations: [app]
port: $PORT
logLevel: ERROR
YAML
    start_strata "$work/svc.yaml"
    # One table per statement (\gexec, autocommit): dropping 2,000 tables in one
    # transaction runs out of lock slots on a default-configured server.
    cat >"$work/reset.sql" <<'SQL'
select format('drop table app.%I', tablename) from pg_tables where schemaname = 'app' \gexec
drop schema if exists app cascade;
truncate svc.svc_migrations, svc.svc_versions restart identity cascade;
drop table if exists public.schema_migrations, public._sqlx_migrations;
SQL
    reset="${PSQL[*]} -d bench -v ON_ERROR_STOP=1 -f $work/reset.sql"
    query='{"query":"mutation { createVersion(input: {versionName: \"bench\"}) { summary { singleMigrations } } }"}'
    commands=(
        -n floor "${PSQL[*]} -d bench -v ON_ERROR_STOP=1 -1 -f $work/m/all.sql"
        -n strata "curl -sf http://127.0.0.1:$PORT/v2/service -H 'Content-Type: application/json' -d '$query' | grep -q '\"singleMigrations\":$((10#$N))'"
        -n dbmate "$DBMATE --url '$URL?sslmode=disable' --migrations-dir $work/m/dbmate --no-dump-schema up"
    )
    if [ -n "$SQLX" ]; then
        commands+=(-n sqlx "$SQLX migrate run --source $work/m/sqlx --database-url $URL")
    else
        echo "sqlx-cli not installed: skipped (cargo install sqlx-cli --no-default-features --features postgres,rustls)"
    fi
    echo "## $N migrations" >>"$results"
    hyperfine --warmup 1 --runs "$RUNS" --prepare "$reset" --export-markdown "$work/run.md" "${commands[@]}"
    cat "$work/run.md" >>"$results"
    stop_strata
done

echo
cat "$results"
