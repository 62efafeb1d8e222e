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
