#!/usr/bin/env bash
# A SQL Server-compatible engine on 127.0.0.1 for tests/e2e/sqlserver.rs:
# Babelfish for PostgreSQL, which speaks TDS and T-SQL. No SQL Server, and no
# engine compatible with it, installs from a registry this project's CI
# reaches: build PostgreSQL modified for Babelfish and the Babelfish
# extensions (babelfishpg_money, _common, _tds, _tsql) from their
# repositories first, at matching release tags (see tests/README.md); this
# script does not. It runs the server as a SQL Server is run: TLS on (a
# self-signed certificate, as SQL Server serves one), several user databases
# (`migration_mode = multi-db`), one login that owns them.
#
#   bash tests/sqlserver.sh start   # prints the variables the tests read, also in $STRATA_SQLSERVER_DIR/env
#   bash tests/sqlserver.sh stop    # stops the server and deletes its data
#
# STRATA_SQLSERVER_DIR (default /tmp/strata-sqlserver), STRATA_SQLSERVER_PORT
# (TDS, default 23633; PostgreSQL's own protocol on the next port),
# STRATA_BABELFISH_BIN (default: the first of /opt/babelfish/bin,
# /usr/local/babelfish/bin, /usr/local/pgsql/bin whose library directory holds
# babelfishpg_tds.so).
set -euo pipefail
DIR=${STRATA_SQLSERVER_DIR:-/tmp/strata-sqlserver}
PORT=${STRATA_SQLSERVER_PORT:-23633}
PG_PORT=$((PORT + 1))
LOGIN=strata
PASSWORD=Strata-Test-1
DB=babelfish

bin_dir() {
    if [ -n "${STRATA_BABELFISH_BIN:-}" ]; then echo "$STRATA_BABELFISH_BIN"; return; fi
    local dir
    for dir in /opt/babelfish/bin /usr/local/babelfish/bin /usr/local/pgsql/bin; do
        if [ -x "$dir/pg_config" ] && [ -e "$("$dir/pg_config" --pkglibdir)/babelfishpg_tds.so" ]; then
            echo "$dir"; return
        fi
    done
    echo "no Babelfish build found (STRATA_BABELFISH_BIN): build it first, see tests/README.md" >&2
    exit 1
}

as_postgres() { su postgres -c "$1"; }

psql_on() { # database, sql
    as_postgres "$(bin_dir)/psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $PG_PORT -d $1 -c \"$2\"" >/dev/null
}

start() {
    local bin; bin=$(bin_dir)
    local data=$DIR/data
    mkdir -p "$DIR"; chown postgres "$DIR"
    if [ ! -d "$data" ]; then
        as_postgres "$bin/initdb -D $data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8" >/dev/null
        openssl req -new -x509 -days 30 -nodes -subj "/CN=127.0.0.1" \
            -keyout "$data/server.key" -out "$data/server.crt" >/dev/null 2>&1
        chown postgres "$data/server.key" "$data/server.crt"; chmod 600 "$data/server.key"
        cat >>"$data/postgresql.conf" <<EOF
shared_preload_libraries = 'babelfishpg_tds'
ssl = on
babelfishpg_tds.port = $PORT
babelfishpg_tds.listen_addresses = '127.0.0.1'
EOF
    fi
    as_postgres "$bin/pg_ctl -D $data -o '-c listen_addresses=127.0.0.1 -p $PG_PORT -k $DIR' -l $DIR/log -w start" >/dev/null
    if ! as_postgres "$bin/psql -X -qtA -h 127.0.0.1 -p $PG_PORT -d postgres -c \"select 1 from pg_database where datname = '$DB'\"" | grep -q 1; then
        psql_on postgres "create user $LOGIN with superuser createdb createrole password '$PASSWORD' inherit"
        psql_on postgres "create database $DB owner $LOGIN"
        # One session: the settings exist once the extension's library is loaded.
        as_postgres "$bin/psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $PG_PORT -d $DB" >/dev/null 2>&1 <<EOF
create extension if not exists babelfishpg_tds cascade;
grant all on schema sys to $LOGIN;
alter system set babelfishpg_tsql.database_name = '$DB';
alter database $DB set babelfishpg_tsql.migration_mode = 'multi-db';
select pg_reload_conf();
call sys.initialize_babelfish('$LOGIN');
EOF
    fi
    cat >"$DIR/env" <<EOF
export STRATA_TEST_SQLSERVER_URL='Server=tcp:127.0.0.1,$PORT;User Id=$LOGIN;Password=$PASSWORD;TrustServerCertificate=true'
export STRATA_TEST_SQLSERVER_PG_URL=postgres://$LOGIN:$PASSWORD@127.0.0.1:$PG_PORT/$DB
export STRATA_TEST_SQLSERVER_DATA=$data
export STRATA_TEST_SQLSERVER_BIN=$bin
EOF
    cat "$DIR/env"
}

stop() {
    if [ -d "$DIR/data" ]; then
        as_postgres "$(bin_dir)/pg_ctl -D $DIR/data -m fast stop" >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
