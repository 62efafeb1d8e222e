"""DIFFUSE_GPU=1 places every task on a GPU where the backend has one (the apps' --gpu):
results equal NumPy's on the simulated GPU (DIFFUSE_DEVICE=sim), a backend without a GPU
warns and computes on the CPU, and a value that is neither on nor off is refused by name."""

import os
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _isolated import death  # noqa: E402

CODE = """
import numpy as onp
import diffuse.numpy as np
n = 100_000
a_host = onp.linspace(-1.0, 1.0, n)
b_host = onp.cos(onp.arange(n) * 0.001)
try:
    c = np.asarray(a_host) + np.asarray(b_host) * 2
    total = float(c.sum())
    values = onp.asarray(c)
except RuntimeError as e:
    print("RuntimeError:", e)
else:
    want = a_host + b_host * 2
    print("elements", "equal" if onp.array_equal(values, want) else "differ")
    print("sum", "close" if onp.isclose(total, want.sum(), rtol=1e-12, atol=0) else
          f"differs: {total} vs {want.sum()}")
"""


# Complex work mixed with real work (complex kinds run on the host, real ones compiled for
# the device, fused together), and a complex reduction.
COMPLEX_CODE = """
import numpy as onp
import diffuse.numpy as np
n = 100_000
z_host = onp.exp(1j * onp.linspace(0.0, 6.0, n)) * onp.linspace(1.0, 2.0, n)
z = np.asarray(z_host)
w = np.abs(z * z + 1j) + z.real * 2
total = complex((z * z.conj()).sum())
values = onp.asarray(w)
want = onp.abs(z_host * z_host + 1j) + z_host.real * 2
print("elements", "equal" if onp.array_equal(values, want) else "differ")
print("sum", "close" if onp.isclose(total, (z_host * z_host.conj()).sum(), rtol=1e-12,
                                   atol=0) else "differs")
"""


def run(code=CODE, **env):
    """Runs ``code`` in a fresh interpreter with ``env`` added to the environment."""
    full = dict(os.environ, **env)
    full.pop("DIFFUSE_PROCS", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=full, check=False, cwd=tempfile.gettempdir())


def assert_numpy_results(proc):
    assert death(proc) is None and proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stdout.split("\n")[:2] == ["elements equal", "sum close"], (proc.stdout,
                                                                             proc.stderr)


def test_a_computation_on_the_simulated_gpu_gives_numpys_results():
    for value in ("1", "on"):
        proc = run(DIFFUSE_DEVICE="sim", DIFFUSE_GPU=value, DIFFUSE_BACKEND="embedded")
        assert_numpy_results(proc)


def test_complex_work_on_the_simulated_gpu_gives_numpys_results_without_a_warning():
    proc = run(COMPLEX_CODE, DIFFUSE_DEVICE="sim", DIFFUSE_GPU="1", DIFFUSE_BACKEND="embedded")
    assert_numpy_results(proc)
    assert "warning" not in proc.stderr.lower(), proc.stderr


def test_gpu_off_computes_on_the_cpu_without_a_warning():
    for value in ("0", "off"):
        proc = run(DIFFUSE_DEVICE="sim", DIFFUSE_GPU=value, DIFFUSE_BACKEND="embedded")
        assert_numpy_results(proc)
        assert "warning" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("backend", [
    # The embedded backend without a device.
    {"DIFFUSE_BACKEND": "embedded", "DIFFUSE_DEVICE": "none"},
    # The Legion backend's point task has no GPU variant: it never offers a GPU.
    {"DIFFUSE_BACKEND": "legion"},
])
def test_a_backend_without_a_gpu_warns_and_computes_on_the_cpu(backend):
    proc = run(DIFFUSE_GPU="1", **backend)
    assert_numpy_results(proc)
    assert "warning: DIFFUSE_GPU is on but the backend has no GPU" in proc.stderr, proc.stderr


def test_a_bad_value_is_refused_naming_the_variable():
    proc = run(DIFFUSE_GPU="yes please", DIFFUSE_BACKEND="embedded")
    assert death(proc) is None and proc.returncode == 0, (proc.returncode, proc.stderr)
    out = proc.stdout.strip()
    assert out.startswith("RuntimeError: DIFFUSE_GPU=yes please: expected `1` or `on`"), out
