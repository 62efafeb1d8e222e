"""``pad``, ``take_along_axis``, ``put``, ``ix_``, ``broadcast_to``, ``reshape``/``ravel``
in every order, ``gradient`` and ``convolve`` against NumPy: native on deferred arrays and
their views (a fallback warning fails these tests), NumPy's dtypes, shapes and values, and
NumPy's exception where NumPy raises."""

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
def _operands(draw, dtypes=DTYPES, min_dims=1, max_dims=3, min_side=0, max_side=5):
    """(a NumPy array of whole numbers, the same as a deferred diffuse array or a view of
    one: a slice, a transpose or a reversal, the NumPy array the same view)."""
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                                  max_side=max_side))
    elements = st.booleans() if dtype == onp.bool_ else st.integers(-9, 9).map(
        onp.dtype(dtype).type)
    x = draw(hnp.arrays(dtype, shape, elements=elements))
    a = dnp.array(x)
    view = draw(st.sampled_from(["whole", "slice", "transpose", "reversed"]))
    if view == "slice" and x.ndim and x.shape[0] > 1:
        a, x = a[1:], x[1:]
    elif view == "transpose":
        a, x = a.T, x.T
    elif view == "reversed" and x.ndim:
        a, x = a[::-1], x[::-1]
    return x, a


def _same(got, want, exact=True):
    """``got`` (diffuse) holds NumPy's ``want``: dtype, shape and values (to rounding for
    floats unless ``exact``)."""
    assert isinstance(got, dnp.ndarray), type(got)
    got = onp.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if exact or want.dtype.kind != "f":
        onp.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-5 if want.dtype == onp.float32 else 1e-12
        onp.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def _compare(name, x, a, *args, exact=True, **kwargs):
    """diffuse's ``name`` of ``a`` is NumPy's of ``x`` (each of a tuple of results), or
    raises NumPy's exception; no fallback."""
    results = numpy_and_native(name, x, a, *args, **kwargs)
    if results is None:
        return None
    want, got = results
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, exact)
    else:
        _same(got, want, exact)
    return got


