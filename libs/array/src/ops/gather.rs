//! Strided views: NumPy's general view model over a store, read by copying and written by
//! scattering.
//!
//! An [`Array`] is a box (a step-1 window) of a store, which is what partitions can express
//! and what fuses. NumPy's other views (steps, negative steps, transposes, `newaxis`,
//! reshapes of contiguous data) select elements `offset + Σ strides[d] * i[d]` of the store in
//! row-major order. [`Array::gather_strided`] copies such a selection into a new array (one
//! task, launched over the result's blocks, reading the whole store), and
//! [`Array::scatter_strided`] writes an array of values back into it (one single-point task
//! updating the whole store in place). A front end keeps the strided description and
//! gathers when it needs the values, so writes through the base array stay visible.

use std::sync::Arc;

use diffuse_ir::{
    DType, Element, IndexTask, KernelError, Partition, PointTask, Privilege, ReadView, Shape,
    TaskKind, Tuple, View, MAX_DIMS,
};

use crate::array::Array;
use crate::element::with_any;
use crate::error::{ArrayError, ArrayResult};
use crate::kernels::for_each_out_row;
use crate::kinds::{kind, Kernel};
use crate::ops::elementwise::{unary, UnaryOp};

/// A selection of a store's elements in NumPy's strided model: element `i` of the selection
/// is element `offset + Σ strides[d] * i[d]` of the store, counted in row-major order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StridedView {
    /// The selection's extent in each dimension.
    pub shape: Vec<i64>,
    /// Row-major index, in the store, of the selection's first element.
    pub offset: i64,
    /// Row-major index distance, in the store, between neighbours along each dimension
    /// (negative for reversed dimensions, 0 for inserted unit dimensions).
    pub strides: Vec<i64>,
}

impl StridedView {
    /// Number of selected elements.
    pub fn volume(&self) -> i64 {
        self.shape.iter().product()
    }

    /// Checks that the selection has a stride per dimension and lies inside a store of
    /// `volume` elements.
    fn check(&self, op: &'static str, volume: i64) -> Result<(), ArrayError> {
        let bad = |reason: String| ArrayError::BadArgument { op, reason };
        if self.shape.len() != self.strides.len() || self.shape.len() > MAX_DIMS {
            return Err(bad(format!(
                "shape {:?} and strides {:?} must have one entry per dimension (at most {MAX_DIMS})",
                self.shape, self.strides
            )));
        }
        if let Some(&e) = self.shape.iter().find(|&&e| e < 0) {
            return Err(bad(format!(
                "shape {:?} has a negative extent {e}",
                self.shape
            )));
        }
        if self.volume() == 0 {
            return Ok(());
        }
        // The extreme indices reached; i128 cannot overflow for six i64 products.
        let (mut lo, mut hi) = (i128::from(self.offset), i128::from(self.offset));
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let reach = i128::from(s) * i128::from(n - 1);
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        if lo < 0 || hi >= i128::from(volume) {
            return Err(bad(format!(
                "the selection (shape {:?}, offset {}, strides {:?}) reaches elements {lo}..={hi} \
                 of a store of {volume}",
                self.shape, self.offset, self.strides
            )));
        }
        Ok(())
    }
}

/// The row-major index `flat` of a store with row-major `strides`, as a point.
fn unflatten(mut flat: i64, strides: &Tuple, idx: &mut [i64]) {
    for (slot, &s) in idx.iter_mut().zip(strides.as_slice()) {
        *slot = flat / s;
        flat %= s;
    }
}

/// Reads the task's selection parameters: the offset (scalar 0) and one stride per
/// dimension of a rank-`rank` selection (scalars 1..).
fn selection(task: &PointTask<'_>, rank: usize) -> Result<(i64, [i64; MAX_DIMS]), KernelError> {
    let mut strides = [0i64; MAX_DIMS];
    for (d, s) in strides.iter_mut().enumerate().take(rank) {
        *s = task.scalar::<i64>(1 + d)?;
    }
    Ok((task.scalar::<i64>(0)?, strides))
}

