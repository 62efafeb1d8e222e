"""What NumPy changes in place through a fallback reaches the diffuse arrays: NumPy's in-place functions, ufuncs with ``out=``, ndarray methods and the random
shuffles, called through ``diffuse.numpy`` (its fallback) or through ``numpy`` itself (the
``__array_function__``/``__array_ufunc__`` protocols), on whole arrays, boxes and strided
views, leave the diffuse array (and the array a view is of) as NumPy leaves a NumPy array
(``np.putmask(b, mask, 7.0)`` changes ``b``)."""

import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp

# Values are compared here; floating-point warnings (NumPy's and diffuse's, reported when
# work runs) and the fallbacks' notices are not what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _random(xp):
    return dnp.random if xp is dnp else onp.random


# Each case changes its target `t` (a view of the base array) in place through the module
# `xp` (NumPy, or diffuse.numpy for a diffuse target) and returns what the call returned.
CASES = {
    "putmask": lambda xp, t: xp.putmask(t, t > 0, 7.0),
    "place": lambda xp, t: xp.place(t, t < 0, [7.0, 8.0]),
    "copyto": lambda xp, t: xp.copyto(t, 3.0),
    "copyto where": lambda xp, t: xp.copyto(t, -t, where=t > 0),
    "put": lambda xp, t: xp.put(t, [0, 2, -1], [9.0, 8.0, 7.0]),
    "fill_diagonal": lambda xp, t: xp.fill_diagonal(t, 5.0) if t.ndim == 2 else None,
    "nan_to_num copy=False": lambda xp, t: xp.nan_to_num(t, copy=False),
    "add out= (native)": lambda xp, t: xp.add(t, 1.0, out=t),
    "multiply out= other (native)": lambda xp, t: xp.multiply(t, t, out=t),
    "negative out= (native)": lambda xp, t: xp.negative(t, out=t),
    "divmod out= (native)": lambda xp, t: xp.divmod(t, 3.0, out=(xp.zeros_like(t), t)),
    "add out= where=": lambda xp, t: xp.add(t, 1.0, out=t, where=t > 0),
    "fabs out=": lambda xp, t: xp.fabs(t, out=t),
    "add.at": lambda xp, t: xp.add.at(t, (0,) * t.ndim, 1.0),
    "cumsum out=": lambda xp, t: xp.cumsum(t, axis=-1, out=t),
    "clip out=": lambda xp, t: xp.clip(t, -1.0, 1.0, out=t),
    "sum out=": lambda xp, t: xp.sum(t, axis=0, out=t[0]),
    "sort (not in place)": lambda xp, t: xp.sort(t),
    "ndarray.sort": lambda xp, t: t.sort(),
    "ndarray.partition": lambda xp, t: t.partition(1),
    "ndarray.put": lambda xp, t: t.put([1], [4.5]),
    "ndarray.fill": lambda xp, t: t.fill(3.5),
    "ndarray.clip out=": lambda xp, t: t.clip(0.0, 2.0, out=t),
    "ndarray.round out=": lambda xp, t: t.round(out=t),
    "ndarray.sum out=": lambda xp, t: t.sum(axis=0, out=t[0]),
    "ndarray.cumsum out=": lambda xp, t: t.cumsum(axis=-1, out=t),
    "random.shuffle": lambda xp, t: (_random(xp).seed(5), _random(xp).shuffle(t)),
    "Generator.shuffle": lambda xp, t: _random(xp).default_rng(7).shuffle(t),
    "Generator.permuted out=": lambda xp, t: _random(xp).default_rng(7).permuted(t, 1, out=t),
}

# Views of a (4, 6) base: whole, a box, strided (steps, a transpose, a column).
VIEWS = {
    "whole": lambda b: b,
    "box": lambda b: b[1:3, 1:5],
    "steps": lambda b: b[::2, 1::2],
    "transpose": lambda b: b.T,
    "column": lambda b: b[:, 1],
    "row": lambda b: b[2],
}

BASES = hnp.arrays(onp.float64, (4, 6), elements=st.floats(-10, 10, width=32))


def _outcome(case, xp, base, view):
    t = VIEWS[view](base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = CASES[case](xp, t)
        except Exception as e:  # noqa: BLE001 (the outcome compared)
            return t, e
    return t, result


def _same_result(got, want, t, t_np):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same_result(g, w, t, t_np)
        return
    # `out=` comes back as the array passed, as NumPy returns it.
    assert (got is t) == (want is t_np)
    if want is None or got is t:
        assert got is None or got is t
        return
    onp.testing.assert_array_equal(onp.asarray(got), onp.asarray(want))


@pytest.mark.parametrize("entry", ["numpy", "diffuse.numpy"])
@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=12, deadline=None)
@given(base=BASES, view=st.sampled_from(sorted(VIEWS)))
def test_in_place_changes_reach_the_diffuse_array(entry, case, base, view):
    if entry == "numpy" and "random" in case or entry == "numpy" and "Generator" in case:
        pytest.skip("NumPy's random module takes no diffuse arrays by protocol")
    t_np, want = _outcome(case, onp, base.copy(), view)
    d = dnp.array(base)
    t, got = _outcome(case, onp if entry == "numpy" else dnp, d, view)
    if isinstance(want, Exception):
        assert isinstance(got, type(want)) or isinstance(want, type(got)), (want, got)
    else:
        assert not isinstance(got, Exception), got
        _same_result(got, want, t, t_np)
    expected_base = base.copy()
    VIEWS[view](expected_base)[...] = t_np  # the NumPy view's values, in its base
    onp.testing.assert_array_equal(onp.asarray(d), expected_base)
    onp.testing.assert_array_equal(onp.asarray(t), t_np)


