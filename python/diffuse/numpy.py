"""NumPy on diffuse: ``import diffuse.numpy as np``.

Arrays are diffuse arrays: operations become index tasks that diffuse buffers, fuses and runs
on its backend; results stay lazy until Python needs a value (``float(x)``, ``print``,
``numpy.asarray(x)``). What diffuse implements natively is listed in ``NATIVE`` (and in
``docs/python.md``); anything else NumPy has runs on NumPy eagerly (convert, run, convert
back), with a one-time warning naming the function, so unmodified programs still run.
"""

import builtins
import contextlib
import functools
import inspect
import math
import numbers
import operator
import os
import sys
import warnings
import weakref

import numpy as _np

from . import _errstate, _layout, _native
from ._warnings import warn_at_caller
from ._errstate import errstate, geterr, geterrcall, seterr, seterrcall  # noqa: F401

__all__ = ["ndarray", "array", "asarray", "NATIVE"]

# dtypes diffuse arrays hold, by NumPy name.
_DTYPES = ("float64", "float32", "int64", "int32", "bool")

_UNARY = {
    "negative": "negative", "absolute": "absolute", "abs": "absolute", "exp": "exp",
    "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tanh": "tanh",
    "logical_not": "logical_not", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "rint": "rint", "tan": "tan", "arcsin": "arcsin", "arccos": "arccos", "arctan": "arctan",
    "sinh": "sinh", "cosh": "cosh", "log2": "log2", "log10": "log10", "log1p": "log1p",
    "expm1": "expm1", "sign": "sign", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite", "invert": "invert", "bitwise_not": "invert",
}
# Unary operations computed in float64 for integer and bool operands, as NumPy does.
_FLOAT_UNARY = {"exp", "log", "sqrt", "sin", "cos", "tanh", "erf", "rint", "tan", "arcsin",
                "arccos", "arctan", "sinh", "cosh", "log2", "log10", "log1p", "expm1"}
# Rounding leaves integers as they are; the float tests have constant answers on them.
_INT_IDENTITY = {"floor", "ceil", "trunc"}
_INT_CONSTANT = {"isnan": False, "isinf": False, "isfinite": True}
_BINARY = (
    "add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum", "less",
    "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
    "left_shift", "right_shift", "arctan2",
)
_COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "equal", "not_equal",
                "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor"}
# Binary operations computed in float64 for integer and bool operands, as NumPy does.
_FLOAT_BINARY = {"true_divide", "arctan2"}
_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}

#: Functions diffuse runs natively (everything else NumPy has falls back to NumPy).
NATIVE = sorted(set(_UNARY) | set(_BINARY) | {
    "divide", "mod", "divmod", "square", "where", "clip", "array", "asarray", "zeros", "ones", "full",
    "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange", "linspace",
    "eye", "identity", "diag",
    "sum", "prod", "mean", "min", "max", "amin", "amax", "argmin", "argmax", "any", "all",
    "count_nonzero", "dot", "putmask", "copyto", "concatenate", "stack", "vstack", "hstack",
    "roll", "tile", "diff", "outer", "cumsum", "cumprod", "nonzero", "flatnonzero",
    "extract", "repeat",
    "matmul", "allclose", "reshape", "ravel", "transpose", "swapaxes", "squeeze",
    "expand_dims",
})

_warned = set()


def _warn_fallback(name):
    if name not in _warned:
        _warned.add(name)
        warn_at_caller(
            f"diffuse.numpy: {name} is not native to diffuse; it runs on NumPy "
            "(the arrays are copied to NumPy and back)")


# NumPy dtype objects of the dtypes diffuse holds, and diffuse's name for anything that
# names one of them (dtype objects, scalar types, strings): the hot path of every operation.
_DT = {name: _np.dtype(name) for name in _DTYPES}
_NAME_OF = {}
for _n, _d in _DT.items():
    _NAME_OF[_d] = _NAME_OF[_d.type] = _NAME_OF[_n] = _n
_NAME_OF[float] = "float64"
_NAME_OF[int] = "int64"
_NAME_OF[bool] = "bool"


def _dtype_name(dtype):
    try:
        return _NAME_OF[dtype]
    except (KeyError, TypeError):
        name = _np.dtype(dtype).name
        return name if name in _DTYPES else None


