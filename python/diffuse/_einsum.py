"""``einsum``, lowered to the native products: NumPy's subscripts (explicit or implicit
output, ``...``, the interleaved operand-and-sublist form) become, per operand, a strided
view for a repeated label (its diagonal), unit axes dropped where another operand's label
is longer (broadcasting), and a sum over the labels no other operand or the output has; then
the operands are contracted two at a time, the pair with the smallest result first:
``tensordot`` (one matrix product) for labels summed away, a broadcast ``multiply`` for
labels only kept, and for labels both kept on both sides (a batch) a stacked ``matmul`` of
up to ``_MAX_STACKED`` matrices, or beyond that a broadcast product summed over the
contracted labels (memory of the whole product). Booleans compute in int64 (any product
term true is true); complex operands compute natively as the others do.
"""

import builtins
import math
import string

import numpy as _np

from ._dtypes import _dtype_name
from ._ndarray import ndarray, _make_view
from ._eager import _eager_call, _only_eager
from ._interop import _fallback, _FUNCTIONS
from ._creation import asarray, zeros
from ._products import _MAX_STACKED, matmul, tensordot
from ._ufuncs import multiply
from ._reductions import sum as _sum

_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _ellipsis(count):
    """The labels of ``count`` dimensions of a ``...``, right-aligned across operands."""
    return [("...", r) for r in range(count, 0, -1)]


def _subscripts_of(operands):
    """``(subscripts string, arrays)`` of either of NumPy's forms: a string then the
    operands, or operands each followed by its sublist (integers in ``[0, 52)`` and
    ``...``), and perhaps the output's sublist."""
    if not operands:
        raise ValueError("must specify the einstein sum subscripts string and at least one "
                         "operand")
    if isinstance(operands[0], str):
        return operands[0], list(operands[1:])

    def text(sublist):
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
                continue
            s = int(s)
            if not 0 <= s < 52:
                raise ValueError("subscript is not within the valid range [0, 52)")
            out.append(string.ascii_uppercase[s] if s < 26 else string.ascii_lowercase[s - 26])
        return "".join(out)
    pairs = len(operands) // 2
    subscripts = ",".join(text(s) for s in operands[1:2 * pairs:2])
    if len(operands) % 2:  # the output's sublist closes them
        subscripts += "->" + text(operands[-1])
    return subscripts, list(operands[0:2 * pairs:2])


def _letters(term, where):
    """The letters of ``term`` without its ``...``, with NumPy's errors for anything else;
    ``where`` names the term in them."""
    dots = term.count(".")
    if dots and (dots != 3 or "..." not in term):
        raise ValueError("einstein sum subscripts string contains a '.' that is not part of "
                         f"an ellipsis ('...') in {where}")
    letters = term.replace("...", "")
    for c in letters:
        if c not in string.ascii_letters:
            raise ValueError(f"invalid subscript '{c}' in einstein sum subscripts string, "
                             "subscripts must be letters")
    return letters


def _term_labels(term, ndim, where):
    """The labels of the input ``term`` of an operand of ``ndim`` dimensions (letters, and
    ``...``'s labels), with NumPy's errors."""
    letters = _letters(term, where)
    if len(letters) > ndim:
        raise ValueError("einstein sum subscripts string contains too many subscripts for "
                         f"{where}")
    if "..." in term:
        head, tail = term.split("...")
        return list(head) + _ellipsis(ndim - len(letters)) + list(tail)
    if len(letters) < ndim:
        raise ValueError("operand has more dimensions than subscripts given in einstein sum, "
                         "but no '...' ellipsis provided to broadcast the extra dimensions.")
    return list(letters)


