"""``ndarray``, diffuse's array with NumPy's interface, and the views NumPy expresses with
strides but a box of a store cannot (``_StridedView``; ``_make_view`` picks the box where
there is one).

Its methods run the operations of the modules above this one (``_ufuncs``, ``_indexing``,
``_reductions``, ...), which import ``ndarray``: this module imports them last, as modules,
and looks their functions up when a method is called.
"""

import builtins
import math
import numbers
import operator
import sys
import weakref

import numpy as _np

from . import _errstate, _layout, _native, _state
from ._warnings import warn_at_caller
from ._dtypes import _COMPLEX_PARTS, _DT, _dtype_name, _INT_RANGE, _is_scalar, _scalar_for


def _int_slice_bounds(key, shape):
    """``(bounds, dropped)`` of the box ``key`` selects when it is a tuple of Python ints
    (in range) and slices without a step, at most one per dimension (the common
    ``a[i, :j]``, checked quickly); None for anything else (``_basic_bounds``)."""
    if len(key) > len(shape):
        return None
    bounds, dropped = [], []
    for d, k in enumerate(key):
        n = shape[d]
        t = type(k)
        if t is int:
            if not -n <= k < n:
                return None
            k %= n
            bounds.append((k, k + 1))
            dropped.append(d)
        elif t is slice and k.step is None:
            start, stop, _ = k.indices(n)
            bounds.append((start, stop if stop > start else start))
        else:
            return None
    bounds.extend((0, n) for n in shape[len(key):])
    return bounds, dropped


# Where the runtime cannot hand a store's host buffer over to NumPy (``take_host``: Legion),
# a large array moves after one piece per 2^16 of its elements at least: copying it costs
# about what that many pieces cost deferred (a host round trip, tens of microseconds each,
# against about a nanosecond per element copied), so a loop never pays more than a few times
# the cheaper of the two.
_PIECE_ELEMENTS_LOG2 = 16

# Arrays larger than this need twice ``_state.loop_pieces`` pieces to move.
_LARGE_LOOP_ELEMENTS = 1 << 18


# (Looked up once: every array made checks it.)
_NativeArray = _native.NativeArray


