//! Running a plan on the GPU: every point placed on the GPU, the plan's kernel built for it,
//! the stores' device copies made current (`residency.rs`), and the kernel enqueued on the
//! device's stream with memref descriptors into those copies (a view is an offset and strides
//! into its store's one device buffer: nothing is packed). Nothing waits: the launch returns
//! before the kernel runs, and the next flush or host use of a store it writes waits.
//!
//! Points of an element-wise launch are *coalesced*: when their sub-stores tile one box per
//! argument, with the same offsets between arguments at every point, the kernel runs once over
//! the boxes instead of once per point.
//!
//! A reduction runs on the GPU when its store is reached through the reducing parameter alone:
//! the kernel folds each point's total into the store's device copy (points launch one by one,
//! in order, on the one stream), as the CPU path folds each point's private accumulator into
//! the store; a full reduction's kernel takes a small device workspace, allocated for the
//! launch and freed in stream order after it.
//!
//! On the simulated GPU a launch runs the kernel's host CPU version on the simulator's arena,
//! and only for kernels the GPU version was built for, so that what runs on the simulated
//! device is what would run on a real one; its reductions go through a private accumulator
//! folded into the store, the CPU path's arithmetic (a real GPU's order differs by rounding).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use diffuse_backend::memory::HostBuffer;
use diffuse_backend::point::{accumulator, fits, fold};
use diffuse_backend::{CompiledKernel, LaunchPlan, PointKernel, ProcKind, Slot};
use diffuse_device::{DeviceKind, DevicePtr};
use diffuse_ir::{IrError, KernelError, MemRef, Point, Rect, ReductionOp, Scalar, Shape, Tuple};

use crate::residency::{Gpu, StoreUse};
use crate::EmbeddedBackend;

/// Set once a GPU launch has failed: the GPU is not trusted with later plans, which run on
/// the CPUs (reported once).
static LAUNCH_FAILED: AtomicBool = AtomicBool::new(false);

/// Runs `plan` on the GPU if it can run there: every point placed on a GPU, a kernel built
/// for the GPU, every reduced store reached through its reducing parameter alone, and every
/// point's sub-stores fitting the kernel. Returns false (having changed
/// nothing the CPU path would see) when it cannot; `uses` says how the plan uses each of its
/// stores.
pub(crate) fn run(
    backend: &EmbeddedBackend,
    gpu: &Gpu,
    plan: &LaunchPlan,
    uses: &[StoreUse<'_>],
) -> Result<bool, IrError> {
    let t = plan.template();
    let placed = &t.placement().processors;
    let on_gpu = !placed.is_empty() && placed.iter().all(|p| p.kind == ProcKind::Gpu);
    let Some(kernel) = t.kernel().filter(|k| k.gpu.is_some()) else {
        return Ok(false);
    };
    if !on_gpu || !kernel.reductions_stand_alone(t) || LAUNCH_FAILED.load(Ordering::Relaxed) {
        return Ok(false);
    }
    let points: Vec<Point> = Rect::from_shape(t.launch_domain()).points().collect();
    let rects: Vec<Vec<Rect>> = points.iter().map(|p| kernel.sub_stores(plan, p)).collect();
    if !rects.iter().all(|r| fits(kernel, r)) {
        return Ok(false);
    }
    let launches = match coalesced(kernel, t.is_elementwise(), &rects) {
        Some(union) => vec![union],
        None => rects,
    };
    let bases = gpu.to_device(uses)?;
    let simulated = gpu.device().info().kind == DeviceKind::Simulated;
    let body = match (&kernel.gpu, simulated) {
        (_, true) => kernel.cpu.clone(),
        (Some(g), false) => g.clone(),
        (None, false) => return Ok(false),
    };
    let scalars: Arc<[Scalar]> = plan.scalars().into();
    let workspace = match Workspace::allocate(gpu, &kernel.gpu_workspace) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(
                "no device workspace for {}'s reductions ({e}); it runs on the CPUs",
                t.name()
            );
            return Ok(false);
        }
    };
    for (i, rects) in launches.iter().enumerate() {
        let mut call = Call::new(plan, kernel, &body, &bases, rects, &scalars);
        if simulated {
            // The CPU kernel takes no workspace (the simulated device still holds it).
            call.private_accumulators(plan, kernel);
        } else {
            call.workspaces.clone_from(&workspace.parts);
        }
        // SAFETY: every descriptor addresses a sub-store inside its store's device copy
        // (sub-stores are clipped to their store), made current by `to_device` and freed only
        // in stream order after this launch; temporaries are null (the kernel keeps them in
        // registers). Validation proved no two points write one element, and coalescing only
        // joins points whose boxes tile the union.
        let launched = unsafe { gpu.device().launch(Box::new(move || call.run())) };
        if let Err(e) = launched {
            if !LAUNCH_FAILED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "a GPU launch of {} failed ({e}); later work runs on the CPUs",
                    t.name()
                );
            }
            if i == 0 {
                // Nothing of the plan was enqueued: the CPUs run it.
                return Ok(false);
            }
            gpu.written_on_device(uses);
            return Err(IrError::Kernel(KernelError {
                kind: t.name().to_string(),
                point: points.get(i).copied().unwrap_or_else(|| Tuple::splat(0, 0)),
                reason: format!("the GPU launch failed: {e}"),
            }));
        }
    }
    gpu.written_on_device(uses);
    let n = points.len() as u64;
    backend.gpu_points.fetch_add(n, Ordering::Relaxed);
    backend.compiled_points.fetch_add(n, Ordering::Relaxed);
    Ok(true)
}

