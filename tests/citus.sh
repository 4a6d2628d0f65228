#!/usr/bin/env bash
# A Citus cluster on 127.0.0.1 for tests/e2e/citus.rs: a coordinator and two
# workers, PostgreSQL with the Citus extension already installed (Citus is in
# no package registry this project's CI reaches: build it from the
# citusdata/citus repository into the server's directories first; this script
# does not). Schema-based sharding is on in the coordinator's configuration,
# as a user turns it on; nothing else is changed from the defaults.
#
#   bash tests/citus.sh start   # prints the variables the tests read, also in $STRATA_CITUS_DIR/env
#   bash tests/citus.sh stop    # stops the three servers and deletes their data
#
# STRATA_CITUS_DIR (default /tmp/strata-citus), STRATA_CITUS_PORT (the
# coordinator, default 23601, below the ephemeral port range where an outgoing
# connection could hold it; the workers take the next two ports),
# STRATA_CITUS_BIN (default: the newest /usr/lib/postgresql/*/bin with a
# citus.so in its library directory).
set -euo pipefail
DIR=${STRATA_CITUS_DIR:-/tmp/strata-citus}
PORT=${STRATA_CITUS_PORT:-23601}
DB=strata
NODES=(coordinator worker1 worker2)

bin_dir() {
    if [ -n "${STRATA_CITUS_BIN:-}" ]; then echo "$STRATA_CITUS_BIN"; return; fi
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -e "$("$dir/pg_config" --pkglibdir 2>/dev/null || echo "$dir/../lib")/citus.so" ] \
            || [ -e "$dir/../lib/citus.so" ]; then
            echo "$dir"; return
        fi
    done
    echo "no PostgreSQL with citus.so found under /usr/lib/postgresql: build Citus first (STRATA_CITUS_BIN)" >&2
    exit 1
}

psql_on() { # port, sql
    su postgres -c "$(bin_dir)/psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $1 -d $DB -c \"$2\"" >/dev/null
}

start() {
    local bin; bin=$(bin_dir)
    mkdir -p "$DIR"; chown postgres "$DIR"
    local i port
    for i in 0 1 2; do
        port=$((PORT + i))
        local node=$DIR/${NODES[$i]}
        if [ ! -d "$node/data" ]; then
            mkdir -p "$node"; chown postgres "$node"
            su postgres -c "$bin/initdb -D $node/data -U postgres --auth=trust -E UTF8" >/dev/null
            echo "shared_preload_libraries = 'citus'" >>"$node/data/postgresql.conf"
            if [ "$i" = 0 ]; then
                echo "citus.enable_schema_based_sharding = on" >>"$node/data/postgresql.conf"
            fi
        fi
        su postgres -c "$bin/pg_ctl -D $node/data -o '-c listen_addresses=127.0.0.1 -p $port -k $node' -l $node/log -w start" >/dev/null
        if ! su postgres -c "$bin/psql -X -qtA -h 127.0.0.1 -p $port -d postgres -c \"select 1 from pg_database where datname = '$DB'\"" | grep -q 1; then
            su postgres -c "$bin/createdb -h 127.0.0.1 -p $port $DB"
            psql_on "$port" "create extension citus"
        fi
    done
    psql_on "$PORT" "select citus_set_coordinator_host('127.0.0.1', $PORT)"
    for i in 1 2; do
        psql_on "$PORT" "select citus_add_node('127.0.0.1', $((PORT + i))) where not exists (select 1 from pg_dist_node where nodeport = $((PORT + i)))"
    done
    cat >"$DIR/env" <<EOF
export STRATA_TEST_CITUS_URL=postgres://postgres@127.0.0.1:$PORT/$DB
export STRATA_TEST_CITUS_WORKER_URLS=postgres://postgres@127.0.0.1:$((PORT + 1))/$DB,postgres://postgres@127.0.0.1:$((PORT + 2))/$DB
export STRATA_TEST_CITUS_WORKER_DATA=$DIR/${NODES[1]}/data,$DIR/${NODES[2]}/data
export STRATA_TEST_CITUS_WORKER_PORTS=$((PORT + 1)),$((PORT + 2))
export STRATA_TEST_CITUS_BIN=$bin
EOF
    cat "$DIR/env"
}

stop() {
    local bin; bin=$(bin_dir)
    local node
    for node in "${NODES[@]}"; do
        if [ -d "$DIR/$node/data" ]; then
            su postgres -c "$bin/pg_ctl -D $DIR/$node/data -m fast stop" >/dev/null 2>&1 || true
        fi
    done
    rm -rf "$DIR"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
