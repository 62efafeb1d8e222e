"""``diffuse.trace``: a function of arrays whose tasks are recorded on its first call and
replayed on later calls with arguments like the first ones, without running its Python
code again.

A loop body written with ``diffuse.numpy`` spends most of its time at small sizes in Python:
each operation is a Python call that checks types, promotes dtypes and builds a task. The
tasks it builds depend only on the arguments' shapes, dtypes and layouts (and on the Python
values it is given), so ``trace`` records them once per such signature and submits the
recording directly afterwards: the runtime sees the same tasks, fuses and runs them as
before, and the results are bitwise those of the untraced function on deferred arrays.

What a replay does not repeat is the function's Python code: side effects (appending to a
list, printing), and Python values it reads other than its arguments (a global array rebound
to another array, a global number) are as they were when it was recorded, as with
``jax.jit``. Functions whose tasks depend on data are never replayed: reading a value
(``float(x)``, ``if x.sum() > 0``), data from NumPy or the host, computing on small arrays
NumPy holds, or keeping an array it made without returning it make the recording
unreplayable, and the function then runs as a plain function (a warning says why, once). A
recording takes every task the runtime is given while it runs: record on one thread at a
time.
"""

import functools

from . import _errstate, _layout, _native, _state, _warnings
from . import numpy as _dnp
from .numpy import _Eager, ndarray as _ndarray

__all__ = ["trace"]

#: Signatures a traced function records before it stops recording new ones (a function
#: called with ever new Python values, say a time step, would otherwise record every call).
MAX_RECORDINGS = 16

# Python values a signature may hold, by type (their type is part of the key: 1 and 1.0
# differ to tasks, and floats are keyed by their bits, so -0.0 and nan are themselves).
_VALUE_TYPES = (int, bool, str, type(None))


def trace(fn):
    """``fn`` (a function of diffuse arrays and Python values returning arrays, tuples or
    lists of them) recorded on its first call and replayed on later calls whose arguments
    have the same shapes, dtypes, layouts and aliasing as the recorded ones, and equal Python
    values. Small arrays NumPy holds that it is given become diffuse's own (deferred) arrays,
    so that their work can be recorded. Usable as a decorator."""
    return _Traced(fn)


class _Recorded:
    """One recording of a traced function and how to rebuild its result from a replay."""

    __slots__ = ("native", "result", "changed_inputs", "writes_arrays", "guards")

    def __init__(self, native, result, guards):
        self.native = native
        # `(current, value)`: the recording is valid while every `current()` is `value`.
        self.guards = guards
        # The result's shape: ("one", part), or (tuple or list, [parts]); a part is
        # ("arg", position), ("out", index into the replay's outputs) or ("value", v).
        self.result = result
        self.changed_inputs = native.changed_inputs
        # Whether a replay writes arrays that exist before it (not only ones it makes).
        self.writes_arrays = bool(self.changed_inputs or native.changed_held)


class _Traced:
    """A traced function (see ``trace``)."""

    def __init__(self, fn):
        self._fn = fn
        # Recordings by signature; a string where the function cannot be replayed.
        self._recorded = {}
        self._full = False
        self._warned = set()
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if _state.recording:
            return self._fn(*args, **kwargs)  # inside another recording: part of it
        signature = _signature(args, kwargs)
        if type(signature) is str:
            self._warn(signature)
            return self._fn(*args, **kwargs)
        key, inputs, natives = signature
        recorded = self._recorded.get(key)
        if recorded is None and not self._full and len(self._recorded) >= MAX_RECORDINGS:
            self._full = True
            self._warn(f"it was called with {MAX_RECORDINGS} different signatures (shapes, "
                       "dtypes or Python values); new ones run untraced")
        if type(recorded) is str or recorded is None and self._full:
            return self._fn(*args, **kwargs)
        if natives is None:
            natives = _deferred(inputs)
            if type(natives) is str:
                self._warn(natives)
                return self._fn(*args, **kwargs)
        if recorded is None:
            return self._record(key, args, kwargs, natives)
        if recorded.guards and not _valid(recorded.guards):
            # What the recorded tasks used besides arrays changed (a sparse matrix's arrays
            # were written): record again.
            del self._recorded[key]
            return self._record(key, args, kwargs, natives)
        if recorded.writes_arrays and _dnp._lazy_selections:
            # Selections taken before a write keep the elements they had (as a plain write
            # would leave them).
            _dnp._compact_lazy_selections()
        outputs = recorded.native.replay(natives)
        if outputs is not None:
            return self._result(recorded, inputs, outputs, args)
        # An argument is an array the recording holds on its own (one the function reached
        # other than through its arguments): only the function knows what then.
        return self._fn(*args, **kwargs)

    def _warn(self, why):
        """Warns that a call runs untraced because of ``why`` (once per reason)."""
        if why in self._warned:
            return
        self._warned.add(why)
        name = getattr(self._fn, "__qualname__", repr(self._fn))
        _warnings.warn_at_caller(f"diffuse.trace: {name} runs untraced: {why}")

    def _record(self, key, args, kwargs, natives):
        if _dnp._lazy_selections:
            # Selections taken before the call are compacted before it (reading their
            # counts), not while recording: a write would do it, and the read would make the
            # recording unreplayable.
            _dnp._compact_lazy_selections()
        try:
            _native.start_recording(natives)
        except ValueError:  # another thread is recording on the runtime
            return self._fn(*args, **kwargs)
        limit = _state.eager_limit
        # Arrays the function makes are diffuse's own while it is recorded.
        _state.recording, _state.eager_limit, _state.recording_guards = True, 0, []
        try:
            result = self._fn(*args, **kwargs)
        except BaseException:
            _native.finish_recording([])
            raise
        finally:
            guards = _state.recording_guards
            _state.recording, _state.eager_limit, _state.recording_guards = False, limit, []
        template, outputs, why = _result_template(result, args)
        native, reason = _native.finish_recording([o._a for o in outputs])
        why = why or reason
        if why is None:
            self._recorded[key] = _Recorded(native, template, guards)
        else:
            self._recorded[key] = why
            self._warn(why)
        return result

    def _result(self, recorded, inputs, outputs, args):
        """The result of a replay that gave the native arrays ``outputs``."""
        if _errstate.eager:
            # An error state that raises (or calls) applies at the call, as at an operation.
            _errstate.settle()
        outputs = [_ndarray(o) for o in outputs]
        if _layout._watched:
            # Strided views of what the replay wrote gather their elements again.
            for i in recorded.changed_inputs:
                _layout.written(inputs[i]._a.store_id)
            for store_id in recorded.native.changed_held:
                _layout.written(store_id)
        kind, parts = recorded.result
        if kind == "one":
            return _part(parts, args, outputs)
        return kind(_part(p, args, outputs) for p in parts)


