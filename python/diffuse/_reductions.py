"""Reductions (``sum``, ``mean``, ``amax``, ``argmax``, ``any``, ``count_nonzero``, ...),
cumulative sums and products, ``isclose`` and ``allclose``. Products of arrays are
``_products``'s (``dot`` and ``matmul`` are imported here, where the array's methods find
them).
"""

import builtins
import math
import warnings

import numpy as _np

from . import _layout
from ._warnings import warn_at_caller
from ._dtypes import _dtype_name, _is_scalar
from ._ndarray import ndarray
from ._interop import _fallback, _wrap_numpy_names
from ._creation import asarray
from ._products import dot, matmul  # noqa: F401 (``ndarray.dot`` and ``@`` find them here)
from ._ufuncs import (
    absolute,
    add,
    equal,
    isfinite,
    isnan,
    less_equal,
    logical_and,
    logical_or,
    multiply,
    not_equal,
    subtract,
    true_divide,
    _where,
)


def _cumulate(op, a, axis, dtype, out):
    """NumPy's ``cumsum``/``cumprod`` (``op``): along ``axis`` (the flattened array for
    None), in ``dtype`` (NumPy's default: booleans and integers narrower than int64 become
    int64), one scan task."""
    a = asarray(a)
    if axis is None:
        a, axis = a.ravel(), 0
    elif a.ndim == 0:
        raise _np.exceptions.AxisError(axis, 0)
    axis = _layout.normalize_axis(axis, a.ndim)
    target = _np.dtype(dtype) if dtype is not None else (
        _np.dtype("int64") if a.dtype.kind in "bi" and a.dtype.itemsize < 8
        or a.dtype.kind == "b" else a.dtype)
    name = _dtype_name(target)
    if name is None or target.kind == "b":
        return _fallback(f"cum{op}", getattr(_np, f"cum{op}"), a, axis=axis, dtype=dtype)
    if a.dtype != target:
        a = a.astype(name)
    result = ndarray(a._a.cumulate(op, axis))
    if out is None:
        return result
    out[...] = result
    return out


