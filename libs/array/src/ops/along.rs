//! Reductions along one axis (NumPy's `sum(a, axis=k, keepdims=...)`, `argmax(a, axis=k)`,
//! ...) and the whole-array arg reductions.
//!
//! A reduction along an axis is one task launched over the blocks of its result: each point
//! reads the whole extent of the axis for its block (a tiling whose tile spans the axis,
//! projected to color 0 there) and writes its block of the result. No partial result crosses
//! points, so every processor count, fused or not, gives the same bits. Values fold in axis
//! order, as NumPy folds a non-contiguous axis.

use std::sync::Arc;

use diffuse_ir::{
    DType, Element, IndexTask, IrError, KernelError, PointTask, Privilege, ProjComponent,
    Projection, ReadView, ReductionOp, Shape, TaskKind, TaskKindBuilder, Tuple, WriteView,
    MAX_DIMS,
};

use crate::array::Array;
use crate::broadcast::block;
use crate::element::{is_numeric, with_arith, Arith};
use crate::error::{ArrayError, ArrayResult};
use crate::kinds::{kind, undefined, Kernel};
use crate::ops::elementwise::{assign, binary, BinaryOp, Operand};
use crate::ops::reduce::{combiner, fold_slice};

/// Which extreme an arg reduction looks for.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ArgOp {
    /// The index of the largest value (NumPy's `argmax`).
    Max,
    /// The index of the smallest value (NumPy's `argmin`).
    Min,
}

impl ArgOp {
    fn name(self) -> &'static str {
        match self {
            ArgOp::Max => "argmax",
            ArgOp::Min => "argmin",
        }
    }

    /// True when `v` replaces the current extreme `best`: strictly more extreme (so the first
    /// occurrence wins), or the first NaN (NaN beats every number, as in NumPy).
    fn better<T: Arith>(self, v: T, best: T) -> bool {
        if best.is_nan() {
            return false;
        }
        v.is_nan()
            || match self {
                ArgOp::Max => best.less(v),
                ArgOp::Min => v.less(best),
            }
    }
}

fn reduction_name(op: ReductionOp) -> &'static str {
    match op {
        ReductionOp::Sum => "sum",
        ReductionOp::Prod => "prod",
        ReductionOp::Max => "max",
        ReductionOp::Min => "min",
    }
}

/// Calls `f(r, lead, row)` for every row `r` of `x`, with `lead` its index in all but the
/// innermost dimension.
fn for_each_row<T: Element>(x: &ReadView<'_, T>, mut f: impl FnMut(usize, &[i64], &[T])) {
    let shape = x.shape();
    let lead_dims = shape.dims().saturating_sub(1);
    let mut lead = [0i64; MAX_DIMS];
    for r in 0..x.rows() {
        f(r, &lead[..lead_dims], x.row(r));
        for d in (0..lead_dims).rev() {
            lead[d] += 1;
            if lead[d] < shape[d] {
                break;
            }
            lead[d] = 0;
        }
    }
}

/// Row-major position, among the result's rows, of the input row at `lead` when `axis` (a
/// lead dimension) is reduced away.
fn result_row(lead: &[i64], axis: usize, shape: Shape) -> usize {
    lead.iter()
        .enumerate()
        .filter(|&(d, _)| d != axis)
        .fold(0i64, |at, (d, &i)| at * shape[d] + i) as usize
}

/// Writes `values` into `out` in row-major order.
pub(crate) fn write_all<T: Element>(out: &mut WriteView<'_, T>, values: &[T]) {
    let mut rest = values;
    for r in 0..out.rows() {
        let row = out.row_mut(r);
        let (now, later) = rest.split_at(row.len());
        row.copy_from_slice(now);
        rest = later;
    }
}

/// The lanes along one axis of a row-major block: the runs of elements `stride` apart,
/// `extent` of them, that are neighbours along the axis.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lanes {
    /// The distance in elements between neighbours along the axis.
    pub(crate) stride: usize,
    /// The axis's extent: elements per lane.
    pub(crate) extent: usize,
    /// The block's elements.
    len: usize,
}

impl Lanes {
    /// The first element of every lane, in row-major order.
    pub(crate) fn starts(self) -> impl Iterator<Item = usize> {
        (0..self.len).filter(move |i| (i / self.stride).is_multiple_of(self.extent))
    }

    /// The elements of the lane starting at `start`, in axis order.
    pub(crate) fn positions(self, start: usize) -> impl Iterator<Item = usize> {
        (0..self.extent).map(move |k| start + k * self.stride)
    }
}

/// The lanes along `axis` of a block of `shape`.
pub(crate) fn lanes_of(shape: Shape, axis: usize) -> Lanes {
    Lanes {
        stride: shape.as_slice()[axis + 1..].iter().product::<i64>().max(1) as usize,
        extent: shape[axis].max(1) as usize,
        len: shape.volume().max(0) as usize,
    }
}

