"""Complex numbers (complex128, complex64) against NumPy: creation, element-wise operations
with NumPy's promotion (NEP 50 scalars), the parts (``real``, ``imag``: views writing through
to the array, as NumPy's), casts, NumPy's errors, special values (signed zeros, infinities,
NaNs) and small (eager) arrays. Every operation runs natively on deferred arrays: a fallback
warning fails these tests. Values are NumPy's bit for bit (each part, signed zeros and NaNs
where NumPy has them) where diffuse computes them as NumPy does, within rounding for the
transcendental functions."""

import itertools
import operator
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp
from diffuse import _state

COMPLEX = [onp.complex128, onp.complex64]
REAL = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]

# Element-wise operations, exact where diffuse computes NumPy's bits (arithmetic, parts,
# square roots, classification), within rounding where the libraries' algorithms may differ.
EXACT_UNARY = ["negative", "conjugate", "conj", "absolute", "sqrt", "square", "real", "imag",
               "isnan", "isinf", "isfinite", "rint"]
ROUNDED_UNARY = ["exp", "log", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
                 "cosh", "tanh", "log2", "log10", "log1p", "expm1", "sign", "angle"]
EXACT_BINARY = ["add", "subtract", "multiply", "true_divide", "maximum", "minimum", "less",
                "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
                "logical_or"]


