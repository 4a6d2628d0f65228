#!/usr/bin/env bash
# What authentication costs, in one run:
#
#   1. one small request (`{ identity { actor } }`), 2,000 times in a row
#      after a warm-up, to a release `strata` on SQLite: without auth, with
#      an API token, with a JWT of a real OpenID Provider (npm oidc-provider,
#      tests/oidc/provider.mjs; its keys cached after the first request):
#      p50 and p99 (native/benches/auth_latency.mjs);
#   2. one createVersion over TENANTS tenants (5 tenant migrations each) on
#      the PostgreSQL with default settings of tests/servers.sh, without auth
#      and with a token (one authentication and one audit row more).
#
# Usage: bash native/benches/auth.sh   (TENANTS=1000 N=2000 RUNS=3)
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${TENANTS:-1000}
PORT=${PORT:-18961}
OP_PORT=${OP_PORT:-18962}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export STRATA_SERVERS_DIR=/tmp/strata-auth-bench
export STRATA_PG_PORT=25329 STRATA_PG_DEFAULT_PORT=25330 STRATA_MYSQL_PORT=25429 STRATA_S3_PORT=25529 STRATA_AZURITE_PORT=25629
EMU=${STRATA_EMULATORS_CACHE:-$HOME/.cache/strata-emulators}

cargo build --release -p strata-server --quiet
STRATA="$CARGO_TARGET_DIR/release/strata"
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    bash tests/servers.sh stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
bash tests/servers.sh start >/dev/null

serve() { # config
    SVC_YAML="$1" "$STRATA" >"$1.log" 2>&1 &
    pids+=($!)
    until curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"; do sleep 0.05; done
}
stop_last() { kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'; }

# 1. Latency.
node tests/oidc/provider.mjs keygen "$work/keys.json" "$work/key.pem" >/dev/null
node tests/oidc/provider.mjs serve "$EMU/node_modules" "$OP_PORT" "$work/keys.json" >/dev/null 2>&1 &
pids+=($!)
until curl -sf -o /dev/null "http://127.0.0.1:$OP_PORT/.well-known/openid-configuration"; do sleep 0.05; done
mkdir -p "$work/m/ref" "$work/m/tenants"
echo "create table {schema}.one (id int);" >"$work/m/ref/001.sql"
base="baseLocation: $work/m
driver: sqlite
singleMigrations: [ref]
tenantMigrations: [tenants]
port: $PORT
logLevel: ERROR"
printf '%s\ndataSource: sqlite://%s/a/main.db?mode=rwc\n' "$base" "$work" >"$work/none.yaml"
mkdir -p "$work/a" "$work/b"
printf '%s\ndataSource: sqlite://%s/b/main.db?mode=rwc\nauth:\n  tokens: true\n  oidc:\n    issuer: http://127.0.0.1:%s\n    audience: https://strata.example/api\n    roles: { dba: admin }\n' \
    "$base" "$work" "$OP_PORT" >"$work/auth.yaml"
url="http://127.0.0.1:$PORT/v2/service"
serve "$work/none.yaml"
node native/benches/auth_latency.mjs "no auth" "$url"
stop_last
serve "$work/auth.yaml"
token=$("$STRATA" --config "$work/auth.yaml" token create --name bench --role viewer)
node native/benches/auth_latency.mjs "API token" "$url" "$token"
jwt=$(curl -s -X POST "http://127.0.0.1:$OP_PORT/token" -d grant_type=client_credentials -d client_id=alice \
    -d client_secret=alice-secret -d scope=api | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
node native/benches/auth_latency.mjs "OIDC JWT (RS256, warm key cache)" "$url" "$jwt"
stop_last

# 2. A version over the fleet, with and without.
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$STRATA_PG_DEFAULT_PORT" -U postgres)
rm -rf "$work/m/tenants" && mkdir -p "$work/m/tenants"
echo "create schema {schema};" >"$work/m/ref/001.sql"
for n in 1 2 3 4 5; do echo "create table {schema}.t$n (id serial primary key, v text);" >"$work/m/tenants/00$n.sql"; done
now() { date +%s.%N; }
fleet() { # label auth-lines bearer
    local db="auth_$RANDOM"
    "${PSQL[@]}" -d postgres -c "create database $db" >/dev/null
    "${PSQL[@]}" -d "$db" -c "do \$\$ begin for i in 1..$TENANTS loop
        execute format('create schema %I', 't' || lpad(i::text, 5, '0')); end loop; end \$\$" >/dev/null
    printf 'baseLocation: %s/m\ndriver: postgres\ndataSource: postgres://postgres@127.0.0.1:%s/%s\nsingleMigrations: [ref]\ntenantMigrations: [tenants]\nport: %s\nlogLevel: ERROR\n%s\n' \
        "$work" "$STRATA_PG_DEFAULT_PORT" "$db" "$PORT" "$2" >"$work/fleet.yaml"
    serve "$work/fleet.yaml"
    "${PSQL[@]}" -d "$db" -c "insert into svc.svc_tenants (name) select 't' || lpad(i::text, 5, '0') from generate_series(1, $TENANTS) i" >/dev/null
    local header=()
    if [ -n "$3" ]; then header=(-H "Authorization: Bearer $("$STRATA" --config "$work/fleet.yaml" token create --name ci --role deployer)"); fi
    # A checkpoint first: what the database still has to write from the
    # last run varies more than authentication costs.
    "${PSQL[@]}" -d postgres -c checkpoint >/dev/null
    local start; start=$(now)
    out=$(curl -s "$url" -H 'Content-Type: application/json' "${header[@]}" \
        -d '{"query":"mutation { createVersion(input: {versionName: \"fleet\"}) { summary { tenantMigrationsTotal } } }"}')
    local seconds; seconds=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
    if echo "$out" | grep -q "\"tenantMigrationsTotal\":$((TENANTS * 5))"; then
        echo "$1: createVersion over $TENANTS tenants x 5 migrations: $seconds s"
    else
        echo "$1: FAILED after $seconds s: $(echo "$out" | head -c 300)"
    fi
    stop_last
    "${PSQL[@]}" -d postgres -c "drop database $db with (force)" >/dev/null
}
# Alternated, RUNS times each: one run's database and checkpoint timing
# varies more than authentication costs.
for run in $(seq 1 "${RUNS:-3}"); do
    fleet "no auth (run $run)" "" ""
    fleet "API token (run $run)" "auth: { tokens: true }" yes
done
