"""Physics: all-pairs gravitation with time steps, great-circle distances and option
pricing, as element-wise formulas over whole arrays.
"""

import numpy


def nbody(np, x, y, z, vx, vy, vz, mass, steps, dt):
    """Leapfrog steps of a softened gravitational n-body system, the accelerations from all
    pairs at once (``x[None, :] - x[:, None]`` broadcasts the pairwise differences)."""
    for _ in range(steps):
        dx = x[None, :] - x[:, None]
        dy = y[None, :] - y[:, None]
        dz = z[None, :] - z[:, None]
        inv_r3 = (dx * dx + dy * dy + dz * dz + 0.01) ** -1.5
        vx = vx + dt * ((dx * inv_r3) @ mass)
        vy = vy + dt * ((dy * inv_r3) @ mass)
        vz = vz + dt * ((dz * inv_r3) @ mass)
        x = x + dt * vx
        y = y + dt * vy
        z = z + dt * vz
    return x, y, z


def nbody_inputs(n, rng):
    pos = rng.standard_normal((3, n))
    vel = 0.1 * rng.standard_normal((3, n))
    return (pos[0], pos[1], pos[2], vel[0], vel[1], vel[2], rng.random(n) / n, 3, 0.01)


def arc_distance(np, lat1, lon1, lat2, lon2):
    """Great-circle distances between pairs of points on the unit sphere (the haversine
    formula), the angles in radians."""
    a = (np.sin((lat2 - lat1) / 2.0) ** 2
         + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2.0) ** 2)
    return 2.0 * np.arctan2(np.sqrt(a), np.sqrt(1.0 - a))


def arc_distance_inputs(n, rng):
    lat = rng.uniform(-numpy.pi / 2, numpy.pi / 2, (2, n))
    lon = rng.uniform(-numpy.pi, numpy.pi, (2, n))
    return (lat[0], lon[0], lat[1], lon[1])


def _normal_cdf(np, d):
    """The standard normal distribution function by Abramowitz and Stegun's polynomial
    (26.2.17, error below 7.5e-8)."""
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    poly = k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (
        -1.821255978 + k * 1.330274429))))
    tail = 0.3989422804014327 * np.exp(-0.5 * d * d) * poly
    return np.where(d > 0.0, 1.0 - tail, tail)


def black_scholes(np, price, strike, years, rate, volatility):
    """Black-Scholes prices of European calls and puts."""
    root = volatility * np.sqrt(years)
    d1 = (np.log(price / strike) + (rate + 0.5 * volatility * volatility) * years) / root
    d2 = d1 - root
    discounted = strike * np.exp(-rate * years)
    call = price * _normal_cdf(np, d1) - discounted * _normal_cdf(np, d2)
    put = discounted * _normal_cdf(np, -d2) - price * _normal_cdf(np, -d1)
    return call, put


def black_scholes_inputs(n, rng):
    return (rng.uniform(5.0, 30.0, n), rng.uniform(1.0, 100.0, n), rng.uniform(0.25, 10.0, n),
            0.02, 0.3)
