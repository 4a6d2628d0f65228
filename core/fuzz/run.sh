#!/usr/bin/env bash
# Fuzzes every parser of strata-core with cargo-fuzz (libFuzzer, nightly),
# each target for a bounded time: default 300 s, `bash core/fuzz/run.sh 30`
# for a smoke run. Seeds come from tests/data/fuzz/<target>/; a crash stops
# the run and leaves its input in core/fuzz/artifacts/<target>/ — fix it and
# keep the input under tests/data/fuzz/<target>/ as a regression seed.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_EACH=${1:-300}
# STRATA_FUZZ_BUILD: cargo-fuzz's build options. The default is its own
# (release, AddressSanitizer); CI's smoke run passes `--dev --sanitizer none`
# (the core forbids `unsafe`, and a debug build compiles sqlparser and the
# rest in a fraction of the time: a smoke run proves the targets build, run
# their seeds and survive some mutations, not that they were searched long).
read -r -a BUILD <<<"${STRATA_FUZZ_BUILD:-}"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}/fuzz"

# The nightly toolchain and cargo-fuzz, when missing.
bash ../../tests/tools.sh cargo-fuzz
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# Every target in one cargo invocation (both cores busy), before the runs.
cargo +nightly fuzz build "${BUILD[@]}"

corpus_root=$(mktemp -d)
trap 'rm -rf "$corpus_root"' EXIT
for target in $(cargo +nightly fuzz list); do
    corpus="$corpus_root/$target"
    mkdir -p "$corpus"
    seeds="../../tests/data/fuzz/$target"
    [ -d "$seeds" ] && cp "$seeds"/* "$corpus"/ 2>/dev/null || true
    echo "==> fuzzing $target for ${SECONDS_EACH}s"
    log="$corpus_root/$target.log"
    if ! cargo +nightly fuzz run "${BUILD[@]}" "$target" "$corpus" -- -max_total_time="$SECONDS_EACH" -max_len=4096 \
        -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz target $target FAILED; the input is in core/fuzz/artifacts/$target/" >&2
        exit 1
    fi
    grep -E "^(Done|stat::peak_rss_mb)" "$log"
done
echo "fuzzing done: no crash in any target"
