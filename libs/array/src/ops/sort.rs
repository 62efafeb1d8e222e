//! Sorting along an axis (NumPy's `sort` and `argsort`) and binary search in a sorted vector
//! (`searchsorted`).
//!
//! A sort along an axis is one task whose blocks span the axis and split every other
//! dimension over the launch (as a cumulative sum's do): each point sorts the lanes it holds,
//! so the rows of a matrix sort in parallel on every processor. Sorting one long vector is
//! one point's work (a distributed sample sort is not done here). `searchsorted` splits the
//! searched values over the launch and reads the sorted vector whole at every point.
//!
//! The order is NumPy's: numbers ascending with NaN last; complex numbers by real part, then
//! imaginary part, with those holding a NaN last; `false` before `true`. Sorts are stable, so
//! `argsort` gives the indices of equal values in ascending order (NumPy's `kind="stable"`;
//! its default may order ties otherwise, which no caller can rely on).

use std::cmp::Ordering;
use std::sync::Arc;

use diffuse_ir::{
    Complex32, Complex64, DType, Element, IndexTask, PointTask, Privilege, ProjComponent,
    Projection, TaskKind, Tuple,
};

use crate::array::Array;
use crate::error::{ArrayError, ArrayResult};
use crate::kinds::{kind, Kernel};
use crate::ops::along::{along_input, along_kind, lanes_of, submit_spanning, write_all};

/// Element types with NumPy's sort order.
pub(crate) trait SortOrder: Element {
    /// NumPy's order of `a` and `b` (NaN after every number, equal to another NaN).
    fn numpy_cmp(&self, other: &Self) -> Ordering;

    /// Sorts `values` in NumPy's order (equal values are interchangeable: any order of
    /// them will do).
    fn sort_values(values: &mut [Self]) {
        values.sort_unstable_by(Self::numpy_cmp);
    }
}

macro_rules! float_order {
    ($($t:ty),*) => {$(
        impl SortOrder for $t {
            // NaN after every number, two NaNs equal.
            fn numpy_cmp(&self, other: &Self) -> Ordering {
                match (self.is_nan(), other.is_nan()) {
                    (false, false) => self.partial_cmp(other).unwrap_or(Ordering::Equal),
                    (a, b) => a.cmp(&b),
                }
            }

            // The NaNs moved to the end, the numbers sorted by their total order (which
            // puts -0.0 before 0.0, as equal values may be).
            fn sort_values(values: &mut [Self]) {
                let mut numbers = 0;
                for i in 0..values.len() {
                    if !values[i].is_nan() {
                        values.swap(numbers, i);
                        numbers += 1;
                    }
                }
                values[..numbers].sort_unstable_by(<$t>::total_cmp);
            }
        }
    )*};
}

macro_rules! total_order {
    ($($t:ty),*) => {$(
        impl SortOrder for $t {
            fn numpy_cmp(&self, other: &Self) -> Ordering {
                self.cmp(other)
            }
        }
    )*};
}

/// Where a complex number's NaNs put it: numbers, then NaN imaginary parts, then NaN real
/// parts, then both NaN (NumPy's order).
fn nan_rank(re_nan: bool, im_nan: bool) -> u8 {
    u8::from(re_nan) * 2 + u8::from(im_nan)
}

macro_rules! complex_order {
    ($($t:ty),*) => {$(
        impl SortOrder for $t {
            fn numpy_cmp(&self, other: &Self) -> Ordering {
                let rank = nan_rank(self.re.is_nan(), self.im.is_nan());
                rank.cmp(&nan_rank(other.re.is_nan(), other.im.is_nan()))
                    .then_with(|| self.re.numpy_cmp(&other.re))
                    .then_with(|| self.im.numpy_cmp(&other.im))
            }
        }
    )*};
}

float_order!(f64, f32);
total_order!(i64, i32, bool);
complex_order!(Complex32, Complex64);

/// Expands `$body` with `$t` bound to the Rust type of `$dtype` (every dtype sorts).
macro_rules! with_sortable {
    ($dtype:expr, $t:ident => $body:expr) => {
        diffuse_ir::with_dtypes!(
            $dtype,
            [
                F64 => f64, F32 => f32, I64 => i64, I32 => i32, Bool => bool,
                C64 => Complex32, C128 => Complex64
            ],
            $t => $body
        )
    };
}

/// What a sort along an axis writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sorted {
    /// The values in order.
    Values,
    /// The positions along the axis of the values in order (int64).
    Indices,
}

/// A native kernel sorting argument 0 along the axis in scalar 0 into argument 1: the
/// values, or (`Indices`) their positions along the axis.
fn sort_kernel<T: SortOrder>(what: Sorted) -> impl Kernel {
    move |task| {
        let (x, axis) = along_input::<T>(task)?;
        let mut values: Vec<T> = Vec::with_capacity(x.shape().volume().max(0) as usize);
        for r in 0..x.rows() {
            values.extend_from_slice(x.row(r));
        }
        let lanes = lanes_of(x.shape(), axis);
        match what {
            Sorted::Values if lanes.stride == 1 => {
                // Lanes along the last axis are contiguous: sorted where they lie.
                values.chunks_mut(lanes.extent).for_each(T::sort_values);
                write_all(&mut task.write::<T>(1)?, &values);
            }
            Sorted::Values => {
                let mut lane = Vec::with_capacity(lanes.extent);
                for start in lanes.starts() {
                    lane.clear();
                    lane.extend(lanes.positions(start).map(|i| values[i]));
                    T::sort_values(&mut lane);
                    for (i, v) in lanes.positions(start).zip(&lane) {
                        values[i] = *v;
                    }
                }
                write_all(&mut task.write::<T>(1)?, &values);
            }
            Sorted::Indices => {
                let mut order: Vec<i64> = vec![0; values.len()];
                let mut lane: Vec<usize> = Vec::with_capacity(lanes.extent);
                for start in lanes.starts() {
                    lane.clear();
                    lane.extend(lanes.positions(start));
                    lane.sort_by(|&a, &b| values[a].numpy_cmp(&values[b]));
                    for (k, i) in lanes.positions(start).enumerate() {
                        order[i] = ((lane[k] - start) / lanes.stride) as i64;
                    }
                }
                write_all(&mut task.write::<i64>(1)?, &order);
            }
        }
        Ok(())
    }
}

