"""Stencils with time loops: every step reads shifted slices of the grid and writes its
interior (or a new grid), as finite-difference codes do.
"""


def jacobi_1d(np, a, b, steps):
    """The 3-point Jacobi relaxation of a 1-D grid, ping-ponging between two arrays."""
    for _ in range(steps):
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0
    return a


def jacobi_1d_inputs(n, rng):
    return (rng.random(n), rng.random(n), 100)


def jacobi_2d(np, a, b, steps):
    """The 5-point Jacobi relaxation of a 2-D grid, ping-ponging between two arrays."""
    for _ in range(steps):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1]
                               + a[1:-1, :-2] + a[1:-1, 2:])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[:-2, 1:-1] + b[2:, 1:-1]
                               + b[1:-1, :-2] + b[1:-1, 2:])
    return a


def jacobi_2d_inputs(n, rng):
    return (rng.random((n, n)), rng.random((n, n)), 20)


def heat_3d(np, a, b, steps):
    """Explicit steps of the 3-D heat equation: a 7-point stencil, second differences
    along each axis, ping-ponging between two arrays."""
    for _ in range(steps):
        for src, dst in ((a, b), (b, a)):
            c = src[1:-1, 1:-1, 1:-1]
            dst[1:-1, 1:-1, 1:-1] = (
                0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * c + src[:-2, 1:-1, 1:-1])
                + 0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * c + src[1:-1, :-2, 1:-1])
                + 0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * c + src[1:-1, 1:-1, :-2])
                + c)
    return a


def heat_3d_inputs(n, rng):
    return (rng.random((n, n, n)), rng.random((n, n, n)), 10)


def fdtd_2d(np, ex, ey, hz, source):
    """Finite-difference time-domain steps of a 2-D electromagnetic field (Yee's scheme): a
    source row, the electric field from the magnetic one, then the magnetic field from
    both; one step per element of ``source``."""
    for t in range(source.shape[0]):
        ey[0, :] = source[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return ex, ey, hz


def fdtd_2d_inputs(n, rng):
    return (rng.random((n, n + 20)), rng.random((n, n + 20)), rng.random((n, n + 20)),
            rng.random(20))


def horizontal_diffusion(np, field, coeff, steps):
    """Fourth-order horizontal diffusion of a 3-D field (as in weather models): the
    Laplacian, fluxes in both horizontal directions limited to zero where they would
    sharpen the field, and their divergence; the interior is updated ``steps`` times."""
    for _ in range(steps):
        lap = 4.0 * field[1:-1, 1:-1] - (field[2:, 1:-1] + field[:-2, 1:-1]
                                         + field[1:-1, 2:] + field[1:-1, :-2])
        flx = lap[1:, 1:-1] - lap[:-1, 1:-1]
        flx = np.where(flx * (field[2:-1, 2:-2] - field[1:-2, 2:-2]) > 0.0, 0.0, flx)
        fly = lap[1:-1, 1:] - lap[1:-1, :-1]
        fly = np.where(fly * (field[2:-2, 2:-1] - field[2:-2, 1:-2]) > 0.0, 0.0, fly)
        field[2:-2, 2:-2] = field[2:-2, 2:-2] - coeff * (
            flx[1:] - flx[:-1] + fly[:, 1:] - fly[:, :-1])
    return field


def horizontal_diffusion_inputs(n, rng):
    return (rng.random((n + 4, n + 4, 16)), 0.025, 3)


def wave_2d(np, u, prev, c2, steps):
    """Leapfrog steps of the 2-D wave equation: ``u_next = 2u - u_prev + c^2 lap(u)`` on
    the interior, a new array every step."""
    for _ in range(steps):
        nxt = 2.0 * u - prev
        nxt[1:-1, 1:-1] += c2 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2]
                                 - 4.0 * u[1:-1, 1:-1])
        prev, u = u, nxt
    return u


def wave_2d_inputs(n, rng):
    u = rng.random((n, n))
    return (u, u.copy(), 0.2, 20)
