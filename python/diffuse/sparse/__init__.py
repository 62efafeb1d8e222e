"""SciPy's sparse matrices on diffuse: ``import diffuse.sparse as sp``.

``csr_matrix`` holds a float64 CSR matrix on diffuse; ``A @ x`` with a vector is one index
task (lazy, fusing with the vector arithmetic around it). Constructing matrices
(``diags``, ``identity``, ``kron``, sums, ...) runs on SciPy on the host and gives diffuse
matrices; anything else SciPy has runs on SciPy with a one-time warning.
"""

import importlib
import numbers
import operator
import sys

import numpy as _np

from .. import _native, _state
from .. import numpy as _dnp
from .._warnings import warn_at_caller

__all__ = ["csr_matrix", "issparse", "diags"]


def _scipy():
    import scipy.sparse

    return scipy.sparse


# The largest extent of a matrix: diffuse indexes rows and columns with int64, and a row
# count needs one more index pointer.
_MAX_EXTENT = int(_np.iinfo(_np.int64).max) - 1


def _shape(shape):
    """SciPy's ``check_shape`` for a matrix: two integers, neither negative, within int64."""
    try:
        dims = iter(shape)
    except TypeError:
        dims = (operator.index(shape),)
    else:
        dims = tuple(operator.index(d) for d in dims)
    if len(dims) != 2:
        raise ValueError(f"shape must have length in (2,). Got new_shape={dims}")
    if any(d < 0 for d in dims):
        raise ValueError("'shape' elements cannot be negative")
    if any(d > _MAX_EXTENT for d in dims):
        raise ValueError(f"shape {dims} is too large: extents must be at most {_MAX_EXTENT}")
    return (int(dims[0]), int(dims[1]))


def _values(a):
    """``a`` as a contiguous 1-d float64 array (the same array when it already is one)."""
    a = _np.asarray(a)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"diffuse sparse matrices hold float64 values, not {a.dtype}")
    if a.ndim != 1:
        raise ValueError("data, indices, and indptr should be 1-D")
    return _np.ascontiguousarray(a, dtype=_np.float64)


def _index_array(a, what):
    """``a`` as a contiguous 1-d int32 or int64 array (the same array when it already is
    one): integers, or floats holding whole numbers that int64 can hold."""
    a = _np.asarray(a)
    if a.ndim != 1:
        raise ValueError("data, indices, and indptr should be 1-D")
    if a.dtype.kind == "f":
        whole = _np.isfinite(a) & (a == _np.trunc(a)) & (_np.abs(a) < 2.0**63)
        if not whole.all():
            raise ValueError(f"{what} must hold integers, not {a[~whole][0]!r}")
        a = a.astype(_np.int64)
    elif a.dtype.kind == "u":
        if a.size and a.max() > _np.iinfo(_np.int64).max:
            raise ValueError(f"{what} value {a.max()} is out of range for int64")
    elif a.dtype.kind != "i":
        raise TypeError(f"{what} array has non-integer dtype ({a.dtype.name})")
    if a.dtype not in (_np.int32, _np.int64):
        a = a.astype(_np.int64)
    return _np.ascontiguousarray(a)


def _check_compressed(data, indices, indptr, shape):
    """SciPy's full ``check_format`` of CSR arrays, with its errors, in NumPy: neither
    SciPy's native code (``sum_duplicates``, products, conversions) nor diffuse's may see
    arrays that index memory out of bounds."""
    rows, cols = shape
    if len(indptr) != rows + 1:
        raise ValueError(f"index pointer size {len(indptr)} should be {rows + 1}")
    if indptr[0] != 0:
        raise ValueError("index pointer should start with 0")
    if len(indices) != len(data):
        raise ValueError("indices and data should have the same size")
    if indptr[-1] > len(indices):
        raise ValueError("Last value of index pointer should be less than the size of "
                         "index and data arrays")
    if len(indices):
        if indices.max() >= cols:
            raise ValueError(f"indices must be < {cols}")
        if indices.min() < 0:
            raise ValueError("indices must be >= 0")
    if (indptr[1:] < indptr[:-1]).any():
        raise ValueError("indptr must be a non-decreasing sequence")


def _compressed(data, indices, indptr, shape):
    """A SciPy CSR matrix of copies of checked ``(data, indices, indptr)`` (``shape`` None:
    SciPy's inference from ``indptr`` and ``indices``)."""
    data, indices, indptr = (_values(data), _index_array(indices, "indices"),
                             _index_array(indptr, "indptr"))
    if shape is None:
        if len(indptr) == 0 or len(indices) == 0:
            raise ValueError("unable to infer matrix dimensions")
        shape = (len(indptr) - 1, int(indices.max()) + 1)
    shape = _shape(shape)
    _check_compressed(data, indices, indptr, shape)
    nnz = int(indptr[-1])
    return _scipy().csr_matrix((data[:nnz].copy(), indices[:nnz].copy(), indptr.copy()),
                               shape=shape)


