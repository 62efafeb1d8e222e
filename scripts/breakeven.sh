#!/usr/bin/env bash
# Compile breakeven (the Diffuse paper's Figure 15). For each app: the warm-up and steady
# iteration time unfused, fused with native kernels, and fused with the JIT compiling before
# first use (`sync`) or in the background while native kernels run (`on`, timed without
# waiting: `--jit-wait false`); then the breakeven, the first iteration count k at which a
# fused run's total time from the start (warm-up, any wait, and its first k timed
# iterations, measured one by one) is at most the unfused run's, and for the JIT runs also
# against fused native kernels. Iterations past those measured are extrapolated with the
# median of the last half. Usage: scripts/breakeven.sh [repetitions] (medians over fresh
# processes, so every kernel is compiled again each time).
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"
cargo build --release --quiet -p diffuse-examples
bin=target/release/diffuse-examples
out=target/breakeven.jsonl
: >"$out"
run() { "$bin" "$@" --json 2>/dev/null >>"$out"; }
modes=("--fusion off" "--fusion on --jit off" "--fusion on --jit sync" "--fusion on --jit on --jit-wait false")
for _ in $(seq "$reps"); do
    for mode in "${modes[@]}"; do
        # shellcheck disable=SC2086 # the mode is several flags
        run stencil --n 4096 --iters 20 $mode
        # shellcheck disable=SC2086
        run black-scholes --n 10000000 --iters 10 $mode
        # shellcheck disable=SC2086
        run cfd --n 128 --iters 60 $mode
    done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
label = lambda r: "off" if r["fusion"] == "off" else f"fused, jit {r['jit']}"
groups = {}
for r in rows:
    groups.setdefault((r["app"], label(r)), []).append(r)

def curve(rs):
    """Median total seconds after k = 0, 1, .. iterations (0 = warm-up and wait)."""
    per = []
    for r in rs:
        its = r["iteration_seconds"]
        tail = statistics.median(its[len(its) // 2:])
        its = its + [tail] * 10000
        total, c = r["warmup_seconds"] + r["compile_wait_seconds"], []
        c.append(total)
        for t in its:
            total += t
            c.append(total)
        per.append(c)
    return [statistics.median(x) for x in zip(*per)]

def breakeven(mine, base):
    return next((k for k, (a, b) in enumerate(zip(mine, base)) if k > 0 and a <= b), None)

print(f"{'app':14} {'run':16} {'warm-up ms':>10} {'compile ms':>10} {'iter ms':>8}"
      f" {'vs off':>7} {'breakeven vs off':>17} {'vs fused':>9}")
for app in dict.fromkeys(r["app"] for r in rows):
    off = curve(groups[(app, "off")])
    native = curve(groups[(app, "fused, jit off")])
    steady = lambda r: statistics.median(r["iteration_seconds"][len(r["iteration_seconds"]) // 2:])
    i_off = statistics.median(steady(r) for r in groups[(app, "off")])
    for name in ["off", "fused, jit off", "fused, jit sync", "fused, jit on"]:
        rs = groups.get((app, name))
        if not rs:
            continue
        c = curve(rs)
        w = statistics.median(r["warmup_seconds"] + r["compile_wait_seconds"] for r in rs)
        comp = statistics.median(r["compile_seconds"] for r in rs)
        it = statistics.median(steady(r) for r in rs)
        k_off = "-" if name == "off" else breakeven(c, off)
        k_nat = breakeven(c, native) if "sync" in name or "jit on" in name else "-"
        print(f"{app:14} {name:16} {w*1e3:10.1f} {comp*1e3:10.1f} {it*1e3:8.2f}"
              f" {i_off / it:6.2f}x {str(k_off if k_off is not None else 'never'):>17}"
              f" {str(k_nat if k_nat is not None else 'never'):>9}")
PY
