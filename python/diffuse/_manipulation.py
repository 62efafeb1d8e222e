"""Shape changes (views where NumPy gives views: ``reshape``, ``transpose``, ``squeeze``, ...,
and ``broadcast_to``'s read-only views), joins and rearrangements (``concatenate``, ``stack``,
``roll``, ``tile``, ``diff``, ``meshgrid``, ``repeat``), and views and selections NumPy names
(``flip``, ``moveaxis``, ``split``, ``triu``, ``take``, ...).
"""

import builtins
import numbers

import numpy as _np

from . import _layout, _native
from ._dtypes import _dtype_name
from ._ndarray import ndarray, _make_view, _StridedView
from ._eager import _Eager, _HostHeld
from ._interop import _fallback, _FUNCTIONS, _stand_in, _wrap_numpy_names
from ._creation import arange, asarray, full, zeros
from ._ufuncs import greater_equal, less_equal, not_equal, subtract, where


# -- views -------------------------------------------------------------------------------
def _order(a, order, allowed="CFAK"):
    """``"C"``, ``"F"`` or ``"K"``: the index order that ``order`` (any case; None is
    ``"C"``) reads ``a`` in, ``"A"`` being ``"F"`` when ``a`` is Fortran-contiguous and not
    C-contiguous; NumPy's errors for an order it does not know or that is not ``allowed``."""
    name = "C" if order is None else order.upper() if isinstance(order, str) else order
    if name not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if name not in allowed:
        raise ValueError(f"order '{name}' is not permitted for reshaping")
    if name == "A":
        _, _, _, shape, _, strides = a._as_strided()
        c, f = _contiguous(shape, strides), _contiguous(shape[::-1], strides[::-1])
        return "F" if f and not c else "C"
    return name


def _contiguous(shape, strides):
    """True when ``strides`` step through ``shape`` in row-major order, without gaps."""
    return builtins.all(n == 1 or s == c
                        for n, s, c in zip(shape, strides, _layout.c_strides(shape)))


def _memory_order(shape, strides):
    """The axes of a strided view, slowest first, in the order NumPy's ``"K"`` reads them:
    its iterator's stable insertion sort by absolute stride, in which an axis of stride 0
    (broadcast, or of length 1) keeps its place (it compares with no other)."""
    size = [0 if n == 1 else builtins.abs(s) for n, s in zip(shape, strides)]
    perm = list(range(len(shape)))[::-1]  # fastest first, as the iterator sorts
    for i in range(1, len(perm)):
        axis, place = perm[i], i
        for j in range(i - 1, -1, -1):
            if size[axis] and size[perm[j]]:
                if size[perm[j]] <= size[axis]:
                    break
                place = j
        perm.insert(place, perm.pop(i))
    return perm[::-1]


def reshape(a, shape, order="C"):
    """``a.reshape(shape)``: a view when NumPy gives one, else a copy. ``order="F"`` reads
    and places the elements with the first index fastest: the reversed reshape of the
    transpose, transposed back."""
    a = asarray(a)
    if _order(a, order, allowed="CFA") == "C":
        return a.reshape(shape)
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    return a.T.reshape(_layout.new_shape(shape, a.size)[::-1]).T


def ravel(a, order="C"):
    """``a`` as 1-d: a view when NumPy gives one, else a copy; in the index order ``order``
    (``"K"``: as the elements lie in memory, ``_memory_order``)."""
    a = asarray(a)
    order = _order(a, order)
    if order == "K":
        _, _, _, shape, _, strides = a._as_strided()
        return a.transpose(_memory_order(shape, strides)).ravel()
    return a.ravel() if order == "C" else a.T.ravel()


def broadcast_to(array, shape, subok=False):
    """NumPy's ``broadcast_to``: a read-only view of ``array`` with ``shape`` (its elements
    repeated by strides of 0, never copied; later writes to ``array`` show through); writes
    into it raise NumPy's ``ValueError``."""
    a = asarray(array)
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if isinstance(a, _HostHeld):
        # NumPy holds the elements: NumPy's read-only view of them, however large.
        return _Eager(_np.broadcast_to(a._h, shape))
    _np.broadcast_to(_stand_in(a), shape)  # NumPy's errors, nothing copied
    store, sid, store_shape, own, offset, strides = a._as_strided()
    lead = len(shape) - a.ndim
    new = [0] * lead + [s if n == m else 0 for n, m, s in zip(own, shape[lead:], strides)]
    return _read_only(_make_view(store, sid, store_shape, list(shape), offset, new))


