"""``diffuse.numpy.linalg``: ``norm``, ``cholesky``, ``inv``, ``det`` and ``solve`` natively,
everything else from NumPy.

The factorizations and solves of one matrix run as one task of one point (``faer``'s
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
    """The native ``op`` of ``a`` (and ``rhs``) in float64, and whether it factored."""
    out, status = a.astype("float64")._a.dense(
        op, None if rhs is None else rhs.astype("float64")._a)
    return _dnp.ndarray(out), _dnp.ndarray(status)


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
    for name in ("cholesky", "det", "inv", "norm", "solve"):
        func = getattr(_np.linalg, name)
        namespace[name] = _interop._FUNCTIONS[func] = _interop._numpy_compatible(
            namespace[name], func)


_numpy_names()
