//! Errors as the Python exceptions NumPy and SciPy raise.

use diffuse_array::ArrayError;
use diffuse_ir::IrError;
use diffuse_sparse::SparseError;
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A library error as the Python exception NumPy would raise for it.
pub(crate) fn py_err(e: ArrayError) -> PyErr {
    let message = e.to_string();
    match e {
        ArrayError::UnsupportedDType { .. } => PyTypeError::new_err(message),
        _ if message.contains("out of memory") => PyMemoryError::new_err(message),
        // An index array's element out of range, found when the gather or scatter ran.
        _ if message.contains("is out of bounds for axis") => PyIndexError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// A sparse library error as the Python exception SciPy would raise for it (`MemoryError`
/// for memory, `TypeError` for a dtype, `ValueError` for the rest).
pub(crate) fn sparse_err(e: SparseError) -> PyErr {
    match e {
        SparseError::Array(e) => py_err(e),
        SparseError::Ir(ir) if matches!(*ir, IrError::OutOfMemory { .. }) => {
            PyMemoryError::new_err(ir.to_string())
        }
        e @ SparseError::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}
