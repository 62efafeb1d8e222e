"""``diffuse.numpy.linalg``: ``norm``, ``cholesky``, ``inv``, ``det``, ``solve``, ``qr``,
``eigh``, ``eigvalsh``, ``svd`` and ``lstsq`` natively, everything else from NumPy.

The factorizations, decompositions and solves of one matrix run as one task of one point (``faer``'s
blocked algorithms on the host's cores), computed in float64 as NumPy computes them and
given NumPy's result dtype; stacks of matrices run on NumPy. ``cholesky``, ``inv`` and
``solve`` read whether the matrix could be factored, to raise NumPy's ``LinAlgError`` where
NumPy raises it: they wait for the matrix (``det`` does not).
"""

import numpy as _np

from . import numpy as _dnp

LinAlgError = _np.linalg.LinAlgError


def _square(a, name):
    """``a`` as a diffuse array, checked as NumPy checks a matrix it factors: None for a
    stack of matrices (which runs on NumPy)."""
    a = _dnp.asarray(a)
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                          "two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return a if a.ndim == 2 else None


def _result_dtype(*arrays):
    """NumPy's result dtype of a linalg operation: float32 when every operand is float32,
    else float64 (integers and booleans included)."""
    return "float32" if all(a.dtype == _np.float32 for a in arrays) else "float64"


def _dense(op, a, rhs=None):
    """The native ``op`` of ``a`` (and ``rhs``) in float64: its one result (its results, a
    list, for the decompositions), and whether it factored."""
    results, status = a.astype("float64")._a.dense(
        op, None if rhs is None else rhs.astype("float64")._a)
    results = [_dnp.ndarray(r) for r in results]
    return results[0] if len(results) == 1 else results, _dnp.ndarray(status)


def _factored(status, message):
    """Raises NumPy's ``LinAlgError(message)`` when ``status`` says the matrix could not be
    factored (reading it: this waits for the factorization)."""
    if int(status[0]) != 0:
        raise LinAlgError(message)


def cholesky(a, /, *, upper=False):
    """NumPy's ``cholesky``: ``L`` lower-triangular with ``a = L Lᵀ`` (``Lᵀ`` with
    ``upper``); ``LinAlgError`` where ``a`` is not positive definite."""
    m = _square(a, "cholesky")
    if m is None or m.dtype.kind not in "biuf":
        return _dnp._fallback("linalg.cholesky", _np.linalg.cholesky, a, upper=upper)
    dtype = _result_dtype(m)
    if m.size == 0:
        return _dnp.zeros(m.shape, dtype=dtype)
    lower, status = _dense("cholesky", m)
    _factored(status, "Matrix is not positive definite")
    lower = lower.astype(dtype) if dtype != "float64" else lower
    return lower.T if upper else lower


def inv(a):
    """NumPy's ``inv``: the inverse of ``a``; ``LinAlgError`` where it is singular."""
    m = _square(a, "inv")
    if m is None or m.dtype.kind not in "biuf":
        return _dnp._fallback("linalg.inv", _np.linalg.inv, a)
    dtype = _result_dtype(m)
    if m.size == 0:
        return _dnp.zeros(m.shape, dtype=dtype)
    inverse, status = _dense("inv", m)
    _factored(status, "Singular matrix")
    return inverse.astype(dtype) if dtype != "float64" else inverse


def det(a):
    """NumPy's ``det``: the determinant of ``a`` (a lazy 0-d array; 0 for a singular
    matrix, as NumPy gives)."""
    m = _square(a, "det")
    if m is None or m.dtype.kind not in "biuf":
        return _dnp._fallback("linalg.det", _np.linalg.det, a)
    dtype = _result_dtype(m)
    if m.size == 0:
        return _dnp.ones((), dtype=dtype)
    value, _ = _dense("det", m)
    return value.astype(dtype) if dtype != "float64" else value


def solve(a, b):
    """NumPy's ``solve``: ``x`` with ``a @ x == b``, for a vector ``b`` or a matrix of
    right-hand sides (NumPy's errors for mismatched shapes); ``LinAlgError`` where ``a`` is
    singular."""
    m = _square(a, "solve")
    rhs = _dnp.asarray(b)
    if m is None or rhs.ndim not in (1, 2) or m.dtype.kind not in "biuf" \
            or rhs.dtype.kind not in "biuf":
        return _dnp._fallback("linalg.solve", _np.linalg.solve, a, b)
    if rhs.shape[0] != m.shape[0]:
        # NumPy's error, from its own shape check (which runs before any work).
        _np.linalg.solve(_np.empty(m.shape), _np.empty(rhs.shape))
    dtype = _result_dtype(m, rhs)
    if m.size == 0:
        return _dnp.zeros(rhs.shape, dtype=dtype)
    x, status = _dense("solve", m, rhs)
    _factored(status, "Singular matrix")
    return x.astype(dtype) if dtype != "float64" else x


def _matrix(a, name):
    """``a`` as a diffuse array, checked as NumPy checks a matrix it decomposes: None for a
    stack of matrices or values diffuse does not decompose (which run on NumPy)."""
    a = _dnp.asarray(a)
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                          "two-dimensional")
    return a if a.ndim == 2 and a.dtype.kind in "biuf" else None


def _as(results, dtype):
    """``results`` (an array or a list of them) in ``dtype``."""
    if isinstance(results, list):
        return [r.astype(dtype) if r.dtype != dtype else r for r in results]
    return results.astype(dtype) if results.dtype != dtype else results


