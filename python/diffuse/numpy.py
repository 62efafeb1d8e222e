"""NumPy on diffuse: ``import diffuse.numpy as np``.

Arrays are diffuse arrays: operations become index tasks that diffuse buffers, fuses and runs
on its backend; results stay lazy until Python needs a value (``float(x)``, ``print``,
``numpy.asarray(x)``). What diffuse implements natively is listed in ``NATIVE`` (and in
``docs/python.md``); anything else NumPy has runs on NumPy eagerly (convert, run, convert
back), with a one-time warning naming the function, so unmodified programs still run.

This module gathers the package's modules, each of which holds one part, from the bottom
up: ``_state`` (settings read as it runs), ``_dtypes``, ``_layout`` (view arithmetic),
``_ndarray`` (the array and its strided views), ``_eager`` (small arrays NumPy holds),
``_interop`` (NumPy's fallback and protocols), ``_creation``, ``_ufuncs``, ``_selection``,
``_indexing``, ``_manipulation``, ``_products``, ``_reductions`` and ``_statistics``, then the
routines built on them: ``_padding``, ``_index_routines``, ``_calculus``, ``_einsum``,
``_io`` and ``_sorting``. A module imports the names of those below it, and those above it last, as modules;
importing ``_ndarray`` first, as this module does, loads them all in that order.
"""

import numpy as _np

from . import _native, _ndarray  # noqa: F401 (first: see above)
from . import _creation, _indexing, _manipulation, _products, _reductions, _selection, _ufuncs
from . import _statistics
from . import _calculus, _einsum, _index_routines, _io, _padding, _sorting
from ._errstate import errstate, geterr, geterrcall, seterr, seterrcall  # noqa: F401
from ._ndarray import ndarray  # noqa: F401
from ._creation import (  # noqa: F401
    arange, array, asarray, diag, empty, empty_like, eye, fromfunction, full, full_like,
    identity, indices, linspace, logspace, ones, ones_like, zeros, zeros_like,
)
from ._ufuncs import (  # noqa: F401
    abs, absolute, add, angle, arccos, around, arcsin, arctan, arctan2, bitwise_and, bitwise_not,
    bitwise_or, bitwise_xor, ceil, clip, conj, conjugate, cos, cosh, divide, divmod, equal, exp,
    expm1, floor, floor_divide, greater, greater_equal, imag, invert, iscomplex, iscomplexobj,
    isfinite, isinf, isnan, isreal, isrealobj, left_shift, less, less_equal, log, log10, log1p,
    log2, logical_and, logical_not, logical_or, maximum, minimum, mod, multiply, negative,
    not_equal, power, real, real_if_close, remainder, right_shift, rint, round, select, sign, sin,
    sinh, sqrt, square, subtract, tan, tanh, true_divide, trunc, where,
)
from ._selection import (  # noqa: F401
    extract, flatnonzero, nonzero,
)
from ._indexing import (  # noqa: F401
    copyto, putmask,
)
from ._manipulation import (  # noqa: F401
    array_split, broadcast_to, concatenate, copy, diff, expand_dims, flip, fliplr, flipud,
    hsplit, hstack, meshgrid, moveaxis, ravel, repeat, reshape, roll, split, squeeze, stack,
    swapaxes, take, tile, transpose, tril, triu, vsplit, vstack,
)
from ._products import (  # noqa: F401
    cross, dot, inner, kron, matmul, outer, tensordot, trace, vdot,
)
from ._reductions import (  # noqa: F401
    all, allclose, amax, amin, any, argmax, argmin, count_nonzero, cumprod, cumsum, isclose,
    max, mean, min, prod, sum,
)
from ._statistics import (  # noqa: F401
    average, corrcoef, cov, nan_to_num, nanmax, nanmean, nanmin, nansum, ptp, std,
    var,
)
from ._padding import pad  # noqa: F401
from ._index_routines import ix_, put, take_along_axis  # noqa: F401
from ._calculus import convolve, gradient  # noqa: F401
from ._einsum import einsum  # noqa: F401
from ._io import fromfile, load, save  # noqa: F401
from ._sorting import (  # noqa: F401
    argsort, bincount, histogram, interp, median, percentile, quantile, searchsorted, sort,
    unique,
)
# What diffuse's other modules (``_trace``, ``linalg``, ``random``, ``special``, ``sparse``)
# and the tests reach through this module.
from ._eager import _defer_in_place, _Eager  # noqa: F401
from ._interop import _fallback, _on_host, _warn_fallback, _warned  # noqa: F401
from ._selection import _compact_lazy_selections, _lazy_selections  # noqa: F401
from ._ufuncs import _unary  # noqa: F401
# Where pickles of diffuse arrays made by earlier versions find the function that rebuilds them.
from ._creation import _unpickle  # noqa: F401

__all__ = ["ndarray", "array", "asarray", "NATIVE"]

#: Functions diffuse runs natively (everything else NumPy has falls back to NumPy).
NATIVE = sorted({*_creation.NATIVE, *_ufuncs.NATIVE, *_selection.NATIVE, *_indexing.NATIVE,
                 *_manipulation.NATIVE, *_products.NATIVE, *_reductions.NATIVE,
                 *_statistics.NATIVE, *_padding.NATIVE, *_index_routines.NATIVE,
                 *_calculus.NATIVE, *_einsum.NATIVE, *_io.NATIVE,
                 *_sorting.NATIVE})


def flush():
    """Runs everything submitted so far."""
    _native.flush()


newaxis = None
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
float64, float32, int64, int32, bool_ = _np.float64, _np.float32, _np.int64, _np.int32, _np.bool_
complex128, complex64 = _np.complex128, _np.complex64


# diffuse arrays print through NumPy, so NumPy's print options are theirs (no fallback).
_PRINT_OPTIONS = frozenset(("set_printoptions", "get_printoptions", "printoptions"))


def __getattr__(name):
    """Anything NumPy has that diffuse does not: NumPy's, on converted arguments
    (``random`` and ``linalg`` are diffuse's own submodules)."""
    if name in ("random", "linalg"):
        import importlib

        return importlib.import_module(f"diffuse.{name}")
    attr = getattr(_np, name)
    if name in _PRINT_OPTIONS:
        return attr
    if callable(attr) and not isinstance(attr, type):
        def fallback(*args, **kwargs):
            return _fallback(name, attr, *args, **kwargs)
        fallback.__name__ = name
        return fallback
    return attr


# Last: ``linalg`` reads this module's names, and registers the NumPy functions it
# implements (``numpy.linalg.solve(x, y)`` on diffuse arrays runs diffuse's).
from . import linalg  # noqa: E402,F401
