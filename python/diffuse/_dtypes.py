"""The dtypes diffuse arrays hold, by NumPy's names, and scalars converted to them as NumPy
converts a scalar meeting an array (NEP 50)."""

import numbers

import numpy as _np

# dtypes diffuse arrays hold, by NumPy name.
_DTYPES = ("float64", "float32", "int64", "int32", "bool", "complex128", "complex64")

# NumPy dtype objects of the dtypes diffuse holds, and diffuse's name for anything that
# names one of them (dtype objects, scalar types, strings): the hot path of every operation.
_DT = {name: _np.dtype(name) for name in _DTYPES}
_NAME_OF = {}
for _n, _d in _DT.items():
    _NAME_OF[_d] = _NAME_OF[_d.type] = _NAME_OF[_n] = _n
_NAME_OF[float] = "float64"
_NAME_OF[int] = "int64"
_NAME_OF[bool] = "bool"
_NAME_OF[complex] = "complex128"

# The dtype of the parts (real, imaginary) of each complex dtype.
_COMPLEX_PARTS = {"complex128": "float64", "complex64": "float32"}


def _dtype_name(dtype):
    try:
        return _NAME_OF[dtype]
    except (KeyError, TypeError):
        name = _np.dtype(dtype).name
        return name if name in _DTYPES else None


# The values of each integer dtype diffuse holds.
_INT_RANGE = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}


def _scalar_for(value, dtype):
    """The scalar ``value`` (Python's or NumPy's) as an element of the dtype named ``dtype``,
    converted as NumPy converts a scalar meeting an array of that dtype (NEP 50): an integer
    outside an integer dtype is NumPy's OverflowError (never wrapped), a float into an
    integer dtype truncates (NaN: ValueError, infinity: OverflowError), a float beyond
    float32 is infinity with NumPy's overflow warning, a complex value into a real dtype is
    NumPy's TypeError (a Python ``complex``) or its ComplexWarning (a NumPy complex scalar:
    the real part). Every scalar going to the native side passes here."""
    if dtype == "bool":
        return bool(value)
    if dtype in _INT_RANGE:
        v = int(value)
        lo, hi = _INT_RANGE[dtype]
        if not lo <= v <= hi:
            raise OverflowError(f"Python integer {v} out of bounds for {dtype}")
        return v
    if dtype == "float32":
        return float(_np.float32(float(value)))  # NumPy's rounding and overflow warning
    if dtype == "complex64":
        return complex(_np.complex64(value))  # (NumPy's rounding of each part)
    if dtype == "complex128":
        return complex(value)
    return float(value)


def _is_scalar(x):
    return isinstance(x, (numbers.Number, _np.generic)) and not isinstance(x, _np.ndarray)
