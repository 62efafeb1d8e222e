"""Sorting, searching and what is built on them: ``sort``, ``argsort``, ``searchsorted``,
``unique``, ``median``, ``percentile``, ``quantile``, ``interp``, ``histogram`` and
``bincount``.

A sort along an axis is one native task whose blocks span the axis and split the others over
the processors (the rows of a matrix sort in parallel); one long vector sorts on one point.
The order is NumPy's (NaN last, complex numbers lexicographically); sorts are stable, so
``argsort`` orders equal values by position, as NumPy's ``kind="stable"`` does (the other
kinds NumPy accepts may order ties otherwise, which no program can rely on). The order
statistics take elements of the sorted array and combine them with NumPy's formulas;
``searchsorted`` is a binary search per value against the whole sorted vector.
"""

import numpy as _np

from . import _layout
from ._dtypes import _dtype_name, _is_scalar
from ._ndarray import ndarray
from ._interop import _fallback, _wrap_numpy_names
from ._creation import asarray, full
from ._manipulation import concatenate, moveaxis, take
from ._ufuncs import (
    add,
    isnan,
    logical_and,
    logical_not,
    multiply,
    not_equal,
    subtract,
    true_divide,
    where,
)
from ._reductions import cumsum
from ._selection import flatnonzero

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _sortable(a, axis, name, kind, order):
    """``a`` (flattened for ``axis`` None) and the axis to sort along, checked as NumPy
    checks them; None where NumPy's own must run (structured ``order``)."""
    if order is not None:
        return None
    if kind not in _KINDS:
        raise ValueError(f"{name} kind must be one of 'quick', 'heap', or 'stable' "
                         f"(got '{kind}')")
    a = asarray(a)
    if axis is None:
        return a.ravel(), 0
    if a.ndim == 0:
        raise _np.exceptions.AxisError(axis, 0)
    return a, _layout.normalize_axis(axis, a.ndim)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """NumPy's ``sort``: the values along ``axis`` (the flattened array for None) in
    ascending order, NaN last."""
    found = _sortable(a, axis, "sort", kind, order)
    if found is None:
        return _fallback("sort", _np.sort, a, axis=axis, kind=kind, order=order)
    a, axis = found
    return ndarray(a._a.sort(axis))


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """NumPy's ``argsort``: the int64 positions along ``axis`` that sort the values, equal
    values in their original order."""
    found = _sortable(a, axis, "argsort", kind, order)
    if found is None:
        return _fallback("argsort", _np.argsort, a, axis=axis, kind=kind, order=order)
    a, axis = found
    return ndarray(a._a.sort(axis, indices=True))


def _common(*arrays):
    """The arrays converted to their NumPy result dtype (None when diffuse does not hold
    it)."""
    name = _dtype_name(_np.result_type(*(x.dtype for x in arrays)))
    if name is None:
        return None
    return [x if x.dtype == _np.dtype(name) else x.astype(name) for x in arrays]


