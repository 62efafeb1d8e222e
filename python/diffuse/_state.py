"""What every module of ``diffuse.numpy`` reads as it runs, settable in one place: how small
an array NumPy holds (``eager_limit``), how large an array a loop moves to NumPy
(``loop_limit``, ``loop_pieces``) and whether ``diffuse.trace`` is recording
(``recording``, ``recording_guards``). Read as attributes of this module, so that setting
one (tests, ``diffuse._trace``) reaches every reader."""

import os


def _elements_from_env(name, default, zero_means):
    """The number of elements the environment variable ``name`` gives (``default`` when it
    is unset); a ``ValueError`` naming it for anything but a non-negative integer."""
    text = os.environ.get(name, str(default))
    try:
        limit = int(text)
    except ValueError:
        limit = -1
    if limit < 0:
        raise ValueError(f"{name}={text!r}: expected a number of elements (0 {zero_means})")
    return limit


def eager_limit_from_env():
    """``DIFFUSE_EAGER_ELEMENTS``: arrays of at most this many elements are held and computed
    by NumPy (0: none)."""
    return _elements_from_env("DIFFUSE_EAGER_ELEMENTS", 8192,
                              "turns eager execution of small arrays off")


#: The largest number of elements an array diffuse runs eagerly on NumPy holds: below it, one
#: deferred operation's fixed cost (a task, its window analysis and launch: microseconds)
#: exceeds NumPy's whole operation. Tests set it per test.
eager_limit = eager_limit_from_env()

def loop_limit_from_env():
    """``DIFFUSE_LOOP_ELEMENTS``: the largest deferred array (in elements) that moves to NumPy
    once a loop reads or writes it piece by piece (0: none moves)."""
    return _elements_from_env("DIFFUSE_LOOP_ELEMENTS", 1 << 25,
                              "keeps every deferred array deferred")


#: The largest deferred array (elements) NumPy takes over when a program keeps reading or
#: writing it piece by piece (an element, a row, a column: ``ndarray._moved_to_numpy``): each
#: piece costs a host round trip where NumPy pays a view, and a loop over pieces cannot fuse.
#: Above it (256 MB of float64), the pieces stay deferred: a host copy that large is a
#: memory spike, and on a GPU a transfer, that few loops repay.
loop_limit = loop_limit_from_env()

#: Whether the runtime hands a store's host buffer over to NumPy when an array moves there
#: (the embedded backend does; Legion's regions are copied): None until an array first
#: moves, as it learns. Without hand-over, a large array needs more pieces to move
#: (``_ndarray``).
hands_over_host = None

#: How many different pieces of one array (indices holding integers, told apart by them)
#: make a loop: a few element reads, or boundary rows written every step (ghost cells up to
#: three deep on each side), do not move it. Arrays of more than 2^18 elements, whose
#: whole-array operations gain most from staying deferred, need twice as many (and one
#: piece per 2^16 elements where the runtime does not hand buffers over: ``_ndarray``).
loop_pieces = 8

#: True while ``diffuse.trace`` records a function (``_trace``): what the function does that
#: a replay would not repeat (computing or writing with NumPy on small arrays NumPy holds,
#: reading a strided view's gathered copy) marks the recording unreplayable.
recording = False

#: While recording, what else the recorded tasks depend on: ``(current, value)`` pairs, a
#: replay being valid only while ``current()`` is ``value`` (a sparse matrix's native form,
#: rebuilt when its arrays change).
recording_guards = []
