#!/usr/bin/env bash
# Adopting a fleet another tool migrated (docs/coming-from.md, "Adopting a
# fleet"): TENANTS tenant schemas on a PostgreSQL with default settings, each
# with dbmate's `schema_migrations` — every other tenant at all FILES files,
# the rest FILES-5 behind — and a dbmate directory of FILES files. Timed, in
# one run, ROUNDS times each:
#
#   plan        `strata plan` (an Apply's plan: no history read), the base
#   plan-sync   `strata plan --sync`: the same plan cut to each tenant's
#               history (one probe per 500 schemas, one read per 200)
#   adopt       `strata apply --sync`: the histories read and every row
#               recorded (the books emptied before each round, untimed)
#
# Printed per step: the median wall seconds, the spread, the largest peak
# RSS (from /usr/bin/time), and the rows recorded (checked against what the
# histories hold).
#
# Usage: bash native/benches/adopt_postgres.sh
#   (TENANTS=2000 FILES=20 ROUNDS=3 STRATA_BENCH_PG_URL=postgres://postgres@127.0.0.1:25330
#    STRATA_BIN=<a build of strata>; without it the release build is made first)
set -euo pipefail
TENANTS=${TENANTS:-2000}
FILES=${FILES:-20}
ROUNDS=${ROUNDS:-3}
SERVER=${STRATA_BENCH_PG_URL:-postgres://postgres@127.0.0.1:25330}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${STRATA_BIN:-}" ]; then
    cargo build --release --locked -q -p strata-server --manifest-path "$ROOT/Cargo.toml"
    STRATA_BIN=$(cargo metadata --format-version 1 --no-deps --manifest-path "$ROOT/Cargo.toml" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/strata
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=strata_adopt_bench
psql "$SERVER/postgres" -qX -v ON_ERROR_STOP=1 -c "drop database if exists $db" -c "create database $db"
url="$SERVER/$db"
mkdir -p "$work/m/tenants" "$work/m/ref"
for i in $(seq 1 "$FILES"); do
    v=$(printf '2024%010d' "$i")
    printf -- '-- migrate:up\ncreate table f%d (id int);\n\n-- migrate:down\ndrop table f%d;\n' "$i" "$i" \
        >"$work/m/tenants/${v}_f$i.sql"
done
# A thousand tenants a transaction (a default server's lock table holds no more).
for from in $(seq 1 1000 "$TENANTS"); do
    to=$((from + 999 < TENANTS ? from + 999 : TENANTS))
    psql "$url" -qX -v ON_ERROR_STOP=1 <<SQL
do \$\$
declare i int;
begin
  for i in $from..$to loop
    execute format('create schema t%s', lpad(i::text, 6, '0'));
    execute format('create table t%s.schema_migrations (version varchar(128) primary key)', lpad(i::text, 6, '0'));
    execute format('insert into t%s.schema_migrations select ''2024'' || lpad(v::text, 10, ''0'') '
                   'from generate_series(1, %s) v', lpad(i::text, 6, '0'),
                   case when i % 2 = 0 then $FILES else $FILES - 5 end);
  end loop;
end \$\$;
SQL
done
cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: $url
singleMigrations: [ref]
tenantMigrations: [tenants]
tenantSelectSQL: select nspname::text from pg_namespace where nspname ~ '^t[0-9]{6}$' order by 1
YAML
expected=$((TENANTS / 2 * FILES + (TENANTS - TENANTS / 2) * (FILES - 5)))
timed() { # name, then the command's arguments
    local name=$1
    shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$STRATA_BIN" --config "$work/svc.yaml" "$@" >"$work/out" 2>"$work/err" ||
        { cat "$work/err" >&2; exit 1; }
    read -r seconds kb <"$work/time"
    echo "$name $seconds $kb" >>"$work/times"
}
for round in $(seq 1 "$ROUNDS"); do
    psql "$url" -qX -c "set client_min_messages = warning" -c "drop schema if exists svc cascade" >/dev/null
    timed plan plan
    timed plan-sync plan --sync
    timed adopt apply --sync --version "adopt $round"
    rows=$(psql "$url" -AtX -c "select count(*) from svc.svc_migrations")
    [ "$rows" = "$expected" ] || { echo "round $round: $rows rows recorded, $expected expected" >&2; exit 1; }
done
echo "TENANTS=$TENANTS FILES=$FILES ROUNDS=$ROUNDS: $expected rows a round"
python3 - "$work/times" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, seconds, kb = line.split()
    runs.setdefault(name, []).append((float(seconds), int(kb)))
print(f"{'step':<10} {'median s':>9} {'spread s':>13} {'peak RSS MB':>12}")
for name, values in runs.items():
    seconds = [s for s, _ in values]
    print(f"{name:<10} {statistics.median(seconds):>9.2f} {min(seconds):>6.2f}–{max(seconds):<6.2f}"
          f" {max(kb for _, kb in values) / 1024:>12.1f}")
PY
[ -n "${KEEP:-}" ] || psql "$SERVER/postgres" -qX -c "drop database $db"
