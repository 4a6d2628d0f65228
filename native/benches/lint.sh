#!/usr/bin/env bash
# The migration linter side by side with Squawk (PyPI's squawk-cli, the
# reference PostgreSQL linter) on the same files: tests/data/lint/postgres
# copied COPIES times (16 files each, 320 by default), each linted on its
# own (`strata lint --all`). Prints wall seconds (best of RUNS), peak RSS and
# the ratio.
#
# Usage: bash native/benches/lint.sh   (COPIES=20 RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/../.."
COPIES=${COPIES:-20}
RUNS=${RUNS:-5}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
cargo build --release -p strata-server --quiet
STRATA="$CARGO_TARGET_DIR/release/strata"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv" >/dev/null
"$work/venv/bin/pip" install -q squawk-cli
SQUAWK="$work/venv/bin/squawk"
mkdir -p "$work/m/ref" "$work/m/tenants"
for c in $(seq -w 1 "$COPIES"); do
    for f in tests/data/lint/postgres/*.sql; do
        cp "$f" "$work/m/tenants/${c}_$(basename "$f")"
    done
done
cat >"$work/svc.yaml" <<YAML
baseLocation: $work/m
driver: postgres
dataSource: postgres://nobody@127.0.0.1:1/none
singleMigrations: [ref]
tenantMigrations: [tenants]
YAML
files=$(find "$work/m/tenants" -name '*.sql' | wc -l)
bytes=$(cat "$work/m/tenants"/*.sql | wc -c)
echo "$files files, $bytes bytes; $("$SQUAWK" --version)"
best() { # label command...
    local label=$1 best=999999 rss=0
    shift
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>&1 || true
        read -r seconds kb < <(tail -1 "$work/time")
        best=$(awk -v a="$best" -v b="$seconds" 'BEGIN { print (b < a) ? b : a }')
        rss=$kb
    done
    echo "$label: best of $RUNS ${best} s, peak RSS $((rss / 1024)) MiB" >&2
    echo "$best"
}
ours=$(best "strata lint --all" "$STRATA" --config "$work/svc.yaml" lint --all)
theirs=$(best "squawk" "$SQUAWK" "$work"/m/tenants/*.sql)
echo "strata / squawk wall time: $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')"
