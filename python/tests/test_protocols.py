"""NumPy's own functions and ufuncs accept diffuse arrays: through
``__array_function__`` and ``__array_ufunc__`` ``numpy.<f>(x)`` runs diffuse's version when
it has one and NumPy's on host copies otherwise, with NumPy's keywords (``axis=``,
``keepdims=``, ``dtype=``, ``out=``, ``where=``, ...), giving what NumPy gives on NumPy
arrays (``numpy.sum(x)`` passes ``out`` and works); ``numpy.asarray(x)`` works."""

import math
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
from _results import compare_each  # noqa: E402

# Values are compared here; floating-point warnings (NumPy's and diffuse's, reported when
# work runs) and the fallbacks' notices are not what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# name: call on (numpy module, a 2-d float array x, a 1-d float array v).
FUNCTIONS = {
    "sum": lambda np, x, v: np.sum(x),
    "sum axis keepdims": lambda np, x, v: np.sum(x, axis=1, keepdims=True),
    "sum dtype": lambda np, x, v: np.sum(x, dtype=np.float32),
    "sum positional": lambda np, x, v: np.sum(x, 0, None, None, True),
    "sum where": lambda np, x, v: np.sum(x, where=x > 0),
    "sum initial": lambda np, x, v: np.sum(x, initial=5.0),
    "mean": lambda np, x, v: np.mean(x),
    "mean axis": lambda np, x, v: np.mean(x, axis=0),
    "max": lambda np, x, v: np.max(x),
    "amax axis": lambda np, x, v: np.amax(x, axis=1),
    "min keepdims": lambda np, x, v: np.min(x, axis=0, keepdims=True),
    "max initial": lambda np, x, v: np.max(x, initial=100.0),
    "any": lambda np, x, v: np.any(x > 1),
    "all axis": lambda np, x, v: np.all(x > -100, axis=0),
    "prod": lambda np, x, v: np.prod(v),
    "argmax": lambda np, x, v: np.argmax(x),
    "argmin axis": lambda np, x, v: np.argmin(x, axis=1),
    "count_nonzero": lambda np, x, v: np.count_nonzero(x > 0),
    "dot": lambda np, x, v: np.dot(x, x[0]),
    "matmul": lambda np, x, v: np.matmul(x, x.T),
    "where": lambda np, x, v: np.where(x > 0, x, 0.0),
    "where one argument": lambda np, x, v: np.where(v > 0),
    "clip": lambda np, x, v: np.clip(x, -1.0, 1.0),
    "reshape": lambda np, x, v: np.reshape(x, (-1,)),
    "transpose": lambda np, x, v: np.transpose(x),
    "ravel": lambda np, x, v: np.ravel(x),
    "squeeze": lambda np, x, v: np.squeeze(x[:1]),
    "expand_dims": lambda np, x, v: np.expand_dims(v, 0),
    "swapaxes": lambda np, x, v: np.swapaxes(x, 0, 1),
    "zeros_like": lambda np, x, v: np.zeros_like(x),
    "full_like": lambda np, x, v: np.full_like(x, 2.5),
    "diag": lambda np, x, v: np.diag(v),
    "allclose": lambda np, x, v: np.allclose(x, x + 1e-12),
    "cumsum": lambda np, x, v: np.cumsum(x, axis=0),
    "sort": lambda np, x, v: np.sort(x, axis=None),
    "concatenate": lambda np, x, v: np.concatenate([x, x]),
    "stack": lambda np, x, v: np.stack([v, v], axis=1),
    "linalg.norm": lambda np, x, v: np.linalg.norm(x),
    "round": lambda np, x, v: np.round(x, 2),
    "median": lambda np, x, v: np.median(x),
    "std ddof": lambda np, x, v: np.std(x, ddof=1),
    "unique": lambda np, x, v: np.unique(np.floor(v)),
    "shape": lambda np, x, v: np.shape(x),
    "ndim": lambda np, x, v: np.ndim(v),
    "isclose": lambda np, x, v: np.isclose(x, x),
    "array_equal": lambda np, x, v: np.array_equal(x, x),
    "asarray": lambda np, x, v: np.asarray(x),
    "array dtype": lambda np, x, v: np.array(x, dtype=np.float32),
    # ufuncs
    "add": lambda np, x, v: np.add(x, 1.0),
    "add reflected": lambda np, x, v: np.add(2.0, x),
    "add numpy array": lambda np, x, v: np.add(onp.ones(x.shape), x),
    "subtract broadcast": lambda np, x, v: np.subtract(x, x[0]),
    "multiply dtype": lambda np, x, v: np.multiply(x, 2.0, dtype=np.float32),
    "exp": lambda np, x, v: np.exp(x),
    "sqrt where": lambda np, x, v: np.sqrt(x, where=x > 0, out=np.zeros_like(x)),
    "negative out": lambda np, x, v: np.negative(x, out=np.zeros_like(x)),
    "maximum out": lambda np, x, v: np.maximum(x, 0.0, out=np.zeros_like(x)),
    "divmod": lambda np, x, v: np.divmod(x, 3.0),
    "power": lambda np, x, v: np.power(x, 2),
    "less": lambda np, x, v: np.less(x, 0.5),
    "logaddexp": lambda np, x, v: np.logaddexp(x, x),
    "hypot": lambda np, x, v: np.hypot(x, 1.0),
    "add.reduce": lambda np, x, v: np.add.reduce(x, axis=1),
    "multiply.outer": lambda np, x, v: np.multiply.outer(v, v),
    "add.accumulate": lambda np, x, v: np.add.accumulate(v),
    "operator numpy + diffuse": lambda np, x, v: onp.ones(x.shape) + x,
    "operator numpy < diffuse": lambda np, x, v: onp.zeros(x.shape) < x,
}

