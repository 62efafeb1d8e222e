"""Fuzz: the Python constructors (diffuse.numpy's array creation and random numbers,
diffuse.sparse's matrices in all their forms) with extreme arguments (huge and negative
shapes, 2**63, NaN, infinities, wrong types, ragged lists, empty sizes), and matrices
whose arrays are then assigned or written with them, either build what they were asked
for or raise a Python exception: the process never dies (a signal, an
abort, a Rust panic) and never hangs.

The cases run in child processes whose address space is limited (``FUZZ_MEMORY``), so a
huge allocation fails there, as it would on a full machine, instead of exhausting this one.
Each result is read back (or multiplied, for a matrix), so that lazy work runs inside its
case. A short run is part of the suite; ``DIFFUSE_FUZZ_CASES=20000`` (and another
``DIFFUSE_FUZZ_SEED``) runs longer, e.g.
``DIFFUSE_FUZZ_CASES=20000 DIFFUSE_FUZZ_SEED=7 pytest tests/test_fuzz_constructors.py``."""

import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _isolated import death, run_isolated  # noqa: E402

CASES = int(os.environ.get("DIFFUSE_FUZZ_CASES", "300"))
SEED = int(os.environ.get("DIFFUSE_FUZZ_SEED", "0"))
# Cases per child process, and the address space of each.
BATCH = 500
FUZZ_MEMORY = 3 << 30

# Extreme and ordinary values, as source text.
SCALARS = ["0", "1", "3", "-1", "-7", "2**26", "2**31", "2**32 + 1", "2**62", "2**63 - 1",
           "2**63", "-2**63", "-2**63 - 1", "2**64", "10**30", "2.5", "-0.0", "1e300", "5e-324",
           "nan", "inf", "-inf", "True", "None", "'3'", "'abc'", "b'x'", "1j",
           "numpy.int64(5)", "numpy.uint64(2**64 - 1)", "numpy.float32(3.5)",
           "numpy.int8(-3)", "object()"]
SMALL = ["0", "1", "2", "3", "5"]
DTYPES = ["None", "float", "int", "bool", "'float32'", "'int32'", "'int8'", "'uint64'",
          "complex", "'S3'", "object", "'bogus'", "numpy.float16", "'M8[s]'"]
DATA = ["[]", "[[]]", "[[[]]]", "[1, 2]", "[[1, 2], [3]]", "[[1], [2, 3]]", "[1, [2]]",
        "[nan, inf, -inf]", "[2**63]", "[2**64]", "[-2**63 - 1]", "['a', 1]", "[None]",
        "[1j]", "[[1.5, -2.0], [0.0, 4.0]]", "[True, False]", "numpy.arange(6.0)",
        "numpy.arange(6).reshape(2, 3)", "numpy.zeros((0, 3))", "numpy.zeros((2, 0, 2))",
        "numpy.array(5)", "numpy.array([1 + 2j])", "numpy.ones(3, dtype='M8[s]')",
        "numpy.arange(4, dtype=numpy.uint64)", "numpy.arange(4, dtype=numpy.int16)",
        "numpy.float32([1.5, 2.5])", "numpy.ones((2, 2, 2))", "numpy.array([[1, 0], [0, 1]])",
        "numpy.array([0, 2, 1, 3])", "numpy.array([-1, 5])", "numpy.array([0.5, 1.0])",
        "numpy.array([0, 1, 2**62])"]


def _shape(rng):
    """A shape: an extreme scalar, a tuple of one to three of them, or a list."""
    pick = rng.random()
    if pick < 0.3:
        return rng.choice(SCALARS)
    dims = [rng.choice(SCALARS if rng.random() < 0.5 else SMALL)
            for _ in range(rng.randint(0, 3))]
    if pick < 0.9:
        return "(" + "".join(f"{d}, " for d in dims) + ")"
    return "[" + ", ".join(dims) + "]"


def _value(rng):
    return rng.choice(SCALARS if rng.random() < 0.7 else SMALL)


def _dtype(rng):
    return rng.choice(DTYPES)


