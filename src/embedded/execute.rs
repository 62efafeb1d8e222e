//! Running a launch plan: one driver for every plan, fused or not. Each point task runs the
//! plan's compiled kernel when it has one (see [`compiled`](super::compiled)), else the
//! constituents' native variants in program order on one processor (see
//! [`native`](super::native)). Reductions give every point a private accumulator per reducing
//! argument; they are folded into the stores argument by argument, points in order, so
//! results never depend on thread timing and equal the unfused ones.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use diffuse_backend::{LaunchPlan, ProcKind, Slot};
use diffuse_ir::{
    with_element_type, IrError, KernelError, Point, PointTask, Privilege, RawView, Rect,
    ReductionOp, Shape, StoreRef, TaskArg, TaskKind,
};

use super::compiled::{self, Device};
use super::memory::{for_each_rect_row, FirstUse, HostBuffer};
use super::native;
use super::EmbeddedBackend;

/// Where a point task's argument lives: inside the store, or in a private accumulator.
pub(super) struct ArgPlacement {
    /// The sub-store, in store coordinates.
    pub(super) rect: Rect,
    /// The point's private accumulator, for `Reduce` arguments.
    pub(super) accumulator: Option<HostBuffer>,
}

impl ArgPlacement {
    /// The placement of `arg` at point `p`: its sub-store, and an identity-filled accumulator
    /// when it reduces.
    pub(super) fn of(arg: &TaskArg, p: &Point) -> Self {
        let rect = arg.partition.sub_store(arg.store.shape(), p);
        ArgPlacement {
            accumulator: match arg.privilege {
                Privilege::Reduce(op) => Some(accumulator(&arg.store, &rect, op)),
                _ => None,
            },
            rect,
        }
    }
}

/// A reduction contribution of one point: the reducing argument (an index into the
/// template's arguments) and where its values are.
pub(super) type Contribution = (usize, ArgPlacement);

