"""Dense linear algebra: matrix products, chained products and matrix-vector products (also
with the transpose), written as a NumPy user writes them (``@``, ``.T``, scalars).

Every kernel takes ``np`` (``numpy`` or ``diffuse.numpy``) first, then its inputs; each
``*_inputs(n, rng)`` makes the inputs (NumPy arrays and Python numbers) for size ``n``.
"""


def gemm(np, alpha, beta, c, a, b):
    """``alpha * A @ B + beta * C``: a general matrix product with scaling and update."""
    return alpha * (a @ b) + beta * c


def gemm_inputs(n, rng):
    m, k = n, n + n // 10
    return (1.5, 1.2, rng.random((n, m)), rng.random((n, k)), rng.random((k, m)))


def two_mm(np, alpha, beta, a, b, c, d):
    """``D = alpha * (A @ B) @ C + beta * D``: two chained products."""
    tmp = alpha * (a @ b)
    return tmp @ c + beta * d


def two_mm_inputs(n, rng):
    return (0.5, 2.0, rng.random((n, n + 10)), rng.random((n + 10, n + 20)),
            rng.random((n + 20, n)), rng.random((n, n)))


def three_mm(np, a, b, c, d):
    """``(A @ B) @ (C @ D)``: three products, two of them independent."""
    e = a @ b
    f = c @ d
    return e @ f


def three_mm_inputs(n, rng):
    return (rng.random((n, n)), rng.random((n, n)), rng.random((n, n)), rng.random((n, n)))


def syrk(np, alpha, beta, c, a):
    """``alpha * A @ A.T + beta * C``: a symmetric rank-k update, the transpose read by
    ``@``."""
    return alpha * (a @ a.T) + beta * c


def syrk_inputs(n, rng):
    return (1.5, 0.5, rng.random((n, n)), rng.random((n, n // 2)))


def atax(np, a, x):
    """``A.T @ (A @ x)``: a matrix-vector product and one with the transpose."""
    return a.T @ (a @ x)


def atax_inputs(n, rng):
    return (rng.random((n, n + n // 4)), rng.random(n + n // 4))


def bicg(np, a, p, r):
    """The two products of BiCG's inner loop: ``q = A @ p`` and ``s = A.T @ r``."""
    return a @ p, a.T @ r


def bicg_inputs(n, rng):
    return (rng.random((n + n // 4, n)), rng.random(n), rng.random(n + n // 4))


def mvt(np, a, x1, x2, y1, y2):
    """``x1 + A @ y1`` and ``x2 + A.T @ y2``: products with a matrix and its transpose,
    added to vectors."""
    return x1 + a @ y1, x2 + a.T @ y2


def mvt_inputs(n, rng):
    return (rng.random((n, n)), rng.random(n), rng.random(n), rng.random(n), rng.random(n))


def gesummv(np, alpha, beta, a, b, x):
    """``alpha * A @ x + beta * B @ x``: two matrix-vector products summed."""
    return alpha * (a @ x) + beta * (b @ x)


def gesummv_inputs(n, rng):
    return (1.5, 1.2, rng.random((n, n)), rng.random((n, n)), rng.random(n))
