#!/usr/bin/env bash
# The full test suite: formatting, lints, every crate's tests, and a smoke run of every app.
set -euo pipefail
cd "$(dirname "$0")/.."
# A clean build takes about 10 GB (each test binary that links MLIR is ~300 MB); a full disk
# shows up as a linker "Bus error", so say how much room there is before starting.
# Incremental state would add ~2 GB that one build never reuses.
export CARGO_INCREMENTAL=0
mkdir -p target
# Compiled kernels are kept in a cache of this run's own (a user's ~/.cache would make runs
# depend on what ran before): the apps and Python programs after the first load them.
export DIFFUSE_KERNEL_CACHE="$PWD/target/test-kernel-cache"
rm -rf "$DIFFUSE_KERNEL_CACHE"
free_gb=$(df --output=avail -BG target | tail -n 1 | tr -dc '0-9')
if [ "${free_gb:-0}" -lt 12 ]; then
    echo "warning: only ${free_gb} GB free under target/; the build needs about 10 GB" >&2
fi
scripts/setup.sh
scripts/check-references.sh
# Modules import each other one way: in the Legion bridge (ARCHITECTURE.md) and in every
# crate whose module graph is acyclic today (ir, jit, mapper and the array library still
# have loops between a few modules).
scripts/check-module-cycles.py legion-bridge/src machine/src fusion/src backend/src \
    device/src runtime/src embedded/src libs/sparse/src src python/src examples/src
start=$(date +%s)
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
status=0
# The Python extension links against the interpreter that loads it: it is tested through
# pytest below, not as a Rust test binary.
# Bounded: a test that hangs fails the run (status 124) with the output so far, where libtest
# names every test "running for over 60 seconds".
timeout --kill-after=60 3000 cargo test --workspace --exclude diffuse-python \
    >target/test-output.txt 2>&1 || status=$?
grep -E "^test result" target/test-output.txt | grep -v " 0 passed; 0 failed" >&2 || true
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    grep -E "running for over|^test .* \.\.\. *$" target/test-output.txt >&2 || true
    echo "the Rust tests did not finish within 3000 s (exit $status)" >&2
fi
if [ "$status" -ne 0 ]; then
    tail -n 80 target/test-output.txt >&2
    echo "tests failed (exit $status); full output in target/test-output.txt" >&2
    exit 1
fi
passed=$(grep -oE "[0-9]+ passed" target/test-output.txt | awk '{s += $1} END {print s + 0}')
echo "tests: $passed passed" >&2
# Smoke runs of every application: each must print a JSON record whose check is within
# tolerance (1e-9 as the apps' contract; the element-wise apps are exact).
cargo build --release --quiet -p diffuse-examples
smoke() {
    local app="$1" tolerance="$2"
    shift 2
    target/release/diffuse-examples "$app" "$@" --procs 2 --json | tee "target/smoke-$app.json"
    python3 - "target/smoke-$app.json" "$tolerance" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
limit = float(sys.argv[2])
assert r["check"] <= limit, f"{r['app']}: check {r['check']} exceeds {limit}"
assert r["tasks_issued_per_iter"] > 0 and r["seconds_per_iter"] > 0, r
if r["fusion"] == "on" and r["jit"] == "sync" and r["app"] in ("stencil", "black-scholes", "black-scholes-poly", "cg"):
    # Whole kernels, or segments (a fused task of several stages runs one per stage).
    compiled = r["compiled_points"] + r["segment_points"]
    assert compiled > 0, f"{r['app']}: no point task ran compiled code: {r}"
if r["iterations"] is not None:
    # The solvers: converged (rtol 1e-8) before the iteration cap.
    assert r["converged"] is True, f"{r['app']}: not converged: {r}"
    assert r["residual"] < 1e-8 and r["iterations"] < 1000, f"{r['app']}: not converged: {r}"
PY
}
# Fused with the JIT compiling before use (every fused task runs compiled code), fused with
# native kernels only, and unfused.
for mode in "--fusion on --jit sync" "--fusion on --jit off" "--fusion off"; do
    # shellcheck disable=SC2086 # the mode is two flags
    set -- $mode
    smoke stencil 1e-12 --n 257 --iters 3 "$@"
    smoke stencil-ir 1e-12 --n 257 --iters 3 "$@"
    smoke black-scholes 1e-12 --n 100000 --iters 2 "$@"
    smoke black-scholes-poly 1e-12 --n 100000 --iters 2 "$@"
    smoke jacobi 1e-9 --n 500 --iters 5 "$@"
    smoke cfd 1e-9 --n 41 --iters 3 "$@"
    smoke cg 1e-7 --n 40 --iters 1000 "$@"
    smoke bicgstab 1e-7 --n 40 --iters 1000 "$@"
    smoke cgs 1e-7 --n 40 --iters 1000 "$@"
    smoke gmg 1e-7 --n 63 --iters 1000 "$@"
