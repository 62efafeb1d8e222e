"""Eager execution of small arrays (``DIFFUSE_EAGER_ELEMENTS``): arrays of at most that many
elements are held and computed by NumPy. Their results must be NumPy's, alone and mixed with
deferred arrays; views of them must write through as NumPy's do; no write may be lost
between the two kinds of array."""

import copy
import os
import pickle
import sys
import warnings

import numpy
import pytest
import scipy.sparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diffuse.numpy as dnp
from diffuse import _native, _state
import diffuse.sparse as dsp

sys.path.insert(0, os.path.dirname(__file__))
import _expressions as diff  # noqa: E402

LIMIT = 64


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    """Small arrays (at most LIMIT elements) are eager in these tests."""
    monkeypatch.setattr(_state, "eager_limit", LIMIT)


def is_eager(x):
    return isinstance(x, dnp._Eager)


def test_small_arrays_are_eager_and_large_ones_deferred():
    for small in (dnp.ones(8), dnp.zeros((8, 8)), dnp.arange(10.0), dnp.linspace(0, 1, 5),
                  dnp.asarray([1, 2, 3]), dnp.array(numpy.ones(4)), dnp.eye(3),
                  dnp.full((2, 2), 7, dtype="int32"), dnp.diag([1.0, 2.0])):
        assert is_eager(small), small
    for large in (dnp.zeros(LIMIT + 1), dnp.ones((9, 9)), dnp.arange(100.0),
                  dnp.asarray(numpy.ones(100))):
        assert isinstance(large, dnp.ndarray) and not is_eager(large)
    x = dnp.ones(8)
    for result in (x + 1.0, 2 * x, dnp.exp(x), x[2:5], x.reshape(2, 4), -x, x > 0):
        assert is_eager(result)
    # Reductions give NumPy's scalars, as NumPy does.
    assert type(x.sum()) is numpy.float64 and x.sum() == 8.0


def test_eager_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("DIFFUSE_EAGER_ELEMENTS", "17")
    assert _state.eager_limit_from_env() == 17
    for bad in ("lots", "-1"):
        monkeypatch.setenv("DIFFUSE_EAGER_ELEMENTS", bad)
        with pytest.raises(ValueError, match="DIFFUSE_EAGER_ELEMENTS"):
            _state.eager_limit_from_env()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_random_expressions_mixing_eager_and_deferred_match_numpy(data):
    """test_differential's random programs, with a limit drawn per program so that some
    operands (and views of them) are eager and others deferred."""
    limit = data.draw(st.sampled_from([0, 4, 12, 30, 4096]))
    saved, _state.eager_limit = _state.eager_limit, limit
    try:
        shape = data.draw(diff.SHAPES)
        singles = []
        with numpy.errstate(all="ignore"):
            want, got = data.draw(diff.expression(shape, singles=singles))
        if numpy.ndim(want) == 0:
            return
        diff.close(got, want, single=bool(singles))
    finally:
        _state.eager_limit = saved


def run_both(program):
    """``program(np)`` on NumPy and on diffuse.numpy; the arrays it returns must be equal."""
    want = program(numpy)
    got = program(dnp)
    for w, g in zip(want, got):
        numpy.testing.assert_array_equal(numpy.asarray(g), w)
        assert numpy.asarray(g).dtype == numpy.asarray(w).dtype


def test_views_of_eager_arrays_write_through_as_in_numpy():
    def program(np):
        a = np.arange(12.0)
        v = a[2:5]
        v[...] = -1
        a[::2] += 100
        b = a.reshape(3, 4)
        b[0, 1] = 7
        b.T[1] = 3.5
        np.reshape(a, (4, 3))[3] = 0
        c = np.zeros((3, 4), dtype="int64")
        c[1] = np.arange(4)
        c[c > 1] = 9
        c[[0, 2], [1, 3]] = 5
        a.ravel()[0] = 42
        return a, v, b, c

    run_both(program)


def test_writes_between_eager_and_deferred_arrays_are_kept():
    def program(np):
        small = np.zeros(8)
        big = np.ones(200)
        small[...] = big[:8] * 3           # deferred into eager
        big[:8] = small + 1                # eager into deferred
        small += big[10:18]                # in place, deferred operand
        big[20:28] += small                # in place, eager operand
        np.add(small, big[:8], out=small)  # out= eager, a deferred input
        lazy_total = big.sum()             # a deferred scalar
        small[0] = lazy_total
        return small, big, big[:30] - small[0]

    run_both(program)


def test_zero_d_eager_arrays_meet_deferred_ones_as_numpy_scalars():
    def program(np):
        big = np.arange(100.0)
        s = np.asarray(3.0)
        i = np.asarray(2, dtype="int32")
        return (s - big, big - s, s / big[1:], big ** s, np.where(big > 50, s, big),
                np.maximum(i, big), np.where(big > 10, big, i), s * big.astype("float32"),
                np.subtract(s, big))

    run_both(program)


