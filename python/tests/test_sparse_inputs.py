"""diffuse.sparse against SciPy on what users pass and change: malformed constructor input
is SciPy's error before any native code sees it (run in a child process, so that an abort
fails the test instead of killing pytest), every constructor form builds SciPy's matrix,
writes to ``data``/``indices``/``indptr``/``shape`` take effect in every operation, and the
solvers take SciPy's ``b`` and ``x0`` shapes."""

import json
import os
import re
import sys
import textwrap

import numpy
import pytest
import scipy.sparse
import scipy.sparse.linalg

import diffuse.sparse as dsp
import diffuse.sparse.linalg as dsla

sys.path.insert(0, os.path.dirname(__file__))
from _isolated import death, run_isolated  # noqa: E402

# Constructor arguments that do not describe a matrix: (arguments, exception, message), the
# arguments as source text for ``csr_matrix(...)``, ``corrupt(...)`` a SciPy matrix whose
# array was changed after it was built.
MALFORMED = [
    ("([1., 2., 3.], [0, 1, 2], [0, 2, 1, 3]), shape=(3, 3)", "ValueError",
     "indptr must be a non-decreasing sequence"),
    ("([], [], [0, 2, 0]), shape=(2, 2)", "ValueError", "non-decreasing"),
    ("([1., 2.], [0, 1], [0, 1, 5]), shape=(2, 2)", "ValueError",
     "Last value of index pointer"),
    ("([1.], [0], [0, 1]), shape=(3, 3)", "ValueError", "index pointer size 2 should be 4"),
    ("([], [], []), shape=(0, 0)", "ValueError", "index pointer size 0 should be 1"),
    ("([1.], [0], [1, 1]), shape=(1, 1)", "ValueError", "index pointer should start with 0"),
    ("([1.], [5], [0, 1]), shape=(1, 2)", "ValueError", "indices must be < 2"),
    ("([1.], [-1], [0, 1]), shape=(1, 2)", "ValueError", "indices must be >= 0"),
    ("([1., 2.], [0], [0, 1]), shape=(1, 2)", "ValueError",
     "indices and data should have the same size"),
    ("([[1.]], [0], [0, 1]), shape=(1, 1)", "ValueError", "should be 1-D"),
    ("([1.], [[0]], [0, 1]), shape=(1, 1)", "ValueError", "should be 1-D"),
    ("([1.], [0.5], [0, 1]), shape=(1, 1)", "ValueError", "indices must hold integers"),
    ("([1.], [0], [0, float('nan')]), shape=(1, 1)", "ValueError",
     "indptr must hold integers"),
    ("([1.], [True], [0, 1]), shape=(1, 2)", "TypeError", r"non-integer dtype \(bool\)"),
    ("([1.], ['0'], [0, 1]), shape=(1, 1)", "TypeError", "non-integer dtype"),
    ("([1.], [2**64 - 1], [0, 1]), shape=(1, 1)", "ValueError", "out of range for int64"),
    ("([1.], [2**70], [0, 1]), shape=(1, 1)", "TypeError", "non-integer dtype"),
    ("([1j], [0], [0, 1]), shape=(1, 1)", "TypeError", "float64"),
    ("([1.], [0], [0, 1]), shape=(-1, 2)", "ValueError", "'shape' elements cannot be negative"),
    ("([1.], [0], [0, 1]), shape=(2.5, 2)", "TypeError", "cannot be interpreted as an integer"),
    ("([1.], [0], [0, 1]), shape=(float('nan'), 1)", "TypeError", "cannot be interpreted"),
    ("([1.], [0], [0, 1]), shape=(1, 1, 1)", "ValueError", "shape must have length"),
    ("([1.], [0], [0, 1]), shape=(2**63, 1)", "ValueError", "too large"),
    ("(2, -3)", "ValueError", "'shape' elements cannot be negative"),
    ("(2**63, 4)", "ValueError", "too large"),
    ("([], [], [0])", "ValueError", "unable to infer matrix dimensions"),
    ("([1.], ([3], [0])), shape=(2, 2)", "ValueError", "row index exceeds matrix dimensions"),
    ("([1.], ([0], [-1])), shape=(2, 2)", "ValueError", "negative column index found"),
    ("([1., 2.], ([0], [0]))", "ValueError", "must all be the same length"),
    ("(1, 2, 3, 4)", "ValueError", "unrecognized csr_matrix constructor input"),
    ("[[1., 2.], [3.]]", "ValueError", "inhomogeneous"),
    ("numpy.ones((2, 2, 2))", "ValueError", "dimension <= 2"),
    ("[[None]]", "TypeError", "float64"),
    ("[['a']]", "TypeError", "float64"),
    ("numpy.eye(2), dtype=numpy.int32", "TypeError", "float64"),
    ("corrupt('csr', 'indptr', 1, 3)", "ValueError", "non-decreasing"),
    ("corrupt('csr', 'indices', 0, 9)", "ValueError", "indices must be < 2"),
    ("corrupt('csc', 'indices', 0, -4)", "ValueError", "indices must be >= 0"),
    ("corrupt('coo', 'row', 0, 7)", "ValueError", "row index exceeds matrix dimensions"),
]

