//! Running a fused task through a JIT-compiled kernel: one kernel call per point task, on the
//! processor that owns the point. The kernel is looked up by the fused task's canonical
//! [`KernelSignature`]; when there is none (no generator, a compile failure) the caller runs
//! the native path, and a point whose sub-stores do not fit the compiled broadcasting pattern
//! runs natively on its own.

use diffuse_fusion::FusedTask;
use diffuse_ir::{Partition, Point, Privilege, Shape, StoreId, StoreRef};
use diffuse_jit::{
    CpuKernel, GpuJit, GpuKernel, Jit, KernelParam, KernelSignature, KernelStep, Lookup, MemRef,
};
use hashbrown::HashMap;
use std::sync::Arc;

use super::fused::Contribution;
use super::launch::{store_address, ArgPlacement};
use super::memory::HostBuffer;

/// Where a point task's compiled kernel ran.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Device {
    /// The host CPU.
    Cpu,
    /// The GPU.
    Gpu,
}

/// Set once a GPU launch has failed, so the fallback is reported once per process.
static GPU_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What makes two constituent arguments one kernel parameter: the store, its partition
/// (none for a temporary) and, for a reduction, the (constituent, argument) it belongs to.
type ParamKey = (StoreId, Option<Partition>, Option<(usize, usize)>);

/// One parameter of the compiled kernel: where its sub-stores come from.
struct Binding {
    store: StoreRef,
    partition: Partition,
    temporary: bool,
    /// The operator when the kernel reduces into it (point-private accumulators).
    reduction: Option<diffuse_ir::ReductionOp>,
}

/// A fused task matched with its compiled kernel.
pub(super) struct CompiledTask {
    kernel: Arc<CpuKernel>,
    /// The same kernel for the GPU, when the backend runs kernels there and it could be
    /// built.
    gpu: Option<Arc<GpuKernel>>,
    bindings: Vec<Binding>,
    /// Every constituent's scalars, in order.
    scalars: Vec<diffuse_ir::Scalar>,
    /// Per parameter: the first (constituent, argument) bound to it (reductions are folded
    /// under that name).
    first_use: Vec<(usize, usize)>,
}

/// The compiled kernel for `fused` at `points`, or `None` when it has none (the JIT warns
/// once per signature).
pub(super) fn prepare(
    jit: &Arc<Jit>,
    gpu: Option<&GpuJit>,
    fused: &FusedTask,
    points: &[Point],
) -> Option<CompiledTask> {
    let mut index: HashMap<ParamKey, usize> = HashMap::new();
    let mut renamed: HashMap<StoreId, usize> = HashMap::new();
    let mut bindings: Vec<Binding> = Vec::new();
    let mut params: Vec<KernelParam> = Vec::new();
    let mut first_use = Vec::new();
    let mut steps = Vec::with_capacity(fused.constituents().len());
    for (c, task) in fused.constituents().iter().enumerate() {
        let mut step = Vec::with_capacity(task.args().len());
        for (a, arg) in task.args().iter().enumerate() {
            let id = arg.store.id();
            let temporary = fused.is_temporary(id);
            // A temporary is reached through one partition (the true-dependence constraint).
            // Every reducing argument gets a parameter (a point-private accumulator) of its
            // own, folded constituent by constituent as the native path does, so that two
            // reductions into one store round exactly as unfused.
            let key = (
                id,
                (!temporary).then(|| arg.partition.clone()),
                arg.privilege.is_reduction().then_some((c, a)),
            );
            let next = params.len();
            let p = *index.entry(key).or_insert(next);
            if p == next {
                let store = renamed.len();
                let store = *renamed.entry(id).or_insert(store);
                params.push(KernelParam {
                    dtype: arg.store.dtype(),
                    rank: arg.store.shape().dims(),
                    privilege: arg.privilege,
                    temporary,
                    store,
                    unit_dims: unit_dims(&arg.store, &arg.partition, points),
                });
                bindings.push(Binding {
                    store: arg.store.clone(),
                    partition: arg.partition.clone(),
                    temporary,
                    reduction: match arg.privilege {
                        Privilege::Reduce(op) => Some(op),
                        _ => None,
                    },
                });
                first_use.push((c, a));
            } else {
                params[p].privilege = union(params[p].privilege, arg.privilege);
            }
            step.push((p, arg.privilege));
        }
        steps.push(KernelStep {
            kind: Arc::clone(task.kind()),
            bindings: step,
        });
    }
    let signature = KernelSignature {
        name: fused.name(),
        steps,
        params,
    };
    let kernel = match jit.kernel_in(&signature) {
        Lookup::Ready(kernel) => kernel,
        Lookup::Compiling | Lookup::Failed(_) => return None,
    };
    // A kernel that cannot be built for the GPU was logged by the GPU JIT; the CPU runs it.
    let gpu = gpu.and_then(|g| g.kernel(&signature).ok());
    Some(CompiledTask {
        kernel,
        gpu,
        bindings,
        scalars: fused
            .constituents()
            .iter()
            .flat_map(|t| t.scalars().iter().copied())
            .collect(),
        first_use,
    })
}

