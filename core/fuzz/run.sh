#!/usr/bin/env bash
# Fuzzes every parser of strata-core with libFuzzer, each target for a
# bounded time: default 300 s, `bash core/fuzz/run.sh 30` for a smoke run.
# Seeds come from tests/data/fuzz/<target>/; a crash stops the run and
# leaves its input in core/fuzz/artifacts/<target>/ — fix it and keep the
# input under tests/data/fuzz/<target>/ as a regression seed.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_EACH=${1:-300}
# STRATA_FUZZ_BUILD: how the targets are built.
#   (unset)  cargo-fuzz's own build: release, AddressSanitizer (nightly).
#   stable   CI's smoke run (tests/all.sh): a debug build by the stable
#            toolchain's cargo, with the instrumentation cargo-fuzz gives a
#            `--sanitizer none` build (libFuzzer's coverage counters and
#            comparison tracing, `--cfg fuzzing`), so neither nightly nor
#            cargo-fuzz is installed for it. The core forbids `unsafe`; a
#            smoke run proves the targets build, run their seeds and survive
#            some mutations, not that they were searched long.
#   other    options for `cargo fuzz build` and `run` (e.g. `--dev
#            --sanitizer none`).
read -r -a BUILD <<<"${STRATA_FUZZ_BUILD:-}"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}/fuzz"
TARGETS=$(sed -n 's|^path = "fuzz_targets/\(.*\)\.rs"$|\1|p' Cargo.toml)

if [ "${STRATA_FUZZ_BUILD:-}" = stable ]; then
    host=$(rustc -vV | sed -n 's/^host: //p')
    # For the targets only (`--target`): build scripts and proc macros are
    # built without the instrumentation, as cargo-fuzz builds them.
    RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks" \
        cargo build --locked --bins --target "$host"
    run_target() { # target corpus -- libFuzzer options
        local target=$1 corpus=$2
        shift 3
        mkdir -p "artifacts/$target"
        "$CARGO_TARGET_DIR/$host/debug/$target" -artifact_prefix="artifacts/$target/" "$@" "$corpus"
    }
else
    # The nightly toolchain and cargo-fuzz, when missing.
    bash ../../tests/tools.sh cargo-fuzz
    export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
    # Every target in one cargo invocation (both cores busy), before the runs.
    cargo +nightly fuzz build "${BUILD[@]}"
    run_target() { # target corpus -- libFuzzer options
        local target=$1 corpus=$2
        shift 2
        cargo +nightly fuzz run "${BUILD[@]}" "$target" "$corpus" "$@"
    }
fi

corpus_root=$(mktemp -d)
trap 'rm -rf "$corpus_root"' EXIT
# STRATA_FUZZ_JOBS targets at once (default 1; CI's smoke run takes 2, one
# per processor: its nine targets' ten seconds each were 1:40 of its tail).
JOBS=${STRATA_FUZZ_JOBS:-1}
fuzz_one() { # target: runs it, prints its log's summary or its failure
    local target=$1 corpus="$corpus_root/$1" log="$corpus_root/$1.log" seeds
    mkdir -p "$corpus"
    seeds="../../tests/data/fuzz/$target"
    [ -d "$seeds" ] && cp "$seeds"/* "$corpus"/ 2>/dev/null || true
    if ! run_target "$target" "$corpus" -- -max_total_time="$SECONDS_EACH" -max_len=4096 -print_final_stats=1 \
        >"$log" 2>&1; then
        echo "==> fuzzing $target for ${SECONDS_EACH}s"
        tail -n 40 "$log"
        echo "fuzz target $target FAILED; the input is in core/fuzz/artifacts/$target/" >&2
        return 1
    fi
    echo "==> fuzzing $target for ${SECONDS_EACH}s"
    grep -E "^(Done|stat::peak_rss_mb)" "$log"
}
running=0 failed=0
for target in $TARGETS; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
    [ "$failed" = 0 ] || break
    fuzz_one "$target" &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
[ "$failed" = 0 ] || exit 1
echo "fuzzing done: no crash in any target"