/// Submits `kind` reading `x` into `out` (of `x`'s shape) in blocks that span `axis` and
/// split every other dimension over the launch, the axis in scalar 0 (kernels along an
/// axis that keep its extent: scans, sorts).
pub(crate) fn submit_spanning(
    x: &Array,
    out: &Array,
    kind: &Arc<TaskKind>,
    axis: usize,
) -> Result<(), ArrayError> {
    let cx = x.context();
    let shape = x.shape();
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
    let task = IndexTask::new(kind, launch)
        .arg(
            x.store(),
            x.view().tiling_with(tile, projection.clone())?,
            Privilege::Read,
        )
        .arg(
            out.store(),
            out.view().tiling_with(tile, projection)?,
            Privilege::Write,
        )
        .scalar(axis as i64);
    cx.submit(task)
}

/// The input block (argument 0) of a kernel along an axis, and the axis (scalar 0), checked
/// against the block's rank.
pub(crate) fn along_input<'t, T: Element>(
    task: &'t PointTask<'_>,
) -> Result<(ReadView<'t, T>, usize), KernelError> {
    let x = task.read::<T>(0)?;
    let dims = x.shape().dims();
    let axis = task.scalar::<i64>(0)?;
    let axis = usize::try_from(axis)
        .ok()
        .filter(|&a| a < dims)
        .ok_or_else(|| task.error(format!("axis {axis} of a {dims}-d block")))?;
    Ok((x, axis))
}

/// The kind `array.{op}.{dtype}` of a kernel along an axis: the input `x` (`dtype`, Read),
/// the output `out` (`out`, Write) and the axis as scalar 0, registered by `register` with
/// the kernel for `dtype`.
pub(crate) fn along_kind(
    op: &str,
    dtype: DType,
    out: DType,
    register: impl FnOnce(TaskKindBuilder) -> Result<Arc<TaskKind>, IrError>,
) -> Result<Arc<TaskKind>, ArrayError> {
    kind(format!("array.{op}.{dtype}"), move |b| {
        register(
            b.arg("x", dtype, Privilege::Read)
                .arg("out", out, Privilege::Write)
                .scalar(DType::I64),
        )
    })
}

/// Folds `row` element by element into `acc` by `op`: one loop per operation, so that each
/// vectorizes (a reduction along a leading axis adds whole rows, as NumPy's does).
fn fold_row_into<T: Arith>(op: ReductionOp, acc: &mut [T], row: &[T]) {
    let pairs = acc.iter_mut().zip(row);
    match op {
        ReductionOp::Sum => pairs.for_each(|(a, &v)| *a = a.add(v)),
        ReductionOp::Prod => pairs.for_each(|(a, &v)| *a = a.mul(v)),
        ReductionOp::Max => pairs.for_each(|(a, &v)| *a = a.maximum(v)),
        ReductionOp::Min => pairs.for_each(|(a, &v)| *a = a.minimum(v)),
    }
}

/// A native kernel reducing argument 0 by `op` along the axis in scalar 0 into argument 1.
fn reduce_along_kernel<T: Arith>(op: ReductionOp) -> impl Kernel {
    move |task| {
        let (x, axis) = along_input::<T>(task)?;
        let shape = x.shape();
        let mut out = task.write::<T>(1)?;
        let identity = T::reduction_identity(op);
        let combine = combiner::<T>(op);
        let inner = axis + 1 == shape.dims();
        let row_len = shape[shape.dims() - 1] as usize;
        let mut acc = vec![identity; out.shape().volume().max(0) as usize];
        for_each_row(&x, |r, lead, row| {
            if inner {
                acc[r] = fold_slice(acc[r], identity, row, combine);
            } else {
                let at = result_row(lead, axis, shape) * row_len;
                fold_row_into(op, &mut acc[at..at + row_len], row);
            }
        });
        write_all(&mut out, &acc);
        Ok(())
    }
}

/// A native kernel writing, for argument 0 along the axis in scalar 0, the index of the
/// extreme `op` looks for into argument 1 (`i64`).
fn arg_along_kernel<T: Arith>(op: ArgOp) -> impl Kernel {
    move |task| {
        let (x, axis) = along_input::<T>(task)?;
        let shape = x.shape();
        let mut out = task.write::<i64>(1)?;
        let inner = axis + 1 == shape.dims();
        let row_len = shape[shape.dims() - 1] as usize;
        let len = out.shape().volume().max(0) as usize;
        let mut best: Vec<Option<T>> = vec![None; len];
        let mut at = vec![0i64; len];
        for_each_row(&x, |r, lead, row| {
            if inner {
                let (i, v) = extreme(op, row.iter().copied().enumerate());
                best[r] = v;
                at[r] = i as i64;
            } else {
                let base = result_row(lead, axis, shape) * row_len;
                for (c, &v) in row.iter().enumerate() {
                    let k = base + c;
                    if best[k].is_none_or(|b| op.better(v, b)) {
                        best[k] = Some(v);
                        at[k] = lead[axis];
                    }
                }
            }
        });
        write_all(&mut out, &at);
        Ok(())
    }
}