def _parse(subscripts, arrays):
    """``(input labels per operand, output labels)``, with NumPy's errors."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    if "-" in inputs or ">" in inputs:
        raise ValueError("einstein sum subscript string does not contain proper '->' output "
                         "specified")
    terms = inputs.split(",")
    if len(terms) > len(arrays):
        raise ValueError("fewer operands provided to einstein sum function than specified in "
                         "the subscripts string")
    if len(terms) < len(arrays):
        raise ValueError("more operands provided to einstein sum function than specified in "
                         "the subscripts string")
    labels = [_term_labels(t, a.ndim, f"operand {i}")
              for i, (t, a) in enumerate(zip(terms, arrays))]
    width = builtins.max([builtins.sum(1 for x in ls if isinstance(x, tuple)) for ls in labels],
                         default=0)
    if not arrow:
        counts = {}
        for ls in labels:
            for x in ls:
                if isinstance(x, str):
                    counts[x] = counts.get(x, 0) + 1
        return labels, _ellipsis(width) + sorted(x for x, k in counts.items() if k == 1)
    letters = _letters(output, "the output")
    seen = {x for ls in labels for x in ls}
    for i, c in enumerate(letters):
        if c in letters[:i]:
            raise ValueError(f"einstein sum subscripts string includes output subscript '{c}' "
                             "multiple times")
        if c not in seen:
            raise ValueError(f"einstein sum subscripts string included output subscript '{c}' "
                             "which never appeared in an input")
    if "..." not in output:
        if width:
            raise ValueError("output has more dimensions than subscripts given in einstein "
                             "sum, but no '...' ellipsis provided to broadcast the extra "
                             "dimensions.")
        return labels, list(letters)
    head, tail = output.split("...")
    return labels, list(head) + _ellipsis(width) + list(tail)


def _sizes(arrays, labels):
    """Each label's length: equal wherever it stands in one operand, equal or 1 (broadcast)
    across operands; NumPy's errors otherwise."""
    sizes = {}
    for i, (a, ls) in enumerate(zip(arrays, labels)):
        own = {}
        for x, n in zip(ls, a.shape):
            if x in own and own[x] != n:
                raise ValueError(f"dimensions in operand {i} for collapsing index '{x}' don't "
                                 f"match ({own[x]} != {n})")
            own[x] = n
        for x, n in own.items():
            if sizes.get(x, 1) != 1 and n != 1 and sizes[x] != n:
                shapes = " ".join(f"({','.join(map(str, b.shape))})" for b in arrays)
                raise ValueError("operands could not be broadcast together with remapped "
                                 f"shapes [original->remapped]: {shapes}")
            if sizes.get(x, 1) == 1:
                sizes[x] = n
    return sizes


def _distinct_labels(a, labels, sizes):
    """``(view, labels)``: ``a`` with each repeated label taken once (the diagonal: a strided
    view whose stride is the sum of the label's strides) and without the unit axes of labels
    that are longer elsewhere (``a`` is constant along them)."""
    if len(set(labels)) < len(labels):
        store, sid, store_shape, shape, offset, strides = a._as_strided()
        unique = list(dict.fromkeys(labels))
        new_strides = [builtins.sum(s for x, s in zip(labels, strides) if x == u) for u in unique]
        a = _make_view(store, sid, store_shape, [shape[labels.index(u)] for u in unique],
                       offset, new_strides)
        labels = unique
    kept = [d for d, x in enumerate(labels) if a.shape[d] == sizes[x]]
    if len(kept) < len(labels):
        a = a.reshape([a.shape[d] for d in kept])
        labels = [labels[d] for d in kept]
    return a, labels


def _sum_over(a, axes, dtype):
    """The sum of ``a`` over ``axes`` in ``dtype`` (integers wrap in it, as NumPy's
    einsum's)."""
    total = _sum(a, axis=axes, dtype=dtype)
    return total if total.dtype == dtype else total.astype(dtype)


def _summed(a, labels, keep, dtype):
    """``(a, labels)`` with the labels not in ``keep`` summed away."""
    axes = tuple(d for d, x in enumerate(labels) if x not in keep)
    if not axes:
        return a, labels
    return _sum_over(a, axes, dtype), [x for x in labels if x in keep]


def _arranged(a, labels, order, sizes):
    """``a`` with its axes in ``order`` (labels; a label it lacks is a unit axis)."""
    present = [x for x in order if x in labels]
    a = a.transpose([labels.index(x) for x in present])
    return a.reshape([sizes[x] if x in labels else 1 for x in order])


def _contract(x, lx, y, ly, keep, sizes, dtype):
    """The product of two operands summed over the labels they share that ``keep`` lacks:
    ``(array, labels)`` (see the module's description)."""
    shared = [u for u in lx if u in ly]
    batch = [u for u in shared if u in keep]
    summed = [u for u in shared if u not in keep]
    fx = [u for u in lx if u not in ly]
    fy = [u for u in ly if u not in lx]
    labels = batch + fx + fy
    if not summed:
        return multiply(_arranged(x, lx, labels, sizes), _arranged(y, ly, labels, sizes)), labels
    if not batch:
        product = tensordot(x, y, axes=([lx.index(u) for u in summed],
                                        [ly.index(u) for u in summed]))
        return product, labels
    count = math.prod(sizes[u] for u in batch)
    if count <= _MAX_STACKED:
        def matrices(a, la, rows, columns):
            return _arranged(a, la, batch + rows + columns, sizes).reshape(
                count, math.prod(sizes[u] for u in rows), math.prod(sizes[u] for u in columns))
        product = matmul(matrices(x, lx, fx, summed), matrices(y, ly, summed, fy))
        return product.reshape([sizes[u] for u in labels]), labels
    terms = multiply(_arranged(x, lx, labels + summed, sizes),
                     _arranged(y, ly, labels + summed, sizes))
    return _sum_over(terms, tuple(range(len(labels), len(labels) + len(summed))),
                     dtype), labels


