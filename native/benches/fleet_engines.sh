#!/usr/bin/env bash
# fleet_scale.sh's comparison on the other engines (issue 41): TENANTS tenants
# x 20 tenant migrations (a table, an index, 18 added columns), Strata beside
# the engine's own floor, in one run, alternating rounds:
#
#   mariadb  a MariaDB started here with its default settings
#            (innodb_flush_log_at_trx_commit=1, fsync on). Floor: CONCURRENCY
#            `mariadb` client sessions at once, each sending its share of
#            the tenants' statements (MariaDB's DDL commits itself: no
#            transaction to wrap them in). Strata: `tenantConcurrency:
#            CONCURRENCY`, defaults otherwise — each file recorded right after
#            it ran, as on any engine without transactional DDL.
#   sqlite   one writer. Floor: one `sqlite3` session attaching each tenant's
#            file, one transaction per tenant. Strata: its defaults on SQLite
#            (one connection; each tenant a database file attached for its
#            unit).
#
# A third variant, `recorded`, is the floor plus a row per file written as
# Strata must write it to know what ran — the price of the bookkeeping itself,
# apart from Strata's own work: on MariaDB an insert committed right after
# each file's statement (a file's DDL commits itself, so its record cannot
# share its transaction), on SQLite the tenant's rows inserted into a table in
# its own file within its transaction.
#
# Every tenant schema (MariaDB database, SQLite file) exists before each timed
# run (created, not timed). Printed per engine and variant: the median of RUNS
# runs and their spread in seconds, the ratio of medians to the floor's, and
# Strata's largest peak RSS in MB (/usr/bin/time).
#
# Usage: bash native/benches/fleet_engines.sh
#   (ENGINES="mariadb sqlite" TENANTS=2000 RUNS=3 CONCURRENCY=4
#    VARIANTS="floor recorded strata" MARIADB_PORT=23999; the variant `lean`
#    is Strata with `driftPolicy: off` and `recordFingerprints: false`;
#    STRATA_BIN=… skips the release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
ENGINES=${ENGINES:-mariadb sqlite}
TENANTS=${TENANTS:-2000}
RUNS=${RUNS:-3}
CONCURRENCY=${CONCURRENCY:-4}
VARIANTS=${VARIANTS:-floor recorded strata}
MARIADB_PORT=${MARIADB_PORT:-23999}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
if [ -z "${STRATA_BIN:-}" ]; then
    cargo build --release -p strata-server --quiet
fi
STRATA=${STRATA_BIN:-$CARGO_TARGET_DIR/release/strata}
work=$(mktemp -d)
# shellcheck source=native/benches/fleet_lib.sh
source native/benches/fleet_lib.sh
trap 'bench_mariadb_stop "$work/mariadb"; rm -rf "$work"' EXIT

tenant_names() { seq -f "t%06g" 1 "$TENANTS"; }

# The migrations, per engine's types.
migrations() { # dir id-column
    mkdir -p "$1/tenants" "$1/ref"
    printf 'create table {schema}.items (%s, name varchar(100) not null);\n' "$2" >"$1/tenants/001_items.sql"
    printf 'create index items_name on {schema}.items (name);\n' >"$1/tenants/002_items_name.sql"
    for n in $(seq 3 20); do
        printf 'alter table {schema}.items add column c%02d text;\n' "$n" >"$1/tenants/$(printf %03d "$n")_c$n.sql"
    done
}
migrations "$work/m-mariadb" "id bigint auto_increment primary key"
# SQLite qualifies an index by its schema and names the table bare.
migrations "$work/m-sqlite" "id integer primary key"
printf 'create index {schema}.items_name on items (name);\n' >"$work/m-sqlite/tenants/002_items_name.sql"

