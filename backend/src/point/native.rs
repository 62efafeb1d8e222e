//! Running one point task with the constituents' native variants, in program order on one
//! processor. Temporaries live in point-local buffers and never get a store allocation.
//!
//! When every constituent is element-wise, a point runs strip by strip: the constituents
//! take turns on a band of rows small enough that the band of every argument, and the
//! one-strip temporaries, stay in cache. Without a compiler that is most of what kernel
//! fusion buys; results are identical either way (the same operations on the same values).

use diffuse_ir::{KernelError, Point, PointTask, Privilege, RawView, Rect, Shape};

use super::compiled::{self, Located};
use super::{
    raw_view, run_point_task, ArgPlacement, Contribution, PointDone, PointPath, PointRunner,
};
use crate::memory::HostBuffer;
use crate::plan::{ArgLayout, LaunchPlan, Segment, Slot};

/// Runs point `p` of the runner's plan natively; with `watch`, records the floating-point
/// exceptions of each constituent under its own name.
pub(super) fn run_point(
    runner: &PointRunner<'_>,
    p: &Point,
    watch: bool,
) -> Result<PointDone, KernelError> {
    let plan = runner.plan;
    let t = plan.template();
    let places: Vec<ArgPlacement> = (0..t.args().len())
        .map(|i| ArgPlacement::of(plan.arg(i), p))
        .collect::<Result<_, _>>()
        .map_err(|reason| KernelError {
            kind: t.name().to_string(),
            point: *p,
            reason,
        })?;
    let point = PointRun {
        runner,
        point: *p,
        watch,
    };
    match strip_plan(plan, &places, runner.strip_bytes.max(1)) {
        Some(strips) => point.run_strips(&places, strips).map(|()| PointDone {
            contributions: Vec::new(),
            path: PointPath::Strips,
        }),
        None => point
            .run_whole(places)
            .map(|(contributions, segments)| PointDone {
                contributions,
                path: if segments {
                    PointPath::Segments
                } else {
                    PointPath::Whole
                },
            }),
    }
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
/// point whole: an unfused task, a task of several stages, a constituent that is not
/// element-wise, reduces or writes outside the iteration space, or a space that is one strip.
fn strip_plan(plan: &LaunchPlan, places: &[ArgPlacement], strip_bytes: usize) -> Option<Strips> {
    let t = plan.template();
    if (t.constituents() < 2 && t.temporaries() == 0)
        || !t.is_elementwise()
        || !t.stages().is_empty()
    {
        return None;
    }
    // The space is the first written sub-store that is not a 0-d temporary (scalar work
    // fused into the launch, computed again in every strip).
    let scalar_temporary =
        |layout: &ArgLayout| matches!(layout.slot, Slot::Temporary(_)) && layout.shape.dims() == 0;
    let out = (0..t.args().len())
        .find(|&i| t.args()[i].privilege.mutates() && !scalar_temporary(&t.args()[i]))?;
    let space = places[out].rect.extent();
    if space.dims() == 0 || space[0] <= 1 || space.volume() <= 0 {
        return None;
    }
    let row_elems = (space.volume() / space[0]) as usize;
    // The working set of a strip: one band of every distinct store the constituents touch.
    let mut row_bytes = 0;
    let mut counted: Vec<Slot> = Vec::new();
    for (i, (layout, place)) in t.args().iter().zip(places).enumerate() {
        let e = place.rect.extent();
        let temporary = matches!(layout.slot, Slot::Temporary(_)) && !scalar_temporary(layout);
        let must_span = layout.privilege.mutates() && !scalar_temporary(layout) || temporary;
        let broadcast = e.dims() < space.dims() || e[0] == 1;
        if layout.privilege.is_reduction()
            || (must_span && e != space)
            || !(spans_rows(e, space) || broadcast)
        {
            return None;
        }
        if !counted.contains(&layout.slot) {
            counted.push(layout.slot);
            row_bytes += row_elems * plan.arg(i).store.dtype().size_bytes();
        }
    }
    // At least MIN_STRIP_ELEMENTS per strip (fewer only when `strip_bytes` itself is that
    // small), so that the constituents' per-call cost stays small next to their loops.
    let min_elements = MIN_STRIP_ELEMENTS.min(strip_bytes / 8).max(1);
    let min_rows = min_elements.div_ceil(row_elems.max(1));
    let rows = (strip_bytes / row_bytes.max(1)).max(min_rows).max(1) as i64;
    (rows < space[0]).then_some(Strips { space, rows })
}

/// One point task of a plan, with what its constituents need.
struct PointRun<'a> {
    runner: &'a PointRunner<'a>,
    point: Point,
    /// Whether each constituent's floating-point exceptions are recorded under its name.
    watch: bool,
}

