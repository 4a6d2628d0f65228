#!/usr/bin/env bash
# Side by side, in one hyperfine run: apply N tiny migrations to an empty
# SQLite database, from a cold process each time.
#
#   floor   sqlite3 CLI, every file concatenated in ONE transaction, no bookkeeping
#   dbmate  dbmate (npm) `up`: one transaction per migration + schema_migrations rows
#   strata  `strata` start-up + POST createVersion: one transaction, checksums,
#           svc_versions/svc_migrations rows, then stop
#
# Usage: bash native/benches/apply_sqlite.sh   (N=200 RUNS=10 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-200}
RUNS=${RUNS:-10}
PORT=${PORT:-18931}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"

command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
command -v sqlite3 >/dev/null || { apt-get update -qq && apt-get install -y -qq sqlite3 >/dev/null; }
cargo build --release -p strata-server --quiet
STRATA="$CARGO_TARGET_DIR/release/strata"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm install --silent --no-audit --no-fund dbmate@2 >/dev/null)
DBMATE="$work/node_modules/.bin/dbmate"

mkdir -p "$work/strata/app" "$work/dbmate"
echo "begin;" > "$work/all.sql"
for i in $(seq -w 1 "$N"); do
    body="create table {schema}.t$i (id integer primary key, v text not null); insert into {schema}.t$i (v) values ('x');"
    echo "$body" > "$work/strata/app/$i.sql"
    printf -- '-- migrate:up\n%s\n-- migrate:down\n' "${body//\{schema\}./}" > "$work/dbmate/${i}_t$i.sql"
    echo "${body//\{schema\}./}" >> "$work/all.sql"
done
echo "commit;" >> "$work/all.sql"

cat > "$work/svc.yaml" <<YAML
baseLocation: $work/strata
driver: sqlite
dataSource: sqlite://$work/db/main.db?mode=rwc
singleMigrations: [app]
port: $PORT
logLevel: ERROR
YAML

cat > "$work/strata.sh" <<SH
#!/usr/bin/env bash
set -e
SVC_YAML=$work/svc.yaml $STRATA & pid=\$!
until curl -sf -o /dev/null http://127.0.0.1:$PORT/health; do sleep 0.005; done
out=\$(curl -sf http://127.0.0.1:$PORT/v2/service -H 'Content-Type: application/json' -d '{"query":"mutation { createVersion(input: {versionName: \"bench\"}) { summary { singleMigrations } } }"}')
kill \$pid; wait \$pid || true
case "\$out" in *'"singleMigrations":$((10#$N))'*) ;; *) echo "unexpected: \$out" >&2; exit 1;; esac
SH
chmod +x "$work/strata.sh"

hyperfine --warmup 2 --runs "$RUNS" --export-markdown "$work/result.md" \
    --prepare "rm -rf $work/db && mkdir -p $work/db" \
    -n floor "sqlite3 $work/db/floor.db < $work/all.sql" \
    -n dbmate "$DBMATE --url sqlite:$work/db/dbmate.db --migrations-dir $work/dbmate --no-dump-schema up" \
    -n strata "$work/strata.sh"
cat "$work/result.md"
