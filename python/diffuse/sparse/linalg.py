"""SciPy's Krylov solvers on diffuse: ``cg``, ``bicgstab`` and ``cgs`` with SciPy's
signatures and results ``(x, info)``. They follow SciPy's algorithms step for step, so
iteration counts agree with SciPy's up to rounding; scalars (dot products, step lengths)
stay lazy 0-d arrays, so each iteration's vector updates fuse, and only the convergence
checks SciPy also makes read a value back."""

import numpy as _np

from .. import numpy as _dnp
from . import csr_matrix, issparse

__all__ = ["cg", "bicgstab", "cgs"]

# SciPy's breakdown tolerances.
_RHOTOL = _np.finfo(_np.float64).eps ** 2


def _setup(A, b, x0, rtol, atol, maxiter, M):
    """The checked system, the start ``x`` and its residual ``r``, the residual norm to
    reach and the iteration cap; ``r`` is None when ``b`` is zero (the answer is ``b``)."""
    if not isinstance(A, csr_matrix):
        if not issparse(A):
            raise TypeError("A must be a sparse matrix (diffuse.sparse or scipy.sparse)")
        A = csr_matrix(A)
    n = A.shape[0]
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"expected square matrix, but got shape={A.shape}")
    b = _vector(b, "b", A.shape, copy=False)
    psolve = _preconditioner(M, n)
    if x0 is None:
        x = _dnp.zeros(n)
    elif isinstance(x0, str):
        if x0 != "Mb":
            raise ValueError(f"x0 must be an array or 'Mb' (M @ b), not {x0!r}")
        x = _dnp.array(psolve(b), dtype="float64")
    else:
        x = _vector(x0, "x0", A.shape, copy=True)
    bnrm2 = float(_dnp.linalg.norm(b))
    limit = max(float(atol), float(rtol) * bnrm2)
    r = None if bnrm2 == 0 else b - A @ x if x0 is not None else b.copy()
    return A, b, x, r, limit, (n * 10 if maxiter is None else int(maxiter)), psolve


def _vector(v, name, shape, copy):
    """SciPy's ``b`` or ``x0`` of a system of ``shape``: an array of shape ``(n,)`` or
    ``(n, 1)``, as a float64 vector (a copy when ``copy``)."""
    v = (_dnp.array if copy else _dnp.asarray)(v, dtype="float64")
    n = shape[0]
    if v.shape not in ((n,), (n, 1)):
        raise ValueError(f"shapes of A {shape} and {name} {v.shape} are incompatible")
    return v.reshape(n)


def _preconditioner(M, n):
    """``v -> M v`` for SciPy's ``M``: the identity for None; a lazy index task for a
    sparse or dense matrix; on the host (with a one-time warning) for a LinearOperator or
    a callable."""
    if M is None:
        return lambda v: v
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
        return host
    else:
        raise TypeError(f"M must be a matrix, a LinearOperator or a callable, not {type(M)}")
    if M.shape != (n, n):
        raise ValueError(f"matrix and preconditioner have different shapes: {(n, n)} and "
                         f"{M.shape}")
    return lambda v: M @ v


def _breaks_down(rho):
    """SciPy's breakdown test for ``rho = rtilde . r``."""
    return abs(float(rho)) < _RHOTOL


def _norm(v):
    return float(_dnp.linalg.norm(v))


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """Conjugate gradients for a symmetric positive definite ``A`` (SciPy's ``cg``)."""
    A, b, x, r, limit, maxiter, psolve = _setup(A, b, x0, rtol, atol, maxiter, M)
    if r is None:
        return b, 0
    rho_prev = p = None
    for iteration in range(maxiter):
        if _norm(r) < limit:
            return x, 0
        z = psolve(r)
        rho = _dnp.dot(r, z)
        if iteration > 0:
            p = p * (rho / rho_prev) + z
        else:
            p = z.copy()
        q = A @ p
        alpha = rho / _dnp.dot(p, q)
        x += alpha * p
        r -= alpha * q
        rho_prev = rho
        if callback:
            callback(x)
    return x, maxiter


def bicgstab(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """BiCGSTAB (SciPy's ``bicgstab``)."""
    A, b, x, r, limit, maxiter, psolve = _setup(A, b, x0, rtol, atol, maxiter, M)
    if r is None:
        return b, 0
    rtilde = r.copy()
    rho_prev = omega = alpha = p = v = None
    for iteration in range(maxiter):
        if _norm(r) < limit:
            return x, 0
        rho = _dnp.dot(rtilde, r)
        if _breaks_down(rho):
            return x, -10
        if iteration > 0:
            if abs(float(omega)) < _RHOTOL:
                return x, -11
            beta = (rho / rho_prev) * (alpha / omega)
            p = (p - omega * v) * beta + r
        else:
            p = r.copy()
        phat = psolve(p)
        v = A @ phat
        rv = _dnp.dot(rtilde, v)
        if float(rv) == 0:
            return x, -11
        alpha = rho / rv
        r -= alpha * v
        if _norm(r) < limit:
            x += alpha * phat
            return x, 0
        shat = psolve(r)
        t = A @ shat
        omega = _dnp.dot(t, r) / _dnp.dot(t, t)
        x += alpha * phat
        x += omega * shat
        r -= omega * t
        rho_prev = rho
        if callback:
            callback(x)
    return x, maxiter


def cgs(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """Conjugate gradients squared (SciPy's ``cgs``)."""
    A, b, x, r, limit, maxiter, psolve = _setup(A, b, x0, rtol, atol, maxiter, M)
    if r is None:
        return b, 0
    rtilde = r.copy()
    rho_prev = p = u = q = None
    for iteration in range(maxiter):
        if _norm(r) < limit:
            return x, 0
        rho = _dnp.dot(rtilde, r)
        if _breaks_down(rho):
            return x, -10
        if iteration > 0:
            beta = rho / rho_prev
            u = r + beta * q
            p = (p * beta + q) * beta + u
        else:
            p = r.copy()
            u = r.copy()
        vhat = A @ psolve(p)
        rv = _dnp.dot(rtilde, vhat)
        if float(rv) == 0:
            return x, -11
        alpha = rho / rv
        q = u - alpha * vhat
        uhat = psolve(u + q)
        x += alpha * uhat
        r = b - A @ x  # SciPy recomputes the residual rather than updating it
        rho_prev = rho
        if callback:
            callback(x)
    return x, maxiter
