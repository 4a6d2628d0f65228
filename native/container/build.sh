#!/usr/bin/env bash
# Builds the container image of the migration service:
#   1. a static x86_64-unknown-linux-musl binary (cargo profile `container`),
#      with the release and git revision baked into `GET /`, and OpenSSL
#      compiled in (openssl-src, through native-tls's `vendored`);
#   2. stages it with the CA certificates in build/container/;
#   3. builds the Containerfile with buildah (no Docker engine needed), or
#      docker when buildah is missing.
#
# Usage: bash native/container/build.sh [IMAGE]   (default localhost/strata:dev)
set -euo pipefail
cd "$(dirname "$0")/../.."
IMAGE=${1:-localhost/strata:dev}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/strata-target}"

need=()
command -v musl-gcc >/dev/null || need+=(musl-tools)
# OpenSSL (sqlx's TLS) is compiled from source into the static binary.
command -v perl >/dev/null || need+=(perl)
command -v make >/dev/null || need+=(make)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need[@]}" >/dev/null
fi
rustup target list --installed | grep -qx x86_64-unknown-linux-musl || rustup target add x86_64-unknown-linux-musl

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
STRATA_RELEASE="v$VERSION" STRATA_SHA="$REVISION" \
    cargo build --locked --profile container --target x86_64-unknown-linux-musl -p strata-server

rm -rf build/container && mkdir -p build/container
cp "$CARGO_TARGET_DIR/x86_64-unknown-linux-musl/container/strata" build/container/strata
cp /etc/ssl/certs/ca-certificates.crt build/container/ca-certificates.crt

if command -v buildah >/dev/null; then
    buildah bud --quiet --layers=false -f Containerfile -t "$IMAGE" \
        --build-arg VERSION="v$VERSION" --build-arg REVISION="$REVISION" . >/dev/null
else
    docker build -f Containerfile -t "$IMAGE" --build-arg VERSION="v$VERSION" --build-arg REVISION="$REVISION" .
fi
echo "$IMAGE (v$VERSION, $REVISION)"
