"""diffuse.sparse against SciPy: construction, products with vectors, and the Krylov
solvers (same algorithms: same answers, iteration counts equal up to rounding)."""

import warnings

import numpy
import pytest
import scipy.sparse
import scipy.sparse.linalg

import diffuse.numpy as dnp
import diffuse.sparse as dsp
import diffuse.sparse.linalg as dsla


def poisson(n):
    ones = numpy.ones(n)
    t = scipy.sparse.diags([-ones[:-1], 2 * ones, -ones[:-1]], [-1, 0, 1])
    eye = scipy.sparse.identity(n)
    return (scipy.sparse.kron(eye, t) + scipy.sparse.kron(t, eye)).tocsr()


def test_construction_and_products_match_scipy():
    rng = numpy.random.default_rng(3)
    dense = numpy.where(rng.random((30, 20)) < 0.2, rng.uniform(-1, 1, (30, 20)), 0.0)
    host = scipy.sparse.csr_matrix(dense)
    x = rng.uniform(-1, 1, 20)
    for m in (dsp.csr_matrix(dense), dsp.csr_matrix(host),
              dsp.csr_matrix((host.data, host.indices, host.indptr), shape=host.shape)):
        assert m.shape == (30, 20) and m.nnz == host.nnz
        numpy.testing.assert_allclose(numpy.asarray(m @ x), host @ x, rtol=1e-14, atol=1e-14)
        numpy.testing.assert_allclose(numpy.asarray(m @ dnp.asarray(x)), host @ x, rtol=1e-14,
                                      atol=1e-14)
    numpy.testing.assert_allclose(numpy.asarray(dsp.csr_matrix(dense).T @ numpy.ones(30)),
                                  host.T @ numpy.ones(30), rtol=1e-14, atol=1e-14)