/// The first index and value of the extreme `op` looks for among `values` (index 0 and
/// `None` when there are none).
fn extreme<T: Arith>(op: ArgOp, values: impl Iterator<Item = (usize, T)>) -> (usize, Option<T>) {
    values.fold((0, None), |(i, best), (j, v)| match best {
        Some(b) if !op.better(v, b) => (i, Some(b)),
        _ => (j, Some(v)),
    })
}

/// A native kernel writing the row-major index, in argument 0's block (the whole array), of
/// the extreme `op` looks for into the 0-d argument 1.
fn arg_kernel<T: Arith>(op: ArgOp) -> impl Kernel {
    move |task| {
        let x = task.read::<T>(0)?;
        let mut out = task.write::<i64>(1)?;
        let row_len = x.shape().as_slice().last().map_or(1, |&n| n as usize);
        let values = (0..x.rows()).flat_map(|r| {
            x.row(r)
                .iter()
                .copied()
                .enumerate()
                .map(move |(c, v)| (r * row_len + c, v))
        });
        let (i, _) = extreme(op, values);
        if out.set(&[], i as i64) {
            Ok(())
        } else {
            Err(task.error("the arg reduction's output is not 0-d"))
        }
    }
}

/// The shape of `x` reduced along `axis`: without it, or with extent 1 there.
fn reduced_shape(x: &Array, axis: usize, keepdims: bool) -> Result<Shape, ArrayError> {
    let mut shape = x.shape().as_slice().to_vec();
    if keepdims {
        shape[axis] = 1;
    } else {
        shape.remove(axis);
    }
    Ok(Tuple::shape(&shape)?)
}

/// Checks `axis` and the dtype for the reduction `op` (its name).
pub(crate) fn check(x: &Array, op: &'static str, axis: usize) -> Result<(), ArrayError> {
    if axis >= x.ndim() {
        return Err(ArrayError::BadArgument {
            op,
            reason: format!(
                "axis {axis} is out of bounds for an array of shape {}",
                x.shape()
            ),
        });
    }
    if !is_numeric(x.dtype()) {
        return Err(ArrayError::UnsupportedDType {
            op,
            dtype: x.dtype(),
            expected: "a numeric dtype; convert with astype",
        });
    }
    Ok(())
}

/// Submits `kind` reducing `x` along `axis` into `out` (of `x`'s shape reduced along
/// `axis`), launched over `out`'s blocks.
fn submit_along(
    x: &Array,
    out: &Array,
    kind: &Arc<TaskKind>,
    axis: usize,
    keepdims: bool,
) -> Result<(), ArrayError> {
    let cx = x.context();
    let out_shape = out.shape();
    let launch = cx.launch_for(out_shape);
    let input = x.shape();
    let mut tile = Vec::with_capacity(input.dims());
    let mut comps = Vec::with_capacity(input.dims());
    for d in 0..input.dims() {
        if d == axis {
            tile.push(input[d].max(1));
            comps.push(ProjComponent::Const(0));
        } else {
            let od = if keepdims || d < axis { d } else { d - 1 };
            tile.push(block(out_shape[od], launch[od]));
            comps.push(ProjComponent::Dim(od));
        }
    }
    let projection = Projection::new(out_shape.dims(), &comps)?;
    let task = IndexTask::new(kind, launch)
        .arg(
            x.store(),
            x.view().tiling_with(Tuple::shape(&tile)?, projection)?,
            Privilege::Read,
        )
        .arg(
            out.store(),
            out.partition_for(out_shape, launch)?,
            Privilege::Write,
        )
        .scalar(axis as i64);
    cx.submit(task)
}

