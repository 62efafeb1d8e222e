//! Points of diffuse launches on Legion's GPU processors: whether a point placed on a GPU can
//! run there (the mapper asks before it maps the point, and sends it to a CPU when it
//! cannot), and the point task's GPU variant, which runs the JIT's GPU kernel on the
//! instances Legion mapped in memory the GPU addresses (its framebuffer, or zero-copy
//! memory), launched on the CUDA stream Realm gives the task. Nothing is staged or copied
//! here: Legion moves the data between memories, and the task's completion waits for its
//! stream.
//!
//! After a GPU launch fails (a kernel the driver cannot load, a fault), the failed launch is
//! an error and later points placed on GPUs run on the CPUs, as on the embedded backend.
//!
//! In a launch of one point a reduction reads and writes the store's instance, into which
//! the GPU kernel folds its total, as on the embedded backend. In a launch of several points
//! whose reductions diffuse folds ([`crate::partials`]), each GPU point zeroes its rows of
//! partials on its stream and its kernel folds its totals into them (so only reductions
//! whose identity is all zero bits: sums, and `or`); a CPU point of the fold launch folds
//! the rows. Other reductions over several points stay on the CPUs: Legion folds them
//! through reduction instances, and diffuse registers no GPU reduction operators to fold
//! them in GPU memory.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use diffuse_backend::point::{fits, memrefs, Located, PointStores};
use diffuse_backend::{CompiledKernel, KernelParamSource, LaunchPlan, PointKernel, Slot};
use diffuse_ir::{DType, KernelError, MemRef, Point, Rect, ReductionOp};

use crate::mapped_point::MappedPoint;
use crate::partials::locate_row;

/// Why a point placed on a GPU runs on a CPU instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GpuRefusal {
    /// Its launch's kernel is still compiling (the JIT builds it in the background); later
    /// launches of the same work get it.
    Compiling,
    /// No GPU kernel was built for the launch (the GPU JIT declined it, or the launch runs
    /// natively).
    NoKernel,
    /// The launch reduces over more than one point through Legion's reduction instances, or
    /// into partials with an identity other than zero (see the module docs).
    ReducesAcrossPoints,
    /// A store the kernel reduces into is also reached through another parameter.
    SharedReduction,
    /// The point's sub-stores do not have the shapes the kernel was compiled for.
    Unfit,
    /// A GPU launch of this process failed earlier: the GPUs are not trusted with later
    /// launches, which run on the CPUs (the failed launch itself is an error).
    Failed,
}

/// Set once a GPU point's launch has failed (see [`GpuRefusal::Failed`]).
static LAUNCH_FAILED: AtomicBool = AtomicBool::new(false);

impl fmt::Display for GpuRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GpuRefusal::Compiling => "its kernel is still compiling",
            GpuRefusal::NoKernel => "no GPU kernel was built for it",
            GpuRefusal::ReducesAcrossPoints => {
                "it reduces over several points through Legion's reduction instances, which \
                 diffuse has no GPU reduction operators for, or with an identity a GPU point \
                 cannot start its partials from by zeroing them"
            }
            GpuRefusal::SharedReduction => {
                "a store it reduces into is also reached through another parameter"
            }
            GpuRefusal::Unfit => "the point's sub-stores do not fit its compiled kernel",
            GpuRefusal::Failed => "a GPU launch of this process failed earlier",
        })
    }
}

/// The kernel point `p` of `plan` runs on a GPU, with its GPU version, or why it cannot.
/// `writes_partials(arg)`: template argument `arg` writes rows of partials
/// ([`LaunchEntry::writes_partials`](crate::launch::LaunchEntry::writes_partials)).
pub(crate) fn gpu_kernel<'a>(
    plan: &'a LaunchPlan,
    writes_partials: &dyn Fn(usize) -> bool,
    p: &Point,
) -> Result<(&'a CompiledKernel, &'a dyn PointKernel), GpuRefusal> {
    let t = plan.template();
    if LAUNCH_FAILED.load(Ordering::Relaxed) {
        return Err(GpuRefusal::Failed);
    }
    let Some(kernel) = t.kernel() else {
        return Err(if t.kernel_decided() {
            GpuRefusal::NoKernel
        } else {
            GpuRefusal::Compiling
        });
    };
    let Some(gpu) = kernel.gpu.as_deref() else {
        return Err(GpuRefusal::NoKernel);
    };
    let several = Rect::from_shape(t.launch_domain()).volume() > 1;
    let on_gpu = |q: &KernelParamSource| match q.reduction {
        None => true,
        Some(_) if !several => true,
        Some(op) => writes_partials(q.arg) && zero_is_identity(op, plan.arg(q.arg).store.dtype()),
    };
    // Every row of partials must be written by the kernel (a row it left alone would be
    // folded as it was).
    let rows_written = (0..t.args().len())
        .filter(|&a| writes_partials(a))
        .all(|a| {
            kernel
                .params
                .iter()
                .any(|q| q.arg == a && q.reduction.is_some())
        });
    if !kernel.params.iter().all(on_gpu) || !rows_written {
        return Err(GpuRefusal::ReducesAcrossPoints);
    }
    if !kernel.reductions_stand_alone(t) {
        return Err(GpuRefusal::SharedReduction);
    }
    if !fits(kernel, &kernel.sub_stores(plan, p)) {
        return Err(GpuRefusal::Unfit);
    }
    Ok((kernel, gpu))
}

