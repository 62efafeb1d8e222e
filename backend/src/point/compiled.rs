//! Running one point task through the plan's JIT-compiled kernel: the sub-store of every
//! kernel parameter at the point, as memref descriptors into the store buffers (or a private
//! accumulator for a reduction), one call. A point whose sub-stores do not have the shapes the
//! kernel was compiled for runs natively instead.

use diffuse_ir::{MemRef, Point, Rect, Scalar, Shape, Tuple};

use super::{accumulator, ArgPlacement, Contribution, PointRunner};
use crate::plan::{CompiledKernel, Slot};

/// Runs point `p` of the runner's plan through `kernel`'s host CPU version; returns its
/// reduction contributions, or `None` if the point's sub-stores do not fit the kernel (the
/// caller then runs it natively). (A backend launches GPU points itself, with device
/// memory.)
pub(super) fn run_point(
    runner: &PointRunner<'_>,
    kernel: &CompiledKernel,
    p: &Point,
) -> Option<Result<Vec<Contribution>, String>> {
    let plan = runner.plan;
    let t = plan.template();
    let rects = kernel.sub_stores(plan, p);
    if !fits(kernel, &rects) {
        return None;
    }
    let mut contributions: Vec<Contribution> = Vec::new();
    let mut located: Vec<Located> = Vec::with_capacity(rects.len());
    for (source, rect) in kernel.params.iter().zip(&rects) {
        let extent = rect.extent();
        let (ptr, strides) = match (source.reduction, t.args()[source.arg].slot) {
            (Some(op), _) => {
                let dtype = plan.arg(source.arg).store.dtype();
                let acc = match accumulator(dtype, rect, op) {
                    Ok(acc) => acc,
                    Err(reason) => return Some(Err(reason)),
                };
                let ptr = acc.as_ptr();
                let place = ArgPlacement {
                    rect: *rect,
                    accumulator: Some(acc),
                };
                contributions.push((source.arg, place));
                (ptr, extent.row_major_strides())
            }
            (None, Slot::Store(_)) => match runner.locate(source.arg, rect, p) {
                Ok(located) => located,
                Err(e) => return Some(Err(e.reason)),
            },
            (None, Slot::Temporary(_)) => (std::ptr::null_mut(), extent.row_major_strides()),
        };
        located.push((ptr, extent, strides));
    }
    // SAFETY: every pointer addresses a sub-store inside its store's memory (located by the
    // backend; sub-stores are clipped to the store) or a point-private accumulator of exactly
    // its extent (owned by `contributions`, whose buffers do not move); validation proved
    // that no two point tasks write the same element and that a written store is reached
    // through one parameter; temporaries are null and never dereferenced (the kernel keeps
    // them in registers or allocates them itself).
    let outcome = unsafe { call(kernel, &located, runner.scalars) };
    Some(outcome.map(|()| contributions))
}

/// One kernel parameter's memory at a point: the address of its first element (null for a
/// temporary the kernel keeps to itself), its extent and its element strides.
pub type Located = (*mut u8, Shape, Tuple);

/// The memref descriptors of parameters at `located`, in order.
pub fn memrefs(located: &[Located]) -> Vec<MemRef<'_>> {
    located
        .iter()
        .map(|(ptr, sizes, strides)| MemRef {
            ptr: *ptr,
            sizes: sizes.as_slice(),
            strides: strides.as_slice(),
        })
        .collect()
}

/// Calls `kernel`'s host version once, parameter `q` at `located[q]`, with `scalars`.
///
/// # Safety
/// Every non-null address must be valid, with its extent and strides, for the kernel's
/// accesses to that parameter, and nothing else may touch written memory during the call.
pub(super) unsafe fn call(
    kernel: &CompiledKernel,
    located: &[Located],
    scalars: &[Scalar],
) -> Result<(), String> {
    // SAFETY: the caller's promise.
    unsafe { kernel.cpu.call(&memrefs(located), scalars) }
}

/// True when sub-stores `rects` (one per kernel parameter, in store coordinates) have the
/// shapes the kernel was compiled for: one iteration space for all (see
/// [`CompiledKernel::iteration_space`]), or per element-wise constituent, inputs matching its
/// output's extent except in dimensions compiled as broadcast (extent 1). A point whose
/// sub-stores do not fit runs natively.
pub fn fits(kernel: &CompiledKernel, rects: &[Rect]) -> bool {
    let sig = &kernel.signature;
    let broadcasts = |q: usize, space: Shape| {
        let e = rects[q].extent();
        let unit = sig.params[q].unit_dims;
        e.dims() <= space.dims()
            && (0..e.dims()).all(|k| {
                let d = k + space.dims() - e.dims();
                e[k] == space[d] || (k < 8 && unit & (1 << k) != 0 && e[k] == 1)
            })
    };
    if let Some(nest) = &kernel.iteration_space {
        let space = rects[nest.param].extent();
        return sig.params.iter().enumerate().all(|(q, param)| {
            if nest.whole.contains(&q) {
                // Read whole, at the indices its constituent computes.
                true
            } else if param.temporary && param.rank == 0 {
                // Scalar work's point-local value: one per iteration, in registers.
                true
            } else if param.privilege.is_reduction() {
                // A partial result folded in the nest: one value per point.
                param.rank == 0
            } else if param.privilege.mutates() {
                rects[q].extent() == space
            } else {
                broadcasts(q, space)
            }
        });
    }
    sig.steps.iter().all(|step| {
        if !step.kind.is_elementwise() {
            return true;
        }
        let Some(&(out, _)) = step.bindings.iter().find(|(_, pr)| pr.mutates()) else {
            return true;
        };
        let space = rects[out].extent();
        step.bindings.iter().all(|&(q, _)| broadcasts(q, space))
    })
}
