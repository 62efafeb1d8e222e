"""Statistics built from native reductions, element-wise operations and products (``var``,
``std``, ``average``, ``ptp``, the NaN-ignoring reductions, ``nan_to_num``,
``cov``, ``corrcoef``): each is a few index tasks over the stores that fuse with the work
around them, never a copy to NumPy.

Their results are NumPy's up to the rounding of the sums (diffuse sums blocks in its own
order); dtypes, shapes, errors and the warnings NumPy's arguments alone decide are NumPy's.
"""

import builtins
import math

import numpy as _np

from ._warnings import warn_at_caller
from ._dtypes import _dtype_name
from ._interop import _fallback, _wrap_numpy_names
from ._creation import asarray, diag, full
from ._manipulation import concatenate
from ._products import matmul
from ._ufuncs import (
    add,
    clip,
    equal,
    greater,
    isinf,
    isnan,
    less,
    logical_and,
    logical_not,
    multiply,
    sqrt,
    subtract,
    true_divide,
    where,
    _complex,
)
from ._reductions import _axes, _of_empty, _reduce, amax, amin, mean


def _float_work(a, dtype):
    """``a`` in the dtype it is computed in: ``dtype`` when given, else float64 for
    integers and booleans (NumPy's rule for means and variances), else ``a``'s own; None
    for a ``dtype`` diffuse does not hold or that is neither a float nor complex."""
    if dtype is not None:
        target = _np.dtype(dtype)
        if _dtype_name(target) is None or target.kind not in "fc":
            return None
        return a.astype(_dtype_name(target)) if a.dtype != target else a
    return a if a.dtype.kind in "fc" else a.astype("float64")


def _squares(x):
    """The squared magnitudes of ``x``'s elements, as NumPy's ``var`` computes them: ``x *
    x``, or for complex numbers the squares of both parts added (a real result)."""
    if x.dtype.kind != "c":
        return multiply(x, x)
    re, im = x.real, x.imag
    return add(multiply(re, re), multiply(im, im))


