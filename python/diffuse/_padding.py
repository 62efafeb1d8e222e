"""``pad``: an array with borders added along its axes.

The modes that copy the array's own elements (``edge``, ``reflect``, ``symmetric``,
``wrap``) are one gather: along each axis, the element a border position repeats is a
function of the axis' length and widths alone, which NumPy's own ``pad`` computes on the
positions ``0 .. n-1`` (a few host integers per axis); the result is the array indexed with
those positions, one index array per axis (``a[ix_(...)]``). ``constant`` (and ``empty``)
writes the array into a new one holding the border values, then each border along each axis
in NumPy's order (a later axis' borders cover the corners). The modes that compute values
(``linear_ramp``, ``maximum``, ``mean``, ``median``, ``minimum``, a callable, and
``reflect_type="odd"``) run on NumPy.
"""

import numpy as _np

from ._interop import _fallback, _FUNCTIONS
from ._creation import asarray, full

#: The keywords each mode takes (NumPy's table).
_MODE_KEYWORDS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
    "linear_ramp": {"end_values"}, "maximum": {"stat_length"}, "mean": {"stat_length"},
    "median": {"stat_length"}, "minimum": {"stat_length"},
}

#: The modes whose borders repeat the array's elements.
_COPYING = frozenset(("edge", "reflect", "symmetric", "wrap"))


def _pairs(x, ndim, as_index=False):
    """``x`` (one value, one pair, or one pair per axis) as ``ndim`` pairs ``(before,
    after)``, with NumPy's rounding and errors for widths (``as_index``)."""
    x = _np.array(x)
    if as_index:
        x = _np.round(x).astype(_np.intp, copy=False)
        if x.size and x.min() < 0:
            raise ValueError("index can't contain negative values")
    if x.ndim < 3 and x.size == 1:
        return [(x.ravel()[0],) * 2] * ndim
    if x.ndim < 3 and x.size == 2 and x.shape != (2, 1):
        return [tuple(x.ravel())] * ndim
    return _np.broadcast_to(x, (ndim, 2)).tolist()


def _widths(pad_width, ndim):
    """NumPy's ``pad_width`` forms (one width, one pair, one pair per axis, or a dict of
    axes) as ``ndim`` pairs of Python ints, with NumPy's errors."""
    if isinstance(pad_width, dict):
        pairs = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            pairs[axis] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = pairs
    pad_width = _np.asarray(pad_width)
    if pad_width.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    return [(int(b), int(a)) for b, a in _pairs(pad_width, ndim, as_index=True)]


def pad(array, pad_width, mode="constant", **kwargs):
    """NumPy's ``pad`` (see the module's description)."""
    a = asarray(array)
    widths = _widths(pad_width, a.ndim)
    if callable(mode):
        return _fallback("pad with a function", _np.pad, a, pad_width, mode, **kwargs)
    if mode not in _MODE_KEYWORDS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - _MODE_KEYWORDS[mode]
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    shape = tuple(n + b + e for n, (b, e) in zip(a.shape, widths))
    if mode in ("constant", "empty"):
        return _constant(a, widths, shape, kwargs.get("constant_values", 0))
    for axis, (n, pair) in enumerate(zip(a.shape, widths)):
        if n == 0 and any(pair):
            raise ValueError(f"can't extend empty axis {axis} using modes other than "
                             "'constant' or 'empty'")
    if mode not in _COPYING or kwargs.get("reflect_type", "even") != "even":
        return _fallback(f"pad with mode '{mode}'", _np.pad, a, pad_width, mode, **kwargs)
    if a.size == 0:
        return full(shape, 0, a.dtype)
    if not any(b or e for b, e in widths):
        return a.copy()
    index = []
    for axis, (n, pair) in enumerate(zip(a.shape, widths)):
        positions = _np.pad(_np.arange(n), pair, mode)  # NumPy's, on the positions
        index.append(positions.reshape([-1 if d == axis else 1 for d in range(a.ndim)]))
    return a[tuple(index)]


def _constant(a, widths, shape, values):
    """``pad``'s ``constant`` mode: ``a`` inside a new array of ``shape``, its borders set to
    ``values`` (pairs as ``pad_width``'s, cast as NumPy's assignment casts them), axis by
    axis, each border spanning the earlier axes' borders."""
    values = [tuple(_cast(v, a.dtype) for v in pair) for pair in _pairs(values, a.ndim)]
    out = full(shape, values[0][0] if values else 0, a.dtype)
    inside = tuple(slice(b, b + n) for n, (b, _) in zip(a.shape, widths))
    if a.size:
        out[inside] = a
    for axis, ((before, after), (low, high)) in enumerate(zip(widths, values)):
        for width, value, side in ((before, low, slice(0, before)),
                                   (after, high, slice(shape[axis] - after, shape[axis]))):
            if width and value != values[0][0]:
                out[(slice(None),) * axis + (side,) + inside[axis + 1:]] = value
    return out


def _cast(value, dtype):
    """``value`` as NumPy's assignment into an array of ``dtype`` converts it (its errors
    too), as a NumPy scalar."""
    slot = _np.empty((), dtype)
    slot[()] = value
    return slot[()]


#: The functions of ``NATIVE`` this module defines.
NATIVE = ("pad",)
# Its keywords depend on the mode (``**kwargs``), which NumPy's signature binding cannot pass
# on: registered as it is.
_FUNCTIONS[_np.pad] = pad