/// The device workspace of one plan's launches (one part per full reduction of the kernel),
/// freed in stream order when dropped, after the launches that use it were enqueued.
struct Workspace<'a> {
    gpu: &'a Gpu,
    base: Option<DevicePtr>,
    parts: Vec<DevicePtr>,
}

impl<'a> Workspace<'a> {
    /// One allocation holding a part of each of `sizes` bytes, 256-byte aligned.
    fn allocate(gpu: &'a Gpu, sizes: &[usize]) -> Result<Self, diffuse_device::DeviceError> {
        let (total, offsets) = diffuse_device::workspace_layout(sizes);
        if total == 0 {
            return Ok(Workspace {
                gpu,
                base: None,
                parts: Vec::new(),
            });
        }
        let base = gpu.device().alloc(total)?;
        Ok(Workspace {
            gpu,
            base: Some(base),
            parts: offsets.iter().map(|&o| base + o as u64).collect(),
        })
    }
}

impl Drop for Workspace<'_> {
    fn drop(&mut self) {
        if let Some(base) = self.base {
            self.gpu.device().free(base);
        }
    }
}

/// The boxes one launch over all points would use, one per kernel parameter, when the
/// kernel is element-wise and the points' boxes can be joined: per parameter either the same
/// box at every point (a replicated store), or boxes of the reference parameter's extent at a
/// constant offset from it, the reference boxes (the first mutated parameter's) tiling their
/// bounding box exactly. `None` otherwise (the points launch one by one).
fn coalesced(kernel: &CompiledKernel, elementwise: bool, rects: &[Vec<Rect>]) -> Option<Vec<Rect>> {
    if !elementwise || rects.len() <= 1 {
        return None;
    }
    let reference = kernel
        .signature
        .params
        .iter()
        .position(|p| p.privilege.mutates())?;
    let live: Vec<&Vec<Rect>> = rects.iter().filter(|r| !r[reference].is_empty()).collect();
    let first = live.first()?;
    let mut bound = first[reference];
    let mut volume = 0i64;
    for r in &live {
        let b = r[reference];
        bound = Rect {
            lo: bound.lo.zip_with(&b.lo, i64::min),
            hi: bound.hi.zip_with(&b.hi, i64::max),
        };
        volume += b.volume();
    }
    if volume != bound.volume() {
        return None;
    }
    let params = first.len();
    let mut union = Vec::with_capacity(params);
    for q in 0..params {
        let same = live.iter().all(|r| r[q] == first[q]);
        if same && q != reference {
            union.push(first[q]);
            continue;
        }
        let offset = |r: &Vec<Rect>| {
            (r[q].dims() == r[reference].dims() && r[q].extent() == r[reference].extent())
                .then(|| r[q].lo.zip_with(&r[reference].lo, |a, b| a - b))
        };
        let delta = offset(first)?;
        if !live.iter().all(|r| offset(r) == Some(delta)) {
            return None;
        }
        union.push(Rect {
            lo: bound.lo.zip_with(&delta, |a, d| a + d),
            hi: bound.hi.zip_with(&delta, |a, d| a + d),
        });
    }
    fits(kernel, &union).then_some(union)
}

/// A point's private accumulator for one reducing parameter (simulated GPU): the operator,
/// the identity-filled buffer, row-major over the parameter's extent, and its strides.
struct Private {
    op: ReductionOp,
    buffer: HostBuffer,
    strides: Tuple,
}