@pytest.fixture(autouse=True)
def _native_only():
    """A fallback warning (an operation running on NumPy) fails the test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        yield


def _elements(dtype, scale=3):
    """Finite values of ``dtype`` of magnitude at most ``scale``."""
    dtype = onp.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind == "i":
        return st.integers(-scale, scale).map(dtype.type)
    if dtype.kind == "f":
        return hnp.from_dtype(dtype, allow_nan=False, allow_infinity=False,
                              min_value=-scale, max_value=scale)
    return hnp.from_dtype(dtype, allow_nan=False, allow_infinity=False, max_magnitude=scale)


@st.composite
def _operands(draw, dtypes=COMPLEX, shape=None, scale=3):
    """(a NumPy array, the same as a deferred diffuse array or a view of one: a slice, a
    transpose or a strided slice); of ``shape`` when given (a box of a larger array, or the
    array)."""
    dtype = draw(st.sampled_from(dtypes))
    if shape is not None:
        box = tuple(slice(0, n) for n in shape)
        larger = tuple(n + draw(st.integers(0, 1)) for n in shape)
        x = draw(hnp.arrays(dtype, larger, elements=_elements(dtype, scale)))
        return x[box], dnp.array(x)[box]
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    x = draw(hnp.arrays(dtype, shape, elements=_elements(dtype, scale)))
    a = dnp.array(x)
    assert type(a) is dnp.ndarray
    view = draw(st.sampled_from(["whole", "slice", "transpose", "step"]))
    if view == "slice" and x.shape[0] > 1:
        a, x = a[1:], x[1:]
    elif view == "transpose":
        a, x = a.T, x.T
    elif view == "step" and x.shape[-1] > 1:
        a, x = a[..., ::2], x[..., ::2]
    return x, a


def _parts(x):
    return (x.real, x.imag) if x.dtype.kind == "c" else (x,)


def _same(got, want, exact=True):
    """``got`` (diffuse's) has ``want``'s (NumPy's) dtype and shape, and its values: each
    part bit for bit (NaNs and signed zeros where NumPy has them) when ``exact``, else within
    rounding of NumPy's (relative to the magnitude of complex numbers)."""
    got, want = onp.asarray(got), onp.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (got, want)
    if exact or want.dtype.kind not in "fc":
        for g, w in zip(_parts(got), _parts(want)):
            onp.testing.assert_array_equal(g, w)
            if w.dtype.kind == "f":
                assert (onp.signbit(g) == onp.signbit(w))[~onp.isnan(w)].all(), (got, want)
    else:
        rtol = 1e-5 if want.dtype in (onp.complex64, onp.float32) else 1e-12
        onp.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)


def _both(function, *args, exact=True):
    """``function(module, *args)`` on NumPy (NumPy's arrays) and on diffuse (the diffuse
    arrays), compared; where NumPy raises, diffuse raises the same exception (NumPy's own
    class, or the built-in one it derives from) with its message. ``args`` are pairs
    ``(numpy value, diffuse value)`` or plain values."""
    numpy_args = [a[0] if isinstance(a, tuple) else a for a in args]
    diffuse_args = [a[1] if isinstance(a, tuple) else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        try:
            want = function(onp, *numpy_args)
        except Exception as e:
            builtin = next(t for t in type(e).__mro__ if t.__module__ == "builtins")
            with pytest.raises(builtin) as raised:
                function(dnp, *diffuse_args)
            assert str(raised.value) == str(e)
            return None
        got = function(dnp, *diffuse_args)
    if isinstance(want, onp.ndarray):
        assert isinstance(got, dnp.ndarray), type(got)
    _same(got, want, exact)
    return got


# -- creation ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_creation_makes_diffuse_complex_arrays(dtype):
    name = onp.dtype(dtype).name
    template = dnp.array(onp.arange(6.0).reshape(2, 3).astype(dtype))
    made = {
        "zeros": (dnp.zeros((2, 3), dtype), onp.zeros((2, 3), dtype)),
        "ones": (dnp.ones((2, 3), dtype=dtype), onp.ones((2, 3), dtype=dtype)),
        "empty": (dnp.empty(4, name), onp.zeros(4, name)),
        "full": (dnp.full((3,), 1.5 - 2j, dtype), onp.full((3,), 1.5 - 2j, dtype)),
        "full of a real value": (dnp.full(3, 2.0, dtype), onp.full(3, 2.0, dtype)),
        "full infers complex": (dnp.full(2, 1j), onp.full(2, 1j)),
        "zeros_like": (dnp.zeros_like(template), onp.zeros((2, 3), dtype)),
        "ones_like": (dnp.ones_like(template), onp.ones((2, 3), dtype)),
        "full_like": (dnp.full_like(template, -1j), onp.full((2, 3), -1j, dtype)),
        "like a real array": (dnp.zeros_like(dnp.ones(3), dtype=dtype), onp.zeros(3, dtype)),
        "eye": (dnp.eye(3, dtype=dtype), onp.eye(3, dtype=dtype)),
        "array of a list": (dnp.array([1 + 2j, 3, -0.5j], dtype=dtype),
                            onp.array([1 + 2j, 3, -0.5j], dtype=dtype)),
        "asarray of NumPy's": (dnp.asarray(onp.array([1j, 2], dtype)), onp.array([1j, 2], dtype)),
        "linspace": (dnp.linspace(-1 + 2j, 3 - 1j, 9, dtype=dtype),
                     onp.linspace(-1 + 2j, 3 - 1j, 9, dtype=dtype)),
    }
    for what, (got, want) in made.items():
        assert type(got) is dnp.ndarray, what
        _same(got, want)
    _same(dnp.linspace(0, 1 + 2j, 7), onp.linspace(0, 1 + 2j, 7), exact=False)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_numpy_arrays_convert_both_ways(dtype):
    x = (onp.arange(12.0) - 3.25j * onp.arange(12.0)[::-1]).astype(dtype).reshape(3, 4)
    a = dnp.array(x)
    assert type(a) is dnp.ndarray and a.dtype == x.dtype
    _same(onp.asarray(a), x)
    _same(onp.asarray(a.T[::2]), x.T[::2])  # a strided view
    assert a.item(1, 2) == x.item(1, 2) and type(a[1:2, 2:3].item()) is complex
    assert a[2, 1] == x[2, 1] and type(a[2, 1]) is dtype
    assert complex(a[1:2, 0:1]) == complex(x[1, 0])
    with pytest.raises(TypeError):
        float(a[0:1, 0:1])
    # Other complex dtypes and byte orders become complex128.
    _same(dnp.array(onp.array([1 + 1j], onp.clongdouble)), onp.array([1 + 1j]))
    swapped = x.astype(x.dtype.newbyteorder())
    _same(dnp.array(swapped), x)


# -- element-wise operations ---------------------------------------------------------------
@settings(max_examples=120, deadline=None)
@given(data=st.data(), op=st.sampled_from(EXACT_UNARY + ROUNDED_UNARY))
def test_unary_operations_match_numpy(data, op):
    x, a = data.draw(_operands())
    _both(lambda m, v: getattr(m, op)(v), (x, a), exact=op in EXACT_UNARY)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), op=st.sampled_from(EXACT_BINARY + ["power"]))