/// The dimensions in which `partition` gives every point a sub-store of extent 1.
fn unit_dims(store: &StoreRef, partition: &Partition, points: &[Point]) -> u8 {
    let dims = store.shape().dims().min(8);
    let mut mask: u8 = if dims == 8 {
        u8::MAX
    } else {
        (1u8 << dims) - 1
    };
    for p in points {
        let e = partition.sub_store(store.shape(), p).extent();
        for d in 0..dims {
            if e[d] != 1 {
                mask &= !(1 << d);
            }
        }
        if mask == 0 {
            break;
        }
    }
    mask
}

/// The privilege of a parameter used with `first` and then `then` (as the fused task's).
fn union(first: Privilege, then: Privilege) -> Privilege {
    match (first, then) {
        (a, b) if a == b => a,
        (Privilege::Write, _) => Privilege::Write,
        (Privilege::Read, b) if !b.mutates() => Privilege::Read,
        _ => Privilege::ReadWrite,
    }
}

impl CompiledTask {
    /// Runs point `p` through the kernel (on the GPU when there is a GPU kernel, else or if
    /// its launch fails on the CPU); returns its reduction contributions as (constituent,
    /// argument, placement) and where it ran, or `None` if the point's sub-stores do not have
    /// the shapes the kernel was compiled for (the caller then runs it natively).
    pub(super) fn run_point(
        &self,
        p: &Point,
        buffers: &HashMap<StoreId, &HostBuffer>,
    ) -> Option<Result<(Vec<Contribution>, Device), String>> {
        let places: Vec<ArgPlacement> = self
            .bindings
            .iter()
            .map(|b| {
                let rect = b.partition.sub_store(b.store.shape(), p);
                match b.reduction {
                    Some(op) => ArgPlacement::reduction(&b.store, rect, op),
                    None => ArgPlacement {
                        rect,
                        accumulator: None,
                    },
                }
            })
            .collect();
        if !self.fits(&places) {
            return None;
        }
        let mut sizes: Vec<Vec<i64>> = Vec::with_capacity(places.len());
        let mut strides: Vec<Vec<i64>> = Vec::with_capacity(places.len());
        let mut ptrs: Vec<*mut u8> = Vec::with_capacity(places.len());
        for (b, place) in self.bindings.iter().zip(&places) {
            let extent = place.rect.extent();
            sizes.push(extent.as_slice().to_vec());
            let (ptr, s) = match (&place.accumulator, buffers.get(&b.store.id())) {
                (Some(acc), _) => (acc.as_ptr(), extent.row_major_strides()),
                (None, Some(buf)) if !b.temporary => {
                    let shape = b.store.shape();
                    (
                        store_address(buf, shape, &place.rect),
                        shape.row_major_strides(),
                    )
                }
                _ => (std::ptr::null_mut(), extent.row_major_strides()),
            };
            ptrs.push(ptr);
            strides.push(s.as_slice().to_vec());
        }
        let memrefs: Vec<MemRef<'_>> = ptrs
            .iter()
            .zip(&sizes)
            .zip(&strides)
            .map(|((&ptr, sizes), strides)| MemRef {
                ptr,
                sizes,
                strides,
            })
            .collect();
        // SAFETY: every pointer addresses a sub-store inside its store's buffer (sub-stores
        // are clipped to the store) or a point-private accumulator of exactly its extent;
        // validation proved that no two point tasks write the same element and that a
        // written store is reached through one parameter; temporaries are null and never
        // dereferenced (the kernel keeps them in registers or allocates them itself).
        if let Some(gpu) = &self.gpu {
            // SAFETY: as below; the launch copies the sub-stores to the device and back.
            match unsafe { gpu.launch(&memrefs, &self.scalars) } {
                Ok(()) => return Some(Ok((self.contributions(places), Device::Gpu))),
                Err(e) => {
                    if !GPU_FAILED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        tracing::warn!("a GPU launch failed ({e}); running on the CPU");
                    }
                }
            }
        }
        let outcome = unsafe { self.kernel.call(&memrefs, &self.scalars) };
        Some(outcome.map(|()| (self.contributions(places), Device::Cpu)))
    }

    /// The reduction contributions of a point that ran with `places`, as (constituent,
    /// argument, placement).
    fn contributions(&self, places: Vec<ArgPlacement>) -> Vec<Contribution> {
        self.first_use
            .iter()
            .zip(places)
            .filter(|(_, place)| place.accumulator.is_some())
            .map(|(&(c, a), place)| (c, a, place))
            .collect()
    }

    /// True when the point's sub-stores have the shapes the kernel was compiled for: one
    /// iteration space for all (see [`CpuKernel::iteration_space`]), or per element-wise
    /// constituent, inputs matching its output's extent except in dimensions compiled as
    /// broadcast (extent 1).
    fn fits(&self, places: &[ArgPlacement]) -> bool {
        let sig = self.kernel.signature();
        let broadcasts = |q: usize, space: Shape| {
            let e = places[q].rect.extent();
            let unit = sig.params[q].unit_dims;
            e.dims() <= space.dims()
                && (0..e.dims()).all(|k| {
                    let d = k + space.dims() - e.dims();
                    e[k] == space[d] || (k < 8 && unit & (1 << k) != 0 && e[k] == 1)
                })
        };
        if let Some(p) = self.kernel.iteration_space() {
            let space = places[p].rect.extent();
            return sig.params.iter().enumerate().all(|(q, param)| {
                if param.privilege.mutates() {
                    places[q].rect.extent() == space
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
            let space = places[out].rect.extent();
            step.bindings.iter().all(|&(q, _)| broadcasts(q, space))
        })
    }
}
