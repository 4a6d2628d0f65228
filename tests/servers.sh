#!/usr/bin/env bash
# Throwaway servers on 127.0.0.1 for the tests, without systemd or Docker:
# PostgreSQL, PgBouncer, MariaDB and Galera from Debian packages, moto's S3 server
# from PyPI, Azurite's blob service from npm. Besides the two PostgreSQL
# clusters of the suites: PgBouncer in transaction and in session mode (stock
# configuration) in front of the default-settings cluster, and a primary with
# a streaming standby for the failover tests, a cluster with TLS on and a
# self-signed X.509 v1 certificate; a 3-node MariaDB Galera cluster. Data lives in $STRATA_SERVERS_DIR
# (default /tmp/strata-servers) and is deleted by `stop`; the PyPI and npm
# installs are cached in $STRATA_EMULATORS_CACHE (default
# ~/.cache/strata-emulators).
#
#   bash tests/servers.sh start   # installs what is missing (apt needs root), starts all four,
#                                 # writes $STRATA_SERVERS_DIR/env with what the tests read
#   bash tests/servers.sh stop
#   bash tests/servers.sh ports-free  # fails naming a port of theirs already in use
set -euo pipefail
DIR=${STRATA_SERVERS_DIR:-/tmp/strata-servers}
# The default ports lie below Linux's ephemeral range (32768-60999), where
# the client end of any connection on the machine may hold a port for a
# moment ("could not start server" in a CI run).
PG_PORT=${STRATA_PG_PORT:-21329}
# A second PostgreSQL with default settings (max_connections=100,
# max_locks_per_transaction=64, fsync on): the fleet tests run there.
PG_DEFAULT_PORT=${STRATA_PG_DEFAULT_PORT:-$((PG_PORT + 1))}
# PgBouncer, stock settings but for where it listens and what it fronts.
PGB_TX_PORT=$((PG_PORT + 11))
PGB_SESSION_PORT=$((PG_PORT + 12))
# A transaction pooler with a pool too small for a version, and a short wait.
PGB_SMALL_PORT=$((PG_PORT + 13))
# A primary and its streaming standby (the failover tests stop the primary).
PG_PRIMARY_PORT=$((PG_PORT + 21))
PG_STANDBY_PORT=$((PG_PORT + 22))
# Two more servers with default settings: with pg-default, a fleet on three
# shards (one of them is stopped in the middle of a version).
PG_SHARD_B_PORT=$((PG_PORT + 31))
PG_SHARD_C_PORT=$((PG_PORT + 32))
# A server with TLS on and a self-signed X.509 v1 certificate (as Citus's
# CREATE EXTENSION makes one): libpq's sslmode semantics are tested there.
PG_TLS_PORT=$((PG_PORT + 41))
MY_PORT=${STRATA_MYSQL_PORT:-22069}
# A second MariaDB server: the second shard of a MariaDB fleet.
MY_SHARD_PORT=$((MY_PORT + 10))
# A third, a fourth and a fifth: the MariaDB suite runs in four parts at
# once, each on a server of its own (a tenant is a database there: a suite
# takes turns on its server).
MY_SECOND_PORT=$((MY_PORT + 20))
MY_THIRD_PORT=$((MY_PORT + 30))
MY_FOURTH_PORT=$((MY_PORT + 40))
# A 3-node MariaDB Galera cluster: client ports, then group communication,
# incremental and snapshot transfer ports, per node.
GALERA_PORT=$((MY_PORT + 1))
S3_PORT=${STRATA_S3_PORT:-5055}
AZ_PORT=${STRATA_AZURITE_PORT:-10000}
EMU=${STRATA_EMULATORS_CACHE:-$HOME/.cache/strata-emulators}

# The server's binaries: a directory with initdb (the client package alone,
# which a fresh machine may have, brings the directory with psql only).
pg_bin() {
    local initdb
    initdb=$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1)
    [ -z "$initdb" ] || dirname "$initdb"
}

install_packages() {
    local missing=()
    [ -n "$(pg_bin)" ] || missing+=(postgresql)
    command -v mariadbd >/dev/null || missing+=(mariadb-server)
    command -v pgbouncer >/dev/null || missing+=(pgbouncer)
    [ -f /usr/lib/galera/libgalera_smm.so ] || missing+=(galera-4)
    command -v rsync >/dev/null || missing+=(rsync)
    command -v openssl >/dev/null || missing+=(openssl)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing ${missing[*]}"
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
    fi
}

