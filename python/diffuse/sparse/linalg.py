"""SciPy's Krylov solvers on diffuse: ``cg``, ``bicgstab`` and ``cgs`` with SciPy's
signatures and results ``(x, info)``. They run ``diffuse-sparse``'s solvers (the ones the
example apps run), which follow SciPy's algorithms step for step, so iteration counts agree
with SciPy's up to rounding; scalars (dot products, step lengths) stay lazy 0-d arrays, so
each iteration's vector updates fuse, and only the residual checks SciPy also makes read a
value back. ``info`` is 0 when converged, the iterations run when ``maxiter`` stopped the
solver, and -10 for a breakdown (a division by zero in the method)."""

import numpy as _np

from .. import _native
from .. import numpy as _dnp
from . import csr_matrix, issparse

__all__ = ["cg", "bicgstab", "cgs"]


def _vector(v, name, shape, copy):
    """SciPy's ``b`` or ``x0`` of a system of ``shape``: an array of shape ``(n,)`` or
    ``(n, 1)``, as a float64 vector (a copy when ``copy``)."""
    v = (_dnp.array if copy else _dnp.asarray)(v, dtype="float64")
    n = shape[0]
    if v.shape not in ((n,), (n, 1)):
        raise ValueError(f"shapes of A {shape} and {name} {v.shape} are incompatible")
    return v.reshape(n)


def _preconditioner(M, n):
    """SciPy's ``M`` as ``(matrix, psolve)``: ``matrix`` the native sparse matrix the solver
    applies itself (None unless ``M`` is sparse), ``psolve`` ``v -> M v`` on diffuse vectors
    (None for no ``M``): a lazy product for a dense matrix, on the host (with a one-time
    warning) for a LinearOperator or a callable."""
    if M is None:
        return None, None
    if issparse(M) or isinstance(M, csr_matrix):
        M = M if isinstance(M, csr_matrix) else csr_matrix(M)
    elif isinstance(M, (_np.ndarray, _dnp.ndarray)):
        M = _dnp.asarray(M, dtype="float64")
    elif hasattr(M, "matvec") or callable(M):
        apply = M.matvec if hasattr(M, "matvec") else M
        if getattr(M, "shape", (n, n)) != (n, n):
            raise ValueError(f"matrix and preconditioner have different shapes: "
                             f"{(n, n)} and {M.shape}")

        def host(v):
            _dnp._warn_fallback("a LinearOperator preconditioner")
            return _dnp.asarray(_np.asarray(apply(_np.asarray(v)), dtype=_np.float64).ravel())
        return None, host
    else:
        raise TypeError(f"M must be a matrix, a LinearOperator or a callable, not {type(M)}")
    if M.shape != (n, n):
        raise ValueError(f"matrix and preconditioner have different shapes: {(n, n)} and "
                         f"{M.shape}")
    if isinstance(M, csr_matrix):
        return M._arrays.matrix(), lambda v: M @ v
    return None, lambda v: M @ v


def _solve(method, A, b, x0, rtol, atol, maxiter, M, callback):
    """SciPy's checks of the arguments, then the native solver ``method``."""
    if not isinstance(A, csr_matrix):
        if not issparse(A):
            raise TypeError("A must be a sparse matrix (diffuse.sparse or scipy.sparse)")
        A = csr_matrix(A)
    n = A.shape[0]
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"expected square matrix, but got shape={A.shape}")
    b = _vector(b, "b", A.shape, copy=False)
    matrix, psolve = _preconditioner(M, n)
    if isinstance(x0, str):
        if x0 != "Mb":
            raise ValueError(f"x0 must be an array or 'Mb' (M @ b), not {x0!r}")
        x0 = _dnp.array(b if psolve is None else psolve(b), dtype="float64")
    elif x0 is not None:
        x0 = _vector(x0, "x0", A.shape, copy=False)
    if float(_dnp.linalg.norm(b)) == 0:
        return b, 0  # SciPy's answer to b = 0, whatever x0
    apply = None if psolve is None or matrix is not None else (
        lambda v: _dnp.asarray(psolve(_dnp.ndarray(v)), dtype="float64")._a)
    report = None if callback is None else (lambda x: callback(_dnp.ndarray(x)))
    x, info = _native.krylov_solve(
        method, A._arrays.matrix(), b._a, None if x0 is None else x0._a, float(rtol),
        float(atol), None if maxiter is None else int(maxiter), matrix, apply, report)
    return _dnp.ndarray(x), info


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """Conjugate gradients for a symmetric positive definite ``A`` (SciPy's ``cg``)."""
    return _solve("cg", A, b, x0, rtol, atol, maxiter, M, callback)


def bicgstab(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """BiCGSTAB (SciPy's ``bicgstab``)."""
    return _solve("bicgstab", A, b, x0, rtol, atol, maxiter, M, callback)


def cgs(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """Conjugate gradients squared (SciPy's ``cgs``)."""
    return _solve("cgs", A, b, x0, rtol, atol, maxiter, M, callback)