ARRAYS = hnp.arrays(onp.float64, (3, 4), elements=st.floats(-5, 5, width=32))


def _host(value):
    if isinstance(value, tuple):
        return tuple(_host(v) for v in value)
    return onp.asarray(value)


def _compare(got, want, name):
    if compare_each(got, want, name, _compare):
        return
    g, w = onp.asarray(got), onp.asarray(want)
    assert g.shape == w.shape, f"{name}: shape {g.shape}, NumPy's {w.shape}"
    assert g.dtype == w.dtype, f"{name}: dtype {g.dtype}, NumPy's {w.dtype}"
    # (float32 sums may add in another order)
    rtol = 1e-12 if w.dtype != onp.float32 else 1e-5
    onp.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@settings(max_examples=10, deadline=None)
@given(x=ARRAYS)
def test_numpy_functions_take_diffuse_arrays(name, x):
    v = x[0].copy()
    want = FUNCTIONS[name](onp, x, v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = FUNCTIONS[name](onp, dnp.array(x), dnp.array(v))
    _compare(got, want, name)


def test_native_functions_stay_lazy_diffuse_arrays():
    """Where diffuse has the function, numpy.<f> gives a diffuse array, without warning."""
    x = dnp.arange(12.0).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for result in (onp.sum(x), onp.mean(x, axis=0), onp.max(x, keepdims=True),
                       onp.exp(x), onp.add(x, 1.0), onp.ones(4) * x, onp.where(x > 2, x, 0.0)):
            assert isinstance(result, dnp.ndarray)


def test_out_is_written_and_returned():
    x = dnp.arange(4.0)
    out = dnp.zeros(4)
    assert onp.add(x, 1.0, out=out) is out
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0]
    total = dnp.zeros(())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert onp.sum(x, out=total) is total
    assert total.item() == 6.0
    with pytest.raises(TypeError, match="Cannot cast ufunc 'divide' output"):
        onp.true_divide(x, 2.0, out=dnp.zeros(4, dtype=dnp.int64))


@settings(max_examples=60, deadline=None)
@given(data=st.data(),
       name=st.sampled_from(["add", "subtract", "multiply", "divide", "maximum", "minimum",
                             "remainder", "arctan2", "greater", "divmod"]),
       rows=st.integers(1, 4), cols=st.integers(1, 5))
