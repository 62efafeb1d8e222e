"""The suite's kernels: for each, its class, its function, its input generator, its three
sizes and the tolerance its diffuse result is held to against NumPy's.

A kernel is ``function(np, *inputs)``, where ``np`` is ``numpy`` or ``diffuse.numpy`` and the
inputs come from ``make_inputs(size, rng)`` (NumPy arrays and Python numbers; the runner
hands diffuse ``diffuse.numpy.array`` copies of the arrays). It returns an array, a scalar
or a tuple of them. The sizes are the generator's ``n``: ``small`` takes about 1-10 ms in
NumPy on the 2-core machine the suite was sized on, ``large`` about 0.2-2 s.

Tolerances: float64 kernels ``rtol=1e-9`` (NumPy and diffuse may sum in other orders);
float32 ones ``rtol=1e-4``; loops that carry rounding from step to step
(factorizations, recursions) are held to the same bounds, since their inputs are well
conditioned. A kernel may call a NumPy routine diffuse runs on NumPy (a fallback) only if
issue 51 lists that routine; the runner records every fallback warning.
"""

from collections import namedtuple

from . import dense, images, layers, physics, recurrences, stats, stencils, triangular

Kernel = namedtuple("Kernel", "name cls function make_inputs sizes rtol atol")

SIZES = ("small", "medium", "large")

F64 = {"rtol": 1e-9, "atol": 1e-10}
F32 = {"rtol": 1e-4, "atol": 1e-5}


def _kernel(cls, module, name, small, medium, large, tolerance=None):
    """The registry entry of ``module.name`` (its inputs from ``module.name_inputs``)."""
    tolerance = tolerance or F64
    return Kernel(name, cls, getattr(module, name), getattr(module, name + "_inputs"),
                  dict(zip(SIZES, (small, medium, large))), tolerance["rtol"],
                  tolerance["atol"])


KERNELS = [
    # Dense linear algebra.
    _kernel("dense", dense, "gemm", 400, 1000, 2000),
    _kernel("dense", dense, "two_mm", 300, 800, 1600),
    _kernel("dense", dense, "three_mm", 250, 700, 1400),
    _kernel("dense", dense, "syrk", 500, 1200, 2500),
    _kernel("dense", dense, "atax", 1000, 3000, 10000),
    _kernel("dense", dense, "bicg", 1000, 3000, 10000),
    _kernel("dense", dense, "mvt", 1000, 3000, 10000),
    _kernel("dense", dense, "gesummv", 1000, 3000, 10000),
    # Triangular solves and factorizations with slices in Python loops.
    _kernel("triangular", triangular, "forward_substitution", 1000, 4000, 12000),
    _kernel("triangular", triangular, "back_substitution", 1000, 4000, 12000),
    _kernel("triangular", triangular, "triangular_solve_many", 300, 700, 1500),
    _kernel("triangular", triangular, "cholesky", 300, 1000, 2500),
    _kernel("triangular", triangular, "lu", 150, 400, 1000),
    _kernel("triangular", triangular, "gram_schmidt", 100, 300, 700),
    # Loops over rows and columns with recurrences.
    _kernel("recurrence", recurrences, "recursive_filter", 300, 1000, 3000),
    _kernel("recurrence", recurrences, "adi", 200, 600, 1800),
    _kernel("recurrence", recurrences, "moving_average", 300, 1000, 3000),
    _kernel("recurrence", recurrences, "durbin", 1000, 3000, 10000),
    _kernel("recurrence", recurrences, "seam_energy", 600, 2000, 6000),
    # Stencils with time loops.
    _kernel("stencil", stencils, "jacobi_1d", 10000, 200000, 2000000),
    _kernel("stencil", stencils, "jacobi_2d", 200, 600, 2000),
    _kernel("stencil", stencils, "heat_3d", 30, 80, 160),
    _kernel("stencil", stencils, "fdtd_2d", 200, 700, 2000),
    _kernel("stencil", stencils, "horizontal_diffusion", 64, 256, 640),
    _kernel("stencil", stencils, "wave_2d", 200, 700, 2000),
    # Image filters.
    _kernel("image", images, "box_blur", 1000, 2500, 8000, F32),
    _kernel("image", images, "sobel", 800, 2500, 7000, F32),
    _kernel("image", images, "gaussian_blur", 1000, 3000, 8000, F32),
    _kernel("image", images, "erosion", 600, 2000, 6000, F32),
    # Deep-learning layers (float32).
    _kernel("layer", layers, "mlp", 200, 500, 1200, F32),
    _kernel("layer", layers, "softmax", 500, 4000, 20000, F32),
    _kernel("layer", layers, "attention", 500, 2000, 6000, F32),
    _kernel("layer", layers, "conv2d", 100, 300, 800, F32),
    _kernel("layer", layers, "max_pool", 256, 768, 2048, F32),
    _kernel("layer", layers, "layer_norm", 1000, 8000, 40000, F32),
    # Reductions and statistics.
    _kernel("statistics", stats, "column_stats", 400, 1200, 4000),
    _kernel("statistics", stats, "covariance", 150, 400, 1000),
    _kernel("statistics", stats, "correlation", 300, 1000, 2500),
    _kernel("statistics", stats, "norms", 1000, 3000, 10000),
    _kernel("statistics", stats, "moments", 400, 1200, 4000),
    # Physics.
    _kernel("physics", physics, "nbody", 200, 800, 2500),
    _kernel("physics", physics, "arc_distance", 30000, 300000, 3000000),
    _kernel("physics", physics, "black_scholes", 50000, 500000, 5000000),
]

BY_NAME = {k.name: k for k in KERNELS}
