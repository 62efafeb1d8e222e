"""The diffuse applications written for the array libraries a diffuse user would pick
instead: the peers they are compared with.

Usage: numpy_apps.py APP --n N [--iters K] [--module SYSTEM]

APP is stencil, black-scholes, black-scholes-poly, jacobi or cfd; SYSTEM (default numpy)
is one of

- numpy:       the NumPy program (SciPy's erf for Black-Scholes);
- numexpr:     NumPy arrays, with the element-wise formulas evaluated by
               ``numexpr.evaluate`` (SciPy's erf, which numexpr lacks);
- jax:         ``jax.numpy`` in float64 (``jax_enable_x64``), each iteration one
               ``jax.jit``-compiled function with functional updates (``.at[...].set``;
               CFD's pressure sweeps a ``lax.fori_loop``);
- dask:        ``dask.array`` split into row blocks (two per core on large arrays), each
               iteration's results persisted (computed) before the next one starts (in
               CFD also each pressure sweep's); erf through ``map_blocks``;
- cupynumeric: the NumPy program on cuPyNumeric (run it with
               benches/peers/run-cupynumeric.sh, which sets up Legate on the CPU);
- cupy:        the NumPy program on CuPy, on the GPU (``cupyx.scipy.special.erf``);
               benches/peers/gpu_peers.py runs it after checking that there is a GPU;
- diffuse:     the NumPy program on diffuse's Python package (``import diffuse.numpy``);
- diffuse-traced: the same, each iteration one ``diffuse.trace``d function (as JAX's
               ``jax.jit``): recorded on the warm-up, its tasks replayed without running
               the Python code again.

Each app mirrors the Rust version in examples/src (same problem, same initial values, same
sizes; random inputs come from NumPy's ``default_rng`` on the host, handed to the system
before timing). One warm-up iteration (for JAX: including its compilation) is followed by
K timed ones; timings wait for the last iteration's results (JAX, CuPy and cuPyNumeric run
asynchronously). Prints one JSON record: app, peer (the system), n, iters,
seconds_per_iter, warmup_seconds and checksum (the sum of the first output, on the host).

A system that cannot run an app (numexpr has no matrix product, cuPyNumeric no erf) exits
with status 3 and says why on stderr.
"""

import argparse
import json
import math
import os
import sys
import time
from collections import namedtuple

import numpy

SYSTEMS = ("numpy", "numexpr", "jax", "dask", "cupynumeric", "cupy", "diffuse",
           "diffuse-traced")

# (app, system) pairs that cannot run, and why.
CANNOT = {
    ("jacobi", "numexpr"): "numexpr evaluates element-wise expressions only: it has no "
                           "matrix-vector product",
    ("black-scholes", "cupynumeric"): "cuPyNumeric has no erf (black-scholes-poly is the "
                                      "Black-Scholes it runs)",
}

# The system's array namespace (`import ... as np`), its erf and numexpr (for the numexpr
# system), set by load_system().
np = None
erf = None
ne = None


class System:
    """How the apps run on one library. The defaults are NumPy's: arrays are mutable, a step
    is an ordinary function, results are there when it returns."""

    def __init__(self, name):
        self.name = name

    def array(self, host):
        """The system's array holding the NumPy array `host`."""
        return np.asarray(host)

    def formula(self, fn):
        """The implementation of the element-wise formula `fn` (a NumPy-style function)."""
        return fn

    def put(self, a, index, value):
        """`a` with `a[index] = value`."""
        a[index] = value
        return a

    def repeat(self, count, body, x):
        """`body` applied `count` times to `x`."""
        for _ in range(count):
            x = body(x)
        return x

    def compile(self, fn, donate=()):
        """`fn` as the system runs a whole iteration (`donate`: arguments it may overwrite)."""
        return fn

    def finish(self, arrays):
        """The tuple `arrays`, an iteration's results, once the system has them in hand."""
        return arrays

    def wait(self, arrays):
        """Waits for the work behind `arrays`."""
        for a in arrays:
            float(a[(0,) * a.ndim])

    def host(self, a):
        """The values of the system's array `a` as a float64 NumPy array."""
        return numpy.array(a, dtype=numpy.float64)