# Constructor calls: each a function of the random source giving source text.
TEMPLATES = [
    lambda r: f"dnp.array({rng_data(r)})",
    lambda r: f"dnp.array({rng_data(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.asarray({rng_data(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.zeros({_shape(r)})",
    lambda r: f"dnp.zeros({_shape(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.ones({_shape(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.empty({_shape(r)})",
    lambda r: f"dnp.full({_shape(r)}, {_value(r)})",
    lambda r: f"dnp.full({_shape(r)}, {_value(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.arange({_value(r)})",
    lambda r: f"dnp.arange({_value(r)}, {_value(r)})",
    lambda r: f"dnp.arange({_value(r)}, {_value(r)}, {_value(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.linspace({_value(r)}, {_value(r)}, {_value(r)})",
    lambda r: f"dnp.linspace({_value(r)}, {_value(r)}, {_value(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.eye({_value(r)})",
    lambda r: f"dnp.eye({_value(r)}, {_value(r)}, {_value(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.identity({_value(r)}, dtype={_dtype(r)})",
    lambda r: f"dnp.random.random({_shape(r)})",
    lambda r: f"dnp.random.rand({_value(r)}, {_value(r)})",
    lambda r: f"dnp.random.randint({_value(r)}, {_value(r)}, {_shape(r)})",
    lambda r: f"dnp.random.normal({_value(r)}, {_value(r)}, {_shape(r)})",
    lambda r: f"dnp.random.default_rng({_value(r)}).random({_shape(r)})",
    lambda r: f"dnp.random.default_rng(1).uniform({_value(r)}, {_value(r)}, {_shape(r)})",
    lambda r: f"dsp.csr_matrix({rng_data(r)})",
    lambda r: f"dsp.csr_matrix(({_value(r)}, {_value(r)}))",
    lambda r: f"dsp.csr_matrix({rng_data(r)}, shape={_shape(r)})",
    lambda r: f"dsp.csr_matrix({rng_data(r)}, dtype={_dtype(r)})",
    lambda r: (f"dsp.csr_matrix(({rng_data(r)}, {rng_data(r)}, {rng_data(r)}), "
               f"shape={_shape(r)})"),
    lambda r: f"dsp.csr_matrix(({rng_data(r)}, {rng_data(r)}, {rng_data(r)}))",
    lambda r: (f"dsp.csr_matrix(({rng_data(r)}, ({rng_data(r)}, {rng_data(r)})), "
               f"shape={_shape(r)})"),
    lambda r: f"dsp.csr_matrix(scipy.sparse.random({_value(r)}, {_value(r)}, density=0.3))",
    lambda r: f"dsp.eye({_value(r)})",
    lambda r: f"dsp.eye({_value(r)}, {_value(r)}, {_value(r)})",
    lambda r: f"dsp.identity({_value(r)})",
    lambda r: f"dsp.diags({rng_data(r)}, {_value(r)})",
    lambda r: f"dsp.diags({rng_data(r)}, {_value(r)}, shape={_shape(r)})",
    lambda r: f"dsp.random({_value(r)}, {_value(r)}, density={_value(r)})",
    # A matrix whose arrays are then assigned, or written into, with extreme values.
    lambda r: f"assigned(dsp.eye(3), {r.choice(ATTRIBUTES)}, {rng_data(r)})",
    lambda r: f"assigned(dsp.eye(3), 'shape', {_shape(r)})",
    lambda r: f"written(dsp.eye(3), {r.choice(ATTRIBUTES)}, {r.randint(-1, 3)}, {_value(r)})",
]
ATTRIBUTES = ["'data'", "'indices'", "'indptr'"]


def rng_data(rng):
    return rng.choice(DATA if rng.random() < 0.8 else SCALARS)


def cases(count, seed):
    """``count`` constructor calls as source text, the same for the same seed."""
    rng = random.Random(seed)
    return [rng.choice(TEMPLATES)(rng) for _ in range(count)]


# The child: runs each case, prints it first (so that a death names it), reads its result
# back, and reports each Python exception's type.
CHILD = """
import json, sys, warnings
from math import inf, nan
import numpy, scipy.sparse
import diffuse.numpy as dnp
import diffuse.sparse as dsp

warnings.simplefilter("ignore")


def assigned(m, name, value):
    setattr(m, name, value)
    return m


def written(m, name, k, value):
    getattr(m, name)[k] = value
    return m


def touch(result):
    if dsp.issparse(result):
        result = result @ numpy.ones(result.shape[1]) if result.shape[1] <= 10**6 else result
    return numpy.asarray(result)


for case in json.loads(sys.stdin.read()):
    print("case", case, flush=True)
    try:
        touch(eval(case))
        print("ok", flush=True)
    except Exception as e:
        print("raised", type(e).__name__, str(e)[:200].replace(chr(10), " "), flush=True)
print("done", flush=True)
"""


def _last_case(output):
    lines = [line for line in output.splitlines() if line.startswith("case ")]
    return lines[-1][5:] if lines else None


def test_constructors_with_extreme_arguments_never_kill_the_process():
    all_cases = cases(CASES, SEED)
    outcomes = {"ok": 0, "raised": 0}
    for start in range(0, len(all_cases), BATCH):
        batch = all_cases[start:start + BATCH]
        try:
            proc = run_isolated(CHILD, timeout=60 + 2 * len(batch), memory_bytes=FUZZ_MEMORY,
                                stdin=json.dumps(batch))
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
            raise AssertionError(f"hung in case {_last_case(out)!r}") from None
        assert death(proc) is None and proc.returncode == 0, (
            f"{death(proc) or f'exit status {proc.returncode}'} in case "
            f"{_last_case(proc.stdout)!r}:\n{proc.stderr[-3000:]}")
        assert proc.stdout.splitlines()[-1] == "done"
        for line in proc.stdout.splitlines():
            kind = line.split(" ", 1)[0]
            if kind in outcomes:
                outcomes[kind] += 1
    assert sum(outcomes.values()) == len(all_cases)
    print(f"{len(all_cases)} cases (seed {SEED}): {outcomes}")