# --- MariaDB -----------------------------------------------------------------
MARIADB=(mariadb --no-defaults -uroot -h127.0.0.1 -P"$MARIADB_PORT" --batch --skip-column-names)
start_mariadb() { bench_mariadb_start "$work/mariadb" "$MARIADB_PORT"; }
mariadb_fresh() { # the tenants' databases and the tenant table, nothing else
    local sql="$work/fresh.sql"
    {
        echo "drop database if exists svc; drop database if exists fleet; create database fleet;"
        echo "create table fleet.tenants (name varchar(64) primary key);"
        echo "create table fleet.records (id bigint auto_increment primary key, db_schema varchar(64) not null,"
        echo "  filename varchar(255) not null, contents text not null, created datetime not null);"
        tenant_names | sed 's/.*/drop database if exists &; create database &; insert into fleet.tenants values ("&");/'
    } >"$sql"
    "${MARIADB[@]}" <"$sql"
    sync # the dropped databases' unlinking reaches the disk before the timed run
}
mariadb_floor() { # [recorded]
    mariadb_fresh
    # The sessions' scripts, written once per variant (not timed).
    local kind=${1:-bare} i=0 t f
    if [ ! -e "$work/mariadb-$kind.0" ]; then
        for t in $(tenant_names); do
            if [ "$kind" = recorded ]; then
                for f in "$work"/m-mariadb/tenants/*.sql; do
                    sed "s/{schema}/$t/g" "$f"
                    printf "insert into fleet.records (db_schema, filename, contents, created) values ('%s', '%s', '%s', now());\n" \
                        "$t" "$(basename "$f")" "$(sed "s/'/''/g" "$f")"
                done >>"$work/mariadb-$kind.$((i % CONCURRENCY))"
            else
                sed "s/{schema}/$t/g" "$work"/m-mariadb/tenants/*.sql >>"$work/mariadb-$kind.$((i % CONCURRENCY))"
            fi
            i=$((i + 1))
        done
    fi
    local start pids=()
    start=$(now)
    for s in $(seq 0 $((CONCURRENCY - 1))); do
        "${MARIADB[@]}" fleet <"$work/mariadb-$kind.$s" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    elapsed "$start"
}
mariadb_strata() { # [lean]
    mariadb_fresh
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m-mariadb
driver: mysql
singleMigrations: [ref]
dataSource: mysql://root@127.0.0.1:$MARIADB_PORT/fleet
tenantMigrations: [tenants]
tenantSelectSQL: select name from fleet.tenants order by name
tenantInsertSQL: insert into fleet.tenants (name) values (?)
tenantConcurrency: $CONCURRENCY
logLevel: ERROR
$(lean_settings "${1:-}")
YAML
    strata_timed
    local rows
    rows=$("${MARIADB[@]}" -e "select count(*) from svc.svc_migrations")
    [ "$rows" = $((TENANTS * 20)) ] || { echo "strata recorded $rows rows, not $((TENANTS * 20))" >&2; exit 1; }
}

# --- SQLite ------------------------------------------------------------------
sqlite_fresh() {
    rm -rf "$work/sqlite" && mkdir -p "$work/sqlite"
    {
        echo "create table tenants (name text primary key);"
        echo "begin;"
        tenant_names | sed "s/.*/insert into tenants values ('&');/"
        echo "commit;"
    } | sqlite3 "$work/sqlite/main.db"
    # Each tenant's file, empty but existing (as the schemas elsewhere): one
    # made by sqlite3, copied (a sqlite3 process per tenant took longer than
    # the timed run).
    sqlite3 "$work/sqlite/empty.db" 'pragma user_version = 0'
    for t in $(tenant_names); do cp "$work/sqlite/empty.db" "$work/sqlite/$t.db"; done
    rm "$work/sqlite/empty.db"
    sync
}
sqlite_floor() { # [recorded]
    sqlite_fresh
    # The session's script, written once per variant (not timed).
    local t f script="$work/sqlite-${1:-bare}.sql"
    [ -e "$script" ] || for t in $(tenant_names); do
        {
            echo "attach '$work/sqlite/$t.db' as $t;"
            echo "begin;"
            sed "s/{schema}/$t/g" "$work"/m-sqlite/tenants/*.sql
            if [ "${1:-}" = recorded ]; then
                echo "create table $t.records (filename text not null, contents text not null, created text not null);"
                for f in "$work"/m-sqlite/tenants/*.sql; do
                    printf "insert into %s.records values ('%s', '%s', datetime());\n" \
                        "$t" "$(basename "$f")" "$(sed "s/'/''/g" "$f")"
                done
            fi
            echo "commit;"
            echo "detach $t;"
        } >>"$script"
    done
    local start
    start=$(now)
    sqlite3 -bail "$work/sqlite/main.db" <"$script"
    elapsed "$start"
}
sqlite_strata() { # [lean]
    sqlite_fresh
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m-sqlite
driver: sqlite
singleMigrations: [ref]
dataSource: sqlite://$work/sqlite/main.db?mode=rwc
tenantMigrations: [tenants]
tenantSelectSQL: select name from tenants order by name
tenantInsertSQL: insert into tenants (name) values (?)
logLevel: ERROR
$(lean_settings "${1:-}")
YAML
    strata_timed
    local rows
    rows=$(sqlite3 "$work/sqlite/svc.db" "select count(*) from svc_migrations")
    [ "$rows" = $((TENANTS * 20)) ] || { echo "strata recorded $rows rows, not $((TENANTS * 20))" >&2; exit 1; }
}

# The `lean` variant: Strata without the checks around the units (drift read
# before, fingerprints stored after), to tell their time from the units'.
lean_settings() { [ "$1" != lean ] || printf 'driftPolicy: off\nrecordFingerprints: false'; }

strata_timed() { # -> "seconds rss_kb" of `strata apply` over $work/svc.yaml
    local start
    start=$(now)
    if ! /usr/bin/time -f "%M" -o "$work/rss" "$STRATA" --config "$work/svc.yaml" apply --version fleet >"$work/out" 2>"$work/err"; then
        echo "strata FAILED: $(tail -5 "$work/out") $(tail -5 "$work/err")" >&2
        exit 1
    fi
    echo "$(elapsed "$start") $(cat "$work/rss")" >"$work/last"
}

printf '%-8s %-8s %8s %6s %10s %14s %7s %7s\n' engine tenants run runs median spread ratio "RSS MB"
for engine in $ENGINES; do
    [ "$engine" != mariadb ] || start_mariadb
    : >"$work/times"
    for run in $(seq 1 "$RUNS"); do
        # Alternate the order of the variants.
        read -r -a order <<<"$VARIANTS"
        [ $((run % 2)) = 0 ] && read -r -a order <<<"$(echo "$VARIANTS" | tr ' ' '\n' | tac | tr '\n' ' ')"
        for variant in "${order[@]}"; do
            case "$variant" in
                floor) echo "floor $("${engine}_floor") 0" >>"$work/times" ;;
                recorded) echo "recorded $("${engine}_floor" recorded) 0" >>"$work/times" ;;
                strata | lean)
                    "${engine}_strata" "$variant"
                    echo "$variant $(cat "$work/last")" >>"$work/times"
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
        [ "$variant" = strata ] || [ "$variant" = lean ] && rss=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }') || rss=-
        printf '%-8s %-8s %8s %6s %10s %14s %7s %7s\n' "$engine" "$TENANTS" "$variant" "$RUNS" "$m" "$range" "$ratio" "$rss"
    done
done
