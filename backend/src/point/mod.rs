//! Running one point task of a launch plan, for every backend: the plan's compiled kernel
//! when it has one and the point's sub-stores fit it (see [`compiled`]), else the
//! constituents' native variants in program order (see [`native`]).
//!
//! A backend says where the point's store arguments are ([`PointStores`]: an address and
//! element strides per argument), whether the point runs on a GPU, and where point-local
//! buffers come from. `Reduce` arguments get a private, identity-filled accumulator per
//! point; the backend folds the returned [`Contribution`]s into its stores in an order it
//! chooses ([`fold`]), so a kernel never races on a reduction target.

mod compiled;
pub mod fp;
mod native;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use diffuse_ir::{
    with_element_type, DType, Element, KernelError, Point, PointTask, Privilege, RawView, Rect,
    ReductionOp, Scalar, Shape, TaskArg, TaskKind, Tuple,
};

use crate::memory::{for_each_rect_row, BufferCache, HostBuffer, MemoryStats};
use crate::plan::{LaunchPlan, LaunchTemplate, Slot};

pub use compiled::{fits, memrefs, Located};

/// Where a point task's store arguments are in memory.
pub trait PointStores {
    /// The address of element `rect.lo` of argument `arg`'s store (an index into the
    /// template's arguments, whose slot is a store) and the store's element strides around
    /// it (innermost stride 1). `rect` is non-empty and lies inside the argument's sub-store
    /// at this point. For a reducing argument of a launch over one point this is the store's
    /// own memory, holding its values (not a reduction buffer starting from the identity):
    /// a task of several stages folds its reductions there as each stage ends, and later
    /// stages read them.
    fn locate(&self, arg: usize, rect: &Rect) -> Result<(*mut u8, Tuple), String>;
}

/// Where a point task's argument lives: inside the store, or in a private accumulator.
pub struct ArgPlacement {
    /// The sub-store, in store coordinates.
    pub rect: Rect,
    /// The point's private accumulator, for `Reduce` arguments.
    pub accumulator: Option<HostBuffer>,
}

impl ArgPlacement {
    /// The placement of `arg` at point `p`: its sub-store, and an identity-filled accumulator
    /// when it reduces (or why there is no memory for one).
    fn of(arg: &TaskArg, p: &Point) -> Result<Self, String> {
        let rect = arg.partition.sub_store(arg.store.shape(), p);
        Ok(ArgPlacement {
            accumulator: match arg.privilege {
                Privilege::Reduce(op) => Some(accumulator(arg.store.dtype(), &rect, op)?),
                _ => None,
            },
            rect,
        })
    }
}

/// A reduction contribution of one point: the reducing argument (an index into the
/// template's arguments) and its accumulator over its sub-store.
pub type Contribution = (usize, ArgPlacement);

/// How a point task ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointPath {
    /// Through the compiled kernel, on the host CPU.
    Compiled,
    /// Natively, strip by strip (a fused element-wise task).
    Strips,
    /// Natively, constituent by constituent over whole sub-stores.
    Whole,
    /// Like `Whole`, with compiled segments of constituents in between (see
    /// [`crate::Segment`]).
    Segments,
}

/// What one point task left behind.
pub struct PointDone {
    /// Its reduction contributions, arguments in template order.
    pub contributions: Vec<Contribution>,
    /// How it ran.
    pub path: PointPath,
}

/// One plan's point tasks as a backend runs them.
pub struct PointRunner<'a> {
    /// The plan.
    pub plan: &'a LaunchPlan,
    /// Where its store arguments are.
    pub stores: &'a (dyn PointStores + Sync),
    /// Every constituent's scalars in order: what the compiled kernel takes, which the
    /// template may get while the plan is in flight (a background compile finishing), so
    /// they are given whether or not it has one yet.
    pub scalars: &'a [Scalar],
    /// Working-set bytes of one strip of a fused element-wise task run natively.
    pub strip_bytes: usize,
    /// Where point-local temporaries come from.
    pub scratch: &'a Arc<BufferCache>,
    /// The memory limit point-local temporaries respect.
    pub memory: &'a MemoryStats,
    /// Where the floating-point exceptions kernels raise are recorded.
    pub fp: &'a fp::FpRecorder,
}