class _ReadOnly:
    """An array that refuses writes, as NumPy's read-only arrays (``broadcast_to``'s
    views) do; the views taken of it refuse them too, the copies made of it do not."""

    __slots__ = ()

    def __setitem__(self, key, value):
        raise ValueError("assignment destination is read-only")

    def _inplace(self, op, o):
        raise ValueError("output array is read-only")

    @property
    def flags(self):
        """NumPy's flags of a broadcast array of this shape: ``writeable`` is False (the
        others describe no memory diffuse has)."""
        return _np.broadcast_to(_np.empty((), self.dtype), self.shape).flags

    def __getitem__(self, key):
        return _read_only_view(self, super().__getitem__(key))

    def reshape(self, *shape, order="C"):
        return _read_only_view(self, super().reshape(*shape, order=order))

    def transpose(self, *axes):
        return _read_only_view(self, super().transpose(*axes))

    def diagonal(self, offset=0):
        return _read_only_view(self, super().diagonal(offset))


class _ReadOnlyArray(_ReadOnly, ndarray):
    """A read-only box of a store."""

    __slots__ = ()


class _ReadOnlyView(_ReadOnly, _StridedView):
    """A read-only strided view of a store."""

    __slots__ = ()


def _store_id(x):
    return x._sid if isinstance(x, _StridedView) else x._a.store_id


def _read_only(x):
    """``x`` (a new view) made read-only in place."""
    if type(x) is ndarray:
        x.__class__ = _ReadOnlyArray
    elif type(x) is _StridedView:
        x.__class__ = _ReadOnlyView
    return x


def _read_only_view(base, x):
    """``x``, taken from the read-only ``base``: read-only when it is a view of
    ``base``'s store (not a scalar, nor a copy)."""
    if type(x) in (ndarray, _StridedView) and x.size and _store_id(x) == _store_id(base):
        return _read_only(x)
    return x


def transpose(a, axes=None):
    """The view of ``a`` with its axes permuted (reversed by default)."""
    return asarray(a).transpose(axes)


def swapaxes(a, axis1, axis2):
    """The view of ``a`` with two axes exchanged."""
    return asarray(a).swapaxes(axis1, axis2)


def squeeze(a, axis=None):
    """The view of ``a`` without (the given) unit axes."""
    return asarray(a).squeeze(axis)


