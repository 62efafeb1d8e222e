"""Dense linear algebra: milliseconds per product for NumPy (its BLAS, on every core) and
diffuse.numpy, measured interleaved in one process (median of the repeats).

Usage: linalg_speed.py [--repeats 3] [--scale 1.0] [--only NAME ...] [--json]

Cases: ``gemm`` of 1000^3 and of 1000 x 1100 x 1200 (float64), ``A @ x`` and ``A.T @ y``
on a 10000 x 12500 float64 matrix (the transpose read in place), and a chained product
``(A @ B) @ C`` of 900-ish matrices. ``--scale`` multiplies every extent (0.2 for a smoke
run). Each timed call includes ``diffuse.flush()``, so diffuse's time is the product's, not
its submission's; results are checked against NumPy's. Every timed call starts after a pause
(``SETTLE_SECONDS``): OpenBLAS's threads spin for a while after a call, and would otherwise
take a core from whichever system runs next.
"""

import argparse
import statistics
import time

import numpy

from _table import emit

#: The pause before each timed call, longer than OpenBLAS's threads spin after a call.
SETTLE_SECONDS = 0.3


def cases(scale):
    """(name, operand shapes, function of the operands) for each case."""
    def n(x):
        return max(1, int(x * scale))

    m, k = n(10000), n(12500)
    return [
        ("gemm 1000^3", [(n(1000), n(1000)), (n(1000), n(1000))], lambda np, a, b: a @ b),
        ("gemm 1000x1100x1200", [(n(1000), n(1100)), (n(1100), n(1200))],
         lambda np, a, b: a @ b),
        (f"A @ x ({m}x{k})", [(m, k), (k,)], lambda np, a, x: a @ x),
        (f"A.T @ y ({m}x{k})", [(m, k), (m,)], lambda np, a, y: a.T @ y),
        ("chain (A @ B) @ C", [(n(800), n(900)), (n(900), n(950)), (n(950), n(850))],
         lambda np, a, b, c: (a @ b) @ c),
    ]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", nargs="*", help="cases whose name starts with one of these")
    parser.add_argument("--json", action="store_true", help="one JSON record per line")
    args = parser.parse_args()
    import diffuse
    import diffuse.numpy as dnp

    rng = numpy.random.default_rng(7)
    rows = []
    for name, shapes, product in cases(args.scale):
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        host = [rng.random(s) for s in shapes]
        systems = {
            "numpy": (numpy, host, lambda: None),
            "diffuse": (dnp, [dnp.array(h) for h in host], diffuse.flush),
        }
        want = product(numpy, *host)
        timings = {s: [] for s in systems}
        for system, (np, operands, flush) in systems.items():  # warm-up, and the check
            got = numpy.asarray(product(np, *operands))
            if not numpy.allclose(got, want, rtol=1e-10, atol=1e-10 * numpy.abs(want).max()):
                raise SystemExit(f"{system}: {name} differs from NumPy's")
        for _ in range(args.repeats):
            for system, (np, operands, flush) in systems.items():
                flush()
                time.sleep(SETTLE_SECONDS)
                start = time.perf_counter()
                result = product(np, *operands)
                flush()
                timings[system].append((time.perf_counter() - start) * 1e3)
                del result
        ms = {s: statistics.median(t) for s, t in timings.items()}
        rows.append({"case": name, "numpy_ms": ms["numpy"], "diffuse_ms": ms["diffuse"],
                     "ratio": ms["diffuse"] / ms["numpy"], "repeats": args.repeats})
        del systems, host
    emit(rows, [("case", "case", 32, ""), ("numpy_ms", "numpy ms", 10, ".2f"),
                ("diffuse_ms", "diffuse ms", 11, ".2f"), ("ratio", "ratio", 7, ".2f")],
         args.json)

if __name__ == "__main__":
    main()
