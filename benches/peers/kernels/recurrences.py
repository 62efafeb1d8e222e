"""Loops over rows or columns with recurrences: every iteration reads what the previous one
wrote (a row, a column or a scalar), so nothing runs ahead of the loop.
"""

import numpy


def recursive_filter(np, img, a, b):
    """A first-order recursive (IIR) image filter: causal along the rows of every column
    (``y[:, j] = a img[:, j] + b y[:, j-1]``, a column at a time), then anti-causal down
    the columns (``z[i] = a y[i] + b z[i+1]``, a row at a time)."""
    h, w = img.shape
    y = np.zeros_like(img)
    y[:, 0] = a * img[:, 0]
    for j in range(1, w):
        y[:, j] = a * img[:, j] + b * y[:, j - 1]
    z = np.zeros_like(y)
    z[h - 1, :] = a * y[h - 1, :]
    for i in range(h - 2, -1, -1):
        z[i, :] = a * y[i, :] + b * z[i + 1, :]
    return z


def recursive_filter_inputs(n, rng):
    return (rng.random((n, n)), 0.3, 0.7)


def _thomas(np, d, r, axis):
    """Solves ``-r x[j-1] + (1 + 2r) x[j] - r x[j+1] = d[j]`` along ``axis`` of ``d`` (0 or
    1) for every line across it at once, by the Thomas algorithm. The coefficients are the
    same on every line, so their eliminated forms are Python numbers."""
    n = d.shape[axis]

    def at(j):
        return (slice(None), j) if axis == 1 else (j, slice(None))

    diag, off = 1.0 + 2.0 * r, -r
    upper = [off / diag]
    denominators = [diag]
    for _ in range(1, n):
        denominators.append(diag - off * upper[-1])
        upper.append(off / denominators[-1])
    dp = np.zeros_like(d)
    dp[at(0)] = d[at(0)] / diag
    for j in range(1, n):
        dp[at(j)] = (d[at(j)] - off * dp[at(j - 1)]) / denominators[j]
    x = np.zeros_like(d)
    x[at(n - 1)] = dp[at(n - 1)]
    for j in range(n - 2, -1, -1):
        x[at(j)] = dp[at(j)] - upper[j] * x[at(j + 1)]
    return x


def adi(np, u, steps, r):
    """Alternating-direction implicit steps of the 2-D heat equation: each step solves a
    tridiagonal system along every row (a sweep over the columns), then along every
    column (a sweep over the rows)."""
    for _ in range(steps):
        u = _thomas(np, u, r, axis=1)
        u = _thomas(np, u, r, axis=0)
    return u


def adi_inputs(n, rng):
    return (rng.random((n, n)), 2, 0.25)


def moving_average(np, x, alpha):
    """An exponential moving average along the first axis of many series at once:
    ``s[t] = alpha x[t] + (1 - alpha) s[t-1]``, a row at a time."""
    s = np.zeros_like(x)
    s[0] = x[0]
    for t in range(1, x.shape[0]):
        s[t] = alpha * x[t] + (1.0 - alpha) * s[t - 1]
    return s


def moving_average_inputs(n, rng):
    return (rng.random((n, 4 * n)), 0.1)


def durbin(np, r):
    """Solves the Yule-Walker equations of a symmetric Toeplitz system by Durbin's
    recursion: each step a dot product with a reversed slice and an update of the
    solution so far with its reverse."""
    n = r.shape[0]
    y = np.zeros_like(r)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        alpha = -(r[k] + r[k - 1::-1] @ y[:k]) / beta
        y[:k] = y[:k] + alpha * y[k - 1::-1]
        y[k] = alpha
    return y


def durbin_inputs(n, rng):
    # Autocorrelations of an AR(1) process (0.5^k): a positive definite Toeplitz matrix.
    return (0.5 ** numpy.arange(1, n + 1) * (1.0 + 0.01 * rng.random(n)),)


def seam_energy(np, energy):
    """The cumulative minimal energy of seam carving: each row adds its energy to the
    least of the three neighbours above, ``M[i, j] = e[i, j] + min(M[i-1, j-1:j+2])``,
    a row at a time."""
    m = np.zeros_like(energy)
    m[0] = energy[0]
    for i in range(1, energy.shape[0]):
        above = m[i - 1]
        best = np.minimum(above[1:-1], np.minimum(above[:-2], above[2:]))
        m[i, 1:-1] = energy[i, 1:-1] + best
        m[i, 0] = energy[i, 0] + min(above[0], above[1])
        m[i, -1] = energy[i, -1] + min(above[-2], above[-1])
    return m


def seam_energy_inputs(n, rng):
    return (rng.random((n, 2 * n)),)
