"""``copy``, ``flip``/``fliplr``/``flipud``, ``moveaxis``, ``split`` and its forms, ``triu``,
``tril`` and ``take`` against NumPy: native on deferred arrays (a fallback warning fails
these tests), over dtypes, shapes, axes and views; NumPy's values exactly, NumPy's views
where NumPy gives views (a write through one reaches the array), and NumPy's exception
where NumPy raises."""

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


@st.composite
def _operands(draw, min_dims=1, max_dims=3):
    """(a NumPy array, the same as a diffuse array or a view of one)."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0,
                                  max_side=5))
    elements = st.booleans() if dtype == onp.bool_ else hnp.from_dtype(
        onp.dtype(dtype), allow_nan=False, allow_infinity=False, min_value=-9, max_value=9)
    x = draw(hnp.arrays(dtype, shape, elements=elements))
    a = dnp.array(x)
    if draw(st.booleans()) and x.shape[0] > 1:
        a, x = a[1:], x[1:]
    return x, a


def _compare(name, x, a, *args, **kwargs):
    """diffuse's ``name`` of ``a`` equals NumPy's of ``x`` (each piece of a list of
    pieces), or raises NumPy's exception; no fallback."""
    results = numpy_and_native(name, x, a, *args, **kwargs)
    if results is None:
        return None
    want, got = results
    pieces = zip(got, want) if isinstance(want, list) else [(got, want)]
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
    for g, w in pieces:
        assert isinstance(g, dnp.ndarray)
        g = onp.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        onp.testing.assert_array_equal(g, w)
    return got


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_flips_and_moved_axes_are_numpys_views(data):
    x, a = data.draw(_operands())
    name = data.draw(st.sampled_from(["flip", "fliplr", "flipud", "moveaxis", "copy"]))
    if name == "flip":
        args = [data.draw(st.one_of(st.none(), st.integers(-x.ndim - 1, x.ndim)))]
    elif name == "moveaxis":
        args = [data.draw(st.integers(-x.ndim, x.ndim - 1)),
                data.draw(st.integers(-x.ndim - 1, x.ndim))]
    else:
        args = []
    got = _compare(name, x, a, *args)
    if got is None or got.size == 0 or name == "copy":
        return
    # A view: a write through it reaches the array, as in NumPy.
    first = (0,) * got.ndim
    got[first] = 1
    want = getattr(onp, name)(x, *args)
    want[first] = 1
    onp.testing.assert_array_equal(onp.asarray(a), x)


def test_a_copy_is_not_a_view():
    a = dnp.array(onp.arange(6.0))
    c = dnp.copy(a)
    c[0] = 7
    assert float(a[0]) == 0.0


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_splits_match_numpy(data):
    x, a = data.draw(_operands())
    name = data.draw(st.sampled_from(["split", "array_split", "hsplit", "vsplit"]))
    sections = data.draw(st.one_of(
        st.integers(-1, 4),
        st.lists(st.integers(0, 6), max_size=3).map(sorted)))
    kwargs = {}
    if name in ("split", "array_split"):
        kwargs["axis"] = data.draw(st.integers(0, x.ndim - 1))
    _compare(name, x, a, sections, **kwargs)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), name=st.sampled_from(["triu", "tril"]))
def test_triangles_match_numpy(data, name):
    x, a = data.draw(_operands(min_dims=2))
    _compare(name, x, a, k=data.draw(st.integers(-6, 6)))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_take_matches_numpy(data):
    x, a = data.draw(_operands())
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    length = x.size if axis is None else x.shape[axis]
    indices = data.draw(st.lists(st.integers(-length - 1, length), max_size=4))
    index = data.draw(st.sampled_from(["list", "numpy", "diffuse"]))
    if index != "list":
        indices = onp.array(indices, dtype=onp.int64)
    if index == "diffuse":
        got_indices = dnp.array(indices)
    else:
        got_indices = indices
    try:
        want = onp.take(x, indices, axis=axis)
    except IndexError:
        # (Indices in a diffuse array are checked where the gather runs: at the read.)
        with pytest.raises(IndexError):
            onp.asarray(dnp.take(a, got_indices, axis=axis))
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        got = onp.asarray(dnp.take(a, got_indices, axis=axis))
    assert got.dtype == want.dtype and got.shape == want.shape
    onp.testing.assert_array_equal(got, want)
