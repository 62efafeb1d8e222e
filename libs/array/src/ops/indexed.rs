//! Integer-array indexing (NumPy's `a[i0, i1, ...]` with one integer index array per
//! dimension of `a`, broadcast together): [`Array::gather_indexed`] reads the indexed
//! elements into a new array of the indices' shape (one task over the result's blocks,
//! reading `a`'s store whole); [`Array::scatter_indexed`] writes values to them (one
//! single-point task, in row-major order of the indices, so where positions repeat the last
//! value stays, as in NumPy). Negative indices count from the end; an index out of range
//! fails the task with NumPy's message, reported when the work runs.

use std::sync::Arc;

use diffuse_ir::{
    DType, Element, IndexTask, KernelError, Partition, PointTask, Privilege, Shape, TaskKind,
    Tuple, MAX_DIMS,
};

use crate::array::Array;
use crate::broadcast::broadcast_shapes;
use crate::element::with_any;
use crate::error::{ArrayError, ArrayResult};
use crate::kernels::{for_each_out_row, Broadcast, Row};
use crate::kinds::{kind, Kernel};
use crate::ops::elementwise::{unary, UnaryOp};

/// The indexed array's window in its store, as the kernels get it: per dimension the
/// window's offset (scalars `0..k`) and extent (scalars `k..2k`).
struct Window {
    offset: [i64; MAX_DIMS],
    extent: [i64; MAX_DIMS],
    dims: usize,
}

impl Window {
    fn of_task(task: &PointTask<'_>, dims: usize) -> Result<Self, KernelError> {
        let (mut offset, mut extent) = ([0i64; MAX_DIMS], [0i64; MAX_DIMS]);
        for d in 0..dims {
            offset[d] = task.scalar::<i64>(d)?;
            extent[d] = task.scalar::<i64>(dims + d)?;
        }
        Ok(Window {
            offset,
            extent,
            dims,
        })
    }

    /// The store position of the element at window index `index` (negative counts from the
    /// end), or NumPy's message for an index out of range.
    #[inline]
    fn locate(&self, index: &[i64; MAX_DIMS], at: &mut [i64]) -> Result<(), String> {
        for d in 0..self.dims {
            let (i, n) = (index[d], self.extent[d]);
            if i < -n || i >= n {
                return Err(format!(
                    "index {i} is out of bounds for axis {d} with size {n}"
                ));
            }
            at[d] = self.offset[d] + if i < 0 { i + n } else { i };
        }
        Ok(())
    }
}

/// Element `j` of an operand's row.
#[inline]
fn nth<T: Copy>(row: Row<'_, T>, j: usize) -> T {
    match row {
        Row::Slice(s) => s[j],
        Row::Splat(v) => v,
    }
}

/// The index arrays (arguments `first..first + dims`) resolved against a `shape`-shaped
/// iteration.
fn index_sources<'t>(
    task: &'t PointTask<'_>,
    first: usize,
    dims: usize,
    shape: Shape,
) -> Result<Vec<Broadcast<'t, i64>>, KernelError> {
    (first..first + dims)
        .map(|arg| Broadcast::new(task, arg, shape))
        .collect()
}

/// A native kernel copying the elements of argument 0 (a whole store) at the indices
/// (arguments `1..=dims`) into this point's block of argument `dims + 1`.
fn gather_kernel<T: Element>(dims: usize) -> impl Kernel {
    move |task| {
        let window = Window::of_task(task, dims)?;
        let base = task.read::<T>(0)?;
        let mut out = task.write::<T>(dims + 1)?;
        let indices = index_sources(task, 1, dims, out.shape())?;
        let mut failure = None;
        let (mut index, mut at) = ([0i64; MAX_DIMS], [0i64; MAX_DIMS]);
        for_each_out_row(&mut out, |row, lead| {
            if failure.is_some() {
                return;
            }
            let rows: Vec<Row<'_, i64>> = indices.iter().map(|b| b.row(lead)).collect();
            for (j, x) in row.iter_mut().enumerate() {
                for (d, r) in rows.iter().enumerate() {
                    index[d] = nth(*r, j);
                }
                match window.locate(&index, &mut at[..dims]) {
                    Ok(()) => match base.get(&at[..dims]) {
                        Some(v) => *x = v,
                        None => failure = Some("an index leaves the store".to_string()),
                    },
                    Err(e) => failure = Some(e),
                }
                if failure.is_some() {
                    return;
                }
            }
        });
        match failure {
            Some(reason) => Err(task.error(reason)),
            None => Ok(()),
        }
    }
}