/// The elements of a whole store as one row-major slice, when the view of it is laid out
/// row-major without padding (the backends' host instances are): selected elements are then
/// found by their flat index alone, without a point and a bounds check per element.
fn whole_store_slice<'v, T: Element>(
    view: &'v ReadView<'_, T>,
    store_strides: &Tuple,
) -> Option<&'v [T]> {
    let shape = view.shape();
    let contiguous = shape.dims() == 0 || view.strides() == *store_strides;
    let len = usize::try_from(shape.volume()).ok()?;
    // SAFETY: a view whose strides are the row-major strides of its shape addresses exactly
    // the `len` elements after its first, all readable while it is borrowed.
    contiguous.then(|| unsafe { std::slice::from_raw_parts(view.as_ptr(), len) })
}

/// The flat store indices of one selected row: `len` elements from `first`, `step` apart,
/// when they all lie in a store of `volume` elements.
fn row_indices(
    first: i64,
    step: i64,
    len: usize,
    volume: usize,
) -> Option<impl Iterator<Item = usize>> {
    let last = first + step * (len as i64 - 1).max(0);
    let inside = |f: i64| usize::try_from(f).is_ok_and(|f| f < volume);
    (len == 0 || inside(first) && inside(last))
        .then(|| (0..len).map(move |k| (first + step * k as i64) as usize))
}

/// A native kernel copying the selection (scalars) of argument 0, a whole store, into this
/// point's block of argument 1.
fn gather_kernel<T: Element>() -> impl Kernel {
    move |task| {
        let store_strides = task.store_shape(0)?.row_major_strides();
        let sub = task.sub_store(1)?;
        let rank = sub.dims();
        let (offset, strides) = selection(task, rank)?;
        let base = task.read::<T>(0)?;
        let flat_base = whole_store_slice(&base, &store_strides);
        let mut out = task.write::<T>(1)?;
        let mut idx = [0i64; MAX_DIMS];
        let idx = &mut idx[..store_strides.dims()];
        let inner = if rank == 0 { 0 } else { strides[rank - 1] };
        let mut missing = false;
        for_each_out_row(&mut out, |row, lead| {
            let mut flat = offset;
            for (d, &l) in lead.iter().enumerate() {
                flat += (sub.lo[d] + l) * strides[d];
            }
            if rank > 0 {
                flat += sub.lo[rank - 1] * inner;
            }
            if let Some(all) = flat_base {
                match row_indices(flat, inner, row.len(), all.len()) {
                    Some(at) => row.iter_mut().zip(at).for_each(|(x, f)| *x = all[f]),
                    None => missing = true,
                }
                return;
            }
            for x in row.iter_mut() {
                unflatten(flat, &store_strides, idx);
                match base.get(idx) {
                    Some(v) => *x = v,
                    None => missing = true,
                }
                flat += inner;
            }
        });
        if missing {
            return Err(task.error("the selection leaves the store"));
        }
        Ok(())
    }
}