def _evaluate(arrays, labels, output, sizes, dtype):
    """The einsum of operands of ``dtype`` (see the module's description)."""
    prepared = [_distinct_labels(a, ls, sizes) for a, ls in zip(arrays, labels)]
    terms = []
    for i, (a, ls) in enumerate(prepared):
        elsewhere = {u for j, (_, lj) in enumerate(prepared) if j != i for u in lj}
        terms.append(_summed(a, ls, elsewhere | set(output), dtype))
    while len(terms) > 1:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                keep = set(output).union(*(terms[k][1] for k in range(len(terms))
                                           if k not in (i, j)))
                result = set(terms[i][1]).union(terms[j][1]) & keep
                cost = math.prod(sizes[u] for u in result)
                if best is None or cost < best[0]:
                    best = (cost, i, j, keep)
        _, i, j, keep = best
        (x, lx), (y, ly) = terms[i], terms[j]
        terms[i] = _contract(x, lx, y, ly, keep, sizes, dtype)
        del terms[j]
    a, ls = terms[0]
    return a.transpose([ls.index(u) for u in output]) if ls else a


def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """NumPy's ``einsum`` (see the module's description); ``optimize`` is accepted and the
    order of contractions always chosen as described."""
    if casting not in _CASTINGS:
        raise ValueError(f"casting must be one of 'no', 'equiv', 'safe', 'same_kind', "
                         f"'unsafe' (got {casting!r})")
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if _only_eager(operands, {"out": out}):
        return _eager_call(_np.einsum, operands, dict(out=out, optimize=optimize, dtype=dtype,
                                                      order=order, casting=casting))
    subscripts, arrays = _subscripts_of(operands)
    arrays = [asarray(a) for a in arrays]
    labels, output = _parse(subscripts, arrays)
    sizes = _sizes(arrays, labels)
    target = _np.dtype(dtype) if dtype is not None else _np.result_type(
        *[a.dtype for a in arrays])
    for i, a in enumerate(arrays):
        if not _np.can_cast(a.dtype, target, casting=casting):
            raise TypeError(f"Iterator operand {i} dtype could not be cast from "
                            f"dtype('{a.dtype}') to dtype('{target}') according to the rule "
                            f"'{casting}'")
    if target.kind not in "biufc" or _dtype_name(target) is None:
        return _fallback(f"einsum of {target}", _np.einsum, *operands, out=out,
                         optimize=optimize, dtype=dtype, order=order, casting=casting)
    work = _np.dtype(_np.int64) if target == _np.bool_ else target
    arrays = [a if a.dtype == work else a.astype(work) for a in arrays]
    shape = tuple(sizes[u] for u in output)
    if builtins.any(a.size == 0 for a in arrays):
        result = zeros(shape, work)  # (an empty sum, or an empty result)
    else:
        result = _evaluate(arrays, labels, output, sizes, work)
    if target == _np.bool_:
        result = result != 0
    if out is None:
        return result
    if tuple(out.shape) != shape:
        raise ValueError(f"non-broadcastable output operand with shape {tuple(out.shape)} "
                         f"doesn't match the broadcast shape {shape}")
    if not _np.can_cast(target, out.dtype, casting=casting):
        raise TypeError(f"Iterator requested dtype could not be cast from dtype('{target}') "
                        f"to dtype('{out.dtype}'), the operand {len(arrays)} dtype, according "
                        f"to the rule '{casting}'")
    out[...] = result if isinstance(out, ndarray) else _np.asarray(result)
    return out


#: The functions of ``NATIVE`` this module defines.
NATIVE = ("einsum",)
# Its operands are positional (``*operands``), which NumPy's signature binding cannot pass on.
_FUNCTIONS[_np.einsum] = einsum
