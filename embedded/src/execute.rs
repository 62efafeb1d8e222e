//! Running a launch plan on the embedded backend: one driver for every plan, fused or not.
//! A plan placed on the GPU that can run there is enqueued on the device (`gpu.rs`); any
//! other plan runs on the host, its stores' host copies made current first: each point task
//! through [`diffuse_backend::point`] on the worker thread of the processor its placement
//! names (points placed on a GPU that run on the host are spread over every worker);
//! reductions give every point a private accumulator per reducing argument, folded into the
//! stores argument by argument, points in order, so results never depend on thread timing and
//! equal the unfused ones.

use std::sync::atomic::Ordering;

use diffuse_backend::memory::{FirstUse, HostBuffer};
use diffuse_backend::point::{self, PointPath, PointRunner, PointStores};
use diffuse_backend::{LaunchPlan, ProcKind, Slot};
use diffuse_ir::{IndexTask, IrError, Point, Privilege, Rect, Shape, Tuple};

use crate::residency::{StoreUse, Use};
use crate::{gpu, EmbeddedBackend};

/// The store buffers of one plan: every store argument lives in its store's row-major
/// buffer.
struct StoreBuffers<'a> {
    plan: &'a LaunchPlan,
    buffers: Vec<&'a HostBuffer>,
}

impl PointStores for StoreBuffers<'_> {
    fn locate(&self, arg: usize, rect: &Rect) -> Result<(*mut u8, Tuple), String> {
        let Slot::Store(s) = self.plan.template().args()[arg].slot else {
            return Err(format!("argument {arg} is a temporary, not a store"));
        };
        let shape = self.plan.store(s).shape();
        Ok((
            store_address(self.buffers[s], shape, rect),
            shape.row_major_strides(),
        ))
    }
}

/// Executes `plan` on `backend`: every point task, then the reductions in order.
pub(super) fn run(backend: &EmbeddedBackend, plan: &LaunchPlan) -> Result<(), IrError> {
    let t = plan.template();
    let launch = t.launch_domain();
    let points: Vec<Point> = Rect::from_shape(launch).points().collect();
    let memories = plan
        .stores()
        .iter()
        .enumerate()
        .map(|(s, store)| {
            let first_use = if t.overwrites(s) {
                FirstUse::Overwrites
            } else {
                FirstUse::Reads
            };
            backend.memory(store, first_use)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(gpu) = &backend.gpu {
        let uses: Vec<StoreUse<'_>> = plan
            .stores()
            .iter()
            .zip(&memories)
            .enumerate()
            .map(|(s, (store, memory))| {
                let writes = t
                    .args()
                    .iter()
                    .any(|a| a.slot == Slot::Store(s) && a.privilege.mutates());
                let how = Use {
                    reads: !t.overwrites(s),
                    writes,
                };
                (store, *memory, how)
            })
            .collect();
        if gpu::run(backend, gpu, plan, &uses)? {
            return Ok(());
        }
        gpu.to_host(&uses)?;
    }
    let buffers = memories.iter().map(|m| m.host()).collect();
    let stores = StoreBuffers { plan, buffers };
    let scalars = plan.scalars();
    let runner = PointRunner {
        plan,
        stores: &stores,
        scalars: &scalars,
        strip_bytes: backend.strip_bytes,
        scratch: &backend.cache,
        memory: &backend.stats,
        fp: &backend.fp,
    };
    let run_point = |i: usize| {
        let done = runner.run(&points[i])?;
        let counter = match done.path {
            PointPath::Compiled => Some(&backend.compiled_points),
            PointPath::Strips => Some(&backend.strip_points),
            PointPath::Segments => Some(&backend.segment_points),
            PointPath::Whole => None,
        };
        if let Some(counter) = counter {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        Ok(done.contributions)
    };
    let mut per_point = Vec::with_capacity(points.len());
    for result in dispatch(backend, plan, points.len(), &run_point) {
        per_point.push(result.map_err(IrError::Kernel)?);
    }
    // Fold argument by argument (constituents in program order), points in order.
    let mut all: Vec<_> = per_point
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
        if let (Some(acc), false) = (&place.accumulator, place.rect.is_empty()) {
            let shape = plan.store(s).shape();
            // Folding is the reduction's arithmetic too (a sum may overflow here).
            let kind = plan.tasks()[t.args()[*a].constituent].kind().name();
            // SAFETY: point tasks have finished; this thread alone touches the buffers, and
            // `rect` lies inside the store, whose buffer holds it row-major.
            backend.fp.watch(kind, || unsafe {
                point::fold(
                    store_address(stores.buffers[s], shape, &place.rect),
                    &shape.row_major_strides(),
                    &place.rect,
                    acc,
                    op,
                )
            });
        }
    }
    Ok(())
}

/// Runs `run_point(i)` for every point index and returns the results in point order. Point
/// `i` runs on the worker thread of the processor its placement names. A launch placed by
/// default (not pinned by a mapper) that reaches fewer bytes than the backend's
/// `inline_bytes` runs on the calling thread: handing it to the workers would cost more than
/// it saves. What counts is the part of each store its arguments' partitions reach, not the
/// whole store, so a row or a column of a large matrix (a loop's step) is small.
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
        let bytes: usize = plan
            .tasks()
            .iter()
            .flat_map(IndexTask::args)
            .map(|arg| {
                let reached = arg.partition.reachable_bounds(arg.store.shape());
                reached.volume().max(0) as usize * arg.store.dtype().size_bytes()
            })
            .sum();
        bytes <= backend.inline_bytes
    };
    if !placement.pinned && (count <= 1 || small()) {
        return (0..count).map(run_point).collect();
    }
    let procs = backend.procs.max(1);
    let per_node = backend.procs_per_node();
    let owner = |i: usize| {
        placement.processors.get(i).map_or(0, |p| match p.kind {
            // Points placed on a GPU that run on the host (no GPU version of the kernel, a
            // reduction) use every worker.
            ProcKind::Gpu => i % procs,
            _ => (p.node * per_node + p.index % per_node) % procs,
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

/// The address of the first element of the box `rect` of a store of shape `shape` held in
/// `buf` (the buffer's start for an empty box).
fn store_address(buf: &HostBuffer, shape: Shape, rect: &Rect) -> *mut u8 {
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
