//! The module's array functions: new arrays from bytes and from values (zeros, full, ranges,
//! random numbers), `where`, and joins.

use diffuse_array::{arange, full, linspace, random, zeros, Array, Distribution};
use diffuse_ir::{with_element_type, DType};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;

use crate::array::{wrap, NativeArray};
use crate::convert::{dtype_name, dtype_of, scalar_of, shape_of};
use crate::errors::py_err;
use crate::runtime::context;

/// An array of `shape` and `dtype` from row-major native-endian bytes.
#[pyfunction]
pub(crate) fn from_bytes(data: &[u8], shape: Vec<i64>, dtype: &str) -> PyResult<NativeArray> {
    let cx = context()?;
    let shape = shape_of(shape)?;
    let dtype = dtype_of(dtype)?;
    let count: i64 = shape.iter().product();
    let size = dtype.size_bytes();
    if data.len() as i64 != count * size as i64 {
        return Err(PyValueError::new_err(format!(
            "{} bytes cannot fill an array of shape {shape:?} and dtype {}",
            data.len(),
            dtype_name(dtype)
        )));
    }
    if dtype == DType::Bool && data.iter().any(|&b| b > 1) {
        return Err(PyValueError::new_err("bool data must be bytes 0 or 1"));
    }
    with_element_type!(dtype, T => {
        let mut values: Vec<T> = Vec::new();
        // A refused allocation is a MemoryError, not an abort in the allocator.
        values.try_reserve_exact(count as usize).map_err(|_| {
            PyMemoryError::new_err(format!("cannot allocate {} bytes for an array", data.len()))
        })?;
        // SAFETY: `data` holds exactly `count` elements of T's size (checked above), T is
        // plain old data and every bool byte is 0 or 1; the copy fills the capacity.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), values.as_mut_ptr() as *mut u8, data.len());
            values.set_len(count as usize);
        }
        Array::from_vec(cx, &shape, values).map(wrap).map_err(py_err)
    })
}

/// Zeros of `shape` and `dtype`.
#[pyfunction]
pub(crate) fn zeros_(shape: Vec<i64>, dtype: &str) -> PyResult<NativeArray> {
    zeros(context()?, &shape_of(shape)?, dtype_of(dtype)?)
        .map(wrap)
        .map_err(py_err)
}

/// `value` everywhere, in `dtype`.
#[pyfunction]
pub(crate) fn full_(
    shape: Vec<i64>,
    value: &Bound<'_, PyAny>,
    dtype: &str,
) -> PyResult<NativeArray> {
    let scalar = scalar_of(value, dtype_of(dtype)?)?;
    full(context()?, &shape_of(shape)?, scalar)
        .map(wrap)
        .map_err(py_err)
}

/// `start, start + step, ...` below `stop`.
#[pyfunction]
pub(crate) fn arange_(start: f64, stop: f64, step: f64, dtype: &str) -> PyResult<NativeArray> {
    arange(context()?, start, stop, step, dtype_of(dtype)?)
        .map(wrap)
        .map_err(py_err)
}

/// `num` evenly spaced values from `start` to `stop` inclusive.
#[pyfunction]
pub(crate) fn linspace_(start: f64, stop: f64, num: i64, dtype: &str) -> PyResult<NativeArray> {
    linspace(context()?, start, stop, num, dtype_of(dtype)?)
        .map(wrap)
        .map_err(py_err)
}

/// Random values: `uniform` on `[a, b)` or `normal` with mean `a` and deviation `b`.
#[pyfunction]
pub(crate) fn random_(
    shape: Vec<i64>,
    kind: &str,
    a: f64,
    b: f64,
    seed: u64,
    dtype: &str,
) -> PyResult<NativeArray> {
    let dist = match kind {
        "uniform" => Distribution::Uniform { low: a, high: b },
        "normal" => Distribution::Normal { mean: a, std: b },
        other => return Err(PyValueError::new_err(format!("no distribution {other}"))),
    };
    random(context()?, &shape_of(shape)?, dist, seed, dtype_of(dtype)?)
        .map(wrap)
        .map_err(py_err)
}

/// `where(cond, a, b)` element-wise, broadcasting.
#[pyfunction]
pub(crate) fn where_(
    cond: &NativeArray,
    a: &NativeArray,
    b: &NativeArray,
) -> PyResult<NativeArray> {
    diffuse_array::where_(&cond.inner, &a.inner, &b.inner)
        .map(wrap)
        .map_err(py_err)
}

/// The arrays joined along `axis` (NumPy's `concatenate`; same dtypes, checked).
#[pyfunction]
pub(crate) fn concatenate_(
    arrays: Vec<PyRef<'_, NativeArray>>,
    axis: usize,
) -> PyResult<NativeArray> {
    let refs: Vec<&Array> = arrays.iter().map(|a| &a.inner).collect();
    diffuse_array::concatenate(&refs, axis)
        .map(wrap)
        .map_err(py_err)
}

/// `a` shifted cyclically by `shift` along `axis` (NumPy's `roll` on one axis).
#[pyfunction]
pub(crate) fn roll_(a: &NativeArray, shift: i64, axis: usize) -> PyResult<NativeArray> {
    diffuse_array::roll(&a.inner, shift, axis)
        .map(wrap)
        .map_err(py_err)
}

/// `a` repeated `reps` times per dimension (NumPy's `tile`).
#[pyfunction]
pub(crate) fn tile_(a: &NativeArray, reps: Vec<i64>) -> PyResult<NativeArray> {
    diffuse_array::tile(&a.inner, &reps)
        .map(wrap)
        .map_err(py_err)
}
