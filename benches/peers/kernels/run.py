"""Runs the suite's kernels (registry.py) on NumPy and on diffuse, validates diffuse's
results against NumPy's and times both.

Usage: run.py [--sizes small,medium,large] [--kernels NAME,...] [--repeats N]
              [--budget SECONDS] [--validate-only] [--json FILE]

For every kernel and size: one untimed run on each system, whose results are compared
(``numpy.allclose`` with the kernel's tolerance, same shapes and dtypes; a mismatch or an
exception in diffuse is a failure), then ``--repeats`` timed runs alternating NumPy and
diffuse, whose medians are reported (fewer repeats where one round would take more than
``--budget`` seconds in all; at least one). Inputs are made by NumPy, copied afresh for
every run outside the timed region (diffuse's with ``diffuse.numpy.array``), since kernels
may update them in place. Each timed run starts after a pause (``SETTLE``), so that the
BLAS threads of the run before it have stopped spinning. A diffuse run's time ends when
``diffuse.flush()`` returns, so deferred work is counted; converting its results to NumPy
for validation is not timed.

diffuse warns once per process when a routine is not native ("... is not native to
diffuse; it runs on NumPy"); the runner forgets those warnings before every diffuse run,
so each kernel records the fallbacks it met.

Prints a table, the geometric mean of the speedups (NumPy time over diffuse time) per size
and how many kernels are slower than NumPy by more than 1.25x. ``--validate-only`` runs
each kernel once per system and prints only the validation. ``--json FILE`` writes one
JSON record per kernel and size (one per line): kernel, class, size, n, numpy_s,
diffuse_s, speedup (null when not timed), repeats, valid, difference, error,
fallback_warnings, the first (untimed) runs' seconds, the machine and its load average
when the case ended. Exits with status 1 when
any result is invalid.
"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
import warnings

import numpy

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from kernels.registry import BY_NAME, KERNELS, SIZES  # noqa: E402

import diffuse  # noqa: E402
import diffuse.numpy as dnp  # noqa: E402
from diffuse import _interop  # noqa: E402

# What diffuse's fallback warning says (python/diffuse/_interop.py, _warn_fallback).
FALLBACK_MARK = "is not native to diffuse"
# Slower than NumPy by more than this counts as slower (issue 50's bound at the smallest
# size).
SLOWER = 1.25
# Seconds each timed run waits first (``settle``).
SETTLE = 0.2


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="small,medium,large",
                        help="comma-separated sizes among " + ", ".join(SIZES))
    parser.add_argument("--kernels", default=None,
                        help="comma-separated kernel names (default: all)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs per system, interleaved (default 3)")
    parser.add_argument("--budget", type=float, default=120.0,
                        help="seconds one case's timed runs may take in all before their "
                             "repeats are reduced (default 120)")
    parser.add_argument("--validate-only", action="store_true",
                        help="one run per system, validation only, no timing table")
    parser.add_argument("--json", default=None, help="write JSON records to this file")
    args = parser.parse_args(argv)
    sizes = args.sizes.split(",")
    for s in sizes:
        if s not in SIZES:
            parser.error(f"unknown size {s!r}; sizes are {', '.join(SIZES)}")
    names = args.kernels.split(",") if args.kernels else [k.name for k in KERNELS]
    for name in names:
        if name not in BY_NAME:
            parser.error(f"unknown kernel {name!r}; kernels are {', '.join(BY_NAME)}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    args.sizes, args.kernels = sizes, [BY_NAME[n] for n in names]
    return args


def fresh(inputs, array):
    """The inputs with every NumPy array replaced by ``array(it)`` (a new copy)."""
    return [array(x) if isinstance(x, numpy.ndarray) else x for x in inputs]


def outputs(result):
    """A kernel's result as a tuple of NumPy arrays."""
    parts = result if isinstance(result, tuple) else (result,)
    return tuple(numpy.asarray(p) for p in parts)


