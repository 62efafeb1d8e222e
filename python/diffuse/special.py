"""SciPy's special functions that diffuse implements: ``erf``."""

from . import numpy as _dnp


def erf(x, /):
    """The error function, element-wise (SciPy's ``scipy.special.erf``)."""
    if isinstance(x, _dnp.ndarray):
        return _dnp._unary("erf", x)
    import scipy.special

    return scipy.special.erf(x)