def test_where_writes_out_only_where_it_holds_natively(data, name, rows, cols):
    """``numpy.<ufunc>(a, b, out=o, where=m)`` on diffuse arrays: NumPy's values in ``o``
    (the operation's where ``m`` holds, ``o``'s own elsewhere), ``m`` and ``b`` broadcast,
    without a fallback; a comparison's bool result into a float ``out`` is cast."""
    floats = st.floats(-8, 8, allow_nan=False, width=64)
    a = data.draw(hnp.arrays(onp.float64, (rows, cols), elements=floats))
    b = data.draw(hnp.arrays(onp.float64, data.draw(st.sampled_from([(cols,), (rows, cols)])),
                             elements=floats))
    m = data.draw(hnp.arrays(onp.bool_, data.draw(st.sampled_from([(cols,), (rows, 1),
                                                                    (rows, cols), ()]))))
    ufunc = getattr(onp, name)
    nout = ufunc.nout
    want = tuple(onp.full((rows, cols), 7.5) for _ in range(nout))
    got = tuple(dnp.full((rows, cols), 7.5) for _ in range(nout))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # a division by zero warns, as on NumPy
        ufunc(a, b, out=want if nout > 1 else want[0], where=m)
        result = ufunc(dnp.asarray(a), dnp.asarray(b), out=got if nout > 1 else got[0],
                       where=dnp.asarray(m) if m.ndim else bool(m))
        for g in got:
            g.tolist()  # the work runs (and reports) within the recording
    assert not [w for w in caught if "not native" in str(w.message)], name
    assert result is (got if nout > 1 else got[0])
    for g, w in zip(got, want):
        onp.testing.assert_array_equal(onp.asarray(g), w, err_msg=name)


def test_where_errors_are_numpys():
    x = dnp.arange(3.0)
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        onp.add(x, 1.0, out=dnp.zeros(3), where=onp.ones((2, 3), bool))
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        onp.add(x, 1.0, out=dnp.zeros(3, dtype=dnp.int64), where=[True, False, True])
    # Without out=, NumPy leaves the unselected elements unset: the selected ones are its.
    got = onp.multiply(x, 2.0, where=onp.array([True, False, True]))
    assert onp.asarray(got)[[0, 2]].tolist() == [0.0, 4.0]
    q, r = onp.divmod(x, 2.0, where=[True, False, True])
    assert onp.asarray(q)[[0, 2]].tolist() == [0.0, 1.0]
    assert onp.asarray(r)[[0, 2]].tolist() == [0.0, 0.0]


def test_a_numpy_array_as_out_is_written():
    x = dnp.arange(3.0)
    host = onp.zeros(3)
    host += x
    assert host.tolist() == [0.0, 1.0, 2.0]


def test_asarray_copies_and_refuses_copy_false():
    x = dnp.arange(3.0)
    assert onp.asarray(x).tolist() == [0.0, 1.0, 2.0]
    assert onp.asarray(x, dtype=onp.int32).dtype == onp.int32
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        onp.asarray(x, copy=False)


def test_allclose_of_infinities_and_nans_as_numpy():
    for a, b in (([onp.inf, 1.0], [onp.inf, 1.0]), ([onp.inf], [-onp.inf]),
                 ([onp.nan], [onp.nan]), ([1.0, onp.inf], onp.inf), ([2**62], 2**62)):
        assert dnp.allclose(dnp.array(a), b) == onp.allclose(onp.array(a), b), (a, b)


def test_unsigned_values_beyond_int64_are_refused_not_wrapped():
    """NumPy's uint64 becomes diffuse's int64: a value beyond it is an OverflowError (it
    was wrapped to a negative number)."""
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        dnp.array([2**63])
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        dnp.asarray(onp.array([1, 2**64 - 1], dtype=onp.uint64))
    assert dnp.array(onp.array([7, 2**63 - 1], dtype=onp.uint64)).tolist() == [7, 2**63 - 1]


def test_sequences_are_operands_as_in_numpy():
    """A list meets a diffuse array as NumPy's array of it (a ufunc returned NotImplemented
    and the operators raised TypeError)."""
    x = dnp.arange(3.0)
    i = dnp.array([1, 2, 3], dtype=dnp.int32)
    for got, want in ((dnp.add(x, [1, 2, 3]), onp.add(onp.arange(3.0), [1, 2, 3])),
                      (x + [1, 2, 3], onp.arange(3.0) + [1, 2, 3]),
                      ([1, 5, 0] * x, [1, 5, 0] * onp.arange(3.0)),
                      (dnp.maximum((1, 5, 0), x), onp.maximum((1, 5, 0), onp.arange(3.0))),
                      (i + [1, 2, 3], onp.array([1, 2, 3], dtype=onp.int32) + [1, 2, 3])):
        _compare(got, want, "sequence operand")


