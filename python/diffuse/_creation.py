"""New arrays: from data (``array``, ``asarray``) and from shapes and values (``zeros``,
``full``, ``arange``, ``linspace``, ``eye``, ``diag``, the ``*_like`` functions).
"""

import builtins
import math
import numbers

import numpy as _np

from . import _native
from ._dtypes import _COMPLEX_PARTS, _DT, _dtype_name, _INT_RANGE, _is_scalar, _scalar_for
from ._ndarray import ndarray
from ._eager import _Eager, _eager_shape, _eager_wrap
from ._interop import _fallback, _wrap_numpy_names


def _unpickle(host):
    """A pickled diffuse array: its NumPy elements back in a diffuse array."""
    return array(host)


def array(obj, dtype=None, copy=True):
    """A new diffuse array from a list, a NumPy array, a scalar or a diffuse array."""
    if isinstance(obj, ndarray):
        out = obj.astype(dtype) if dtype is not None else obj
        return out.copy() if copy and out is obj else out
    host = _np.asarray(obj, dtype=dtype)
    name = _dtype_name(host.dtype)
    if name is None:
        if host.dtype.kind in "fc":  # (float16, longdouble, clongdouble)
            name = "float64" if host.dtype.kind == "f" else "complex128"
            host = host.astype(_DT[name])
        elif host.dtype.kind in "iu":
            if host.dtype.kind == "u" and host.size and host.max() > _INT_RANGE["int64"][1]:
                raise OverflowError(
                    f"array: {host.max()} ({host.dtype}) is out of bounds for int64, the "
                    "widest integer dtype diffuse holds"
                )
            host, name = host.astype(_np.int64), "int64"
        else:
            raise TypeError(f"diffuse arrays cannot hold dtype {host.dtype}")
    if host.dtype != _DT[name]:  # (byte order)
        host = host.astype(_DT[name])
    if _eager_shape(host.shape):
        # NumPy's own array (asarray shares a NumPy array's memory, as NumPy's does).
        if copy and isinstance(obj, _np.ndarray) and _np.may_share_memory(host, obj):
            host = host.copy()
        return _Eager(host)
    # (tobytes is row-major for any layout; ascontiguousarray would make a 0-d array 1-d)
    return ndarray(_native.from_bytes(host.tobytes(), list(host.shape), name))


def asarray(obj, dtype=None):
    """``obj`` as a diffuse array (itself when it already is one of that dtype)."""
    return array(obj, dtype=dtype, copy=False)


def _shape_tuple(shape):
    return (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)


def zeros(shape, dtype=float):
    name = _dtype_name(dtype)
    if name is None:
        return _fallback("zeros", _np.zeros, shape, dtype)
    if _eager_shape(_shape_tuple(shape)):
        return _Eager(_np.zeros(shape, _DT[name]))
    return ndarray(_native.zeros_(list(_shape_tuple(shape)), name))


def full(shape, fill_value, dtype=None):
    """``fill_value`` everywhere: the value converted as NumPy's ``full`` converts it (a
    cast: Python integers beyond ``dtype`` raise OverflowError, NaN into an integer dtype
    is its minimum with NumPy's warning)."""
    if isinstance(fill_value, ndarray):
        fill_value = _np.asarray(fill_value)
    if _np.ndim(fill_value) != 0:
        return _fallback("full with an array fill value", _np.full, shape, fill_value, dtype)
    value = _np.full((), fill_value, dtype)
    name = _dtype_name(value.dtype)
    if name is None:
        return _fallback("full", _np.full, shape, fill_value, dtype)
    if _eager_shape(_shape_tuple(shape)):
        return _Eager(_np.full(shape, value, _DT[name]))
    return ndarray(_native.full_(list(_shape_tuple(shape)), value.item(), name))


def ones(shape, dtype=float):
    return full(shape, 1, dtype)


def empty(shape, dtype=float):
    return zeros(shape, dtype)


def _shape_of(a):
    return a.shape if isinstance(a, ndarray) else _np.shape(a)


def _dtype_of(a):
    return a.dtype if isinstance(a, ndarray) else _np.asarray(a).dtype


def zeros_like(a, dtype=None):
    return zeros(_shape_of(a), dtype or _dtype_of(a))


def ones_like(a, dtype=None):
    return ones(_shape_of(a), dtype or _dtype_of(a))


def empty_like(prototype, dtype=None):
    """NumPy's ``empty_like`` (its first parameter named as NumPy's, so that calls naming
    it stay native): zeros, as every diffuse array starts."""
    return zeros_like(prototype, dtype)


def full_like(a, fill_value, dtype=None):
    return full(_shape_of(a), fill_value, dtype or _dtype_of(a))


def eye(N, M=None, k=0, dtype=float):
    """Ones on the diagonal ``k`` of an ``N x M`` array of zeros."""
    name = _dtype_name(dtype)
    if name is not None and _eager_shape((N, N if M is None else M)):
        return _Eager(_np.eye(N, M, k, _DT[name]))
    out = zeros((N, N if M is None else M), dtype)
    out.diagonal(k)[...] = 1
    return out


def identity(n, dtype=float):
    """The ``n x n`` identity."""
    return eye(n, dtype=dtype)


def diag(v, k=0):
    """A square array with ``v`` on its diagonal ``k`` (1-d ``v``), or the diagonal ``k``
    of a 2-d ``v`` (a copy)."""
    v = asarray(v)
    if type(v) is _Eager:
        return _eager_wrap(_np.diag(v._h, k))
    if v.ndim == 1:
        n = v.shape[0] + builtins.abs(k)
        out = zeros((n, n), v.dtype)
        out.diagonal(k)[...] = v
        return out
    if v.ndim == 2:
        return v.diagonal(k).copy()
    raise ValueError("Input must be 1- or 2-d.")


