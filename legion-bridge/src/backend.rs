//! [`LegionBackend`]: the [`Backend`] trait over the process's Legion runtime.
//!
//! Plans become index launches issued by the driver thread; `flush`, `read` and `write` wait
//! for the work before them (a fence, or an inline mapping, which Legion orders after every
//! earlier use of the region). Errors of point tasks are collected here and reported by the
//! next `flush`, `read` or `write`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use diffuse_backend::memory::{physical_memory, BufferCache, MemoryStats};
use diffuse_backend::point::{Device, PointPath};
use diffuse_backend::{
    check_host_copy, Backend, BackendStats, LaunchPlan, MachineShape, ProcKind, Processor,
};
use diffuse_ir::{HostData, IrError, Point, Rect, StoreRef};

use crate::process::{self, LegionProcess};
use crate::LegionConfig;

/// An error of the Legion backend outside any one kernel.
pub(crate) fn legion_error(message: impl Into<String>) -> IrError {
    IrError::Backend {
        backend: "legion".into(),
        message: message.into(),
    }
}

/// Diffuse's processor kind for the shim's kind number.
pub(crate) fn proc_kind(kind: i32) -> ProcKind {
    match kind {
        1 => ProcKind::Gpu,
        2 => ProcKind::Omp,
        _ => ProcKind::Cpu,
    }
}

/// Where one point task ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointRecord {
    /// The task's name (constituents joined by `+`).
    pub task: String,
    /// The launch point.
    pub point: Point,
    /// The processor Legion ran it on, in diffuse's numbering.
    pub processor: Processor,
}

/// Counters of the backend's work, updated by point tasks on Legion's threads.
#[derive(Default)]
pub(crate) struct Counters {
    tasks: AtomicU64,
    points: AtomicU64,
    compiled: AtomicU64,
    gpu: AtomicU64,
    strips: AtomicU64,
    store_bytes: AtomicU64,
    peak_bytes: AtomicU64,
    held_back: AtomicU64,
    bytes_moved: AtomicU64,
}

impl Counters {
    /// Records the bytes moved between nodes so far (the driver's traffic model).
    pub(crate) fn set_bytes_moved(&self, bytes: u64) {
        self.bytes_moved.store(bytes, Ordering::Relaxed);
    }

    /// Counts one finished point task that ran along `path`.
    pub(crate) fn point(&self, path: PointPath) {
        self.points.fetch_add(1, Ordering::Relaxed);
        match path {
            PointPath::Compiled(device) => {
                self.compiled.fetch_add(1, Ordering::Relaxed);
                if device == Device::Gpu {
                    self.gpu.fetch_add(1, Ordering::Relaxed);
                }
            }
            PointPath::Strips => {
                self.strips.fetch_add(1, Ordering::Relaxed);
            }
            PointPath::Whole => {}
        }
    }

