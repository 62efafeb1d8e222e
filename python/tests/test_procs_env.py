"""DIFFUSE_PROCS past what the machine runs is refused when the runtime starts, with one
error naming the variable, its value and the limit (it used to start one thread per
processor and never finish)."""

import os
import subprocess
import sys
import tempfile

CODE = """
import diffuse.numpy as np
try:
    np.arange(4.0).sum()
except RuntimeError as e:
    print("RuntimeError:", e)
else:
    print("started")
"""


def run_with_procs(value):
    env = dict(os.environ, DIFFUSE_PROCS=value, DIFFUSE_BACKEND="embedded")
    return subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          timeout=120, env=env, check=False, cwd=tempfile.gettempdir())


def test_too_many_processors_are_refused_by_name():
    proc = run_with_procs("100000")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    assert out.startswith("RuntimeError: DIFFUSE_PROCS 100000 is more than the "), out
    assert "processors the embedded backend runs on this machine" in out, out


def test_a_count_within_the_limit_starts():
    proc = run_with_procs("2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "started", proc.stdout
