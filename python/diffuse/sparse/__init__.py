"""SciPy's sparse matrices on diffuse: ``import diffuse.sparse as sp``.

``csr_matrix`` holds a float64 CSR matrix on diffuse; ``A @ x`` with a vector is one index
task (lazy, fusing with the vector arithmetic around it). Constructing matrices
(``diags``, ``identity``, ``kron``, sums, ...) runs on SciPy on the host and gives diffuse
matrices; anything else SciPy has runs on SciPy with a one-time warning.
"""

import numbers
import warnings

import numpy as _np

from .. import _native
from .. import numpy as _dnp

__all__ = ["csr_matrix", "issparse", "diags"]


def _scipy():
    import scipy.sparse

    return scipy.sparse


class csr_matrix:
    """A float64 CSR matrix on diffuse, built like SciPy's ``csr_matrix``: from
    ``(data, indices, indptr)`` with ``shape``, from a dense array, or from a SciPy sparse
    matrix."""

    __array_priority__ = 1001

    def __init__(self, arg, shape=None, dtype=None):
        sp = _scipy()
        if isinstance(arg, csr_matrix):
            self._host, self._m = arg._host, arg._m
            return
        if isinstance(arg, tuple) and len(arg) == 3:
            host = sp.csr_matrix(tuple(_np.asarray(a) for a in arg), shape=shape)
        elif sp.issparse(arg):
            host = arg.tocsr()
        else:
            host = sp.csr_matrix(_np.asarray(arg))
        if dtype is not None and _np.dtype(dtype) != _np.float64:
            raise TypeError(f"diffuse sparse matrices hold float64 values, not {dtype}")
        host = host.astype(_np.float64)
        host.sum_duplicates()
        self._host = host
        self._m = _native.NativeCsr(
            host.data.tolist(), host.indices.astype(_np.int64).tolist(),
            host.indptr.astype(_np.int64).tolist(), tuple(int(n) for n in host.shape))

    @property
    def shape(self):
        return tuple(self._m.shape)

    @property
    def nnz(self):
        return self._m.nnz

    @property
    def dtype(self):
        return _np.dtype(_np.float64)

    @property
    def ndim(self):
        return 2

    @property
    def T(self):
        return csr_matrix(self._host.T)

    def transpose(self):
        return self.T

    def tocsr(self, copy=False):
        return self

    def toarray(self):
        return self._host.toarray()

    def to_scipy(self):
        """The matrix as SciPy's ``csr_matrix`` (host copy)."""
        return self._host

    def dot(self, other):
        return self @ other

    def __matmul__(self, other):
        if isinstance(other, (csr_matrix,)) or _scipy().issparse(other):
            return csr_matrix(self._host @ _host_of(other))
        x = _dnp.asarray(other)
        if x.ndim == 1:
            if x.shape[0] != self.shape[1]:
                raise ValueError(
                    f"dimension mismatch: matrix of shape {self.shape} times vector of "
                    f"length {x.shape[0]}"
                )
            if x.dtype != _np.float64:
                x = x.astype("float64")
            return _dnp.ndarray(self._m.matvec(x._a))
        warnings.warn("diffuse.sparse: a matrix times a dense matrix runs on SciPy",
                      RuntimeWarning, stacklevel=2)
        return _dnp.asarray(self._host @ _np.asarray(x))

    __mul__ = __matmul__

    def __rmul__(self, other):
        if isinstance(other, numbers.Number):
            return csr_matrix(self._host * other)
        return NotImplemented

    def __add__(self, other):
        return csr_matrix(self._host + _host_of(other))

    __radd__ = __add__

    def __sub__(self, other):
        return csr_matrix(self._host - _host_of(other))

    def __neg__(self):
        return csr_matrix(-self._host)

    def diagonal(self):
        return _dnp.asarray(self._host.diagonal())

    def __repr__(self):
        return (f"<diffuse.sparse.csr_matrix of shape {self.shape} with {self.nnz} stored "
                "elements>")


def _host_of(m):
    return m._host if isinstance(m, csr_matrix) else m


def issparse(x):
    """True for diffuse and SciPy sparse matrices."""
    return isinstance(x, csr_matrix) or _scipy().issparse(x)


def _to_scipy(x):
    if isinstance(x, csr_matrix):
        return x._host
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
        from . import linalg

        return linalg
    attr = getattr(_scipy(), name)
    if not callable(attr) or isinstance(attr, type):
        return attr

    def wrapped(*args, **kwargs):
        if name not in _constructors and name not in _warned:
            _warned.add(name)
            warnings.warn(f"diffuse.sparse: {name} runs on SciPy", RuntimeWarning,
                          stacklevel=2)
        args = [_to_scipy(a) for a in args]
        kwargs = {k: _to_scipy(v) for k, v in kwargs.items()}
        return _from_scipy(attr(*args, **kwargs))

    wrapped.__name__ = name
    return wrapped
