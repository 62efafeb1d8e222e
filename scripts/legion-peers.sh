#!/usr/bin/env bash
# diffuse on Legion next to diffuse's embedded backend and cuPyNumeric on the same Legion
# (CPU only), interleaved, medians. Not part of CI: it takes minutes.
#
#   ./scripts/legion-peers.sh [REPS]     (default 3 runs of each)
#
# cuPyNumeric 26.6.1 (with its legate 26.6.1 and the CUDA runtime wheel) goes into
# target/cupynumeric-venv from PyPI on first use (scripts/peers-setup.sh) and runs through
# benches/peers/run-cupynumeric.sh: on a machine without an NVIDIA driver it loads the
# libcuda stub that scripts/legion-setup.sh builds. Both sides use two CPU processors and
# one utility processor.
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"

scripts/peers-setup.sh
cupynumeric() {
    benches/peers/run-cupynumeric.sh benches/peers/numpy_apps.py "$@" --module cupynumeric
}
bin=target/release/diffuse-examples
field() { python3 -c 'import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# app  n  iters
cases=(
    "stencil 4096 10"
    "stencil 64 200"
    "black-scholes 10000000 3"
)
printf '%-14s %9s %12s %12s %12s %12s %12s\n' app n "embedded" "legion" "legion-off" "cupynumeric" "leg/emb"
for case in "${cases[@]}"; do
    read -r app n iters <<<"$case"
    emb=() leg=() off=() cpn=()
    for _ in $(seq "$reps"); do
        emb+=("$("$bin" "$app" --n "$n" --iters "$iters" --procs 2 --json | field seconds_per_iter)")
        leg+=("$("$bin" "$app" --n "$n" --iters "$iters" --procs 2 --backend legion -ll:util 1 --json | field seconds_per_iter)")
        off+=("$("$bin" "$app" --n "$n" --iters "$iters" --procs 2 --backend legion -ll:util 1 --fusion off --json | field seconds_per_iter)")
        if [ "$app" = black-scholes ]; then
            cpn+=(nan)  # cuPyNumeric has no erf
        else
            cpn+=("$(cupynumeric "$app" --n "$n" --iters "$iters" | field seconds_per_iter)")
        fi
    done
    m() { printf '%s\n' "$@" | median; }
    awk -v a="$app" -v n="$n" -v e="$(m "${emb[@]}")" -v l="$(m "${leg[@]}")" -v o="$(m "${off[@]}")" -v c="$(m "${cpn[@]}")" \
        'BEGIN { printf "%-14s %9s %10.3f ms %10.3f ms %10.3f ms %10.3f ms %12.2f\n", a, n, e * 1e3, l * 1e3, o * 1e3, c * 1e3, l / e }'
done
echo "embedded/legion: diffuse fused (JIT); legion-off: diffuse on Legion unfused; leg/emb: Legion's time over the embedded backend's."
