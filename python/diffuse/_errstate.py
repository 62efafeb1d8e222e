"""NumPy's floating-point error handling for diffuse's arrays: ``errstate``, ``seterr``,
``geterr``, ``seterrcall``, ``geterrcall``.

Diffuse runs operations later than NumPy would (when a window of them flushes), so the
exceptions an operation raises (division by zero, overflow, underflow, invalid) are
reported when the work has run: the backend records the IEEE flags each kernel raised, per
operation, and after every flush or read the native module hands them to :func:`report`,
which applies NumPy's error state *at that moment* (NumPy's own, so ``numpy.errstate`` and
diffuse's agree, and NumPy fallbacks follow the same state): 'warn' (the default for divide,
over and invalid) warns ``RuntimeWarning: divide by zero encountered in divide``, 'raise'
raises ``FloatingPointError``, 'ignore' (the default for under) does nothing, 'call', 'print'
and 'log' behave as in NumPy.

So that each operation is judged under the state it ran in, :class:`errstate` and
:func:`seterr` run pending work before the state changes (entering and leaving), and while
any category is 'raise', 'call', 'print' or 'log' every operation runs as it is issued, so
the exception surfaces at the operation as in NumPy (fusion is then limited to one
operation). Changing the state through NumPy itself (``numpy.errstate``) is honoured at the
next flush, but pending operations are not settled first (and a fused kernel's exception
may then be reported under the names of all its operations that could raise it).
"""

import contextlib
import sys

import numpy as _np

from . import _native
from ._warnings import warn_at_caller

__all__ = ["errstate", "seterr", "geterr", "seterrcall", "geterrcall"]

#: True while some category's mode must apply at the operation itself (not 'warn' or
#: 'ignore'): ``diffuse.numpy`` then runs each operation as it is issued.
eager = False

# NumPy's categories: name, bit (as the native module and numpy's 'call' report them) and
# the text of NumPy's messages, in the order NumPy handles them.
_CATEGORIES = (
    ("divide", 1, "divide by zero"),
    ("over", 2, "overflow"),
    ("under", 4, "underflow"),
    ("invalid", 8, "invalid value"),
)

# Operations NumPy names "reduce" in its messages (np.sum overflowing: "overflow encountered
# in reduce").
_REDUCTIONS = {"sum", "prod", "max", "min", "mean", "sum_along", "prod_along", "max_along",
               "min_along", "mean_along"}

# Operations that can divide by zero; a fused kernel that raised the flag names these of
# its operations (add and multiply never divide by zero).
_DIVIDING = {"divide", "true_divide", "floor_divide", "remainder", "fmod", "divmod", "log",
             "log2", "log10", "log1p", "power", "arctanh", "reciprocal"}

# Operations NumPy never reports exceptions for: its comparison, min/max and selection loops
# clear the `invalid` flag that ordered comparisons of NaN raise in vector code, copies,
# negation, absolute values and rounding raise none, and `numpy.linalg` ignores what its
# factorizations raise (a failure is its LinAlgError: the dense kinds' status) (so a fused
# kernel's report does not name them).
_QUIET = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "maximum",
          "minimum", "max", "min", "max_along", "min_along", "argmax", "argmin", "sign",
          "where", "clip", "isnan", "isinf", "isfinite", "logical_and", "logical_or",
          "logical_not", "copy", "neg", "abs", "floor", "ceil", "trunc", "rint", "linalg"}


def _operation(kind):
    """The operation a task kind (``array.divide.float64.xx``) computes, by NumPy's name
    (``None`` for one NumPy or SciPy never reports exceptions for)."""
    parts = kind.split(".")
    if parts[0] == "sparse":
        return None  # SciPy's sparse kernels never check floating-point errors
    if parts[0] != "array" or len(parts) < 2:
        return kind
    if parts[1] in _QUIET:
        return None
    return "reduce" if parts[1] in _REDUCTIONS else parts[1]


def _where(task, bit):
    """The operation(s) a message names for the exception ``bit`` raised by ``task`` (a kind
    name, or kind names joined by '+' for one fused kernel), or ``None`` when only operations
    NumPy keeps quiet ran."""
    ops = [op for op in dict.fromkeys(_operation(k) for k in task.split("+")) if op]
    if len(ops) > 1 and bit == 1:
        ops = [op for op in ops if op in _DIVIDING] or ops
    if not ops:
        return None
    return ops[0] if len(ops) == 1 else ", ".join(ops) + " (fused)"


def _warn(message):
    # Point the warning at the user's line.
    warn_at_caller(message)


def report(raised):
    """Applies the current error state to the exceptions ``raised``: ``(task name, bits)``
    pairs from the native module, in the order the tasks ran."""
    state = _np.geterr()
    for task, bits in raised:
        for category, bit, text in _CATEGORIES:
            if not bits & bit:
                continue
            mode = state[category]
            where = _where(task, bit)
            if mode == "ignore" or where is None:
                continue
            message = f"{text} encountered in {where}"
            if mode == "warn":
                _warn(message)
            elif mode == "raise":
                raise FloatingPointError(message)
            elif mode == "call":
                _np.geterrcall()(text, bits)
            elif mode == "print":
                print(f"Warning: {message}", file=sys.stderr)
            elif mode == "log":
                _np.geterrcall().write(f"Warning: {message}\n")
    # A state set through NumPy itself (not diffuse's errstate) is seen here at the latest.
    _update()


def settle():
    """Runs pending work, reporting what it raised under the current error state."""
    _native.flush()


def _update():
    """Follows NumPy's error state: whether operations must run as issued, and which
    categories the runtime attributes to single operations of fused kernels (those not
    ignored: attributing one runs the kernel's points again)."""
    global eager
    state = _np.geterr()
    reported, eager = 0, False
    for category, bit, _ in _CATEGORIES:
        mode = state[category]
        if mode != "ignore":
            reported |= bit
            eager = eager or mode != "warn"
    _native.report_fp_categories(reported)


class errstate(contextlib.ContextDecorator):
    """``numpy.errstate`` for diffuse's arrays (and NumPy's): a context manager (or function
    decorator) setting how floating-point errors are handled inside it."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._entered = []

    def __enter__(self):
        settle()
        state = _np.errstate(**self._kwargs)
        state.__enter__()
        self._entered.append(state)
        _update()
        return self

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                settle()
        finally:
            self._entered.pop().__exit__(*exc)
            _update()


def seterr(**kwargs):
    """``numpy.seterr``: sets how floating-point errors are handled (after running pending
    work under the old setting); returns the old setting."""
    settle()
    old = _np.seterr(**kwargs)
    _update()
    return old


def geterr():
    """``numpy.geterr``: how floating-point errors are handled now."""
    return _np.geterr()


def seterrcall(func):
    """``numpy.seterrcall``: the function ('call') or object with ``write`` ('log') errors
    go to (after running pending work); returns the old one."""
    settle()
    return _np.seterrcall(func)


def geterrcall():
    """``numpy.geterrcall``."""
    return _np.geterrcall()


_update()