done
# The default (JIT compiling in the background) must give the same answers, and so must a
# run asking for the GPU (on a machine without one it warns and stays on the CPU).
smoke black-scholes 1e-12 --n 100000 --iters 2
smoke black-scholes 1e-12 --n 100000 --iters 2 --jit sync --gpu
# Every app on the Legion backend (one process, two CPU processors; Legion's own flags pass
# through): the same checks as on the embedded backend, fused with compiled kernels and
# unfused.
for mode in "--fusion on --jit sync" "--fusion off"; do
    # shellcheck disable=SC2086 # the mode is two flags
    set -- $mode
    smoke stencil 1e-12 --n 257 --iters 3 --backend legion -ll:util 1 "$@"
    smoke black-scholes 1e-12 --n 100000 --iters 2 --backend legion "$@"
    smoke jacobi 1e-9 --n 500 --iters 5 --backend legion "$@"
    smoke cfd 1e-9 --n 41 --iters 3 --backend legion "$@"
    smoke cg 1e-7 --n 40 --iters 1000 --backend legion "$@"
    smoke bicgstab 1e-7 --n 40 --iters 1000 --backend legion "$@"
    smoke cgs 1e-7 --n 40 --iters 1000 --backend legion "$@"
    smoke gmg 1e-7 --n 63 --iters 1000 --backend legion "$@"
done
# The Legion runs give the embedded backend's answers: the element-wise apps bitwise, the
# solvers the same iteration count and residual (to 1e-6 relative: Legion's reduction
# operators fold the points' partial dot products in their own order).
for case in "stencil --n 257 --iters 3" "black-scholes --n 100000 --iters 2" \
    "cfd --n 41 --iters 3" "cg --n 40 --iters 1000" "bicgstab --n 40 --iters 1000"; do
    # shellcheck disable=SC2086 # the case is an app and its flags
    set -- $case
    target/release/diffuse-examples "$@" --procs 2 --jit sync --json >target/same-embedded.json
    target/release/diffuse-examples "$@" --procs 2 --jit sync --backend legion --json >target/same-legion.json
    python3 - target/same-embedded.json target/same-legion.json <<'PY'
import json, sys
e, l = (json.load(open(f)) for f in sys.argv[1:3])
assert l["backend"] == "legion" and e["backend"] == "embedded", (e["backend"], l["backend"])
if e["iterations"] is None:
    assert e["check"] == l["check"], f"{e['app']}: check {e['check']} (embedded) vs {l['check']} (legion)"
else:
    assert e["iterations"] == l["iterations"], f"{e['app']}: {e['iterations']} vs {l['iterations']} iterations"
    assert abs(e["residual"] - l["residual"]) <= 1e-6 * e["residual"], (e["residual"], l["residual"])