/// Whether all zero bits are the identity of `op` on `dtype` (what a zeroed row of partials
/// must start from): sums, and `or` (a bool's sum or max).
fn zero_is_identity(op: ReductionOp, dtype: DType) -> bool {
    matches!(op, ReductionOp::Sum) || (dtype == DType::Bool && op == ReductionOp::Max)
}

/// Runs `mapped`'s point on the GPU processor Legion runs this task on: the GPU kernel, one
/// call, memref descriptors into the mapped instances, enqueued on the task's stream. The
/// mapper only sends points here that [`gpu_kernel`] accepts.
pub(crate) fn run(mapped: &MappedPoint) -> Result<(), KernelError> {
    let (entry, plan) = (mapped.entry, mapped.plan());
    let t = plan.template();
    let fail = |reason: String| mapped.fail(reason);
    let (kernel, gpu) = gpu_kernel(plan, &|a| entry.writes_partials(a), &mapped.p)
        .map_err(|why| fail(format!("it ran on a GPU, but {why}")))?;
    let instances = mapped.instances()?;
    let mut rows = mapped.rows_to_zero()?;
    let mut located: Vec<Located> = Vec::with_capacity(kernel.params.len());
    for (source, rect) in kernel.params.iter().zip(kernel.sub_stores(plan, &mapped.p)) {
        let extent = rect.extent();
        let partials =
            entry.arg_requirement[source.arg].filter(|_| entry.writes_partials(source.arg));
        let at = match (t.args()[source.arg].slot, partials) {
            // The point's row of partials, zeroed before the kernel folds its total into
            // it, its elements row-major from the row's start.
            (Slot::Store(_), Some(r)) if !rect.is_empty() => {
                let row = locate_row(mapped, r, rect.volume())?;
                rows.push((row.ptr, rect.volume() as usize * row.size));
                (row.ptr, extent.row_major_strides())
            }
            (Slot::Store(_), None) if !rect.is_empty() => {
                instances.locate(source.arg, &rect).map_err(fail)?
            }
            // An empty sub-store (the kernel's grid is empty) or a temporary the kernel
            // keeps in registers: no memory.
            _ => (std::ptr::null_mut(), extent.row_major_strides()),
        };
        located.push((at.0, extent, at.1));
    }
    // SAFETY: Legion runs this task on a GPU processor (the GPU variant), so Realm has made
    // the GPU's context current on this thread.
    let stream = unsafe { mapped.api.diffuse_legion_task_cuda_stream() };
    if stream.is_null() {
        return Err(fail(
            "Realm gave the task no CUDA stream (it does not run on a GPU processor)".into(),
        ));
    }
    let rows: Vec<(diffuse_device::DevicePtr, usize)> = rows
        .into_iter()
        .map(|(row, bytes)| (row as usize as diffuse_device::DevicePtr, bytes))
        .collect();
    // SAFETY: `stream` is the running task's stream in the current context; the rows are of
    // regions this task holds with write privilege (new stores it zeroes, its rows of
    // partials), in memory the GPU addresses, kept by Legion until the task's stream
    // completes.
    let zeroed = unsafe { diffuse_device::cuda::zero_on_stream(stream, &rows) };
    zeroed.map_err(|e| fail(format!("zeroing a new store failed: {e}")))?;
    let call = |workspaces: &[diffuse_device::DevicePtr]| {
        let mut memrefs = memrefs(&located);
        memrefs.extend(workspaces.iter().map(|&w| MemRef {
            ptr: w as usize as *mut u8,
            sizes: &[],
            strides: &[],
        }));
        // SAFETY: inside the launch scope on the task's stream; every non-null descriptor
        // addresses the point's sub-store in an instance Legion mapped for this task in
        // memory the GPU addresses (the mapper puts a GPU point's instances there), valid
        // until the task's stream completes; validation proved no two points write one
        // element; temporaries are null (the GPU kernel keeps them in registers).
        unsafe { gpu.call(&memrefs, &entry.scalars) }
    };
    // SAFETY: `stream` is the running task's stream in the current context; Legion keeps the
    // instances until the task completes, which waits for the stream.
    let launched =
        unsafe { diffuse_device::cuda::launch_on_stream(stream, &kernel.gpu_workspace, call) };
    if let Err(e) = launched {
        if !LAUNCH_FAILED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "a GPU launch of {} failed ({e}); later points placed on GPUs run on CPUs",
                t.name()
            );
        }
        return Err(fail(format!("the GPU launch failed: {e}")));
    }
    entry.shared.counters.gpu_point();
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The GPU decisions without a GPU: which launches' points may run on one.

    use std::sync::Arc;

    use diffuse_backend::KernelParamSource;
    use diffuse_ir::{
        DType, IndexTask, KernelParam, KernelSignature, KernelStep, Partition, Privilege,
        ReductionOp, Scalar, Store, TaskKind, Tuple,
    };

    use super::*;
    use crate::test_plans::{f64_stores, kind, plan_of};

    /// A kernel that is never called.
    struct Never;

    impl PointKernel for Never {
        unsafe fn call(&self, _: &[MemRef<'_>], _: &[Scalar]) -> Result<(), String> {
            Err("never called".into())
        }
    }

    /// One task of `kind` over `points` blocks of the 1-d stores `stores` (one per argument,
    /// with the kind's privileges; a 0-d store is replicated to every point), as a plan.
    fn plan(kind: &Arc<TaskKind>, stores: &[&Store], points: i64) -> LaunchPlan {
        let launch = Tuple::shape(&[points]).expect("a shape");
        let mut task = IndexTask::new(kind, launch);
        for (s, a) in stores.iter().zip(kind.args()) {
            let part = if s.shape().dims() == 0 {
                Partition::replicate()
            } else {
                s.view().blocked(launch).expect("a tiling")
            };
            task = task.arg(s, part, a.privilege);
        }
        plan_of(vec![task], &[])
    }

    /// A kernel for `plan`'s one task, one parameter per argument (reducing as the task
    /// does), with a GPU version when `gpu`.
    fn decide(plan: &LaunchPlan, gpu: bool) {
        let t = plan.template();
        let task = &plan.tasks()[0];
        let params: Vec<KernelParam> = t
            .args()
            .iter()
            .enumerate()
            .map(|(i, a)| KernelParam {
                dtype: DType::F64,
                rank: plan.arg(i).store.shape().dims(),
                privilege: a.privilege,
                temporary: false,
                store: i,
                unit_dims: 0,
            })
            .collect();
        let signature = KernelSignature {
            name: t.name().to_string(),
            steps: vec![KernelStep {
                kind: task.kind().clone(),
                bindings: (0..params.len())
                    .map(|q| (q, params[q].privilege))
                    .collect(),
            }],
            params,
        };
        let kernel = CompiledKernel {
            signature: Arc::new(signature),
            iteration_space: None,
            cpu: Arc::new(Never),
            gpu: gpu.then(|| Arc::new(Never) as Arc<dyn PointKernel>),
            gpu_workspace: Vec::new(),
            params: t
                .args()
                .iter()
                .enumerate()
                .map(|(arg, a)| KernelParamSource {
                    arg,
                    temporary: false,
                    reduction: match a.privilege {
                        Privilege::Reduce(op) => Some(op),
                        _ => None,
                    },
                })
                .collect(),
        };
        t.decide_kernel(Some(Arc::new(kernel)));
    }

    /// [`plan`] with its kernel decided by [`decide`].
    fn decided(kind: &Arc<TaskKind>, stores: &[&Store], points: i64, gpu: bool) -> LaunchPlan {
        let plan = plan(kind, stores, points);
        decide(&plan, gpu);
        plan
    }

    fn at(i: i64) -> Point {
        Tuple::new(&[i]).expect("a point")
    }

    /// Why point `p` of `plan` stays on the CPUs, its reductions folded by Legion.
    fn refusal(plan: &LaunchPlan, p: i64) -> Option<GpuRefusal> {
        gpu_kernel(plan, &|_| false, &at(p)).err()
    }

    /// Why point `p` of `plan` stays on the CPUs, its reductions written to partials.
    fn refusal_with_partials(plan: &LaunchPlan, p: i64) -> Option<GpuRefusal> {
        let reduces = |a: usize| plan.template().args()[a].privilege.is_reduction();
        gpu_kernel(plan, &reduces, &at(p)).err()
    }

    #[test]
    fn an_element_wise_launch_with_a_gpu_kernel_runs_on_the_gpu_at_every_point() {
        let [x, y] = f64_stores([&[8], &[8]]);
        let k = kind("scale", &[Privilege::Read, Privilege::Write]);
        let p = plan(&k, &[&x, &y], 2);
        assert_eq!(refusal(&p, 0), Some(GpuRefusal::Compiling));
        decide(&p, true);
        assert_eq!(refusal(&p, 0), None);
        assert_eq!(refusal(&p, 1), None);
    }

    #[test]
    fn without_a_gpu_kernel_points_stay_on_the_cpus() {
        let [x, y] = f64_stores([&[8], &[8]]);
        let k = kind("native", &[Privilege::Read, Privilege::Write]);
        let native = plan(&k, &[&x, &y], 2);
        native.template().decide_kernel(None);
        assert_eq!(refusal(&native, 0), Some(GpuRefusal::NoKernel));
        let cpu_only = decided(&k, &[&x, &y], 2, false);
        assert_eq!(refusal(&cpu_only, 1), Some(GpuRefusal::NoKernel));
    }

    #[test]
    fn reductions_legion_folds_run_on_the_gpu_only_in_launches_of_one_point() {
        let [x, total] = f64_stores([&[8], &[]]);
        let k = kind(
            "sum_on_gpu",
            &[Privilege::Read, Privilege::Reduce(ReductionOp::Sum)],
        );
        let one = decided(&k, &[&x, &total], 1, true);
        assert_eq!(refusal(&one, 0), None);
        let two = decided(&k, &[&x, &total], 2, true);
        assert_eq!(refusal(&two, 0), Some(GpuRefusal::ReducesAcrossPoints));
    }

    #[test]
    fn sums_over_several_points_run_on_the_gpu_when_their_partials_start_from_zero() {
        let [x, total] = f64_stores([&[8], &[]]);
        let op = |op| {
            kind(
                &format!("{op:?}"),
                &[Privilege::Read, Privilege::Reduce(op)],
            )
        };
        let sum = decided(&op(ReductionOp::Sum), &[&x, &total], 2, true);
        assert_eq!(refusal_with_partials(&sum, 1), None);
        // A zeroed row is no starting point for a product, a minimum or a maximum.
        for other in [ReductionOp::Prod, ReductionOp::Min, ReductionOp::Max] {
            let p = decided(&op(other), &[&x, &total], 2, true);
            assert_eq!(
                refusal_with_partials(&p, 0),
                Some(GpuRefusal::ReducesAcrossPoints),
                "{other:?}"
            );
        }
        // Nor is a row the kernel does not write (here: the input's "row").
        assert_eq!(
            gpu_kernel(&sum, &|_| true, &at(0)).err(),
            Some(GpuRefusal::ReducesAcrossPoints)
        );
        assert!(zero_is_identity(ReductionOp::Max, DType::Bool));
        assert!(!zero_is_identity(ReductionOp::Min, DType::Bool));
    }

    #[test]
    fn a_store_reduced_into_and_read_through_another_parameter_stays_on_the_cpus() {
        let [total] = f64_stores([&[]]);
        let k = kind(
            "read-and-sum",
            &[Privilege::Read, Privilege::Reduce(ReductionOp::Sum)],
        );
        let p = decided(&k, &[&total, &total], 1, true);
        assert_eq!(refusal(&p, 0), Some(GpuRefusal::SharedReduction));
    }

    #[test]
    fn a_point_whose_sub_stores_do_not_fit_the_kernel_stays_on_the_cpus() {
        let [x, y] = f64_stores([&[8], &[6]]);
        let k = TaskKind::builder("legion-gpu-point-tests::copy")
            .arg("a0", DType::F64, Privilege::Read)
            .arg("a1", DType::F64, Privilege::Write)
            .elementwise()
            .register(|_| Ok(()))
            .expect("a fresh kind");
        // Blocks of 4 elements read, of 3 written: not the one extent the kernel iterates.
        let p = decided(&k, &[&x, &y], 2, true);
        assert_eq!(refusal(&p, 0), Some(GpuRefusal::Unfit));
    }

    #[test]
    fn every_refusal_says_why() {
        for why in [
            GpuRefusal::Compiling,
            GpuRefusal::NoKernel,
            GpuRefusal::ReducesAcrossPoints,
            GpuRefusal::SharedReduction,
            GpuRefusal::Unfit,
            GpuRefusal::Failed,
        ] {
            assert!(why.to_string().len() > 20, "{why:?}");
        }
    }
}