def _coordinates(data, row, col, shape):
    """A SciPy CSR matrix of checked coordinates ``(data, (row, col))``, with SciPy's
    errors for its COO input."""
    data, row, col = _values(data), _index_array(row, "row"), _index_array(col, "col")
    if not len(data) == len(row) == len(col):
        raise ValueError("row, column, and data array must all be the same length")
    if shape is None:
        if len(row) == 0:
            raise ValueError("cannot infer dimensions from zero sized index arrays")
        shape = (int(row.max()) + 1, int(col.max()) + 1)
    shape = _shape(shape)
    for what, index, extent in (("row", row, shape[0]), ("column", col, shape[1])):
        if len(index) and index.max() >= extent:
            raise ValueError(f"{what} index exceeds matrix dimensions")
        if len(index) and index.min() < 0:
            raise ValueError(f"negative {what} index found")
    return _scipy().coo_matrix((data, (row, col)), shape=shape).tocsr()


def _from_sparse(m):
    """A SciPy CSR copy of a SciPy sparse matrix of any format, its index arrays checked
    first where its conversion trusts them."""
    if m.dtype.kind not in "biuf":
        raise TypeError(f"diffuse sparse matrices hold float64 values, not {m.dtype}")
    if m.format in ("csr", "csc"):
        indices, indptr = (_index_array(m.indices, "indices"),
                           _index_array(m.indptr, "indptr"))
        _check_compressed(_values(m.data), indices, indptr,
                          m.shape if m.format == "csr" else m.shape[::-1])
    elif m.format == "coo":
        _coordinates(m.data, m.row, m.col, m.shape)
    elif m.format == "bsr":
        m.check_format(full_check=True)
    return m.tocsr(copy=True)


def _is_shape(arg):
    """True for SciPy's ``(M, N)`` constructor input: a pair of scalars."""
    return len(arg) == 2 and all(
        not isinstance(d, (tuple, list, str, bytes, _np.ndarray)) for d in arg)


def _host_matrix(arg, shape):
    """The checked SciPy CSR matrix of a constructor input, not yet canonical."""
    if _scipy().issparse(arg):
        return _from_sparse(arg)
    if isinstance(arg, tuple):
        if _is_shape(arg):
            return _scipy().csr_matrix(_shape(arg))
        if len(arg) == 3:
            return _compressed(*arg, shape)
        if len(arg) == 2 and isinstance(arg[1], (tuple, list)) and len(arg[1]) == 2:
            return _coordinates(arg[0], *arg[1], shape)
        raise ValueError(f"unrecognized csr_matrix constructor input: {arg}")
    dense = _np.asarray(arg)
    if dense.dtype.kind not in "biuf":
        raise TypeError(f"diffuse sparse matrices hold float64 values, not {dense.dtype}")
    if dense.ndim > 2:
        raise ValueError(f"expected dimension <= 2 array or matrix, not {dense.ndim}-D")
    return _scipy().csr_matrix(dense)


class _Arrays:
    """What a ``csr_matrix`` holds (shared, as SciPy's are, by the matrices made from it
    without a copy): the SciPy matrix on the host, whose arrays are the truth, and the
    native matrix on diffuse, built from them on first use and again after they change.

    Handing out the host's arrays (``data``, ``indices``, ``indptr``, ``to_scipy``) lends
    them: while lent, every use compares them with copies of the arrays last checked, and a
    change is checked again (SciPy's errors) and rebuilds the native matrix. The loan ends
    at the first use after the user holds none of them (their reference counts are back to
    this object's own), so matrices whose arrays stay private cost nothing per use."""

    __slots__ = ("host", "native", "checked")

    def __init__(self, host):
        self.host, self.native, self.checked = host, None, None

    def lend(self):
        """Marks the host's arrays as in the user's hands (they may be written)."""
        if self.checked is None:
            h = self.host
            self.checked = (h.data.copy(), h.indices.copy(), h.indptr.copy(), h.shape)

    def current(self):
        """The host matrix, checked again first if it changed while lent."""
        if self.checked is not None:
            if not self._unchanged():
                self._recheck()
            # No local name may hold the host or its arrays here: they would count.
            if all(n <= u for n, u in zip(_references(self), _unshared_references())):
                self.checked = None
        return self.host

    def _unchanged(self):
        h = self.host
        data, indices, indptr, shape = self.checked
        return (shape == h.shape and _same(data, h.data) and _same(indices, h.indices)
                and _same(indptr, h.indptr))

    def _recheck(self):
        h = self.host
        data, indices, indptr = (_values(h.data), _index_array(h.indices, "indices"),
                                 _index_array(h.indptr, "indptr"))
        _check_compressed(data, indices, indptr, _shape(h.shape))
        h.data, h.indices, h.indptr = data, indices, indptr
        h.has_sorted_indices = False  # SciPy checks the order again when it needs it
        self.native = None
        self.checked = (data.copy(), indices.copy(), indptr.copy(), h.shape)

    def matrix(self):
        """The native matrix of the current host matrix."""
        h = self.current()
        if self.native is None:
            nnz = int(h.indptr[-1])
            # Not part of a recording (diffuse.trace): a replay holds the matrix as it was
            # built, and is valid while it is the current one (the guard below).
            self.native = _native.unrecorded(lambda: _native.NativeCsr(
                h.data[:nnz].tobytes(), h.indices[:nnz].astype(_np.int64).tobytes(),
                h.indptr.astype(_np.int64).tobytes(), h.shape))
        if _state.recording:
            _state.recording_guards.append((self.matrix, self.native))
        return self.native


