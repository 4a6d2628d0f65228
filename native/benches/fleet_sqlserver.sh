#!/usr/bin/env bash
# A fleet version on a SQL Server-compatible engine (issue 62): TENANTS
# tenants x 20 tenant migrations (a table, an index, 18 added columns) on the
# TDS server of STRATA_TEST_SQLSERVER_URL (`bash tests/sqlserver.sh start`:
# Babelfish for PostgreSQL with its defaults), side by side in one run:
#
#   floor    CONCURRENCY raw TDS sessions at once (python-tds), each sending
#            its share of the tenants: per tenant `set xact_abort on; begin
#            transaction`, each file as one request, `commit` — the same SQL
#            and transactions, no bookkeeping at all
#   strata   one `strata apply` (tenantConcurrency: CONCURRENCY, defaults
#            otherwise: checksums, svc_migrations rows, the application
#            lock, the drift read before and fingerprints after), its peak
#            RSS from /usr/bin/time
#   unread   the same without the catalog reads (`driftPolicy: off`,
#            `recordFingerprints: false`): the version alone
#
# Every tenant schema exists before each timed run (created, not timed).
# Printed per variant: the median of RUNS alternating runs, their spread in
# seconds, the ratio of medians to the floor's, the largest peak RSS in MB.
#
# Usage: source /tmp/strata-sqlserver/env; bash native/benches/fleet_sqlserver.sh
#   (TENANTS=500 RUNS=3 CONCURRENCY=4 STRATA_BIN=<a release strata>; needs
#    python-tds: pip install python-tds)
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-500}
CONCURRENCY=${CONCURRENCY:-4}
RUNS=${RUNS:-3}
: "${STRATA_TEST_SQLSERVER_URL:?run bash tests/sqlserver.sh start and source its env}"
python3 -c "import pytds" 2>/dev/null || { echo "python-tds is needed: pip install python-tds" >&2; exit 2; }
# shellcheck source=native/benches/fleet_lib.sh
source native/benches/fleet_lib.sh
if [ -z "${STRATA_BIN:-}" ]; then
    bench_build
    STRATA_BIN=$STRATA
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The migrations: a table, an index, 18 added columns.
mkdir -p "$work/m/ref" "$work/m/tenants"
echo "create table {schema}.items (id int identity(1, 1) primary key, name nvarchar(100) not null);" >"$work/m/tenants/001.sql"
echo "create index items_name on {schema}.items (name);" >"$work/m/tenants/002.sql"
for i in $(seq 3 20); do
    printf 'alter table {schema}.items add c%02d int null;\n' "$i" >"$work/m/tenants/$(printf '%03d' "$i").sql"
done

# One python-tds helper for both the set-up and the floor.
cat >"$work/tds.py" <<'PY'
import multiprocessing, os, re, sys
import pytds

def parse(ado):
    parts = dict(p.split("=", 1) for p in ado.split(";") if "=" in p)
    host, _, port = parts["Server"].removeprefix("tcp:").partition(",")
    return dict(server=host, port=int(port or 1433), user=parts["User Id"], password=parts["Password"])

def connect(database):
    return pytds.connect(database=database, autocommit=True, **parse(os.environ["STRATA_TEST_SQLSERVER_URL"]))

def fresh(database, tenants):
    with connect("master") as c:
        cur = c.cursor()
        cur.execute(f"if db_id('{database}') is not null drop database {database}")
        cur.execute(f"create database {database}")
    with connect(database) as c:
        cur = c.cursor()
        cur.execute("create table dbo.tenants (name nvarchar(128) primary key)")
        for i in range(1, tenants + 1):
            name = f"t{i:06d}"
            cur.execute(f"create schema {name}")
            cur.execute("insert into dbo.tenants (name) values (%s)", (name,))

def share(args):
    database, files, names = args
    with connect(database) as c:
        cur = c.cursor()
        for name in names:
            cur.execute("set xact_abort on; begin transaction;")
            for text in files:
                cur.execute(text.replace("{schema}", name))
            cur.execute("commit transaction;")

