"""Small arrays held and computed by NumPy as they are issued (``_Eager``, at most
``_state.eager_limit`` elements), and where they meet deferred arrays: the operation is
deferred, and reads a copy of the eager array's current elements.
"""

import builtins
import math
import operator
import sys

import numpy as _np

from . import _native, _state
from ._dtypes import _DT, _dtype_name, _scalar_for
from ._ndarray import ndarray, _StridedView


_EAGER_DTYPES = frozenset(_DT.values())


def _eager_shape(shape):
    """True when a new array of ``shape`` is small enough to be held by NumPy."""
    return _state.eager_limit > 0 and math.prod(shape) <= _state.eager_limit


# Looked up once, for the eager hot paths (`_Eager(r)` without a call of `__init__` is
# `_new_object(_Eager)` with `_h` set).
_new_object = object.__new__
_host_array = _np.ndarray
_float64 = _np.float64


class _HostHeld:
    """What an array NumPy holds (its elements ``_h``, a NumPy array) does: its operations
    run on NumPy as they are issued; where it meets a deferred array, the operation is
    deferred and reads a copy of its current elements (``_a``). The arrays are ``_Eager``
    and ``_EagerView``."""

    __slots__ = ()

    @property
    def _a(self):
        # A fresh native copy per use (NumPy views may have written the elements since).
        h = self._h
        return _native.from_bytes(h.tobytes(), list(h.shape), _dtype_name(h.dtype))

    def __len__(self):
        return len(self._h)

    def __array__(self, dtype=None, copy=None):
        if _state.recording:
            _native.refuse_replay("it reads a small array NumPy holds")
        if dtype is None and not copy:
            return self._h
        return _np.array(self._h, dtype=dtype, copy=copy)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            r = _ufunc_on_numpy(ufunc, inputs)
            if r is not None:
                return r
        if _only_eager(inputs, kwargs):
            return _eager_call(getattr(ufunc, method), inputs, kwargs)
        return ndarray.__array_ufunc__(self, ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if _only_eager(args, kwargs):
            return _eager_call(func, args, kwargs)
        return ndarray.__array_function__(self, func, types, args, kwargs)

    def __getitem__(self, key):
        # (The hot path of loops: `_host_key`, `_held` and `_eager_wrap` inlined for the
        # common keys and results.)
        h = self._h
        try:
            r = h[key]  # (ints, slices, and diffuse arrays NumPy reads through `__array__`)
        except (IndexError, TypeError, ValueError):
            r = h[_host_key(key)]  # (the error NumPy gives, or keys in lists)
        if type(r) is not _host_array:  # (a NumPy scalar)
            return _eager_wrap(r) if _state.recording else r
        size = r.size
        b = h.base
        if size <= _state.eager_limit or size <= (b.size if type(b) is _host_array else h.size) \
                and not _state.recording:
            # (small, or no larger than the array NumPy holds: a view of it stays a view; a
            # dtype diffuse holds)
            e = _new_object(_Eager)
            e._h = r
            return e
        return _eager_wrap(r)

    def __setitem__(self, key, value):
        if _state.recording:
            _native.refuse_replay("it writes a small array NumPy holds")
        t = type(value)
        if t is _Eager:
            value = value._h
        elif t is not float and t is not int and t is not _float64:
            value = _to_numpy(value)
        try:
            self._h[key] = value
        except (IndexError, TypeError, ValueError):
            self._h[_host_key(key)] = value

    def __iter__(self):
        return map(_eager_wrap, self._h)

    def __repr__(self):
        return repr(self._h)

    def __str__(self):
        return str(self._h)

    def __float__(self):
        return float(self._h)

    def __complex__(self):
        return complex(self._h)

    # NumPy's views of the parts, writing through to its elements as NumPy's do.
    @property
    def real(self):
        return _eager_wrap(self._h.real, _held(self._h))

    @real.setter
    def real(self, value):
        self._h.real = _to_numpy(value)

    @property
    def imag(self):
        return _eager_wrap(self._h.imag, _held(self._h))

    @imag.setter
    def imag(self, value):
        self._h.imag = _to_numpy(value)

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
        return _eager_wrap(self._h.astype(dtype, copy=copy), _held(self._h))

    def fill(self, value):
        self._h.fill(_to_numpy(value))

    def _holds_its_elements(self):
        return True

    def _host_copy(self):
        return self._h.copy()

    def _settled(self, limit=None):
        # (NumPy's elements: reading them costs nothing and waits for nothing)
        return not _state.recording

    def _settled_host(self):
        return self._h

    # (A strided view's own description would name the store an `_EagerView` left.)
    _as_strided = ndarray._as_strided


class _Eager(_HostHeld, ndarray):
    """A small array held by NumPy (at most ``_eager_limit`` elements), or one a loop moved
    there (``ndarray._move_to_numpy``): its operations run on NumPy as they are issued,
    because deferring them would cost more than running them (cuPyNumeric's eager arrays).
    Views of it are NumPy's views, so writes through them reach it as in NumPy. Results of
    deferred operations stay deferred."""

    __slots__ = ()

    def __init__(self, host):
        self._h = host


class _EagerView(_HostHeld, _StridedView):
    """A strided view that was alive when its array moved to NumPy: NumPy's view of the
    array's elements, as views taken after the move are (a ``_StridedView`` takes this class
    in place, ``_follow_to_numpy``). The eager fast paths test for ``_Eager`` by type and
    take it as a computed array on the host (``_settled``)."""

    __slots__ = ()


def _follow_to_numpy(view, host):
    """Makes the strided ``view`` of an array whose elements NumPy now holds (``host``,
    C-ordered like the store it viewed) NumPy's view of them (``_EagerView``)."""
    item = host.itemsize
    h = _np.ndarray(view._vshape, host.dtype, buffer=host, offset=view._offset * item,
                    strides=[s * item for s in view._strides])
    view._store = view._box = view._values = view._peers = None
    view.__class__ = _EagerView
    view._h = h


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
    elif type(owner) is _native.HostMemory:  # (a store's buffer handed over: `h`'s alone)
        shared = sys.getrefcount(h) > 3 or sys.getrefcount(owner) > 3
    else:
        shared = (type(owner) is not _np.ndarray or owner.base is not None
                  or sys.getrefcount(h) > 3 or sys.getrefcount(owner) > 3)
    if shared or _dtype_name(h.dtype) is None:
        return False
    native = x._a
    ndarray._h.__delete__(x)
    x.__class__ = ndarray
    ndarray._a.__set__(x, native)
    ndarray._n.__set__(x, None)
    return True


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
            return _eager_wrap(on_numpy(self._h), _held(self._h))
        if _only_eager((self,) + args, kwargs):
            return _eager_call(on_numpy, (self,) + args, kwargs)
        # A deferred argument (a value, or out=): NumPy's method on host copies, what it
        # writes written back, views of this array's elements kept views.
        return _interop._on_host(on_numpy, self, *args, **kwargs)
    method.__name__ = name
    return method


def _eager_operator(name, numpy_op):
    """``_Eager``'s operator ``name``: ``numpy_op`` on NumPy's elements, or diffuse's
    operator when the other operand is a deferred array. (The hot path of small programs:
    ``_eager_wrap`` is inlined.)"""
    deferred = getattr(ndarray, name)

    def method(self, other):
        t = type(other)
        h = self._h
        if t is _Eager:
            other = other._h
        elif t is not float and t is not int:
            if isinstance(other, ndarray):
                if other._settled():  # small and computed: NumPy's, no copy into a store
                    return _eager_wrap(numpy_op(h, other._settled_host()), _held(h))
                return deferred(self if h.ndim == 0 else ndarray(self._a), other)
            return _eager_wrap(numpy_op(h, other), _held(h))
        # Eager arrays and Python scalars give NumPy results of dtypes diffuse holds.
        r = numpy_op(h, other)
        tr = type(r)
        if tr is _host_array:
            if r.size <= _state.eager_limit or r.size <= _held(h) \
                    or t is _Eager and r.size <= _held(other):
                e = _new_object(_Eager)
                e._h = r
                return e
        elif tr is not tuple and not _state.recording:
            return r  # (a NumPy scalar)
        return _eager_wrap(r)
    method.__name__ = name
    return method


def _eager_inplace(name, numpy_op):
    """``_Eager``'s in-place operator ``name``: NumPy's, on its elements."""
    def method(self, other):
        if _state.recording:
            _native.refuse_replay("it writes a small array NumPy holds")
        numpy_op(self._h, _to_numpy(other))
        return self
    method.__name__ = name
    return method


def _eager_unary(numpy_op):
    """``_Eager``'s unary operator: ``numpy_op`` on its elements."""
    return lambda self: _eager_wrap(numpy_op(self._h), _held(self._h))


def _reflected(numpy_op):
    return lambda a, b: numpy_op(b, a)


for _name in ("reshape", "ravel", "flatten", "transpose", "swapaxes", "diagonal", "squeeze",
              "sum", "prod", "mean", "cumsum", "cumprod", "nonzero", "argmax", "argmin",
              "min", "max", "dot", "any", "all", "conj", "conjugate"):
    setattr(_HostHeld, _name, _eager_method(_name))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
              "lshift", "rshift", "matmul"):
    _fn = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(_HostHeld, f"__{_name}__", _eager_operator(f"__{_name}__", _fn))
    setattr(_HostHeld, f"__r{_name}__", _eager_operator(f"__r{_name}__", _reflected(_fn)))
    if _name != "matmul":
        setattr(_HostHeld, f"__i{_name}__",
                _eager_inplace(f"__i{_name}__", getattr(operator, f"i{_name}")))
