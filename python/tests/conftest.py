"""Hypothesis profiles: the default runs the same examples every time (CI must not depend on
luck); `HYPOTHESIS_PROFILE=explore` draws new ones on every run, for hunting bugs. And
diffuse.numpy's one-time fallback warnings start afresh in every test."""

import os

# The tests exercise diffuse's own (deferred) execution on small arrays; test_eager.py turns
# NumPy's eager execution of small arrays on where it tests it. (Set before diffuse loads.)
os.environ.setdefault("DIFFUSE_EAGER_ELEMENTS", "0")
# ... nor moves an array a loop reads piece by piece to NumPy (test_eager.py tests it).
os.environ.setdefault("DIFFUSE_LOOP_ELEMENTS", "0")
# ... and split them over every processor, as large arrays are (test_min_block_env.py tests
# the default, which runs small operations on fewer points).
os.environ.setdefault("DIFFUSE_MIN_BLOCK", "1")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True)
def _fallback_notices_per_test():
    """Each test sees diffuse.numpy's one-time fallback warnings afresh, whatever ran before
    it (the warnings are once per process)."""
    from diffuse import numpy as dnp

    saved = set(dnp._warned)
    dnp._warned.clear()
    yield
    dnp._warned.clear()
    dnp._warned.update(saved)
