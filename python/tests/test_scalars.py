"""Python scalars meeting diffuse arrays follow NumPy 2 (NEP 50), for every operator and
function that takes one and every dtype diffuse holds: the same result dtype and values as
NumPy, or the same kind of exception. A Python integer beyond the array's dtype is never
wrapped: ``int32 < 2**40`` is True, and ``int32 + 2**40``, ``full``/``fill`` and
``a[0] = 2**40`` raise OverflowError."""

import math
import operator
import os
import sys
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffuse.numpy as dnp

sys.path.insert(0, os.path.dirname(__file__))
from _results import compare_each  # noqa: E402

# Values are compared here; floating-point warnings (NumPy's and diffuse's, reported when
# work runs) and the fallbacks' notices are not what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = ["float64", "float32", "int64", "int32", "bool"]
BASE = {"bool": [True, False, True, True]}
BASE.update({d: [1, 0, -5, 7] for d in DTYPES if d != "bool"})
MASK = [True, False, True, False]

# The values the issue names, the edges of every dtype, and ordinary ones.
SPECIAL = [
    2**31, 2**31 - 1, -(2**31), -(2**31) - 1, 2**40, -(2**40), 2**63, 2**63 - 1, -(2**63),
    -(2**63) - 1, 2**64, 2**1100, 1e300, -1e300, 3e38, 3.5e38, 3e9, math.nan, math.inf,
    -math.inf, -0.0, 0.0, 0, 1, -1, 2, 3, 0.5, -2.5, True, False,
]
SCALARS = st.one_of(
    st.sampled_from(SPECIAL),
    st.integers(-(2**66), 2**66),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)


def _binary(name, reflected):
    def f(xp, a, v):
        return getattr(xp, name)(v, a) if reflected else getattr(xp, name)(a, v)
    return f


def _operator(op, reflected):
    return lambda xp, a, v: op(v, a) if reflected else op(a, v)


def _setitem(key):
    def f(xp, a, v):
        a[key] = v
        return a
    return f


def _fill(xp, a, v):
    a.fill(v)
    return a


BINARY = [
    "add", "subtract", "multiply", "true_divide", "divide", "power", "maximum", "minimum",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "floor_divide", "remainder", "mod", "bitwise_and", "bitwise_or",
    "bitwise_xor", "left_shift", "right_shift", "arctan2", "divmod",
]
OPERATORS = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.and_, operator.or_, operator.xor, operator.lshift,
    operator.rshift, operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
    operator.ne, divmod,
]
INPLACE = [
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift,
]

CASES = {}
for _name in BINARY:
    CASES[f"{_name}(a, v)"] = _binary(_name, False)
    CASES[f"{_name}(v, a)"] = _binary(_name, True)
for _op in OPERATORS:
    CASES[f"{_op.__name__}(a, v)"] = _operator(_op, False)
    CASES[f"{_op.__name__}(v, a)"] = _operator(_op, True)
for _op in INPLACE:
    CASES[f"{_op.__name__}(a, v)"] = _operator(_op, False)
CASES.update({
    "where(m, a, v)": lambda xp, a, v: xp.where(xp.array(MASK), a, v),
    "where(m, v, a)": lambda xp, a, v: xp.where(xp.array(MASK), v, a),
    "clip(a, v, None)": lambda xp, a, v: xp.clip(a, v, None),
    "clip(a, None, v)": lambda xp, a, v: xp.clip(a, None, v),
    "clip(a, -5, v)": lambda xp, a, v: xp.clip(a, -5, v),
    "full(4, v, dtype)": lambda xp, a, v: xp.full(4, v, dtype=a.dtype),
    "full(4, v)": lambda xp, a, v: xp.full(4, v),
    "full_like(a, v)": lambda xp, a, v: xp.full_like(a, v),
    "where(m, v, 3)": lambda xp, a, v: xp.where(xp.array(MASK), v, 3),
    "array(v, dtype)": lambda xp, a, v: xp.array(v, dtype=a.dtype),
    "asarray(v)": lambda xp, a, v: xp.asarray(v),
    "arange(v, v + 2, dtype)": lambda xp, a, v: xp.arange(v, v + 2, dtype=a.dtype),
    "allclose(a, v)": lambda xp, a, v: xp.allclose(a, v),
    "linspace(-3, v, 5, dtype)": lambda xp, a, v: xp.linspace(-3, v, 5, dtype=a.dtype),
    "a.fill(v)": _fill,
    "a[0] = v": _setitem(0),
    "a[...] = v": _setitem(Ellipsis),
    "a[1:3] = v": _setitem(slice(1, 3)),
    "a[::2] = v": _setitem(slice(None, None, 2)),
    "a[[0, 2]] = v": _setitem([0, 2]),
})

