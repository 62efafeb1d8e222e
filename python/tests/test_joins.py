"""Joining and rearranging against NumPy: ``concatenate``, ``stack``, ``vstack``,
``hstack``, ``roll``, ``tile``, ``diff`` and ``outer`` are diffuse's own (assignment and
element-wise tasks; a fallback warning fails these tests) and give NumPy's values, shapes
and dtypes, on arrays and views of every dtype."""

import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp

DTYPES = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]


def _elements(dtype):
    if dtype == onp.bool_:
        return st.booleans()
    return hnp.from_dtype(onp.dtype(dtype), allow_nan=False, allow_infinity=False,
                          min_value=-50, max_value=50)


def _array(draw, shape, dtype=None):
    dtype = dtype or draw(st.sampled_from(DTYPES))
    return draw(hnp.arrays(dtype, shape, elements=_elements(dtype)))


def _same(got, want):
    got = onp.asarray(got)
    assert got.dtype == want.dtype, f"dtype {got.dtype}, NumPy's {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape}, NumPy's {want.shape}"
    onp.testing.assert_array_equal(got, want)


def _native(call):
    """``call()`` with any fallback to NumPy an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        return call()


@settings(max_examples=30, deadline=None)
@given(data=st.data(), dims=st.integers(1, 3), count=st.integers(1, 3))
def test_concatenate_and_stack_match_numpy(data, dims, count):
    shape = data.draw(hnp.array_shapes(min_dims=dims, max_dims=dims, min_side=0, max_side=4))
    axis = data.draw(st.integers(-dims, dims - 1))
    arrays = []
    for _ in range(count):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        arrays.append(_array(data.draw, tuple(s)))
    want = onp.concatenate(arrays, axis=axis)
    _same(_native(lambda: dnp.concatenate([dnp.array(a) for a in arrays], axis=axis)), want)
    # NumPy's own function dispatches to diffuse's.
    _same(_native(lambda: onp.concatenate([dnp.array(a) for a in arrays], axis=axis)), want)
    same = [_array(data.draw, shape, arrays[0].dtype) for _ in range(count)]
    new_axis = data.draw(st.integers(-dims - 1, dims))
    _same(_native(lambda: dnp.stack([dnp.array(a) for a in same], axis=new_axis)),
          onp.stack(same, axis=new_axis))
    flat = onp.concatenate(arrays, axis=None)
    _same(_native(lambda: dnp.concatenate([dnp.array(a) for a in arrays], axis=None)), flat)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_vstack_hstack_of_vectors_and_matrices(data):
    n = data.draw(st.integers(1, 4))
    vectors = [_array(data.draw, (n,), onp.float64) for _ in range(2)]
    matrices = [_array(data.draw, (2, n), onp.int64) for _ in range(2)]
    for f in ("vstack", "hstack"):
        for inputs in (vectors, matrices, [vectors[0], vectors[1].astype(onp.int32)]):
            _same(_native(lambda: getattr(dnp, f)([dnp.array(a) for a in inputs])),
                  getattr(onp, f)(inputs))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), shift=st.integers(-7, 7))
def test_roll_matches_numpy(data, shift):
    x = _array(data.draw, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    _same(_native(lambda: dnp.roll(dnp.array(x), shift, axis=axis)),
          onp.roll(x, shift, axis=axis))
    if x.ndim >= 2:
        _same(_native(lambda: dnp.roll(dnp.array(x), (shift, 1), axis=(0, 1))),
              onp.roll(x, (shift, 1), axis=(0, 1)))
    # A view rolls its own elements.
    view = dnp.array(x)[..., 1:]
    _same(_native(lambda: dnp.roll(view, shift, axis=-1)), onp.roll(x[..., 1:], shift, -1))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), reps=st.lists(st.integers(0, 3), min_size=0, max_size=3))
def test_tile_matches_numpy(data, reps):
    x = _array(data.draw, data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))
    _same(_native(lambda: dnp.tile(dnp.array(x), reps)), onp.tile(x, reps))
    _same(_native(lambda: dnp.tile(dnp.array(x), 2)), onp.tile(x, 2))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 3))
def test_diff_and_outer_match_numpy(data, n):
    x = _array(data.draw, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # integer overflow is NumPy's too
        want = onp.diff(x, n=n, axis=axis)
        got = _native(lambda: dnp.diff(dnp.array(x), n=n, axis=axis))
    _same(got, want)
    if x.dtype == onp.float64:
        _same(_native(lambda: dnp.diff(dnp.array(x), axis=axis, prepend=0.0)),
              onp.diff(x, axis=axis, prepend=0.0))
    y = _array(data.draw, data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=4)),
               x.dtype)
    if x.dtype != onp.bool_:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = onp.outer(x, y)
            got = _native(lambda: dnp.outer(dnp.array(x), dnp.array(y)))
        _same(got, want)


def test_initial_is_cast_to_the_result_dtype():
    cases = [("sum", onp.arange(3), 2.5),
             ("prod", onp.arange(1, 4, dtype=onp.int32), 2.0),
             ("sum", onp.ones(3, onp.float32), 1e10)]
    for name, x, initial in cases:
        want = getattr(onp, name)(x, initial=initial)
        got = onp.asarray(_native(lambda: getattr(dnp, name)(dnp.array(x), initial=initial)))
        assert got.dtype == want.dtype and got == want, (name, got, want)


def test_join_errors_are_numpys():
    a, b = dnp.zeros((2, 3)), dnp.zeros((2, 4))
    with pytest.raises(ValueError, match="along dimension 1"):
        dnp.concatenate([a, b])
    with pytest.raises(ValueError, match="need at least one array"):
        dnp.concatenate([])
    with pytest.raises(ValueError, match="same shape"):
        dnp.stack([a, b])
    with pytest.raises(TypeError, match="same_kind"):
        dnp.concatenate([a, b.astype("int64")], axis=1, dtype="int64")
    with pytest.raises(ValueError, match="zero-dimensional"):
        dnp.concatenate([dnp.zeros(()), dnp.zeros(())])
    with pytest.raises(ValueError):
        dnp.diff(dnp.zeros(3), n=-1)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), repeats=st.integers(0, 3), indexing=st.sampled_from(["xy", "ij"]),
       sparse=st.booleans())
def test_repeat_and_meshgrid_match_numpy(data, repeats, indexing, sparse):
    x = _array(data.draw, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    _same(_native(lambda: dnp.repeat(dnp.array(x), repeats, axis=axis)),
          onp.repeat(x, repeats, axis=axis))
    vectors = [_array(data.draw, (data.draw(st.integers(1, 4)),))
               for _ in range(data.draw(st.integers(1, 3)))]
    got = _native(lambda: onp.meshgrid(*[dnp.array(v) for v in vectors], indexing=indexing,
                                       sparse=sparse))
    want = onp.meshgrid(*vectors, indexing=indexing, sparse=sparse)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), name=st.sampled_from(["sum", "prod"]), initial=st.sampled_from(
    [None, 2.0]))
def test_reductions_with_where_out_and_initial_are_native(data, name, initial):
    x = _array(data.draw, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)),
               onp.float64)
    mask = data.draw(hnp.arrays(onp.bool_, x.shape))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    extra = {} if initial is None else {"initial": initial}
    want = getattr(onp, name)(x, axis=axis, where=mask, **extra)
    got = _native(lambda: getattr(onp, name)(dnp.array(x), axis=axis, where=dnp.asarray(mask),
                                             **extra))
    onp.testing.assert_allclose(onp.asarray(got), want, rtol=1e-12)
    out = dnp.zeros(onp.shape(want))
    returned = _native(lambda: getattr(dnp, name)(dnp.array(x), axis=axis, out=out, **extra))
    assert returned is out
    onp.testing.assert_allclose(onp.asarray(out), getattr(onp, name)(x, axis=axis, **extra),
                                rtol=1e-12)
    if name == "sum":
        norms = onp.asarray(_native(lambda: dnp.linalg.norm(dnp.array(x), axis=-1)))
        want = onp.linalg.norm(x, axis=-1)
        assert norms.shape == want.shape and norms.dtype == want.dtype
        onp.testing.assert_allclose(norms, want, rtol=1e-12)
