"""``diffuse.numpy.random``: NumPy's random numbers as diffuse arrays.

The numbers are NumPy's own (same seeds, same streams, drawn on the host), so a program
gives the same results on diffuse as on NumPy; arrays come back as diffuse arrays, and what
NumPy changes in place (``shuffle(x)``, ``out=``) is written back to the diffuse array.
"""

import numpy as _np

from . import numpy as _dnp


def _forward(func, name):
    """NumPy's ``func`` on host copies of diffuse arguments, giving diffuse arrays."""
    def f(*args, **kwargs):
        return _dnp._on_host(func, *args, **kwargs)
    f.__name__ = name
    f.__doc__ = f"NumPy's ``random.{name}``, with diffuse arrays."
    return f


seed = _np.random.seed
for _name in ("random", "rand", "randn", "uniform", "normal", "randint", "standard_normal",
              "random_sample", "choice", "permutation", "shuffle"):
    globals()[_name] = _forward(getattr(_np.random, _name), _name)


class Generator:
    """NumPy's ``Generator``, giving diffuse arrays (and writing back what it changes)."""

    def __init__(self, generator):
        self._g = generator

    def __getattr__(self, name):
        attr = getattr(self._g, name)
        if not callable(attr):
            return attr
        return _forward(attr, name)


def default_rng(seed=None):
    """NumPy's ``default_rng(seed)``, giving diffuse arrays."""
    return Generator(_np.random.default_rng(seed))


def __getattr__(name):
    attr = getattr(_np.random, name)
    if callable(attr) and not isinstance(attr, type):
        return _forward(attr, name)
    return attr
