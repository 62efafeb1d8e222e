"""Integer-array ("fancy") indexing against NumPy: ``a[i, j]`` gathers and ``a[i, j] = v``
scatters natively (a fallback warning fails these tests), with one integer index array per
dimension (diffuse, NumPy, lists or Python integers, broadcast together, negative indices,
repeated positions), on arrays and views of every dtype; and NumPy's errors."""

import math
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


@st.composite
def mixed(draw):
    """A NumPy array (1-d to 3-d) and a key mixing slices (any step), integers, integer
    arrays without repeated positions, a boolean mask along one dimension and an Ellipsis,
    with at least one array, maybe with fewer entries than dimensions."""
    x = small_arrays(draw, 1, 3)
    count = draw(st.integers(1, 4))
    key, has_array = [], False
    for n in x.shape:
        form = draw(st.sampled_from(["slice", "int", "array", "mask"]))
        if form == "slice":
            start = draw(st.integers(-n, n) | st.none())
            stop = draw(st.integers(-n, n) | st.none())
            step = draw(st.sampled_from([None, 1, 2, -1, -2]))
            key.append(slice(start, stop, step))
        elif form == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif form == "array":
            values = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=count,
                                   unique_by=lambda v, n=n: v % n))
            key.append(onp.array(values))
            has_array = True
        else:
            key.append(draw(hnp.arrays(onp.bool_, (n,))))
            has_array = True
    if not has_array:
        key[0] = onp.array([0])
    masks = [k for k in key if isinstance(k, onp.ndarray) and k.dtype == onp.bool_]
    arrays = [k for k in key if isinstance(k, onp.ndarray) and k.dtype != onp.bool_]
    # NumPy needs the masks' selections and the arrays to broadcast: keep one kind only.
    if masks and (len(masks) > 1 or arrays):
        key = [k if not (isinstance(k, onp.ndarray) and k.dtype == onp.bool_) or k is masks[0]
               and not arrays else slice(None) for k in key]
    if draw(st.booleans()) and isinstance(key[-1], slice) and key[-1] == slice(None):
        key = key[:-1]  # fewer entries than dimensions
    if draw(st.booleans()) and isinstance(key[0], slice) and key[0] == slice(None):
        key = [Ellipsis] + key[1:]
    return x, tuple(key)


@settings(max_examples=80, deadline=None)
@given(case=mixed(), on_diffuse=st.booleans())
def test_mixed_keys_gather_and_scatter_as_numpy(case, on_diffuse):
    x, key = case
    try:
        want = x[key]
    except IndexError:
        return  # a key NumPy refuses (an array of masked positions that do not broadcast)
    a = dnp.array(x)
    dkey = _diffuse_key(key, on_diffuse)
    with _NativeOnly():
        got = a[dkey]
    assert got.shape == want.shape and got.dtype == want.dtype
    onp.testing.assert_array_equal(onp.asarray(got), want)
    values = onp.arange(1, 1 + want.size).reshape(want.shape).astype(x.dtype)
    expected = x.copy()
    expected[key] = values
    with _NativeOnly():
        a[dkey] = values
    onp.testing.assert_array_equal(onp.asarray(a), expected)


@pytest.mark.parametrize("key", [
    (onp.array([3, 0]), slice(None), 2),                     # indices apart: block first
    (1, slice(None, None, -2), [0, 3, 5]),                   # apart again, negative step
    (slice(1, None, 2), [1, 3], slice(None, None, -1)),      # between slices
    (Ellipsis, [0, -1]),                                     # after an Ellipsis
    ([[0, 1], [2, 3]], slice(4, 0, -3), [[1], [2]]),         # 2-d blocks, broadcast
    (slice(None), onp.array([True, False, True, True, False])),  # a mask among slices
    ([2, 0], [1, 4]),                                        # fewer entries than dims
    (slice(None), [1, 0], slice(1, 3), 2),                   # apart, after a slice (4-d)
])
def test_mixed_key_layouts_match_numpy(key):
    shape = (4, 5, 6) if len(key) < 4 else (3, 4, 5, 6)
    x = onp.arange(onp.prod(shape), dtype=onp.float64).reshape(shape)
    want = x[key]
    a = dnp.array(x)
    with _NativeOnly():
        got = a[key]
    assert got.shape == want.shape
    onp.testing.assert_array_equal(onp.asarray(got), want)
    expected = x.copy()
    expected[key] = -onp.arange(want.size).reshape(want.shape)
    with _NativeOnly():
        a[key] = -onp.arange(want.size).reshape(want.shape)
    onp.testing.assert_array_equal(onp.asarray(a), expected)


