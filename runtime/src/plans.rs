//! Launch plans: the runtime's decisions for every group it runs, made once per window
//! shape and replayed.
//!
//! For a group the [`Launcher`] derives a [`LaunchTemplate`] (argument slots, the placement
//! of every point, the compiled kernel and its parameter bindings) and caches it under the
//! memo entry of the window it came from and the group's position in it, or under the task
//! kind for tasks that run unfused. The next isomorphic window instantiates the cached
//! template with its own stores ([`LaunchPlan::new`], O(arguments)); a template whose shapes
//! or partitions do not match is derived anew. A kernel still compiling in the background is
//! asked for again on replays until its choice is final; after that nothing about the kernel
//! is looked up or hashed.

use std::ops::Range;
use std::sync::Arc;

use diffuse_backend::{
    CompiledKernel, KernelParamSource, LaunchPlan, LaunchTemplate, MachineShape, PointKernel,
    ProcKind, Segment, Slot,
};
use diffuse_ir::{IndexTask, IrError, Partition, PartitionKind, Shape, StoreId};
use diffuse_jit::{CpuKernel, GpuJit, Jit, KernelParam, KernelSignature, KernelStep, Lookup};
use hashbrown::HashMap;

use crate::kernels::{DeviceKernel, HostKernel};
use crate::placement::{decide, Placement};

/// Where a template is cached.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum TemplateKey {
    /// Group `group` of the windows of memo entry `shape`.
    Group {
        /// The planner's memo entry.
        shape: u64,
        /// The group's position in the window.
        group: usize,
    },
    /// The prefix cut off a window of memo entry `shape` that could not grow.
    Cut {
        /// The planner's memo entry.
        shape: u64,
    },
    /// A task of kind `kind` run unfused.
    Task {
        /// The task kind's id.
        kind: u32,
    },
}

/// A cached template and, while its kernels are compiling, what to ask the JIT for.
struct Cached {
    template: Arc<LaunchTemplate>,
    pending: Option<Pending>,
}

/// Kernels requested from a background JIT and not all final yet.
enum Pending {
    /// The fused task's own kernel.
    Kernel {
        signature: KernelSignature,
        params: Vec<KernelParamSource>,
        gpu: bool,
    },
    /// Kernels for its segments (see [`Segment`]): the task has a constituent without an
    /// MLIR body, or several stages, so it has no kernel of its own.
    Segments(Vec<SegmentRequest>),
}

/// The kernel asked for one segment.
struct SegmentRequest {
    constituents: Range<usize>,
    signature: KernelSignature,
    params: Vec<KernelParamSource>,
}

/// The fewest constituents a segment runs: every segment is one more kernel to compile (tens
/// of milliseconds), worth it for fused work, not for one operation alone.
const MIN_SEGMENT: usize = 2;

/// Templates kept per key: a key sees a few shapes at most (e.g. a kind at two sizes).
const TEMPLATES_PER_KEY: usize = 4;
/// Keys kept at most; the cache starts over past this (a program that never repeats).
const MAX_KEYS: usize = 4096;

/// Derives, caches and instantiates launch templates.
pub(crate) struct Launcher {
    backend: String,
    machine: MachineShape,
    jit: Option<Arc<Jit>>,
    /// The compiler of kernels for tasks placed on GPUs, if the machine has any.
    gpu: Option<Arc<GpuJit>>,
    /// What became of each kernel requested for the GPU.
    gpu_kernels: GpuKernels,
    placement: Option<Arc<dyn Placement>>,
    templates: HashMap<TemplateKey, Vec<Cached>>,
}

/// The kernels requested for the GPU so far, by task name (constituents joined by `+`): built,
/// or declined and why (such tasks run on the CPUs). Apps report it, and tests check it
/// against the kernels each app is expected to run on the GPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuKernels {
    /// Tasks whose kernel was built for the GPU.
    pub built: std::collections::BTreeSet<String>,
    /// Tasks whose kernel could not be built for the GPU, with the reason.
    pub declined: std::collections::BTreeMap<String, String>,
}

