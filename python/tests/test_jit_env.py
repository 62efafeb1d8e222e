"""DIFFUSE_JIT picks when fused kernels compile (``background``, the default: the program
never waits for LLVM; ``sync``: the first use waits; ``off``: native kernels only), each
giving the same values, and ``diffuse._native.runtime_stats`` reports what happened; an
unknown value is refused by name. DIFFUSE_KERNEL_CACHE keeps compiled kernels for the next
process, which loads them instead of compiling."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _isolated import run_isolated  # noqa: E402

CODE = """
import json
import diffuse.numpy as np
import diffuse._native as native
try:
    x = np.arange(64.0)
    float(x[0])  # arange runs alone (it has no compiled form)
    for _ in range(20):
        y = (x * 0.01 + 1.0) * x / 3.0 - x  # exact in every mode (no libm)
    total = float(y[5]) + float(y.sum())
except RuntimeError as e:
    print("RuntimeError:", e)
else:
    print(json.dumps({"total": total, **native.runtime_stats()}))
"""


def run_with_jit(value, cache="off"):
    return run_isolated(CODE, env={"DIFFUSE_BACKEND": "embedded", "DIFFUSE_JIT": value,
                                   "DIFFUSE_KERNEL_CACHE": cache})


def test_every_mode_gives_the_same_values_and_reports_its_work():
    import json

    results = {}
    for mode in (None, "background", "sync", "off"):
        proc = run_with_jit(mode)
        assert proc.returncode == 0, proc.stderr
        results[mode] = json.loads(proc.stdout)
    totals = {r["total"] for r in results.values()}
    assert len(totals) == 1, results
    sync = results["sync"]
    assert sync["kernels_compiled"] >= 1 and sync["compile_seconds"] > 0, sync
    assert sync["tasks_submitted"] >= 80 and sync["tasks_executed"] >= 1, sync
    assert "kernels_compiled" not in results["off"], results["off"]


def test_an_unknown_mode_is_refused_by_name():
    proc = run_with_jit("eager")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    assert out.startswith("RuntimeError: DIFFUSE_JIT=eager: expected `background`, `sync` "
                          "or `off`"), out


def test_a_second_process_loads_the_kernels_the_first_kept(tmp_path):
    import json

    cache = str(tmp_path / "kernels")
    first, second = (json.loads(run_with_jit("sync", cache).stdout) for _ in range(2))
    assert first["kernels_compiled"] >= 1 and first["kernels_loaded"] == 0, first
    assert second["kernels_compiled"] == 0, second
    assert second["kernels_loaded"] == first["kernels_compiled"], (first, second)
    assert second["total"] == first["total"]
    assert any(name.endswith(".so") for name in os.listdir(cache))
