"""``einsum`` against NumPy: random subscripts (repeated labels, broadcasting of unit
lengths, ``...``, implicit and explicit outputs, the interleaved sublist form) over deferred
operands and their transposes, natively (a fallback warning fails these tests), with NumPy's
dtypes, shapes and values, and NumPy's exception where NumPy raises."""

import string
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp

DTYPES = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_, onp.complex128]
LETTERS = "abcdE"


def _native(call):
    """``call()`` with a fallback warning as an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        return call()


def _check(got, want):
    assert isinstance(got, dnp.ndarray), type(got)
    got, want = onp.asarray(got), onp.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.dtype.kind == "f":
        tolerance = 1e-5 if want.dtype == onp.float32 else 1e-12
        onp.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    else:
        onp.testing.assert_array_equal(got, want)


def _compare(numpy_args, diffuse_args, **kwargs):
    """diffuse's ``einsum(*diffuse_args)`` is NumPy's ``einsum(*numpy_args)``, or raises
    NumPy's exception; no fallback. Returns diffuse's result (None where NumPy raises)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = onp.einsum(*numpy_args, **kwargs)
    except Exception as e:  # NumPy's exception is the answer
        with pytest.raises(type(e)):
            _native(lambda: dnp.einsum(*diffuse_args, **kwargs))
        return None
    got = _native(lambda: dnp.einsum(*diffuse_args, **kwargs))
    _check(got, want)
    return got


def _operand(draw, dtype, shape):
    """(NumPy array of ``shape`` with small whole values (parts), the same as a deferred diffuse
    array: now and then the transpose of one of the reversed shape)."""
    if dtype == onp.bool_:
        elements = st.booleans()
    elif dtype == onp.complex128:
        elements = st.builds(complex, st.integers(-3, 3), st.integers(-3, 3))
    else:
        elements = st.integers(-3, 3).map(onp.dtype(dtype).type)
    if draw(st.booleans()):
        x = draw(hnp.arrays(dtype, tuple(shape[::-1]), elements=elements))
        return x.T, dnp.array(x).T
    x = draw(hnp.arrays(dtype, tuple(shape), elements=elements))
    return x, dnp.array(x)


def _sublist(term):
    """The interleaved form's sublist of a subscripts term (``A``-``Z`` are 0-25, ``a``-``z``
    26-51)."""
    head, dots, tail = term.partition("...")
    def numbers(text):
        return [string.ascii_letters.index(c) + (26 if c.islower() else -26) for c in text]
    return numbers(head) + ([Ellipsis] if dots else []) + numbers(tail)


@st.composite
def _cases(draw):
    """(subscripts, NumPy operands, diffuse operands): 1 to 3 operands of up to 3 labels
    (repeats too), perhaps a ``...`` of up to 2 dimensions, unit lengths where a label or an
    ellipsis dimension is longer elsewhere, an explicit output, and now and then something
    NumPy refuses (a length that does not broadcast, an output label no input has, an output
    without ``...``)."""
    sizes = {c: draw(st.integers(1, 4)) for c in LETTERS}
    ellipsis = draw(st.lists(st.integers(1, 3), max_size=2))
    mixed = draw(st.booleans())
    common = draw(st.sampled_from(DTYPES))
    terms, xs, as_ = [], [], []
    for _ in range(draw(st.integers(1, 3))):
        count = draw(st.sampled_from([0, 1, 2, 2, 3, 3]))
        labels = draw(st.lists(st.sampled_from(LETTERS), min_size=count, max_size=count))
        own = {c: draw(st.sampled_from([sizes[c]] * 6 + [1, sizes[c] + 1])) for c in labels}
        shape = [own[c] for c in labels]
        term = "".join(labels)
        if ellipsis and draw(st.booleans()):
            k = draw(st.integers(0, len(ellipsis)))
            at = draw(st.integers(0, len(labels)))
            extra = [draw(st.sampled_from([n, n, 1])) for n in ellipsis[len(ellipsis) - k:]]
            shape[at:at] = extra
            term = term[:at] + "..." + term[at:]
        x, a = _operand(draw, draw(st.sampled_from(DTYPES)) if mixed else common, shape)
        terms.append(term)
        xs.append(x)
        as_.append(a)
    inputs = ",".join(terms)
    used = sorted({c for t in terms for c in t if c != "."})
    output = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
    if draw(st.integers(0, 9)) == 0:
        output += draw(st.sampled_from(LETTERS))  # (maybe unused, maybe repeated)
    if "..." in inputs and draw(st.integers(0, 5)):
        at = draw(st.integers(0, len(output)))
        output = output[:at] + "..." + output[at:]
    return inputs, output, xs, as_