/// A native kernel writing, for each value of argument 1, its insertion position in the
/// sorted vector argument 0 into argument 2: the first position whose element is not less
/// than the value (`right`: greater than it) in NumPy's order.
fn search_kernel<T: SortOrder>() -> impl Kernel {
    move |task: &PointTask<'_>| {
        let sorted = task.read::<T>(0)?;
        let sorted = sorted.row(0);
        let right = task.scalar::<bool>(0)?;
        let values = task.read::<T>(1)?;
        let mut found = Vec::with_capacity(values.shape().volume().max(0) as usize);
        for r in 0..values.rows() {
            found.extend(values.row(r).iter().map(|v| {
                let at = if right {
                    sorted.partition_point(|s| s.numpy_cmp(v) != Ordering::Greater)
                } else {
                    sorted.partition_point(|s| s.numpy_cmp(v) == Ordering::Less)
                };
                at as i64
            }));
        }
        write_all(&mut task.write::<i64>(2)?, &found);
        Ok(())
    }
}

/// The kind of the sort writing `what` on `dtype`.
fn sort_kind(what: Sorted, dtype: DType) -> Result<Arc<TaskKind>, ArrayError> {
    let (name, out) = match what {
        Sorted::Values => ("sort", dtype),
        Sorted::Indices => ("argsort", DType::I64),
    };
    along_kind(
        name,
        dtype,
        out,
        |b| with_sortable!(dtype, T => b.register(sort_kernel::<T>(what))),
    )
}

impl Array {
    /// NumPy's `sort(self, axis=axis)`: the values along `axis` in ascending order (NaN
    /// last; complex numbers lexicographically).
    pub fn sort_along(&self, axis: usize) -> ArrayResult {
        self.sorted(Sorted::Values, axis)
    }

    /// NumPy's `argsort(self, axis=axis, kind="stable")`: the int64 positions along `axis`
    /// that sort the values, equal values in their original order.
    pub fn argsort_along(&self, axis: usize) -> ArrayResult {
        self.sorted(Sorted::Indices, axis)
    }

    fn sorted(&self, what: Sorted, axis: usize) -> ArrayResult {
        let op = match what {
            Sorted::Values => "sort",
            Sorted::Indices => "argsort",
        };
        if axis >= self.ndim() {
            return Err(ArrayError::BadArgument {
                op,
                reason: format!(
                    "axis {axis} is out of bounds for an array of shape {}",
                    self.shape()
                ),
            });
        }
        let kind = sort_kind(what, self.dtype())?;
        let out_dtype = match what {
            Sorted::Values => self.dtype(),
            Sorted::Indices => DType::I64,
        };
        let out = Array::fresh(self.context(), self.shape(), out_dtype)?;
        if !out.is_empty() {
            submit_spanning(self, &out, &kind, axis)?;
        }
        Ok(out)
    }

    /// NumPy's `searchsorted(self, values, side)` for this sorted 1-d array: for each value,
    /// the int64 position where inserting it keeps the order, the leftmost such position
    /// (`right`: the rightmost). The result has `values`' shape.
    pub fn searchsorted(&self, values: &Array, right: bool) -> ArrayResult {
        let op = "searchsorted";
        if self.ndim() != 1 {
            return Err(ArrayError::BadArgument {
                op,
                reason: format!("the sorted array must be 1-d, got shape {}", self.shape()),
            });
        }
        self.check_values(op, values)?;
        let dtype = self.dtype();
        let cx = self.context();
        // A fresh store holds zeros: every value goes first into an empty array.
        let out = Array::fresh(cx, values.shape(), DType::I64)?;
        if out.is_empty() || self.is_empty() {
            return Ok(out);
        }
        let kind = kind(format!("array.{op}.{dtype}"), move |b| {
            let b = b
                .arg("sorted", dtype, Privilege::Read)
                .arg("values", dtype, Privilege::Read)
                .arg("out", DType::I64, Privilege::Write)
                .scalar(DType::Bool);
            with_sortable!(dtype, T => b.register(search_kernel::<T>()))
        })?;
        let shape = values.shape();
        let launch = cx.launch_for(shape);
        let whole = Projection::new(launch.dims(), &[ProjComponent::Const(0)])?;
        let sorted = self
            .view()
            .tiling_with(Tuple::shape(&[self.shape()[0]])?, whole)?;
        let task = IndexTask::new(&kind, launch)
            .arg(self.store(), sorted, Privilege::Read)
            .arg(
                values.store(),
                values.partition_for(shape, launch)?,
                Privilege::Read,
            )
            .arg(
                out.store(),
                out.partition_for(shape, launch)?,
                Privilege::Write,
            )
            .scalar(right);
        cx.submit(task)?;
        Ok(out)
    }
}
