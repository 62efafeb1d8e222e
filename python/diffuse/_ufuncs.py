"""Element-wise math: the ufuncs diffuse runs natively, with NumPy's promotion (NEP 50
scalars) and its errors, ``where``, ``clip``, ``round`` and ``select``, and complex numbers'
parts (``real``, ``imag``, ``angle``, ``iscomplex``, ...).
"""

import builtins

import numpy as _np

from . import _layout, _native, _state
from ._dtypes import _COMPLEX_PARTS, _DT, _dtype_name, _INT_RANGE, _is_scalar, _scalar_for
from ._ndarray import ndarray
from ._eager import _Eager, _on_host_if_settled
from ._interop import _fallback, _wrap_numpy_names
from ._creation import asarray, full


_UNARY = {
    "negative": "negative", "absolute": "absolute", "abs": "absolute", "exp": "exp",
    "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tanh": "tanh",
    "logical_not": "logical_not", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "rint": "rint", "tan": "tan", "arcsin": "arcsin", "arccos": "arccos", "arctan": "arctan",
    "sinh": "sinh", "cosh": "cosh", "log2": "log2", "log10": "log10", "log1p": "log1p",
    "expm1": "expm1", "sign": "sign", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite", "invert": "invert", "bitwise_not": "invert",
    "conjugate": "conjugate", "conj": "conjugate",
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
# Of complex numbers, fewer: a product's fused multiply-adds round differently with its
# operands swapped, and ``maximum``/``minimum`` of two NaNs return the first.
_COMMUTATIVE_COMPLEX = {"add", "equal", "not_equal"}
# Binary operations computed in float64 for integer and bool operands, as NumPy does.
_FLOAT_BINARY = {"true_divide", "arctan2"}
_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}
# Logical operations, computed on the truth of complex numbers (z != 0), as NumPy does.
_LOGICAL = {"logical_and", "logical_or", "logical_not"}
# The operations NumPy has no loop of complex numbers for (floor, remainder, bitwise, ...):
# NumPy's TypeError for complex operands, from its own tables.
_NO_COMPLEX_LOOP = frozenset(
    op for op in (*_UNARY.values(), *_BINARY)
    if not builtins.any(t.split("->")[0] == "D" * getattr(_np, op).nin
                        for t in getattr(_np, op).types))


def _refuse_as_numpy(op, *operands):
    """Raises NumPy's exception for the ufunc ``op`` of operands of these dtypes (a
    one-element stand-in of each diffuse array, scalars as they are), where NumPy has no
    loop for them (``floor`` of complex numbers)."""
    stand_ins = [_np.zeros(1, x.dtype) if isinstance(x, ndarray) else x for x in operands]
    with _np.errstate(all="ignore"):
        getattr(_np, op)(*stand_ins)


def _loop_dtype(op, dtype, operands):
    """The dtype the operation ``op`` of ``operands`` (promoted to ``dtype``) computes in,
    as NumPy's loops do: float64 for divisions and ``arctan2`` of integers and booleans, bool
    for logical operations of complex numbers; NumPy's TypeError for an operation it has no
    complex loop for."""
    if op in _FLOAT_BINARY and dtype.kind not in "fc":
        return _np.dtype(_np.float64)
    if dtype.kind == "c":
        if op in _NO_COMPLEX_LOOP:
            _refuse_as_numpy(op, *operands)
        if op in _LOGICAL:
            return _np.dtype(_np.bool_)
    return dtype


def _binary(op, x, y, reflected=False, on_host=True):
    """``op(x, y)`` (``op(y, x)`` when reflected) with NumPy's promotion; ``on_host=False``
    keeps it deferred (an in-place operation, whose result is written back into ``x``)."""
    t = type(y)
    if on_host and (t is _Eager or t is float or t is int or isinstance(y, ndarray)) \
            and (type(x) is not ndarray or x._a.size <= _state.eager_limit):
        # Small computed arrays meeting each other or NumPy's operands: on NumPy (no task,
        # no copy of an operand into a store). A large deferred left operand keeps the
        # operation deferred without the check.
        ufunc = getattr(_np, op, None)
        host = None if ufunc is None else \
            _on_host_if_settled(ufunc, (y, x) if reflected else (x, y))
        if host is not None:
            return host
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
        _layout.broadcast_shapes(a.shape, b.shape)
        compute = _loop_dtype(op, _np.result_type(a.dtype, b.dtype), (a, b))
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
        dtype = _loop_dtype(op, dtype, (y, x) if reflected else (x, y))
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
            reflect = reflected and op not in (
                _COMMUTATIVE_COMPLEX if dtype.kind == "c" else _COMMUTATIVE)
            return ndarray(xx._a.binary_scalar(op, scalar, reflect))
        except TypeError:
            return _fallback(op, getattr(_np, op), *((y, x) if reflected else (x, y)))
    return NotImplemented


