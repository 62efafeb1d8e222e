"""Products of arrays: ``matmul`` (``@``), ``dot``, ``vdot``, ``inner``, ``outer`` and
``tensordot``, on the array library's matrix products (a tuned GEMM per launch point), and
``kron``, ``cross`` and ``trace``, from element-wise work and reductions.

A matrix operand that is the transpose of a box of its store (``a.T``, ``a[1:3, :].T``) goes
to the product as that box with a transpose flag, and the product reads it in place: the
transpose is never gathered. Stacks of matrices multiply as one matrix of all their rows
when the right operand is a single matrix (``(b, m, k) @ (k, n)``, ``(n, q, 1, p) @ (p,
p)``: a reshape, a view when the stack is contiguous), and as one product per matrix for a
few matrices on both sides; more fall back to NumPy.
"""

import builtins
import functools
import math

import numpy as _np

from . import _native, _state
from ._dtypes import _dtype_name
from ._eager import _Eager, _on_host_if_settled
from ._ndarray import ndarray, _StridedView, _box_of
from ._interop import _fallback, _wrap_numpy_names
from ._creation import asarray, diag
from ._ufuncs import multiply
from ._manipulation import stack

#: The most products one stacked ``matmul`` runs one by one (both operands stacks) before
#: it falls back to NumPy: each is a task of its own.
_MAX_STACKED = 16

_SIGNATURE = "gufunc signature (n?,k),(k,m?)->(n?,m?)"

#: The most elements a computed deferred operand of a product with a small result may have
#: for the product to run on NumPy (``_small_product_on_host``): 2 MiB of float64, a copy of
#: which costs about what NumPy's matrix-vector product over it does.
_HOST_OPERAND_LIMIT = 1 << 18


def _product_dtype(a, b):
    """NumPy's dtype of a product of ``a`` and ``b`` when diffuse multiplies it natively (a
    numeric dtype diffuse has), else None."""
    dtype = _np.result_type(a.dtype, b.dtype)
    return dtype if dtype.kind in "ifc" and _dtype_name(dtype) is not None else None


def _cast(a, dtype):
    return a if a.dtype == dtype else a.astype(dtype)


def _oriented(a):
    """``(native array, transposed)`` for the 2-d ``a``: the box of its store that ``a`` is
    the transpose of, flagged, when it is one; otherwise ``a``'s own elements."""
    if type(a) is _StridedView:
        store, _, store_shape, shape, offset, strides = a._as_strided()
        box = _box_of(store, store_shape, shape[::-1], offset, strides[::-1])
        if box is not None:
            return box, True
    return a._a, False


def _matrix_product(a, b):
    """``a @ b`` for 1-d or 2-d operands of one native dtype whose core dimensions agree."""
    if a.ndim == 1 and b.ndim == 1:
        return ndarray(a._a.dot(b._a))
    if a.ndim == 1:  # x @ B is B's transpose times x
        nb, tb = _oriented(b)
        return ndarray(nb.matmul_oriented(a._a, not tb, False))
    na, ta = _oriented(a)
    if b.ndim == 1:
        return ndarray(na.matmul_oriented(b._a, ta, False))
    nb, tb = _oriented(b)
    return ndarray(na.matmul_oriented(nb, ta, tb))


def _not_aligned(a_shape, a_dim, b_shape, b_dim):
    """NumPy's error for ``dot``'s operands of these shapes whose dimensions ``a_dim`` and
    ``b_dim`` differ."""
    def text(shape):
        return f"({','.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
    return ValueError(
        f"shapes {text(a_shape)} and {text(b_shape)} not aligned: {a_shape[a_dim]} "
        f"(dim {a_dim}) != {b_shape[b_dim]} (dim {b_dim})")


def _numpy_error(function, a, b, **kwargs):
    """Raises NumPy's error for ``function(a, b)`` on stand-ins of the operands' shapes and
    dtypes that hold no elements (strides 0), so nothing is computed or copied."""
    def stand_in(x):
        return _np.lib.stride_tricks.as_strided(_np.zeros(1, x.dtype), x.shape, [0] * x.ndim)
    function(stand_in(a), stand_in(b), **kwargs)
    raise AssertionError(f"NumPy accepted the shapes {a.shape} and {b.shape}")