def test_metadata_functions_read_no_elements():
    """numpy.shape, ndim, size, result_type, can_cast, iscomplexobj and isrealobj answer
    from the array's shape and dtype: no copy, no fallback warning, NumPy's answers."""
    x, h = dnp.ones((2, 3), dtype=dnp.float32), onp.ones((2, 3), dtype=onp.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f in (onp.shape, onp.ndim, onp.size, onp.iscomplexobj, onp.isrealobj,
                  lambda a: onp.size(a, 1), lambda a: onp.result_type(a, 1.0, onp.int64),
                  lambda a: onp.can_cast(a, onp.float64), lambda a: onp.can_cast(a, onp.int8)):
            assert f(x) == f(h)


@settings(max_examples=15, deadline=None)
@given(x=hnp.arrays(st.sampled_from([onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]),
                    hnp.array_shapes(min_dims=0, max_dims=3, max_side=5)),
       view=st.booleans())
def test_copies_and_pickles_are_independent_arrays_with_numpys_values(x, view):
    """``copy.copy``, ``copy.deepcopy`` and a pickle round trip give diffuse arrays with the
    same values, shape and dtype, sharing no elements with the original (as NumPy's); a view
    pickles as a new array of its elements."""
    import copy
    import pickle

    a = dnp.array(x)
    want = x
    if view and x.ndim >= 1 and x.shape[0] > 1:
        a, want = a[1:], x[1:]
    for name, clone in [("copy", copy.copy(a)), ("deepcopy", copy.deepcopy(a)),
                        ("pickle", pickle.loads(pickle.dumps(a)))]:
        assert isinstance(clone, dnp.ndarray), name
        got = onp.asarray(clone)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        onp.testing.assert_array_equal(got, want, err_msg=name)
        if clone.size:
            clone[...] = 0
            onp.testing.assert_array_equal(onp.asarray(a), want, err_msg=f"{name} aliases")


def test_deepcopy_keeps_shared_references_shared():
    import copy

    a = dnp.arange(4.0)
    pair = copy.deepcopy([a, a])
    assert pair[0] is pair[1]
    assert pair[0] is not a


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_ufunc_dtype_runs_numpys_loop_natively(data):
    """``ufunc(..., dtype=d)`` computes in ``d`` as NumPy's loop of ``d`` does (inputs cast
    by the ``same_kind`` rule, Python scalars weak), natively; a cast the rule refuses and a
    loop NumPy lacks raise NumPy's TypeError."""
    name = data.draw(st.sampled_from(["add", "subtract", "multiply", "true_divide", "maximum",
                                      "negative", "sqrt", "exp", "floor"]))
    ufunc = getattr(onp, name)
    dtype = data.draw(st.sampled_from(["float64", "float32", "int64", "int32"]))
    operands = []
    for _ in range(ufunc.nin):
        kind = data.draw(st.sampled_from(["float64", "float32", "int64", "int32", "int", "float"]))
        if kind == "int":
            operands.append(data.draw(st.integers(0, 3)))
        elif kind == "float":
            operands.append(data.draw(st.sampled_from([0.5, 2.0])))
        else:
            operands.append((onp.arange(6) % 4 + 1).astype(kind))
    try:
        with onp.errstate(all="ignore"):
            want = ufunc(*operands, dtype=dtype)
    except TypeError as e:
        want = e
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        try:
            with dnp.errstate(all="ignore"):
                got = getattr(dnp, name)(
                    *[dnp.asarray(o) if isinstance(o, onp.ndarray) else o for o in operands],
                    dtype=dtype)
        except TypeError as e:
            got = e
    if isinstance(want, TypeError):
        assert isinstance(got, TypeError) and str(got) == str(want), (got, want)
    else:
        assert not isinstance(got, Exception), got
        got = onp.asarray(got)
        assert got.dtype == want.dtype
        onp.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("shape, axis, keepdims, dtype", [
    ((0,), None, False, "float64"), ((0, 3), 0, False, "float64"), ((0, 3), 0, True, "float32"),
    ((3, 0), 0, False, "float64"), ((0, 3), None, False, "int64"), ((0, 3), 1, False, "float64"),
    ((2, 0, 4), (0, 1), False, "float32")])
def test_means_of_empty_arrays_are_numpys(shape, axis, keepdims, dtype):
    """The mean of no elements is NumPy's (NaNs of its dtype and shape, or an empty array),
    natively, with NumPy's warnings pointing at the caller's line, and NumPy's
    FloatingPointError under ``errstate(invalid="raise")``."""
    x = onp.zeros(shape, dtype)
    with warnings.catch_warnings(record=True) as expected:
        warnings.simplefilter("always")
        want = onp.mean(x, axis=axis, keepdims=keepdims)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = dnp.mean(dnp.asarray(x), axis=axis, keepdims=keepdims)
    assert [str(w.message) for w in caught] == [str(w.message) for w in expected]
    assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]
    got = onp.asarray(got)
    assert got.shape == onp.shape(want) and got.dtype == onp.asarray(want).dtype
    onp.testing.assert_array_equal(got, want)
    if onp.size(want):
        with onp.errstate(invalid="raise"), pytest.raises(FloatingPointError):
            onp.mean(x, axis=axis, keepdims=keepdims)
        with dnp.errstate(invalid="raise"), pytest.raises(FloatingPointError):
            dnp.mean(dnp.asarray(x), axis=axis, keepdims=keepdims)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_matmul_of_any_numeric_dtypes_is_native(data):
    """``a @ b`` of vectors and matrices of numeric dtypes, mixed as NumPy promotes them,
    matrices as stored or as transpose views: NumPy's dtype and values (integers exactly, wrapping as NumPy's; float32 to its
    precision), with no fallback."""
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    adtype, bdtype = (data.draw(st.sampled_from(["float64", "float32", "int64", "int32"]))
                      for _ in range(2))
    a_shape = data.draw(st.sampled_from([(m, k), (k,)]))
    b_shape = data.draw(st.sampled_from([(k, n), (k,)]))
    big = data.draw(st.booleans())  # products past int32/int64: NumPy's wrapping
    scale = 2**40 if big else 7
    x = (onp.arange(math.prod(a_shape)).reshape(a_shape) * scale - 5).astype(adtype)
    y = (onp.arange(math.prod(b_shape)).reshape(b_shape) * scale + 3).astype(bdtype)
    want = onp.matmul(x, y)
    # A matrix may come as the transpose view of its transpose (read in place).
    flip = [data.draw(st.booleans()) and v.ndim == 2 for v in (x, y)]

    def operand(v, flipped):
        return dnp.asarray(onp.ascontiguousarray(v.T)).T if flipped else dnp.asarray(v)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        got = onp.asarray(dnp.matmul(operand(x, flip[0]), operand(y, flip[1])))
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "i":
        onp.testing.assert_array_equal(got, want)
    else:
        # Summation order differs from BLAS's: errors relative to the largest terms.
        eps = 1e-5 if want.dtype == onp.float32 else 1e-12
        terms = float(onp.abs(x).max()) * float(onp.abs(y).max()) * k
        onp.testing.assert_allclose(got, want, rtol=eps, atol=eps * terms)


