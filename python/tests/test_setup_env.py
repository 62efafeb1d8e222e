"""The Python package is set up by the same settings as the apps' flags, each read from the
``DIFFUSE_*`` variable named after its flag (``diffuse::Setup``): a variable the apps share
takes effect here (``DIFFUSE_WINDOW``, ``DIFFUSE_MAPPER``), and a value a setting does not
take is a RuntimeError naming the variable, its value and what it takes."""

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
    x = np.arange(4096.0)
    for _ in range(8):
        x = x * 0.5 + 1.0
    total = float(x.sum())
except RuntimeError as e:
    print("RuntimeError:", e)
else:
    print(json.dumps({"total": total, **native.runtime_stats()}))
"""

BASE = {"DIFFUSE_BACKEND": "embedded", "DIFFUSE_EAGER_ELEMENTS": "0", "DIFFUSE_JIT": "off"}


def run_with(**env):
    proc = run_isolated(CODE, env={**BASE, **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_settings_the_apps_share_take_effect():
    default = json.loads(run_with())
    # A window of one task runs every operation as submitted: nothing fuses.
    one = json.loads(run_with(DIFFUSE_WINDOW="1"))
    assert one["total"] == default["total"]
    assert one["tasks_executed"] > default["tasks_executed"], (one, default)
    off = json.loads(run_with(DIFFUSE_FUSION="off"))
    assert off["tasks_executed"] == one["tasks_executed"], (off, one)


def test_a_mapper_file_from_the_environment_places_tasks(tmp_path):
    mapper = tmp_path / "cpus.mapple"
    mapper.write_text("Task * CPU;\n")
    placed = json.loads(run_with(DIFFUSE_MAPPER=str(mapper)))
    assert placed["total"] == json.loads(run_with())["total"]
    missing = run_with(DIFFUSE_MAPPER=str(tmp_path / "absent.mapple"))
    assert missing.startswith("RuntimeError: reading the mapper "), missing
    assert "absent.mapple" in missing, missing


def test_a_value_a_setting_does_not_take_is_refused_by_name():
    for name, value, reason in [
        ("DIFFUSE_FUSION", "maybe", "expected `on` or `off`"),
        ("DIFFUSE_WINDOW", "0", "at least 1"),
        ("DIFFUSE_MEMORY_LIMIT", "lots", "is not a byte count"),
        ("DIFFUSE_BACKEND", "mpi", "the backends are `embedded` and `legion`"),
    ]:
        out = run_with(**{name: value})
        assert out.startswith(f"RuntimeError: {name}={value}: "), out
        assert reason in out, out