def floor(database, tenants, sessions, directory):
    files = [open(os.path.join(directory, f)).read() for f in sorted(os.listdir(directory))]
    names = [f"t{i:06d}" for i in range(1, tenants + 1)]
    shares = [(database, files, names[i::sessions]) for i in range(sessions)]
    with multiprocessing.Pool(sessions) as pool:
        pool.map(share, shares)

def count(database, sql):
    with connect(database) as c:
        cur = c.cursor()
        cur.execute(sql)
        print(cur.fetchone()[0])

command = sys.argv[1]
if command == "fresh":
    fresh(sys.argv[2], int(sys.argv[3]))
elif command == "floor":
    floor(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
elif command == "count":
    count(sys.argv[2], sys.argv[3])
PY

floor_run() { # -> seconds
    python3 "$work/tds.py" fresh floor_bench "$TENANTS"
    local start; start=$(now)
    python3 "$work/tds.py" floor floor_bench "$TENANTS" "$CONCURRENCY" "$work/m/tenants"
    local seconds; seconds=$(elapsed "$start")
    local columns
    columns=$(python3 "$work/tds.py" count floor_bench "select count(*) from sys.columns where name = 'c20'")
    [ "$columns" = "$TENANTS" ] || { echo "the floor made $columns c20 columns, not $TENANTS" >&2; exit 1; }
    echo "$seconds"
}

strata_run() { # [extra configuration] -> "seconds rss_kb"
    python3 "$work/tds.py" fresh strata_bench "$TENANTS"
    cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: sqlserver
dataSource: "$STRATA_TEST_SQLSERVER_URL;Database=strata_bench"
singleMigrations: [ref]
tenantMigrations: [tenants]
tenantSelectSQL: select name from dbo.tenants order by name
tenantInsertSQL: insert into dbo.tenants (name) values (@P1)
tenantConcurrency: $CONCURRENCY
logLevel: ERROR
${1:-}
YAML
    local start; start=$(now)
    /usr/bin/time -f "%M" -o "$work/rss" "$STRATA_BIN" --config "$work/svc.yaml" apply --version fleet >"$work/out.txt" 2>"$work/err"
    local seconds; seconds=$(elapsed "$start")
    local rows=$((TENANTS * 20))
    local recorded
    recorded=$(python3 "$work/tds.py" count strata_bench "select count(*) from svc.svc_migrations")
    [ "$recorded" = "$rows" ] || { echo "strata recorded $recorded rows, not $rows: $(tail -5 "$work/err")" >&2; exit 1; }
    echo "$seconds $(cat "$work/rss")"
}

"$STRATA_BIN" --version
python3 "$work/tds.py" count master "select @@version" | head -1
: >"$work/times"
for run in $(seq 1 "$RUNS"); do
    # Alternate which variant goes first.
    unread=$'driftPolicy: off\nrecordFingerprints: false'
    if [ $((run % 2)) = 1 ]; then
        echo "floor $(floor_run) 0" >>"$work/times"
        echo "strata $(strata_run)" >>"$work/times"
        echo "unread $(strata_run "$unread")" >>"$work/times"
    else
        echo "unread $(strata_run "$unread")" >>"$work/times"
        echo "strata $(strata_run)" >>"$work/times"
        echo "floor $(floor_run) 0" >>"$work/times"
    fi
done
printf '%-8s %-8s %6s %12s %16s %8s %8s\n' tenants variant runs median spread ratio "RSS MB"
floor=$(awk '$1 == "floor" { print $2 }' "$work/times" | median)
for variant in floor strata unread; do
    m=$(awk -v v="$variant" '$1 == v { print $2 }' "$work/times" | median)
    range=$(awk -v v="$variant" '$1 == v { print $2 }' "$work/times" | spread)
    rss=$(awk -v v="$variant" '$1 == v { print $3 }' "$work/times" | sort -n | tail -1)
    ratio=$(awk -v s="$m" -v f="$floor" 'BEGIN { printf "%.2f", s / f }')
    [ "$variant" = floor ] && rss=- || rss=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
    printf '%-8s %-8s %6s %12s %16s %8s %8s\n' "$TENANTS" "$variant" "$RUNS" "$m" "$range" "$ratio" "$rss"
done
