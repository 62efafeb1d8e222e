#!/usr/bin/env bash
# Runs target/cupynumeric-venv's Python with ARGS in the environment cuPyNumeric needs on a
# CPU-only machine:
#
#   benches/peers/run-cupynumeric.sh ARGS...
#   e.g. benches/peers/run-cupynumeric.sh benches/peers/numpy_apps.py stencil --n 64 --module cupynumeric
#
# The venv is made by scripts/peers-setup.sh (nvidia-cupynumeric with its legate and the
# CUDA runtime wheel). Without an NVIDIA driver, legate still loads libcuda: the stub that
# scripts/legion-setup.sh builds stands in for it (DIFFUSE_LEGION_DIR, default
# ~/.cache/diffuse/legion-26.1.0), next to the wheels' CUDA and NCCL libraries. Legate runs
# on two CPU processors and one utility processor (LEGATE_CONFIG may override that).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/target/cupynumeric-venv"
if [ ! -x "$venv/bin/python" ]; then
    echo "run-cupynumeric: $venv is missing; run scripts/peers-setup.sh first" >&2
    exit 1
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
legion_dir="${DIFFUSE_LEGION_DIR:-$HOME/.cache/diffuse/legion-26.1.0}"
export LD_LIBRARY_PATH="$legion_dir/stub:$site/nvidia/cu13/lib:$site/nvidia/nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LEGATE_AUTO_CONFIG=0
export LEGATE_CONFIG="${LEGATE_CONFIG:---cpus 2 --gpus 0 --utility 1 --sysmem 8000}"
exec "$venv/bin/python" "$@"
