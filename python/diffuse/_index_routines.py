"""NumPy's routines of integer index arrays, on the native gather and scatter of advanced
indexing (``_indexing``): ``take_along_axis`` (a gather), ``put`` (a scatter into the
store the array views, so it writes through any view) and ``ix_`` (index arrays shaped to
broadcast against each other: ``a[ix_(rows, cols)]`` is one native gather).
"""

import numpy as _np

from . import _layout
from ._ndarray import ndarray
from ._eager import _HostHeld, _to_numpy
from ._interop import _FUNCTIONS, _wrap_numpy_names
from ._creation import asarray
from ._manipulation import _ReadOnly, tile
from ._ufuncs import clip, greater_equal, less, logical_or


def _host_or_diffuse(x):
    """``x`` as an array to index with: itself when it is one (diffuse or NumPy, so that a
    NumPy index is checked at once), else NumPy's array of it."""
    return x if isinstance(x, (ndarray, _np.ndarray)) else _np.asarray(x)


def take_along_axis(arr, indices, axis=-1):
    """NumPy's ``take_along_axis``: ``arr`` indexed with ``indices`` along ``axis`` and with
    the positions of the other axes (broadcast against ``indices``), one gather; ``axis=None``
    takes from the flattened array."""
    arr, indices = asarray(arr), _host_or_diffuse(indices)
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        arr, axis = arr.ravel(), 0
    else:
        axis = _layout.normalize_axis(axis, arr.ndim)
    if indices.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    if arr.ndim != indices.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    if arr.size == 0 or indices.size == 0:
        # (No elements to gather: NumPy's answer and error depend on the shapes alone.)
        return asarray(_np.take_along_axis(_np.empty(arr.shape, arr.dtype),
                                           _np.asarray(indices), axis))
    key = tuple(indices if d == axis else
                _np.arange(n).reshape([-1 if e == d else 1 for e in range(arr.ndim)])
                for d, n in enumerate(arr.shape))
    return arr[key]


def _flat_indices(ind):
    """``put``'s indices, flattened, as int64 (NumPy's conversion: an array's dtype must
    cast safely, a list's numbers are converted)."""
    if isinstance(ind, (ndarray, _np.ndarray)):
        if not _np.can_cast(ind.dtype, _np.int64, casting="safe"):
            raise TypeError(f"Cannot cast array data from dtype('{ind.dtype}') to "
                            "dtype('int64') according to the rule 'safe'")
        return ind.ravel().astype(_np.int64, copy=False)
    return _np.asarray(ind, dtype=_np.int64).ravel()


def _checked(flat, n, mode):
    """The flat indices ``flat`` into ``n`` elements as ``mode`` takes them: ``raise``
    refuses one out of range (NumPy's ``IndexError``: read back at the call for diffuse
    indices), ``clip`` clips them into range, ``wrap`` keeps them (the element coordinates
    ``put`` derives wrap around, as negative indices do)."""
    if mode == "clip":
        return _np.clip(flat, 0, n - 1) if isinstance(flat, _np.ndarray) else clip(flat, 0, n - 1)
    if mode == "raise":
        bad = (flat < -n) | (flat >= n) if isinstance(flat, _np.ndarray) else \
            logical_or(less(flat, -n), greater_equal(flat, n))
        if bool(bad.any()):
            first = _np.asarray(flat)[_np.asarray(bad)][0]
            raise IndexError(f"index {first} is out of bounds for axis 0 with size {n}")
    return flat


def put(a, ind, v, mode="raise"):
    """NumPy's ``put``: ``a.flat[ind] = v`` (``v`` repeated as needed, cast to ``a``'s
    dtype; repeated indices keep the last value), as one scatter into ``a``'s store: the
    flat indices become the store's element coordinates through ``a``'s strides, so a
    transposed or stepped view is written in place."""
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if not isinstance(a, (ndarray, _np.ndarray)):
        raise TypeError(f"argument 1 must be numpy.ndarray, not {type(a)}")
    if isinstance(a, (_np.ndarray, _HostHeld)):
        # NumPy holds the elements: its put, in place.
        _np.put(a if isinstance(a, _np.ndarray) else a._h, _to_numpy(ind), _to_numpy(v), mode)
        return None
    if isinstance(a, _ReadOnly):
        raise ValueError("put: output array is read-only")
    flat = _flat_indices(ind)
    if flat.size == 0:
        return None
    if a.size == 0:
        raise IndexError("cannot replace elements of an empty array")
    values = v.astype(a.dtype) if isinstance(v, ndarray) else _np.asarray(v, dtype=a.dtype)
    values = values.ravel()
    if values.size == 0:
        return None
    if values.size < flat.size:
        values = tile(values, -(-flat.size // values.size))
    values = asarray(values[:flat.size])
    flat = _checked(flat, a.size, mode)
    store, _, store_shape, shape, offset, strides = a._as_strided()
    if not store_shape:  # one element: the last value is the one that stays
        ndarray(store)[...] = values[-1:].reshape(())
        return None
    # Element coordinates along each axis (floored: a negative or a wrapping index comes
    # round from the end), their position in the store, and its coordinates there.
    position = flat * 0 + offset  # (an array, also for a 0-d view)
    for n, s, c in zip(shape, strides, _layout.c_strides(shape)):
        position = position + s * ((flat // c) % n)
    key = tuple((position // c) % n for n, c in zip(store_shape, _layout.c_strides(store_shape)))
    ndarray(store)[key] = values
    return None


def ix_(*args):
    """NumPy's ``ix_``: each 1-d sequence (a boolean one as its ``nonzero`` indices) as a
    diffuse array along its own axis of ``len(args)``, so that together they index the
    cross product of their positions."""
    out = []
    for k, new in enumerate(args):
        if not isinstance(new, ndarray):
            host = _np.asarray(new)
            new = asarray(host.astype(_np.intp) if host.size == 0 else host)
        if new.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if new.dtype == _np.bool_:
            new, = new.nonzero()
        out.append(new.reshape((1,) * k + (new.size,) + (1,) * (len(args) - k - 1)))
    return tuple(out)


#: The functions of ``NATIVE`` this module defines.
NATIVE = ("ix_", "put", "take_along_axis")
_wrap_numpy_names(globals(), ("put", "take_along_axis"))
# Its arrays are positional (``*args``), which NumPy's signature binding cannot pass on.
_FUNCTIONS[_np.ix_] = ix_