def _small_product_on_host(a, b):
    """``a @ b`` on NumPy, or None: when the product of these 1-d or 2-d operands is small
    (within the eager limit) and each deferred operand is computed and at most
    ``_HOST_OPERAND_LIMIT`` elements (``L[j+1:, :j] @ L[j, :j]`` in a factorization's
    loop). Reading such an operand costs about what NumPy's product itself does, where a
    task would cost a window and leave the loop's next steps deferred too.

    An operand that pending work still writes is computed first (a flush) when the result
    is a vector or a matrix and the runtime tells which stores pending work writes
    (``_pending_use_is_precise``): the loop's next steps then find their stores computed
    and stay on the host (``centred[:, j] @ centred[:, j:]`` after ``centred`` was made by
    deferred work). Not for a 0-d result (a solver's ``p @ Ap``), which stays lazy."""
    for x in (a, b):
        if not isinstance(x, (ndarray, _np.ndarray)) or not 1 <= x.ndim <= 2:
            return None
    rows = a.shape[0] if a.ndim == 2 else 1
    columns = b.shape[-1] if b.ndim == 2 else 1
    if rows * columns > _state.eager_limit:
        return None
    host = _on_host_if_settled(_np.matmul, (a, b), _HOST_OPERAND_LIMIT)
    if host is not None or (a.ndim == 1 and b.ndim == 1) or _state.recording:
        return host
    deferred = [x for x in (a, b) if isinstance(x, ndarray) and type(x) is not _Eager]
    if not all(0 < x.size <= _HOST_OPERAND_LIMIT for x in deferred) \
            or not _pending_use_is_precise():
        return None
    _native.flush()
    return _on_host_if_settled(_np.matmul, (a, b), _HOST_OPERAND_LIMIT)


@functools.cache
def _pending_use_is_precise():
    """True when the runtime tells which stores pending work writes (the embedded backend:
    a flush leaves every store computed, so the host paths apply after it); False where
    every host copy waits for all pending work whatever it uses (Legion), where a flush
    would gain nothing. Probed once on a new store, which no work uses."""
    return _native.zeros_([1], "float64").pending_use() == "nothing"


def matmul(a, b):
    """``a @ b`` for numeric dtypes, with NumPy's promotion (vector @ vector is a lazy 0-d
    array; integers wrap, as NumPy's) and NumPy's broadcasting of stacks of matrices."""
    host = _small_product_on_host(a, b)
    if host is not None:
        return host
    a, b = asarray(a), asarray(b)
    dtype = _product_dtype(a, b)
    if dtype is None:
        return _fallback("matmul", _np.matmul, a, b)
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ValueError(
                f"matmul: Input operand {i} does not have enough dimensions (has 0, "
                f"gufunc core with signature {_SIGNATURE[len('gufunc signature '):]} "
                "requires 1)")
    a, b = _cast(a, dtype), _cast(b, dtype)
    k_a, k_b = a.shape[-1], b.shape[-2 if b.ndim > 1 else 0]
    if k_a != k_b:
        raise ValueError(
            "matmul: Input operand 1 has a mismatch in its core dimension 0, with "
            f"{_SIGNATURE} (size {k_b} is different from {k_a})")
    if a.ndim <= 2 and b.ndim <= 2:
        return _matrix_product(a, b)
    return _stacked_product(a, b)


def _stacked_product(a, b):
    """``a @ b`` where either operand is a stack of matrices (core dimensions checked)."""
    batch_a, batch_b = a.shape[:-2], b.shape[:-2]
    try:
        batch = _np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        _numpy_error(_np.matmul, a, b)
    if b.ndim <= 2 or math.prod(batch_b) == 1:
        # One right matrix: the left stack's rows times it.
        rhs = b if b.ndim <= 2 else b.reshape(b.shape[-2:])
        columns = (rhs.shape[-1],) if rhs.ndim == 2 else ()
        if a.ndim == 1:
            return _matrix_product(a, rhs).reshape(batch + columns)
        rows = _matrix_product(a.reshape(math.prod(a.shape[:-1]), a.shape[-1]), rhs)
        return rows.reshape(batch + (a.shape[-2],) + columns)
    count = math.prod(batch)
    if count > _MAX_STACKED or count == 0:
        return _fallback("matmul of stacks of many matrices", _np.matmul, a, b)
    parts = []
    for index in _np.ndindex(*batch):
        def pick(x, dims):
            # The matrix of stack ``x`` at ``index`` (broadcast where its extent is 1).
            if x.ndim <= 2:
                return x
            own = index[len(index) - len(dims):]
            return x[tuple(i if n > 1 else 0 for i, n in zip(own, dims))]
        parts.append(_matrix_product(pick(a, batch_a), pick(b, batch_b)))
    return stack(parts).reshape(batch + parts[0].shape)


def dot(a, b):
    """NumPy's ``dot``: vector . vector (a lazy 0-d array), matrix products, and an N-d
    array's last axis against a vector's or a matrix's first; a 0-d operand multiplies."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if _product_dtype(a, b) is None or b.ndim > 2:
        return _fallback("dot", _np.dot, a, b)
    if a.shape[-1] != b.shape[0]:
        raise _not_aligned(a.shape, a.ndim - 1, b.shape, 0)
    return matmul(a, b)


def vdot(a, b):
    """NumPy's ``vdot``: the dot product of the flattened operands, the first conjugated
    when complex (a lazy 0-d array)."""
    a, b = asarray(a), asarray(b)
    if _product_dtype(a, b) is None:
        return _fallback("vdot", _np.vdot, a, b)
    if a.size != b.size:
        raise ValueError("cannot reshape array of size "
                         f"{builtins.max(a.size, b.size)} into shape "
                         f"({builtins.min(a.size, b.size)},)")
    dtype = _np.result_type(a.dtype, b.dtype)
    if a.dtype.kind == "c":
        a = a.conj()
    return ndarray(_cast(a, dtype).ravel()._a.dot(_cast(b, dtype).ravel()._a))


def inner(a, b):
    """NumPy's ``inner``: sums over the last axes of both operands (``a @ b.T`` for
    matrices, the transpose read in place); a 0-d operand multiplies."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if _product_dtype(a, b) is None or b.ndim > 2:
        return _fallback("inner", _np.inner, a, b)
    if a.shape[-1] != b.shape[-1]:
        # NumPy reports ``dot`` of ``a`` and ``b`` with its last two axes swapped.
        raise _not_aligned(a.shape, a.ndim - 1, b.shape[::-1], 0)
    if b.ndim == 1:
        return matmul(a, b)
    if a.ndim == 1:  # x against each row of b
        return matmul(b, a)
    return matmul(a, b.T)


