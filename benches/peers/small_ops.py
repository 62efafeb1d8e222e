"""Latency of small operations on slices of large arrays: microseconds per call for NumPy and
diffuse.numpy, measured interleaved in one process (median of the repeats).

Usage: small_ops.py [--n 2000] [--calls 2000] [--repeats 3] [--json]

The primitives are what a loop over rows or columns does once per iteration on a 2-D
float64 ``A`` (n x n, deferred in diffuse) and vectors ``x``, ``b`` (n: held by NumPy in
diffuse while n is within its eager limit, ``DIFFUSE_EAGER_ELEMENTS``, deferred above it);
``forward substitution`` is a whole iteration of
``x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]``, timed over all n rows and given per row.
"""

import argparse
import statistics
import time

import numpy

from _table import emit


def primitives(np, A, x, b, calls):
    """(name, function of the call index) for each primitive."""
    n = A.shape[0]

    def read_scalar(i):
        float(b[i % n])

    def write_scalar(i):
        x[i % n] = 1.5

    def write_product(i):
        x[i % n] = b[i % n] * 2

    def add_slices(i):
        b[:100] + b[100:200]

    def row_dot(i):
        j = 1 + i % (n - 1)
        A[j, :j] @ x[:j]

    def column_scale(i):
        A[:, i % n] * 2

    def substitution_step(i):
        j = 1 + i % (n - 1)
        x[j] = (b[j] - A[j, :j] @ x[:j]) / A[j, j]

    return [
        ("float(b[i])", read_scalar),
        ("x[i] = 1.5", write_scalar),
        ("x[i] = b[i] * 2", write_product),
        ("b[:100] + b[100:200]", add_slices),
        ("A[i, :i] @ x[:i]", row_dot),
        ("A[:, j] * 2", column_scale),
        ("x[i] = (b[i] - A[i, :i] @ x[:i]) / A[i, i]", substitution_step),
    ]


def forward_substitution(np, L, b):
    """``L x = b`` for lower-triangular ``L``, one row at a time."""
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def inputs(n, seed=7):
    """A well-conditioned lower-triangular matrix, a vector and a start vector (host)."""
    rng = numpy.random.default_rng(seed)
    L = numpy.tril(rng.random((n, n))) + n * numpy.eye(n)
    return L, rng.random(n), numpy.zeros(n)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON record per line")
    args = parser.parse_args()
    import diffuse
    import diffuse.numpy as dnp

    L, b, x = inputs(args.n)
    systems = {
        "numpy": (numpy, (L.copy(), x.copy(), b.copy()), lambda: None),
        "diffuse": (dnp, (dnp.array(L), dnp.array(x), dnp.array(b)), diffuse.flush),
    }
    timings = {}
    names = [name for name, _ in primitives(numpy, *systems["numpy"][1], 1)]
    for _ in range(args.repeats):
        for system, (np, arrays, flush) in systems.items():
            for name, call in primitives(np, *arrays, args.calls):
                for i in range(50):  # warm-up: plans memoized, kernels compiled
                    call(i)
                flush()
                start = time.perf_counter()
                for i in range(args.calls):
                    call(i)
                flush()
                seconds = time.perf_counter() - start
                timings.setdefault((name, system), []).append(seconds / args.calls * 1e6)
            A = arrays[0]
            forward_substitution(np, A, arrays[2])  # warm-up
            flush()
            start = time.perf_counter()
            got = forward_substitution(np, A, arrays[2])
            flush()
            seconds = time.perf_counter() - start
            timings.setdefault(("forward substitution", system), []).append(
                seconds / args.n * 1e6)
            want = numpy.linalg.solve(L, b)
            if not numpy.allclose(numpy.asarray(got), want):
                raise SystemExit(f"{system}: forward substitution differs from numpy.linalg.solve")
    rows = []
    for name in names + ["forward substitution"]:
        us = {s: statistics.median(timings[(name, s)]) for s in systems}
        rows.append({"op": name, "n": args.n, "numpy_us": us["numpy"], "diffuse_us": us["diffuse"],
                     "ratio": us["diffuse"] / us["numpy"]})
    emit(rows, [("op", "operation", 48, ""), ("numpy_us", "numpy us", 10, ".2f"),
                ("diffuse_us", "diffuse us", 11, ".2f"), ("ratio", "ratio", 7, ".2f")],
         args.json)

if __name__ == "__main__":
    main()
