"""SciPy's Krylov solvers on the systems the diffuse solver apps solve: the peer they are
compared with (iteration counts, residuals, time per iteration).

The system is the 2-D Poisson matrix of an n x n grid (5-point, 4 on the diagonal, -1 off
it; rows numbered row-major like diffuse_sparse::generators::poisson_2d) or a Matrix
Market file, and b all ones, x0 = 0, no preconditioner. Prints one JSON record.
Usage: scipy_solvers.py cg|bicgstab|cgs (--n N | --matrix FILE) [--rtol R] [--maxiter K]
                         [--module scipy|diffuse]
With `--module diffuse` the same program runs on diffuse's Python package (the import lines
are the only difference).
"""

import argparse
import json
import sys
import time

import scipy
import scipy.io

if "--module" in sys.argv and sys.argv[sys.argv.index("--module") + 1] == "diffuse":
    import diffuse.numpy as np
    import diffuse.sparse as sp
    import diffuse.sparse.linalg as sla
else:
    import numpy as np
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla


def poisson_2d(n):
    ones = np.ones(n)
    t = sp.diags([-ones[:-1], 2 * ones, -ones[:-1]], [-1, 0, 1])
    eye = sp.identity(n)
    # kron(I, T) + kron(T, I) has 4 on the diagonal and -1 for the four neighbours.
    return (sp.kron(eye, t) + sp.kron(t, eye)).tocsr()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("method", choices=["cg", "bicgstab", "cgs"])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--matrix")
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--maxiter", type=int, default=10000)
    parser.add_argument("--module", choices=["scipy", "diffuse"], default="scipy")
    args = parser.parse_args()

    if args.matrix:
        a = sp.csr_matrix(scipy.io.mmread(args.matrix))
    else:
        a = poisson_2d(args.n)
    rows = a.shape[0]
    b = np.ones(rows)
    iterations = 0

    def count(_x):
        nonlocal iterations
        iterations += 1

    solver = getattr(sla, args.method)
    start = time.perf_counter()
    x, info = solver(a, b, rtol=args.rtol, atol=0.0, maxiter=args.maxiter, callback=count)
    seconds = time.perf_counter() - start
    residual = np.linalg.norm(b - a @ x) / np.linalg.norm(b)
    print(json.dumps({
        "app": args.method,
        "peer": "scipy " + scipy.__version__ if args.module == "scipy" else "diffuse",
        "rows": rows,
        "nnz": int(a.nnz),
        "info": int(info),
        "iterations": iterations,
        "check": float(residual),
        "seconds": seconds,
        "seconds_per_iter": seconds / max(iterations, 1),
    }))


if __name__ == "__main__":
    main()