impl Launcher {
    /// A launcher for a backend named `backend` with `machine`, compiling with `jit` (and
    /// `gpu` for tasks placed on GPUs).
    pub(crate) fn new(
        backend: &str,
        machine: MachineShape,
        jit: Option<Arc<Jit>>,
        gpu: Option<Arc<GpuJit>>,
        placement: Option<Arc<dyn Placement>>,
    ) -> Self {
        Launcher {
            backend: backend.to_string(),
            machine,
            jit,
            gpu,
            gpu_kernels: GpuKernels::default(),
            placement,
            templates: HashMap::new(),
        }
    }

    /// The plan for `tasks` (a group in program order) with `temporaries` and `stages` (the
    /// constituents that begin its stages after the first): a cached template under `key`
    /// that fits them, or a new one (cached under `key` if given). Groups of one task
    /// without temporaries run their native kernel; others get a compiled kernel when the
    /// JIT has one (per stage's runs of constituents when there are several stages).
    pub(crate) fn plan(
        &mut self,
        key: Option<TemplateKey>,
        tasks: Vec<IndexTask>,
        temporaries: &[StoreId],
        stages: &[usize],
    ) -> Result<LaunchPlan, (IrError, Vec<IndexTask>)> {
        let mut tasks = tasks;
        if let Some(cached) = key.and_then(|k| self.templates.get_mut(&k)) {
            for entry in cached.iter_mut() {
                if entry.template.stages() != stages {
                    continue;
                }
                match LaunchPlan::new(Arc::clone(&entry.template), tasks) {
                    Ok(plan) => {
                        if entry.pending.is_some() {
                            resolve(
                                self.jit.as_ref(),
                                self.gpu.as_deref(),
                                &mut self.gpu_kernels,
                                entry,
                            );
                        }
                        return Ok(plan);
                    }
                    Err(back) => tasks = back,
                }
            }
        }
        let mut entry = match self.derive(&tasks, temporaries, stages) {
            Ok(entry) => entry,
            Err(e) => return Err((e, tasks)),
        };
        if entry.pending.is_some() {
            resolve(
                self.jit.as_ref(),
                self.gpu.as_deref(),
                &mut self.gpu_kernels,
                &mut entry,
            );
        }
        let template = Arc::clone(&entry.template);
        if let Some(key) = key {
            if self.templates.len() >= MAX_KEYS {
                self.templates.clear();
            }
            let list = self.templates.entry(key).or_default();
            if list.len() >= TEMPLATES_PER_KEY {
                list.remove(0);
            }
            list.push(entry);
        }
        LaunchPlan::new(template, tasks).map_err(|tasks| {
            let e = IrError::Backend {
                backend: self.backend.clone(),
                message: "a launch template does not fit the tasks it was derived from".into(),
            };
            (e, tasks)
        })
    }

    /// What became of the kernels requested for the GPU so far.
    pub(crate) fn gpu_kernels(&self) -> &GpuKernels {
        &self.gpu_kernels
    }

    /// A new template for `tasks`: placement decided, kernel requested.
    fn derive(
        &self,
        tasks: &[IndexTask],
        temporaries: &[StoreId],
        stages: &[usize],
    ) -> Result<Cached, IrError> {
        let names: Vec<&str> = tasks.iter().map(|t| t.kind().name()).collect();
        let launch = tasks
            .first()
            .map_or_else(|| Shape::splat(0, 1), |t| t.launch_domain());
        let template = Arc::new(LaunchTemplate::new(
            tasks,
            temporaries,
            stages,
            |name, stores| {
                decide(
                    self.placement.as_deref(),
                    &self.machine,
                    &self.backend,
                    name,
                    &names,
                    launch,
                    stores,
                )
            },
        )?);
        let fused = tasks.len() > 1 || !temporaries.is_empty();
        let gpu = template
            .placement()
            .processors
            .iter()
            .any(|p| p.kind == ProcKind::Gpu);
        // On host processors a kind compiles when it has MLIR and does not prefer its native
        // kernel there (`TaskKind::native_on_cpu`: a tuned GEMM beats the JIT's loop nest);
        // segments always run on the host. On a GPU every kind with MLIR compiles.
        let compilable = |t: &IndexTask| t.kind().compiles_on_cpu();
        let staged = !stages.is_empty();
        // A task placed on a GPU needs a kernel even alone: only compiled kernels run there.
        // A task of several stages has none (its stages may alias what a whole kernel would
        // fuse element by element) and runs on the CPUs wherever it was placed.
        let pending = match &self.jit {
            Some(_) if fused && (staged || !gpu && !tasks.iter().all(compilable)) => {
                template.decide_kernel(None);
                let mut end = 0;
                let stage_of = |c: usize| template.stage_of(c);
                // Runs of compilable constituents, within one stage each.
                let requests: Vec<SegmentRequest> = tasks
                    .iter()
                    .enumerate()
                    .collect::<Vec<_>>()
                    .chunk_by(|(i, a), (j, b)| {
                        compilable(a) == compilable(b) && stage_of(*i) == stage_of(*j)
                    })
                    .filter_map(|run| {
                        let constituents = end..end + run.len();
                        end = constituents.end;
                        (compilable(run[0].1) && run.len() >= MIN_SEGMENT).then_some(constituents)
                    })
                    .map(|constituents| {
                        let (signature, params) = signature(&template, tasks, constituents.clone());
                        SegmentRequest {
                            constituents,
                            signature,
                            params,
                        }
                    })
                    .collect();
                if requests.is_empty() {
                    template.decide_segments(Vec::new());
                    None
                } else {
                    Some(Pending::Segments(requests))
                }
            }
            Some(_) if fused || gpu => {
                let (signature, params) = signature(&template, tasks, 0..tasks.len());
                Some(Pending::Kernel {
                    signature,
                    params,
                    gpu,
                })
            }
            _ => {
                template.decide_kernel(None);
                None
            }
        };
        Ok(Cached { template, pending })
    }
}

