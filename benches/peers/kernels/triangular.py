"""Triangular solves and factorizations written with slices in Python loops: each iteration
reads a scalar or a short slice computed by the previous one.

The matrices are made diagonally dominant, so the factorizations need no pivoting and the
solves are well conditioned (NumPy's and diffuse's rounding differences stay small).
Kernels that factor in place overwrite their input, as LAPACK does; the runner hands every
run fresh inputs.
"""

import numpy


def _lower(n, rng):
    """A lower-triangular matrix with a dominant diagonal."""
    return numpy.tril(rng.random((n, n))) + n * numpy.eye(n)


def _dominant(n, rng):
    """A diagonally dominant general matrix."""
    return rng.random((n, n)) + n * numpy.eye(n)


def forward_substitution(np, lower, b):
    """Solves ``L x = b`` for a lower-triangular ``L``, one row at a time:
    ``x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]``."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - lower[i, :i] @ x[:i]) / lower[i, i]
    return x


def forward_substitution_inputs(n, rng):
    return (_lower(n, rng), rng.random(n))


def back_substitution(np, upper, b):
    """Solves ``U x = b`` for an upper-triangular ``U``, from the last row up:
    ``x[i] = (b[i] - U[i, i+1:] @ x[i+1:]) / U[i, i]``."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - upper[i, i + 1:] @ x[i + 1:]) / upper[i, i]
    return x


def back_substitution_inputs(n, rng):
    return (_lower(n, rng).T.copy(), rng.random(n))


def triangular_solve_many(np, lower, b):
    """Solves ``L X = B`` for many right-hand sides (the columns of ``B``), one row of ``X``
    at a time: ``X[i] = (B[i] - L[i, :i] @ X[:i]) / L[i, i]``."""
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i, :] = (b[i, :] - lower[i, :i] @ x[:i, :]) / lower[i, i]
    return x


def triangular_solve_many_inputs(n, rng):
    return (_lower(n, rng), rng.random((n, n // 2)))


def cholesky(np, a):
    """The Cholesky factor ``L`` of a symmetric positive definite ``A`` (``A = L L^T``),
    column by column (Cholesky-Crout): the diagonal element from the row computed so far,
    then the column below it as a matrix-vector product."""
    n = a.shape[0]
    lower = np.zeros_like(a)
    for j in range(n):
        lower[j, j] = np.sqrt(a[j, j] - lower[j, :j] @ lower[j, :j])
        lower[j + 1:, j] = (a[j + 1:, j] - lower[j + 1:, :j] @ lower[j, :j]) / lower[j, j]
    return lower


def cholesky_inputs(n, rng):
    m = rng.random((n, n))
    return ((m @ m.T) / n + numpy.eye(n),)


def lu(np, a):
    """The LU factorization of ``A`` without pivoting, in place (right-looking Doolittle):
    ``L``'s multipliers below the diagonal, ``U`` on and above it. Each step scales a
    column and subtracts an outer product from the trailing block."""
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] = a[k + 1:, k] / a[k, k]
        a[k + 1:, k + 1:] -= a[k + 1:, k:k + 1] * a[k:k + 1, k + 1:]
    return a


def lu_inputs(n, rng):
    return (_dominant(n, rng),)


def gram_schmidt(np, a):
    """The QR factorization of a tall ``A`` by modified Gram-Schmidt, column by column:
    normalize column ``k`` into ``Q``, project it out of the columns after it. ``A`` is
    overwritten; returns ``(Q, R)``."""
    m, n = a.shape
    q = np.zeros_like(a)
    r = np.zeros((n, n))
    for k in range(n):
        norm = np.sqrt(a[:, k] @ a[:, k])
        r[k, k] = norm
        q[:, k] = a[:, k] / norm
        r[k, k + 1:] = q[:, k] @ a[:, k + 1:]
        a[:, k + 1:] -= q[:, k:k + 1] * r[k:k + 1, k + 1:]
    return q, r


def gram_schmidt_inputs(n, rng):
    return (rng.random((2 * n, n)) + _dominant(n, rng).repeat(2, axis=0),)