def test_functions_writing_into_eager_arrays_from_deferred_values_keep_the_writes():
    """Functions that write into an argument (positional or out=) with deferred inputs: the
    write must reach the eager array, not a copy of it."""
    def program(np):
        big = np.arange(200.0)
        a, b, c, d, e, f = (np.zeros(8) for _ in range(6))
        np.copyto(a, big[:8])
        np.putmask(b, big[:8] > 3, big[10:18])
        np.add(big[:8], 1.0, out=c, where=big[:8] > 3)
        np.multiply(big[:8], 2.0, d)  # the output positional
        np.sum(big[:16].reshape(2, 8), 0, None, e)  # out positional
        f[...] = 1.0
        f += big[:8]
        g = np.arange(8.0)
        view = g.reshape(np.sum(big[:2] * 0 + 1, dtype="int64"), 4)  # a deferred 0-d argument
        view[0, 0] = -5
        return a, b, c, d, e, f, g, view

    run_both(program)


def test_out_arguments_return_the_eager_array_itself():
    x = dnp.ones(8)
    assert dnp.add(x, 1.0, out=x) is x
    assert numpy.add(x, 1.0, out=x) is x
    assert dnp.sum(dnp.ones((2, 4)), axis=0, out=dnp.zeros(4)).tolist() == [2.0] * 4
    numpy.testing.assert_array_equal(numpy.asarray(x), numpy.full(8, 3.0))


def test_numpy_returning_an_argument_returns_the_eager_array():
    x = dnp.asarray([7.0, -3.5])
    q, r = dnp.zeros(2), dnp.zeros(2)
    got = dnp.divmod(x, 2.0, out=(q, r))
    assert got[0] is q and got[1] is r
    assert q.tolist() == [3.0, -2.0] and r.tolist() == [1.0, 0.5]
    assert numpy.nan_to_num(x, copy=False) is x


def test_eager_arrays_keep_diffuses_refusals_where_numpy_is_silently_wrong():
    # NumPy's where wraps an integer beyond the result's dtype; diffuse refuses it at any size.
    with pytest.raises(OverflowError):
        dnp.where(dnp.asarray([True, False]), dnp.asarray([1, 2]), 2**63)
    # linspace computes as the deferred version does (in float64: no object arrays).
    numpy.testing.assert_array_equal(numpy.asarray(dnp.linspace(-3, -2**63 - 1, 5)),
                                     numpy.linspace(-3.0, float(-2**63 - 1), 5))


def test_numpy_functions_run_on_eager_arrays_without_fallback_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = dnp.asarray([3.0, 1.0, 2.0])
        assert dnp.sort(x).tolist() == [1.0, 2.0, 3.0]
        x.sort()  # NumPy's method, in place
        assert x.tolist() == [1.0, 2.0, 3.0]
        m = dnp.arange(6.0).reshape(2, 3)
        flipped = dnp.fliplr(m)  # a view: writes reach m, as in NumPy
        flipped[0, 0] = -1
        assert m[0, 2] == -1
        assert dnp.median(m) == numpy.median(numpy.asarray(m))
        assert is_eager(numpy.cumsum(x)) and numpy.cumsum(x).tolist() == [1.0, 3.0, 6.0]


def test_errors_are_numpys():
    def raises_like_numpy(program):
        with pytest.raises(Exception) as want:
            program(numpy)
        with pytest.raises(want.type):
            program(dnp)

    def cast_in_place(np):
        a = np.arange(4)
        a += 1.5

    def bad_broadcast(np):
        return np.ones(3) + np.ones(4)

    def out_of_bounds(np):
        return np.ones(3)[5]

    def read_only_diagonal(np):
        np.eye(3).diagonal()[0] = 2

    for program in (cast_in_place, bad_broadcast, out_of_bounds, read_only_diagonal):
        raises_like_numpy(program)


def test_protocols():
    x = dnp.arange(6.0).reshape(2, 3)
    for clone in (pickle.loads(pickle.dumps(x)), copy.copy(x), copy.deepcopy(x)):
        numpy.testing.assert_array_equal(numpy.asarray(clone), numpy.asarray(x))
        clone[0, 0] = 99
        assert x[0, 0] == 0
    assert repr(x) == repr(numpy.arange(6.0).reshape(2, 3))
    assert len(x) == 2 and x.shape == (2, 3) and x.ndim == 2 and x.size == 6
    assert [row.tolist() for row in x] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert float(x[1, 2]) == 5.0 and int(x[1, 1]) == 4 and bool(x[0, 1])
    assert x.item(4) == 4.0 and x.T.shape == (3, 2)
    assert numpy.asarray(x) is numpy.asarray(x)  # NumPy holds the elements: no copy
    assert numpy.array(x, copy=True) is not numpy.asarray(x)


