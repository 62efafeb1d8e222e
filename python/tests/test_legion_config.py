"""The Legion backend started from Python (DIFFUSE_BACKEND=legion) refuses configurations
Legion cannot run with a RuntimeError naming the setting, its value and the limit; they used
to abort the interpreter (exit status 134) with no message. Processor counts past the cores
run, on one Realm processor per core."""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from _isolated import death  # noqa: E402

CODE = """
import diffuse.numpy as np
try:
    print("sum", float(np.arange(4.0).sum()))
except RuntimeError as e:
    print("RuntimeError:", e)
"""


def run_legion(procs):
    env = dict(os.environ, DIFFUSE_BACKEND="legion", DIFFUSE_PROCS=procs)
    return subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          timeout=300, env=env, check=False, cwd=tempfile.gettempdir())


def test_processors_past_the_cores_and_legions_limit_share_the_cores():
    # Realm runs one CPU processor per core (Legion allows at most 63 in a process); the
    # 64 the launches are split over take turns on them.
    proc = run_legion("64")
    assert death(proc) is None and proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stdout.strip() == "sum 6.0", proc.stdout


def test_no_processor_is_a_runtime_error():
    proc = run_legion("0")
    assert death(proc) is None and proc.returncode == 0, (proc.returncode, proc.stderr)
    out = proc.stdout.strip()
    assert out.startswith("RuntimeError:") and "0" in out, out


def test_a_count_within_the_limits_runs():
    proc = run_legion("1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "sum 6.0", proc.stdout