def test_binary_operations_match_numpy(data, op):
    """Two arrays of complex dtypes, or one of a complex and one of a real dtype, broadcast
    together (one of them a row), in both orders."""
    x, a = data.draw(_operands())
    other_dtypes = data.draw(st.sampled_from([COMPLEX, REAL]))
    shape = x.shape if data.draw(st.booleans()) else x.shape[-1:]
    y, b = data.draw(_operands(other_dtypes, shape=shape))
    if data.draw(st.booleans()):
        (x, a), (y, b) = (y, b), (x, a)
    _both(lambda m, u, v: getattr(m, op)(u, v), (x, a), (y, b), exact=op != "power")


SCALARS = [2, -3, 2.5, -0.0, True, 1.5j, -2 + 0.5j, onp.float32(2.5), onp.float64(-1.25),
           onp.int32(3), onp.complex64(1 - 1j), onp.complex128(0.5j)]


@pytest.mark.parametrize("dtype", COMPLEX + REAL)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_scalars_promote_as_numpy(dtype, scalar):
    """A scalar meeting an array: NumPy's result dtype (NEP 50: Python numbers take the
    array's dtype where they fit its kind), on either side, for the operators too."""
    if onp.dtype(dtype).kind != "c" and not isinstance(scalar, (complex, onp.complexfloating)):
        pytest.skip("no complex number involved")
    x = onp.arange(1, 7).astype(dtype) * (1 - 1j if onp.dtype(dtype).kind == "c" else 1)
    a = dnp.array(x)
    for op in ("add", "subtract", "multiply", "true_divide", "maximum", "less", "equal"):
        _both(lambda m, v: getattr(m, op)(v, scalar), (x, a))
        _both(lambda m, v: getattr(m, op)(scalar, v), (x, a))
    _both(lambda m, v: v * scalar + scalar / v - (scalar == v), (x, a))
    _both(lambda m, v: v ** 2 + scalar ** v, (x, a), exact=False)


@pytest.mark.parametrize("left", COMPLEX + REAL)
@pytest.mark.parametrize("right", COMPLEX)
def test_arrays_promote_as_numpy(left, right):
    x = onp.array([1, 0, 2, 3] * 4).astype(left)
    y = (onp.arange(16) - 2j).astype(right)
    _both(lambda m, u, v: u + v * u - v / (u + 1), (x, dnp.array(x)), (y, dnp.array(y)))


def test_complex_scalar_promotion_table():
    """The NEP 50 cases the package derives from ``numpy.result_type``, spelled out: a
    Python complex keeps a float32 array's precision, a complex64 array meeting float64 or
    int64 becomes complex128, Python floats and ints keep a complex array's dtype."""
    cases = [(onp.float32, 1j, onp.complex64), (onp.float64, 1j, onp.complex128),
             (onp.int64, 1j, onp.complex128), (onp.int32, 1j, onp.complex128),
             (onp.bool_, 1j, onp.complex128), (onp.complex64, 2.5, onp.complex64),
             (onp.complex64, 7, onp.complex64), (onp.complex64, onp.float64(2), onp.complex128),
             (onp.complex64, onp.float32(2), onp.complex64),
             (onp.complex64, onp.int64(2), onp.complex128)]
    for dtype, scalar, result in cases:
        assert onp.result_type(onp.ones(1, dtype), scalar) == result
        assert (dnp.ones(40, dtype) + scalar).dtype == result
        assert (scalar * dnp.ones(40, dtype)).dtype == result


def _add_and_multiply_in_place(m, t, v):
    t += v
    t *= v
    return t


