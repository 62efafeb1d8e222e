//! The embedded backend: executes index tasks in-process on a pool of worker processors.
//!
//! Stores live in host buffers attached to the IR stores themselves (freed when the last
//! reference goes). Each index task runs its point tasks in parallel, one processor per
//! contiguous block of points; `Reduce` arguments get private per-point accumulators that are
//! folded into the store in point order afterwards, so results never depend on thread timing.

mod compiled;
mod fused;
mod launch;
mod memory;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use diffuse_fusion::FusedTask;
use diffuse_ir::{Executor, HostData, IndexTask, IrError, Rect, StoreRef};
use diffuse_jit::{gpu_available, GpuJit, Jit};

use diffuse_ir::with_element_type;
pub use memory::MemoryStats;
use memory::{for_each_rect_row, BufferCache, FirstUse, HostBuffer};

/// Settings of an embedded runtime: the backend's, and the window and fusion in front of it.
#[derive(Clone, Debug)]
pub struct EmbeddedConfig {
    /// Number of worker processors; `None` means one per available core.
    pub procs: Option<usize>,
    /// Most bytes of freed store buffers kept for reuse by later stores of the same size.
    pub buffer_cache_bytes: usize,
    /// Task buffering and fusion (used by [`crate::embedded()`]; the backend alone ignores it).
    pub fusion: crate::FusionConfig,
    /// Nodes the processors are grouped into (`procs` must be a multiple): the machine a
    /// mapper sees is `nodes x (procs / nodes)`.
    pub nodes: usize,
    /// Where each point task runs: `None` cuts launches into contiguous blocks, one per
    /// processor; a [`crate::Placement`] (e.g. a Mapple mapper) decides per point.
    pub placement: Option<Arc<dyn crate::Placement>>,
    /// Working-set bytes of one strip when a fused element-wise task runs strip by strip
    /// (default 1 MiB: the strip's rows of every store the task touches stay in a core's L2
    /// or nearby cache; strips never go below 2048 elements, to amortize kernel calls).
    pub strip_bytes: usize,
    /// The kernel compiler for fused tasks: `None` runs every task's native variants. The
    /// default is the process-wide [`Jit::shared`] (compiling on first use), so kernels
    /// compiled once serve every runtime in the process.
    pub jit: Option<Arc<Jit>>,
    /// Run fused tasks' compiled kernels on the GPU (with the CPU JIT on): `None` keeps them
    /// on the CPU. Without a usable GPU, or when a kernel cannot be built or launched there,
    /// the backend warns once and runs the CPU kernel instead.
    pub gpu: Option<Arc<GpuJit>>,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig {
            procs: None,
            buffer_cache_bytes: 4 << 30,
            fusion: crate::FusionConfig::default(),
            nodes: 1,
            placement: None,
            strip_bytes: 1 << 20,
            jit: Some(Jit::shared()),
            gpu: None,
        }
    }
}

/// The in-process backend.
pub struct EmbeddedBackend {
    pool: rayon::ThreadPool,
    procs: usize,
    stats: Arc<MemoryStats>,
    cache: Arc<BufferCache>,
    strip_bytes: usize,
    placement: Option<Arc<dyn crate::Placement>>,
    strip_points: AtomicU64,
    jit: Option<Arc<Jit>>,
    gpu: Option<Arc<GpuJit>>,
    compiled_points: AtomicU64,
    gpu_points: AtomicU64,
    tasks_executed: AtomicU64,
    points_executed: AtomicU64,
    /// Serializes tasks and host copies submitted from different application threads.
    order: Mutex<()>,
}

impl EmbeddedBackend {
    /// Starts a backend with the configured number of processors.
    pub fn new(config: EmbeddedConfig) -> Result<Self, IrError> {
        let procs = match config.procs {
            Some(0) => {
                return Err(IrError::Backend {
                    backend: "embedded".into(),
                    message: "the processor count must be at least 1".into(),
                })
            }
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if config.nodes == 0 || procs % config.nodes != 0 {
            return Err(IrError::Backend {
                backend: "embedded".into(),
                message: format!(
                    "{procs} processors cannot be grouped into {} nodes of equal size",
                    config.nodes
                ),
            });
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(procs)
            .thread_name(|i| format!("diffuse-proc-{i}"))
            .build()
            .map_err(|e| IrError::Backend {
                backend: "embedded".into(),
                message: format!("cannot start {procs} worker threads: {e}"),
            })?;
        Ok(EmbeddedBackend {
            pool,
            procs,
            stats: Arc::new(MemoryStats::default()),
            cache: Arc::new(BufferCache::new(config.buffer_cache_bytes)),
            strip_bytes: config.strip_bytes.max(1),
            placement: config.placement,
            strip_points: AtomicU64::new(0),
            jit: config.jit,
            gpu: config.gpu.filter(|_| match gpu_available() {
                Ok(info) => {
                    tracing::info!("fused kernels run on the GPU: {info:?}");
                    true
                }
                Err(reason) => {
                    tracing::warn!("no GPU ({reason}): fused kernels run on the CPU");
                    false
                }
            }),
            compiled_points: AtomicU64::new(0),
            gpu_points: AtomicU64::new(0),
            tasks_executed: AtomicU64::new(0),
            points_executed: AtomicU64::new(0),
            order: Mutex::new(()),
        })
    }

    /// Number of worker processors.
    pub fn procs(&self) -> usize {
        self.procs
    }

    /// Store memory accounting (current and peak bytes).
    pub fn memory(&self) -> &Arc<MemoryStats> {
        &self.stats
    }

    /// Number of index tasks executed so far.
    pub fn tasks_executed(&self) -> u64 {
        self.tasks_executed.load(Ordering::Relaxed)
    }

    /// Number of fused point tasks that ran strip by strip so far.
    pub fn strip_points(&self) -> u64 {
        self.strip_points.load(Ordering::Relaxed)
    }

    /// Point tasks of fused tasks that ran a JIT-compiled kernel.
    pub fn compiled_points(&self) -> u64 {
        self.compiled_points.load(Ordering::Relaxed)
    }

    /// Point tasks of fused tasks that ran a compiled kernel on the GPU.
    pub fn gpu_points(&self) -> u64 {
        self.gpu_points.load(Ordering::Relaxed)
    }

    /// The kernel compiler in use, if any.
    pub fn jit(&self) -> Option<&Arc<Jit>> {
        self.jit.as_ref()
    }

    /// Number of point tasks executed so far.
    pub fn points_executed(&self) -> u64 {
        self.points_executed.load(Ordering::Relaxed)
    }

    /// Bytes of freed store buffers currently cached for reuse.
    pub fn cached_bytes(&self) -> usize {
        self.cache.cached_bytes()
    }

    /// The host buffer of `store`, allocated on first use; zero-filled unless that first use
    /// overwrites the whole store.
    fn buffer<'s>(
        &self,
        store: &'s StoreRef,
        first_use: FirstUse,
    ) -> Result<&'s HostBuffer, IrError> {
        let len = store.shape().volume().max(0) as usize;
        store.allocation(|| {
            HostBuffer::for_store(store.dtype(), len, first_use, &self.stats, &self.cache)
        })
    }

