"""``diffuse.numpy.linalg``: ``norm`` natively, everything else from NumPy."""

import numpy as _np

from . import numpy as _dnp


def norm(x, ord=None, axis=None, keepdims=False):
    """The 2-norm of a vector, the Frobenius norm of a matrix (a lazy 0-d array), or the
    2-norms of the vectors along one ``axis``; other norms run on NumPy."""
    x = _dnp.asarray(x)
    if ord is None and x.dtype == _np.float64 and (axis is None or isinstance(axis, int)):
        # The 2-norm (of the flattened array, or of each vector along ``axis``).
        return _dnp.sqrt(_dnp.sum(x * x, axis=axis, keepdims=keepdims))
    return _dnp._fallback("linalg.norm", _np.linalg.norm, x, ord=ord, axis=axis,
                          keepdims=keepdims)


def __getattr__(name):
    attr = getattr(_np.linalg, name)
    if callable(attr) and not isinstance(attr, type):
        return lambda *args, **kwargs: _dnp._fallback(f"linalg.{name}", attr, *args, **kwargs)
    return attr
