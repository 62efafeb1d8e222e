//! Selecting the elements where a boolean mask holds (NumPy's `a[mask]`, `extract` and
//! `nonzero`): the result's length depends on the data, so the mask's count is read back
//! first (the pending work runs), then one single-point task compacts the selected elements
//! (or their indices) in row-major order.

use diffuse_ir::{DType, IndexTask, KernelError, PointTask, Privilege, Tuple};

use crate::array::Array;
use crate::element::with_any;
use crate::error::{ArrayError, ArrayResult};
use crate::kinds::kind;
use crate::ops::along::write_all;

/// A native kernel writing the elements of argument 0 where the boolean argument 1 (of the
/// same shape) holds into the 1-d argument 2, row-major.
fn select_kernel<T: diffuse_ir::Element>(
) -> impl Fn(&PointTask<'_>) -> Result<(), KernelError> + Send + Sync + 'static {
    |task| {
        let x = task.read::<T>(0)?;
        let mask = task.read::<bool>(1)?;
        let mut selected = Vec::new();
        for r in 0..x.rows() {
            selected.extend(
                x.row(r)
                    .iter()
                    .zip(mask.row(r))
                    .filter(|(_, &keep)| keep)
                    .map(|(&v, _)| v),
            );
        }
        let mut out = task.write::<T>(2)?;
        if selected.len() as i64 != out.shape().volume() {
            return Err(task.error(format!(
                "the mask selects {} elements, the result holds {}",
                selected.len(),
                out.shape().volume()
            )));
        }
        write_all(&mut out, &selected);
        Ok(())
    }
}

/// A native kernel writing, for every element of the boolean argument 0 that holds
/// (row-major), its index along dimension `d` into the 1-d argument `1 + d`.
fn nonzero_kernel(
    dims: usize,
) -> impl Fn(&PointTask<'_>) -> Result<(), KernelError> + Send + Sync + 'static {
    move |task| {
        let mask = task.read::<bool>(0)?;
        let shape = mask.shape();
        let mut outs = (0..dims)
            .map(|d| task.write::<i64>(1 + d))
            .collect::<Result<Vec<_>, _>>()?;
        let mut columns: Vec<Vec<i64>> = vec![Vec::new(); dims];
        let mut lead = vec![0i64; dims.saturating_sub(1)];
        for r in 0..mask.rows() {
            for (i, &keep) in mask.row(r).iter().enumerate() {
                if keep {
                    for (d, column) in columns.iter_mut().enumerate() {
                        column.push(if d + 1 == dims { i as i64 } else { lead[d] });
                    }
                }
            }
            for d in (0..lead.len()).rev() {
                lead[d] += 1;
                if lead[d] < shape[d] {
                    break;
                }
                lead[d] = 0;
            }
        }
        for (out, column) in outs.iter_mut().zip(&columns) {
            if column.len() as i64 != out.shape().volume() {
                return Err(task.error(format!(
                    "the mask holds {} elements, the result has room for {}",
                    column.len(),
                    out.shape().volume()
                )));
            }
            write_all(out, column);
        }
        Ok(())
    }
}

impl Array {
    /// NumPy's `nonzero` for a boolean array of one or more dimensions: per dimension, the
    /// int64 indices of the elements that hold, row-major. Reads the count back (waiting for
    /// the work pending on `self`), then one task writes every dimension's indices.
    pub fn nonzero(&self) -> Result<Vec<Array>, ArrayError> {
        const OP: &str = "nonzero";
        if self.dtype() != DType::Bool {
            return Err(ArrayError::UnsupportedDType {
                op: OP,
                dtype: self.dtype(),
                expected: "a bool mask",
            });
        }
        let dims = self.ndim();
        if dims == 0 {
            return Err(ArrayError::BadArgument {
                op: OP,
                reason: "a 0-d array has no indices".into(),
            });
        }
        let count = if self.is_empty() {
            0
        } else {
            self.astype(DType::I64)?.sum()?.item::<i64>()?
        };
        let cx = self.context();
        let outs = (0..dims)
            .map(|_| Array::fresh(cx, Tuple::shape(&[count])?, DType::I64))
            .collect::<Result<Vec<_>, _>>()?;
        if count == 0 {
            return Ok(outs);
        }
        let kind = kind(format!("array.nonzero.r{dims}"), move |b| {
            let mut b = b.arg("mask", DType::Bool, Privilege::Read);
            for _ in 0..dims {
                b = b.arg("index", DType::I64, Privilege::Write);
            }
            b.register(nonzero_kernel(dims))
        })?;
        let mut task = IndexTask::new(&kind, Tuple::shape(&[1])?).arg(
            self.store(),
            self.view().whole(1)?,
            Privilege::Read,
        );
        for out in &outs {
            task = task.arg(out.store(), out.view().whole(1)?, Privilege::Write);
        }
        cx.submit(task)?;
        Ok(outs)
    }

    /// NumPy's `self[mask]` for a boolean `mask` of this array's shape: the elements where
    /// it holds, row-major, as a 1-d array. Reads the number of selected elements back
    /// (waiting for the work pending on `mask`).
    pub fn select(&self, mask: &Array) -> ArrayResult {
        const OP: &str = "select";
        self.context().check_same(mask.context(), OP)?;
        if mask.dtype() != DType::Bool {
            return Err(ArrayError::UnsupportedDType {
                op: OP,
                dtype: mask.dtype(),
                expected: "a bool mask",
            });
        }
        if mask.shape() != self.shape() {
            return Err(ArrayError::ShapeMismatch {
                op: OP,
                lhs: Box::new(self.shape()),
                rhs: Box::new(mask.shape()),
            });
        }
        let count = if self.is_empty() {
            0
        } else {
            mask.astype(DType::I64)?.sum()?.item::<i64>()?
        };
        let cx = self.context();
        let dtype = self.dtype();
        let out = Array::fresh(cx, Tuple::shape(&[count])?, dtype)?;
        if count == 0 {
            return Ok(out);
        }
        let kind = kind(format!("array.select.{dtype}"), move |b| {
            let b = b
                .arg("x", dtype, Privilege::Read)
                .arg("mask", DType::Bool, Privilege::Read)
                .arg("out", dtype, Privilege::Write);
            with_any!(dtype, T => b.register(select_kernel::<T>()))
        })?;
        // One point: the positions depend on every element before them.
        let launch = Tuple::shape(&[1])?;
        let task = IndexTask::new(&kind, launch)
            .arg(self.store(), self.view().whole(1)?, Privilege::Read)
            .arg(mask.store(), mask.view().whole(1)?, Privilege::Read)
            .arg(out.store(), out.view().whole(1)?, Privilege::Write);
        cx.submit(task)?;
        Ok(out)
    }
}