CHILD = textwrap.dedent("""
    import json, sys
    import numpy, scipy.sparse
    import diffuse.sparse as dsp

    def corrupt(fmt, name, k, value):
        m = scipy.sparse.eye(2, format=fmt)
        getattr(m, name)[k] = value
        return m

    for args, *_ in json.loads(sys.argv[1] if len(sys.argv) > 1 else CASES):
        try:
            eval(f"dsp.csr_matrix({args})")
            print(json.dumps([args, None, None]), flush=True)
        except Exception as e:
            print(json.dumps([args, type(e).__name__, str(e)]), flush=True)
    # The heap is intact: matrices built afterwards multiply as SciPy's.
    rng = numpy.random.default_rng(1)
    for _ in range(20):
        host = scipy.sparse.random(40, 30, density=0.2, format="csr", random_state=rng)
        x = rng.uniform(-1, 1, 30)
        m = dsp.csr_matrix((host.data, host.indices, host.indptr), shape=host.shape)
        assert numpy.allclose(numpy.asarray(m @ x), host @ x, rtol=1e-13, atol=1e-13)
    print("healthy")
""")


def test_malformed_input_is_scipys_error_and_the_process_survives():
    code = f"CASES = {json.dumps(json.dumps(MALFORMED))}\n{CHILD}"
    proc = run_isolated(code, timeout=300)
    assert death(proc) is None, f"{death(proc)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[-1] == "healthy"
    got = {args: (kind, message) for args, kind, message in map(json.loads, lines[:-1])}
    for args, kind, pattern in MALFORMED:
        assert got[args][0] == kind, (args, got[args])
        assert re.search(pattern, got[args][1]), (args, got[args])


def test_a_matrix_too_large_for_memory_is_a_memory_error():
    """Building the native matrix of a matrix that does not fit raises MemoryError (its
    vectors are allocated fallibly) instead of aborting in the allocator."""
    code = textwrap.dedent("""
        import numpy, diffuse.sparse as dsp
        for rows in (2**24, 2**26, 2**27, 2**29):
            try:
                y = dsp.csr_matrix((rows, 4)) @ numpy.ones(4)
                assert numpy.asarray(y).shape == (rows,)
                print(rows, "ok", flush=True)
            except MemoryError as e:
                print(rows, "MemoryError", e, flush=True)
    """)
    proc = run_isolated(code, timeout=300, memory_bytes=3 << 30)
    assert death(proc) is None and proc.returncode == 0, (proc.stdout, proc.stderr[-2000:])
    assert len(proc.stdout.splitlines()) == 4
    assert "MemoryError" in proc.stdout, proc.stdout


# SciPy's full check skips the index pointer of a matrix without entries (the second case).
@pytest.mark.parametrize("args", [a for a, *_ in MALFORMED[:1] + MALFORMED[2:10]])
def test_malformed_compressed_arrays_get_scipys_messages(args):
    """Where SciPy checks (its full format check), the message is SciPy's."""
    with pytest.raises(ValueError) as want:
        eval(f"scipy.sparse.csr_matrix({args})").check_format(full_check=True)
    with pytest.raises(ValueError) as got:
        eval(f"dsp.csr_matrix({args})")
    assert str(got.value).startswith(str(want.value)), (str(got.value), str(want.value))


