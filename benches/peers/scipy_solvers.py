"""Krylov solvers on the systems the diffuse solver apps solve (examples/src/solvers), as a
SciPy user, a JAX user and a diffuse user write them: the peers they are compared with
(iteration counts, residuals, time per iteration).

Usage: scipy_solvers.py METHOD (--n N | --matrix FILE) [--rtol R] [--maxiter K]
                        [--module SYSTEM]

METHOD is cg, bicgstab or cgs (no preconditioner), or gmg: CG preconditioned by one
geometric multigrid V-cycle per iteration (weighted Jacobi smoother, injection
restriction, bilinear prolongation; libs/sparse/src/solvers/gmg.rs), on the Poisson system
only, with n = 2^k - 1. The system is the 2-D Poisson matrix of an n x n grid (5-point, 4
on the diagonal, -1 off it; rows numbered row-major like
diffuse_sparse::generators::poisson_2d) or a Matrix Market file, b all ones, x0 = 0.
`--rtol 0` runs exactly K iterations (for timing).

SYSTEM (default scipy) is
- scipy:   scipy.sparse CSR matrices and scipy.sparse.linalg's solvers (gmg: cg with the
           V-cycle as a LinearOperator preconditioner);
- diffuse: the same program on diffuse's Python package (diffuse.sparse, diffuse.numpy);
- jax:     jax.experimental.sparse BCOO matrices and jax.scipy.sparse.linalg's cg and
           bicgstab (gmg: cg with the V-cycle as M), jit-compiled whole; JAX has no cgs,
           so cgs is SciPy's algorithm written with jax.lax.while_loop. JAX's solvers
           report no iteration count: with --rtol 0 it is K, otherwise unknown (null).
dask, cupynumeric and numexpr have no sparse matrices: they exit with status 3 and say so.

The first call is a warm-up of one iteration (for JAX including the compilation, which
the timed call reuses); the second, timed, call runs the solve. Prints one JSON record:
app (the method), peer (the system), version, n, rows, nnz, info, iterations, check (the
true relative residual ||b - A x|| / ||b||, on the host), seconds, seconds_per_iter and
warmup_seconds.
"""

import argparse
import json
import sys
import time

import numpy

# scipy.sparse, imported by main() once the system can run (a system that cannot may live
# in a venv without SciPy).
sparse = None

SYSTEMS = ("scipy", "diffuse", "jax", "dask", "cupynumeric", "numexpr")
METHODS = ("cg", "bicgstab", "cgs", "gmg")

# Systems that cannot run the solvers, and why.
CANNOT = {
    "dask": "dask.array has no sparse CSR matrix (no sparse matrix-vector product on PyPI)",
    "cupynumeric": "cuPyNumeric has no sparse matrices (Legate Sparse is not on PyPI)",
    "numexpr": "numexpr evaluates element-wise expressions only: it has no sparse matrices",
}


def poisson_2d(n):
    """The 2-D Poisson matrix of an n x n grid, as a SciPy CSR matrix."""
    ones = numpy.ones(n)
    t = sparse.diags([-ones[:-1], 2 * ones, -ones[:-1]], [-1, 0, 1])
    eye = sparse.identity(n)
    # kron(I, T) + kron(T, I) has 4 on the diagonal and -1 for the four neighbours.
    return (sparse.kron(eye, t) + sparse.kron(t, eye)).tocsr()


# --- geometric multigrid ----------------------------------------------------------------

OMEGA = 2.0 / 3.0  # the Jacobi weight
DIAGONAL = 4.0  # the diagonal of the 5-point Laplacian
SWEEPS = 2  # smoothing sweeps before and after the coarse correction
COARSEST_SWEEPS = 8  # Jacobi sweeps that stand for a solve on the coarsest grid
COARSEST = 3  # the coarsest grid side


def is_multigrid_side(n):
    """True when n = 2^k - 1 (k >= 1): every coarser grid is then (n - 1) / 2."""
    return n >= 1 and (n + 1) & n == 0


def injection_1d(fine, coarse):
    """coarse x fine: coarse point i takes fine point 2 i + 1."""
    i = numpy.arange(coarse)
    return sparse.csr_matrix((numpy.ones(coarse), (i, 2 * i + 1)), shape=(coarse, fine))


def interpolation_1d(fine, coarse):
    """fine x coarse linear interpolation: coarse point i gives 1 to fine point 2 i + 1 and
    1/2 to its neighbours 2 i and 2 i + 2."""
    i = numpy.arange(coarse)
    rows = numpy.concatenate([2 * i, 2 * i + 1, 2 * i + 2])
    weights = numpy.repeat([0.5, 1.0, 0.5], coarse)
    return sparse.csr_matrix((weights, (rows, numpy.tile(i, 3))), shape=(fine, coarse))


