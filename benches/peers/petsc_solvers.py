"""Krylov solvers on the 2-D Poisson system in PETSc, over MPI: the peer an HPC user would
pick for the diffuse solver apps (examples/src/solvers), next to scipy_solvers.py.

Usage: mpirun -np RANKS /usr/bin/python3 petsc_solvers.py [--n N] [--iters K]
                                                          [--solvers cg,bicgstab,cgs] [--reps R]

The system is scipy_solvers.py's: the 2-D Poisson matrix of an n x n grid (5-point, 4 on
the diagonal, -1 off it, rows numbered row-major), b all ones, x0 = 0. The matrix is a
distributed AIJ matrix, each rank assembling its own block of rows. Each solver is a KSP
(cg, bcgs for bicgstab, cgs) without preconditioner (PCNONE) whose convergence test never
stops it (residual norms are still computed every iteration, as SciPy's solvers do), so it
runs exactly K iterations unless it breaks down.

Per solver: a warm-up solve of one iteration (reported, as in scipy_solvers.py, but not
counted), then R timed solves of K iterations, each between barriers so that it counts the
slowest rank. Rank 0 prints one JSON record with scipy_solvers.py's fields: app, peer
(petsc-1rank, petsc-2ranks, ...), version, n, rows, nnz, info (the KSP's converged reason;
-3, DIVERGED_MAX_IT, when it ran all K iterations), iterations, check (the true relative
residual ||b - A x|| / ||b||), seconds (the median of the timed solves), seconds_per_iter
and warmup_seconds, plus ranks.

Debian's python3-petsc4py is built for the system Python: run it with /usr/bin/python3.
"""

import argparse
import glob
import json
import os
import statistics
import sys
import time

import numpy

# The solvers this peer runs, as KSP types.
KSP_TYPES = {"cg": "cg", "bicgstab": "bcgs", "cgs": "cgs"}

# Solver apps this peer cannot run, and why (exit status 3, as in scipy_solvers.py).
CANNOT = {
    "gmg": "this peer has no preconditioners: PETSc's multigrid (PCMG) is not the V-cycle of "
           "libs/sparse/src/solvers/gmg.rs",
}


def import_petsc():
    """petsc4py's PETSc module, initialised without command-line options. Debian's
    python3-petsc4py finds its PETSc build through PETSC_DIR or the /usr/lib/petsc
    alternative, which only PETSc's development package creates; with neither, this takes
    the real-number build under /usr/lib/petscdir."""
    if not os.environ.get("PETSC_DIR") and not os.path.isdir("/usr/lib/petsc"):
        builds = sorted(glob.glob("/usr/lib/petscdir/petsc*/*-real/lib/python3/dist-packages"))
        if builds:
            sys.path.append(builds[-1])
    try:
        import petsc4py

        petsc4py.init([])
        from petsc4py import PETSc
    # ValueError: a build for another NumPy ABI ("numpy.dtype size changed").
    except (ImportError, ValueError) as error:
        sys.exit(f"petsc_solvers.py: petsc4py does not load in {sys.executable} ({error}): "
                 "install Debian's python3-petsc4py (scripts/peers-setup.sh) and run this "
                 "with /usr/bin/python3")
    return PETSc


def poisson_rows(start, stop, n, itype):
    """Rows start..stop of the n x n grid's Poisson matrix in CSR form (row pointers,
    global column indices in increasing order, values)."""
    rows = numpy.arange(start, stop, dtype=itype)
    r, c = numpy.divmod(rows, n)
    # The neighbours above, left, the point itself, right and below: increasing columns.
    offsets = numpy.array([-n, -1, 0, 1, n], dtype=itype)
    present = numpy.stack([r > 0, c > 0, numpy.ones_like(r, dtype=bool), c < n - 1,
                           r < n - 1], axis=1)
    columns = (rows[:, None] + offsets)[present]
    values = numpy.broadcast_to(numpy.where(offsets == 0, 4.0, -1.0), present.shape)[present]
    pointers = numpy.zeros(len(rows) + 1, dtype=itype)
    numpy.cumsum(present.sum(axis=1), out=pointers[1:])
    return pointers, columns, values


def never_converged(_ksp, _iteration, _norm):
    """A KSP convergence test that never stops the solve: it ends at max_it."""
    return 0  # KSP_CONVERGED_ITERATING


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="grid side of the Poisson system")
    parser.add_argument("--iters", type=int, default=100, help="iterations of every solve")
    parser.add_argument("--solvers", default="cg,bicgstab,cgs",
                        help="comma-separated: " + ", ".join(KSP_TYPES))
    parser.add_argument("--reps", type=int, default=3, help="timed solves per solver")
    args = parser.parse_args()
    solvers = args.solvers.split(",")
    for solver in solvers:
        if solver in CANNOT:
            print(f"{solver} cannot run on petsc: {CANNOT[solver]}", file=sys.stderr)
            sys.exit(3)
        if solver not in KSP_TYPES:
            parser.error(f"unknown solver {solver!r} (choose from {', '.join(KSP_TYPES)})")
    if args.n < 2 or args.iters < 1 or args.reps < 1:
        parser.error("--n must be at least 2, --iters and --reps at least 1")

    PETSc = import_petsc()
    comm = PETSc.COMM_WORLD
    ranks = comm.getSize()
    rows = args.n * args.n

    b = PETSc.Vec().createMPI((PETSc.DECIDE, rows), comm=comm)
    b.set(1.0)
    start, stop = b.getOwnershipRange()
    a = PETSc.Mat().createAIJ(((stop - start, rows), (stop - start, rows)), comm=comm,
                              csr=poisson_rows(start, stop, args.n, PETSc.IntType))
    a.assemble()
    nnz = int(a.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"])
    x, residual = b.duplicate(), b.duplicate()

    def timed_solve(ksp):
        comm.barrier()
        began = time.perf_counter()
        ksp.solve(b, x)
        comm.barrier()
        return time.perf_counter() - began

    for solver in solvers:
        ksp = PETSc.KSP().create(comm=comm)
        ksp.setOperators(a)
        ksp.setType(KSP_TYPES[solver])
        ksp.getPC().setType(PETSc.PC.Type.NONE)
        ksp.setInitialGuessNonzero(False)
        ksp.setConvergenceTest(never_converged)  # replaces the rtol/atol/divtol test
        ksp.setTolerances(max_it=1)
        ksp.setUp()
        warmup = timed_solve(ksp)
        ksp.setTolerances(max_it=args.iters)
        seconds = statistics.median(timed_solve(ksp) for _ in range(args.reps))
        iterations = ksp.getIterationNumber()
        a.mult(x, residual)
        residual.aypx(-1.0, b)  # b - A x
        check = residual.norm() / b.norm()
        if comm.getRank() == 0:
            print(json.dumps({
                "app": solver,
                "peer": f"petsc-{ranks}rank{'s' if ranks > 1 else ''}",
                "version": ".".join(map(str, PETSc.Sys.getVersion())),
                "n": args.n,
                "rows": rows,
                "nnz": nnz,
                "info": int(ksp.getConvergedReason()),
                "iterations": iterations,
                "check": check,
                "seconds": seconds,
                "seconds_per_iter": seconds / max(iterations, 1),
                "warmup_seconds": warmup,
                "ranks": ranks,
            }), flush=True)
        ksp.destroy()


if __name__ == "__main__":
    main()