/// A native kernel writing argument 0 (the values, whole) into the selection (scalars) of
/// argument 1 (a whole store), in row-major order of the values.
fn scatter_kernel<T: Element>() -> impl Kernel {
    move |task| {
        let store_strides = task.store_shape(1)?.row_major_strides();
        let shape = task.store_shape(0)?;
        let rank = shape.dims();
        let (offset, strides) = selection(task, rank)?;
        let values = task.read::<T>(0)?;
        let mut base = task.write::<T>(1)?;
        let contiguous = whole_store_slice(&base, &store_strides).map(<[T]>::len);
        let mut idx = [0i64; MAX_DIMS];
        let idx = &mut idx[..store_strides.dims()];
        let inner = if rank == 0 { 0 } else { strides[rank - 1] };
        let mut lead = [0i64; MAX_DIMS];
        for r in 0..values.rows() {
            let mut flat = offset;
            for d in 0..rank.saturating_sub(1) {
                flat += lead[d] * strides[d];
            }
            let row = values.row(r);
            if let Some(len) = contiguous {
                let at = row_indices(flat, inner, row.len(), len)
                    .ok_or_else(|| task.error("the selection leaves the store"))?;
                // SAFETY: the store is one row-major run of `len` elements from
                // `as_mut_ptr` (whole_store_slice), this task writes it exclusively, and
                // `row_indices` checked every index against `len`.
                let all = unsafe { std::slice::from_raw_parts_mut(base.as_mut_ptr(), len) };
                row.iter().zip(at).for_each(|(&v, f)| all[f] = v);
            } else {
                for &v in row {
                    unflatten(flat, &store_strides, idx);
                    if !base.set(idx, v) {
                        return Err(task.error("the selection leaves the store"));
                    }
                    flat += inner;
                }
            }
            for d in (0..rank.saturating_sub(1)).rev() {
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

/// The kind of `op` (`gather` or `scatter`) for `dtype` and a rank-`rank` selection.
fn strided_kind(op: &'static str, dtype: DType, rank: usize) -> Result<Arc<TaskKind>, ArrayError> {
    kind(format!("array.{op}.{dtype}.r{rank}"), move |b| {
        let (first, second) = if op == "gather" {
            (Privilege::Read, Privilege::Write)
        } else {
            (Privilege::Read, Privilege::ReadWrite)
        };
        let mut b = b.arg("from", dtype, first).arg("to", dtype, second);
        for _ in 0..=rank {
            b = b.scalar(DType::I64);
        }
        if op == "gather" {
            with_any!(dtype, T => b.register(gather_kernel::<T>()))
        } else {
            with_any!(dtype, T => b.register(scatter_kernel::<T>()))
        }
    })
}

/// Appends the selection's offset and strides as the task's scalars.
fn with_selection(mut task: IndexTask, view: &StridedView) -> IndexTask {
    task = task.scalar(view.offset);
    for &s in &view.strides {
        task = task.scalar(s);
    }
    task
}

/// The row-major store indices of `view`'s elements, in the selection's row-major order.
fn selected_indices(view: &StridedView) -> Vec<i64> {
    let mut flats = Vec::with_capacity(view.volume().max(0) as usize);
    let mut counter = vec![0i64; view.shape.len()];
    let mut flat = view.offset;
    for _ in 0..view.volume() {
        flats.push(flat);
        // Step the innermost dimension, carrying into the outer ones.
        for d in (0..counter.len()).rev() {
            counter[d] += 1;
            flat += view.strides[d];
            if counter[d] < view.shape[d] {
                break;
            }
            flat -= view.strides[d] * counter[d];
            counter[d] = 0;
        }
    }
    flats
}

/// The box of a store of `store_shape` (lower corner, extent) whose row-major elements are
/// exactly `view`'s in its order, when there is one: each dimension of the selection longer
/// than 1 walks a distinct store dimension at that dimension's row-major stride, in
/// increasing dimension order (a row, a column, a block, with integer-indexed dimensions
/// dropped). None for steps, transposes and repeated elements.
fn as_box(view: &StridedView, store_shape: &Shape) -> Option<(Vec<i64>, Vec<i64>)> {
    let strides = store_shape.row_major_strides();
    let dims = store_shape.dims();
    let mut lo = vec![0i64; dims];
    unflatten(view.offset, &strides, &mut lo);
    let mut extent = vec![1i64; dims];
    let mut next = 0;
    for (&n, &s) in view.shape.iter().zip(&view.strides) {
        if n == 1 {
            continue;
        }
        let d = (next..dims).find(|&d| strides[d] == s && store_shape[d] > 1)?;
        if lo[d] + n > store_shape[d] {
            return None;
        }
        extent[d] = n;
        next = d + 1;
    }
    Some((lo, extent))
}

impl Array {
    /// The elements of this array's store that `view` selects, copied to the host in the
    /// selection's row-major order without a task, waiting only for pending work that
    /// writes the store: a selection that is a box of the store (a row, a column, a block)
    /// is read as that box; any other, from the smallest box holding it. Meant for small
    /// selections; a large sparse one costs a copy of its whole bounding box.
    pub fn read_strided<T: Element>(&self, view: &StridedView) -> Result<Vec<T>, ArrayError> {
        self.check_host_dtype::<T>("read_strided")?;
        let store = self.store();
        let store_shape = store.shape();
        view.check("read_strided", store_shape.volume())?;
        if view.volume() == 0 {
            return Ok(Vec::new());
        }
        let read_box = |lo: &[i64], extent: &[i64]| -> Result<Vec<T>, ArrayError> {
            let boxed = View::new(store, Tuple::new(lo)?, Tuple::shape(extent)?)?;
            Ok(self.context().ir().read::<T>(&boxed)?)
        };
        if let Some((lo, extent)) = as_box(view, &store_shape) {
            return read_box(&lo, &extent);
        }
        let strides = store_shape.row_major_strides();
        let dims = store_shape.dims();
        let flats = selected_indices(view);
        // Each element's store coordinates (a 0-d store: one unused slot per element).
        let width = dims.max(1);
        let mut points = vec![0i64; flats.len() * width];
        let (mut lo, mut hi) = (vec![i64::MAX; dims], vec![i64::MIN; dims]);
        for (point, &flat) in points.chunks_exact_mut(width).zip(&flats) {
            unflatten(flat, &strides, &mut point[..dims]);
            for d in 0..dims {
                lo[d] = lo[d].min(point[d]);
                hi[d] = hi[d].max(point[d]);
            }
        }
        let extent: Vec<i64> = (0..dims).map(|d| hi[d] - lo[d] + 1).collect();
        let box_strides = Tuple::shape(&extent)?.row_major_strides();
        let values = read_box(&lo, &extent)?;
        Ok(points
            .chunks_exact(width)
            .map(|point| {
                let at: i64 = (0..dims).map(|d| (point[d] - lo[d]) * box_strides[d]).sum();
                values[at as usize]
            })
            .collect())
    }

    /// A new array holding the elements of this array's store that `view` selects (offsets
    /// and strides count in the whole store, not in this array's window).
    pub fn gather_strided(&self, view: &StridedView) -> ArrayResult {
        let store = self.store();
        view.check("gather_strided", store.shape().volume())?;
        let shape: Shape = Tuple::shape(&view.shape)?;
        let out = Array::fresh(self.context(), shape, self.dtype())?;
        if out.is_empty() {
            return Ok(out);
        }
        let kind = strided_kind("gather", self.dtype(), shape.dims())?;
        let cx = self.context();
        let launch = cx.launch_for(shape);
        let task = IndexTask::new(&kind, launch)
            .arg(store, Partition::replicate(), Privilege::Read)
            .arg(
                out.store(),
                out.partition_for(shape, launch)?,
                Privilege::Write,
            );
        cx.submit(with_selection(task, view))?;
        Ok(out)
    }

    /// Writes `values` (of `view`'s shape and this array's dtype) into the elements of this
    /// array's store that `view` selects, in row-major order of `values` (where two selected
    /// positions coincide, the later value stays).
    pub fn scatter_strided(&self, view: &StridedView, values: &Array) -> Result<(), ArrayError> {
        const OP: &str = "scatter_strided";
        let store = self.store();
        view.check(OP, store.shape().volume())?;
        self.check_values(OP, values)?;
        let shape: Shape = Tuple::shape(&view.shape)?;
        ArrayError::check_same_shape(OP, shape, values.shape())?;
        if values.is_empty() {
            return Ok(());
        }
        // The kernel walks the values as one whole store, and reads them while it updates
        // the store: values in a window, or in the same store, are copied first.
        let values = if values.shares_store(self) || !values.view().is_whole_store() {
            unary(UnaryOp::Copy, values)?
        } else {
            values.clone()
        };
        let kind = strided_kind("scatter", self.dtype(), shape.dims())?;
        let task = IndexTask::new(&kind, Tuple::shape(&[1])?)
            .arg(values.store(), Partition::replicate(), Privilege::Read)
            .arg(store, Partition::replicate(), Privilege::ReadWrite);
        self.context().submit(with_selection(task, view))?;
        Ok(())
    }
}