/// Asks the JIT for pending kernels; makes the template's choice final once they are ready
/// or have failed.
fn resolve(
    jit: Option<&Arc<Jit>>,
    gpu_jit: Option<&GpuJit>,
    report: &mut GpuKernels,
    entry: &mut Cached,
) {
    let (Some(jit), Some(pending)) = (jit, entry.pending.as_ref()) else {
        return;
    };
    let (signature, params, gpu) = match pending {
        Pending::Kernel {
            signature,
            params,
            gpu,
        } => (signature, params, *gpu),
        Pending::Segments(requests) => {
            if let Some(segments) = resolve_segments(jit, requests) {
                entry.template.decide_segments(segments);
                entry.pending = None;
            }
            return;
        }
    };
    let kernel = match jit.kernel_in(signature) {
        Lookup::Compiling => return,
        Lookup::Failed(e) => {
            if gpu {
                let name = entry.template.name().to_string();
                report
                    .declined
                    .insert(name, format!("no compiled kernel at all: {e}"));
            }
            None
        }
        Lookup::Ready(cpu) => {
            // A kernel that cannot be built for the GPU was logged by the GPU JIT; its points
            // run the CPU kernel, as do those of a runtime configured without a GPU JIT.
            let gpu = gpu.then(|| {
                let built = gpu_jit
                    .ok_or_else(|| {
                        "the runtime has no GPU JIT (RuntimeConfig::gpu is unset)".to_string()
                    })
                    .and_then(|g| g.kernel(signature).map_err(|e| e.to_string()));
                let name = entry.template.name().to_string();
                match &built {
                    Ok(_) => {
                        report.built.insert(name);
                    }
                    Err(e) => {
                        report.declined.insert(name, e.clone());
                    }
                }
                built
            });
            let gpu = gpu.and_then(Result::ok);
            let mut kernel = host_kernel(cpu, params);
            kernel.gpu_workspace = gpu
                .as_ref()
                .map(|g| g.workspace_bytes().to_vec())
                .unwrap_or_default();
            kernel.gpu = gpu.map(|g| Arc::new(DeviceKernel(g)) as Arc<dyn PointKernel>);
            Some(Arc::new(kernel))
        }
    };
    entry.template.decide_kernel(kernel);
    entry.pending = None;
}

/// The segments whose kernels compiled, once every request is final (a segment that failed
/// to compile runs natively); `None` while any is still compiling.
fn resolve_segments(jit: &Arc<Jit>, requests: &[SegmentRequest]) -> Option<Vec<Segment>> {
    let mut segments = Vec::with_capacity(requests.len());
    for request in requests {
        match jit.kernel_in(&request.signature) {
            Lookup::Compiling => return None,
            Lookup::Failed(_) => {}
            Lookup::Ready(cpu) => segments.push(Segment {
                constituents: request.constituents.clone(),
                kernel: Arc::new(host_kernel(cpu, &request.params)),
            }),
        }
    }
    Some(segments)
}