@pytest.mark.parametrize("x", [onp.zeros(0), onp.zeros((0, 3)), onp.zeros((3, 0)),
                               onp.array([onp.nan, 0.0]), onp.array([0.0, -0.0]),
                               onp.arange(6).reshape(2, 3) % 2, onp.ones((2, 2), bool)])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_any_and_all_are_numpys_natively(x, axis, keepdims):
    """``any``/``all`` (empty arrays and NaN included) give NumPy's answers without a
    fallback."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        for name in ("any", "all"):
            want = getattr(onp, name)(x, axis=axis, keepdims=keepdims)
            got = onp.asarray(getattr(dnp, name)(dnp.asarray(x), axis=axis, keepdims=keepdims))
            assert got.dtype == onp.asarray(want).dtype and got.shape == onp.shape(want)
            onp.testing.assert_array_equal(got, want)


def test_any_fuses_with_the_work_before_it():
    """``any(isnan(x))``: the count behind ``any`` starts from a new array's zeros, so it
    fuses with ``isnan`` into one task (a maximum needed a task to write its identity
    first, which split the group)."""
    x = dnp.ones((64, 64)) * 0.5
    float(x[0, 0])
    before = dnp._native.runtime_stats()["tasks_executed"]
    assert not bool(dnp.any(dnp.isnan(x)))
    # The fused isnan-and-count, then the 0-d comparison of the count with 0.
    assert dnp._native.runtime_stats()["tasks_executed"] - before == 2
