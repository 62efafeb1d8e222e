//! Dense factorizations and solves of one square matrix (NumPy's `linalg.cholesky`, `inv`,
//! `det` and `solve`): one task of one point, which reads the whole matrix, factors it with
//! `faer` and writes the result, and a status the caller reads to raise NumPy's error
//! (a matrix that is not positive definite, or singular).
//!
//! One point suits the matrices such programs factor (up to a few thousand rows: faer's
//! blocked factorizations use the host's cores); a matrix too large for one host would need
//! tiled algorithms over the launch, which this does not do.

use std::sync::Arc;

use diffuse_ir::{
    DType, IndexTask, KernelError, Partition, PointTask, Privilege, ProjComponent, Projection,
    TaskKind, Tuple,
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
}

impl Dense {
    fn name(self) -> &'static str {
        match self {
            Dense::Cholesky => "cholesky",
            Dense::Inverse => "inv",
            Dense::Determinant => "det",
            Dense::Solve => "solve",
        }
    }
}

/// The status a dense operation writes: the matrix was factored.
pub const FACTORED: i64 = 0;
/// The status a dense operation writes: the matrix is not positive definite (Cholesky) or
/// singular (an exact zero pivot: inverse and solve).
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

/// The kernel of `op`: argument 0 the matrix, then the right-hand sides (`Solve`), the
/// result and the status.
fn dense_kernel<T: Factor>(op: Dense) -> impl Kernel {
    move |task| {
        let a = matrix::<T>(task, 0)?;
        let (out, status) = match op {
            Dense::Solve => (2, 3),
            _ => (1, 2),
        };
        let factored = match op {
            Dense::Cholesky => match a.llt(Side::Lower) {
                Ok(llt) => {
                    let l = llt.L();
                    let lower = Mat::from_fn(l.nrows(), l.ncols(), |r, c| {
                        if c <= r {
                            l[(r, c)]
                        } else {
                            T::zero()
                        }
                    });
                    write_matrix(task, out, lower.as_ref())?;
                    true
                }
                Err(_) => false,
            },
            Dense::Determinant => {
                let det = a.determinant();
                task.write::<T>(out)?.row_mut(0)[0] = det;
                true
            }
            Dense::Inverse | Dense::Solve => {
                let lu = a.partial_piv_lu();
                let ok = !singular(&lu);
                if ok {
                    let x = match op {
                        Dense::Inverse => lu.inverse(),
                        _ => lu.solve(matrix::<T>(task, 1)?),
                    };
                    write_matrix(task, out, x.as_ref())?;
                }
                ok
            }
        };
        let code = if factored { FACTORED } else { NOT_FACTORED };
        write_status(task, status, code)
    }
}

/// The task kind of `op` on `dtype`.
fn dense_kind(op: Dense, dtype: DType) -> Result<Arc<TaskKind>, ArrayError> {
    kind(format!("array.linalg.{}.{dtype}", op.name()), move |b| {
        let b = b.arg("a", dtype, Privilege::Read);
        let b = if op == Dense::Solve {
            b.arg("b", dtype, Privilege::Read)
        } else {
            b
        };
        let b = b
            .arg("out", dtype, Privilege::Write)
            .arg("status", DType::I64, Privilege::Write);
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
    /// NumPy's `linalg` operation `op` of this square float matrix (`rhs`: the right-hand
    /// sides of `Solve`, a vector or a matrix with as many rows), computed on one point:
    /// the result, and a one-element int64 status, [`FACTORED`] or [`NOT_FACTORED`] (the
    /// result's elements are then unspecified), which the caller reads to raise NumPy's
    /// error. The determinant is a 0-d array.
    pub fn dense(&self, op: Dense, rhs: Option<&Array>) -> Result<(Array, Array), ArrayError> {
        let name = op.name();
        let shape = self.shape();
        if self.ndim() != 2 || shape[0] != shape[1] || shape[0] == 0 {
            return Err(ArrayError::BadArgument {
                op: name,
                reason: format!("a non-empty square matrix is needed, got shape {shape}"),
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
        let out_shape = match (op, rhs) {
            (Dense::Determinant, _) => Tuple::shape(&[])?,
            (_, Some(b)) => b.shape(),
            _ => shape,
        };
        let out = Array::fresh(cx, out_shape, dtype)?;
        let status = Array::fresh(cx, Tuple::shape(&[1])?, DType::I64)?;
        let mut task = IndexTask::new(&dense_kind(op, dtype)?, Tuple::shape(&[1])?).arg(
            self.store(),
            whole(self)?,
            Privilege::Read,
        );
        if let Some(b) = rhs {
            task = task.arg(b.store(), whole(b)?, Privilege::Read);
        }
        let task = task.arg(out.store(), whole(&out)?, Privilege::Write).arg(
            status.store(),
            whole(&status)?,
            Privilege::Write,
        );
        cx.submit(task)?;
        Ok((out, status))
    }
}
