#!/usr/bin/env bash
# Installs Legion for diffuse's Legion backend from PyPI wheels, without installing any Python
# package: the `legate` wheel carries Legion and Realm as shared libraries with their headers.
# Everything goes into a cache directory (default ~/.cache/diffuse/legion-26.1.0, or
# $DIFFUSE_LEGION_DIR), which `legion-bridge/build.rs` and the backend look in. Idempotent;
# needs no root. See ../shared/notes/toolchain-recipes.md ("Legion") for the pins:
# - legate 26.1.0: Realm built with the UCX network module (26.6.x has none); Legion 25.12.
# - libucx-cu12 1.19.0: the UCX Realm loads (1.22 aborts at start-up on IB_SEG_SIZE).
# - nvidia-libcal-cu12: libucc, which Realm also needs at load time.
set -euo pipefail

DIR="${DIFFUSE_LEGION_DIR:-$HOME/.cache/diffuse/legion-26.1.0}"
WHEELS=(legate==26.1.0 libucx-cu12==1.19.0 nvidia-libcal-cu12==0.4.4.50.post1)

has_driver() {
    /sbin/ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '
}

# Every file the build and the backend need.
installed() {
    [ -f "$DIR/site/legate/lib64/liblegion-legate.so" ] &&
        [ -f "$DIR/site/libucx/lib/libucp.so.0" ] &&
        [ -f "$DIR/site/legate/include/legate/deps/legion/bindings/c_bindings.h" ] &&
        { has_driver || [ -f "$DIR/stub/libcuda.so.1" ]; }
}

if [ -f "$DIR/ready" ] && installed; then
    echo "legion-setup: ok (already in $DIR)" >&2
    exit 0
fi
rm -f "$DIR/ready"
mkdir -p "$DIR/wheels" "$DIR/site"

# A private venv only for its pip (Debian's system pip may be absent or externally managed).
if [ ! -x "$DIR/venv/bin/pip" ]; then
    python3 -m venv "$DIR/venv" || {
        echo "legion-setup: python3 -m venv failed (install python3-venv: scripts/setup.sh)" >&2
        exit 1
    }
fi
echo "legion-setup: downloading ${WHEELS[*]}" >&2
"$DIR/venv/bin/pip" download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_28_x86_64 \
    -d "$DIR/wheels" "${WHEELS[@]}" || {
    echo "legion-setup: downloading the wheels from PyPI failed" >&2
    exit 1
}
for wheel in "$DIR"/wheels/*.whl; do
    "$DIR/venv/bin/python" -m zipfile -e "$wheel" "$DIR/site"
done

# Realm links libcuda.so.1 even when it runs CPU-only. Without an NVIDIA driver a stub that
# reports "no device" stands in (no cuGetProcAddress: Realm then stays on the CPU after one
# warning); with a driver the real one must be used, so no stub is kept.
if has_driver; then
    rm -rf "$DIR/stub"
else
    mkdir -p "$DIR/stub"
    cat >"$DIR/stub/cuda_stub.c" <<'C'
/* libcuda.so.1 for machines without an NVIDIA driver: every entry point Realm calls before
 * giving up on CUDA, each answering "no device". */
typedef int CUresult;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_NO_DEVICE = 100 };
static const char no_device[] = "CUDA_ERROR_NO_DEVICE (diffuse's libcuda stub: no driver)";
CUresult cuInit(unsigned flags) { (void)flags; return CUDA_ERROR_NO_DEVICE; }
CUresult cuDriverGetVersion(int *version) { if (version) *version = 0; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *count) { if (count) *count = 0; return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult e, const char **s) { (void)e; if (s) *s = no_device; return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult e, const char **s) { (void)e; if (s) *s = no_device; return CUDA_SUCCESS; }
CUresult cuMemFreeHost(void *p) { (void)p; return CUDA_ERROR_NO_DEVICE; }
CUresult cuMemFree_v2(unsigned long long p) { (void)p; return CUDA_ERROR_NO_DEVICE; }
C
    cc -shared -fPIC -O2 -Wl,-soname,libcuda.so.1 -o "$DIR/stub/libcuda.so.1" "$DIR/stub/cuda_stub.c"
fi

if ! installed; then
    echo "legion-setup: $DIR is incomplete after unpacking (see the files checked in installed())" >&2
    exit 1
fi
date -u +%FT%TZ >"$DIR/ready"
echo "legion-setup: ok (Legion from legate 26.1.0 in $DIR)" >&2
