#!/usr/bin/env bash
# Time to load N migration files from an S3-compatible store (moto's server,
# started by tests/servers.sh), side by side in one hyperfine run:
#
#   strata   `sourceMigrations` query to a running `strata` whose baseLocation is the bucket
#            (list + GETs with 32 requests in flight, checksums, ordering)
#   boto3    a Python loop with boto3 (moto's own client library): list + one GET after another
#
# Usage: bash native/benches/load_objects.sh   (N=2000 RUNS=10)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-2000}
RUNS=${RUNS:-10}
PORT=${PORT:-18951}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
export STRATA_SERVERS_DIR=/tmp/strata-bench-objects
export STRATA_PG_PORT=27329 STRATA_MYSQL_PORT=27429 STRATA_S3_PORT=27529 STRATA_AZURITE_PORT=27629

command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
cargo build --release -p strata-server --quiet
work=$(mktemp -d)
cleanup() {
    [ -n "${strata_pid:-}" ] && kill "$strata_pid" 2>/dev/null || true
    bash tests/servers.sh stop
    rm -rf "$work"
}
trap cleanup EXIT
bash tests/servers.sh start >/dev/null
source "$STRATA_SERVERS_DIR/env"
ENDPOINT=$STRATA_TEST_S3_ENDPOINT
export AWS_ENDPOINT_URL=$ENDPOINT AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1

"$STRATA_TEST_PYTHON" - "$ENDPOINT" "$N" <<'PY'
import sys, boto3
from concurrent.futures import ThreadPoolExecutor
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id="testing", aws_secret_access_key="testing")
s3.create_bucket(Bucket="bench")
n = int(sys.argv[2])
with ThreadPoolExecutor(32) as pool:
    list(pool.map(lambda i: s3.put_object(Bucket="bench", Key=f"app/{i:05}.sql",
                                          Body=f"create table t{i} (id integer);".encode()), range(n)))
PY

cat >"$work/peer.py" <<'PY'
import sys, hashlib, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id="testing", aws_secret_access_key="testing")
keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix="app/", Delimiter="/")
        for o in page.get("Contents", [])]
digests = [hashlib.sha256(s3.get_object(Bucket="bench", Key=k)["Body"].read()).hexdigest() for k in keys]
assert len(digests) == int(sys.argv[2]), len(digests)
PY

cat >"$work/svc.yaml" <<YAML
baseLocation: s3://bench
driver: sqlite
dataSource: sqlite://$work/db/main.db?mode=rwc
singleMigrations: [app]
port: $PORT
logLevel: ERROR
YAML
SVC_YAML="$work/svc.yaml" "$CARGO_TARGET_DIR/release/strata" >"$work/strata.log" 2>&1 &
strata_pid=$!
until curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"; do sleep 0.05; done

query='{"query":"{ sourceMigrations { checkSum } }"}'
hyperfine --warmup 1 --runs "$RUNS" --export-markdown "$work/result.md" \
    -n strata "test \$(curl -sf http://127.0.0.1:$PORT/v2/service -H 'Content-Type: application/json' -d '$query' | grep -o checkSum | wc -l) = $N" \
    -n boto3 "$STRATA_TEST_PYTHON $work/peer.py $ENDPOINT $N"
cat "$work/result.md"
