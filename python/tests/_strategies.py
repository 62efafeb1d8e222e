"""Hypothesis strategies the NumPy-comparison tests share."""

import numpy as onp
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# The dtypes diffuse arrays hold.
DTYPES = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]


def small_arrays(draw, min_dims, max_dims):
    """A NumPy array of a random dtype and shape (sides 1 to 6) with small finite values."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1,
                                  max_side=6))
    return draw(hnp.arrays(dtype, shape, elements=hnp.from_dtype(
        onp.dtype(dtype), allow_nan=False, allow_infinity=False, min_value=-100,
        max_value=100) if dtype != onp.bool_ else st.booleans()))
