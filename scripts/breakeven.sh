#!/usr/bin/env bash
# Compile breakeven (the Diffuse paper's Figure 15): for each app, the warm-up and steady
# iteration time unfused, fused with native kernels, fused with the JIT compiling before use
# (sync) and in the background (on), and the iterations after which each fused run's total
# time drops below the unfused run's: ceil((W_fused - W_off) / (I_off - I_fused)), where W is
# the warm-up iteration plus any wait for background compiles (a conservative bound: the
# iterations overlapping the compile are counted as if nothing ran) and I the steady
# iteration. Usage: scripts/breakeven.sh [repetitions] (medians over repetitions; each
# repetition is a fresh process, so every kernel is compiled again).
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"
cargo build --release --quiet -p diffuse-examples
bin=target/release/diffuse-examples
out=target/breakeven.jsonl
: >"$out"
run() { "$bin" "$@" --json >>"$out"; }
for _ in $(seq "$reps"); do
    for mode in "--fusion off" "--fusion on --jit off" "--fusion on --jit sync" "--fusion on --jit on"; do
        # shellcheck disable=SC2086 # the mode is several flags
        run stencil --n 4096 --iters 10 $mode
        # shellcheck disable=SC2086
        run black-scholes --n 10000000 --iters 5 $mode
        # shellcheck disable=SC2086
        run cfd --n 128 --iters 20 $mode
    done
done
python3 - "$out" <<'PY'
import json, math, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def label(r):
    return "off" if r["fusion"] == "off" else f"fused, jit {r['jit']}"
groups = {}
for r in rows:
    groups.setdefault((r["app"], label(r)), []).append(r)
med = lambda rs, f: statistics.median(f(r) for r in rs)
print(f"{'app':14} {'run':16} {'warm-up ms':>11} {'compile ms':>11} {'iter ms':>9} {'breakeven':>10}")
for app in dict.fromkeys(r["app"] for r in rows):
    base = groups[(app, "off")]
    w0 = med(base, lambda r: r["warmup_seconds"])
    i0 = med(base, lambda r: r["seconds_per_iter"])
    for name in ["off", "fused, jit off", "fused, jit sync", "fused, jit on"]:
        rs = groups.get((app, name))
        if not rs:
            continue
        w = med(rs, lambda r: r["warmup_seconds"] + r["compile_wait_seconds"])
        c = med(rs, lambda r: r["compile_seconds"])
        i = med(rs, lambda r: r["seconds_per_iter"])
        if name == "off":
            k = "-"
        elif w <= w0:
            k = "0"
        elif i < i0:
            k = str(math.ceil((w - w0) / (i0 - i)))
        else:
            k = "never"
        print(f"{app:14} {name:16} {w*1e3:11.1f} {c*1e3:11.1f} {i*1e3:9.2f} {k:>10}")
PY