def test_sparse_products_take_eager_vectors():
    a = scipy.sparse.random(30, 30, density=0.2, format="csr", random_state=1)
    x = numpy.linspace(0, 1, 30)
    got = dsp.csr_matrix(a) @ dnp.asarray(x)
    numpy.testing.assert_allclose(numpy.asarray(got), a @ x, rtol=1e-12)


def test_loops_of_small_operations_on_deferred_arrays_match_numpy():
    """Forward and back substitution and column updates written as NumPy users write them:
    scalars and short rows or columns of a deferred matrix meet eager vectors (run on
    NumPy once the matrix is computed), elements read and written one by one."""
    def program(np):
        n = 12  # 144 elements: the matrix is deferred, its rows and columns small
        L = np.asarray(numpy.tril(numpy.arange(1.0, n * n + 1).reshape(n, n) / 50.0)) \
            + np.eye(n) * 3.0
        b = np.linspace(1.0, 2.0, n)
        x = np.zeros(n)
        for i in range(n):
            x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
        U = L.T.copy()
        y = np.zeros(n)
        for i in range(n - 1, -1, -1):
            y[i] = (x[i] - U[i, i + 1:] @ y[i + 1:]) / U[i, i]
        M = L * 1.0
        for j in range(n):
            M[:, j] = M[:, j] * 2.0 - y[j]  # a strided column, read and written back
            M[j, j] = M[j, j] + 1.0
        total = 0.0
        for j in range(n):
            total += np.tanh(M[j, j])
        return x, y, M, np.asarray(total)

    want = program(numpy)
    got = program(dnp)
    # Deferred dot products sum in another order than NumPy's BLAS: values agree to the
    # last bits, and one left by cancellation (y[7] ~ 4e-5 from terms ~ 0.05) keeps the
    # terms' absolute rounding error.
    for w, g in zip(want, got):
        numpy.testing.assert_allclose(numpy.asarray(g), w, rtol=1e-13, atol=1e-15)


def test_elements_of_deferred_arrays_read_and_written_one_by_one():
    def program(np):
        a = np.arange(120.0).reshape(10, 12)
        i = np.arange(100, dtype="int32")
        reads = [a[3, 4], a[-1, -2], a[0, 0], i[7], i[-1]]
        a[2:5] += 1.0         # pending work on the store: the write below is a task
        a[3, 1] = 7.5
        reads += [a[3, 1], a[3, 2]]
        a[9, 11] = -1         # nothing pending after the read: written from the host
        i[5] = 3.9            # truncated, as NumPy assigns a float into an int array
        a[0] = 2.0            # a whole row
        reads += [a[9, 11], i[5], a[0, 5]]
        return a, i, reads

    want, got = program(numpy), program(dnp)
    numpy.testing.assert_array_equal(numpy.asarray(got[0]), want[0])
    numpy.testing.assert_array_equal(numpy.asarray(got[1]), want[1])
    assert got[2] == want[2]
    assert [type(v) for v in got[2]] == [type(v) for v in want[2]]


def test_element_indices_out_of_range_raise_numpy_errors():
    a = dnp.arange(120.0).reshape(10, 12)
    for bad in ((10, 0), (0, -13)):
        with pytest.raises(IndexError, match="out of bounds"):
            a[bad]
        with pytest.raises(IndexError, match="out of bounds"):
            a[bad] = 1.0
    with pytest.raises(OverflowError):
        dnp.arange(100, dtype="int32")[3] = 2 ** 40


@pytest.mark.skipif(os.environ.get("DIFFUSE_BACKEND") == "legion",
                    reason="Legion flushes on every host copy: no array is computed early")
def test_small_computed_views_meet_eager_arrays_on_numpy():
    """A small view of a computed deferred array meeting an eager operand runs on NumPy
    (an eager result); with work still writing it, the operation is deferred."""
    big = dnp.asarray(numpy.arange(200.0))  # copied in: computed, nothing pending
    small = dnp.ones(8)
    assert is_eager(big[:8] + small) and is_eager(small * big[10:18])
    assert is_eager(big[:8] * 2.0) and is_eager(big[:16].reshape(2, 8) @ small)
    assert type(big[:8] @ small) is numpy.float64 and big[:8] @ small == 28.0  # as NumPy
    column = dnp.asarray(numpy.arange(200.0).reshape(20, 10))[:, 3]
    assert is_eager(column * 2.0)
    numpy.testing.assert_array_equal(numpy.asarray(column * 2.0),
                                     numpy.arange(200.0).reshape(20, 10)[:, 3] * 2.0)
    big[:8] *= 3.0  # buffered: the store has pending writes
    pending = big[:8] + small
    assert not is_eager(pending)
    numpy.testing.assert_array_equal(numpy.asarray(pending), numpy.arange(8.0) * 3.0 + 1.0)


