//! `NativeCsr`, the sparse library's CSR matrix, and its Krylov solvers with SciPy's
//! arguments (preconditioners and callbacks written in Python included).

use std::sync::{Arc, Mutex};

use diffuse_array::Array;
use diffuse_sparse::solvers::{
    self, BiCgStab, Cg, Cgs, Krylov, Monitor, Preconditioner, SharedPreconditioner, SolveOptions,
};
use diffuse_sparse::{CsrMatrix, HostCsr, SparseError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::array::{wrap, NativeArray};
use crate::convert::from_ne;
use crate::errors::sparse_err;
use crate::runtime::context;
use crate::runtime::report_fp_errors;

/// A CSR sparse matrix of float64 values on the runtime.
#[pyclass(module = "diffuse._native", frozen)]
pub struct NativeCsr {
    inner: CsrMatrix,
}

#[pymethods]
impl NativeCsr {
    /// The `rows x cols` matrix of CSR arrays, each as native-endian bytes (`data` float64,
    /// `indices` and `indptr` int64): row `i`'s entries are `data[indptr[i]..indptr[i + 1]]`
    /// in columns `indices[...]`. Every array is checked before it is used.
    #[new]
    fn new(data: &[u8], indices: &[u8], indptr: &[u8], shape: (i64, i64)) -> PyResult<Self> {
        let (rows, cols) = shape;
        let data = from_ne::<8, f64>(data, "data", f64::from_ne_bytes)?;
        let indices = from_ne::<8, i64>(indices, "indices", i64::from_ne_bytes)?;
        let indptr = from_ne::<8, i64>(indptr, "indptr", i64::from_ne_bytes)?;
        let host = HostCsr::from_parts(rows, cols, &indptr, &indices, &data).map_err(sparse_err)?;
        let inner = CsrMatrix::from_host(context()?, &host).map_err(sparse_err)?;
        Ok(NativeCsr { inner })
    }

    /// `A @ x` for a float64 vector `x` (one index task; lazy).
    fn matvec(&self, x: &NativeArray) -> PyResult<NativeArray> {
        self.inner.spmv(&x.inner).map(wrap).map_err(sparse_err)
    }
}

/// The exception a Python preconditioner or callback raised during a solve, kept to
/// re-raise as it is once the solver has stopped on it.
type Raised = Arc<Mutex<Option<PyErr>>>;

/// Keeps `e` in `raised` and stops the solver with an error naming `what`.
fn caller_failed(raised: &Raised, what: &'static str, e: PyErr) -> SparseError {
    let reason = e.to_string();
    // A poisoned lock only means an earlier panic: the slot is still usable.
    let mut slot = raised
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    slot.get_or_insert(e);
    SparseError::Caller { what, reason }
}

/// A preconditioner written in Python: a callable from a native vector to a native vector.
struct PyPreconditioner {
    apply: Py<PyAny>,
    raised: Raised,
}

impl Preconditioner for PyPreconditioner {
    fn apply(&self, r: &Array) -> Result<Array, SparseError> {
        Python::attach(|py| {
            let z = self.apply.call1(py, (wrap(r.clone()),))?;
            let z = z.extract::<PyRef<'_, NativeArray>>(py)?;
            Ok(z.inner.clone())
        })
        .map_err(|e| caller_failed(&self.raised, "M", e))
    }
}

/// SciPy's `callback(xk)`, called with each iterate as a native vector (none: nothing).
struct PyCallback {
    callback: Option<Py<PyAny>>,
    raised: Raised,
}

impl Monitor for PyCallback {
    fn iterated(&mut self, x: &Array) -> Result<(), SparseError> {
        let Some(callback) = &self.callback else {
            return Ok(());
        };
        Python::attach(|py| callback.call1(py, (wrap(x.clone()),)).map(drop))
            .map_err(|e| caller_failed(&self.raised, "callback", e))
    }
}

/// Method `K` with `options`: the solution and SciPy's `info`.
fn solve_with<K: Krylov>(
    a: &CsrMatrix,
    b: &Array,
    options: &SolveOptions,
    monitor: &mut PyCallback,
) -> Result<(Array, i64), SparseError> {
    let solution = solvers::solve::<K>(a, b, options, monitor)?;
    Ok((solution.x().clone(), solution.info()))
}

/// Solves `a x = b` with `diffuse-sparse`'s `method` (`cg`, `bicgstab` or `cgs`) as SciPy
/// does: from `x0` (none: zeros) to `||r|| < max(atol, rtol ||b||)` or `maxiter`
/// iterations (none: 10 n), preconditioned by the matrix `m_matrix` (applied natively) or
/// the Python callable `m_apply` (native vector to native vector), calling `callback` with
/// each iterate. Returns `(x, info)`; an exception `m_apply` or `callback` raised is raised
/// again.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (method, a, b, x0, rtol, atol, maxiter, m_matrix, m_apply, callback))]
pub(crate) fn krylov_solve(
    py: Python<'_>,
    method: &str,
    a: &NativeCsr,
    b: &NativeArray,
    x0: Option<PyRef<'_, NativeArray>>,
    rtol: f64,
    atol: f64,
    maxiter: Option<usize>,
    m_matrix: Option<PyRef<'_, NativeCsr>>,
    m_apply: Option<Py<PyAny>>,
    callback: Option<Py<PyAny>>,
) -> PyResult<(NativeArray, i64)> {
    let raised = Raised::default();
    let m: Option<SharedPreconditioner> = match (m_matrix, m_apply) {
        (Some(matrix), _) => Some(Arc::new(matrix.inner.clone())),
        (None, Some(apply)) => Some(Arc::new(PyPreconditioner {
            apply,
            raised: raised.clone(),
        })),
        (None, None) => None,
    };
    let options = SolveOptions {
        x0: x0.map(|x0| x0.inner.clone()),
        rtol,
        atol,
        maxiter,
        m,
        check_every: 1,
    };
    let mut monitor = PyCallback {
        callback,
        raised: raised.clone(),
    };
    let (a, b) = (&a.inner, &b.inner);
    let solved = match method {
        "cg" => solve_with::<Cg>(a, b, &options, &mut monitor),
        "bicgstab" => solve_with::<BiCgStab>(a, b, &options, &mut monitor),
        "cgs" => solve_with::<Cgs>(a, b, &options, &mut monitor),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown Krylov method {other:?} (cg, bicgstab or cgs)"
            )))
        }
    };
    let first = raised
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take();
    if let Some(e) = first {
        return Err(e);
    }
    let (x, info) = solved.map_err(sparse_err)?;
    report_fp_errors(py)?;
    Ok((wrap(x), info))
}