def test_formats_dense_results_and_column_products_as_scipy():
    rng = numpy.random.default_rng(5)
    host = scipy.sparse.random(25, 25, density=0.2, random_state=5, format="csr")
    m = dsp.csr_matrix(host)
    for got, want in [(m.tocsc(), host.tocsc()), (m.tocoo(), host.tocoo()),
                      (m.asformat("csc"), host.asformat("csc"))]:
        assert got.format == want.format and (got != want).nnz == 0
    assert m.asformat("csr") is m
    dense = m.todense()
    assert isinstance(dense, numpy.matrix)
    numpy.testing.assert_array_equal(dense, host.todense())
    # An (n, 1) dense matrix multiplies natively (no SciPy warning) and keeps its form.
    column = rng.uniform(-1, 1, (25, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        product = m @ dnp.asarray(column)
    assert product.shape == (25, 1)
    numpy.testing.assert_allclose(numpy.asarray(product), host @ column, rtol=1e-14,
                                  atol=1e-14)


def test_linear_operators_as_scipy():
    A = poisson(8)
    b = numpy.ones(A.shape[0])
    want, _ = scipy.sparse.linalg.cg(A, b)
    wrapped = dsla.aslinearoperator(dsp.csr_matrix(A))
    assert wrapped.shape == A.shape
    numpy.testing.assert_allclose(numpy.asarray(wrapped.matvec(b)), A @ b, rtol=1e-14)
    numpy.testing.assert_allclose(numpy.asarray(wrapped @ b.reshape(-1, 1)).ravel(), A @ b,
                                  rtol=1e-14)
    # An operator around a sparse matrix solves natively, without a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, info = dsla.cg(wrapped, b)
    assert info == 0
    numpy.testing.assert_allclose(numpy.asarray(x), want, rtol=1e-10, atol=1e-12)
    # A matrix-free operator runs SciPy's solver, calling the operator with diffuse arrays.
    seen = []
    matrix = dsp.csr_matrix(A)

    def apply(v):
        seen.append(type(v))
        return matrix @ v

    free = dsla.LinearOperator(A.shape, matvec=apply)
    with pytest.warns(RuntimeWarning, match="LinearOperator"):
        x, info = dsla.cg(free, b)
    assert info == 0 and seen and all(t is dnp.ndarray for t in seen)
    numpy.testing.assert_allclose(numpy.asarray(x), want, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="dimension mismatch"):
        free.matvec(numpy.ones(3))
    with pytest.raises(TypeError):
        dsla.LinearOperator(A.shape)


def test_linalg_imports_every_way(tmp_path):
    """``from diffuse.sparse import linalg`` once recursed until RecursionError. (Each
    statement runs in a fresh interpreter, outside the source tree, whose ``diffuse`` has no
    built extension.)"""
    import subprocess
    import sys

    for statement in ("from diffuse.sparse import linalg; linalg.cg",
                      "import diffuse.sparse as s; s.linalg.cg",
                      "import diffuse.sparse.linalg as l; l.cg"):
        done = subprocess.run([sys.executable, "-c", statement], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, f"{statement}: {done.stderr[-2000:]}"


def test_bad_input_is_a_clear_error():
    m = dsp.csr_matrix(numpy.eye(4))
    with pytest.raises(ValueError, match="dimension mismatch"):
        m @ numpy.ones(3)
    with pytest.raises(ValueError):
        dsp.csr_matrix((numpy.ones(2), numpy.array([0, 1]), numpy.array([0, 1, 5])),
                       shape=(2, 2))


@pytest.mark.parametrize("method", ["cg", "bicgstab", "cgs"])
def test_solvers_match_scipy(method):
    a = poisson(30)
    b = numpy.ones(a.shape[0])
    counts = {}

    def counter(key):
        counts[key] = 0

        def count(_x):
            counts[key] += 1
        return count

    want, info_want = getattr(scipy.sparse.linalg, method)(a, b, rtol=1e-8, atol=0.0,
                                                           callback=counter("scipy"))
    got, info = getattr(dsla, method)(dsp.csr_matrix(a), b, rtol=1e-8, atol=0.0,
                                      callback=counter("diffuse"))
    assert info == info_want == 0
    assert abs(counts["diffuse"] - counts["scipy"]) <= max(3, counts["scipy"] // 20), counts
    numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-6, atol=1e-8)
    residual = numpy.linalg.norm(b - a @ numpy.asarray(got)) / numpy.linalg.norm(b)
    assert residual < 1e-8


@pytest.mark.parametrize("method", ["cg", "bicgstab", "cgs"])
@pytest.mark.parametrize("kind", ["sparse", "dense", "operator"])
def test_preconditioned_solvers_match_scipy(method, kind):
    a = poisson(20)
    b = numpy.linspace(1.0, 2.0, a.shape[0])
    jacobi = scipy.sparse.diags(1.0 / a.diagonal()).tocsr()
    m = {"sparse": jacobi, "dense": jacobi.toarray(),
         "operator": scipy.sparse.linalg.aslinearoperator(jacobi)}[kind]
    counts = {"scipy": 0, "diffuse": 0}

    def count(key):
        def f(_x):
            counts[key] += 1
        return f

    want, info_want = getattr(scipy.sparse.linalg, method)(a, b, rtol=1e-9, M=m,
                                                           callback=count("scipy"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the operator runs on the host
        got, info = getattr(dsla, method)(dsp.csr_matrix(a), b, rtol=1e-9, M=m,
                                          callback=count("diffuse"))
    assert info == info_want == 0
    assert abs(counts["diffuse"] - counts["scipy"]) <= 2, counts
    numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-7, atol=1e-9)


def test_preconditioner_shape_is_checked():
    a = dsp.csr_matrix(poisson(4))
    with pytest.raises(ValueError, match="preconditioner"):
        dsla.cg(a, numpy.ones(16), M=numpy.eye(3))


@pytest.mark.parametrize("method", ["cg", "bicgstab", "cgs"])
def test_solver_callbacks_maxiter_and_raised_exceptions(method):
    """The native solvers call back into Python with diffuse iterates, stop at ``maxiter``
    with SciPy's ``info``, and raise again what a callback or a Python ``M`` raised."""
    a = poisson(8)
    b = numpy.linspace(1.0, 2.0, a.shape[0])
    solve = getattr(dsla, method)
    seen = []
    x, info = solve(dsp.csr_matrix(a), b, rtol=1e-10, callback=seen.append)
    assert info == 0 and seen and all(isinstance(v, dnp.ndarray) for v in seen)
    if method != "bicgstab":  # BiCGSTAB may stop half-way, after its last callback
        numpy.testing.assert_array_equal(numpy.asarray(seen[-1]), numpy.asarray(x))
    _, info_want = getattr(scipy.sparse.linalg, method)(a, b, rtol=1e-14, maxiter=3)
    _, info = solve(dsp.csr_matrix(a), b, rtol=1e-14, maxiter=3)
    assert info == info_want == 3

    class Stop(Exception):
        pass

    def stop(_x):
        raise Stop("from the callback")

    with pytest.raises(Stop, match="from the callback"):
        solve(dsp.csr_matrix(a), b, callback=stop)

    def failing_m(_v):
        raise Stop("from M")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the callable runs on the host
        with pytest.raises(Stop, match="from M"):
            solve(dsp.csr_matrix(a), b, M=failing_m)
