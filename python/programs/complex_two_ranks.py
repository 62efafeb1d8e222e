"""Complex programs on however many processes run this script (``diffuse launch -n 2``): a
Mandelbrot set (iteration counts of ``z = z*z + c`` under a mask) and a contour integral
around the unit circle, each computed by diffuse and by NumPy. Prints one JSON line: whether
each result equals NumPy's, and the points this process executed (every rank must have run
some for the run to count as distributed)."""

import json
import os

import numpy as onp

import diffuse._native as native
import diffuse.numpy as np


def mandelbrot(xp, c, steps):
    """Iteration counts of ``z = z*z + c`` while ``|z| <= 2``, and the final ``z``."""
    z = xp.zeros_like(c)
    counts = xp.zeros(c.shape, dtype=xp.int64)
    for _ in range(steps):
        inside = xp.abs(z) <= 2.0
        z = xp.where(inside, z * z + c, z)
        counts = counts + inside
    return counts, z


def contour_integral(xp, n):
    """The trapezoid rule of ``1 / (z - 0.25) + 3 / (z + 2)`` around the unit circle:
    ``2 pi i`` (the pole at 0.25 lies inside, the one at -2 outside)."""
    t = xp.arange(n) * (2 * onp.pi / n)
    z = xp.exp(1j * t)
    f = 1 / (z - 0.25) + 3 / (z + 2)
    return (f * 1j * z).sum() * (2 * onp.pi / n)


def main():
    side = 256
    grid = onp.linspace(-2.0, 1.0, side)[None, :] + 1j * onp.linspace(-1.5, 1.5, side)[:, None]
    counts, z = mandelbrot(np, np.array(grid), 30)
    want_counts, want_z = mandelbrot(onp, grid, 30)
    integral = complex(contour_integral(np, 4096))
    want_integral = complex(contour_integral(onp, 4096))
    print(json.dumps({
        "rank": int(os.environ.get("DIFFUSE_RANK", "0")),
        "mandelbrot_counts_equal": bool(onp.array_equal(onp.asarray(counts), want_counts)),
        "mandelbrot_z_equal": bool(onp.array_equal(onp.asarray(z), want_z)),
        "integral_close": bool(abs(integral - want_integral) <= 1e-12 * abs(want_integral)),
        "integral_is_2_pi_i": bool(abs(integral - 2j * onp.pi) <= 1e-9),
        "points_executed": native.runtime_stats()["points_executed"],
    }))


if __name__ == "__main__":
    main()