def test_the_issues_example():
    b = dnp.zeros(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dnp.putmask(b, onp.array([True, False, True, False]), 7.0)
    assert b.tolist() == [7.0, 0.0, 7.0, 0.0]


def test_only_changed_arguments_are_written():
    """An argument NumPy only reads stays the lazy diffuse array it was (no write)."""
    a = dnp.arange(6.0)
    src = dnp.ones(6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dnp.copyto(a, src)
    assert a.tolist() == [1.0] * 6
    assert src.tolist() == [1.0] * 6


def test_an_array_passed_twice_is_one_array():
    """NumPy sees one array when the same diffuse array is passed twice (aliasing)."""
    a = dnp.arange(5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dnp.copyto(a, a[::-1])
    assert a.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]


def test_a_change_of_shape_in_place_is_refused():
    """``ndarray.resize`` changes the host copy's shape: diffuse refuses, naming why."""
    a = dnp.arange(4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"changed the shape of a diffuse array in place"):
            a.resize((2, 3), refcheck=False)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]


# NumPy's functions giving a writable view of their argument.
VIEWING = {
    "flip": lambda xp, t: xp.flip(t),
    "flip axis": lambda xp, t: xp.flip(t, axis=-1),
    "moveaxis": lambda xp, t: xp.moveaxis(t, 0, -1),
    "atleast_3d": lambda xp, t: xp.atleast_3d(t),
    "real": lambda xp, t: xp.real(t),
    "ndarray.view": lambda xp, t: t.view(),
    "rot90": lambda xp, t: xp.rot90(t) if t.ndim == 2 else xp.flip(t),
}


@pytest.mark.parametrize("entry", ["numpy", "diffuse.numpy"])
@pytest.mark.parametrize("case", sorted(VIEWING))
@settings(max_examples=8, deadline=None)
@given(base=BASES, view=st.sampled_from(sorted(VIEWS)))
def test_views_numpy_gives_write_through(entry, case, base, view):
    """A view NumPy returns of an argument is a view of the diffuse array: writes through
    it reach the array, and the array's later writes show in it (it was a copy)."""
    expected = base.copy()
    v_np = VIEWING[case](onp, VIEWS[view](expected))
    d = dnp.array(base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = VIEWING[case](onp if entry == "numpy" else dnp, VIEWS[view](d))
    v_np[(0,) * v_np.ndim] = 99.0
    v[(0,) * v.ndim] = 99.0
    onp.testing.assert_array_equal(onp.asarray(d), expected)
    VIEWS[view](expected)[...] += 1.0
    VIEWS[view](d)[...] += 1.0
    onp.testing.assert_array_equal(onp.asarray(v), v_np)


def test_fallback_warnings_name_the_users_line(tmp_path):
    """A fallback warns once, pointing at the line of the program that called it, whether
    through diffuse.numpy, NumPy's own function, or a method (in a fresh interpreter: the
    warnings are once per process)."""
    import subprocess
    import sys

    program = tmp_path / "program.py"
    program.write_text(
        "import numpy\n"
        "import diffuse.numpy as np\n"
        "a = np.arange(5.0)\n"
        "b = np.partition(a, 2)\n"
        "c = numpy.nancumprod(a)\n"
        "a[numpy.array([0, 2]), None] = 1.0\n")
    done = subprocess.run([sys.executable, "-W", "always::RuntimeWarning", str(program)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for line, what in [(4, "partition"), (5, "nancumprod"), (6, "assignment through arrays")]:
        assert f"program.py:{line}: RuntimeWarning: diffuse.numpy: {what}" in done.stderr, \
            done.stderr


def test_like_constructors_stay_native_with_numpys_argument_names():
    """``numpy.empty_like(prototype=...)`` and the other ``*_like`` constructors called as
    NumPy documents them, on deferred arrays, run natively (no fallback warning)."""
    x = dnp.ones(10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        made = [onp.empty_like(x), onp.empty_like(prototype=x), dnp.empty_like(x, dtype="int64"),
                onp.zeros_like(x), onp.ones_like(a=x), onp.full_like(x, 2.0)]
    assert all(isinstance(m, dnp.ndarray) for m in made)
    assert [m.shape for m in made] == [(10_000,)] * 6
    assert made[2].dtype == onp.int64 and float(made[5].sum()) == 20_000.0
