"""Finite differences and sums over shifted neighbours: ``gradient`` (NumPy's second-order
central differences inside, first- or second-order one-sided ones at the ends) and
``convolve`` (1-d), each element-wise work on slices of the array that fuses into a few
tasks, never a copy to NumPy.

``convolve`` sums the kernel's shifted products, one slice of the (zero-padded) longer input
per element of the shorter: O(output) memory and tasks that fuse, where the matrix-product
form (a windows-by-kernel matrix times the kernel) would gather O(output x kernel)
elements first. Its cost grows with the kernel's length, like NumPy's own direct method.
"""

import numbers

import numpy as _np

from ._interop import _FUNCTIONS, _wrap_numpy_names
from ._creation import asarray, zeros
from ._manipulation import concatenate


def _spacings(f, axes, varargs):
    """``gradient``'s spacing per axis in ``axes``: a scalar (uniform), or the differences
    of the given coordinates (a NumPy array; a scalar when they are uniform), as NumPy
    derives them, with its errors."""
    n = len(varargs)
    if n == 0:
        return [1.0] * len(axes)
    if n == 1 and _np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if n != len(axes):
        raise TypeError("invalid number of arguments")
    spacings = []
    for axis, distances in zip(axes, varargs):
        if _np.ndim(distances) == 0:
            spacings.append(distances)
            continue
        distances = _np.asanyarray(distances)  # (the axis' coordinates: small, on the host)
        if distances.ndim != 1:
            raise ValueError("distances must be either scalars or 1d")
        if len(distances) != f.shape[axis]:
            raise ValueError("when 1d, distances must match the length of the corresponding "
                             "dimension")
        if distances.dtype.kind in "iu":
            distances = distances.astype(_np.float64)
        steps = _np.diff(distances)
        spacings.append(steps[0] if (steps == steps[0]).all() else steps)
    return spacings


def _combination(f, axis, weights, start, length):
    """``sum(w[i] * f[start + i:start + i + length])`` along ``axis``, in NumPy's order of
    operations (``weights`` scalars, or NumPy arrays along ``axis``)."""
    total = None
    for i, w in enumerate(weights):
        if _np.ndim(w):
            w = asarray(_np.reshape(w, [-1 if d == axis else 1 for d in range(f.ndim)]))
        term = w * _along(f, axis, start + i, length)
        total = term if total is None else total + term
    return total


def _along(f, axis, start, length):
    """``f[start:start + length]`` along ``axis``."""
    return f[(slice(None),) * axis + (slice(start, start + length),)]


def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's ``gradient``: per axis, central differences inside and one-sided ones of
    ``edge_order`` (1 or 2) at the ends, for unit, scalar or coordinate spacing, with
    NumPy's formulas; float64 for integers; one array, or a tuple of one per axis."""
    f = asarray(f)
    axes = tuple(range(f.ndim)) if axis is None else \
        _np.lib.array_utils.normalize_axis_tuple(axis, f.ndim)
    spacings = _spacings(f, axes, varargs)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype if f.dtype.kind in "fc" else _np.dtype(_np.float64)
    if f.dtype.kind in "iu":
        f = f.astype(_np.float64)
    out = []
    for axis, dx in zip(axes, spacings):
        n = f.shape[axis]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        if f.dtype == _np.bool_:
            raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use "
                            "the bitwise_xor, the `^` operator, or the logical_xor function "
                            "instead.")
        uniform = _np.ndim(dx) == 0
        if uniform:
            inside = (_along(f, axis, 2, n - 2) - _along(f, axis, 0, n - 2)) / (2. * dx)
        else:
            dx1, dx2 = dx[:-1], dx[1:]
            inside = _combination(f, axis, (-dx2 / (dx1 * (dx1 + dx2)),
                                            (dx2 - dx1) / (dx1 * dx2),
                                            dx1 / (dx2 * (dx1 + dx2))), 0, n - 2)
        if edge_order == 1:
            first = (_along(f, axis, 1, 1) - _along(f, axis, 0, 1)) / \
                (dx if uniform else dx[0])
            last = (_along(f, axis, n - 1, 1) - _along(f, axis, n - 2, 1)) / \
                (dx if uniform else dx[-1])
        else:
            if uniform:
                head = (-1.5 / dx, 2. / dx, -0.5 / dx)
                tail = (0.5 / dx, -2. / dx, 1.5 / dx)
            else:
                dx1, dx2 = dx[0], dx[1]
                head = (-(2. * dx1 + dx2) / (dx1 * (dx1 + dx2)), (dx1 + dx2) / (dx1 * dx2),
                        - dx1 / (dx2 * (dx1 + dx2)))
                dx1, dx2 = dx[-2], dx[-1]
                tail = (dx2 / (dx1 * (dx1 + dx2)), - (dx2 + dx1) / (dx1 * dx2),
                        (2. * dx2 + dx1) / (dx2 * (dx1 + dx2)))
            first = _combination(f, axis, head, 0, 1)
            last = _combination(f, axis, tail, n - 3, 1)
        parts = [p if p.dtype == otype else p.astype(otype) for p in (first, inside, last)]
        out.append(concatenate(parts, axis=axis))
    return out[0] if len(axes) == 1 else tuple(out)


_MODES = ("valid", "same", "full")


def _mode(mode):
    """``convolve``'s ``mode`` (a name, or its number), with NumPy's errors."""
    if isinstance(mode, str):
        if mode not in _MODES:
            raise ValueError("Use one of 'valid', 'same', or 'full' for convolve/correlate "
                             "mode")
        return mode
    if isinstance(mode, numbers.Integral):
        if not 0 <= mode <= 2:
            raise ValueError("integer convolve/correlate mode must be 0, 1, or 2")
        return _MODES[mode]
    raise TypeError("convolve/correlate mode not understood")


def convolve(a, v, mode="full"):
    """NumPy's ``convolve`` of two 1-d sequences (``full``, ``same`` or ``valid``): the
    sum over the shorter one's elements of each times a shifted slice of the longer one
    (see the module's description); booleans give NumPy's logical result."""
    a, v = (x if x.ndim else x.reshape(1) for x in (asarray(a), asarray(v)))
    if a.ndim > 1 or v.ndim > 1:
        raise ValueError("object too deep for desired array")
    if len(v) > len(a):
        a, v = v, a
    if len(a) == 0:
        raise ValueError("a cannot be empty")
    if len(v) == 0:
        raise ValueError("v cannot be empty")
    mode = _mode(mode)
    dtype = _np.result_type(a.dtype, v.dtype)
    work = _np.dtype(_np.int64) if dtype == _np.bool_ else dtype
    a, v = (x if x.dtype == work else x.astype(work) for x in (a, v))
    n, m = len(a), len(v)
    # Output k of the full convolution is sum_j a[k - j] v[j]; ``mode`` keeps the outputs
    # from ``start`` on, ``length`` of them.
    start, length = {"full": (0, n + m - 1), "same": ((m - 1) // 2, n),
                     "valid": (m - 1, n - m + 1)}[mode]
    before, after = m - 1 - start, start + length - n
    padded = concatenate([zeros(before, work), a, zeros(after, work)]) if before or after \
        else a
    total = None
    for j in range(m):
        term = v[j:j + 1] * padded[before + start - j:before + start - j + length]
        total = term if total is None else total + term
    return total != 0 if dtype == _np.bool_ else total


#: The functions of ``NATIVE`` this module defines.
NATIVE = ("convolve", "gradient")
_wrap_numpy_names(globals(), ("convolve",))
# Its spacings are positional (``*varargs``), which NumPy's signature binding cannot pass on.
_FUNCTIONS[_np.gradient] = gradient