@settings(max_examples=300, deadline=None)
@given(case=_cases(), interleaved=st.booleans())
def test_einsum_matches_numpy(case, interleaved):
    inputs, output, xs, as_ = case
    # The implicit output, and the explicit one drawn.
    for arrow in ("", "->" + output):
        if not interleaved:
            _compare([inputs + arrow, *xs], [inputs + arrow, *as_])
            continue
        sublists = [_sublist(t) for t in inputs.split(",")]
        tail = [_sublist(output)] if arrow else []
        _compare([v for x, s in zip(xs, sublists) for v in (x, s)] + tail,
                 [v for a, s in zip(as_, sublists) for v in (a, s)] + tail)


@pytest.mark.parametrize("batch", [1, 3, 20])
def test_batched_products_match_numpy(batch):
    # Up to 16 matrices: a stacked matmul; more: a broadcast product summed.
    rng = onp.random.default_rng(batch)
    x, y = rng.standard_normal((batch, 3, 4)), rng.standard_normal((4, batch, 5))
    for subscripts in ("bij,jbk->bik", "bij,jbk->kib", "bij,jbk->b", "bij,jbk->bj"):
        _compare([subscripts, x, y], [subscripts, dnp.array(x), dnp.array(y)])


def test_einsum_diagonal_is_a_view_as_numpys():
    x = onp.arange(9.0).reshape(3, 3)
    a = dnp.array(x)
    got = _compare(["ii->i", x], ["ii->i", a])
    got[...] = -1  # (NumPy's einsum gives a writable view too)
    onp.testing.assert_array_equal(onp.diagonal(onp.asarray(a)), [-1, -1, -1])


def test_einsum_keywords_match_numpy():
    x, y = onp.arange(6.0).reshape(2, 3), onp.arange(3, dtype=onp.int32)
    a, b = dnp.array(x), dnp.array(y)
    for kwargs in ({"dtype": onp.float32, "casting": "same_kind"}, {"dtype": onp.int64},
                   {"dtype": onp.int64, "casting": "unsafe"}, {"casting": "no"},
                   {"casting": "bogus"}, {"order": "F"}, {"optimize": True},
                   {"optimize": "greedy"}):
        _compare(["ij,j->i", x, y], ["ij,j->i", a, b], **kwargs)
    out = dnp.zeros(2)
    assert _native(lambda: dnp.einsum("ij,j->i", a, b, out=out)) is out
    _check(out, onp.einsum("ij,j->i", x, y))
    for bad in (dnp.zeros(3), dnp.zeros(2, dtype=onp.int64)):
        with pytest.raises((ValueError, TypeError)):
            dnp.einsum("ij,j->i", a, b, out=bad)


@pytest.mark.parametrize("subscripts", [
    "ij->ji->", "i-j", "i.j", "i1", "ij", "i,i,i", "...i->i", "i->ii", "i->k", "", "ii",
    "i...i", "->", "..., ...",
])
def test_einsum_refuses_what_numpy_refuses(subscripts):
    x = onp.arange(6.0).reshape(2, 3)
    _compare([subscripts, x, x[0]], [subscripts, dnp.array(x), dnp.array(x[0])])
    _compare([subscripts, x], [subscripts, dnp.array(x)])
