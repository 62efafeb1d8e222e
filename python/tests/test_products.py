"""Products of arrays against NumPy: ``@``/``matmul`` with operands transposed in place
(never gathered), stacks of matrices broadcast as NumPy broadcasts them, ``dot``, ``vdot``,
``inner``, ``outer`` and ``tensordot``, all native (no fallback), with NumPy's dtypes,
values and errors."""

import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffuse.numpy as dnp
from diffuse._ndarray import _StridedView


def _values(shape, dtype, seed):
    """Small integers in ``dtype`` (so every summation order is exact), of ``shape``."""
    rng = onp.random.default_rng(seed)
    return rng.integers(-8, 9, size=shape).astype(dtype)


def _native(f):
    """``f()`` with any fallback to NumPy an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        return f()


def _same(got, want):
    got = onp.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    onp.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 7), k=st.integers(0, 7), n=st.integers(0, 7),
       ta=st.booleans(), tb=st.booleans(), vector=st.booleans(),
       dtype=st.sampled_from(["float64", "float32", "int64", "int32"]))
def test_transposed_operands_are_read_in_place(m, k, n, ta, tb, vector, dtype):
    """``op(A) @ op(B)`` and ``op(A) @ x`` / ``x @ op(A)`` with ``op`` a transpose view or
    none: NumPy's values, and a transpose view is never gathered (its elements were not
    copied out of the store)."""
    a_host = _values((k, m) if ta else (m, k), dtype, 1)
    b_host = _values((n, k) if tb else (k, n), dtype, 2)
    a, b = dnp.asarray(a_host), dnp.asarray(b_host)
    a_op, b_op = (a.T if ta else a), (b.T if tb else b)
    a_np, b_np = (a_host.T if ta else a_host), (b_host.T if tb else b_host)
    if vector:
        x_host = _values((k,), dtype, 3)
        _same(_native(lambda: a_op @ dnp.asarray(x_host)), a_np @ x_host)
        y_host = _values((m,), dtype, 4)
        _same(_native(lambda: dnp.asarray(y_host) @ a_op), y_host @ a_np)
    else:
        _same(_native(lambda: a_op @ b_op), a_np @ b_np)
    for view in (a_op, b_op):
        if isinstance(view, _StridedView):
            assert view._values is None, "a transposed operand was gathered"


def test_transposed_windows_and_large_products_match_numpy():
    """Transposes of windows (``A[1:, 2:].T``) read in place, and products past the GEMM's
    blocks (float rounding: allclose)."""
    rng = onp.random.default_rng(5)
    a_host, b_host = rng.random((90, 130)), rng.random((120, 130))
    a, b = dnp.asarray(a_host), dnp.asarray(b_host)
    window = a[1:, 2:]
    got = _native(lambda: window.T @ b[:89, 5:105])
    want = a_host[1:, 2:].T @ b_host[:89, 5:105]
    onp.testing.assert_allclose(onp.asarray(got), want, rtol=1e-12)
    onp.testing.assert_allclose(onp.asarray(_native(lambda: a @ b.T)), a_host @ b_host.T,
                                rtol=1e-12)
    onp.testing.assert_allclose(onp.asarray(_native(lambda: a.T @ a[:40, :90].T)),
                                a_host.T @ a_host[:40, :90].T, rtol=1e-12)
    y = rng.random(90)
    onp.testing.assert_allclose(onp.asarray(_native(lambda: a.T @ dnp.asarray(y))),
                                a_host.T @ y, rtol=1e-12)


@pytest.mark.parametrize("shapes", [
    ((2, 3, 4), (4, 5)),
    ((3, 2, 1, 4), (4, 4)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (1, 4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 2)),
    ((2, 3, 0), (0, 2)),
])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_stacks_of_matrices_broadcast_as_numpys(shapes, dtype):
    """``matmul`` of stacks (``(b, m, k) @ (k, n)``, ``(n, q, 1, p) @ (p, p)``, both sides
    stacks, broadcast batch dimensions): NumPy's shapes and values, natively."""
    x, y = _values(shapes[0], dtype, 6), _values(shapes[1], dtype, 7)
    _same(_native(lambda: dnp.matmul(dnp.asarray(x), dnp.asarray(y))), onp.matmul(x, y))
    # A transposed stack on the left (not contiguous: copied into rows, as NumPy does).
    if len(shapes[0]) == 3 and len(shapes[1]) == 2:
        xt = onp.ascontiguousarray(onp.swapaxes(x, 1, 2))
        got = _native(lambda: dnp.swapaxes(dnp.asarray(xt), 1, 2) @ dnp.asarray(y))
        _same(got, onp.swapaxes(xt, 1, 2) @ y)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_dot_vdot_inner_outer_tensordot_match_numpy(dtype):
    """NumPy's other products on vectors, matrices and stacks, with its result dtypes."""
    a, b = _values((3, 4), dtype, 8), _values((4, 5), dtype, 9)
    c, v, w = _values((5, 4), dtype, 10), _values((4,), dtype, 11), _values((4,), dtype, 12)
    s = _values((2, 3, 4), dtype, 13)
    d = {name: dnp.asarray(x) for name, x in dict(a=a, b=b, c=c, v=v, w=w, s=s).items()}
    cases = {
        "dot matrices": (lambda np, x: np.dot(x["a"], x["b"])),
        "dot matrix vector": (lambda np, x: np.dot(x["a"], x["v"])),
        "dot vectors": (lambda np, x: np.dot(x["v"], x["w"])),
        "dot stack matrix": (lambda np, x: np.dot(x["s"], x["b"])),
        "dot scalar": (lambda np, x: np.dot(x["a"], 3)),
        "method dot": (lambda np, x: x["a"].dot(x["b"])),
        "vdot": (lambda np, x: np.vdot(x["a"], x["a"])),
        "inner vectors": (lambda np, x: np.inner(x["v"], x["w"])),
        "inner matrices": (lambda np, x: np.inner(x["a"], x["c"])),
        "inner vector matrix": (lambda np, x: np.inner(x["v"], x["c"])),
        "inner stack matrix": (lambda np, x: np.inner(x["s"], x["c"])),
        "outer": (lambda np, x: np.outer(x["v"], x["a"])),
        "tensordot 1": (lambda np, x: np.tensordot(x["a"], x["b"], 1)),
        "tensordot 2": (lambda np, x: np.tensordot(x["s"], x["a"], 2)),
        "tensordot 0": (lambda np, x: np.tensordot(x["v"], x["w"], 0)),
        "tensordot axes": (lambda np, x: np.tensordot(x["s"], x["c"], axes=([2], [1]))),
        "tensordot pairs": (lambda np, x: np.tensordot(x["s"], x["a"], axes=([1, 2], [0, 1]))),
        "numpy's own dot": (lambda np, x: onp.dot(x["a"], x["b"])),
    }
    hosts = dict(a=a, b=b, c=c, v=v, w=w, s=s)
    for name, f in cases.items():
        want = onp.asarray(f(onp, hosts))
        got = onp.asarray(_native(lambda: f(dnp, d)))
        assert got.shape == want.shape and got.dtype == want.dtype, name
        onp.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("call", [
    lambda np, x, y: np.matmul(x((3, 4)), y((5, 2))),
    lambda np, x, y: np.matmul(x((4,)), y((3,))),
    lambda np, x, y: np.matmul(x((2, 3, 4)), y((3, 4, 2))),
    lambda np, x, y: np.matmul(x(()), y((3,))),
    lambda np, x, y: np.dot(x((3, 4)), y((5, 2))),
    lambda np, x, y: np.dot(x((4,)), y((3,))),
    lambda np, x, y: np.inner(x((3, 4)), y((2, 5))),
    lambda np, x, y: np.tensordot(x((3, 4)), y((3, 4)), 1),
    lambda np, x, y: np.tensordot(x((3, 4)), y((3, 4)), axes=([0], [1])),
])
def test_bad_shapes_raise_numpys_errors(call):
    """Shapes that do not multiply: NumPy's exception type and message."""
    def arrays(np):
        return lambda shape: np.asarray(onp.ones(shape))
    with pytest.raises(Exception) as expected:
        call(onp, arrays(onp), arrays(onp))
    with pytest.raises(type(expected.value)) as got:
        _native(lambda: call(dnp, arrays(dnp), arrays(dnp)))
    assert str(got.value) == str(expected.value)
