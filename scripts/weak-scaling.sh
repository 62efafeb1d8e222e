#!/usr/bin/env bash
# Weak scaling on the Legion backend: stencil, black-scholes and cg on 1 and 2 processes (one
# CPU processor each, `diffuse launch`), the problem per process fixed, fused and unfused,
# repetitions interleaved (this machine is shared and noisy). Writes the records
# (target/weak-scaling.jsonl), the table (docs/figures/weak-scaling.md) and the figure
# (docs/figures/weak-scaling.svg).
#
#   scripts/weak-scaling.sh [REPETITIONS]   (default 3)
#
# Sizes per process: stencil 2000^2 grid points, black-scholes 4e6 options, cg a Poisson
# system of 800^2 rows (capped at 100 iterations: the time per iteration is measured). With
# P processes the stencil and cg grids have sqrt(P) times the side and black-scholes P times
# the options.
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"
scripts/legion-setup.sh >/dev/null
cargo build --release --quiet -p diffuse-examples -p diffuse -p diffuse-figures
records=target/weak-scaling.jsonl
mkdir -p target docs/figures
: >"$records"

# side N P: the grid side holding P times the points of an N x N grid.
side() { python3 -c "import math; print(round($1 * math.sqrt($2)))"; }

for rep in $(seq "$reps"); do
    for ranks in 1 2; do
        for fusion in on off; do
            for app in stencil black-scholes cg; do
                case "$app" in
                stencil) args=(--n "$(side 2000 "$ranks")" --iters 10) ;;
                black-scholes) args=(--n $((4000000 * ranks)) --iters 5) ;;
                cg) args=(--n "$(side 800 "$ranks")" --iters 100) ;;
                esac
                echo "weak-scaling: repetition $rep, $ranks process(es), fusion $fusion, $app ${args[*]}" >&2
                target/release/diffuse launch -n "$ranks" -- target/release/diffuse-examples \
                    "$app" "${args[@]}" --fusion "$fusion" --procs 1 --backend legion --json \
                    >>"$records"
            done
        done
    done
done
target/release/diffuse-figures weak-scaling "$records" \
    --svg docs/figures/weak-scaling.svg --markdown docs/figures/weak-scaling.md
