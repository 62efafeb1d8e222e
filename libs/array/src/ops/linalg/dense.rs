//! Dense factorizations, decompositions and solves of one matrix (NumPy's `linalg.cholesky`,
//! `inv`, `det`, `solve`, `qr`, `eigh` and `svd`): one task of one point, which reads the
//! whole matrix, factors it with `faer` and writes the results, and a status the caller reads
//! to raise NumPy's error (a matrix that is not positive definite, or singular, or a
//! decomposition that did not converge).
//!
//! One point suits the matrices such programs factor (up to a few thousand rows: faer's
//! blocked factorizations use the host's cores); a matrix too large for one host would need
//! tiled algorithms over the launch, which this does not do.

use std::sync::Arc;

use diffuse_ir::{
    DType, IndexTask, KernelError, Partition, PointTask, Privilege, ProjComponent, Projection,
    Shape, TaskKind, Tuple,
};
use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::{Mat, Side};

use crate::array::Array;
use crate::error::ArrayError;
use crate::kinds::{kind, undefined, Kernel};

/// What a dense operation computes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Dense {
    /// The lower-triangular `L` with `A = L Lᵀ` (zeros above the diagonal).
    Cholesky,
    /// `A⁻¹`, from an LU factorization with partial pivoting.
    Inverse,
    /// The determinant (a 0-d array), from the same factorization.
    Determinant,
    /// `x` with `A x = b`, for a vector `b` or a matrix of right-hand sides.
    Solve,
    /// `Q` with orthonormal columns and upper-triangular `R` with `A = Q R` (`m x n`, `k =
    /// min(m, n)`): `Q` of `k` columns and `R` of `k` rows, or (`complete`) `Q` square and
    /// `R` of `m` rows.
    Qr {
        /// NumPy's `mode="complete"`.
        complete: bool,
    },
    /// The eigenvalues, ascending, and the orthonormal eigenvectors (columns) of a symmetric
    /// matrix, from its lower triangle.
    Eigh,
    /// `U`, the singular values (descending) and `Vᵀ` with `A = U diag(s) Vᵀ`: `U` of `k`
    /// columns and `Vᵀ` of `k` rows, or (`full`) both square.
    Svd {
        /// NumPy's `full_matrices`.
        full: bool,
    },
}

impl Dense {
    fn name(self) -> &'static str {
        match self {
            Dense::Cholesky => "cholesky",
            Dense::Inverse => "inv",
            Dense::Determinant => "det",
            Dense::Solve => "solve",
            Dense::Qr { complete: false } => "qr",
            Dense::Qr { complete: true } => "qr_complete",
            Dense::Eigh => "eigh",
            Dense::Svd { full: false } => "svd_thin",
            Dense::Svd { full: true } => "svd",
        }
    }

    /// True for the operations of square matrices only.
    fn needs_square(self) -> bool {
        !matches!(self, Dense::Qr { .. } | Dense::Svd { .. })
    }

    /// The shapes of the results for a matrix of `m` rows and `n` columns (`rhs`: the shape
    /// of `Solve`'s right-hand sides).
    fn result_shapes(self, m: i64, n: i64, rhs: Option<Shape>) -> Vec<Vec<i64>> {
        let k = m.min(n);
        match self {
            Dense::Cholesky | Dense::Inverse => vec![vec![m, n]],
            Dense::Determinant => vec![vec![]],
            Dense::Solve => vec![rhs.map_or_else(Vec::new, |b| b.as_slice().to_vec())],
            Dense::Qr { complete: false } => vec![vec![m, k], vec![k, n]],
            Dense::Qr { complete: true } => vec![vec![m, m], vec![m, n]],
            Dense::Eigh => vec![vec![n], vec![n, n]],
            Dense::Svd { full: false } => vec![vec![m, k], vec![k], vec![k, n]],
            Dense::Svd { full: true } => vec![vec![m, m], vec![k], vec![n, n]],
        }
    }
}

/// The status a dense operation writes: the matrix was factored.
pub const FACTORED: i64 = 0;
/// The status a dense operation writes: the matrix is not positive definite (Cholesky) or
/// singular (an exact zero pivot: inverse and solve), or the eigenvalue or singular value
/// iteration did not converge.
pub const NOT_FACTORED: i64 = 1;

/// Float types with dense factorizations.
trait Factor: diffuse_ir::Element + faer::traits::ComplexField + Copy {
    fn zero() -> Self;
}

impl Factor for f64 {
    fn zero() -> Self {
        0.0
    }
}

impl Factor for f32 {
    fn zero() -> Self {
        0.0
    }
}