def divmod(x1, x2, /):  # noqa: A001 (NumPy's name)
    """NumPy's ``divmod``: ``(floor_divide(x1, x2), remainder(x1, x2))`` (NumPy's error
    naming ``divmod`` for operands it has no loop for)."""
    try:
        return floor_divide(x1, x2), remainder(x1, x2)  # noqa: F821 (defined below)
    except TypeError:
        _refuse_as_numpy("divmod", x1, x2)
        raise


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
    if kind == "i" and op in _INT_IDENTITY or kind in "if" and op == "conjugate":
        return x.copy()
    if kind in "ib" and op in _INT_CONSTANT:
        return full(x.shape, _INT_CONSTANT[op], dtype="bool")
    compute = x
    if op in _FLOAT_UNARY and kind not in "fc":
        compute = x.astype("float64")
    elif kind == "c" and _loop_dtype(op, x.dtype, (x,)) == _np.bool_:
        compute = x.astype("bool")
    try:
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


# -- complex numbers' parts (the ufuncs ``conjugate``, ``absolute``, ... are above) ----------
def real(val):
    """NumPy's ``real``: the real part, a view writing through to a complex array (see
    ``ndarray.real``)."""
    return val.real if isinstance(val, ndarray) else _np.real(val)


def imag(val):
    """NumPy's ``imag``: the imaginary part, a view writing through to a complex array;
    read-only zeros for a real one."""
    return val.imag if isinstance(val, ndarray) else _np.imag(val)


def angle(z, deg=False):
    """NumPy's ``angle``: the counterclockwise angle from the positive real axis, in radians
    (degrees with ``deg``), in the dtype of the parts (``arctan2(0, z)`` for real ``z``: float64
    for integers and booleans)."""
    if not isinstance(z, ndarray):
        return _np.angle(z, deg)
    a = ndarray(z._a.unary("angle")) if z.dtype.kind == "c" else arctan2(0, z)  # noqa: F821
    return multiply(a, 180 / _np.pi) if deg else a  # noqa: F821


def iscomplexobj(x):
    """NumPy's ``iscomplexobj``: whether ``x``'s dtype is complex (its elements unread)."""
    return x.dtype.kind == "c" if isinstance(x, ndarray) else _np.iscomplexobj(x)


def isrealobj(x):
    """NumPy's ``isrealobj``: whether ``x``'s dtype is not complex."""
    return not iscomplexobj(x)


def iscomplex(x):
    """NumPy's ``iscomplex``: true where the imaginary part is not zero."""
    if not isinstance(x, ndarray):
        return _np.iscomplex(x)
    if x.dtype.kind != "c":
        return full(x.shape, False, "bool")
    return not_equal(x.imag, 0)  # noqa: F821


def isreal(x):
    """NumPy's ``isreal``: true where the imaginary part is zero."""
    return equal(imag(x), 0)  # noqa: F821


def real_if_close(a, tol=100):
    """NumPy's ``real_if_close``: the real part of a complex ``a`` when every imaginary part
    is below ``tol`` (machine epsilons of the dtype when above 1), else ``a``; reads back
    whether they are."""
    a = asarray(a)
    if a.dtype.kind != "c":
        return a
    if tol > 1:
        tol = _np.finfo(a.dtype).eps * tol
    return a.real if bool(less(absolute(a.imag), tol).all()) else a  # noqa: F821


# The complex dtype of each dtype of parts.
_COMPLEX_OF_PARTS = {part: name for name, part in _COMPLEX_PARTS.items()}


def _complex(re, im):
    """``re + im * 1j`` with every part as given (signed zeros, infinities, NaNs, which
    ``im * 1j`` would not keep: ``inf * 0`` is NaN), for float arrays of one dtype broadcast
    together (float64 parts give complex128, float32 parts complex64). Natively: ``(re, -0)
    + (-0, im)`` keeps both exactly (``x + -0`` is ``x``), ``(-0, im)`` being, for finite
    ``im``, ``-conj((im, -0) * 1j)`` (exactly ``(+0, im)`` before the sign changes) and, for
    the others, a constant."""
    dtype = _DT[_COMPLEX_OF_PARTS[re.dtype.name]]
    finite = isfinite(im)  # noqa: F821
    turned = multiply(conjugate(where(finite, im, 0.0).astype(dtype.name)),  # noqa: F821
                      dtype.type(1j))
    special = where(isnan(im), dtype.type(complex(-0.0, _np.nan)),  # noqa: F821
                    where(greater(im, 0), dtype.type(complex(-0.0, _np.inf)),  # noqa: F821
                          dtype.type(complex(-0.0, -_np.inf))))
    second = where(finite, negative(conjugate(turned)), special)  # noqa: F821
    return add(conjugate(re.astype(dtype.name)), second)  # noqa: F821


