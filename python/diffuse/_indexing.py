"""Indexing beyond boxes and strided views: boolean masks and integer index arrays read as
NumPy reads them, and writes through masks (``putmask``, ``copyto``).
"""

import builtins
import numbers

import numpy as _np

from . import _layout
from ._dtypes import _is_scalar
from ._ndarray import ndarray
from ._interop import _fallback, _wrap_numpy_names
from ._creation import asarray, full
from ._ufuncs import _where, where
from ._selection import nonzero


def _bool_array(key):
    """``key`` as a diffuse boolean array when it is a boolean array (diffuse or NumPy);
    None for anything else."""
    if isinstance(key, ndarray):
        return key if key.dtype == _np.bool_ else None
    if isinstance(key, _np.ndarray) and key.dtype == _np.bool_:
        return asarray(key)
    return None


def _selection_mask(key, shape):
    """For a key that selects with a boolean array, the mask broadcastable to ``shape``
    marking the selected elements: a mask of ``shape``'s leading dimensions (``a[m]``), or
    one 1-d mask along one axis among full slices (``a[:, m]``). None for any other key."""
    mask = _bool_array(key)
    if mask is not None:
        k = mask.ndim
        if k == 0 or tuple(mask.shape) != tuple(shape[:k]):
            return None
        return mask.reshape(tuple(mask.shape) + (1,) * (len(shape) - k))
    if not isinstance(key, tuple) or len(key) > len(shape):
        return None
    axis, mask = None, None
    for d, k in enumerate(key):
        if isinstance(k, slice) and k == slice(None):
            continue
        m = _bool_array(k)
        if m is None or m.ndim != 1 or m.shape[0] != shape[d] or axis is not None:
            return None
        axis, mask = d, m
    if mask is None:
        return None
    return mask.reshape(tuple(shape[d] if d == axis else 1 for d in range(len(shape))))


def _host_index(k, d, n):
    """A host integer index (NumPy array, list or Python integer) for axis ``d`` of extent
    ``n`` as an int64 NumPy array, checked as NumPy checks it; None if it is not one."""
    if isinstance(k, bool):
        return None
    host = _np.asarray(k)
    if host.dtype.kind not in "iu":
        return None
    if host.size and (host.min() < -n or host.max() >= n):
        bad = host[(host < -n) | (host >= n)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for axis {d} with size {n}")
    return host.astype(_np.int64)


def _advanced_entries(keys, shape):
    """The key's entries, one per dimension, as ``("slice", range)`` or ``("index", int64
    array, diffuse or NumPy)``: integers and integer arrays are indices, a boolean array over
    k dimensions becomes its k ``nonzero`` index arrays. None for keys this path does not
    take (``newaxis``, other dtypes, more than one Ellipsis)."""
    if builtins.sum(1 for k in keys if k is Ellipsis) > 1:
        return None
    arrays = (ndarray, _np.ndarray, list)
    consumed = builtins.sum(_index_width(k) for k in keys if k is not Ellipsis)
    ellipsis = [i for i, k in enumerate(keys) if k is Ellipsis]  # (`in` would compare arrays)
    if ellipsis:
        i = ellipsis[0]
        keys = keys[:i] + (slice(None),) * (len(shape) - consumed) + keys[i + 1:]
        consumed = len(shape)
    if consumed > len(shape):
        return None
    keys = keys + (slice(None),) * (len(shape) - consumed)
    entries, d = [], 0
    for k in keys:
        if isinstance(k, slice):
            entries.append(("slice", range(*k.indices(shape[d]))))
            d += 1
        elif isinstance(k, (ndarray, _np.ndarray)) and k.dtype == _np.bool_:
            if k.ndim == 0 or d + k.ndim > len(shape):
                return None
            for axis, (n, m) in enumerate(zip(shape[d:d + k.ndim], k.shape)):
                if n != m:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {d + axis}; "
                        f"size of axis is {n} but size of corresponding boolean axis is {m}")
            for index in nonzero(k):
                entries.append(("index", index))
            d += k.ndim
        elif isinstance(k, ndarray):
            if k.dtype.kind not in "iu":
                return None
            entries.append(("index", k if k.dtype == _np.int64 else k.astype(_np.int64)))
            d += 1
        elif isinstance(k, arrays) or isinstance(k, numbers.Integral):
            host = _host_index(k, d, shape[d])
            if host is None:
                return None
            entries.append(("index", host))
            d += 1
        else:
            return None
    return entries


