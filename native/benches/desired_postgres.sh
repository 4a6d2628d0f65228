#!/usr/bin/env bash
# Desired state on a PostgreSQL with default settings (the second cluster of
# tests/servers.sh): TENANTS tenants x MIGRATIONS tenant migrations (a table
# with a serial key, an index and a foreign key each), 3 tenants with an
# index dropped by hand and 2 with an extra column; the desired file is the
# migrations plus one table. Then, in one run:
#
#   diff        `strata diff --desired FILE --json` over the fleet: time and
#               peak RSS, the groups it found (exactly 3 expected)
#   drift       `strata drift` over the same fleet, for scale
#   per tenant  the same catalog query asked once per tenant (TENANTS
#               queries, one session), as a tool that inspects one database
#               or schema at a time does, against the batched reads `diff`
#               makes (250 schemas a query)
#
# Usage: bash native/benches/desired_postgres.sh   (TENANTS=2000 MIGRATIONS=10)
# Uses the servers of `bash tests/servers.sh start` when they run
# ($STRATA_SERVERS_DIR, default /tmp/strata-servers), else starts them.
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-2000}
MIGRATIONS=${MIGRATIONS:-10}
# shellcheck source=native/benches/fleet_lib.sh
source native/benches/fleet_lib.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export STRATA_SERVERS_DIR="${STRATA_SERVERS_DIR:-/tmp/strata-servers}"

cargo build --release -p strata-server --quiet
STRATA="$CARGO_TARGET_DIR/release/strata"
work=$(mktemp -d)
cleanup() {
    [ -n "${started:-}" ] && bash tests/servers.sh stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
if [ ! -f "$STRATA_SERVERS_DIR/env" ]; then
    started=1
    bash tests/servers.sh start >/dev/null
fi
# shellcheck disable=SC1091
source "$STRATA_SERVERS_DIR/env"
pg_port=${STRATA_TEST_PG_DEFAULT_URL##*:}
pg_port=${pg_port%%/*}
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U postgres)
"${PSQL[@]}" -d postgres -Atc "select 'PostgreSQL ' || current_setting('server_version') || ', max_connections=' || current_setting('max_connections')"

mkdir -p "$work/m/ref" "$work/m/tenants"
echo "create schema {schema};" >"$work/m/ref/001.sql"
: >"$work/desired.sql"
for n in $(seq -f '%02g' 1 "$MIGRATIONS"); do
    printf 'create table {schema}.t%s (id serial primary key, v text not null default %s, parent int references {schema}.t%s (id));\ncreate index {schema}_t%s_v on {schema}.t%s (v);\n' \
        "$n" "'x'" "$n" "$n" "$n" | tee -a "$work/desired.sql" >"$work/m/tenants/$n.sql"
done
echo 'create table {schema}.notes (id bigint primary key, body text not null);' >>"$work/desired.sql"
db=desired_bench
"${PSQL[@]}" -d postgres -c "drop database if exists $db with (force)" -c "create database $db" >/dev/null
"${PSQL[@]}" -d "$db" -c "do \$\$ begin for i in 1..$TENANTS loop
    execute format('create schema %I', 't' || lpad(i::text, 5, '0')); end loop; end \$\$" >/dev/null
cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: postgres://postgres@127.0.0.1:$pg_port/$db
singleMigrations: [ref]
tenantMigrations: [tenants]
logLevel: ERROR
YAML
"$STRATA" --config "$work/svc.yaml" apply --version setup >/dev/null 2>&1 || true # creates the service's tables
"${PSQL[@]}" -d "$db" -c "insert into svc.svc_tenants (name) select 't' || lpad(i::text, 5, '0') from generate_series(1, $TENANTS) i on conflict do nothing" >/dev/null
start=$(now)
"$STRATA" --config "$work/svc.yaml" apply --version fleet >/dev/null
echo "version: $TENANTS tenants x $MIGRATIONS migrations in $(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s"
for t in t00003 t00017 t00029; do "${PSQL[@]}" -d "$db" -c "drop index $t.${t}_t01_v" >/dev/null; done
for t in t00008 t00041; do "${PSQL[@]}" -d "$db" -c "alter table $t.t02 add column nickname text" >/dev/null; done

bench_desired_runs

# One catalog query per tenant (as per-database inspection reads), against
# the batched query diff uses: the same SQL, read from the binary's source.
catalogs=$(python3 - <<'PY'
import re
text = open("native/src/db/postgres/sql.rs").read()
body = text[text.index('pub(crate) const CATALOGS: &str = "') + len('pub(crate) const CATALOGS: &str = "'):]
body = body[:body.index('";')]
print(body.replace("\\\n", "").replace('\\"', '"'))
PY
)
for i in $(seq 1 "$TENANTS"); do
    one=$(printf "array['t%05d']" "$i")
    printf "select count(*) from (%s) c;\n" "${catalogs//\$1/$one}"
done >"$work/per_tenant.sql"
for i in $(seq 1 250 "$TENANTS"); do
    list="array[$(seq -f "'t%05g'" "$i" $((i + 249 > TENANTS ? TENANTS : i + 249)) | paste -sd,)]"
    printf "select count(*) from (%s) c;\n" "${catalogs//\$1/$list}"
done >"$work/batched.sql"
bench_timed "catalogs one tenant a query ($TENANTS queries)" "${PSQL[@]}" -d "$db" -f "$work/per_tenant.sql"
bench_timed "catalogs 250 tenants a query ($(wc -l <"$work/batched.sql") queries)" "${PSQL[@]}" -d "$db" -f "$work/batched.sql"
"${PSQL[@]}" -d postgres -c "drop database $db with (force)" >/dev/null
