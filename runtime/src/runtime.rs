//! The runtime between the IR and a backend: the window of buffered index tasks, task
//! fusion (Diffuse paper §4–5), and the launch plans a backend executes.
//!
//! Submitted tasks wait in a window. When it fills, the [`Planner`] splits it into fusible
//! groups and puts the window in their execution order (independent tasks may run after
//! later ones; every dependence keeps its order); every group but the last runs, as a [`LaunchPlan`] from the launcher (see
//! `plans.rs`: kernel, placement and slots decided once per window shape), and the last stays
//! buffered, since tasks still to come may extend it. When the whole full window is one group and the window
//! cannot grow, a prefix of it runs, cut where the fewest values produced inside are needed
//! after the cut ([`cheapest_cut`]), e.g. between two iterations of a loop. An explicit flush,
//! a read or write of data, and dropping the runtime run everything.
//!
//! Errors: a task that fails (out of memory, a kernel error or panic, a backend error) fails
//! the flush, read or write that ran it, and loses exactly what depends on it: the stores it
//! would have changed, and those of later tasks that read them, are poisoned (see
//! `poison.rs`): reading one reports the failure. Every other task runs, so stores that do
//! not depend on the failure get the sequential program's values. When a fused task fails,
//! its constituents run again one by one where that is safe (nothing ran, or no constituent
//! observes a store the group changes), so that only the failing constituent and what
//! depends on it are lost; otherwise everything the fused task changes is poisoned. A backend
//! that reports failures only at the next flush (Legion) gets the same treatment then, from
//! the record of the launches it accepted (without running constituents again). The runtime
//! stays usable.
//!
//! Window size: fixed when configured; otherwise adaptive. It starts at
//! [`ADAPTIVE_START`] tasks; whenever a full window turns out to be a single fusible group
//! (so the window, not the program, would end the group) it doubles, up to [`ADAPTIVE_MAX`],
//! and keeps buffering instead of running anything. A window of unrelated tasks thus stays
//! small, while a long fusible chain grows one fused task, whose temporaries never
//! materialize. (The paper's hand-picked sizes were 5–70.)

use std::sync::{Arc, Mutex, MutexGuard};

use diffuse_backend::{Backend, BackendStats, LaunchPlan};
use diffuse_fusion::{
    cheapest_cut, group_launch, temporaries, Group, HeldStores, Plan, PlanOptions, Planner,
    PlannerStats,
};
use diffuse_ir::{
    Executor, HostBlock, HostData, IndexTask, IrError, PendingUse, Rect, Shape, StoreId, StoreRef,
};
use diffuse_jit::{GpuJit, Jit};

use crate::placement::Placement;
use crate::plans::{GpuKernels, Launcher, TemplateKey};
use crate::poison::{rerun_unsafe, Accesses, Failure, Poisoned};

/// The window size an adaptive window starts with.
pub const ADAPTIVE_START: usize = 16;
/// The largest adaptive window.
pub const ADAPTIVE_MAX: usize = 256;

/// Launches a backend that defers failures may have accepted before the runtime waits for
/// it and settles what failed (see `Runtime::settle`).
const ACCEPTED_MAX: usize = 4096;

/// How the runtime buffers and fuses tasks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FusionConfig {
    /// Whether tasks are buffered and fused; when off, every task executes as submitted.
    pub enabled: bool,
    /// A fixed window size, or `None` for the adaptive policy.
    pub window: Option<usize>,
    /// Whether a group launched over one point goes on past a constraint on stores in a new
    /// stage (`diffuse_fusion::Group::stages`): one launch where there would be several.
    /// `None` leaves it to the backend ([`Backend::launches_are_costly`]). Never with a
    /// placement that may use GPUs.
    pub stages: Option<bool>,
}

impl Default for FusionConfig {
    fn default() -> Self {
        FusionConfig {
            enabled: true,
            window: None,
            stages: None,
        }
    }
}

impl FusionConfig {
    /// Every task executes as submitted.
    pub fn off() -> Self {
        FusionConfig {
            enabled: false,
            ..FusionConfig::default()
        }
    }
}

