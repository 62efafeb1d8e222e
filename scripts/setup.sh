#!/usr/bin/env bash
# Installs everything diffuse needs on a fresh Debian 12 machine (run as root). Idempotent:
# each step checks first and does nothing when its part is already there.
set -euo pipefail

# LLVM/MLIR 22 (bookworm-security ships 22.1.x), for the MLIR JIT. MLIR is linked statically
# (Debian's libMLIR.so lacks the C API), and that link needs Polly (`libpolly-22-dev`, else
# "could not find native static library Polly"), zstd and zlib; the bindings' bindgen needs
# libclang; `mlir-22-tools` gives `mlir-opt` for debugging pass pipelines; `libomp-22-dev` is
# LLVM 22's OpenMP runtime.
APT_PACKAGES=(
    llvm-22-dev libmlir-22-dev mlir-22-tools libclang-22-dev libpolly-22-dev
    libzstd-dev zlib1g-dev libomp-22-dev
    build-essential pkg-config python3 python3-venv
    # Open MPI's `mpirun`, one of the launchers of several Legion nodes (tested in CI).
    openmpi-bin
    # OpenBLAS, for the float matrix products, which load it at run time (`DIFFUSE_BLAS`)
    # and fall back to faer without it. The threaded build, set to one thread: it locks its
    # buffers, so the points' concurrent calls are safe (the sequential build does not).
    libopenblas0-pthread
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x /usr/lib/llvm-22/bin/llvm-config ]; then
    echo "setup: /usr/lib/llvm-22/bin/llvm-config is missing after installing llvm-22-dev" >&2
    exit 1
fi

# The Rust toolchain comes with the machine (rustup); it cannot be downloaded from the
# registries this project may reach, so its absence is a hard error with a clear message.
if ! command -v cargo >/dev/null 2>&1; then
    for dir in "$HOME/.cargo/bin" /usr/local/cargo/bin; do
        [ -x "$dir/cargo" ] && export PATH="$dir:$PATH"
    done
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install a stable Rust toolchain (rustup) first" >&2
    exit 1
fi
for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        rustup component add "$component" >/dev/null 2>&1 || {
            echo "setup: the $component component is missing and could not be added" >&2
            exit 1
        }
    fi
done
echo "setup: ok ($(cargo --version), $(/usr/lib/llvm-22/bin/llvm-config --version))" >&2

# Legion (from the legate wheel on PyPI) for the Legion backend; no root needed.
"$(dirname "$0")/legion-setup.sh"