def test_rows_and_columns_written_from_numpy_values_match_numpy():
    """Recurrences over the columns, then the rows, of a deferred array (each step reads
    what the previous one wrote), and in-place factorization steps: small values NumPy
    holds written into a computed store from the host, larger or pending ones by tasks."""
    def program(np):
        img = np.asarray(numpy.arange(144.0).reshape(12, 12) % 7.0)
        y = np.zeros_like(img)
        y[:, 0] = 0.3 * img[:, 0]
        for j in range(1, 12):
            y[:, j] = 0.3 * img[:, j] + 0.7 * y[:, j - 1]
        z = np.zeros_like(y)
        z[11, :] = 0.3 * y[11, :]
        for i in range(10, -1, -1):
            z[i, :] = 0.3 * y[i, :] + 0.7 * z[i + 1, :]
        z[3] = 5             # a scalar into a row
        z[2:4, 5:7] = -1.0   # a scalar into a block
        a = np.asarray(numpy.arange(1.0, 145.0).reshape(12, 12)) + np.eye(12) * 50.0
        for k in range(11):
            a[k + 1:, k] = a[k + 1:, k] / a[k, k]
            a[k + 1:, k + 1:] -= a[k + 1:, k:k + 1] * a[k:k + 1, k + 1:]
        counts = np.zeros((12, 12), dtype="int32")
        for j in range(12):
            counts[:, j] = numpy.arange(12) * j  # a NumPy array, cast as NumPy casts it
        return y, z, a, counts

    want = program(numpy)
    got = program(dnp)
    # Deferred dot products sum in another order than NumPy's BLAS: values agree to the
    # last bits, and one left by cancellation (y[7] ~ 4e-5 from terms ~ 0.05) keeps the
    # terms' absolute rounding error.
    for w, g in zip(want, got):
        numpy.testing.assert_allclose(numpy.asarray(g), w, rtol=1e-13, atol=1e-15)
        assert numpy.asarray(g).dtype == w.dtype


@pytest.mark.skipif(os.environ.get("DIFFUSE_BACKEND") == "legion",
                    reason="Legion flushes on every host copy: no array is computed early")
def test_small_values_written_into_computed_arrays_need_no_task():
    y = dnp.asarray(numpy.zeros((40, 40)))  # deferred; its rows and columns are small
    y[:, 3] = numpy.ones(40)
    y[7] = 2.0
    assert y._a.pending_use() == "nothing"  # written from the host: nothing buffered
    y[:, 4] = y[:, 3] * 3.0
    assert y._a.pending_use() == "nothing"
    numpy.testing.assert_array_equal(numpy.asarray(y[:, 4]), numpy.r_[[3.0] * 7, 6.0,
                                                                      [3.0] * 32])


def test_small_computed_views_written_into_computed_arrays_match_numpy():
    """``s[t] = x[t]``, ``a[1:] = a[:-1]`` (overlapping), a cast and a broadcast row: the
    values of small views of computed arrays, written into boxes of computed arrays."""
    def program(np):
        x = np.asarray(numpy.arange(300.0).reshape(30, 10) % 11.0)
        s = np.zeros_like(x)
        s[0] = x[0]
        for t in range(1, 30):
            s[t] = 0.25 * x[t] + 0.75 * s[t - 1]
        a = np.asarray(numpy.arange(100.0))
        a[1:51] = a[:50]         # the source overlaps the box it is written into
        c = np.zeros((30, 10), dtype="int32")
        c[:, 2] = x[:, 7]        # a strided column, truncated to int32 as NumPy casts
        c[4:6] = x[29]           # one row broadcast into two
        return s, a, c

    want = program(numpy)
    got = program(dnp)
    # Deferred dot products sum in another order than NumPy's BLAS: values agree to the
    # last bits, and one left by cancellation (y[7] ~ 4e-5 from terms ~ 0.05) keeps the
    # terms' absolute rounding error.
    for w, g in zip(want, got):
        numpy.testing.assert_allclose(numpy.asarray(g), w, rtol=1e-13, atol=1e-15)
        assert numpy.asarray(g).dtype == w.dtype


@pytest.mark.skipif(os.environ.get("DIFFUSE_BACKEND") == "legion",
                    reason="Legion flushes on every host copy: no array is computed early")
