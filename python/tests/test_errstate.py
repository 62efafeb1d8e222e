"""Floating-point errors follow NumPy's error state: the same warnings, exceptions, calls,
prints and log lines as NumPy, for every category and mode, in fused windows, through
``errstate`` (nested, as a decorator), ``seterr`` and ``seterrcall``; and programs NumPy runs
silently stay silent."""

import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy
import pytest

import diffuse.numpy as dnp

sys.path.insert(0, os.path.dirname(__file__))
from _isolated import run_isolated  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]

# One computation per category, written once for both modules: `m` is numpy or diffuse.numpy.
CASES = {
    "divide": lambda m: m.ones(8) / m.zeros(8),
    "over": lambda m: m.full(8, 1e300) * m.full(8, 1e300),
    "under": lambda m: m.full(8, 1e-300) * m.full(8, 1e-300),
    "invalid": lambda m: m.zeros(8) / m.zeros(8),
    "invalid-sqrt": lambda m: m.sqrt(-m.ones(8)),
    "over-exp": lambda m: m.exp(m.full(8, 1000.0)),
    # `(a / 0) * 2 + 1`: three operations in one window, fused (and compiled).
    "fused-chain": lambda m: (m.ones(4096) / m.zeros(4096)) * 2.0 + 1.0,
    "int-floor_divide": lambda m: m.arange(8) // m.zeros(8, dtype="int64"),
    "int-remainder": lambda m: m.arange(8) % m.zeros(8, dtype="int64"),
}
CATEGORY = {"divide": "divide", "over": "over", "under": "under", "invalid": "invalid",
            "invalid-sqrt": "invalid", "over-exp": "over",
            "fused-chain": "divide", "int-floor_divide": "divide",
            "int-remainder": "divide"}


class Log:
    def __init__(self):
        self.lines = []

    def write(self, line):
        self.lines.append(line)


def observe(m, case, mode, capfd):
    """What running ``case`` on module ``m`` under ``errstate(category=mode)`` does: the
    warnings, the exception, the 'call' calls, the 'print' output and the 'log' lines."""
    calls, log = [], Log()
    handler = log if mode == "log" else (lambda text, flag: calls.append((text, flag)))
    old = numpy.seterrcall(handler)
    error = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with m.errstate(**{CATEGORY[case]: mode}):
                try:
                    numpy.asarray(CASES[case](m))
                except FloatingPointError as e:
                    error = str(e)
    finally:
        numpy.seterrcall(old)
    printed = capfd.readouterr().err
    return {
        "warnings": [(w.category, str(w.message)) for w in caught],
        "error": error,
        "calls": calls,
        "printed": printed,
        "log": log.lines,
    }


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore", "call", "print", "log"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_category_and_mode_does_what_numpy_does(case, mode, capfd):
    want = observe(numpy, case, mode, capfd)
    got = observe(dnp, case, mode, capfd)
    assert got == want


