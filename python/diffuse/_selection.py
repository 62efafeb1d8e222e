"""Selections by masks: ``nonzero`` (its indices computed when first used), ``a[nonzero(m)]``
(compacted when used or before the next write), ``flatnonzero`` and ``extract``.
"""

import builtins
import contextlib
import weakref

import numpy as _np

from ._ndarray import ndarray
from ._interop import _fallback, _wrap_numpy_names
from ._creation import asarray
from ._ufuncs import not_equal


def nonzero(a):
    """NumPy's ``nonzero``: per dimension, the indices of the non-zero elements, row-major
    (one native compaction, whose count is read back, when the indices are first used;
    ``b[nonzero(a)] = v`` needs neither: see ``_NonzeroIndex``)."""
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d("
                         "scalar).nonzero() instead.")
    # A mask of its own: writes to ``a`` after this call must not change the indices.
    mask = a.copy() if a.dtype == _np.bool_ else not_equal(a, 0)
    found = []
    return tuple(_NonzeroIndex(mask, d, found) for d in range(mask.ndim))


class _NonzeroIndex(ndarray):
    """Dimension ``axis``'s indices of ``nonzero(mask)``, computed (for every dimension at
    once) when first used. Indexing an array of the mask's shape with all of them, as in
    ``b[nonzero(a)] = 0``, is ``b[mask]``: a fused masked write, or one compaction, with no
    index arrays and no read-back of their count before the write."""

    __slots__ = ("_mask", "_axis", "_found")

    def __init__(self, mask, axis, found):  # noqa: super().__init__ would set ``_a``
        self._mask, self._axis, self._found = mask, axis, found

    @property
    def _a(self):
        if not self._found:
            self._found.extend(self._mask._a.nonzero())
        return self._found[self._axis]


class _MaskedSelection(ndarray):
    """``a[nonzero(m)]``: the elements of ``source`` where ``mask`` is true, compacted when
    first used or, at the latest, before the next write into any array (so it holds the
    source's elements as they were when it was taken, and keeps the source alive no longer
    than that). Written with the same ``nonzero`` result into another array of the mask's
    shape, as in ``j, i = nonzero(m); b[j, i] = a[j, i]`` (TorchSWE's idiom), it is
    ``b = where(m, a, b)``: one fused element-wise task, with no compaction and no read-back
    of the count."""

    __slots__ = ("_source", "_mask", "_found", "__weakref__")

    def __init__(self, source, mask):  # noqa: super().__init__ would set ``_a``
        self._source, self._mask, self._found = source, mask, None
        if len(_lazy_selections) >= 64:
            # A program reading selections without writing: forget the ones gone or used.
            _lazy_selections[:] = [
                ref for ref in _lazy_selections
                if (selection := ref()) is not None and selection._found is None]
        _lazy_selections.append(weakref.ref(self))

    @property
    def _a(self):
        if self._found is None:
            self._found = self._source._a.select(self._mask._a)
            self._source = None
        return self._found


# Selections not compacted yet (weak references), and the one a write is consuming.
_lazy_selections = []
_consumed = None


@contextlib.contextmanager
def _consuming(selection):
    """Writes inside this block leave ``selection`` lazy (they are its own consumption)."""
    global _consumed
    _consumed = selection
    try:
        yield
    finally:
        _consumed = None


def _compact_lazy_selections():
    """Compacts every lazy selection (but the one being consumed) before a write, which
    might change its source."""
    if not _lazy_selections:
        return
    pending, _lazy_selections[:] = list(_lazy_selections), []
    for ref in pending:
        selection = ref()
        if selection is None or selection._found is not None:
            continue
        if selection is _consumed:
            _lazy_selections.append(ref)
        else:
            selection._a  # noqa: B018 (compacts)


def _nonzero_mask(key, shape):
    """The mask when ``key`` is the whole result of one ``nonzero(mask)`` call over an array
    of ``shape`` (``b[nonzero(a)]``); None otherwise."""
    if type(key) is not tuple or not key or not builtins.all(
            type(k) is _NonzeroIndex for k in key):
        return None
    mask = key[0]._mask
    if len(key) != mask.ndim or tuple(mask.shape) != tuple(shape) or builtins.any(
            k._mask is not mask or k._axis != d for d, k in enumerate(key)):
        return None
    return mask


def flatnonzero(a):
    """NumPy's ``flatnonzero``: the indices of the non-zero elements of the flattened
    array."""
    return nonzero(asarray(a).ravel())[0]


def extract(condition, arr):
    """NumPy's ``extract``: the elements of the flattened ``arr`` where the flattened
    ``condition`` is true."""
    arr, condition = asarray(arr).ravel(), asarray(condition).ravel()
    if condition.size != arr.size:
        return _fallback("extract of differently sized arrays", _np.extract, condition, arr)
    mask = condition if condition.dtype == _np.bool_ else condition.astype("bool")
    return arr[mask]


#: The functions of ``NATIVE`` this module defines, given NumPy's whole interface here, before
#: any other module imports them.
NATIVE = (
    "extract",
    "flatnonzero",
    "nonzero",
)
_wrap_numpy_names(globals(), NATIVE)
