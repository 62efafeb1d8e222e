//! Launch plans: what the runtime decided for one executed group of tasks.
//!
//! A [`LaunchTemplate`] holds the decisions that do not depend on which stores a group
//! uses, derived once per window shape: how every (constituent, argument) maps onto a store
//! or temporary slot, the kernel, the placement of every point and the reduction order. A
//! [`LaunchPlan`] pairs a template with this run's tasks; making one checks the tasks against
//! the template in O(arguments), so a template is replayed only where it is right.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use crate::kernel::PointKernel;
use crate::placement::LaunchPlacement;
use diffuse_ir::{
    IndexTask, KernelSignature, Partition, Point, Privilege, Rect, ReductionOp, Scalar, Shape,
    StoreId, StoreRef, TaskArg,
};

/// Where one argument's data lives during a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The `i`-th distinct store of the launch (numbered by first use).
    Store(usize),
    /// The `i`-th temporary: point-local, never a store allocation.
    Temporary(usize),
}

/// One (constituent, argument) of a launch, in program order.
#[derive(Clone, Debug)]
pub struct ArgLayout {
    /// The constituent it belongs to.
    pub constituent: usize,
    /// Its position among the constituent's arguments.
    pub index: usize,
    /// Where its data lives.
    pub slot: Slot,
    /// The constituent's privilege on it.
    pub privilege: Privilege,
    /// The shape of the store the template was made for.
    pub shape: Shape,
    /// The partition the template was made for.
    pub partition: Partition,
}

/// One argument of the fused signature (Diffuse paper §4.2.2): a distinct (store slot,
/// partition) the group touches, with the constituents' accesses joined in program order
/// ([`Privilege::then`]: a read then a write is `ReadWrite`, a write first stays `Write`).
/// Temporaries are not arguments. A 0-d store has one element, which every point reaches
/// whole, so its partition is `Replicate` whatever the constituents name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusedArg {
    /// The store slot ([`Slot::Store`]).
    pub slot: usize,
    /// The partition every constituent accessing the store through this argument uses.
    pub partition: Partition,
    /// The constituents' accesses, joined in program order.
    pub privilege: Privilege,
}

/// Where one parameter of a compiled kernel gets its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelParamSource {
    /// The first argument (index into [`LaunchTemplate::args`]) bound to the parameter: its
    /// store, partition and slot describe the parameter's sub-store at each point.
    pub arg: usize,
    /// True for a temporary (the kernel keeps it in registers or allocates it itself).
    pub temporary: bool,
    /// The operator, when the kernel reduces into the parameter (a point-private
    /// accumulator, folded under `arg`).
    pub reduction: Option<ReductionOp>,
}

/// A compiled kernel chosen for a launch, with its parameter bindings.
#[derive(Clone)]
pub struct CompiledKernel {
    /// What the kernel computes (parameters and constituents).
    pub signature: Arc<KernelSignature>,
    /// The kernel's one loop nest and what it asks of each point's sub-stores; `None` when
    /// each constituent iterates over its own output.
    pub iteration_space: Option<diffuse_ir::IterationSpace>,
    /// The kernel for the host CPU.
    pub cpu: Arc<dyn PointKernel>,
    /// The same kernel for the GPU, when the placement asks for GPUs and it could be built:
    /// a call enqueues it on the GPU's stream with memrefs into device memory, inside the
    /// device's launch (`diffuse_device::Device::launch`), and returns before it runs.
    pub gpu: Option<Arc<dyn PointKernel>>,
    /// Bytes of each device workspace a call of `gpu` takes after the parameters' memrefs
    /// (one per full reduction; only their addresses are passed).
    pub gpu_workspace: Vec<usize>,
    /// One source per kernel parameter, in parameter order.
    pub params: Vec<KernelParamSource>,
}

impl CompiledKernel {
    /// The sub-store of each kernel parameter at point `p` of `plan`, in parameter order.
    pub fn sub_stores(&self, plan: &LaunchPlan, p: &Point) -> Vec<Rect> {
        self.params
            .iter()
            .map(|source| {
                let arg = plan.arg(source.arg);
                arg.partition.sub_store(arg.store.shape(), p)
            })
            .collect()
    }

    /// True when every store the kernel reduces into is reached through that parameter
    /// alone in `template`: the GPU kernel then reads and writes it through the one
    /// descriptor (what a GPU launch with reductions needs).
    pub fn reductions_stand_alone(&self, template: &LaunchTemplate) -> bool {
        let slot = |q: &KernelParamSource| template.args()[q.arg].slot;
        self.params
            .iter()
            .filter(|q| q.reduction.is_some())
            .all(|r| self.params.iter().filter(|q| slot(q) == slot(r)).count() == 1)
    }
}