def settle(pause):
    """Waits ``pause`` seconds before a timed run, so that the run before it has let go of
    the cores: OpenBLAS's threads spin for about 0.1 s after a BLAS call before they sleep,
    and whichever system ran right after NumPy's product would share the cores with them."""
    if pause:
        time.sleep(pause)


def run_numpy(kernel, inputs, pause=0.0):
    """One NumPy run (after ``settle(pause)``): (seconds, result)."""
    args = fresh(inputs, numpy.array)
    settle(pause)
    start = time.perf_counter()
    result = kernel.function(numpy, *args)
    return time.perf_counter() - start, result


def run_diffuse(kernel, inputs, pause=0.0):
    """One diffuse run (after ``settle(pause)``), until ``diffuse.flush()`` returns:
    (seconds, result, the fallback warnings raised)."""
    args = fresh(inputs, dnp.array)
    diffuse.flush()
    settle(pause)
    # diffuse warns once per routine and process: forget, so this run reports its own.
    _interop._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        result = kernel.function(dnp, *args)
        diffuse.flush()
        seconds = time.perf_counter() - start
    fallbacks = {str(w.message) for w in caught if FALLBACK_MARK in str(w.message)}
    return seconds, result, fallbacks


def difference(got, want, rtol, atol):
    """None when every output of ``got`` matches ``want`` (shape, dtype, ``allclose``),
    else a sentence saying where and by how much the first mismatch differs."""
    if len(got) != len(want):
        return f"{len(got)} outputs, NumPy gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {i}: {g.dtype}{list(g.shape)}, NumPy's {w.dtype}{list(w.shape)}"
        if numpy.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            continue
        bad = ~numpy.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        err = numpy.where(bad, numpy.abs(g.astype(numpy.float64) - w), 0.0)
        worst = numpy.unravel_index(numpy.argmax(err), err.shape) if err.ndim else ()
        at = tuple(int(j) for j in worst)
        rel = err[worst] / max(abs(float(w[worst])), 1e-300)
        return (f"output {i}: {int(bad.sum())} of {w.size} elements differ; worst at {at}: "
                f"diffuse {g[worst].item()!r}, NumPy {w[worst].item()!r} (abs "
                f"{err[worst]:.3e}, rel {rel:.3e}; rtol {rtol:g}, atol {atol:g})")
    return None


