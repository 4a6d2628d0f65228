#!/usr/bin/env bash
# Desired state on a MariaDB with its default settings, started here:
# TENANTS tenant databases x TABLES tables (a key, an index and a foreign
# key each, made by the `mariadb` client, not timed), 3 tenants with an
# index dropped by hand and 2 with an extra column; the desired file is
# those tables plus one more. Then, in one run:
#
#   diff   `strata diff --desired FILE --json` over the fleet (each tenant's
#          catalog one query, every lookup naming its database): time and
#          peak RSS, the groups it found (exactly 3 expected)
#   drift  `strata drift` over the same fleet, for scale
#
# Run it at two sizes to see the time grow with the fleet, not its square.
#
# Usage: bash native/benches/desired_mariadb.sh   (TENANTS=2000 TABLES=10 PORT=26500)
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-2000}
TABLES=${TABLES:-10}
PORT=${PORT:-26500}
# shellcheck source=native/benches/fleet_lib.sh
source native/benches/fleet_lib.sh
bench_build
work=$(mktemp -d)
trap 'bench_mariadb_stop "$work/mariadb"; rm -rf "$work"' EXIT
MARIADB=(mariadb --no-defaults -uroot -h127.0.0.1 -P"$PORT" --batch --skip-column-names)
bench_mariadb_start "$work/mariadb" "$PORT"

mkdir -p "$work/m/ref" "$work/m/tenants"
: >"$work/desired.sql"
for n in $(seq -f '%02g' 1 "$TABLES"); do
    printf 'create table {schema}.t%s (id int auto_increment primary key, v varchar(100) not null default %s, parent int, constraint t%s_parent foreign key (parent) references {schema}.t%s (id)) engine = InnoDB;\ncreate index t%s_v on {schema}.t%s (v);\n' \
        "$n" "'x'" "$n" "$n" "$n" "$n" >>"$work/desired.sql"
done
cp "$work/desired.sql" "$work/tenant.sql"
echo 'create table {schema}.notes (id bigint primary key, body text not null) engine = InnoDB;' >>"$work/desired.sql"
tenant_names() { seq -f 't%05g' 1 "$TENANTS"; }
start=$(now)
{
    echo "create database fleet; create table fleet.tenants (name varchar(64) primary key);"
    for t in $(tenant_names); do
        echo "create database $t; insert into fleet.tenants values ('$t');"
        sed "s/{schema}/$t/g" "$work/tenant.sql"
    done
} | "${MARIADB[@]}"
echo "made $TENANTS databases x $TABLES tables in $(elapsed "$start") s (mariadb client)"
for t in t00003 t00017 t00029; do "${MARIADB[@]}" -e "drop index t01_v on $t.t01"; done
for t in t00008 t00041; do "${MARIADB[@]}" -e "alter table $t.t02 add column nickname text"; done
cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: mysql
dataSource: mysql://root@127.0.0.1:$PORT/fleet
singleMigrations: [ref]
tenantMigrations: [tenants]
tenantSelectSQL: select name from fleet.tenants order by name
tenantInsertSQL: insert into fleet.tenants (name) values (?)
logLevel: ERROR
YAML

bench_desired_runs