/// A run of consecutive constituents of a fused task whose kinds all have MLIR bodies,
/// compiled on its own because another constituent of the task has none: the task's points
/// run it between the other constituents' native kernels. Temporaries it shares with
/// constituents outside the run are passed to it in their point-local buffers. (A point run
/// strip by strip, or watched for floating-point exceptions, runs every constituent
/// natively.)
#[derive(Clone)]
pub struct Segment {
    /// The constituents it runs, in program order.
    pub constituents: Range<usize>,
    /// Its kernel; parameter sources index [`LaunchTemplate::args`].
    pub kernel: Arc<CompiledKernel>,
}

/// The store-independent decisions for one group of tasks.
pub struct LaunchTemplate {
    name: Arc<str>,
    launch: Shape,
    kinds: Vec<u32>,
    args: Vec<ArgLayout>,
    fused: Vec<FusedArg>,
    fused_of: Vec<Option<usize>>,
    starts: Vec<usize>,
    overwrites: Vec<bool>,
    temporaries: usize,
    reductions: Vec<usize>,
    elementwise: bool,
    stages: Vec<usize>,
    placement: LaunchPlacement,
    kernel: OnceLock<Option<Arc<CompiledKernel>>>,
    segments: OnceLock<Vec<Segment>>,
}

/// Numbers store ids by first occurrence, while a template is derived (a launch touches a
/// handful of stores, so a linear search beats hashing).
#[derive(Default)]
struct SlotNumbering {
    ids: Vec<StoreId>,
}

impl SlotNumbering {
    /// The number of `id`, assigning the next one on first occurrence.
    fn number(&mut self, id: StoreId) -> usize {
        match self.ids.iter().position(|&s| s == id) {
            Some(i) => i,
            None => {
                self.ids.push(id);
                self.ids.len() - 1
            }
        }
    }

    /// How many ids have been numbered.
    fn len(&self) -> usize {
        self.ids.len()
    }
}

impl LaunchTemplate {
    /// The layout of `tasks` (a fusible group in program order, at least one task) with
    /// `temporaries` and `stages` (the constituents that begin its stages after the first,
    /// ascending; see [`LaunchTemplate::stages`]), placed by `place(name, stores)` (given the
    /// task's name and its number of distinct stores); the kernel is decided later
    /// ([`LaunchTemplate::decide_kernel`]).
    pub fn new<E>(
        tasks: &[IndexTask],
        temporaries: &[StoreId],
        stages: &[usize],
        place: impl FnOnce(&str, usize) -> Result<LaunchPlacement, E>,
    ) -> Result<Self, E> {
        let launch = tasks
            .first()
            .map_or_else(|| Shape::splat(0, 1), |t| t.launch_domain());
        let mut stores = SlotNumbering::default();
        let mut temps = SlotNumbering::default();
        let mut args = Vec::new();
        let mut fused: Vec<FusedArg> = Vec::new();
        let mut fused_of = Vec::new();
        let mut starts = Vec::with_capacity(tasks.len() + 1);
        let mut overwrites = Vec::new();
        let mut reductions = Vec::new();
        for (c, task) in tasks.iter().enumerate() {
            starts.push(args.len());
            for (a, arg) in task.args().iter().enumerate() {
                let id = arg.store.id();
                let slot = if temporaries.contains(&id) {
                    Slot::Temporary(temps.number(id))
                } else {
                    let before = stores.len();
                    let s = stores.number(id);
                    if s == before {
                        // The first use decides whether a new buffer needs zero-filling.
                        overwrites.push(
                            arg.privilege == Privilege::Write
                                && arg.partition.covers(arg.store.shape(), launch),
                        );
                    }
                    Slot::Store(s)
                };
                if arg.privilege.is_reduction() {
                    reductions.push(args.len());
                }
                fused_of.push(match slot {
                    Slot::Store(s) => Some(join_fused(&mut fused, s, arg)),
                    Slot::Temporary(_) => None,
                });
                args.push(ArgLayout {
                    constituent: c,
                    index: a,
                    slot,
                    privilege: arg.privilege,
                    shape: arg.store.shape(),
                    partition: arg.partition.clone(),
                });
            }
        }
        starts.push(args.len());
        let names: Vec<&str> = tasks.iter().map(|t| t.kind().name()).collect();
        let name = names.join("+");
        let placement = place(&name, overwrites.len())?;
        Ok(LaunchTemplate {
            name: name.into(),
            launch,
            kinds: tasks.iter().map(|t| t.kind().id()).collect(),
            args,
            fused,
            fused_of,
            starts,
            overwrites,
            temporaries: temps.len(),
            reductions,
            elementwise: tasks.iter().all(|t| t.kind().is_elementwise()),
            stages: stages.to_vec(),
            placement,
            kernel: OnceLock::new(),
            segments: OnceLock::new(),
        })
    }