/// Argument `i` of `task` (a whole 2-d matrix, or a 1-d vector as a column) as a faer
/// matrix.
fn matrix<T: Factor>(task: &PointTask<'_>, i: usize) -> Result<Mat<T>, KernelError> {
    let view = task.read::<T>(i)?;
    let shape = view.shape();
    Ok(match shape.dims() {
        1 => {
            let column = view.row(0);
            Mat::from_fn(column.len(), 1, |r, _| column[r])
        }
        _ => Mat::from_fn(view.rows(), shape[1] as usize, |r, c| view.row(r)[c]),
    })
}

/// Writes `values` (rows of a 2-d result, or the column of a 1-d one) into argument `i`.
fn write_matrix<T: Factor>(
    task: &PointTask<'_>,
    i: usize,
    values: faer::MatRef<'_, T>,
) -> Result<(), KernelError> {
    let mut out = task.write::<T>(i)?;
    let shape = out.shape();
    let (rows, cols) = match shape.dims() {
        0 => (1, 1),
        1 => (shape[0], 1),
        _ => (shape[0], shape[1]),
    };
    if (values.nrows(), values.ncols()) != (rows as usize, cols as usize) {
        return Err(task.error(format!(
            "a {}x{} result for an output of shape {shape}",
            values.nrows(),
            values.ncols()
        )));
    }
    if out.shape().dims() == 1 {
        for (r, v) in out.row_mut(0).iter_mut().enumerate() {
            *v = values[(r, 0)];
        }
        return Ok(());
    }
    for r in 0..out.rows() {
        for (c, v) in out.row_mut(r).iter_mut().enumerate() {
            *v = values[(r, c)];
        }
    }
    Ok(())
}

/// Writes `status` into the status argument `i`.
fn write_status(task: &PointTask<'_>, i: usize, status: i64) -> Result<(), KernelError> {
    let mut out = task.write::<i64>(i)?;
    out.row_mut(0)[0] = status;
    Ok(())
}

/// True when the LU factorization's `U` has an exact zero on its diagonal (LAPACK's
/// `info > 0`, on which NumPy raises "Singular matrix").
fn singular<T: Factor>(lu: &faer::linalg::solvers::PartialPivLu<T>) -> bool {
    let u = lu.U();
    (0..u.nrows().min(u.ncols())).any(|k| u[(k, k)] == T::zero())
}

/// The results of `op` of `a` (`rhs`: `Solve`'s right-hand sides), or `None` where the
/// matrix could not be factored (or the iteration did not converge).
fn compute<T: Factor>(op: Dense, a: Mat<T>, rhs: Option<Mat<T>>) -> Option<Vec<Mat<T>>> {
    let column = |values: Vec<T>| Mat::from_fn(values.len(), 1, |r, _| values[r]);
    match op {
        Dense::Cholesky => {
            let llt = a.llt(Side::Lower).ok()?;
            let l = llt.L();
            Some(vec![Mat::from_fn(l.nrows(), l.ncols(), |r, c| {
                if c <= r {
                    l[(r, c)]
                } else {
                    T::zero()
                }
            })])
        }
        Dense::Determinant => Some(vec![column(vec![a.determinant()])]),
        Dense::Inverse | Dense::Solve => {
            let lu = a.partial_piv_lu();
            if singular(&lu) {
                return None;
            }
            Some(vec![match rhs {
                Some(b) => lu.solve(b),
                None => lu.inverse(),
            }])
        }
        Dense::Qr { complete } => {
            let (m, n) = (a.nrows(), a.ncols());
            let qr = a.qr();
            let (q, r) = if complete {
                (qr.compute_Q(), qr.R())
            } else {
                (qr.compute_thin_Q(), qr.thin_R())
            };
            // R's upper triangle, zeros below it (and in the rows past `min(m, n)` of the
            // complete form).
            let rows = if complete { m } else { m.min(n) };
            let upper = |i: usize, j: usize| i <= j && i < r.nrows() && j < r.ncols();
            let r = Mat::from_fn(
                rows,
                n,
                |i, j| if upper(i, j) { r[(i, j)] } else { T::zero() },
            );
            Some(vec![q, r])
        }
        Dense::Eigh => {
            let eigen = a.self_adjoint_eigen(Side::Lower).ok()?;
            let values = eigen.S().column_vector().iter().copied().collect();
            Some(vec![column(values), eigen.U().to_owned()])
        }
        Dense::Svd { full } => {
            let svd = if full { a.svd() } else { a.thin_svd() }.ok()?;
            let values = svd.S().column_vector().iter().copied().collect();
            Some(vec![
                svd.U().to_owned(),
                column(values),
                svd.V().transpose().to_owned(),
            ])
        }
    }
}