/// One flush as the application issued it and as it executed (Figure 2(c) next to 2(d)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlushRecord {
    /// The kind names of the tasks issued, in order.
    pub issued: Vec<String>,
    /// What executed, in order: a kind name, or the constituents joined by `+` for a fused
    /// task, with its temporaries' count.
    pub executed: Vec<String>,
}

/// What the runtime composes in front of a backend: fusion, the kernel compiler and the
/// placement.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Task buffering and fusion.
    pub fusion: FusionConfig,
    /// The kernel compiler for fused tasks: `None` runs every task's native variants. The
    /// default is the process-wide [`Jit::shared`] (compiling on first use), so kernels
    /// compiled once serve every runtime in the process.
    pub jit: Option<Arc<Jit>>,
    /// The compiler of kernels for tasks placed on GPUs (a target chip and the device's
    /// runtime functions its host code calls), chosen by whoever assembles diffuse (the
    /// `diffuse` crate's `Setup` and `start`, which probe the machine's GPU). `None`: tasks
    /// placed on a GPU run their CPU kernels on the CPUs, reported as declined
    /// ([`GpuKernels`](crate::GpuKernels)).
    pub gpu: Option<Arc<GpuJit>>,
    /// Where each point task runs: `None` cuts launches into contiguous blocks over the
    /// CPUs; a [`Placement`] (e.g. a Mapple mapper) decides processor kinds, processors and
    /// memories.
    pub placement: Option<Arc<dyn Placement>>,
    /// The fewest elements worth a launch point of their own (see
    /// [`Executor::min_block`]): smaller operations get fewer points, down to one. The
    /// default is [`DEFAULT_MIN_BLOCK`]; `1` gives every processor a point whenever it can
    /// (what tests of partitioned execution on small arrays want).
    pub min_block: usize,
}

/// The default [`RuntimeConfig::min_block`]: 16384 elements (as Legate's CPU minimum
/// chunk). Splitting fewer elements over processors costs more per point (locating
/// sub-stores, a kernel call, waking a worker) than the work saved; measured on the 2-core
/// machine, the stencil at 64^2 and 126^2 runs 20-25% faster, and at 180^2 twice as fast,
/// on one point than on two.
pub const DEFAULT_MIN_BLOCK: usize = 16384;

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            fusion: FusionConfig::default(),
            jit: Some(Jit::shared()),
            gpu: None,
            placement: None,
            min_block: DEFAULT_MIN_BLOCK,
        }
    }
}

struct Window {
    tasks: Vec<IndexTask>,
    capacity: usize,
    planner: Planner,
    launcher: Launcher,
    log: Option<Vec<FlushRecord>>,
    /// Time spent deciding what runs: planning (memo lookup or analysis), cuts, and
    /// launch plans; execution excluded.
    analysis: std::time::Duration,
    /// Stores whose values a failure lost.
    poisoned: Poisoned,
    /// The ticket of the next launch plan.
    next_ticket: u64,
    /// For a backend that defers failures: what happened since its last flush, in program
    /// order, to replay at the flush from `settled` once the failures are known.
    since_settled: Vec<Event>,
    /// For a backend that defers failures: the poisoned stores as of its last flush.
    settled: Poisoned,
}

/// What happened to one task or launch, for a backend that defers failures.
enum Event {
    /// A launch the backend accepted and may still report failed.
    Accepted {
        ticket: u64,
        name: String,
        accesses: Accesses,
    },
    /// A task whose results were lost without it running (it read a poisoned store).
    Lost {
        accesses: Accesses,
        failure: Box<Failure>,
    },
}

/// Buffers and fuses tasks in front of a backend and hands it launch plans; the [`Executor`]
/// a `Context` talks to.
pub struct Runtime {
    backend: Arc<dyn Backend>,
    /// What [`Executor::processors`] answers: the placement's launch processors, or the
    /// machine's CPUs.
    processors: usize,
    config: FusionConfig,
    jit: Option<Arc<Jit>>,
    min_block: usize,
    /// What [`Executor::fuses_scalar_work`] answers: fusion on, and the planner lets scalar
    /// work join larger launches.
    fuses_scalar_work: bool,
    window: Mutex<Window>,
}