def test_inplace_operations_cast_as_numpy():
    """In-place operators cast their result to the array's dtype by NumPy's ``same_kind``
    rule: complex results into a real array are NumPy's error."""
    c64 = (onp.arange(8) + 1j).astype(onp.complex64)
    pairs = [(c64, onp.arange(8.0)), (c64, onp.arange(8) - 1j),
             (c64.astype(onp.complex128), onp.int32(3)), (onp.arange(8.0), 1j),
             (onp.arange(8), c64)]
    for target, value in pairs:
        b = dnp.array(value) if isinstance(value, onp.ndarray) else value
        _both(_add_and_multiply_in_place, (target.copy(), dnp.array(target)), (value, b))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_operations_numpy_has_no_complex_loop_raise_its_error(dtype):
    x = onp.arange(1, 9).astype(dtype) * (1 + 1j)
    a = dnp.array(x)
    for op in ("floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
               "left_shift", "right_shift", "arctan2", "divmod"):
        _both(lambda m, v: getattr(m, op)(v, v), (x, a))
        _both(lambda m, v: getattr(m, op)(v, 2), (x, a))
        _both(lambda m, v: getattr(m, op)(onp.arange(8.0), v), (x, a))
    for op in ("floor", "ceil", "trunc", "invert", "bitwise_not"):
        _both(lambda m, v: getattr(m, op)(v), (x, a))
    for operator_ in (operator.floordiv, operator.mod, operator.and_, operator.or_,
                      operator.xor, operator.lshift, operator.rshift):
        _both(lambda m, v: operator_(v, 2), (x, a))
        _both(lambda m, v: operator_(3, v), (x, a))
    _both(lambda m, v: ~v, (x, a))
    # NumPy's truth of complex numbers (z != 0) in logical operations.
    y = x * onp.array([0, 1] * 4)
    _both(lambda m, v: m.logical_not(v) | m.logical_and(v, 1j) | m.logical_or(v, 0.0),
          (y, dnp.array(y)))


# -- special values ------------------------------------------------------------------------
SPECIAL = [0.0, -0.0, 1.0, -1.5, onp.inf, -onp.inf, onp.nan]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_special_values_match_numpy_bit_for_bit(dtype):
    """Every pair of signed zeros, ones, infinities and NaNs as parts, against every other:
    NumPy's parts (NaNs where NumPy's are, the signs of zeros)."""
    values = onp.array([complex(r, i) for r, i in itertools.product(SPECIAL, SPECIAL)], dtype)
    x, y = (v.ravel() for v in onp.meshgrid(values, values))
    a, b = dnp.array(x), dnp.array(y)
    for op in ("negative", "conjugate", "absolute", "sign", "isnan", "isinf", "isfinite",
               "real", "imag", "sqrt", "square"):
        _both(lambda m, v: getattr(m, op)(v), (x, a))
    for op in ("add", "subtract", "multiply", "true_divide", "maximum", "minimum", "equal",
               "not_equal", "less", "less_equal", "greater", "greater_equal"):
        _both(lambda m, u, v: getattr(m, op)(u, v), (x, a), (y, b))
    for scalar in (onp.inf, -0.0, complex(onp.nan, 1), complex(0, -onp.inf)):
        for op in ("maximum", "minimum", "multiply", "add"):
            _both(lambda m, v: getattr(m, op)(v, scalar), (x, a))
            _both(lambda m, v: getattr(m, op)(scalar, v), (x, a))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_parts_written_keep_special_values(dtype):
    """Writing a part keeps every value of the other as it was and the written one as
    given: signed zeros, infinities, NaNs (which ``re + im * 1j`` would not)."""
    values = onp.array([complex(r, i) for r, i in itertools.product(SPECIAL, SPECIAL)], dtype)
    x, y = (v.ravel() for v in onp.meshgrid(values, values))
    for part in ("real", "imag"):
        def write(m, z, parts):
            setattr(z, part, getattr(parts, part))
            return z
        _both(write, (y.copy(), dnp.array(y)), (x, dnp.array(x)))

        def write_slice(m, z, parts):
            getattr(z, part)[3:40] = getattr(parts, part)[3:40]
            return z
        _both(write_slice, (y.copy(), dnp.array(y)), (x, dnp.array(x)))


# -- parts ---------------------------------------------------------------------------------
def _set_real_element(m, z):
    z.real[0, 1] = 7.5


def _set_imag_row(m, z):
    z.imag[1] = -2


def _set_real_box(m, z):
    z.real[1:, 1:3] = [[1, 2]]


def _set_imag_steps(m, z):
    z.imag[::2, ::3] = -0.0


def _set_through_transpose(m, z):
    z.T.imag[0] = 9


def _set_part_transposed(m, z):
    z.imag.T[1:3] = m.arange(3.0)


def _set_through_reshape(m, z):
    z.real.reshape(-1)[2:7] = 3


