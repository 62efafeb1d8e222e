//! Cumulative sums and products along one axis (NumPy's `cumsum` and `cumprod`).
//!
//! One task over blocks of the array that span the axis: each point reads its block of the
//! input and writes the same block of the result, folding along the axis in order,
//! `out[k] = out[k - 1] (op) x[k]`, as NumPy does, so the results are NumPy's bit for bit.
//! No value crosses points: every processor count gives the same bits.

use diffuse_ir::{IndexTask, Privilege, ProjComponent, Projection, ReductionOp, Tuple};

use crate::array::Array;
use crate::broadcast::block;
use crate::element::{with_numeric, Num};
use crate::error::ArrayResult;
use crate::kinds::{undefined, Kernel};
use crate::ops::along::{along_input, along_kind, check, write_all};
use crate::ops::reduce::combiner;

/// A native kernel writing the running fold by `op` of argument 0 along the axis in scalar 0
/// into argument 1 (of the same shape).
fn scan_kernel<T: Num>(op: ReductionOp) -> impl Kernel {
    move |task| {
        let (x, axis) = along_input::<T>(task)?;
        let shape = x.shape();
        let mut values: Vec<T> = Vec::with_capacity(shape.volume().max(0) as usize);
        for r in 0..x.rows() {
            values.extend_from_slice(x.row(r));
        }
        // Elements `stride` apart in row-major order are neighbours along the axis.
        let stride = shape.as_slice()[axis + 1..].iter().product::<i64>().max(1) as usize;
        let extent = shape[axis].max(1) as usize;
        let combine = combiner::<T>(op);
        for i in 0..values.len() {
            if !(i / stride).is_multiple_of(extent) {
                values[i] = combine(values[i - stride], values[i]);
            }
        }
        let mut out = task.write::<T>(1)?;
        write_all(&mut out, &values);
        Ok(())
    }
}

impl Array {
    /// NumPy's `cumsum(self, axis=axis)` (`Sum`) or `cumprod` (`Prod`) for numeric arrays,
    /// in the array's dtype (integers wrap): element `k` along `axis` is the fold of
    /// elements `0..=k`.
    pub fn cumulate(&self, op: ReductionOp, axis: usize) -> ArrayResult {
        let name = match op {
            ReductionOp::Sum => "cumsum",
            ReductionOp::Prod => "cumprod",
            ReductionOp::Max => "cummax",
            ReductionOp::Min => "cummin",
        };
        check(self, name, axis)?;
        let dtype = self.dtype();
        let shape = self.shape();
        let out = Array::fresh(self.context(), shape, dtype)?;
        if out.is_empty() {
            return Ok(out);
        }
        let kind = along_kind(
            name,
            dtype,
            dtype,
            |b| with_numeric!(dtype, T => b.register(scan_kernel::<T>(op)), else undefined(name, dtype)),
        )?;
        // Blocks over every dimension but the axis, which each block spans.
        let cx = self.context();
        let mut across = shape.as_slice().to_vec();
        across[axis] = 1;
        let mut launch = cx.launch_for(Tuple::shape(&across)?).as_slice().to_vec();
        launch[axis] = 1;
        let launch = Tuple::shape(&launch)?;
        let tile: Vec<i64> = (0..shape.dims())
            .map(|d| {
                if d == axis {
                    shape[d]
                } else {
                    block(shape[d], launch[d])
                }
            })
            .collect();
        let tile = Tuple::shape(&tile)?;
        let identity: Vec<ProjComponent> = (0..shape.dims()).map(ProjComponent::Dim).collect();
        let projection = Projection::new(shape.dims(), &identity)?;
        let task = IndexTask::new(&kind, launch)
            .arg(
                self.store(),
                self.view().tiling_with(tile, projection.clone())?,
                Privilege::Read,
            )
            .arg(
                out.store(),
                out.view().tiling_with(tile, projection)?,
                Privilege::Write,
            )
            .scalar(axis as i64);
        cx.submit(task)?;
        Ok(out)
    }
}
