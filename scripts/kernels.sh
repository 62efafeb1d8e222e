#!/usr/bin/env bash
# diffuse's own suite of NumPy kernels (benches/peers/kernels/, issue 50) against NumPy, as a
# table and a figure. Not part of CI: CI validates the smallest size only (scripts/test.sh,
# `run.py --sizes small --validate-only`); a full run takes an hour or more on 2 cores.
#
#   ./scripts/kernels.sh [SIZES] [REPEATS] [KERNELS]
#
# SIZES (default small,medium,large), REPEATS (default 3) timed runs per system, NumPy and
# diffuse interleaved, medians reported; KERNELS a comma-separated subset (default all).
# The Python is target/python-venv's (scripts/python-setup.sh builds it), or $PYTHON.
# Writes docs/figures/kernels.jsonl (run.py's records, one per kernel and size) and, from
# them, docs/figures/kernels.md and docs/figures/kernels-speedup.svg (`diffuse-figures
# kernels`). Exits non-zero when a diffuse result differs from NumPy's (the figure is drawn
# all the same).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes="${1:-small,medium,large}"
reps="${2:-3}"
kernels=()
if [ -n "${3:-}" ]; then
    kernels=(--kernels "$3")
fi
python="${PYTHON:-$(scripts/python-setup.sh)}"
cargo build --release --quiet -p diffuse-figures
records=docs/figures/kernels.jsonl
status=0
"$python" benches/peers/kernels/run.py --sizes "$sizes" --repeats "$reps" "${kernels[@]}" \
    --json "$records" || status=$?
target/release/diffuse-figures kernels "$records" --out docs/figures
exit "$status"