def _index_width(k):
    """The dimensions of the indexed array that an index entry takes: a boolean array its
    own dimensions, ``newaxis`` none, anything else one."""
    if k is None:
        return 0
    if isinstance(k, (ndarray, _np.ndarray)) and k.dtype == _np.bool_:
        return k.ndim
    return 1


def _lists_as_arrays(keys):
    """The index entries with every list as NumPy's array of it (of booleans a mask; empty,
    an empty integer index)."""
    return tuple((_np.asarray(k) if k else _np.zeros(0, _np.int64)) if isinstance(k, list)
                 else k for k in keys)


def _newaxis_as_axes(key, shape):
    """For an advanced-index key with ``newaxis`` entries (``a[idx, None]``), ``(shape with a
    length-1 axis where each newaxis stands, the key with a full slice there)``: indexing an
    array reshaped so with that key is NumPy's result. None for any other key."""
    keys = key if isinstance(key, tuple) else (key,)
    if not builtins.any(k is None for k in keys) or not builtins.any(
            isinstance(k, (ndarray, _np.ndarray, list)) for k in keys) \
            or builtins.sum(1 for k in keys if k is Ellipsis) > 1:
        return None
    keys = _lists_as_arrays(keys)
    consumed = builtins.sum(_index_width(k) for k in keys if k is not Ellipsis)
    if consumed > len(shape):
        return None
    expanded, d = [], 0
    for k in keys:
        n = len(shape) - consumed if k is Ellipsis else _index_width(k)
        expanded.extend([1] if k is None else shape[d:d + n])
        d += n
    expanded.extend(shape[d:])
    return tuple(expanded), tuple(slice(None) if k is None else k for k in keys)


def _integer_indices(key, shape):
    """For a key with at least one integer or boolean index array among integers, slices
    and an Ellipsis (NumPy's advanced indexing without ``newaxis``), one int64 diffuse index
    array per dimension of an array of ``shape``, broadcasting together to the shape of
    NumPy's result (slices become ranges along their result axis); None for any other key.
    Host indices out of range raise NumPy's IndexError here; diffuse ones when the gather or
    scatter runs."""
    keys = key if isinstance(key, tuple) else (key,)
    if not shape or not builtins.any(
            isinstance(k, (ndarray, _np.ndarray, list)) for k in keys):
        return None
    keys = _lists_as_arrays(keys)
    entries = _advanced_entries(keys, shape)
    if entries is None:
        return None
    advanced = [i for i, (kind, _) in enumerate(entries) if kind == "index"]
    block = _layout.broadcast_or_none(*(tuple(v.shape) for kind, v in entries if kind == "index"))
    if block is None:
        shapes = " ".join(str(tuple(v.shape)) for kind, v in entries if kind == "index")
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {shapes}")
    # NumPy puts the indices' broadcast block where they stand when they are adjacent, and
    # first otherwise; each slice keeps its own axis.
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    before = advanced[0] if adjacent else 0
    slices_before = [i for i, (kind, _) in enumerate(entries) if kind == "slice"
                     and (adjacent and i < advanced[0])]
    slices_after = [i for i, (kind, _) in enumerate(entries) if kind == "slice"
                    and i not in slices_before]
    rank = len(slices_before) + len(block) + len(slices_after)
    out = []
    for i, (kind, value) in enumerate(entries):
        if kind == "index":
            k_shape = (1,) * (len(block) - len(value.shape)) + tuple(value.shape)
            placed = (1,) * before + k_shape + (1,) * (rank - before - len(block))
            if isinstance(value, ndarray):
                out.append(value.reshape(placed) if tuple(value.shape) != placed else value)
            else:
                out.append(asarray(value.reshape(placed)))
        else:
            axis = (slices_before.index(i) if i in slices_before
                    else len(slices_before) + len(block) + slices_after.index(i))
            placed = [1] * rank
            placed[axis] = len(value)
            out.append(asarray(_np.array(value, dtype=_np.int64).reshape(placed)))
    return out


