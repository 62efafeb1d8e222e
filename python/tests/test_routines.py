"""``round``/``around``, ``select``, the ufunc methods ``reduce`` and ``outer``,
``logspace``, ``indices`` and ``fromfunction`` against NumPy: native on deferred arrays (a
fallback warning fails these tests), NumPy's dtypes and shapes, NumPy's values (bit for bit
where diffuse computes them as NumPy does), and NumPy's exception where NumPy raises."""

import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp

DTYPES = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]


@st.composite
def _operands(draw, dtypes=DTYPES, scale=9, whole=False):
    """(a NumPy array, the same as a diffuse array or a view of one); whole numbers with
    ``whole`` (sums of them are exact in any order)."""
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    elements = st.booleans() if dtype == onp.bool_ else st.integers(-scale, scale).map(
        onp.dtype(dtype).type) if whole else hnp.from_dtype(
        onp.dtype(dtype), allow_nan=False, allow_infinity=False, min_value=-scale,
        max_value=scale)
    x = draw(hnp.arrays(dtype, shape, elements=elements))
    a = dnp.array(x)
    if draw(st.booleans()) and x.shape[0] > 1:
        a, x = a[1:], x[1:]
    return x, a


def _native(call):
    """``call()`` with a fallback warning as an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        return call()


def _check(got, want, exact=True):
    got = onp.asarray(got)
    want = onp.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if exact or want.dtype.kind != "f":
        onp.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-5 if want.dtype == onp.float32 else 1e-12
        onp.testing.assert_allclose(got, want, rtol=rtol, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_matches_numpy_bit_for_bit(data):
    x, a = data.draw(_operands(dtypes=[onp.float64, onp.float32, onp.int64, onp.int32],
                               scale=1000))
    decimals = data.draw(st.integers(-2 if x.dtype.kind == "f" else 0, 4))
    name = data.draw(st.sampled_from(["round", "around"]))
    want = getattr(onp, name)(x, decimals)
    _check(_native(lambda: getattr(dnp, name)(a, decimals)), want)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_select_matches_numpy(data):
    x, a = data.draw(_operands(dtypes=[onp.float64, onp.int64, onp.int32, onp.float32]))
    thresholds = data.draw(st.lists(st.integers(-9, 9), min_size=1, max_size=3))
    conditions = [x > t for t in thresholds]
    choices = [x * (i + 2) for i in range(len(thresholds))]
    default = data.draw(st.sampled_from([0, -1.5, 7]))
    want = onp.select(conditions, choices, default)
    got = _native(lambda: dnp.select([a > t for t in thresholds],
                                     [a * (i + 2) for i in range(len(thresholds))], default))
    _check(got, want)


def test_select_raises_numpys_errors():
    a = dnp.array(onp.arange(4.0))
    for conditions, choices in [([], []), ([a > 1], []), ([a], [a])]:
        with pytest.raises(Exception) as numpy_error:
            onp.select([onp.asarray(c) for c in conditions],
                       [onp.asarray(c) for c in choices])
        with pytest.raises(type(numpy_error.value)):
            dnp.select(conditions, choices)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), ufunc=st.sampled_from(["add", "multiply", "maximum", "minimum",
                                              "logical_and", "logical_or"]))
def test_ufunc_reduce_matches_numpy(data, ufunc):
    # Whole numbers, and for products at most 2 in magnitude (powers of two: exact in any
    # order, and within float32's range).
    x, a = data.draw(_operands(scale=2 if ufunc == "multiply" else 3, whole=True))
    axis = data.draw(st.one_of(st.just(0), st.none(), st.integers(-x.ndim, x.ndim - 1)))
    keepdims = data.draw(st.booleans())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = getattr(onp, ufunc).reduce(x, axis=axis, keepdims=keepdims)
    except ValueError:
        with pytest.raises(ValueError):
            getattr(dnp, ufunc).reduce(a, axis=axis, keepdims=keepdims)
        return
    got = _native(lambda: getattr(dnp, ufunc).reduce(a, axis=axis, keepdims=keepdims))
    _check(got, want)
    # NumPy's own ufunc, given a diffuse array, runs diffuse's.
    _check(_native(lambda: getattr(onp, ufunc).reduce(a, axis=axis, keepdims=keepdims)),
           want)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), ufunc=st.sampled_from(["add", "multiply", "subtract", "maximum",
                                              "greater"]))
def test_ufunc_outer_matches_numpy(data, ufunc):
    x, a = data.draw(_operands(dtypes=[onp.float64, onp.int64, onp.int32]))
    y, b = data.draw(_operands(dtypes=[onp.float64, onp.int64, onp.float32]))
    want = getattr(onp, ufunc).outer(x, y)
    _check(_native(lambda: getattr(dnp, ufunc).outer(a, b)), want)


@settings(max_examples=30, deadline=None)
@given(start=st.integers(-3, 3), stop=st.integers(-3, 3), num=st.integers(0, 9),
       base=st.sampled_from([10.0, 2.0, 0.5]),
       dtype=st.sampled_from([None, onp.float32, onp.float64]))
def test_logspace_matches_numpy(start, stop, num, base, dtype):
    want = onp.logspace(start, stop, num, base=base, dtype=dtype)
    got = _native(lambda: dnp.logspace(start, stop, num, base=base, dtype=dtype))
    assert isinstance(got, dnp.ndarray)
    _check(got, want, exact=False)


@settings(max_examples=30, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
       dtype=st.sampled_from([int, float, onp.int32, onp.float32]),
       sparse=st.booleans())
def test_indices_and_fromfunction_match_numpy(shape, dtype, sparse):
    want = onp.indices(shape, dtype=dtype, sparse=sparse)
    got = _native(lambda: dnp.indices(shape, dtype=dtype, sparse=sparse))
    for g, w in zip(got if sparse else [got], want if sparse else [want]):
        assert isinstance(g, dnp.ndarray)
        _check(g, w)

    def function(*index):
        return sum(i * (k + 1) for k, i in enumerate(index))
    _check(_native(lambda: dnp.fromfunction(function, shape, dtype=dtype)),
           onp.fromfunction(function, shape, dtype=dtype))


@settings(max_examples=30, deadline=None)
@given(shape=st.one_of(st.integers(0, 5),
                       hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)),
       dtype=st.sampled_from([float, int, bool, onp.float32, onp.int32, "float64"]))
def test_the_ndarray_constructor_makes_numpys_shape_and_dtype(shape, dtype):
    a = dnp.ndarray(shape, dtype=dtype)
    want = onp.ndarray(shape, dtype=dtype)
    assert isinstance(a, dnp.ndarray)
    assert a.shape == want.shape and a.dtype == want.dtype
    a[...] = 1  # a real array, written and read
    onp.testing.assert_array_equal(onp.asarray(a), onp.ones(want.shape, want.dtype))


def test_the_ndarray_constructor_refuses_what_numpy_refuses_and_buffers():
    for shape in [(2, -1), (2.5,)]:
        with pytest.raises(Exception) as numpy_error:
            onp.ndarray(shape)
        with pytest.raises(type(numpy_error.value), match=str(numpy_error.value)):
            dnp.ndarray(shape)
    with pytest.raises(TypeError, match="cannot hold dtype float16"):
        dnp.ndarray((2,), dtype=onp.float16)
    with pytest.raises(TypeError, match="cannot view a buffer"):
        dnp.ndarray((2,), buffer=bytes(16))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_kron_matches_numpy(data):
    x, a = data.draw(_operands(dtypes=[onp.float64, onp.int64, onp.int32], scale=5))
    y, b = data.draw(_operands(dtypes=[onp.float64, onp.int64, onp.float32], scale=5))
    _check(_native(lambda: dnp.kron(a, b)), onp.kron(x, y))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_cross_of_3_vectors_matches_numpy(data):
    lead = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    dtype = data.draw(st.sampled_from([onp.float64, onp.int64, onp.float32]))
    elements = hnp.from_dtype(onp.dtype(dtype), min_value=-9, max_value=9, allow_nan=False,
                              allow_infinity=False)
    x = data.draw(hnp.arrays(dtype, lead + (3,), elements=elements))
    y = data.draw(hnp.arrays(dtype, (3,), elements=elements))
    _check(_native(lambda: dnp.cross(dnp.array(x), dnp.array(y))), onp.cross(x, y))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_trace_matches_numpy(data):
    dtype = data.draw(st.sampled_from([onp.float64, onp.int32, onp.int64, onp.bool_]))
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=5))
    x = data.draw(hnp.arrays(dtype, shape, elements=st.booleans() if dtype == onp.bool_
                             else st.integers(-9, 9)))
    offset = data.draw(st.integers(-6, 6))
    swapped = data.draw(st.booleans())
    axes = dict(axis1=1, axis2=0) if swapped else {}
    _check(_native(lambda: dnp.trace(dnp.array(x), offset, **axes)),
           onp.trace(x, offset, **axes))