impl PointRunner<'_> {
    /// Runs point `p` on this thread.
    ///
    /// The thread's floating-point exception flags are cleared before and read after (a few
    /// instructions per point). What a point raised is recorded under the task's name; a
    /// fused point that raised an exception the application reports
    /// ([`fp::FpRecorder::attributes`]: by default anything but underflow) runs again
    /// natively when that has the same effect ([`rerunnable`]), each constituent watched on
    /// its own, so that reports name the operation that raised (vector code also raises
    /// exceptions the operations do not: ordered comparisons of NaN, lanes of both sides of
    /// a select, the math prelude's range reduction). Exceptions the application ignores
    /// (underflow by default, `divide` inside NumPy's `errstate(divide="ignore")`) do not
    /// cost a second run.
    pub fn run(&self, p: &Point) -> Result<PointDone, KernelError> {
        let t = self.plan.template();
        fp::clear();
        let done = self.run_once(p)?;
        let flags = fp::raised();
        if flags.is_empty() {
            return Ok(done);
        }
        if t.constituents() > 1 && self.fp.attributes(flags) && rerunnable(t) {
            return native::run_point(self, p, true);
        }
        self.fp.record(t.name(), flags);
        Ok(done)
    }

    /// Runs point `p` once, compiled when it can, without watching its constituents.
    fn run_once(&self, p: &Point) -> Result<PointDone, KernelError> {
        let t = self.plan.template();
        if let Some(kernel) = t.kernel() {
            if let Some(outcome) = compiled::run_point(self, kernel, p) {
                return outcome
                    .map(|contributions| PointDone {
                        contributions,
                        path: PointPath::Compiled,
                    })
                    .map_err(|reason| KernelError {
                        kind: t.name().to_string(),
                        point: *p,
                        reason,
                    });
            }
        }
        native::run_point(self, p, false)
    }

    /// The address and strides of argument `arg` over `rect` (a store slot), as a kernel
    /// error of constituent `c` at `p` if the backend cannot say.
    fn locate(&self, arg: usize, rect: &Rect, p: &Point) -> Result<(*mut u8, Tuple), KernelError> {
        if rect.is_empty() {
            // Nothing is addressed; any non-null pointer and packed strides do.
            return Ok((
                std::ptr::NonNull::dangling().as_ptr(),
                rect.extent().row_major_strides(),
            ));
        }
        self.stores.locate(arg, rect).map_err(|reason| KernelError {
            kind: self.plan.tasks()[self.plan.template().args()[arg].constituent]
                .kind()
                .name()
                .to_string(),
            point: *p,
            reason,
        })
    }
}

/// True when running a point of `t` again gives what running it once gave: every store it
/// writes is first written (`Write`, which covers the sub-store) and then only read through
/// the same partition, so the values a second run reads are the ones the first run read.
/// Reductions go to per-point accumulators and do not count, except in a task of several
/// stages, which folds them into their stores at each stage's end.
fn rerunnable(t: &LaunchTemplate) -> bool {
    // A task of several stages folds reductions into their stores as it goes.
    if !t.stages().is_empty() && !t.reductions().is_empty() {
        return false;
    }
    let args = t.args();
    let accesses = |slot: Slot| {
        args.iter()
            .filter(move |a| a.slot == slot && !a.privilege.is_reduction())
    };
    args.iter().all(|a| {
        if matches!(a.slot, Slot::Temporary(_)) || !a.privilege.writes() {
            return true;
        }
        let mut all = accesses(a.slot);
        let first = all.next().map(|f| (f.privilege, &f.partition));
        first.is_some_and(|(privilege, partition)| {
            privilege == Privilege::Write
                && accesses(a.slot)
                    .all(|b| b.privilege != Privilege::ReadWrite && b.partition == *partition)
        })
    })
}