def cumsum(a, axis=None, dtype=None, out=None):
    """NumPy's ``cumsum``: running sums along ``axis``, in NumPy's order (its bits)."""
    return _cumulate("sum", a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """NumPy's ``cumprod``: running products along ``axis``."""
    return _cumulate("prod", a, axis, dtype, out)


def _axes(axis, ndim):
    """The sorted axes ``axis`` (None, an int or a tuple) names, checked as NumPy checks."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    normal = [_layout.normalize_axis(a, ndim) for a in axes]
    if len(set(normal)) != len(normal):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(normal))


def _along(a, method, axes, keepdims, native):
    """``method`` (``reduce`` or ``arg``) of the native array of ``a`` along ``axes``
    (highest first, so the lower ones keep their numbers), or over the whole array."""
    if len(axes) == a.ndim and not keepdims:
        return ndarray(getattr(a._a, method)(native))
    out = a._a
    for ax in reversed(axes):
        out = getattr(out, method)(native, ax, keepdims)
    return ndarray(out)


# NumPy's result dtypes: sums and products of bools and small ints are int64, means of
# integers float64; max and min keep the dtype.
def _accumulating(a, name):
    if name in ("sum", "prod") and a.dtype.kind in "bi" and a.dtype != _np.int64:
        return a.astype("int64")
    if name == "mean" and a.dtype.kind not in "fc":
        return a.astype("float64")
    if name in ("max", "min") and a.dtype.kind == "b":
        return a.astype("int64")
    return a


def _reduce(name, a, axis, keepdims, dtype=None):
    a = asarray(a)
    axes = _axes(axis, a.ndim)
    source = a
    if dtype is not None:
        dname = _dtype_name(dtype)
        if dname is None:
            return _fallback(name, getattr(_np, name), a, axis=axis, keepdims=keepdims,
                             dtype=dtype)
        source = a.astype(dname)
    source = _accumulating(source, name)
    if name in ("max", "min") and builtins.any(a.shape[ax] == 0 for ax in axes):
        # (NumPy's error even where the result has no elements either: no identity)
        raise ValueError(f"zero-size array to reduction operation "
                         f"{'maximum' if name == 'max' else 'minimum'} which has no identity")
    if not axes:  # axis=() reduces nothing
        return source.copy()
    out = _along(source, "reduce", axes, keepdims, name)
    return out.astype("bool") if a.dtype.kind == "b" and name in ("max", "min") else out


def _reduce_into(name, a, axis, dtype, out, keepdims, initial, where, identity):
    """``sum``/``prod`` (``name``) with NumPy's ``out=``, ``initial=`` and ``where=``: the
    elements ``where`` excludes count as ``identity``, ``initial`` is folded in after, and
    ``out`` receives the result."""
    a = asarray(a)
    if where is not True:
        a = _where(where, a, _np.array(identity, dtype=a.dtype)[()])
    result = _reduce(name, a, axis, keepdims, dtype)
    if initial is not _np._NoValue:
        # NumPy casts ``initial`` to the result's dtype (``sum(ints, initial=2.5)`` adds 2).
        start = _np.array(initial).astype(result.dtype)[()]
        result = add(result, start) if name == "sum" else \
            multiply(result, start)
    if out is None:
        return result
    out[...] = result
    return out


def sum(a, axis=None, dtype=None, out=None, keepdims=False,  # noqa: A001 (NumPy's name)
        initial=_np._NoValue, where=True):
    """The sum (a lazy 0-d array for a whole-array sum); NumPy's ``out``, ``initial`` and
    ``where``."""
    if out is None and initial is _np._NoValue and where is True:
        return _reduce("sum", a, axis, keepdims, dtype)
    return _reduce_into("sum", a, axis, dtype, out, keepdims, initial, where, 0)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_np._NoValue,
         where=True):
    """The product (a lazy 0-d array for a whole-array product); NumPy's ``out``,
    ``initial`` and ``where``."""
    if out is None and initial is _np._NoValue and where is True:
        return _reduce("prod", a, axis, keepdims, dtype)
    return _reduce_into("prod", a, axis, dtype, out, keepdims, initial, where, 1)


def _of_empty(func, a, **kwargs):
    """NumPy's ``func`` of an empty ``a``: its answer (NaNs, or an empty array), its
    warnings ("Mean of empty slice", the division's under NumPy's error state) and its
    errors depend on the shape and dtype alone, so they come from an empty stand-in (the
    warnings attributed to the caller)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(_np.empty(a.shape, a.dtype), **kwargs)
    for w in caught:
        warn_at_caller(str(w.message), w.category)
    return asarray(result)


def mean(a, axis=None, dtype=None, keepdims=False):
    """The mean (a lazy 0-d array for a whole-array mean; NumPy's for no elements)."""
    a = asarray(a)
    if a.size == 0:
        return _of_empty(_np.mean, a, axis=axis, dtype=dtype, keepdims=keepdims)
    if (a.dtype if dtype is None else _np.dtype(dtype)).kind == "c":
        return _complex_mean(a, axis, dtype, keepdims)
    return _reduce("mean", a, axis, keepdims, dtype)


def _complex_mean(a, axis, dtype, keepdims):
    """NumPy's mean of complex numbers: the sum divided by the count, in complex128 (NumPy's
    count is an integer that complex64 cannot hold) and cast back to the sum's dtype."""
    total = _reduce("sum", a, axis, keepdims, dtype)
    count = math.prod(a.shape[ax] for ax in _axes(axis, a.ndim))
    return true_divide(total.astype("complex128", copy=False), count).astype(total.dtype,
                                                                             copy=False)


def amin(a, axis=None, keepdims=False):
    """The smallest element (along ``axis``)."""
    return _reduce("min", a, axis, keepdims)


def amax(a, axis=None, keepdims=False):
    """The largest element (along ``axis``)."""
    return _reduce("max", a, axis, keepdims)


min = amin  # noqa: A001
max = amax  # noqa: A001


def _arg(name, a, axis, keepdims):
    a = asarray(a)
    source = a.astype("int64") if a.dtype.kind == "b" else a
    if axis is None:
        out = ndarray(source._a.arg(name))
        return out.reshape((1,) * a.ndim) if keepdims else out
    return _along(source, "arg", (_layout.normalize_axis(axis, a.ndim),), keepdims, name)


def argmax(a, axis=None, keepdims=False):
    """Index of the first largest element (flat, or along ``axis``); a lazy array."""
    return _arg("argmax", a, axis, keepdims)


def argmin(a, axis=None, keepdims=False):
    """Index of the first smallest element (flat, or along ``axis``); a lazy array."""
    return _arg("argmin", a, axis, keepdims)


def _nonzero_ints(a):
    """1 where ``a`` is nonzero (true), else 0, as int64."""
    return not_equal(a, 0).astype("int64")


def any(a, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """True where some element is nonzero (a lazy 0-d bool array for the whole array): the
    count of nonzero elements is not 0. (A sum starts from the zeros a new array holds, so
    it fuses with the work before it; a maximum would start from its identity, written by a
    task of its own.)"""
    a = asarray(a)
    counts = _reduce("sum", _nonzero_ints(a), axis, keepdims)
    return not_equal(counts, 0)


def all(a, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """True where every element is nonzero (a lazy 0-d bool array for the whole array): the
    count of zero elements is 0 (see ``any``)."""
    a = asarray(a)
    zeros_ = _reduce("sum", equal(a, 0).astype("int64"), axis, keepdims)
    return equal(zeros_, 0)


def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero elements (an int for the whole array, as NumPy gives)."""
    a = asarray(a)
    counts = _reduce("sum", _nonzero_ints(a), axis, keepdims)
    return int(counts.item()) if axis is None and not keepdims else counts


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy's ``isclose``: ``|a - b| <= atol + rtol * |b|`` where ``b`` is finite, or
    ``a == b`` (equal infinities), or both NaN with ``equal_nan``; ``b`` in a float (or
    complex) dtype first, as NumPy has it."""
    if _is_scalar(b) and not isinstance(b, (complex, _np.complexfloating)):
        b = float(b)  # a real number: weak, in a's dtype where it meets a
        magnitude, finite = builtins.abs(b), math.isfinite(b)
    else:
        b = asarray(b)
        b = b if b.dtype.kind in "fc" else b.astype("float64")
        magnitude, finite = absolute(b), isfinite(b)
    a = asarray(a)
    near = less_equal(absolute(subtract(a, b)), atol + rtol * magnitude)
    close = logical_or(logical_and(near, finite), equal(a, b))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy's ``allclose``: ``isclose`` everywhere (read back: a Python bool)."""
    return builtins.bool(all(isclose(a, b, rtol, atol, equal_nan)))


#: The functions of ``NATIVE`` this module defines, given NumPy's whole interface here, before
#: any other module imports them.
NATIVE = (
    "all",
    "allclose",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "isclose",
    "max",
    "mean",
    "min",
    "prod",
    "sum",
)
_wrap_numpy_names(globals(), NATIVE)
