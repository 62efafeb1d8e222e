"""Whole programs on complex arrays, each run unchanged on NumPy and on diffuse (``xp``) and
compared, and against what they compute: a radix-2 FFT written with slicing (against
``numpy.fft.fft``), a Mandelbrot set (the iteration counts of ``z = z*z + c`` under a mask)
and a contour integral around the unit circle (``2*pi*i`` times the residues inside). Native
on deferred arrays: a fallback warning fails these tests."""

import os
import sys

import numpy as onp
import pytest

import diffuse.numpy as dnp

sys.path.insert(0, os.path.dirname(__file__))
from test_complex import COMPLEX, _native_only, _same  # noqa: E402,F401


def fft(xp, x):
    """The discrete Fourier transform of ``x`` (its length a power of two), radix 2: each
    level splits every row into its even and odd elements (all the rows' halves stacked,
    transformed as one array) and joins the halves' transforms with the twiddle factors
    ``exp(-2j*pi*k/n)``."""
    def rows(a):
        count, n = a.shape
        if n == 1:
            return a
        halves = rows(xp.concatenate([a[:, 0::2], a[:, 1::2]]))
        even, odd = halves[:count], halves[count:]
        twiddled = xp.exp(-2j * xp.pi * xp.arange(n // 2) / n) * odd
        return xp.concatenate([even + twiddled, even - twiddled], axis=1)
    return rows(x.reshape(1, -1)).reshape(-1)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fft_matches_numpy(dtype):
    rng = onp.random.default_rng(7)
    x = (rng.standard_normal(512) + 1j * rng.standard_normal(512)).astype(dtype)
    got = fft(dnp, dnp.array(x))
    assert isinstance(got, dnp.ndarray)
    # The same program on NumPy, and NumPy's own transform (in complex128).
    _same(got, fft(onp, x), exact=False)
    rtol = 1e-4 if dtype == onp.complex64 else 1e-12
    onp.testing.assert_allclose(onp.asarray(got), onp.fft.fft(x),
                                rtol=rtol, atol=rtol * onp.abs(x).sum())


def mandelbrot(xp, n, iterations):
    """The Mandelbrot set on an ``n x n`` grid over [-2, 0.5] x [-1.25, 1.25]: how many
    iterations of ``z = z*z + c`` each point stays within radius 2 (the points that left
    stop changing), and the final ``z``."""
    c = xp.linspace(-2.0, 0.5, n)[None, :] + 1j * xp.linspace(-1.25, 1.25, n)[:, None]
    z = xp.zeros_like(c)
    counts = xp.zeros(c.shape, dtype=xp.int64)
    for _ in range(iterations):
        inside = xp.abs(z) <= 2
        z[inside] = z[inside] * z[inside] + c[inside]
        counts += inside
    return counts, z


def test_mandelbrot_matches_numpy():
    counts, z = mandelbrot(dnp, 64, 24)
    want_counts, want_z = mandelbrot(onp, 64, 24)
    # (``z*z + c`` rounds as NumPy's does: the same points leave at the same step.)
    _same(counts, want_counts)
    _same(z, want_z)
    assert 0 < int((counts == 24).sum()) < counts.size  # some points stay, some leave


def contour_integral(xp, f, n):
    """The integral of ``f`` around the unit circle by the trapezoid rule on ``n`` points
    (exact to rounding for functions analytic near the circle, once ``n`` is large)."""
    theta = 2 * xp.pi * xp.arange(n) / n
    z = xp.exp(1j * theta)
    dz = 1j * z * (2 * xp.pi / n)
    return (f(xp, z) * dz).sum()


@pytest.mark.parametrize("f, residues", [
    # exp(z) / (z - a): the residue at a is exp(a).
    (lambda xp, z: xp.exp(z) / (z - (0.3 + 0.2j)), onp.exp(0.3 + 0.2j)),
    # cos(z) / (z - a)^2: the residue at the double pole a is -sin(a).
    (lambda xp, z: xp.cos(z) / (z - 0.5j) ** 2, -onp.sin(0.5j)),
    # 1 / (z^2 + 1/4): residues -i and i at +-i/2, summing to zero.
    (lambda xp, z: 1 / (z * z + 0.25), 0),
    # conj(z), which is no analytic function, but is 1/z on the circle: residue 1.
    (lambda xp, z: xp.conj(z), 1),
])
def test_contour_integral_is_two_pi_i_times_the_residues(f, residues):
    got = contour_integral(dnp, f, 256)
    _same(got, contour_integral(onp, f, 256), exact=False)
    onp.testing.assert_allclose(complex(got), 2j * onp.pi * residues, atol=1e-12)
