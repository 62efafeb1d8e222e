"""What every module of ``diffuse.numpy`` reads as it runs, settable in one place: how small
an array NumPy holds (``eager_limit``) and whether ``diffuse.trace`` is recording
(``recording``, ``recording_guards``). Read as attributes of this module, so that setting
one (tests, ``diffuse._trace``) reaches every reader."""

import os


def eager_limit_from_env():
    """``DIFFUSE_EAGER_ELEMENTS``: arrays of at most this many elements are held and computed
    by NumPy (0: none)."""
    text = os.environ.get("DIFFUSE_EAGER_ELEMENTS", "8192")
    try:
        limit = int(text)
    except ValueError:
        limit = -1
    if limit < 0:
        raise ValueError(f"DIFFUSE_EAGER_ELEMENTS={text!r}: expected a number of elements "
                         "(0 turns eager execution of small arrays off)")
    return limit


#: The largest number of elements an array diffuse runs eagerly on NumPy holds: below it, one
#: deferred operation's fixed cost (a task, its window analysis and launch: microseconds)
#: exceeds NumPy's whole operation. Tests set it per test.
eager_limit = eager_limit_from_env()

#: True while ``diffuse.trace`` records a function (``_trace``): what the function does that
#: a replay would not repeat (computing or writing with NumPy on small arrays NumPy holds,
#: reading a strided view's gathered copy) marks the recording unreplayable.
recording = False

#: While recording, what else the recorded tasks depend on: ``(current, value)`` pairs, a
#: replay being valid only while ``current()`` is ``value`` (a sparse matrix's native form,
#: rebuilt when its arrays change).
recording_guards = []
