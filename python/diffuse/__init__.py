"""diffuse for Python: NumPy programs on diffuse's task-fusing runtime.

``import diffuse.numpy as np`` gives NumPy's interface over diffuse arrays;
``diffuse.special.erf`` is SciPy's ``erf``. The runtime starts on first use, configured by
``DIFFUSE_BACKEND`` (``embedded`` or ``legion``), ``DIFFUSE_PROCS``, ``DIFFUSE_FUSION`` and
``DIFFUSE_JIT`` (``background``, ``sync`` or ``off``); compiled kernels are kept in
``DIFFUSE_KERNEL_CACHE`` (default ``~/.cache/diffuse/kernels``, ``off`` for none).
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
