"""``sort``, ``argsort``, ``searchsorted``, ``unique``, ``median``, ``percentile``,
``quantile``, ``interp``, ``histogram`` and ``bincount`` against NumPy: native on deferred arrays and their views (a
fallback warning fails these tests), NumPy's dtypes, shapes and values (NaN sorted last,
complex numbers lexicographically), and NumPy's exception where NumPy raises."""

import os
import sys

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp

sys.path.insert(0, os.path.dirname(__file__))
from _results import compare_each, numpy_and_native  # noqa: E402

REAL = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]


@st.composite
def _operands(draw, dtypes=REAL, min_dims=1, max_dims=3, max_side=6, nans=True):
    """(a NumPy array with repeated values, NaNs among floats when ``nans``; the same as a
    deferred diffuse array or a view of one)."""
    dtype = onp.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0,
                                  max_side=max_side))
    if dtype.kind == "b":
        elements = st.booleans()
    elif dtype.kind == "f":
        finite = st.integers(-5, 5).map(lambda v: v / 2)
        elements = st.one_of(finite, st.just(onp.nan)) if nans else finite
    elif dtype.kind == "c":
        part = st.one_of(st.integers(-3, 3).map(float), st.just(onp.nan)) if nans else \
            st.integers(-3, 3).map(float)
        elements = st.builds(complex, part, part)
    else:
        elements = st.integers(-5, 5)
    x = draw(hnp.arrays(dtype, shape, elements=elements))
    a = dnp.array(x)
    view = draw(st.sampled_from(["whole", "slice", "transpose", "reversed"]))
    if view == "slice" and x.shape[0] > 1:
        a, x = a[1:], x[1:]
    elif view == "transpose":
        a, x = a.T, x.T
    elif view == "reversed":
        a, x = a[::-1], x[::-1]
    return x, a


def _same(got, want, context=None, exact=True):
    """``got`` (diffuse, or a Python scalar where NumPy gives one) holds NumPy's ``want``."""
    if compare_each(got, want, context, lambda g, w, c: _same(g, w, c, exact)):
        return
    want = onp.asarray(want)
    got_array = onp.asarray(got)
    assert got_array.dtype == want.dtype and got_array.shape == want.shape, (got, want,
                                                                            context)
    if exact:
        assert onp.array_equal(got_array, want, equal_nan=True), (got_array, want, context)
    else:
        onp.testing.assert_allclose(got_array, want, rtol=1e-6, atol=1e-12)


def _axis(draw, x):
    return draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_sort_and_stable_argsort_along_any_axis_equal_numpys(data):
    x, a = data.draw(_operands(REAL + [onp.complex128]))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    pair = numpy_and_native("sort", x, a, axis=axis)
    if pair:
        _same(pair[1], pair[0])
    pair = numpy_and_native("argsort", x, a, axis=axis, kind="stable")
    if pair:
        _same(pair[1], pair[0])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_searchsorted_finds_numpys_positions_on_either_side(data):
    x, _ = data.draw(_operands(REAL[:4], min_dims=1, max_dims=1, max_side=12))
    x = onp.sort(x)
    v, b = data.draw(_operands(REAL[:4], min_dims=1, max_dims=2))
    side = data.draw(st.sampled_from(["left", "right"]))
    pair = numpy_and_native("searchsorted", x, dnp.array(x), v, side=side)
    want, _ = pair
    _same(dnp.searchsorted(dnp.array(x), b, side=side), want)
    # A scalar value gives a Python-level integer, as NumPy's does.
    if v.size:
        value = v.flat[0].item()
        assert dnp.searchsorted(dnp.array(x), value, side=side) == \
            onp.searchsorted(x, value, side=side)
    # `sorter` names the order of an unsorted array.
    shuffled = x[::-1].copy()
    order = onp.argsort(shuffled, kind="stable")
    _same(dnp.searchsorted(dnp.array(shuffled), b, side=side, sorter=dnp.array(order)),
          onp.searchsorted(shuffled, v, side=side, sorter=order))