def _set_through_ravel_of_view(m, z):
    z[:, 1:].real.ravel()[0] = -5


def _set_fancy(m, z):
    z.real[[0, 2], [1, 3]] = -4


def _set_masked(m, z):
    z.imag[z.real > 5] = 0.5


def _add_in_place(m, z):
    part = z.real
    part += 1
    z.imag *= 2


def _fill(m, z):
    z.imag.fill(-1)
    z[1].real.fill(8)


def _set_attributes(m, z):
    z.real = 2.5
    z.imag = m.arange(4.0)


def _set_from_a_part(m, z):
    z.real = z.imag
    z.imag[...] = z.real * 2


def _copyto(m, z):
    m.copyto(z.real, 1.25)


def _ufunc_out(m, z):
    m.add(z.real, 1, out=z.real)
    onp.multiply(z.imag, 2, out=z.imag)


def _row_view_part(m, z):
    z[1].real[2] = 8
    z[:, ::2].imag[...] = 3


def _copies_are_detached(m, z):
    copied = z.real.copy()
    copied[...] = 100
    picked = z.imag[[0, 1]]  # (a copy in NumPy: advanced indexing)
    picked[0] = 100
    flat = z.real.flatten()
    flat[0] = 100


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("write", [
    _set_real_element, _set_imag_row, _set_real_box, _set_imag_steps, _set_through_transpose,
    _set_part_transposed, _set_through_reshape, _set_through_ravel_of_view, _set_fancy,
    _set_masked, _add_in_place, _fill, _set_attributes, _set_from_a_part, _copyto, _ufunc_out,
    _row_view_part, _copies_are_detached])
def test_parts_are_views_writing_through(dtype, write):
    """``a.real`` and ``a.imag`` (and the views taken of them) write into ``a`` as NumPy's
    views do; copies of them do not."""
    x = (onp.arange(12.0) + 1j * onp.arange(12.0)[::-1]).astype(dtype).reshape(3, 4)
    a = dnp.array(x)

    def run(m, z):
        write(m, z)
        return z
    _both(run, (x, a))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_parts_read_the_array_as_it_is_now(dtype):
    x = (onp.arange(12.0) - 1j).astype(dtype)
    a = dnp.array(x)
    real, imag, row = a.real, a.imag, a[2:5].imag
    a[3] = 5 + 5j
    a += 1j
    x[3] = 5 + 5j
    x += 1j
    _same(real, x.real)
    _same(imag, x.imag)
    _same(row, x[2:5].imag)
    assert type(real[3]) is type(x.real[3])
    _same(dnp.real(a), onp.real(x))
    _same(onp.imag(a), onp.imag(x))  # NumPy's function, dispatched to diffuse


@pytest.mark.parametrize("dtype", REAL)
def test_parts_of_real_arrays(dtype):
    x = onp.arange(6).astype(dtype)
    a = dnp.array(x)
    _same(a.real, x.real)
    _same(a.imag, x.imag)
    _same(dnp.imag(a), onp.imag(x))
    a.real[1] = 1  # the array itself, as NumPy's view of it
    x.real[1] = 1
    _same(a, x)
    assert a.conj() is a and a.conjugate() is a  # NumPy's methods give the array itself

    def write_imag(m, v):
        v.imag[0] = 1

    def set_imag(m, v):
        v.imag = 1
    _both(write_imag, (x, a))
    _both(set_imag, (x, a))


def test_complex_values_into_real_parts_are_numpys_errors_and_warnings():
    x = onp.arange(4.0) + 1j
    for write in (lambda z: z.real.__setitem__(0, 1j), lambda z: z.real.__setitem__(..., 2j)):
        with pytest.raises(TypeError):
            write(x.copy())
        with pytest.raises(TypeError):
            write(dnp.array(x))
    # Setting the attribute casts an array of the value (as NumPy's setters do).
    for target, value in ((x.copy(), 1j), (dnp.array(x), 1j), (x.copy(), onp.ones(4, complex)),
                          (dnp.array(x), dnp.ones(4, complex))):
        with pytest.warns(onp.exceptions.ComplexWarning):
            target.imag = value