/// The kernel of `op`: argument 0 the matrix, then the right-hand sides (`Solve`), the
/// results and the status.
fn dense_kernel<T: Factor>(op: Dense) -> impl Kernel {
    move |task| {
        let a = matrix::<T>(task, 0)?;
        let rhs = match op {
            Dense::Solve => Some(matrix::<T>(task, 1)?),
            _ => None,
        };
        let first = 1 + usize::from(rhs.is_some());
        let results = op.result_shapes(1, 1, None).len();
        let code = match compute(op, a, rhs) {
            Some(values) => {
                for (i, value) in values.iter().enumerate() {
                    write_matrix(task, first + i, value.as_ref())?;
                }
                FACTORED
            }
            None => NOT_FACTORED,
        };
        write_status(task, first + results, code)
    }
}

/// The task kind of `op` on `dtype`.
fn dense_kind(op: Dense, dtype: DType) -> Result<Arc<TaskKind>, ArrayError> {
    kind(format!("array.linalg.{}.{dtype}", op.name()), move |b| {
        let mut b = b.arg("a", dtype, Privilege::Read);
        if op == Dense::Solve {
            b = b.arg("b", dtype, Privilege::Read);
        }
        for i in 0..op.result_shapes(1, 1, None).len() {
            b = b.arg(format!("out{i}"), dtype, Privilege::Write);
        }
        let b = b.arg("status", DType::I64, Privilege::Write);
        match dtype {
            DType::F64 => b.register(dense_kernel::<f64>(op)),
            DType::F32 => b.register(dense_kernel::<f32>(op)),
            other => undefined(op.name(), other),
        }
    })
}

/// The single tile of `a`, for a launch of one point.
fn whole(a: &Array) -> Result<Partition, ArrayError> {
    let colors = vec![ProjComponent::Const(0); a.ndim()];
    Ok(a.view()
        .tiling_with(a.shape(), Projection::new(1, &colors)?)?)
}

impl Array {
    /// NumPy's `linalg` operation `op` of this float matrix (square but for `Qr` and `Svd`;
    /// `rhs`: the right-hand sides of `Solve`, a vector or a matrix with as many rows),
    /// computed on one point: the results in [`Dense`]'s order (the determinant a 0-d array,
    /// eigenvalues and singular values vectors), and a one-element int64 status,
    /// [`FACTORED`] or [`NOT_FACTORED`] (the results are then unspecified), which the
    /// caller reads to raise NumPy's error.
    pub fn dense(&self, op: Dense, rhs: Option<&Array>) -> Result<(Vec<Array>, Array), ArrayError> {
        let name = op.name();
        let shape = self.shape();
        let square = self.ndim() == 2 && shape[0] == shape[1];
        if self.ndim() != 2 || shape[0] == 0 || shape[1] == 0 || op.needs_square() && !square {
            return Err(ArrayError::BadArgument {
                op: name,
                reason: format!(
                    "a non-empty {}matrix is needed, got shape {shape}",
                    if op.needs_square() { "square " } else { "" }
                ),
            });
        }
        let dtype = self.dtype();
        if !matches!(dtype, DType::F64 | DType::F32) {
            return Err(ArrayError::UnsupportedDType {
                op: name,
                dtype,
                expected: "float64 or float32",
            });
        }
        let cx = self.context();
        let rhs = match (op, rhs) {
            (Dense::Solve, Some(b)) => {
                cx.check_same(b.context(), name)?;
                if b.dtype() != dtype {
                    return Err(ArrayError::DTypeMismatch {
                        op: name,
                        lhs: dtype,
                        rhs: b.dtype(),
                    });
                }
                if !matches!(b.ndim(), 1 | 2) || b.shape()[0] != shape[0] {
                    return Err(ArrayError::BadArgument {
                        op: name,
                        reason: format!(
                            "right-hand sides of shape {} do not match a matrix of shape {shape}",
                            b.shape()
                        ),
                    });
                }
                Some(b)
            }
            (Dense::Solve, None) => {
                return Err(ArrayError::BadArgument {
                    op: name,
                    reason: "solve needs right-hand sides".into(),
                })
            }
            _ => None,
        };
        let results = op
            .result_shapes(shape[0], shape[1], rhs.map(|b| b.shape()))
            .iter()
            .map(|s| Array::fresh(cx, Tuple::shape(s)?, dtype))
            .collect::<Result<Vec<_>, _>>()?;
        let status = Array::fresh(cx, Tuple::shape(&[1])?, DType::I64)?;
        let mut task = IndexTask::new(&dense_kind(op, dtype)?, Tuple::shape(&[1])?).arg(
            self.store(),
            whole(self)?,
            Privilege::Read,
        );
        if let Some(b) = rhs {
            task = task.arg(b.store(), whole(b)?, Privilege::Read);
        }
        for out in &results {
            task = task.arg(out.store(), whole(out)?, Privilege::Write);
        }
        let task = task.arg(status.store(), whole(&status)?, Privilege::Write);
        cx.submit(task)?;
        Ok((results, status))
    }
}