def hierarchy(a, n):
    """The levels (operator, restriction, prolongation) from the n x n grid with operator
    `a` down to the coarsest, as SciPy matrices; the coarsest has no transfers. In 2-D the
    transfers are Kronecker products of the 1-D ones (rows numbered row-major)."""
    levels = []
    side = n
    while side > COARSEST:
        coarse = (side - 1) // 2
        r, p = injection_1d(side, coarse), interpolation_1d(side, coarse)
        levels.append((a, sparse.kron(r, r).tocsr(), sparse.kron(p, p).tocsr()))
        a, side = poisson_2d(coarse), coarse
    levels.append((a, None, None))
    return levels


def smooth(a, rhs, e, sweeps):
    """`sweeps` weighted Jacobi sweeps on a e = rhs from `e` (None: from zero)."""
    step = OMEGA / DIAGONAL
    done = 0
    if e is None:  # the first sweep from zero is step * rhs
        e, done = rhs * step, 1
    for _ in range(done, sweeps):
        e = e + (rhs - a @ e) * step
    return e


def v_cycle(levels, rhs, level=0):
    """One V-cycle from `level` for a e = rhs: an approximation of e. The injected residual
    goes to the coarse operator unscaled, as libs/sparse/src/solvers/gmg.rs explains."""
    a, restrict, prolong = levels[level]
    if restrict is None:
        return smooth(a, rhs, None, COARSEST_SWEEPS)
    e = smooth(a, rhs, None, SWEEPS)
    correction = v_cycle(levels, restrict @ (rhs - a @ e), level + 1)
    return smooth(a, rhs, e + prolong @ correction, SWEEPS)


# --- the systems ------------------------------------------------------------------------

class ScipyLike:
    """SciPy's solvers, or diffuse's with the same signatures (`np`: the array module,
    `matrices`: the module with csr_matrix, `linalg`: the solvers)."""

    def __init__(self, name, version, np, matrices, linalg):
        self.name, self.version = name, version
        self.np, self.matrices, self.linalg = np, matrices, linalg

    def matrix(self, host):
        """The system's matrix holding the SciPy matrix `host`."""
        return host if self.matrices is sparse else self.matrices.csr_matrix(host)

    def vector(self, host):
        """The system's vector holding the NumPy vector `host`."""
        return self.np.asarray(host)

    def preconditioner(self, levels, rows):
        """What the solver takes as M for one V-cycle over `levels`."""
        from scipy.sparse.linalg import LinearOperator

        return LinearOperator((rows, rows), matvec=lambda r: v_cycle(levels, r),
                              dtype=numpy.float64)

    def solver(self, method, a, b, rtol, M):
        """`solve(maxiter)` -> (x, info, iterations): `method` on a x = b from x = 0."""
        krylov = getattr(self.linalg, "cg" if method == "gmg" else method)

        def solve(maxiter):
            iterations = 0

            def count(_x):
                nonlocal iterations
                iterations += 1

            x, info = krylov(a, b, rtol=rtol, atol=0.0, maxiter=maxiter, M=M, callback=count)
            return x, int(info), iterations

        return solve