for _name in ("lt", "le", "gt", "ge", "eq", "ne", "divmod"):
    _fn = divmod if _name == "divmod" else getattr(operator, _name)
    setattr(_HostHeld, f"__{_name}__", _eager_operator(f"__{_name}__", _fn))
setattr(_HostHeld, "__rdivmod__", _eager_operator("__rdivmod__", _reflected(divmod)))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(_HostHeld, f"__{_name}__", _eager_unary(getattr(operator, _name)))
_HostHeld.T = property(lambda self: _Eager(self._h.T))
# The description is NumPy's array's.
for _name in ("shape", "ndim", "size", "dtype"):
    setattr(_HostHeld, _name, property(operator.attrgetter(f"_h.{_name}")))


def _held(h):
    """The number of elements of the NumPy array holding ``h``'s memory (``h`` itself, or
    the array it is a view of): results no larger stay NumPy's (``_eager_wrap``). 0 while
    ``diffuse.trace`` records, where every result on NumPy refuses the replay."""
    if _state.recording:
        return 0
    b = h.base
    return b.size if type(b) is _host_array else h.size


def _eager_wrap(x, held=0):
    """A NumPy result of an eager operation as diffuse returns it: an array of a dtype
    diffuse holds as an eager array when small (at most the eager limit, or ``held``
    elements: the largest array NumPy held among the operands, which a loop moved there)
    (sharing NumPy's memory: views stay views), else as a deferred copy; other arrays and
    scalars as NumPy gave them; tuples and lists element by element."""
    if _state.recording:
        _native.refuse_replay("it computes on a small array NumPy holds")
    t = type(x)
    if t is _np.ndarray:
        if x.dtype in _EAGER_DTYPES and x.size <= builtins.max(_state.eager_limit, held):
            return _Eager(x)
        return _creation.asarray(x) if _dtype_name(x.dtype) is not None else x
    if t is tuple or t is list:
        return t(_eager_wrap(v, held) for v in x)
    return x


