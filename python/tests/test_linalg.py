"""``linalg.cholesky``, ``inv``, ``det``, ``solve``, ``qr``, ``svd``, ``eigh`` and ``lstsq``
against NumPy (the vectors of the decompositions up to their signs, which they leave free):
native on deferred arrays (a fallback warning fails these tests), also when NumPy's own
functions are given diffuse arrays; NumPy's dtypes (float32 stays float32, integers become
float64) and shapes, values within rounding of NumPy's (faer's factorizations round
differently from LAPACK's), and NumPy's ``LinAlgError`` or ``ValueError`` where NumPy
raises."""

import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp


@st.composite
def _matrices(draw, max_side=6):
    """A well-conditioned symmetric positive definite matrix (dominant diagonal) of a random
    dtype, as NumPy's array and a diffuse one (a view of a larger array, or whole)."""
    n = draw(st.integers(0, max_side))
    dtype = draw(st.sampled_from([onp.float64, onp.float32, onp.int64]))
    values = draw(hnp.arrays(onp.int64, (n, n), elements=st.integers(-4, 4)))
    x = (values + values.T + (8 * n + 1) * onp.eye(n, dtype=onp.int64)).astype(dtype)
    if draw(st.booleans()) and n:
        big = onp.zeros((n + 2, n + 1), dtype)
        big[1:-1, 1:] = x
        return x, dnp.array(big)[1:-1, 1:]
    return x, dnp.array(x)


def _native(call):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        return call()


def _close(got, want):
    got, want = onp.asarray(got), onp.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    rtol = 1e-4 if want.dtype == onp.float32 else 1e-10
    onp.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), name=st.sampled_from(["cholesky", "inv", "det"]),
       through_numpy=st.booleans())
def test_factorizations_match_numpy(data, name, through_numpy):
    x, a = data.draw(_matrices())
    want = getattr(onp.linalg, name)(x)
    module = onp.linalg if through_numpy else dnp.linalg
    got = _native(lambda: getattr(module, name)(a))
    assert isinstance(got, dnp.ndarray)
    _close(got, want)


def test_cholesky_upper_is_the_transpose():
    x = onp.array([[4.0, 2.0], [2.0, 3.0]])
    _close(_native(lambda: dnp.linalg.cholesky(dnp.array(x), upper=True)),
           onp.linalg.cholesky(x, upper=True))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), columns=st.integers(0, 3), through_numpy=st.booleans())
def test_solve_matches_numpy(data, columns, through_numpy):
    x, a = data.draw(_matrices())
    n = x.shape[0]
    shape = (n,) if columns == 0 else (n, columns)
    rhs = data.draw(hnp.arrays(data.draw(st.sampled_from([onp.float64, onp.float32])), shape,
                               elements=st.integers(-9, 9)))
    want = onp.linalg.solve(x, rhs)
    module = onp.linalg if through_numpy else dnp.linalg
    got = _native(lambda: module.solve(a, dnp.array(rhs)))
    _close(got, want)


@pytest.mark.parametrize("name,matrix", [
    ("cholesky", [[1.0, 2.0], [2.0, 1.0]]),  # indefinite
    ("inv", [[1.0, 2.0], [2.0, 4.0]]),  # singular
    ("solve", [[1.0, 2.0], [2.0, 4.0]]),
    ("inv", [1.0, 2.0]),  # 1-d
    ("cholesky", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),  # not square
])
def test_numpys_errors(name, matrix):
    x = onp.array(matrix)
    args = (x, onp.ones(2)) if name == "solve" else (x,)
    with pytest.raises(Exception) as numpy_error:
        getattr(onp.linalg, name)(*args)
    dargs = tuple(dnp.array(v) for v in args)
    with pytest.raises(type(numpy_error.value), match=str(numpy_error.value)):
        _native(lambda: getattr(dnp.linalg, name)(*dargs))


def test_solve_with_mismatched_right_hand_sides_raises_numpys_error():
    x = onp.eye(3)
    for rhs in (onp.ones(2), onp.ones((2, 2))):
        with pytest.raises(ValueError) as numpy_error:
            onp.linalg.solve(x, rhs)
        with pytest.raises(ValueError, match=str(numpy_error.value)[:30]):
            dnp.linalg.solve(dnp.array(x), dnp.array(rhs))


def test_the_determinant_of_a_singular_matrix_is_zero():
    got = _native(lambda: dnp.linalg.det(dnp.array(onp.array([[1.0, 2.0], [2.0, 4.0]]))))
    assert float(got) == 0.0


