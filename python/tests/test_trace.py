"""``diffuse.trace``: a traced function gives, call after call, what the plain function gives
(bitwise) and what NumPy gives, for random programs over random arguments (views, aliasing,
scalars, in-place writes, returned arguments); and it runs untraced, with a warning, whatever
a replay would not repeat."""

import os
import sys
import warnings

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffuse
import diffuse.numpy as dnp
from diffuse import _state, _trace

sys.path.insert(0, os.path.dirname(__file__))
from _expressions import close  # noqa: E402

SHAPE = (6, 7)
BINARY = ["add", "subtract", "multiply", "maximum"]
UNARY = ["exp", "negative", "absolute", "tanh"]
# What a statement does (see `run`); those of IN_PLACE write an existing variable.
KINDS = ["binary", "scalar", "unary", "shift", "where", "copy", "column_sums", "masked",
         "inplace", "out", "reverse", "total", "cumsum", "roll", "astype", "concatenate",
         "clip"]
IN_PLACE = {"shift", "masked", "inplace", "out"}


@st.composite
def program(draw):
    """Statements over the variables a, b (array arguments) and s (a float argument), ending
    in the names of the variables returned."""
    names = ["a", "b"]
    statements = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(KINDS))
        x, y = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        # A new variable, or (writes in place: always) an existing one written in place.
        if kind in IN_PLACE or draw(st.integers(0, 3)) == 0:
            dst = draw(st.sampled_from(names))
        else:
            dst = f"t{len(statements)}"
        if kind == "binary":
            statements.append(("binary", draw(st.sampled_from(BINARY)), dst, x, y))
        elif kind == "scalar":
            k = draw(st.sampled_from(["s", 0.5, -2.0, 3]))
            statements.append(("scalar", draw(st.sampled_from(BINARY)), dst, x, k))
        elif kind == "unary":
            statements.append(("unary", draw(st.sampled_from(UNARY)), dst, x))
        elif kind == "shift":
            statements.append(("shift", dst, x, draw(st.integers(-1, 1)),
                               draw(st.integers(-1, 1))))
        elif kind == "where":
            statements.append(("where", dst, x, y, draw(st.sampled_from(names))))
        elif kind in ("inplace", "out", "total", "concatenate"):
            statements.append((kind, draw(st.sampled_from(BINARY)), dst, x, y))
        else:
            statements.append((kind, dst, x))
        if dst not in names:
            names.append(dst)
    returned = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
    return statements, returned


def run(xp, statements, returned, a, b, s):
    """The program on the namespace ``xp`` (numpy or diffuse.numpy)."""
    v = {"a": a, "b": b}
    n, m = SHAPE
    for st_ in statements:
        kind = st_[0]
        if kind == "binary":
            _, op, dst, x, y = st_
            v[dst] = getattr(xp, op)(v[x], v[y])
        elif kind == "scalar":
            _, op, dst, x, k = st_
            v[dst] = getattr(xp, op)(v[x], s if k == "s" else k)
        elif kind == "unary":
            _, op, dst, x = st_
            v[dst] = getattr(xp, op)(xp.minimum(v[x], 3.0) if op == "exp" else v[x])
        elif kind == "shift":
            _, dst, x, dr, dc = st_
            v[dst][1:-1, 1:-1] = 0.5 * v[x][1 + dr:n - 1 + dr, 1 + dc:m - 1 + dc]
        elif kind == "where":
            _, dst, c, x, y = st_
            v[dst] = xp.where(v[c] > 0, v[x], v[y])
        elif kind == "copy":
            _, dst, x = st_
            v[dst] = v[x].copy()
        elif kind == "column_sums":  # broadcast back over the rows
            _, dst, x = st_
            v[dst] = v[x] - v[x].sum(axis=0)
        elif kind == "masked":
            _, dst, x = st_
            v[dst][v[x] > 0.5] = 0.25
        elif kind == "inplace":
            _, op, dst, x, _y = st_
            if op == "add":
                v[dst] += v[x]
            elif op == "subtract":
                v[dst] -= v[x]
            else:
                v[dst] *= 0.5
        elif kind == "out":
            _, op, dst, x, y = st_
            getattr(xp, op)(v[x], v[y], out=v[dst])
        elif kind == "reverse":  # a strided view (a step of -1), gathered
            _, dst, x = st_
            v[dst] = xp.concatenate([v[x][::-1, ::2], v[x][::-1, 1::2]], axis=1)
        elif kind == "total":  # a 0-d result, lazy, used as a scalar
            _, op, dst, x, y = st_
            v[dst] = getattr(xp, op)(v[x], v[y].sum() / 64.0)
        elif kind == "cumsum":
            _, dst, x = st_
            v[dst] = xp.cumsum(v[x], axis=1)
        elif kind == "roll":
            _, dst, x = st_
            v[dst] = xp.roll(v[x], 2, axis=0)
        elif kind == "astype":
            _, dst, x = st_
            v[dst] = (v[x] > 0).astype(xp.float64) - (v[x] < -1).astype(xp.int64)
        elif kind == "concatenate":
            _, op, dst, x, y = st_
            v[dst] = xp.concatenate([v[x][:2], v[y][2:]], axis=0)
        else:
            _, dst, x = st_
            v[dst] = xp.clip(v[x], -1.0, 1.0)
    return tuple(v[name] for name in returned)