def tensordot(a, b, axes=2):
    """NumPy's ``tensordot``: ``a``'s axes ``axes[0]`` against ``b``'s ``axes[1]`` (an int
    ``n``: ``a``'s last ``n`` against ``b``'s first ``n``), as one matrix product of the
    operands with those axes gathered together (a view where the layout allows one)."""
    a, b = asarray(a), asarray(b)
    if _product_dtype(a, b) is None:
        return _fallback("tensordot", _np.tensordot, a, b, axes=axes)
    try:
        n = int(axes)
        summed_a, summed_b = list(range(a.ndim - n, a.ndim)), list(range(n))
        if n < 0 or n > builtins.min(a.ndim, b.ndim):
            raise ValueError("shape-mismatch for sum")
    except TypeError:
        summed_a, summed_b = ([x] if isinstance(x, int) else list(x) for x in axes)
        summed_a = [s % a.ndim if a.ndim else s for s in summed_a]
        summed_b = [s % b.ndim if b.ndim else s for s in summed_b]
    if len(summed_a) != len(summed_b) \
            or builtins.any(a.shape[i] != b.shape[j] for i, j in zip(summed_a, summed_b)):
        raise ValueError("shape-mismatch for sum")
    free_a = [d for d in range(a.ndim) if d not in summed_a]
    free_b = [d for d in range(b.ndim) if d not in summed_b]
    k = math.prod(a.shape[d] for d in summed_a)
    out_shape = tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b)
    lhs = a.transpose(free_a + summed_a).reshape(-1, k)
    rhs = b.transpose(summed_b + free_b).reshape(k, -1)
    return matmul(lhs, rhs).reshape(out_shape)


def outer(a, b, out=None):
    """NumPy's ``outer``: the flattened ``a`` as a column times the flattened ``b`` as a
    row (one element-wise task)."""
    a, b = asarray(a).ravel(), asarray(b).ravel()
    result = multiply(a.reshape(-1, 1), b.reshape(1, -1))
    if out is None:
        return result
    out[...] = result
    return out


#: The functions of ``NATIVE`` this module defines, given NumPy's whole interface here, before
#: any other module imports them.
def kron(a, b):
    """NumPy's ``kron``: the Kronecker product, every element of ``a`` times all of ``b``
    (the operands' axes interleaved in one broadcast product, then merged pairwise; the
    operand with fewer axes gets leading unit axes, as NumPy gives it)."""
    a, b = asarray(a), asarray(b)
    ndim = builtins.max(a.ndim, b.ndim)
    sa = (1,) * (ndim - a.ndim) + a.shape
    sb = (1,) * (ndim - b.ndim) + b.shape
    spread_a = builtins.sum(((n, 1) for n in sa), ())
    spread_b = builtins.sum(((1, n) for n in sb), ())
    product = multiply(a.reshape(spread_a), b.reshape(spread_b))
    return product.reshape(tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's ``cross`` of 3-vectors along the last axes (broadcast over the others): the
    three components from products of the operands' slices. Other axes and 2-vectors run
    on NumPy."""
    a, b = asarray(a), asarray(b)
    if (axisa, axisb, axisc, axis) != (-1, -1, -1, None) or a.ndim == 0 or b.ndim == 0 \
            or a.shape[-1] != 3 or b.shape[-1] != 3:
        return _fallback("cross", _np.cross, a, b, axisa=axisa, axisb=axisb, axisc=axisc,
                         axis=axis)
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """NumPy's ``trace`` of a matrix: the sum of its diagonal ``offset`` (with ``sum``'s
    dtypes); arrays of more axes run on NumPy."""
    a = asarray(a)
    if a.ndim != 2 or {axis1 % 2, axis2 % 2} != {0, 1}:
        return _fallback("trace", _np.trace, a, offset=offset, axis1=axis1, axis2=axis2,
                         dtype=dtype)
    if axis1 % 2 == 1:
        a = a.T
    return _reductions.sum(diag(a, offset), dtype=dtype)


NATIVE = ("cross", "dot", "inner", "kron", "matmul", "outer", "tensordot", "trace", "vdot")
_wrap_numpy_names(globals(), NATIVE)


# The module above this one, which imports its names: imported last, as a module, its
# functions looked up when called.
from . import _reductions  # noqa: E402