# Every TCP port a `start` listens on (Galera's group communication,
# incremental and snapshot transfer ports included).
all_ports() {
    echo "$PG_PORT $PG_DEFAULT_PORT $PGB_TX_PORT $PGB_SESSION_PORT $PGB_SMALL_PORT $PG_PRIMARY_PORT"
    echo "$PG_STANDBY_PORT $PG_SHARD_B_PORT $PG_SHARD_C_PORT $PG_TLS_PORT $MY_PORT $MY_SHARD_PORT $MY_SECOND_PORT $MY_THIRD_PORT $MY_FOURTH_PORT $S3_PORT $AZ_PORT"
    for i in 1 2 3; do
        echo "$((GALERA_PORT + i - 1)) $((GALERA_PORT + 100 + i)) $((GALERA_PORT + 110 + i)) $((GALERA_PORT + 120 + i))"
    done
}

# Fails, naming the first port something already listens on (a server left
# by an earlier run or a benchmark): starting there would fail later with a
# less clear message, or the tests would talk to someone else's server.
check_ports() {
    local port
    for port in $(all_ports); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "port $port on 127.0.0.1 is in use (set STRATA_PG_PORT, STRATA_MYSQL_PORT, STRATA_S3_PORT and STRATA_AZURITE_PORT to use others)" >&2
            return 1
        fi
    done
}

start_postgres() { # cluster port [server options]
    local bin; bin=$(pg_bin)
    mkdir -p "$DIR/$1"
    chown postgres "$DIR/$1"
    if [ ! -f "$DIR/$1/data/PG_VERSION" ]; then
        su postgres -c "$bin/initdb -D $DIR/$1/data -U postgres --auth=trust -E UTF8" >/dev/null
    fi
    if ! su postgres -c "$bin/pg_ctl -D $DIR/$1/data -o '-c listen_addresses=127.0.0.1 -p $2 -k $DIR/$1 ${3:-}' -l $DIR/$1/log -w start" >/dev/null; then
        echo "PostgreSQL ($1, port $2) did not start; its log:" >&2
        tail -n 30 "$DIR/$1/log" >&2
        return 1
    fi
}

start_pgbouncer() { # mode port [name] [extra settings, one per line]
    local name=${3:-$1}
    mkdir -p "$DIR/pgbouncer"
    chown postgres "$DIR/pgbouncer"
    cat >"$DIR/pgbouncer/$name.ini" <<INI
[databases]
* = host=127.0.0.1 port=$PG_DEFAULT_PORT user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $2
auth_type = any
pool_mode = $1
unix_socket_dir =
logfile = $DIR/pgbouncer/$name.log
pidfile = $DIR/pgbouncer/$name.pid
${4:-}
INI
    su postgres -c "pgbouncer -d $DIR/pgbouncer/$name.ini"
}

# A primary, and a standby streaming from it (pg_basebackup -R).
start_replicated_pair() {
    start_postgres pg-primary "$PG_PRIMARY_PORT"
    local bin; bin=$(pg_bin)
    mkdir -p "$DIR/pg-standby"
    chown postgres "$DIR/pg-standby"
    su postgres -c "$bin/pg_basebackup -h 127.0.0.1 -p $PG_PRIMARY_PORT -U postgres -D $DIR/pg-standby/data -R -X stream" >/dev/null
    if ! su postgres -c "$bin/pg_ctl -D $DIR/pg-standby/data -o '-c listen_addresses=127.0.0.1 -p $PG_STANDBY_PORT -k $DIR/pg-standby' -l $DIR/pg-standby/log -w start" >/dev/null; then
        echo "PostgreSQL (pg-standby, port $PG_STANDBY_PORT) did not start; its log:" >&2
        tail -n 30 "$DIR/pg-standby/log" >&2
        return 1
    fi
}