def _valid(guards):
    """Whether every ``current()`` of ``guards`` is still its recorded value."""
    return all(current() is value for current, value in guards)


def _signature(args, kwargs):
    """``(key, arrays, natives)`` for a call: a key of everything recorded tasks may depend on,
    the arrays among the arguments, and their native arrays (None when some are small arrays
    NumPy holds: ``_deferred`` makes them deferred, which only a call that records or
    replays does); or, as a string, why the call cannot be recorded or replayed. A small array
    NumPy holds is keyed by its dtype, shape and which arguments are it."""
    items = (*args, *kwargs.values()) if kwargs else args
    arrays = []
    natives = []
    values = []
    eager = None
    for i, a in enumerate(items):
        t = type(a)
        if t is _ndarray:
            arrays.append(a)
            natives.append(a._a)
            values.append(None)
        elif t is _Eager:
            if eager is None:
                eager = []
            first = next((k for k, e in enumerate(eager) if e is a), len(eager))
            eager.append(a)
            arrays.append(a)
            values.append((_Eager, a._h.dtype.str, a._h.shape, first))
        elif t is float:
            values.append((float, a.hex()))
        elif t in _VALUE_TYPES:
            values.append((t, a))
        elif isinstance(a, _ndarray):
            return f"argument {i} is a {t.__name__.lstrip('_')} array"
        else:
            return f"argument {i} is a {t.__name__}"
    key = (tuple(values), tuple(kwargs), _native.replay_signature(natives))
    return key, arrays, (natives if eager is None else None)


def _deferred(arrays):
    """The native arrays of ``arrays`` (a call's array arguments), the small ones NumPy holds
    made deferred in place; or, as a string, why one cannot be."""
    for i, a in enumerate(arrays):
        if type(a) is _Eager and not _dnp._defer_in_place(a):
            return f"array argument {i} is a small array NumPy holds whose elements other " \
                   "NumPy arrays share (views of it)"
    return [a._a for a in arrays]


def _result_template(result, args):
    """``(template, arrays, why)``: how to rebuild ``result`` from a replay, the arrays in it
    that the replay makes, and why it cannot be replayed (None when it can)."""
    outputs = []

    def part(x):
        if type(x) is _ndarray:
            for i, a in enumerate(args):
                if a is x:
                    return ("arg", i), None
            for k, o in enumerate(outputs):
                if o is x:  # (returned twice: one array twice on replay too)
                    return ("out", k), None
            outputs.append(x)
            return ("out", len(outputs) - 1), None
        if isinstance(x, _ndarray):
            return None, f"it returns a {type(x).__name__.lstrip('_')} array"
        if type(x) is float or type(x) in _VALUE_TYPES:
            return ("value", x), None
        return None, f"it returns a {type(x).__name__}"

    t = type(result)
    if t is tuple or t is list:
        parts = []
        for x in result:
            p, why = part(x)
            if why is not None:
                return None, [], why
            parts.append(p)
        return (t, parts), outputs, None
    p, why = part(result)
    return ("one", p), outputs, why


def _part(part, args, outputs):
    """One part of a replay's result (see ``_Recorded``)."""
    kind, value = part
    if kind == "arg":
        return args[value]
    if kind == "out":
        return outputs[value]
    return value
