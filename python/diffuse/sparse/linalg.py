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

__all__ = ["cg", "bicgstab", "cgs", "LinearOperator", "aslinearoperator"]


class LinearOperator:
    """SciPy's ``LinearOperator(shape, matvec, rmatvec=None, matmat=None, dtype=None)`` on
    diffuse arrays; a subclass may define ``_matvec`` (and ``_rmatvec``) instead."""

    def __init__(self, shape, matvec=None, rmatvec=None, matmat=None, dtype=None,
                 rmatmat=None):
        shape = tuple(int(d) for d in shape)
        if len(shape) != 2 or min(shape) < 0:
            raise ValueError(f"invalid shape {shape} (must be 2-d)")
        if matvec is None and type(self)._matvec is LinearOperator._matvec:
            raise TypeError("LinearOperator needs matvec (or a subclass defining _matvec)")
        self.shape = shape
        self.dtype = _np.dtype("float64" if dtype is None else dtype)
        self._user_matvec, self._user_rmatvec, self._user_matmat = matvec, rmatvec, matmat
        self._wrapped = None  # the sparse matrix behind aslinearoperator, if any

    @property
    def ndim(self):
        return 2

    def _matvec(self, x):
        return self._user_matvec(x)

    def _rmatvec(self, x):
        if self._user_rmatvec is None:
            raise NotImplementedError("rmatvec is not defined")
        return self._user_rmatvec(x)

    def matvec(self, x):
        """``A x`` for a vector of shape ``(N,)`` or ``(N, 1)`` (the result has the same
        form)."""
        x = _dnp.asarray(x)
        n = self.shape[1]
        if x.shape not in ((n,), (n, 1)):
            raise ValueError(f"dimension mismatch: operator of shape {self.shape} times "
                             f"{x.shape}")
        y = _dnp.asarray(self._matvec(x.reshape(n)))
        return y.reshape(self.shape[0], 1) if x.ndim == 2 else y.reshape(self.shape[0])

    def rmatvec(self, x):
        """``A^H x``."""
        return _dnp.asarray(self._rmatvec(_dnp.asarray(x)))

    def matmat(self, X):
        """``A X``, column by column unless a ``matmat`` was given."""
        X = _dnp.asarray(X)
        if X.ndim != 2 or X.shape[0] != self.shape[1]:
            raise ValueError(f"dimension mismatch: operator of shape {self.shape} times "
                             f"{X.shape}")
        if self._user_matmat is not None:
            return _dnp.asarray(self._user_matmat(X))
        columns = [self.matvec(X[:, j]) for j in range(X.shape[1])]
        return _dnp.stack(columns, axis=1) if columns else _dnp.zeros((self.shape[0], 0))

    def dot(self, x):
        x = _dnp.asarray(x)
        return self.matvec(x) if x.ndim == 1 or x.shape[1:] == (1,) else self.matmat(x)

    __matmul__ = dot

    def __call__(self, x):
        return self.dot(x)

    def __repr__(self):
        return f"<{self.shape[0]}x{self.shape[1]} diffuse LinearOperator with dtype={self.dtype}>"


def aslinearoperator(A):
    """SciPy's ``aslinearoperator``: a diffuse or SciPy sparse matrix, a dense array, a SciPy
    ``LinearOperator`` or a diffuse one, as a diffuse ``LinearOperator``."""
    if isinstance(A, LinearOperator):
        return A
    if issparse(A):
        matrix = A if isinstance(A, csr_matrix) else csr_matrix(A)
        op = LinearOperator(matrix.shape, matvec=lambda x: matrix @ x,
                            rmatvec=lambda x: matrix.T @ x)
        op._wrapped = matrix
        return op
    if isinstance(A, (_np.ndarray, _dnp.ndarray)) or isinstance(A, (list, tuple)):
        dense = _dnp.asarray(A, dtype="float64")
        if dense.ndim != 2:
            raise ValueError(f"a dense operator must be 2-d, not of shape {dense.shape}")
        return LinearOperator(dense.shape, matvec=lambda x: dense @ x,
                              rmatvec=lambda x: dense.T @ x)
    if hasattr(A, "shape") and hasattr(A, "matvec"):
        def host(apply):
            return lambda x: _dnp.asarray(_np.asarray(apply(_np.asarray(x)), dtype=_np.float64))
        _dnp._warn_fallback("a SciPy LinearOperator's products")
        return LinearOperator(A.shape, matvec=host(A.matvec),
                              rmatvec=host(A.rmatvec) if hasattr(A, "rmatvec") else None)
    raise TypeError(f"type not understood: {type(A)} is not a matrix or an operator")


def _scipy_solve(method, A, b, x0, rtol, atol, maxiter, M, callback):
    """SciPy's solver on host copies, for an operator ``A`` that is no sparse matrix."""
    import scipy.sparse.linalg as sla

    _dnp._warn_fallback(f"{method} with a LinearOperator A")

    def host(op):
        if op is None:
            return None
        op = aslinearoperator(op)
        return sla.LinearOperator(
            op.shape, dtype=_np.float64,
            matvec=lambda v: _np.asarray(op.matvec(_dnp.asarray(v)), dtype=_np.float64))

    x, info = getattr(sla, method)(
        host(A), _np.asarray(b, dtype=_np.float64),
        x0=None if x0 is None or isinstance(x0, str) else _np.asarray(x0, dtype=_np.float64),
        rtol=rtol, atol=atol, maxiter=maxiter, M=host(M),
        callback=None if callback is None else (lambda v: callback(_dnp.asarray(v))))
    return _dnp.asarray(x), info


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
    if isinstance(A, LinearOperator) and A._wrapped is not None:
        A = A._wrapped
    elif isinstance(A, LinearOperator) or (not issparse(A) and hasattr(A, "matvec")):
        return _scipy_solve(method, A, b, x0, rtol, atol, maxiter, M, callback)
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