def _native(call):
    """``call()`` with a fallback warning as an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        return call()


# -- pad ------------------------------------------------------------------------------------
@st.composite
def _pad_widths(draw, ndim):
    """``pad_width`` in one of NumPy's forms, widths up to 7 (beyond a side's length, so
    that ``reflect`` and ``wrap`` repeat), now and then a negative or a float one."""
    width = st.integers(0, 7)
    form = draw(st.sampled_from(["one", "pair", "per-axis", "dict", "bad"]))
    if form == "one":
        return draw(width)
    if form == "pair":
        return (draw(width), draw(width))
    if form == "per-axis":
        return tuple((draw(width), draw(width)) for _ in range(ndim))
    if form == "dict":
        return {d: draw(st.one_of(width, st.tuples(width, width)))
                for d in draw(st.sets(st.integers(0, max(ndim - 1, 0)), max_size=ndim))}
    return draw(st.sampled_from([-1, 1.5, ((1, 2), (3, 4), (5, 6), (7, 8))]))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_pad_matches_numpy(data):
    x, a = data.draw(_operands(min_dims=0))
    widths = data.draw(_pad_widths(x.ndim))
    values = data.draw(st.sampled_from([7, 2.5, (1, 2), ((1, 2), (3, 4), (5, 6))]))
    for mode, kwargs in (("constant", {}), ("constant", {"constant_values": values}),
                         ("edge", {}), ("reflect", {}), ("symmetric", {}), ("wrap", {}),
                         ("reflect", {"constant_values": 1}), ("bogus", {})):
        _compare("pad", x, a, widths, mode, **kwargs)


def test_pad_modes_that_compute_values_give_numpys_result_on_numpy():
    x = onp.arange(12.0).reshape(3, 4)
    for mode, kwargs in (("mean", {}), ("reflect", {"reflect_type": "odd"})):
        with pytest.warns(RuntimeWarning, match="not native"):
            got = dnp.pad(dnp.array(x), 2, mode, **kwargs)
        _same(got, onp.pad(x, 2, mode, **kwargs))


# -- take_along_axis, put, ix_ --------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_take_along_axis_matches_numpy(data):
    x, a = data.draw(_operands())
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    n = x.size if axis is None else x.shape[axis]
    ndim = 1 if axis is None else x.ndim
    # The indices' extent along the axis is free; along the others 1 or the array's (broadcast),
    # now and then another (NumPy's IndexError).
    shape = [data.draw(st.integers(0, 4)) if axis is None or d == axis % x.ndim
             else data.draw(st.sampled_from([1, x.shape[d], x.shape[d] + 1]))
             for d in range(ndim)]
    if data.draw(st.booleans()) and n:
        # Deferred indices, in range (one out of range raises when the gather runs).
        host = data.draw(hnp.arrays(onp.int64, shape, elements=st.integers(-n, n - 1)))
        indices = dnp.array(host)
    else:
        host = data.draw(hnp.arrays(onp.int64, shape, elements=st.integers(-n - 2, n + 1)))
        indices = host
    got = _compare("take_along_axis", x, a, indices, axis=axis)
    if got is not None and isinstance(indices, dnp.ndarray):
        _same(got, onp.take_along_axis(x, host, axis=axis))


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_put_writes_through_views_as_numpy(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    base = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
                                elements=st.integers(0, 1).map(onp.dtype(dtype).type)))
    view = data.draw(st.sampled_from([(), (slice(None, None, -1),), (slice(1, None),)]))
    transpose = data.draw(st.booleans())
    x = base.copy()
    a = dnp.array(base)
    xv, av = (x[view], a[view]) if base.ndim else (x, a)
    if transpose:
        xv, av = xv.T, av.T
    n = xv.size
    ind = data.draw(st.lists(st.integers(-n - 1, n), max_size=6))
    kind = data.draw(st.sampled_from(["list", "numpy", "diffuse"]))
    ind = onp.array(ind, dtype=onp.int64) if kind == "numpy" else \
        dnp.array(onp.array(ind, dtype=onp.int64)) if kind == "diffuse" else ind
    values = data.draw(st.sampled_from([5, [3, 4], [2, 3, 4, 5, 6, 7, 8], 2.7, []]))
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    try:
        onp.put(xv, ind if kind != "diffuse" else onp.asarray(ind), values, mode=mode)
    except Exception as e:
        with pytest.raises(type(e)):
            _native(lambda: dnp.put(av, ind, values, mode=mode))
        return
    assert _native(lambda: dnp.put(av, ind, values, mode=mode)) is None
    _same(a, x)


def test_put_refuses_what_numpy_refuses():
    a = dnp.array(onp.arange(6.0))
    for args, error in (((a, onp.array([1.5]), 1), TypeError), (([1, 2], [0], 1), TypeError),
                        ((a, [0], 1, "bogus"), ValueError),
                        ((dnp.zeros(0), [0], 1), IndexError),
                        ((dnp.broadcast_to(a, (2, 6)), [0], 1), ValueError)):
        with pytest.raises(error):
            _native(lambda: dnp.put(*args))
    onp.testing.assert_array_equal(onp.asarray(a), onp.arange(6.0))


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_ix_indexes_the_cross_product_natively(data):
    x, a = data.draw(_operands(min_dims=1, max_dims=3, min_side=1))
    keys = []
    for n in x.shape:
        if data.draw(st.booleans()):
            keys.append(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        else:
            keys.append(data.draw(st.lists(st.integers(-n, n - 1), max_size=4)))
    want = x[onp.ix_(*keys)]
    index = _native(lambda: dnp.ix_(*keys))
    assert all(isinstance(i, dnp.ndarray) for i in index)
    for got, expected in zip(index, onp.ix_(*keys)):
        _same(got, expected)
    _same(_native(lambda: a[index]), want)


def test_ix_writes_the_cross_product_natively():
    x = onp.arange(20.0).reshape(4, 5)
    a = dnp.array(x)
    rows, columns = [0, 2, 3], [True, False, False, True, True]
    x[onp.ix_(rows, columns)] = onp.arange(9.0).reshape(3, 3)
    _native(lambda: a.__setitem__(dnp.ix_(rows, columns), dnp.arange(9.0).reshape(3, 3)))
    _same(a, x)


def test_ix_refuses_what_numpy_refuses():
    for bad in ([[1]], 3):
        with pytest.raises(ValueError):
            dnp.ix_(bad)


# -- broadcast_to ---------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_broadcast_to_is_a_read_only_view(data):
    x, a = data.draw(_operands(min_dims=0, max_dims=2))
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    tail = [data.draw(st.sampled_from([n, 3])) if n == 1 else
            data.draw(st.sampled_from([n, n, n + 1])) for n in x.shape]
    shape = tuple(lead + tail)
    got = _compare("broadcast_to", x, a, shape)
    if got is None or got.size == 0:
        return
    assert not got.flags.writeable and not got.T.flags.writeable
    for write in (lambda: got.__setitem__((0,) * got.ndim, 1), lambda: got.fill(1),
                  lambda: got.__iadd__(1), lambda: got.T.__setitem__(..., 1),
                  lambda: got[(0,) * (got.ndim - 1)].__setitem__(..., 1) if got.ndim else
                  got.__setitem__(..., 1),
                  lambda: dnp.copyto(got, got.dtype.type(1))):
        with pytest.raises(ValueError, match="read-only"):
            write()
    copy = got.copy()
    copy[...] = 1  # (copies are writable)
    if x.size:
        # A view: later writes to the array show through it.
        a[...] = 3
        _same(got, onp.broadcast_to(onp.full_like(x, 3), shape))


# -- reshape and ravel in every order ---------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_reshape_and_ravel_in_every_order_match_numpy(data):
    x, a = data.draw(_operands(max_side=4))
    view = data.draw(st.sampled_from(["none", "steps", "broadcast"]))
    if view == "steps" and x.ndim > 1:
        x, a = x[:, ::2], a[:, ::2]
    elif view == "broadcast":
        x, a = onp.broadcast_to(x, (2,) + x.shape), dnp.broadcast_to(a, (2,) + x.shape)
    shape = data.draw(st.sampled_from([(-1,), (x.size,), (-1, 2), (2, -1, 1), (5,)]))
    for order in ("C", "F", "A", "K", "f", None, "X"):
        _compare("ravel", x, a, order=order)
        _compare("reshape", x, a, shape, order=order)


# -- gradient and convolve ------------------------------------------------------------------
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_gradient_matches_numpy(data):
    x, a = data.draw(_operands(min_dims=1, max_dims=3, min_side=1, max_side=6))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1),
                               st.just(tuple(range(x.ndim)))))
    axes = range(x.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    edge_order = data.draw(st.sampled_from([1, 2]))
    spacing = data.draw(st.sampled_from(["none", "scalar", "per-axis"]))
    args = []
    if spacing == "scalar":
        args = [data.draw(st.sampled_from([2, 0.5, onp.float32(3)]))]
    elif spacing == "per-axis":
        for d in axes:
            n = x.shape[d]
            # A scalar, or coordinates (uniform or not), or a length NumPy refuses.
            args.append(data.draw(st.one_of(
                st.sampled_from([1.5, 2]),
                st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n + 1).map(onp.cumsum),
                st.lists(st.floats(0.25, 4), min_size=n, max_size=n).map(onp.cumsum))))
    _compare("gradient", x, a, *args, axis=axis, edge_order=edge_order, exact=False)


def test_gradient_takes_coordinates_held_by_diffuse():
    x = onp.arange(20.0).reshape(4, 5) ** 2
    coordinates = onp.array([0.0, 1.0, 3.0, 4.5, 5.0])
    got = _native(lambda: dnp.gradient(dnp.array(x), dnp.array(coordinates), axis=1))
    _same(got, onp.gradient(x, coordinates, axis=1), exact=False)


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_convolve_matches_numpy(data):
    x, a = data.draw(_operands(min_dims=0, max_dims=1, max_side=9))
    y, _ = data.draw(_operands(min_dims=0, max_dims=1, max_side=9))
    if data.draw(st.booleans()):
        x, a = x.astype(onp.float64) * 0.5, a.astype(onp.float64) * 0.5
    for mode in ("full", "same", "valid", 0, 1, 2, 3, "bogus", None):
        # (The kernel as NumPy's array for both: diffuse's converts it.)
        _compare("convolve", x, a, y, mode=mode, exact=False)


def test_convolve_refuses_arrays_of_more_dimensions():
    with pytest.raises(ValueError):
        dnp.convolve(dnp.ones((2, 2)), dnp.ones(2))
