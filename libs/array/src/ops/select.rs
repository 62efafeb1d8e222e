//! Selecting the elements where a boolean mask holds (NumPy's `a[mask]` and `extract`):
//! the result's length depends on the data, so the mask's count is read back first (the
//! pending work runs), then one single-point task compacts the selected elements in
//! row-major order.

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

impl Array {
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
