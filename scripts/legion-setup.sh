#!/usr/bin/env bash
# Installs Legion for diffuse's Legion backend from PyPI wheels, without installing any Python
# package: the `legate` wheel carries Legion and Realm as shared libraries with their headers.
# Everything goes into a cache directory (default ~/.cache/diffuse/legion-26.1.0, or
# $DIFFUSE_LEGION_DIR), which `legion-bridge/build.rs` and the backend look in; `$DIR/ready`
# marks a complete installation. Idempotent; needs no root. The pins:
# - legate 26.1.0: Realm built with the UCX network module (26.6.x has none); Legion 25.12.
# - libucx-cu12 1.19.0: the libucp Realm loads (1.22 aborts at start-up on IB_SEG_SIZE).
# - nvidia-libcal-cu12: libucc, which Realm also needs at load time.
set -euo pipefail

DIR="${DIFFUSE_LEGION_DIR:-$HOME/.cache/diffuse/legion-26.1.0}"
WHEELS=(legate==26.1.0 libucx-cu12==1.19.0 nvidia-libcal-cu12==0.4.4.50.post1)
# The files pip saves for those pins (wheel names normalize '-' to '_').
WHEEL_FILES=(legate-26.1.0-*.whl libucx_cu12-1.19.0-*.whl nvidia_libcal_cu12-0.4.4.50.post1-*.whl)

fail() {
    echo "legion-setup: $*" >&2
    exit 1
}

# Whether the machine has an NVIDIA driver (its libcuda.so.1 is in the loader cache). The
# output is captured first: `ldconfig -p | grep -q` can fail under pipefail (SIGPIPE).
has_driver() {
    local ldconfig cache
    ldconfig="$(command -v ldconfig || echo /sbin/ldconfig)"
    cache="$("$ldconfig" -p 2>/dev/null || true)"
    grep -q 'libcuda\.so\.1 ' <<<"$cache"
}

# Every file the build and the backend need; the stub exactly when there is no driver (on
# a machine with the driver the backend must load the real libcuda, not a stale stub).
installed() {
    [ -f "$DIR/site/legate/lib64/liblegion-legate.so" ] &&
        [ -f "$DIR/site/legate/lib64/librealm-legate.so" ] &&
        [ -f "$DIR/site/libucx/lib/libucp.so.0" ] &&
        [ -d "$DIR/site/nvidia/libcal/cu12/lib" ] &&
        [ -f "$DIR/site/legate/include/legate/deps/legion.h" ] &&
        [ -f "$DIR/site/legate/include/legate/deps/legion/bindings/c_bindings.h" ] &&
        [ -f "$DIR/site/legate/include/legate/deps/mappers/default_mapper.h" ] &&
        if has_driver; then [ ! -e "$DIR/stub" ]; else [ -f "$DIR/stub/libcuda.so.1" ]; fi
}

if [ -f "$DIR/ready" ] && installed; then
    echo "legion-setup: ok (already in $DIR)" >&2
    exit 0
fi
rm -f "$DIR/ready"

command -v python3 >/dev/null 2>&1 || fail "python3 is missing (scripts/setup.sh installs it)"
mkdir -p "$DIR/wheels" "$DIR/site" || fail "cannot create $DIR"

# A private venv only for its pip (Debian's system pip may be absent or externally managed).
# Nothing is pip-installed: pip only downloads the wheels.
# A venv left half-made by an interrupted run (a pip script without its python) is made anew.
if ! "$DIR/venv/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$DIR/venv"
    python3 -m venv "$DIR/venv" >&2 ||
        fail "python3 -m venv failed (install python3-venv: scripts/setup.sh)"
fi
# Wheels for CPython 3.11 on manylinux_2_28 x86_64, whatever python3 here is; pip skips files
# already in $DIR/wheels.
echo "legion-setup: downloading ${WHEELS[*]} into $DIR/wheels" >&2
"$DIR/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --python-version 3.11 --platform manylinux_2_28_x86_64 \
    -d "$DIR/wheels" "${WHEELS[@]}" >&2 ||
    fail "downloading ${WHEELS[*]} from PyPI failed (is PyPI reachable?)"

# Unpack (a wheel is a zip; Python's zipfile stands in for unzip) into one tree: legate/,
# libucx/ and nvidia/libcal/ side by side, where librealm's RUNPATH expects them.
for pattern in "${WHEEL_FILES[@]}"; do
    wheels=("$DIR"/wheels/$pattern)
    [ -f "${wheels[0]}" ] || fail "pip reported success but $DIR/wheels has no $pattern"
    "$DIR/venv/bin/python" -m zipfile -e "${wheels[0]}" "$DIR/site" ||
        fail "unpacking ${wheels[0]} failed"
done

# Realm links libcuda.so.1 even when it runs CPU-only. Without an NVIDIA driver a stub that
# reports "no device" stands in (no cuGetProcAddress: Realm then stays on the CPU after one
# warning); with a driver the real one must be used, so no stub is kept.
if has_driver; then
    rm -rf "$DIR/stub"
else
    command -v cc >/dev/null 2>&1 || fail "no C compiler (cc) to build the libcuda stub (install build-essential)"
    mkdir -p "$DIR/stub"
    cat >"$DIR/stub/cuda_stub.c" <<'C'
/* libcuda.so.1 for machines without an NVIDIA driver (written by diffuse's
 * scripts/legion-setup.sh): the entry points Realm calls before giving up on CUDA, each
 * answering "no device". */
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
    cc -shared -fPIC -O2 -Wl,-soname,libcuda.so.1 -o "$DIR/stub/libcuda.so.1.tmp" \
        "$DIR/stub/cuda_stub.c" || fail "compiling the libcuda stub failed"
    mv -f "$DIR/stub/libcuda.so.1.tmp" "$DIR/stub/libcuda.so.1"
fi

installed || fail "$DIR is incomplete after unpacking (see the files installed() checks)"
date -u +%FT%TZ >"$DIR/ready"
if has_driver; then cuda="the NVIDIA driver's libcuda"; else cuda="a libcuda stub (no driver)"; fi
echo "legion-setup: ok (Legion 25.12 from legate 26.1.0 in $DIR, with $cuda)" >&2
