#!/usr/bin/env python3
"""Regenerates the Matrix Market fixtures of `tests/sparse/mtx.rs` with SciPy.

Not run by CI. Usage (from this directory):

    python3 -m venv /tmp/mtxvenv && /tmp/mtxvenv/bin/pip install scipy numpy
    /tmp/mtxvenv/bin/python make_fixtures.py

For every `NAME.mtx` it also writes `NAME.expected`: what `scipy.io.mmread` returns for that
file, in a trivially parseable form:

    # scipy <version>
    rows cols
    i j value        (0-based, one line per stored entry, in the order SciPy returns them)

Values are written with `repr`, which round-trips exactly to the same f64. `array` files come
back from SciPy as dense ndarrays; their entries are listed in column-major order.
"""

import os

import numpy as np
import scipy
import scipy.io
import scipy.sparse

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def write_expected(name):
    """Reads NAME.mtx back with SciPy and records the result as NAME.expected."""
    m = scipy.io.mmread(path(name + ".mtx"))
    lines = [f"# scipy {scipy.__version__}"]
    if scipy.sparse.issparse(m):
        c = m.tocoo()
        lines.append(f"{c.shape[0]} {c.shape[1]}")
        for i, j, v in zip(c.row.tolist(), c.col.tolist(), c.data.tolist()):
            lines.append(f"{i} {j} {float(v)!r}")
    else:
        m = np.asarray(m)
        lines.append(f"{m.shape[0]} {m.shape[1]}")
        for j in range(m.shape[1]):
            for i in range(m.shape[0]):
                lines.append(f"{i} {j} {float(m[i, j])!r}")
    with open(path(name + ".expected"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    # General real: rectangular 4 x 5, negative values, exponents, an inexact third.
    a = scipy.sparse.coo_matrix(
        (
            [1.5, -2.25, 3.0e-7, 4.0e10, -0.1, 6.0, 1.0 / 3.0],
            ([0, 0, 1, 2, 3, 3, 2], [0, 4, 1, 3, 0, 2, 2]),
        ),
        shape=(4, 5),
    )
    scipy.io.mmwrite(path("general_real.mtx"), a, symmetry="general")

    # Symmetric real: SciPy writes the lower triangle.
    s = np.array(
        [
            [4.0, -1.0, 0.0, 0.5],
            [-1.0, 4.0, -1.0, 0.0],
            [0.0, -1.0, 4.0, -1.0],
            [0.5, 0.0, -1.0, 4.0],
        ]
    )
    scipy.io.mmwrite(path("symmetric_real.mtx"), scipy.sparse.coo_matrix(s), symmetry="symmetric")

    # Integer general.
    i = scipy.sparse.coo_matrix(
        (np.array([7, -3, 123456789, 0, 42], dtype=np.int64), ([0, 1, 2, 2, 0], [2, 0, 1, 2, 0])),
        shape=(3, 3),
    )
    scipy.io.mmwrite(path("integer.mtx"), i, field="integer", symmetry="general")

    # Pattern general (values become 1.0).
    p = scipy.sparse.coo_matrix(
        (np.ones(5), ([0, 1, 2, 4, 4], [1, 1, 0, 2, 3])), shape=(5, 4)
    )
    scipy.io.mmwrite(path("pattern.mtx"), p, field="pattern", symmetry="general")

    # Skew-symmetric real: SciPy writes the strict lower triangle.
    k = np.array([[0.0, 2.0, -1.5], [-2.0, 0.0, 3.0], [1.5, -3.0, 0.0]])
    scipy.io.mmwrite(
        path("skew_symmetric.mtx"), scipy.sparse.coo_matrix(k), symmetry="skew-symmetric"
    )

    # Dense array, general (column-major values).
    d = np.array([[1.0, -2.0, 0.0], [3.5, 0.0, 6.25]])
    scipy.io.mmwrite(path("array_general.mtx"), d)

    # Dense array, symmetric: SciPy writes the lower triangle, column by column.
    ds = np.array([[2.0, -1.0, 0.25], [-1.0, 3.0, 0.0], [0.25, 0.0, -5.0]])
    scipy.io.mmwrite(path("array_symmetric.mtx"), ds, symmetry="symmetric")

    # Comments and blank lines: SciPy writes a multi-line comment after the banner; we then add
    # blank lines and more comments before the size line (SciPy reads those; it rejects
    # comments between entries, which our reader allows and tests separately).
    c = scipy.sparse.coo_matrix(([2.0, -1.0, 8.0], ([0, 1, 2], [0, 2, 1])), shape=(3, 3))
    scipy.io.mmwrite(
        path("comments.mtx"), c, comment="written by make_fixtures.py\nsecond comment line",
        symmetry="general",
    )
    with open(path("comments.mtx")) as f:
        lines = f.read().split("\n")
    # Insert after the banner and the comments SciPy wrote, just before the size line.
    size_at = next(n for n, l in enumerate(lines) if n > 0 and not l.startswith("%"))
    lines[size_at:size_at] = ["", "% a comment between blank lines", "", "%"]
    with open(path("comments.mtx"), "w") as f:
        f.write("\n".join(lines))

    # Symmetric file with upper-triangle entries, hand-written (SciPy never writes these) to
    # record what SciPy does with them: it mirrors every off-diagonal entry, whichever triangle.
    with open(path("symmetric_upper.mtx"), "w") as f:
        f.write(
            "%%MatrixMarket matrix coordinate real symmetric\n"
            "% (1,2) is in the upper triangle, (3,1) in the lower; (2,3) and (3,2) are both given\n"
            "3 3 5\n"
            "1 2 5.0\n"
            "3 1 -2.0\n"
            "2 2 1.0\n"
            "2 3 7.0\n"
            "3 2 0.5\n"
        )

    for name in [
        "general_real",
        "symmetric_real",
        "integer",
        "pattern",
        "skew_symmetric",
        "array_general",
        "array_symmetric",
        "comments",
        "symmetric_upper",
    ]:
        write_expected(name)


if __name__ == "__main__":
    main()