@pytest.mark.parametrize("dtype", COMPLEX + REAL)
def test_complex_functions_match_numpy(dtype):
    x = (onp.arange(-4, 8) * (1.5 - 1j if onp.dtype(dtype).kind == "c" else 1)).astype(dtype)
    a = dnp.array(x)
    functions = [lambda m, v: m.angle(v), lambda m, v: m.angle(v, deg=True),
                 lambda m, v: m.angle(v, True), lambda m, v: v.conj(),
                 lambda m, v: v.conjugate(), lambda m, v: m.iscomplex(v),
                 lambda m, v: m.isreal(v), lambda m, v: m.real_if_close(v),
                 lambda m, v: m.real_if_close(v.real + 1e-20j)]
    if dtype != onp.bool_:  # (NumPy's conjugate of booleans is int8, which diffuse lacks)
        functions += [lambda m, v: m.conj(v), lambda m, v: m.conjugate(v)]
    for function in functions:
        _both(function, (x, a), exact=False)
    for function in (onp.iscomplexobj, onp.isrealobj):
        assert function(a) == function(x)
        assert getattr(dnp, function.__name__)(a) == function(x)


@pytest.mark.parametrize("source", COMPLEX + REAL)
@pytest.mark.parametrize("target", COMPLEX + REAL)
def test_casts_match_numpy(source, target):
    """Casts to and from complex numbers: a complex number to a real dtype drops its
    imaginary part with NumPy's ComplexWarning (to bool it is z != 0, no warning); to an
    integer, the real part is truncated as NumPy does (beyond the range: the minimum)."""
    x = onp.array([0, 1.5 - 2j, -0.0 + 1j, 1e30, onp.nan + 0j, -7.9j, 3, -3.5], complex)
    x = (x if onp.dtype(source).kind == "c" else x.real).astype(source)
    a = dnp.array(x)
    warns = onp.dtype(source).kind == "c" and onp.dtype(target).kind not in "cb"
    for cast in (lambda v: v.astype(target), lambda v: v.astype(onp.dtype(target).name)):
        for v in (x, a):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = cast(v)
            complex_warnings = [w for w in caught
                                if w.category is onp.exceptions.ComplexWarning]
            assert len(complex_warnings) == warns, caught
        _same(result, cast(x))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_where_clip_round_and_select(dtype):
    x = (onp.linspace(-3, 3, 30) + 1j * onp.linspace(2, -2, 30) ** 3).astype(dtype)
    a = dnp.array(x)
    _both(lambda m, v: m.where(v.real > 0, v, 1j), (x, a))
    _both(lambda m, v: m.where(v.imag > 0, 2.5, v.real), (x, a))
    _both(lambda m, v: m.clip(v, -1 - 1j, 1 + 0.5j), (x, a))
    _both(lambda m, v: m.clip(v, -1, 1), (x, a))
    for decimals in (0, 1, 2, -1):
        _both(lambda m, v: m.round(v * 1.37, decimals), (x, a))
    _both(lambda m, v: m.select([v.real > 1, v.imag < 0], [v, 2j], default=-1), (x, a))
    _both(lambda m, v: m.around(m.array([onp.inf + 1.25j, -0.0 - 2.5j], dtype), 1), (x, a))


# -- small arrays NumPy holds --------------------------------------------------------------
def test_small_complex_arrays_are_numpys_and_meet_deferred_ones(monkeypatch):
    monkeypatch.setattr(_state, "eager_limit", 16)
    small = dnp.ones(3, dtype=dnp.complex64)
    assert isinstance(small, dnp._Eager) and small.dtype == onp.complex64
    x = onp.array([1 - 1j, 2j, 3])
    a = dnp.array(x)
    assert isinstance(a, dnp._Eager)
    a.real[1] = 5  # NumPy's view of its elements
    x.real[1] = 5
    a.imag = [0, 1, 2]
    x.imag = [0, 1, 2]
    _same(a, x)
    with pytest.raises(ValueError, match="read-only"):
        dnp.ones(3).imag[0] = 1
    large = (onp.arange(40) - 1j).astype(onp.complex64)
    b = dnp.array(large)
    assert not isinstance(b, dnp._Eager)
    _same(b[:3] * a + a.conj(), large[:3] * x + x.conj())
    _same(dnp.exp(b[5:8]) - a, onp.exp(large[5:8]) - x, exact=False)
