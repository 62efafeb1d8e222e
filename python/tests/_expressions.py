"""Random NumPy programs and their diffuse twins: expression trees over random views,
dtypes and broadcasting, drawn by hypothesis (test_differential.py, test_eager.py)."""

import numpy
from hypothesis import strategies as st

import diffuse.numpy as dnp

DTYPES = ["float64", "float32", "int64", "int32", "bool"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "less", "greater_equal",
          "equal", "not_equal", "floor_divide", "remainder", "bitwise_and", "bitwise_or",
          "bitwise_xor", "left_shift", "right_shift", "arctan2"]
# Defined on integers and bools only.
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}
FLOAT_UNARY = ["exp", "sqrt", "absolute", "negative", "sin", "tanh", "floor", "ceil", "rint",
               "tan", "arctan", "log1p", "expm1", "sign", "cosh", "isnan", "isfinite"]


def close(got, want, single=False):
    """Equal (floats: to 1e-12 relative, or 1e-4 when float32 arithmetic was involved:
    diffuse's and NumPy's float32 transcendental functions differ by a few ulps, which a
    nested exponential multiplies by its argument)."""
    got, want = numpy.asarray(got), numpy.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        rtol = 1e-4 if single or want.dtype == numpy.float32 else 1e-12
        numpy.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        numpy.testing.assert_array_equal(got, want)


@st.composite
def operand(draw, shape):
    """A NumPy array of `shape` (or a shape that broadcasts to it), maybe a view of a
    larger one, and the same data as a diffuse array."""
    dtype = draw(st.sampled_from(DTYPES))
    if draw(st.booleans()) and len(shape) > 0:
        # Broadcast: drop leading dims or set some to 1.
        shape = tuple(1 if draw(st.booleans()) else n for n in shape[draw(st.integers(0, len(shape) - 1)):])
    seed = draw(st.integers(0, 2**32 - 1))
    rng = numpy.random.default_rng(seed)
    pad = draw(st.integers(0, 2))
    big = tuple(n + 2 * pad for n in shape)
    if dtype == "bool":
        data = rng.random(big) < 0.5
    elif dtype.startswith("int"):
        data = rng.integers(-50, 50, big).astype(dtype)
    else:
        data = rng.uniform(-3, 3, big).astype(dtype)
    window = tuple(slice(pad, pad + n) for n in shape)
    return data[window], dnp.asarray(data)[window]


@st.composite
def expression(draw, shape, depth=0, singles=None):
    """(numpy value, diffuse value) of a random expression of `shape`; appends to
    `singles` when float32 arithmetic is involved."""
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 4)) == 0:
            value = draw(st.sampled_from([2, -1.5, 0.5, True, 3]))
            return value, value
        leaf = draw(operand(shape))
        if leaf[0].dtype == numpy.float32:
            singles.append(True)
        return leaf
    kind = draw(st.sampled_from(["binary", "unary", "where"]))
    a_np, a_d = draw(expression(shape, depth + 1, singles))
    if kind == "unary":
        if numpy.ndim(a_np) == 0:
            return a_np, a_d
        op = draw(st.sampled_from(FLOAT_UNARY))
        a_np = numpy.asarray(a_np, dtype=numpy.result_type(a_np, numpy.float32))
        if a_np.dtype == numpy.float32:
            singles.append(True)
        a_d = a_d.astype(a_np.dtype) if isinstance(a_d, dnp.ndarray) else a_d
        if op == "sqrt":
            return numpy.sqrt(numpy.absolute(a_np)), dnp.sqrt(dnp.absolute(a_d))
        return getattr(numpy, op)(a_np), getattr(dnp, op)(a_d)
    b_np, b_d = draw(expression(shape, depth + 1, singles))
    if kind == "where":
        c_np, c_d = draw(operand(shape))
        return numpy.where(c_np > 0, a_np, b_np), dnp.where(c_d > 0, a_d, b_d)
    op = draw(st.sampled_from(BINARY))
    if numpy.ndim(a_np) == 0 and numpy.ndim(b_np) == 0:
        return a_np, a_d
    kind = numpy.result_type(a_np, b_np).kind
    if op in BITWISE and kind == "f" or op in ("left_shift", "right_shift") and kind == "b":
        op = "maximum"
    if op in ("subtract", "floor_divide", "remainder") and kind == "b":
        op = "not_equal"
    return getattr(numpy, op)(a_np, b_np), getattr(dnp, op)(a_d, b_d)


SHAPES = st.sampled_from([(7,), (1,), (4, 5), (3, 1), (2, 3, 4)])