def _variance(name, a, axis, dtype, ddof, keepdims):
    """``var`` (or the square of ``std``, for ``name``): the sum of squared deviations from
    the mean (their magnitudes for complex numbers) over ``N - ddof`` (at least 0, with
    NumPy's warning when it is)."""
    a = asarray(a)
    func = getattr(_np, name)
    if a.size == 0:
        return _of_empty(func, a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    work = _float_work(a, dtype)
    if work is None:
        return _fallback(name, func, a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    axes = _axes(axis, a.ndim)
    count = math.prod(a.shape[ax] for ax in axes)
    deviation = subtract(work, mean(work, axis=axes, keepdims=True))
    squares = _reduce("sum", _squares(deviation), axes, keepdims)
    divisor = builtins.max(count - ddof, 0)
    if divisor == 0:
        warn_at_caller("Degrees of freedom <= 0 for slice", RuntimeWarning)
    # (Dividing by zero warns as NumPy's division does, when the work runs.)
    return true_divide(squares, float(divisor))


def var(a, axis=None, dtype=None, ddof=0, keepdims=False):
    """NumPy's ``var``: the mean squared deviation from the mean along ``axis`` (an int, a
    tuple or all), over ``N - ddof``; float64 for integer and boolean input, the dtype of
    the parts for complex input."""
    return _variance("var", a, axis, dtype, ddof, keepdims)


def std(a, axis=None, dtype=None, ddof=0, keepdims=False):
    """NumPy's ``std``: the square root of ``var``."""
    variance = _variance("std", a, axis, dtype, ddof, keepdims)
    return variance if asarray(a).size == 0 else sqrt(variance)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """NumPy's ``average``: the mean along ``axis``, or with ``weights`` (``a``'s shape, or
    the shape of ``a`` along ``axis``) the weighted mean, in float64 for integer and boolean
    ``a``; with ``returned``, also the sum of the weights (the count without them) in the
    average's shape. Weights summing to zero raise NumPy's ``ZeroDivisionError`` (read from
    the arrays: it waits for them)."""
    a = asarray(a)
    if axis is not None:
        axis = _np.lib.array_utils.normalize_axis_tuple(axis, a.ndim, argname="axis")
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        scale = avg.dtype.type(a.size / builtins.max(avg.size, 1))
    else:
        w = asarray(weights)
        kinds = (a.dtype, w.dtype, "f8") if a.dtype.kind in "iub" else (a.dtype, w.dtype)
        name = _dtype_name(_np.result_type(*kinds))
        if name is None:
            return _fallback("average", _np.average, a, axis=axis, weights=weights,
                             returned=returned, keepdims=keepdims)
        if a.shape != w.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if w.shape != tuple(a.shape[ax] for ax in axis):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            w = w.transpose(tuple(_np.argsort(axis))).reshape(
                tuple(side if ax in axis else 1 for ax, side in enumerate(a.shape)))
        a, w = a.astype(name), w.astype(name)
        scale = _reduce("sum", w, axis, keepdims)
        if bool(equal(scale, 0.0).any()):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = true_divide(_reduce("sum", multiply(a, w), axis, keepdims), scale)
    if not returned:
        return avg
    if _np.shape(scale) != avg.shape:
        scale = multiply(full(avg.shape, 1, dtype=avg.dtype.name), scale)
    return avg, scale


def ptp(a, axis=None, keepdims=False):
    """NumPy's ``ptp``: the largest element less the smallest (NumPy's error for booleans,
    which have no subtraction)."""
    a = asarray(a)
    high, low = amax(a, axis=axis, keepdims=keepdims), amin(a, axis=axis, keepdims=keepdims)
    if a.dtype.kind == "b":
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                        "bitwise_xor, the `^` operator, or the logical_xor function instead.")
    return subtract(high, low)


def _not_nan(a, fill):
    """``a`` with its NaNs replaced by ``fill`` (``a`` itself when it cannot hold NaNs)."""
    return where(isnan(a), fill, a) if a.dtype.kind in "fc" else a


def nansum(a, axis=None, dtype=None, keepdims=False):
    """NumPy's ``nansum``: the sum with NaNs counted as zero."""
    a = asarray(a)
    return _reduce("sum", _not_nan(a, 0.0), axis, keepdims, dtype)


def _nan_extreme(name, a, axis, keepdims, fill):
    """``nanmax``/``nanmin`` (``name``): the extreme of the elements that are not NaN (a
    complex number is NaN where a part is; ``fill`` in both parts orders before, or after,
    every other), NaN where every element of a slice is. (NumPy's "All-NaN slice" warning
    would need the values read back: it is not given.)"""
    a = asarray(a)
    extreme = amax if name == "nanmax" else amin
    if a.dtype.kind not in "fc" or a.size == 0:
        return extreme(a, axis=axis, keepdims=keepdims)
    if a.dtype.kind == "c":
        fill = complex(fill, fill)
    found = extreme(_not_nan(a, fill), axis=axis, keepdims=keepdims)
    every_nan = logical_not(_reduce("sum", logical_not(isnan(a)).astype("int64"), axis,
                                    keepdims).astype("bool"))
    return where(every_nan, _np.nan, found)


def nanmax(a, axis=None, keepdims=False):
    """NumPy's ``nanmax``: the largest element that is not NaN (NaN for an all-NaN slice)."""
    return _nan_extreme("nanmax", a, axis, keepdims, -_np.inf)


def nanmin(a, axis=None, keepdims=False):
    """NumPy's ``nanmin``: the smallest element that is not NaN (NaN for an all-NaN slice)."""
    return _nan_extreme("nanmin", a, axis, keepdims, _np.inf)


def nanmean(a, axis=None, dtype=None, keepdims=False):
    """NumPy's ``nanmean``: the mean of the elements that are not NaN (NaN for a slice with
    none, as NumPy gives; its warning there is the division's "invalid value", when the work
    runs, where NumPy's says "Mean of empty slice")."""
    a = asarray(a)
    if a.dtype.kind not in "fc" or a.size == 0:
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    work = _float_work(a, dtype)
    if work is None:
        return _fallback("nanmean", _np.nanmean, a, axis=axis, dtype=dtype, keepdims=keepdims)
    present = logical_not(isnan(work))
    total = _reduce("sum", where(present, work, 0.0), axis, keepdims)
    count = _reduce("sum", present.astype("int64"), axis, keepdims)
    # (NumPy divides by the integer count: in the dtype of the two, cast back)
    quotient = _np.result_type(work.dtype, _np.intp).name
    return true_divide(total.astype(quotient, copy=False),
                       count.astype(quotient)).astype(work.dtype, copy=False)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NumPy's ``nan_to_num``: NaN, +inf and -inf replaced by ``nan``, ``posinf`` and
    ``neginf`` (the dtype's largest and smallest finite values by default); in place when
    ``copy`` is false; of complex numbers, in each part. Integers and booleans are returned
    as they are (copied when ``copy``)."""
    x = asarray(x)
    if x.dtype.kind == "c":
        out = _complex(*(nan_to_num(part, True, nan, posinf, neginf)
                         for part in (x.real, x.imag)))
    elif x.dtype.kind != "f":
        return x.copy() if copy else x
    else:
        limits = _np.finfo(x.dtype)
        high = float(limits.max) if posinf is None else posinf
        low = float(limits.min) if neginf is None else neginf
        out = where(isnan(x), nan, x)
        out = where(logical_and(isinf(x), greater(x, 0)), high, out)
        out = where(logical_and(isinf(x), less(x, 0)), low, out)
    if copy:
        return out
    x[...] = out
    return x


def cov(m, y=None, rowvar=True, bias=False, ddof=None, *, dtype=None):
    """NumPy's ``cov``: the covariance matrix of the variables in the rows of ``m`` (its
    columns when not ``rowvar``), and of ``y``'s, over ``N - ddof`` observations (``N - 1``,
    or ``N`` with ``bias``): the deviations' product with their own conjugate transpose, one
    symmetric (of complex numbers, Hermitian) matrix product. Weights (``fweights``, ``aweights``) run on NumPy."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = asarray(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = _np.result_type(m.dtype, _np.float64) if y is None else _np.result_type(
            m.dtype, y.dtype, _np.float64)
    name = _dtype_name(dtype)
    if name is None:
        return _fallback("cov", _np.cov, m, y, rowvar=rowvar, bias=bias, ddof=ddof,
                         dtype=dtype)
    x = _at_least_2d(m, name)
    if not rowvar and m.ndim != 1:
        x = x.T
    if x.shape[0] == 0:
        return asarray(_np.array([]).reshape(0, 0))
    if y is not None:
        more = _at_least_2d(y, name)
        x = concatenate((x, more.T if not rowvar and more.shape[0] != 1 else more), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    fact = x.shape[1] - ddof
    if fact <= 0:
        warn_at_caller("Degrees of freedom <= 0 for slice", RuntimeWarning)
        fact = 0.0
    deviations = subtract(x, mean(x, axis=1, keepdims=True))
    with _np.errstate(divide="ignore"):
        factor = _np.true_divide(1, fact)
    return multiply(matmul(deviations, deviations.T.conj()), float(factor)).squeeze()


def _at_least_2d(m, name):
    """``m`` in dtype ``name``, with leading unit axes up to 2-d (NumPy's ``ndmin=2``)."""
    x = m.astype(name) if m.dtype.name != name else m
    return x.reshape((1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """NumPy's ``corrcoef``: ``cov`` divided by the products of the standard deviations,
    clipped to [-1, 1] (each part of complex numbers; NaN where a variable does not vary,
    as NumPy gives)."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return true_divide(c, c)
    deviation = sqrt(diag(c).real)
    c = true_divide(true_divide(c, deviation.reshape(-1, 1)), deviation.reshape(1, -1))
    if c.dtype.kind == "c":
        return _complex(clip(c.real, -1, 1), clip(c.imag, -1, 1))
    return clip(c, -1, 1)


#: The functions of ``NATIVE`` this module defines, given NumPy's whole interface here, before
#: any other module imports them.
NATIVE = (
    "average",
    "corrcoef",
    "cov",
    "nan_to_num",
    "nanmax",
    "nanmean",
    "nanmin",
    "nansum",
    "ptp",
    "std",
    "var",
)
_wrap_numpy_names(globals(), NATIVE)