/// Executes `plan` on `backend`: every point task, then the reductions in order.
pub(super) fn run(backend: &EmbeddedBackend, plan: &LaunchPlan) -> Result<(), IrError> {
    let t = plan.template();
    let launch = t.launch_domain();
    let points: Vec<Point> = Rect::from_shape(launch).points().collect();
    let buffers = plan
        .stores()
        .iter()
        .enumerate()
        .map(|(s, store)| {
            let first_use = if t.overwrites(s) {
                FirstUse::Overwrites
            } else {
                FirstUse::Reads
            };
            backend.buffer(store, first_use)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let scalars = t.kernel().map(|_| plan.scalars()).unwrap_or_default();
    let placement = &t.placement().processors;
    let run_point = |i: usize| -> Result<Vec<Contribution>, KernelError> {
        let p = points[i];
        let on_gpu = placement.get(i).is_some_and(|q| q.kind == ProcKind::Gpu);
        if let Some(kernel) = t.kernel() {
            if let Some(outcome) =
                compiled::run_point(kernel, plan, &p, &buffers, &scalars, on_gpu && backend.gpu)
            {
                backend.compiled_points.fetch_add(1, Ordering::Relaxed);
                return outcome
                    .map(|(contributions, device)| {
                        if device == Device::Gpu {
                            backend.gpu_points.fetch_add(1, Ordering::Relaxed);
                        }
                        contributions
                    })
                    .map_err(|reason| KernelError {
                        kind: t.name().to_string(),
                        point: p,
                        reason,
                    });
            }
        }
        native::run_point(backend, plan, &p, &buffers)
    };
    let mut per_point = Vec::with_capacity(points.len());
    for result in dispatch(backend, plan, points.len(), &run_point) {
        per_point.push(result.map_err(IrError::Kernel)?);
    }
    // Fold argument by argument (constituents in program order), points in order.
    let mut all: Vec<(usize, usize, ArgPlacement)> = per_point
        .into_iter()
        .enumerate()
        .flat_map(|(pi, contribs)| contribs.into_iter().map(move |(a, pl)| (a, pi, pl)))
        .collect();
    all.sort_by_key(|&(a, pi, _)| (a, pi));
    for (a, _, place) in &all {
        let (Slot::Store(s), Privilege::Reduce(op)) = (t.args()[*a].slot, t.args()[*a].privilege)
        else {
            continue;
        };
        if let Some(acc) = &place.accumulator {
            fold(buffers[s], plan.store(s).shape(), &place.rect, acc, op);
        }
    }
    Ok(())
}

/// Runs `run_point(i)` for every point index and returns the results in point order. Point
/// `i` runs on the worker thread of the processor its placement names. A launch placed by
/// default (not pinned by a mapper) whose stores are smaller than the backend's
/// `inline_bytes` runs on the calling thread: handing it to the workers would cost more than
/// it saves.
fn dispatch<R, F>(
    backend: &EmbeddedBackend,
    plan: &LaunchPlan,
    count: usize,
    run_point: &F,
) -> Vec<R>
where
    R: Send,
    F: Fn(usize) -> R + Sync,
{
    let placement = plan.template().placement();
    let small = || {
        let bytes: usize = plan.stores().iter().map(|s| s.size_bytes()).sum();
        bytes <= backend.inline_bytes
    };
    if !placement.pinned && (count <= 1 || small()) {
        return (0..count).map(run_point).collect();
    }
    let procs = backend.procs.max(1);
    let per_node = backend.procs_per_node();
    let owner = |i: usize| {
        placement.processors.get(i).map_or(0, |p| {
            // GPU points are launched from a CPU worker of their node.
            (p.node * per_node + p.index % per_node) % procs
        })
    };
    let mut per_proc: Vec<Vec<usize>> = vec![Vec::new(); procs];
    for i in 0..count {
        per_proc[owner(i)].push(i);
    }
    let busy = per_proc.iter().filter(|p| !p.is_empty()).count();
    if busy <= 1 && !placement.pinned {
        return (0..count).map(run_point).collect();
    }
    // Worker thread `p` of the pool is processor `p`: each runs exactly its own points.
    let results: Vec<Vec<(usize, R)>> = backend.pool.broadcast(|worker| {
        per_proc.get(worker.index()).map_or_else(Vec::new, |mine| {
            mine.iter().map(|&i| (i, run_point(i))).collect()
        })
    });
    let mut ordered: Vec<(usize, R)> = results.into_iter().flatten().collect();
    ordered.sort_by_key(|(i, _)| *i);
    ordered.into_iter().map(|(_, r)| r).collect()
}

/// Runs one point task of `kind`, turning a panicking kernel into a kernel error.
pub(super) fn run_point_task(kind: &TaskKind, pt: &PointTask<'_>) -> Result<(), KernelError> {
    match catch_unwind(AssertUnwindSafe(|| kind.run_native(pt))) {
        Ok(result) => result,
        Err(panic) => Err(pt.error(format!(
            "native kernel panicked: {}",
            panic_message(&*panic)
        ))),
    }
}

/// A private accumulator for one point's share of a reduction into `rect` of `store`,
/// filled with the identity.
pub(super) fn accumulator(store: &StoreRef, rect: &Rect, op: ReductionOp) -> HostBuffer {
    let len = rect.volume().max(0) as usize;
    with_element_type!(store.dtype(), T => HostBuffer::identity::<T>(len, op))
}

/// The raw view of one argument at one point: into the store, or into its accumulator.
pub(super) fn raw_view(
    place: &ArgPlacement,
    privilege: Privilege,
    store_shape: Shape,
    buf: &HostBuffer,
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
        None => {
            let strides = store_shape.row_major_strides();
            // SAFETY: `rect` lies inside the store (sub-stores are clipped to it), so every
            // addressed element is inside the buffer. Validation proved that arguments that
            // change a store use an injective tiling (or a single point) and that no other
            // argument names that store, so no two point tasks touch a written element.
            unsafe {
                RawView::new(
                    store_address(buf, store_shape, &place.rect),
                    buf.dtype(),
                    place.rect,
                    store_shape,
                    strides,
                    privilege,
                )
            }
        }
    }
}

/// The address of the first element of the box `rect` of a store of shape `shape` held in
/// `buf` (the buffer's start for an empty box).
pub(super) fn store_address(buf: &HostBuffer, shape: Shape, rect: &Rect) -> *mut u8 {
    let strides = shape.row_major_strides();
    let start: i64 = if rect.is_empty() {
        0
    } else {
        (0..rect.dims()).map(|d| rect.lo[d] * strides[d]).sum()
    };
    // SAFETY: a non-empty `rect` lies inside the store, so its first element is inside the
    // buffer; an empty one gives the buffer's start.
    unsafe { buf.as_ptr().add(start as usize * buf.dtype().size_bytes()) }
}

/// Folds one accumulator into the box `rect` of a store of shape `shape`.
fn fold(store: &HostBuffer, shape: Shape, rect: &Rect, acc: &HostBuffer, op: ReductionOp) {
    let strides = shape.row_major_strides();
    with_element_type!(store.dtype(), T => {
        let dst = store.as_ptr() as *mut T;
        let src = acc.as_ptr() as *const T;
        debug_assert_eq!(acc.len() as i64, rect.volume());
        for_each_rect_row(rect, &strides, |start, row, len| {
            // SAFETY: point tasks have finished; this thread alone touches the buffers, and
            // `rect` is inside the store and has exactly `acc.len()` elements.
            let (d, s) = unsafe {
                (
                    std::slice::from_raw_parts_mut(dst.add(start), len),
                    std::slice::from_raw_parts(src.add(row * len), len),
                )
            };
            for (x, &y) in d.iter_mut().zip(s) {
                *x = <T as diffuse_ir::Element>::reduce(op, *x, y);
            }
        });
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