def _single_value(value, dtype):
    """One value for writing into an array of ``dtype`` (a scalar, or an array of one
    element), cast as NumPy's assignment casts it (raising as it does); a lazy 0-d diffuse
    array when ``value`` is a one-element diffuse array of ``dtype``. None otherwise."""
    if isinstance(value, ndarray):
        if value.size != 1 or value.dtype != dtype:
            return None
        return value.reshape(())
    host = _np.asarray(value) if not isinstance(value, _np.ndarray) else value
    if host.size != 1 or host.dtype.kind not in "biuf":
        return None
    slot = _np.empty((), dtype=dtype)
    # NumPy's casting and its errors (a NaN into an integer array).
    slot[()] = host.reshape(()) if host.ndim else value
    return full((), slot.item(), dtype=dtype)


def putmask(a, mask, values):
    """NumPy's ``putmask``: ``a`` where ``mask`` holds set to ``values`` (one value, or an
    array of ``a``'s shape: an element-wise ``where``); values repeating cyclically run on
    NumPy."""
    if not isinstance(a, ndarray):
        raise TypeError("putmask: first argument must be an array")
    m = asarray(mask)
    if tuple(m.shape) != a.shape:
        raise ValueError("putmask: mask and data must be the same size")
    if m.dtype != _np.bool_:
        m = m.astype("bool")
    fill = _single_value(values, a.dtype)
    if fill is None:
        v = asarray(values)
        if tuple(v.shape) != a.shape:
            _fallback("putmask with repeating values", _np.putmask, a, mask, values)
            return None
        fill = v if v.dtype == a.dtype else v.astype(a.dtype)
    a[...] = where(m, fill, a)
    return None


def copyto(dst, src, casting="same_kind", where=True):
    """NumPy's ``copyto``: ``src`` broadcast into ``dst`` where ``where`` holds, checking
    ``casting`` as NumPy does (an element-wise ``where``)."""
    if not isinstance(dst, ndarray):
        raise TypeError("copyto() argument 1 must be an array")
    s = asarray(src) if not _is_scalar(src) else None
    src_dtype = s.dtype if s is not None else _np.asarray(src).dtype
    if s is not None and not _np.can_cast(src_dtype, dst.dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from dtype('{src_dtype}') to "
                        f"dtype('{dst.dtype}') according to the rule '{casting}'")
    if s is None:
        # NumPy's own check of a scalar against ``casting`` (NEP 50), on a 0-d stand-in.
        _np.copyto(_np.empty((), dst.dtype), src, casting=casting)
    values = s if s is not None else _single_value(src, dst.dtype)
    if values is None:
        return _fallback("copyto", _np.copyto, dst, src, casting=casting, where=where)
    if values.dtype != dst.dtype:
        values = values.astype(dst.dtype)
    _layout.broadcast_shapes(values.shape, dst.shape)
    if where is True:
        dst[...] = values
        return None
    m = asarray(where)
    if m.dtype != _np.bool_:
        m = m.astype("bool")
    _layout.broadcast_shapes(m.shape, dst.shape)
    dst[...] = _where(m, values, dst)
    return None


#: The functions of ``NATIVE`` this module defines, given NumPy's whole interface here, before
#: any other module imports them.
NATIVE = (
    "copyto",
    "putmask",
)
_wrap_numpy_names(globals(), NATIVE)
