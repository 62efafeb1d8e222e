"""Reductions and statistics from sums: column statistics, covariance built column by
column, correlation, matrix norms and higher moments, without NumPy's statistics routines.
"""


def column_stats(np, data):
    """Per column: the mean (a sum over the rows divided by their count), the standard
    deviation (from the sum of squared deviations), the minimum and the maximum."""
    n = data.shape[0]
    mean = data.sum(axis=0) / n
    std = np.sqrt(((data - mean) ** 2).sum(axis=0) / n)
    return mean, std, data.min(axis=0), data.max(axis=0)


def column_stats_inputs(n, rng):
    return (rng.standard_normal((4 * n, n)),)


def covariance(np, data):
    """The sample covariance of the columns, built column by column: row ``j`` of the
    upper triangle as one vector-matrix product of the centred data, mirrored into
    column ``j``."""
    n, m = data.shape
    centred = data - data.sum(axis=0) / n
    cov = np.empty((m, m))
    for j in range(m):
        cov[j, j:] = centred[:, j] @ centred[:, j:] / (n - 1)
        cov[j:, j] = cov[j, j:]
    return cov


def covariance_inputs(n, rng):
    return (rng.standard_normal((2 * n, n)),)


def correlation(np, data):
    """The correlation matrix of the columns: the columns standardized (mean and standard
    deviation from sums), then one product of the data with its transpose."""
    n = data.shape[0]
    mean = data.sum(axis=0) / n
    centred = data - mean
    std = np.sqrt((centred * centred).sum(axis=0) / n)
    z = centred / std
    return (z.T @ z) / n


def correlation_inputs(n, rng):
    return (rng.standard_normal((2 * n, n)),)


def norms(np, a):
    """Matrix norms from sums: Frobenius, 1 (largest absolute column sum), infinity (largest
    absolute row sum), and every row's Euclidean norm."""
    absolute = np.abs(a)
    frobenius = np.sqrt((a * a).sum())
    one = absolute.sum(axis=0).max()
    inf = absolute.sum(axis=1).max()
    rows = np.sqrt((a * a).sum(axis=1))
    return frobenius, one, inf, rows


def norms_inputs(n, rng):
    return (rng.standard_normal((n, n)),)


def moments(np, data):
    """Skewness and excess kurtosis of every column, from its central moments (sums of
    powers of the deviations)."""
    n = data.shape[0]
    d = data - data.sum(axis=0) / n
    d2 = d * d
    m2 = d2.sum(axis=0) / n
    m3 = (d2 * d).sum(axis=0) / n
    m4 = (d2 * d2).sum(axis=0) / n
    return m3 / m2 ** 1.5, m4 / (m2 * m2) - 3.0


def moments_inputs(n, rng):
    return (rng.gamma(2.0, size=(4 * n, n)),)
