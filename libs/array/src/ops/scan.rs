//! Cumulative sums and products along one axis (NumPy's `cumsum` and `cumprod`).
//!
//! One task over blocks of the array that span the axis: each point reads its block of the
//! input and writes the same block of the result, folding along the axis in order,
//! `out[k] = out[k - 1] (op) x[k]`, as NumPy does, so the results are NumPy's bit for bit.
//! No value crosses points: every processor count gives the same bits.

use diffuse_ir::ReductionOp;

use crate::array::Array;
use crate::element::{with_arith, Arith};
use crate::error::ArrayResult;
use crate::kinds::{undefined, Kernel};
use crate::ops::along::{along_input, along_kind, check, lanes_of, submit_spanning, write_all};
use crate::ops::reduce::combiner;

/// A native kernel writing the running fold by `op` of argument 0 along the axis in scalar 0
/// into argument 1 (of the same shape).
fn scan_kernel<T: Arith>(op: ReductionOp) -> impl Kernel {
    move |task| {
        let (x, axis) = along_input::<T>(task)?;
        let shape = x.shape();
        let mut values: Vec<T> = Vec::with_capacity(shape.volume().max(0) as usize);
        for r in 0..x.rows() {
            values.extend_from_slice(x.row(r));
        }
        let lanes = lanes_of(shape, axis);
        let combine = combiner::<T>(op);
        for i in 0..values.len() {
            if !(i / lanes.stride).is_multiple_of(lanes.extent) {
                values[i] = combine(values[i - lanes.stride], values[i]);
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
            |b| with_arith!(dtype, T => b.register(scan_kernel::<T>(op)), else undefined(name, dtype)),
        )?;
        submit_spanning(self, &out, &kind, axis)?;
        Ok(out)
    }
}