def _forms():
    rng = numpy.random.default_rng(5)
    dense = numpy.where(rng.random((5, 4)) < 0.4, rng.uniform(-1, 1, (5, 4)), 0.0)
    host = scipy.sparse.csr_matrix(dense)
    return [
        ((3, 4), {}),
        ((numpy.int64(2), 5), {}),
        (([1.0, 2.0, 3.0], ([0, 2, 0], [1, 1, 1])), {"shape": (3, 2)}),
        (([1.0, 2.0, 3.0], ([0, 2, 0], [1, 1, 1])), {}),
        (([1.0, 2.0, 3.0, 9.0], [2, 0, 2, 1], [0, 3, 3]), {"shape": (2, 3)}),
        (([1.0, 2.0], [1.0, 0.0], numpy.array([0, 1, 2], dtype=numpy.uint8)), {}),
        ((host.data, host.indices, host.indptr), {"shape": (5, 7)}),
        (dense, {}),
        (dense.tolist(), {}),
        (dense[0], {}),
        (numpy.asmatrix(dense), {}),
        (dense.astype(numpy.int32), {}),
        (host, {}),
        (host.tocoo(), {}),
        (host.tocsc(), {}),
        (host.tobsr(), {}),
        (host.todia(), {}),
        (host.tolil(), {}),
        (numpy.zeros((0, 3)), {}),
    ]


@pytest.mark.parametrize("arg,kwargs", _forms())
def test_every_constructor_form_builds_scipys_matrix(arg, kwargs):
    want = scipy.sparse.csr_matrix(arg, **kwargs)
    got = dsp.csr_matrix(arg, **kwargs)
    assert got.shape == want.shape
    numpy.testing.assert_array_equal(got.toarray(), want.toarray())
    x = numpy.linspace(-1.0, 2.0, want.shape[1])
    numpy.testing.assert_allclose(numpy.asarray(got @ x), want @ x, rtol=1e-14, atol=1e-14)


def _square():
    rng = numpy.random.default_rng(11)
    dense = numpy.where(rng.random((6, 6)) < 0.4, rng.uniform(1, 2, (6, 6)), 0.0)
    return scipy.sparse.csr_matrix(dense + 4 * numpy.eye(6))


def _restructure(m):
    m.data = numpy.array([1.0, 2.0, 3.0, 4.0])
    m.indices = numpy.array([5, 0, 3, 3])
    m.indptr = numpy.array([0, 1, 1, 2, 2, 4, 4])


def _through_a_view(m):
    v = m.data[1::2]
    v += 1


# Writes a SciPy user makes to a matrix's arrays (applied alike to SciPy's and diffuse's).
WRITES = {
    "assign data": lambda m: setattr(m, "data", 4 * m.data),
    "write into data": lambda m: m.data.__setitem__(slice(None), 4.0),
    "scale data in place": lambda m: m.data.__imul__(-2.0),
    "write one value": lambda m: m.data.__setitem__(2, 7.5),
    "write through a view": _through_a_view,
    "assign indices": lambda m: setattr(m, "indices", (m.indices + 1) % 6),
    "write into indices": lambda m: m.indices.__setitem__(0, (m.indices[0] + 2) % 6),
    "assign all three": _restructure,
    "write into indptr": lambda m: m.indptr.__setitem__(1, m.indptr[1] + 1),
    "reshape": lambda m: setattr(m, "shape", (3, 12)),
    "write through to_scipy": lambda m: getattr(m, "to_scipy", lambda: m)().data.fill(-1.0),
}

# What is computed from the matrix afterwards.
USES = {
    "matvec": lambda m: m @ numpy.arange(m.shape[1], dtype=float),
    "toarray": lambda m: m.toarray(),
    "sum": lambda m: (m + m).toarray(),
    "difference": lambda m: (m - scipy.sparse.eye(*m.shape, format="csr")).toarray(),
    "scaled": lambda m: (2.5 * m).toarray(),
    "transpose": lambda m: m.T @ numpy.arange(m.shape[0], dtype=float),
    "diagonal": lambda m: m.diagonal(),
    "nnz and shape": lambda m: [m.nnz, *m.shape],
    "copy": lambda m: m.copy() @ numpy.ones(m.shape[1]),
    "product": lambda m: (m @ m.T).toarray(),
}


@pytest.mark.parametrize("use", USES)
@pytest.mark.parametrize("write", WRITES)
def test_writes_to_a_matrix_take_effect_as_in_scipy(write, use):
    want, got = _square(), dsp.csr_matrix(_square())
    got @ numpy.ones(6)  # the native matrix exists before the write
    WRITES[write](want)
    WRITES[write](got)
    numpy.testing.assert_allclose(numpy.asarray(USES[use](got)),
                                  numpy.asarray(USES[use](want)), rtol=1e-14, atol=1e-14)