def test_recurrences_over_rows_of_computed_arrays_need_no_task():
    x = dnp.asarray(numpy.random.default_rng(3).random((40, 40)))
    s = dnp.zeros_like(x)
    before = _native.tasks_submitted()
    s[0] = x[0]
    for t in range(1, 40):
        s[t] = 0.1 * x[t] + 0.9 * s[t - 1]
    assert _native.tasks_submitted() == before  # every row read and written on the host
    assert s._a.pending_use() == "nothing"


def test_storing_a_box_back_into_itself_copies_nothing():
    """``x[a:b] *= 2`` is ``v = x[a:b]; v *= 2; x[a:b] = v``: the last store is the box
    itself, and costs no task."""
    x = dnp.asarray(numpy.arange(1000.0))
    view = x[100:200]
    before = _native.tasks_submitted()
    x[100:200] = view
    assert _native.tasks_submitted() == before
    x[100:200] *= 2.0
    x[150:250] += x[100:200]  # overlapping, not the same box: copied
    want = numpy.arange(1000.0)
    want[100:200] *= 2.0
    want[150:250] += want[100:200].copy()
    numpy.testing.assert_array_equal(numpy.asarray(x), want)


def test_small_products_of_computed_arrays_run_on_numpy():
    """A product with a small result whose deferred operands are computed runs on NumPy
    even when an operand is larger than the eager limit (a factorization's matrix-vector
    step), and gives NumPy's values; with pending writes on an operand, it is a task."""
    def program(np):
        n = 20  # the matrix (400 elements) and its trailing blocks exceed LIMIT
        m = np.asarray(numpy.arange(1.0, n * n + 1).reshape(n, n) / (n * n))
        spd = m @ m.T + np.eye(n) * n
        lower = np.zeros_like(spd)
        for j in range(n):
            lower[j, j] = np.sqrt(spd[j, j] - lower[j, :j] @ lower[j, :j])
            lower[j + 1:, j] = (spd[j + 1:, j] - lower[j + 1:, :j] @ lower[j, :j]) / lower[j, j]
        row = spd[3] @ spd        # vector @ matrix: a small result
        both = spd[:2] @ spd[:, :2]
        return lower, row, both

    want = program(numpy)
    got = program(dnp)
    for w, g in zip(want, got):
        numpy.testing.assert_allclose(numpy.asarray(g), w, rtol=1e-12, atol=0)


@pytest.mark.skipif(os.environ.get("DIFFUSE_BACKEND") == "legion",
                    reason="Legion flushes on every host copy: no array is computed early")
def test_small_products_of_computed_arrays_need_no_task():
    a = dnp.asarray(numpy.random.default_rng(5).random((30, 30)))  # 900 elements > LIMIT
    x = dnp.ones(30)
    before = _native.tasks_submitted()
    y = a[5:, :10] @ x[:10]
    assert is_eager(y) and _native.tasks_submitted() == before
    a[0] += 1.0  # pending work writes the matrix: it runs first, then the product on NumPy
    assert _native.tasks_submitted() > before
    assert is_eager(a[5:, :10] @ x[:10]) and a._a.pending_use() == "nothing"
    a[0] += 1.0  # a 0-d result stays lazy: no flush for a solver's p @ Ap
    assert not is_eager(a[0, :10] @ x[:10])
    numpy.testing.assert_allclose(numpy.asarray(a[0, :10] @ x[:10]),
                                  numpy.asarray(a)[0, :10].sum(), rtol=1e-12)


# -- arrays a loop reads and writes piece by piece move to NumPy (``DIFFUSE_LOOP_ELEMENTS``) --
@pytest.fixture
def loops(monkeypatch):
    """Deferred arrays of up to 10^4 elements move to NumPy after ``_state.loop_pieces``
    different pieces."""
    monkeypatch.setattr(_state, "loop_limit", 10_000)


def lu_in_place(np, a):
    """LU without pivoting, in place: a loop of element reads, column writes and trailing
    updates larger than the eager limit."""
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] = a[k + 1:, k] / a[k, k]
        a[k + 1:, k + 1:] -= a[k + 1:, k:k + 1] * a[k:k + 1, k + 1:]
    return a


def dominant(n):
    return numpy.random.default_rng(7).random((n, n)) + n * numpy.eye(n)


def test_an_array_a_loop_takes_apart_moves_to_numpy_and_keeps_numpys_values(loops):
    a = dnp.asarray(dominant(40))  # 1600 elements: deferred, above the eager limit
    assert not is_eager(a)
    got = lu_in_place(dnp, a)
    assert got is a and is_eager(a)  # the same object, now NumPy's
    numpy.testing.assert_allclose(numpy.asarray(a), lu_in_place(numpy, dominant(40)),
                                  rtol=1e-12, atol=0)
    # Its views and results no larger than it stay NumPy's (a view writes through) ...
    corner = a[1:, 1:]
    assert is_eager(corner) and is_eager(a * 2.0) and is_eager(a @ a)
    assert is_eager(a / a[0, 0]) and is_eager(numpy.float64(2.0) * a) and is_eager(a.T[::-1])
    corner[0, 0] = -5.0
    assert a[1, 1] == -5.0
    # ... and it still meets deferred arrays.
    b = dnp.asarray(numpy.ones((40, 40)))
    numpy.testing.assert_allclose(numpy.asarray(a + b), numpy.asarray(a) + 1.0)


