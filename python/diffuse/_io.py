"""Arrays in files: ``save`` and ``load`` of NumPy's ``.npy`` format (headers of version 1.0,
as NumPy writes them for these dtypes, and 2.0: each reads the other's files) and
``fromfile`` of raw binary data, moving the elements in boxes of at most
``_PIECE_BYTES`` (each one host copy of that box), never the whole array at once.

``.npz`` archives, pickled objects, ``mmap_mode`` and headers of other versions load
through NumPy (``.npz`` members are NumPy's arrays). ``ndarray.tofile`` is a method of the
array (``_ndarray``): it runs on NumPy.
"""

import math
import os

import numpy as _np

from ._dtypes import _dtype_name
from ._ndarray import ndarray
from ._interop import _fallback, _wrap_numpy_names
from ._creation import array, zeros

#: The most bytes one host copy holds while an array is written or read.
_PIECE_BYTES = 1 << 24

_FORMAT = _np.lib.format


def _boxes(shape, limit):
    """Keys of step-1 boxes that cover ``shape`` in row-major order, each of at most
    ``limit`` elements (or one element where a single element is more)."""
    if not shape:
        yield ()
        return
    inner = math.prod(shape[1:])
    if inner <= limit:
        step = max(1, limit // max(inner, 1))
        for i in range(0, shape[0], step):
            yield (slice(i, min(i + step, shape[0])),)
        return
    for i in range(shape[0]):
        for rest in _boxes(shape[1:], limit):
            yield (slice(i, i + 1),) + rest


def _opened(file, mode):
    """``(file object, whether this call opened it)`` for a path or an open file."""
    if isinstance(file, (str, bytes, os.PathLike)):
        return open(os.fspath(file), mode), True
    return file, False


def save(file, arr, allow_pickle=True):
    """NumPy's ``save`` of a diffuse array: the ``.npy`` header, then the elements in
    row-major order, a box of at most ``_PIECE_BYTES`` at a time (``.npy`` is added to a
    path without it, as NumPy does)."""
    if not isinstance(arr, ndarray):
        return _np.save(file, arr, allow_pickle=allow_pickle)
    if isinstance(file, (str, os.PathLike)) and not os.fspath(file).endswith(".npy"):
        file = os.fspath(file) + ".npy"
    fid, own = _opened(file, "wb")
    try:
        header = {"descr": _FORMAT.dtype_to_descr(arr.dtype), "fortran_order": False,
                  "shape": arr.shape}
        # (Version 1.0, which NumPy writes where the header fits: a header of a dtype and
        # a shape diffuse holds always does.)
        _FORMAT.write_array_header_1_0(fid, header)
        _write_elements(fid, arr)
    finally:
        if own:
            fid.close()
    return None


def _write_elements(fid, arr):
    """Writes ``arr``'s elements to ``fid`` in row-major order, native-endian, a box of at
    most ``_PIECE_BYTES`` at a time."""
    for key in _boxes(arr.shape, max(1, _PIECE_BYTES // arr.itemsize)):
        fid.write(_np.asarray(arr[key]).tobytes())


def _tofile(arr, fid, sep="", format="%s"):
    """NumPy's ``ndarray.tofile``: the elements as raw bytes, written a box at a time (text,
    a ``sep``, is NumPy's)."""
    if sep:
        return _fallback("ndarray.tofile", _np.ndarray.tofile, arr, fid, sep=sep,
                         format=format)
    fid, own = _opened(fid, "wb")
    try:
        _write_elements(fid, arr)
    finally:
        if own:
            fid.close()
    return None


def _read(fid, dtype, shape):
    """An array of ``shape`` and ``dtype`` from the next bytes of ``fid`` (row-major), read a
    box of at most ``_PIECE_BYTES`` at a time into a new deferred array (at once when it is
    that small: NumPy holds it when small enough)."""
    limit = max(1, _PIECE_BYTES // dtype.itemsize)

    def piece(n, box):
        raw = fid.read(n * dtype.itemsize)
        if len(raw) != n * dtype.itemsize:
            raise ValueError(f"EOF: reading array data, expected {n * dtype.itemsize} bytes "
                             f"got {len(raw)}")
        return _np.frombuffer(raw, dtype).reshape(box)

    if math.prod(shape) <= limit:
        return array(piece(math.prod(shape), shape))
    out = zeros(shape, _dtype_name(dtype))
    for key in _boxes(shape, limit):
        box = tuple(k.stop - k.start for k in key) + shape[len(key):]
        out[key] = piece(math.prod(box), box)
    return out


def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII", *,
         max_header_size=10000):
    """NumPy's ``load`` of a ``.npy`` file holding a dtype diffuse holds: its elements read a
    box at a time into a new diffuse array (see the module's description for the rest)."""
    kwargs = dict(mmap_mode=mmap_mode, allow_pickle=allow_pickle, fix_imports=fix_imports,
                  encoding=encoding, max_header_size=max_header_size)
    fid, own = _opened(file, "rb")
    try:
        start = fid.tell()
        magic = fid.read(len(_FORMAT.MAGIC_PREFIX))
        fid.seek(start)
        # (NumPy's load of a path opens its own file: a ``.npz`` archive reads it later.)
        given = file if own else fid
        if mmap_mode is not None or magic != _FORMAT.MAGIC_PREFIX:
            return _fallback("load of a .npz archive, a pickle or a memory map", _np.load,
                             given, **kwargs)
        version = _FORMAT.read_magic(fid)
        if version not in ((1, 0), (2, 0)):
            fid.seek(start)
            return _fallback(f"load of a .npy file of version {version}", _np.load, given,
                             **kwargs)
        read_header = _FORMAT.read_array_header_1_0 if version == (1, 0) else \
            _FORMAT.read_array_header_2_0
        shape, fortran_order, dtype = read_header(fid, max_header_size=max_header_size)
        if dtype.hasobject or _dtype_name(dtype) is None:
            fid.seek(start)
            return array(_np.load(fid, **kwargs))  # (converted as ``array`` converts)
        if fortran_order:  # the transpose's elements, in row-major order
            return _read(fid, dtype, shape[::-1]).T
        return _read(fid, dtype, shape)
    finally:
        if own:
            fid.close()


def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None):
    """NumPy's ``fromfile`` of binary data (``sep=""``) in a dtype diffuse holds: ``count``
    elements (all that are left with -1) after ``offset`` bytes, read a box at a time into
    a new diffuse array; text (a ``sep``) is parsed by NumPy."""
    dtype = _np.dtype(dtype)
    if sep or _dtype_name(dtype) is None:
        return array(_np.fromfile(file, dtype, count, sep, offset))
    fid, own = _opened(file, "rb")
    try:
        fid.seek(offset, os.SEEK_CUR)
        left = (os.fstat(fid.fileno()).st_size - fid.tell()) // dtype.itemsize
        if count < 0 or count > left:
            count = left
        return _read(fid, dtype, (count,))
    finally:
        if own:
            fid.close()


#: The functions of ``NATIVE`` this module defines.
NATIVE = ("fromfile", "load", "save")
_wrap_numpy_names(globals(), ("save",))