# A self-signed X.509 v1 certificate for localhost (no extensions, so
# `openssl x509 -req` writes version 1), and another one that did not sign
# the server's: the right and a wrong root for verify-ca/verify-full.
start_postgres_tls() {
    local d="$DIR/pg-tls"
    mkdir -p "$d"
    chown postgres "$d"
    for name in server other; do
        openssl req -new -newkey rsa:2048 -nodes -keyout "$d/$name.key" -subj /CN=localhost -out "$d/$name.csr" 2>/dev/null
        openssl x509 -req -in "$d/$name.csr" -signkey "$d/$name.key" -days 3650 -out "$d/$name.crt" 2>/dev/null
    done
    openssl x509 -in "$d/server.crt" -noout -text | grep -q 'Version: 1 (0x0)' || { echo "not an X.509 v1 certificate" >&2; return 1; }
    chown postgres "$d/server.key"
    chmod 600 "$d/server.key"
    start_postgres pg-tls "$PG_TLS_PORT" "-c ssl=on -c ssl_cert_file=$d/server.crt -c ssl_key_file=$d/server.key"
}

start_mariadb() { # directory port
    local d="$DIR/$1"
    mkdir -p "$d"
    if [ ! -d "$d/data/mysql" ]; then
        mariadb-install-db --user=root --datadir="$d/data" --auth-root-authentication-method=normal >/dev/null
    fi
    # Its own tmpdir: a MariaDB starting removes every `#sql*` file in its
    # tmpdir, other servers' internal temporary tables included (a query
    # then fails "Error on delete of '/tmp/#sql-temptable-…'").
    mkdir -p "$d/tmp"
    mariadbd --user=root --datadir="$d/data" --bind-address=127.0.0.1 --port="$2" \
        --socket="$d/sock" --pid-file="$d/pid" --tmpdir="$d/tmp" --max-connections=300 \
        --innodb-flush-log-at-trx-commit=0 >"$d/log" 2>&1 &
    for _ in $(seq 1 100); do
        mariadb-admin --socket="$d/sock" -uroot ping >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "MariaDB did not start:" >&2
    cat "$d/log" >&2
    return 1
}

# Galera on loopback, every node as the mysql user (rsync's snapshot
# transfer drops to nobody and fails under root); node 1 bootstraps, the
# others join it, each waited for until Synced.
start_galera_node() { # n
    local n=$1 d="$DIR/galera/n$1"
    local port=$((GALERA_PORT + $1 - 1)) gcomm=$((GALERA_PORT + 100 + $1)) ist=$((GALERA_PORT + 110 + $1))
    local sst=$((GALERA_PORT + 120 + $1)) new="" peers=""
    for i in 1 2 3; do peers="$peers${peers:+,}127.0.0.1:$((GALERA_PORT + 100 + i))"; done
    [ "$n" = 1 ] && new=--wsrep-new-cluster
    mkdir -p "$d/tmp" # its own tmpdir (see start_mariadb)
    [ -d "$d/data/mysql" ] || mariadb-install-db --user=mysql --datadir="$d/data" \
        --auth-root-authentication-method=normal >/dev/null 2>&1
    chown -R mysql "$d"
    su mysql -s /bin/sh -c "mariadbd --no-defaults --datadir=$d/data --bind-address=127.0.0.1 --port=$port \
        --socket=$d/sock --pid-file=$d/pid --tmpdir=$d/tmp --wsrep-on=ON --wsrep-provider=/usr/lib/galera/libgalera_smm.so \
        --wsrep-cluster-name=strata --wsrep-cluster-address=gcomm://$peers --wsrep-node-address=127.0.0.1:$gcomm \
        --wsrep-provider-options='gmcast.listen_addr=tcp://127.0.0.1:$gcomm;ist.recv_addr=127.0.0.1:$ist' \
        --wsrep-sst-receive-address=127.0.0.1:$sst --wsrep-sst-method=rsync --binlog-format=ROW \
        --innodb-autoinc-lock-mode=2 --innodb-flush-log-at-trx-commit=0 --max-connections=200 $new \
        >$d/log 2>&1 &"
    for _ in $(seq 1 300); do
        [ "$(mariadb --socket="$d/sock" -uroot -N -e "show status like 'wsrep_local_state_comment'" 2>/dev/null |
            cut -f2)" = Synced ] && return 0
        sleep 0.2
    done
    echo "Galera node $n did not sync:" >&2
    tail -n 30 "$d/log" >&2
    return 1
}

start_galera() {
    mkdir -p "$DIR/galera"
    chown mysql "$DIR/galera"
    start_galera_node 1 && start_galera_node 2 && start_galera_node 3
}