def searchsorted(a, v, side="left", sorter=None):
    """NumPy's ``searchsorted``: for each value of ``v``, the position in the sorted 1-d
    ``a`` (sorted by ``sorter``'s positions, when given) where inserting it keeps the
    order: the leftmost such position, or the rightmost for ``side="right"``."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got '{side}')")
    a = asarray(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        a = take(a, asarray(sorter))
    scalar = _is_scalar(v)
    values = asarray(v)
    pair = _common(a, values)
    if pair is None:
        return _fallback("searchsorted", _np.searchsorted, a, v, side=side)
    a, values = pair
    found = ndarray(a._a.searchsorted(values.reshape(-1)._a if values.ndim == 0 else
                                      values._a, side == "right"))
    return int(found[0]) if scalar else found


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True):
    """NumPy's ``unique`` of the flattened array: its distinct values in order (NaNs one
    value when ``equal_nan``), and on request the first position of each, the positions
    that rebuild the input from them (in the input's shape), and their counts."""
    if axis is not None:
        return _fallback("unique", _np.unique, ar, return_index=return_index,
                         return_inverse=return_inverse, return_counts=return_counts,
                         axis=axis, equal_nan=equal_nan)
    ar = asarray(ar)
    flat = ar.ravel()
    order = argsort(flat)
    ordered = take(flat, order)
    if flat.size == 0:
        first = full((0,), True, dtype="bool")
    else:
        differs = not_equal(ordered[1:], ordered[:-1])
        if equal_nan and ordered.dtype.kind in "fc":
            differs = logical_and(differs, logical_not(logical_and(isnan(ordered[1:]),
                                                                   isnan(ordered[:-1]))))
        first = concatenate([full((1,), True, dtype="bool"), differs])
    starts = flatnonzero(first)
    results = [take(ordered, starts)]
    if return_index:
        results.append(take(order, starts))
    if return_inverse:
        # The rank of each sorted element's value, put back at the element's position.
        rank = subtract(cumsum(first.astype("int64")), 1)
        results.append(take(rank, argsort(order)).reshape(ar.shape))
    if return_counts:
        ends = concatenate([starts[1:], full((1,), flat.size, dtype="int64")])
        results.append(subtract(ends, starts))
    return results[0] if len(results) == 1 else tuple(results)


def _lerp(a, b, t):
    """NumPy's linear interpolation between ``a`` and ``b`` at ``t`` (from ``b`` for ``t`` at
    least one half, as NumPy computes it, so the ends are exact)."""
    diff = subtract(b, a)
    return where(t >= 0.5, subtract(b, multiply(diff, 1 - t)), add(a, multiply(diff, t)))


def _sorted_last(a, axis, dtype):
    """``a`` as ``dtype`` with the axes ``axis`` names (all for None) flattened into one last
    axis, sorted along it, and those axes."""
    work = a if a.dtype == dtype else a.astype(_dtype_name(dtype))
    axes = tuple(range(a.ndim)) if axis is None else tuple(
        _layout.normalize_axis(x, a.ndim) for x in (axis if isinstance(axis, tuple)
                                                    else (axis,)))
    rest = [d for d in range(a.ndim) if d not in axes]
    work = work.transpose(rest + list(axes)).reshape(
        tuple(a.shape[d] for d in rest) + (-1,))
    return sort(work, axis=-1), axes


def _finish(result, ordered, a, axes, keepdims, lead=()):
    """An order statistic's ``result`` (its last axis the statistics, ``lead`` their shape)
    as NumPy shapes it, NaN where a slice of ``ordered`` holds one (sorted last)."""
    result = where(isnan(ordered[..., -1:]), result.dtype.type(_np.nan), result)
    result = moveaxis(result, -1, 0).reshape(lead + result.shape[:-1])
    if keepdims:
        shape = list(a.shape)
        for d in axes:
            shape[d] = 1
        result = result.reshape(lead + tuple(shape))
    return result


def _quantiles(name, a, q, axis, keepdims, method, weights):
    """NumPy's ``quantile`` or ``percentile`` (``name``) of ``a`` at ``q`` along ``axis``
    with the ``linear`` method: the sorted values at the virtual index ``q (n - 1)``
    interpolated between its neighbours, in the dtype NumPy gives (asked of a one-element
    array: it depends on how ``q`` is given), ``q``'s dimensions first; None where NumPy's
    own must run (other methods, weights, complex or empty input)."""
    a = asarray(a)
    if method != "linear" or weights is not None or a.dtype.kind == "c" or a.size == 0:
        return None
    dtype = getattr(_np, name)(_np.zeros(1, a.dtype), q).dtype
    qs = _np.asanyarray(q, dtype=_np.float64)
    if name == "percentile":
        qs = _np.true_divide(qs, 100)
    if qs.size and not (_np.all(qs >= 0) and _np.all(qs <= 1)):
        raise ValueError(f"{name.capitalize()}s must be in the range "
                         f"[0, {100 if name == 'percentile' else 1}]")
    ordered, axes = _sorted_last(a, axis, dtype)
    n = ordered.shape[-1]
    # NumPy's virtual index and its neighbours, computed on the host from `qs` alone.
    virtual = (n - 1) * qs
    below = _np.clip(_np.floor(virtual), 0, n - 1).astype(_np.int64)
    above = _np.clip(below + 1, 0, n - 1)
    gamma = _np.where((virtual >= n - 1) | (virtual < 0), 0.0, virtual - _np.floor(virtual))
    low = take(ordered, asarray(below.ravel()), axis=-1)
    high = take(ordered, asarray(above.ravel()), axis=-1)
    # Interpolated in float64 (`gamma` is), then rounded to NumPy's result dtype.
    result = _lerp(low, high, asarray(gamma.ravel())).astype(_dtype_name(dtype))
    return _finish(result, ordered, a, axes, keepdims, qs.shape)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    """NumPy's ``quantile`` with its default ``linear`` method (other methods, weights,
    complex or empty input run on NumPy)."""
    result = None if out is not None else _quantiles("quantile", a, q, axis, keepdims, method,
                                                     weights)
    if result is None:
        return _fallback("quantile", _np.quantile, a, q, axis=axis, out=out,
                         overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                         weights=weights)
    return result


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """NumPy's ``percentile``: ``quantile`` at ``q / 100``."""
    result = None if out is not None else _quantiles("percentile", a, q, axis, keepdims,
                                                     method, weights)
    if result is None:
        return _fallback("percentile", _np.percentile, a, q, axis=axis, out=out,
                         overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                         weights=weights)
    return result


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``median``: the middle sorted value along ``axis``, or the mean of the middle
    two, ``(low + high) / 2`` as NumPy's ``mean`` computes it (NaN where a slice holds
    one)."""
    a = asarray(a)
    if out is not None or a.size == 0 or a.dtype.kind == "c":
        return _fallback("median", _np.median, a, axis=axis, out=out,
                         overwrite_input=overwrite_input, keepdims=keepdims)
    ordered, axes = _sorted_last(a, axis, _np.median(_np.zeros(1, a.dtype)).dtype)
    n = ordered.shape[-1]
    high = ordered[..., n // 2:n // 2 + 1]
    middle = high if n % 2 else true_divide(add(ordered[..., n // 2 - 1:n // 2], high), 2)
    return _finish(middle, ordered, a, axes, keepdims)


def interp(x, xp, fp, left=None, right=None, period=None):
    """NumPy's ``interp`` for real values: each ``x`` between its neighbours among the
    increasing sample points ``xp``, ``left``/``right`` (the end values by default)
    outside them (``period`` runs on NumPy)."""
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if period is not None or "c" in (x.dtype.kind, fp.dtype.kind):
        return _fallback("interp", _np.interp, x, xp, fp, left=left, right=right,
                         period=period)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("object too deep for desired array")
    if xp.size != fp.size:
        raise ValueError("fp and xp are not of the same length.")
    if xp.size == 0:
        raise ValueError("array of sample points is empty")
    x, xp, fp = (v.astype("float64") for v in (x, xp, fp))
    n = xp.size
    j = subtract(searchsorted(xp, x, side="right"), 1)
    lo = where(j < 0, 0, where(j > n - 2, max(n - 2, 0), j))
    hi = add(lo, 1) if n > 1 else lo
    x0, x1, y0, y1 = take(xp, lo), take(xp, hi), take(fp, lo), take(fp, hi)
    slope = true_divide(subtract(y1, y0), subtract(x1, x0)) if n > 1 else multiply(y0, 0.0)
    inside = add(multiply(slope, subtract(x, x0)), y0)
    last = fp[-1]
    result = where(x == xp[-1], last, where(x == x0, y0, inside))
    result = where(x < xp[0], fp[0] if left is None else left, result)
    result = where(x > xp[-1], last if right is None else right, result)
    return result


def _search_sorted_inclusive(ordered, edges):
    """For each edge, the number of ``ordered``'s elements before it, the last edge
    counting the elements equal to it too (NumPy's histogram's cumulative counts)."""
    return concatenate([searchsorted(ordered, edges[:-1], side="left"),
                        searchsorted(ordered, edges[-1:], side="right")])


def histogram(a, bins=10, range=None, density=None, weights=None):
    """NumPy's ``histogram`` of the flattened array: the bin edges computed as NumPy
    computes them (from the range, or the minimum and maximum read back), then the counts
    (or sums of ``weights``) as differences of cumulative counts at the edges, found by
    searching the sorted values, as NumPy's general method does (its method for equal bins
    and weights sums each bin in input order: there the sums agree within rounding).
    Named bin rules (``"auto"``, ...) and complex values run on NumPy."""
    a = asarray(a).ravel()
    w = None if weights is None else asarray(weights).ravel()
    if isinstance(bins, str) or a.dtype.kind == "c" or (w is not None and w.dtype.kind == "c"):
        return _fallback("histogram", _np.histogram, a, bins=bins, range=range,
                         density=density, weights=weights)
    if w is not None and w.shape != a.shape:
        raise ValueError("weights should have the same shape as a.")
    # The edges depend on the data only through its extremes: NumPy's own function of them.
    extremes = _np.array([], a.dtype) if a.size == 0 or range is not None else _np.array(
        [a.min().item(), a.max().item()], a.dtype)
    edges = _np.histogram_bin_edges(extremes, bins, range=range)
    device_edges = asarray(edges)
    if w is None:
        cumulative = _search_sorted_inclusive(sort(a), device_edges)
    else:
        order = argsort(a)
        summed = cumsum(take(w, order))
        zero = full((1,), 0, dtype=summed.dtype.name)
        cumulative = take(concatenate([zero, summed]),
                          _search_sorted_inclusive(take(a, order), device_edges))
    counts = subtract(cumulative[1:], cumulative[:-1])
    if density:
        widths = asarray(_np.array(_np.diff(edges), float))
        return true_divide(true_divide(counts, widths), counts.sum()), device_edges
    return counts, device_edges


def bincount(x, weights=None, minlength=0):
    """NumPy's ``bincount`` of non-negative integers: the count of each value up to the
    largest (at least ``minlength`` of them), as differences of positions in the sorted
    values (``weights``, which NumPy sums in input order, run on NumPy)."""
    x = asarray(x)
    if weights is not None:
        return _fallback("bincount", _np.bincount, x, weights=weights, minlength=minlength)
    if x.ndim != 1:
        raise ValueError("object too deep for desired array")
    if not _np.can_cast(x.dtype, _np.intp, casting="safe"):
        raise TypeError(f"Cannot cast array data from {x.dtype!r} to dtype('int64') "
                        "according to the rule 'safe'")
    if minlength is None or minlength < 0:
        raise ValueError("'minlength' must not be negative")
    x = x.astype("int64")
    if x.size and x.min().item() < 0:
        raise ValueError("'list' argument must have no negative elements")
    n = max(x.max().item() + 1, minlength) if x.size else minlength
    positions = searchsorted(sort(x), asarray(_np.arange(n + 1)))
    return subtract(positions[1:], positions[:-1])


#: The functions of ``NATIVE`` this module defines.
NATIVE = ("argsort", "bincount", "histogram", "interp", "median", "percentile", "quantile",
          "searchsorted", "sort", "unique")

_wrap_numpy_names(globals(), NATIVE)