PY
done
# Several processes: stencil, black-scholes and cg as two Legion nodes (`diffuse launch -n 2`,
# one CPU each) give bitwise the results of one Legion process and of the embedded backend
# (two processors each, so every launch has the same points; two-point sums are exact in any
# order), and both nodes ran points (`--min-block 1`: these small problems would otherwise
# run on one point, on one node).
cargo build --release --quiet -p diffuse --bin diffuse
for case in "stencil --n 257 --iters 3" "black-scholes --n 100000 --iters 2" \
    "cg --n 40 --iters 1000"; do
    # shellcheck disable=SC2086 # the case is an app and its flags
    set -- $case
    target/release/diffuse-examples "$@" --procs 2 --min-block 1 --json >target/nodes-embedded.json
    target/release/diffuse-examples "$@" --procs 2 --min-block 1 --backend legion --json \
        >target/nodes-one.json
    target/release/diffuse launch -n 2 --output all --time-limit 300 -- \
        target/release/diffuse-examples "$@" --procs 1 --min-block 1 --backend legion --json \
        >target/nodes-two.txt
    python3 - target/nodes-embedded.json target/nodes-one.json target/nodes-two.txt <<'PY'
import json, sys
e, one = (json.load(open(f)) for f in sys.argv[1:3])
ranks = {}
for line in open(sys.argv[3]):
    tag, _, record = line.partition("] ")
    ranks[tag] = json.loads(record)
assert sorted(ranks) == ["[rank 0", "[rank 1"], sorted(ranks)
for tag, r in ranks.items():
    assert r["nodes"] == 2 and r["points_executed"] > 0, (tag, r["nodes"], r["points_executed"])
    for other, name in ((e, "embedded"), (one, "one Legion process")):
        assert r["result_digest"] == other["result_digest"], (
            f"{r['app']} on two nodes ({tag}]) differs from {name}: "
            f"{r['result_digest']} vs {other['result_digest']}")
print(f"{e['app']}: two nodes = one process = embedded ({e['result_digest']}); points per rank",
      [ranks[t]["points_executed"] for t in sorted(ranks)])
PY
done
# The same as Open MPI users start it: `mpirun` sets the ranks (OMPI_COMM_WORLD_*), diffuse's
# bootstrap takes the coordinator from the environment; both ranks ran points and the result
# is the embedded backend's.
target/release/diffuse-examples cg --n 40 --iters 1000 --procs 2 --min-block 1 --json \
    >target/mpi-embedded.json
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 \
    mpirun --oversubscribe -np 2 --tag-output -x DIFFUSE_COORDINATOR="127.0.0.1:$port" \
    target/release/diffuse-examples cg --n 40 --iters 1000 --procs 1 --min-block 1 --backend legion \
    --json >target/mpi-two.txt
python3 - target/mpi-embedded.json target/mpi-two.txt <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
ranks = {}
for line in open(sys.argv[2]):
    tag, _, rest = line.partition("<stdout>:")
    if rest.startswith("{"):
        ranks[tag] = json.loads(rest)
assert len(ranks) == 2, f"expected a record from each of 2 ranks under mpirun, got {sorted(ranks)}"
for tag, r in ranks.items():
    assert r["nodes"] == 2 and r["points_executed"] > 0, (tag, r["nodes"], r["points_executed"])
    assert r["result_digest"] == e["result_digest"], (tag, r["result_digest"], e["result_digest"])
print("cg under mpirun -np 2: = embedded; points per rank", [r["points_executed"] for r in ranks.values()])
PY
# A problem too large for the machine is an error, not an abort: every app exits with
# status 1 and one line saying what does not fit (as does a store past --memory-limit).
for app in stencil stencil-ir black-scholes black-scholes-poly jacobi cfd cg bicgstab cgs gmg; do
    n=200000
    case "$app" in black-scholes*) n=100000000000 ;; esac
    status=0
    target/release/diffuse-examples "$app" --n "$n" --iters 1 >/dev/null 2>target/oom.txt || status=$?
    if [ "$status" -ne 1 ] || [ "$(wc -l <target/oom.txt)" -ne 1 ] || ! grep -q "^error: .*out of memory" target/oom.txt; then
        cat target/oom.txt >&2
        echo "$app --n $n: expected exit 1 and one 'out of memory' line, got exit $status" >&2
        exit 1
    fi