impl Runtime {
    /// Runs what a host copy of `store` must follow: buffered work whose use of it is at
    /// least `waits_for` (`Writes` for a read, which leaves work that only reads the store,
    /// or uses other stores, buffered; `Reads` for a hand-over, whose new holder writes it),
    /// and fails if a failed task left the store without valid contents.
    fn settle_for(&self, store: &StoreRef, waits_for: PendingUse) -> Result<(), IrError> {
        if self.pending_use(store) >= waits_for {
            self.flush()?;
        }
        match self.lock().poisoned.get(store.id()) {
            Some(failure) => Err(failure.error_for(store.id())),
            None => Ok(()),
        }
    }

    /// A runtime in front of `backend`.
    pub fn new(backend: Arc<dyn Backend>, config: RuntimeConfig) -> Self {
        let fusion = config.fusion;
        let capacity = fusion.window.unwrap_or(ADAPTIVE_START).max(1);
        let host_only = !config.placement.as_ref().is_some_and(|p| p.may_use_gpus());
        let options = PlanOptions {
            absorb_scalars: host_only,
            keep_uncompilable_apart: config.jit.is_some(),
            one_point_stages: host_only
                && fusion
                    .stages
                    .unwrap_or_else(|| backend.launches_are_costly()),
            ..PlanOptions::default()
        };
        let planner = Planner::new().with_options(options);
        let processors = config
            .placement
            .as_ref()
            .and_then(|p| p.launch_processors())
            .unwrap_or_else(|| backend.machine().cpus());
        let launcher = Launcher::new(
            backend.name(),
            backend.machine(),
            config.jit.clone(),
            config.gpu,
            config.placement,
        );
        Runtime {
            backend,
            processors,
            config: fusion,
            jit: config.jit,
            min_block: config.min_block.max(1),
            fuses_scalar_work: fusion.enabled && options.absorb_scalars,
            window: Mutex::new(Window {
                tasks: Vec::new(),
                capacity,
                planner,
                launcher,
                log: None,
                analysis: std::time::Duration::ZERO,
                poisoned: Poisoned::default(),
                next_ticket: 1,
                since_settled: Vec::new(),
                settled: Poisoned::default(),
            }),
        }
    }

    /// The backend behind the runtime.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The backend's counters.
    pub fn stats(&self) -> BackendStats {
        self.backend.stats()
    }

    /// What became of the kernels requested for the GPU so far (built, or declined and
    /// why).
    pub fn gpu_kernels(&self) -> GpuKernels {
        self.lock().launcher.gpu_kernels().clone()
    }

    /// The kernel compiler, if any.
    pub fn jit(&self) -> Option<&Arc<Jit>> {
        self.jit.as_ref()
    }

    /// The fusion settings.
    pub fn config(&self) -> FusionConfig {
        self.config
    }

    /// The current window size.
    pub fn window_size(&self) -> usize {
        self.lock().capacity
    }

    /// How many windows were analysed and how many replayed from the memo.
    pub fn planner_stats(&self) -> PlannerStats {
        self.lock().planner.stats()
    }

    /// Seconds spent so far deciding what runs (planning windows, cutting them and building
    /// fused tasks), execution excluded: the fusion layer's own overhead.
    pub fn analysis_seconds(&self) -> f64 {
        self.lock().analysis.as_secs_f64()
    }

    /// Starts (or stops) recording each flush's issued and executed streams.
    pub fn record_streams(&self, on: bool) {
        self.lock().log = on.then(Vec::new);
    }

