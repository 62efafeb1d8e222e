"""Boolean-mask writes against NumPy: ``a[mask] = v``, ``a[:, m] = v``, ``putmask`` and
``copyto(where=)`` run as fused element-wise ``where`` tasks (no copy to NumPy: a fallback
warning fails these tests), on arrays and views of every dtype, and give NumPy's values."""

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
from _strategies import small_arrays  # noqa: E402



@st.composite
def arrays_and_masks(draw):
    """A NumPy array (2-d or 3-d), a view of it or itself, and a boolean mask of the view's
    shape."""
    x = small_arrays(draw, 2, 3)
    view = draw(st.booleans()) and x.shape[0] > 1
    mask = draw(hnp.arrays(onp.bool_, x[1:].shape if view else x.shape))
    return x, view, mask


def _native_only():
    """Warnings that work ran on NumPy are errors."""
    context = warnings.catch_warnings()
    context.__enter__()
    warnings.filterwarnings("error", message=".*not native to diffuse.*")
    return context


def _values(x, fill):
    return fill if x.dtype != onp.bool_ else bool(fill)


@settings(max_examples=40, deadline=None)
@given(case=arrays_and_masks(), fill=st.integers(-5, 5), diffuse_mask=st.booleans())
def test_mask_assignment_matches_numpy(case, fill, diffuse_mask):
    x, view, mask = case
    want = x.copy()
    a = dnp.array(x)
    target_want, target = (want[1:], a[1:]) if view else (want, a)
    value = _values(x, fill)
    target_want[mask] = value
    key = dnp.asarray(mask) if diffuse_mask else mask
    context = _native_only()
    try:
        target[key] = value
    finally:
        context.__exit__(None, None, None)
    onp.testing.assert_array_equal(onp.asarray(a), want)


@settings(max_examples=30, deadline=None)
@given(case=arrays_and_masks(), fill=st.integers(-5, 5), axis=st.integers(0, 2),
       data=st.data())
def test_mask_along_one_axis_matches_numpy(case, fill, axis, data):
    x, _, _ = case
    axis = axis % x.ndim
    m = data.draw(hnp.arrays(onp.bool_, (x.shape[axis],)))
    key = tuple(m if d == axis else slice(None) for d in range(axis + 1))
    want = x.copy()
    want[key] = _values(x, fill)
    a = dnp.array(x)
    context = _native_only()
    try:
        a[tuple(dnp.asarray(k) if isinstance(k, onp.ndarray) else k for k in key)] = \
            _values(x, fill)
    finally:
        context.__exit__(None, None, None)
    onp.testing.assert_array_equal(onp.asarray(a), want)


@settings(max_examples=30, deadline=None)
@given(case=arrays_and_masks(), fill=st.integers(-5, 5), whole=st.booleans())
def test_putmask_and_copyto_where_match_numpy(case, fill, whole):
    x, _, mask = case
    if mask.shape != x.shape:
        mask = onp.resize(mask, x.shape)
    values = (onp.arange(x.size).reshape(x.shape) % 7).astype(x.dtype) if whole else \
        _values(x, fill)
    want_put, want_copy = x.copy(), x.copy()
    onp.putmask(want_put, mask, values)
    onp.copyto(want_copy, values, where=mask, casting="unsafe")
    put, copy = dnp.array(x), dnp.array(x)
    context = _native_only()
    try:
        onp.putmask(put, dnp.asarray(mask), values)
        dnp.copyto(copy, values, where=mask, casting="unsafe")
    finally:
        context.__exit__(None, None, None)
    onp.testing.assert_array_equal(onp.asarray(put), want_put)
    onp.testing.assert_array_equal(onp.asarray(copy), want_copy)


def test_errors_are_numpys():
    ints = dnp.arange(6)
    with pytest.raises(ValueError, match="NaN"):
        ints[ints > 2] = float("nan")
    with pytest.raises(TypeError, match="same_kind"):
        dnp.copyto(ints, dnp.ones(6))
    with pytest.raises(TypeError, match="same_kind"):
        dnp.copyto(ints, 1.5)
    dnp.copyto(ints, 7, where=ints > 3)
    onp.testing.assert_array_equal(onp.asarray(ints), [0, 1, 2, 3, 7, 7])
    with pytest.raises(ValueError, match="same size"):
        dnp.putmask(ints, dnp.ones(3, dtype=bool), 1)
    # A value array per selected element is NumPy's too (through NumPy, with a warning the
    # first time in a process).
    x = onp.arange(6.0)
    a = dnp.array(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a[a > 2] = dnp.array([7.0, 8.0, 9.0])
    x[x > 2] = [7.0, 8.0, 9.0]
    onp.testing.assert_array_equal(onp.asarray(a), x)


@settings(max_examples=40, deadline=None)
@given(case=arrays_and_masks(), diffuse_mask=st.booleans())
def test_mask_reads_and_nonzero_match_numpy(case, diffuse_mask):
    """``a[mask]``, ``nonzero``, ``flatnonzero``, ``extract`` and one-argument ``where`` are
    native compactions (the count read back), on arrays and views of every dtype."""
    x, view, mask = case
    a = dnp.array(x)
    if view:
        a, x = a[1:], x[1:]
    key = dnp.asarray(mask) if diffuse_mask else mask
    context = _native_only()
    try:
        results = [
            (a[key], x[mask]),
            (dnp.extract(key, a), onp.extract(mask, x)),
            (dnp.flatnonzero(a), onp.flatnonzero(x)),
        ]
        pairs = list(zip(dnp.nonzero(a), onp.nonzero(x))) + \
            list(zip(dnp.where(key), onp.where(mask))) + \
            list(zip(onp.nonzero(a), onp.nonzero(x)))
    finally:
        context.__exit__(None, None, None)
    for got, want in results + pairs:
        got = onp.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        onp.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(case=arrays_and_masks(), fill=st.sampled_from(["scalar", "array"]))
def test_indexing_with_a_whole_nonzero_result_matches_numpy(case, fill):
    """``a[nonzero(m)] = v`` and ``a[nonzero(m)]``, NumPy's idiom, give NumPy's values; with
    one value the write is the masked write (the indices are never computed, so nothing is
    read back before it), and the indices are those of the mask when ``nonzero`` was
    called, whatever is written to it later."""
    x, view, mask = case
    target = x[1:] if view else x
    context = _native_only()
    try:
        d = dnp.asarray(x)
        dt = d[1:] if view else d
        m = dnp.asarray(mask)
        index = dnp.nonzero(m)
        m[...] = ~m  # after the call: the indices keep the mask as it was
        want_read = target[onp.nonzero(mask)]
        onp.testing.assert_array_equal(onp.asarray(dt[index]), want_read)
        value = 3 if fill == "scalar" else onp.arange(want_read.size).astype(x.dtype)
        target[onp.nonzero(mask)] = value
        dt[index] = value
        if fill == "scalar":
            assert index[0]._found == [], "the indices were computed"
        onp.testing.assert_array_equal(onp.asarray(d), x)
        # The indices themselves, once asked for.
        for got, want in zip(index, onp.nonzero(mask)):
            onp.testing.assert_array_equal(onp.asarray(got), want)
    finally:
        context.__exit__(None, None, None)