    /// The task's name for messages and mappers: the constituents' kind names joined by `+`.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// The common launch domain.
    pub fn launch_domain(&self) -> Shape {
        self.launch
    }

    /// Number of constituents.
    pub fn constituents(&self) -> usize {
        self.kinds.len()
    }

    /// Every (constituent, argument), constituents in program order.
    pub fn args(&self) -> &[ArgLayout] {
        &self.args
    }

    /// The fused signature: one argument per distinct (store slot, partition), in order of
    /// first use. Backends make one data dependence per fused argument (a Legion region
    /// requirement), and compiled kernels one parameter (see [`LaunchTemplate::fused_arg_of`]).
    pub fn fused_args(&self) -> &[FusedArg] {
        &self.fused
    }

    /// The fused argument (index into [`LaunchTemplate::fused_args`]) argument `i` of
    /// [`LaunchTemplate::args`] belongs to; `None` for a temporary.
    pub fn fused_arg_of(&self, i: usize) -> Option<usize> {
        self.fused_of[i]
    }

    /// The indices into [`LaunchTemplate::args`] of constituent `c`'s arguments.
    pub fn args_of(&self, c: usize) -> std::ops::Range<usize> {
        self.starts[c]..self.starts[c + 1]
    }

    /// Number of distinct stores.
    pub fn stores(&self) -> usize {
        self.overwrites.len()
    }

    /// True when store slot `s` is first used by a covering `Write`: a new buffer for it
    /// needs no zero-fill.
    pub fn overwrites(&self, s: usize) -> bool {
        self.overwrites[s]
    }

    /// Number of temporaries.
    pub fn temporaries(&self) -> usize {
        self.temporaries
    }

    /// The reducing arguments (indices into [`LaunchTemplate::args`]) in the order their
    /// point contributions fold: constituent by constituent, argument by argument.
    pub fn reductions(&self) -> &[usize] {
        &self.reductions
    }

    /// True when every constituent is element-wise.
    pub fn is_elementwise(&self) -> bool {
        self.elementwise
    }

    /// The constituents that begin the task's stages after the first (ascending; empty for
    /// a task of one stage). Only a launch over one point has several stages: each runs
    /// after the ones before it have run whole at that point and their reductions have been
    /// folded into their stores, so a stage may read what an earlier one wrote or reduced,
    /// or write what it read, through other partitions of a store. Such a task has no
    /// compiled kernel of its own (its stages' runs of compilable constituents are
    /// [`Segment`]s) and is never cut into strips.
    pub fn stages(&self) -> &[usize] {
        &self.stages
    }

    /// The stage constituent `c` belongs to (0 for the first).
    pub fn stage_of(&self, c: usize) -> usize {
        self.stages.partition_point(|&s| s <= c)
    }

    /// Where every point runs.
    pub fn placement(&self) -> &LaunchPlacement {
        &self.placement
    }

    /// The compiled kernel, if one was chosen; `None` runs the native constituents (always
    /// correct, possibly slower).
    pub fn kernel(&self) -> Option<&Arc<CompiledKernel>> {
        self.kernel.get().and_then(Option::as_ref)
    }

    /// True once the kernel choice is final (a kernel, or none), false while it compiles.
    pub fn kernel_decided(&self) -> bool {
        self.kernel.get().is_some()
    }

    /// Makes the kernel choice final; later calls change nothing.
    pub fn decide_kernel(&self, kernel: Option<Arc<CompiledKernel>>) {
        // An earlier decision stands: every replay after it saw the same kernel.
        let _ = self.kernel.set(kernel);
    }

    /// The compiled segments of a task without a kernel of its own (in program order, not
    /// overlapping); empty until decided, and for tasks that run whole kernels or natively.
    pub fn segments(&self) -> &[Segment] {
        self.segments.get().map_or(&[], Vec::as_slice)
    }

    /// Makes the segments final; later calls change nothing.
    pub fn decide_segments(&self, segments: Vec<Segment>) {
        let _ = self.segments.set(segments);
    }

    /// The constituents that touch temporary `k`.
    pub fn users_of_temporary(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        self.args
            .iter()
            .filter(move |a| a.slot == Slot::Temporary(k))
            .map(|a| a.constituent)
    }
}

/// Adds `arg` (of store slot `slot`) to the fused signature `fused`: its access joins the
/// argument of the same slot and partition, or it opens a new one. Returns the argument's
/// index. A launch has a handful of arguments, so a linear search beats hashing.
fn join_fused(fused: &mut Vec<FusedArg>, slot: usize, arg: &TaskArg) -> usize {
    let partition = if arg.store.shape().dims() == 0 {
        Partition::replicate()
    } else {
        arg.partition.clone()
    };
    match fused
        .iter()
        .position(|f| f.slot == slot && f.partition == partition)
    {
        Some(i) => {
            fused[i].privilege = fused[i].privilege.then(arg.privilege);
            i
        }
        None => {
            fused.push(FusedArg {
                slot,
                partition,
                privilege: arg.privilege,
            });
            fused.len() - 1
        }
    }
}