    /// The flushes recorded since the last call (empty when not recording).
    pub fn take_stream_log(&self) -> Vec<FlushRecord> {
        self.lock()
            .log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn lock(&self) -> MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Plans the buffered tasks and runs them: all of them, or (`keep_tail`) all but the last
    /// group, which stays buffered.
    fn drain(&self, window: &mut Window, keep_tail: bool) -> Result<(), IrError> {
        if window.tasks.is_empty() {
            return Ok(());
        }
        let _span = tracing::debug_span!("window_flush", tasks = window.tasks.len()).entered();
        // One snapshot of the application's holds for every decision about this window: the
        // application may drop handles from other threads meanwhile.
        let deciding = std::time::Instant::now();
        let held = HeldStores::of(&window.tasks);
        let plan: Plan = window.planner.plan(&window.tasks, &held);
        tracing::debug!(
            groups = plan.groups.len(),
            memoized = plan.memoized,
            "planned"
        );
        // What runs now, per group in order.
        let key = |group: usize| plan.shape.map(|shape| TemplateKey::Group { shape, group });
        let planned = |(i, g): (usize, &Group)| Run {
            len: g.tasks.len(),
            temporaries: g.temporaries.clone(),
            stages: g.stages.clone(),
            key: key(i),
        };
        let runs: Vec<Run> = match plan.groups.as_slice() {
            [.., _last] if keep_tail && plan.groups.len() > 1 => {
                let kept = kept_scalar_work(&plan, &window.tasks);
                plan.groups[..plan.groups.len() - 1 - kept]
                    .iter()
                    .enumerate()
                    .map(planned)
                    .collect()
            }
            [single] if keep_tail => {
                if self.config.window.is_none() && window.capacity < ADAPTIVE_MAX {
                    // The whole full window fuses: the window, not the program, would end the
                    // group. Grow and keep buffering, so the group and its temporaries extend.
                    window.capacity = (window.capacity * 2).min(ADAPTIVE_MAX);
                    tracing::debug!(capacity = window.capacity, "window grows");
                    window.analysis += deciding.elapsed();
                    return Ok(());
                }
                // The window cannot grow: run a prefix, cut where the fewest values produced
                // inside it are still needed after it (they must be materialized).
                let cut = cheapest_cut(&window.tasks, window.tasks.len() / 2, &held);
                // The group is the whole window, in program order: its stages before the
                // cut are the prefix's.
                vec![Run {
                    len: cut,
                    temporaries: temporaries(&window.tasks, cut, &held),
                    stages: single.stages.iter().copied().filter(|&s| s < cut).collect(),
                    key: plan.shape.map(|shape| TemplateKey::Cut { shape }),
                }]
            }
            groups => groups.iter().enumerate().map(planned).collect(),
        };
        window.analysis += deciding.elapsed();
        let run_len: usize = runs.iter().map(|r| r.len).sum();
        // The tasks that run now, as issued (for the stream log).
        let issued: Option<Vec<String>> = window.log.is_some().then(|| {
            let mut running: Vec<usize> = match &plan.order {
                Some(order) => order[..run_len].to_vec(),
                None => (0..run_len).collect(),
            };
            running.sort_unstable();
            running
                .into_iter()
                .map(|i| window.tasks[i].kind().name().to_string())
                .collect()
        });
        plan.apply_order(&mut window.tasks);
        let mut tasks: Vec<IndexTask> = window.tasks.drain(..run_len).collect();
        let mut executed = Vec::with_capacity(runs.len());
        let mut result = Ok(());
        for run in runs {
            let members: Vec<IndexTask> = tasks.drain(..run.len).collect();
            let outcome = self.run_group(window, &run, members, &mut executed);
            // Later groups run: what depends on a failure is poisoned, the rest is computed.
            if let (Err(e), Ok(())) = (outcome, &result) {
                result = Err(e);
            }
        }
        if let (Some(log), Some(issued)) = (window.log.as_mut(), issued) {
            log.push(FlushRecord { issued, executed });
        }
        // A long run without reads must not keep an ever longer record of accepted launches.
        if window.since_settled.len() >= ACCEPTED_MAX {
            result = result.and(self.settle(window));
        }
        result
    }

    /// Runs one group: as planned, or one task at a time when it reads a poisoned store (only
    /// the tasks that depend on the failure are skipped); recovers from its failure.
    fn run_group(
        &self,
        window: &mut Window,
        run: &Run,
        tasks: Vec<IndexTask>,
        executed: &mut Vec<String>,
    ) -> Result<(), IrError> {
        // Only after a failure are there poisoned stores to look for.
        let accesses: Option<Vec<Accesses>> =
            (!window.poisoned.is_empty()).then(|| tasks.iter().map(Accesses::of).collect());
        if let Some(accesses) = &accesses {
            if accesses
                .iter()
                .any(|a| window.poisoned.read_by(a).is_some())
            {
                return self.run_one_by_one(window, tasks, executed);
            }
        }
        match self.launch(
            window,
            run.key,
            tasks,
            (&run.temporaries, &run.stages),
            executed,
        ) {
            Ok(()) => {
                for a in accesses.iter().flatten() {
                    window.poisoned.ran(a);
                }
                Ok(())
            }
            Err((error, tasks)) => self.recover(window, tasks, error, executed),
        }
    }

    /// After `tasks` failed as one launch with `error`: runs them again one by one when
    /// that is safe, so that only the failing task and what depends on it are lost;
    /// otherwise poisons everything they change.
    fn recover(
        &self,
        window: &mut Window,
        tasks: Vec<IndexTask>,
        error: IrError,
        executed: &mut Vec<String>,
    ) -> Result<(), IrError> {
        // Every store buffer is allocated before any point runs: out of memory means
        // nothing ran.
        let nothing_ran = matches!(error, IrError::OutOfMemory { .. });
        if tasks.len() > 1 && (nothing_ran || !rerun_unsafe(&tasks)) {
            tracing::warn!(
                error = %error,
                tasks = tasks.len(),
                "a fused task failed; its tasks run again one by one"
            );
            return self.run_one_by_one(window, tasks, executed);
        }
        let failure = Failure {
            task: joined_name(&tasks),
            cause: error.clone(),
        };
        let mut changed = Accesses::default();
        tasks.iter().for_each(|t| changed.add(t));
        self.lose(window, changed, failure);
        Err(error)
    }

    /// Runs `tasks` unfused, in order: a task that reads a poisoned store is skipped and
    /// poisons what it changes; a task that fails poisons what it changes. Returns the first
    /// failure.
    fn run_one_by_one(
        &self,
        window: &mut Window,
        tasks: Vec<IndexTask>,
        executed: &mut Vec<String>,
    ) -> Result<(), IrError> {
        let mut first = Ok(());
        for task in tasks {
            let accesses = Accesses::of(&task);
            if let Some(failure) = window.poisoned.read_by(&accesses) {
                self.lose(window, accesses, failure);
                continue;
            }
            let name = task.kind().name().to_string();
            let key = TemplateKey::Task {
                kind: task.kind().id(),
            };
            match self.launch(window, Some(key), vec![task], (&[], &[]), executed) {
                Ok(()) => window.poisoned.ran(&accesses),
                Err((cause, _)) => {
                    let failure = Failure {
                        task: name,
                        cause: cause.clone(),
                    };
                    self.lose(window, accesses, failure);
                    if first.is_ok() {
                        first = Err(cause);
                    }
                }
            }
        }
        first
    }

    /// Waits for the backend; when it reports launches that failed after it accepted them,
    /// poisons what each failed launch changed and what later accepted launches computed from
    /// it.
    fn settle(&self, window: &mut Window) -> Result<(), IrError> {
        let outcome = self.backend.flush();
        let events = std::mem::take(&mut window.since_settled);
        let Err(error) = outcome else {
            if self.backend.defers_failures() {
                window.settled = window.poisoned.clone();
            }
            return Ok(());
        };
        let failures: Vec<(u64, IrError)> = match &error {
            IrError::Launches(failures) => failures.clone(),
            // Not attributable to one launch: every launch since the last flush is suspect.
            other => events
                .iter()
                .filter_map(|e| match e {
                    Event::Accepted { ticket, .. } => Some((*ticket, other.clone())),
                    Event::Lost { .. } => None,
                })
                .collect(),
        };
        // Replay what happened since the last flush, in program order, now knowing which
        // launches failed.
        let mut poisoned = window.settled.clone();
        for event in &events {
            let (ticket, name, accesses) = match event {
                Event::Lost { accesses, failure } => {
                    poisoned.poison(accesses, failure);
                    continue;
                }
                Event::Accepted {
                    ticket,
                    name,
                    accesses,
                } => (ticket, name, accesses),
            };
            let failed = failures.iter().find(|(t, _)| t == ticket);
            if let Some((_, cause)) = failed {
                let failure = Failure {
                    task: name.clone(),
                    cause: cause.clone(),
                };
                poisoned.poison(accesses, &failure);
            } else if let Some(failure) = poisoned.read_by(accesses) {
                poisoned.poison(accesses, &failure);
            } else {
                poisoned.ran(accesses);
            }
        }
        window.settled = poisoned.clone();
        window.poisoned = poisoned;
        Err(error)
    }

    /// Records that the results of a task with `accesses` are lost to `failure`.
    fn lose(&self, window: &mut Window, accesses: Accesses, failure: Failure) {
        window.poisoned.poison(&accesses, &failure);
        if self.backend.defers_failures() {
            window.since_settled.push(Event::Lost {
                accesses,
                failure: Box::new(failure),
            });
        }
    }

    /// Plans one group with its (temporaries, stages) and has the backend run it; records
    /// what ran when logging. On failure gives the tasks back with the error.
    fn launch(
        &self,
        window: &mut Window,
        key: Option<TemplateKey>,
        tasks: Vec<IndexTask>,
        (temporaries, stages): (&[StoreId], &[usize]),
        executed: &mut Vec<String>,
    ) -> Result<(), (IrError, Vec<IndexTask>)> {
        let building = std::time::Instant::now();
        let ticket = window.next_ticket;
        window.next_ticket += 1;
        // Scalar work fused into a larger launch: the domains it was issued with, restored
        // if the launch fails (its tasks then run one by one).
        let launch = group_launch(&tasks);
        let issued: Option<Vec<Shape>> = tasks
            .iter()
            .any(|t| t.launch_domain() != launch)
            .then(|| tasks.iter().map(IndexTask::launch_domain).collect());
        let tasks = match issued {
            Some(_) => over(tasks, std::iter::repeat(launch)),
            None => tasks,
        };
        let as_issued = |tasks: Vec<IndexTask>| match &issued {
            Some(domains) => over(tasks, domains.iter().copied()),
            None => tasks,
        };
        let plan: LaunchPlan = match window.launcher.plan(key, tasks, temporaries, stages) {
            Ok(plan) => plan.with_ticket(ticket),
            Err((e, tasks)) => return Err((e, as_issued(tasks))),
        };
        window.analysis += building.elapsed();
        if self.backend.defers_failures() {
            let mut accesses = Accesses::default();
            plan.tasks().iter().for_each(|t| accesses.add(t));
            window.since_settled.push(Event::Accepted {
                ticket,
                name: plan.template().name().to_string(),
                accesses,
            });
        }
        if window.log.is_some() {
            let t = plan.template();
            executed.push(if t.constituents() == 1 && t.temporaries() == 0 {
                t.name().to_string()
            } else if t.stages().is_empty() {
                format!("{} (temporaries: {})", t.name(), t.temporaries())
            } else {
                format!(
                    "{} (temporaries: {}, stages: {})",
                    t.name(),
                    t.temporaries(),
                    t.stages().len() + 1
                )
            });
        }
        // Per-launch costs for profiling (`RUST_LOG=diffuse_runtime=trace`): the time is the
        // backend's to run it, or to accept it when it runs asynchronously. The clock is read
        // only when the trace is on.
        let running = tracing::enabled!(tracing::Level::TRACE).then(std::time::Instant::now);
        let done = self.backend.execute(&plan);
        if let Some(running) = running {
            tracing::trace!(
                task = %plan.template().name(),
                points = plan.template().launch_domain().volume(),
                micros = running.elapsed().as_micros() as u64,
                "launched"
            );
        }
        done.map_err(|e| (e, as_issued(plan.into_tasks())))
    }
}

/// `tasks`, each over the launch domain `launches` gives it: scalar work fused into a larger
/// launch runs at each of its points, and runs over its own launch again when its fused
/// task failed and the tasks run one by one (see [`IndexTask::relaunched`]).
fn over(tasks: Vec<IndexTask>, launches: impl IntoIterator<Item = Shape>) -> Vec<IndexTask> {
    tasks
        .into_iter()
        .zip(launches)
        .map(|(t, launch)| {
            if t.launch_domain() == launch {
                t
            } else {
                t.relaunched(launch).unwrap_or_else(|t| t)
            }
        })
        .collect()
}

impl Executor for Runtime {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn processors(&self) -> usize {
        self.processors
    }