def expand_dims(a, axis):
    """The view of ``a`` with unit axes inserted at ``axis`` (an int or a tuple)."""
    a = asarray(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    where = {_layout.normalize_axis(x, ndim) for x in axes}
    if len(where) != len(axes):
        raise ValueError("repeated axis")
    dims = iter(a.shape)
    return a.reshape([1 if d in where else next(dims) for d in range(ndim)])


# -- joining and rearranging -------------------------------------------------------------
def _joined(arrays, dtype, casting, what):
    """The inputs of a join as diffuse arrays of one dtype (NumPy's result type, or
    ``dtype`` checked against ``casting``); None when that dtype is not diffuse's."""
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    target = _np.dtype(dtype) if dtype is not None else _np.result_type(
        *[a.dtype for a in arrays])
    name = _dtype_name(target)
    if name is None:
        return None
    for a in arrays:
        if not _np.can_cast(a.dtype, target, casting=casting):
            raise TypeError(f"Cannot cast array data from dtype('{a.dtype}') to "
                            f"dtype('{target}') according to the rule '{casting}'")
    return [a if a.dtype == target else a.astype(name) for a in arrays]


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """NumPy's ``concatenate``: one assignment task per input into a new array (``axis=None``
    joins the flattened inputs); ``out`` receives the result."""
    if out is not None and dtype is not None:
        raise TypeError("concatenate() only takes `out` or `dtype` as an argument, but both "
                        "were provided.")
    arrays = list(arrays)
    parts = _joined(arrays, dtype, casting, "concatenate")
    if parts is None:
        return _fallback("concatenate", _np.concatenate, arrays, axis=axis, dtype=dtype,
                         casting=casting)
    if axis is None:
        parts, axis = [p.ravel() for p in parts], 0
    ndim = parts[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = _layout.normalize_axis(axis, ndim)
    result = ndarray(_native.concatenate_([p._a for p in parts], axis))
    if out is None:
        return result
    out[...] = result
    return out


def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """NumPy's ``stack``: the arrays (of one shape) joined along a new axis."""
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    if len({a.shape for a in arrays}) != 1:
        raise ValueError("all input arrays must have the same shape")
    axis = _layout.normalize_axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, out=out,
                       dtype=dtype, casting=casting)


def vstack(tup, dtype=None, casting="same_kind"):
    """NumPy's ``vstack``: 1-d inputs as rows, joined along the first axis."""
    rows = [a if a.ndim >= 2 else a.reshape(1, -1) for a in map(asarray, tup)]
    return concatenate(rows, axis=0, dtype=dtype, casting=casting)


def hstack(tup, dtype=None, casting="same_kind"):
    """NumPy's ``hstack``: joined along the second axis (the first for 1-d inputs)."""
    parts = [a if a.ndim >= 1 else a.reshape(1) for a in map(asarray, tup)]
    axis = 0 if parts and parts[0].ndim == 1 else 1
    return concatenate(parts, axis=axis, dtype=dtype, casting=casting)


def roll(a, shift, axis=None):
    """NumPy's ``roll``: two assignment tasks per rolled axis (``axis=None`` rolls the
    flattened array)."""
    a = asarray(a)
    if axis is None:
        return roll(a.ravel(), shift, 0).reshape(a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    total = {}
    for s_, x in zip(shifts, axes):
        x = _layout.normalize_axis(x, a.ndim)
        total[x] = total.get(x, 0) + int(s_)
    out = a
    for x, s_ in total.items():
        out = ndarray(_native.roll_(out._a, s_, x))
    return out if total else a.copy()


def tile(A, reps):
    """NumPy's ``tile``: one assignment task per copy."""
    a = asarray(A)
    reps = (reps,) if isinstance(reps, numbers.Integral) else tuple(int(r) for r in reps)
    if a.ndim == 0 and not reps:
        return a.copy()
    if a.ndim == 0:
        a = a.reshape(1)
    return ndarray(_native.tile_(a._a, list(reps)))


def diff(a, n=1, axis=-1, prepend=_np._NoValue, append=_np._NoValue):
    """NumPy's ``diff``: differences of neighbours along ``axis``, ``n`` times (``!=`` for
    booleans), as slices of views: fused element-wise tasks."""
    a = asarray(a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = _layout.normalize_axis(axis, a.ndim)
    extra = [v for v in (prepend, append) if v is not _np._NoValue]
    if extra:
        def edge(v):
            v = asarray(v)
            if v.ndim == 0:
                shape = list(a.shape)
                shape[axis] = 1
                v = full(tuple(shape), v.item(), dtype=v.dtype)
            return v
        pieces = ([edge(prepend)] if prepend is not _np._NoValue else []) + [a] + \
            ([edge(append)] if append is not _np._NoValue else [])
        a = concatenate(pieces, axis=axis)
    for _ in range(n):
        head = tuple(slice(1, None) if d == axis else slice(None) for d in range(a.ndim))
        tail = tuple(slice(None, -1) if d == axis else slice(None) for d in range(a.ndim))
        a = not_equal(a[head], a[tail]) if a.dtype == _np.bool_ else \
            subtract(a[head], a[tail])
    return a


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """NumPy's ``meshgrid``: each input broadcast along the other dimensions (element-wise
    tasks; views of the inputs with ``sparse=True``)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [asarray(x).ravel() for x in xi]
    ndim = len(xs)
    shape = [x.size for x in xs]
    if indexing == "xy" and ndim > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        axis = (1 if i == 0 else 0 if i == 1 else i) if indexing == "xy" and ndim > 1 else i
        view = x.reshape([x.size if d == axis else 1 for d in range(ndim)])
        if sparse:
            out.append(view.copy() if copy else view)
        else:
            out.append(where(True, view, zeros(shape, view.dtype)))
    return tuple(out)


def repeat(a, repeats, axis=None):
    """NumPy's ``repeat`` with one repetition count: each element ``repeats`` times in a
    row along ``axis`` (the flattened array for None), by one broadcast write; per-element
    counts run on NumPy."""
    a = asarray(a)
    if not isinstance(repeats, numbers.Integral) and not (
            isinstance(repeats, (_np.ndarray, ndarray)) and repeats.size == 1):
        return _fallback("repeat with per-element counts", _np.repeat, a, repeats, axis)
    r = int(repeats if isinstance(repeats, numbers.Integral) else _np.asarray(repeats).item())
    if r < 0:
        raise ValueError("negative dimensions are not allowed")
    if axis is None:
        a, axis = a.ravel(), 0
    axis = _layout.normalize_axis(axis, a.ndim)
    shape = list(a.shape)
    out = zeros(shape[:axis] + [shape[axis] * r] + shape[axis + 1:], a.dtype)
    if out.size:
        split = out.reshape(shape[:axis + 1] + [r] + shape[axis + 1:])
        split[...] = a.reshape(shape[:axis + 1] + [1] + shape[axis + 1:])
    return out


# Its inputs are positional (``*xi``), which NumPy's signature binding cannot pass on.
_FUNCTIONS[_np.meshgrid] = meshgrid


# -- rearrangements as views and selections --------------------------------------------
def copy(a, order="K", subok=False):
    """A new array holding ``a``'s elements."""
    return asarray(a).copy()


def flip(m, axis=None):
    """The view of ``m`` with the order of its elements along ``axis`` (every axis by
    default) reversed."""
    m = asarray(m)
    axes = range(m.ndim) if axis is None else _np.lib.array_utils.normalize_axis_tuple(
        axis, m.ndim)
    return m[tuple(slice(None, None, -1) if d in axes else slice(None)
                   for d in range(m.ndim))]


def fliplr(m):
    """The view of ``m`` with its columns (axis 1) reversed."""
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


def flipud(m):
    """The view of ``m`` with its rows (axis 0) reversed."""
    m = asarray(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def moveaxis(a, source, destination):
    """The view of ``a`` with the axes ``source`` moved to ``destination`` (NumPy's
    errors for axes out of range, repeated, or not matched one to one)."""
    a = asarray(a)
    source = _np.lib.array_utils.normalize_axis_tuple(source, a.ndim, "source")
    destination = _np.lib.array_utils.normalize_axis_tuple(destination, a.ndim,
                                                           "destination")
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [d for d in range(a.ndim) if d not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return a.transpose(order)


def array_split(ary, indices_or_sections, axis=0):
    """Views of ``ary`` along ``axis``: ``indices_or_sections`` pieces as equal as can be
    (the first ones one longer), or the pieces between the given indices."""
    ary = asarray(ary)
    length = ary.shape[axis]
    try:
        bounds = [0, *indices_or_sections, length]
    except TypeError:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extra = divmod(length, sections)
        sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
        bounds = _np.cumsum(sizes).tolist()
    view = [slice(None)] * ary.ndim
    pieces = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        view[axis] = slice(start, stop)
        pieces.append(ary[tuple(view)])
    return pieces


def split(ary, indices_or_sections, axis=0):
    """``array_split``, where a number of sections must divide the axis (NumPy's
    error otherwise)."""
    ary = asarray(ary)
    if _np.ndim(indices_or_sections) == 0:
        if ary.shape[axis] % int(indices_or_sections):  # (NumPy's ZeroDivisionError for 0)
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """``split`` along the columns (axis 1; axis 0 of a 1-d array)."""
    ary = asarray(ary)
    if ary.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """``split`` along the rows (axis 0) of an array of 2 or more dimensions."""
    ary = asarray(ary)
    if ary.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def _triangle(m, k, upper):
    """``m`` with the elements outside its (upper or lower) triangle of the last two axes
    zeroed: a comparison of row and column numbers, fused with the selection."""
    m = asarray(m)
    if m.ndim < 2:
        name = "triu" if upper else "tril"
        return _fallback(name, getattr(_np, name), m, k=k)
    rows, cols = m.shape[-2:]
    offset = subtract(arange(cols, dtype="int64").reshape(1, cols),
                      arange(rows, dtype="int64").reshape(rows, 1))
    keep = greater_equal(offset, k) if upper else less_equal(offset, k)
    return where(keep, m, _np.zeros((), m.dtype)[()])


def triu(m, k=0):
    """A copy of ``m`` with the elements below its ``k``-th diagonal zeroed."""
    return _triangle(m, k, upper=True)


def tril(m, k=0):
    """A copy of ``m`` with the elements above its ``k``-th diagonal zeroed."""
    return _triangle(m, k, upper=False)


def take(a, indices, axis=None, out=None, mode="raise"):
    """The elements of ``a`` (flattened, or along ``axis``) at ``indices``: integer-array
    indexing, NumPy's ``IndexError`` for an index out of range. ``out=`` and the modes
    that wrap or clip run on NumPy."""
    a = asarray(a)
    if out is not None or mode != "raise":
        return _fallback("take", _np.take, a, indices, axis=axis, out=out, mode=mode)
    if a.size == 0:
        # (No elements: NumPy's answer and error depend on the shape and indices alone.)
        return asarray(_np.take(_np.empty(a.shape, a.dtype), indices, axis=axis))
    if axis is None:
        return a.ravel()[indices]
    axis = _layout.normalize_axis(axis, a.ndim)
    return a[(slice(None),) * axis + (indices,)]


#: The functions of ``NATIVE`` this module defines, given NumPy's whole interface here, before
#: any other module imports them.
NATIVE = (
    "array_split",
    "broadcast_to",
    "concatenate",
    "copy",
    "diff",
    "expand_dims",
    "flip",
    "fliplr",
    "flipud",
    "hsplit",
    "hstack",
    "moveaxis",
    "ravel",
    "repeat",
    "reshape",
    "roll",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "take",
    "tile",
    "transpose",
    "tril",
    "triu",
    "vsplit",
    "vstack",
)
_wrap_numpy_names(globals(), set(NATIVE) - {"broadcast_to"})
# A NumPy-held array's broadcast is NumPy's read-only view however large (NumPy's path for
# such arrays would copy a large one into a writable deferred array).
_FUNCTIONS[_np.broadcast_to] = broadcast_to
