#!/usr/bin/env bash
# diffuse next to the systems its users would pick instead, on this machine, as figures.
# Not part of CI: a full run takes about half an hour.
#
#   ./scripts/peers.sh [REPS] [CASES...]
#
# REPS (default 3) repetitions of every case, interleaved: each repetition runs every system
# once, in turn, so machine noise hits all alike; the report takes medians. CASES picks
# cases by app name (default: all); the other apps' records of the last run are kept, so
# the report still covers every app. Systems: diffuse (fused with compiled kernels, fused
# with native kernels, unfused, and compiling in the background for the warm-up figure),
# diffuse's Python package, NumPy, numexpr, JAX (jit, x64), Dask array, SciPy (solvers),
# PETSc (solvers, on 1 and 2 MPI ranks) and cuPyNumeric on the CPU, each running the same
# problem (benches/peers/). A system that cannot run an app (numexpr has no matrix product,
# cuPyNumeric no erf or sparse solvers, the PETSc peer no multigrid) says so and is left out.
#
# Writes target/peers/records.jsonl (one JSON record per run, with its "system") and the
# report: docs/figures/peers-{time,speedup,tasks,warmup,memory}.svg and docs/figures/peers.md
# (`diffuse-figures peers`). Peers are installed from PyPI into target/peers-venv and
# target/cupynumeric-venv and PETSc from Debian (scripts/peers-setup.sh), diffuse's Python
# package into target/python-venv (scripts/python-setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"
shift || true
wanted=("$@")

scripts/peers-setup.sh
scripts/python-setup.sh >/dev/null
cargo build --release --quiet -p diffuse-figures
bin=target/release/diffuse-examples
out=target/peers
records="$out/records.jsonl"
mkdir -p "$out"
if [ ${#wanted[@]} -gt 0 ] && [ -f "$records" ]; then
    # Rerunning some apps keeps the other apps' records of the last run.
    grep -v -E "\"app\": ?\"($(IFS='|'; echo "${wanted[*]}"))\"" "$records" >"$records.kept" || true
    mv "$records.kept" "$records"
else
    : >"$records"
fi

# app  n  iters  kind (array: benches/peers/numpy_apps.py; solver: scipy_solvers.py and
# petsc_solvers.py)
cases=(
    "stencil 4096 10 array"
    "stencil 256 200 array"
    "black-scholes 10000000 10 array"
    "black-scholes-poly 10000000 10 array"
    "jacobi 4096 50 array"
    "cfd 512 10 array"
    "cg 1000 100 solver"
    "bicgstab 1000 100 solver"
    "cgs 1000 100 solver"
    "gmg 1023 60 solver"
)
array_peers=(diffuse-python diffuse-python-traced numpy numexpr jax dask cupynumeric)
solver_peers=(diffuse-python scipy jax petsc-1rank petsc-2ranks)
diffuse_modes=(
    "diffuse-fused --fusion on --jit sync"
    "diffuse-native --fusion on --jit off"
    "diffuse-unfused --fusion off"
    "diffuse-background --fusion on --jit on --jit-wait false"
)
failures=()

# Appends the JSON record that `"$@"` prints last on stdout to the records, tagged with
# the system $1 (shifted off); exit status 3 means the system cannot run this app.
record() {
    local system="$1" status=0 line
    shift
    "$@" >"$out/stdout" 2>"$out/stderr" || status=$?
    if [ "$status" = 3 ]; then
        echo "peers: $system cannot run it: $(tail -n 1 "$out/stderr")" >&2
        return
    fi
    line=$(grep '^{' "$out/stdout" | tail -n 1 || true)
    if [ "$status" != 0 ] || [ -z "$line" ]; then
        failures+=("$system: $*")
        echo "peers: $system failed (exit $status): $*" >&2
        tail -n 5 "$out/stderr" >&2
        return
    fi
    echo "{\"system\":\"$system\",${line#\{}" >>"$records"
}

# Runs system $1 on the case (app $2, size $3, iterations $4, kind $5).
run_peer() {
    local system="$1" app="$2" n="$3" iters="$4" kind="$5" module="$1" python=target/peers-venv/bin/python
    case "$system" in
    diffuse-python) module=diffuse python=target/python-venv/bin/python ;;
    diffuse-python-traced) module=diffuse-traced python=target/python-venv/bin/python ;;
    cupynumeric) python=benches/peers/run-cupynumeric.sh ;;
    petsc-*)
        # petsc-1rank, petsc-2ranks: that many MPI ranks on Debian's PETSc, which lives in the
        # system python3. One timed solve: the repetitions are this script's.
        local ranks="${system#petsc-}"
        record "$system" mpirun -q --allow-run-as-root --oversubscribe -np "${ranks%%rank*}" \
            /usr/bin/python3 benches/peers/petsc_solvers.py --solvers "$app" --n "$n" \
            --iters "$iters" --reps 1
        return
        ;;
    esac
    if [ "$kind" = array ]; then
        record "$system" "$python" benches/peers/numpy_apps.py "$app" --n "$n" --iters "$iters" --module "$module"
    else
        record "$system" "$python" benches/peers/scipy_solvers.py "$app" --n "$n" --rtol 0 --maxiter "$iters" --module "$module"
    fi
}

for rep in $(seq "$reps"); do
    for case in "${cases[@]}"; do
        read -r app n iters kind <<<"$case"
        if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " =~ \ $app\  ]]; then
            continue
        fi
        echo "peers: repetition $rep/$reps: $app n=$n" >&2
        extra=()
        [ "$kind" = solver ] && extra=(--rtol 0)
        for mode in "${diffuse_modes[@]}"; do
            read -r system flags <<<"$mode"
            # shellcheck disable=SC2086 # the mode is several flags
            record "$system" "$bin" "$app" --n "$n" --iters "$iters" "${extra[@]}" $flags --json
        done
        peers=("${array_peers[@]}")
        [ "$kind" = solver ] && peers=("${solver_peers[@]}")
        for peer in "${peers[@]}"; do
            run_peer "$peer" "$app" "$n" "$iters" "$kind"
        done
    done
done

target/release/diffuse-figures peers "$records" --out docs/figures
if [ ${#failures[@]} -gt 0 ]; then
    printf 'peers: failed runs (left out of the report):\n' >&2
    printf '  %s\n' "${failures[@]}" >&2
    exit 1
fi