/// A native kernel writing argument 0 (the values, broadcast to the indices' shape) at the
/// indices (arguments `1..=dims`) that fall in this point's band of argument `dims + 1`, in
/// row-major order (so within a band, the last of repeated positions stays, as NumPy's).
/// Every point reads all values and indices; the bands partition the indexed window.
fn scatter_kernel<T: Element>(dims: usize) -> impl Kernel {
    move |task| {
        let window = Window::of_task(task, dims)?;
        let shape = broadcast_of_args(task, 1, dims)?;
        let values = Broadcast::<T>::new(task, 0, shape)?;
        let indices = index_sources(task, 1, dims, shape)?;
        let band = task.sub_store(dims + 1)?;
        let mut base = task.write::<T>(dims + 1)?;
        let mut local = [0i64; MAX_DIMS];
        let (mut index, mut at) = ([0i64; MAX_DIMS], [0i64; MAX_DIMS]);
        let rank = shape.dims();
        let (rows, row_len) = match rank {
            0 => (1, 1),
            _ => (
                shape.volume() / shape[rank - 1].max(1),
                shape[rank - 1] as usize,
            ),
        };
        let mut lead = [0i64; MAX_DIMS];
        let lead_dims = rank.saturating_sub(1);
        for _ in 0..rows {
            let lead_now = &lead[..lead_dims];
            let value_row = values.row(lead_now);
            let index_rows: Vec<Row<'_, i64>> = indices.iter().map(|b| b.row(lead_now)).collect();
            for j in 0..row_len {
                for (d, r) in index_rows.iter().enumerate() {
                    index[d] = nth(*r, j);
                }
                window
                    .locate(&index, &mut at[..dims])
                    .map_err(|e| task.error(e))?;
                if (0..dims).any(|d| at[d] < band.lo[d] || at[d] >= band.hi[d]) {
                    continue; // another point's band
                }
                for d in 0..dims {
                    local[d] = at[d] - band.lo[d];
                }
                if !base.set(&local[..dims], nth(value_row, j)) {
                    return Err(task.error("an index leaves the store"));
                }
            }
            for d in (0..lead_dims).rev() {
                lead[d] += 1;
                if lead[d] < shape[d] {
                    break;
                }
                lead[d] = 0;
            }
        }
        Ok(())
    }
}

/// The broadcast shape of the (whole) index arguments `first..first + dims`.
fn broadcast_of_args(
    task: &PointTask<'_>,
    first: usize,
    dims: usize,
) -> Result<Shape, KernelError> {
    let mut shape = task.sub_store(first)?.extent();
    for arg in first + 1..first + dims {
        shape = broadcast_shapes("scatter_indexed", shape, task.sub_store(arg)?.extent())
            .map_err(|e| task.error(e.to_string()))?;
    }
    Ok(shape)
}

/// The kind of `op` (`gather` or `scatter`) through `dims` index arrays for `dtype`.
fn indexed_kind(op: &'static str, dtype: DType, dims: usize) -> Result<Arc<TaskKind>, ArrayError> {
    kind(format!("array.{op}_indexed.{dtype}.r{dims}"), move |b| {
        let mut b = if op == "gather" {
            b.arg("from", dtype, Privilege::Read)
        } else {
            b.arg("values", dtype, Privilege::Read)
        };
        for _ in 0..dims {
            b = b.arg("index", DType::I64, Privilege::Read);
        }
        b = if op == "gather" {
            b.arg("to", dtype, Privilege::Write)
        } else {
            b.arg("to", dtype, Privilege::ReadWrite)
        };
        for _ in 0..2 * dims {
            b = b.scalar(DType::I64);
        }
        if op == "gather" {
            with_any!(dtype, T => b.register(gather_kernel::<T>(dims)))
        } else {
            with_any!(dtype, T => b.register(scatter_kernel::<T>(dims)))
        }
    })
}

