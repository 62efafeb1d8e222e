//! Running a fused task: each point task runs its JIT-compiled kernel when the fused task has
//! one (see [`compiled`]), and otherwise the constituents' native variants in program order
//! on one processor. Temporaries live in point-local buffers and never get a store
//! allocation; reductions keep one accumulator per constituent argument and are folded
//! constituent by constituent, points in order (the unfused order).
//!
//! When every constituent is element-wise, a point runs strip by strip: the constituents
//! take turns on a band of rows small enough that the band of every argument, and the
//! one-strip temporaries, stay in cache. Without a compiler that is most of what kernel
//! fusion buys; results are identical either way (the same operations on the same values).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use diffuse_fusion::FusedTask;
use diffuse_ir::{
    IndexTask, IrError, KernelError, Point, PointTask, RawView, Rect, Shape, StoreId, TaskArg,
};
use hashbrown::HashMap;

use super::compiled;
use super::launch::{dispatch, first_use, fold, raw_view, run_point_task, ArgPlacement};
use super::memory::{BufferCache, HostBuffer};
use super::EmbeddedBackend;

/// A reduction contribution of one point: constituent, argument, where, and the values.
pub(super) type Contribution = (usize, usize, ArgPlacement);

/// Executes `fused` on `backend`.
pub(super) fn run_fused(backend: &EmbeddedBackend, fused: &FusedTask) -> Result<(), IrError> {
    let launch = fused.launch_domain();
    let points: Vec<Point> = Rect::from_shape(launch).points().collect();

    // Store buffers of every non-temporary store; its first access decides the zero-fill.
    let mut buffers: HashMap<StoreId, &HostBuffer> = HashMap::new();
    for task in fused.constituents() {
        for arg in task.args() {
            let id = arg.store.id();
            if fused.is_temporary(id) || buffers.contains_key(&id) {
                continue;
            }
            buffers.insert(id, backend.buffer(&arg.store, first_use(arg, launch))?);
        }
    }

    let compiled = backend
        .jit
        .as_ref()
        .and_then(|jit| compiled::prepare(jit, backend.gpu.as_deref(), fused, &points));
    let run_point = |i: usize| -> Result<Vec<Contribution>, KernelError> {
        let p = points[i];
        if let Some(outcome) = compiled.as_ref().and_then(|c| c.run_point(&p, &buffers)) {
            backend.compiled_points.fetch_add(1, Ordering::Relaxed);
            return outcome
                .map(|(contributions, device)| {
                    if device == compiled::Device::Gpu {
                        backend.gpu_points.fetch_add(1, Ordering::Relaxed);
                    }
                    contributions
                })
                .map_err(|reason| KernelError {
                    kind: fused.name(),
                    point: p,
                    reason,
                });
        }
        let placements: Vec<Vec<ArgPlacement>> = fused
            .constituents()
            .iter()
            .map(|t| t.args().iter().map(|a| ArgPlacement::of(a, &p)).collect())
            .collect();
        let point = PointRun {
            fused,
            point: p,
            buffers: &buffers,
            cache: &backend.cache,
        };
        match strip_plan(fused, &placements, backend.strip_bytes) {
            Some(strips) => {
                backend.strip_points.fetch_add(1, Ordering::Relaxed);
                point.run_strips(&placements, strips).map(|()| Vec::new())
            }
            None => point.run_whole(placements),
        }
    };
    let mut per_point = Vec::with_capacity(points.len());
    let name = fused.name();
    let constituents: Vec<&str> = fused
        .constituents()
        .iter()
        .map(|t| t.kind().name())
        .collect();
    let placed = backend.place(&name, &constituents, &points, launch)?;
    for result in dispatch(backend, placed.as_deref(), points.len(), &run_point) {
        per_point.push(result.map_err(IrError::Kernel)?);
    }

    // Fold constituent by constituent, argument by argument, points in order.
    let mut all: Vec<(usize, usize, usize, ArgPlacement)> = per_point
        .into_iter()
        .enumerate()
        .flat_map(|(pi, contribs)| contribs.into_iter().map(move |(c, a, pl)| (c, a, pi, pl)))
        .collect();
    all.sort_by_key(|&(c, a, pi, _)| (c, a, pi));
    for (c, a, _, place) in &all {
        let arg = &fused.constituents()[*c].args()[*a];
        let diffuse_ir::Privilege::Reduce(op) = arg.privilege else {
            continue;
        };
        if let (Some(acc), Some(buf)) = (&place.accumulator, buffers.get(&arg.store.id())) {
            fold(buf, arg.store.shape(), &place.rect, acc, op);
        }
    }
    Ok(())
}

