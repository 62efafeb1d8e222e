"""The GPU peers of the diffuse applications: what a CuPy or JAX user runs on the GPU instead
of diffuse's `--gpu`.

Usage: gpu_peers.py APP --n N [--iters K] --module SYSTEM

APP is stencil, black-scholes or black-scholes-poly (the programs of numpy_apps.py, the same
problems, initial values and sizes as examples/src), or cg; SYSTEM is

- cupy: the NumPy programs on CuPy; cg is ``cupyx.scipy.sparse.linalg.cg`` on the cg app's
        system (the 2-D Poisson matrix of an N x N grid as scipy_solvers.py and
        diffuse_sparse::generators::poisson_2d build it, b all ones, x0 = 0), K iterations
        at rtol 0 (maxiter K), so every timed iteration runs;
- jax:  ``jax.numpy`` in float64, each iteration one ``jax.jit``-compiled function, on the
        GPU (JAX's own GPU backend; no cg here: scipy_solvers.py --module jax is JAX's).

Prints numpy_apps.py's JSON record: app, peer, n, iters, seconds_per_iter, warmup_seconds,
checksum (the sum of the first output, on the host); cg adds check, the true relative
residual ||b - A x|| / ||b|| on the host. The cg warm-up is a solve of one iteration; its
seconds_per_iter is the timed solve's seconds over K.

Where the system is not installed, there is no GPU, or the system cannot run the app, it
exits with status 3 and says why on stderr (and computes nothing on the CPU instead).
"""

import argparse
import importlib
import inspect
import json
import os
import sys
import time
import types

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_apps  # noqa: E402
import scipy_solvers  # noqa: E402

SYSTEMS = ("cupy", "jax")
APPS = ("stencil", "black-scholes", "black-scholes-poly", "cg")

# (app, system) pairs that cannot run here, and why.
CANNOT = {
    ("cg", "jax"): "the JAX solver peer is scipy_solvers.py --module jax (BCOO matrices)",
}


class Unavailable(Exception):
    """The system or a GPU for it is missing: the reason."""


def gpu_of(module):
    """Imports `module` and returns a description of the GPU it runs on; raises
    Unavailable naming what is missing."""
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise Unavailable(f"{module} is not installed ({e})") from e
    if module == "cupy":
        import cupy

        try:
            count = cupy.cuda.runtime.getDeviceCount()
            name = cupy.cuda.runtime.getDeviceProperties(0)["name"] if count else None
        except cupy.cuda.runtime.CUDARuntimeError as e:
            raise Unavailable(f"CuPy finds no CUDA driver or GPU ({e})") from e
        if not count:
            raise Unavailable("CuPy finds no GPU")
        return f"CuPy {cupy.__version__} on {name.decode() if isinstance(name, bytes) else name}"
    import jax

    try:
        devices = jax.devices("gpu")
    except RuntimeError as e:
        raise Unavailable(f"JAX {jax.__version__} has no GPU backend ({e})") from e
    return f"JAX {jax.__version__} on {devices[0].device_kind}"


def with_rtol(solve):
    """`solve` taking SciPy's `rtol`, for a CuPy whose solvers still call it `tol`."""
    if "rtol" in inspect.signature(solve).parameters:
        return solve

    def renamed(*args, rtol, **kwargs):
        return solve(*args, tol=rtol, **kwargs)

    return renamed


def cupy_cg(n, iters):
    """CuPy's CG on the cg app's system: a one-iteration warm-up, then `iters` iterations at
    rtol 0. Returns the record."""
    import cupy
    import cupyx.scipy.sparse
    import cupyx.scipy.sparse.linalg
    import scipy.sparse

    # scipy_solvers.py imports scipy.sparse in its main(); its matrix builder reads it.
    scipy_solvers.sparse = scipy.sparse
    host = scipy_solvers.poisson_2d(n)
    rows = host.shape[0]
    linalg = types.SimpleNamespace(cg=with_rtol(cupyx.scipy.sparse.linalg.cg))
    system = scipy_solvers.ScipyLike("cupy", cupy.__version__, cupy, cupyx.scipy.sparse, linalg)
    solve = system.solver("cg", system.matrix(host), system.vector(numpy.ones(rows)), 0.0, None)
    stream = cupy.cuda.get_current_stream()

    start = time.perf_counter()
    solve(1)
    stream.synchronize()
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    x, _info, iterations = solve(iters)
    stream.synchronize()
    seconds = time.perf_counter() - start
    if iterations != iters:
        raise RuntimeError(f"CuPy's cg ran {iterations} iterations, not the {iters} asked for")
    x = x.get()
    residual = numpy.linalg.norm(1.0 - host @ x) / numpy.sqrt(rows)
    return {"app": "cg", "peer": "cupy", "n": n, "iters": iters,
            "seconds_per_iter": seconds / iters, "warmup_seconds": warmup,
            "checksum": float(x.sum()), "check": float(residual)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app", choices=APPS)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--module", choices=SYSTEMS, required=True,
                        help="the system that runs the app")
    args = parser.parse_args()
    if args.iters < 1:
        parser.error("--iters must be at least 1")
    reason = CANNOT.get((args.app, args.module))
    try:
        if reason:
            raise Unavailable(reason)
        device = gpu_of(args.module)
    except Unavailable as e:
        print(f"{args.app} cannot run on {args.module}: {e}", file=sys.stderr)
        sys.exit(3)
    if args.app == "cg":
        record = cupy_cg(args.n, args.iters)
    else:
        record = numpy_apps.run(args.app, args.module, args.n, args.iters)
    record["device"] = device
    print(json.dumps(record))


if __name__ == "__main__":
    main()