impl Array {
    /// Checks one int64 index array per dimension, all from this array's context, and
    /// returns the shape they broadcast to.
    fn index_shape(&self, op: &'static str, indices: &[&Array]) -> Result<Shape, ArrayError> {
        if indices.len() != self.ndim() || self.ndim() == 0 {
            return Err(ArrayError::BadArgument {
                op,
                reason: format!(
                    "{} index arrays given for an array of {} dimensions (one per dimension)",
                    indices.len(),
                    self.ndim()
                ),
            });
        }
        let mut shape = indices[0].shape();
        for index in indices {
            self.context().check_same(index.context(), op)?;
            if index.dtype() != DType::I64 {
                return Err(ArrayError::UnsupportedDType {
                    op,
                    dtype: index.dtype(),
                    expected: "int64 index arrays",
                });
            }
            shape = broadcast_shapes(op, shape, index.shape())?;
        }
        Ok(shape)
    }

    /// Appends the window scalars (offset then extent per dimension) to `task`.
    fn with_window(&self, mut task: IndexTask) -> IndexTask {
        for &o in self.view().offset().as_slice() {
            task = task.scalar(o);
        }
        for &n in self.shape().as_slice() {
            task = task.scalar(n);
        }
        task
    }

    /// NumPy's `self[i0, i1, ...]` with one int64 index array per dimension (broadcast
    /// together): a new array of the indices' shape holding the indexed elements.
    pub fn gather_indexed(&self, indices: &[&Array]) -> ArrayResult {
        const OP: &str = "gather_indexed";
        let shape = self.index_shape(OP, indices)?;
        let out = Array::fresh(self.context(), shape, self.dtype())?;
        if out.is_empty() {
            return Ok(out);
        }
        let dims = self.ndim();
        let kind = indexed_kind("gather", self.dtype(), dims)?;
        let cx = self.context();
        let launch = cx.launch_for(shape);
        let mut task = IndexTask::new(&kind, launch).arg(
            self.store(),
            Partition::replicate(),
            Privilege::Read,
        );
        for index in indices {
            task = task.arg(
                index.store(),
                index.partition_for(shape, launch)?,
                Privilege::Read,
            );
        }
        let task = task.arg(
            out.store(),
            out.partition_for(shape, launch)?,
            Privilege::Write,
        );
        cx.submit(self.with_window(task))?;
        Ok(out)
    }

    /// NumPy's `self[i0, i1, ...] = values` with one int64 index array per dimension:
    /// `values` (this array's dtype) broadcasts to the indices' shape and is written in
    /// row-major order of the indices (the last of repeated positions stays).
    pub fn scatter_indexed(&self, indices: &[&Array], values: &Array) -> Result<(), ArrayError> {
        const OP: &str = "scatter_indexed";
        let shape = self.index_shape(OP, indices)?;
        self.check_values(OP, values)?;
        crate::broadcast::check_broadcasts_to(OP, values.shape(), shape)?;
        if shape.volume() == 0 {
            return Ok(());
        }
        // The task reads the values and indices whole while it updates the store in place:
        // operands held in that store are copied first.
        let own = |a: &Array| -> ArrayResult {
            if a.shares_store(self) {
                unary(UnaryOp::Copy, a)
            } else {
                Ok(a.clone())
            }
        };
        let values = own(values)?;
        let indices: Vec<Array> = indices.iter().map(|a| own(a)).collect::<Result<_, _>>()?;
        let dims = self.ndim();
        let kind = indexed_kind("scatter", self.dtype(), dims)?;
        // Each point updates one band of whole rows of the indexed window in place, reading
        // every value and index; a 0-d array is one point over its whole store.
        let (launch, target) = if dims == 0 {
            (Tuple::shape(&[1])?, Partition::replicate())
        } else {
            let launch = self.context().partitioner().row_blocks(self.shape());
            (launch, self.view().blocked(launch)?)
        };
        let everything = launch.dims();
        let mut task = IndexTask::new(&kind, launch).arg(
            values.store(),
            values.view().whole(everything)?,
            Privilege::Read,
        );
        for index in &indices {
            task = task.arg(
                index.store(),
                index.view().whole(everything)?,
                Privilege::Read,
            );
        }
        let task = task.arg(self.store(), target, Privilege::ReadWrite);
        self.context().submit(self.with_window(task))?;
        Ok(())
    }
}
