#!/usr/bin/env bash
# Every shell block of README.md and docs/*.md marked runnable runs as
# written, from the repository root, in document order:
#
#   <!-- runnable -->                       run the block
#   <!-- runnable: with-service CONFIG -->  run it while `strata` serves CONFIG on :8080
#   <!-- runnable: container -->            run it only with --container (tests/container.sh
#                                           calls it so, with podman set up)
#
# A block fails on its first failing command. `./data` and `examples/*/data`,
# which the examples write, are removed afterwards when they were not there
# before.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"
want=plain
[ "${1:-}" = --container ] && want=container

blocks=$(mktemp -d)
had_data=0
[ -e data ] && had_data=1
made_data=()
for dir in examples/*/; do [ -e "${dir}data" ] || made_data+=("${dir}data"); done
server=""
cleanup() {
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    [ "$had_data" = 1 ] || rm -rf data
    [ ${#made_data[@]} = 0 ] || rm -rf "${made_data[@]}"
    rm -rf "$blocks"
}
trap cleanup EXIT

# Writes blocks/NNN.sh and blocks/NNN.mode ("plain", "container" or "with-service CONFIG").
python3 - "$blocks" README.md docs/*.md <<'PY'
import re, sys, pathlib
out = pathlib.Path(sys.argv[1]); n = 0
for name in sys.argv[2:]:
    lines = pathlib.Path(name).read_text().split("\n")
    for i, line in enumerate(lines):
        m = re.fullmatch(r"<!-- runnable(?::\s*(.*?))?\s*-->", line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```sh"):
            sys.exit(f"{name}:{i + 1}: a runnable mark must precede a ```sh block")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        n += 1
        (out / f"{n:03}.sh").write_text(f"# {name}:{i + 3}\n" + "\n".join(lines[i + 2:end]) + "\n")
        (out / f"{n:03}.mode").write_text(m.group(1) or "plain")
PY

# tests/all.sh built strata with the tests (STRATA_BIN): the blocks'
# `cargo run -q -p strata-server -- ARGS` run that binary (cargo would build
# it again, alone, with other features: 18 minutes of a fresh CI run).
if [ -n "${STRATA_BIN:-}" ]; then
    mkdir -p "$blocks/bin"
    cat >"$blocks/bin/cargo" <<SHIM
#!/usr/bin/env bash
args="\$*" # \${*#…} would cut each argument, not the line
if [ "\${args#run -q -p strata-server -- }" != "\$args" ]; then shift 5; exec "$STRATA_BIN" "\$@"; fi
exec "$(command -v cargo)" "\$@"
SHIM
    chmod +x "$blocks/bin/cargo"
    export PATH="$blocks/bin:$PATH"
fi

ran=0
for script in "$blocks"/*.sh; do
    mode=$(cat "${script%.sh}.mode")
    case "$mode" in
    container) [ "$want" = container ] || continue ;;
    *) [ "$want" = plain ] || continue ;;
    esac
    echo "--- $(head -n 1 "$script" | cut -c3-) ($mode)"
    if [[ "$mode" == with-service* ]]; then
        # tests/all.sh built it with the tests (STRATA_BIN): built again
        # alone (other features) it would be relinked under the running suites.
        if [ -z "${STRATA_BIN:-}" ]; then
            cargo build -q -p strata-server --locked
            STRATA_BIN="$CARGO_TARGET_DIR/debug/strata"
        fi
        SVC_YAML=${mode#with-service } "$STRATA_BIN" >"$blocks/server.log" 2>&1 &
        server=$!
        for _ in $(seq 1 100); do curl -sf -o /dev/null localhost:8080/health && break; sleep 0.1; done
    fi
    if ! bash -euo pipefail "$script"; then
        echo "docs test FAILED: the block at $(head -n 1 "$script" | cut -c3-)" >&2
        [ -z "$server" ] || cat "$blocks/server.log" >&2
        exit 1
    fi
    echo
    if [ -n "$server" ]; then kill "$server"; wait "$server" 2>/dev/null || true; server=""; fi
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "docs test FAILED: no runnable block found" >&2; exit 1; }

# Figures the docs state, read from what the build embeds.
# docs/console.md: the console's files with `gzip -9`, in KB (1,000 bytes), one decimal.
console_bytes=0
for file in native/console/*; do
    console_bytes=$((console_bytes + $(gzip -9 -c "$file" | wc -c)))
done
console_kb=$(awk -v b="$console_bytes" 'BEGIN { printf "%.1f", b / 1000 }')
stated_kb=$(grep -oE '[0-9]+(\.[0-9])? KB with `gzip -9`' docs/console.md | cut -d' ' -f1)
if [ "$stated_kb" != "$console_kb" ]; then
    echo "docs test FAILED: docs/console.md says the console is ${stated_kb:-?} KB with gzip -9; it is $console_kb KB ($console_bytes bytes)" >&2
    exit 1
fi
echo "--- docs/console.md: the console is $console_kb KB with gzip -9, as stated"
echo "docs test passed: $ran runnable block(s) ran as written"
