"""``save``, ``load`` and ``fromfile`` against NumPy: NumPy reads the ``.npy`` files diffuse
writes and diffuse reads NumPy's (versions 1.0 and 2.0, C and Fortran order) into deferred
arrays, whole or a box at a time, natively (a fallback warning fails these tests)."""

import io
import warnings
from unittest import mock

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import diffuse.numpy as dnp
from diffuse import _io

DTYPES = [onp.float64, onp.float32, onp.int64, onp.int32, onp.bool_]


def _native(call):
    """``call()`` with a fallback warning as an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not native to diffuse.*")
        return call()


def _same(got, want):
    assert isinstance(got, dnp.ndarray), type(got)
    got = onp.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    onp.testing.assert_array_equal(got, want)


@st.composite
def _arrays(draw):
    """(NumPy array, the same as a deferred diffuse array or a view of one: a transpose or
    every other row)."""
    dtype = draw(st.sampled_from(DTYPES))
    x = draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0,
                                                max_side=5)))
    a = dnp.array(x)
    view = draw(st.sampled_from(["whole", "transpose", "steps"]))
    if view == "transpose":
        return x.T, a.T
    if view == "steps" and x.ndim:
        return x[::2], a[::2]
    return x, a


# The most bytes one host copy holds: the module's, and a few elements (every array then
# moves in many boxes).
PIECE_BYTES = pytest.mark.parametrize("piece_bytes", [1 << 24, 24], ids=["whole", "pieces"])


@PIECE_BYTES
@settings(max_examples=60, deadline=None)
@given(case=_arrays())
def test_numpy_reads_what_diffuse_saves(piece_bytes, case):
    x, a = case
    buffer = io.BytesIO()
    with mock.patch.object(_io, "_PIECE_BYTES", piece_bytes):
        assert _native(lambda: dnp.save(buffer, a)) is None
    buffer.seek(0)
    want = io.BytesIO()
    onp.save(want, x.copy(order="C"))
    assert buffer.getvalue() == want.getvalue()  # (NumPy's bytes: header and data)
    buffer.seek(0)
    onp.testing.assert_array_equal(onp.load(buffer), x)


@PIECE_BYTES
@settings(max_examples=40, deadline=None)
@given(case=_arrays())
def test_tofile_writes_numpys_bytes(piece_bytes, case):
    x, a = case
    buffer = io.BytesIO()
    with mock.patch.object(_io, "_PIECE_BYTES", piece_bytes):
        assert _native(lambda: a.tofile(buffer)) is None
    assert buffer.getvalue() == x.tobytes()


@PIECE_BYTES
@settings(max_examples=60, deadline=None)
@given(case=_arrays(), fortran=st.booleans(), version=st.sampled_from([(1, 0), (2, 0)]))
def test_diffuse_reads_what_numpy_saves(piece_bytes, case, fortran, version):
    x, _ = case
    x = x.copy(order="F" if fortran else "C")
    buffer = io.BytesIO()
    onp.lib.format.write_array(buffer, x, version=version)
    buffer.seek(0)
    with mock.patch.object(_io, "_PIECE_BYTES", piece_bytes):
        _same(_native(lambda: dnp.load(buffer)), x)
    assert buffer.read() == b""  # (it read the whole file, no further)


def test_save_and_load_by_path_add_the_suffix_as_numpy(tmp_path):
    x = onp.arange(12.0).reshape(3, 4)
    _native(lambda: dnp.save(tmp_path / "x", dnp.array(x).T))
    onp.testing.assert_array_equal(onp.load(tmp_path / "x.npy"), x.T)
    _same(_native(lambda: dnp.load(str(tmp_path / "x.npy"))), x.T)
    onp.save(tmp_path / "y.npy", x.astype(onp.int32))
    _same(_native(lambda: dnp.load(tmp_path / "y.npy")), x.astype(onp.int32))


def test_load_of_a_truncated_file_raises():
    buffer = io.BytesIO()
    onp.save(buffer, onp.arange(10.0))
    buffer = io.BytesIO(buffer.getvalue()[:-8])
    with pytest.raises(ValueError):
        onp.load(buffer)
    buffer.seek(0)
    with pytest.raises(ValueError):
        dnp.load(buffer)


def test_load_of_an_archive_runs_on_numpy(tmp_path):
    onp.savez(tmp_path / "z.npz", x=onp.arange(3))
    with pytest.warns(RuntimeWarning, match="not native"):
        with dnp.load(tmp_path / "z.npz") as archive:
            onp.testing.assert_array_equal(archive["x"], onp.arange(3))


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(DTYPES), size=st.integers(0, 40), count=st.integers(-1, 50),
       offset=st.integers(0, 3))
def test_fromfile_matches_numpy(tmp_path_factory, dtype, size, count, offset):
    path = tmp_path_factory.mktemp("fromfile") / "data.bin"
    x = onp.arange(size).astype(dtype)
    x.tofile(path)
    width = onp.dtype(dtype).itemsize
    want = onp.fromfile(path, dtype=dtype, count=count, offset=offset * width)
    with mock.patch.object(_io, "_PIECE_BYTES", 24):
        _same(_native(lambda: dnp.fromfile(path, dtype=dtype, count=count,
                                           offset=offset * width)), want)
    with open(path, "rb") as f:  # (an open file: read from where it stands, left after)
        f.read(width)
        got = _native(lambda: dnp.fromfile(f, dtype=dtype, count=count))
        after = f.tell()
    with open(path, "rb") as f:
        f.read(width)
        _same(got, onp.fromfile(f, dtype=dtype, count=count))
        assert after == f.tell()


def test_fromfile_parses_text_as_numpy(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("1.5, 2, 3")
    _same(_native(lambda: dnp.fromfile(path, sep=",")), onp.fromfile(path, sep=","))
