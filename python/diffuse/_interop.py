"""diffuse arrays in NumPy's world: the fallback that runs NumPy's functions on host copies and
writes back what they change, NumPy's ufunc and array-function protocols (``_Ufunc``,
``_numpy_compatible``), and ``_wrap_numpy_names``, which gives each module's native
functions NumPy's whole interface.
"""

import builtins
import functools
import inspect

import numpy as _np

from . import _layout
from ._warnings import warn_at_caller
from ._dtypes import _dtype_name
from ._ndarray import _make_view, _PartView, ndarray
from ._eager import (_deferred_copies, _Eager, _eager_call, _eager_scan, _on_host_if_settled,
                     _only_eager, _ufunc_on_numpy)


_warned = set()


def _warn_fallback(name):
    if name not in _warned:
        _warned.add(name)
        warn_at_caller(
            f"diffuse.numpy: {name} is not native to diffuse; it runs on NumPy "
            "(the arrays are copied to NumPy and back)")


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
            return _creation.asarray(x) if _dtype_name(x.dtype) is not None else x
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
    ``copy`` without carrying into the next (then the result stays a copy). Of a part of
    a complex array (``a.real``), the same part of the same view of the array."""
    if type(array) is _PartView:
        view = _view_in_store(array._parent, copy, x)
        return None if view is None else getattr(view, array._part)
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
        elif type(x) in (bool, int, float, complex):
            given = _np.dtype(type(x))  # Python scalars stay weak (NEP 50): kinds only
        else:
            return None
        if not _np.can_cast(given, dtype, casting="same_kind"):
            which = f"input {k}" if ufunc.nin > 1 else "input"
            raise TypeError(
                f"Cannot cast ufunc '{ufunc.__name__}' {which} from dtype('{given}') to "
                f"dtype('{dtype}') with casting rule 'same_kind'")
        if isinstance(x, (ndarray, _np.ndarray, _np.generic)) and given != dtype:
            x = _creation.asarray(x).astype(dtype)
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
                _layout.broadcast_shapes(_np.shape(where), first.shape)
            return result
        results = result if isinstance(result, tuple) else (result,)
        for o, r in zip(outs, results):
            _store_output(o, r, ufunc.__name__, where)
        return outs if len(outs) > 1 else outs[0]
    if method in _UFUNC_METHODS and ufunc.__name__ in _UFUNCS:
        result = _UFUNC_METHODS[method](ufunc, inputs, kwargs)
        if result is not NotImplemented:
            return result
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    return _fallback(name, getattr(ufunc, method), *inputs, **kwargs)


# The reductions that are a binary ufunc's ``reduce``, by the ufunc's name.
_UFUNC_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "amax", "minimum": "amin",
                     "logical_and": "all", "logical_or": "any"}


def _ufunc_reduce(ufunc, inputs, kwargs):
    """``ufunc.reduce(a, axis=0, keepdims=...)`` as diffuse's reduction of the same (its
    dtypes are NumPy's ``reduce``'s); NotImplemented for other ufuncs and keywords."""
    function = _UFUNC_REDUCTIONS.get(ufunc.__name__)
    if function is None or len(inputs) != 1 or not kwargs.keys() <= {"axis", "keepdims"}:
        return NotImplemented
    return getattr(_reductions, function)(inputs[0], axis=kwargs.get("axis", 0),
                                          keepdims=kwargs.get("keepdims", False))


def _ufunc_outer(ufunc, inputs, kwargs):
    """``ufunc.outer(a, b)``: the ufunc of ``a`` with unit axes for ``b``'s, and ``b``
    (``result[i..., j...] = ufunc(a[i...], b[j...])``); NotImplemented with keywords."""
    if len(inputs) != 2 or kwargs or ufunc.nin != 2:
        return NotImplemented
    a, b = (_creation.asarray(x) for x in inputs)
    return _UFUNCS[ufunc.__name__](a.reshape(a.shape + (1,) * b.ndim), b)


# A ufunc's methods diffuse runs natively, by name.
_UFUNC_METHODS = {"reduce": _ufunc_reduce, "outer": _ufunc_outer}


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
    result = _creation.asarray(result)
    if result.dtype != out.dtype:
        _check_output_cast(result.dtype, out.dtype, op)
        result = result.astype(out.dtype)
    shape = result.shape if where is True \
        else _layout.broadcast_shapes(result.shape, _np.shape(where))
    if _np.broadcast_shapes(shape, out.shape) != out.shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {out.shape} doesn't match the "
            f"broadcast shape {shape}"
        )
    if where is not True:
        _indexing.copyto(out, result, where=where)
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
        if not kwargs and len(inputs) == nin:
            r = _ufunc_on_numpy(self._ufunc, inputs)  # eager inputs: NumPy's, directly
            if r is not None:
                return r
        if len(inputs) > nin:  # outputs given by position, as NumPy takes them
            if "out" in kwargs:
                raise TypeError("cannot specify 'out' as both a positional and keyword "
                                "argument")
            inputs, kwargs = inputs[:nin], dict(kwargs, out=inputs[nin:])
        mix = _eager_scan(kwargs.values(), _eager_scan(inputs, 0))
        if mix == 1:
            return _eager_call(self._ufunc, inputs, kwargs)
        if mix == 2:
            if not kwargs:
                # Small computed arrays meeting eager ones: on NumPy, nothing copied in.
                host = _on_host_if_settled(self._ufunc, inputs)
                if host is not None:
                    return host
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
        if name in _UFUNC_METHODS:
            return functools.partial(self._method, name)

        def method(*args, **kwargs):
            return _ufunc(self._ufunc, name, args, kwargs)
        return method

    def _method(self, name, *args, **kwargs):
        """The ufunc's method ``name`` (``reduce``, ``outer``): NumPy's for eager arrays,
        else diffuse's where it has one (``_UFUNC_METHODS``), else NumPy's on host copies."""
        if _only_eager(args, kwargs):
            return _eager_call(getattr(self._ufunc, name), args, kwargs)
        return _ufunc(self._ufunc, name, args, kwargs)

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


def _wrap_numpy_names(namespace, names):
    """Makes the functions ``names`` of a module's ``namespace`` take NumPy's whole
    interface: ufuncs as ``_Ufunc``, functions NumPy dispatches through
    ``_numpy_compatible``. Each module calls it on its own ``NATIVE`` functions as soon as
    they are defined, so that the module itself and every module importing them call the
    wrapped functions."""
    for name in sorted(names):
        numpy_attr = getattr(_np, name, None)
        impl = namespace[name]
        if isinstance(numpy_attr, _np.ufunc):
            _UFUNCS.setdefault(numpy_attr.__name__, impl)
            namespace[name] = _Ufunc(impl, numpy_attr)
        elif hasattr(numpy_attr, "_implementation"):
            namespace[name] = _FUNCTIONS[numpy_attr] = _numpy_compatible(impl, numpy_attr)


# The modules above this one, which import its names: imported last, as modules, their
# functions looked up when called.
from . import _creation, _indexing, _reductions  # noqa: E402
