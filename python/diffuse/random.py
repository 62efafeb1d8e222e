"""``diffuse.numpy.random``: NumPy's random numbers as diffuse arrays.

The numbers are NumPy's own (same seeds, same streams, drawn on the host), so a program
gives the same results on diffuse as on NumPy; arrays come back as diffuse arrays.
"""

import numpy as _np

from . import numpy as _dnp


def _wrap(value):
    if isinstance(value, _np.ndarray):
        return _dnp.asarray(value)
    return value


def _forward(name):
    def f(*args, **kwargs):
        return _wrap(getattr(_np.random, name)(*args, **kwargs))
    f.__name__ = name
    f.__doc__ = f"NumPy's ``random.{name}``, as a diffuse array."
    return f


seed = _np.random.seed
for _name in ("random", "rand", "randn", "uniform", "normal", "randint", "standard_normal",
              "random_sample", "choice", "permutation"):
    globals()[_name] = _forward(_name)


class Generator:
    """NumPy's ``Generator``, giving diffuse arrays."""

    def __init__(self, generator):
        self._g = generator

    def __getattr__(self, name):
        attr = getattr(self._g, name)
        if not callable(attr):
            return attr
        return lambda *args, **kwargs: _wrap(attr(*args, **kwargs))


def default_rng(seed=None):
    """NumPy's ``default_rng(seed)``, giving diffuse arrays."""
    return Generator(_np.random.default_rng(seed))


def __getattr__(name):
    return getattr(_np.random, name)
