"""``var``, ``std``, ``average``, ``ptp``, ``nansum``, ``nanmax``, ``nanmin``, ``nanmean``,
``isclose`` and ``nan_to_num`` against NumPy: native on deferred arrays (a fallback warning
fails these tests), over dtypes, shapes (empty ones too), axes, ``keepdims``, ``ddof``,
views, NaNs and infinities; the same dtypes and shapes as NumPy, values within rounding of
NumPy's (diffuse sums blocks in its own order), and NumPy's exception where NumPy raises."""

import os
import sys
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp

sys.path.insert(0, os.path.dirname(__file__))
from _results import numpy_and_native  # noqa: E402

DTYPES = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]


def _elements(dtype, special, whole=False):
    """Small values of ``dtype`` (whole numbers with ``whole``); for floats with
    ``special``, NaNs and infinities too."""
    if dtype == onp.bool_:
        return st.booleans()
    values = st.integers(-3, 3).map(onp.dtype(dtype).type) if whole else hnp.from_dtype(
        onp.dtype(dtype), allow_nan=False, allow_infinity=False, min_value=-3, max_value=3)
    if special and onp.dtype(dtype).kind == "f":
        values = st.one_of(values, st.sampled_from([onp.nan, onp.inf, -onp.inf]))
    return values


@st.composite
def _operands(draw, special=False, min_side=0, whole=False):
    """(a NumPy array, the same as a diffuse array or a view of one)."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=min_side, max_side=5))
    x = draw(hnp.arrays(dtype, shape, elements=_elements(dtype, special, whole)))
    a = dnp.array(x)
    if draw(st.booleans()) and x.shape[0] > 1:
        a, x = a[1:], x[1:]
    return x, a


def _axis(draw, ndim):
    return draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                          st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                                   unique=True).map(tuple)))


def _same(got, want):
    """``got`` (diffuse's) has ``want``'s (NumPy's) dtype and shape and its values within
    rounding (NaNs where NumPy has them)."""
    got = onp.asarray(got)
    want = onp.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.dtype.kind == "f":
        rtol = 1e-4 if want.dtype == onp.float32 else 1e-10
        onp.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        onp.testing.assert_array_equal(got, want)


def _compare(name, x, a, *args, **kwargs):
    """diffuse's ``name`` of ``a`` is NumPy's of ``x``, or raises NumPy's exception; also
    NumPy's function given ``a``, and the method of the same name where NumPy's arrays have
    it."""
    both = numpy_and_native(name, x, a, *args, **kwargs)
    if both is None:
        return
    want, got = both
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        results = [got, getattr(onp, name)(a, *args, **kwargs)]
        if name in ("var", "std"):
            results.append(getattr(a, name)(*args, **kwargs))
    for result in results:
        if isinstance(want, tuple):
            assert isinstance(result, tuple) and len(result) == len(want)
            for g, w in zip(result, want):
                _same(g, w)
        else:
            _same(result, want)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), name=st.sampled_from(["var", "std"]))
def test_variances_match_numpy(data, name):
    # Whole numbers: their means round alike in any summation order, so a slice of equal
    # values has deviations of exactly 0 in both (with no degrees of freedom left, 0 / 0 is
    # NaN where a deviation rounded away from 0 would give inf).
    x, a = data.draw(_operands(whole=True))
    axis = _axis(data.draw, x.ndim)
    ddof = data.draw(st.integers(0, 3))
    keepdims = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from([None, None, onp.float32, onp.float64]))
    _compare(name, x, a, axis=axis, ddof=ddof, keepdims=keepdims, dtype=dtype)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), name=st.sampled_from(["nansum", "nanmax", "nanmin", "nanmean",
                                             "ptp"]))
def test_nan_reductions_and_ptp_match_numpy(data, name):
    x, a = data.draw(_operands(special=data.draw(st.booleans())))
    axis = _axis(data.draw, x.ndim)
    keepdims = data.draw(st.booleans())
    _compare(name, x, a, axis=axis, keepdims=keepdims)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_averages_match_numpy(data):
    x, a = data.draw(_operands(min_side=1))
    returned = data.draw(st.booleans())
    keepdims = data.draw(st.booleans())
    form = data.draw(st.sampled_from(["plain", "same shape", "along axes", "no axis"]))
    if form == "plain":
        _compare("average", x, a, axis=_axis(data.draw, x.ndim), returned=returned,
                 keepdims=keepdims)
        return
    axis = None if form in ("same shape", "no axis") else _axis(data.draw, x.ndim)
    axes = () if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    shape = x.shape if form == "same shape" else tuple(
        x.shape[ax] for ax in axes) or (x.shape[0] + 1,)
    wdtype = data.draw(st.sampled_from([onp.float64, onp.float32, onp.int64]))
    w = data.draw(hnp.arrays(wdtype, shape, elements=hnp.from_dtype(
        onp.dtype(wdtype), min_value=0, max_value=4, allow_nan=False)))
    _compare("average", x, a, axis=axis, weights=dnp.array(w) if data.draw(st.booleans())
             else w, returned=returned, keepdims=keepdims)


def test_weights_of_the_wrong_shape_or_summing_to_zero_raise_numpys_errors():
    x = onp.arange(12.0).reshape(3, 4)
    a = dnp.array(x)
    for kwargs in [dict(weights=onp.ones(4)), dict(weights=onp.ones(3), axis=1),
                   dict(weights=onp.zeros(4), axis=1)]:
        with pytest.raises(Exception) as numpy_error:
            onp.average(x, **kwargs)
        with pytest.raises(type(numpy_error.value), match=str(numpy_error.value)[:20]):
            dnp.average(a, **kwargs)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_isclose_and_allclose_match_numpy(data):
    x, a = data.draw(_operands(special=True))
    kind = data.draw(st.sampled_from(["array", "scalar", "shifted"]))
    if kind == "scalar":
        other = data.draw(st.sampled_from([0.0, 1.0, -2.0, onp.inf, onp.nan, 3]))
        y, b = other, other
    else:
        y = onp.where(onp.isfinite(x), x, 0).astype(onp.float64) + (
            1e-6 if kind == "shifted" else 0.0) if x.dtype.kind != "b" else x
        b = dnp.array(y)
    equal_nan = data.draw(st.booleans())
    rtol = data.draw(st.sampled_from([1e-5, 1e-9, 0.0]))
    for name in ("isclose", "allclose"):
        _compare(name, x, a, b if kind != "scalar" else y, rtol=rtol, equal_nan=equal_nan)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_nan_to_num_matches_numpy(data):
    x, a = data.draw(_operands(special=True))
    fills = data.draw(st.sampled_from([{}, dict(nan=-1.0), dict(posinf=9.0, neginf=-9.0)]))
    _compare("nan_to_num", x, a, **fills)
    # In place: the array itself is changed and returned.
    x2, a2 = x.copy(), dnp.array(x)
    same = dnp.nan_to_num(a2, copy=False, **fills)
    onp.nan_to_num(x2, copy=False, **fills)
    assert same is a2
    _same(a2, x2)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), name=st.sampled_from(["cov", "corrcoef"]))
def test_covariances_match_numpy(data, name):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5))
    # Whole numbers, as for variances: a variable of equal values has a variance of exactly
    # 0 in both, and a correlation of NaN.
    x = data.draw(hnp.arrays(dtype, shape, elements=_elements(dtype, False, whole=True)))
    a = dnp.array(x)
    kwargs = {"rowvar": data.draw(st.booleans())}
    if name == "cov":
        kwargs.update(bias=data.draw(st.booleans()),
                      ddof=data.draw(st.one_of(st.none(), st.integers(0, 2))))
    if data.draw(st.booleans()):
        y = data.draw(hnp.arrays(onp.float64, shape,
                                 elements=_elements(onp.float64, False, whole=True)))
        _compare(name, x, a, y if data.draw(st.booleans()) else dnp.array(y), **kwargs)
    else:
        _compare(name, x, a, **kwargs)