impl Array {
    /// NumPy's `sum`/`prod`/`max`/`min(self, axis=axis, keepdims=keepdims)` for numeric
    /// arrays: `op` folded along `axis`, in the array's dtype (integers wrap; `max` and
    /// `min` propagate NaN). An empty axis gives 0 for `Sum`, 1 for `Prod` and an error for
    /// `Max` and `Min`.
    pub fn reduce_along(&self, op: ReductionOp, axis: usize, keepdims: bool) -> ArrayResult {
        let name = reduction_name(op);
        check(self, name, axis)?;
        let dtype = self.dtype();
        let out = Array::fresh(self.context(), reduced_shape(self, axis, keepdims)?, dtype)?;
        if out.is_empty() {
            return Ok(out);
        }
        if self.shape()[axis] == 0 {
            return match op {
                ReductionOp::Sum => Ok(out),
                ReductionOp::Prod => {
                    with_arith!(dtype, T => assign(&out, Operand::Scalar(T::reduction_identity(op).into_scalar()))?, else {});
                    Ok(out)
                }
                _ => Err(ArrayError::EmptyReduction {
                    op: name,
                    shape: Box::new(self.shape()),
                }),
            };
        }
        let kind = along_kind(
            &format!("{name}_along"),
            dtype,
            dtype,
            |b| with_arith!(dtype, T => b.register(reduce_along_kernel::<T>(op)), else undefined(name, dtype)),
        )?;
        submit_along(self, &out, &kind, axis, keepdims)?;
        Ok(out)
    }

    /// NumPy's `mean(self, axis=axis, keepdims=keepdims)` for float arrays: the sum along
    /// `axis` divided by its extent; an error when the axis is empty.
    pub fn mean_along(&self, axis: usize, keepdims: bool) -> ArrayResult {
        check(self, "mean", axis)?;
        if !crate::element::is_float(self.dtype()) {
            return Err(ArrayError::UnsupportedDType {
                op: "mean",
                dtype: self.dtype(),
                expected: "a float dtype; convert with astype",
            });
        }
        let n = self.shape()[axis];
        if n == 0 {
            return Err(ArrayError::EmptyReduction {
                op: "mean",
                shape: Box::new(self.shape()),
            });
        }
        let sum = self.reduce_along(ReductionOp::Sum, axis, keepdims)?;
        binary(BinaryOp::Div, &sum, n as f64)
    }

    /// NumPy's `argmax`/`argmin(self, axis=axis, keepdims=keepdims)`: for each position
    /// of the other axes, the index along `axis` of the first largest (smallest) value, or
    /// of the first NaN; `i64`. An error when the axis is empty.
    pub fn arg_along(&self, op: ArgOp, axis: usize, keepdims: bool) -> ArrayResult {
        let name = op.name();
        check(self, name, axis)?;
        let dtype = self.dtype();
        let out = Array::fresh(
            self.context(),
            reduced_shape(self, axis, keepdims)?,
            DType::I64,
        )?;
        if out.is_empty() {
            return Ok(out);
        }
        if self.shape()[axis] == 0 {
            return Err(ArrayError::EmptyReduction {
                op: name,
                shape: Box::new(self.shape()),
            });
        }
        let kind = along_kind(
            &format!("{name}_along"),
            dtype,
            DType::I64,
            |b| with_arith!(dtype, T => b.register(arg_along_kernel::<T>(op)), else undefined(name, dtype)),
        )?;
        submit_along(self, &out, &kind, axis, keepdims)?;
        Ok(out)
    }

    /// NumPy's `argmax(self)`: the row-major index of the first largest value (or of the
    /// first NaN), as a 0-d `i64` array; an error for an empty array.
    pub fn argmax(&self) -> ArrayResult {
        self.arg(ArgOp::Max)
    }

    /// NumPy's `argmin(self)`: the row-major index of the first smallest value (or of the
    /// first NaN), as a 0-d `i64` array; an error for an empty array.
    pub fn argmin(&self) -> ArrayResult {
        self.arg(ArgOp::Min)
    }

    fn arg(&self, op: ArgOp) -> ArrayResult {
        let name = op.name();
        let dtype = self.dtype();
        if !is_numeric(dtype) {
            return Err(ArrayError::UnsupportedDType {
                op: name,
                dtype,
                expected: "a numeric dtype; convert with astype",
            });
        }
        if self.is_empty() {
            return Err(ArrayError::EmptyReduction {
                op: name,
                shape: Box::new(self.shape()),
            });
        }
        let cx = self.context();
        let out = Array::fresh(cx, Tuple::shape(&[])?, DType::I64)?;
        let kind = kind(format!("array.{name}.{dtype}"), move |b| {
            let b = b
                .arg("x", dtype, Privilege::Read)
                .arg("out", DType::I64, Privilege::Write);
            with_arith!(dtype, T => b.register(arg_kernel::<T>(op)), else undefined(name, dtype))
        })?;
        // One point: the index is over the whole array, in row-major order.
        let launch = Tuple::shape(&[1])?;
        let task = IndexTask::new(&kind, launch)
            .arg(self.store(), self.view().whole(1)?, Privilege::Read)
            .arg(out.store(), out.view().whole(1)?, Privilege::Write);
        cx.submit(task)?;
        Ok(out)
    }
}
