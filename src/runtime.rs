//! The runtime between the IR and a backend: the window of buffered index tasks, task
//! fusion (Diffuse paper §4–5), and the launch plans a backend executes.
//!
//! Submitted tasks wait in a window. When it fills, the [`Planner`] splits it into fusible
//! groups; every group but the last runs, as a [`LaunchPlan`] from the launcher (see
//! `plans.rs`: kernel, placement and slots decided once per window shape), and the last stays
//! buffered, since tasks still to come may extend it. When the whole full window is one group and the window
//! cannot grow, a prefix of it runs, cut where the fewest values produced inside are needed
//! after the cut ([`cheapest_cut`]), e.g. between two iterations of a loop. An explicit flush,
//! a read or write of data, and dropping the runtime run everything.
//!
//! Errors: a task that fails (a kernel error or panic) fails the flush, read or write that ran
//! it, and the tasks buffered after it are dropped with it (they may depend on it); the stores
//! they would have written keep their previous contents. The runtime stays usable.
//!
//! Window size: fixed when configured; otherwise adaptive. It starts at
//! [`ADAPTIVE_START`] tasks; whenever a full window turns out to be a single fusible group
//! (so the window, not the program, would end the group) it doubles, up to [`ADAPTIVE_MAX`],
//! and keeps buffering instead of running anything. A window of unrelated tasks thus stays
//! small, while a long fusible chain grows one fused task, whose temporaries never
//! materialize. (The paper's hand-picked sizes were 5–70.)

use std::sync::{Arc, Mutex, MutexGuard};

use diffuse_backend::{Backend, BackendStats, LaunchPlan};
use diffuse_fusion::{cheapest_cut, temporaries, HeldStores, Plan, Planner, PlannerStats};
use diffuse_ir::{Executor, HostData, IndexTask, IrError, Rect, StoreId, StoreRef};
use diffuse_jit::Jit;

use crate::placement::Placement;
use crate::plans::{Launcher, TemplateKey};

/// The window size an adaptive window starts with.
pub const ADAPTIVE_START: usize = 16;
/// The largest adaptive window.
pub const ADAPTIVE_MAX: usize = 256;

/// How the runtime buffers and fuses tasks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FusionConfig {
    /// Whether tasks are buffered and fused; when off, every task executes as submitted.
    pub enabled: bool,
    /// A fixed window size, or `None` for the adaptive policy.
    pub window: Option<usize>,
}

impl Default for FusionConfig {
    fn default() -> Self {
        FusionConfig {
            enabled: true,
            window: None,
        }
    }
}