def arguments(seed, aliased, padded):
    """NumPy arguments (a, b) for one call: `b` is `a` when aliased; `a` is a view into a
    larger array when padded."""
    rng = numpy.random.default_rng(seed)
    big = rng.uniform(-2, 2, (SHAPE[0] + 2, SHAPE[1] + 2))
    a = big[1:-1, 1:-1] if padded else big[:SHAPE[0], :SHAPE[1]].copy()
    b = a if aliased else rng.uniform(-2, 2, SHAPE)
    return (big if padded else None), a, b


def as_diffuse(big, a, b):
    """The same arguments as diffuse arrays (the same aliasing and layout)."""
    if big is not None:
        a_d = dnp.array(big)[1:-1, 1:-1]
    else:
        a_d = dnp.array(a)
    b_d = a_d if b is a else dnp.array(b)
    return a_d, b_d


# DIFFUSE_TRACE_EXAMPLES sets another count (with HYPOTHESIS_PROFILE=explore, new programs).
@settings(max_examples=int(os.environ.get("DIFFUSE_TRACE_EXAMPLES", "60")), deadline=None)
@given(program(), st.booleans(), st.booleans(), st.floats(-1, 1))
def test_traced_programs_match_plain_and_numpy_call_after_call(prog, aliased, padded, s):
    statements, returned = prog
    traced = diffuse.trace(lambda a, b, s: run(dnp, statements, returned, a, b, s))
    for call in range(3):
        big, a, b = arguments(call, aliased, padded)
        a_p, b_p = as_diffuse(big, a, b)
        a_t, b_t = as_diffuse(big, a, b)
        want = run(numpy, statements, returned, a, b, s)
        plain = run(dnp, statements, returned, a_p, b_p, s)
        got = traced(a_t, b_t, s)
        assert len(got) == len(want)
        for g, p, w in zip(got, plain, want):
            assert numpy.asarray(g).tobytes() == numpy.asarray(p).tobytes()
            close(g, w)
        # What the program wrote into its arguments is there too.
        close(a_t, a)
        close(b_t, b)
    # Every call after the first replayed the one recording (nothing here refuses one).
    recorded = list(traced._recorded.values())
    assert len(recorded) == 1 and type(recorded[0]) is _trace._Recorded


def stencil(grid):
    grid[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[1:-1, 2:]
                              + grid[1:-1, :-2] + grid[2:, 1:-1])
    return grid


def test_a_replay_returns_its_arguments_and_writes_them_in_place():
    host = numpy.random.default_rng(3).uniform(0, 1, (10, 10))
    grid = dnp.array(host)
    traced = diffuse.trace(stencil)
    for _ in range(4):
        assert traced(grid) is grid
        stencil(host)
    assert numpy.asarray(grid).tobytes() == host.tobytes()
    # A transpose of the grid taken before (a strided view) sees what replays write.
    view = grid.T
    traced(grid)
    stencil(host)
    assert numpy.asarray(view).tobytes() == host.T.tobytes()


def test_new_shapes_record_again_and_too_many_stop_recording():
    traced = diffuse.trace(lambda x: x * 2.0 + 1.0)
    for n in (3, 4, 3, 5):
        x = numpy.arange(n, dtype=numpy.float64)
        assert numpy.asarray(traced(dnp.array(x))).tolist() == (x * 2.0 + 1.0).tolist()
    assert len(traced._recorded) == 3
    with pytest.warns(RuntimeWarning, match="different signatures"):
        for n in range(6, 6 + _trace.MAX_RECORDINGS):
            traced(dnp.zeros(n))
    x = numpy.arange(40.0)
    assert numpy.asarray(traced(dnp.array(x))).tolist() == (x * 2.0 + 1.0).tolist()


def test_python_values_are_part_of_the_signature():
    traced = diffuse.trace(lambda x, k: x * k)
    x = dnp.array(numpy.ones(4))
    for k in (2.0, 3.0, -0.0, 0.0, 2, float("nan")):
        got = numpy.asarray(traced(x, k))
        assert got.tobytes() == (numpy.ones(4) * k).tobytes(), k