    /// Counts a launch that waited for an earlier one of its task (Mapple's `Backpressure`).
    pub(crate) fn held_back(&self) {
        self.held_back.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `bytes` of new region memory.
    pub(crate) fn allocate(&self, bytes: u64) {
        let now = self.store_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_bytes.fetch_max(now, Ordering::Relaxed);
    }

    /// Counts `bytes` of region memory given back.
    pub(crate) fn free(&self, bytes: u64) {
        self.store_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Bytes of the live stores' regions.
    pub(crate) fn store_bytes(&self) -> u64 {
        self.store_bytes.load(Ordering::Relaxed)
    }
}

/// What a backend shares with its launches' point tasks.
pub(crate) struct Shared {
    /// Counters.
    pub(crate) counters: Counters,
    /// Where point-local temporaries come from.
    pub(crate) scratch: Arc<BufferCache>,
    /// The limit point-local temporaries respect (the machine's memory; region instances are
    /// Legion's).
    pub(crate) memory: MemoryStats,
    /// Working-set bytes of one strip (see `EmbeddedConfig::strip_bytes`).
    pub(crate) strip_bytes: usize,
    /// The floating-point exceptions point tasks raised on this process.
    pub(crate) fp: diffuse_backend::point::fp::FpRecorder,
    errors: Mutex<Vec<(u64, IrError)>>,
    records: Mutex<Option<Vec<PointRecord>>>,
}

impl Shared {
    /// Keeps the failure of the launch with ticket `ticket` (see `LaunchPlan::ticket`) for
    /// the next flush.
    pub(crate) fn fail(&self, ticket: u64, error: IrError) {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((ticket, error));
    }

    /// True when point tasks should record where they ran.
    pub(crate) fn recording(&self) -> bool {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Records where a point task ran.
    pub(crate) fn record(&self, record: PointRecord) {
        if let Some(records) = self
            .records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            records.push(record);
        }
    }

    /// The launches that failed since the last call, as one error naming each launch's
    /// ticket (the first failure of each launch; its other points usually fail alike).
    fn take_error(&self) -> Result<(), IrError> {
        let mut failures: Vec<(u64, IrError)> =
            std::mem::take(&mut *self.errors.lock().unwrap_or_else(|e| e.into_inner()));
        if failures.is_empty() {
            return Ok(());
        }
        // Points report in any order: keep launch order, one failure per launch.
        failures.sort_by_key(|(ticket, _)| *ticket);
        failures.dedup_by_key(|(ticket, _)| *ticket);
        Err(IrError::Launches(failures))
    }
}

/// The Legion backend: launch plans as Legion index launches, stores as logical regions.
pub struct LegionBackend {
    process: &'static LegionProcess,
    shared: Arc<Shared>,
    /// The system memory Legion was given (`-ll:csize`), in bytes.
    sysmem_bytes: u64,
}

impl LegionBackend {
    /// A backend over the process's Legion runtime, started with `config`'s flags if it is
    /// not running yet.
    pub fn start(config: &LegionConfig) -> Result<Self, IrError> {
        let process = process::process(config).map_err(legion_error)?;
        Ok(LegionBackend {
            process,
            sysmem_bytes: crate::config::sysmem_bytes(&process.flags).unwrap_or(u64::MAX),
            shared: Arc::new(Shared {
                counters: Counters::default(),
                scratch: Arc::new(BufferCache::new(config.buffer_cache_bytes)),
                memory: MemoryStats::with_limit(physical_memory().unwrap_or(usize::MAX)),
                strip_bytes: config.strip_bytes.max(1),
                fp: Default::default(),
                errors: Mutex::new(Vec::new()),
                records: Mutex::new(None),
            }),
        })
    }

    /// The Legion flags the process runs with.
    pub fn flags(&self) -> &[String] {
        &self.process.flags
    }

    /// This process's place among the processes of the run (one Legion node each).
    pub fn cluster(&self) -> &crate::Cluster {
        &self.process.cluster
    }

    /// Launches that waited for earlier launches of their task because of a Mapple
    /// `Backpressure`/`InstanceLimit` statement.
    pub fn held_back_launches(&self) -> u64 {
        self.shared.counters.held_back.load(Ordering::Relaxed)
    }

    /// Starts recording the processor every point task runs on (see
    /// [`LegionBackend::take_point_records`]).
    pub fn record_points(&self) {
        *self
            .shared
            .records
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
    }

    /// The points recorded since the last call (after a flush, all of them).
    pub fn take_point_records(&self) -> Vec<PointRecord> {
        self.shared
            .records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut crate::driver::Driver, &Arc<Shared>) -> R + Send + 'static,
    ) -> Result<R, IrError> {
        let shared = Arc::clone(&self.shared);
        self.process
            .call(move |driver| f(driver, &shared))
            .map_err(legion_error)
    }
}

impl Backend for LegionBackend {
    fn name(&self) -> &str {
        "legion"
    }

    fn machine(&self) -> MachineShape {
        self.process.machine
    }

    fn capabilities(&self) -> diffuse_backend::Capabilities {
        crate::CAPABILITIES
    }

    fn execute(&self, plan: &LaunchPlan) -> Result<(), IrError> {
        // A store larger than all of Legion's system memory fails here, before anything of
        // the plan runs, so that the runtime can still run the plan's other tasks.
        if let Some(store) = plan
            .stores()
            .iter()
            .find(|s| s.size_bytes() as u64 > self.sysmem_bytes)
        {
            let in_use = self.shared.counters.store_bytes();
            return Err(crate::driver::out_of_memory(
                store,
                in_use,
                self.sysmem_bytes,
            ));
        }
        self.shared.counters.tasks.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::clone(&self.shared);
        // The driver thread runs the plan after this call returns: it gets its own copy.
        let plan = plan.clone();
        self.process
            .send(Box::new(move |driver| {
                let ticket = plan.ticket();
                if let Err(e) = driver.execute(plan, &shared) {
                    shared.fail(ticket, e);
                }
            }))
            .map_err(legion_error)?;
        Ok(())
    }

    fn defers_failures(&self) -> bool {
        true
    }

    fn flush(&self) -> Result<(), IrError> {
        self.call(|driver, _| driver.fence())?;
        self.shared.take_error()
    }

    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError> {
        check_host_copy(store, &rect, None)?;
        let store = store.clone();
        let data = self.call(move |driver, shared| driver.read(&store, shared, rect))??;
        self.shared.take_error()?;
        Ok(data)
    }

    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError> {
        check_host_copy(store, &rect, Some(data.len()))?;
        let store = store.clone();
        self.call(move |driver, shared| driver.write(&store, shared, rect, data))??;
        self.shared.take_error()
    }

    fn stats(&self) -> BackendStats {
        let c = &self.shared.counters;
        BackendStats {
            tasks_executed: c.tasks.load(Ordering::Relaxed),
            points_executed: c.points.load(Ordering::Relaxed),
            compiled_points: c.compiled.load(Ordering::Relaxed),
            gpu_points: c.gpu.load(Ordering::Relaxed),
            strip_points: c.strips.load(Ordering::Relaxed),
            store_bytes: c.store_bytes.load(Ordering::Relaxed),
            peak_store_bytes: c.peak_bytes.load(Ordering::Relaxed),
            cached_bytes: self.shared.scratch.cached_bytes() as u64,
            bytes_moved: c.bytes_moved.load(Ordering::Relaxed),
        }
    }

    fn take_fp_errors(&self) -> diffuse_backend::point::fp::FpErrors {
        self.shared.fp.take()
    }

    fn reset_peak_memory(&self) {
        let c = &self.shared.counters;
        c.peak_bytes
            .store(c.store_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}