/// Runs one point task of `kind`, turning a panicking kernel into a kernel error.
fn run_point_task(kind: &TaskKind, pt: &PointTask<'_>) -> Result<(), KernelError> {
    match catch_unwind(AssertUnwindSafe(|| kind.run_native(pt))) {
        Ok(result) => result,
        Err(panic) => Err(pt.error(format!(
            "native kernel panicked: {}",
            panic_message(&*panic)
        ))),
    }
}

/// A private accumulator for one point's share of a reduction into `rect` of a store of
/// `dtype`, filled with the identity; the reason when there is no memory for it.
pub fn accumulator(dtype: DType, rect: &Rect, op: ReductionOp) -> Result<HostBuffer, String> {
    let len = rect.volume().max(0) as usize;
    with_element_type!(dtype, T => HostBuffer::identity::<T>(len, op))
        .map_err(|e| format!("the reduction accumulator over {rect:?}: {e}"))
}

/// The raw view of one argument at one point: into the store at `located`, or into its
/// accumulator.
fn raw_view(
    place: &ArgPlacement,
    privilege: Privilege,
    store_shape: Shape,
    dtype: DType,
    located: (*mut u8, Tuple),
) -> RawView {
    let extent = place.rect.extent();
    match &place.accumulator {
        // SAFETY: the accumulator belongs to this (point, argument) alone and outlives the
        // point task; it holds `extent.volume()` identity-initialized elements.
        Some(acc) => unsafe {
            RawView::new(
                acc.as_ptr(),
                acc.dtype(),
                place.rect,
                store_shape,
                extent.row_major_strides(),
                privilege,
            )
        },
        // SAFETY: the backend located `rect` inside the store's memory with these strides
        // (`PointStores::locate`). Validation proved that arguments that change a store use
        // an injective tiling (or a single point) and that no other argument names that
        // store, so no two point tasks touch a written element.
        None => unsafe {
            RawView::new(
                located.0,
                dtype,
                place.rect,
                store_shape,
                located.1,
                privilege,
            )
        },
    }
}

/// Folds one accumulator over `rect` into store memory whose element `rect.lo` is at `dst`
/// with element `strides`.
///
/// # Safety
/// Every element of `rect` addressed through `dst` and `strides` must be valid memory of the
/// accumulator's dtype that no other thread accesses during the call.
pub unsafe fn fold(dst: *mut u8, strides: &Tuple, rect: &Rect, acc: &HostBuffer, op: ReductionOp) {
    debug_assert_eq!(acc.len() as i64, rect.volume().max(0));
    // SAFETY: the caller's contract; the accumulator holds `rect`'s elements row-major.
    unsafe { fold_row_major(dst, strides, rect, acc.as_ptr(), acc.dtype(), op) }
}

/// Folds `rect`'s elements of type `dtype`, stored row-major from `src`, into store memory
/// whose element `rect.lo` is at `dst` with element `strides` (a point's contribution kept
/// outside a [`HostBuffer`], such as a Legion instance).
///
/// # Safety
/// As for [`fold`]; `src` must hold `rect.volume()` valid elements of `dtype`.
pub unsafe fn fold_row_major(
    dst: *mut u8,
    strides: &Tuple,
    rect: &Rect,
    src: *const u8,
    dtype: DType,
    op: ReductionOp,
) {
    // Offsets below are relative to `rect.lo`.
    let local = Rect::from_shape(rect.extent());
    with_element_type!(dtype, T => {
        let dst = dst as *mut T;
        let src = src as *const T;
        for_each_rect_row(&local, strides, |start, row, len| {
            // SAFETY: the caller's contract; `src` has one element per point of `rect`,
            // rows in row-major order.
            let (d, s) = unsafe {
                (
                    std::slice::from_raw_parts_mut(dst.add(start), len),
                    std::slice::from_raw_parts(src.add(row * len), len),
                )
            };
            for (x, &y) in d.iter_mut().zip(s) {
                *x = <T as Element>::reduce(op, *x, y);
            }
        });
    })
}

/// The message of a caught panic, for errors that replace it.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
