"""Programs written for NumPy/SciPy run on diffuse with only the import changed and give
NumPy's results: the project's own peers (benches/peers) and classic snippets."""

import json
import pathlib
import subprocess
import sys

import numpy
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(*args):
    out = subprocess.run([sys.executable, *map(str, args)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("app", ["stencil --n 200 --iters 4", "black-scholes --n 50000 --iters 2",
                                 "black-scholes-poly --n 50000 --iters 2",
                                 "jacobi --n 200 --iters 4", "cfd --n 41 --iters 3"])
def test_numpy_peers_give_numpys_results(app):
    script = ROOT / "benches/peers/numpy_apps.py"
    want = run(script, *app.split(), "--module", "numpy")
    got = run(script, *app.split(), "--module", "diffuse")
    assert got["checksum"] == pytest.approx(want["checksum"], rel=1e-12)


@pytest.mark.parametrize("method, n", [("cg", 30), ("bicgstab", 30), ("cgs", 30), ("gmg", 31)])
def test_scipy_solver_peer_gives_scipys_results(method, n):
    script = ROOT / "benches/peers/scipy_solvers.py"
    want = run(script, method, "--n", n, "--module", "scipy")
    got = run(script, method, "--n", n, "--module", "diffuse")
    assert got["info"] == want["info"] == 0
    assert abs(got["iterations"] - want["iterations"]) <= 3, (got, want)
    assert got["check"] < 1e-8


@pytest.mark.parametrize("program", ["classic", "native"])
def test_snippets_give_numpys_results(program):
    """`classic` may fall back to NumPy for some functions; `native` must not (its
    diffuse run turns fallback warnings into errors)."""
    script = pathlib.Path(__file__).parent / f"programs/{program}.py"
    want, got = run(script, "numpy"), run(script, "diffuse")
    assert want.keys() == got.keys()
    for key in want:
        numpy.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=1e-12, err_msg=key)