class Numexpr(System):
    """NumPy arrays; formulas with a numexpr version (NUMEXPR) run through it."""

    def formula(self, fn):
        return NUMEXPR[fn]


class Jax(System):
    """`jax.numpy`: immutable arrays, updated functionally; each iteration is jit-compiled."""

    def put(self, a, index, value):
        return a.at[index].set(value)

    def repeat(self, count, body, x):
        import jax

        return jax.lax.fori_loop(0, count, lambda _, y: body(y), x)

    def compile(self, fn, donate=()):
        import jax

        return jax.jit(fn, donate_argnums=donate)

    def wait(self, arrays):
        import jax

        jax.block_until_ready(arrays)


class Cupy(System):
    """CuPy: NumPy's semantics on the GPU; work is queued on the current stream, and host
    copies are explicit (`get`)."""

    def wait(self, arrays):
        import cupy

        cupy.cuda.get_current_stream().synchronize()

    def host(self, a):
        return a.get().astype(numpy.float64)


class Dask(System):
    """`dask.array` in row blocks, two per core but none under MIN_BLOCK elements (each block
    is a task per operation, and a task costs some 100 microseconds in the scheduler);
    `finish` computes an iteration's results and keeps them in memory (`persist`), so each
    timed iteration does its work."""

    MIN_BLOCK = 1 << 20

    def array(self, host):
        blocks = max(1, min(2 * (os.cpu_count() or 1), host.size // self.MIN_BLOCK))
        rows = math.ceil(host.shape[0] / blocks)
        return np.from_array(host, chunks=(rows,) + host.shape[1:])

    def repeat(self, count, body, x):
        # Persisting after each application keeps the task graph small: `a[index] = value`
        # walks the whole graph behind `a`, so a graph that grew over many sweeps makes
        # every further assignment slower (minutes per CFD step without this).
        for _ in range(count):
            x = body(x).persist()
        return x

    def finish(self, arrays):
        import dask

        return dask.persist(*arrays)


class Diffuse(System):
    """diffuse's Python package: lazy arrays. Like the Rust apps' harness, every iteration ends
    with a flush, so that an iteration whose results the next one overwrites is still
    computed (not fused away) and every timed iteration replays the same plans."""

    def finish(self, arrays):
        import diffuse

        diffuse.flush()
        return arrays


class DiffuseTraced(Diffuse):
    """diffuse's Python package with each iteration a traced function (``diffuse.trace``)."""

    def compile(self, fn, donate=()):
        import diffuse

        return diffuse.trace(fn)


def load_system(name):
    """Imports the system `name`, sets `np` and `erf`, and returns its System."""
    global np, erf, ne
    if name == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy
        import jax.scipy.special

        np, erf = jax.numpy, jax.scipy.special.erf
        return Jax(name)
    if name == "dask":
        import dask.array
        from scipy.special import erf as scipy_erf

        def blockwise_erf(x):  # dask has no erf: SciPy's on each block
            return x.map_blocks(scipy_erf)

        np, erf = dask.array, blockwise_erf
        return Dask(name)
    if name == "cupynumeric":
        import cupynumeric

        np = cupynumeric  # no erf
        return System(name)
    if name == "cupy":
        import cupy
        import cupyx.scipy.special

        np, erf = cupy, cupyx.scipy.special.erf
        return Cupy(name)
    if name in ("diffuse", "diffuse-traced"):
        import diffuse.numpy
        import diffuse.special

        np, erf = diffuse.numpy, diffuse.special.erf
        return Diffuse(name) if name == "diffuse" else DiffuseTraced(name)
    import scipy.special

    np, erf = numpy, scipy.special.erf
    if name == "numexpr":
        import numexpr

        ne = numexpr
        return Numexpr(name)
    return System(name)


# numexpr versions of the element-wise formulas: NUMEXPR[numpy_style_function]. As numexpr
# is used, `ne.evaluate` takes the arrays and scalars its expression names from the
# caller's local variables.
NUMEXPR = {}


def numexpr_version(of):
    """Registers the decorated function as the numexpr version of the formula `of`."""
    def register(fn):
        NUMEXPR[of] = fn
        return fn
    return register


# --- stencil ----------------------------------------------------------------------------

INTERIOR = (slice(1, -1), slice(1, -1))


def five_point(center, north, east, west, south):
    """The stencil's update: the average of a point and its four neighbours."""
    average = center + north + east + west + south
    return 0.2 * average


@numexpr_version(five_point)
def _(center, north, east, west, south):
    return ne.evaluate("0.2 * (center + north + east + west + south)")


def stencil(s, n):
    """The 5-point stencil on an (n + 2)^2 grid (examples/src/stencil.rs): each iteration
    replaces the interior with the average of each point and its neighbours."""
    side = n + 2
    k = numpy.arange(side * side)
    grid = s.array(((((k // side) * 37 + (k % side) * 101 + 13) % 97) / 97.0).reshape(side, side))

    def update(grid):
        value = s.formula(five_point)(grid[1:-1, 1:-1], grid[:-2, 1:-1], grid[1:-1, 2:],
                                      grid[1:-1, :-2], grid[2:, 1:-1])
        return s.put(grid, INTERIOR, value)

    update = s.compile(update, donate=(0,))

    def step():
        nonlocal grid
        (grid,) = s.finish((update(grid),))
        return (grid,)

    return step, lambda: grid[INTERIOR]


# --- Black-Scholes ----------------------------------------------------------------------

def cnd_erf(x):
    """The standard normal distribution through erf."""
    return 0.5 * erf(x * (1.0 / math.sqrt(2.0))) + 0.5


@numexpr_version(cnd_erf)
def _(x):
    scaled = ne.evaluate("x * 0.7071067811865475")  # 1 / sqrt(2), as above
    e = erf(scaled)  # numexpr has no erf: SciPy's
    return ne.evaluate("0.5 * e + 0.5")


# The Abramowitz-Stegun coefficients (26.2.17).
A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429


def cnd_polynomial(d):
    """The standard normal distribution as cuNumeric's Black-Scholes example computes it: the
    Abramowitz-Stegun polynomial, with absolute, exp and where."""
    k = 1.0 / (1.0 + 0.2316419 * np.absolute(d))
    tail = (0.3989422804014327 * np.exp(-0.5 * d * d)
            * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5))))))
    return np.where(d > 0, 1.0 - tail, tail)


@numexpr_version(cnd_polynomial)
def _(d):
    a1, a2, a3, a4, a5 = A1, A2, A3, A4, A5
    k = ne.evaluate("1.0 / (1.0 + 0.2316419 * abs(d))")
    tail = ne.evaluate("0.3989422804014327 * exp(-0.5 * d * d) "
                       "* (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))")
    return ne.evaluate("where(d > 0, 1.0 - tail, tail)")


RATE, VOL = 0.02, 0.3


def price(spot, strike, years, cnd):
    """European call and put prices (rate RATE, volatility VOL), with `cnd` the cumulative
    standard normal distribution."""
    sqrt_t = np.sqrt(years)
    vol_sqrt_t = sqrt_t * VOL
    drift = years * (RATE + 0.5 * VOL * VOL)
    d1 = (np.log(spot / strike) + drift) / vol_sqrt_t
    d2 = d1 - vol_sqrt_t
    cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
    discounted = strike * np.exp(years * -RATE)
    call = spot * cnd_d1 - discounted * cnd_d2
    put = discounted * (1.0 - cnd_d2) - spot * (1.0 - cnd_d1)
    return call, put


@numexpr_version(price)
def _(spot, strike, years, cnd):
    rate, vol = RATE, VOL
    vol_sqrt_t = ne.evaluate("sqrt(years) * vol")
    d1 = ne.evaluate("(log(spot / strike) + years * (rate + 0.5 * vol * vol)) / vol_sqrt_t")
    d2 = ne.evaluate("d1 - vol_sqrt_t")
    cnd = NUMEXPR[cnd]
    cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
    discounted = ne.evaluate("strike * exp(years * -rate)")
    call = ne.evaluate("spot * cnd_d1 - discounted * cnd_d2")
    put = ne.evaluate("discounted * (1.0 - cnd_d2) - spot * (1.0 - cnd_d1)")
    return call, put


def black_scholes(s, n, cnd=cnd_erf):
    """Black-Scholes on n options (examples/src/black_scholes.rs): each iteration prices them
    all again."""
    rng = numpy.random.default_rng(1)
    spot = s.array(rng.uniform(5.0, 30.0, n))
    strike = s.array(rng.uniform(1.0, 100.0, n))
    years = s.array(rng.uniform(0.25, 10.0, n))
    update = s.compile(lambda spot, strike, years: s.formula(price)(spot, strike, years, cnd))
    result = None

    def step():
        nonlocal result
        result = s.finish(update(spot, strike, years))
        return result

    return step, lambda: result[0]


def black_scholes_poly(s, n):
    """Black-Scholes with the polynomial cumulative normal distribution (no erf)."""
    return black_scholes(s, n, cnd_polynomial)


# --- Jacobi -----------------------------------------------------------------------------

def jacobi(s, n):
    """Jacobi iteration for a diagonally dominant dense n x n system
    (examples/src/jacobi.rs): x = (b - R x) / d."""
    rng = numpy.random.default_rng(11)
    a = rng.uniform(0.0, 1.0, (n, n))
    d = s.array(numpy.diag(a) + n)
    r = s.array(a - numpy.diag(numpy.diag(a)))
    b = s.array(rng.uniform(0.0, 1.0, n))
    x = s.array(numpy.zeros(n))
    update = s.compile(lambda x, r, b, d: (b - r @ x) / d, donate=(0,))

    def step():
        nonlocal x
        (x,) = s.finish((update(x, r, b, d),))
        return (x,)

    return step, lambda: x


# --- CFD --------------------------------------------------------------------------------
# Step 12 of Lorena Barba's "12 steps to Navier-Stokes" as examples/src/cfd.rs runs it: an
# n x n grid (rows y, columns x) on [0, 2]^2, periodic in x, no-slip walls at y = 0 and 2,
# a constant source F driving u; from rest; one iteration is one time step (no convergence
# test). Every formula runs over three column sets, as in the original: the interior and
# the two periodic columns, each with its east and west neighbour columns.

NIT = 50  # Jacobi sweeps of the pressure Poisson equation per time step
COLUMN_SETS = (  # (centre, east, west) column slices: interior, x = 2, x = 0
    (slice(1, -1), slice(2, None), slice(0, -2)),
    (slice(-1, None), slice(0, 1), slice(-2, -1)),
    (slice(0, 1), slice(1, 2), slice(-1, None)),
)
ROWS, NORTH, SOUTH = slice(1, -1), slice(2, None), slice(0, -2)

Params = namedtuple("Params", "dx dy rho nu f dt")


def points(a, c, e, w):
    """`a` on the interior rows of the columns `c`, and its east, west, north and south
    neighbours there."""
    return a[ROWS, c], a[ROWS, e], a[ROWS, w], a[NORTH, c], a[SOUTH, c]


def pressure_rhs(u_e, u_w, u_n, u_s, v_e, v_w, v_n, v_s, prm):
    """The right-hand side of the pressure Poisson equation (the original's build_up_b)."""
    dx, dy, rho, dt = prm.dx, prm.dy, prm.rho, prm.dt
    return (rho * (1 / dt * ((u_e - u_w) / (2 * dx) + (v_n - v_s) / (2 * dy))
                   - ((u_e - u_w) / (2 * dx)) ** 2
                   - 2 * ((u_n - u_s) / (2 * dy) * (v_e - v_w) / (2 * dx))
                   - ((v_n - v_s) / (2 * dy)) ** 2))


@numexpr_version(pressure_rhs)
def _(u_e, u_w, u_n, u_s, v_e, v_w, v_n, v_s, prm):
    dx, dy, rho, dt = prm.dx, prm.dy, prm.rho, prm.dt
    return ne.evaluate("rho * (1 / dt * ((u_e - u_w) / (2 * dx) + (v_n - v_s) / (2 * dy))"
                       " - ((u_e - u_w) / (2 * dx)) ** 2"
                       " - 2 * ((u_n - u_s) / (2 * dy) * (v_e - v_w) / (2 * dx))"
                       " - ((v_n - v_s) / (2 * dy)) ** 2)")


def pressure_sweep(pn_e, pn_w, pn_n, pn_s, b_c, prm):
    """One Jacobi update of the pressure from the previous sweep's `pn`."""
    dx2, dy2 = prm.dx * prm.dx, prm.dy * prm.dy
    denom = 2 * (dx2 + dy2)
    coef = dx2 * dy2 / denom
    return ((pn_e + pn_w) * dy2 + (pn_n + pn_s) * dx2) / denom - coef * b_c


@numexpr_version(pressure_sweep)
def _(pn_e, pn_w, pn_n, pn_s, b_c, prm):
    dx2, dy2 = prm.dx * prm.dx, prm.dy * prm.dy
    denom = 2 * (dx2 + dy2)
    coef = dx2 * dy2 / denom
    return ne.evaluate("((pn_e + pn_w) * dy2 + (pn_n + pn_s) * dx2) / denom - coef * b_c")


def momentum(w_c, w_e, w_w, w_n, w_s, un_c, vn_c, p_plus, p_minus, h, source, prm):
    """The new velocity component `w` (`w_*`: its previous values; `un`, `vn`: the previous
    velocities) with the pressure difference `p_plus - p_minus` over `2 h` (h = dx for u,
    dy for v) and the source term `source` (F dt for u, none for v)."""
    dx, dy, rho, nu, dt = prm.dx, prm.dy, prm.rho, prm.nu, prm.dt
    value = (w_c - un_c * dt / dx * (w_c - w_w) - vn_c * dt / dy * (w_c - w_s)
             - dt / (2 * rho * h) * (p_plus - p_minus)
             + nu * (dt / (dx * dx) * (w_e - 2 * w_c + w_w)
                     + dt / (dy * dy) * (w_n - 2 * w_c + w_s)))
    return value if source is None else value + source


@numexpr_version(momentum)
def _(w_c, w_e, w_w, w_n, w_s, un_c, vn_c, p_plus, p_minus, h, source, prm):
    dx, dy, rho, nu, dt = prm.dx, prm.dy, prm.rho, prm.nu, prm.dt
    value = ("w_c - un_c * dt / dx * (w_c - w_w) - vn_c * dt / dy * (w_c - w_s)"
             " - dt / (2 * rho * h) * (p_plus - p_minus)"
             " + nu * (dt / (dx * dx) * (w_e - 2 * w_c + w_w)"
             " + dt / (dy * dy) * (w_n - 2 * w_c + w_s))")
    return ne.evaluate(value if source is None else value + " + source")


def cfd(s, n):
    """The channel flow on an n x n grid from rest (examples/src/cfd.rs)."""
    if n < 3:
        sys.exit("--n must be at least 3 (the grid needs an interior)")
    h = 2.0 / (n - 1)
    # The original's dt = 0.01 is stable on its 41-point grid; finer grids keep its ratio of
    # time step to squared spacing (as examples/src/cfd.rs does).
    dt = 0.01 * min(1.0, 40.0 / (n - 1)) ** 2
    prm = Params(dx=h, dy=h, rho=1.0, nu=0.1, f=1.0, dt=dt)
    rhs_f, sweep_f, momentum_f = map(s.formula, (pressure_rhs, pressure_sweep, momentum))

    def build_up_b(u, v):
        b = np.zeros_like(u)
        for c, e, w in COLUMN_SETS:
            value = rhs_f(u[ROWS, e], u[ROWS, w], u[NORTH, c], u[SOUTH, c],
                          v[ROWS, e], v[ROWS, w], v[NORTH, c], v[SOUTH, c], prm)
            b = s.put(b, (ROWS, c), value)
        return b

    def pressure_poisson_periodic(p, b):
        def sweep(p):
            pn = p.copy()
            for c, e, w in COLUMN_SETS:
                value = sweep_f(pn[ROWS, e], pn[ROWS, w], pn[NORTH, c], pn[SOUTH, c],
                                b[ROWS, c], prm)
                p = s.put(p, (ROWS, c), value)
            p = s.put(p, (slice(-1, None), slice(None)), p[-2:-1, :])
            return s.put(p, (slice(0, 1), slice(None)), p[1:2, :])

        return s.repeat(NIT, sweep, p)

    def update(u, v, p):
        un, vn = u.copy(), v.copy()
        b = build_up_b(u, v)
        p = pressure_poisson_periodic(p, b)
        for c, e, w in COLUMN_SETS:
            value = momentum_f(*points(un, c, e, w), un[ROWS, c], vn[ROWS, c],
                               p[ROWS, e], p[ROWS, w], prm.dx, prm.f * prm.dt, prm)
            u = s.put(u, (ROWS, c), value)
        for c, e, w in COLUMN_SETS:
            value = momentum_f(*points(vn, c, e, w), un[ROWS, c], vn[ROWS, c],
                               p[NORTH, c], p[SOUTH, c], prm.dy, None, prm)
            v = s.put(v, (ROWS, c), value)
        for wall in (slice(0, 1), slice(-1, None)):
            u = s.put(u, (wall, slice(None)), 0.0)
            v = s.put(v, (wall, slice(None)), 0.0)
        return u, v, p

    update = s.compile(update, donate=(0, 1, 2))
    fields = tuple(s.array(numpy.zeros((n, n))) for _ in range(3))

    def step():
        nonlocal fields
        fields = s.finish(update(*fields))
        return fields

    return step, lambda: fields[0]


APPS = {"stencil": stencil, "black-scholes": black_scholes,
        "black-scholes-poly": black_scholes_poly, "jacobi": jacobi, "cfd": cfd}


def run(app, module, n, iters):
    """Runs `app` at size `n` on the system `module`: one warm-up iteration, then `iters`
    timed ones. Returns the JSON record (a dict)."""
    s = load_system(module)
    step, output = APPS[app](s, n)

    start = time.perf_counter()
    result = step()
    s.wait(result)
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(iters):
        result = step()
    s.wait(result)
    per_iter = (time.perf_counter() - start) / max(iters, 1)
    checksum = s.host(output()).sum()
    return {"app": app, "peer": module, "n": n, "iters": iters,
            "seconds_per_iter": per_iter, "warmup_seconds": warmup,
            "checksum": float(checksum)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app", choices=sorted(APPS))
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--module", choices=SYSTEMS, default="numpy",
                        help="the system that runs the app")
    args = parser.parse_args()
    reason = CANNOT.get((args.app, args.module))
    if reason:
        print(f"{args.app} cannot run on {args.module}: {reason}", file=sys.stderr)
        sys.exit(3)
    print(json.dumps(run(args.app, args.module, args.n, args.iters)))


if __name__ == "__main__":
    main()
