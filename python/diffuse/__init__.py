"""diffuse for Python: NumPy programs on diffuse's task-fusing runtime.

``import diffuse.numpy as np`` gives NumPy's interface over diffuse arrays;
``diffuse.special.erf`` is SciPy's ``erf``. The runtime starts on first use, configured by
the same settings as the apps' flags, each read from the variable named after its flag
(``--procs`` is ``DIFFUSE_PROCS``): ``DIFFUSE_BACKEND`` (``embedded`` or ``legion``),
``DIFFUSE_PROCS``, ``DIFFUSE_NODES``, ``DIFFUSE_FUSION`` (``on``/``off``), ``DIFFUSE_WINDOW``,
``DIFFUSE_STAGES``, ``DIFFUSE_JIT`` (``background``, ``sync`` or ``off``), ``DIFFUSE_GPU``,
``DIFFUSE_MAPPER`` (a Mapple file), ``DIFFUSE_MAPPER_LOG``, ``DIFFUSE_MIN_BLOCK``,
``DIFFUSE_STRIP_BYTES``, ``DIFFUSE_MEMORY_LIMIT``, ``DIFFUSE_LEGION_TRACES`` and
``DIFFUSE_LEGION_FOLDS`` (the table is ``diffuse::Setup``, ``src/setup.rs``); a value a
setting does not take is a ``RuntimeError`` naming the variable. Compiled kernels are kept
in ``DIFFUSE_KERNEL_CACHE`` (default ``~/.cache/diffuse/kernels``, ``off`` for none), and
arrays of at most ``DIFFUSE_EAGER_ELEMENTS`` elements run eagerly on NumPy, as do those of at most
``DIFFUSE_LOOP_ELEMENTS`` that a loop indexes piece by piece.
"""

import atexit

from . import _native

__all__ = ["flush", "trace"]


def flush():
    """Runs everything submitted so far (as reading a value would)."""
    _native.flush()


def trace(fn):
    """``fn``, a function of diffuse arrays, recorded on its first call and replayed on later
    calls with arguments like the first ones, without running its Python code again (see
    ``diffuse._trace``)."""
    from ._trace import trace as _trace

    return _trace(fn)


# Work still buffered in the window runs (and reports its errors), and kernels still compiling
# finish, before the interpreter exits.
atexit.register(_native.shutdown)