@pytest.mark.parametrize("key", [([0, 2], [1, 0]), (onp.array([1, 3]), 2), (slice(None), [2])])
def test_writes_through_a_strided_view_reach_the_base(key):
    """``a.T[idx] = v``: the transposed view's elements are gathered copies, so the write
    must go to the base array (it used to land in the copy and be lost)."""
    x = onp.arange(12.0).reshape(3, 4)
    a = dnp.array(x)
    t = a.T
    values = -onp.arange(1.0, 1.0 + x.T[key].size).reshape(x.T[key].shape)
    x.T[key] = values
    t[key] = values
    onp.testing.assert_array_equal(onp.asarray(a), x)
    onp.testing.assert_array_equal(onp.asarray(t), x.T)


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


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_values_selected_by_nonzero_keep_numpys_meaning(data):
    """``v = a[nonzero(m)]`` is deferred (see ``_MaskedSelection``): written into another
    array with the same indices it is one fused ``where`` with no read-back; otherwise it
    holds ``a``'s elements at the time it was taken, whatever is written to ``a`` afterwards
    (assignment, an in-place operator, a write through a view), and behaves as NumPy's
    compacted array. Random masks and dtypes, the write before or after changing ``a``."""
    shape = (data.draw(st.integers(1, 6)), data.draw(st.integers(1, 7)))
    adtype = data.draw(st.sampled_from(["float64", "int64", "float32"]))
    bdtype = data.draw(st.sampled_from([adtype, "float64"]))
    m = data.draw(hnp.arrays(onp.bool_, shape))
    x = onp.arange(math.prod(shape)).reshape(shape).astype(adtype) - 3
    y = -onp.ones(shape, dtype=bdtype)
    change = data.draw(st.sampled_from([None, "assign", "inplace", "view"]))

    def changed(a):
        if change == "assign":
            a[...] = 7
        elif change == "inplace":
            a += 7
        elif change == "view":
            a[-1:, :] = 7

    want_b, want_x = y.copy(), x.copy()
    j, i = onp.nonzero(m)
    v = want_x[j, i]
    changed(want_x)
    want_b[j, i] = v
    a, b = dnp.array(x), dnp.array(y)
    with _NativeOnly():
        jj, ii = dnp.nonzero(dnp.array(m))
        got_v = a[jj, ii]
        changed(a)
        b[jj, ii] = got_v
    onp.testing.assert_array_equal(onp.asarray(b), want_b)
    onp.testing.assert_array_equal(onp.asarray(a), want_x)
    # Unchanged source, same dtypes: the write was a masked where, nothing was compacted.
    assert (got_v._found is None) == (adtype == bdtype and change is None)
    # Used as an array, it is NumPy's compacted selection of the old elements.
    assert got_v.shape == v.shape and got_v.dtype == v.dtype
    onp.testing.assert_array_equal(onp.asarray(got_v), v)


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


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_boolean_and_empty_lists_index_as_numpy_arrays(data):
    """A list of booleans is a mask and ``[]`` an empty integer index, as NumPy reads them,
    alone or beside slices, for reads and writes, natively."""
    rows, cols = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5))
    x = onp.arange(rows * cols, dtype=onp.float64).reshape(rows, cols)
    mask = data.draw(st.lists(st.booleans(), min_size=cols, max_size=cols))
    key = data.draw(st.sampled_from([
        (slice(None), mask),
        (data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows)),),
        ([],),
        (slice(None), []),
    ]))
    with _NativeOnly():
        got = dnp.asarray(x)[key]
        onp.testing.assert_array_equal(onp.asarray(got), x[key])
        assert got.shape == x[key].shape
        written, want = dnp.asarray(x), x.copy()
        written[key] = -1.0
        want[key] = -1.0
        onp.testing.assert_array_equal(onp.asarray(written), want)


def test_a_boolean_index_of_the_wrong_length_is_numpys_index_error():
    x = dnp.arange(12.0).reshape(3, 4)
    with _NativeOnly():
        with pytest.raises(IndexError, match="along axis 0; size of axis is 3 but size of "
                                             "corresponding boolean axis is 2"):
            x[[True, False]]
        with pytest.raises(IndexError, match="along axis 1; size of axis is 4"):
            x[:, onp.array([True, False, True])] = 0.0


@pytest.mark.parametrize("key", [
    "i, None", "None, i", "0, j, None", ":, None, j", "k, None, j", "..., None, j",
    "None, ..., j", "m, None", "[True, False], None, 1:3", "i, None, None, 1", "1, None, j, j",
])
def test_newaxis_beside_index_arrays_reads_natively(key):
    """``newaxis`` among advanced indices: a length-1 axis where NumPy puts it."""
    x = onp.arange(24.0).reshape(2, 3, 4)
    names = {"i": onp.array([1, 0]), "j": onp.array([0, 2, 1]), "k": onp.array([[1], [0]]),
             "m": onp.array([True, False])}
    want = eval(f"x[{key}]", {}, dict(names, x=x))
    with _NativeOnly():
        got = eval(f"x[{key}]", {}, dict({n: dnp.asarray(v) for n, v in names.items()},
                                         x=dnp.asarray(x)))
        assert got.shape == want.shape, key
        onp.testing.assert_array_equal(onp.asarray(got), want)