    /// The processor of every point of a launch of `task` when a placement decides (and the
    /// decisions are recorded with it), or `None` for the default blocks.
    fn place(
        &self,
        task: &str,
        constituents: &[&str],
        points: &[diffuse_ir::Point],
        launch: diffuse_ir::Shape,
    ) -> Result<Option<Vec<usize>>, IrError> {
        let Some(placement) = &self.placement else {
            return Ok(None);
        };
        let placed = points
            .iter()
            .map(|p| placement.processor(task, constituents, p, launch))
            .collect::<Result<Vec<_>, _>>()?;
        placement.record(task, points, &placed);
        Ok(Some(placed))
    }

    /// Fails unless `rect` lies inside `store`.
    fn check_rect(store: &StoreRef, rect: &Rect) -> Result<(), IrError> {
        if rect.dims() == store.shape().dims() && store.bounds().intersect(rect) == *rect {
            return Ok(());
        }
        Err(IrError::HostData {
            store: store.id(),
            what: format!(
                "box {rect} is not inside the store's bounds {}",
                store.bounds()
            ),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.order.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl crate::Backend for EmbeddedBackend {
    fn execute_fused(&self, task: FusedTask) -> Result<(), IrError> {
        let _order = self.lock();
        fused::run_fused(self, &task)?;
        self.tasks_executed.fetch_add(1, Ordering::Relaxed);
        self.points_executed
            .fetch_add(task.launch_domain().volume() as u64, Ordering::Relaxed);
        Ok(())
    }
}

impl Executor for EmbeddedBackend {
    fn name(&self) -> &str {
        "embedded"
    }

    fn processors(&self) -> usize {
        self.procs()
    }

    fn execute(&self, task: IndexTask) -> Result<(), IrError> {
        let _order = self.lock();
        launch::run(self, &task)?;
        self.tasks_executed.fetch_add(1, Ordering::Relaxed);
        self.points_executed
            .fetch_add(task.launch_domain().volume() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn flush(&self) -> Result<(), IrError> {
        // Tasks run at submission; there is nothing buffered yet.
        Ok(())
    }

    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError> {
        Self::check_rect(store, &rect)?;
        let _order = self.lock();
        let buf = self.buffer(store, FirstUse::Reads)?;
        let strides = store.shape().row_major_strides();
        Ok(with_element_type!(store.dtype(), T => {
            let mut out: Vec<T> = Vec::with_capacity(rect.volume().max(0) as usize);
            let base = buf.as_ptr() as *const T;
            for_each_rect_row(&rect, &strides, |start, _, len| {
                // SAFETY: `rect` lies inside the store (checked above), the buffer holds the
                // whole store, and the order lock excludes concurrent writers.
                let row = unsafe { std::slice::from_raw_parts(base.add(start), len) };
                out.extend_from_slice(row);
            });
            HostData::from_vec(out)
        }))
    }

    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError> {
        Self::check_rect(store, &rect)?;
        if data.len() as i64 != rect.volume() {
            return Err(IrError::HostData {
                store: store.id(),
                what: format!(
                    "{} values written to box {rect} of {} points",
                    data.len(),
                    rect.volume()
                ),
            });
        }
        let _order = self.lock();
        let first_use = if rect == store.bounds() {
            FirstUse::Overwrites
        } else {
            FirstUse::Reads
        };
        let buf = self.buffer(store, first_use)?;
        let strides = store.shape().row_major_strides();
        with_element_type!(store.dtype(), T => {
            let values: Vec<T> = data.into_vec::<T>().map_err(|d| IrError::HostData {
                store: store.id(),
                what: format!("{} data written to a {} store", d.dtype(), store.dtype()),
            })?;
            let base = buf.as_ptr() as *mut T;
            let mut consumed = 0usize;
            for_each_rect_row(&rect, &strides, |start, _, len| {
                // SAFETY: as in `read`; the order lock excludes concurrent readers and writers,
                // and `values` has one element per point of `rect` (checked above).
                let row = unsafe { std::slice::from_raw_parts_mut(base.add(start), len) };
                row.copy_from_slice(&values[consumed..consumed + len]);
                consumed += len;
            });
        });
        Ok(())
    }
}