def arange(start, stop=None, step=1, dtype=None):
    """NumPy's ``arange``: ``ceil((stop - start) / step)`` values (computed in Python, as
    NumPy does), ``first + i * (second - first)`` where ``first`` and ``second`` are
    ``start`` and ``start + step`` in ``dtype`` (NumPy's conversions and errors)."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = _np.result_type(start, stop, step)
        dtype = _np.int64 if dtype.kind in "iu" else dtype if dtype.kind == "c" else _np.float64
    name = _dtype_name(dtype)
    if name in (None, "bool", "complex128", "complex64") or step == 0 \
            or not builtins.all(_is_scalar(v) for v in (start, stop, step)):
        return _fallback("arange", _np.arange, start, stop, step, dtype)
    try:
        n = math.ceil((stop - start) / step)
    except (OverflowError, ValueError):  # NaN or infinite bounds
        raise ValueError("arange: cannot compute length") from None
    if n <= 0:
        return zeros((0,), name)
    if _eager_shape((n,)):
        return _Eager(_np.arange(start, stop, step, _DT[name]))
    first, second = _scalar_for(start, name), _scalar_for(start + step, name)
    index = ndarray(_native.arange_(0.0, float(n), 1.0, name))  # 0, 1, ...: exact
    delta = second - first
    out = index if delta == 1 else index * delta
    if first:
        return out + first
    if math.copysign(1.0, first) < 0:  # -0.0: NumPy's first element is start itself
        return _ufuncs.where(index == 0, first, out)
    return out


def linspace(start, stop, num=50, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop``; for an integer or bool
    ``dtype`` computed in float64 and, as NumPy 2 does, floored (integers) and cast; for
    complex bounds or ``dtype``, the values of each part (NumPy's, which multiplies ``i + 0j``
    by the step)."""
    if dtype is None and _np.result_type(start, stop, 1.0).kind == "c":
        dtype = _np.result_type(start, stop, 1.0)
    name = _dtype_name(dtype or _np.float64)
    if name is None:
        return _fallback("linspace", _np.linspace, start, stop, num, dtype=dtype)
    if name in _COMPLEX_PARTS:
        if _eager_shape((int(num),)):
            return _Eager(_np.linspace(start, stop, int(num), dtype=_DT[name]))
        start, stop, part = complex(start), complex(stop), _COMPLEX_PARTS[name]
        return _ufuncs._complex(linspace(start.real, stop.real, num, dtype=part),
                                linspace(start.imag, stop.imag, num, dtype=part))
    if _eager_shape((int(num),)):
        # As the deferred path computes it: in float64 (or float32), floored for integers.
        if name in ("float64", "float32"):
            return _Eager(_np.linspace(float(start), float(stop), int(num), dtype=_DT[name]))
        values = _np.linspace(float(start), float(stop), int(num))
        return _Eager((values if name == "bool" else _np.floor(values)).astype(_DT[name]))
    if name in ("float64", "float32"):
        return ndarray(_native.linspace_(float(start), float(stop), int(num), name))
    values = ndarray(_native.linspace_(float(start), float(stop), int(num), "float64"))
    return (values if name == "bool" else _ufuncs.floor(values)).astype(name)


def logspace(start, stop, num=50, base=10.0, dtype=None):
    """NumPy's ``logspace``: ``base ** linspace(start, stop, num)`` for scalar bounds and
    base (arrays of them, and ``endpoint=False``, run on NumPy)."""
    if not (_is_scalar(start) and _is_scalar(stop) and _is_scalar(base)):
        return _fallback("logspace", _np.logspace, start, stop, num, base=base, dtype=dtype)
    powers = _ufuncs.power(_np.float64(base), linspace(start, stop, num))
    return powers if dtype is None else powers.astype(dtype)


def indices(dimensions, dtype=int, sparse=False):
    """NumPy's ``indices``: for each axis of ``dimensions``, every position's index along
    it (one array of shape ``(len(dimensions), *dimensions)``), or with ``sparse`` a tuple
    of ranges shaped to broadcast against each other."""
    dimensions = tuple(int(d) for d in dimensions)
    name = _dtype_name(dtype)
    if name is None:
        return _fallback("indices", _np.indices, dimensions, dtype=dtype, sparse=sparse)
    ranges = [arange(d, dtype="int64").reshape(
        tuple(d if j == i else 1 for j in range(len(dimensions)))).astype(name)
        for i, d in enumerate(dimensions)]
    if sparse:
        return tuple(ranges)
    grid = zeros((len(dimensions),) + dimensions, dtype=name)
    for i, r in enumerate(ranges):
        grid[i] = r
    return grid


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """NumPy's ``fromfunction``: ``function`` called once with the index arrays of
    ``shape`` (``indices``), its result as it returns it."""
    return function(*indices(shape, dtype=dtype), **kwargs)


#: The functions of ``NATIVE`` this module defines, given NumPy's whole interface here, before
#: any other module imports them.
NATIVE = (
    "arange",
    "array",
    "asarray",
    "diag",
    "empty",
    "empty_like",
    "eye",
    "fromfunction",
    "full",
    "full_like",
    "identity",
    "indices",
    "linspace",
    "logspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
)
_wrap_numpy_names(globals(), NATIVE)


# The modules above this one, which import its names: imported last, as modules, their
# functions looked up when called.
from . import _ufuncs  # noqa: E402
