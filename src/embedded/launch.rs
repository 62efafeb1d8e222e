//! Running one index task: sub-store views per point, parallel point tasks, ordered folds.

use std::panic::{catch_unwind, AssertUnwindSafe};

use diffuse_ir::{
    IndexTask, IrError, KernelError, Point, PointTask, Privilege, RawView, Rect, ReductionOp,
    Shape, StoreRef, TaskArg, TaskKind, Tuple,
};

use super::memory::{for_each_rect_row, FirstUse, HostBuffer};
use super::EmbeddedBackend;
use diffuse_ir::with_element_type;

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
        match arg.privilege {
            Privilege::Reduce(op) => Self::reduction(&arg.store, rect, op),
            _ => ArgPlacement {
                rect,
                accumulator: None,
            },
        }
    }

    /// The placement of a reduction into `rect` of `store`: an identity-filled accumulator.
    pub(super) fn reduction(store: &StoreRef, rect: Rect, op: ReductionOp) -> Self {
        ArgPlacement {
            accumulator: Some(accumulator(store.dtype(), &rect, op)),
            rect,
        }
    }
}

/// What a new store buffer's first user does to it: a covering `Write` overwrites it all.
pub(super) fn first_use(arg: &TaskArg, launch: Shape) -> FirstUse {
    if arg.privilege == Privilege::Write && arg.partition.covers(arg.store.shape(), launch) {
        FirstUse::Overwrites
    } else {
        FirstUse::Reads
    }
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

/// Executes `task` on `backend`: every point task, then the reductions in point order.
pub(super) fn run(backend: &EmbeddedBackend, task: &IndexTask) -> Result<(), IrError> {
    let kind = task.kind();
    let launch = task.launch_domain();
    let points: Vec<Point> = Rect::from_shape(launch).points().collect();
    let buffers = task
        .args()
        .iter()
        .map(|a| backend.buffer(&a.store, first_use(a, launch)))
        .collect::<Result<Vec<_>, _>>()?;

    // Sub-stores and accumulators of every (point, argument).
    let placements: Vec<Vec<ArgPlacement>> = points
        .iter()
        .map(|p| task.args().iter().map(|a| ArgPlacement::of(a, p)).collect())
        .collect();

    let views: Vec<Vec<RawView>> = placements
        .iter()
        .map(|args| {
            args.iter()
                .zip(task.args())
                .zip(&buffers)
                .map(|((place, arg), buf)| raw_view(place, arg.privilege, arg.store.shape(), buf))
                .collect()
        })
        .collect();

    let run_point = |i: usize| -> Result<(), KernelError> {
        let pt = PointTask::new(kind.name(), points[i], launch, &views[i], task.scalars());
        run_point_task(kind, &pt)
    };
    let placed = backend.place(kind.name(), &[kind.name()], &points, launch)?;
    let results = dispatch(backend, placed.as_deref(), points.len(), &run_point);
    if let Some(err) = results.into_iter().find_map(Result::err) {
        return Err(IrError::Kernel(err));
    }

    // Fold reductions in point order: deterministic whatever the thread timing was.
    for (arg_index, arg) in task.args().iter().enumerate() {
        let Privilege::Reduce(op) = arg.privilege else {
            continue;
        };
        for place in placements.iter().map(|p| &p[arg_index]) {
            if let Some(acc) = &place.accumulator {
                fold(buffers[arg_index], arg.store.shape(), &place.rect, acc, op);
            }
        }
    }
    Ok(())
}

/// Runs `run_point(i)` for every point index and returns the results in point order. Point
/// `i` runs on processor `placed[i]` when a placement decided; otherwise the points are split
/// into contiguous blocks, one per processor. Each processor runs its points in order.
pub(super) fn dispatch<R, F>(
    backend: &EmbeddedBackend,
    placed: Option<&[usize]>,
    count: usize,
    run_point: &F,
) -> Vec<R>
where
    R: Send,
    F: Fn(usize) -> R + Sync,
{
    let procs = backend.procs().max(1);
    let owner = |i: usize| match placed {
        Some(p) => p[i] % procs,
        None => i * procs.min(count).max(1) / count.max(1),
    };
    let mut per_proc: Vec<Vec<usize>> = vec![Vec::new(); procs];
    for i in 0..count {
        per_proc[owner(i)].push(i);
    }
    let busy = per_proc.iter().filter(|p| !p.is_empty()).count();
    if busy <= 1 {
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

/// A private accumulator for one point's share of a reduction, filled with the identity.
fn accumulator(dtype: diffuse_ir::DType, rect: &Rect, op: ReductionOp) -> HostBuffer {
    let len = rect.volume().max(0) as usize;
    with_element_type!(dtype, T => HostBuffer::identity::<T>(len, op))
}

/// The raw view of one argument at one point: into the store, or into its accumulator.
pub(super) fn raw_view(
    place: &ArgPlacement,
    privilege: Privilege,
    store_shape: Tuple,
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
pub(super) fn fold(
    store: &HostBuffer,
    shape: Shape,
    rect: &Rect,
    acc: &HostBuffer,
    op: ReductionOp,
) {
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