@st.composite
def _rectangular(draw, max_side=6):
    """A random matrix of a random shape and dtype (full rank, its leading square part
    diagonally dominant), as NumPy's array and a diffuse one (a transposed view, or whole)."""
    m, n = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    dtype = draw(st.sampled_from([onp.float64, onp.float32, onp.int64]))
    values = draw(hnp.arrays(onp.int64, (m, n), elements=st.integers(-4, 4)))
    x = (values + 9 * onp.eye(m, n, dtype=onp.int64)).astype(dtype)
    if draw(st.booleans()):
        return x, dnp.array(onp.ascontiguousarray(x.T)).T
    return x, dnp.array(x)


def _same_up_to_signs(got, want, axis):
    """``got`` is NumPy's ``want`` up to the sign of each vector along ``axis`` (columns for
    0, rows for 1), which decompositions leave free."""
    got, want = onp.asarray(got, dtype=onp.float64), onp.asarray(want, dtype=onp.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    signs = onp.sign(onp.sum(got * want, axis=axis, keepdims=True))
    onp.testing.assert_allclose(got * signs, want, rtol=1e-4, atol=1e-4)


@settings(max_examples=40, deadline=None)
@given(case=_rectangular(), mode=st.sampled_from(["reduced", "complete", "r"]))
def test_qr_matches_numpy_up_to_signs(case, mode):
    x, a = case
    got, want = _native(lambda: dnp.linalg.qr(a, mode=mode)), onp.linalg.qr(x, mode=mode)
    if mode == "r":
        assert isinstance(got, dnp.ndarray) and got.dtype == want.dtype
        _same_up_to_signs(got, want, 1)
        return
    q, r = got
    assert type(got).__name__ == "QRResult" and q.dtype == want.Q.dtype
    k = min(x.shape)
    _same_up_to_signs(q[:, :k], want.Q[:, :k], 0)
    _same_up_to_signs(r, want.R, 1)
    onp.testing.assert_allclose(onp.asarray(q @ r), x, rtol=1e-4, atol=1e-4)


@settings(max_examples=40, deadline=None)
@given(case=_rectangular(), full=st.booleans(), uv=st.booleans())
def test_svd_matches_numpy_up_to_signs(case, full, uv):
    x, a = case
    got = _native(lambda: dnp.linalg.svd(a, full_matrices=full, compute_uv=uv))
    want = onp.linalg.svd(x, full_matrices=full, compute_uv=uv)
    if not uv:
        assert got.dtype == want.dtype
        onp.testing.assert_allclose(onp.asarray(got), want, rtol=1e-4)
        return
    u, s, vh = got
    assert [t.shape for t in got] == [t.shape for t in want]
    onp.testing.assert_allclose(onp.asarray(s), want.S, rtol=1e-4)
    k = min(x.shape)
    _same_up_to_signs(u[:, :k], want.U[:, :k], 0)
    _same_up_to_signs(vh[:k], want.Vh[:k], 1)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), upper=st.booleans())
def test_eigh_matches_numpy_up_to_signs(data, upper):
    x, a = data.draw(_matrices())
    if x.size == 0:
        return
    uplo = "U" if upper else "L"
    w, v = _native(lambda: dnp.linalg.eigh(a, UPLO=uplo))
    want = onp.linalg.eigh(x, UPLO=uplo)
    assert w.dtype == want.eigenvalues.dtype
    onp.testing.assert_allclose(onp.asarray(w), want.eigenvalues, rtol=1e-4)
    # (Eigenvectors of a repeated eigenvalue are any orthonormal basis of its space: the
    # vectors are checked by their equations.)
    v, w = onp.asarray(v, dtype=onp.float64), onp.asarray(w, dtype=onp.float64)
    onp.testing.assert_allclose(x @ v, v * w, rtol=1e-4, atol=1e-3)
    onp.testing.assert_allclose(v.T @ v, onp.eye(len(w)), atol=1e-4)
    onp.testing.assert_allclose(onp.asarray(dnp.linalg.eigvalsh(a, UPLO=uplo)),
                                want.eigenvalues, rtol=1e-4)


@settings(max_examples=40, deadline=None)
@given(case=_rectangular(), columns=st.integers(0, 2))
def test_lstsq_matches_numpy(case, columns):
    x, a = case
    b = onp.arange(x.shape[0] * max(columns, 1), dtype=onp.float64).reshape(x.shape[0], -1)
    b = b[:, 0] if columns == 0 else b
    got = _native(lambda: dnp.linalg.lstsq(a, dnp.array(b), rcond=None))
    want = onp.linalg.lstsq(x, b, rcond=None)
    for g, w in zip((got[0], got[1], got[3]), (want[0], want[1], want[3])):
        g = onp.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        onp.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    assert got[2] == want[2]
