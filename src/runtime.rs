//! The runtime between the IR and a backend: the window of buffered index tasks and task
//! fusion (Diffuse paper §4–5).
//!
//! Submitted tasks wait in a window. When it fills, the [`Planner`] splits it into fusible
//! groups; every group but the last runs (a group of one task as a plain index task, larger
//! ones, or ones with temporaries, as a [`FusedTask`]) and the last stays buffered, since
//! tasks still to come may extend it. When the whole full window is one group and the window
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

use diffuse_fusion::{
    cheapest_cut, temporaries, FusedTask, HeldStores, Plan, Planner, PlannerStats,
};
use diffuse_ir::{Executor, HostData, IndexTask, IrError, Rect, StoreId, StoreRef};

/// A backend: executes index tasks and fused tasks and moves data (see [`Executor`], whose
/// `execute` runs one task at once).
pub trait Backend: Executor {
    /// Runs a fused task: each point task runs the constituents in program order, with the
    /// temporaries point-local.
    fn execute_fused(&self, task: FusedTask) -> Result<(), IrError>;
}

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

struct Window {
    tasks: Vec<IndexTask>,
    capacity: usize,
    planner: Planner,
    log: Option<Vec<FlushRecord>>,
    /// Time spent deciding what runs: planning (memo lookup or analysis), cuts, and building
    /// fused tasks; execution excluded.
    analysis: std::time::Duration,
}

/// Buffers and fuses tasks in front of a backend; the [`Executor`] a `Context` talks to.
pub struct Runtime<B: Backend> {
    backend: Arc<B>,
    config: FusionConfig,
    window: Mutex<Window>,
}

impl<B: Backend> Runtime<B> {
    /// A runtime in front of `backend`.
    pub fn new(backend: Arc<B>, config: FusionConfig) -> Self {
        let capacity = config.window.unwrap_or(ADAPTIVE_START).max(1);
        Runtime {
            backend,
            config,
            window: Mutex::new(Window {
                tasks: Vec::new(),
                capacity,
                planner: Planner::new(),
                log: None,
                analysis: std::time::Duration::ZERO,
            }),
        }
    }

    /// The backend behind the runtime.
    pub fn backend(&self) -> &Arc<B> {
        &self.backend
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
        // What runs now: (number of tasks, temporaries) per group, in order.
        let runs: Vec<(usize, Vec<StoreId>)> = match plan.groups.as_slice() {
            [.., _last] if keep_tail && plan.groups.len() > 1 => plan.groups
                [..plan.groups.len() - 1]
                .iter()
                .map(|g| (g.tasks.len(), g.temporaries.clone()))
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
                vec![(cut, temporaries(&window.tasks, cut, &held))]
            }
            groups => groups
                .iter()
                .map(|g| (g.tasks.len(), g.temporaries.clone()))
                .collect(),
        };
        window.analysis += deciding.elapsed();
        let run_len: usize = runs.iter().map(|(len, _)| len).sum();
        let mut tasks: Vec<IndexTask> = window.tasks.drain(..run_len).collect();
        let mut executed = Vec::with_capacity(runs.len());
        let issued: Vec<String> = tasks.iter().map(|t| t.kind().name().to_string()).collect();
        let mut result = Ok(());
        for (len, temporaries) in runs {
            let members: Vec<IndexTask> = tasks.drain(..len).collect();
            let outcome = if members.len() == 1 && temporaries.is_empty() {
                let mut members = members;
                match members.pop() {
                    Some(task) => {
                        executed.push(task.kind().name().to_string());
                        self.backend.execute(task)
                    }
                    None => Ok(()),
                }
            } else {
                let building = std::time::Instant::now();
                let fused = FusedTask::new(members, temporaries);
                window.analysis += building.elapsed();
                executed.push(format!(
                    "{} (temporaries: {})",
                    fused.name(),
                    fused.temporaries().len()
                ));
                self.backend.execute_fused(fused)
            };
            if let Err(e) = outcome {
                // Later tasks may depend on the failed one: drop them with it.
                tracing::warn!(
                    error = %e,
                    dropped = window.tasks.len() + tasks.len(),
                    "a task failed; the tasks after it are dropped"
                );
                window.tasks.clear();
                result = Err(e);
                break;
            }
        }
        if let Some(log) = window.log.as_mut() {
            log.push(FlushRecord { issued, executed });
        }
        result
    }
}

impl<B: Backend> Executor for Runtime<B> {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn processors(&self) -> usize {
        self.backend.processors()
    }

    fn execute(&self, task: IndexTask) -> Result<(), IrError> {
        if !self.config.enabled {
            return self.backend.execute(task);
        }
        let mut window = self.lock();
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

impl<B: Backend> Drop for Runtime<B> {
    fn drop(&mut self) {
        let mut window = self.lock();
        if let Err(e) = self.drain(&mut window, false) {
            tracing::warn!(error = %e, "tasks pending at shutdown failed");
        }
    }
}
