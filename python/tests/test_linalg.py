"""``linalg.cholesky``, ``inv``, ``det`` and ``solve`` against NumPy: native on deferred
arrays (a fallback warning fails these tests), also when NumPy's own functions are given
diffuse arrays; NumPy's dtypes (float32 stays float32, integers become float64) and shapes,
values within rounding of NumPy's (faer's factorizations round differently from LAPACK's),
and NumPy's ``LinAlgError`` or ``ValueError`` where NumPy raises."""

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
