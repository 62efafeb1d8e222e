"""The diffuse applications written in plain NumPy: the peer they are compared with.

Each app mirrors the Rust version in examples/src (same sizes, same warm-up + timed
iterations) and prints one JSON record with the fields the comparison needs.
Usage: numpy_apps.py APP --n N --iters K [--module numpy|diffuse|cupynumeric]

With `--module diffuse` the same program runs on diffuse's Python package (the import lines
are the only difference); with `--module cupynumeric` on cuPyNumeric (Legate, on Legion),
which has no `erf`, so Black-Scholes runs there only in the polynomial form
(`black-scholes-poly`, as cuNumeric's own example writes it). Timings wait for the last iteration's results
(cuPyNumeric runs asynchronously).
"""

import argparse
import importlib
import json
import sys
import time

MODULE = sys.argv[sys.argv.index("--module") + 1] if "--module" in sys.argv else "numpy"
if MODULE == "cupynumeric":
    np = importlib.import_module("cupynumeric")
    erf = None
elif MODULE == "diffuse":
    import diffuse.numpy as np
    from diffuse.special import erf
else:
    import numpy as np
    from scipy.special import erf


def stencil(n, iters):
    side = n + 2
    k = np.arange(side * side)
    grid = (((k // side) * 37 + (k % side) * 101 + 13) % 97) / 97.0
    grid = grid.reshape(side, side)
    center = grid[1:-1, 1:-1]
    north = grid[:-2, 1:-1]
    east = grid[1:-1, 2:]
    west = grid[1:-1, :-2]
    south = grid[2:, 1:-1]

    def step():
        average = center + north + east + west + south
        work = 0.2 * average
        center[:] = work
        return center

    return step


def cnd_erf(x):
    """The standard normal distribution through erf."""
    return 0.5 * erf(x * (1.0 / np.sqrt(2.0))) + 0.5


def cnd_polynomial(d):
    """The standard normal distribution as cuNumeric's Black-Scholes example computes it: the
    Abramowitz-Stegun polynomial (26.2.17), with absolute, exp and where."""
    a1, a2, a3, a4, a5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
    k = 1.0 / (1.0 + 0.2316419 * np.absolute(d))
    tail = 0.3989422804014327 * np.exp(-0.5 * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))
    return np.where(d > 0, 1.0 - tail, tail)


def black_scholes(n, iters, cnd=cnd_erf):
    rng = np.random.default_rng(1)
    spot = rng.uniform(5.0, 30.0, n)
    strike = rng.uniform(1.0, 100.0, n)
    years = rng.uniform(0.25, 10.0, n)
    rate, vol = 0.02, 0.3

    def step():
        sqrt_t = np.sqrt(years)
        vol_sqrt_t = sqrt_t * vol
        drift = years * (rate + 0.5 * vol * vol)
        d1 = (np.log(spot / strike) + drift) / vol_sqrt_t
        d2 = d1 - vol_sqrt_t
        cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
        discounted = strike * np.exp(years * -rate)
        call = spot * cnd_d1 - discounted * cnd_d2
        put = discounted * (1.0 - cnd_d2) - spot * (1.0 - cnd_d1)
        return call, put

    return step


def jacobi(n, iters):
    rng = np.random.default_rng(11)
    a = rng.uniform(0.0, 1.0, (n, n))
    d = np.diag(a) + n
    r = a - np.diag(np.diag(a))
    b = rng.uniform(0.0, 1.0, n)
    state = {"x": np.zeros(n)}

    def step():
        state["x"] = (b - r @ state["x"]) / d
        return state["x"]

    return step


def black_scholes_poly(n, iters):
    return black_scholes(n, iters, cnd_polynomial)


APPS = {"stencil": stencil, "black-scholes": black_scholes,
        "black-scholes-poly": black_scholes_poly, "jacobi": jacobi}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("app", choices=sorted(APPS))
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--module", choices=["numpy", "diffuse", "cupynumeric"], default="numpy")
    args = parser.parse_args()
    if args.app == "black-scholes" and erf is None:
        sys.exit("black-scholes needs erf, which cupynumeric does not have")
    step = APPS[args.app](args.n, args.iters)

    # diffuse runs lazily: like the Rust apps' harness, end every iteration with a flush, so
    # that an iteration whose results the next one overwrites is still computed (not fused
    # away) and every timed iteration replays the same plans.
    if MODULE == "diffuse":
        import diffuse

        def run_step():
            out = step()
            diffuse.flush()
            return out
    else:
        run_step = step

    def wait(result):
        # One element of the result, as a Python float: waits for the work behind it.
        first = result[0] if isinstance(result, tuple) else result
        return float(first[(0,) * first.ndim])

    start = time.perf_counter()
    wait(run_step())
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(args.iters):
        result = run_step()
    wait(result)
    per_iter = (time.perf_counter() - start) / max(args.iters, 1)
    first = result[0] if isinstance(result, tuple) else result
    print(json.dumps({"app": args.app, "peer": args.module, "n": args.n, "iters": args.iters,
                      "seconds_per_iter": per_iter, "warmup_seconds": warmup,
                      "checksum": float(first.sum())}))


if __name__ == "__main__":
    main()