/// One kernel launch: the kernel and its memref descriptors (device addresses, extents and
/// element strides per parameter), workspaces and scalars, owned so the device may run it
/// later.
struct Call {
    kernel: Arc<dyn PointKernel>,
    ptrs: Vec<DevicePtr>,
    sizes: Vec<Shape>,
    strides: Vec<Tuple>,
    workspaces: Vec<DevicePtr>,
    /// On the simulated GPU: per reducing parameter, its operator and the point's private
    /// accumulator, which the kernel reduces into and the call then folds into the store.
    accumulators: Vec<Option<Private>>,
    scalars: Arc<[Scalar]>,
}

impl Call {
    /// The launch of `body` over `rects` (one per kernel parameter), stores at `bases` (the
    /// device address of each store slot's copy).
    fn new(
        plan: &LaunchPlan,
        kernel: &CompiledKernel,
        body: &Arc<dyn PointKernel>,
        bases: &[DevicePtr],
        rects: &[Rect],
        scalars: &Arc<[Scalar]>,
    ) -> Self {
        let t = plan.template();
        let mut call = Call {
            kernel: body.clone(),
            ptrs: Vec::with_capacity(rects.len()),
            sizes: Vec::with_capacity(rects.len()),
            strides: Vec::with_capacity(rects.len()),
            workspaces: Vec::new(),
            accumulators: Vec::new(),
            scalars: scalars.clone(),
        };
        for (source, rect) in kernel.params.iter().zip(rects) {
            let extent = rect.extent();
            let (ptr, strides) = match t.args()[source.arg].slot {
                Slot::Store(s) => {
                    let store = plan.store(s);
                    let strides = store.shape().row_major_strides();
                    let start: i64 = if rect.is_empty() {
                        0
                    } else {
                        (0..rect.dims()).map(|d| rect.lo[d] * strides[d]).sum()
                    };
                    let offset = start as u64 * store.dtype().size_bytes() as u64;
                    (bases[s] + offset, strides)
                }
                Slot::Temporary(_) => (0, extent.row_major_strides()),
            };
            call.ptrs.push(ptr);
            call.sizes.push(extent);
            call.strides.push(strides);
        }
        call
    }

    /// Gives every reducing parameter an identity-filled private accumulator (the simulated
    /// GPU's CPU kernel reduces into it; [`run`](Self::run) folds it into the store).
    fn private_accumulators(&mut self, plan: &LaunchPlan, kernel: &CompiledKernel) {
        self.accumulators = kernel
            .params
            .iter()
            .zip(&self.sizes)
            .map(|(q, extent)| {
                let op = q.reduction?;
                let dtype = plan.arg(q.arg).store.dtype();
                let buffer = accumulator(dtype, &Rect::from_shape(*extent), op).ok()?;
                Some(Private {
                    op,
                    buffer,
                    strides: extent.row_major_strides(),
                })
            })
            .collect();
    }

    /// Calls the kernel (on the device's launching thread).
    fn run(self) -> Result<(), String> {
        let private = |q: usize| self.accumulators.get(q).and_then(Option::as_ref);
        let mut memrefs: Vec<MemRef<'_>> = Vec::with_capacity(self.ptrs.len());
        for (q, ((&ptr, sizes), strides)) in self
            .ptrs
            .iter()
            .zip(&self.sizes)
            .zip(&self.strides)
            .enumerate()
        {
            memrefs.push(match private(q) {
                Some(p) => MemRef {
                    ptr: p.buffer.as_ptr(),
                    sizes: sizes.as_slice(),
                    strides: p.strides.as_slice(),
                },
                None => MemRef {
                    ptr: ptr as usize as *mut u8,
                    sizes: sizes.as_slice(),
                    strides: strides.as_slice(),
                },
            });
        }
        memrefs.extend(self.workspaces.iter().map(|&ptr| MemRef {
            ptr: ptr as usize as *mut u8,
            sizes: &[],
            strides: &[],
        }));
        // SAFETY: see the launch in `run`: the descriptors address device memory valid for
        // the kernel's accesses while it runs (private accumulators are host buffers of the
        // parameter's extent, on the simulated GPU, whose device memory is host memory).
        unsafe { self.kernel.call(&memrefs, &self.scalars) }?;
        for (q, slot) in self.accumulators.iter().enumerate() {
            if let Some(p) = slot {
                let rect = Rect::from_shape(self.sizes[q]);
                // SAFETY: the simulated device's addresses are host addresses; the store's
                // sub-store at `ptrs[q]` with `strides[q]` holds `rect`, and nothing else
                // runs on the device meanwhile.
                unsafe {
                    fold(
                        self.ptrs[q] as usize as *mut u8,
                        &self.strides[q],
                        &rect,
                        &p.buffer,
                        p.op,
                    )
                };
            }
        }
        Ok(())
    }
}
