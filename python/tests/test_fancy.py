"""Integer-array ("fancy") indexing against NumPy: ``a[i, j]`` gathers and ``a[i, j] = v``
scatters natively (a fallback warning fails these tests), with one integer index array per
dimension (diffuse, NumPy, lists or Python integers, broadcast together, negative indices,
repeated positions), on arrays and views of every dtype; and NumPy's errors."""

import os
import sys
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffuse.numpy as dnp

sys.path.insert(0, os.path.dirname(__file__))
from _strategies import small_arrays  # noqa: E402



@st.composite
def indexed(draw):
    """A NumPy array (1-d to 3-d), whether to index a view of it, and a key of one index
    per dimension of the indexed array, each a NumPy array, a list or an integer."""
    x = small_arrays(draw, 1, 3)
    view = draw(st.booleans()) and x.shape[0] > 1
    target = x[1:] if view else x
    count = draw(st.integers(1, 8))
    key = []
    for d, n in enumerate(target.shape):
        form = draw(st.sampled_from(["array", "list", "int"] if d else ["array", "list"]))
        if form == "int":
            key.append(draw(st.integers(-n, n - 1)))
        else:
            values = draw(st.lists(st.integers(-n, n - 1), min_size=count, max_size=count))
            key.append(onp.array(values) if form == "array" else values)
    return x, view, tuple(key)


class _NativeOnly:
    """Warnings that work ran on NumPy are errors."""

    def __enter__(self):
        self._context = warnings.catch_warnings()
        self._context.__enter__()
        warnings.filterwarnings("error", message=".*not native to diffuse.*")

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)


def _diffuse_key(key, on_diffuse):
    return tuple(dnp.asarray(k) if on_diffuse and isinstance(k, onp.ndarray) else k
                 for k in key)


@settings(max_examples=60, deadline=None)
@given(case=indexed(), on_diffuse=st.booleans())
def test_gather_matches_numpy(case, on_diffuse):
    x, view, key = case
    want = (x[1:] if view else x)[key]
    a = dnp.array(x)
    target = a[1:] if view else a
    with _NativeOnly():
        got = target[_diffuse_key(key, on_diffuse)]
    assert got.shape == want.shape and got.dtype == want.dtype
    onp.testing.assert_array_equal(onp.asarray(got), want)


@settings(max_examples=60, deadline=None)
@given(case=indexed(), on_diffuse=st.booleans(), scalar=st.booleans())
def test_scatter_matches_numpy(case, on_diffuse, scalar):
    x, view, key = case
    want = x.copy()
    target_want = want[1:] if view else want
    shape = target_want[key].shape
    # Values counting up in index order, so that the last of repeated positions shows.
    values = 7 if scalar else onp.arange(1, 1 + int(onp.prod(shape))).reshape(shape)
    values = onp.asarray(values).astype(x.dtype)
    target_want[key] = values
    a = dnp.array(x)
    target = a[1:] if view else a
    with _NativeOnly():
        target[_diffuse_key(key, on_diffuse)] = dnp.asarray(values) if on_diffuse else values
    onp.testing.assert_array_equal(onp.asarray(a), want)


def test_nonzero_indices_round_trip_as_programs_use_them():
    """``j, i = nonzero(a < b); a[j, i] = b[j, i]`` and shifted writes, as in TorchSWE."""
    rng = onp.random.default_rng(3)
    x, y = rng.random((5, 7)), rng.random((5, 7))
    want = x.copy()
    j, i = onp.nonzero(want < y)
    want[j, i] = y[j, i]
    j, i = j[i != 0], i[i != 0]
    want[j, i - 1] = 2 * y[j, i] - x[j, i - 1]
    a, b = dnp.array(x), dnp.array(y)
    with _NativeOnly():
        j, i = dnp.nonzero(a < b)
        a[j, i] = b[j, i]
        j, i = j[i != 0], i[i != 0]
        a[j, i - 1] = 2 * b[j, i] - dnp.array(x)[j, i - 1]
    onp.testing.assert_array_equal(onp.asarray(a), want)


def test_zero_dimensional_indices_give_a_numpy_scalar():
    x = onp.arange(6.0).reshape(2, 3)
    got = dnp.array(x)[onp.array(1), onp.array(-1)]
    want = x[onp.array(1), onp.array(-1)]
    assert type(got) is type(want) and got == want


def test_errors_are_numpys():
    a = dnp.zeros((3, 4))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 4"):
        a[[0, 1], [1, 5]]
    with pytest.raises(IndexError, match="shape mismatch"):
        a[[0, 1], [1, 2, 3]]
    with pytest.raises(ValueError, match="shape mismatch"):
        a[[0, 1], [1, 2]] = onp.ones(3)
    # An index held in a diffuse array is checked when the gather runs.
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        onp.asarray(a[dnp.asarray([0, 3]), dnp.asarray([1, 1])])
