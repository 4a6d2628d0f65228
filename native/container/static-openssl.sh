# Sourced (by native/container/build.sh and tests/all.sh): links OpenSSL
# into the binaries statically, the image then needing no OpenSSL library
# of its own (the parts the service calls, 4.0 MB, where Debian 12's shared
# libssl and libcrypto are 5.4 MB). openssl-sys links statically with
# OPENSSL_STATIC=1, but only when it is told where OpenSSL is: found through
# pkg-config, a library in the system's directories is linked dynamically
# whatever the variable says. Both builds set the same variables, so the
# image's build compiles no dependency again. OPENSSL_STATIC=0 keeps the
# shared libraries (build.sh then copies them into the image).
if [ "${OPENSSL_STATIC-1}" = 1 ] && pkg-config --exists openssl 2>/dev/null; then
    OPENSSL_STATIC=1
    OPENSSL_LIB_DIR=$(pkg-config --variable=libdir openssl)
    OPENSSL_INCLUDE_DIR=$(pkg-config --variable=includedir openssl)
    export OPENSSL_STATIC OPENSSL_LIB_DIR OPENSSL_INCLUDE_DIR
fi