def test_a_few_pieces_do_not_move_an_array(loops):
    a = dnp.asarray(numpy.arange(1600.0).reshape(40, 40))
    for i in range(_state.loop_pieces - 1):
        assert a[i, i] == 41.0 * i
        assert a[i, i] == 41.0 * i  # (the same piece again)
    assert not is_eager(a)
    a[39, 39] = 1.0
    assert is_eager(a) and a[39, 39] == 1.0 and a[2, 2] == 82.0


def test_boundaries_written_every_step_keep_a_time_loop_deferred(loops):
    """A stencil writing the same boundary rows and columns every step takes few different
    pieces: it stays deferred (and fused)."""
    def program(np):
        u = np.asarray(numpy.zeros((30, 40)))
        for _ in range(4 * _state.loop_pieces):
            u[0] = 1.0
            u[-1] = 2.0
            u[:, 0] = 3.0
            u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return u

    got = program(dnp)
    assert not is_eager(got)
    numpy.testing.assert_allclose(numpy.asarray(got), program(numpy), rtol=1e-12)


def test_arrays_larger_than_the_loop_limit_stay_deferred(loops):
    a = dnp.asarray(numpy.ones((101, 100)))  # 10100 elements > 10^4
    want = numpy.ones((101, 100))
    for i in range(3 * _state.loop_pieces):
        a[i, 0] = float(i)
        want[i, 0] = float(i)
    assert not is_eager(a)
    numpy.testing.assert_array_equal(numpy.asarray(a), want)


def test_an_array_others_share_stays_deferred_and_they_see_its_writes(loops):
    """A box view, another array over the store or an attached strided view (one an
    operation gathered) would miss writes made on NumPy's copy: the array stays deferred while
    one is alive, and moves once none is."""
    def program(np, keep):
        a = np.asarray(numpy.zeros((30, 40)))
        kept = keep(a)
        for i in range(30):
            a[i, i] = i + 1.0
            a[i, 0] += kept.sum()
        return a, kept

    for keep in (lambda a: a[:, 1:], lambda a: a[2], lambda a: a[::2, ::3], lambda a: a.T):
        want_a, want_kept = program(numpy, keep)
        got_a, got_kept = program(dnp, keep)
        assert not is_eager(got_a)
        numpy.testing.assert_array_equal(numpy.asarray(got_a), want_a)
        numpy.testing.assert_array_equal(numpy.asarray(got_kept), want_kept)
    a = dnp.asarray(numpy.zeros((30, 40)))
    box = a[:, 1:]
    assert 30 > 2 * _state.loop_pieces  # (30 different pieces each)
    for i in range(30):
        a[i, 1] = 1.0
    assert not is_eager(a)
    del box
    for i in range(30):
        a[i, 2] = 2.0
    assert is_eager(a)
    numpy.testing.assert_array_equal(numpy.asarray(a)[:, 1:3], numpy.tile([1.0, 2.0], (30, 1)))


def test_strided_views_alive_when_their_array_moves_follow_it(loops):
    """``above = m[i - 1]`` kept across iterations (seam carving): the row, and views of it,
    become NumPy's views of the moved array, seeing its writes and writing into it."""
    def program(np):
        m = np.asarray(numpy.arange(1200.0).reshape(30, 40))
        above = m[0]
        every_other = above[::2]
        for i in range(1, 30):
            above = m[i - 1]
            m[i, 1:-1] = m[i, 1:-1] + np.minimum(above[:-2], above[2:])
            m[i, 0] = m[i, 0] + min(above[0], above[1])
        m[0, 4] = -7.0       # written through the array: the old views see it
        every_other[3] = -9.0  # written through a view: the array sees it
        return m, above, every_other

    got, want = program(dnp), program(numpy)
    assert is_eager(got[0])
    for g, w in zip(got, want):
        numpy.testing.assert_array_equal(numpy.asarray(g), w)
    assert got[2][2] == -7.0 and got[0][0, 6] == -9.0
    # The views that followed work with every kind of operation, as NumPy's views.
    for f in (lambda np, r, e: np.concatenate([r, e]), lambda np, r, e: np.where(r > 600, r, e[0]),
              lambda np, r, e: r.reshape(4, 10).T @ np.ones(4), lambda np, r, e: r[[1, 3]],
              lambda np, r, e: np.sum(r.reshape(4, 10), axis=0), lambda np, r, e: r.astype("int32"),
              lambda np, r, e: np.broadcast_to(e, (2, 20)), lambda np, r, e: np.cumsum(r)):
        numpy.testing.assert_allclose(numpy.asarray(f(dnp, got[1], got[2])),
                                      f(numpy, want[1], want[2]), rtol=1e-13)


