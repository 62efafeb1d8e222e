#!/usr/bin/env bash
# The Krylov solvers side by side with SciPy, on this machine. Not part of CI: it
# takes minutes. Usage: scripts/solvers.sh [N] [REPS]   (grid side, default 1000, so 10^6
# unknowns; repetitions of the timing runs, default 3, medians printed)
#
# 1. Convergence: each method to rtol 1e-8, checking every iteration (--check-every 1), on
#    the 2-D Poisson matrix of an N/4 x N/4 grid, fused (JIT) and unfused, against SciPy:
#    iterations and true residuals ||b - A x|| / ||b||.
# 2. Steady state on the N x N grid: 200 iterations (rtol 0), --fusion off, --fusion on
#    with native kernels and with the JIT, and SciPy's time per iteration; tasks issued and
#    executed per iteration (the paper's Figure 13), memo hits and misses, and the fusion
#    layer's analysis time as a share of the iteration.
# 3. Memory: 10,000 CG iterations on a 64 x 64 grid, resident memory at the start and the
#    end of the timed part.
# 4. CG's fused-over-unfused speedup by size: grids of N/4, N/2, N and 2N, 100 iterations.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1000}"
reps="${2:-3}"
scripts/peers-setup.sh
venv=target/peers-venv
bin=target/release/diffuse-examples
py="$venv/bin/python"
out=target/solvers.jsonl
: >"$out"
small=$((n / 4))
for method in cg bicgstab cgs; do
    for mode in "--fusion off" "--fusion on --jit sync"; do
        # shellcheck disable=SC2086 # the mode is several flags
        "$bin" "$method" --n "$small" --iters 100000 --check-every 1 $mode --json \
            | sed 's/^{/{"part":"converge",/' >>"$out"
    done
    "$py" benches/peers/scipy_solvers.py "$method" --n "$small" | sed 's/^{/{"part":"converge",/' >>"$out"
done
for _ in $(seq "$reps"); do
    for method in cg bicgstab cgs; do
        for mode in "--fusion off" "--fusion on --jit off" "--fusion on --jit sync"; do
            # shellcheck disable=SC2086
            "$bin" "$method" --n "$n" --iters 200 --rtol 0 $mode --json \
                | sed 's/^{/{"part":"steady",/' >>"$out"
        done
        "$py" benches/peers/scipy_solvers.py "$method" --n "$n" --rtol 0 --maxiter 200 \
            | sed 's/^{/{"part":"steady",/' >>"$out"
    done
done
for _ in $(seq "$reps"); do
    for side in $((n / 4)) $((n / 2)) "$n" $((2 * n)); do
        for mode in "--fusion off" "--fusion on --jit sync"; do
            # shellcheck disable=SC2086
            "$bin" cg --n "$side" --iters 100 --rtol 0 $mode --json \
                | sed 's/^{/{"part":"sizes",/' >>"$out"
        done
    done
done
"$bin" cg --n 64 --iters 10000 --rtol 0 --check-every 10 --json | sed 's/^{/{"part":"memory",/' >>"$out"
"$py" - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def mode(r):
    if "peer" in r:
        return "scipy"
    return "off" if r["fusion"] == "off" else "fused-" + r["jit"]
print("== convergence (rtol 1e-8, residual checked every iteration)")
print(f"{'method':9} {'run':12} {'iterations':>10} {'true residual':>14}  rel. diff to scipy")
for method in ("cg", "bicgstab", "cgs"):
    conv = [r for r in rows if r["part"] == "converge" and r["app"] == method]
    ref = next(r for r in conv if mode(r) == "scipy")
    for r in conv:
        diff = abs(r["check"] - ref["check"]) / ref["check"]
        print(f"{method:9} {mode(r):12} {r['iterations']:>10} {r['check']:>14.6e}  {diff:.2e}")
print("\n== steady state (200 iterations, medians): ms/iter, tasks issued -> executed, memo, analysis share")
for method in ("cg", "bicgstab", "cgs"):
    steady = [r for r in rows if r["part"] == "steady" and r["app"] == method]
    by = {}
    for r in steady:
        by.setdefault(mode(r), []).append(r)
    off = statistics.median(r["seconds_per_iter"] for r in by["off"])
    for m, rs in by.items():
        t = statistics.median(r["seconds_per_iter"] for r in rs)
        line = f"{method:9} {m:12} {t * 1e3:9.3f} ms  x{off / t:5.2f} vs off"
        if m != "scipy":
            r = rs[0]
            share = statistics.median(x["analysis_seconds_per_iter"] / x["seconds_per_iter"] for x in rs)
            line += (f"  tasks {r['tasks_issued_per_iter']:5.2f} -> {r['tasks_executed_per_iter']:5.2f}"
                     f"  memo {r['memo_hits']} hits / {r['memo_misses']} misses"
                     f"  analysis {share * 100:4.1f}%")
        print(line)
print("\n== CG by size (100 iterations, medians): ms/iter off, fused (JIT), speedup")
sizes = sorted({r["n"] for r in rows if r["part"] == "sizes"})
for side in sizes:
    t = {m: statistics.median(r["seconds_per_iter"] for r in rows
                              if r["part"] == "sizes" and r["n"] == side and mode(r) == m)
         for m in ("off", "fused-sync")}
    print(f"cg n={side:5} ({side * side:>8} unknowns)  off {t['off'] * 1e3:8.3f} ms  "
          f"fused {t['fused-sync'] * 1e3:8.3f} ms  x{t['off'] / t['fused-sync']:5.2f}")
mem = next(r for r in rows if r["part"] == "memory")
print(f"\n== memory: {mem['iterations']} CG iterations on 64 x 64: resident "
      f"{mem['rss_start_bytes'] / 2**20:.1f} MiB -> {mem['rss_end_bytes'] / 2**20:.1f} MiB; "
      f"memo {mem['memo_hits']} hits / {mem['memo_misses']} misses")
PY