/// The fewest elements of the iteration space one strip covers.
const MIN_STRIP_ELEMENTS: usize = 2048;

/// How a point task of a fused element-wise task is cut into strips of rows.
#[derive(Clone, Copy, Debug)]
struct Strips {
    /// The iteration space: the extent of the first constituent's first output.
    space: Shape,
    /// Rows (indices of the outermost dimension) per strip.
    rows: i64,
}

/// True when a sub-store of extent `e` spans the iteration space's outermost dimension (and
/// must be cut with it); false when it is broadcast along it.
fn spans_rows(e: Shape, space: Shape) -> bool {
    e.dims() == space.dims() && e[0] == space[0]
}

/// The strips for one point, each about `strip_bytes` of working set, or `None` to run the
/// point whole: when a constituent is not element-wise, reduces, writes outside the
/// iteration space, or the space is one strip.
fn strip_plan(
    fused: &FusedTask,
    placements: &[Vec<ArgPlacement>],
    strip_bytes: usize,
) -> Option<Strips> {
    let tasks = fused.constituents();
    if !tasks.iter().all(|t| t.kind().is_elementwise()) {
        return None;
    }
    let first = tasks.first()?;
    let out = first.args().iter().position(|a| a.privilege.mutates())?;
    let space = placements[0][out].rect.extent();
    if space.dims() == 0 || space[0] <= 1 || space.volume() <= 0 {
        return None;
    }
    let row_elems = (space.volume() / space[0]) as usize;
    // The working set of a strip: one band of every distinct store the constituents touch.
    let mut row_bytes = 0;
    let mut counted: Vec<StoreId> = Vec::new();
    for (task, places) in tasks.iter().zip(placements) {
        for (arg, place) in task.args().iter().zip(places) {
            let e = place.rect.extent();
            let must_span = arg.privilege.mutates() || fused.is_temporary(arg.store.id());
            let broadcast = e.dims() < space.dims() || e[0] == 1;
            if arg.privilege.is_reduction()
                || (must_span && e != space)
                || !(spans_rows(e, space) || broadcast)
            {
                return None;
            }
            if !counted.contains(&arg.store.id()) {
                counted.push(arg.store.id());
                row_bytes += row_elems * arg.store.dtype().size_bytes();
            }
        }
    }
    // At least MIN_STRIP_ELEMENTS per strip (fewer only when `strip_bytes` itself is that
    // small), so that the constituents' per-call cost stays small next to their loops.
    let min_elements = MIN_STRIP_ELEMENTS.min(strip_bytes / 8).max(1);
    let min_rows = min_elements.div_ceil(row_elems.max(1));
    let rows = (strip_bytes / row_bytes.max(1)).max(min_rows).max(1) as i64;
    (rows < space[0]).then_some(Strips { space, rows })
}

/// One point task of a fused task, with what its constituents need.
struct PointRun<'a> {
    fused: &'a FusedTask,
    point: Point,
    buffers: &'a HashMap<StoreId, &'a HostBuffer>,
    cache: &'a Arc<BufferCache>,
}