/// A compiled host kernel with its parameter sources, and no GPU version.
fn host_kernel(cpu: Arc<CpuKernel>, params: &[KernelParamSource]) -> CompiledKernel {
    CompiledKernel {
        signature: Arc::new(cpu.signature().clone()),
        iteration_space: cpu.iteration_space().cloned(),
        cpu: Arc::new(HostKernel(cpu)),
        gpu_workspace: Vec::new(),
        gpu: None,
        params: params.to_vec(),
    }
}

/// The kernel signature of `constituents` of a fused launch (all of them, or a [`Segment`])
/// and where each parameter gets its data: one parameter per argument of the template's
/// fused signature, one per temporary, and one per reducing argument (a point-private
/// accumulator of its own, folded constituent by constituent as the native path does, so
/// two reductions into one store round exactly as unfused). A temporary that constituents
/// outside `constituents` also touch is a parameter in memory (its point-local buffer).
fn signature(
    template: &LaunchTemplate,
    tasks: &[IndexTask],
    constituents: Range<usize>,
) -> (KernelSignature, Vec<KernelParamSource>) {
    let mut index: HashMap<(Slot, Option<usize>, Option<usize>), usize> = HashMap::new();
    let mut renamed: Vec<Slot> = Vec::new();
    let mut params: Vec<KernelParam> = Vec::new();
    let mut sources: Vec<KernelParamSource> = Vec::new();
    let mut steps = Vec::with_capacity(constituents.len());
    let inside = |slot: Slot| match slot {
        Slot::Temporary(k) => template
            .users_of_temporary(k)
            .all(|c| constituents.contains(&c)),
        Slot::Store(_) => false,
    };
    for (c, task) in tasks
        .iter()
        .enumerate()
        .take(constituents.end)
        .skip(constituents.start)
    {
        let mut bindings = Vec::with_capacity(task.args().len());
        for (i, (arg, layout)) in task
            .args()
            .iter()
            .zip(&template.args()[template.args_of(c)])
            .enumerate()
        {
            let flat = template.args_of(c).start + i;
            let temporary = inside(layout.slot);
            // A temporary is reached through one partition (the true-dependence constraint).
            let key = (
                layout.slot,
                template.fused_arg_of(flat),
                arg.privilege.is_reduction().then_some(flat),
            );
            let next = params.len();
            let p = *index.entry(key).or_insert(next);
            if p == next {
                let store = renamed
                    .iter()
                    .position(|&s| s == layout.slot)
                    .unwrap_or_else(|| {
                        renamed.push(layout.slot);
                        renamed.len() - 1
                    });
                params.push(KernelParam {
                    dtype: arg.store.dtype(),
                    rank: arg.store.shape().dims(),
                    privilege: arg.privilege,
                    temporary,
                    store,
                    unit_dims: unit_dims(&arg.partition, arg.store.shape()),
                });
                sources.push(KernelParamSource {
                    arg: flat,
                    temporary,
                    reduction: match arg.privilege {
                        diffuse_ir::Privilege::Reduce(op) => Some(op),
                        _ => None,
                    },
                });
            } else {
                params[p].privilege = params[p].privilege.then(arg.privilege);
            }
            bindings.push((p, arg.privilege));
        }
        steps.push(KernelStep {
            kind: Arc::clone(task.kind()),
            bindings,
        });
    }
    let names: Vec<&str> = tasks[constituents]
        .iter()
        .map(|t| t.kind().name())
        .collect();
    let signature = KernelSignature {
        name: names.join("+"),
        steps,
        params,
    };
    (signature, sources)
}

/// The dimensions in which `partition` gives every point a sub-store of extent at most 1,
/// from the description alone: a replicated store of extent 1, or tiles (or a view clip, or
/// the store) one element wide. A point whose sub-store turns out empty in such a dimension
/// does not fit the compiled kernel and runs natively.
fn unit_dims(partition: &Partition, store: Shape) -> u8 {
    let dims = store.dims().min(8);
    (0..dims).fold(0u8, |mask, d| {
        let unit = store[d] <= 1
            || match partition.kind() {
                PartitionKind::Replicate | PartitionKind::Image(_) => false,
                PartitionKind::Tiling(t) => t.tile[d] <= 1 || t.clip.is_some_and(|c| c[d] <= 1),
            };
        if unit {
            mask | (1 << d)
        } else {
            mask
        }
    })
}
