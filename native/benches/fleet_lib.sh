# Shared by the benchmarks (sourced, not run): the default-settings
# PostgreSQL and MariaDB they measure on, the fleet's 20 files, making a
# fleet's schemas, timing a command.

# Sets STRATA_BENCH_PG_URL: as given, or the default-settings cluster of
# tests/servers.sh started in SERVERS_DIR on ports from BASE (PostgreSQL
# BASE and BASE+1, its PgBouncers BASE+11 and +12; MariaDB BASE+100, moto
# +200, Azurite +300: keep BASE below 32768, clear of the ephemeral ports
# of the machine's own connections, and of the tests' blocks); `bench_servers_stop`
# stops what was started.
bench_servers_start() { # SERVERS_DIR BASE
    if [ -n "${STRATA_BENCH_PG_URL:-}" ]; then
        return
    fi
    export STRATA_SERVERS_DIR=$1
    export STRATA_PG_PORT=$2 STRATA_PG_DEFAULT_PORT=$(($2 + 1)) STRATA_MYSQL_PORT=$(($2 + 100)) \
        STRATA_S3_PORT=$(($2 + 200)) STRATA_AZURITE_PORT=$(($2 + 300))
    STRATA_BENCH_PG_URL=postgres://postgres@127.0.0.1:$STRATA_PG_DEFAULT_PORT
    # tests/servers.sh's stock PgBouncers in front of that cluster.
    STRATA_BENCH_PGBOUNCER_TRANSACTION_URL=postgres://postgres@127.0.0.1:$(($2 + 11))
    STRATA_BENCH_PGBOUNCER_SESSION_URL=postgres://postgres@127.0.0.1:$(($2 + 12))
    bench_started_servers=1
    bash tests/servers.sh start >/dev/null
}
bench_servers_stop() {
    [ -z "${bench_started_servers:-}" ] || bash tests/servers.sh stop >/dev/null 2>&1 || true
}

# The fleet's files in DIR: `ref/001.sql` (the schema, if missing) and 20
# tenant migrations — a table with an identity key, an index, 18 added columns.
fleet_migrations() { # DIR
    mkdir -p "$1/tenants" "$1/ref"
    echo "create schema if not exists {schema};" >"$1/ref/001.sql"
    printf 'create table {schema}.items (id bigint generated always as identity primary key, name text not null);\n' >"$1/tenants/001_items.sql"
    printf 'create index items_name on {schema}.items (name);\n' >"$1/tenants/002_items_name.sql"
    local n
    for n in $(seq 3 20); do
        printf 'alter table {schema}.items add column c%02d text;\n' "$n" >"$1/tenants/$(printf %03d "$n")_c$n.sql"
    done
}

# Schemas t000001..tN in DATABASE_URL, made in batches of 1,000 (one
# transaction would need a lock per schema at once).
fleet_schemas() { # DATABASE_URL N
    local from=1
    while [ "$from" -le "$2" ]; do
        psql -X -q -v ON_ERROR_STOP=1 "$1" -c "do \$\$ begin for i in $from..$((from + 999 < $2 ? from + 999 : $2)) loop
            execute format('create schema %I', 't' || lpad(i::text, 6, '0')); end loop; end \$\$" >/dev/null
        from=$((from + 1000))
    done
}

# Builds the release `strata` and sets STRATA to it.
bench_build() {
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
    cargo build --release -p strata-server --quiet
    STRATA="$CARGO_TARGET_DIR/release/strata"
}

# Builds `strata`, makes the work directory `work` (removed on exit, with
# the servers bench_servers_start started) and PSQL, how psql is run.
bench_setup() { # SERVERS_DIR BASE
    bench_build
    work=$(mktemp -d)
    trap 'bench_servers_stop; rm -rf "$work"' EXIT
    bench_servers_start "$1" "$2"
    PSQL=(psql -X -q -v ON_ERROR_STOP=1)
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }

# Runs FILES.0 … FILES.(N-1) through N psql sessions on URL at once; prints
# the seconds they took together.
bench_sessions() { # URL FILES N
    local start pids=() s
    start=$(now)
    for s in $(seq 0 $(($3 - 1))); do
        "${PSQL[@]}" "$1" -f "$2.$s" >/dev/null &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    elapsed "$start"
}

# Runs a command, its output in $work/out and $work/err; prints LABEL, the
# seconds and the peak RSS; stops the bench when it exits other than 0 or
# 10 (`--check`'s and drift's "differs").
bench_timed() { # LABEL COMMAND...
    local label=$1 start code
    shift
    start=$(now)
    set +e
    /usr/bin/time -f '%M' -o "$work/rss" "$@" >"$work/out" 2>"$work/err"
    code=$?
    set -e
    echo "$label: $(elapsed "$start") s, peak RSS $(tail -1 "$work/rss" | awk '{ printf "%.0f", $1 / 1024 }') MB, exit $code"
    [ "$code" -eq 0 ] || [ "$code" -eq 10 ] || { cat "$work/err" >&2; exit 1; }
}

# desired_*.sh: `diff --desired` of $work/desired.sql over $work/svc.yaml's
# fleet three times, the groups it found (exactly 3 expected), then `drift`
# over the same fleet for scale.
bench_desired_runs() {
    local run
    for run in 1 2 3; do
        bench_timed "diff --desired, run $run" "$STRATA" --config "$work/svc.yaml" diff --desired "$work/desired.sql" --json
    done
    python3 - "$work/out" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
sizes = [len(g["tenants"]) for g in report["groups"]]
print(f"groups: {sizes} (tenants {report['tenants']}, differing {report['differing']})")
assert len(sizes) == 3, sizes
PY
    bench_timed "drift" "$STRATA" --config "$work/svc.yaml" drift
}

# A MariaDB with its default settings in DIR, listening on 127.0.0.1:PORT
# (but for where it listens and its own tmpdir: a MariaDB starting removes
# every `#sql*` file in its tmpdir); stopped by `bench_mariadb_stop DIR`.
# Prints its version and durability settings.
bench_mariadb_start() { # DIR PORT
    mkdir -p "$1/tmp"
    mariadb-install-db --no-defaults --user=root --datadir="$1/data" --auth-root-authentication-method=normal >/dev/null
    mariadbd --no-defaults --user=root --datadir="$1/data" --bind-address=127.0.0.1 --port="$2" \
        --socket="$1/sock" --pid-file="$1/pid" --tmpdir="$1/tmp" >"$1/log" 2>&1 &
    local client=(mariadb --no-defaults -uroot -h127.0.0.1 -P"$2" --batch --skip-column-names)
    for _ in $(seq 1 100); do
        "${client[@]}" -e 'select 1' >/dev/null 2>&1 && break
        sleep 0.2
    done
    "${client[@]}" -e "select concat(version(), ': innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit, \
        ' sync_binlog=', @@sync_binlog, ' max_connections=', @@max_connections)"
}
bench_mariadb_stop() { # DIR
    [ ! -f "$1/pid" ] || kill "$(cat "$1/pid")" 2>/dev/null || true
    sleep 1
}
