"""diffuse for Python: NumPy programs on diffuse's task-fusing runtime.

``import diffuse.numpy as np`` gives NumPy's interface over diffuse arrays;
``diffuse.special.erf`` is SciPy's ``erf``. The runtime starts on first use, configured by
``DIFFUSE_BACKEND`` (``embedded`` or ``legion``), ``DIFFUSE_PROCS``, ``DIFFUSE_FUSION`` and
``DIFFUSE_JIT`` (``background``, ``sync`` or ``off``); compiled kernels are kept in
``DIFFUSE_KERNEL_CACHE`` (default ``~/.cache/diffuse/kernels``, ``off`` for none).
"""

import atexit

from . import _native

__all__ = ["flush"]


def flush():
    """Runs everything submitted so far (as reading a value would)."""
    _native.flush()


# Work still buffered in the window runs (and reports its errors), and kernels still compiling
# finish, before the interpreter exits.
atexit.register(_native.shutdown)
