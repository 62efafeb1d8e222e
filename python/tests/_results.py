"""Comparison of results that may be tuples (a function with several results), shared by the
differential tests."""


def compare_each(got, want, context, compare):
    """When ``want`` is a tuple, asserts that ``got`` is a tuple of the same length, compares
    the two element by element with ``compare(got_i, want_i, context)`` and returns True;
    returns False (comparing nothing) otherwise."""
    if not isinstance(want, tuple):
        return False
    assert isinstance(got, tuple) and len(got) == len(want), context
    for g, w in zip(got, want):
        compare(g, w, context)
    return True


def numpy_and_native(name, x, a, *args, **kwargs):
    """NumPy's ``name`` of ``x`` and diffuse's of ``a`` (a fallback warning fails, NumPy's
    RuntimeWarnings are ignored): ``(want, got)``, or None where NumPy raises, after
    checking that diffuse raises the same exception type."""
    import warnings

    import numpy
    import pytest

    import diffuse.numpy as dnp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        try:
            want = getattr(numpy, name)(x, *args, **kwargs)
        except Exception as e:  # NumPy's exception is the answer
            with pytest.raises(type(e)):
                getattr(dnp, name)(a, *args, **kwargs)
            return None
        return want, getattr(dnp, name)(a, *args, **kwargs)