def _ufunc_on_numpy(ufunc, inputs):
    """NumPy's ``ufunc(*inputs)`` when the inputs are eager arrays (one at least), NumPy
    arrays and scalars, its result as ``_eager_wrap`` gives it, or when they are scalars
    only (NumPy's scalar, as NumPy gives it): the common calls (``a * x`` with a NumPy
    scalar ``a``, ``np.minimum(x, y)``, ``np.sqrt(s)``) without the general path's scans of
    lists, tuples and keywords. None for any other input."""
    hosts = []
    held = -1  # (no eager input yet)
    arrays = False
    for a in inputs:
        t = type(a)
        if t is _Eager or t is _EagerView:
            h = a._h
            n = _held(h)
            held = n if n > held else held
            hosts.append(h)
        elif t is float or t is int or t is bool or isinstance(a, _np.generic):
            hosts.append(a)
        elif t is _host_array:
            arrays = True
            hosts.append(a)
        else:
            return None
    if held < 0:
        return None if arrays else ufunc(*hosts)
    r = ufunc(*hosts)
    if type(r) is _host_array and r.dtype in _EAGER_DTYPES \
            and (r.size <= _state.eager_limit or r.size <= held):
        e = _new_object(_Eager)
        e._h = r
        return e
    return _eager_wrap(r, held)


def _on_host_if_settled(func, args, limit=None):
    """``func(*args)`` on NumPy when every diffuse array among ``args`` is held by NumPy
    (eager) or small and computed (``_settled_host``; at most ``limit`` elements when
    given, else the eager limit), the others being NumPy arrays or scalars: reading the
    deferred ones costs a copy and no wait, where deferring the operation would cost a
    task and a copy of each eager argument into a store. None otherwise."""
    for a in args:
        t = type(a)
        if t is _Eager or t is float or t is int or t is bool or t is _host_array \
                or isinstance(a, _np.generic):
            continue
        if not isinstance(a, ndarray) or not a._settled(limit):
            return None
    hosts = [a._h if type(a) is _Eager else a._settled_host() if isinstance(a, ndarray)
             else a for a in args]
    return _eager_wrap(func(*hosts))


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
    if t is _Eager or t is _EagerView:
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
        if t is _Eager or t is _EagerView:
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
        given.extend(e for e in (a if type(a) is tuple else (a,))
                     if isinstance(e, _HostHeld))
    if not given:
        return _eager_wrap(result)
    held = builtins.max(_held(e._h) for e in given)

    def back(r):
        for e in given:
            if r is e._h:
                return e
        return _eager_wrap(r, held)
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
    if t is _Eager or t is _EagerView:
        return x._h
    if t is list or t is tuple:
        if builtins.any(isinstance(v, (ndarray, list, tuple)) for v in x):
            return t(_to_numpy(v) for v in x)
        return x
    if isinstance(x, ndarray):
        return _np.asarray(x)
    return x


# The modules above this one, which import its names: imported last, as modules, their
# functions looked up when called.
from . import _interop, _creation  # noqa: E402