    fn min_block(&self) -> usize {
        self.min_block
    }

    fn fuses_scalar_work(&self) -> bool {
        self.fuses_scalar_work
    }

    fn execute(&self, task: IndexTask) -> Result<(), IrError> {
        let mut window = self.lock();
        if !self.config.enabled {
            let run = Run {
                len: 1,
                temporaries: Vec::new(),
                stages: Vec::new(),
                key: Some(TemplateKey::Task {
                    kind: task.kind().id(),
                }),
            };
            // The window's lock stays held, so tasks from several threads run in the order
            // they were accepted.
            return self.run_group(&mut window, &run, vec![task], &mut Vec::new());
        }
        window.tasks.push(task);
        if window.tasks.len() >= window.capacity {
            self.drain(&mut window, true)?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), IrError> {
        let mut window = self.lock();
        let drained = self.drain(&mut window, false);
        let settled = self.settle(&mut window);
        drained.and(settled)
    }

    fn pending_use(&self, store: &StoreRef) -> PendingUse {
        if !self.backend.host_copies_follow_launches() {
            return PendingUse::Writes;
        }
        let id = store.id();
        let window = self.lock();
        let mut pending = PendingUse::Nothing;
        for arg in window.tasks.iter().flat_map(IndexTask::args) {
            if arg.store.id() == id {
                if arg.privilege.mutates() {
                    return PendingUse::Writes;
                }
                pending = PendingUse::Reads;
            }
        }
        pending
    }

    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError> {
        self.settle_for(store, PendingUse::Writes)?;
        self.backend.read(store, rect)
    }

    fn read_into(&self, store: &StoreRef, rect: Rect, out: &mut [u8]) -> Result<(), IrError> {
        self.settle_for(store, PendingUse::Writes)?;
        self.backend.read_into(store, rect, out)
    }

    fn take_host(&self, store: &StoreRef) -> Result<Option<HostBlock>, IrError> {
        // The block's holder writes the elements: buffered work reading them runs first.
        self.settle_for(store, PendingUse::Reads)?;
        self.backend.take_host(store)
    }

    fn initialize(&self, store: &StoreRef, data: HostData) -> Result<(), IrError> {
        if self.backend.orders_host_writes() {
            return self.write(store, store.bounds(), data);
        }
        // No task has seen the store: nothing in the window or on the backend orders before
        // this write, so the window keeps growing (a host array does not cut fusion).
        self.backend.write(store, store.bounds(), data)
    }

    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError> {
        if self.pending_use(store) != PendingUse::Nothing {
            self.flush()?;
        }
        let whole = rect == store.bounds();
        self.backend.write(store, rect, data)?;
        if whole {
            self.lock().poisoned.overwritten(store.id());
        }
        Ok(())
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let mut window = self.lock();
        if let Err(e) = self.drain(&mut window, false) {
            tracing::warn!(error = %e, "tasks pending at shutdown failed");
        }
    }
}

/// One group the runtime runs from a plan: its length, temporaries, stages (see
/// [`Group::stages`]) and where its launch template is cached.
struct Run {
    len: usize,
    temporaries: Vec<StoreId>,
    stages: Vec<usize>,
    key: Option<TemplateKey>,
}

/// How many groups of lone scalar work stand right before the last group of `plan` (for
/// `tasks`, the window as issued), leaving at least one group before them: a full window
/// keeps them buffered with its last group. Scalar work is alone when its result was still
/// held at planning (`alpha` of a solver's iteration, computed before the window filled and
/// read by the tasks after it); buffered, it joins the group that consumes it once the
/// handle is gone (computed at every point of that launch) instead of running as a launch of
/// its own.
fn kept_scalar_work(plan: &Plan, tasks: &[IndexTask]) -> usize {
    let issued = |position: usize| match &plan.order {
        Some(order) => order[position],
        None => position,
    };
    let lone_scalar = |g: &Group| g.tasks.len() == 1 && tasks[issued(g.tasks.start)].is_scalar();
    let before_last = &plan.groups[1..plan.groups.len() - 1];
    before_last
        .iter()
        .rev()
        .take_while(|g| lone_scalar(g))
        .count()
}

/// The name of a group of tasks as one launch: the kinds joined by `+`.
fn joined_name(tasks: &[IndexTask]) -> String {
    tasks
        .iter()
        .map(|t| t.kind().name())
        .collect::<Vec<_>>()
        .join("+")
}