install_emulators() {
    if [ ! -x "$EMU/venv/bin/moto_server" ]; then
        echo "installing moto[server] and azure-storage-blob (PyPI) into $EMU/venv"
        python3 -m venv "$EMU/venv"
        "$EMU/venv/bin/pip" install -q 'moto[server]' azure-storage-blob
    fi
    if [ ! -x "$EMU/node_modules/.bin/azurite-blob" ]; then
        echo "installing azurite (npm) into $EMU"
        npm install --prefix "$EMU" --loglevel=error --no-audit --no-fund azurite >/dev/null
    fi
    # A real OpenID Provider (panva's oidc-provider, certified) that the
    # e2e tests start with keys of their own (tests/oidc/provider.mjs).
    if [ ! -f "$EMU/node_modules/oidc-provider/package.json" ]; then
        echo "installing oidc-provider (npm) into $EMU"
        npm install --prefix "$EMU" --loglevel=error --no-audit --no-fund oidc-provider@9 >/dev/null
    fi
    # dbmate, the peer the e2e suite compares schemas with (npm ships its binary).
    if [ ! -x "$EMU/node_modules/.bin/dbmate" ]; then
        echo "installing dbmate (npm) into $EMU"
        npm install --prefix "$EMU" --loglevel=error --no-audit --no-fund dbmate >/dev/null
    fi
}

wait_http() { # url name log
    for _ in $(seq 1 150); do
        curl -s -o /dev/null "$1" && return 0
        sleep 0.2
    done
    echo "$2 did not start:" >&2
    cat "$3" >&2
    return 1
}

start_emulators() {
    "$EMU/venv/bin/moto_server" -H 127.0.0.1 -p "$S3_PORT" >"$DIR/moto.log" 2>&1 &
    echo $! >"$DIR/moto.pid"
    mkdir -p "$DIR/azurite"
    "$EMU/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$AZ_PORT" --location "$DIR/azurite" \
        --silent --skipApiVersionCheck --loose >"$DIR/azurite.log" 2>&1 &
    echo $! >"$DIR/azurite.pid"
    wait_http "http://127.0.0.1:$S3_PORT/" moto "$DIR/moto.log"
    wait_http "http://127.0.0.1:$AZ_PORT/" Azurite "$DIR/azurite.log"
}

case "${1:-}" in
ports-free)
    check_ports
    ;;
start)
    check_ports
    install_packages
    install_emulators
    mkdir -p "$DIR"
    chmod 755 "$DIR"
    start_postgres pg "$PG_PORT" "-c max_connections=300 -c fsync=off"
    start_postgres pg-default "$PG_DEFAULT_PORT"
    start_postgres pg-shard-b "$PG_SHARD_B_PORT"
    start_postgres pg-shard-c "$PG_SHARD_C_PORT"
    start_pgbouncer transaction "$PGB_TX_PORT"
    start_pgbouncer session "$PGB_SESSION_PORT"
    start_pgbouncer transaction "$PGB_SMALL_PORT" small "$(printf 'default_pool_size = 2\nquery_wait_timeout = 2')"
    start_replicated_pair
    start_postgres_tls
    start_mariadb my "$MY_PORT"
    start_mariadb my-shard "$MY_SHARD_PORT"
    start_mariadb my-second "$MY_SECOND_PORT"
    start_mariadb my-third "$MY_THIRD_PORT"
    start_mariadb my-fourth "$MY_FOURTH_PORT"
    start_galera
    start_emulators
    cat >"$DIR/env" <<ENV