def test_the_defaults_warn_except_for_underflow():
    assert dnp.geterr() == numpy.geterr() == {
        "divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}
    x = dnp.ones(3)
    with pytest.warns(RuntimeWarning, match="divide by zero encountered in divide"):
        numpy.asarray(x / 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        numpy.asarray(dnp.full(3, 1e-300) * 1e-300)


def test_raise_happens_at_the_operation():
    x = dnp.ones(8)
    y = None
    with dnp.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in divide"):
            y = x / 0
        assert y is None
        # Later operations run on.
        z = x + 1
    assert numpy.asarray(z).tolist() == [2.0] * 8


def test_work_pending_at_entry_is_judged_under_the_outer_state():
    x = dnp.ones(8)
    y = x / 0  # pending: diffuse has not run it yet
    with pytest.warns(RuntimeWarning, match="divide by zero encountered in divide"):
        with dnp.errstate(divide="ignore"):
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        numpy.asarray(y)  # already reported
        with dnp.errstate(divide="ignore"):
            w = x / 0
        numpy.asarray(w)  # ran under 'ignore' when the block ended


def test_nested_errstate_and_the_decorator():
    x = dnp.ones(8)
    with dnp.errstate(divide="raise"):
        with dnp.errstate(divide="ignore"):
            numpy.asarray(x / 0)
        with pytest.raises(FloatingPointError):
            numpy.asarray(x / 0)
    assert dnp.geterr()["divide"] == "warn"

    @dnp.errstate(all="raise")
    def f(v):
        return numpy.asarray(v / 0)

    for _ in range(2):
        with pytest.raises(FloatingPointError):
            f(x)
    assert dnp.geterr()["divide"] == "warn"


def test_seterr_sets_and_returns_the_old_state():
    x = dnp.ones(8)
    old = dnp.seterr(divide="raise", invalid="ignore")
    try:
        assert old == {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}
        assert dnp.geterr()["divide"] == numpy.geterr()["divide"] == "raise"
        with pytest.raises(FloatingPointError, match="divide by zero encountered in divide"):
            x / 0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            numpy.asarray((x - 1) / 0)  # 0/0: invalid, ignored
    finally:
        dnp.seterr(**old)
    assert dnp.geterr() == old


def test_seterrcall_routes_calls():
    seen = []
    old = dnp.seterrcall(lambda text, flag: seen.append((text, flag)))
    try:
        with dnp.errstate(over="call"):
            numpy.asarray(dnp.full(4, 1e300) * 1e300)
    finally:
        dnp.seterrcall(old)
    assert seen == [("overflow", 2)]


def test_operations_numpy_keeps_quiet_on_nan_stay_quiet():
    a = numpy.array([numpy.nan, 1.0, -numpy.inf, 0.0] * 64)
    d = dnp.asarray(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with numpy.errstate(all="raise"):
            want = [a < 1, a >= 0, numpy.maximum(a, 0), numpy.minimum(a, 0), a.max(), a.min(),
                    numpy.isnan(a), numpy.sign(a), numpy.exp(a) * 1.5, numpy.clip(a, 0, 1)]
        got = [d < 1, d >= 0, dnp.maximum(d, 0), dnp.minimum(d, 0), d.max(), d.min(),
               dnp.isnan(d), dnp.sign(d), dnp.exp(d) * 1.5, dnp.clip(d, 0, 1)]
        for g, w in zip(got, want):
            numpy.testing.assert_array_equal(numpy.asarray(g), w)


def test_reduction_overflow_warns_like_numpy():
    a = numpy.full(16, 1e308)
    with pytest.warns(RuntimeWarning, match="overflow encountered in reduce"):
        want = a.sum()
    with pytest.warns(RuntimeWarning, match="overflow encountered in reduce"):
        got = float(dnp.asarray(a).sum())
    assert got == want


def fp_warnings(stderr):
    """The floating-point warnings in a program's stderr (without locations)."""
    return sorted({line.split("RuntimeWarning: ", 1)[1] for line in stderr.splitlines()
                   if "RuntimeWarning:" in line and "encountered in" in line})


def run(*args, env=None):
    # From the repository root: `-c` scripts import the installed package, not python/.
    out = subprocess.run([sys.executable, "-W", "always", *map(str, args)], check=True,
                         capture_output=True, text=True, env=env, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1]), fp_warnings(out.stderr)


PROGRAMS = [
    ("benches/peers/numpy_apps.py", "stencil --n 200 --iters 4"),
    ("benches/peers/numpy_apps.py", "black-scholes --n 50000 --iters 2"),
    ("benches/peers/numpy_apps.py", "black-scholes-poly --n 50000 --iters 2"),
    ("benches/peers/numpy_apps.py", "jacobi --n 200 --iters 4"),
    ("benches/peers/numpy_apps.py", "cfd --n 41 --iters 3"),
    ("benches/peers/scipy_solvers.py", "cg --n 30"),
    ("benches/peers/scipy_solvers.py", "gmg --n 31"),
]


@pytest.mark.parametrize("script, args", PROGRAMS)
def test_programs_warn_exactly_when_numpy_does(script, args):
    peer = "scipy" if "scipy" in script else "numpy"
    _, want = run(ROOT / script, *args.split(), "--module", peer)
    _, got = run(ROOT / script, *args.split(), "--module", "diffuse")
    assert got == want == []


@pytest.mark.parametrize("program", ["classic", "native"])
def test_snippets_warn_exactly_when_numpy_does(program):
    script = pathlib.Path(__file__).parent / f"programs/{program}.py"
    _, want = run(script, "numpy")
    _, got = run(script, "diffuse")
    assert got == want


SCRIPT = """
import json, warnings, numpy
import diffuse.numpy as np
warnings.simplefilter("always")
out = {}
with warnings.catch_warnings(record=True) as w:
    numpy.asarray((np.ones(4096) / np.zeros(4096)) * 2.0 + 1.0)
    numpy.asarray(np.arange(8) // np.zeros(8, dtype="int64"))
out["warnings"] = [str(x.message) for x in w]
with np.errstate(divide="raise"):
    try:
        np.ones(8) / 0
    except FloatingPointError as e:
        out["raised"] = str(e)
print(json.dumps(out))
"""


@pytest.mark.parametrize("fusion", ["on", "off"])
def test_fusion_off_and_on_report_the_same(fusion):
    env = dict(os.environ, DIFFUSE_FUSION=fusion)
    got, _ = run("-c", SCRIPT, env=env)
    assert got == {
        "warnings": ["divide by zero encountered in divide",
                     "divide by zero encountered in floor_divide"],
        "raised": "divide by zero encountered in divide",
    }


ATTRIBUTION = """
import json, warnings
import diffuse.numpy as np
import diffuse._native as native
x = np.arange(64.0) - 32.0
y = np.arange(64.0) % 4.0
def chain():
    return float(((x * 2.0 + 1.0) / y).max())
with np.errstate(divide="ignore", invalid="ignore"):
    chain()  # compiles the fused kernel (DIFFUSE_JIT=sync)
    before = native.runtime_stats()
    chain()
ignored = native.runtime_stats()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    chain()
warned = native.runtime_stats()
print(json.dumps({
    "ignored_compiled": ignored["compiled_points"] - before["compiled_points"],
    "ignored_reruns": ignored["strip_points"] - before["strip_points"],
    "warned_compiled": warned["compiled_points"] - ignored["compiled_points"],
    "messages": sorted({str(w.message) for w in caught}),
}))
"""


def test_ignored_exceptions_of_fused_kernels_cost_no_second_run():
    """A compiled fused kernel that divides by zero runs its points again natively only to
    say which operation raised, which matters only where the error state reports it: under
    ``errstate(divide="ignore")`` it runs once; under the default it is attributed and the
    warning names the division."""
    proc = run_isolated(ATTRIBUTION, env={"DIFFUSE_JIT": "sync", "DIFFUSE_BACKEND": "embedded",
                                          "DIFFUSE_PROCS": "2", "DIFFUSE_EAGER_ELEMENTS": "0"})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["ignored_compiled"] >= 1 and got["ignored_reruns"] == 0, got
    # Attributed: every point ran again natively, so none counts as a compiled run.
    assert got["warned_compiled"] == 0, got
    assert got["messages"] == ["divide by zero encountered in divide"], got
