"""``cumsum`` and ``cumprod`` against NumPy: one native scan task (a fallback warning fails
these tests), NumPy's dtypes (booleans and narrow integers become int64, ``dtype=``), and
NumPy's values bit for bit (the same order of operations), on arrays and views."""

import warnings

import numpy as onp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp

DTYPES = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]


@settings(max_examples=40, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), name=st.sampled_from(["cumsum",
                                                                           "cumprod"]),
       view=st.booleans())
def test_cumulative_functions_match_numpy(data, dtype, name, view):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    elements = st.booleans() if dtype == onp.bool_ else hnp.from_dtype(
        onp.dtype(dtype), allow_nan=False, allow_infinity=False, min_value=-3, max_value=3)
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    a = dnp.array(x)
    if view and x.shape[0] > 1:
        a, x = a[1:], x[1:]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        warnings.filterwarnings("ignore", category=RuntimeWarning, message=".*overflow.*")
        got = getattr(dnp, name)(a, axis=axis)
        method = getattr(a, name)(axis=axis)
        through_numpy = getattr(onp, name)(a, axis=axis, dtype=onp.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(onp, name)(x, axis=axis)
        want64 = getattr(onp, name)(x, axis=axis, dtype=onp.float64)
    for result, expected in [(got, want), (method, want), (through_numpy, want64)]:
        result = onp.asarray(result)
        assert result.dtype == expected.dtype and result.shape == expected.shape
        onp.testing.assert_array_equal(result, expected)