done
# --memory-limit bounds the stores (named when one does not fit) and the host data, which
# is checked before it is allocated: from --n, and from a Matrix Market file's header
# (2e9 x 2e9 with 2 entries used to have the kernel kill the process).
if target/release/diffuse-examples black-scholes --n 1000000 --iters 1 --memory-limit 60M \
    --fusion off >/dev/null 2>target/oom.txt \
    || ! grep -q "store S.*needs .* bytes; .* of a 62914560-byte limit" target/oom.txt; then
    cat target/oom.txt >&2
    echo "--memory-limit 60M did not refuse a 8 MB store by name" >&2
    exit 1
fi
printf '%%%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 2\n1 1 1\n2 2 1\n' \
    >target/huge-header.mtx
for limit in 1G ""; do
    status=0
    target/release/diffuse-examples cg --matrix target/huge-header.mtx ${limit:+--memory-limit "$limit"} \
        >/dev/null 2>target/oom.txt || status=$?
    if [ "$status" -ne 1 ] || ! grep -q "^error: out of memory: the 2000000000 x 2000000000 matrix" target/oom.txt; then
        cat target/oom.txt >&2
        echo "a 2e9 x 2e9 Matrix Market header (--memory-limit '$limit'): expected exit 1 and one line, got $status" >&2
        exit 1
    fi
done
# Tiny and exactly solvable systems converge (an exact solution between residual checks is
# convergence, not a breakdown), with and without a tolerance.
for case in "cg --n 1" "cg --n 2" "cgs --n 3" "bicgstab --n 2" "gmg --n 3" "cg --n 4 --rtol 0 --iters 20000"; do
    # shellcheck disable=SC2086 # the case is an app and its flags
    target/release/diffuse-examples $case --json >target/tiny.json
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["converged"] is True and r["check"] < 1e-9, r' \
        target/tiny.json