impl PointRun<'_> {
    /// Runs the constituents over the whole sub-stores; returns the reduction contributions.
    fn run_whole(
        &self,
        placements: Vec<Vec<ArgPlacement>>,
    ) -> Result<Vec<Contribution>, KernelError> {
        let mut scratch: HashMap<StoreId, HostBuffer> = HashMap::new();
        let mut contributions = Vec::new();
        for (c, (task, places)) in self.fused.constituents().iter().zip(placements).enumerate() {
            let views = self.views(task, &places, &mut scratch, |e| e.volume().max(0) as usize)?;
            self.run(task, &views)?;
            for (a, place) in places.into_iter().enumerate() {
                if place.accumulator.is_some() {
                    contributions.push((c, a, place));
                }
            }
        }
        Ok(contributions)
    }

    /// Runs the constituents strip by strip: every spanning sub-store cut to the strip's
    /// rows, temporaries one strip long and reused.
    fn run_strips(
        &self,
        placements: &[Vec<ArgPlacement>],
        strips: Strips,
    ) -> Result<(), KernelError> {
        let strip_len = (strips.rows * (strips.space.volume() / strips.space[0])) as usize;
        let mut scratch: HashMap<StoreId, HostBuffer> = HashMap::new();
        let mut r0 = 0;
        while r0 < strips.space[0] {
            let r1 = (r0 + strips.rows).min(strips.space[0]);
            for (task, places) in self.fused.constituents().iter().zip(placements) {
                let cut: Vec<ArgPlacement> = places
                    .iter()
                    .map(|place| {
                        let mut rect = place.rect;
                        if spans_rows(rect.extent(), strips.space) {
                            rect.hi.as_mut_slice()[0] = rect.lo[0] + r1;
                            rect.lo.as_mut_slice()[0] += r0;
                        }
                        ArgPlacement {
                            rect,
                            accumulator: None,
                        }
                    })
                    .collect();
                let views = self.views(task, &cut, &mut scratch, |_| strip_len)?;
                self.run(task, &views)?;
            }
            r0 = r1;
        }
        Ok(())
    }

    /// The views of one constituent's arguments: into store buffers, accumulators, or the
    /// point's scratch buffers for temporaries (allocated with `scratch_len(extent)` elements
    /// on first use).
    fn views(
        &self,
        task: &IndexTask,
        places: &[ArgPlacement],
        scratch: &mut HashMap<StoreId, HostBuffer>,
        scratch_len: impl Fn(Shape) -> usize,
    ) -> Result<Vec<RawView>, KernelError> {
        task.args()
            .iter()
            .zip(places)
            .map(|(arg, place)| {
                let id = arg.store.id();
                match self.buffers.get(&id) {
                    Some(buf) => Ok(raw_view(place, arg.privilege, arg.store.shape(), buf)),
                    None => {
                        let buf = scratch.entry(id).or_insert_with(|| {
                            HostBuffer::scratch(
                                arg.store.dtype(),
                                scratch_len(place.rect.extent()),
                                self.cache,
                            )
                        });
                        let needed = place.rect.extent().volume().max(0) as usize;
                        if needed > buf.len() {
                            // Every access to a temporary goes through one partition, so its
                            // extent never grows within a point; this guards that invariant.
                            return Err(KernelError {
                                kind: task.kind().name().to_string(),
                                point: self.point,
                                reason: format!(
                                    "temporary store {id} needs {needed} elements here but its \
                                     point-local buffer has {}",
                                    buf.len()
                                ),
                            });
                        }
                        Ok(local_view(buf, place, arg))
                    }
                }
            })
            .collect()
    }

    fn run(&self, task: &IndexTask, views: &[RawView]) -> Result<(), KernelError> {
        let pt = PointTask::new(
            task.kind().name(),
            self.point,
            self.fused.launch_domain(),
            views,
            task.scalars(),
        );
        run_point_task(task.kind(), &pt)
    }
}

/// The raw view of a temporary's point-local buffer for the sub-store (or strip) `place`.
fn local_view(buf: &HostBuffer, place: &ArgPlacement, arg: &TaskArg) -> RawView {
    let extent = place.rect.extent();
    // SAFETY: the buffer belongs to this point task alone, outlives its constituents' runs,
    // and holds at least `extent.volume()` elements of the store's dtype (checked by the
    // caller). Temporaries are written (covering) before they are
    // read, so its stale contents are never observed; they are never reduced.
    unsafe {
        RawView::new(
            buf.as_ptr(),
            buf.dtype(),
            place.rect,
            arg.store.shape(),
            extent.row_major_strides(),
            arg.privilege,
        )
    }
}
