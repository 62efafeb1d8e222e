"""NumPy's view arithmetic on diffuse stores.

A view is described as NumPy describes one: element ``i`` of the view is element
``offset + sum(strides[d] * i[d])`` of its store, counted in row-major order. These helpers
compute the descriptions that basic indexing, transposition and reshaping give, with
NumPy's rules and error messages; ``diffuse.numpy`` turns the descriptions into arrays.
Broadcasting shapes together is here too (``broadcast_or_none``, ``broadcast_shapes``).
"""

import numbers
import operator
import weakref


def c_strides(shape):
    """Row-major strides (in elements) of an array of ``shape``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def is_index(k):
    """True for what NumPy's basic indexing accepts as an integer index."""
    return isinstance(k, numbers.Integral) and not isinstance(k, bool)


def index(shape, offset, strides, key):
    """``(shape, offset, strides, dropped)`` of the view ``key`` selects (integers, slices
    with any step, ``None``/``newaxis``, one ``...``), or None when ``key`` needs advanced
    indexing (arrays, lists, booleans). ``dropped`` is True when an integer removed a
    dimension."""
    if not isinstance(key, tuple):
        key = (key,)
    if not all(k is None or k is Ellipsis or isinstance(k, slice) or is_index(k) for k in key):
        return None
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > len(shape):
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, "
            f"but {consumed} were indexed"
        )
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - consumed) + key[i + 1:]
    key = key + (slice(None),) * (len(shape) - sum(1 for k in key if k is not None))
    out_shape, out_strides, dropped, d = [], [], False, 0
    for k in key:
        if k is None:
            out_shape.append(1)
            out_strides.append(0)
            continue
        n = shape[d]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            count = len(range(start, stop, step))
            if count:
                offset += start * strides[d]
            out_shape.append(count)
            out_strides.append(step * strides[d])
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
            offset += (i % n) * strides[d]
            dropped = True
        d += 1
    return out_shape, offset, out_strides, dropped


def normalize_axis(axis, ndim):
    """``axis`` in ``0..ndim``, with NumPy's error for one out of range."""
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        from numpy.exceptions import AxisError

        raise AxisError(a, ndim)
    return a % ndim


def new_shape(shape, size):
    """``shape`` for ``reshape`` with a ``-1`` inferred, or NumPy's ValueError."""
    shape = [operator.index(n) for n in shape]
    unknown = [d for d, n in enumerate(shape) if n == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(n < -1 for n in shape):
        raise ValueError("negative dimensions not allowed")
    known = 1
    for n in shape:
        if n != -1:
            known *= n
    if unknown and known and size % known == 0:
        shape[unknown[0]] = size // known
    elif unknown or known != size:
        listed = ",".join("newaxis" if n == -1 else str(n) for n in shape)
        listed += "," if len(shape) == 1 else ""
        raise ValueError(f"cannot reshape array of size {size} into shape ({listed})")
    return shape


def reshape_strides(shape, strides, target):
    """Strides giving a view of ``target`` shape over the elements of a view of ``shape``
    and ``strides`` in row-major order, or None when no view can (NumPy then copies)."""
    if 0 in shape:
        return c_strides(target)
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    out = [0] * len(target)
    o = t = 0
    while o < len(old) and t < len(target):
        o_end, t_end = o + 1, t + 1
        o_size, t_size = old[o][0], target[t]
        while o_size != t_size:
            if o_size < t_size:
                o_size *= old[o_end][0]
                o_end += 1
            else:
                t_size *= target[t_end]
                t_end += 1
        # The old dimensions o..o_end must be one contiguous run to be re-split.
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(o, o_end - 1)):
            return None
        out[t_end - 1] = old[o_end - 1][1]
        for k in range(t_end - 1, t, -1):
            out[k - 1] = out[k] * target[k]
        o, t = o_end, t_end
    return out


class Version:
    """How many times a store has been written since a view of it was taken."""

    __slots__ = ("count", "__weakref__")

    def __init__(self):
        self.count = 0


# The write counters of stores that strided views watch, by store id; an entry lives as
# long as some view holds it.
_watched = weakref.WeakValueDictionary()


def watch(store_id):
    """The write counter of ``store_id``, shared by every view watching it."""
    version = _watched.get(store_id)
    if version is None:
        version = _watched[store_id] = Version()
    return version


# The strided views of each store, so that they can move together to a new store.
_views = {}


def register(store_id, view):
    """Records ``view`` as a strided view of ``store_id``."""
    # Arrays are unhashable (as NumPy's are): the views are kept by their id.
    _views.setdefault(store_id, weakref.WeakValueDictionary())[id(view)] = view


def views(store_id):
    """The live strided views of ``store_id``."""
    return list(_views.get(store_id, {}).values())


def forget(store_id):
    """Drops the record of ``store_id`` once no strided view of it is left."""
    if not _views.get(store_id, True):
        del _views[store_id]


def written(store_id):
    """Records a write to ``store_id`` (its strided views read it again)."""
    version = _watched.get(store_id)
    if version is not None:
        version.count += 1


def broadcast_or_none(*shapes):
    """The shape NumPy broadcasts ``shapes`` to, or None where they do not broadcast (plain
    tuples: NumPy's ``broadcast_shapes`` builds arrays, which costs microseconds)."""
    first = tuple(shapes[0])
    if all(tuple(s) == first for s in shapes[1:]):
        return first
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, n in enumerate(shape):
            have = out[offset + i]
            if n != have:
                if have == 1:
                    out[offset + i] = n
                elif n != 1:
                    return None
    return tuple(out)


def broadcast_shapes(*shapes):
    """The broadcast shape of ``shapes``, or NumPy's ValueError for operands."""
    shape = broadcast_or_none(*shapes)
    if shape is None:
        listed = " ".join(str(tuple(s)).replace(" ", "") for s in shapes)
        raise ValueError(f"operands could not be broadcast together with shapes {listed}")
    return shape
