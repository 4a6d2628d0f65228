#!/usr/bin/env bash
# Throwaway PostgreSQL and MariaDB servers on 127.0.0.1 for the tests, from
# Debian packages, without systemd. Data lives in $STRATA_SERVERS_DIR
# (default /tmp/strata-servers) and is deleted by `stop`.
#
#   bash tests/servers.sh start   # installs the packages if missing (needs root), starts both,
#                                 # writes $STRATA_SERVERS_DIR/env with the URLs the tests read
#   bash tests/servers.sh stop
set -euo pipefail
DIR=${STRATA_SERVERS_DIR:-/tmp/strata-servers}
PG_PORT=${STRATA_PG_PORT:-54329}
MY_PORT=${STRATA_MYSQL_PORT:-33069}

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

install_packages() {
    local missing=()
    [ -n "$(pg_bin)" ] || missing+=(postgresql)
    command -v mariadbd >/dev/null || missing+=(mariadb-server)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

start_postgres() {
    local bin; bin=$(pg_bin)
    mkdir -p "$DIR/pg"
    chown postgres "$DIR/pg"
    if [ ! -f "$DIR/pg/data/PG_VERSION" ]; then
        su postgres -c "$bin/initdb -D $DIR/pg/data -U postgres --auth=trust -E UTF8" >/dev/null
    fi
    su postgres -c "$bin/pg_ctl -D $DIR/pg/data -o '-c listen_addresses=127.0.0.1 -p $PG_PORT -k $DIR/pg -c max_connections=300 -c fsync=off' -l $DIR/pg/log -w start" >/dev/null
}

start_mariadb() {
    mkdir -p "$DIR/my"
    if [ ! -d "$DIR/my/data/mysql" ]; then
        mariadb-install-db --user=root --datadir="$DIR/my/data" --auth-root-authentication-method=normal >/dev/null
    fi
    mariadbd --user=root --datadir="$DIR/my/data" --bind-address=127.0.0.1 --port="$MY_PORT" \
        --socket="$DIR/my/sock" --pid-file="$DIR/my/pid" --max-connections=300 \
        --innodb-flush-log-at-trx-commit=0 >"$DIR/my/log" 2>&1 &
    for _ in $(seq 1 100); do
        mariadb-admin --socket="$DIR/my/sock" -uroot ping >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "MariaDB did not start:" >&2
    cat "$DIR/my/log" >&2
    return 1
}

case "${1:-}" in
start)
    install_packages
    mkdir -p "$DIR"
    chmod 755 "$DIR"
    start_postgres
    start_mariadb
    cat >"$DIR/env" <<ENV
export STRATA_TEST_PG_URL=postgres://postgres@127.0.0.1:$PG_PORT/postgres
export STRATA_TEST_MYSQL_URL=mysql://root@127.0.0.1:$MY_PORT/mysql
ENV
    echo "PostgreSQL on 127.0.0.1:$PG_PORT, MariaDB on 127.0.0.1:$MY_PORT ($DIR/env)"
    ;;
stop)
    if [ -f "$DIR/pg/data/PG_VERSION" ]; then
        su postgres -c "$(pg_bin)/pg_ctl -D $DIR/pg/data -m fast stop" >/dev/null 2>&1 || true
    fi
    if [ -f "$DIR/my/pid" ]; then
        kill "$(cat "$DIR/my/pid")" 2>/dev/null || true
        for _ in $(seq 1 50); do [ -f "$DIR/my/pid" ] || break; sleep 0.1; done
    fi
    rm -rf "$DIR"
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