# The kinds of exception compared (NumPy's UFuncTypeError is a TypeError, ...).
KINDS = (OverflowError, ZeroDivisionError, ValueError, TypeError)


def _kind(error):
    return next((k for k in KINDS if isinstance(error, k)), type(error))


def _run(xp, case, dtype, value):
    a = xp.array(BASE[dtype], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return CASES[case](xp, a, value)
        except Exception as e:  # noqa: BLE001 (the exception is the outcome compared)
            return e


def _expected(case, dtype, value):
    """NumPy's outcome, except where NumPy is silently wrong or gives what diffuse cannot
    hold: ``where`` wraps a Python integer beyond the integer dtype of its result
    (``where(m, int32, 2**40)`` stores 0), which diffuse refuses with OverflowError as
    NumPy's other functions do. (What diffuse cannot hold, integers beyond int64 in
    NumPy's object or uint64 arrays, may also be refused: see ``_same``.)"""
    if case.startswith("linspace") and type(value) is int and not -(2**63) <= value < 2**63:
        # NumPy's linspace fails on such an integer (object arithmetic); diffuse takes it
        # as the float NumPy makes of every other bound (or fails to: OverflowError).
        if abs(value) > sys.float_info.max:
            return OverflowError()
        value = float(value)
    want = _run(onp, case, dtype, value)
    if case.startswith("where") and type(value) is int and isinstance(want, onp.ndarray) \
            and want.dtype.kind == "i":
        info = onp.iinfo(want.dtype)
        if not info.min <= value <= info.max:
            return OverflowError()
    return want


def _same(got, want, context):
    if isinstance(want, BaseException):
        assert isinstance(got, BaseException), f"{context}: NumPy raises {want!r}, diffuse gives {got!r}"
        assert _kind(got) is _kind(want), f"{context}: NumPy raises {want!r}, diffuse {got!r}"
        return
    if isinstance(got, BaseException):
        if isinstance(want, onp.ndarray) and want.dtype in (object, onp.uint64) \
                and isinstance(got, (TypeError, OverflowError)):
            return  # integers beyond int64, diffuse's widest: refused (never wrapped)
        raise AssertionError(f"{context}: NumPy gives {want!r}, diffuse raises {got!r}") from got
    if compare_each(got, want, context, _same):
        return
    w, g = onp.asarray(want), onp.asarray(got)
    if w.dtype.name in DTYPES:
        assert g.dtype == w.dtype, f"{context}: dtype {g.dtype}, NumPy's {w.dtype}"
    else:  # NumPy's int8 or float16 (bool ** bool, arctan2 of bools): not diffuse's
        g = g.astype(w.dtype)
    assert g.shape == w.shape, f"{context}: shape {g.shape}, NumPy's {w.shape}"
    if w.dtype.kind == "f":
        rtol = 1e-12 if w.dtype == onp.float64 else 1e-6
        onp.testing.assert_allclose(g, w, rtol=rtol, equal_nan=True, err_msg=context)
        # -0.0 is not 0.0 (except from maximum, minimum and clip, whose sign of a zero
        # NumPy leaves to its vector loops)
        if not any(f in context for f in ("maximum", "minimum", "clip")):
            zeros = w == 0
            assert (onp.signbit(g[zeros]) == onp.signbit(w[zeros])).all(), f"{context}: {g}, {w}"
    else:
        assert g.tolist() == w.tolist(), f"{context}: {g.tolist()}, NumPy's {w.tolist()}"


def _check(case, dtype, value):
    _same(_run(dnp, case, dtype, value), _expected(case, dtype, value),
          f"{case} with a {dtype} and v = {value!r}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_dtype_and_named_value_as_numpy(case):
    for dtype in DTYPES:
        for value in SPECIAL:
            _check(case, dtype, value)


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(DTYPES), value=SCALARS)
def test_drawn_scalars_as_numpy(case, dtype, value):
    _check(case, dtype, value)


def test_python_ints_beyond_int32_compare_exactly_and_raise_on_store():
    a = dnp.array([1], dtype=dnp.int32)
    assert (a < 2**40).tolist() == [True]
    assert (a != 2**40).tolist() == [True]
    assert (2**40 < a).tolist() == [False]
    for make in (lambda: a + 2**40, lambda: dnp.full(2, 2**40, dtype=dnp.int32),
                 lambda: a.fill(2**40), lambda: a.__setitem__(0, 2**40)):
        with pytest.raises(OverflowError, match="out of bounds for int32"):
            make()
    assert a.tolist() == [1]
    assert dnp.clip(a, 0, 2**40).tolist() == [1]


def test_float32_overflow_warns_as_numpy():
    a = dnp.zeros(2, dtype=dnp.float32)
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        b = a + 1e300
    assert onp.isinf(onp.asarray(b)).all() and b.dtype == onp.float32


# Floats an integer dtype cannot hold, and ordinary ones, for casts.
CAST_VALUES = [math.nan, math.inf, -math.inf, 1e300, -1e300, 3e9, -3e9, 2.0**31, -(2.0**31),
               2.0**31 - 0.5, -(2.0**31) - 0.5, 2.0**63, -(2.0**63), 1e19, 2.5, -2.5, -0.0, 0.0,
               7.0]


def _cast_outcome(xp, values, source, target, how):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            a = xp.array(onp.array(values, dtype=source))
            if how == "astype":
                return a.astype(target)
            if how == "array":
                return xp.array(a, dtype=target)
            b = xp.zeros(len(values), dtype=target)
            b[...] = a
            return b
        except Exception as e:  # noqa: BLE001 (the outcome compared)
            return e


@pytest.mark.parametrize("how", ["astype", "array", "setitem"])
@pytest.mark.parametrize("source", ["float64", "float32"])
@pytest.mark.parametrize("target", ["int64", "int32", "bool"])
def test_float_to_integer_casts_as_numpy(how, source, target):
    """NaN, infinities and floats beyond an integer dtype cast as NumPy casts them (the
    dtype's minimum on x86-64), not saturated."""
    want = _cast_outcome(onp, CAST_VALUES, source, target, how)
    got = _cast_outcome(dnp, CAST_VALUES, source, target, how)
    _same(got, want, f"{how} {source} -> {target}")


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=8),
       source=st.sampled_from(["float64", "float32"]),
       target=st.sampled_from(["int64", "int32", "bool"]))
def test_drawn_float_casts_as_numpy(values, source, target):
    _same(_cast_outcome(dnp, values, source, target, "astype"),
          _cast_outcome(onp, values, source, target, "astype"), f"{values} {source} -> {target}")


def test_python_floats_into_integer_arrays_as_numpy():
    """From a list (NumPy's own conversion) NaN is a ValueError, beyond the dtype an
    OverflowError; a lone Python float truncates as NumPy's setitem does."""
    for value, error in ((math.nan, ValueError), (math.inf, OverflowError),
                         (1e300, OverflowError), (3e9, OverflowError)):
        with pytest.raises(error):
            onp.array([value], dtype=onp.int32)
        with pytest.raises(error):
            dnp.array([value], dtype=dnp.int32)


def test_the_native_module_never_wraps_a_scalar():
    """Below diffuse.numpy, the native module refuses an int32 scalar it would wrap."""
    from diffuse import _native

    with pytest.raises(OverflowError, match="out of bounds for int32"):
        _native.full_([2], 2**40, "int32")
    assert dnp.ndarray(_native.full_([2], -(2**31), "int32")).tolist() == [-(2**31)] * 2