class ndarray:
    """A diffuse array with NumPy's interface (a view when it comes from basic slicing)."""

    # `_a`: the native array; `_h`: an eager array's NumPy elements (declared here, not in
    # `_Eager`, so that both have one layout and an eager array can become deferred in place:
    # `_defer_in_place`).
    __slots__ = ("_a", "_h")
    # NumPy defers binary operators with a NumPy array on the left to us.
    __array_priority__ = 1000

    def __init__(self, native):
        self._a = native
        if _errstate.eager:
            # An error state that raises (or calls) applies at the operation, as in NumPy.
            _errstate.settle()

    # -- description ------------------------------------------------------------------
    @property
    def shape(self):
        return tuple(self._a.shape)

    @property
    def ndim(self):
        return len(self._a.shape)

    @property
    def size(self):
        return math.prod(self._a.shape)

    @property
    def dtype(self):
        return _DT[self._a.dtype]

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def T(self):
        return self.transpose()

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # -- host values and NumPy's protocols --------------------------------------------
    def __array__(self, dtype=None, copy=None):
        """A NumPy copy of the elements (``numpy.asarray(x)``); the elements live in
        diffuse's memory, so ``copy=False`` cannot be honored."""
        if copy is False:
            raise ValueError(
                "Unable to avoid copy while creating an array as requested: a diffuse "
                "array's elements are not in host memory"
            )
        out = _np.frombuffer(self._a.to_bytes(), dtype=self.dtype).reshape(self.shape).copy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __copy__(self):
        """``copy.copy(x)``: a new array with its own elements, as NumPy's."""
        return self.copy()

    def __deepcopy__(self, memo):
        """``copy.deepcopy(x)``: a new array with its own elements."""
        result = self.copy()
        memo[id(self)] = result
        return result

    def __reduce__(self):
        """Pickling: the elements as a NumPy array, restored as a diffuse array (as NumPy
        pickles a view, as a new array)."""
        return (_unpickle, (_np.asarray(self),))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy's ufuncs on diffuse arrays (``numpy.add(x, 1)``, ``numpy.exp(x, out=y)``):
        diffuse's own operation where it has one, else NumPy's on host copies."""
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy's functions on diffuse arrays (``numpy.sum(x)``): diffuse's own where it
        has one taking these arguments, else NumPy's on host copies."""
        if not builtins.all(issubclass(t, (ndarray, _np.ndarray)) for t in types):
            return NotImplemented
        impl = _FUNCTIONS.get(func)
        if impl is not None:
            return impl(*args, **kwargs)
        if func in _METADATA:  # no copy of the elements, no fallback
            return func(*[_stand_in(a) for a in args], **kwargs)
        return _fallback(func.__name__, getattr(func, "_implementation", func), *args,
                         **kwargs)

    def item(self, *args):
        if args:
            return _np.asarray(self).item(*args)
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._a.item()

    def tolist(self):
        return _np.asarray(self).tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self.item())

    def __bool__(self):
        if self.size != 1:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. "
                "Use a.any() or a.all()"
            )
        return bool(self.item())

    def __repr__(self):
        return repr(_np.asarray(self))

    def __str__(self):
        return str(_np.asarray(self))

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    # -- conversion -------------------------------------------------------------------
    def astype(self, dtype, copy=True):
        name = _dtype_name(dtype)
        if name is None:
            return _np.asarray(self).astype(dtype)
        if name == self._a.dtype and not copy:
            return self
        cast = ndarray(self._a.astype(name))
        if name in _INT_RANGE and self._a.dtype in ("float64", "float32"):
            # NumPy's cast of floats to integers is C's on x86-64: a value whose truncation
            # the dtype cannot hold (NaN, infinities, beyond the range) becomes the dtype's
            # minimum, where diffuse's kernels saturate (NaN to 0). Lazy, fused with the cast.
            lo, hi = _INT_RANGE[name]
            fits = logical_and(greater_equal(self, float(lo)),  # noqa: F821 (defined below)
                               less(self, float(hi) + 1.0))  # noqa: F821
            cast = where(fits, cast, lo)
        return cast

    def copy(self):
        return ndarray(self._a.unary("copy"))

    def fill(self, value):
        self[...] = value

    # -- indexing ---------------------------------------------------------------------
    def _basic_bounds(self, key):
        """(bounds, dropped dims) when the index selects a box (step-1 slices, integers,
        Ellipsis); None otherwise."""
        if not isinstance(key, tuple):
            key = (key,)
        if not builtins.all(
            k is Ellipsis or isinstance(k, slice)
            or (isinstance(k, numbers.Integral) and not isinstance(k, bool))
            for k in key
        ):
            return None  # newaxis, arrays, lists, booleans: NumPy's indexing
        if builtins.sum(1 for k in key if k is Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if Ellipsis in key:
            i = key.index(Ellipsis)
            fill = self.ndim - (len(key) - 1)
            key = key[:i] + (slice(None),) * fill + key[i + 1:]
        if len(key) > self.ndim:
            raise IndexError(
                f"too many indices for array: array is {self.ndim}-dimensional, "
                f"but {len(key)} were indexed"
            )
        key = key + (slice(None),) * (self.ndim - len(key))
        bounds, dropped = [], []
        for d, (k, n) in enumerate(zip(key, self.shape)):
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step != 1:
                    return None
                bounds.append((start, builtins.max(start, stop)))
            elif isinstance(k, numbers.Integral) and not isinstance(k, bool):
                i = int(k)
                if not -n <= i < n:
                    raise IndexError(
                        f"index {i} is out of bounds for axis {d} with size {n}"
                    )
                i %= n
                bounds.append((i, i + 1))
                dropped.append(d)
            else:
                return None
        return bounds, dropped

    def _holds_its_elements(self):
        """True when ``self._a`` is this array's own elements (a box of its store), so a
        write into it is a write into the array; a strided view's ``_a`` may be a copy."""
        return True

    def _as_strided(self):
        """``(store, store id, store shape, shape, offset, strides)``: the array as a
        strided view of its whole store (see ``diffuse._layout``)."""
        store_shape, point, sid = self._a.layout()
        strides = _layout.c_strides(store_shape)
        offset = builtins.sum(p * s for p, s in zip(point, strides))
        whole = self._a if list(point) == [0] * len(point) and self._a.shape == store_shape \
            else self._a.window([0] * len(store_shape), list(store_shape))
        return whole, sid, store_shape, list(self._a.shape), offset, strides

    def __getitem__(self, key):
        if type(key) is tuple or type(key) is slice:
            view = self._a.box_view(key)  # one step-1 slice per dimension, natively
            if view is not None:
                return ndarray(view)
        basic = self._basic_bounds(key)
        if basic is not None and not basic[1]:
            return ndarray(self._a.slice(basic[0]))
        return self._view(key)

    def _view(self, key):
        """The view ``self[key]`` for any basic index; NumPy's copy for advanced ones."""
        mask = _nonzero_mask(key, self.shape)
        if mask is not None:
            # Selected when first used, or before anything is next written (_MaskedSelection).
            return _MaskedSelection(self, mask)
        mask = _bool_array(key)
        if mask is not None and mask.shape == self.shape and self.ndim > 0:
            # ``a[mask]``: the selected elements, compacted natively.
            return ndarray(self._a.select(mask._a))
        expanded = _newaxis_as_axes(key, self.shape)
        if expanded is not None:
            # ``newaxis`` beside index arrays: a length-1 axis taken whole, as NumPy places it.
            return self.reshape(expanded[0])[expanded[1]]
        indices = _integer_indices(key, self.shape)
        if indices is not None:
            got = ndarray(self._a.gather_indexed([i._a for i in indices]))
            # 0-d indices select one element: a NumPy scalar, as in NumPy.
            return got if got.ndim else self.dtype.type(got._a.item())
        store, sid, store_shape, shape, offset, strides = self._as_strided()
        got = _layout.index(shape, offset, strides, key)
        if got is None:
            _warn_fallback("indexing with arrays, lists or booleans")
            return _to_diffuse(_np.asarray(self)[_to_numpy(key)])
        vshape, voffset, vstrides, _ = got
        keys = key if isinstance(key, tuple) else (key,)
        if not vshape and not builtins.any(k is None or k is Ellipsis for k in keys):
            # A single element is a NumPy scalar, as in NumPy.
            return self.dtype.type(store.gather_strided([], voffset, []).item())
        return _make_view(store, sid, store_shape, vshape, voffset, vstrides)

    def __setitem__(self, key, value):
        target = self._a.box_view(key) if type(key) is tuple or type(key) is slice else None
        if target is not None:  # one step-1 slice per leading dimension, natively
            shape, dropped = tuple(target.shape), []
        else:
            basic = self._basic_bounds(key)
            if basic is None:
                self._write(key, value)
                return
            bounds, dropped = basic
            target = self._a.slice(bounds)
            shape = tuple(hi - lo for lo, hi in bounds)
        if isinstance(value, (numbers.Number, _np.generic)):
            _compact_lazy_selections()
            target.assign_scalar(_scalar_for(value, self._a.dtype))
        else:
            # Nested sequences convert as NumPy's do (Python integers checked against the
            # dtype); arrays cast.
            src = asarray(value, None if isinstance(value, (ndarray, _np.ndarray))
                          else self.dtype)
            if src.dtype != self.dtype:
                src = src.astype(self.dtype)
            dst_shape = tuple(n for d, n in enumerate(shape) if d not in dropped)
            if _broadcast_or_none(src.shape, dst_shape) != dst_shape:
                raise ValueError(
                    f"could not broadcast input array from shape {src.shape} into shape "
                    f"{dst_shape}"
                )
            if dropped and src.ndim > 0:
                # Integer indices drop dimensions the box keeps (as 1): line the values up.
                kept = iter((1,) * (len(dst_shape) - src.ndim) + src.shape)
                src = src.reshape([1 if d in dropped else next(kept) for d in range(len(shape))])
            _compact_lazy_selections()
            target.assign(src._a)
        _layout.written(self._a.store_id)

    def _write(self, key, value):
        """``self[key] = value`` for any index: into a box, through a strided view, or (for
        advanced indices) on NumPy and back."""
        mask = _nonzero_mask(key, self.shape)
        if mask is not None and type(value) is _MaskedSelection and value._mask is mask \
                and value._found is None and value._source.shape == self.shape \
                and value._source.dtype == self.dtype \
                and value._source._a.store_id != self._a.store_id:
            # ``b[j, i] = a[j, i]`` for ``j, i = nonzero(m)``: b = where(m, a, b). The
            # selection stays lazy: ``b`` is not its source.
            merged = where(mask, value._source, self)
            with _consuming(value):
                self[...] = merged
            return
        if mask is not None and self._masked_write(mask, value):
            return
        if self._masked_write(key, value):
            return
        indices = _integer_indices(key, self.shape) if self._holds_its_elements() else None
        if indices is not None:
            src = asarray(value, None if isinstance(value, (ndarray, _np.ndarray))
                          else self.dtype)
            if src.dtype != self.dtype:
                src = src.astype(self.dtype)
            target = _broadcast_or_none(*(i.shape for i in indices))
            if _broadcast_or_none(src.shape, target) != target:
                raise ValueError(f"shape mismatch: value array of shape {src.shape} could "
                                 f"not be broadcast to indexing result of shape {target}")
            _compact_lazy_selections()
            self._a.scatter_indexed([i._a for i in indices], src._a)
            _layout.written(self._a.store_id)
            return
        store, sid, store_shape, shape, offset, strides = self._as_strided()
        got = _layout.index(shape, offset, strides, key)
        if got is None:
            _warn_fallback("assignment through arrays, lists or booleans")
            host = _np.asarray(self)
            host[_to_numpy(key)] = _to_numpy(value)
            self[...] = host
            return
        vshape, voffset, vstrides, _ = got
        target = _make_view(store, sid, store_shape, vshape, voffset, vstrides)
        if type(target) is ndarray and 0 not in vshape:
            target[...] = value
            return
        values = zeros(vshape, self.dtype)
        values[...] = value  # NumPy's broadcasting and casting checks
        if 0 not in vshape:
            _compact_lazy_selections()
            store.scatter_strided(vshape, voffset, vstrides, values._a)
            _layout.written(sid)

    def _masked_write(self, key, value):
        """``self[mask] = v`` (or ``self[:, cond] = v``) for a boolean mask and one value: a
        fused element-wise ``where``, no copy to NumPy. False (nothing done) for any other
        key or value."""
        mask = _selection_mask(key, self.shape)
        if mask is None:
            return False
        fill = _single_value(value, self.dtype)
        if fill is None:
            return False
        self[...] = where(mask, fill, self)
        return True

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if order != "C":
            return _fallback(f"reshape with order={order!r}",
                             lambda a: a.reshape(shape, order=order), self)
        target = _layout.new_shape(shape, self.size)
        if target == list(self.shape):
            return self
        store, sid, store_shape, old, offset, strides = self._as_strided()
        new = _layout.reshape_strides(old, strides, target)
        if new is None:  # not expressible as a view: NumPy copies too
            return self.copy().reshape(target)
        return _make_view(store, sid, store_shape, target, offset, new)

    def ravel(self, order="C"):
        # NumPy's ravel is a view only of C-contiguous data, unlike reshape.
        _, _, _, shape, _, strides = self._as_strided()
        contiguous = builtins.all(
            n == 1 or s == c for n, s, c in zip(shape, strides, _layout.c_strides(shape)))
        return (self if contiguous else self.copy()).reshape(-1, order=order)

    def flatten(self, order="C"):
        return self.copy().reshape(-1, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        ndim = self.ndim
        axes = range(ndim)[::-1] if not axes else \
            [_layout.normalize_axis(a, ndim) for a in axes]
        if sorted(axes) != list(range(ndim)):
            raise ValueError("axes don't match array")
        if list(axes) == list(range(ndim)):
            return self
        store, sid, store_shape, shape, offset, strides = self._as_strided()
        return _make_view(store, sid, store_shape, [shape[a] for a in axes], offset,
                          [strides[a] for a in axes])

    def swapaxes(self, axis1, axis2):
        order = list(range(self.ndim))
        a, b = (_layout.normalize_axis(x, self.ndim) for x in (axis1, axis2))
        order[a], order[b] = order[b], order[a]
        return self.transpose(order)

    def diagonal(self, offset=0):
        """The view of the diagonal ``offset`` of a 2-d array."""
        if self.ndim != 2:
            return _fallback("diagonal of an array that is not 2-d",
                             lambda a: a.diagonal(offset), self)
        rows, cols = self.shape
        first = (0, offset) if offset >= 0 else (-offset, 0)
        n = builtins.max(0, builtins.min(rows - first[0], cols - first[1]))
        store, sid, store_shape, _, start, strides = self._as_strided()
        start += first[0] * strides[0] + first[1] * strides[1]
        return _make_view(store, sid, store_shape, [n], start, [strides[0] + strides[1]])

    def squeeze(self, axis=None):
        if axis is None:
            drop = {d for d, n in enumerate(self.shape) if n == 1}
        else:
            axes = axis if isinstance(axis, (tuple, list)) else (axis,)
            drop = {_layout.normalize_axis(a, self.ndim) for a in axes}
            if builtins.any(self.shape[d] != 1 for d in drop):
                raise ValueError("cannot select an axis to squeeze out which has size not "
                                 "equal to one")
        return self.reshape([n for d, n in enumerate(self.shape) if d not in drop])

    # -- arithmetic -------------------------------------------------------------------
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", self, o, True)
    def __sub__(self, o): return _binary("subtract", self, o)
    def __rsub__(self, o): return _binary("subtract", self, o, True)
    def __mul__(self, o): return _binary("multiply", self, o)
    def __rmul__(self, o): return _binary("multiply", self, o, True)
    def __truediv__(self, o): return _binary("true_divide", self, o)
    def __rtruediv__(self, o): return _binary("true_divide", self, o, True)
    def __pow__(self, o): return _binary("power", self, o)
    def __rpow__(self, o): return _binary("power", self, o, True)
    def __lt__(self, o): return _binary("less", self, o)
    def __le__(self, o): return _binary("less_equal", self, o)
    def __gt__(self, o): return _binary("greater", self, o)
    def __ge__(self, o): return _binary("greater_equal", self, o)
    def __eq__(self, o): return _binary("equal", self, o)
    def __ne__(self, o): return _binary("not_equal", self, o)
    def __floordiv__(self, o): return _binary("floor_divide", self, o)
    def __rfloordiv__(self, o): return _binary("floor_divide", self, o, True)
    def __mod__(self, o): return _binary("remainder", self, o)
    def __rmod__(self, o): return _binary("remainder", self, o, True)
    def __and__(self, o): return _binary("bitwise_and", self, o)
    def __rand__(self, o): return _binary("bitwise_and", self, o, True)
    def __or__(self, o): return _binary("bitwise_or", self, o)
    def __ror__(self, o): return _binary("bitwise_or", self, o, True)
    def __xor__(self, o): return _binary("bitwise_xor", self, o)
    def __rxor__(self, o): return _binary("bitwise_xor", self, o, True)
    def __lshift__(self, o): return _binary("left_shift", self, o)
    def __rlshift__(self, o): return _binary("left_shift", self, o, True)
    def __rshift__(self, o): return _binary("right_shift", self, o)
    def __rrshift__(self, o): return _binary("right_shift", self, o, True)
    def __invert__(self): return _unary("invert", self)
    def __divmod__(self, o): return (self // o, self % o)
    def __rdivmod__(self, o): return (o // self, o % self)
    def __neg__(self): return _unary("negative", self)
    def __pos__(self): return self.copy()
    def __abs__(self): return _unary("absolute", self)
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)

    def _inplace(self, op, o):
        try:
            result = _binary(op, self, o)
        except ValueError:
            # NumPy refuses an output it cannot cast to before computing (bool **= -1 is
            # that casting error, not a negative power).
            weak = _is_scalar(o) and not isinstance(o, _np.generic)
            dtype = _np.result_type(self.dtype, o if weak else asarray(o).dtype)
            if op in _FLOAT_BINARY and dtype.kind != "f":
                dtype = _np.dtype(_np.float64)
            _check_output_cast(dtype, self.dtype, op)
            raise
        _store_output(self, result, op)
        return self

    def __iadd__(self, o): return self._inplace("add", o)
    def __isub__(self, o): return self._inplace("subtract", o)
    def __imul__(self, o): return self._inplace("multiply", o)
    def __itruediv__(self, o): return self._inplace("true_divide", o)
    def __ipow__(self, o): return self._inplace("power", o)
    def __ifloordiv__(self, o): return self._inplace("floor_divide", o)
    def __imod__(self, o): return self._inplace("remainder", o)
    def __iand__(self, o): return self._inplace("bitwise_and", o)
    def __ior__(self, o): return self._inplace("bitwise_or", o)
    def __ixor__(self, o): return self._inplace("bitwise_xor", o)
    def __ilshift__(self, o): return self._inplace("left_shift", o)
    def __irshift__(self, o): return self._inplace("right_shift", o)

    __hash__ = None

    # -- reductions and methods -------------------------------------------------------
    # NumPy's methods take the arguments of NumPy's functions after the array (``out=``
    # and the others diffuse lacks run on NumPy).
    def sum(self, *args, **kwargs):
        return sum(self, *args, **kwargs)

    def prod(self, *args, **kwargs):
        return prod(self, *args, **kwargs)

    def mean(self, *args, **kwargs):
        return mean(self, *args, **kwargs)

    def cumsum(self, *args, **kwargs):
        return cumsum(self, *args, **kwargs)

    def nonzero(self):
        return nonzero(self)

    def cumprod(self, *args, **kwargs):
        return cumprod(self, *args, **kwargs)

    def argmax(self, *args, **kwargs):
        return argmax(self, *args, **kwargs)

    def argmin(self, *args, **kwargs):
        return argmin(self, *args, **kwargs)

    def min(self, *args, **kwargs):
        return amin(self, *args, **kwargs)

    def max(self, *args, **kwargs):
        return amax(self, *args, **kwargs)

    def dot(self, *args, **kwargs):
        return dot(self, *args, **kwargs)

    def any(self, *args, **kwargs):
        return any(self, *args, **kwargs)

    def all(self, *args, **kwargs):
        return all(self, *args, **kwargs)

    def __getattr__(self, name):
        attr = None if name.startswith("__") else getattr(_np.ndarray, name, None)
        if attr is None:
            raise AttributeError(f"'ndarray' object has no attribute '{name}'")
        if not callable(attr):  # a property NumPy has (strides, flags, ...): of a copy
            return getattr(_np.asarray(self), name)

        def method(*args, **kwargs):
            # The array is an argument like the others: what the method changes in place
            # (sort, put, partition, out=...) is written back.
            return _fallback(f"ndarray.{name}", attr, self, *args, **kwargs)
        return method


class _StridedView(ndarray):
    """A view NumPy expresses with strides but a box cannot (steps, transposes, newaxis,
    reshapes): its elements are gathered from the store when an operation needs them, and
    gathered again after the store is written; writes scatter into the store.

    A store that only strided views hold (the array they came from is gone, as after
    ``x = np.arange(n).reshape(r, c)``) is copied once into a store of the shape of the
    reshape being used, and all its views move there: their element positions are the same
    in the copy, and those that are boxes of it run natively from then on."""

    __slots__ = ("_store", "_sid", "_store_shape", "_vshape", "_offset", "_strides",
                 "_version", "_seen", "_values", "_box", "__weakref__")

    def __init__(self, store, sid, store_shape, shape, offset, strides):
        self._vshape, self._offset, self._strides = tuple(shape), offset, list(strides)
        self._attach(store, sid, store_shape)

    def _attach(self, store, sid, store_shape):
        # A handle of its own: the store's handle count then tells views from other arrays.
        self._store = store.window([0] * len(store_shape), list(store_shape))
        self._sid, self._store_shape = sid, tuple(store_shape)
        self._version = _layout.watch(sid)
        self._seen, self._values = -1, None
        self._box = _box_of(self._store, self._store_shape, self._vshape, self._offset,
                            self._strides)
        _layout.register(sid, self)

    def _settle(self):
        """Moves this store's views to a copy shaped like this view, when this view is a
        reshape of the whole store and only strided views hold the store."""
        shape = self._vshape
        if self._box is not None or self._offset != 0 \
                or math.prod(shape) != math.prod(self._store_shape) \
                or builtins.any(n != 1 and s != c for n, s, c in
                                zip(shape, self._strides, _layout.c_strides(shape))):
            return
        views = _layout.views(self._sid)
        # (A recording whose tasks use the store holds it too: its views stay where they
        # are as long as a replay may read them there.)
        if self._store.store_handles != len(views):
            return
        old = self._sid
        # Not part of a recording (diffuse.trace): the views keep the copy after the call, so
        # a replay must read it, not copy the old store again.
        copy = _native.unrecorded(
            lambda: self._store.gather_strided(list(shape), 0, _layout.c_strides(shape)))
        for view in views:
            view._attach(copy, copy.store_id, shape)
        _layout.forget(old)

    @property
    def _a(self):
        if self._box is None:
            self._settle()
        if self._box is not None:
            return self._box
        if self._seen != self._version.count:
            self._values = self._gather()
            self._seen = self._version.count
        elif _recording:
            _native.refuse_replay("it reads a strided view gathered before the call")
        return self._values

    def _holds_its_elements(self):
        if self._box is None:
            self._settle()  # onto a box of a copy where it can (no gather otherwise)
        return self._box is not None

    def _gather(self):
        return self._store.gather_strided(list(self._vshape), self._offset, self._strides)

    @property
    def shape(self):
        return self._vshape

    @property
    def ndim(self):
        return len(self._vshape)

    @property
    def size(self):
        return math.prod(self._vshape)

    @property
    def dtype(self):
        return _DT[self._store.dtype]

    def _as_strided(self):
        self._settle()
        return (self._store, self._sid, self._store_shape, list(self._vshape), self._offset,
                list(self._strides))

    def __getitem__(self, key):
        return self._view(key)

    def __setitem__(self, key, value):
        self._write(key, value)

    def copy(self):
        return ndarray(self._gather())


def _box_of(store, store_shape, shape, offset, strides):
    """The native box of ``store`` that the strided description is, or None."""
    if len(shape) != len(store_shape):
        return None
    c = _layout.c_strides(store_shape)
    if not builtins.all(n == 1 or s == cs for n, s, cs in zip(shape, strides, c)):
        return None
    point, rest = [], offset
    for cs in c:
        point.append(rest // cs)
        rest %= cs
    if not builtins.all(p + n <= m for p, n, m in zip(point, shape, store_shape)):
        return None
    return store.window(point, list(shape))


def _make_view(store, sid, store_shape, shape, offset, strides):
    """The array of ``shape`` over ``store`` at ``offset`` with ``strides``: a box of the
    store when one is (fast, fuses), else a strided view; an empty array when empty."""
    if 0 in shape:
        return ndarray(_native.zeros_(list(shape), store.dtype))
    box = _box_of(store, store_shape, shape, offset, strides)
    if box is not None:
        return ndarray(box)
    return _StridedView(store, sid, store_shape, shape, offset, strides)


# -- small arrays, held by NumPy -------------------------------------------------------------
def _eager_limit_from_env():
    """``DIFFUSE_EAGER_ELEMENTS``: arrays of at most this many elements are held and computed
    by NumPy (0: none)."""
    text = os.environ.get("DIFFUSE_EAGER_ELEMENTS", "8192")
    try:
        limit = int(text)
    except ValueError:
        limit = -1
    if limit < 0:
        raise ValueError(f"DIFFUSE_EAGER_ELEMENTS={text!r}: expected a number of elements "
                         "(0 turns eager execution of small arrays off)")
    return limit


#: The largest number of elements an array diffuse runs eagerly on NumPy holds: below it, one
#: deferred operation's fixed cost (a task, its window analysis and launch: microseconds)
#: exceeds NumPy's whole operation. Tests set it per test.
_eager_limit = _eager_limit_from_env()

_EAGER_DTYPES = frozenset(_DT.values())


def _eager_shape(shape):
    """True when a new array of ``shape`` is small enough to be held by NumPy."""
    return _eager_limit > 0 and math.prod(shape) <= _eager_limit


# Looked up once, for the eager hot paths (`_Eager(r)` without a call of `__init__` is
# `_new_object(_Eager)` with `_h` set).
_new_object = object.__new__
_host_array = _np.ndarray


class _Eager(ndarray):
    """A small array held by NumPy (at most ``_eager_limit`` elements): its operations run on
    NumPy as they are issued, because deferring them would cost more than running them
    (cuPyNumeric's eager arrays). Views of it are NumPy's views, so writes through them
    reach it as in NumPy. Where it meets a deferred array, the operation is deferred and
    reads a copy of its current elements (``_a``); results of deferred operations stay
    deferred."""

    __slots__ = ()

    def __init__(self, host):
        self._h = host

    @property
    def _a(self):
        # A fresh native copy per use (NumPy views may have written the elements since).
        h = self._h
        return _native.from_bytes(h.tobytes(), list(h.shape), _dtype_name(h.dtype))

    @property
    def shape(self):
        return self._h.shape

    @property
    def ndim(self):
        return self._h.ndim

    @property
    def size(self):
        return self._h.size

    @property
    def dtype(self):
        return self._h.dtype

    def __len__(self):
        return len(self._h)

    def __array__(self, dtype=None, copy=None):
        if _recording:
            _native.refuse_replay("it reads a small array NumPy holds")
        if dtype is None and not copy:
            return self._h
        return _np.array(self._h, dtype=dtype, copy=copy)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if _only_eager(inputs, kwargs):
            return _eager_call(getattr(ufunc, method), inputs, kwargs)
        return ndarray.__array_ufunc__(self, ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if _only_eager(args, kwargs):
            return _eager_call(func, args, kwargs)
        return ndarray.__array_function__(self, func, types, args, kwargs)

    def __getitem__(self, key):
        r = self._h[_host_key(key)]
        if type(r) is _host_array and r.size <= _eager_limit:
            # (a view of a held array: a dtype diffuse holds)
            e = _new_object(_Eager)
            e._h = r
            return e
        return _eager_wrap(r)

    def __setitem__(self, key, value):
        if _recording:
            _native.refuse_replay("it writes a small array NumPy holds")
        self._h[_host_key(key)] = value._h if type(value) is _Eager else _to_numpy(value)

    def __iter__(self):
        return map(_eager_wrap, self._h)

    def __repr__(self):
        return repr(self._h)

    def __str__(self):
        return str(self._h)

    def __float__(self):
        return float(self._h)

    def __int__(self):
        return int(self._h)

    def __index__(self):
        return operator.index(self._h)

    def __bool__(self):
        return bool(self._h)

    def item(self, *args):
        return self._h.item(*args)

    def tolist(self):
        return self._h.tolist()

    def copy(self):
        return _Eager(self._h.copy())

    def astype(self, dtype, copy=True):
        return _eager_wrap(self._h.astype(dtype, copy=copy))

    def fill(self, value):
        self._h.fill(_to_numpy(value))

    def _holds_its_elements(self):
        return True


def _defer_in_place(x):
    """Turns the eager array ``x`` into a deferred one holding its elements (the same object,
    so every reference to it sees the change), and says whether it could: not where other
    NumPy arrays may share its elements (eager views of it, or of the array it is a view of),
    since writes to the deferred array would no longer reach them. (What NumPy array an
    eager array came from, ``asarray`` of which shares memory, is not among them: deferred
    arrays never share a NumPy array's memory, so no program can count on it.)"""
    h = x._h
    owner = h.base
    # References to `h`: `x`'s slot, this frame's `h` and getrefcount's argument, and to the
    # NumPy array `h` is a view of: `h.base`, `owner`, the argument. Any other reference is
    # another array's `base` (a view) or a holder outside.
    if owner is None:
        shared = sys.getrefcount(h) > 3
    else:
        shared = (type(owner) is not _np.ndarray or owner.base is not None
                  or sys.getrefcount(h) > 3 or sys.getrefcount(owner) > 3)
    if shared or _dtype_name(h.dtype) is None:
        return False
    native = x._a
    ndarray._h.__delete__(x)
    x.__class__ = ndarray
    ndarray._a.__set__(x, native)
    return True


#: True while ``diffuse.trace`` records a function (``_trace``): what the function does that
#: a replay would not repeat (computing or writing with NumPy on small arrays NumPy holds,
#: reading a strided view's gathered copy) marks the recording unreplayable.
_recording = False

#: While recording, what else the recorded tasks depend on: ``(current, value)`` pairs, a
#: replay being valid only while ``current()`` is ``value`` (a sparse matrix's native form,
#: rebuilt when its arrays change).
_recording_guards = []


def _host_key(key):
    """An index for an eager array's elements: ``key`` itself when it holds only slices,
    integers, ``None`` and ``Ellipsis`` (the common case, checked quickly), else with its
    diffuse arrays as NumPy arrays."""
    if type(key) is tuple:
        for k in key:
            t = type(k)
            if t is not slice and t is not int and k is not None and k is not Ellipsis:
                return _to_numpy(key)
        return key
    t = type(key)
    return key if t is slice or t is int else _to_numpy(key)


def _eager_method(name):
    """``_Eager``'s method ``name``: NumPy's, on its elements."""
    on_numpy = getattr(_np.ndarray, name)

    def method(self, *args, **kwargs):
        if not args and not kwargs:
            return _eager_wrap(on_numpy(self._h))
        if _only_eager((self,) + args, kwargs):
            return _eager_call(on_numpy, (self,) + args, kwargs)
        # A deferred argument (a value, or out=): NumPy's method on host copies, what it
        # writes written back, views of this array's elements kept views.
        return _on_host(on_numpy, self, *args, **kwargs)
    method.__name__ = name
    return method


def _eager_operator(name, numpy_op):
    """``_Eager``'s operator ``name``: ``numpy_op`` on NumPy's elements, or diffuse's
    operator when the other operand is a deferred array. (The hot path of small programs:
    ``_eager_wrap`` is inlined.)"""
    deferred = getattr(ndarray, name)

    def method(self, other):
        t = type(other)
        if t is _Eager:
            other = other._h
        elif t is not float and t is not int:
            if isinstance(other, ndarray):
                return deferred(self if self._h.ndim == 0 else ndarray(self._a), other)
            return _eager_wrap(numpy_op(self._h, other))
        # Eager arrays and Python scalars give NumPy results of dtypes diffuse holds.
        r = numpy_op(self._h, other)
        if type(r) is _host_array and r.size <= _eager_limit:
            e = _new_object(_Eager)
            e._h = r
            return e
        return _eager_wrap(r)
    method.__name__ = name
    return method


def _eager_inplace(name, numpy_op):
    """``_Eager``'s in-place operator ``name``: NumPy's, on its elements."""
    def method(self, other):
        if _recording:
            _native.refuse_replay("it writes a small array NumPy holds")
        numpy_op(self._h, _to_numpy(other))
        return self
    method.__name__ = name
    return method


def _eager_unary(numpy_op):
    """``_Eager``'s unary operator: ``numpy_op`` on its elements."""
    return lambda self: _eager_wrap(numpy_op(self._h))


def _reflected(numpy_op):
    return lambda a, b: numpy_op(b, a)


for _name in ("reshape", "ravel", "flatten", "transpose", "swapaxes", "diagonal", "squeeze",
              "sum", "prod", "mean", "cumsum", "cumprod", "nonzero", "argmax", "argmin",
              "min", "max", "dot", "any", "all"):
    setattr(_Eager, _name, _eager_method(_name))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
              "lshift", "rshift", "matmul"):
    _fn = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(_Eager, f"__{_name}__", _eager_operator(f"__{_name}__", _fn))
    setattr(_Eager, f"__r{_name}__", _eager_operator(f"__r{_name}__", _reflected(_fn)))
    if _name != "matmul":
        setattr(_Eager, f"__i{_name}__",
                _eager_inplace(f"__i{_name}__", getattr(operator, f"i{_name}")))
for _name in ("lt", "le", "gt", "ge", "eq", "ne", "divmod"):
    _fn = divmod if _name == "divmod" else getattr(operator, _name)
    setattr(_Eager, f"__{_name}__", _eager_operator(f"__{_name}__", _fn))
setattr(_Eager, "__rdivmod__", _eager_operator("__rdivmod__", _reflected(divmod)))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(_Eager, f"__{_name}__", _eager_unary(getattr(operator, _name)))
_Eager.T = property(lambda self: _Eager(self._h.T))


def _eager_wrap(x):
    """A NumPy result of an eager operation as diffuse returns it: an array of a dtype
    diffuse holds as an eager array when small (sharing NumPy's memory: views stay views),
    else as a deferred copy; other arrays and scalars as NumPy gave them; tuples and lists
    element by element."""
    if _recording:
        _native.refuse_replay("it computes on a small array NumPy holds")
    t = type(x)
    if t is _np.ndarray:
        if x.dtype in _EAGER_DTYPES and x.size <= _eager_limit:
            return _Eager(x)
        return asarray(x) if _dtype_name(x.dtype) is not None else x
    if t is tuple or t is list:
        return t(_eager_wrap(v) for v in x)
    return x


def _only_eager(args, kwargs):
    """True when the arguments hold eager arrays (in lists and tuples too) and no deferred
    one: the call then runs on NumPy."""
    return _eager_scan(kwargs.values(), _eager_scan(args, 0)) == 1


def _deferred_copies(x):
    """``x`` (operands an operation only reads) with each eager array in it (also in lists
    and tuples) a deferred copy of its current elements, made once for the operation (whose
    implementation may read an operand several times); a 0-d one as its NumPy 0-d array.
    Never for an argument the operation writes: the write would go to the copy."""
    t = type(x)
    if t is _Eager:
        # (a 0-d one as NumPy's 0-d array: the operations take those as scalars of a dtype)
        return x._h if x._h.ndim == 0 else ndarray(x._a)
    if (t is list or t is tuple) and _eager_scan(x, 0):
        return t(_deferred_copies(v) for v in x)
    return x


def _eager_scan(items, state):
    """``state`` after seeing ``items``: 0 no diffuse array yet, 1 eager arrays only, 2 a
    deferred array."""
    for a in items:
        t = type(a)
        if t is _Eager:
            state = state or 1
        elif t is list or t is tuple:
            state = _eager_scan(a, state)
        elif isinstance(a, ndarray):
            return 2
        if state == 2:
            return 2
    return state


def _eager_call(func, args, kwargs):
    """NumPy's ``func`` on the elements of eager arrays: results as ``_eager_wrap`` gives
    them, and an eager argument itself where NumPy returns its elements (``out=``,
    ``nan_to_num(x, copy=False)``)."""
    check = _EAGER_CHECKS.get(func)
    if check is not None:
        check(*args, **kwargs)
    result = func(*[_to_numpy(a) for a in args], **{k: _to_numpy(v) for k, v in kwargs.items()})
    given = []  # the eager arguments, also inside tuples (``out=(q, r)``)
    for a in (*args, *kwargs.values()):
        given.extend(e for e in (a if type(a) is tuple else (a,)) if type(e) is _Eager)
    if not given:
        return _eager_wrap(result)

    def back(r):
        for e in given:
            if r is e._h:
                return e
        return _eager_wrap(r)
    return tuple(back(r) for r in result) if type(result) is tuple else back(result)


def _where_scalars_fit(condition, x=None, y=None):
    """Refuses, as diffuse's deferred ``where`` does, a Python integer beyond the integer
    dtype of ``where``'s result (which NumPy's ``where`` silently wraps)."""
    if x is None or y is None:
        return
    dtype = _np.result_type(*(v.dtype if isinstance(v, ndarray) else v for v in (x, y)))
    name = _dtype_name(dtype)
    for v in (x, y):
        if name is not None and type(v) is int:
            _scalar_for(v, name)


# Checks diffuse makes before NumPy runs one of its functions on eager arrays, where NumPy
# would be silently wrong and diffuse's deferred version refuses.
_EAGER_CHECKS = {_np.where: _where_scalars_fit}


# -- conversions ---------------------------------------------------------------------------
def _to_numpy(x):
    """``x`` with its diffuse arrays (also inside lists and tuples) as NumPy arrays: an eager
    array's own elements, a copy of a deferred one's."""
    t = type(x)
    if t is _Eager:
        return x._h
    if t is list or t is tuple:
        if builtins.any(isinstance(v, (ndarray, list, tuple)) for v in x):
            return t(_to_numpy(v) for v in x)
        return x
    if isinstance(x, ndarray):
        return _np.asarray(x)
    return x


class _HostCopies:
    """The host copies of the diffuse arrays passed to a NumPy call: one per array (an
    array passed twice is one copy, as NumPy would see one array), with its bytes before
    the call, so that what the call changed in place can be written back."""

    __slots__ = ("_copies",)

    def __init__(self):
        self._copies = {}  # id(diffuse array) -> (array, host copy, bytes before)

    def host(self, x):
        """``x`` with every diffuse array in it (also in lists and tuples) a host copy (an
        eager array's own elements: NumPy changes them in place as it would its own)."""
        if type(x) is _Eager:
            self._copies.setdefault(id(x), (x, x._h, None))
            return x._h
        if isinstance(x, ndarray):
            entry = self._copies.get(id(x))
            if entry is None:
                copy = _np.asarray(x)
                entry = self._copies[id(x)] = (x, copy, copy.tobytes())
            return entry[1]
        if isinstance(x, (list, tuple)) and builtins.any(
                isinstance(v, (ndarray, list, tuple)) for v in x):
            return type(x)(self.host(v) for v in x)
        return x

    def write_back(self):
        """Writes every host copy the call changed into its diffuse array (only those:
        the others keep their lazy values)."""
        for array, copy, before in self._copies.values():
            if before is None:  # an eager array's own elements
                continue
            if copy.shape != array.shape:  # ndarray.resize and the like
                raise ValueError(
                    f"NumPy changed the shape of a diffuse array in place (from "
                    f"{array.shape} to {copy.shape}); diffuse arrays keep their shape: use "
                    "the function that returns a new array (numpy.resize, reshape)"
                )
            if copy.tobytes() != before:
                array[...] = copy

    def result(self, x):
        """The call's result as diffuse arrays: a host copy it returns (``out=``) is its
        diffuse array again, as NumPy returns ``out`` itself, and a writable view of one
        (``flip``, ``moveaxis``, ``ndarray.view``) is that view of the diffuse array, so
        that writes through it reach the array as in NumPy."""
        if isinstance(x, _np.ndarray):
            for array, copy, before in self._copies.values():
                if x is copy:
                    return array
                if before is None:  # views of an eager array's elements stay views
                    continue
                if x.flags.writeable and _is_view_of(x, copy):
                    view = _view_in_store(array, copy, x)
                    if view is not None:
                        return view
            return asarray(x) if _dtype_name(x.dtype) is not None else x
        if isinstance(x, tuple):
            return tuple(self.result(v) for v in x)
        if isinstance(x, list):
            return [self.result(v) for v in x]
        return x


def _to_diffuse(x):
    return _HostCopies().result(x)


def _is_view_of(x, copy):
    base = x.base
    while base is not None and base is not copy:
        base = base.base
    return base is copy and x.dtype == copy.dtype


def _view_in_store(array, copy, x):
    """The NumPy view ``x`` of ``copy`` (the host copy of ``array``) as the same view of
    ``array``'s store, or None when a stride of ``x`` does not step along one axis of
    ``copy`` without carrying into the next (then the result stays a copy)."""
    size = copy.itemsize
    start = x.__array_interface__["data"][0] - copy.__array_interface__["data"][0]
    if start % size or builtins.any(s % size for s in x.strides):
        return None
    shape = copy.shape
    c = _layout.c_strides(shape)
    point, rest = [], start // size
    for cs in c:
        point.append(rest // cs)
        rest %= cs
    # Each dimension of x steps q elements along one axis of copy; an axis's index must
    # stay inside it over the whole view (no carry), which makes the mapping exact.
    lo, hi, steps = list(point), list(point), []
    for n, stride in zip(x.shape, x.strides):
        stride //= size
        if n == 1:
            steps.append(None)
            continue
        axis = next((a for a in range(len(shape)) if stride % c[a] == 0
                     and builtins.abs(stride // c[a]) * (n - 1) < shape[a]), None)
        if axis is None or stride == 0:
            return None
        q = stride // c[axis]
        steps.append((axis, q))
        lo[axis] += builtins.min(0, q * (n - 1))
        hi[axis] += builtins.max(0, q * (n - 1))
    if builtins.any(lo_a < 0 or hi_a >= n_a for lo_a, hi_a, n_a in zip(lo, hi, shape)):
        return None
    store, sid, store_shape, _, offset, strides = array._as_strided()
    offset += builtins.sum(p * s for p, s in zip(point, strides))
    vstrides = [0 if st is None else st[1] * strides[st[0]] for st in steps]
    return _make_view(store, sid, store_shape, list(x.shape), offset, vstrides)


def _on_host(func, *args, **kwargs):
    """``func`` (NumPy's) on host copies of the diffuse arrays among its arguments; every
    array the call changed in place (an argument, ``out=``) is written back."""
    copies = _HostCopies()
    result = func(*copies.host(list(args)), **{k: copies.host(v) for k, v in kwargs.items()})
    copies.write_back()
    return copies.result(result)


def _fallback(name, func, *args, **kwargs):
    """``_on_host``, with the one-time warning that ``name`` is not native (none when the
    arrays are eager: NumPy holds them already, nothing is copied)."""
    if _only_eager(args, kwargs):
        return _eager_call(func, args, kwargs)
    _warn_fallback(name)
    return _on_host(func, *args, **kwargs)


# diffuse's functions of NumPy's ufuncs, by the ufunc's name (``absolute`` for ``abs``).
_UFUNCS = {}


# NumPy's ufunc keywords diffuse's calls take as given, at these values (NumPy's defaults).
_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True}


def _loop_inputs(ufunc, inputs, dtype):
    """The inputs of ``ufunc(*inputs, dtype=dtype)`` cast for NumPy's loop of ``dtype``
    (every operand and the result in it), with NumPy's error for an input the ``same_kind``
    rule cannot cast; None when diffuse does not run that loop itself (no such loop, a
    ufunc whose result type differs from its inputs', a dtype diffuse does not hold)."""
    try:
        dtype = _np.dtype(dtype)
    except TypeError:
        return None
    if ufunc.nout != 1 or _dtype_name(dtype) is None:
        return None
    if dtype.char * ufunc.nin + "->" + dtype.char not in ufunc.types:
        if builtins.any(t.endswith("->" + dtype.char) for t in ufunc.types):
            return None  # a loop of other input types gives it (a comparison's bool)
        raise TypeError("No loop matching the specified signature and casting was found for "
                        f"ufunc {ufunc.__name__}")
    cast = []
    for k, x in enumerate(inputs):
        if isinstance(x, (ndarray, _np.ndarray, _np.generic)):
            given = x.dtype
        elif type(x) in (bool, int, float):
            given = _np.dtype(type(x))  # Python scalars stay weak (NEP 50): kinds only
        else:
            return None
        if not _np.can_cast(given, dtype, casting="same_kind"):
            which = f"input {k}" if ufunc.nin > 1 else "input"
            raise TypeError(
                f"Cannot cast ufunc '{ufunc.__name__}' {which} from dtype('{given}') to "
                f"dtype('{dtype}') with casting rule 'same_kind'")
        if isinstance(x, (ndarray, _np.ndarray, _np.generic)) and given != dtype:
            x = asarray(x).astype(dtype)
        cast.append(x)
    if not builtins.any(isinstance(x, (ndarray, _np.ndarray, _np.generic)) for x in cast):
        # Only Python scalars: they take the loop's dtype.
        cast = [_np.asarray(x, dtype) for x in cast]
    return cast


def _ufunc(ufunc, method, inputs, kwargs):
    """NumPy's ``ufunc.method(*inputs, **kwargs)`` with diffuse arrays among its operands:
    diffuse's operation for a call (``out=`` diffuse arrays written as NumPy writes them,
    only where ``where=`` holds; ``dtype=`` as NumPy's loop of that dtype), anything else on
    NumPy with the arrays it changes written back."""
    impl = _UFUNCS.get(ufunc.__name__) if method == "__call__" else None
    if impl is not None and kwargs.get("dtype") is not None and len(inputs) == ufunc.nin:
        cast = _loop_inputs(ufunc, inputs, kwargs["dtype"])
        if cast is not None:
            inputs = tuple(cast)
            kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
    out = kwargs.get("out")
    outs = out if isinstance(out, tuple) else (out,) if out is not None else ()
    where = kwargs.get("where", True)
    native_keywords = builtins.all(
        k in ("out", "where") or (k in _UFUNC_DEFAULTS and _same_keyword(v, _UFUNC_DEFAULTS[k]))
        for k, v in kwargs.items())
    # A masked write goes through diffuse's copyto: into diffuse arrays only.
    out_types = (ndarray, _np.ndarray) if where is True else (ndarray,)
    if impl is not None and native_keywords and len(inputs) == ufunc.nin \
            and builtins.all(isinstance(o, out_types) for o in outs):
        result = impl(*inputs)
        if not outs:
            # NumPy leaves the elements where ``where`` is false unset: any value will do.
            if where is not True:
                first = result[0] if isinstance(result, tuple) else result
                _broadcast_shapes(_np.shape(where), first.shape)
            return result
        results = result if isinstance(result, tuple) else (result,)
        for o, r in zip(outs, results):
            _store_output(o, r, ufunc.__name__, where)
        return outs if len(outs) > 1 else outs[0]
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    return _fallback(name, getattr(ufunc, method), *inputs, **kwargs)


def _same_keyword(value, default):
    """Whether a keyword's ``value`` is its ``default`` (a string or a boolean)."""
    return type(value) is type(default) and value == default


def _check_output_cast(dtype, to, op):
    """NumPy's error for an output of ``op`` in ``dtype`` that ``same_kind`` cannot cast
    to ``to``."""
    if not _np.can_cast(dtype, to, casting="same_kind"):
        raise TypeError(
            f"Cannot cast ufunc '{op}' output from dtype('{dtype}') to dtype('{to}') with "
            "casting rule 'same_kind'"
        )


def _store_output(out, result, op, where=True):
    """Writes ``result`` of ``op`` into ``out`` (a diffuse or a NumPy array) as NumPy
    writes a ufunc's output: cast with the ``same_kind`` rule, broadcast to ``out``'s
    shape, only where ``where`` holds (a diffuse ``out`` then)."""
    result = asarray(result)
    if result.dtype != out.dtype:
        _check_output_cast(result.dtype, out.dtype, op)
        result = result.astype(out.dtype)
    shape = result.shape if where is True else _broadcast_shapes(result.shape, _np.shape(where))
    if _np.broadcast_shapes(shape, out.shape) != out.shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {out.shape} doesn't match the "
            f"broadcast shape {shape}"
        )
    if where is not True:
        copyto(out, result, where=where)
    else:
        out[...] = result if isinstance(out, ndarray) else _np.asarray(result)


class _Ufunc:
    """One of NumPy's ufuncs that diffuse implements: a call runs diffuse's operation
    (with NumPy's keywords: ``out=`` natively, the others on NumPy), the ufunc's methods
    (``at``, ``reduce``, ``outer``, ...) and attributes are NumPy's, on host copies with
    what they change written back."""

    def __init__(self, impl, ufunc):
        self._impl, self._ufunc = impl, ufunc
        self.__name__, self.__doc__ = impl.__name__, impl.__doc__

    def __call__(self, *inputs, **kwargs):
        nin = self._ufunc.nin
        if len(inputs) > nin:  # outputs given by position, as NumPy takes them
            if "out" in kwargs:
                raise TypeError("cannot specify 'out' as both a positional and keyword "
                                "argument")
            inputs, kwargs = inputs[:nin], dict(kwargs, out=inputs[nin:])
        mix = _eager_scan(kwargs.values(), _eager_scan(inputs, 0))
        if mix == 1:
            return _eager_call(self._ufunc, inputs, kwargs)
        if mix == 2:
            # Each eager input copied once for the whole call; out= stays the arrays given,
            # so the result is written into them.
            inputs = _deferred_copies(inputs)
            kwargs = {k: v if k == "out" else _deferred_copies(v) for k, v in kwargs.items()}
        if not kwargs:
            return self._impl(*inputs)
        return _ufunc(self._ufunc, "__call__", inputs, kwargs)

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        if not callable(attr):
            return attr

        def method(*args, **kwargs):
            return _ufunc(self._ufunc, name, args, kwargs)
        return method

    def __repr__(self):
        return f"<diffuse ufunc '{self.__name__}'>"


def _numpy_compatible(impl, func):
    """diffuse's ``impl`` of NumPy's function ``func`` taking ``func``'s whole signature:
    a call with arguments ``impl`` lacks (``out=``, ``where=``, ...) or in NumPy's
    positions runs NumPy's ``func`` on host copies (writing back what it changes)."""
    numpy_sig, own = inspect.signature(func), inspect.signature(impl)
    names = set(own.parameters)
    # Leading positions where both take the same parameter: calls within them need no
    # binding (the common, fast case).
    positions = 0
    for a, b in zip(numpy_sig.parameters.values(), own.parameters.values()):
        if a.name != b.name or b.kind not in (b.POSITIONAL_ONLY, b.POSITIONAL_OR_KEYWORD):
            break
        positions += 1

    @functools.wraps(impl)
    def f(*args, **kwargs):
        if _only_eager(args, kwargs):
            return _eager_call(func, args, kwargs)
        if len(args) <= positions and (not kwargs or kwargs.keys() <= names):
            return impl(*args, **kwargs)
        bound = numpy_sig.bind(*args, **kwargs)  # NumPy's TypeError for a wrong call
        given = {k: v for k, v in bound.arguments.items()
                 if v is not numpy_sig.parameters[k].default}
        if given.keys() <= names:
            return impl(**given)
        return _fallback(f"{func.__name__} with {', '.join(sorted(given.keys() - names))}",
                         getattr(func, "_implementation", func), *args, **kwargs)
    return f


# diffuse's versions of NumPy's functions (filled in at the end of the module): what
# ``__array_function__`` dispatches to.
_FUNCTIONS = {}

# NumPy's functions of an array's shape and dtype alone: they get a stand-in.
_METADATA = frozenset((_np.shape, _np.ndim, _np.size, _np.result_type, _np.can_cast,
                       _np.iscomplexobj, _np.isrealobj))


def _stand_in(x):
    """For a diffuse array, a NumPy array of its shape and dtype holding one element (a
    broadcast view): what NumPy's metadata functions need, without copying the elements."""
    return _np.broadcast_to(_np.empty((), x.dtype), x.shape) if isinstance(x, ndarray) else x


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
    block = _broadcast_or_none(*(tuple(v.shape) for kind, v in entries if kind == "index"))
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
    _broadcast_shapes(values.shape, dst.shape)
    if where is True:
        dst[...] = values
        return None
    m = asarray(where)
    if m.dtype != _np.bool_:
        m = m.astype("bool")
    _broadcast_shapes(m.shape, dst.shape)
    dst[...] = _where(m, values, dst)
    return None


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
        if host.dtype.kind == "f":
            host, name = host.astype(_np.float64), "float64"
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


# The values of each integer dtype diffuse holds.
_INT_RANGE = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}


def _scalar_for(value, dtype):
    """The scalar ``value`` (Python's or NumPy's) as an element of the dtype named ``dtype``,
    converted as NumPy converts a scalar meeting an array of that dtype (NEP 50): an integer
    outside an integer dtype is NumPy's OverflowError (never wrapped), a float into an
    integer dtype truncates (NaN: ValueError, infinity: OverflowError), a float beyond
    float32 is infinity with NumPy's overflow warning. Every scalar going to the native
    side passes here."""
    if dtype == "bool":
        return bool(value)
    if dtype in _INT_RANGE:
        v = int(value)
        lo, hi = _INT_RANGE[dtype]
        if not lo <= v <= hi:
            raise OverflowError(f"Python integer {v} out of bounds for {dtype}")
        return v
    if dtype == "float32":
        return float(_np.float32(float(value)))  # NumPy's rounding and overflow warning
    return float(value)




def _is_scalar(x):
    return isinstance(x, (numbers.Number, _np.generic)) and not isinstance(x, _np.ndarray)


def _broadcast_or_none(*shapes):
    """The shape NumPy broadcasts ``shapes`` to, or None where they do not broadcast (plain
    tuples: NumPy's ``broadcast_shapes`` builds arrays, which costs microseconds)."""
    first = tuple(shapes[0])
    if builtins.all(tuple(s) == first for s in shapes[1:]):
        return first
    ndim = builtins.max(len(s) for s in shapes)
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


def _broadcast_shapes(*shapes):
    """The broadcast shape of ``shapes``, or NumPy's ValueError for operands."""
    shape = _broadcast_or_none(*shapes)
    if shape is None:
        listed = " ".join(str(tuple(s)).replace(" ", "") for s in shapes)
        raise ValueError(f"operands could not be broadcast together with shapes {listed}")
    return shape


def _binary(op, x, y, reflected=False):
    """``op(x, y)`` (``op(y, x)`` when reflected) with NumPy's promotion."""
    # A 0-d eager array meeting a deferred one is a NumPy 0-d array to it: a scalar with its
    # own dtype (no copy into a store).
    if type(y) is _Eager and y._h.ndim == 0:
        y = y._h
    elif type(x) is _Eager and x._h.ndim == 0 and isinstance(y, ndarray) and type(y) is not _Eager:
        return _binary(op, y, x._h, not reflected)
    # Fast paths: the common cases need no promotion or broadcasting checks.
    # An operation the native side lacks for the dtype (TypeError) goes on to NumPy's.
    xd = x._a.dtype
    if type(y) is float and xd == "float64":
        try:
            return ndarray(x._a.binary_scalar(op, y, reflected and op not in _COMMUTATIVE))
        except TypeError:
            pass
    if type(y) is ndarray and y._a.dtype == xd and xd in ("float64", "float32") \
            and x._a.shape == y._a.shape:
        # Same float dtype and shape: no promotion (true_divide stays in the dtype).
        a, b = (y, x) if reflected else (x, y)
        try:
            return ndarray(a._a.binary(op, b._a))
        except TypeError:
            pass
    if isinstance(y, _np.ndarray) and y.ndim > 0 or isinstance(y, (list, tuple)):
        y = asarray(y)  # (a sequence is an array to NumPy, with its own dtype)
    if isinstance(y, ndarray):
        a, b = (y, x) if reflected else (x, y)
        _broadcast_shapes(a.shape, b.shape)
        dtype = _np.result_type(a.dtype, b.dtype)
        compute = dtype
        if op in _FLOAT_BINARY and dtype.kind != "f":
            compute = _np.dtype(_np.float64)
        name = _dtype_name(compute)
        try:
            if name is None:
                raise TypeError(name)
            a = a if a.dtype == compute else a.astype(compute)
            b = b if b.dtype == compute else b.astype(compute)
            return ndarray(a._a.binary(op, b._a))
        except TypeError:
            return _fallback(op, getattr(_np, op), a, b)
    if _is_scalar(y) or isinstance(y, _np.ndarray):
        value = y.item() if isinstance(y, (_np.generic, _np.ndarray)) else y
        dtype = _np.result_type(x.dtype, y if isinstance(y, (_np.generic, _np.ndarray)) else value)
        if op in _FLOAT_BINARY and dtype.kind != "f":
            dtype = _np.dtype(_np.float64)
        name = _dtype_name(dtype)
        if name is None:
            return _fallback(op, getattr(_np, op), *((y, x) if reflected else (x, y)))
        try:
            scalar = _scalar_for(value, name)
        except OverflowError:
            # A value beyond the dtype: NumPy's outcome on one element of the array's dtype
            # is its TypeError for an operation the dtype lacks, its OverflowError, or, for
            # a comparison of integers, the answer for every element (all of them lie on
            # the same side of such a value).
            one = _np.zeros(1, x.dtype)
            with _np.errstate(all="ignore"):
                answer = getattr(_np, op)(*((value, one) if reflected else (one, value)))
            if op in _COMPARISONS:
                return full(x.shape, bool(answer[0]), dtype="bool")
            if op in ("logical_and", "logical_or"):  # only the value's truth matters
                return _binary(op, x, bool(value), reflected)
            raise
        xx = x if x.dtype == dtype else x.astype(dtype)
        if op == "power" and dtype.kind == "i" and not reflected:
            return _int_power(xx, scalar)
        try:
            reflect = reflected and op not in _COMMUTATIVE
            return ndarray(xx._a.binary_scalar(op, scalar, reflect))
        except TypeError:
            return _fallback(op, getattr(_np, op), *((y, x) if reflected else (x, y)))
    return NotImplemented


def divmod(x1, x2, /):  # noqa: A001 (NumPy's name)
    """NumPy's ``divmod``: ``(floor_divide(x1, x2), remainder(x1, x2))``."""
    return floor_divide(x1, x2), remainder(x1, x2)  # noqa: F821 (defined below)


def _int_power(x, exponent):
    """``x ** exponent`` for an integer array: repeated squaring with wrapping products,
    which is what NumPy computes."""
    if exponent < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result, square = None, x
    while True:
        if exponent & 1:
            result = square if result is None else result * square
        exponent >>= 1
        if not exponent:
            return full(x.shape, 1, dtype=x.dtype) if result is None else result
        square = square * square


def _unary(op, x):
    if not isinstance(x, ndarray):
        return getattr(_np, op)(x)
    kind = x.dtype.kind
    if kind == "i" and op in _INT_IDENTITY:
        return x.copy()
    if kind in "ib" and op in _INT_CONSTANT:
        return full(x.shape, _INT_CONSTANT[op], dtype="bool")
    try:
        compute = x
        if op in _FLOAT_UNARY and kind != "f":
            compute = x.astype("float64")
        return ndarray(compute._a.unary(op))
    except TypeError:
        return _fallback(op, getattr(_np, op), x)


def _make_unary(op):
    def f(x, /):
        return _unary(op, x)
    f.__name__ = op
    f.__doc__ = f"NumPy's ``{op}``, element-wise on diffuse."
    return f


def _make_binary(op):
    def f(x1, x2, /):
        if isinstance(x1, ndarray):
            result = _binary(op, x1, x2)
        elif isinstance(x2, ndarray):
            result = _binary(op, x2, x1, True)
        else:
            return getattr(_np, op)(x1, x2)
        # An operand diffuse does not know (NotImplemented to an operator): NumPy's.
        return _fallback(op, getattr(_np, op), x1, x2) if result is NotImplemented else result
    f.__name__ = op
    f.__doc__ = f"NumPy's ``{op}``, element-wise on diffuse with broadcasting."
    return f


for _name, _op in _UNARY.items():
    globals()[_name] = _make_unary(_op)
for _op in _BINARY:
    globals()[_op] = _make_binary(_op)
divide = globals()["true_divide"]
mod = globals()["remainder"]


def square(x, /):
    """``x * x``."""
    return multiply(x, x)  # noqa: F821 (defined above)


def _where(condition, x, y):
    return where(condition, x, y)


def where(condition, x=None, y=None):
    """``x`` where ``condition`` holds, else ``y`` (broadcasting); with ``condition``
    alone, NumPy's ``nonzero(condition)``."""
    if x is None and y is None:
        return nonzero(condition)
    x, y = (v._h if type(v) is _Eager and v._h.ndim == 0 else v for v in (x, y))
    c = asarray(condition)
    if c.dtype != _np.bool_:
        c = c.astype("bool")
    dtype = _np.result_type(*(v.dtype if isinstance(v, ndarray) else v for v in (x, y)))
    name = _dtype_name(dtype)
    if name is None:
        return _fallback("where", _np.where, condition, x, y)
    xs = [ndarray(_native.full_([], _scalar_for(v, name), name)) if _is_scalar(v) else
          ndarray(_native.full_([], _scalar_for(v.item(), name), name))
          if isinstance(v, _np.ndarray) and v.ndim == 0 else asarray(v).astype(name)
          for v in (x, y)]
    _broadcast_shapes(c.shape, xs[0].shape, xs[1].shape)
    return ndarray(_native.where_(c._a, xs[0]._a, xs[1]._a))


def clip(a, a_min, a_max):
    """``minimum(maximum(a, a_min), a_max)``."""
    out = asarray(a)
    if out.dtype.name in _INT_RANGE:
        # As NumPy: a Python integer bound beyond the dtype on the side that clips nothing
        # is no bound; beyond it on the other side it fails to convert (OverflowError).
        lo, hi = _INT_RANGE[out.dtype.name]
        if type(a_min) is int and a_min < lo:
            a_min = None
        if type(a_max) is int and a_max > hi:
            a_max = None
    if a_min is not None:
        out = maximum(out, a_min)  # noqa: F821
    if a_max is not None:
        out = minimum(out, a_max)  # noqa: F821
    return out


# -- views -------------------------------------------------------------------------------
def reshape(a, shape, order="C"):
    """``a.reshape(shape)``: a view when NumPy gives one, else a copy."""
    return asarray(a).reshape(shape, order=order)


def ravel(a, order="C"):
    """``a`` as 1-d: a view when NumPy gives one, else a copy."""
    return asarray(a).ravel(order=order)


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
            subtract(a[head], a[tail])  # noqa: F821 (ufuncs defined above)
    return a


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


def nonzero(a):
    """NumPy's ``nonzero``: per dimension, the indices of the non-zero elements, row-major
    (one native compaction, whose count is read back, when the indices are first used;
    ``b[nonzero(a)] = v`` needs neither: see ``_NonzeroIndex``)."""
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d("
                         "scalar).nonzero() instead.")
    # A mask of its own: writes to ``a`` after this call must not change the indices.
    mask = a.copy() if a.dtype == _np.bool_ else not_equal(a, 0)  # noqa: F821 (ufunc above)
    found = []
    return tuple(_NonzeroIndex(mask, d, found) for d in range(mask.ndim))


class _NonzeroIndex(ndarray):
    """Dimension ``axis``'s indices of ``nonzero(mask)``, computed (for every dimension at
    once) when first used. Indexing an array of the mask's shape with all of them, as in
    ``b[nonzero(a)] = 0``, is ``b[mask]``: a fused masked write, or one compaction, with no
    index arrays and no read-back of their count before the write."""

    __slots__ = ("_mask", "_axis", "_found")

    def __init__(self, mask, axis, found):  # noqa: super().__init__ would set ``_a``
        self._mask, self._axis, self._found = mask, axis, found

    @property
    def _a(self):
        if not self._found:
            self._found.extend(self._mask._a.nonzero())
        return self._found[self._axis]


class _MaskedSelection(ndarray):
    """``a[nonzero(m)]``: the elements of ``source`` where ``mask`` is true, compacted when
    first used or, at the latest, before the next write into any array (so it holds the
    source's elements as they were when it was taken, and keeps the source alive no longer
    than that). Written with the same ``nonzero`` result into another array of the mask's
    shape, as in ``j, i = nonzero(m); b[j, i] = a[j, i]`` (TorchSWE's idiom), it is
    ``b = where(m, a, b)``: one fused element-wise task, with no compaction and no read-back
    of the count."""

    __slots__ = ("_source", "_mask", "_found", "__weakref__")

    def __init__(self, source, mask):  # noqa: super().__init__ would set ``_a``
        self._source, self._mask, self._found = source, mask, None
        if len(_lazy_selections) >= 64:
            # A program reading selections without writing: forget the ones gone or used.
            _lazy_selections[:] = [
                ref for ref in _lazy_selections
                if (selection := ref()) is not None and selection._found is None]
        _lazy_selections.append(weakref.ref(self))

    @property
    def _a(self):
        if self._found is None:
            self._found = self._source._a.select(self._mask._a)
            self._source = None
        return self._found


# Selections not compacted yet (weak references), and the one a write is consuming.
_lazy_selections = []
_consumed = None


@contextlib.contextmanager
def _consuming(selection):
    """Writes inside this block leave ``selection`` lazy (they are its own consumption)."""
    global _consumed
    _consumed = selection
    try:
        yield
    finally:
        _consumed = None


def _compact_lazy_selections():
    """Compacts every lazy selection (but the one being consumed) before a write, which
    might change its source."""
    if not _lazy_selections:
        return
    pending, _lazy_selections[:] = list(_lazy_selections), []
    for ref in pending:
        selection = ref()
        if selection is None or selection._found is not None:
            continue
        if selection is _consumed:
            _lazy_selections.append(ref)
        else:
            selection._a  # noqa: B018 (compacts)


def _nonzero_mask(key, shape):
    """The mask when ``key`` is the whole result of one ``nonzero(mask)`` call over an array
    of ``shape`` (``b[nonzero(a)]``); None otherwise."""
    if type(key) is not tuple or not key or not builtins.all(
            type(k) is _NonzeroIndex for k in key):
        return None
    mask = key[0]._mask
    if len(key) != mask.ndim or tuple(mask.shape) != tuple(shape) or builtins.any(
            k._mask is not mask or k._axis != d for d, k in enumerate(key)):
        return None
    return mask


def flatnonzero(a):
    """NumPy's ``flatnonzero``: the indices of the non-zero elements of the flattened
    array."""
    return nonzero(asarray(a).ravel())[0]


def extract(condition, arr):
    """NumPy's ``extract``: the elements of the flattened ``arr`` where the flattened
    ``condition`` is true."""
    arr, condition = asarray(arr).ravel(), asarray(condition).ravel()
    if condition.size != arr.size:
        return _fallback("extract of differently sized arrays", _np.extract, condition, arr)
    mask = condition if condition.dtype == _np.bool_ else condition.astype("bool")
    return arr[mask]


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


def outer(a, b, out=None):
    """NumPy's ``outer``: the flattened ``a`` as a column times the flattened ``b`` as a
    row (one element-wise task)."""
    a, b = asarray(a).ravel(), asarray(b).ravel()
    result = multiply(a.reshape(-1, 1), b.reshape(1, -1))  # noqa: F821
    if out is None:
        return result
    out[...] = result
    return out


# -- creation ------------------------------------------------------------------------------
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


def empty_like(a, dtype=None):
    return zeros_like(a, dtype)


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
        dtype = _np.int64 if dtype.kind in "iu" else _np.float64
    name = _dtype_name(dtype)
    if name in (None, "bool") or step == 0 \
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
        return where(index == 0, first, out)
    return out


def linspace(start, stop, num=50, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop``; for an integer or bool
    ``dtype`` computed in float64 and, as NumPy 2 does, floored (integers) and cast."""
    name = _dtype_name(dtype or _np.float64)
    if name is None:
        return _fallback("linspace", _np.linspace, start, stop, num, dtype=dtype)
    if _eager_shape((int(num),)):
        # As the deferred path computes it: in float64 (or float32), floored for integers.
        if name in ("float64", "float32"):
            return _Eager(_np.linspace(float(start), float(stop), int(num), dtype=_DT[name]))
        values = _np.linspace(float(start), float(stop), int(num))
        return _Eager((values if name == "bool" else _np.floor(values)).astype(_DT[name]))
    if name in ("float64", "float32"):
        return ndarray(_native.linspace_(float(start), float(stop), int(num), name))
    values = ndarray(_native.linspace_(float(start), float(stop), int(num), "float64"))
    return (values if name == "bool" else floor(values)).astype(name)  # noqa: F821


# -- reductions ----------------------------------------------------------------------------
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
    if name == "mean" and a.dtype.kind != "f":
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
            multiply(result, start)  # noqa: F821 (ufuncs above)
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


def mean(a, axis=None, dtype=None, keepdims=False):
    """The mean (a lazy 0-d array for a whole-array mean)."""
    a = asarray(a)
    if a.size == 0:
        # No elements: NumPy's answer (NaNs, or an empty array), its warnings ("Mean of
        # empty slice", the division's under NumPy's error state) and its errors depend on
        # the shape and dtype alone, so they come from NumPy's mean of an empty stand-in.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = _np.mean(_np.empty(a.shape, a.dtype), axis=axis, dtype=dtype,
                              keepdims=keepdims)
        for w in caught:
            warn_at_caller(str(w.message), w.category)
        return asarray(result)
    return _reduce("mean", a, axis, keepdims, dtype)


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
    return not_equal(a, 0).astype("int64")  # noqa: F821 (defined above)


def any(a, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """True where some element is nonzero (a lazy 0-d bool array for the whole array): the
    count of nonzero elements is not 0. (A sum starts from the zeros a new array holds, so
    it fuses with the work before it; a maximum would start from its identity, written by a
    task of its own.)"""
    a = asarray(a)
    counts = _reduce("sum", _nonzero_ints(a), axis, keepdims)
    return not_equal(counts, 0)  # noqa: F821 (defined above)


def all(a, axis=None, keepdims=False):  # noqa: A001 (NumPy's name)
    """True where every element is nonzero (a lazy 0-d bool array for the whole array): the
    count of zero elements is 0 (see ``any``)."""
    a = asarray(a)
    zeros_ = _reduce("sum", equal(a, 0).astype("int64"), axis, keepdims)  # noqa: F821
    return equal(zeros_, 0)  # noqa: F821 (defined above)


def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero elements (an int for the whole array, as NumPy gives)."""
    a = asarray(a)
    counts = _reduce("sum", _nonzero_ints(a), axis, keepdims)
    return int(counts.item()) if axis is None and not keepdims else counts


def dot(a, b):
    """Dot product: vector . vector (lazy 0-d), matrix @ vector, matrix @ matrix."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 1 and b.ndim == 1 and a.dtype == b.dtype == _np.float64:
        if a.shape != b.shape:
            raise ValueError(
                f"shapes {a.shape} and {b.shape} not aligned: {a.shape[0]} (dim 0) != "
                f"{b.shape[0]} (dim 0)"
            )
        return ndarray(a._a.dot(b._a))
    return matmul(a, b)


def matmul(a, b):
    """``a @ b`` for vectors and matrices of a numeric dtype, NumPy's promotion of the two
    (vector @ vector is a lazy 0-d array; integers wrap, as NumPy's)."""
    a, b = asarray(a), asarray(b)
    dtype = _np.result_type(a.dtype, b.dtype)
    if dtype.kind in "if" and _dtype_name(dtype) is not None \
            and 1 <= a.ndim <= 2 and 1 <= b.ndim <= 2:
        a = a if a.dtype == dtype else a.astype(dtype)
        b = b if b.dtype == dtype else b.astype(dtype)
        k_a, k_b = a.shape[-1], b.shape[0]
        if k_a != k_b:
            raise ValueError(
                "matmul: Input operand 1 has a mismatch in its core dimension 0, with "
                f"gufunc signature (n?,k),(k,m?)->(n?,m?) (size {k_b} is different "
                f"from {k_a})"
            )
        if a.ndim == 1 and b.ndim == 1:
            return ndarray(a._a.dot(b._a))
        if a.ndim == 1:  # vector @ matrix is the transposed matrix times the vector
            return ndarray(b.T._a.matvec(a._a))
        return ndarray(a._a.matvec(b._a) if b.ndim == 1 else a._a.matmul(b._a))
    return _fallback("matmul", _np.matmul, a, b)


def allclose(a, b, rtol=1e-05, atol=1e-08):
    """NumPy's ``allclose``: everywhere ``|a - b| <= atol + rtol * |b|`` with ``b``
    finite, or ``a == b`` (equal infinities); ``b`` in a float dtype first, as NumPy's
    ``isclose`` has it."""
    a = asarray(a)
    if _is_scalar(b):  # a Python float: weak, in a's dtype where it meets a
        b = float(b)
        magnitude, finite = builtins.abs(b), math.isfinite(b)
    else:
        b = asarray(b)
        b = b if b.dtype.kind == "f" else b.astype("float64")
        magnitude, finite = absolute(b), isfinite(b)  # noqa: F821 (defined above)
    near = less_equal(absolute(subtract(a, b)), atol + rtol * magnitude)  # noqa: F821
    close = logical_or(logical_and(near, finite), equal(a, b))  # noqa: F821
    return builtins.bool(all(close))


def flush():
    """Runs everything submitted so far."""
    _native.flush()


newaxis = None
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
float64, float32, int64, int32, bool_ = _np.float64, _np.float32, _np.int64, _np.int32, _np.bool_


# diffuse arrays print through NumPy, so NumPy's print options are theirs (no fallback).
_PRINT_OPTIONS = frozenset(("set_printoptions", "get_printoptions", "printoptions"))


def __getattr__(name):
    """Anything NumPy has that diffuse does not: NumPy's, on converted arguments
    (``random`` and ``linalg`` are diffuse's own submodules)."""
    if name in ("random", "linalg"):
        import importlib

        return importlib.import_module(f"diffuse.{name}")
    attr = getattr(_np, name)
    if name in _PRINT_OPTIONS:
        return attr
    if callable(attr) and not isinstance(attr, type):
        def fallback(*args, **kwargs):
            return _fallback(name, attr, *args, **kwargs)
        fallback.__name__ = name
        return fallback
    return attr


def _wrap_numpy_names():
    """Makes the functions of NATIVE take NumPy's whole interface: ufuncs as ``_Ufunc``,
    functions NumPy dispatches through ``_numpy_compatible``."""
    for name in NATIVE:
        numpy_attr = getattr(_np, name, None)
        impl = globals()[name]
        if isinstance(numpy_attr, _np.ufunc):
            _UFUNCS.setdefault(numpy_attr.__name__, impl)
            globals()[name] = _Ufunc(impl, numpy_attr)
        elif hasattr(numpy_attr, "_implementation"):
            globals()[name] = _FUNCTIONS[numpy_attr] = _numpy_compatible(impl, numpy_attr)


_wrap_numpy_names()
# Its inputs are positional (``*xi``), which NumPy's signature binding cannot pass on.
_FUNCTIONS[_np.meshgrid] = meshgrid
