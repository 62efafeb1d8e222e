"""diffuse.numpy against NumPy on random programs: random expression trees over random
views, dtypes and broadcasting, then reductions; results must equal NumPy's (integers and
bools exactly, floats to the JIT's documented tolerance)."""

import os
import sys

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diffuse.numpy as dnp

sys.path.insert(0, os.path.dirname(__file__))
from _expressions import SHAPES, close, expression, operand  # noqa: E402

@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_random_expressions_match_numpy(data):
    shape = data.draw(SHAPES)
    singles = []
    with numpy.errstate(all="ignore"):
        want, got = data.draw(expression(shape, singles=singles))
    if numpy.ndim(want) == 0:
        return
    close(got, want, single=bool(singles))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_reductions_with_axes_match_numpy(data):
    shape = data.draw(st.sampled_from([(6,), (4, 5), (2, 3, 4)]))
    a_np, a_d = data.draw(operand(shape))
    if a_np.shape != shape:
        return
    axis = data.draw(st.sampled_from([None] + list(range(len(shape)))))
    keepdims = data.draw(st.booleans())
    for name in ["sum", "max", "min", "mean", "any", "all"]:
        want = getattr(numpy, name)(a_np, axis=axis, keepdims=keepdims)
        got = getattr(dnp, name)(a_d, axis=axis, keepdims=keepdims)
        close(got, want)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_count_nonzero_matches_numpy(data):
    a_np, a_d = data.draw(operand((4, 5)))
    assert dnp.count_nonzero(a_d) == numpy.count_nonzero(a_np)


def test_broadcast_errors_read_like_numpy():
    with pytest.raises(ValueError, match=r"operands could not be broadcast together with shapes \(3,4\) \(5,\)"):
        dnp.ones((3, 4)) + dnp.ones(5)


def test_scalars_stay_lazy_until_needed():
    x = dnp.arange(10.0)
    before = dnp._native.tasks_submitted()
    s = (x * x).sum()
    assert isinstance(s, dnp.ndarray) and s.shape == ()
    assert dnp._native.tasks_submitted() > before
    assert float(s) == 285.0


def test_interop_with_numpy():
    x = dnp.array([[1.0, 2.0], [3.0, 4.0]])
    assert numpy.asarray(x).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert len(x) == 2 and x.ndim == 2 and x.size == 4 and x.dtype == numpy.float64
    assert [float(v.sum()) for v in x] == [3.0, 7.0]
    assert "array([[1., 2.]," in repr(x)
    assert x[1, 0] == 3.0
    # NumPy defers to diffuse's reflected operator: the result is a diffuse array.
    mixed = numpy.ones(2) + dnp.ones(2)
    assert isinstance(mixed, dnp.ndarray) and numpy.asarray(mixed).tolist() == [2.0, 2.0]


def test_fallback_warns_once_and_is_correct():
    x = dnp.arange(6.0)
    with pytest.warns(RuntimeWarning, match="nancumsum"):
        got = dnp.nancumsum(x)
    numpy.testing.assert_array_equal(numpy.asarray(got), numpy.nancumsum(numpy.arange(6.0)))


def test_views_alias_their_base():
    g = dnp.zeros((4, 4))
    inner = g[1:3, 1:3]
    inner[...] = 5.0
    assert float(g.sum()) == 20.0
    inner += 1
    assert numpy.asarray(g)[1, 1] == 6.0


def test_divmod_and_integer_powers_match_numpy():
    a = numpy.arange(-6, 6)
    d = dnp.asarray(a)
    for got, want in zip(divmod(d, 4), divmod(a, 4)):
        close(got, want)
    for got, want in zip(dnp.divmod(7, d[d.size // 2 + 1:]), numpy.divmod(7, a[7:])):
        close(got, want)
    close(d ** 3, a ** 3)
    close(d ** 0, a ** 0)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        d ** -1


def test_out_of_memory_is_a_memory_error_and_the_runtime_goes_on():
    huge = dnp.zeros((200_000, 200_000))  # 320 GB: more than any test machine has
    with pytest.raises(MemoryError, match=r"out of memory .* needs 320000000000 bytes"):
        float(huge.sum())
    small = dnp.arange(4.0)
    assert float((small * 2).sum()) == 12.0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("exponent", [2, 2.0, 0.5, -1, -1.0])
def test_powers_numpy_computes_without_pow_are_bitwise(dtype, exponent):
    """NumPy computes float ``x ** 2``, ``** 0.5`` and ``** -1`` (operator or ``power``) as
    ``x * x``, ``sqrt(x)`` and ``1 / x``, whose last bit can differ from libm's ``pow``:
    diffuse does the same, so the results are NumPy's bit for bit."""
    x = numpy.random.default_rng(1).random(20000).astype(dtype) * 3 + 0.01
    a = dnp.array(x)
    numpy.testing.assert_array_equal(numpy.asarray(a ** exponent), x ** exponent)
    numpy.testing.assert_array_equal(numpy.asarray(dnp.power(a, exponent)),
                                     numpy.power(x, exponent))