impl PointRun<'_> {
    /// Runs the constituents over the whole sub-stores, the template's compiled segments
    /// through their kernels where the point fits them (not when watched: exceptions are
    /// then told apart by constituent); returns the reduction contributions and whether a
    /// segment ran compiled. A task of several stages folds each stage's reductions into
    /// their stores when the stage ends (its one point is their only contributor, and later
    /// stages may read them), and so returns none.
    fn run_whole(
        &self,
        mut places: Vec<ArgPlacement>,
    ) -> Result<(Vec<Contribution>, bool), KernelError> {
        let t = self.runner.plan.template();
        let mut scratch: Vec<Option<HostBuffer>> = Vec::new();
        scratch.resize_with(t.temporaries(), || None);
        let segments = if self.watch { &[] } else { t.segments() };
        let staged = !t.stages().is_empty();
        let mut compiled = false;
        let mut c = 0;
        while c < t.constituents() {
            match segments.iter().find(|s| s.constituents.start == c) {
                Some(segment) if self.run_segment(segment, &places, &mut scratch)? => {
                    compiled = true;
                    c = segment.constituents.end;
                }
                _ => {
                    let views =
                        self.views(c, &places, &mut scratch, |e| e.volume().max(0) as usize)?;
                    self.run(c, &views)?;
                    c += 1;
                }
            }
            if staged && (c == t.constituents() || t.stages().contains(&c)) {
                self.fold_finished(c, &mut places)?;
            }
        }
        let contributions = places
            .into_iter()
            .enumerate()
            .filter(|(_, place)| place.accumulator.is_some())
            .collect();
        Ok((contributions, compiled))
    }

    /// Folds the accumulators of the reductions of constituents before `end` into their
    /// stores and drops them (at the end of a stage: constituents before it have run).
    fn fold_finished(&self, end: usize, places: &mut [ArgPlacement]) -> Result<(), KernelError> {
        let t = self.runner.plan.template();
        for &i in t.reductions() {
            if t.args()[i].constituent >= end {
                continue;
            }
            let (Privilege::Reduce(op), Some(acc)) =
                (t.args()[i].privilege, places[i].accumulator.take())
            else {
                continue;
            };
            let rect = places[i].rect;
            if rect.is_empty() {
                continue;
            }
            let (dst, strides) = self.runner.locate(i, &rect, &self.point)?;
            // SAFETY: the backend located `rect` inside the store's memory, which this point
            // alone accesses (a task of several stages runs over one point).
            unsafe { super::fold(dst, &strides, &rect, &acc, op) };
        }
        Ok(())
    }

    /// Runs `segment`'s kernel at this point; false, running nothing, when the point's
    /// sub-stores do not fit it (its constituents then run natively). Temporaries shared with
    /// constituents outside the segment are passed in their point-local buffers; reductions
    /// go to the point's accumulators.
    fn run_segment(
        &self,
        segment: &Segment,
        places: &[ArgPlacement],
        scratch: &mut [Option<HostBuffer>],
    ) -> Result<bool, KernelError> {
        let plan = self.runner.plan;
        let t = plan.template();
        let kernel = &segment.kernel;
        let rects: Vec<Rect> = kernel.params.iter().map(|s| places[s.arg].rect).collect();
        if !compiled::fits(kernel, &rects) {
            return Ok(false);
        }
        let mut located: Vec<Located> = Vec::with_capacity(rects.len());
        for (source, rect) in kernel.params.iter().zip(&rects) {
            let extent = rect.extent();
            let place = &places[source.arg];
            let (ptr, strides) = match (
                source.temporary,
                &place.accumulator,
                t.args()[source.arg].slot,
            ) {
                (true, _, _) => (std::ptr::null_mut(), extent.row_major_strides()),
                (false, Some(acc), _) => (acc.as_ptr(), extent.row_major_strides()),
                (false, None, Slot::Store(_)) => {
                    self.runner.locate(source.arg, rect, &self.point)?
                }
                (false, None, Slot::Temporary(k)) => {
                    let len = extent.volume().max(0) as usize;
                    let buf = self.scratch_buffer((source.arg, k), (len, len), scratch)?;
                    (buf.as_ptr(), extent.row_major_strides())
                }
            };
            located.push((ptr, extent, strides));
        }
        let scalars = plan.scalars_of(segment.constituents.clone());
        // SAFETY: store parameters are sub-stores the backend located inside their stores'
        // memory, accumulators and point-local buffers belong to this point alone and hold
        // at least their extent (checked by `scratch_buffer`); validation proved that no two
        // point tasks write the same element; the segment's own temporaries are null and
        // never dereferenced.
        unsafe { compiled::call(kernel, &located, &scalars) }.map_err(|reason| KernelError {
            kind: t.name().to_string(),
            point: self.point,
            reason,
        })?;
        Ok(true)
    }

    /// Runs the constituents strip by strip: every spanning sub-store cut to the strip's
    /// rows, temporaries one strip long and reused.
    fn run_strips(&self, places: &[ArgPlacement], strips: Strips) -> Result<(), KernelError> {
        let t = self.runner.plan.template();
        let strip_len = (strips.rows * (strips.space.volume() / strips.space[0])) as usize;
        let mut scratch: Vec<Option<HostBuffer>> = Vec::new();
        scratch.resize_with(t.temporaries(), || None);
        let mut r0 = 0;
        while r0 < strips.space[0] {
            let r1 = (r0 + strips.rows).min(strips.space[0]);
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
            for c in 0..t.constituents() {
                let views = self.views(c, &cut, &mut scratch, |_| strip_len)?;
                self.run(c, &views)?;
            }
            r0 = r1;
        }
        Ok(())
    }

    /// The views of constituent `c`'s arguments: into store buffers, accumulators, or the
    /// point's scratch buffers for temporaries (allocated with `scratch_len(extent)` elements
    /// on first use).
    fn views(
        &self,
        c: usize,
        places: &[ArgPlacement],
        scratch: &mut [Option<HostBuffer>],
        scratch_len: impl Fn(Shape) -> usize,
    ) -> Result<Vec<RawView>, KernelError> {
        let plan = self.runner.plan;
        let t = plan.template();
        t.args_of(c)
            .map(|i| {
                let arg = plan.arg(i);
                let place = &places[i];
                match t.args()[i].slot {
                    Slot::Store(_) => {
                        let located = match place.accumulator {
                            Some(_) => (std::ptr::null_mut(), place.rect.extent()),
                            None => self.runner.locate(i, &place.rect, &self.point)?,
                        };
                        Ok(raw_view(
                            place,
                            arg.privilege,
                            arg.store.shape(),
                            arg.store.dtype(),
                            located,
                        ))
                    }
                    Slot::Temporary(k) => {
                        let len = scratch_len(place.rect.extent());
                        let needed = place.rect.extent().volume().max(0) as usize;
                        let buf = self.scratch_buffer((i, k), (len, needed), scratch)?;
                        Ok(local_view(buf, place, arg))
                    }
                }
            })
            .collect()
    }

    /// The point-local buffer of temporary `k`, reached through argument `i`: allocated with
    /// `len` elements on first use, and checked to hold the `needed` elements argument `i`
    /// addresses.
    fn scratch_buffer<'s>(
        &self,
        (i, k): (usize, usize),
        (len, needed): (usize, usize),
        scratch: &'s mut [Option<HostBuffer>],
    ) -> Result<&'s HostBuffer, KernelError> {
        let plan = self.runner.plan;
        let arg = plan.arg(i);
        let error = |reason: String| KernelError {
            kind: plan.tasks()[plan.template().args()[i].constituent]
                .kind()
                .name()
                .to_string(),
            point: self.point,
            reason,
        };
        let buf: &HostBuffer = match &mut scratch[k] {
            Some(buf) => buf,
            empty => empty.insert(
                HostBuffer::scratch(
                    arg.store.dtype(),
                    len,
                    self.runner.memory,
                    self.runner.scratch,
                )
                .map_err(|e| {
                    error(format!(
                        "temporary store {} has no point-local buffer: {e}",
                        arg.store.id()
                    ))
                })?,
            ),
        };
        if needed > buf.len() {
            // Every access to a temporary goes through one partition, so its extent never
            // grows within a point; this guards that invariant.
            return Err(error(format!(
                "temporary store {} needs {needed} elements here but its point-local buffer \
                 has {}",
                arg.store.id(),
                buf.len()
            )));
        }
        Ok(buf)
    }

    /// Runs constituent `c` over `views` (recording the floating-point exceptions it raises
    /// when the point is watched).
    fn run(&self, c: usize, views: &[RawView]) -> Result<(), KernelError> {
        let task = &self.runner.plan.tasks()[c];
        let pt = PointTask::new(
            task.kind().name(),
            self.point,
            task.launch_domain(),
            views,
            task.scalars(),
        );
        if !self.watch {
            return run_point_task(task.kind(), &pt);
        }
        self.runner
            .fp
            .watch(task.kind().name(), || run_point_task(task.kind(), &pt))
    }
}

/// The raw view of a temporary's point-local buffer for the sub-store (or strip) `place`.
fn local_view(buf: &HostBuffer, place: &ArgPlacement, arg: &diffuse_ir::TaskArg) -> RawView {
    let extent = place.rect.extent();
    // SAFETY: the buffer belongs to this point task alone, outlives its constituents' runs,
    // and holds at least `extent.volume()` elements of the store's dtype (checked by the
    // caller). Temporaries are written (covering) before they are read, so their stale
    // contents are never observed; they are never reduced.
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