def _new_native(shape, dtype, buffer, offset, strides, order):
    """The native array of ``ndarray(shape, dtype, ...)``, NumPy's constructor form: zeros
    of ``shape`` and ``dtype``. A ``buffer`` (with its ``offset`` and ``strides``) cannot be
    shared: diffuse arrays hold their own elements."""
    if buffer is not None or offset or strides is not None:
        raise TypeError("diffuse.numpy.ndarray cannot view a buffer (its arrays hold their "
                        "own elements): make a NumPy array of it and use "
                        "diffuse.numpy.array(...)")
    if order not in (None, "C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    dims = [operator.index(d) for d in shape]
    if builtins.any(d < 0 for d in dims):
        raise ValueError("negative dimensions are not allowed")
    name = _dtype_name(_np.dtype(dtype))
    if name is None:
        raise TypeError(f"diffuse arrays cannot hold dtype {_np.dtype(dtype)}")
    return _native.zeros_(dims, name)


class ndarray:
    """A diffuse array with NumPy's interface (a view when it comes from basic slicing);
    ``ndarray(shape, dtype=float)``, NumPy's constructor form, makes one of zeros."""

    # `_a`: the native array; `_h`: an eager array's NumPy elements (declared here, not in
    # `_Eager`, so that both have one layout and an array can change kind in place:
    # `_defer_in_place`, `_moved_to_numpy`); `_n`: the pieces of it a loop took so far (a
    # set of their integer indices; None before the first, False where it cannot move);
    # `_views`: weak references to the strided views taken of it and not attached, which
    # follow it when it moves (a list shared by their views, or None).
    __slots__ = ("_a", "_h", "_n", "_views")
    # Named where users find it (reprs, pickles of the class), as NumPy names its classes.
    __module__ = "diffuse.numpy"
    # NumPy defers binary operators with a NumPy array on the left to us.
    __array_priority__ = 1000

    def __init__(self, native, dtype=float, buffer=None, offset=0, strides=None, order=None):
        # (`ndarray(shape, dtype)`, NumPy's constructor, is a new array of zeros: what NumPy
        # leaves uninitialized)
        if type(native) is not _NativeArray:
            native = _new_native(native, dtype, buffer, offset, strides, order)
        self._a = native
        self._n = None
        self._views = None
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
        return self._a.size

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
        out = self._host_copy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def _host_copy(self):
        """A new NumPy array holding the elements (one copy, into NumPy's memory)."""
        a = self._a
        try:
            out = _np.empty(self.shape, dtype=self.dtype)
        except MemoryError:
            # The host cannot hold it; but a store that a failed operation left without
            # contents reports that failure first, as a read does.
            a.element([0] * self.ndim)
            raise
        a.read_into(out.ctypes.data, out.nbytes)
        return out

    def _settled(self, limit=None):
        """True when this array is small enough for NumPy to hold (``_state.eager_limit``
        elements, or ``limit``) and no pending work writes its store: reading it
        (``_settled_host``) then neither waits nor cuts the window, so a small operation
        on it can run on NumPy. False while ``diffuse.trace`` records."""
        return not _state.recording and 0 < self._a.size <= (limit or _state.eager_limit) \
            and self._a.pending_use() != "writes"

    def _settled_host(self):
        """The elements of a ``_settled`` array as a NumPy array."""
        return self._host_copy()

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
        return (_creation._unpickle, (_np.asarray(self),))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy's ufuncs on diffuse arrays (``numpy.add(x, 1)``, ``numpy.exp(x, out=y)``):
        diffuse's own operation where it has one, else NumPy's on host copies."""
        return _interop._ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy's functions on diffuse arrays (``numpy.sum(x)``): diffuse's own where it
        has one taking these arguments, else NumPy's on host copies."""
        if not builtins.all(issubclass(t, (ndarray, _np.ndarray)) for t in types):
            return NotImplemented
        impl = _interop._FUNCTIONS.get(func)
        if impl is not None:
            return impl(*args, **kwargs)
        if func in _interop._METADATA:  # no copy of the elements, no fallback
            return func(*[_interop._stand_in(a) for a in args], **kwargs)
        return _interop._fallback(func.__name__, getattr(func, "_implementation", func),
                                  *args, **kwargs)

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
        source = self._a.dtype
        if source in _COMPLEX_PARTS and name not in _COMPLEX_PARTS and name != "bool":
            warn_at_caller("Casting complex values to real discards the imaginary part",
                           _np.exceptions.ComplexWarning)
        cast = ndarray(self._a.astype(name))
        if name in _INT_RANGE and source in ("float64", "float32", *_COMPLEX_PARTS):
            # NumPy's cast of floats (a complex number's real part) to integers is C's on
            # x86-64: a value whose truncation the dtype cannot hold (NaN, infinities,
            # beyond the range) becomes the dtype's minimum, where diffuse's kernels
            # saturate (NaN to 0). Lazy, fused with the cast.
            lo, hi = _INT_RANGE[name]
            values = self.real
            fits = _ufuncs.logical_and(_ufuncs.greater_equal(values, float(lo)),
                                       _ufuncs.less(values, float(hi) + 1.0))
            cast = _ufuncs.where(fits, cast, lo)
        return cast

    def copy(self):
        return ndarray(self._a.unary("copy"))

    def fill(self, value):
        self[...] = value

    def __complex__(self):
        return complex(self.item())

    # -- complex parts ----------------------------------------------------------------
    @property
    def real(self):
        """The real part: of a complex array a view writing through to it (``_PartView``),
        of a real array the array itself."""
        return _PartView(self, "real") if self.dtype.kind == "c" else self

    @real.setter
    def real(self, value):
        self.real[...] = _as_array(value)

    @property
    def imag(self):
        """The imaginary part: of a complex array a view writing through to it, of a real
        array zeros that refuse writes (NumPy's are read-only) (``_PartView``)."""
        return _PartView(self, "imag")

    @imag.setter
    def imag(self, value):
        if self.dtype.kind != "c":
            raise TypeError("array does not have imaginary part to set")
        self.imag[...] = _as_array(value)

    def conjugate(self):
        """The complex conjugate (a real array: the array itself, as NumPy's method gives)."""
        return _ufuncs.conjugate(self) if self.dtype.kind == "c" else self

    conj = conjugate

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

    def _moved_to_numpy(self, key):
        """Notes ``key`` when it holds Python ints (an element, a row, a column,
        ``a[i, :i]``: a piece, as loops take them) and, once ``_state.loop_pieces`` different
        pieces were taken, moves this array to NumPy (``_Eager``) when it can: the loop then
        runs at NumPy's speed. Pieces told apart by their ints, so that a fused time loop
        writing the same few boundary rows every step stays deferred. True when it moved (the
        caller indexes the array again)."""
        t = type(key)
        if t is tuple:
            ints = ()
            for k in key:
                if type(k) is int:
                    ints += (k,)
            if not ints:
                return False
        elif t is int:
            ints = key
        else:
            return False
        seen = self._n
        if seen is None:
            seen = self._n = set()
        elif seen is False:
            return False
        seen.add(ints)
        pieces = len(seen)
        if pieces < _state.loop_pieces:
            return False
        size = self.size
        if not 0 < size <= _state.loop_limit:
            self._n = False  # it can never move
            return False
        if size > _LARGE_LOOP_ELEMENTS and pieces < 2 * _state.loop_pieces:
            return False
        repaid = pieces >= size >> _PIECE_ELEMENTS_LOG2  # (by the pieces so far: a copy)
        if not repaid and _state.hands_over_host is False:
            return False
        if self._move_to_numpy(copy=repaid):
            return True
        self._n = set()  # tried again after as many new pieces
        return False

    def _move_to_numpy(self, copy):
        """Makes this array NumPy-held (``_Eager``, the same object, so every reference to it
        sees the change) holding its current elements (its store's own host buffer where the
        runtime hands it over, else a copy where ``copy`` allows one), and says whether it
        did: only an array of at most ``_state.loop_limit`` elements that is its whole store,
        and that nothing else holds (no box view, no other array over the store, no attached
        strided view, no recording), since a write to NumPy's elements would not reach them.
        Its strided views not attached become NumPy's views of the moved elements
        (``_eager._follow_to_numpy``)."""
        if _state.recording or type(self) is not ndarray:
            return False
        a = self._a
        if a.store_handles != 1:
            return False
        # References to `a`: this array's slot, the local `a` and getrefcount's argument, and
        # one from each strided view of it not attached (``_views``), which follow it.
        extra = sys.getrefcount(a) - 3
        followers = [v for v in (r() for r in self._views or ())
                     if type(v) is _StridedView and v._version is None and v._store is a]
        if len(followers) != extra:
            return False
        store_shape, point, _ = a.layout()
        if builtins.any(point) or tuple(a.shape) != tuple(store_shape) \
                or not 0 < math.prod(store_shape) <= _state.loop_limit:
            return False
        _selection._compact_lazy_selections()  # (selections of it read it first)
        memory = a.take_host()
        _state.hands_over_host = memory is not None
        if memory is not None:
            host = _np.asarray(memory)
        elif copy:
            host = self._host_copy()
        else:
            return False
        for view in followers:
            _eager._follow_to_numpy(view, host)
        del a, followers
        ndarray._a.__delete__(self)
        self._views = None
        self.__class__ = _eager._Eager
        self._h = host
        return True

    def _taken(self, view):
        """``view`` (a strided view of this array's store, not attached) noted in
        ``_views``, so that it follows this array to NumPy."""
        views = self._views
        if views is None:
            views = self._views = []
        elif len(views) >= 16:
            views[:] = [r for r in views if r() is not None]
        views.append(weakref.ref(view))
        view._peers = views
        return view

    def __getitem__(self, key):
        if type(self) is ndarray and self._moved_to_numpy(key):
            return self[key]
        t = type(key)
        if t is int:
            shape = self._a.shape
            if len(shape) == 1:
                return self._element((key,))
            simple = _int_slice_bounds((key,), shape)  # a row
            if simple is not None:
                return self._dropped_view(*simple)
        elif t is tuple:
            if len(key) == len(self._a.shape) and builtins.all(type(k) is int for k in key):
                return self._element(key)
            view = self._a.box_view(key)  # one step-1 slice per dimension, natively
            if view is not None:
                return ndarray(view)
            simple = _int_slice_bounds(key, self._a.shape)
            if simple is not None:
                return self._dropped_view(*simple)
        elif t is slice:
            view = self._a.box_view(key)
            if view is not None:
                return ndarray(view)
        basic = self._basic_bounds(key)
        if basic is not None:
            bounds, dropped = basic
            if not dropped:
                return ndarray(self._a.slice(bounds))
            return self._dropped_view(bounds, dropped)
        return self._view(key)

    def _element(self, index):
        """``self[i, j, ...]`` with one Python int per dimension: the element as a NumPy
        scalar, read without a task (waiting only for work that writes the store)."""
        a = self._a
        return _DT[a.dtype].type(a.element(index))

    def _dropped_view(self, bounds, dropped):
        """The view of the box ``bounds`` without the dimensions ``dropped`` (integer
        indices): ``a[i, :j]``, ``a[:, j]``, a row ``a[i]``."""
        if type(self) is not ndarray:
            store, sid, store_shape, _, offset, strides = self._as_strided()
            point = [0] * len(store_shape)
        else:  # a box of its store: its handle reads in the store's coordinates
            store = self._a
            store_shape, point, sid = store.layout()
            strides = _layout.c_strides(store_shape)
            offset = 0
        shape, kept = [], []
        for d, ((lo, hi), p, s) in enumerate(zip(bounds, point, strides)):
            offset += (p + lo) * s
            if d not in dropped:
                shape.append(hi - lo)
                kept.append(s)
        view = _make_view(store, sid, store_shape, shape, offset, kept)
        return self._taken(view) if type(view) is _StridedView and type(self) is ndarray \
            else view

    def _view(self, key):
        """The view ``self[key]`` for any basic index; NumPy's copy for advanced ones."""
        mask = _selection._nonzero_mask(key, self.shape)
        if mask is not None:
            # Selected when first used, or before anything is next written (_MaskedSelection).
            return _selection._MaskedSelection(self, mask)
        mask = _indexing._bool_array(key)
        if mask is not None and mask.shape == self.shape and self.ndim > 0:
            # ``a[mask]``: the selected elements, compacted natively.
            return ndarray(self._a.select(mask._a))
        expanded = _indexing._newaxis_as_axes(key, self.shape)
        if expanded is not None:
            # ``newaxis`` beside index arrays: a length-1 axis taken whole, as NumPy places it.
            return self.reshape(expanded[0])[expanded[1]]
        indices = _indexing._integer_indices(key, self.shape)
        if indices is not None:
            got = ndarray(self._a.gather_indexed([i._a for i in indices]))
            # 0-d indices select one element: a NumPy scalar, as in NumPy.
            return got if got.ndim else self.dtype.type(got._a.item())
        store, sid, store_shape, shape, offset, strides = self._as_strided()
        got = _layout.index(shape, offset, strides, key)
        if got is None:
            _interop._warn_fallback("indexing with arrays, lists or booleans")
            return _interop._to_diffuse(_np.asarray(self)[_eager._to_numpy(key)])
        vshape, voffset, vstrides, _ = got
        keys = key if isinstance(key, tuple) else (key,)
        if not vshape and not builtins.any(k is None or k is Ellipsis for k in keys):
            # A single element is a NumPy scalar, as in NumPy.
            return self.dtype.type(_np.frombuffer(store.read_strided([], voffset, []),
                                                  dtype=self.dtype)[0])
        return _make_view(store, sid, store_shape, vshape, voffset, vstrides)

    def __setitem__(self, key, value):
        if type(self) is ndarray and self._moved_to_numpy(key):
            self[key] = value
            return
        t = type(key)
        vt = type(value)
        if type(self) is ndarray and (vt is _eager._Eager or vt is _np.ndarray
                                      or (vt is ndarray or vt is _StridedView)
                                      and value._settled()):
            # NumPy's values, or a small computed array's (``s[t] = x[t]``, read without a
            # task), into a box (``a[:, j] = v``, ``a[i] = row``): from the host when small
            # and nothing pending uses the store, so that a loop's next read of it needs no
            # task either.
            shape = self._a.shape
            simple = _int_slice_bounds(key, shape) if t is tuple else \
                _int_slice_bounds((key,), shape) if t is int or t is slice else None
            if simple is not None:
                host = value if vt is _eager._Eager or vt is _np.ndarray else \
                    value._settled_host() if self._a.pending_use() == "nothing" \
                    else None  # (a copy: may overlap)
                if host is not None and self._box_from_host(*simple, host):
                    return
        if (t is int or t is tuple) and isinstance(value, (numbers.Number, _np.generic)) \
                and type(self) is ndarray and not _state.recording:
            index = (key,) if t is int else key
            if len(index) == len(self._a.shape) and builtins.all(type(k) is int for k in index):
                # One element: written from the host when no pending work uses the store,
                # else by a fill task that joins the window.
                a = self._a
                _selection._compact_lazy_selections()
                if a.pending_use() == "nothing":
                    a.set_element(index, _scalar_for(value, a.dtype))
                else:
                    bounds = []
                    for d, (i, n) in enumerate(zip(index, a.shape)):
                        if not -n <= i < n:
                            raise IndexError(
                                f"index {i} is out of bounds for axis {d} with size {n}")
                        bounds.append((i % n, i % n + 1))
                    a.slice(bounds).assign_scalar(_scalar_for(value, a.dtype))
                _layout.written(a.store_id)
                return
        target = self._a.box_view(key) if t is tuple or t is slice else None
        if target is not None:  # one step-1 slice per leading dimension, natively
            if type(value) is ndarray and value._a.dtype == target.dtype \
                    and value._a.shape == target.shape \
                    and value._a.layout() == target.layout():
                # The box itself (``x[a:b] *= 2`` stores ``x[a:b]`` back): nothing to copy.
                return
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
            _selection._compact_lazy_selections()
            scalar = _scalar_for(value, self._a.dtype)
            if not self._written_on_host(target, lambda shape: _np.full(shape, scalar,
                                                                        self.dtype)):
                target.assign_scalar(scalar)
        else:
            # Nested sequences convert as NumPy's do (Python integers checked against the
            # dtype); arrays cast.
            src = _creation.asarray(
                value, None if isinstance(value, (ndarray, _np.ndarray)) else self.dtype)
            if src.dtype != self.dtype:
                src = src.astype(self.dtype)
            dst_shape = tuple(n for d, n in enumerate(shape) if d not in dropped)
            if _layout.broadcast_or_none(src.shape, dst_shape) != dst_shape:
                raise ValueError(
                    f"could not broadcast input array from shape {src.shape} into shape "
                    f"{dst_shape}"
                )
            if dropped and src.ndim > 0:
                # Integer indices drop dimensions the box keeps (as 1): line the values up.
                kept = iter((1,) * (len(dst_shape) - src.ndim) + src.shape)
                src = src.reshape([1 if d in dropped else next(kept) for d in range(len(shape))])
            _selection._compact_lazy_selections()
            if type(src) is not _eager._Eager or not self._written_on_host(
                    target, lambda shape: _np.broadcast_to(src._h, shape)):
                target.assign(src._a)
        _layout.written(self._a.store_id)

    def _box_from_host(self, bounds, dropped, value):
        """``self[box] = value`` for the box ``bounds`` (without the dimensions ``dropped``)
        and a NumPy-held ``value``, written from the host as ``_written_on_host`` does, and
        True; False (nothing written) where that does not apply or the shapes do not
        broadcast (the general path then raises NumPy's error)."""
        host = value._h if type(value) is _eager._Eager else value
        if _dtype_name(host.dtype) is None:
            return False  # (converted by the general path first)
        dst_shape = tuple(hi - lo for d, (lo, hi) in enumerate(bounds) if d not in dropped)
        if _layout.broadcast_or_none(host.shape, dst_shape) != dst_shape:
            return False
        _selection._compact_lazy_selections()
        if not self._written_on_host(
                self._a.slice(bounds),
                lambda _: host if host.shape == dst_shape else _np.broadcast_to(host, dst_shape)):
            return False
        _layout.written(self._a.store_id)
        return True

    def _written_on_host(self, target, values):
        """Writes ``values(shape)`` (a NumPy array of the box ``target``'s shape) into
        ``target`` from the host, without a task, and says so, when the box is small
        (``_state.eager_limit``) and no pending work uses its store: the store stays
        computed, so the reads that follow (a loop's next row or column) need no task
        either. False otherwise (the caller assigns by a task)."""
        if type(self) is not ndarray or _state.recording:
            return False
        shape = tuple(target.shape)
        if not 0 < math.prod(shape) <= _state.eager_limit or target.pending_use() != "nothing":
            return False
        host = _np.ascontiguousarray(values(shape), dtype=self.dtype)  # NumPy's cast
        target.write_from(host.ctypes.data, host.nbytes)
        return True

    def _write(self, key, value):
        """``self[key] = value`` for any index: into a box, through a strided view, or (for
        advanced indices) on NumPy and back."""
        mask = _selection._nonzero_mask(key, self.shape)
        if mask is not None and type(value) is _selection._MaskedSelection and value._mask is mask \
                and value._found is None and value._source.shape == self.shape \
                and value._source.dtype == self.dtype \
                and value._source._a.store_id != self._a.store_id:
            # ``b[j, i] = a[j, i]`` for ``j, i = nonzero(m)``: b = where(m, a, b). The
            # selection stays lazy: ``b`` is not its source.
            merged = _ufuncs.where(mask, value._source, self)
            with _selection._consuming(value):
                self[...] = merged
            return
        if mask is not None and self._masked_write(mask, value):
            return
        if self._masked_write(key, value):
            return
        indices = _indexing._integer_indices(key, self.shape) \
            if self._holds_its_elements() else None
        if indices is not None:
            src = _creation.asarray(
                value, None if isinstance(value, (ndarray, _np.ndarray)) else self.dtype)
            if src.dtype != self.dtype:
                src = src.astype(self.dtype)
            target = _layout.broadcast_or_none(*(i.shape for i in indices))
            if _layout.broadcast_or_none(src.shape, target) != target:
                raise ValueError(f"shape mismatch: value array of shape {src.shape} could "
                                 f"not be broadcast to indexing result of shape {target}")
            _selection._compact_lazy_selections()
            self._a.scatter_indexed([i._a for i in indices], src._a)
            _layout.written(self._a.store_id)
            return
        store, sid, store_shape, shape, offset, strides = self._as_strided()
        got = _layout.index(shape, offset, strides, key)
        if got is None:
            _interop._warn_fallback("assignment through arrays, lists or booleans")
            host = _np.asarray(self)
            host[_eager._to_numpy(key)] = _eager._to_numpy(value)
            self[...] = host
            return
        vshape, voffset, vstrides, _ = got
        target = _make_view(store, sid, store_shape, vshape, voffset, vstrides)
        if type(target) is ndarray and 0 not in vshape:
            target[...] = value
            return
        values = _creation.zeros(vshape, self.dtype)
        values[...] = value  # NumPy's broadcasting and casting checks
        if 0 not in vshape:
            _selection._compact_lazy_selections()
            store.scatter_strided(vshape, voffset, vstrides, values._a)
            _layout.written(sid)

    def _masked_write(self, key, value):
        """``self[mask] = v`` (or ``self[:, cond] = v``) for a boolean mask and one value: a
        fused element-wise ``where``, no copy to NumPy. False (nothing done) for any other
        key or value."""
        mask = _indexing._selection_mask(key, self.shape)
        if mask is None:
            return False
        fill = _indexing._single_value(value, self.dtype)
        if fill is None:
            return False
        self[...] = _ufuncs.where(mask, fill, self)
        return True

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if order != "C":
            return _interop._fallback(f"reshape with order={order!r}",
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
            return _interop._fallback("diagonal of an array that is not 2-d",
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

    # -- arithmetic (the binary, reflected and in-place operators and the comparisons: from
    # tables below the class) ----------------------------------------------------------------
    def __invert__(self): return _ufuncs._unary("invert", self)
    def __divmod__(self, o): return (self // o, self % o)
    def __rdivmod__(self, o): return (o // self, o % self)
    def __neg__(self): return _ufuncs._unary("negative", self)
    def __pos__(self): return self.copy()
    def __abs__(self): return _ufuncs._unary("absolute", self)
    def __matmul__(self, o): return _reductions.matmul(self, o)
    def __rmatmul__(self, o): return _reductions.matmul(o, self)

    def _inplace(self, op, o):
        try:
            result = _ufuncs._binary(op, self, o, on_host=False)
        except ValueError:
            # NumPy refuses an output it cannot cast to before computing (bool **= -1 is
            # that casting error, not a negative power).
            weak = _is_scalar(o) and not isinstance(o, _np.generic)
            dtype = _np.result_type(self.dtype, o if weak else _creation.asarray(o).dtype)
            if op in _ufuncs._FLOAT_BINARY and dtype.kind not in "fc":
                dtype = _np.dtype(_np.float64)
            _interop._check_output_cast(dtype, self.dtype, op)
            raise
        _interop._store_output(self, result, op)
        return self

    __hash__ = None

    # -- reductions and methods (``sum``, ``mean``, ``argmax``, ...: from a table below the
    # class); any other method NumPy's arrays have runs on NumPy --------------------------------
    def nonzero(self):
        return _selection.nonzero(self)

    def __getattr__(self, name):
        attr = None if name.startswith("__") else getattr(_np.ndarray, name, None)
        if attr is None:
            raise AttributeError(f"'ndarray' object has no attribute '{name}'")
        if not callable(attr):  # a property NumPy has (strides, flags, ...): of a copy
            return getattr(_np.asarray(self), name)

        def method(*args, **kwargs):
            # The array is an argument like the others: what the method changes in place
            # (sort, put, partition, out=...) is written back.
            return _interop._fallback(f"ndarray.{name}", attr, self, *args, **kwargs)
        return method


def _as_array(value):
    """``value`` as the array NumPy's setters of ``real`` and ``imag`` make of it first (a
    complex scalar is cast with NumPy's ComplexWarning, where writing it into an element is
    a TypeError)."""
    return value if isinstance(value, ndarray) else _np.asarray(value)


def _method(name, body):
    """``body`` as ``ndarray``'s method ``name``."""
    body.__name__, body.__qualname__ = name, f"ndarray.{name}"
    return body


def _binary_operator(name, op, reflected=False):
    """``ndarray``'s operator ``name``: the ufunc ``op`` of the array and the other operand
    (the other operand first when ``reflected``), with NumPy's promotion."""
    return _method(name, lambda self, o: _ufuncs._binary(op, self, o, reflected))


def _inplace_operator(name, op):
    """``ndarray``'s in-place operator ``name``: the ufunc ``op`` written into the array."""
    return _method(name, lambda self, o: self._inplace(op, o))


def _reduction_method(name, function, module="_reductions"):
    """``ndarray``'s method ``name``: NumPy's ``function`` (of the package's ``module``) of
    the array, the method's arguments after it."""
    namespace = globals()
    return _method(name, lambda self, *args, **kwargs:
                   getattr(namespace[module], function)(self, *args, **kwargs))


# Python's operators and the ufuncs they are: each with its reflected and in-place forms, the
# comparisons alone.
_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
              "pow": "power", "floordiv": "floor_divide", "mod": "remainder",
              "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
              "lshift": "left_shift", "rshift": "right_shift"}
_COMPARISONS = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                "eq": "equal", "ne": "not_equal"}
# NumPy's methods that are its functions of the array, taking the functions' arguments
# after it (``out=`` and the others diffuse lacks run on NumPy).
_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "cumsum": "cumsum",
               "cumprod": "cumprod", "argmax": "argmax", "argmin": "argmin", "min": "amin",
               "max": "amax", "dot": "dot", "any": "any", "all": "all"}
for _name, _op in _OPERATORS.items():
    setattr(ndarray, f"__{_name}__", _binary_operator(f"__{_name}__", _op))
    setattr(ndarray, f"__r{_name}__", _binary_operator(f"__r{_name}__", _op, True))
    setattr(ndarray, f"__i{_name}__", _inplace_operator(f"__i{_name}__", _op))
for _name, _op in _COMPARISONS.items():
    setattr(ndarray, f"__{_name}__", _binary_operator(f"__{_name}__", _op))
for _name, _function in _REDUCTIONS.items():
    setattr(ndarray, _name, _reduction_method(_name, _function))
for _name in ("var", "std"):
    setattr(ndarray, _name, _reduction_method(_name, _name, "_statistics"))
for _name in ("argsort", "searchsorted"):
    setattr(ndarray, _name, _reduction_method(_name, _name, "_sorting"))


def _sort_in_place(self, axis=-1, kind=None, order=None, *, stable=None):
    """NumPy's ``ndarray.sort``: the array sorted along ``axis`` in place."""
    self[...] = _sorting.sort(self, axis=axis, kind=kind, order=order)


ndarray.sort = _method("sort", _sort_in_place)
ndarray.tofile = _reduction_method("tofile", "_tofile", "_io")


class _StridedView(ndarray):
    """A view NumPy expresses with strides but a box cannot (steps, transposes, newaxis,
    reshapes): its elements are gathered from the store when an operation needs them, and
    gathered again after the store is written; writes scatter into the store.

    A store that only strided views hold (the array they came from is gone, as after
    ``x = np.arange(n).reshape(r, c)``) is copied once into a store of the shape of the
    reshape being used, and all its views move there: their element positions are the same
    in the copy, and those that are boxes of it run natively from then on."""

    # `_peers`: the `_views` list of the array it was taken from, while not attached.
    __slots__ = ("_store", "_sid", "_store_shape", "_vshape", "_offset", "_strides",
                 "_version", "_seen", "_values", "_box", "_peers", "__weakref__")

    def __init__(self, store, sid, store_shape, shape, offset, strides):
        self._peers = None
        self._vshape, self._offset, self._strides = tuple(shape), offset, list(strides)
        # Attached (a handle of its own, watched, registered) when first gathered, written
        # or settled: a view only read on the host (``a[i, :i] @ x``) costs none of it.
        self._store, self._sid, self._store_shape = store, sid, tuple(store_shape)
        self._version, self._seen, self._values = None, -1, None
        self._box = _box_of(store, self._store_shape, self._vshape, offset, self._strides)

    def _attached(self):
        """This view, attached to its store (see ``__init__``)."""
        if self._version is None:
            self._attach(self._store, self._sid, self._store_shape)
        return self

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
        self._attached()
        shape = self._vshape
        if not self._reshapes_whole_store():
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

    def _reshapes_whole_store(self):
        """True when this view is a C-ordered reshape of its whole store (which ``_settle``
        may move to a store of this view's shape)."""
        shape = self._vshape
        return self._box is None and self._offset == 0 \
            and math.prod(shape) == math.prod(self._store_shape) \
            and builtins.all(n == 1 or s == c for n, s, c in
                             zip(shape, self._strides, _layout.c_strides(shape)))

    @property
    def _a(self):
        if self._box is None:
            self._settle()
        if self._box is not None:
            return self._box
        if self._seen != self._version.count:
            self._values = self._gather()
            self._seen = self._version.count
        elif _state.recording:
            _native.refuse_replay("it reads a strided view gathered before the call")
        return self._values

    def _holds_its_elements(self):
        if self._box is None:
            self._settle()  # onto a box of a copy where it can (no gather otherwise)
        return self._box is not None

    def _gather(self):
        return self._store.gather_strided(list(self._vshape), self._offset, self._strides)

    def _read_strided(self):
        """The elements as a read-only NumPy array, read from the store without a task
        (waiting for work that writes the store)."""
        raw = self._store.read_strided(list(self._vshape), self._offset, self._strides)
        return _np.frombuffer(raw, dtype=self.dtype).reshape(self._vshape)

    def _host_copy(self):
        if self._box is None and self.size <= _state.eager_limit:
            return self._read_strided().copy()  # small: no gather task
        return self._box_host_copy()

    def _settled(self, limit=None):
        return not _state.recording and 0 < self.size <= (limit or _state.eager_limit) \
            and self._store.pending_use() != "writes"

    def _settled_host(self):
        return self._read_strided() if self._box is None else self._box_host_copy()

    def _box_host_copy(self):
        """A NumPy copy through ``_a`` (its box, or a gather task)."""
        return ndarray._host_copy(self)

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
        self._settle()  # (attaches it)
        return (self._store, self._sid, self._store_shape, list(self._vshape), self._offset,
                list(self._strides))

    def __getitem__(self, key):
        t = type(key)
        if self._version is None and (t is int or t is slice or t is tuple and builtins.all(
                type(k) is int or type(k) is slice for k in key)) \
                and not self._reshapes_whole_store():
            # Integers and slices of a view not yet attached (a row ``m[i]`` read in a
            # loop): the view's view over the same handle, or the element, without
            # attaching this one (``_view`` would, and settle a reshape of a whole store).
            got = _layout.index(self._vshape, self._offset, self._strides, key)
            vshape, voffset, vstrides, _ = got
            if not vshape:
                dtype = self.dtype
                return dtype.type(_np.frombuffer(self._store.read_strided([], voffset, []),
                                                 dtype=dtype)[0])
            view = _make_view(self._store, self._sid, self._store_shape, vshape, voffset,
                              vstrides)
            peers = self._peers
            if peers is not None and type(view) is _StridedView:
                peers.append(weakref.ref(view))  # (it follows the same array)
                view._peers = peers
            return view
        return self._view(key)

    def __setitem__(self, key, value):
        self._write(key, value)

    def copy(self):
        return ndarray(self._gather())


class _PartView(ndarray):
    """``a.real`` or ``a.imag`` (``_part``) of ``a`` (``_parent``): NumPy's view of one part
    of a complex array, which a store cannot express (it holds whole elements). Read, it is
    the parent's part at that moment (one fused task, never a stale copy); its writes
    (``v[i] = x``, ``v += 1``, ``v.fill(x)``) and the views taken of it (indices, slices,
    reshapes, transposes) go through to the parent, as NumPy's do. The imaginary part of a
    real array is zeros that refuse writes, as NumPy's read-only ones do."""

    __slots__ = ("_parent", "_part")

    def __init__(self, parent, part):  # noqa: super().__init__ would set ``_a``
        self._parent, self._part = parent, part

    @property
    def _a(self):
        parent = self._parent
        if parent.dtype.kind == "c":
            return parent._a.unary(self._part)
        return _native.zeros_(list(parent.shape), parent.dtype.name)

    @property
    def shape(self):
        return self._parent.shape

    @property
    def ndim(self):
        return self._parent.ndim

    @property
    def size(self):
        return self._parent.size

    @property
    def dtype(self):
        dtype = self._parent.dtype
        return _DT[_COMPLEX_PARTS[dtype.name]] if dtype.kind == "c" else dtype

    def _settled(self, limit=None):
        return self._parent._settled(limit)

    def _settled_host(self):
        return getattr(self._parent._settled_host(), self._part)

    def __getitem__(self, key):
        # (an element's part is a NumPy scalar's, as NumPy gives)
        return getattr(self._parent[key], self._part)

    def __setitem__(self, key, value):
        parent = self._parent
        if parent.dtype.kind != "c":
            raise ValueError("assignment destination is read-only")
        old = parent[key]
        if isinstance(old, ndarray):
            parent[key] = _ufuncs._with_part(old, self._part, value)
            return
        # One element: its new part converted as NumPy converts a value written into it.
        new = _scalar_for(value, self.dtype.name) if _is_scalar(value) \
            else _np.asarray(_eager._to_numpy(value), self.dtype).item()
        parent[key] = complex(new, old.imag) if self._part == "real" else complex(old.real, new)


def _through_parent(name):
    """``_PartView``'s method ``name`` (a view of the array): the same part of the parent's
    view, so that writes through it reach the parent."""
    return _method(name, lambda self, *args, **kwargs:
                   getattr(getattr(self._parent, name)(*args, **kwargs), self._part))


for _name in ("reshape", "ravel", "transpose", "swapaxes", "diagonal", "squeeze"):
    setattr(_PartView, _name, _through_parent(_name))


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


# The modules above this one, which import its names: imported last, as modules, their
# functions looked up when called.
from . import _eager, _interop, _creation, _ufuncs, _selection, _indexing  # noqa: E402
from . import _reductions, _statistics, _sorting, _io  # noqa: E402