done
# Legion configurations it cannot run with are refused before it starts, naming flag, value
# and limit, and what Legion itself rejects while starting ends the run with its reason: exit
# status 1 either way, never an abort (134), a crash or a hang.
for case in "-ll:cpu 64|LEGION_MAX_NUM_PROCS" "-ll:cpu 0|-ll:cpu 0" "-ll:gpu 1|-ll:gpu 1" \
    "-ll:bgwork 0|-ll:bgwork 0" "-ll:csize 100000000|-ll:csize 100000000" \
    "-ll:util abc|-ll:util \"abc\"" "--procs 4 -ll:cpu 2|-ll:cpu 2 disagree" "--nodes 2|--nodes 2" \
    "-lg:warn|-lg:warn is not supported" "-lg:replay 1|Legion could not start" \
    "-ll:bogusflag|unrecognized lowlevel option: -ll:bogusflag" "-lg:bogus 1|'-lg:bogus'"; do
    flags=${case%%|*} want=${case#*|} status=0
    # shellcheck disable=SC2086 # the flags are several words
    timeout 120 target/release/diffuse-examples stencil --n 8 --iters 1 --backend legion $flags \
        >/dev/null 2>target/legion-refused.txt || status=$?
    if [ "$status" -ne 1 ] || ! grep -qF -- "$want" target/legion-refused.txt; then
        cat target/legion-refused.txt >&2
        echo "--backend legion $flags: expected exit 1 and '$want', got exit $status" >&2
        exit 1
    fi
done
# Without Legion, --backend legion fails with one line naming what is missing.
if DIFFUSE_LEGION_DIR=/nonexistent target/release/diffuse-examples stencil --n 8 --iters 1 \
    --backend legion >target/no-legion.txt 2>&1; then
    echo "--backend legion ran without a Legion installation" >&2
    exit 1
fi
grep -q "legion-setup.sh" target/no-legion.txt || {
    cat target/no-legion.txt >&2
    echo "the missing-Legion error does not say how to install it" >&2
    exit 1
}
# The Python package: build the wheel, install it into target/python-venv, and run its tests
# (differential against NumPy with hypothesis).
python=$(scripts/python-setup.sh)
(cd python && timeout --kill-after=60 1800 "$(dirname "$python")/pytest" -q)
# The same differential, view, solver, trace, eager, statistics and routine tests with the
# package on the Legion backend (one Legion runtime for the whole pytest process).
(cd python && DIFFUSE_BACKEND=legion timeout --kill-after=60 1200 "$(dirname "$python")/pytest" -q \
    tests/test_views.py tests/test_differential.py tests/test_sparse.py tests/test_failures.py \
    tests/test_trace.py tests/test_eager.py tests/test_statistics.py tests/test_routines.py \
    tests/test_rearrangements.py tests/test_linalg.py tests/test_routines_more.py \
    tests/test_einsum.py tests/test_io.py tests/test_complex.py tests/test_complex_reductions.py \
    tests/test_complex_programs.py tests/test_sorting.py)
# Complex programs from Python on two Legion processes (`diffuse launch -n 2`, the script
# replicated): each rank's results equal NumPy's, and each rank ran points.
DIFFUSE_BACKEND=legion DIFFUSE_EAGER_ELEMENTS=0 target/release/diffuse launch -n 2 --output all \
    --time-limit 300 -- "$python" python/programs/complex_two_ranks.py >target/complex-two.txt
python3 - target/complex-two.txt <<'PY'
import json, sys
ranks = {}
for line in open(sys.argv[1]):
    tag, _, record = line.partition("] ")
    if record.startswith("{"):
        ranks[tag] = json.loads(record)
assert sorted(ranks) == ["[rank 0", "[rank 1"], sorted(ranks)
for tag, r in ranks.items():
    failed = [k for k, v in r.items() if v is False]
    assert not failed and r["points_executed"] > 0, (tag, failed, r["points_executed"])
print("complex programs from Python on two Legion processes = NumPy; points per rank",
      [ranks[t]["points_executed"] for t in sorted(ranks)])
PY
# The kernel suite (benches/peers/kernels) at its smallest size: every kernel's result
# validated against NumPy, no timing.
timeout --kill-after=60 900 "$python" benches/peers/kernels/run.py --sizes small --validate-only
# Smoke run of the benchmarks: every benchmark body runs once (no timing).
cargo bench --quiet -p diffuse-benches --bench fusion_analysis -- --test >target/bench-smoke.txt
cargo bench --quiet -p diffuse-benches --bench stream -- --test >>target/bench-smoke.txt
cargo bench --quiet -p diffuse-benches --bench launch -- --test >>target/bench-smoke.txt
# --- apps on the simulated GPU ---------------------------------------------------------------
# Every app of SIM_GPU_APPS with --gpu --jit sync on the embedded backend's simulated GPU
# (DIFFUSE_DEVICE=sim) at the smoke sizes above (scripts/gpu-check.sh --smoke, which the GPU
# check runs on a real GPU): the smoke checks plus point tasks on the GPU, kernels launched
# there and no warning on stderr that work ran on the CPU (scripts/check-gpu-record.py). The
# apps of SIM_GPU_STRICT also keep their data on the device: no host-device copies and at
# most one device sync per timed iteration in steady state.
SIM_GPU_APPS="stencil stencil-ir black-scholes black-scholes-poly jacobi cfd cg bicgstab cgs gmg"
SIM_GPU_STRICT="stencil stencil-ir black-scholes black-scholes-poly jacobi cfd"
if ! DIFFUSE_DEVICE=sim GPU_SMOKE_APPS="$SIM_GPU_APPS" GPU_STRICT="$SIM_GPU_STRICT" \
    scripts/gpu-check.sh --smoke target/release/diffuse-examples target/sim-gpu; then
    echo "apps on the simulated GPU failed: verdicts in target/sim-gpu/smoke.jsonl, stderr in target/sim-gpu/logs" >&2
    exit 1
fi
# --- end of apps on the simulated GPU ------------------------------------------------------
echo "test.sh: all green in $(( $(date +%s) - start ))s" >&2
