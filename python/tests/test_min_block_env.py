"""DIFFUSE_MIN_BLOCK: an operation gives each processor at least that many elements, so small
arrays run on fewer points (one below it) and large ones on every processor; `1` splits
everything; a value that is not a positive count is refused by name. Results are the same
whichever points run them."""

import json

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _isolated import run_isolated  # noqa: E402

CODE = """
import json
import diffuse.numpy as np
import diffuse._native as native
try:
    def points_per_task(n):
        x = np.arange(float(n))
        float(x[0])
        before = native.runtime_stats()
        y = x * 2.0 + 1.0
        total = float(y.sum())
        after = native.runtime_stats()
        tasks = after["tasks_executed"] - before["tasks_executed"]
        points = after["points_executed"] - before["points_executed"]
        return points / tasks, total
    small, small_total = points_per_task(1000)
    large, large_total = points_per_task(100_000)
except RuntimeError as e:
    print("RuntimeError:", e)
else:
    print(json.dumps({"small": small, "large": large, "totals": [small_total, large_total]}))
"""


def run_with_min_block(value):
    return run_isolated(CODE, env={"DIFFUSE_PROCS": "2", "DIFFUSE_BACKEND": "embedded",
                                   "DIFFUSE_EAGER_ELEMENTS": "0", "DIFFUSE_MIN_BLOCK": value})


def test_small_operations_run_on_one_point_by_default_and_large_ones_on_every_processor():
    runs = {}
    for value in (None, "1"):
        proc = run_with_min_block(value)
        assert proc.returncode == 0, proc.stderr
        runs[value] = json.loads(proc.stdout)
    assert runs[None]["small"] == 1.0, runs
    assert runs[None]["large"] == 2.0, runs
    assert runs["1"]["small"] == 2.0 and runs["1"]["large"] == 2.0, runs
    assert runs[None]["totals"] == runs["1"]["totals"] == [1000.0 ** 2, 100_000.0 ** 2]


def test_a_value_that_is_not_a_positive_count_is_refused_by_name():
    for value in ("0", "many"):
        proc = run_with_min_block(value)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.strip()
        assert out == (f"RuntimeError: DIFFUSE_MIN_BLOCK={value}: expected a number of "
                       "elements, at least 1"), out