def test_recorded_functions_keep_their_arrays_deferred(loops):
    import diffuse

    @diffuse.trace
    def sweep(a):
        for i in range(2 * _state.loop_pieces):
            a[i % 30, 0] = float(i)
        return a * 1.0

    want = numpy.zeros((30, 40))
    for i in range(2 * _state.loop_pieces):
        want[i % 30, 0] = float(i)
    for _ in range(2):  # recorded, then replayed
        a = dnp.asarray(numpy.zeros((30, 40)))
        got = sweep(a)
        assert not is_eager(a)
        numpy.testing.assert_array_equal(numpy.asarray(got), want)


def test_loop_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("DIFFUSE_LOOP_ELEMENTS", "17")
    assert _state.loop_limit_from_env() == 17
    monkeypatch.delenv("DIFFUSE_LOOP_ELEMENTS")
    assert _state.loop_limit_from_env() == 1 << 25
    for bad in ("lots", "-1"):
        monkeypatch.setenv("DIFFUSE_LOOP_ELEMENTS", bad)
        with pytest.raises(ValueError, match="DIFFUSE_LOOP_ELEMENTS"):
            _state.loop_limit_from_env()


def test_ufuncs_of_eager_arrays_with_numpy_scalars_are_numpys():
    """NumPy scalars with eager arrays (``alpha * y`` in a recursion) and diffuse's ufuncs
    on eager arrays run NumPy's ufunc directly: NumPy's values, dtypes and errors."""
    y = numpy.linspace(-1.0, 2.0, 40)
    x = dnp.asarray(y)
    i = dnp.arange(10, dtype="int32")
    cases = [
        (numpy.float64(0.5) * x, numpy.float64(0.5) * y),
        (numpy.float32(2) + i, numpy.float32(2) + numpy.arange(10, dtype="int32")),
        (dnp.minimum(x[:-1], x[1:]), numpy.minimum(y[:-1], y[1:])),
        (dnp.sqrt(dnp.abs(x)), numpy.sqrt(numpy.abs(y))),
        (dnp.add(x, 1), y + 1),
        (dnp.less(x, 0.5), y < 0.5),
        (numpy.multiply(x, True), y * True),
    ]
    for got, want in cases:
        assert is_eager(got)
        assert numpy.asarray(got).dtype == want.dtype
        numpy.testing.assert_array_equal(numpy.asarray(got), want)
    assert type(dnp.add(x[3], 1.0)) is numpy.float64  # NumPy's scalars, as NumPy gives them
    with pytest.raises(ValueError, match="could not be broadcast"):
        dnp.add(x, x[:3])
    with pytest.raises(TypeError):
        dnp.add(x, "a")


def test_larger_arrays_need_pieces_in_proportion_to_their_size_where_copied(loops,
                                                                           monkeypatch):
    from diffuse import _ndarray

    # (as on a runtime that does not hand its buffers over to NumPy: the move copies)
    monkeypatch.setattr(_state, "hands_over_host", False)
    monkeypatch.setattr(_ndarray, "_PIECE_ELEMENTS_LOG2", 6)  # one piece per 64 elements
    a = dnp.asarray(numpy.zeros((40, 40)))  # 1600 elements: 25 pieces
    for i in range(24):
        a[i, 0] = float(i)
    assert not is_eager(a)
    a[24, 0] = 24.0
    assert is_eager(a)
    assert numpy.asarray(a)[:25, 0].tolist() == [float(i) for i in range(25)]


@pytest.mark.skipif(os.environ.get("DIFFUSE_BACKEND") == "legion",
                    reason="Legion's regions are copied to NumPy")
def test_a_moved_array_keeps_its_store_buffer_until_numpy_lets_it_go(loops, monkeypatch):
    from diffuse import _ndarray

    monkeypatch.setattr(_ndarray, "_PIECE_ELEMENTS_LOG2", 6)  # (a copy: 25 pieces)
    _native.flush()
    before = _native.runtime_stats()["store_bytes"]
    a = dnp.asarray(numpy.zeros((40, 40))) + 1.0  # (computed by a task)
    row = a[3]  # a strided view, not attached: it follows
    for i in range(_state.loop_pieces):
        a[i, 0] = float(i)
    assert is_eager(a)
    # NumPy holds the store's own buffer (no copy), so the store's bytes stay in use.
    assert type(a._h.base) is _native.HostMemory
    assert _native.runtime_stats()["store_bytes"] >= before + 1600 * 8
    a[3, 5] = -2.0
    expected = numpy.ones((40, 40))
    expected[:_state.loop_pieces, 0] = numpy.arange(_state.loop_pieces)
    expected[3, 5] = -2.0
    numpy.testing.assert_array_equal(numpy.asarray(a), expected)
    numpy.testing.assert_array_equal(numpy.asarray(row), expected[3])
    del a, row
    assert _native.runtime_stats()["store_bytes"] <= before