def run_case(kernel, size, args):
    """Validates and times ``kernel`` at ``size``: its JSON record."""
    n = kernel.sizes[size]
    inputs = kernel.make_inputs(n, numpy.random.default_rng(50))
    record = {"kernel": kernel.name, "class": kernel.cls, "size": size, "n": n,
              "numpy_s": None, "diffuse_s": None, "speedup": None, "repeats": 0,
              "numpy_first_s": None, "diffuse_first_s": None,
              "valid": False, "difference": None, "error": None, "fallback_warnings": []}
    numpy_first, want = run_numpy(kernel, inputs)
    want = outputs(want)
    fallbacks = set()
    try:
        diffuse_first, got, met = run_diffuse(kernel, inputs)
        fallbacks |= met
        got = outputs(got)
    except Exception as e:  # a diffuse failure is a result to report, not the end
        record["error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
        return record
    record.update(numpy_first_s=numpy_first, diffuse_first_s=diffuse_first)
    record["difference"] = difference(got, want, kernel.rtol, kernel.atol)
    record["valid"] = record["difference"] is None
    if not args.validate_only:
        repeats = max(1, min(args.repeats,
                             int(args.budget // max(numpy_first + diffuse_first, 1e-9))))
        times = {"numpy": [], "diffuse": []}
        for _ in range(repeats):
            times["numpy"].append(run_numpy(kernel, inputs, SETTLE)[0])
            seconds, _, met = run_diffuse(kernel, inputs, SETTLE)
            fallbacks |= met
            times["diffuse"].append(seconds)
        record.update(numpy_s=statistics.median(times["numpy"]),
                      diffuse_s=statistics.median(times["diffuse"]), repeats=repeats,
                      numpy_runs=times["numpy"], diffuse_runs=times["diffuse"])
        record["speedup"] = record["numpy_s"] / record["diffuse_s"]
    record["fallback_warnings"] = sorted(fallbacks)
    return record


def machine_info():
    """What the numbers were measured on: host, CPU, NumPy and its BLAS, diffuse's
    version and settings, the commit, the date."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # NumPy versions differ in what show_config reports
        blas = "unknown"
    try:
        from importlib.metadata import version
        diffuse_version = version("diffuse")
    except Exception:
        diffuse_version = "unknown"
    here = os.path.dirname(os.path.abspath(__file__))
    commit = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    return {"host": platform.node(), "platform": platform.platform(), "cpu": cpu,
            "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": numpy.__version__, "blas": blas, "diffuse": diffuse_version,
            "python_executable": sys.executable,
            "commit": commit,
            "diffuse_env": {k: v for k, v in sorted(os.environ.items())
                            if k.startswith("DIFFUSE_")},
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def print_row(r, timed):
    status = "ok" if r["valid"] else "FAIL"
    line = f"{r['kernel']:24s} {r['class']:11s} {r['size']:7s} {r['n']:>9}"
    if timed and r["speedup"] is not None:
        line += (f" {r['numpy_s'] * 1e3:11.2f} {r['diffuse_s'] * 1e3:11.2f}"
                 f" {r['speedup']:8.2f}x")
    line += f"  {status}"
    if r["fallback_warnings"]:
        line += f"  fallbacks: {len(r['fallback_warnings'])}"
    print(line, flush=True)
    for why in filter(None, (r["error"], r["difference"])):
        print(f"    {why}", flush=True)
    for w in r["fallback_warnings"]:
        print(f"    {w}", flush=True)


def summary(records, sizes):
    """Per size: the geometric-mean speedup and the kernels slower than NumPy by more than
    ``SLOWER``; then every failure."""
    for size in sizes:
        timed = [r for r in records if r["size"] == size and r["speedup"]]
        if not timed:
            continue
        slower = sorted((r for r in timed if r["speedup"] < 1.0 / SLOWER),
                        key=lambda r: r["speedup"])
        print(f"{size}: geo-mean speedup {geomean([r['speedup'] for r in timed]):.3f}x over "
              f"{len(timed)} kernels; {len(slower)} slower than NumPy by more than "
              f"{SLOWER}x" + (": " + ", ".join(f"{r['kernel']} {1 / r['speedup']:.1f}x"
                                               for r in slower) if slower else ""))
    failed = [r for r in records if not r["valid"]]
    print(f"{len(records) - len(failed)} of {len(records)} results valid"
          + (": failed " + ", ".join(f"{r['kernel']} ({r['size']})" for r in failed)
             if failed else ""))
    fallbacks = [r for r in records if r["fallback_warnings"]]
    if fallbacks:
        print("fallbacks to NumPy: " + ", ".join(f"{r['kernel']} ({r['size']})"
                                                 for r in fallbacks))


def main(argv=None):
    args = parse_args(argv)
    machine = machine_info()
    timed = not args.validate_only
    header = f"{'kernel':24s} {'class':11s} {'size':7s} {'n':>9}"
    if timed:
        header += f" {'numpy ms':>11s} {'diffuse ms':>11s} {'speedup':>9s}"
    print(header + "  valid", flush=True)
    records = []
    out = open(args.json, "w") if args.json else None
    try:
        for size in args.sizes:
            for kernel in args.kernels:
                record = run_case(kernel, size, args)
                record["machine"] = machine
                # Other processes on the machine skew the timings: the 1-minute load.
                record["load"] = os.getloadavg()[0]
                records.append(record)
                print_row(record, timed)
                if out:
                    out.write(json.dumps(record) + "\n")
                    out.flush()
    finally:
        if out:
            out.close()
    summary(records, args.sizes)
    return 0 if all(r["valid"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