def test_reading_a_value_runs_untraced_with_a_warning():
    def clipped(x):
        # A branch on a value: a replay could not know which way it goes.
        return x * 2.0 if float(x.sum()) > 0 else x * -1.0

    traced = diffuse.trace(clipped)
    with pytest.warns(RuntimeWarning, match="runs untraced: .*read back"):
        traced(dnp.array(numpy.ones(5)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once
        got = traced(dnp.array(-numpy.ones(5)))
    assert numpy.asarray(got).tolist() == [1.0] * 5


def test_small_arrays_numpy_holds_become_diffuse_arrays_unless_numpy_shares_them(monkeypatch):
    monkeypatch.setattr(_state, "eager_limit", 8192)
    # One made by asarray of a view of a NumPy array NumPy no longer holds elsewhere.
    made = dnp.asarray(numpy.arange(16.0).reshape(4, 4))
    assert type(made) is dnp._Eager
    diffuse.trace(stencil)(made)
    assert type(made) is dnp.ndarray
    traced = diffuse.trace(stencil)
    host = numpy.random.default_rng(5).uniform(0, 1, (8, 8))
    grid = dnp.array(host)
    assert type(grid) is dnp._Eager
    view = grid[1:3]  # a NumPy view of its elements: it stays NumPy's
    with pytest.warns(RuntimeWarning, match="argument 0 is a small array .* share"):
        assert traced(grid) is grid and type(grid) is dnp._Eager
    stencil(host)
    assert numpy.asarray(view).tobytes() == host[1:3].tobytes()
    del view
    assert traced(grid) is grid and type(grid) is dnp.ndarray
    stencil(host)
    assert numpy.asarray(grid).tobytes() == host.tobytes()
    for _ in range(3):
        traced(grid)
        stencil(host)
    assert numpy.asarray(grid).tobytes() == host.tobytes()


def test_writing_a_small_array_numpy_holds_runs_untraced(monkeypatch):
    monkeypatch.setattr(_state, "eager_limit", 8192)
    counter = dnp.array(numpy.zeros(3))  # held by NumPy; the function writes it

    def step(x):
        counter[0] += 1.0
        return x + 1.0

    traced = diffuse.trace(step)
    x = dnp.array(numpy.zeros(20000))
    with pytest.warns(RuntimeWarning, match="runs untraced: .*small array"):
        traced(x)
    for _ in range(3):
        traced(x)
    assert numpy.asarray(counter).tolist() == [4.0, 0.0, 0.0]


def test_arguments_a_signature_cannot_hold_run_untraced():
    traced = diffuse.trace(lambda x, xs: x + sum(xs))
    x = dnp.array(numpy.ones(3))
    with pytest.warns(RuntimeWarning, match="runs untraced: argument 1 is a list"):
        for k in range(3):
            got = traced(x, [float(k), 1.0])
            assert numpy.asarray(got).tolist() == [2.0 + k] * 3
    assert traced._recorded == {}


def test_an_exception_while_recording_leaves_no_recording_open():
    def fails(x):
        x + 1.0
        raise KeyError("inside")

    with pytest.raises(KeyError):
        diffuse.trace(fails)(dnp.array(numpy.ones(3)))
    traced = diffuse.trace(lambda x: x + 1.0)
    x = dnp.array(numpy.ones(3))
    traced(x)
    assert numpy.asarray(traced(x)).tolist() == [2.0] * 3
    assert len(traced._recorded) == 1


def test_an_array_the_recording_holds_given_as_an_argument_runs_the_function():
    g = dnp.array(numpy.arange(4.0))
    traced = diffuse.trace(lambda x: x + g)  # `g` is the same array on every replay
    x = dnp.array(numpy.ones(4))
    assert numpy.asarray(traced(x)).tolist() == [1.0, 2.0, 3.0, 4.0]
    # The same signature, but the argument is `g` itself: the function decides.
    assert numpy.asarray(traced(g)).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert numpy.asarray(traced(x)).tolist() == [1.0, 2.0, 3.0, 4.0]


APP_SIZES = {"stencil": 30, "black-scholes": 5000, "black-scholes-poly": 5000, "jacobi": 40,
             "cfd": 41}


@pytest.mark.parametrize("app", sorted(APP_SIZES))
def test_the_peer_apps_traced_give_the_plain_programs_results(app):
    """benches/peers/numpy_apps.py's programs, each iteration a traced function
    (``--module diffuse-traced``): the untraced program's output, with every iteration after
    the first replayed (no warning: nothing in them refuses a recording). Bitwise, except
    where exp and log are involved: the background JIT may have compiled a kernel for one
    run and not yet for the other, and compiled transcendentals may differ from the native
    ones in the last bits."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benches", "peers"))
    import numpy_apps

    outputs = {}
    for module in ("diffuse", "diffuse-traced"):
        system = numpy_apps.load_system(module)
        step, output = numpy_apps.APPS[app](system, APP_SIZES[app])
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            for _ in range(4):
                step()
        outputs[module] = numpy.asarray(output())
    if app.startswith("black-scholes"):
        close(outputs["diffuse-traced"], outputs["diffuse"])
    else:
        assert outputs["diffuse-traced"].tobytes() == outputs["diffuse"].tobytes()


def test_small_arrays_stay_numpys_once_their_signature_cannot_be_replayed(monkeypatch):
    monkeypatch.setattr(_state, "eager_limit", 8192)
    traced = diffuse.trace(lambda x: x * float(x.sum()))
    first = dnp.array(numpy.ones(4))
    with pytest.warns(RuntimeWarning, match="read back"):
        assert numpy.asarray(traced(first)).tolist() == [4.0] * 4
    # The first call made its argument deferred to record it; later ones are left to NumPy.
    second = dnp.array(numpy.ones(4))
    assert numpy.asarray(traced(second)).tolist() == [4.0] * 4
    assert type(second) is dnp._Eager


def test_a_selection_taken_before_a_replay_writes_its_source_keeps_its_elements():
    # `a[nonzero(m)]` is compacted lazily, at the latest before the next write: a replay that
    # writes `a` is such a write.
    traced = diffuse.trace(lambda x: x.__setitem__((slice(None),), x * 10.0) or x)
    a = dnp.array(numpy.arange(6.0))
    m = dnp.array(numpy.array([True, False, True, False, True, False]))
    before = a[dnp.nonzero(m)]
    traced(a)  # recorded (the selection is compacted first, not while recording)
    selection = a[dnp.nonzero(m)]
    traced(a)  # replayed: writes `a`
    assert numpy.asarray(before).tolist() == [0.0, 2.0, 4.0]
    assert numpy.asarray(selection).tolist() == [0.0, 20.0, 40.0]
    assert numpy.asarray(a).tolist() == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0]
    assert [type(r) for r in traced._recorded.values()] == [_trace._Recorded]


def test_an_error_state_that_raises_raises_at_the_replaying_call():
    def halve(x):
        x[...] = 1.0 / x
        return x

    traced = diffuse.trace(halve)
    traced(dnp.array(numpy.ones(3)))
    zeros = dnp.array(numpy.zeros(3))
    with dnp.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            traced(zeros)


def test_a_sparse_matrix_whose_arrays_change_is_recorded_again():
    import diffuse.sparse as sp

    matrix = sp.csr_matrix(numpy.array([[2.0, 0.0], [1.0, 3.0]]))
    traced = diffuse.trace(lambda x: matrix @ x + 1.0)
    x = dnp.array(numpy.array([1.0, 2.0]))
    assert numpy.asarray(traced(x)).tolist() == [3.0, 8.0]
    assert numpy.asarray(traced(x)).tolist() == [3.0, 8.0]  # replayed
    matrix.data[0] = 5.0  # the same matrix object, another native matrix on its next use
    assert numpy.asarray(traced(x)).tolist() == [6.0, 8.0]
    assert numpy.asarray(traced(x)).tolist() == [6.0, 8.0]
    assert [type(r) for r in traced._recorded.values()] == [_trace._Recorded]


def test_strided_views_that_move_to_another_store_are_recorded_again():
    base = dnp.arange(12.0)
    v, w = base.reshape(3, 4), base.reshape(4, 3)  # strided views of one store
    del base  # only they hold it now: using one moves both to a copy shaped like it
    traced = diffuse.trace(lambda x: x + v)
    x = dnp.array(numpy.ones((3, 4)))
    want = numpy.arange(12.0).reshape(3, 4) + 1.0
    assert numpy.asarray(traced(x)).tolist() == want.tolist()
    w + 1.0  # moves both views again, to a copy shaped (4, 3)
    v[0, 0] = 100.0  # written in their new store
    want[0, 0] = 101.0
    assert numpy.asarray(traced(x)).tolist() == want.tolist()
    assert numpy.asarray(traced(x)).tolist() == want.tolist()


def test_an_array_made_and_kept_but_not_returned_runs_untraced():
    kept = {}

    def step(x):
        kept["last"] = x * 2.0  # outlives the call, not returned: a replay could not update it
        return kept["last"] + 1.0

    traced = diffuse.trace(step)
    with pytest.warns(RuntimeWarning, match="outlives it without being returned"):
        traced(dnp.array(numpy.ones(3)))
    for k in (2.0, 3.0):
        assert numpy.asarray(traced(dnp.array(numpy.full(3, k)))).tolist() == [2 * k + 1] * 3
        assert numpy.asarray(kept["last"]).tolist() == [2 * k] * 3