impl std::fmt::Debug for LaunchTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LaunchTemplate({} over {}, {} stores, {} temporaries, {})",
            self.name,
            self.launch,
            self.stores(),
            self.temporaries,
            if self.kernel().is_some() {
                "compiled"
            } else {
                "native"
            }
        )
    }
}

/// A template with this run's tasks: what a backend executes.
#[derive(Clone)]
pub struct LaunchPlan {
    template: Arc<LaunchTemplate>,
    tasks: Vec<IndexTask>,
    stores: Vec<StoreRef>,
    ticket: u64,
}

impl LaunchPlan {
    /// Pairs `tasks` with `template` if they are what it was made for (same kinds, launch
    /// domain, store shapes, partitions, privileges and slot structure); otherwise gives the
    /// tasks back. O(arguments).
    pub fn new(
        template: Arc<LaunchTemplate>,
        tasks: Vec<IndexTask>,
    ) -> Result<Self, Vec<IndexTask>> {
        match Self::stores_if_fitting(&template, &tasks) {
            Some(stores) => Ok(LaunchPlan {
                template,
                tasks,
                stores,
                ticket: 0,
            }),
            None => Err(tasks),
        }
    }

    fn stores_if_fitting(template: &LaunchTemplate, tasks: &[IndexTask]) -> Option<Vec<StoreRef>> {
        if tasks.len() != template.kinds.len() {
            return None;
        }
        let mut stores: Vec<StoreRef> = Vec::with_capacity(template.stores());
        let mut temps: Vec<StoreId> = Vec::with_capacity(template.temporaries);
        for (c, task) in tasks.iter().enumerate() {
            let layouts = &template.args[template.args_of(c)];
            if task.kind().id() != template.kinds[c]
                || task.launch_domain() != template.launch
                || task.args().len() != layouts.len()
            {
                return None;
            }
            for (arg, layout) in task.args().iter().zip(layouts) {
                if arg.privilege != layout.privilege
                    || arg.partition != layout.partition
                    || arg.store.shape() != layout.shape
                {
                    return None;
                }
                let id = arg.store.id();
                let fits = match layout.slot {
                    Slot::Store(s) if s == stores.len() => {
                        stores.push(arg.store.clone());
                        true
                    }
                    Slot::Store(s) => stores.get(s).is_some_and(|x| x.id() == id),
                    Slot::Temporary(t) if t == temps.len() => {
                        temps.push(id);
                        true
                    }
                    Slot::Temporary(t) => temps.get(t) == Some(&id),
                };
                if !fits {
                    return None;
                }
            }
        }
        Some(stores)
    }

    /// This plan with the number `ticket`, by which a backend that defers failures reports
    /// this plan's (see `Backend::defers_failures`).
    pub fn with_ticket(mut self, ticket: u64) -> Self {
        self.ticket = ticket;
        self
    }

    /// The number the runtime gave this plan (0 when it gave none).
    pub fn ticket(&self) -> u64 {
        self.ticket
    }

    /// The constituent tasks, given back (e.g. to run them one by one after the plan
    /// failed).
    pub fn into_tasks(self) -> Vec<IndexTask> {
        self.tasks
    }

    /// The decisions.
    pub fn template(&self) -> &LaunchTemplate {
        &self.template
    }

    /// The constituent tasks, in program order.
    pub fn tasks(&self) -> &[IndexTask] {
        &self.tasks
    }

    /// The store of slot `s`.
    pub fn store(&self, s: usize) -> &StoreRef {
        &self.stores[s]
    }

    /// The distinct stores, in slot order.
    pub fn stores(&self) -> &[StoreRef] {
        &self.stores
    }

    /// Argument `i` of [`LaunchTemplate::args`] as the task gives it.
    pub fn arg(&self, i: usize) -> &TaskArg {
        let layout = &self.template.args[i];
        &self.tasks[layout.constituent].args()[layout.index]
    }

    /// Every constituent's scalars, constituents in order (a compiled kernel's scalars).
    pub fn scalars(&self) -> Vec<Scalar> {
        self.scalars_of(0..self.tasks.len())
    }

    /// The scalars of `constituents`, in order (a [`Segment`]'s kernel's scalars).
    pub fn scalars_of(&self, constituents: Range<usize>) -> Vec<Scalar> {
        self.tasks[constituents]
            .iter()
            .flat_map(|t| t.scalars().iter().copied())
            .collect()
    }
}
