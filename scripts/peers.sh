#!/usr/bin/env bash
# Side-by-side comparison of the diffuse applications with their NumPy versions
# (benches/peers/numpy_apps.py) on this machine. Not part of CI: it takes minutes.
#
#   ./scripts/peers.sh [REPS]     (default 3 runs of each; medians and ratios are printed)
#
# Installs NumPy and SciPy from PyPI into target/peers-venv on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"

scripts/peers-setup.sh
venv=target/peers-venv
bin=target/release/diffuse-examples

# app  n  iters
cases=(
    "stencil 4096 10"
    "black-scholes 10000000 3"
    "jacobi 4096 10"
)

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

printf '%-14s %10s %14s %14s %14s %8s\n' app n "numpy ms" "diffuse-1 ms" "diffuse-2 ms" "ratio-2"
for case in "${cases[@]}"; do
    read -r app n iters <<<"$case"
    np_times=() d1_times=() d2_times=()
    # Interleave the runs so that machine noise hits all three alike.
    for _ in $(seq "$reps"); do
        np_times+=("$("$venv/bin/python" benches/peers/numpy_apps.py "$app" --n "$n" --iters "$iters" | field seconds_per_iter)")
        d1_times+=("$("$bin" "$app" --n "$n" --iters "$iters" --procs 1 --json | field seconds_per_iter)")
        d2_times+=("$("$bin" "$app" --n "$n" --iters "$iters" --procs 2 --json | field seconds_per_iter)")
    done
    np_ms=$(printf '%s\n' "${np_times[@]}" | median)
    d1_ms=$(printf '%s\n' "${d1_times[@]}" | median)
    d2_ms=$(printf '%s\n' "${d2_times[@]}" | median)
    awk -v a="$app" -v n="$n" -v p="$np_ms" -v d1="$d1_ms" -v d2="$d2_ms" \
        'BEGIN { printf "%-14s %10s %14.1f %14.1f %14.1f %8.2f\n", a, n, p * 1e3, d1 * 1e3, d2 * 1e3, p / d2 }'
done
echo "ratio-2: NumPy time / diffuse time on 2 processors (above 1: diffuse is faster)."