class Jax:
    """JAX's solvers on BCOO matrices (JAX's main sparse format; its solvers ran about twice
    as fast on them as on BCSR here), the whole solve one jit-compiled function (the
    iteration cap a traced argument, so the warm-up's compilation serves the timed run).
    The methods are ScipyLike's."""

    def __init__(self):
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy
        import jax.scipy.sparse.linalg
        from jax.experimental import sparse

        self.jax, self.np, self.bcoo = jax, jax.numpy, sparse.BCOO
        self.name, self.version = "jax", jax.__version__
        self.linalg = {"cg": jax.scipy.sparse.linalg.cg, "gmg": jax.scipy.sparse.linalg.cg,
                       "bicgstab": jax.scipy.sparse.linalg.bicgstab, "cgs": self.cgs}

    def matrix(self, host):
        return self.bcoo.from_scipy_sparse(host)

    def vector(self, host):
        return self.np.asarray(host)

    def preconditioner(self, levels, rows):
        return levels  # passed to the compiled solve as an argument, applied by v_cycle

    def solver(self, method, a, b, rtol, M):
        krylov = self.linalg[method]

        @self.jax.jit
        def run(a, b, maxiter, levels):
            precondition = None if levels is None else (lambda r: v_cycle(levels, r))
            return krylov(a, b, tol=rtol, atol=0.0, maxiter=maxiter, M=precondition)

        def solve(maxiter):
            # JAX's cg and bicgstab return (x, None); cgs above returns (x, iterations).
            x, iterations = run(a, b, maxiter, M)
            x = self.jax.block_until_ready(x)
            if iterations is None and rtol == 0:
                iterations = maxiter  # no tolerance: the loop runs to the cap
            return x, None, iterations

        return solve

    def cgs(self, a, b, *, tol, atol, maxiter, M=None):
        """SciPy's cgs (which JAX lacks; no preconditioner) as a lax.while_loop: stops when
        ||r|| < max(tol ||b||, atol) or after `maxiter` iterations. Returns (x, the
        iterations run)."""
        jnp, lax = self.np, self.jax.lax
        limit = jnp.maximum(tol * jnp.linalg.norm(b), atol)
        rtilde = b  # the residual of x0 = 0

        def going(state):
            k, _x, r, *_ = state
            return (k < maxiter) & (jnp.linalg.norm(r) >= limit)

        def iteration(state):
            k, x, r, p, u, q, rho_prev = state
            rho = rtilde @ r
            beta = rho / rho_prev
            # With p = q = 0 and rho_prev = 1 at the start these give u = p = r, SciPy's
            # first iteration.
            u = r + beta * q
            p = (p * beta + q) * beta + u
            vhat = a @ p
            alpha = rho / (rtilde @ vhat)
            q = u - alpha * vhat
            x = x + alpha * (u + q)
            r = b - a @ x  # SciPy recomputes the residual rather than updating it
            return k + 1, x, r, p, u, q, rho

        zero = jnp.zeros_like(b)
        start = (0, zero, b, zero, zero, zero, jnp.ones((), b.dtype))
        k, x, *_ = lax.while_loop(going, iteration, start)
        return x, k


def load_system(name):
    """The system `name`'s solvers."""
    if name == "jax":
        return Jax()
    if name == "diffuse":
        from importlib.metadata import version

        import diffuse.numpy
        import diffuse.sparse
        import diffuse.sparse.linalg

        return ScipyLike("diffuse", version("diffuse"), diffuse.numpy, diffuse.sparse,
                         diffuse.sparse.linalg)
    import scipy
    import scipy.sparse.linalg

    return ScipyLike("scipy", scipy.__version__, numpy, sparse, scipy.sparse.linalg)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("method", choices=METHODS)
    parser.add_argument("--n", type=int, default=1024, help="grid side of the Poisson system")
    parser.add_argument("--matrix", help="a Matrix Market file instead of the Poisson system")
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--maxiter", type=int, default=10000)
    parser.add_argument("--module", choices=SYSTEMS, default="scipy",
                        help="the system that runs the solver")
    args = parser.parse_args()
    if args.module in CANNOT:
        print(f"{args.method} cannot run on {args.module}: {CANNOT[args.module]}",
              file=sys.stderr)
        sys.exit(3)
    if args.method == "gmg" and (args.matrix or not is_multigrid_side(args.n)):
        parser.error("gmg needs the Poisson system of an --n x --n grid with n = 2^k - 1 "
                     "(3, 7, 15, ..., 1023)")

    global sparse
    import scipy.io
    import scipy.sparse as sparse

    if args.matrix:
        host = sparse.csr_matrix(scipy.io.mmread(args.matrix), dtype=numpy.float64)
    else:
        host = poisson_2d(args.n)
    rows = host.shape[0]
    system = load_system(args.module)
    a = system.matrix(host)
    b = system.vector(numpy.ones(rows))
    M = None
    if args.method == "gmg":
        levels = [tuple(None if m is None else system.matrix(m) for m in level)
                  for level in hierarchy(host, args.n)]
        M = system.preconditioner(levels, rows)
    solve = system.solver(args.method, a, b, args.rtol, M)

    start = time.perf_counter()
    solve(1)
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    x, info, iterations = solve(args.maxiter)
    seconds = time.perf_counter() - start
    x = numpy.asarray(x, dtype=numpy.float64)
    residual = numpy.linalg.norm(1.0 - host @ x) / numpy.sqrt(rows)
    print(json.dumps({
        "app": args.method,
        "peer": system.name,
        "version": system.version,
        "n": rows if args.matrix else args.n,
        "rows": rows,
        "nnz": int(host.nnz),
        "info": info,
        "iterations": None if iterations is None else int(iterations),
        "check": float(residual),
        "seconds": seconds,
        "seconds_per_iter": None if iterations is None else seconds / max(int(iterations), 1),
        "warmup_seconds": warmup,
    }))


if __name__ == "__main__":
    main()