def _with_part(z, part, value):
    """The complex array ``z`` with its ``part`` (``"real"`` or ``"imag"``) replaced by
    ``value``, converted and broadcast to ``z``'s shape as an assignment does (a complex
    value: NumPy's TypeError, or its ComplexWarning for an array)."""
    dtype = _COMPLEX_PARTS[z.dtype.name]
    if _is_scalar(value):
        new = full(z.shape, _scalar_for(value, dtype), dtype)
    else:
        new = asarray(value)
        if _layout.broadcast_or_none(new.shape, z.shape) != z.shape:
            raise ValueError(f"could not broadcast input array from shape {new.shape} into "
                             f"shape {z.shape}")
        new = new.astype(dtype, copy=False)
    return _complex(new, z.imag) if part == "real" else _complex(z.real, new)


def _where(condition, x, y):
    return where(condition, x, y)


def where(condition, x=None, y=None):
    """``x`` where ``condition`` holds, else ``y`` (broadcasting); with ``condition``
    alone, NumPy's ``nonzero(condition)``."""
    if x is None and y is None:
        return _selection.nonzero(condition)
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
    _layout.broadcast_shapes(c.shape, xs[0].shape, xs[1].shape)
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


def _power_of_ten(n):
    """``10 ** n`` as NumPy's rounding computes it (a table to 1e8, then times ten)."""
    if n < 9:
        return 10.0 ** n
    power = 1e9
    for _ in range(n - 9):
        power *= 10.0
    return power


def around(a, decimals=0):
    """NumPy's ``round``: to ``decimals`` decimals (tens, hundreds, ... when negative) as
    NumPy computes it, ``rint(a * 10**decimals) / 10**decimals``, halves to even (each part
    of a complex number); integers unchanged (a copy) for ``decimals >= 0``."""
    a = asarray(a)
    if a.dtype.kind in "iu" and decimals >= 0:
        return a.copy()
    if a.dtype.kind == "c":
        return _complex(around(a.real, decimals), around(a.imag, decimals))
    if a.dtype.kind != "f":
        return _fallback("round", _np.round, a, decimals=decimals)
    if decimals == 0:
        return rint(a)  # noqa: F821 (a ufunc this module defines from its table)
    scale = _power_of_ten(builtins.abs(decimals))
    if decimals > 0:
        return true_divide(rint(multiply(a, scale)), scale)  # noqa: F821
    return multiply(rint(true_divide(a, scale)), scale)  # noqa: F821


round = around  # noqa: A001 (NumPy's name)


def select(condlist, choicelist, default=0):
    """NumPy's ``select``: where the first true condition of ``condlist`` picks its choice,
    ``default`` where none is true, in the choices' and default's common dtype (NumPy's
    errors for lists of different lengths, none, and conditions that are not booleans)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    # (Python numbers stay weak in the common dtype, as NumPy keeps them: NEP 50)
    weak = (int, float, complex)
    choices = [c if type(c) in weak or isinstance(c, ndarray) else _np.asarray(c)
               for c in choicelist]
    try:
        dtype = _np.result_type(*[c.dtype if isinstance(c, ndarray) else c
                                  for c in (*choices, default if type(default) in weak
                                            else _np.asarray(default))])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") \
            from None
    name = _dtype_name(dtype)
    if name is None:
        return _fallback("select", _np.select, condlist, choicelist, default=default)
    conditions = [c if isinstance(c, ndarray) else _np.asarray(c) for c in condlist]
    for i, c in enumerate(conditions):
        if c.dtype != _np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    result = asarray(_np.asarray(default, dtype=dtype))
    for condition, choice in zip(reversed(conditions), reversed(choices)):
        result = where(condition, asarray(choice).astype(name), result)
    return result


#: The functions of ``NATIVE`` this module defines, given NumPy's whole interface here, before
#: any other module imports them.
NATIVE = (*_UNARY, *_BINARY, "divide", "mod", "divmod", "square", "real", "imag", "angle",
          "iscomplexobj", "isrealobj", "iscomplex", "isreal", "real_if_close", "where", "clip",
          "around", "round", "select")
_wrap_numpy_names(globals(), NATIVE)


# The modules above this one, which import its names: imported last, as modules, their
# functions looked up when called.
from . import _selection  # noqa: E402