def test_solvers_see_the_written_values():
    b = numpy.linspace(1.0, 2.0, 4)
    want = scipy.sparse.eye(4, format="csr")
    got = dsp.eye(4)
    got.data = 4 * got.data
    want.data = 4 * want.data
    for method in ("cg", "bicgstab", "cgs"):
        x, info = getattr(dsla, method)(got, b)
        x_want, info_want = getattr(scipy.sparse.linalg, method)(want, b)
        assert info == info_want == 0
        numpy.testing.assert_allclose(numpy.asarray(x), x_want, rtol=1e-12)


def test_writes_that_break_the_matrix_are_errors_until_repaired():
    m = dsp.csr_matrix(_square())
    x = numpy.ones(6)
    good = numpy.asarray(m @ x)
    column = int(m.indices[0])
    m.indices[0] = 9
    for use in (lambda: m @ x, m.toarray, lambda: m + m, lambda: m.T, lambda: m.nnz):
        with pytest.raises(ValueError, match="indices must be < 6"):
            use()
    m.indices[0] = column
    numpy.testing.assert_array_equal(numpy.asarray(m @ x), good)
    with pytest.raises(ValueError, match="'shape' elements cannot be negative"):
        m.shape = (-3, -12)
    m.indptr[-1] = 10 ** 6
    with pytest.raises(ValueError, match="Last value of index pointer"):
        m @ x
    with pytest.raises(TypeError, match="float64"):
        m.data = numpy.ones(m.data.shape, dtype=complex)
    with pytest.raises(ValueError, match="1-D"):
        m.indices = numpy.zeros((2, 2), dtype=numpy.int64)
    with pytest.raises(TypeError, match="non-integer dtype"):
        m.indptr = ["a"]


def test_matrices_made_without_a_copy_share_writes_as_in_scipy():
    a = dsp.csr_matrix(_square())
    shared, copied = dsp.csr_matrix(a), dsp.csr_matrix(a, copy=True)
    want = scipy.sparse.csr_matrix(_square())
    want_shared = scipy.sparse.csr_matrix(want)
    a.data[:] = 3.0
    want.data[:] = 3.0
    x = numpy.arange(6.0)
    numpy.testing.assert_array_equal(numpy.asarray(shared @ x), want_shared @ x)
    numpy.testing.assert_array_equal(numpy.asarray(copied @ x), _square() @ x)


def test_arrays_nobody_holds_cost_nothing_per_use():
    """Once the user holds none of a matrix's arrays, uses stop comparing them."""
    m = dsp.csr_matrix(_square())
    x = numpy.ones(6)
    held = m.data
    m @ x
    assert m._arrays.checked is not None, "a held array may still be written"
    del held
    m.data[:] = 2.0
    numpy.testing.assert_array_equal(numpy.asarray(m @ x), 2.0 * (_square() != 0) @ x)
    assert m._arrays.checked is None


@pytest.mark.parametrize("method", ["cg", "bicgstab", "cgs"])
@pytest.mark.parametrize("b_shape", [(6,), (6, 1)])
@pytest.mark.parametrize("x0", [None, (6,), (6, 1), "Mb", (1, 6), (5,), (6, 2), (6, 1, 1),
                                "bad"])
def test_solvers_take_scipys_shapes_of_b_and_x0(method, b_shape, x0):
    a = scipy.sparse.diags([-numpy.ones(5), 2.5 * numpy.ones(6), -numpy.ones(5)], [-1, 0, 1],
                           format="csr")
    b = numpy.linspace(1.0, 2.0, 6).reshape(b_shape)
    if isinstance(x0, tuple):
        x0 = numpy.full(x0, 0.5)

    def solve(module, matrix):
        try:
            x, info = getattr(module, method)(matrix, b, x0=x0, rtol=1e-10)
        except Exception as e:  # noqa: BLE001 - the exception itself is compared
            return type(e), str(e)
        return numpy.asarray(x), info

    want = solve(scipy.sparse.linalg, a)
    if want[0] is UnboundLocalError:  # SciPy's own failure on an unknown string
        want = (ValueError, "x0 must be an array or 'Mb'")
    got = solve(dsla, dsp.csr_matrix(a))
    if isinstance(want[0], type):
        assert got[0] is want[0] and got[1].startswith(want[1]), (got, want)
    else:
        assert got[1] == want[1] == 0
        assert got[0].shape == want[0].shape == (6,)
        numpy.testing.assert_allclose(got[0], want[0], rtol=1e-8, atol=1e-10)