export STRATA_TEST_PG_URL=postgres://postgres@127.0.0.1:$PG_PORT/postgres
export STRATA_TEST_PG_DEFAULT_URL=postgres://postgres@127.0.0.1:$PG_DEFAULT_PORT/postgres
export STRATA_TEST_PGBOUNCER_TX_URL=postgres://postgres@127.0.0.1:$PGB_TX_PORT/postgres
export STRATA_TEST_PGBOUNCER_SESSION_URL=postgres://postgres@127.0.0.1:$PGB_SESSION_PORT/postgres
export STRATA_TEST_PGBOUNCER_SMALL_URL=postgres://postgres@127.0.0.1:$PGB_SMALL_PORT/postgres
export STRATA_TEST_PG_PRIMARY_URL=postgres://postgres@127.0.0.1:$PG_PRIMARY_PORT/postgres
export STRATA_TEST_PG_STANDBY_URL=postgres://postgres@127.0.0.1:$PG_STANDBY_PORT/postgres
export STRATA_TEST_PG_SHARD_URLS=postgres://postgres@127.0.0.1:$PG_DEFAULT_PORT/postgres,postgres://postgres@127.0.0.1:$PG_SHARD_B_PORT/postgres,postgres://postgres@127.0.0.1:$PG_SHARD_C_PORT/postgres
export STRATA_TEST_PG_SHARD_C_DATA=$DIR/pg-shard-c/data
export STRATA_TEST_PG_BIN=$(pg_bin)
export STRATA_TEST_PG_STANDBY_DATA=$DIR/pg-standby/data
export STRATA_TEST_PG_PRIMARY_DATA=$DIR/pg-primary/data
export STRATA_TEST_PG_TLS_URL=postgres://postgres@127.0.0.1:$PG_TLS_PORT/postgres
export STRATA_TEST_PG_TLS_ROOT=$DIR/pg-tls/server.crt
export STRATA_TEST_PG_TLS_WRONG_ROOT=$DIR/pg-tls/other.crt
export STRATA_TEST_MYSQL_URL=mysql://root@127.0.0.1:$MY_PORT/mysql
export STRATA_TEST_MYSQL_SHARD_URL=mysql://root@127.0.0.1:$MY_SHARD_PORT/mysql
export STRATA_TEST_MYSQL_SECOND_URL=mysql://root@127.0.0.1:$MY_SECOND_PORT/mysql
export STRATA_TEST_MYSQL_THIRD_URL=mysql://root@127.0.0.1:$MY_THIRD_PORT/mysql
export STRATA_TEST_MYSQL_FOURTH_URL=mysql://root@127.0.0.1:$MY_FOURTH_PORT/mysql
export STRATA_TEST_GALERA_URLS=mysql://root@127.0.0.1:$GALERA_PORT/mysql,mysql://root@127.0.0.1:$((GALERA_PORT + 1))/mysql,mysql://root@127.0.0.1:$((GALERA_PORT + 2))/mysql
export STRATA_TEST_S3_ENDPOINT=http://127.0.0.1:$S3_PORT
export STRATA_TEST_AZURITE_URL=http://127.0.0.1:$AZ_PORT
export STRATA_TEST_PYTHON=$EMU/venv/bin/python
export STRATA_TEST_DBMATE=$EMU/node_modules/.bin/dbmate
export STRATA_TEST_NODE_MODULES=$EMU/node_modules
ENV
    echo "PostgreSQL 127.0.0.1:$PG_PORT (and with default settings :$PG_DEFAULT_PORT, behind PgBouncer :$PGB_TX_PORT transaction, :$PGB_SESSION_PORT session; primary :$PG_PRIMARY_PORT with standby :$PG_STANDBY_PORT; TLS with an X.509 v1 certificate :$PG_TLS_PORT), MariaDB 127.0.0.1:$MY_PORT (and a Galera cluster :$GALERA_PORT-$((GALERA_PORT + 2))), moto S3 127.0.0.1:$S3_PORT, Azurite 127.0.0.1:$AZ_PORT ($DIR/env)"
    ;;
stop)
    for pid in "$DIR/moto.pid" "$DIR/azurite.pid" "$DIR"/pgbouncer/*.pid; do
        [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
    done
    for cluster in pg pg-default pg-primary pg-standby pg-shard-b pg-shard-c pg-tls; do
        if [ -f "$DIR/$cluster/data/PG_VERSION" ]; then
            su postgres -c "$(pg_bin)/pg_ctl -D $DIR/$cluster/data -m fast stop" >/dev/null 2>&1 || true
        fi
    done
    for pid in "$DIR/my/pid" "$DIR/my-shard/pid" "$DIR/my-second/pid" "$DIR/my-third/pid" "$DIR/my-fourth/pid" "$DIR"/galera/n*/pid; do
        [ -f "$pid" ] || continue
        kill "$(cat "$pid")" 2>/dev/null || true
        for _ in $(seq 1 50); do [ -f "$pid" ] || break; sleep 0.1; done
    done
    rm -rf "$DIR"
    ;;
*)
    echo "usage: $0 start|stop|ports-free" >&2
    exit 2
    ;;
esac
