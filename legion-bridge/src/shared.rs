//! What a [`crate::LegionBackend`] shares with the point tasks of its launches, which run on
//! Legion's threads: counters, the buffer cache for point-local temporaries, the failures
//! kept for the next flush, the record of where points ran; and the backend's error and
//! processor-kind conventions every module uses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use diffuse_backend::memory::{physical_memory, BufferCache, MemoryStats};
use diffuse_backend::point::PointPath;
use diffuse_backend::{BackendStats, ProcKind, Processor};
use diffuse_ir::{IrError, Point, StoreRef};

/// An error of the Legion backend outside any one kernel.
pub(crate) fn legion_error(message: impl Into<String>) -> IrError {
    IrError::Backend {
        backend: "legion".into(),
        message: message.into(),
    }
}

/// The error for a store whose region would take the live stores (`in_use` bytes) past the
/// `limit` bytes of system memory Legion was given.
pub(crate) fn out_of_memory(store: &StoreRef, in_use: u64, limit: u64) -> IrError {
    IrError::OutOfMemory {
        backend: "legion".into(),
        store: store.id(),
        shape: store.shape(),
        dtype: store.dtype(),
        bytes: store.size_bytes(),
        reason: format!(
            "{in_use} bytes are in use of the {limit}-byte system memory Legion was given \
             (-ll:csize)"
        ),
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
    segments: AtomicU64,
    store_bytes: AtomicU64,
    peak_bytes: AtomicU64,
    held_back: AtomicU64,
    traced: AtomicU64,
    bytes_moved: AtomicU64,
}

impl Counters {
    /// Counts one launch plan accepted by the backend.
    pub(crate) fn launched(&self) {
        self.tasks.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the bytes moved between nodes so far (the driver's traffic model).
    pub(crate) fn set_bytes_moved(&self, bytes: u64) {
        self.bytes_moved.store(bytes, Ordering::Relaxed);
    }

    /// Counts one point task whose kernel was enqueued on a GPU.
    pub(crate) fn gpu_point(&self) {
        self.points.fetch_add(1, Ordering::Relaxed);
        self.compiled.fetch_add(1, Ordering::Relaxed);
        self.gpu.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one finished point task that ran along `path`.
    pub(crate) fn point(&self, path: PointPath) {
        self.points.fetch_add(1, Ordering::Relaxed);
        match path {
            PointPath::Compiled => {
                self.compiled.fetch_add(1, Ordering::Relaxed);
            }
            PointPath::Strips => {
                self.strips.fetch_add(1, Ordering::Relaxed);
            }
            PointPath::Segments => {
                self.segments.fetch_add(1, Ordering::Relaxed);
            }
            PointPath::Whole => {}
        }
    }

    /// Counts a launch that waited for an earlier one of its task (Mapple's `Backpressure`).
    pub(crate) fn held_back(&self) {
        self.held_back.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a launch issued in a Legion trace.
    pub(crate) fn traced(&self) {
        self.traced.fetch_add(1, Ordering::Relaxed);
    }

    /// Launches issued in Legion traces.
    pub(crate) fn traced_launches(&self) -> u64 {
        self.traced.load(Ordering::Relaxed)
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

    /// Launches that waited for an earlier one of their task.
    pub(crate) fn held_back_launches(&self) -> u64 {
        self.held_back.load(Ordering::Relaxed)
    }

    /// Starts the peak of region memory again from the bytes in use now.
    pub(crate) fn reset_peak(&self) {
        self.peak_bytes
            .store(self.store_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
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
    /// Most elements of a reduction's partials folded by diffuse
    /// (`LegionConfig::folded_reduction_elements`).
    pub(crate) folded_reduction_elements: usize,
    /// The floating-point exceptions point tasks raised on this process.
    pub(crate) fp: diffuse_backend::point::fp::FpRecorder,
    errors: Mutex<Vec<(u64, IrError)>>,
    records: Mutex<Option<Vec<PointRecord>>>,
}

impl Shared {
    /// What a new backend of `config` shares: no failures, no recording, its buffer cache,
    /// strips (at least one byte) and folded reductions.
    pub(crate) fn new(config: &crate::LegionConfig) -> Self {
        Shared {
            counters: Counters::default(),
            scratch: Arc::new(BufferCache::new(config.buffer_cache_bytes)),
            memory: MemoryStats::with_limit(physical_memory().unwrap_or(usize::MAX)),
            strip_bytes: config.strip_bytes.max(1),
            folded_reduction_elements: config.folded_reduction_elements,
            fp: Default::default(),
            errors: Mutex::new(Vec::new()),
            records: Mutex::new(None),
        }
    }

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

    /// Starts recording where point tasks run (dropping what was recorded before).
    pub(crate) fn start_recording(&self) {
        *self.records.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
    }

    /// The points recorded since the last call.
    pub(crate) fn take_records(&self) -> Vec<PointRecord> {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
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
    pub(crate) fn take_error(&self) -> Result<(), IrError> {
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

    /// The backend's counters as [`BackendStats`].
    pub(crate) fn stats(&self) -> BackendStats {
        let c = &self.counters;
        BackendStats {
            tasks_executed: c.tasks.load(Ordering::Relaxed),
            points_executed: c.points.load(Ordering::Relaxed),
            compiled_points: c.compiled.load(Ordering::Relaxed),
            gpu_points: c.gpu.load(Ordering::Relaxed),
            strip_points: c.strips.load(Ordering::Relaxed),
            segment_points: c.segments.load(Ordering::Relaxed),
            traced_launches: c.traced.load(Ordering::Relaxed),
            store_bytes: c.store_bytes.load(Ordering::Relaxed),
            peak_store_bytes: c.peak_bytes.load(Ordering::Relaxed),
            cached_bytes: self.scratch.cached_bytes() as u64,
            bytes_moved: c.bytes_moved.load(Ordering::Relaxed),
            // Point tasks run on CPUs only: no device traffic.
            ..Default::default()
        }
    }
}