def qr(a, mode="reduced"):
    """NumPy's ``qr``: ``Q`` with orthonormal columns and upper-triangular ``R`` with ``a =
    Q R`` (``mode`` ``reduced``, ``complete`` or ``r``; Householder reflections as LAPACK's,
    whose signs of the columns of ``Q`` and rows of ``R`` may differ from NumPy's)."""
    m = _matrix(a, "qr")
    if m is None or mode not in ("reduced", "complete", "r") or 0 in m.shape:
        return _dnp._fallback("linalg.qr", _np.linalg.qr, a, mode=mode)
    results, _ = _dense("qr_complete" if mode == "complete" else "qr", m)
    q, r = _as(results, _result_dtype(m))
    return r if mode == "r" else _np.linalg._linalg.QRResult(q, r)


def eigh(a, UPLO="L"):
    """NumPy's ``eigh``: the eigenvalues, ascending, and orthonormal eigenvectors (columns)
    of the symmetric matrix ``a``, read from its lower (``UPLO="U"``: upper) triangle;
    ``LinAlgError`` where the iteration does not converge."""
    m = _square(a, "eigh")
    if m is None or m.dtype.kind not in "biuf" or UPLO not in ("L", "U") or m.size == 0:
        return _dnp._fallback("linalg.eigh", _np.linalg.eigh, a, UPLO=UPLO)
    results, status = _dense("eigh", m if UPLO == "L" else m.T)
    _factored(status, "Eigenvalues did not converge")
    w, v = _as(results, _result_dtype(m))
    return _np.linalg._linalg.EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    """NumPy's ``eigvalsh``: the eigenvalues of ``eigh``."""
    return eigh(a, UPLO=UPLO)[0]


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """NumPy's ``svd``: ``U``, the singular values (descending) and ``Vᵀ`` with ``a = U
    diag(s) Vᵀ`` (``U`` and ``Vᵀ`` square with ``full_matrices``), or the singular values
    alone; ``LinAlgError`` where the iteration does not converge."""
    m = _matrix(a, "svd")
    if m is None or hermitian or 0 in m.shape:
        return _dnp._fallback("linalg.svd", _np.linalg.svd, a, full_matrices=full_matrices,
                              compute_uv=compute_uv, hermitian=hermitian)
    results, status = _dense("svd" if full_matrices and compute_uv else "svd_thin", m)
    _factored(status, "SVD did not converge")
    u, s, vh = _as(results, _result_dtype(m))
    return _np.linalg._linalg.SVDResult(u, s, vh) if compute_uv else s


def lstsq(a, b, rcond=None):
    """NumPy's ``lstsq``: the least-squares (minimum-norm) ``x`` of ``a x = b`` from the
    thin SVD of ``a`` (singular values below ``rcond`` times the largest count as zero;
    ``rcond=None`` is NumPy's machine precision times the larger dimension), the sums of
    squared residuals (empty unless ``a`` has full column rank and more rows than
    columns), the rank (read back) and the singular values."""
    m = _matrix(a, "lstsq")
    rhs = _dnp.asarray(b)
    if m is None or rhs.ndim not in (1, 2) or rhs.dtype.kind not in "biuf" or 0 in m.shape:
        return _dnp._fallback("linalg.lstsq", _np.linalg.lstsq, a, b, rcond=rcond)
    rows, cols = m.shape
    if rhs.shape[0] != rows:
        raise LinAlgError("Incompatible dimensions")
    dtype = _result_dtype(m, rhs)
    (u, s, vh), status = _dense("svd_thin", m)
    _factored(status, "SVD did not converge")
    if rcond is None:
        rcond = _np.finfo(_np.float64).eps * max(rows, cols)
    # (Two scalars read back: the largest singular value, then the rank.)
    cutoff = rcond * float(s[0])
    kept = s > cutoff
    rank = int(kept.sum())
    inverse = _dnp.where(kept, 1.0 / _dnp.where(kept, s, 1.0), 0.0)
    column = rhs.astype("float64") if rhs.ndim == 2 else rhs.astype("float64")[:, None]
    x = vh.T @ (inverse[:, None] * (u.T @ column))
    if rank == cols and rows > cols:
        residuals = ((column - m.astype("float64") @ x) ** 2).sum(axis=0)
    else:
        residuals = _dnp.zeros((0,), dtype="float64")
    x = x if rhs.ndim == 2 else x[:, 0]
    return _as(x, dtype), _as(residuals, dtype), rank, _as(s, dtype)


def norm(x, ord=None, axis=None, keepdims=False):
    """The 2-norm of a vector, the Frobenius norm of a matrix (a lazy 0-d array), or the
    2-norms of the vectors along one ``axis``, of float or complex arrays (a real result);
    other norms run on NumPy."""
    x = _dnp.asarray(x)
    if ord is None and x.dtype.kind in "fc" and (axis is None or isinstance(axis, int)):
        # The 2-norm (of the flattened array, or of each vector along ``axis``); of complex
        # numbers, from the squares of both parts.
        squares = x * x if x.dtype.kind == "f" else x.real * x.real + x.imag * x.imag
        return _dnp.sqrt(_dnp.sum(squares, axis=axis, keepdims=keepdims))
    return _dnp._fallback("linalg.norm", _np.linalg.norm, x, ord=ord, axis=axis,
                          keepdims=keepdims)


def __getattr__(name):
    attr = getattr(_np.linalg, name)
    if callable(attr) and not isinstance(attr, type):
        return lambda *args, **kwargs: _dnp._fallback(f"linalg.{name}", attr, *args, **kwargs)
    return attr


def _numpy_names():
    """Makes this module's native functions take NumPy's whole signatures (other arguments
    run on NumPy), and NumPy's own functions given diffuse arrays run them."""
    from . import _interop
    namespace = globals()
    for name in ("cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "norm", "qr",
                 "solve", "svd"):
        func = getattr(_np.linalg, name)
        namespace[name] = _interop._FUNCTIONS[func] = _interop._numpy_compatible(
            namespace[name], func)


_numpy_names()
