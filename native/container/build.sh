#!/usr/bin/env bash
# Builds the container image of the migration service:
#   1. the `strata` binary: the `ci` profile (Cargo.toml) with the two crates
#      it is made of optimized for size (its dependencies are already) — or
#      the binary STRATA_BINARY names;
#   2. stages it, stripped, in build/container/rootfs/ with the shared
#      libraries it links (the C library, libgcc_s: the ones `ldd`
#      names, copied from this machine at their paths; OpenSSL is linked
#      statically) and the CA certificates;
#   3. builds the Containerfile with buildah (no Docker engine needed), or
#      docker when buildah is missing.
# The binary's `GET /` shows the git revision it was compiled from
# (native/build.rs); the image's revision label is the checkout's.
#
# Usage: bash native/container/build.sh [IMAGE]   (default localhost/strata:dev)
set -euo pipefail
cd "$(dirname "$0")/../.."
IMAGE=${1:-localhost/strata:dev}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"

[ -f /etc/ssl/certs/ca-certificates.crt ] || {
    apt-get -o DPkg::Lock::Timeout=600 update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq ca-certificates >/dev/null
}

# shellcheck source=native/container/static-openssl.sh
source native/container/static-openssl.sh

binary=${STRATA_BINARY:-}
if [ -z "$binary" ]; then
    # After tests/all.sh's build of every target, only strata-core and
    # strata-server compile here: the same profile directory, and the same
    # features (`--workspace` with `--examples` resolves the dependencies'
    # features with the dev-dependencies, as `cargo test --all-targets`
    # does; `-p strata-server --bin strata` alone resolves others and
    # compiled 40 dependencies again). No example is built: there is none.
    # One code unit each: measured against 256, 212 processor seconds
    # instead of 296 and a binary of 28.9 MB instead of 36.5 (slower on an
    # idle machine, 3:32 instead of 2:53; CI runs it beside the suites).
    # Linked by rust-lld (Rust's default linker on x86_64 Linux since 1.90)
    # with identical functions folded (`--icf=all`: the image's code does not
    # compare function addresses; rustc's own release builds fold the same
    # way) and its relative relocations packed (DT_RELR, glibc 2.36):
    # 29.6 MB -> 26.7 MB. Only the `strata` binary's link (native/build.rs).
    # The profile makes no line tables (Cargo.toml), which the image's
    # stripped binary would not keep: 197 processor seconds for the two
    # crates instead of 228 with them (2026-12-07).
    export STRATA_LINK_ARGS="${STRATA_LINK_ARGS--Wl,-z,pack-relative-relocs -Wl,--icf=all}"
    cargo build --locked --profile ci --workspace --bins --examples \
        --config 'profile.ci.package.strata-core.opt-level="z"' \
        --config 'profile.ci.package.strata-server.opt-level="z"' \
        --config 'profile.ci.package.strata-core.codegen-units=1' \
        --config 'profile.ci.package.strata-server.codegen-units=1'
    binary="$CARGO_TARGET_DIR/ci/strata"
fi
[ -x "$binary" ] || { echo "build.sh: no executable $binary" >&2; exit 1; }

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)

rootfs=build/container/rootfs
rm -rf build/container && mkdir -p "$rootfs/etc/ssl/certs"
strip -o "$rootfs/strata" "$binary"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
# Each library at the path the dynamic loader looks for it (the loader
# itself included), the file behind a symbolic link copied under the
# link's name.
libraries=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
[ -n "$libraries" ] || { echo "build.sh: ldd named no library of $binary (a static binary needs none: say so here)" >&2; exit 1; }
for library in $libraries; do
    mkdir -p "$rootfs$(dirname "$library")"
    cp -L "$library" "$rootfs$library"
done

if command -v buildah >/dev/null; then
    buildah bud --quiet --layers=false -f Containerfile -t "$IMAGE" \
        --build-arg VERSION="v$VERSION" --build-arg REVISION="$REVISION" . >/dev/null
else
    docker build -f Containerfile -t "$IMAGE" --build-arg VERSION="v$VERSION" --build-arg REVISION="$REVISION" .
fi
echo "$IMAGE (v$VERSION, $REVISION): $(du -sb "$rootfs" | cut -f1) bytes staged, $(wc -w <<<"$libraries") libraries"