@pytest.mark.skipif(os.environ.get("DIFFUSE_BACKEND") == "legion",
                    reason="Legion's regions are copied to NumPy")
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "bool"])
def test_arrays_of_every_dtype_move_in_their_own_buffer(loops, dtype):
    values = (numpy.arange(600).reshape(30, 20) % 3).astype(dtype)
    a = dnp.asarray(values)
    for i in range(_state.loop_pieces):
        assert a[i, 1].item() == values[i, 1]
    assert is_eager(a) and type(a._h.base) is _native.HostMemory
    assert a._h.dtype == values.dtype and a._h.flags.writeable
    numpy.testing.assert_array_equal(numpy.asarray(a), values)


def test_eager_arrays_take_diffuse_arrays_in_their_indices_as_numpy_does():
    host = numpy.arange(48.0).reshape(6, 8)
    deferred_rows = dnp.asarray(numpy.tile([4, 1, 5], 30))  # 90 elements: deferred
    mask = dnp.asarray(numpy.arange(100) % 3 == 0)[:8]  # a deferred view
    cases = [
        (lambda i: i[dnp.asarray([5, 0, 2])], lambda i: i[[5, 0, 2]]),
        (lambda i: i[deferred_rows[:3], 1:], lambda i: i[[4, 1, 5], 1:]),
        (lambda i: i[:, mask], lambda i: i[:, numpy.arange(8) % 3 == 0]),
        (lambda i: i[dnp.asarray([1, 3]), dnp.asarray([0, 7])],
         lambda i: i[numpy.array([1, 3]), numpy.array([0, 7])]),
        (lambda i: i[[1, dnp.asarray(3)]], lambda i: i[[1, 3]]),
        (lambda i: i[dnp.asarray(2), -1], lambda i: i[2, -1]),
    ]
    for diffuse_key, numpy_key in cases:
        a = dnp.asarray(host)  # 48 elements: eager
        assert is_eager(a)
        numpy.testing.assert_array_equal(numpy.asarray(diffuse_key(a)), numpy_key(host))
    a, expected = dnp.asarray(host), host.copy()
    a[deferred_rows[:3], 0] = -1.0
    expected[[4, 1, 5], 0] = -1.0
    a[:, mask] = dnp.asarray(numpy.full(3, 9.0))
    expected[:, numpy.arange(8) % 3 == 0] = 9.0
    numpy.testing.assert_array_equal(numpy.asarray(a), expected)
    with pytest.raises(IndexError):
        a[6, 0]
    with pytest.raises(IndexError):
        a[dnp.asarray([0, 6])] = 1.0


def test_arrays_past_a_quarter_million_elements_need_twice_the_pieces(monkeypatch):
    from diffuse import _ndarray

    monkeypatch.setattr(_state, "loop_limit", 1 << 20)
    big = dnp.asarray(numpy.zeros((520, 520)))  # 270400 elements > 2^18
    assert big.size > _ndarray._LARGE_LOOP_ELEMENTS
    for i in range(2 * _state.loop_pieces - 1):
        big[i, 0] = 1.0
    assert not is_eager(big)
    big[2 * _state.loop_pieces, 0] = 1.0
    assert is_eager(big)
    assert numpy.asarray(big)[:, 0].sum() == 2 * _state.loop_pieces


def test_new_arrays_like_a_numpy_held_one_are_numpy_held(loops):
    a = dnp.asarray(numpy.arange(1600.0).reshape(40, 40))  # 1600 elements: deferred
    assert not is_eager(dnp.zeros_like(a))
    for i in range(_state.loop_pieces):
        a[i, 0] = -1.0
    assert is_eager(a)
    for made, want in ((dnp.zeros_like(a), numpy.zeros((40, 40))),
                       (dnp.ones_like(a, dtype="int32"), numpy.ones((40, 40), "int32")),
                       (dnp.full_like(a, 2.5), numpy.full((40, 40), 2.5))):
        assert is_eager(made)
        assert made.dtype == want.dtype
        numpy.testing.assert_array_equal(numpy.asarray(made), want)
    assert is_eager(dnp.empty_like(a[:, :3])) and dnp.empty_like(a[:, :3]).shape == (40, 3)
    with pytest.raises(OverflowError, match="int32"):
        dnp.full_like(a, 2**40, dtype="int32")
