"""Reductions, statistics and products of complex numbers against NumPy: sums, products,
means (the sum over the count), extremes and their indices in NumPy's lexicographic order,
running sums and products, variances (real: the mean squared magnitude of the deviations),
the NaN-ignoring reductions, ``average``, ``isclose``, ``nan_to_num``, ``dot``, ``vdot`` (the
first operand conjugated), ``matmul``, ``linalg.norm``, ``cov`` and ``corrcoef``. Native on
deferred arrays (a fallback warning fails these tests); NumPy's dtypes and shapes, its
values within the rounding of sums taken in another order."""

import os
import sys

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffuse.numpy as dnp

sys.path.insert(0, os.path.dirname(__file__))
from test_complex import COMPLEX, _both, _native_only, _operands  # noqa: E402,F401


def _axis(draw, ndim, single=False):
    """An axis argument: None, an axis, or (unless ``single``) a tuple of axes."""
    axes = st.one_of(st.none(), st.integers(-ndim, ndim - 1))
    if not single:
        axes = st.one_of(axes, st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                                        unique=True).map(tuple))
    return draw(axes)


@settings(max_examples=120, deadline=None)
@given(data=st.data(), name=st.sampled_from(["sum", "prod", "mean", "max", "min", "ptp",
                                             "any", "all", "count_nonzero"]))
def test_reductions_match_numpy(data, name):
    x, a = data.draw(_operands(scale=1.5))
    kwargs = {"axis": _axis(data.draw, x.ndim)}
    if name != "count_nonzero" or kwargs["axis"] is not None:
        kwargs["keepdims"] = data.draw(st.booleans())
    exact = name in ("max", "min", "any", "all", "count_nonzero")
    _both(lambda m, v: getattr(m, name)(v, **kwargs), (x, a), exact=exact)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), name=st.sampled_from(["argmax", "argmin", "cumsum", "cumprod"]))
def test_indices_and_running_reductions_match_numpy(data, name):
    x, a = data.draw(_operands(scale=1.5))
    axis = _axis(data.draw, x.ndim, single=True)
    _both(lambda m, v: getattr(m, name)(v, axis=axis), (x, a),
          exact=name in ("argmax", "argmin"))


@settings(max_examples=80, deadline=None)
@given(data=st.data(), name=st.sampled_from(["var", "std"]))
def test_variances_are_real_and_match_numpy(data, name):
    x, a = data.draw(_operands())
    axis = _axis(data.draw, x.ndim)
    count = x.size if axis is None else onp.prod(
        [x.shape[ax] for ax in (axis if isinstance(axis, tuple) else (axis,))])
    ddof = data.draw(st.integers(0, max(0, int(count) - 1)))
    got = _both(lambda m, v: getattr(m, name)(v, axis=axis, ddof=ddof), (x, a), exact=False)
    assert got.dtype == x.real.dtype


def _with_nans(x, data):
    """``x`` with NaNs in some elements' parts (either part)."""
    x = x.copy()
    flat = x.reshape(-1)
    for i in data.draw(st.lists(st.integers(0, x.size - 1), max_size=3)):
        flat[i] = data.draw(st.sampled_from([complex(onp.nan, 1), complex(-2, onp.nan)]))
    return x


@settings(max_examples=80, deadline=None)
@given(data=st.data(), name=st.sampled_from(["nansum", "nanmean", "nanmax", "nanmin"]))
def test_nan_ignoring_reductions_match_numpy(data, name):
    x, _ = data.draw(_operands())
    x = _with_nans(x, data)
    axis = _axis(data.draw, x.ndim, single=name in ("nanmax", "nanmin"))
    _both(lambda m, v: getattr(m, name)(v, axis=axis), (x, dnp.array(x)), exact=False)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reduction_options_match_numpy(dtype):
    x = (onp.arange(24.0).reshape(2, 3, 4) * (0.5 - 0.25j) + 1j).astype(dtype)
    a = dnp.array(x)
    calls = [
        lambda m, v: m.sum(v, axis=1, initial=2 - 1j),
        lambda m, v: m.sum(v, where=v.real > 3),
        lambda m, v: m.prod(v[0], axis=0, dtype=onp.complex128),
        lambda m, v: m.mean(v, dtype=onp.complex64),
        lambda m, v: m.mean(v.real.astype(onp.float32), dtype=dtype),
        lambda m, v: v.mean(axis=(0, 2), keepdims=True),
        lambda m, v: m.add.reduce(v, axis=2),
        lambda m, v: m.maximum.reduce(v, axis=0),
        lambda m, v: m.average(v, axis=1, weights=m.arange(1.0, 4.0)),
        lambda m, v: m.average(v, axis=0, returned=True)[1],
        lambda m, v: m.isclose(v, v + 1e-9j),
        lambda m, v: m.isclose(v, 1j, atol=10),
        lambda m, v: m.isclose(v, v.conj(), rtol=0),
        lambda m, v: m.allclose(v, v * (1 + 1e-7j)),
        lambda m, v: m.nan_to_num(m.where(v.real > 4, v * onp.inf, v)),
        lambda m, v: m.nan_to_num(m.where(v.real > 4, v * onp.nan, v), nan=-1, posinf=9),
    ]
    for call in calls:
        _both(call, (x, a), exact=False)


# -- products ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_products_match_numpy(dtype):
    x = (onp.arange(12.0).reshape(3, 4) - 1j * onp.arange(12.0).reshape(3, 4) ** 0.5)
    x = x.astype(dtype)
    y = (onp.linspace(-1, 1, 20).reshape(4, 5) + 0.5j).astype(dtype)
    a, b = dnp.array(x), dnp.array(y)
    calls = [
        lambda m, u, v: m.dot(u[0], u[1]),
        lambda m, u, v: m.vdot(u[0], u[1]),  # the first operand conjugated
        lambda m, u, v: m.vdot(u, u),
        lambda m, u, v: u @ v,
        lambda m, u, v: u @ v[:, 0],
        lambda m, u, v: m.matmul(u.T.conj(), u),
        lambda m, u, v: m.dot(u, v),
        lambda m, u, v: m.linalg.norm(u),
        lambda m, u, v: m.linalg.norm(u, axis=1),
        lambda m, u, v: m.cov(u),
        lambda m, u, v: m.corrcoef(u),
    ]
    for call in calls:
        _both(call, (x, a), (y, b), exact=False)
