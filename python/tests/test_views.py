"""Views against NumPy: random chains of basic indexing (integers, slices with any step,
newaxis, Ellipsis), transposes, reshapes and ravels of random arrays give NumPy's values,
and writing through the result (assignment of scalars or broadcast arrays, in-place
operators) changes the base exactly when NumPy's result is a view of its base, and the
view sees later writes to the base."""

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diffuse.numpy as dnp


@st.composite
def slice_of(draw, n):
    start = draw(st.none() | st.integers(-n - 1, n + 1))
    stop = draw(st.none() | st.integers(-n - 1, n + 1))
    step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2]))
    return slice(start, stop, step)


@st.composite
def basic_key(draw, shape):
    """A basic index for an array of `shape`."""
    key, d = [], 0
    used_ellipsis = False
    while d < len(shape) and draw(st.booleans()):
        choice = draw(st.integers(0, 5))
        if choice == 0:
            key.append(None)
        elif choice == 1 and not used_ellipsis:
            key.append(Ellipsis)
            used_ellipsis = True
            break
        elif choice == 2 and shape[d] > 0:
            key.append(draw(st.integers(-shape[d], shape[d] - 1)))
            d += 1
        else:
            key.append(draw(slice_of(shape[d])))
            d += 1
    if draw(st.booleans()):
        key.append(None)
    return tuple(key) if len(key) != 1 or draw(st.booleans()) else key[0]


@st.composite
def view_step(draw, shape):
    """One view operation for an array of `shape`, as a function on arrays of both libraries."""
    kind = draw(st.sampled_from(["index", "index", "transpose", "reshape", "ravel"]))
    if kind == "index":
        key = draw(basic_key(shape))
        return f"[{key!r}]", lambda a: a[key]
    if kind == "transpose":
        axes = draw(st.permutations(range(len(shape))))
        return f".transpose({axes})", lambda a: a.transpose(axes)
    if kind == "ravel":
        return ".ravel()", lambda a: a.ravel()
    size = int(numpy.prod(shape))
    factors = [f for f in range(1, size + 1) if size % f == 0] or [0]
    first = draw(st.sampled_from(factors))
    target = (first, -1) if first else (0,)
    if draw(st.booleans()) and first:
        target = (1, first, -1)
    return f".reshape({target})", lambda a: a.reshape(target)


def as_numpy(x):
    return numpy.asarray(x)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_view_chains_read_and_write_like_numpy(data):
    shape = data.draw(st.sampled_from([(6,), (4, 5), (3, 1, 4), (2, 3, 4), (0, 3)]))
    dtype = data.draw(st.sampled_from(["float64", "int64", "bool"]))
    base_np = (numpy.arange(numpy.prod(shape)) % 7 - 3).reshape(shape).astype(dtype)
    base_d = dnp.asarray(base_np)
    v_np, v_d, steps = base_np, base_d, []
    for _ in range(data.draw(st.integers(1, 3))):
        if numpy.ndim(v_np) == 0:
            break
        text, step = data.draw(view_step(v_np.shape))
        steps.append(text)
        v_np, v_d = step(v_np), step(v_d)
    if numpy.ndim(v_np) == 0 and not isinstance(v_np, numpy.ndarray):
        assert type(v_d) is type(v_np) and v_d == v_np, steps
        return
    assert v_d.shape == v_np.shape, steps
    numpy.testing.assert_array_equal(as_numpy(v_d), v_np, err_msg=str(steps))

    # Write through the result: NumPy's base changes only if its result is a view.
    write = data.draw(st.sampled_from(["scalar", "array", "inplace"]))
    if write == "scalar":
        v_np[...] = 9
        v_d[...] = 9
    elif write == "array" and v_np.ndim > 0:
        values = (numpy.arange(v_np.shape[-1]) + 20).astype(dtype)
        v_np[...] = values
        v_d[...] = values
    elif v_np.dtype != numpy.bool_:
        v_np += 2
        v_d += 2
    numpy.testing.assert_array_equal(as_numpy(base_d), base_np, err_msg=str(steps))
    numpy.testing.assert_array_equal(as_numpy(v_d), v_np, err_msg=str(steps))

    # Write to the base: a view sees it.
    base_np[...] = numpy.logical_not(base_np) if dtype == "bool" else base_np * 3 + 1
    base_d[...] = dnp.logical_not(base_d) if dtype == "bool" else base_d * 3 + 1
    numpy.testing.assert_array_equal(as_numpy(v_d), v_np, err_msg=str(steps))


def test_views_keep_numpy_errors():
    a = dnp.zeros((3, 4))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        a[3, ::2]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, ::2]
    with pytest.raises(ValueError, match=r"cannot reshape array of size 12 into shape \(5,newaxis\)"):
        a.reshape(5, -1)
    with pytest.raises(ValueError, match="axes don't match array"):
        a.transpose(0, 0)
    with pytest.raises(ValueError, match="could not broadcast"):
        a[::2] = dnp.ones(3)


def test_transposed_products_and_outer_differences():
    a = numpy.arange(12.0).reshape(3, 4)
    d = dnp.asarray(a)
    numpy.testing.assert_allclose(as_numpy(d.T @ d), a.T @ a)
    x, y = dnp.arange(5.0), dnp.arange(3.0)
    numpy.testing.assert_array_equal(
        as_numpy(x[:, None] - y[None, :]), numpy.arange(5.0)[:, None] - numpy.arange(3.0))


def test_in_place_methods_on_numpy_write_back():
    a = dnp.asarray(numpy.array([3.0, 1.0, 2.0]))
    with pytest.warns(RuntimeWarning, match="ndarray.partition"):
        a.partition(1)
    assert as_numpy(a).tolist() == [1.0, 2.0, 3.0]


def test_reshapes_of_dropped_arrays_become_native_and_keep_their_views():
    # The 1-d array is gone once the reshape is bound: the grid moves to a store of its
    # own shape, and its windows are native boxes (they fuse like any array).
    grid = dnp.arange(20.0).reshape(4, 5)
    inner = grid[1:-1, 1:-1]
    assert type(inner) is dnp.ndarray
    # Views taken before the move follow it: a transpose sees writes through the grid.
    t = dnp.arange(6.0).reshape(2, 3)
    tt = t.T
    t[0, 1] = 7.0
    assert as_numpy(tt).tolist() == [[0.0, 3.0], [7.0, 4.0], [2.0, 5.0]]
    tt[2, 1] = -1.0
    assert as_numpy(t).tolist() == [[0.0, 7.0, 2.0], [3.0, 4.0, -1.0]]
    # While the original array lives, the reshape stays a view of it.
    a = dnp.arange(6.0)
    b = a.reshape(2, 3)
    b[1, 1] = 9.0
    assert as_numpy(a).tolist() == [0.0, 1.0, 2.0, 3.0, 9.0, 5.0]
    a[0] = -2.0
    assert as_numpy(b)[0, 0] == -2.0