def _same(a, b):
    """True when array ``b`` holds the bits of array ``a`` (NaNs and signed zeros included)."""
    return (isinstance(b, _np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
            and _np.array_equal(a.view(_np.uint8), _np.ascontiguousarray(b).view(_np.uint8)))


def _references(arrays):
    """The reference counts of a holder's host matrix and its three arrays."""
    h = arrays.host
    return (sys.getrefcount(h), sys.getrefcount(h.data), sys.getrefcount(h.indices),
            sys.getrefcount(h.indptr))


_unshared = []


def _unshared_references():
    """``_references`` of a holder whose arrays nobody else holds (measured once)."""
    if not _unshared:
        _unshared.append(_references(_Arrays(_scipy().csr_matrix((1, 1)))))
    return _unshared[0]


def _live_array(name, doc, convert):
    """A property for the host matrix's array ``name`` (documented by ``doc``): reading or
    writing it lends the arrays to the host first, and a written value is checked and
    converted by ``convert``."""

    def get(self):
        self._arrays.lend()
        return getattr(self._arrays.host, name)

    def set(self, value):
        self._arrays.lend()
        converted = convert(value)
        setattr(self._arrays.host, name, converted)

    return property(get, set, doc=doc)


class csr_matrix:
    """A float64 CSR matrix on diffuse, built like SciPy's ``csr_matrix``: from
    ``(data, indices, indptr)``, ``(data, (row, col))`` or ``(M, N)`` with ``shape``, from
    a dense array, or from a sparse matrix. Every input is checked (SciPy's errors) before
    any native code sees it; the arrays are copied, except from another diffuse matrix,
    whose arrays are shared as SciPy shares them. ``data``, ``indices`` and ``indptr`` are
    the live arrays: assigning them, or writing into them, changes the matrix."""

    __array_priority__ = 1001

    def __init__(self, arg, shape=None, dtype=None, copy=False):
        if dtype is not None and _np.dtype(dtype) != _np.float64:
            raise TypeError(f"diffuse sparse matrices hold float64 values, not {dtype}")
        if isinstance(arg, csr_matrix) and shape is None:
            self._arrays = _Arrays(arg._arrays.current().copy()) if copy else arg._arrays
            return
        host = _host_matrix(arg._arrays.current() if isinstance(arg, csr_matrix) else arg,
                            shape)
        if shape is not None and _shape(shape) != host.shape:
            host = _compressed(host.data, host.indices, host.indptr, shape)
        host = host.astype(_np.float64, copy=False)  # a private copy already
        if host.nnz:  # (an empty matrix is canonical: its index pointer stays untouched)
            host.sum_duplicates()
        self._arrays = _Arrays(host)

    def _host(self):
        """The SciPy matrix, current."""
        return self._arrays.current()

    data = _live_array("data", "The stored values (live: writes change the matrix).", _values)
    indices = _live_array(
        "indices", "The stored entries' columns (live: writes change the matrix).",
        lambda value: _index_array(value, "indices"))
    indptr = _live_array(
        "indptr", "Where each row's entries start (live: writes change the matrix).",
        lambda value: _index_array(value, "indptr"))

    @property
    def shape(self):
        return self._host().shape

    @shape.setter
    def shape(self, value):
        host = self._host().reshape(_shape(value)).tocsr()
        host.sum_duplicates()
        self._arrays.lend()
        self._arrays.host = host

    @property
    def nnz(self):
        return self._host().nnz

    @property
    def dtype(self):
        return _np.dtype(_np.float64)

    @property
    def ndim(self):
        return 2

    @property
    def T(self):
        return csr_matrix(self._host().T)

    def transpose(self):
        return self.T

    def tocsr(self, copy=False):
        return csr_matrix(self, copy=True) if copy else self

    def copy(self):
        return csr_matrix(self, copy=True)

    def toarray(self):
        return self._host().toarray()

    def todense(self):
        """A dense ``numpy.matrix``, as SciPy's ``todense``."""
        return self._host().todense()

    def tocsc(self, copy=False):
        """The matrix in SciPy's CSC format (diffuse holds CSR only; a copy)."""
        return self._host().tocsc()

    def tocoo(self, copy=False):
        """The matrix in SciPy's COO format (diffuse holds CSR only; a copy)."""
        return self._host().tocoo()

    def asformat(self, format, copy=False):
        """This matrix for ``"csr"`` (or None), SciPy's matrix in any other format."""
        if format in (None, "csr"):
            return self.copy() if copy else self
        return self._host().asformat(format)

    def to_scipy(self):
        """The matrix as SciPy's ``csr_matrix``, sharing its arrays: writes to it change
        this matrix too."""
        self._arrays.lend()
        return self._arrays.host

    def dot(self, other):
        return self @ other

    def __matmul__(self, other):
        if isinstance(other, (csr_matrix,)) or _scipy().issparse(other):
            return csr_matrix(self._host() @ _host_of(other))
        x = _dnp.asarray(other)
        if x.ndim == 1:
            native = self._arrays.matrix()  # (checks the arrays once if they are lent)
            shape = self._arrays.host.shape
            if x.shape[0] != shape[1]:
                raise ValueError(
                    f"dimension mismatch: matrix of shape {shape} times vector of "
                    f"length {x.shape[0]}"
                )
            if x.dtype != _np.float64:
                x = x.astype("float64")
            return _dnp.ndarray(native.matvec(x._a))
        if x.ndim == 2 and x.shape[1] == 1:
            # An (n, 1) dense matrix: the native product of its one column.
            return (self @ x.reshape(x.shape[0])).reshape(self.shape[0], 1)
        warn_at_caller("diffuse.sparse: a matrix times a dense matrix runs on SciPy")
        return _dnp.asarray(self._host() @ _np.asarray(x))

    __mul__ = __matmul__

    def __rmul__(self, other):
        if isinstance(other, numbers.Number):
            return csr_matrix(self._host() * other)
        return NotImplemented

    def __add__(self, other):
        return csr_matrix(self._host() + _host_of(other))

    __radd__ = __add__

    def __sub__(self, other):
        return csr_matrix(self._host() - _host_of(other))

    def __neg__(self):
        return csr_matrix(-self._host())

    def diagonal(self):
        return _dnp.asarray(self._host().diagonal())

    def __repr__(self):
        return (f"<diffuse.sparse.csr_matrix of shape {self.shape} with {self.nnz} stored "
                "elements>")


def _host_of(m):
    """The current SciPy matrix of a diffuse matrix, a checked copy of a SciPy one (SciPy's
    native code trusts its arrays), anything else as it is."""
    if isinstance(m, csr_matrix):
        return m._host()
    return _from_sparse(m) if _scipy().issparse(m) else m


def issparse(x):
    """True for diffuse and SciPy sparse matrices."""
    return isinstance(x, csr_matrix) or _scipy().issparse(x)


def _to_scipy(x):
    if isinstance(x, csr_matrix):
        return x.to_scipy()
    if isinstance(x, _dnp.ndarray):
        return _np.asarray(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_scipy(v) for v in x)
    return x


def _from_scipy(x):
    if _scipy().issparse(x):
        return csr_matrix(x)
    return x


def diags(diagonals, offsets=0, shape=None, format=None, dtype=None):
    """SciPy's ``diags``, as a diffuse CSR matrix."""
    return csr_matrix(_scipy().diags(_to_scipy(diagonals), offsets, shape=shape, dtype=dtype))


_constructors = {"identity", "eye", "kron", "kronsum", "hstack", "vstack", "block_diag",
                 "random", "rand", "spdiags", "bmat"}
_warned = set()


def __getattr__(name):
    """SciPy's sparse functions: constructors give diffuse matrices; anything else runs on
    SciPy with a one-time warning."""
    if name == "linalg":
        # `from . import linalg` would ask this package for the attribute again (and recurse)
        # before importing the submodule.
        return importlib.import_module(".linalg", __name__)
    attr = getattr(_scipy(), name)
    if not callable(attr) or isinstance(attr, type):
        return attr

    def wrapped(*args, **kwargs):
        if name not in _constructors and name not in _warned:
            _warned.add(name)
            warn_at_caller(f"diffuse.sparse: {name} runs on SciPy")
        args = [_to_scipy(a) for a in args]
        kwargs = {k: _to_scipy(v) for k, v in kwargs.items()}
        return _from_scipy(attr(*args, **kwargs))

    wrapped.__name__ = name
    return wrapped