@settings(max_examples=60, deadline=None)
@given(st.data(), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_unique_values_first_positions_inverse_and_counts_equal_numpys(
        data, index, inverse, counts, equal_nan):
    x, a = data.draw(_operands())
    pair = numpy_and_native("unique", x, a, return_index=index, return_inverse=inverse,
                            return_counts=counts, equal_nan=equal_nan)
    if pair:
        _same(pair[1], pair[0])


@settings(max_examples=60, deadline=None)
@given(st.data(), st.booleans())
def test_median_and_quantiles_equal_numpys(data, keepdims):
    x, a = data.draw(_operands(REAL[:4], max_side=5))
    axis = _axis(data.draw, x)
    if x.size == 0:
        return
    pair = numpy_and_native("median", x, a, axis=axis, keepdims=keepdims)
    if pair:
        _same(pair[1], pair[0])
    q = data.draw(st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1,
                                                      max_size=3)))
    pair = numpy_and_native("quantile", x, a, q, axis=axis, keepdims=keepdims)
    if pair:
        _same(pair[1], pair[0])
    percents = [v * 100 for v in q] if isinstance(q, list) else q * 100
    pair = numpy_and_native("percentile", x, a, percents, axis=axis)
    if pair:
        _same(pair[1], pair[0])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_interp_equals_numpys_inside_and_outside_the_samples(data):
    n = data.draw(st.integers(1, 12))
    xp = onp.cumsum(data.draw(hnp.arrays(onp.float64, n, elements=st.floats(0.25, 3))))
    fp = data.draw(hnp.arrays(onp.float64, n, elements=st.floats(-5, 5)))
    x = data.draw(hnp.arrays(onp.float64, data.draw(st.integers(0, 20)),
                             elements=st.floats(-2, 40)))
    # Sample points themselves, exactly.
    x = onp.concatenate([x, xp[: n // 2]])
    ends = data.draw(st.sampled_from([{}, {"left": -7.0, "right": 9.0}]))
    pair = numpy_and_native("interp", x, dnp.array(x), dnp.array(xp), dnp.array(fp), **ends)
    _same(pair[1], pair[0], exact=False)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_histogram_equals_numpys_for_counts_edges_ranges_weights_and_density(data):
    x, a = data.draw(_operands(REAL[:4], nans=False))
    bins = data.draw(st.one_of(st.integers(1, 6), st.lists(
        st.integers(-6, 6), min_size=2, max_size=5, unique=True).map(sorted)))
    kwargs = data.draw(st.fixed_dictionaries({}, optional={
        "range": st.just((-2, 2)), "density": st.booleans()}))
    if data.draw(st.booleans()) and not isinstance(bins, int):
        weights = data.draw(hnp.arrays(onp.float64, x.shape, elements=st.integers(0, 4).map(
            float)))
        kwargs["weights"] = dnp.array(weights)  # (NumPy reads it through __array__)
    pair = numpy_and_native("histogram", x, a, bins=bins, **kwargs)
    if pair:
        _same(pair[1], pair[0], exact=not kwargs.get("density") and "weights" not in kwargs)


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(0, 12))
def test_bincount_equals_numpys(data, minlength):
    x = data.draw(hnp.arrays(onp.int64, data.draw(st.integers(0, 30)),
                             elements=st.integers(0, 9)))
    pair = numpy_and_native("bincount", x, dnp.array(x), minlength=minlength)
    _same(pair[1], pair[0])
    with pytest.raises(ValueError):
        dnp.bincount(dnp.array(onp.array([1, -1, 2])))


def test_bad_arguments_raise_numpys_exceptions():
    a = dnp.array(onp.arange(12.0).reshape(3, 4))
    with pytest.raises(onp.exceptions.AxisError):
        dnp.sort(a, axis=2)
    with pytest.raises(ValueError):
        dnp.sort(a, kind="bogus")
    with pytest.raises(ValueError):
        dnp.searchsorted(a, 1.0)
    with pytest.raises(ValueError):
        dnp.searchsorted(dnp.array(onp.arange(3.0)), 1.0, side="middle")
    with pytest.raises(ValueError):
        dnp.quantile(a, 1.5)
    with pytest.raises(ValueError):
        dnp.interp(dnp.array(onp.arange(3.0)), dnp.array(onp.arange(3.0)),
                   dnp.array(onp.arange(2.0)))


def test_rows_of_a_large_matrix_sort_natively_in_parallel():
    rng = onp.random.default_rng(7)
    x = rng.standard_normal((400, 300))
    a = dnp.array(x)
    _same(dnp.sort(a), onp.sort(x))
    _same(dnp.sort(a, axis=0), onp.sort(x, axis=0))
    _same(dnp.argsort(a, kind="stable"), onp.argsort(x, kind="stable"))
    _same(dnp.median(a, axis=1), onp.median(x, axis=1))
