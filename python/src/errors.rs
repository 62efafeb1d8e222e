//! Errors as the Python exceptions NumPy and SciPy raise, and the floating-point exceptions
//! work raised, reported as NumPy's error state says.

use std::sync::atomic::{AtomicU8, Ordering};

use diffuse_array::ArrayError;
use diffuse_ir::IrError;
use diffuse_sparse::SparseError;
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::runtime::RUNTIME;

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

/// Hands the floating-point exceptions work raised since the last call (`(task name, bits)`:
/// divide 1, over 2, under 4, invalid 8) to `diffuse._errstate.report`, which warns, raises
/// or ignores them as NumPy's error state says. Called after everything that runs work.
pub(crate) fn report_fp_errors(py: Python<'_>) -> PyResult<()> {
    let Some(runtime) = RUNTIME.get() else {
        return Ok(());
    };
    let raised = runtime.backend().take_fp_errors();
    if raised.is_empty() {
        return Ok(());
    }
    let raised: Vec<(String, u8)> = raised
        .iter()
        .map(|(task, flags)| (task.to_string(), flags.bits()))
        .collect();
    py.import("diffuse._errstate")?
        .call_method1("report", (raised,))?;
    Ok(())
}

/// The floating-point exception categories (bits as in `report_fp_errors`) whose raising
/// the application reports: a fused kernel raising one of them is run again to say which
/// operation raised it. NumPy's default (divide, over, invalid) until set.
pub(crate) static FP_REPORTED: AtomicU8 = AtomicU8::new(diffuse::FP_REPORTED_BY_DEFAULT.bits());

/// Sets which floating-point exception categories the application reports (`divide` 1,
/// `over` 2, `under` 4, `invalid` 8), from NumPy's error state: exceptions of the others
/// are not attributed to single operations of fused kernels, which spares running them
/// twice (`diffuse._errstate` calls it whenever the state changes).
#[pyfunction]
pub(crate) fn report_fp_categories(bits: u8) {
    FP_REPORTED.store(bits, Ordering::Relaxed);
    if let Some(runtime) = RUNTIME.get() {
        runtime
            .backend()
            .attribute_fp_errors(diffuse::FpFlags::from_bits(bits));
    }
}
