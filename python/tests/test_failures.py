"""A failure inside a window of pending operations loses exactly what depends on it: arrays
that do not depend on the failed operation keep the values NumPy gives, and arrays that do
raise the failure's exception when used."""

import numpy as onp
import pytest

import diffuse.numpy as np


def test_an_array_pending_with_a_failed_operation_keeps_its_value():
    x = np.arange(8.0)
    big = np.zeros(10**12) * 2
    with pytest.raises(MemoryError):
        float(big.sum())
    onp.testing.assert_array_equal(onp.asarray(x), onp.arange(8.0))
    # What depends on the failure reports it, now and later.
    with pytest.raises(MemoryError, match="out of memory"):
        onp.asarray(big)
    with pytest.raises(MemoryError):
        onp.asarray(big + 1)
    # Everything else goes on.
    onp.testing.assert_array_equal(onp.asarray(x * 2 + 1), onp.arange(8.0) * 2 + 1)


def test_independent_chains_around_a_failure_are_computed():
    a = np.linspace(0.0, 1.0, 64)
    b = a * 3 - 1
    lost = (np.ones(10**12) + 1) * 2
    c = b * b + a
    with pytest.raises(MemoryError):
        float(lost.sum())
    want_b = onp.linspace(0.0, 1.0, 64) * 3 - 1
    onp.testing.assert_array_equal(onp.asarray(b), want_b)
    onp.testing.assert_array_equal(onp.asarray(c), want_b * want_b + onp.linspace(0.0, 1.0, 64))