impl FusionConfig {
    /// Every task executes as submitted.
    pub fn off() -> Self {
        FusionConfig {
            enabled: false,
            window: None,
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
    /// Where each point task runs: `None` cuts launches into contiguous blocks over the
    /// CPUs; a [`Placement`] (e.g. a Mapple mapper) decides processor kinds, processors and
    /// memories.
    pub placement: Option<Arc<dyn Placement>>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            fusion: FusionConfig::default(),
            jit: Some(Jit::shared()),
            placement: None,
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
}

/// Buffers and fuses tasks in front of a backend and hands it launch plans; the [`Executor`]
/// a `Context` talks to.
pub struct Runtime {
    backend: Arc<dyn Backend>,
    config: FusionConfig,
    jit: Option<Arc<Jit>>,
    window: Mutex<Window>,
}

impl Runtime {
    /// A runtime in front of `backend`.
    pub fn new(backend: Arc<dyn Backend>, config: RuntimeConfig) -> Self {
        let fusion = config.fusion;
        let capacity = fusion.window.unwrap_or(ADAPTIVE_START).max(1);
        let launcher = Launcher::new(
            backend.name(),
            backend.machine(),
            config.jit.clone(),
            config.placement,
        );
        Runtime {
            backend,
            config: fusion,
            jit: config.jit,
            window: Mutex::new(Window {
                tasks: Vec::new(),
                capacity,
                planner: Planner::new(),
                launcher,
                log: None,
                analysis: std::time::Duration::ZERO,
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
        // What runs now: (number of tasks, temporaries, template key) per group, in order.
        let key = |group: usize| plan.shape.map(|shape| TemplateKey::Group { shape, group });
        let runs: Vec<(usize, Vec<StoreId>, Option<TemplateKey>)> = match plan.groups.as_slice() {
            [.., _last] if keep_tail && plan.groups.len() > 1 => plan.groups
                [..plan.groups.len() - 1]
                .iter()
                .enumerate()
                .map(|(i, g)| (g.tasks.len(), g.temporaries.clone(), key(i)))
                .collect(),
            [_single] if keep_tail => {
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
                let cut_key = plan.shape.map(|shape| TemplateKey::Cut { shape });
                vec![(cut, temporaries(&window.tasks, cut, &held), cut_key)]
            }
            groups => groups
                .iter()
                .enumerate()
                .map(|(i, g)| (g.tasks.len(), g.temporaries.clone(), key(i)))
                .collect(),
        };
        window.analysis += deciding.elapsed();
        let run_len: usize = runs.iter().map(|(len, _, _)| len).sum();
        let mut tasks: Vec<IndexTask> = window.tasks.drain(..run_len).collect();
        let mut executed = Vec::with_capacity(runs.len());
        let issued: Option<Vec<String>> = window
            .log
            .is_some()
            .then(|| tasks.iter().map(|t| t.kind().name().to_string()).collect());
        let mut result = Ok(());
        for (len, temporaries, key) in runs {
            let members: Vec<IndexTask> = tasks.drain(..len).collect();
            let outcome = self.launch(window, key, members, &temporaries, &mut executed);
            if let Err(e) = outcome {
                // Later tasks may depend on the failed one: drop them with it. The error
                // itself goes back to the caller; the log says what else was lost.
                let dropped = window.tasks.len() + tasks.len();
                if dropped > 0 {
                    tracing::warn!(
                        error = %e,
                        dropped,
                        "a task failed; the tasks after it are dropped"
                    );
                }
                window.tasks.clear();
                result = Err(e);
                break;
            }
        }
        if let (Some(log), Some(issued)) = (window.log.as_mut(), issued) {
            log.push(FlushRecord { issued, executed });
        }
        result
    }

    /// Plans one group and has the backend run it; records what ran when logging.
    fn launch(
        &self,
        window: &mut Window,
        key: Option<TemplateKey>,
        tasks: Vec<IndexTask>,
        temporaries: &[StoreId],
        executed: &mut Vec<String>,
    ) -> Result<(), IrError> {
        let building = std::time::Instant::now();
        let plan: LaunchPlan = window.launcher.plan(key, tasks, temporaries)?;
        window.analysis += building.elapsed();
        if window.log.is_some() {
            let t = plan.template();
            executed.push(if t.constituents() == 1 && t.temporaries() == 0 {
                t.name().to_string()
            } else {
                format!("{} (temporaries: {})", t.name(), t.temporaries())
            });
        }
        self.backend.execute(plan)
    }
}

impl Executor for Runtime {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn processors(&self) -> usize {
        self.backend.machine().cpus()
    }

    fn execute(&self, task: IndexTask) -> Result<(), IrError> {
        let mut window = self.lock();
        if !self.config.enabled {
            let key = TemplateKey::Task {
                kind: task.kind().id(),
            };
            // The window's lock stays held, so tasks from several threads run in the order
            // they were accepted.
            let plan = window.launcher.plan(Some(key), vec![task], &[])?;
            return self.backend.execute(plan);
        }
        window.tasks.push(task);
        if window.tasks.len() >= window.capacity {
            self.drain(&mut window, true)?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), IrError> {
        let mut window = self.lock();
        self.drain(&mut window, false)?;
        self.backend.flush()
    }

    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError> {
        self.flush()?;
        self.backend.read(store, rect)
    }

    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError> {
        self.flush()?;
        self.backend.write(store, rect, data)
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
